"""Expected token ids from Hugging Face `tokenizers` for the C++ tokenizer's comparison (tests/cli/model_tokenizer.sh).

    tokenizer_reference.py TOKENIZER_JSON OUTDIR FILE...

From one real tokenizer.json (SmolLM2's) it writes variants that use every normalizer and pre-tokenizer the
C++ side supports (the file as it is; Qwen2's NFC + Split pattern; Llama 3's pattern with ignore_merges; the
original SmolLM2 Digits + ByteLevel; added tokens with lstrip/rstrip/normalized), each as OUTDIR/NAME/tokenizer.json
and OUTDIR/NAME/cases.jsonl: one {"text", "ids", "ids_special_as_text", "decoded", "decoded_skip_special"} a line,
the texts being the FILEs (split into chunks) and a built-in set of hard cases; and {"decode_ids", "decoded"} lines
for random id sequences (pieces of UTF-8 characters, special tokens in between).
"""
import copy
import json
import os
import random
import sys

from tokenizers import Tokenizer

QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
LLAMA3 = QWEN2.replace(r"|\p{N}|", r"|\p{N}{1,3}|")

HARD = [
    "", " ", "  ", "\n", "\n\n\n", " \n ", "\r\n\r\n", "\t\tindent", "a  b   c    d", "trailing   ",
    "I'm sure you'll see they've said it's 'quoted' I'D WE'LL THEY'RE 's 'S",
    "numbers 1 12 123 1234 12345 3.14159 -0.5e-10 0x1F 1,000,000 ١٢٣ ⅷ ½ ²",
    "café naïve résumé Ångström façade", "cafe\u0301 nai\u0308ve e\u0301\u0323 a\u0328\u0301 \u1100\u1161\u11a8 \u212b \u2126",
    "한국어 텍스트 조합", "日本語のテキスト、カタカナ。", "中文文本，标点符号！", "Ελληνικά Русский текст עברית العربية",
    "emoji 😀👍🏽👨‍👩‍👧‍👦 🇫🇷 flags", "zero\u200bwidth\u00a0nbsp\u2003em\u3000ideo\u2028ls\u0085nel",
    "math ∑∫√∞≠≤≥ → ← ⇒ ∀x∈ℝ", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|><|im_end|><|endoftext|>text<|im_end|>", "not special: <|im_start |> <im_start> <|im_sta",
    '<tool_call>\n{"name": "bash", "arguments": {"command": "nvcc -O3 -arch=sm_90 k.cu"}}\n</tool_call>',
    '{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"verify","arguments":"{}"}}]}',
    "__global__ void k(float* __restrict__ x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.f; }",
    "k<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), n);",
    "    def forward(self, x):\n        return torch.relu(x) @ self.w.T  # (B, N)\n\n\n",
    "!!!??? ... --- *** ### $$$ %%% ^^^ &&& ||| ~~~ ``` ''' \"\"\"", "\x00\x01\x07\x1b[31mred\x1b[0m\x7f",
    "mixed\ttabs\tand spaces \t \t end", "x" * 300, "ab" * 200, "\ud7a3\uac00\u3131", "tool_call tool_call> <tool_call",
    "<tool_call> <tool_call>x</tool_call>  <extra_0>  (<extra_0>)", "Ǆǅǆ ǈ ﬁ ﬂ ẞ ß İ ı",
]


def variants(base):
    out = {"as_is": base}
    qwen = copy.deepcopy(base)
    qwen["normalizer"] = {"type": "NFC"}
    qwen["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": QWEN2}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}
    qwen["decoder"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    n = max(t["id"] for t in qwen["added_tokens"]) + 1
    n = max(n, len(qwen["model"]["vocab"]))
    for i, (content, special, normalized, lstrip, rstrip) in enumerate([
            ("<tool_call>", False, False, False, False), ("</tool_call>", False, False, False, False),
            ("<extra_0>", True, True, True, True), ("tool_call", False, True, False, False)]):
        qwen["added_tokens"].append({"id": n + i, "content": content, "single_word": False, "lstrip": lstrip,
                                     "rstrip": rstrip, "normalized": normalized, "special": special})
    out["qwen2_nfc"] = qwen
    llama3 = copy.deepcopy(qwen)
    llama3["normalizer"] = None
    llama3["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = LLAMA3
    llama3["model"]["ignore_merges"] = True
    out["llama3"] = llama3
    smol = copy.deepcopy(base)
    smol["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    out["smollm2_digits"] = smol
    return out


def chunks(text, size=1500):
    lines, cur = [], ""
    for line in text.splitlines(keepends=True):
        if len(cur) + len(line) > size and cur:
            lines.append(cur)
            cur = ""
        cur += line
    if cur:
        lines.append(cur)
    return lines


def main(tokenizer_json, outdir, files):
    base = json.load(open(tokenizer_json, encoding="utf-8"))
    texts = list(HARD)
    for f in files:
        texts += chunks(open(f, encoding="utf-8", errors="replace").read())
    rng = random.Random(7)
    for name, tj in variants(base).items():
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as fh:
            json.dump(tj, fh, ensure_ascii=False)
        tok = Tokenizer.from_str(json.dumps(tj))
        size = tok.get_vocab_size(with_added_tokens=True)
        with open(os.path.join(d, "cases.jsonl"), "w", encoding="utf-8") as fh:
            for t in texts:
                ids = tok.encode(t, add_special_tokens=False).ids
                tok.encode_special_tokens = True
                as_text = tok.encode(t, add_special_tokens=False).ids
                tok.encode_special_tokens = False
                fh.write(json.dumps({"text": t, "ids": ids, "ids_special_as_text": as_text,
                                     "decoded": tok.decode(ids, skip_special_tokens=False),
                                     "decoded_skip_special": tok.decode(ids, skip_special_tokens=True)},
                                    ensure_ascii=False) + "\n")
            for _ in range(200):
                ids = [rng.randrange(size) for _ in range(rng.randrange(1, 12))]
                fh.write(json.dumps({"decode_ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)},
                                    ensure_ascii=False) + "\n")
        print(f"{name}: {len(texts)} texts, vocab {size}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
