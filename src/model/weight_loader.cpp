// WeightLoader implementation: zero-copy views on the host when possible, one assembled copy otherwise.
#include "model/weight_loader.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace ft {

WeightLoader::WeightLoader(const SafetensorsArchive& checkpoint, Backend& backend, DType act_dtype,
                           bool show_progress)
    : checkpoint_(checkpoint), backend_(backend), act_dtype_(act_dtype) {
  if (show_progress) progress_ = std::make_unique<ProgressBar>("loading weights", checkpoint.total_bytes());
}

WeightLoader::~WeightLoader() = default;

namespace {
std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// n elements of dtype `from` at element src_at of src, into dst from element dst_at on as dtype `to`.
void convert_elements(DType from, const unsigned char* src, size_t src_at, DType to, unsigned char* dst, size_t dst_at,
                      size_t n) {
  if (from == to) {
    std::memcpy(dst + dtype_bytes(to, dst_at), src + dtype_bytes(from, src_at), dtype_bytes(to, n));
  } else if (from == DType::kBF16 && to == DType::kF32) {
    const auto* s16 = reinterpret_cast<const uint16_t*>(src) + src_at;
    auto* d32 = reinterpret_cast<float*>(dst) + dst_at;
    for (size_t i = 0; i < n; ++i) d32[i] = bf16_to_f32(s16[i]);
  } else if (from == DType::kF32 && to == DType::kBF16) {  // f32 checkpoints, dequantized MXFP4 rows
    const auto* s32 = reinterpret_cast<const float*>(src) + src_at;
    auto* d16 = reinterpret_cast<uint16_t*>(dst) + dst_at;
    for (size_t i = 0; i < n; ++i) d16[i] = f32_to_bf16(s32[i]);
  } else {
    for (size_t i = 0; i < n; ++i) store_from_f64(to, dst, dst_at + i, load_as_f64(from, src, src_at + i));
  }
}
size_t numel_of(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t s : shape) n *= static_cast<size_t>(s);
  return n;
}

// Where element j of n sits in a tensor whose halves are stored interleaved (gpt-oss's gate and up): 2j in the first
// half, 2 (j - n / 2) + 1 in the second.
size_t deinterleaved(size_t j, size_t n) { return j < n / 2 ? 2 * j : 2 * (j - n / 2) + 1; }

// R rows of C elements of dtype `from`, element `first` of src on, into dst from element `at` on as dtype `to`,
// transposed: C rows of R, row j being column j of the source, or with `deinterleave` column deinterleaved(j, C).
// In tiles of 64 x 64, so that both the rows read and the rows written stay in cache.
void copy_transposed(DType from, const unsigned char* src, size_t first, size_t R, size_t C, bool deinterleave,
                     DType to, unsigned char* dst, size_t at) {
  constexpr size_t kTile = 64;
  const bool same16 = from == to && dtype_bytes(to, 1) == 2;
  for (size_t j0 = 0; j0 < C; j0 += kTile)
    for (size_t r0 = 0; r0 < R; r0 += kTile)
      for (size_t j = j0; j < std::min(C, j0 + kTile); ++j) {
        const size_t col = first + (deinterleave ? deinterleaved(j, C) : j), row = at + j * R;
        if (same16) {
          const auto* s16 = reinterpret_cast<const uint16_t*>(src) + col;
          auto* d16 = reinterpret_cast<uint16_t*>(dst) + row;
          for (size_t r = r0; r < std::min(R, r0 + kTile); ++r) d16[r] = s16[r * C];
        } else {
          for (size_t r = r0; r < std::min(R, r0 + kTile); ++r)
            convert_elements(from, src, col + r * C, to, dst, row + r, 1);
        }
      }
}
std::string blocks_of(const std::string& name) { return name + std::string(kMxfp4Blocks); }
std::string scales_of(const std::string& name) { return name + std::string(kMxfp4Scales); }

// fn(e) for every expert e < n, on up to 16 threads (the copies out of a mapped checkpoint are large reads).
template <class F>
void for_each_expert_in_parallel(int64_t n, F&& fn) {
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t e = next++; e < n; e = next++) fn(e);
  };
  const int n_threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 16));
  std::vector<std::thread> threads;
  for (int t = 1; t < n_threads; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}
}  // namespace

