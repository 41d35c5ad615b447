#!/usr/bin/env bash
# The HTML report opened in a real headless browser: chromium renders it to a PNG, and the SVG plots' bars and curves
# must have put their colours on the page (a blank or failed render is white only). Skipped (77) where no chromium is installed:
# Debian's chromium is about 290 MB installed, too big for scripts/setup-deps.sh.
source "$(dirname "$0")/lib.bash"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "skipped: no chromium installed"; exit 77; }

cat >"$WORK/suite.jsonl" <<'JSON'
{"kind":"task","id":"a","level":1}
{"kind":"task","id":"b","level":2}
JSON
cat >"$WORK/judged.jsonl" <<'JSON'
{"task_id":"a","verify":{"ok":true},"profile":{"ok":true,"speedup":{"vs_eager":3.0,"vs_compile":1.5}},"reward":{"value":3}}
{"task_id":"b","verify":{"ok":false,"stage":"compare"},"reward":{"value":-1}}
JSON
run "$CA_BIN/ca-eval" run --suite "$WORK/suite.jsonl" --judged "$WORK/judged.jsonl" -o "$WORK/results.jsonl"
expect_code 0
run "$CA_BIN/ca-eval" report "$WORK/results.jsonl" -o "$WORK/report"
expect_code 0

shot=${CA_EVAL_SCREENSHOT:-$WORK/report.png}
run "$browser" --headless --no-sandbox --disable-gpu --window-size=1000,2400 --screenshot="$shot" "file://$WORK/report/report.html"
[ -s "$shot" ] || fail "no screenshot from $browser"
python3 - "$shot" <<'PY' || fail "the screenshot shows none of the plots' colours"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, width, height, kind = 8, b"", 0, 0, 0
while pos < len(data):
    length, tag = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if tag == b"IHDR":
        width, height, depth, kind = struct.unpack(">IIBB", body[:10])
    elif tag == b"IDAT":
        idat += body
    pos += 12 + length
raw = zlib.decompress(idat)
channels = {2: 3, 6: 4}[kind]
stride = width * channels
# Undo the PNG row filters, then look for the plots' blue (#1f77b4) and orange (#ff7f0e) bars.
prev, found = bytearray(stride), {"blue": 0, "orange": 0}
for row in range(height):
    start = row * (stride + 1)
    f, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b, c = prev[i], (prev[i - channels] if i >= channels else 0)
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, channels):
        px = tuple(line[x:x + 3])
        if px == (0x1f, 0x77, 0xb4): found["blue"] += 1
        if px == (0xff, 0x7f, 0x0e): found["orange"] += 1
    prev = line
# The legends' swatches (three blue, three orange, 10 x 10 each) are far fewer than a bar or a curve paints.
assert found["blue"] > 2000 and found["orange"] > 1000, found
PY
finish
