"""Expected renders of chat templates by transformers' apply_chat_template (tests/cli/model_chat_template.sh).

    chat_template_reference.py TOKENIZER_DIR OUT NAME=TEMPLATE.jinja...

Writes OUT/NAME.jinja (each template) and OUT/cases.jsonl: one {"template", "messages", "tools",
"add_generation_prompt", "expected" | "error"} a line for every template and test conversation (system, user,
assistant with tool_calls with dict and string arguments, consecutive tool results, unicode, braces).
"""
import json
import os
import shutil
import sys

from transformers import AutoTokenizer

TOOLS = [
    {"type": "function", "function": {"name": "bash", "description": "Run a shell command in the workspace (ünïcode ok).",
                                      "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                                                     "required": ["command"]}}},
    {"type": "function", "function": {"name": "verify", "description": "Build and check the kernel.",
                                      "parameters": {"type": "object", "properties": {}}}},
]

CALL = {"id": "call_1", "type": "function",
        "function": {"name": "bash", "arguments": {"command": "nvcc -O3 -arch=sm_90 k.cu && ./a.out \"x\""}}}
CALL_STR = {"id": "call_2", "type": "function", "function": {"name": "verify", "arguments": "{}"}}

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You write CUDA kernels."}, {"role": "user", "content": "Fuse relu + add."},
     {"role": "assistant", "content": "Here is the kernel: __global__ void k() {}"},
     {"role": "user", "content": "Faster, please. {{ not a tag }} {% neither %}"}],
    [{"role": "system", "content": "You write CUDA kernels."}, {"role": "user", "content": "Make it fast."},
     {"role": "assistant", "content": "", "tool_calls": [CALL]},
     {"role": "tool", "tool_call_id": "call_1", "content": "ok\n"},
     {"role": "assistant", "content": "Checking.", "tool_calls": [CALL_STR, CALL]},
     {"role": "tool", "tool_call_id": "call_2", "content": "{\"correct\": true}"},
     {"role": "tool", "tool_call_id": "call_1", "content": "日本語 😀"},
     {"role": "assistant", "content": "Done."}],
    [{"role": "user", "content": "Tools without a system message."}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
     {"role": "tool", "content": "exit 0"}],
]


def main(tokenizer_dir, out, templates):
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    os.makedirs(out, exist_ok=True)
    n = 0
    with open(os.path.join(out, "cases.jsonl"), "w", encoding="utf-8") as fh:
        for spec in templates:
            name, path = spec.split("=", 1)
            shutil.copy(path, os.path.join(out, name + ".jinja"))
            source = open(path, encoding="utf-8").read()
            for messages in CONVERSATIONS:
                for tools in (None, TOOLS):
                    for gen in (False, True):
                        case = {"template": name, "messages": messages, "tools": tools, "add_generation_prompt": gen}
                        try:
                            case["expected"] = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=gen,
                                                                       tokenize=False, chat_template=source)
                        except Exception as e:  # the C++ side must fail too
                            case["error"] = f"{type(e).__name__}: {e}"
                        fh.write(json.dumps(case, ensure_ascii=False) + "\n")
                        n += 1
    print(f"{n} cases")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