DType WeightLoader::target_dtype(DType stored) const {
  if (backend_.ops().supports(Op::kMatmul, act_dtype_, stored)) return stored;
  return backend_.device().is_cpu() ? DType::kF32 : act_dtype_;
}

void WeightLoader::done(const std::string& name, size_t bytes) {
  if (!used_.insert(name).second) return;
  read_bytes_ += bytes;
  if (progress_) progress_->update(read_bytes_);
}

Result<const TensorInfo*> WeightLoader::checked(const std::string& name, const std::vector<int64_t>& shape) {
  const TensorInfo* info = checkpoint_.find(name);
  if (!info) return not_found(checkpoint_.dir() + ": tensor '" + name + "' not found in the checkpoint");
  if (info->shape != shape)
    return corrupt_file(checkpoint_.dir() + ": tensor '" + name + "' has shape " + shape_str(info->shape) +
                        ", the config implies " + shape_str(shape));
  if (!dtype_is_float(info->dtype))
    return corrupt_file(checkpoint_.dir() + ": tensor '" + name + "' has non-float dtype " + dtype_name(info->dtype));
  return info;
}

Result<Tensor> WeightLoader::get(const std::string& name, std::vector<int64_t> shape) {
  FT_ASSIGN_OR_RETURN(const TensorInfo* info, checked(name, shape));
  if (backend_.device().is_cpu() && target_dtype(info->dtype) == info->dtype && shape.size() <= kMaxDims) {
    FT_ASSIGN_OR_RETURN(Tensor view, checkpoint_.tensor(name));
    done(name, info->nbytes);
    loaded_bytes_ += info->nbytes;
    return view;
  }
  return assemble({name}, std::move(shape), target_dtype(info->dtype));
}

Result<Tensor> WeightLoader::get_f32(const std::string& name, std::vector<int64_t> shape) {
  FT_RETURN_IF_ERROR(checked(name, shape).status());
  return assemble({name}, std::move(shape), DType::kF32);
}

Result<Tensor> WeightLoader::stack_rows(const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                                        int64_t cols) {
  int64_t total = 0;
  DType dtype = DType::kF32;
  const auto shape = [&](int64_t r) { return cols == 0 ? std::vector<int64_t>{r} : std::vector<int64_t>{r, cols}; };
  for (size_t i = 0; i < names.size(); ++i) {
    FT_ASSIGN_OR_RETURN(const TensorInfo* info, checked(names[i], shape(rows[i])));
    if (i == 0) dtype = info->dtype;
    else if (info->dtype != dtype) dtype = DType::kF32;  // mixed: widen
    total += rows[i];
  }
  return assemble(names, shape(total), target_dtype(dtype));
}

Result<Tensor> WeightLoader::row_blocks(const std::string& name, int64_t n_block, int64_t step, int64_t cols,
                                        int64_t row0, int64_t rows, bool transposed) {
  if (row0 < 0 || rows < 0 || row0 + rows > step)
    return invalid_argument(name + ": rows [" + std::to_string(row0) + ", " + std::to_string(row0 + rows) +
                            ") are outside blocks of " + std::to_string(step));
  FT_ASSIGN_OR_RETURN(const TensorInfo* info, checked(name, {n_block * step, cols}));
  const DType dtype = target_dtype(info->dtype);
  if (!transposed) {
    std::vector<Block> blocks;
    for (int64_t b = 0; b < n_block; ++b) blocks.push_back({name, b * step + row0, rows, 0, cols});
    return assemble(blocks, {n_block, rows, cols}, dtype);
  }
  FT_ASSIGN_OR_RETURN(auto host, allocate_host(dtype_bytes(dtype, static_cast<size_t>(n_block * rows * cols)), false));
  const SafetensorsFile* file = nullptr;
  checkpoint_.find(name, &file);
  for (int64_t b = 0; b < n_block; ++b)
    copy_transposed(info->dtype, file->tensor_data(*info), static_cast<size_t>((b * step + row0) * cols),
                    static_cast<size_t>(rows), static_cast<size_t>(cols), false, dtype,
                    static_cast<unsigned char*>(host->data()), static_cast<size_t>(b * cols * rows));
  done(name, info->nbytes);
  return place(std::move(host), {n_block, cols, rows}, dtype);
}

