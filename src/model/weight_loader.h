// WeightLoader: checkpoint tensors by Hugging Face name -> backend tensors, with shape checks and fusion.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/progress.h"
#include "io/mxfp4.h"
#include "io/safetensors_archive.h"
#include "moe/expert_store.h"

namespace ft {

class WeightLoader {
 public:
  // act_dtype picks which weight dtypes stay as stored: those the backend's matmul takes with
  // that activation dtype; others are converted (to f32 on the host, to act_dtype elsewhere).
  WeightLoader(const SafetensorsArchive& checkpoint, Backend& backend, DType act_dtype, bool show_progress);
  ~WeightLoader();

  bool has(const std::string& name) const { return checkpoint_.contains(name); }
  // One tensor; its shape must equal `shape`.
  Result<Tensor> get(const std::string& name, std::vector<int64_t> shape);
  // One tensor as f32 whatever its stored dtype (small parameters an op takes in f32: router biases).
  Result<Tensor> get_f32(const std::string& name, std::vector<int64_t> shape);
  // Several [rows_i, cols] tensors stacked into one [sum rows_i, cols] (e.g. q, k, v -> qkv); with cols 0, several
  // [rows_i] vectors into one [sum rows_i] (their biases).
  Result<Tensor> stack_rows(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols);
  // Rows [row0, row0 + rows) of each of the n_block blocks of `step` rows of a 2-D tensor [n_block * step, cols]:
  // [n_block, rows, cols], or with `transposed` each block's rows as columns, [n_block, cols, rows] (multi-head latent
  // attention's kv_b_proj, a block a head: its key rows transposed and its value rows, for the absorbed form). A
  // tensor read by several calls counts once in the bytes read.
  Result<Tensor> row_blocks(const std::string& name, int64_t n_block, int64_t step, int64_t cols, int64_t row0,
                            int64_t rows, bool transposed);
  // The experts of one MoE layer under `prefix` (".../mlp.experts"): gate_up [n_expert, 2 * inter, d] (gate rows,
  // then up rows) and down [n_expert, d, inter]. From per-expert `prefix.E.{gate,up,down}_proj.weight` tensors, or
  // from gpt-oss's fused `prefix.gate_up_proj` [n_expert, d, 2 * inter] (gate and up columns interleaved) and
  // `prefix.down_proj` [n_expert, inter, d], transposed, or from those two in MXFP4 (io/mxfp4.h: `_blocks` and
  // `_scales` of [n_expert, 2 * inter, d] with gate and up rows interleaved, and [n_expert, d, inter]): where
  // expert_dtype says so, kept as stored, views of the checkpoint's MXFP4 codes (f4_e2m1) whose gate and up rows
  // alternate (MoeExpertParams::gate_up_interleaved), their scales from experts_*_scales; else dequantized to bf16.
  // With n_shared > 0 (per-expert tensors only), the dense MLP `shared`.{gate,up,down}_proj of n_shared * inter rows
  // follows as n_shared more experts, each its next inter rows of gate and up and columns of down (an MLP is the sum of
  // those slices' MLPs): [n_expert + n_shared, ...].
  Result<Tensor> experts_gate_up(const std::string& prefix, int64_t n_expert, int64_t inter, int64_t d,
                                 const std::string& shared = "", int64_t n_shared = 0);
  Result<Tensor> experts_down(const std::string& prefix, int64_t n_expert, int64_t d, int64_t inter,
                              const std::string& shared = "", int64_t n_shared = 0);
  // The scales of MXFP4 experts kept as such, ue8m0, views of the checkpoint's: gate_up's [n_expert, 2 * inter, d / 32]
  // (gate and up rows alternating) and down's [n_expert, d, inter / 32].
  Result<Tensor> experts_gate_up_scales(const std::string& prefix, int64_t n_expert, int64_t inter, int64_t d);
  Result<Tensor> experts_down_scales(const std::string& prefix, int64_t n_expert, int64_t d, int64_t inter);
  // Whether the experts under `prefix` have biases (gpt-oss's `prefix.gate_up_proj_bias` [n_expert, 2 * inter],
  // interleaved as its weights, and `prefix.down_proj_bias` [n_expert, d]), and those biases in the experts' dtype:
  // gate_up's [n_expert, 2 * inter] (gate's, then up's) and down's [n_expert, d]; beside MXFP4 experts kept as such,
  // in their own dtype as target_dtype picks it, gate_up's as stored (gate and up alternating).
  bool experts_have_biases(const std::string& prefix) const { return has(prefix + ".gate_up_proj_bias"); }
  Result<Tensor> experts_gate_up_bias(const std::string& prefix, int64_t n_expert, int64_t inter);
  Result<Tensor> experts_down_bias(const std::string& prefix, int64_t n_expert, int64_t d);
  // The dtype experts under `prefix` are kept in, on the backend or in a host expert store, as target_dtype picks it,
  // MXFP4 ones staying MXFP4 (f4_e2m1) on a host backend whose moe_experts takes them (a store's experts are computed
  // by that backend, and by the cpu backend's on the host); and the dtype of MXFP4 experts' biases (as
  // experts_gate_up_bias keeps them).
  Result<DType> expert_dtype(const std::string& prefix) const;
  Result<DType> expert_bias_dtype(const std::string& prefix) const;
  // Fused experts under `prefix` of [n_expert, d, 2 inter] (gate_up) and [n_expert, inter, d] (down) as stored, MXFP4
  // or not: the error names the tensor that disagrees with the config.
  Status checked_fused_experts(const std::string& prefix, int64_t n_expert, int64_t d, int64_t inter);
  // The same experts (and their biases, where the store's shape has them) into the records of moe layer `moe_layer`
  // of a host expert store (converted to its dtype; MXFP4 ones copied as stored), read by several threads at once.
  Status experts_to_store(const std::string& prefix, ExpertStore& store, int64_t moe_layer);
  // Bytes placed on the backend, as placed (converted, dequantized): what the memory plan counts; the expert store is
  // host memory.
  size_t loaded_bytes() const { return loaded_bytes_; }
  // Names of checkpoint tensors never asked for (a sign of a wrong architecture mapping).
  std::vector<std::string> unused() const;

