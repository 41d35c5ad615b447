#!/usr/bin/env bash
# ca-rollout --policy local:CKPT: a tiny random Qwen2 (SmolLM2's tokenizer, its context raised to 8192 so that the
# episode's prompt fits) runs episodes of examples/ tasks in-process on the cpu. Each trajectory carries every turn's
# prompt ids, completion ids and logprobs; transformers renders the first prompt from the messages with the model's
# chat template (tokenized by `tokenizers`) and recomputes the logprobs with one forward pass. The same seed gives the same tokens; --resume runs only what is
# missing; a missing checkpoint (66), a bad config.json (65), a bad --dtype (64) and a prompt longer than the
# model's context (an episode error, 1) say what went wrong.
source "$(dirname "$0")/lib.bash"
source "$CA_SOURCE_DIR/tests/model/setup.bash"
"$PY" "$CA_SOURCE_DIR/tests/model/model_reference.py" tiny "$WORK/tiny" --arch qwen2 --tokenizer "$SMOLLM2" >/dev/null ||
  { fail "could not make the tiny model"; finish; }
cp -r "$WORK/tiny" "$WORK/short"  # max_position_embeddings 512: shorter than an episode's first prompt
"$PY" -c 'import json, sys; c = json.load(open(sys.argv[1])); c["max_position_embeddings"] = 8192; json.dump(c, open(sys.argv[1], "w"))' \
  "$WORK/tiny/config.json"
head -3 "$CA_SOURCE_DIR/examples/candidates/cpu/tasks.jsonl" >"$WORK/tasks.jsonl"
head -2 "$WORK/tasks.jsonl" >"$WORK/two.jsonl"
rollout=("$CA_BIN/ca-rollout" --policy "local:$WORK/tiny" --max-tokens 24 --no-compile --seed 5)

# Two tasks, two samples each, two at a time; then --resume adds the third task's.
run "${rollout[@]}" --samples 2 -j 2 "$WORK/two.jsonl" -o "$WORK/out.jsonl"
expect_code 0
expect_stderr "4 of 4 episodes written"
run "${rollout[@]}" --samples 2 -j 2 "$WORK/tasks.jsonl" -o "$WORK/out.jsonl" --resume
expect_code 0
expect_stderr "2 of 2 episodes written, 4 done before"
"$PY" - "$WORK/out.jsonl" "$WORK/tiny" <<'PY' || fail "trajectories of the local policy"
import json, sys
import torch
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM, AutoTokenizer
records = [json.loads(line) for line in open(sys.argv[1])]
assert sorted(r["id"] for r in records) == sorted(f"{t}#{s}" for t in ("example/linear_leaky_relu", "example/conv_relu_pool",
                                                                         "example/layernorm_gelu") for s in (0, 1)), [r["id"] for r in records]
tok = AutoTokenizer.from_pretrained(sys.argv[2])  # for its chat template; ids from tokenizer.json by `tokenizers`
ids_of = Tokenizer.from_file(sys.argv[2] + "/tokenizer.json")
model = AutoModelForCausalLM.from_pretrained(sys.argv[2], dtype=torch.float32).eval()
worst, tokens = 0.0, 0
for r in records:
    assert r["kind"] == "trajectory" and r["error"] is None and r["verify"] and r["reward"]["value"] == -1, r["error"]
    p = r["policy"]
    assert p["name"] == "local" and p["model"] == sys.argv[2] and p["sampling"]["max_tokens"] == 24, p
    assert len(r["turns"]) == r["end"]["turns"] >= 1
    for k, turn in enumerate(r["turns"]):
        ids, lps, prompt = turn["token_ids"], turn["logprobs"], turn["extra"]["prompt_ids"]
        assert 1 <= len(ids) == len(lps) == turn["completion_tokens"] <= 24, turn
        assert turn["prompt_tokens"] == len(prompt) and turn["finish_reason"] in ("stop", "length", "tool_calls"), turn
        # The prompt: the conversation before this turn through the model's own template, as transformers renders it.
        before = [m for m in r["messages"] if m["role"] in ("system", "user")] if k == 0 else None
        if before is not None:
            want = tok.apply_chat_template(before, tools=r["tools"], add_generation_prompt=True, tokenize=False)
            assert ids_of.encode(want, add_special_tokens=False).ids == prompt, "prompt ids differ from transformers'"
        with torch.no_grad():
            logits = model(torch.tensor([prompt + ids])).logits[0].log_softmax(-1)
        again = logits[len(prompt) - 1:-1].gather(-1, torch.tensor(ids)[:, None])[:, 0]
        worst = max(worst, (again.double() - torch.tensor(lps, dtype=torch.double)).abs().max().item())
        tokens += len(ids)
print(f"local policy: {len(records)} trajectories, {tokens} tokens, logprobs against a transformers forward pass: "
      f"max abs diff {worst:.3g}")
assert worst < 1e-4, worst
PY

# The same seed, the same tokens; another seed, others.
run "${rollout[@]}" "$WORK/two.jsonl" -o "$WORK/again.jsonl"
expect_code 0
run "${rollout[@]}" "$WORK/two.jsonl" -o "$WORK/other.jsonl" --seed 6
expect_code 0
"$PY" - "$WORK/out.jsonl" "$WORK/again.jsonl" "$WORK/other.jsonl" <<'PY' || fail "seeded tokens"
import json, sys
def tokens(path):
    return {r["id"]: [t["token_ids"] for t in r["turns"]] for r in map(json.loads, open(path)) if r["sample"] == 0}
first, again, other = map(tokens, sys.argv[1:])
assert all(first[k] == again[k] for k in again) and len(again) == 2, "the same seed gave other tokens"
assert any(first[k] != other[k] for k in other), "another seed gave the same tokens"
PY

# Failures.
run "$CA_BIN/ca-rollout" --policy "local:$WORK/none" "$WORK/two.jsonl" -o "$WORK/x.jsonl"
expect_code 66
expect_stderr "ca-rollout: error: --policy: local:$WORK/none:"
mkdir -p "$WORK/bad" && cp "$WORK/tiny/"* "$WORK/bad/" && echo '{"model_type": "llama",' >"$WORK/bad/config.json"
run "$CA_BIN/ca-rollout" --policy "local:$WORK/bad" "$WORK/two.jsonl" -o "$WORK/x.jsonl"
expect_code 65
expect_stderr "config.json"
[ ! -e "$WORK/x.jsonl" ] || fail "a policy that failed to load left an output"
run "$CA_BIN/ca-rollout" --policy "local:$WORK/tiny" --dtype float16 "$WORK/two.jsonl"
expect_code 64
run "$CA_BIN/ca-rollout" --policy "local:" "$WORK/two.jsonl"
expect_code 64
expect_stderr "local:PATH"
run "$CA_BIN/ca-rollout" --policy "local:$WORK/short" --no-compile "$WORK/two.jsonl" -o "$WORK/short.jsonl"
expect_code 1
"$PY" - "$WORK/short.jsonl" <<'PY' || fail "a prompt past the context is an episode error"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
assert len(records) == 2
for r in records:
    assert r["end"]["reason"] == "policy_error" and "fills the model's context of 512 tokens" in r["error"], r["error"]
PY
finish