Result<Tensor> WeightLoader::experts_gate_up(const std::string& prefix, int64_t n_expert, int64_t inter, int64_t d,
                                             const std::string& shared, int64_t n_shared) {
  if (fused_experts(prefix)) {
    if (n_shared > 0) return unsupported(prefix + ": shared experts cannot ride with fused experts");
    FT_RETURN_IF_ERROR(checked_fused(prefix + ".gate_up_proj", {n_expert, d, 2 * inter}));
    FT_ASSIGN_OR_RETURN(const DType dtype, expert_dtype(prefix));
    if (dtype == DType::kF4E2M1)
      return mxfp4_as_stored(prefix + ".gate_up_proj", kMxfp4Blocks, dtype, {n_expert, 2 * inter, d});
    return assemble_fused(prefix + ".gate_up_proj", true, {n_expert, 2 * inter, d}, dtype);
  }
  std::vector<Block> blocks;
  DType dtype = DType::kF32;
  for (int64_t e = 0; e < n_expert; ++e)
    for (const char* part : {"gate_proj", "up_proj"}) {
      blocks.push_back({prefix + "." + std::to_string(e) + "." + part + ".weight"});
      FT_ASSIGN_OR_RETURN(const TensorInfo* info, checked(blocks.back().name, {inter, d}));
      dtype = info->dtype;
    }
  if (n_shared > 0) {
    for (const char* part : {".gate_proj.weight", ".up_proj.weight"})
      FT_RETURN_IF_ERROR(checked(shared + part, {n_shared * inter, d}).status());
    for (int64_t j = 0; j < n_shared; ++j)
      for (const char* part : {".gate_proj.weight", ".up_proj.weight"})
        blocks.push_back({shared + part, j * inter, inter, 0, d});
  }
  return assemble(blocks, {n_expert + n_shared, 2 * inter, d}, target_dtype(dtype));
}

Result<Tensor> WeightLoader::experts_down(const std::string& prefix, int64_t n_expert, int64_t d, int64_t inter,
                                          const std::string& shared, int64_t n_shared) {
  if (fused_experts(prefix)) {
    if (n_shared > 0) return unsupported(prefix + ": shared experts cannot ride with fused experts");
    FT_RETURN_IF_ERROR(checked_fused(prefix + ".down_proj", {n_expert, inter, d}));
    FT_ASSIGN_OR_RETURN(const DType dtype, expert_dtype(prefix));
    if (dtype == DType::kF4E2M1)
      return mxfp4_as_stored(prefix + ".down_proj", kMxfp4Blocks, dtype, {n_expert, d, inter});
    return assemble_fused(prefix + ".down_proj", false, {n_expert, d, inter}, dtype);
  }
  std::vector<Block> blocks;
  DType dtype = DType::kF32;
  for (int64_t e = 0; e < n_expert; ++e) {
    blocks.push_back({prefix + "." + std::to_string(e) + ".down_proj.weight"});
    FT_ASSIGN_OR_RETURN(const TensorInfo* info, checked(blocks.back().name, {d, inter}));
    dtype = info->dtype;
  }
  if (n_shared > 0) {
    FT_RETURN_IF_ERROR(checked(shared + ".down_proj.weight", {d, n_shared * inter}).status());
    for (int64_t j = 0; j < n_shared; ++j) blocks.push_back({shared + ".down_proj.weight", 0, d, j * inter, inter});
  }
  return assemble(blocks, {n_expert + n_shared, d, inter}, target_dtype(dtype));
}

Result<Tensor> WeightLoader::experts_gate_up_scales(const std::string& prefix, int64_t n_expert, int64_t inter,
                                                    int64_t d) {
  FT_RETURN_IF_ERROR(checked_fused(prefix + ".gate_up_proj", {n_expert, d, 2 * inter}));
  return mxfp4_as_stored(prefix + ".gate_up_proj", kMxfp4Scales, DType::kUE8M0, {n_expert, 2 * inter, d / kMxfp4Group});
}

