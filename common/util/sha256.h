// SHA-256, for fingerprints and content-addressed caches.
#pragma once

#include <string>
#include <string_view>

namespace ca {

/// Returns the lowercase hex SHA-256 digest of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace ca
