#!/usr/bin/env bash
# Image input-pipeline benchmark, tern vs PyTorch, same machine, one run: writes the first COUNT
# Fashion-MNIST training images as 64x64 RGB JPEGs with `tern data convert`, then times
# decode -> random crop 56 -> random flip -> normalize -> batch 128 through
#   tern:  bench/image_pipeline_bench (map threads 1..cores and AUTOTUNE, best reported)
#   torch: bench/image_pipeline_bench_torch.py (DataLoader num_workers 0..2, best reported)
# alternating the two REPEATS times, and prints the median images/s of each and their ratio.
#
# Usage: bench/run_image_pipeline_bench.sh [--build-dir DIR] [--count N] [--repeats N]
# Env: PYTHON (default /usr/bin/python3, which has Debian's python3-torch and torchvision),
#      FASHION_MNIST (default /usr/share/datasets/fashion-mnist).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$root/build"
count=10000
repeats=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --count) count="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR] [--count N] [--repeats N]" >&2; exit 2 ;;
  esac
done
python="${PYTHON:-/usr/bin/python3}"
fmnist="${FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"
for bin in tools/tern/tern bench/image_pipeline_bench; do
  if [[ ! -x "$build_dir/$bin" ]]; then
    echo "$build_dir/$bin not found: cmake --build $build_dir --target tern image_pipeline_bench" >&2
    exit 1
  fi
done

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$build_dir/tools/tern/tern" data convert "$fmnist/train-images-idx3-ubyte.gz" "$out/images" \
  --labels "$fmnist/train-labels-idx1-ubyte.gz" --size 64 --channels 3 --image-format jpeg \
  --limit "$count" >&2
for ((r = 1; r <= repeats; r++)); do
  echo "repeat $r/$repeats" >&2
  "$build_dir/bench/image_pipeline_bench" --dir "$out/images" 2>/dev/null | tee -a "$out/tern.tsv" >&2
  "$python" "$root/bench/image_pipeline_bench_torch.py" "$out/images" | tee -a "$out/torch.tsv" >&2
done

"$python" - "$out" "$count" <<'PY'
import os
import statistics
import sys

out, count = sys.argv[1], sys.argv[2]

def best(side):
    rows = [l.rstrip("\n").split("\t") for l in open(f"{out}/{side}.tsv")]
    bests = [(float(r[2]), r[1]) for r in rows if r[0] == f"{side}_best"]
    return statistics.median(b[0] for b in bests), sorted(set(b[1] for b in bests))

tern, tern_cfg = best("tern")
torch, torch_cfg = best("torch")
print(f"image pipeline: {count} Fashion-MNIST images as 64x64 RGB JPEG, decode -> random crop 56 -> "
      f"flip -> normalize -> batch 128, {os.cpu_count()} cores")
print(f"tern  {tern:10.1f} images/s  (map threads: {', '.join(tern_cfg)})")
print(f"torch {torch:10.1f} images/s  (DataLoader num_workers: {', '.join(torch_cfg)})")
print(f"tern / torch = {tern / torch:.2f}")
PY