Result<Tensor> WeightLoader::experts_down_scales(const std::string& prefix, int64_t n_expert, int64_t d,
                                                 int64_t inter) {
  FT_RETURN_IF_ERROR(checked_fused(prefix + ".down_proj", {n_expert, inter, d}));
  return mxfp4_as_stored(prefix + ".down_proj", kMxfp4Scales, DType::kUE8M0, {n_expert, d, inter / kMxfp4Group});
}

Result<Tensor> WeightLoader::mxfp4_as_stored(const std::string& name, std::string_view suffix, DType dtype,
                                             std::vector<int64_t> shape) {
  const std::string part = name + std::string(suffix);
  if (!backend_.device().is_cpu())
    return unsupported(part + ": MXFP4 experts are kept as stored on a host backend only");
  FT_ASSIGN_OR_RETURN(const Tensor stored, checkpoint_.tensor(part));  // kNotFound names a missing part
  done(part, stored.nbytes());
  loaded_bytes_ += stored.nbytes();
  return Tensor::make(dtype, shape.data(), static_cast<int>(shape.size()), stored.buffer, stored.offset);
}

Result<Tensor> WeightLoader::experts_gate_up_bias(const std::string& prefix, int64_t n_expert, int64_t inter) {
  if (!fused_experts(prefix)) return unsupported(prefix + ": expert biases need the fused expert tensors");
  FT_ASSIGN_OR_RETURN(const DType dtype, expert_dtype(prefix));
  if (dtype == DType::kF4E2M1) return get(prefix + ".gate_up_proj_bias", {n_expert, 2 * inter});  // as stored
  FT_RETURN_IF_ERROR(checked(prefix + ".gate_up_proj_bias", {n_expert, 2 * inter}).status());
  return assemble_fused(prefix + ".gate_up_proj_bias", true, {n_expert, 2 * inter}, dtype);
}

Result<Tensor> WeightLoader::experts_down_bias(const std::string& prefix, int64_t n_expert, int64_t d) {
  FT_ASSIGN_OR_RETURN(const DType dtype, expert_dtype(prefix));
  if (dtype == DType::kF4E2M1) return get(prefix + ".down_proj_bias", {n_expert, d});
  FT_RETURN_IF_ERROR(checked(prefix + ".down_proj_bias", {n_expert, d}).status());
  return assemble({prefix + ".down_proj_bias"}, {n_expert, d}, dtype);
}

size_t WeightLoader::copy_expert_columns(const std::string& name, int64_t e, bool deinterleave, DType dtype,
                                         unsigned char* dst, size_t at) const {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = checkpoint_.find(name, &file);
  const bool matrix = info->shape.size() == 3;
  const auto R = static_cast<size_t>(matrix ? info->shape[1] : 1), C = static_cast<size_t>(info->shape.back());
  copy_transposed(info->dtype, file->tensor_data(*info), static_cast<size_t>(e) * R * C, R, C, deinterleave, dtype, dst,
                  at);
  return R * C;
}

size_t WeightLoader::copy_expert_rows_mxfp4(const std::string& name, int64_t e, bool deinterleave, DType dtype,
                                            unsigned char* dst, size_t at) const {
  const SafetensorsFile *bf = nullptr, *sf = nullptr;
  const TensorInfo* blocks = checkpoint_.find(blocks_of(name), &bf);
  const TensorInfo* scales = checkpoint_.find(scales_of(name), &sf);
  const auto R = static_cast<size_t>(blocks->shape[1]), groups = static_cast<size_t>(blocks->shape[2]);
  const size_t C = groups * kMxfp4Group, row_bytes = groups * kMxfp4GroupBytes;
  const uint8_t* b = bf->tensor_data(*blocks) + static_cast<size_t>(e) * R * row_bytes;
  const uint8_t* s = sf->tensor_data(*scales) + static_cast<size_t>(e) * R * groups;
  std::vector<float> row(C);
  for (size_t j = 0; j < R; ++j) {
    const size_t from = deinterleave ? deinterleaved(j, R) : j;
    dequantize_mxfp4_row(b + from * row_bytes, s + from * groups, static_cast<int64_t>(groups), row.data());
    convert_elements(DType::kF32, reinterpret_cast<const unsigned char*>(row.data()), 0, dtype, dst, at + j * C, C);
  }
  return R * C;
}

