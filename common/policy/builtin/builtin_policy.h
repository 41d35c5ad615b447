// The built-in policy: writes kernels from the task IR (kernel_writer.h) and acts through the same tools an LLM gets
// (str_replace_editor, verify, profile, finish), so its episodes are ordinary trajectories. Needs no model.
#pragma once

#include <memory>

#include "policy/policy.h"

namespace ca {

struct BuiltinOptions {
  int variants = 4;  // at most this many kernel variants are written and verified per episode
};

/// A policy that writes variant 1 of the task's kernel, verifies it, tries the next variant on a [FAIL], profiles
/// each passing one, re-creates the fastest before finishing, and finishes without a kernel (naming each uncovered
/// node in the message and in AssistantTurn.extra["uncovered"]) for a task outside its patterns. Deterministic for
/// EpisodeInfo.seed. Never returns an error.
std::unique_ptr<Policy> make_builtin_policy(const BuiltinOptions& options);

}  // namespace ca