 private:
  Result<const TensorInfo*> checked(const std::string& name, const std::vector<int64_t>& shape);
  DType target_dtype(DType stored) const;
  // Rows [row0, row0 + rows) and columns [col0, col0 + cols) of a checkpoint tensor (rows < 0: all of it).
  struct Block {
    std::string name;
    int64_t row0 = 0, rows = -1, col0 = 0, cols = 0;
  };
  // Copies (converting) each source into consecutive rows of one new tensor of `shape`.
  Result<Tensor> assemble(const std::vector<std::string>& names, std::vector<int64_t> shape, DType dtype);
  Result<Tensor> assemble(const std::vector<Block>& blocks, std::vector<int64_t> shape, DType dtype);
  // Every expert of a fused [n_expert, R, C] (or [n_expert, C]: R = 1) tensor, transposed by copy_expert_columns, as
  // one new tensor [n_expert, C, R] (the 2-d form: [n_expert, C]); of an MXFP4 one, its rows dequantized
  // (copy_expert_rows_mxfp4) into [n_expert, R, C] of its dequantized shape.
  Result<Tensor> assemble_fused(const std::string& name, bool deinterleave, std::vector<int64_t> shape, DType dtype);
  // A host tensor placed on the backend (itself on a host backend).
  Result<Tensor> place(std::shared_ptr<Buffer> host, const std::vector<int64_t>& shape, DType dtype);
  // Records a checkpoint tensor as read (bytes of it: the progress bar), once however often it is read.
  void done(const std::string& name, size_t bytes);
  // Copies tensor `name` into dst from element `at` on, converting to dtype; returns its element count.
  size_t copy_converted(const std::string& name, DType dtype, unsigned char* dst, size_t at) const;
  // The same for a block of a 2-D tensor, row by row.
  size_t copy_block(const Block& b, DType dtype, unsigned char* dst, size_t at) const;
  // Expert e of a fused tensor [n_expert, R, C] (or [n_expert, C]: R = 1) transposed: C rows of R, row j being
  // column j of the expert's matrix, or with `deinterleave` column 2j for j < C / 2 and 2 (j - C / 2) + 1 after.
  size_t copy_expert_columns(const std::string& name, int64_t e, bool deinterleave, DType dtype, unsigned char* dst,
                             size_t at) const;
  // Expert e of an MXFP4 tensor `name` (its _blocks and _scales, [n_expert, R, C] dequantized) as R rows of C, row j
  // being row j, or with `deinterleave` row 2j for j < R / 2 and 2 (j - R / 2) + 1 after.
  size_t copy_expert_rows_mxfp4(const std::string& name, int64_t e, bool deinterleave, DType dtype, unsigned char* dst,
                                size_t at) const;
  // Expert e of fused tensor `name`, stored plainly (copy_expert_columns) or in MXFP4 (copy_expert_rows_mxfp4).
  size_t copy_expert(const std::string& name, int64_t e, bool deinterleave, DType dtype, unsigned char* dst,
                     size_t at) const;
  // experts_to_store for MXFP4 experts kept as such: each expert's stored codes, scales and biases into its record.
  Status mxfp4_experts_to_store(const std::string& prefix, ExpertStore& store, int64_t moe_layer);
  // A fused expert tensor of `shape` [n_expert, R, C] as checked() checks it, or, stored in MXFP4, its _blocks and
  // _scales: present, u8, and holding the transpose [n_expert, C, R] (rows of C a multiple of 32).
  Status checked_fused(const std::string& name, const std::vector<int64_t>& shape);
  // Part `suffix` of MXFP4 tensor `name` (io/mxfp4.h) as stored, a view of the checkpoint as `dtype` (f4_e2m1 codes
  // or ue8m0 scales) of `shape`; checked by checked_fused.
  Result<Tensor> mxfp4_as_stored(const std::string& name, std::string_view suffix, DType dtype,
                                 std::vector<int64_t> shape);
  // The checkpoint tensors that hold `name`: itself, or its MXFP4 _blocks and _scales.
  std::vector<std::string> stored_parts(const std::string& name) const;
  bool mxfp4_experts(const std::string& prefix) const {
    return has(prefix + ".gate_up_proj" + std::string(kMxfp4Blocks));
  }
  bool fused_experts(const std::string& prefix) const { return has(prefix + ".gate_up_proj") || mxfp4_experts(prefix); }

  const SafetensorsArchive& checkpoint_;
  Backend& backend_;
  DType act_dtype_;
  std::set<std::string> used_;
  std::unique_ptr<ProgressBar> progress_;
  size_t loaded_bytes_ = 0;
  size_t read_bytes_ = 0;  // checkpoint bytes read so far, into the backend or the expert store: the progress bar
};

}  // namespace ft