size_t WeightLoader::copy_expert(const std::string& name, int64_t e, bool deinterleave, DType dtype, unsigned char* dst,
                                 size_t at) const {
  return has(name) ? copy_expert_columns(name, e, deinterleave, dtype, dst, at)
                   : copy_expert_rows_mxfp4(name, e, deinterleave, dtype, dst, at);
}

Status WeightLoader::checked_fused(const std::string& name, const std::vector<int64_t>& shape) {
  if (shape.size() != 3 || has(name) || !has(blocks_of(name))) return checked(name, shape).status();
  const std::vector<int64_t> rows{shape[0], shape[2], shape[1]};  // MXFP4 holds the transpose, a row per output
  const int64_t groups = rows[2] / kMxfp4Group;
  if (rows[2] % kMxfp4Group != 0)
    return corrupt_file(checkpoint_.dir() + ": tensor '" + blocks_of(name) + "' is MXFP4, whose rows hold groups of " +
                        "32, but the config implies rows of " + std::to_string(rows[2]));
  for (const auto& [part, want] :
       {std::pair{blocks_of(name), std::vector<int64_t>{rows[0], rows[1], groups, kMxfp4GroupBytes}},
        std::pair{scales_of(name), std::vector<int64_t>{rows[0], rows[1], groups}}}) {
    const TensorInfo* info = checkpoint_.find(part);
    if (!info) return not_found(checkpoint_.dir() + ": tensor '" + part + "' not found in the checkpoint");
    if (info->dtype != DType::kU8)
      return corrupt_file(checkpoint_.dir() + ": tensor '" + part + "' has dtype " + dtype_name(info->dtype) +
                          ", MXFP4 is stored as U8");
    if (info->shape != want)
      return corrupt_file(checkpoint_.dir() + ": tensor '" + part + "' has shape " + shape_str(info->shape) +
                          ", the config implies " + shape_str(want));
  }
  return ok_status();
}

std::vector<std::string> WeightLoader::stored_parts(const std::string& name) const {
  if (has(name)) return {name};
  return {blocks_of(name), scales_of(name)};
}

size_t WeightLoader::copy_converted(const std::string& name, DType dtype, unsigned char* dst, size_t at) const {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = checkpoint_.find(name, &file);
  const size_t n = numel_of(info->shape);
  convert_elements(info->dtype, file->tensor_data(*info), 0, dtype, dst, at, n);
  return n;
}

size_t WeightLoader::copy_block(const Block& b, DType dtype, unsigned char* dst, size_t at) const {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = checkpoint_.find(b.name, &file);
  const size_t row_len = static_cast<size_t>(info->shape[1]), cols = static_cast<size_t>(b.cols);
  for (int64_t r = 0; r < b.rows; ++r)
    convert_elements(info->dtype, file->tensor_data(*info),
                     static_cast<size_t>(b.row0 + r) * row_len + static_cast<size_t>(b.col0), dtype, dst,
                     at + static_cast<size_t>(r) * cols, cols);
  return static_cast<size_t>(b.rows) * cols;
}

Result<DType> WeightLoader::expert_dtype(const std::string& prefix) const {
  if (mxfp4_experts(prefix)) {
    if (backend_.device().is_cpu() && backend_.ops().supports(Op::kMoeExperts, act_dtype_, DType::kF4E2M1))
      return DType::kF4E2M1;
    return target_dtype(DType::kBF16);  // its values are exact in bf16
  }
  const std::string name = fused_experts(prefix) ? prefix + ".gate_up_proj" : prefix + ".0.gate_proj.weight";
  const TensorInfo* info = checkpoint_.find(name);
  if (!info) return not_found(checkpoint_.dir() + ": tensor '" + name + "' not found in the checkpoint");
  return target_dtype(info->dtype);
}

Result<DType> WeightLoader::expert_bias_dtype(const std::string& prefix) const {
  const TensorInfo* info = checkpoint_.find(prefix + ".gate_up_proj_bias");
  if (!info)
    return not_found(checkpoint_.dir() + ": tensor '" + prefix + ".gate_up_proj_bias' not found in the checkpoint");
  return target_dtype(info->dtype);
}

