#!/usr/bin/env python3
"""The benchmark suite (`make bench`): tern and PyTorch side by side on the same machine, in one run.

Each workload runs in a fresh process per framework (bench/workloads_bench for tern,
bench/workloads_torch.py for PyTorch), both at the machine's core count and with the same OpenMP
wait policy; repeats are interleaved (tern, torch, tern, torch, ...; the order alternates per
repeat) and the median is reported. W8 (matmul peak) comes from bench/ops_bench and
bench/ops_bench_torch.py. Prints the table and rewrites BENCHMARKS.md (table, machine, command,
and the notes in bench/benchmarks_notes.md).

Usage: bench/run_suite.py [--build-dir build] [--repeats 5] [--steps 20] [--only w1,w4]
                          [--output BENCHMARKS.md] [--report-only]
The raw measurements go to <build-dir>/bench_raw.json; --report-only rewrites the table and
BENCHMARKS.md from that file without measuring again (e.g. after editing the notes).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")

# (id, workload flag, precision, kind, description, target speed ratio)
WORKLOADS = [
    ("W1", "w1", "float32", "epoch", "MLP 784-1024-10, Adam, batch 128, 1 epoch Fashion-MNIST", 3.0),
    ("W2", "w2", "float32", "epoch", "MLP 784-512-256-10 + BatchNorm + Dropout 0.2, same", 2.5),
    ("W3", "w3", "float32", "epoch", "CNN of examples/fashion_mnist.toml, 1 epoch", 2.0),
    ("W4", "w4", "float32", "step", "ResNet-18 CIFAR stem, 32x32x3, batch 32, SGD momentum, fp32", 1.0),
    ("W5", "w4", "mixed_bfloat16", "step", "W4 with bf16 mixed precision", 1.2),
    ("W6", "w6", "float32", "step", "Transformer classifier 4x d256 h4 ff1024 seq 128, batch 32, fp32", 1.3),
    ("W6-bf16", "w6", "mixed_bfloat16", "step", "W6 with bf16 mixed precision", 1.3),
]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run_json(cmd, env, timeout):
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    for line in reversed(p.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": "no JSON line in output"}


def machine():
    model = platform.processor()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    flags = open("/proc/cpuinfo").read()
    isa = [x for x in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {x}" in flags]
    torch_v = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                             text=True).stdout.strip()
    return {"cpu": model, "cores": len(os.sched_getaffinity(0)), "isa": " ".join(isa), "torch": torch_v,
            "kernel": platform.release(), "load_before": os.getloadavg()[0]}


def matmul_peak(build, repeats, env):
    """GFLOP/s of the 2048^3 matmul per framework and dtype: (median, path, best) over the repeats.
    The machine peak is the best run of either framework (on a shared machine the best run is the
    closest to what the cores can do, so fractions of it are conservative)."""
    res = {}
    for r in range(repeats):
        for name in ("matmul_2048_f32", "matmul_2048_bf16"):
            for side, cmd in (("tern", [f"{build}/bench/ops_bench", "--name", name]),
                              ("torch", [PYTHON, f"{ROOT}/bench/ops_bench_torch.py", "--name", name])):
                p = subprocess.run(cmd + ["--min-time", "1.0"], env=env, capture_output=True, text=True)
                for line in p.stdout.splitlines():
                    n, gf, path = line.split("\t")
                    res.setdefault((n, side), []).append((float(gf), path))
    out = {}
    for (n, side), v in res.items():
        out[(n, side)] = (statistics.median(x for x, _ in v), v[-1][1], max(x for x, _ in v))
    return out


def median_of(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else None


def measure(a, build, env, cores):
    info = machine()
    log(f"machine: {info['cpu']}, {cores} cores; torch {info['torch']}")
    log("W8: matmul 2048^3 f32/bf16 ...")
    peaks = matmul_peak(build, a.repeats, env)
    only = set(x.strip().upper() for x in a.only.split(",") if x.strip())
    results = {}
    for r in range(a.repeats):
        for wid, flag, prec, kind, _, _ in WORKLOADS:
            if only and wid.upper() not in only:
                continue
            common = ["--workload", flag, "--precision", prec, "--threads", str(cores), "--seed", str(42 + r)]
            if kind == "step":
                common += ["--steps", str(a.steps), "--warmup", str(a.warmup)]
            sides = [("tern", [f"{build}/bench/workloads_bench"] + common)]
            torch_cmd = [PYTHON, f"{ROOT}/bench/workloads_torch.py"] + common
            sides.append(("torch", torch_cmd))
            if flag in ("w3", "w4"):  # PyTorch's best format is measured, not assumed
                sides.append(("torch_cl", torch_cmd + ["--channels-last"]))
            if r % 2:
                sides.reverse()
            for side, cmd in sides:
                log(f"repeat {r + 1}/{a.repeats} {wid} {side} ...")
                res = run_json(cmd, env, timeout=900)
                if "error" in res:
                    log(f"  {wid} {side}: {res['error']}")
                results.setdefault((wid, side), []).append(res)
    info["load_after"] = os.getloadavg()[0]
    return info, peaks, results, only


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--output", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    # Each framework runs with its own OpenMP wait default (tern's binaries: a bounded spin,
    # tern/runtime/openmp_wait.h; PyTorch: libgomp's); an OMP_WAIT_POLICY or GOMP_SPINCOUNT set by
    # the caller applies to both.
    env = dict(os.environ)
    cores = len(os.sched_getaffinity(0))
    raw_path = os.path.join(build, "bench_raw.json")
    if a.report_only:
        with open(raw_path) as f:
            raw = json.load(f)
        info, elapsed, a.repeats, a.steps, a.warmup = (raw["info"], raw["elapsed"], raw["repeats"], raw["steps"],
                                                       raw["warmup"])
        peaks = {tuple(k.split("|")): tuple(v) for k, v in raw["peaks"].items()}
        results = {tuple(k.split("|")): v for k, v in raw["results"].items()}
        only = set(raw["only"])
    else:
        started = time.time()
        info, peaks, results, only = measure(a, build, env, cores)
        elapsed = time.time() - started
        with open(raw_path, "w") as f:
            json.dump({"info": info, "elapsed": elapsed, "repeats": a.repeats, "steps": a.steps, "warmup": a.warmup,
                       "only": sorted(only), "peaks": {"|".join(k): v for k, v in peaks.items()},
                       "results": {"|".join(k): v for k, v in results.items()}}, f, indent=1)
    peak = {d: max(peaks.get((f"matmul_2048_{d}", s), (0, "", 0))[-1] for s in ("tern", "torch"))
            for d in ("f32", "bf16")}
    rows = []
    for wid, flag, prec, kind, desc, target in WORKLOADS:
        if only and wid.upper() not in only:
            continue
        tern = [x for x in results.get((wid, "tern"), []) if "error" not in x]
        torch_runs = {s: [x for x in results.get((wid, s), []) if "error" not in x] for s in ("torch", "torch_cl")}
        best_side, t_torch = None, None
        for s, runs in torch_runs.items():
            m = median_of(runs, "seconds")
            if m is not None and (t_torch is None or m < t_torch):
                best_side, t_torch = s, m
        t_tern = median_of(tern, "seconds")
        row = {"id": wid, "desc": desc, "kind": kind, "target": target, "precision": prec,
               "tern": t_tern, "torch": t_torch, "torch_setting": "channels_last" if best_side == "torch_cl" else "",
               "tern_cpu": median_of(tern, "cpu_seconds"),
               "torch_cpu": median_of(torch_runs.get(best_side, []), "cpu_seconds") if best_side else None,
               "tern_error": next((x["error"] for x in results.get((wid, "tern"), []) if "error" in x), ""),
               "torch_error": next((x["error"] for x in results.get((wid, "torch"), []) if "error" in x), "")}
        if t_tern and tern:
            flops = median_of(tern, "flops")
            pk = peak["bf16" if prec == "mixed_bfloat16" else "f32"]
            row["fraction"] = flops / t_tern / (pk * 1e9) if pk and flops else None
        if kind == "epoch":
            row["acc_tern"] = median_of(tern, "test_accuracy")
            row["acc_torch"] = median_of(torch_runs.get(best_side, []), "test_accuracy") if best_side else None
        if wid in ("W4", "W5"):
            row["rss_tern"] = median_of(tern, "peak_rss_mb")
            row["rss_torch"] = median_of(torch_runs.get(best_side, []), "peak_rss_mb") if best_side else None
        rows.append(row)

    table = format_table(rows, peaks, peak)
    print(table)
    write_markdown(a, info, table, elapsed)
    log(f"wrote {a.output} ({elapsed / 60:.1f} min)")


def fmt_time(row, side):
    v = row[side]
    if v is None:
        return "n/a"
    return f"{v:.2f} s/epoch" if row["kind"] == "epoch" else f"{v * 1e3:.0f} ms/step"


def format_table(rows, peaks, peak):
    lines = ["| workload | tern | PyTorch | speed ratio (PyTorch time / tern time) | target | tern % of peak | "
             "CPU s tern / PyTorch | notes |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = r["torch"] / r["tern"] if r["tern"] and r["torch"] else None
        ok = "" if ratio is None else (" (met)" if ratio >= r["target"] else " (not met)")
        notes = []
        if r.get("acc_tern") is not None and r.get("acc_torch") is not None:
            d = 100 * (r["acc_tern"] - r["acc_torch"])
            notes.append(f"test acc {r['acc_tern']:.4f} vs {r['acc_torch']:.4f} ({d:+.2f} pt)")
        if r["torch_setting"]:
            notes.append("PyTorch " + r["torch_setting"])
        if r["tern_error"]:
            notes.append("tern: " + r["tern_error"][:80])
        if r["torch_error"] and r["torch"] is None:
            notes.append("PyTorch: " + r["torch_error"][:80])
        cpu = ""
        if r["kind"] == "epoch" and r["tern_cpu"] and r["torch_cpu"]:
            cpu = f"{r['tern_cpu']:.1f} / {r['torch_cpu']:.1f}"
        elif r["tern_cpu"] and r["torch_cpu"]:
            cpu = f"{r['tern_cpu']:.3f} / {r['torch_cpu']:.3f}"
        frac = f"{100 * r['fraction']:.0f}%" if r.get("fraction") else "n/a"
        lines.append(f"| {r['id']}: {r['desc']} | {fmt_time(r, 'tern')} | {fmt_time(r, 'torch')} | "
                     f"{'n/a' if ratio is None else f'{ratio:.2f}x'}{ok} | >= {r['target']:.1f}x | {frac} | {cpu} | "
                     f"{'; '.join(notes)} |")
    for r in rows:
        if r.get("rss_tern") and r.get("rss_torch"):
            ratio = r["rss_tern"] / r["rss_torch"]
            met = " (met)" if ratio <= 0.8 else " (not met)"
            lines.append(f"| W7: peak RSS of {r['id']} | {r['rss_tern']:.0f} MB | {r['rss_torch']:.0f} MB | "
                         f"{ratio:.2f}x of PyTorch{met} | <= 0.8x | | | whole process (ru_maxrss) |")
    for d in ("f32", "bf16"):
        t = peaks.get((f"matmul_2048_{d}", "tern"))
        p = peaks.get((f"matmul_2048_{d}", "torch"))
        lines.append(f"| W8: matmul 2048^3 {d} | {t[0]:.0f} GFLOP/s | {p[0]:.0f} GFLOP/s ({p[1]}) | "
                     f"{t[0] / p[0]:.2f}x | | peak = {peak[d]:.0f} GFLOP/s | | medians; peak = best single run |"
                     if t and p else f"| W8: matmul 2048^3 {d} | n/a | n/a | | | | | |")
    return "\n".join(lines)


def omp_wait():
    set_by_user = [f"{k}={os.environ[k]}" for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if k in os.environ]
    if set_by_user:
        return ", ".join(set_by_user) + " (both)"
    return "each framework's default (tern GOMP_SPINCOUNT=30000, PyTorch libgomp's)"


def write_markdown(a, info, table, elapsed):
    notes_path = os.path.join(ROOT, "bench", "benchmarks_notes.md")
    notes = open(notes_path).read() if os.path.exists(notes_path) else ""
    cmd = "make bench" if os.environ.get("TERN_BENCH_FROM_MAKE") else " ".join(["bench/run_suite.py"] + sys.argv[1:])
    text = f"""# Benchmarks: tern vs PyTorch on the same CPU

