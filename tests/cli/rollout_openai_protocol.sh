#!/usr/bin/env bash
# ca-rollout's openai policy against a scripted OpenAI-compatible server on
# 127.0.0.1 (fake_openai_server.py): exact request bodies and headers, tool-call
# round trips, tool calls in text (hermes, fenced, bare), 429/503 then success,
# a 500, a timeout, a reset, truncated JSON, a model that never finishes, one
# repeating a failing call, one that calls no tool, bad calls. Each ends in one
# trajectory record (fake_openai_scenarios.py checks them); none crashes the tool.
source "$(dirname "$0")/lib.bash"
HERE="$CA_SOURCE_DIR/tests/cli"
grep '"example/relu_rand"' "$CA_SOURCE_DIR/examples/candidates/cpu/tasks.jsonl" >"$WORK/tasks.jsonl"
names=$(python3 "$HERE/fake_openai_scenarios.py" write "$WORK" "$CA_SOURCE_DIR/examples/candidates/cpu/relu_rand__correct.cpp")

for name in $names; do
  : >"$WORK/$name.log.jsonl"
  python3 "$HERE/fake_openai_server.py" "$WORK/$name.json" "$WORK/$name.log.jsonl" >"$WORK/$name.port" &
  server=$!
  until [ -s "$WORK/$name.port" ] || ! kill -0 "$server" 2>/dev/null; do sleep 0.05; done
  # Only the timeout scenario has a short request timeout: the others must not depend on the machine's speed.
  timeout=60
  [ "$name" = timeout ] && timeout=1
  SEKRIT_KEY=sekrit run "$CA_BIN/ca-rollout" --policy "openai:http://127.0.0.1:$(cat "$WORK/$name.port")/v1/" --api-key-env SEKRIT_KEY \
    --model tiny --temperature 0.5 --top-p 0.9 --max-tokens 256 --seed 7 --logprobs --max-turns 4 \
    --retries 2 --backoff 0.01 --request-timeout "$timeout" --no-final-profile "$WORK/tasks.jsonl" -o "$WORK/$name.out.jsonl"
  kill "$server"
  wait "$server" 2>/dev/null
  case $name in
    server_error|timeout|reset|truncated) expect_code 1; expect_stderr "policy: " ;;
    *) expect_code 0 ;;
  esac
done
python3 "$HERE/fake_openai_scenarios.py" check "$WORK" >"$WORK/check" 2>&1 || { cat "$WORK/check" >&2; fail "scenario checks"; }
finish
