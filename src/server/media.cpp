// Media reference rules (data:, http(s) allowlist, file:// under a root).
#include "server/media.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace ft::server {
namespace {

Status refuse(const std::string& m) { return {StatusCode::kInvalidRequest, m}; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_base64(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0) return false;
  size_t pad = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad || !(std::isalnum(c) || c == '+' || c == '/')) return false;
  }
  return pad <= 2;
}

Status check_data_url(const std::string& url) {
  const size_t comma = url.find(',');
  if (comma == std::string::npos) return refuse("malformed data: URL (no ',')");
  const std::string meta = lower(url.substr(5, comma - 5));
  if (meta.rfind("image/", 0) != 0) return refuse("data: URL must carry an image/* media type");
  if (meta.size() < 7 || meta.compare(meta.size() - 7, 7, ";base64") != 0)
    return refuse("data: URL must be base64-encoded");
  if (!is_base64(std::string_view(url).substr(comma + 1))) return refuse("data: URL payload is not valid base64");
  return ok_status();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool percent_decode(const std::string& in, std::string& out) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return false;
    out += c;
    i += 2;
  }
  return true;
}

Status check_file_url(const MediaPolicy& p, const std::string& url) {
  if (p.local_root.empty()) return refuse("file:// media is disabled (start the server with --allowed-local-media-path)");
  const std::string rest = url.substr(7);  // after "file://"
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) return refuse("file:// URL has no path");
  const std::string authority = lower(rest.substr(0, slash));
  if (!authority.empty() && authority != "localhost")
    return refuse("file:// URL names the remote host '" + authority + "'; only local files may be read");
  std::string path;
  if (!percent_decode(rest.substr(slash), path)) return refuse("file:// URL has a malformed percent-escape");
  if (path.find('?') != std::string::npos || path.find('#') != std::string::npos)
    return refuse("file:// URL must not carry a query or fragment");
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(p.local_root, ec);
  if (ec) return refuse("the allowed local media path cannot be resolved");
  const fs::path target = fs::weakly_canonical(fs::path(path), ec);
  if (ec) return refuse("file:// path cannot be resolved");
  auto r = root.begin();
  auto t = target.begin();
  for (; r != root.end() && !r->empty(); ++r, ++t)
    if (t == target.end() || *r != *t) return refuse("file:// path is outside the allowed local media path");
  if (!fs::is_regular_file(target, ec)) return refuse("file:// path is not a readable file");
  return ok_status();
}

Status check_http_url(const MediaPolicy& p, const std::string& url) {
  const size_t start = url.find("://") + 3;
  size_t end = url.find_first_of("/?#", start);
  if (end == std::string::npos) end = url.size();
  std::string host = url.substr(start, end - start);
  if (const size_t at = host.rfind('@'); at != std::string::npos) host = host.substr(at + 1);
  if (!host.empty() && host[0] == '[') {
    host = host.substr(0, host.find(']') + 1);
  } else if (const size_t colon = host.find(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  host = lower(host);
  if (host.empty()) return refuse("media URL has no host");
  if (std::find(p.allowed_domains.begin(), p.allowed_domains.end(), host) == p.allowed_domains.end())
    return refuse("media host '" + host + "' is not allowed (see --allowed-media-domains)");
  return ok_status();
}

}  // namespace

Status check_media_url(const MediaPolicy& policy, const std::string& url) {
  const std::string scheme = lower(url.substr(0, url.find(':')));
  if (url.find(':') == std::string::npos) return refuse("media reference is not a URL");
  if (scheme == "data") return check_data_url(url);
  if (scheme == "file" && url.compare(4, 3, "://") == 0) return check_file_url(policy, url);
  if ((scheme == "http" || scheme == "https") && url.find("://") == scheme.size()) return check_http_url(policy, url);
  return refuse("unsupported media URL scheme '" + scheme + "'");
}

std::vector<std::string> parse_domain_list(const std::string& list) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    std::string d = list.substr(i, j - i);
    d.erase(0, d.find_first_not_of(" \t"));
    d.erase(d.find_last_not_of(" \t") + 1);
    if (!d.empty()) out.push_back(lower(d));
    i = j + 1;
  }
  return out;
}

}  // namespace ft::server
