#!/usr/bin/env python3
"""Same work check: tern, TensorFlow and PyTorch start from the same weights and see the same
batches, so their first-step losses on W1-W3 must agree (to --tolerance, default 1e-5).

For each workload: `workloads_bench --first-steps DIR` builds tern's model with dropout off (each
framework draws its own dropout masks, so dropout is the one thing that cannot match), writes its
initial weights (DIR/initial.safetensors) and the epoch's sample order (DIR/order.json), trains 3
steps and prints their losses; then bench/workloads_tf.py and bench/workloads_torch.py (the peers'
python) load those weights (Keras: the same layouts; PyTorch: dense kernels transposed, conv
kernels HWIO -> OIHW, the flattened dense rows reordered from (h, w, c) to (c, h, w)), take the
first batches in the same order and print their 3 losses. Steps 2 and 3 are shown as well, after
one and two optimizer updates (Adam's epsilon sits in a slightly different place in each framework,
so they agree less closely and are not checked).

Usage: bench/first_step_check.py [--build-dir build] [--workloads w1,w2,w3] [--tolerance 1e-5]
                                 [--python .venv-peers/bin/python] [--out-dir DIR]
Exit status: 0 every first-step loss within the tolerance, 1 not (or a side failed), 2 usage.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_side(name, cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"first_step_check: {name} timed out after {timeout} s: {' '.join(cmd)}")
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = "\n".join(p.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"first_step_check: {name} failed (exit {p.returncode}): {' '.join(cmd)}\n{tail}")
    doc = json.loads(lines[-1])
    if not doc.get("losses"):
        raise SystemExit(f"first_step_check: {name} printed no losses: {lines[-1]}")
    return doc["losses"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--workloads", default="w1,w2,w3")
    ap.add_argument("--tolerance", type=float, default=1e-5)
    ap.add_argument("--python", default=os.environ.get("TERN_PEERS_PYTHON",
                                                       os.path.join(ROOT, ".venv-peers", "bin", "python")))
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out-dir", default="", help="keep the weights and orders here (default: a temp dir)")
    a = ap.parse_args()
    bench = os.path.join(os.path.abspath(a.build_dir), "bench", "workloads_bench")
    if not os.access(bench, os.X_OK):
        print(f"first_step_check: {bench} not found: build it (cmake --build build --target workloads_bench)",
              file=sys.stderr)
        return 2
    if not os.access(a.python, os.X_OK):
        print(f"first_step_check: {a.python} not found: run bench/setup-peers.sh", file=sys.stderr)
        return 2
    workloads = [w.strip().lower() for w in a.workloads.split(",") if w.strip()]
    bad = [w for w in workloads if w not in ("w1", "w2", "w3")]
    if bad:
        print(f"first_step_check: --workloads takes w1, w2, w3 (got {', '.join(bad)})", file=sys.stderr)
        return 2
    threads = str(a.threads or len(os.sched_getaffinity(0)))
    tmp = None if a.out_dir else tempfile.TemporaryDirectory(prefix="first_step_check_")
    base = a.out_dir or tmp.name
    failed = []
    print(f"{'workload':<9} {'step':>4} {'tern':>12} {'TensorFlow':>12} {'PyTorch':>12} {'max |diff|':>11}")
    for w in workloads:
        d = os.path.join(base, w)
        tern = run_side(f"tern {w}", [bench, "--workload", w, "--first-steps", d, "--threads", threads], 600)
        tf = run_side(f"TensorFlow {w}", [a.python, os.path.join(ROOT, "bench", "workloads_tf.py"), "--workload", w,
                                          "--first-steps", d, "--threads", threads], 600)
        pt = run_side(f"PyTorch {w}", [a.python, os.path.join(ROOT, "bench", "workloads_torch.py"), "--workload", w,
                                       "--first-steps", d, "--threads", threads], 600)
        for i in range(min(len(tern), len(tf), len(pt))):
            vals = (tern[i], tf[i], pt[i])
            diff = max(vals) - min(vals)
            verdict = ""
            if i == 0:
                ok = diff <= a.tolerance
                verdict = "ok" if ok else f"DIFFERS (> {a.tolerance:g})"
                if not ok:
                    failed.append(w)
            else:
                verdict = "(after the update: shown, not checked)"
            print(f"{w.upper():<9} {i + 1:>4} {vals[0]:>12.7f} {vals[1]:>12.7f} {vals[2]:>12.7f} {diff:>11.2e} {verdict}")
    if tmp:
        tmp.cleanup()
    if failed:
        print(f"first_step_check: first-step losses differ by more than {a.tolerance:g} on "
              f"{', '.join(w.upper() for w in failed)}")
        return 1
    print(f"first_step_check: the first-step losses of {', '.join(w.upper() for w in workloads)} agree "
          f"within {a.tolerance:g} in tern, TensorFlow and PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
