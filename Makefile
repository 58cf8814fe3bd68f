# tern: top-level entry points. `make test` is the README's test command (and CI's).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build test train bench format check-format clean

all: build

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The main job: train the default example (a CNN on Fashion-MNIST) and print the final metrics.
train: build
	$(BUILD)/tools/tern/tern train examples/fashion_mnist.toml --metrics-json runs/fashion_mnist/metrics.json

format:
	find tern tools tests bench examples -name '*.h' -o -name '*.cc' | xargs clang-format -i

check-# The main job: train the default example (a CNN on Fashion-MNIST) and print the final metrics.
train: build
	$(BUILD)/tools/tern/tern train examples/fashion_mnist.toml --metrics-json runs/fashion_mnist/metrics.json

format:
	find tern tools tests bench examples -name '*.h' -o -name '*.cc' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD)
