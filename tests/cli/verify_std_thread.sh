# Issue 23's false rejection, through the CLI: a correct kernel that asks std::thread::hardware_concurrency() how
# many threads to use (and this_thread for its id) passes ca-verify's static check and its trials; one that starts a
# std::thread is still refused ("may not start threads"). The unit test is StaticCheckTest.HonestUsesOfTheStandardLibraryPass.
. "$(dirname "$0")/lib.bash"
dir=$CA_SOURCE_DIR/examples/candidates/cpu

cat >"$WORK/honest.cpp" <<'CPP'
#include <algorithm>
#include <thread>

#include "ca_kernel.h"

extern "C" int ca_forward(ca_context* ctx, const ca_tensor* inputs, int n_inputs, ca_tensor* outputs, int n_outputs) {
  if (n_inputs != 1 || n_outputs != 1 || inputs[0].ndim != 2 || inputs[0].dtype != CA_FLOAT32) return 1;
  const int64_t n = inputs[0].shape[0] * inputs[0].shape[1];
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  int threads = ctx != nullptr && ctx->num_threads > 0 ? std::min<int>(ctx->num_threads, int(cores)) : 1;
  (void)std::this_thread::get_id();
#pragma omp parallel for num_threads(threads)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
  return 0;
}
CPP
sed 's/  (void)std::this_thread::get_id();/  std::thread([] {}).join();/' "$WORK/honest.cpp" >"$WORK/starts.cpp"
python3 - "$WORK" >"$WORK/candidates.jsonl" <<'PY'
import json, sys
for name in ("honest", "starts"):
    code = open(f"{sys.argv[1]}/{name}.cpp").read()
    print(json.dumps({"kind": "candidate", "id": f"std_thread/{name}", "task_id": "example/relu_rand", "backend": "cpu",
                      "files": {f"kernels/{name}.cpp": code}}))
PY
run "$CA_BIN/ca-verify" --tasks "$dir/tasks.jsonl" --timeout 30 "$WORK/candidates.jsonl"
expect_code 0
grep '"id":"std_thread/honest"' "$WORK/stdout" | grep -q '"verify":{"ok":true' ||
  fail "hardware_concurrency kernel not correct: $(grep '"id":"std_thread/honest"' "$WORK/stdout" | cut -c1-600)"
grep '"id":"std_thread/starts"' "$WORK/stdout" | grep -q 'may not start threads' ||
  fail "a kernel that starts a std::thread was not refused: $(grep '"id":"std_thread/starts"' "$WORK/stdout" | cut -c1-600)"
finish
