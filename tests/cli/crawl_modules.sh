# ca-crawl modules finds the nn.Module classes of torch's own sources.
. "$(dirname "$0")/lib.bash"
crawl=$CA_BIN/ca-crawl
py=$(torch_python)
modules_dir=$($py -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "nn", "modules"))') || {
  echo "skipped: no python with torch"; exit 77; }  # ctest: SKIP_RETURN_CODE

run "$crawl" modules "$modules_dir" --origin torch.nn
expect_code 0; expect_stderr_empty
for name in ReLU GELU Softmax BatchNorm2d LayerNorm GroupNorm InstanceNorm3d Conv1d Conv2d ConvTranspose3d MaxPool2d \
            AvgPool3d AdaptiveAvgPool2d MSELoss CrossEntropyLoss Linear MultiheadAttention; do
  grep -q "\"name\":\"$name\"" "$WORK/stdout" || fail "module $name not found"
done
grep '"name":"Conv2d"' "$WORK/stdout" | grep -q '"origin":"torch.nn"' || fail "origin not set"
grep '"name":"Conv2d"' "$WORK/stdout" | grep -q 'in_channels' || fail "Conv2d __init__ signature missing"
grep '"name":"Conv2d"' "$WORK/stdout" | grep -q 'def forward' || fail "Conv2d forward source missing"

run "$crawl" modules "$WORK/nonexistent"
expect_code 66; expect_stderr "ca-crawl: error: $WORK/nonexistent"
finish