Status WeightLoader::checked_fused_experts(const std::string& prefix, int64_t n_expert, int64_t d, int64_t inter) {
  FT_RETURN_IF_ERROR(checked_fused(prefix + ".gate_up_proj", {n_expert, d, 2 * inter}));
  return checked_fused(prefix + ".down_proj", {n_expert, inter, d});
}

Status WeightLoader::mxfp4_experts_to_store(const std::string& prefix, ExpertStore& store, int64_t moe_layer) {
  const ExpertShape& sh = store.shape();
  const ExpertShape::Layout l = sh.layout();
  const std::string gate_up = prefix + ".gate_up_proj", down = prefix + ".down_proj";
  FT_RETURN_IF_ERROR(checked_fused_experts(prefix, sh.n_expert, sh.d, sh.inter));
  if (!mxfp4_experts(prefix))
    return corrupt_file(checkpoint_.dir() + ": the experts under '" + prefix +
                        "' are not MXFP4 as the first MoE layer's");
  std::vector<std::string> biases;
  if (sh.biases) {
    biases = {gate_up + "_bias", down + "_bias"};
    FT_RETURN_IF_ERROR(checked(biases[0], {sh.n_expert, 2 * sh.inter}).status());
    FT_RETURN_IF_ERROR(checked(biases[1], {sh.n_expert, sh.d}).status());
  }
  // Each record as the checkpoint stores the expert: codes, then scales, each contiguous per expert.
  const std::pair<std::string, size_t> parts[] = {{blocks_of(gate_up), l.gate_up},
                                                  {blocks_of(down), l.down},
                                                  {scales_of(gate_up), l.gate_up_scales},
                                                  {scales_of(down), l.down_scales}};
  for_each_expert_in_parallel(sh.n_expert, [&](int64_t e) {
    auto* dst = static_cast<unsigned char*>(store.record(moe_layer, e));
    for (const auto& [name, at] : parts) {
      const SafetensorsFile* file = nullptr;
      const TensorInfo* info = checkpoint_.find(name, &file);
      const size_t bytes = info->nbytes / static_cast<size_t>(sh.n_expert);
      std::memcpy(dst + at, file->tensor_data(*info) + static_cast<size_t>(e) * bytes, bytes);
    }
    const size_t elem = dtype_bytes(sh.bias_dtype, 1);
    for (size_t i = 0; i < biases.size(); ++i)
      copy_expert_columns(biases[i], e, false, sh.bias_dtype, dst, (i == 0 ? l.gate_up_bias : l.down_bias) / elem);
  });
  for (const auto& [name, at] : parts) done(name, checkpoint_.find(name)->nbytes);
  for (const auto& name : biases) done(name, checkpoint_.find(name)->nbytes);
  return ok_status();
}

