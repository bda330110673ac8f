// SafetensorsFile: header parsing and validation; nothing is read outside the mapping.
#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "io/safetensors_json.h"

namespace ft {
namespace {

using Json = nlohmann::json;

// A non-negative JSON integer (nlohmann parses non-negative literals as unsigned).
bool json_to_u64(const Json& j, uint64_t* out) {
  if (!j.is_number_unsigned()) return false;
  *out = j.get<uint64_t>();
  return true;
}

std::string range_string(uint64_t begin, uint64_t end) {
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += ")";
  return s;
}

Result<std::vector<int64_t>> parse_shape(const Json& j, const std::string& at, uint64_t* numel) {
  if (!j.is_array()) return corrupt_file(at + "'shape' is " + json_kind(j) + ", expected an array");
  std::vector<int64_t> shape;
  uint64_t n = 1;
  for (const Json& d : j) {
    if (d.is_number_integer() && !d.is_number_unsigned())
      return corrupt_file(at + "negative dimension " + std::to_string(d.get<int64_t>()) + " in 'shape'");
    uint64_t v = 0;
    if (!json_to_u64(d, &v)) return corrupt_file(at + "'shape' holds " + json_kind(d) + ", expected integers");
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) || __builtin_mul_overflow(n, v, &n) ||
        n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return corrupt_file(at + "element count of 'shape' " + one_line(j.dump()) + " overflows");
    shape.push_back(static_cast<int64_t>(v));
  }
  *numel = n;
  return shape;
}

Result<TensorInfo> parse_entry(const std::string& path, const std::string& name, const Json& e, uint64_t data_bytes) {
  const std::string at = path + ": tensor " + quoted_name(name) + ": ";
  if (!e.is_object()) return corrupt_file(at + "entry is " + json_kind(e) + ", expected an object");
  TensorInfo info;
  info.name = name;

  auto dt = e.find("dtype");
  if (dt == e.end()) return corrupt_file(at + "missing 'dtype'");
  if (!dt->is_string()) return corrupt_file(at + "'dtype' is " + json_kind(*dt) + ", expected a string");
  Result<DType> dtype = dtype_from_safetensors(dt->get_ref<const std::string&>());
  if (!dtype.ok()) return unsupported(at + "unknown dtype " + quoted_name(dt->get_ref<const std::string&>()));
  info.dtype = dtype.value();

  auto sh = e.find("shape");
  if (sh == e.end()) return corrupt_file(at + "missing 'shape'");
  uint64_t numel = 0;
  FT_ASSIGN_OR_RETURN(info.shape, parse_shape(*sh, at, &numel));
  const uint64_t bits = dtype_bits(info.dtype);
  if (numel > (std::numeric_limits<uint64_t>::max() - 7) / bits)
    return corrupt_file(at + "byte size of shape " + shape_to_string(info.shape) + " overflows");
  const uint64_t expected = dtype_bytes(info.dtype, numel);

  auto off = e.find("data_offsets");
  if (off == e.end()) return corrupt_file(at + "missing 'data_offsets'");
  uint64_t begin = 0, end = 0;
  if (!off->is_array() || off->size() != 2 || !json_to_u64((*off)[0], &begin) || !json_to_u64((*off)[1], &end))
    return corrupt_file(at + "'data_offsets' " + one_line(off->dump()) +
                        " is not [begin, end] of non-negative integers");
  if (begin > end) return corrupt_file(at + "data_offsets " + range_string(begin, end) + " end before they begin");
  if (end > data_bytes)
    return corrupt_file(at + "data_offsets " + range_string(begin, end) + " exceed the " + std::to_string(data_bytes) +
                        "-byte data section");
  if (end - begin != expected)
    return corrupt_file(at + "data_offsets " + range_string(begin, end) + " hold " + std::to_string(end - begin) +
                        " bytes but " + dtype_to_safetensors(info.dtype) + " " + shape_to_string(info.shape) +
                        " needs " + std::to_string(expected));
  info.offset = static_cast<size_t>(begin);
  info.nbytes = static_cast<size_t>(expected);
  return info;
}

Status check_overlaps(const std::string& path, const std::vector<TensorInfo>& tensors) {
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& t : tensors)
    if (t.nbytes > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  const TensorInfo* reach = nullptr;  // the tensor ending furthest so far
  for (const TensorInfo* t : by_offset) {
    if (reach && t->offset < reach->offset + reach->nbytes)
      return corrupt_file(path + ": tensor " + quoted_name(t->name) + ": data_offsets " +
                          range_string(t->offset, t->offset + t->nbytes) + " overlap tensor " +
                          quoted_name(reach->name) + " at " +
                          range_string(reach->offset, reach->offset + reach->nbytes));
    if (!reach || t->offset + t->nbytes > reach->offset + reach->nbytes) reach = t;
  }
  return ok_status();
}

Result<std::map<std::string, std::string>> parse_metadata(const std::string& path, const Json& j) {
  if (!j.is_object()) return corrupt_file(path + ": '__metadata__' is " + json_kind(j) + ", expected an object");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string())
      return corrupt_file(path + ": '__metadata__' entry " + quoted_name(key) + " is " + json_kind(value) +
                          ", expected a string");
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

}  // namespace

std::string quoted_name(std::string_view name) {
  std::string s = "'";
  s += one_line(name);
  s += "'";
  return s;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  FT_ASSIGN_OR_RETURN(file->mapping_, MappedFile::open(path));
  const size_t size = file->mapping_->size();
  const unsigned char* bytes = file->mapping_->data();
  if (size < 8)
    return corrupt_file(path + ": file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxSafetensorsHeaderBytes)
    return corrupt_file(path + ": header length " + std::to_string(header_len) + " exceeds the " +
                        std::to_string(kMaxSafetensorsHeaderBytes) + "-byte limit");
  if (header_len > size - 8)
    return corrupt_file(path + ": header length " + std::to_string(header_len) + " exceeds the " +
                        std::to_string(size - 8) + " bytes after the length field");
  file->data_start_ = 8 + static_cast<size_t>(header_len);

  // nlohmann stops at a NUL byte and would ignore whatever follows it.
  if (std::memchr(bytes + 8, '\0', static_cast<size_t>(header_len)))
    return corrupt_file(path + ": header is not valid JSON (it contains a NUL byte)");
  Json header;
  std::set<std::string> top_keys;
  std::string duplicate;  // a top-level key seen twice: JSON parsers would silently keep one of them
  auto on_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key && parsed.is_string() &&
        !top_keys.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    header = Json::parse(bytes + 8, bytes + file->data_start_, on_event);
  } catch (const Json::exception& e) {
    return corrupt_file(path + ": header is not valid JSON (" + one_line(e.what()) + ")");
  }
  if (!duplicate.empty())
    return corrupt_file(path + ": tensor " + quoted_name(duplicate) + " appears twice in the header");
  if (!header.is_object()) return corrupt_file(path + ": header is " + json_kind(header) + ", expected a JSON object");

  const uint64_t data_bytes = size - file->data_start_;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      FT_ASSIGN_OR_RETURN(file->metadata_, parse_metadata(path, entry));
      continue;
    }
    FT_ASSIGN_OR_RETURN(TensorInfo info, parse_entry(path, name, entry, data_bytes));
    file->tensors_.push_back(std::move(info));
  }
  std::sort(file->tensors_.begin(), file->tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  FT_RETURN_IF_ERROR(check_overlaps(path, file->tensors_));
  return file;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

}  // namespace ft
