#!/usr/bin/env python3
"""Checks the layering rule of docs/ARCHITECTURE.md ("What may include what") against the real #include lines.

  scripts/check-layers.py [ROOT]      exit 0: the rule holds; 1: each breach as `file:line: message`

Two checks, over common/ and tools/ (ROOT defaults to the checkout):
1. Project includes ("folder/file.h") go only to the folders a file's layer may use (LAYERS below).
2. LibTorch (<torch/...>, <ATen/...>, <c10/...>) is included directly only by the LibTorch layer: common/torch/,
   common/model/ and common/train/ (libraries that link LibTorch and speak tensors in their interfaces). The stages
   reach LibTorch through torch/'s headers; STAGE_TORCH_FILES names the one stage file that still includes it
   itself (the filter's tensor checks), and the stages' tests may (to throw LibTorch's errors, to build tensors). No tool includes it, and a
   tool's main.cpp compiles without ATen unless it includes a LibTorch-layer header: TORCH_TOOLS lists the tools
   that do (checked transitively, so that a new one is noticed).
"""
import re
import sys
from pathlib import Path

CORE = {"ir", "kernel", "sandbox", "runner", "timing", "reward", "harness"}
STAGES = {"crawl", "synth", "filter", "verify", "profile"}
# folder -> the project folders its files may include (its own always).
LAYERS = {"util": set()}
LAYERS.update({f: {"util"} | CORE for f in CORE})
LAYERS["torch"] = {"util"} | CORE
LAYERS.update({f: {"util", "torch"} | CORE | STAGES for f in STAGES})
LAYERS["http"] = {"util"}
LAYERS["policy"] = LAYERS["rollout"] = {"util", "http", "policy", "rollout"} | CORE
LAYERS["model"] = {"util", "http", "policy"} | CORE
LAYERS["train"] = {"util", "http", "policy", "model"} | CORE
LAYERS["eval"] = {"util"} | CORE
TORCH_LAYER = {"torch", "model", "train"}
# Stage files that include LibTorch themselves: the op grammar and the filter read op schemas from the dispatcher;
# rubric.h is the filter's internal header of tensor steps.
STAGE_TORCH_FILES = {"common/filter/rubric.h"}
# Tools whose main.cpp includes a header of the LibTorch layer (its API is tensors): ca-model, ca-train.
TORCH_TOOLS = {"ca-model", "ca-train"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
TORCH = re.compile(r"^(torch|ATen|c10)/")


def includes(path):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield number, m.group(1), m.group(2)


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    common = root / "common"
    errors = []
    sources = sorted(p for p in common.rglob("*") if p.suffix in {".h", ".cpp", ".cu", ".inc"})
    sources += sorted((root / "tools").glob("*/*.cpp"))
    # Direct LibTorch includes per project header, for the transitive check of tools.
    pulls_torch = {}
    for path in sources:
        rel = path.relative_to(root).as_posix()
        parts = path.relative_to(root).parts
        layer = parts[1] if parts[0] == "common" else "tools"
        if parts[0] == "common" and layer not in LAYERS:
            errors.append(f"{rel}:1: folder common/{layer}/ has no layer in scripts/check-layers.py (and in "
                          "docs/ARCHITECTURE.md): add it to both")
            continue
        for number, kind, name in includes(path):
            if kind == "<" and TORCH.match(name):
                pulls_torch.setdefault(rel, True)
                allowed = layer in TORCH_LAYER or rel in STAGE_TORCH_FILES or (
                    layer in STAGES and path.name.endswith("_test.cpp"))
                if not allowed:
                    errors.append(f"{rel}:{number}: includes LibTorch <{name}>: only common/torch/, model/ and train/ "
                                  "may; a stage asks torch/ (docs/ARCHITECTURE.md, What may include what)")
            elif kind == '"' and "/" in name and layer != "tools":
                folder = name.split("/")[0]
                if (common / folder).is_dir() and folder != layer and folder not in LAYERS[layer]:
                    errors.append(f"{rel}:{number}: common/{layer}/ may not include {name} (common/{folder}/; "
                                  "docs/ARCHITECTURE.md, What may include what)")

    # Tools: which main.cpp reaches LibTorch through project headers.
    def reaches_torch(rel, seen):
        if rel in seen:
            return False
        seen.add(rel)
        if pulls_torch.get(rel):
            return True
        path = root / rel
        for _, kind, name in includes(path):
            if kind == '"' and (common / name).is_file() and reaches_torch(f"common/{name}", seen):
                return True
        return False

    for main_cpp in sorted((root / "tools").glob("*/main.cpp")):
        rel = main_cpp.relative_to(root).as_posix()
        tool = main_cpp.parent.name
        if reaches_torch(rel, set()) and tool not in TORCH_TOOLS:
            errors.append(f"{rel}:1: compiles LibTorch through its includes; a tool's main.cpp includes only "
                          "LibTorch-free headers (or is listed in TORCH_TOOLS, scripts/check-layers.py)")
    for e in errors:
        print(f"check-layers: error: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
