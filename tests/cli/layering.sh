# The layering rule of docs/ARCHITECTURE.md holds on the real includes (scripts/check-layers.py), and the check
# catches each kind of breach in a copy of the tree: LibTorch included outside the LibTorch layer, a layer including
# one above it, and a tool's main.cpp reaching ATen through a header.
. "$(dirname "$0")/lib.bash"
check=$CA_SOURCE_DIR/scripts/check-layers.py

run python3 "$check" "$CA_SOURCE_DIR"
expect_code 0; expect_stderr_empty

cp -r "$CA_SOURCE_DIR/common" "$CA_SOURCE_DIR/tools" "$WORK/"
run python3 "$check" "$WORK"
expect_code 0

# A LibTorch include in util/, one in a stage's .cpp and one in a tool's main, a header of ca_core including the
# stages, ca-verify's main reaching ATen.
sed -i '1i #include <ATen/ATen.h>' "$WORK/common/util/log.h"
sed -i '1i #include <ATen/Parallel.h>' "$WORK/common/profile/profile.cpp"
sed -i '1i #include <ATen/Parallel.h>' "$WORK/tools/ca-train/main.cpp"
sed -i '1i #include "verify/candidates.h"' "$WORK/common/kernel/builder.h"
sed -i '1i #include "torch/compare.h"' "$WORK/tools/ca-verify/main.cpp"
run python3 "$check" "$WORK"
expect_code 1
expect_stderr "check-layers: error: common/util/log.h:1: includes LibTorch <ATen/ATen.h>"
expect_stderr "check-layers: error: common/profile/profile.cpp:1: includes LibTorch <ATen/Parallel.h>"
expect_stderr "check-layers: error: tools/ca-train/main.cpp:1: includes LibTorch <ATen/Parallel.h>"
expect_stderr "check-layers: error: common/kernel/builder.h:1: common/kernel/ may not include verify/candidates.h"
expect_stderr "check-layers: error: tools/ca-verify/main.cpp:1: compiles LibTorch through its includes"
finish
