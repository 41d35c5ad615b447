// Record <-> generation glue for ca-model generate.
#include "model/generate_records.h"

#include <ATen/Parallel.h>

namespace ca::model {

std::expected<std::vector<int32_t>, std::string> record_prompt(const Json& record, const Tokenizer& tokenizer) {
  if (record.contains("ids")) {
    const Json& ids = record["ids"];
    if (!ids.is_array() || ids.empty() ||
        !std::all_of(ids.begin(), ids.end(), [](const Json& v) { return v.is_number_integer(); })) {
      return std::unexpected("ids: not a non-empty array of integers");
    }
    return ids.get<std::vector<int32_t>>();
  }
  if (record.contains("prompt")) {
    if (!record["prompt"].is_string() || record["prompt"].get<std::string>().empty()) {
      return std::unexpected("prompt: not a non-empty string");
    }
    return tokenizer.encode(record["prompt"].get<std::string>());
  }
  return std::unexpected("the record has neither \"ids\" nor \"prompt\"");
}

Json completion_record(Json record, const Completion& completion, const Tokenizer& tokenizer) {
  record["completion"] = {{"text", tokenizer.decode(completion.ids, SkipSpecial::yes)},
                          {"ids", completion.ids},
                          {"logprobs", completion.logprobs},
                          {"finish_reason", completion.finish_reason}};
  return record;
}

void set_threads(unsigned threads) {
  if (threads > 0) {
    at::set_num_threads(static_cast<int>(threads));
  }
}

}  // namespace ca::model