Generated by `{cmd}` (bench/run_suite.py) on {datetime.date.today().isoformat()} in {elapsed / 60:.1f} minutes.

- Machine: {info['cpu']}, {info['cores']} cores ({info['isa']}), Linux {info['kernel']}; 1-minute load
  average {info.get('load_before', 0):.1f} before and {info.get('load_after', 0):.1f} after the run (the machine is shared)
- PyTorch {info['torch']} (Debian python3-torch, OpenBLAS via libopenblas0-openmp, oneDNN for convolutions)
- Both at {info['cores']} threads, OpenMP wait: {omp_wait()}; median of {a.repeats} interleaved
  runs, each in a fresh process; step workloads time {a.steps} steps after {a.warmup} warmup steps.
- Ratio = PyTorch time / tern time (higher is better for tern); "% of peak" = tern's matmul+conv FLOPs
  per second (counted on the compiled step) over the measured W8 matmul peak of the same dtype.

{table}

{notes}"""
    # Sections measured by the other benchmarks (run_image_pipeline_bench.sh --write, the pipeline
    # overhead bench, compare_builds.py): kept as they are, so rewriting the suite's table never drops them.
    for name in ("image_pipeline_results.md", "pipeline_overhead_results.md",
                 "portable_build_results.md"):
        extra = os.path.join(ROOT, "bench", name)
        if os.path.exists(extra):
            text = text.rstrip("\n") + "\n\n" + open(extra).read().rstrip("\n") + "\n"
    with open(a.output, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
