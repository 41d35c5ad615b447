"""Converts a GGUF file (llama or qwen2 architecture) to a Hugging Face checkpoint directory: config.json,
model.safetensors (float32 for models up to 0.5B parameters, else bfloat16), tokenizer.json,
tokenizer_config.json (with the chat template), generation_config.json. Used by scripts/setup-models.sh.

    gguf_to_hf.py FILE.gguf OUTDIR
    gguf_to_hf.py --chat-template FILE OUT.jinja   the chat template alone, from the metadata at the file's
                                                    start (FILE may be the first part of a split GGUF)

transformers dequantizes; what it gets wrong is fixed here (shared/notes/models-and-servers.md): the quantizer
left on the model, the added tokens it drops (GGUF token types CONTROL and USER_DEFINED), the eos token.
"""
import struct
import sys

import gguf
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from tokenizers import AddedToken

CONTROL, USER_DEFINED = 3, 4


def gguf_added_tokens(path):
    reader = gguf.GGUFReader(path)
    tokens = reader.fields["tokenizer.ggml.tokens"]
    types = reader.fields["tokenizer.ggml.token_type"]
    out = []
    for i, (ti, yi) in enumerate(zip(tokens.data, types.data)):
        kind = int(types.parts[yi][0])
        if kind in (CONTROL, USER_DEFINED):
            text = bytes(tokens.parts[ti]).decode("utf-8")
            out.append((i, text, kind == CONTROL))
    return out


def main(src, out):
    model = AutoModelForCausalLM.from_pretrained(".", gguf_file=src, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(".", gguf_file=src)
    if sum(p.numel() for p in model.parameters()) > 500_000_000:
        model = model.to(torch.bfloat16)
    # The quantizer that loaded the GGUF has no business in the saved checkpoint.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    backend = tok.backend_tokenizer
    have = backend.get_vocab(with_added_tokens=True)
    missing = []
    for i, text, special in gguf_added_tokens(src):
        if backend.id_to_token(i) != text or text not in have or text not in [t.content for t in backend.get_added_tokens_decoder().values()]:
            missing.append(AddedToken(text, special=special, normalized=False))
    if missing:
        backend.add_tokens(missing)
    eos = "<|im_end|>"
    if eos in backend.get_vocab(with_added_tokens=True):
        tok.eos_token = eos
        model.config.eos_token_id = backend.token_to_id(eos)
        model.generation_config.eos_token_id = model.config.eos_token_id
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


def read_chat_template(path):
    """tokenizer.chat_template from the GGUF key/value header (format version 2 or 3), reading no further."""
    f = open(path, "rb")
    magic, _version, _tensors, count = struct.unpack("<4sIQQ", f.read(24))
    if magic != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string():
        (n,) = struct.unpack("<Q", f.read(8))
        return f.read(n)

    def skip(kind):
        if kind == 8:
            string()
        elif kind == 9:
            inner, n = struct.unpack("<IQ", f.read(12))
            for _ in range(n):
                skip(inner)
        else:
            f.read(sizes[kind])

    for _ in range(count):
        key = string().decode()
        (kind,) = struct.unpack("<I", f.read(4))
        if key == "tokenizer.chat_template" and kind == 8:
            return string().decode("utf-8")
        skip(kind)
    sys.exit(f"{path}: no tokenizer.chat_template")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--chat-template":
        open(sys.argv[3], "w", encoding="utf-8").write(read_chat_template(sys.argv[2]))
        sys.exit(0)
    if len(sys.argv) != 3:
        sys.exit("usage: gguf_to_hf.py FILE.gguf OUTDIR")
    main(sys.argv[1], sys.argv[2])
