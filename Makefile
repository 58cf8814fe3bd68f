# tern: top-level entry points. `make test` is the README's test command (and CI's).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build test bench format check-format clean

all: build

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

format:
	find tern tools tests bench examples -name '*.h' -o -name '*.cc' | xargs clang-format -i

check-format:
	find tern tools tests bench examples -name '*.h' -o -name '*.cc' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD)