Status WeightLoader::experts_to_store(const std::string& prefix, ExpertStore& store, int64_t moe_layer) {
  const ExpertShape& sh = store.shape();
  const bool fused = fused_experts(prefix);
  if (sh.biases != experts_have_biases(prefix))
    return corrupt_file(checkpoint_.dir() + ": the experts under '" + prefix +
                        "' differ from the first MoE layer's in having biases");
  if (sh.dtype == DType::kF4E2M1) return mxfp4_experts_to_store(prefix, store, moe_layer);
  std::vector<std::string> names;  // fused: gate_up, down (and their biases); else per expert: gate, up, down
  if (fused) {
    std::vector<std::pair<std::string, std::vector<int64_t>>> parts = {
        {".gate_up_proj", {sh.n_expert, sh.d, 2 * sh.inter}}, {".down_proj", {sh.n_expert, sh.inter, sh.d}}};
    if (sh.biases)
      parts.insert(parts.end(),
                   {{".gate_up_proj_bias", {sh.n_expert, 2 * sh.inter}}, {".down_proj_bias", {sh.n_expert, sh.d}}});
    for (const auto& [part, shape] : parts) {
      names.push_back(prefix + part);
      FT_RETURN_IF_ERROR(checked_fused(names.back(), shape));
    }
  } else {
    if (sh.biases) return unsupported(prefix + ": expert biases need the fused expert tensors");
    for (int64_t e = 0; e < sh.n_expert; ++e)
      for (const char* part : {"gate_proj", "up_proj", "down_proj"}) {
        names.push_back(prefix + "." + std::to_string(e) + "." + part + ".weight");
        const bool down = part[0] == 'd';
        FT_RETURN_IF_ERROR(
            checked(names.back(), down ? std::vector<int64_t>{sh.d, sh.inter} : std::vector<int64_t>{sh.inter, sh.d})
                .status());
      }
  }
  // Large parallel reads: each thread copies whole experts out of the mapped checkpoint into their records, in the
  // record's order: gate_up, down, then the biases.
  for_each_expert_in_parallel(sh.n_expert, [&](int64_t e) {
    auto* dst = static_cast<unsigned char*>(store.record(moe_layer, e));
    size_t at = 0;
    if (fused) {
      for (size_t i = 0; i < names.size(); ++i) at += copy_expert(names[i], e, i % 2 == 0, sh.dtype, dst, at);
    } else {
      for (int part = 0; part < 3; ++part)
        at += copy_converted(names[static_cast<size_t>(3 * e + part)], sh.dtype, dst, at);
    }
  });
  for (const auto& name : names)
    for (const auto& part : stored_parts(name)) done(part, checkpoint_.find(part)->nbytes);
  return ok_status();
}

Result<Tensor> WeightLoader::assemble(const std::vector<std::string>& names, std::vector<int64_t> shape, DType dtype) {
  std::vector<Block> blocks;
  for (const auto& name : names) blocks.push_back({name});
  return assemble(blocks, std::move(shape), dtype);
}

Result<Tensor> WeightLoader::assemble(const std::vector<Block>& blocks, std::vector<int64_t> shape, DType dtype) {
  FT_ASSIGN_OR_RETURN(auto host, allocate_host(dtype_bytes(dtype, numel_of(shape)), false));
  auto* dst = static_cast<unsigned char*>(host->data());
  size_t at = 0;  // elements written
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    at += b.rows < 0 ? copy_converted(b.name, dtype, dst, at) : copy_block(b, dtype, dst, at);
    done(b.name, checkpoint_.find(b.name)->nbytes);
  }
  return place(std::move(host), shape, dtype);
}

Result<Tensor> WeightLoader::assemble_fused(const std::string& name, bool deinterleave, std::vector<int64_t> shape,
                                            DType dtype) {
  FT_ASSIGN_OR_RETURN(auto host, allocate_host(dtype_bytes(dtype, numel_of(shape)), false));
  auto* dst = static_cast<unsigned char*>(host->data());
  const size_t per_expert = numel_of(shape) / static_cast<size_t>(shape[0]);
  for_each_expert_in_parallel(shape[0], [&](int64_t e) {
    copy_expert(name, e, deinterleave, dtype, dst, static_cast<size_t>(e) * per_expert);
  });
  for (const auto& part : stored_parts(name)) done(part, checkpoint_.find(part)->nbytes);
  return place(std::move(host), shape, dtype);
}

Result<Tensor> WeightLoader::place(std::shared_ptr<Buffer> host, const std::vector<int64_t>& shape, DType dtype) {
  Tensor host_tensor = Tensor::make(dtype, shape.data(), static_cast<int>(shape.size()), std::move(host));
  loaded_bytes_ += host_tensor.nbytes();
  if (backend_.device().is_cpu()) return host_tensor;
  FT_ASSIGN_OR_RETURN(auto dev, backend_.allocate(host_tensor.nbytes()));
  Tensor dev_tensor = Tensor::make(dtype, shape.data(), static_cast<int>(shape.size()), dev);
  FT_RETURN_IF_ERROR(backend_.copy(host_tensor, dev_tensor));
  FT_RETURN_IF_ERROR(backend_.stream().synchronize());
  return dev_tensor;
}

std::vector<std::string> WeightLoader::unused() const {
  std::vector<std::string> out;
  for (const auto& n : checkpoint_.names())
    if (!used_.contains(n)) out.push_back(n);
  return out;
}

}  // namespace ft
