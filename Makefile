# tern: top-level entry points. `make test` is the README's test command (and CI's).
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build test test-unit test-asan test-install fuzz train bench bench-serve bench-sweep \
	bench-dist bench-pipeline install package format check-format clean

all: build

# Development builds (this Makefile, CI): warnings are errors. Consumers and `make package` build
# without -Werror (TERN_WERROR in CMakeLists.txt).
$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DTERN_WERROR=ON $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Everything: the unit, consistency, end-to-end and install tests, then the parser tests under
# ASan+UBSan.
test: test-unit test-asan

test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Only the install tests (tests/install, also part of test-unit): a program outside the tree built
# against `cmake --install` (find_package and pkg-config), and the .deb installed into a fresh root.
test-install: build
	ctest --test-dir $(BUILD) --output-on-failure -L install

# Parsers (IR text, TFRecord framing and protobuf wire format, safetensors/event files, IDX/CSV,
# the per-worker checkpoint blobs, training configs (load_config, render_config), the pipeline's
# statistics / anomalies JSON and schema TOML,
# transform specs and analysis.json) under ASan+UBSan, and the fuzz targets replaying seeds and
# random mutations (cmake/tern_fuzz.cmake).
ASAN_TESTS = tern_ir_test tern_format_test tern_io_test tern_data_test tern_serve_test tern_dist_test \
	tern_config_test tern_pipeline_test tern_transform_test fuzz
test-asan:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DTERN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DTERN_WERROR=ON \
	  $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target $(ASAN_TESTS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -R '^(ir|format|io|data|serve|dist|config|pipeline|transform|fuzz_.*)$$'

# Coverage-guided fuzzing: every *_fuzz.cc with libFuzzer (clang, ASan+UBSan), FUZZ_SECONDS each.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 10
fuzz:
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTERN_FUZZ=ON -DTERN_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz
	ctest --test-dir $(FUZZ_BUILD) --output-on-failure -L fuzz

# The main job: train the default example (a CNN on Fashion-MNIST) and print the final metrics.
train: build
	$(BUILD)/tools/tern/tern train examples/fashion_mnist.toml --metrics-json runs/fashion_mnist/metrics.json

# The benchmark suite: tern vs TensorFlow 2.21 (with and without XLA), PyTorch 2.x (eager and
# torch.compile) and onnxruntime on the same machine, one run: bench/setup-peers.sh installs the
# peers into .venv-peers/ (pinned, from PyPI; does nothing when up to date), then the suite prints
# the tables and replaces its section of BENCHMARKS.md (~2 hours on 2 idle cores with the default 3
# repeats). Options: BENCH_ARGS="--repeats 1 --only W1,W4".
BENCH_ARGS ?=
bench: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target workloads_bench ops_bench
	bench/setup-peers.sh
	TERN_BENCH_FROM_MAKE=1 /usr/bin/python3 bench/run_suite.py --build-dir $(BUILD) $(BENCH_ARGS)

# The served default CNN (tern serve + wrk at concurrency 1, 8, 64, with and without batching)
# against in-process prediction, p99 during version swaps, memory across 50 reloads; writes the
# "Serving" section of BENCHMARKS.md (~3 minutes). Options: SERVE_BENCH_ARGS="--seconds 5".
SERVE_BENCH_ARGS ?=
bench-serve: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target tern serve_inprocess_bench
	/usr/bin/python3 bench/run_serve_bench.py --build-dir $(BUILD) $(SERVE_BENCH_ARGS)

# Installs the build (library, headers, CMake and pkg-config files, `tern`, docs) under PREFIX
# (default /usr/local): `make install PREFIX=$$HOME/.local`.
PREFIX ?=
install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

# The Debian package: a release build of its own (no -Werror, no tests, installed under /usr),
# then CPack: $(PACKAGE_BUILD)/tern_<version>_amd64.deb.
PACKAGE_BUILD ?= build-package
package:
	cmake -S . -B $(PACKAGE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	  -DTERN_WERROR=OFF -DTERN_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build $(PACKAGE_BUILD) -j $(JOBS)
	cd $(PACKAGE_BUILD) && cpack -G DEB
	@ls $(PACKAGE_BUILD)/*.deb

# The seed's 27-trial sweep (learning rate x weight decay x augmentation strength) at a reduced
# size: sequential trials (2 threads each) vs --parallel 2 (1 thread each) vs ASHA; writes the
# "Hyperparameter sweeps" section of BENCHMARKS.md (~15 minutes on 2 idle cores).
# Options: SWEEP_BENCH_ARGS="--quick" (a smoke run of a few minutes).
SWEEP_BENCH_ARGS ?=
bench-sweep: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target tern
	/usr/bin/python3 bench/run_sweep_bench.py --build-dir $(BUILD) $(SWEEP_BENCH_ARGS)

# Data-parallel scaling: tern W3/W4 at 1 worker and 2 workers (mpirun, deterministic and fast
# reduction) against PyTorch DDP, two independent processes as the ceiling, and the all-reduce
# bandwidth; writes the "Data-parallel scaling" section of BENCHMARKS.md, traces and
# measured.json under runs/dist_bench (~14 minutes with the default 5 repeats). Options:
# DIST_BENCH_ARGS="--quick" or "--repeats 3".
DIST_BENCH_ARGS ?=
bench-dist: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target dist_workloads_bench allreduce_bench
	/usr/bin/python3 bench/run_dist_bench.py --build-dir $(BUILD) $(DIST_BENCH_ARGS)

# The pipeline's statistics pass (tern/pipeline/statistics.h) and transform analyze
# (tern/transform) over Fashion-MNIST as raw-pixel tf.Examples (made once with `tern data convert
# ... --image-format raw`), each against reading the same files with no work; the figures go into
# BENCHMARKS.md ("Pipeline statistics", "Transform analyze") (~2 minutes).
# Options: PIPELINE_BENCH_ARGS="--repeats 3" (statistics), TRANSFORM_BENCH_ARGS (transform).
PIPELINE_BENCH_DIR ?= runs/pipeline_bench
PIPELINE_BENCH_ARGS ?=
TRANSFORM_BENCH_ARGS ?=
FASHION_MNIST ?= /usr/share/datasets/fashion-mnist
bench-pipeline: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target tern pipeline_stats_bench transform_bench
	mkdir -p $(PIPELINE_BENCH_DIR)
	for s in train t10k; do test -f $(PIPELINE_BENCH_DIR)/$$s.tfrecord || \
	  $(BUILD)/tools/tern/tern data convert $(FASHION_MNIST)/$$s-images-idx3-ubyte.gz \
	    $(PIPELINE_BENCH_DIR)/$$s.tfrecord --labels $(FASHION_MNIST)/$$s-labels-idx1-ubyte.gz \
	    --image-format raw || exit 1; done
	$(BUILD)/bench/pipeline_stats_bench $(PIPELINE_BENCH_ARGS) $(PIPELINE_BENCH_DIR)/train.tfrecord \
	  $(PIPELINE_BENCH_DIR)/t10k.tfrecord
	$(BUILD)/bench/transform_bench --train $(PIPELINE_BENCH_DIR)/train.tfrecord $(TRANSFORM_BENCH_ARGS)

format:
	find tern tools tests bench examples -name '*.h' -o -name '*.cc' | xargs clang-format -i

check-format:
	find tern tools tests bench examples -name '*.h' -o -name '*.cc' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(PACKAGE_BUILD)
