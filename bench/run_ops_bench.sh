#!/usr/bin/env bash
# Runs the op micro-benchmark for tern (bench/ops_bench.cc) and PyTorch (bench/ops_bench_torch.py)
# interleaved (tern, torch, tern, torch, ... per workload), REPEATS times each, and prints one
# table of medians: workload, tern GFLOP/s, torch GFLOP/s, tern/torch, and the kernel / PyTorch
# path that ran.
#
# Usage: bench/run_ops_bench.sh [--build-dir DIR] [--repeats N] [--min-time SECONDS] [--filter S]
# Env: PYTHON (default /usr/bin/python3, which has Debian's python3-torch).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="$root/build"
repeats=3
min_time=1.0
filter=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --min-time) min_time="$2"; shift 2 ;;
    --filter) filter="$2"; shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR] [--repeats N] [--min-time S] [--filter S]" >&2; exit 2 ;;
  esac
done
python="${PYTHON:-/usr/bin/python3}"
tern_bin="$build_dir/bench/ops_bench"
if [[ ! -x "$tern_bin" ]]; then
  echo "$tern_bin not found: build it with cmake --build $build_dir --target ops_bench" >&2
  exit 1
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# Alternate tern and torch workload by workload, so both see the same machine state (load from
# other processes drifts over minutes).
mapfile -t names < <("$tern_bin" --list --filter "$filter")
for name in "${names[@]}"; do
  for ((r = 1; r <= repeats; r++)); do
    echo "$name: repeat $r/$repeats" >&2
    "$tern_bin" --min-time "$min_time" --name "$name" >> "$out/tern.$r.tsv"
    "$python" "$root/bench/ops_bench_torch.py" --min-time "$min_time" --name "$name" \
      >> "$out/torch.$r.tsv"
  done
done

"$python" - "$out" "$repeats" <<'EOF'
import statistics
import sys

out, repeats = sys.argv[1], int(sys.argv[2])

def load(side):
    runs, note, order = {}, {}, []
    for r in range(1, repeats + 1):
        with open(f"{out}/{side}.{r}.tsv") as f:
            for line in f:
                name, gflops, path = line.rstrip("\n").split("\t")
                if name not in runs:
                    order.append(name)
                runs.setdefault(name, []).append(float(gflops))
                note[name] = path
    return {k: statistics.median(v) for k, v in runs.items()}, note, order

tern, tern_note, order = load("tern")
torch, torch_note, _ = load("torch")
w = max(len(n) for n in order)
print(f"{'workload':<{w}}  {'tern GFLOP/s':>12}  {'torch GFLOP/s':>13}  {'ratio':>6}  kernel / torch path")
for name in order:
    t, p = tern[name], torch.get(name)
    ratio = f"{t / p:6.2f}" if p else "     -"
    ptxt = f"{p:13.1f}" if p else f"{'-':>13}"
    print(f"{name:<{w}}  {t:12.1f}  {ptxt}  {ratio}  {tern_note[name]} / {torch_note.get(name, '-')}")
EOF
