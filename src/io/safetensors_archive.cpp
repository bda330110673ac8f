// SafetensorsArchive: finds the checkpoint's files, cross-checks the shard index, serves tensors by name.
#include "io/safetensors_archive.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/safetensors_json.h"

namespace ft {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// A shard must be a relative path that stays inside the checkpoint directory.
bool is_inside_name(const std::string& shard) {
  const fs::path p(shard);
  if (shard.empty() || p.is_absolute()) return false;
  for (const fs::path& part : p)
    if (part == "..") return false;
  return true;
}

}  // namespace

Result<SafetensorsArchive> SafetensorsArchive::open_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found(dir + ": no such directory");
  SafetensorsArchive archive;
  archive.dir_ = dir;
  const std::string index_path = (fs::path(dir) / kSafetensorsIndexName).string();
  const std::string single_path = (fs::path(dir) / kSafetensorsSingleName).string();
  if (fs::exists(index_path, ec)) {
    FT_RETURN_IF_ERROR(archive.open_index(index_path));
  } else if (fs::exists(single_path, ec)) {
    FT_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(single_path));
    FT_RETURN_IF_ERROR(archive.add_file(std::move(file)));
  } else {
    return not_found(dir + ": no " + kSafetensorsSingleName + " or " + kSafetensorsIndexName);
  }
  return archive;
}

Status SafetensorsArchive::open_index(const std::string& index_path) {
  FT_ASSIGN_OR_RETURN(std::string text, read_text_file(index_path));
  Json index;
  try {
    index = Json::parse(text);
  } catch (const Json::exception& e) {
    return corrupt_file(index_path + ": not valid JSON (" + one_line(e.what()) + ")");
  }
  if (!index.is_object()) return corrupt_file(index_path + ": expected a JSON object");
  auto wm = index.find("weight_map");
  if (wm == index.end()) return corrupt_file(index_path + ": missing 'weight_map'");
  if (!wm->is_object())
    return corrupt_file(index_path + ": 'weight_map' is " + json_kind(*wm) + ", expected an object");
  if (wm->empty()) return corrupt_file(index_path + ": 'weight_map' is empty");

  std::map<std::string, std::vector<std::string>> by_shard;  // shard -> tensors mapped to it
  for (const auto& [name, shard] : wm->items()) {
    if (!shard.is_string())
      return corrupt_file(index_path + ": tensor " + quoted_name(name) + ": shard is " + json_kind(shard) +
                          ", expected a file name");
    const std::string& shard_name = shard.get_ref<const std::string&>();
    if (!is_inside_name(shard_name))
      return corrupt_file(index_path + ": tensor " + quoted_name(name) + ": shard " + quoted_name(shard_name) +
                          " is not a file inside the checkpoint directory");
    by_shard[shard_name].push_back(name);
  }
  for (const auto& [shard_name, names] : by_shard) {
    const std::string shard_path = (fs::path(dir_) / shard_name).string();
    std::error_code ec;
    if (!fs::exists(shard_path, ec))
      return not_found(index_path + ": shard " + quoted_name(shard_name) + " of tensor " + quoted_name(names.front()) +
                       " does not exist");
    FT_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(shard_path));
    for (const std::string& name : names)
      if (!file->find(name))
        return corrupt_file(index_path + ": tensor " + quoted_name(name) + " is mapped to " + quoted_name(shard_name) +
                            " but that shard does not hold it");
    FT_RETURN_IF_ERROR(add_file(std::move(file)));
  }
  return ok_status();
}

Status SafetensorsArchive::add_file(std::shared_ptr<SafetensorsFile> file) {
  const size_t index = files_.size();
  for (const TensorInfo& info : file->tensors()) {
    auto [it, inserted] = entries_.try_emplace(info.name, Entry{index, &info});
    if (!inserted)
      return corrupt_file(dir_ + ": tensor " + quoted_name(info.name) + " is in both " +
                          files_[it->second.file_index]->path() + " and " + file->path());
  }
  files_.push_back(std::move(file));
  return ok_status();
}

const TensorInfo* SafetensorsArchive::find(std::string_view name, const SafetensorsFile** file) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return nullptr;
  if (file) *file = files_[it->second.file_index].get();
  return it->second.info;
}

std::vector<std::string> SafetensorsArchive::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;
}

size_t SafetensorsArchive::total_bytes() const {
  size_t n = 0;
  for (const auto& [name, entry] : entries_) n += entry.info->nbytes;
  return n;
}

Result<Tensor> SafetensorsArchive::tensor(std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return not_found(dir_ + ": tensor " + quoted_name(name) + " not found in the checkpoint");
  const TensorInfo& info = *it->second.info;
  const std::shared_ptr<SafetensorsFile>& file = files_[it->second.file_index];
  if (info.shape.size() > static_cast<size_t>(kMaxDims))
    return unsupported(file->path() + ": tensor " + quoted_name(name) + ": " + std::to_string(info.shape.size()) +
                       " dims, at most " + std::to_string(kMaxDims) + " are supported");
  // The mapping is read-only: writing through the view faults.
  auto* data = const_cast<unsigned char*>(file->tensor_data(info));
  auto buffer = wrap_host(data, info.nbytes, file);
  return Tensor::make(info.dtype, info.shape.data(), static_cast<int>(info.shape.size()), std::move(buffer));
}

Status SafetensorsArchive::read_into(std::string_view name, void* dst, size_t nbytes, ThreadPool* pool) const {
  const SafetensorsFile* file = nullptr;
  const TensorInfo* info = find(name, &file);
  if (!info) return not_found(dir_ + ": tensor " + quoted_name(name) + " not found in the checkpoint");
  if (nbytes != info->nbytes)
    return invalid_argument(file->path() + ": tensor " + quoted_name(name) + ": destination holds " +
                            std::to_string(nbytes) + " bytes, the tensor " + std::to_string(info->nbytes));
  const unsigned char* src = file->tensor_data(*info);
  auto* out = static_cast<unsigned char*>(dst);
  constexpr int64_t kChunk = 4 << 20;
  const auto n_chunks = static_cast<int64_t>((nbytes + kChunk - 1) / kChunk);
  if (!pool || n_chunks <= 1) {
    if (nbytes) std::memcpy(out, src, nbytes);
    return ok_status();
  }
  pool->parallel_for(n_chunks, [&](int, int64_t c0, int64_t c1) {
    const size_t begin = static_cast<size_t>(c0 * kChunk);
    const size_t end = std::min(nbytes, static_cast<size_t>(c1 * kChunk));
    std::memcpy(out + begin, src + begin, end - begin);
  });
  return ok_status();
}

}  // namespace ft
