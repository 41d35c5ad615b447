# ca-sandbox exec keeps a command inside its workspace: each escape below
# fails, the harness survives and reports, and only kernels/ keeps writes.
. "$(dirname "$0")/lib.bash"
sandbox=$CA_BIN/ca-sandbox

run "$sandbox" create "$CA_SOURCE_DIR/examples/tasks.jsonl" --dir "$WORK/ws" --id example/linear_leaky_relu
expect_code 0
ws=$(cat "$WORK/stdout")
[ -d "$ws/kernels" ] || { fail "no workspace made"; finish; }
cp "$ws/model.py" "$WORK/model.py.orig"

# ex CMD...: runs CMD in the workspace's sandbox.
ex() { run "$sandbox" exec "$ws" --wall 20 -- "$@"; }
# expect_failed WHAT: the last command failed.
expect_failed() { [ "$code" -ne 0 ] || fail "$1 succeeded"; }
seconds() { date +%s; }

# Writing kernels works and persists.
ex bash -c 'echo "__global__ void k() {}" > kernels/x.cu && cat kernels/x.cu'
expect_code 0; expect_stdout "__global__"
grep -q "__global__" "$ws/kernels/x.cu" 2>/dev/null || fail "kernels/x.cu did not persist"

# Network: only a loopback interface, and connecting out fails.
ex bash -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
expect_code 0
[ "$(cat "$WORK/stdout")" = "lo" ] || fail "interfaces besides lo: $(tr '\n' ' ' <"$WORK/stdout")"
ex bash -c 'exec 3<>/dev/tcp/1.1.1.1/80 && echo connected'
expect_failed "a TCP connection"; [ ! -s "$WORK/stdout" ] || fail "connected out"
if command -v python3 >/dev/null; then
  ex python3 -c 'import socket; socket.create_connection(("1.1.1.1", 80), timeout=3)'
  expect_failed "a python socket connection"
fi

# Writing outside kernels/: the workspace's own files, new files, host paths.
for target in model.py SKILL.md task.json include/ca_kernel.h newfile /work/x /root/x /usr/x /etc/x; do
  ex bash -c "echo pwned >> $target"
  expect_failed "writing $target"
done
cmp -s "$ws/model.py" "$WORK/model.py.orig" || fail "model.py changed"
[ ! -e "$ws/newfile" ] || fail "newfile appeared in the workspace"
[ ! -e /work/x ] || fail "/work/x appeared on the host"
for command in "rm -f model.py" "mv model.py kernels/" "chmod 777 ." "ln model.py kernels/m.py"; do
  ex bash -c "$command"
  expect_failed "$command"
done
# /tmp and HOME are writable but private: nothing reaches the host.
marker=ca-sandbox-escape-$$
ex bash -c "echo x > /tmp/$marker && echo x > \$HOME/$marker.home && echo wrote"
expect_code 0; expect_stdout wrote
[ ! -e "/tmp/$marker" ] && [ ! -e "/tmp/$marker.home" ] || fail "a write to the sandbox's /tmp reached the host"

# Reading files outside the workspace.
for target in "$CA_SOURCE_DIR/README.md" "$CA_SOURCE_DIR/common/torch/interpreter.cpp" "$CA_SOURCE_DIR/CMakeLists.txt" /etc/shadow; do
  ex cat "$target"
  expect_failed "reading $target"; [ ! -s "$WORK/stdout" ] || fail "read $target"
done
ex ls /root
expect_failed "listing /root"
ex bash -c 'ls /; ls /dev'
top=$(echo "$ws" | cut -d/ -f2)  # the workspace's own top directory is there, holding only the workspace
for name in root work home var "$(basename "$CA_SOURCE_DIR")" sda nvme0n1; do
  [ "$name" != "$top" ] || continue
  grep -qx "$name" "$WORK/stdout" && fail "/$name or /dev/$name is visible"
done

# No GPU devices without --gpu.
ex bash -c 'ls -d /dev/nvidia* /dev/dri 2>/dev/null; true'
expect_code 0; [ ! -s "$WORK/stdout" ] || fail "GPU devices visible without --gpu: $(cat "$WORK/stdout")"

# Killing the parent: $PPID, PID 1, everything, and ca-sandbox's own pid
# (which the outer sh passes in as $$ before exec'ing ca-sandbox).
run sh -c 'exec "$1" exec "$2" -- bash -c "kill -9 $$; kill -9 \$PPID; kill -9 1; kill -9 -1; echo survived"' _ "$sandbox" "$ws"
expect_code 0; expect_stdout survived

# Limits end runaway commands, and the harness says which limit.
start=$(seconds)
run "$sandbox" exec "$ws" --wall 2 -- sleep 100
expect_failed "sleep past the wall limit"; expect_stderr "ca-sandbox: error:"; expect_stderr "wall-clock limit (2 s)"
[ $(($(seconds) - start)) -lt 15 ] || fail "the wall limit did not stop sleep in time"

start=$(seconds)
run "$sandbox" exec "$ws" --cpu 1 --wall 60 -- bash -c 'while :; do :; done'
expect_failed "an infinite loop"; expect_stderr "CPU-time limit (1 s)"
[ $(($(seconds) - start)) -lt 30 ] || fail "the CPU limit did not stop the loop in time"

run "$sandbox" exec "$ws" --file-size 1M -- bash -c 'head -c 5000000 /dev/zero > kernels/big'
expect_failed "a 5 MB file"; expect_stderr "file-size limit (1048576 bytes)"
[ "$(stat -c %s "$ws/kernels/big")" -le 1048576 ] || fail "kernels/big grew past the limit"
rm -f "$ws/kernels/big" 2>/dev/null

if command -v python3 >/dev/null; then
  run "$sandbox" exec "$ws" --memory 256M -- python3 -c 'x = bytearray(1 << 30)'
  expect_failed "a 1 GiB allocation"; expect_stderr "memory limit"

  # A bounded fork loop counts how far it gets...
  run "$sandbox" exec "$ws" --processes 32 -- python3 -c '
import os
n = 0
r, w = os.pipe()
try:
    for _ in range(200):
        if os.fork() == 0:
            # Alive until the parent has exited (the last write end closes), however slow the forks are.
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        n += 1
finally:
    print(n)'
  expect_failed "200 forks"; expect_stderr "process limit (32)"
  forks=$(head -1 "$WORK/stdout")
  if [ "${forks:-999}" -lt 32 ]; then
    # ...and only when the limit holds, a real fork bomb: bounded, then killed.
    start=$(seconds)
    # (The sleep keeps the sandbox alive: when the command exits, its PID
    # namespace and the whole bomb die with it.)
    run "$sandbox" exec "$ws" --processes 32 --wall 5 -- bash -c 'b() { b | b & }; b; sleep 60'
    expect_failed "a fork bomb"; expect_stderr "ca-sandbox: error:"; expect_stderr "process limit (32)"
    [ $(($(seconds) - start)) -lt 30 ] || fail "the fork bomb outlived its wall limit"
  else
    fail "the process limit let $forks forks through"
  fi
fi

# After all that, the workspace still works.
ex cat kernels/x.cu
expect_code 0; expect_stdout "__global__"
finish
