# Evaluates solutions or a policy on a suite in shards by task id, then computes the metrics over the whole
# suite (pipelines/README.md, "Evaluation"). Shards run with GNU parallel on one machine (JOBS at a time), or
# one per Slurm array task with pipelines/eval_slurm.sh; both run the same command per shard (shard_command.sh).
#
#   make -f pipelines/eval.mk SUITE=kb.jsonl MODELNEW=solutions/ SHARDS=4 JOBS=2 OUT=out/eval
#   make -f pipelines/eval.mk SUITE=tasks.jsonl POLICY=builtin SHARDS=8 OUT=out/eval
#   make -f pipelines/eval.mk SUITE=... SOLUTIONS=cands.jsonl DRY_RUN=1     # print the shard commands only
#
# Files under $(OUT): shards/shard-<i>.jsonl; work-<i>/ (each shard's judged records); judged.jsonl (all of
# them); results.jsonl (ca-eval run --judged over the whole suite); report/ (report.md, report.html).
SHELL     := /bin/bash
ROOT      := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
BIN       ?= $(ROOT)/build/bin
OUT       ?= out/eval
SUITE     ?=
SHARDS    ?= 4
JOBS      ?= 1
DRY_RUN   ?=
# One of these is the solution source; EVAL_FLAGS go to every shard's ca-eval run (e.g. --no-compile --backend cuda).
SOLUTIONS ?=
MODELNEW  ?=
POLICY    ?=
EVAL_FLAGS ?=
export BIN SOLUTIONS MODELNEW POLICY EVAL_FLAGS

.PHONY: all shards run report clean
all: report

$(OUT)/shards/shard-0.jsonl: $(SUITE)
	@[ -n "$(SUITE)" ] || { echo "eval.mk: SUITE= is required" >&2; exit 64; }
	python3 $(ROOT)/pipelines/shard.py $(SUITE) $(SHARDS) $(OUT)/shards
shards: $(OUT)/shards/shard-0.jsonl

# Every shard through GNU parallel; a shard's failure stops the merge (parallel exits with the failures' count).
$(OUT)/judged.jsonl: $(OUT)/shards/shard-0.jsonl
	parallel $(if $(DRY_RUN),--dry-run) --halt never -j $(JOBS) --line-buffer --tag \
	  bash $(ROOT)/pipelines/shard_command.sh $(OUT) {} ::: $$(seq 0 $$(($(SHARDS) - 1)))
	$(if $(DRY_RUN),@echo "dry run: not merging",bash $(ROOT)/pipelines/shard_command.sh $(OUT) merge > $@.tmp && mv $@.tmp $@)
run: $(OUT)/judged.jsonl

$(OUT)/results.jsonl: $(OUT)/judged.jsonl
	$(if $(DRY_RUN),@true,$(BIN)/ca-eval run --suite $(SUITE) --judged $< -o $@)

report: $(OUT)/results.jsonl
	$(if $(DRY_RUN),@true,$(BIN)/ca-eval report $< -o $(OUT)/report && sed -n '/^## Metrics/,/^## Tasks/p' $(OUT)/report/report.md)

clean:
	rm -rf $(OUT)
