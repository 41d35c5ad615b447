# The on-policy RL loop (docs/TRAINING.md): ITERS times, roll out the current actor on TASKS with ca-rollout
# --policy local:CKPT, train it with ca-train ppo on those trajectories (actor and critic go on from the last
# iteration's checkpoint), and use the new checkpoint for the next rollout. Start from an RFT checkpoint (ACTOR)
# and a value-pretrained critic (CRITIC: ca-train value's output), as the paper's recipe does.
#
#   make -f pipelines/rl.mk TASKS=tasks.jsonl ACTOR=out/rft/checkpoint-000200 CRITIC=out/value/checkpoint-000100 \
#        ITERS=20 SAMPLES=4 STEPS=1 BATCH=32 OUT=out/rl
#   make -f pipelines/rl.mk ... DRY_RUN=1       # print the commands only
#
# Files under $(OUT): iter-<i>/rollout.jsonl (the trajectories of iteration i's actor), iter-<i>/ppo/ (ca-train
# ppo's --out: checkpoint-NNNNNN/ with the actor and critic/, log.jsonl). A finished iteration (its ppo checkpoint
# exists) is skipped on a rerun; an interrupted rollout or ppo run resumes (--resume on both).
# Exit 1 of either tool (some episodes or records failed: written and reported, e.g. a prompt past the model's
# context) goes on; other failures stop the loop.
SHELL     := /bin/bash
ROOT      := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
BIN       ?= $(ROOT)/build/bin
OUT       ?= out/rl
TASKS     ?=
ACTOR     ?=
CRITIC    ?=
ITERS     ?= 20
SAMPLES   ?= 4
STEPS     ?= 1
BATCH     ?= 32
ROLLOUT_FLAGS ?= --backend cuda -j 8 --device cuda
PPO_FLAGS ?= --device cuda --micro-batch 2 --minibatches 4
DRY_RUN   ?=
RUN       := $(if $(DRY_RUN),echo,)

.PHONY: all clean
all:
	@[ -n "$(TASKS)" ] && [ -n "$(ACTOR)" ] && [ -n "$(CRITIC)" ] || \
	  { echo "rl.mk: TASKS=, ACTOR= and CRITIC= are required" >&2; exit 64; }
	@set -e; actor=$(ACTOR); critic=$(CRITIC); \
	for i in $$(seq 1 $(ITERS)); do \
	  dir=$(OUT)/iter-$$i; ckpt=$$dir/ppo/$$(printf 'checkpoint-%06d' $(STEPS)); \
	  if [ ! -f $$ckpt/trainer_state.json ]; then \
	    mkdir -p $$dir; \
	    $(RUN) $(BIN)/ca-rollout --tasks $(TASKS) --policy local:$$actor --samples $(SAMPLES) --seed $$i \
	      --resume -o $$dir/rollout.jsonl $(ROLLOUT_FLAGS) || [ $$? -eq 1 ]; \
	    $(RUN) $(BIN)/ca-train ppo --model $$actor --critic $$critic --data $$dir/rollout.jsonl --out $$dir/ppo \
	      --steps $(STEPS) --batch $(BATCH) --seed $$i --resume $(PPO_FLAGS) || [ $$? -eq 1 ]; \
	  fi; \
	  actor=$$ckpt; critic=$$ckpt/critic; \
	done; echo "rl.mk: final actor $$actor"

clean:
	rm -rf $(OUT)
