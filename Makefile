# Thin wrapper over scripts/install-deps, CMake presets and ctest.
# Each target is a sequence of steps; ninja parallelises the compile itself, so
# make runs the steps one at a time even under `make -j` (see .NOTPARALLEL).

LISTEN   ?= 127.0.0.1:4437
DATA_DIR ?= ./data
NPROC    := $(shell nproc 2>/dev/null || echo 2)

.DEFAULT_GOAL := build
.NOTPARALLEL:
.PHONY: deps build run test asan format tidy clean

deps:
	@scripts/install-deps

build: deps
	cmake --preset default
	cmake --build --preset default

run: build
	exec build/dstream serve --listen $(LISTEN) --data-dir $(DATA_DIR)

# ctest's summary is the last thing this target prints.
test: build
	@ctest --preset default

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
	rm -rf build build-debug build-asan
