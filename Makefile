# Thin front end over CMake: `make` sets up a fresh Debian 12 machine (system
# packages, a pinned torch wheel in .venv) and builds every tool into build/bin.
TORCH_VERSION := 2.11.0
VENV          := .venv
PYTHON        := $(VENV)/bin/python
BUILD         := build
PREFIX        ?= /usr/local
JOBS          ?= $(shell nproc)
CMAKE_ARGS    ?=  # e.g. -DCA_WERROR=ON (CI)

TORCH_STAMP := $(VENV)/.torch-$(TORCH_VERSION)
# transformers' models/ tree is what `ca-crawl modules` crawls for the paper's module records (pure Python).
TRANSFORMERS_VERSION := 5.17.0
TRANSFORMERS_STAMP := $(VENV)/.transformers-$(TRANSFORMERS_VERSION)
# einops: KernelBench's own problems import it, so the importer's bridge must have it (pure Python).
EINOPS_VERSION := 0.8.2
EINOPS_STAMP := $(VENV)/.einops-$(EINOPS_VERSION)

.PHONY: all deps venv configure build test sanitize sanitize-thread bench demo install clean

all: build

deps:
	@bash scripts/setup-deps.sh

# The wheel is large; pip keeps it in its cache (~/.cache/pip), so a second
# set-up does not download it again.
$(TORCH_STAMP):
	@$(MAKE) --no-print-directory deps
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet torch==$(TORCH_VERSION) numpy safetensors
	touch $@

$(TRANSFORMERS_STAMP): $(TORCH_STAMP)
	$(VENV)/bin/pip install --quiet transformers==$(TRANSFORMERS_VERSION)
	touch $@

$(EINOPS_STAMP): $(TORCH_STAMP)
	$(VENV)/bin/pip install --quiet einops==$(EINOPS_VERSION)
	touch $@

venv: $(TORCH_STAMP) $(TRANSFORMERS_STAMP) $(EINOPS_STAMP)

$(BUILD)/build.ninja: $(TORCH_STAMP) $(TRANSFORMERS_STAMP) $(EINOPS_STAMP) CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) \
	  -DCMAKE_PREFIX_PATH="$$($(PYTHON) -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"

configure: $(BUILD)/build.ninja

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Sanitizer builds, each in its own directory, run by .ci/sanitize (a second CI step: too long for .ci/run's 90
# minutes). -O1 keeps the instrumented build short and its stacks readable; without NDEBUG, asserts are checked too.
# `make sanitize`: AddressSanitizer + UndefinedBehaviorSanitizer over every unit and CLI test. `make
# sanitize-thread`: ThreadSanitizer over the tests of the threaded paths. tests/sanitize/run.sh has the options and
# suppressions and fails on any report, even one inside a test that expected its tool to fail.
SANITIZE_ARGS = -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" $(CMAKE_ARGS) \
  -DCMAKE_PREFIX_PATH="$$($(PYTHON) -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"

build-asan/build.ninja: $(TORCH_STAMP) $(TRANSFORMERS_STAMP) CMakeLists.txt cmake/Sanitize.cmake
	cmake -S . -B build-asan $(SANITIZE_ARGS) -DCA_SANITIZE=address,undefined

build-tsan/build.ninja: $(TORCH_STAMP) $(TRANSFORMERS_STAMP) CMakeLists.txt cmake/Sanitize.cmake
	cmake -S . -B build-tsan $(SANITIZE_ARGS) -DCA_SANITIZE=thread

sanitize: build-asan/build.ninja
	cmake --build build-asan -j $(JOBS)
	bash tests/sanitize/run.sh address build-asan -j $(JOBS)

sanitize-thread: build-tsan/build.ninja
	cmake --build build-tsan -j $(JOBS) --target $$(bash tests/sanitize/run.sh --targets thread)
	bash tests/sanitize/run.sh thread build-tsan -j $(JOBS)

# The environment's benchmarks on the CPU (bench/run.sh; the GPU script runs them on cuda), the agent harness's
# overhead per tool call (bench/tool_calls.sh), cold against warm judging (bench/judge_warm.sh; cuda in
# tests/gpu/run.sh too), then a PPO step of ca-train against the same step in PyTorch on a tiny model
# (bench/ppo_step.sh; tests/gpu/run.sh runs it on cuda with SmolLM2-135M).
bench: build
	bash bench/run.sh cpu
	bash bench/tool_calls.sh
	bash bench/judge_warm.sh cpu
	bash bench/ppo_step.sh cpu

demo: build
	bash scripts/demo.sh

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan
