// Media references in messages (image parts): which ones may be loaded at all.
#pragma once

#include <string>
#include <vector>

#include "freetoken/status.h"

namespace ft::server {

struct MediaPolicy {
  std::string local_root;                    // --allowed-local-media-path; empty: file:// is refused
  std::vector<std::string> allowed_domains;  // --allowed-media-domains; empty: http(s) is refused
};

// Checks an image reference against the rules: `data:` URLs (base64 image/*) always; http(s) only to an
// allowed host (exact match, case-insensitive); file:// only under local_root, with an empty or
// "localhost" authority (RFC 8089; any other host is remote and refused) and a resolved path (symlinks
// and ".." followed) that stays under the root and names a regular file. Anything else is
// kInvalidRequest naming the rule. Nothing is fetched here.
Status check_media_url(const MediaPolicy& policy, const std::string& url);

// Splits "a,b , c" into trimmed, lower-cased, non-empty names.
std::vector<std::string> parse_domain_list(const std::string& list);

}  // namespace ft::server
