// "Did you mean" suggestions for mistyped names (subcommands, enum values, ops).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ca {

/// Returns the candidate closest to `word` by edit distance, or "" when none is
/// close enough to be a plausible typo.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

/// Returns ", did you mean 'x'?" for the nearest candidate, or "" when none is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// Joins names as "'a', 'b', 'c'" for "must be one of" messages.
std::string quoted_list(const std::vector<std::string>& names);

}  // namespace ca
