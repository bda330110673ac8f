// SafetensorsWriter: header from the declarations, then the data section streamed through stdio.
#include "io/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"

namespace ft {

SafetensorsWriter::~SafetensorsWriter() {
  if (out_) {
    std::fclose(out_);
    std::remove(tmp_path().c_str());
  }
}

Status SafetensorsWriter::fail(Status status) {
  if (out_) {
    std::fclose(out_);
    out_ = nullptr;
    std::remove(tmp_path().c_str());
  }
  return status;
}

Status SafetensorsWriter::add(std::string name, DType dtype, std::vector<int64_t> shape) {
  const std::string at = path_ + ": tensor " + quoted_name(name) + ": ";
  if (begun_) return invalid_argument(at + "declared after begin()");
  if (name.empty() || name == "__metadata__") return invalid_argument(at + "reserved name");
  if (names_.count(name)) return invalid_argument(at + "declared twice");
  uint64_t numel = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel) ||
        numel > (std::numeric_limits<uint64_t>::max() - 7) / 64)
      return invalid_argument(at + "bad shape " + shape_to_string(shape));
  const size_t nbytes = dtype_bytes(dtype, numel);
  names_.insert(name);
  tensors_.push_back({std::move(name), dtype, std::move(shape), data_bytes_, nbytes});
  data_bytes_ += nbytes;
  return ok_status();
}

Status SafetensorsWriter::begin() {
  if (begun_) return invalid_argument(path_ + ": begin() called twice");
  begun_ = true;
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  for (const Declared& t : tensors_)
    header[t.name] = {{"dtype", dtype_to_safetensors(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {t.offset, t.offset + t.nbytes}}};
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    return fail(invalid_argument(path_ + ": a tensor name or metadata string is not valid UTF-8"));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));

  out_ = std::fopen(tmp_path().c_str(), "wb");
  if (!out_) return fail(io_error(tmp_path() + ": " + std::strerror(errno)));
  if (std::fwrite(len, 1, 8, out_) != 8 || std::fwrite(text.data(), 1, text.size(), out_) != text.size())
    return fail(io_error(tmp_path() + ": write failed: " + std::strerror(errno)));
  return ok_status();
}

Status SafetensorsWriter::write_bytes(const void* data, size_t nbytes) {
  if (!begun_ || !out_) return invalid_argument(path_ + ": data written before begin() or after finish()");
  if (nbytes > data_bytes_ - written_)
    return fail(invalid_argument(path_ + ": writing " + std::to_string(nbytes) + " bytes past the declared " +
                                 std::to_string(data_bytes_) + "-byte data section"));
  if (nbytes && std::fwrite(data, 1, nbytes, out_) != nbytes)
    return fail(io_error(tmp_path() + ": write failed: " + std::strerror(errno)));
  written_ += nbytes;
  return ok_status();
}

Status SafetensorsWriter::write_tensor(std::string_view name, const void* data, size_t nbytes) {
  const size_t n = tensors_.size();
  // Skip tensors already covered by write_bytes(), and empty tensors nobody asked for.
  while (next_ < n && tensors_[next_].offset + tensors_[next_].nbytes <= written_ &&
         !(tensors_[next_].nbytes == 0 && tensors_[next_].offset == written_))
    ++next_;
  while (next_ < n && tensors_[next_].nbytes == 0 && tensors_[next_].name != name) ++next_;
  const std::string at = path_ + ": tensor " + quoted_name(name) + ": ";
  if (next_ == n) return fail(invalid_argument(at + "written but not declared, or written twice"));
  const Declared& t = tensors_[next_];
  if (t.name != name) return fail(invalid_argument(at + "written out of order; expected " + quoted_name(t.name)));
  if (t.offset != written_) return fail(invalid_argument(at + "written after a partial write_bytes()"));
  if (nbytes != t.nbytes)
    return fail(
        invalid_argument(at + std::to_string(nbytes) + " bytes given, " + std::to_string(t.nbytes) + " declared"));
  FT_RETURN_IF_ERROR(write_bytes(data, nbytes));
  ++next_;
  return ok_status();
}

Status SafetensorsWriter::finish() {
  if (!begun_) FT_RETURN_IF_ERROR(begin());
  if (!out_) return invalid_argument(path_ + ": finish() after a failure or a previous finish()");
  if (written_ != data_bytes_)
    return fail(invalid_argument(path_ + ": finish() after " + std::to_string(written_) + " of " +
                                 std::to_string(data_bytes_) + " data bytes"));
  std::FILE* f = out_;
  out_ = nullptr;
  const bool flushed = std::fflush(f) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!flushed || !closed) {
    std::remove(tmp_path().c_str());
    return io_error(tmp_path() + ": write failed: " + std::strerror(flushed ? errno : err));
  }
  if (std::rename(tmp_path().c_str(), path_.c_str()) != 0) {
    const int rename_err = errno;
    std::remove(tmp_path().c_str());
    return io_error(path_ + ": rename failed: " + std::strerror(rename_err));
  }
  return ok_status();
}

Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  SafetensorsWriter writer(path);
  for (const auto& [name, t] : tensors) {
    if (!t.defined() || !t.device().is_cpu() || !t.is_contiguous())
      return invalid_argument(path + ": tensor " + quoted_name(name) + " must be a contiguous host tensor");
    FT_RETURN_IF_ERROR(writer.add(name, t.dtype, std::vector<int64_t>(t.shape.begin(), t.shape.begin() + t.ndim)));
  }
  for (const auto& [key, value] : metadata) writer.set_metadata(key, value);
  FT_RETURN_IF_ERROR(writer.begin());
  for (const auto& [name, t] : tensors) FT_RETURN_IF_ERROR(writer.write_tensor(name, t.data(), t.nbytes()));
  return writer.finish();
}

}  // namespace ft
