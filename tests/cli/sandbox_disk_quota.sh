# ca-sandbox exec --disk: kernels/ has a total quota, checked while the command writes (docs/EXPLOITS.md, "Shares"):
# many files under the per-file limit, or many empty files, are killed with a message naming the quota; a command
# within it runs as before; one that frees room in a tree already over it is not killed.
. "$(dirname "$0")/lib.bash"
sandbox=$CA_BIN/ca-sandbox

run "$sandbox" create "$CA_SOURCE_DIR/examples/tasks.jsonl" --dir "$WORK/ws" --id example/linear_leaky_relu
expect_code 0
ws=$(cat "$WORK/stdout")
[ -d "$ws/kernels" ] || { fail "no workspace made"; finish; }
kib() { du -sk "$ws/kernels" | cut -f1; }

# Within the quota: runs, and the file stays.
run "$sandbox" exec "$ws" --disk 16M -- bash -c 'head -c 4M /dev/zero > kernels/small.bin && echo wrote'
expect_code 0; expect_stdout "wrote"
[ -f "$ws/kernels/small.bin" ] || fail "kernels/small.bin did not persist"

# Files of 1 MiB, each under --file-size, without end: killed once kernels/ passes 16 MiB.
run "$sandbox" exec "$ws" --disk 16M --file-size 2M --wall 60 -- \
  bash -c 'for i in $(seq 1 100000); do head -c 1M /dev/zero > kernels/f$i.bin || exit 3; done; echo all written'
expect_code 137
expect_stderr "command passed the disk quota of kernels/ (16777216 bytes in all)"
[ ! -s "$WORK/stdout" ] || fail "the writer finished: $(cat "$WORK/stdout")"
used=$(kib)
echo "kernels/ after the kill: $used KiB (quota 16384 KiB)"
# What one check's interval lets through is small against the quota; a loose bound, so a slow machine cannot fail it.
[ "$used" -lt $((16384 + 65536)) ] || fail "kernels/ reached $used KiB against a quota of 16384"

# Over the quota already: a command that frees room runs.
run "$sandbox" exec "$ws" --disk 16M -- bash -c 'rm -f kernels/f*.bin && echo cleaned'
expect_code 0; expect_stdout "cleaned"

# Empty files cost their entry: 10000 of them pass 16 MiB (10000 x 4 KiB) with no byte written.
run "$sandbox" exec "$ws" --disk 16M --wall 60 -- bash -c 'cd kernels && for i in $(seq 1 10000); do : > e$i; done; echo all made'
expect_code 137
expect_stderr "passed the disk quota of kernels/"
[ ! -s "$WORK/stdout" ] || fail "10000 empty files were made within a 16 MiB quota"

# unpack: an entry whose header says 2 GiB is refused before a byte of it is written, and nothing is kept.
python3 - "$WORK/big.tar.gz" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w:gz") as tar:
    small = tarfile.TarInfo("kernels/small.cu")
    small.size = 5
    tar.addfile(small, io.BytesIO(b"hello"))
    big = tarfile.TarInfo("kernels/big.bin")
    big.size = 2 << 30
    tar.addfile(big)  # the header alone: what follows is the stream's end
PY
run "$sandbox" unpack "$WORK/big.tar.gz" -o "$WORK/unpacked"
expect_code 65
expect_stderr "entry 'kernels/big.bin': the snapshot unpacks to more than 1073741824 bytes (the unpack quota)"
[ ! -e "$WORK/unpacked" ] || fail "an over-quota snapshot left $WORK/unpacked"
finish
