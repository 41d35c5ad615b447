// Records in, completions out: what `ca-model generate` does to each JSONL record, kept here so the tool's main
// only wires flags and the loop.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "model/generate.h"
#include "util/jsonl.h"

namespace ca::model {

/// The prompt's token ids: the record's "ids" (array of integers) or its "prompt" (text; special tokens in it
/// become their ids). The error names the field.
std::expected<std::vector<int32_t>, std::string> record_prompt(const Json& record, const Tokenizer& tokenizer);

/// `record` with "completion": {"text", "ids", "logprobs", "finish_reason"} added.
Json completion_record(Json record, const Completion& completion, const Tokenizer& tokenizer);

/// Sets LibTorch's intra-op threads (0 leaves its default).
void set_threads(unsigned threads);

}  // namespace ca::model
