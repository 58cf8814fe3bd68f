#!/usr/bin/env bash
# Installs everything tern needs to build, test and benchmark, from Debian packages.
# Idempotent: safe to run again; apt-get skips what is already installed.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang-format clang libclang-rt-14-dev
  # engine
  libdnnl-dev zlib1g-dev
  # SHA-256 (tern/base/sha256.cc: OpenSSL's libcrypto)
  libssl-dev
  # data formats, configs, CLI, serving
  libjpeg-dev libpng-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libcpp-httplib-dev
  # `tern pipeline`'s metadata store (tern/pipeline/metadata_store.cc)
  libsqlite3-dev
  # multi-process training
  libopenmpi-dev openmpi-bin
  # `tern sweep`'s Slurm launcher, tested against a single-node slurmctld + slurmd the test starts
  slurm-wlm
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # load generator for the serving tests and `make bench-serve`
  wrk
  # the JSON codec measurement (bench/json_codec_bench.cc)
  libsimdjson-dev
  # real data (python3-statsmodels: its CSV files, e.g. the UCI Automobile table autos.csv of the
  # pipeline's tabular example and tests; tern never imports it)
  dataset-fashion-mnist python3-statsmodels
  # peers for the side-by-side benchmarks (never linked by tern)
  python3 python3-numpy python3-torch python3-torchvision
  # an optimized BLAS for python3-torch (Debian's default libblas3 is the reference one, ~30x slower)
  libopenblas0-openmp
  # `make bench`'s virtual environment of today's peers (bench/setup-peers.sh: TensorFlow, PyTorch
  # 2.x, onnxruntime from PyPI); torch.compile's generated C++ includes Python.h
  python3-venv python3-dev
)

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"
