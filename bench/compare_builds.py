#!/usr/bin/env python3
"""Two builds of tern on the same machine, interleaved: the same workloads_bench workloads (and
optionally ops_bench) from build A and build B, alternating A B / B A by round so drift in the
machine's load hits both alike; prints the median wall and CPU seconds of each, B/A, and the load
average seen during the runs. Used for the "Portable build" section of BENCHMARKS.md (a build with
-march=x86-64-v3 everywhere vs the portable default with run-time kernel dispatch).

Usage: compare_builds.py BUILD_A BUILD_B [--workloads w1,w3] [--repeats 5] [--threads N] [--ops]
On a machine others are loading, --threads 1 and the CPU seconds are the steadier comparison.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def run_ops(build):
    p = subprocess.run([f"{build}/bench/ops_bench", "--min-time", "1"], capture_output=True,
                       text=True, check=True)
    return {f[0]: float(f[1]) for f in (line.split("\t") for line in p.stdout.splitlines()) if len(f) >= 2}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--workloads", default="w1,w3")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: every core)")
    ap.add_argument("--ops", action="store_true", help="also ops_bench (GFLOP/s, higher is better)")
    args = ap.parse_args()
    builds = {"A": args.a, "B": args.b}
    results = {}  # (workload, side) -> [json]
    loads = []
    for r in range(args.repeats):
        for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
            for w in args.workloads.split(","):
                j = run_json([f"{builds[side]}/bench/workloads_bench", "--workload", w,
                              "--threads", str(args.threads)])[-1]
                results.setdefault((w, side), []).append(j)
                loads.append(os.getloadavg()[0])
                print(f"round {r + 1} {side} {w}: {j['seconds']:.3f} s (cpu {j['cpu_seconds']:.3f} s)"
                      f" load {loads[-1]:.2f}", file=sys.stderr, flush=True)
            if args.ops:
                for name, gflops in run_ops(builds[side]).items():
                    results.setdefault((name, side), []).append({"gflops": gflops})
    print(f"A = {args.a}\nB = {args.b}\nthreads {args.threads or 'all'}, "
          f"{args.repeats} rounds (A B / B A), "
          f"{sum(len(v) for v in results.values())} runs; 1-min load average during the runs: "
          f"min {min(loads):.2f}, median {statistics.median(loads):.2f}, max {max(loads):.2f} "
          f"on {os.cpu_count()} cores\n")
    print("| workload | A median s (cpu s) | B median s (cpu s) | B/A wall | B/A cpu |")
    print("|---|---|---|---|---|")
    names = sorted({k[0] for k in results}, key=lambda n: (not n.startswith("w"), n))
    for n in names:
        a, b = results[(n, "A")], results[(n, "B")]
        if "gflops" in a[0]:
            ga = statistics.median(x["gflops"] for x in a)
            gb = statistics.median(x["gflops"] for x in b)
            print(f"| {n} (GFLOP/s) | {ga:.1f} | {gb:.1f} | {ga / gb:.3f} | |")
            continue
        wa = statistics.median(x["seconds"] for x in a)
        wb = statistics.median(x["seconds"] for x in b)
        ca = statistics.median(x["cpu_seconds"] for x in a)
        cb = statistics.median(x["cpu_seconds"] for x in b)
        acc = ""
        if "test_accuracy" in a[0]:
            acc = f" acc {a[0]['test_accuracy']:.4f}/{b[0]['test_accuracy']:.4f}"
        print(f"| {n}{acc} | {wa:.3f} ({ca:.3f}) | {wb:.3f} ({cb:.3f}) | {wb / wa:.3f} | {cb / ca:.3f} |")


if __name__ == "__main__":
    main()
