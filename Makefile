# Thin wrapper over scripts/install-deps, CMake presets and ctest.
# Each target is a sequence of steps; ninja parallelises the compile itself, so
# make runs the steps one at a time even under `make -j` (see .NOTPARALLEL).

LISTEN   ?= 127.0.0.1:4437
DATA_DIR ?= ./data
NPROC    := $(shell nproc 2>/dev/null || echo 2)
# `make fuzz`: seconds per target, and which targets (fuzz/<name>_fuzz.cc).
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?= $(patsubst fuzz/%_fuzz.cc,%,$(wildcard fuzz/*_fuzz.cc))
# `make sim`: seeds SIM_SEED_BASE .. SIM_SEED_BASE+SIM_SEEDS-1 of the simulation
# (tests/sim/README.md), SIM_JOBS at a time. Without SIM_SEED_BASE the base is
# drawn at random (and printed), so each run tries seeds nobody chose; ctest
# runs the fixed seeds 1..4000.
SIM_SEEDS ?= 100
ifndef SIM_SEED_BASE
SIM_SEED_BASE := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
SIM_JOBS ?= $(NPROC)
# `make soak`: how long, and where its report goes.
SOAK_MINUTES ?= 30
SOAK_ROUND_SECONDS ?= 20,60
# `make chaos`: how long the cluster chaos test runs, on how many nodes
# (tests/cluster/chaos.test.mjs; ctest runs it for 60 s on 3).
CHAOS_SECONDS ?= 300
CHAOS_NODES ?= 3

.DEFAULT_GOAL := build
.NOTPARALLEL:
.PHONY: deps build run test asan fuzz-build fuzz sim soak chaos format tidy clean

deps:
	@scripts/install-deps

build: deps
	cmake --preset default
	cmake --build --preset default

run: build
	exec build/dstream serve --listen $(LISTEN) --data-dir $(DATA_DIR)

# ctest's summary is the last thing this target prints. The fuzz tests run
# the fuzz tree's targets for a few seconds each (skipped without clang,
# except under CI).
test: build fuzz-build
	@ctest --preset default

# The libFuzzer targets need clang; without it their tests are skipped, and
# under CI (the environment variable CI set, as in `CI=true bash .ci/run`)
# the build fails instead.
fuzz-build: deps
	@if command -v clang++ >/dev/null 2>&1; then \
	  cmake --preset fuzz && cmake --build --preset fuzz; \
	elif [ -n "$$CI" ] && ! echo "$$CI" | grep -qiE '^(0|false|no)$$'; then \
	  echo "clang++ not found, and CI is set: the fuzz targets must be built (scripts/install-deps installs clang)" >&2; \
	  exit 1; \
	else \
	  echo "clang++ not found: the fuzz targets are not built and their tests are skipped"; \
	fi

# Longer fuzzing than `make test`: FUZZ_SECONDS per target (fuzz/README.md).
fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  fuzz/run.sh build-fuzz/fuzz/$${t}_fuzz fuzz/corpus/$$t $(FUZZ_SECONDS) build-fuzz/runs/$$t || exit 1; \
	done

# The simulation tier over SIM_SEEDS seeds from SIM_SEED_BASE; it ends with "N passed, M failed" and
# prints, for each failed seed, the command that replays it alone.
sim: deps
	cmake --preset default
	cmake --build --preset default --target dstream-sim
	@echo "simulation: seeds $(SIM_SEED_BASE) .. $$(( $(SIM_SEED_BASE) + $(SIM_SEEDS) - 1 ))"
	@build/tests/sim/dstream-sim --seeds $(SIM_SEEDS) --seed-base $(SIM_SEED_BASE) --jobs $(SIM_JOBS)

# Not part of `make test`: SOAK_MINUTES of mixed load, restarts and checks
# (tests/soak/soak.mjs). It prints the RSS every 30 s and a verdict.
soak: build
	DSTREAM_BIN=build/dstream SOAK_MINUTES=$(SOAK_MINUTES) SOAK_ROUND_SECONDS=$(SOAK_ROUND_SECONDS) node tests/soak/soak.mjs

# Not part of `make test`: CHAOS_SECONDS of SIGKILLs, restarts and nftables
# partitions of a CHAOS_NODES-node cluster under producers and leader reads,
# then the history checks (tests/cluster/README.md). Needs root for nft. It
# prints `chaos: {...}` (faults, appends acknowledged, reads checked, max
# unavailability) and the seed, which CHAOS_SEED=... repeats.
chaos: build
	DSTREAM_BIN=build/dstream CHAOS_SECONDS=$(CHAOS_SECONDS) CHAOS_NODES=$(CHAOS_NODES) \
	  tests/s3/with_s3rver.sh node --test --test-reporter=./tests/support/failures_last.mjs \
	  --test-timeout=$$(( ($(CHAOS_SECONDS) + 300) * 1000 )) tests/cluster/chaos.test.mjs

asan: deps
	cmake --preset asan
	cmake --build --preset asan
	@ctest --preset asan

# C++ sources only; never look inside node_modules.
format:
	@find src tests bench -name node_modules -prune -o \
	  -type f \( -name '*.h' -o -name '*.cc' \) -print0 | xargs -0 -r clang-format -i

tidy: deps
	cmake --preset default
	@find src -type f -name '*.cc' -print0 | \
	  xargs -0 -r -n 4 -P $(NPROC) clang-tidy -p build --quiet

clean:
	rm -rf build build-debug build-asan build-fuzz
