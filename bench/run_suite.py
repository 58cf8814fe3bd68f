#!/usr/bin/env python3
"""The benchmark suite (`make bench`): tern against today's peers on the same machine, in one run.

Peer configurations, one column each (bench/setup-peers.sh installs them into .venv-peers/):
  TF          TensorFlow 2.21 / Keras 3, model.fit in graph mode (bench/workloads_tf.py)
  TF+XLA      the same with model.compile(jit_compile=True)
  torch       PyTorch 2.x eager (bench/workloads_torch.py), channels_last as well for the
              convolutional rows: the faster of the two formats is the column's figure
  compile     PyTorch 2.x with torch.compile (default mode)
  ORT         onnxruntime on the model exported by torch.onnx.export (inference rows only)
tern runs bench/workloads_bench. Every run is a fresh process; all run at the machine's core count
(TensorFlow with the intra/inter-op setting the calibration found best, or --tf-threads); repeats
are interleaved (tern, TF, ..., then the reverse order) and the median is reported. The epoch
workloads see the same data order in every framework (tern's, written by workloads_bench
--order-out for each repeat's seed) and are compared on their steady part (the epoch after its
first step, which compiles); first-step times are listed apart.

Per row: the ratio of the fastest peer configuration's time to tern's, and tern's fraction of the
machine's floor for the row: the matmul FLOPs at the measured matmul peak of the row's dtype (the
best of tern's and PyTorch's 2048^3 matmul; for bf16 rows the f32 rate where it is higher, as bf16
work can run widened), plus the convolution FLOPs at the measured convolution
peak (1x1 convolutions, which are GEMMs, at the matmul peak), plus the optimizer and normalization
bytes at the measured memory bandwidth (bench/ops_bench: matmul_2048_*, conv2d_*, stream_triad;
bench/ops_bench_torch.py; the work is counted on tern's compiled step, bench/graph_cost.h). Goals: >= 1.2x the fastest peer (bf16
rows: >= 1.3x the fastest peer's bf16), >= 85% of the floor; inference >= 1.0x onnxruntime.
Before the timed runs, bench/first_step_check.py checks that tern, TensorFlow and PyTorch compute
the same first-step loss on W1-W3 from the same weights and batches.

Prints the tables and replaces the suite's section of BENCHMARKS.md (between
<!-- suite-bench:begin --> and <!-- suite-bench:end -->; every other byte of the file is kept).

Usage: bench/run_suite.py [--build-dir build] [--repeats 3] [--steps 20] [--warmup 3]
                          [--only W1,W4,I1-CNN] [--python .venv-peers/bin/python]
                          [--tf-threads auto|INTRA,INTER] [--epoch-steps N] [--infer-calls N]
                          [--no-first-step-check] [--output BENCHMARKS.md] [--report-only]
The raw measurements go to <build-dir>/bench_raw.json; --report-only rewrites the tables and the
section from that file without measuring again (e.g. after editing bench/benchmarks_notes.md).
--epoch-steps N cuts the epoch workloads to N steps (a quick check of the whole suite, not a
result). Exit status: 0 done, 1 a measurement failed everywhere, 2 usage error.
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
BEGIN, END = "<!-- suite-bench:begin -->", "<!-- suite-bench:end -->"

# (id, workload flag, precision, kind, description)
TRAIN_ROWS = [
    ("W1", "w1", "float32", "epoch", "MLP 784-1024-10, Adam, batch 128, 1 epoch Fashion-MNIST"),
    ("W1-bf16", "w1", "mixed_bfloat16", "epoch", "W1 with bf16 mixed precision"),
    ("W2", "w2", "float32", "epoch", "MLP 784-512-256-10 + BatchNorm + Dropout 0.2, same"),
    ("W2-bf16", "w2", "mixed_bfloat16", "epoch", "W2 with bf16 mixed precision"),
    ("W3", "w3", "float32", "epoch", "CNN of examples/fashion_mnist.toml, 1 epoch"),
    ("W4", "w4", "float32", "step", "ResNet-18 CIFAR stem, 32x32x3, batch 32, SGD momentum, fp32"),
    ("W5", "w4", "mixed_bfloat16", "step", "W4 with bf16 mixed precision"),
    ("W6", "w6", "float32", "step", "Transformer classifier 4x d256 h4 ff1024 seq 128, batch 32, fp32"),
    ("W6-bf16", "w6", "mixed_bfloat16", "step", "W6 with bf16 mixed precision"),
    ("W9", "w9", "mixed_bfloat16", "step", "ResNet-50 (ImageNet stem), 64x64x3, batch 32, SGD momentum, bf16"),
]
# (id, workload flag, batch, description)
INFER_ROWS = [
    ("I1-CNN", "i-cnn", 1, "CNN of W3, batch 1: latency"),
    ("I1-R18", "i-resnet18", 1, "ResNet-18 of W4, batch 1: latency"),
    ("I2-CNN", "i-cnn", 256, "CNN of W3, batch 256: throughput"),
    ("I2-R18", "i-resnet18", 256, "ResNet-18 of W4, batch 256: throughput"),
]
CONV_FLAGS = ("w3", "w4", "w9", "i-cnn", "i-resnet18")
PEERS = [("tf", "TF"), ("tf_xla", "TF+XLA"), ("torch", "torch"), ("torch_compile", "compile")]
INFER_PEERS = PEERS + [("ort", "ORT")]
GOAL_PEER, GOAL_PEER_BF16, GOAL_FLOOR, GOAL_ORT = 1.2, 1.3, 0.85, 1.0


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run_json(cmd, env, timeout):
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if p.returncode != 0:
        lines = [ln.strip() for ln in p.stderr.strip().splitlines() if ln.strip()] or [f"exit {p.returncode}"]
        # TensorFlow ends a failure with op names; the line naming the error says more.
        named = [ln for ln in lines if "Error" in ln or "error:" in ln or "Exception" in ln]
        return {"error": (named or lines)[-1]}
    for line in reversed(p.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": "no JSON line in output"}


def machine(a):
    model = platform.processor()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    flags = open("/proc/cpuinfo").read()
    isa = [x for x in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {x}" in flags]
    versions = {}
    vfile = os.path.join(os.path.dirname(os.path.dirname(a.python)), "peers-versions.json")
    if os.path.exists(vfile):
        with open(vfile) as f:
            versions = json.load(f)
    return {"cpu": model, "cores": len(os.sched_getaffinity(0)), "isa": " ".join(isa), "versions": versions,
            "kernel": platform.release(), "load_before": os.getloadavg()[0]}


# --- commands ---

def side_commands(a, build, flag, prec, kind, seed, order, batch=None):
    """[(config, command)] for one row and repeat."""
    cores = str(len(os.sched_getaffinity(0)))
    common = ["--workload", flag, "--threads", cores, "--seed", str(seed)]
    if kind != "infer":
        common += ["--precision", prec]
    if kind == "step":
        common += ["--steps", str(a.steps), "--warmup", str(a.warmup)]
    elif kind == "epoch":
        if a.epoch_steps:
            common += ["--epoch-steps", str(a.epoch_steps)]
    else:
        # Batch 256: enough calls for seconds of measurement per framework (tern's CNN call is ~5
        # ms: 50 calls measured a quarter of a second, which one burst of this host's noise
        # could dominate).
        calls = a.infer_calls if batch == 1 else (5 if flag == "i-resnet18" else 400)
        common += ["--batch", str(batch), "--steps", str(calls), "--warmup", "10" if batch == 1 else "2"]
    peer_extra = ["--order", order] if kind == "epoch" else []
    tf = [a.python, f"{ROOT}/bench/workloads_tf.py"] + common + peer_extra + [
        "--threads", str(a.tf_intra), "--inter-op", str(a.tf_inter)]
    pt = [a.python, f"{ROOT}/bench/workloads_torch.py"] + common + peer_extra
    sides = [("tern", [f"{build}/bench/workloads_bench"] + common),
             ("tf", tf), ("tf_xla", tf + ["--jit-compile"]), ("torch", pt)]
    if flag in CONV_FLAGS:  # PyTorch's best format is measured, not assumed
        sides.append(("torch_cl", pt + ["--channels-last"]))
    sides.append(("torch_compile", pt + ["--compile"]))
    if kind == "infer":
        sides.append(("ort", pt + ["--onnxruntime"]))
    return sides


def calibrate_tf(a, build, env):
    """TensorFlow's intra/inter-op threads for this machine: each candidate on a W2 epoch cut to 100
    steps and 5 W4 steps; the lowest sum of times relative to the best wins."""
    cores = len(os.sched_getaffinity(0))
    candidates = [(cores, 1), (cores, 2), (1, cores)] if cores > 1 else [(1, 1)]
    times = {}
    for intra, inter in candidates:
        for flag, extra in (("w2", ["--epoch-steps", "100"]), ("w4", ["--steps", "5", "--warmup", "2"])):
            cmd = [a.python, f"{ROOT}/bench/workloads_tf.py", "--workload", flag, "--threads", str(intra),
                   "--inter-op", str(inter)] + extra
            r = run_json(cmd, env, 900)
            key = "steady_seconds" if flag == "w2" else "seconds"
            times[(intra, inter, flag)] = r.get(key)
            log(f"  TF threads intra {intra} inter {inter} {flag}: {r.get(key, r.get('error'))}")
    def score(c):
        s = 0
        for flag in ("w2", "w4"):
            best = min((v for (i, j, f), v in times.items() if f == flag and v), default=None)
            v = times.get((c[0], c[1], flag))
            s += v / best if v and best else 1e9
        return s
    best = min(candidates, key=score)
    return best, {f"{i},{j},{f}": v for (i, j, f), v in times.items()}


def machine_peaks(build, repeats, env, python):
    """ops_bench rows (matmul peaks, convolution rates, memory bandwidth) per repeat, and the torch
    matmul for the W8 rows. Returns {(name, side): [values]}."""
    res = {}
    for _ in range(repeats):
        for name in ("matmul_2048_f32", "matmul_2048_bf16", "conv2d_f32", "conv2d_bf16", "stream_triad"):
            flag = ["--name", name] if name.startswith(("matmul", "stream")) else ["--filter", name + "_b"]
            p = subprocess.run([f"{build}/bench/ops_bench"] + flag + ["--min-time", "1.0"], env=env,
                               capture_output=True, text=True)
            for line in p.stdout.splitlines():
                n, v, _ = line.split("\t")
                res.setdefault(f"{n}|tern", []).append(float(v))
        for name in ("matmul_2048_f32", "matmul_2048_bf16"):
            p = subprocess.run([python, f"{ROOT}/bench/ops_bench_torch.py", "--name", name, "--min-time", "1.0"],
                               env=env, capture_output=True, text=True)
            for line in p.stdout.splitlines():
                n, v, _ = line.split("\t")
                res.setdefault(f"{n}|torch", []).append(float(v))
    return res


def first_step_check(a, build, env):
    cmd = [sys.executable, f"{ROOT}/bench/first_step_check.py", "--build-dir", build, "--python", a.python]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return {"command": "bench/first_step_check.py", "exit": p.returncode,
            "output": (p.stdout + (p.stderr if p.returncode else "")).strip()}


def selected(a):
    only = set(x.strip().upper() for x in a.only.split(",") if x.strip())
    known = {r[0].upper() for r in TRAIN_ROWS} | {r[0].upper() for r in INFER_ROWS}
    unknown = only - known
    if unknown:
        print(f"run_suite.py: --only: unknown rows {', '.join(sorted(unknown))} "
              f"(rows: {', '.join(r[0] for r in TRAIN_ROWS + INFER_ROWS)})", file=sys.stderr)
        sys.exit(2)
    return only


def measure(a, build, env):
    info = machine(a)
    info["command"] = ("make bench" if os.environ.get("TERN_BENCH_FROM_MAKE")
                       else " ".join(["bench/run_suite.py"] + sys.argv[1:]))
    log(f"machine: {info['cpu']}, {info['cores']} cores; peers {info['versions']}")
    only = selected(a)
    info["first_step_check"] = None
    if not a.no_first_step_check and (not only or only & {"W1", "W2", "W3"}):
        log("same work check: bench/first_step_check.py ...")
        info["first_step_check"] = first_step_check(a, build, env)
        log(info["first_step_check"]["output"])
    if a.tf_threads == "auto":
        log("TensorFlow threads: calibrating ...")
        (a.tf_intra, a.tf_inter), info["tf_calibration"] = calibrate_tf(a, build, env)
    info["tf_threads"] = [a.tf_intra, a.tf_inter]
    log(f"TensorFlow threads: intra-op {a.tf_intra}, inter-op {a.tf_inter}")
    log("machine peaks: ops_bench (matmul, conv, stream triad) ...")
    peaks = machine_peaks(build, a.repeats, env, a.python)
    results = {}
    order_dir = os.path.join(build, "bench_orders")
    os.makedirs(order_dir, exist_ok=True)
    for r in range(a.repeats):
        seed = 42 + r
        order = os.path.join(order_dir, f"order_seed{seed}.json")
        got = run_json([f"{build}/bench/workloads_bench", "--workload", "w1", "--seed", str(seed),
                        "--order-out", order], env, 300)
        if "error" in got or not os.path.exists(order):
            raise SystemExit(f"run_suite.py: workloads_bench --order-out failed: {got.get('error')}")
        rows = [(rid, flag, prec, kind, None) for rid, flag, prec, kind, _ in TRAIN_ROWS]
        rows += [(rid, flag, "float32", "infer", batch) for rid, flag, batch, _ in INFER_ROWS]
        for rid, flag, prec, kind, batch in rows:
            if only and rid.upper() not in only:
                continue
            sides = side_commands(a, build, flag, prec, kind, seed, order, batch)
            if r % 2:
                sides.reverse()
            for side, cmd in sides:
                log(f"repeat {r + 1}/{a.repeats} {rid} {side} ...")
                res = run_json(cmd, env, timeout=1200)
                if "error" in res:
                    log(f"  {rid} {side}: {res['error']}")
                results.setdefault(f"{rid}|{side}", []).append(res)
    info["load_after"] = os.getloadavg()[0]
    return info, peaks, results, only


# --- report ---

def med(runs, key):
    vals = [x[key] for x in runs if key in x and x[key] is not None]
    return statistics.median(vals) if vals else None


def ok_runs(results, rid, side):
    return [x for x in results.get(f"{rid}|{side}", []) if "error" not in x]


def first_error(results, rid, side):
    return next((x["error"] for x in results.get(f"{rid}|{side}", []) if "error" in x), "")


def peak_values(peaks):
    """Machine rates: the best single run of each (on a shared machine the best run is the closest
    to what the cores can do, so fractions of it are conservative), of tern's or PyTorch's
    measurement, whichever is higher: the floor is the machine's, not tern's (PyTorch's GEMM has
    run faster than tern's on this machine kind). bf16 work can always be done widened to f32, so
    a bf16 rate is at least the f32 one (on CPUs whose bf16 dot products run at half the f32 FMA
    rate, e.g. AVX512_BF16 without AMX, the f32 rate is the higher)."""
    def best(*prefixes):
        vals = [max(v) for k, v in peaks.items() if k.startswith(prefixes) and v]
        return max(vals) if vals else None
    return {"mm_f32": best("matmul_2048_f32|"), "mm_bf16": best("matmul_2048_bf16|", "matmul_2048_f32|"),
            "conv_f32": best("conv2d_f32"), "conv_bf16": best("conv2d_bf16", "conv2d_f32"),
            "bw": best("stream_triad|")}


def floor_of(tern_runs, bf16, pv):
    """(floor seconds, arithmetic text) for one row from tern's counted work."""
    mm, conv = med(tern_runs, "matmul_flops"), med(tern_runs, "conv_flops")
    # The 1x1 convolutions are GEMMs (no convolution algorithm multiplies less): the matmul peak.
    conv_1x1 = min(med(tern_runs, "conv_1x1_flops") or 0, conv or 0)
    nbytes = (med(tern_runs, "optimizer_bytes") or 0) + (med(tern_runs, "norm_bytes") or 0)
    d = "bf16" if bf16 else "f32"
    pm, pc, bw = pv[f"mm_{d}"], pv[f"conv_{d}"] or pv[f"mm_{d}"], pv["bw"]
    if mm is None or not pm or not bw:
        return None, ""
    parts, total = [], 0.0
    if mm:
        total += mm / (pm * 1e9)
        parts.append(f"{mm / 1e9:.3g} GFLOP / {pm:.0f} GFLOP/s")
    if conv and conv > conv_1x1:
        total += (conv - conv_1x1) / (pc * 1e9)
        parts.append(f"{(conv - conv_1x1) / 1e9:.3g} GFLOP / {pc:.0f} GFLOP/s (conv)")
    if conv_1x1:
        total += conv_1x1 / (pm * 1e9)
        parts.append(f"{conv_1x1 / 1e9:.3g} GFLOP / {pm:.0f} GFLOP/s (1x1 conv)")
    if nbytes:
        total += nbytes / (bw * 1e9)
        parts.append(f"{nbytes / 1e6:.3g} MB / {bw:.1f} GB/s")
    return total, " + ".join(parts) + f" = {fmt_s(total)}"


def fmt_s(v):
    if v is None:
        return "n/a"
    if v >= 1:
        return f"{v:.2f} s"
    if v >= 1e-3:
        return f"{v * 1e3:.1f} ms"
    return f"{v * 1e6:.0f} us"


def train_rows(results, only, pv):
    rows = []
    for rid, flag, prec, kind, desc in TRAIN_ROWS:
        if only and rid.upper() not in only:
            continue
        key = "steady_seconds" if kind == "epoch" else "seconds"
        tern = ok_runs(results, rid, "tern")
        row = {"id": rid, "desc": desc, "kind": kind, "bf16": prec == "mixed_bfloat16", "tern": med(tern, key),
               "tern_first": med(tern, "first_step_seconds"), "tern_acc": med(tern, "test_accuracy"),
               "tern_rss": med(tern, "peak_rss_mb"), "tern_error": first_error(results, rid, "tern"),
               "peers": {}, "notes": []}
        for side, label in PEERS:
            runs = ok_runs(results, rid, side)
            t = med(runs, key)
            if side == "torch":
                cl = ok_runs(results, rid, "torch_cl")
                t_cl = med(cl, key)
                if t_cl is not None and (t is None or t_cl < t):
                    runs, t = cl, t_cl
                    row["notes"].append("torch eager: channels_last")
            row["peers"][side] = {"time": t, "first": med(runs, "first_step_seconds"),
                                  "acc": med(runs, "test_accuracy"), "rss": med(runs, "peak_rss_mb"),
                                  "error": first_error(results, rid, side) if t is None else ""}
        timed = [(v["time"], s) for s, v in row["peers"].items() if v["time"]]
        row["fastest"] = min(timed) if timed else (None, None)
        row["ratio"] = row["fastest"][0] / row["tern"] if row["tern"] and row["fastest"][0] else None
        row["floor"], row["floor_text"] = floor_of(tern, row["bf16"], pv) if tern else (None, "")
        row["fraction"] = row["floor"] / row["tern"] if row["floor"] and row["tern"] else None
        rows.append(row)
    return rows


def infer_rows(results, only, pv):
    rows = []
    for rid, flag, batch, desc in INFER_ROWS:
        if only and rid.upper() not in only:
            continue
        tern = ok_runs(results, rid, "tern")
        key = "p50_seconds" if batch == 1 else "rows_per_second"
        row = {"id": rid, "desc": desc, "batch": batch, "tern": med(tern, key), "tern_p99": med(tern, "p99_seconds"),
               "tern_error": first_error(results, rid, "tern"), "peers": {}, "notes": []}
        for side, _ in INFER_PEERS:
            runs = ok_runs(results, rid, side)
            v = med(runs, key)
            if side == "torch":
                cl = ok_runs(results, rid, "torch_cl")
                v_cl = med(cl, key)
                better = (lambda x, y: x < y) if batch == 1 else (lambda x, y: x > y)
                if v_cl is not None and (v is None or better(v_cl, v)):
                    runs, v = cl, v_cl
                    row["notes"].append("torch eager: channels_last")
            row["peers"][side] = {"value": v, "p99": med(runs, "p99_seconds"),
                                  "error": first_error(results, rid, side) if v is None else ""}
        vals = [(v["value"], s) for s, v in row["peers"].items() if v["value"]]
        if batch == 1:
            best = min(vals) if vals else (None, None)
            row["ratio"] = best[0] / row["tern"] if best[0] and row["tern"] else None
            ort = row["peers"]["ort"]["value"]
            row["ratio_ort"] = ort / row["tern"] if ort and row["tern"] else None
        else:
            best = max(vals) if vals else (None, None)
            row["ratio"] = row["tern"] / best[0] if best[0] and row["tern"] else None
            ort = row["peers"]["ort"]["value"]
            row["ratio_ort"] = row["tern"] / ort if ort and row["tern"] else None
        row["fastest"] = best
        row["floor"], row["floor_text"] = floor_of(tern, False, pv) if tern else (None, "")
        per_call = row["tern"] if batch == 1 else (batch / row["tern"] if row["tern"] else None)
        row["fraction"] = row["floor"] / per_call if row["floor"] and per_call else None
        rows.append(row)
    return rows


def met(v, goal):
    return "" if v is None else (" (met)" if v >= goal else " (not met)")


def format_tables(trows, irows, peaks, pv):
    label = dict(INFER_PEERS)
    out = []
    if trows:
        out += ["| workload | tern | " + " | ".join(l for _, l in PEERS) +
                " | fastest peer / tern | goal | floor | tern % of floor | notes |",
                "|---|---|" + "---|" * len(PEERS) + "---|---|---|---|---|"]
        for r in trows:
            unit = "/epoch" if r["kind"] == "epoch" else "/step"
            cells = []
            for side, _ in PEERS:
                v = r["peers"][side]
                cells.append(fmt_s(v["time"]) if v["time"] else ("failed" if v["error"] else "n/a"))
            goal = GOAL_PEER_BF16 if r["bf16"] else GOAL_PEER
            ratio = f"{r['ratio']:.2f}x vs {label[r['fastest'][1]]}{met(r['ratio'], goal)}" if r["ratio"] else "n/a"
            frac = f"{100 * r['fraction']:.0f}%{met(r['fraction'], GOAL_FLOOR)}" if r["fraction"] else "n/a"
            notes = list(r["notes"])
            if r["tern_error"]:
                notes.append("tern: " + r["tern_error"][:80])
            for side, l in PEERS:
                if r["peers"][side]["error"]:
                    notes.append(f"{l}: {r['peers'][side]['error'][:80]}")
            out.append(f"| {r['id']}: {r['desc']} | {fmt_s(r['tern'])}{unit} | " + " | ".join(cells) +
                       f" | {ratio} | >= {goal:.1f}x, >= {100 * GOAL_FLOOR:.0f}% | {fmt_s(r['floor'])} | {frac} | "
                       f"{'; '.join(notes)} |")
        out += ["", "Floors (per epoch or per step, from the work tern's compiled step does; bf16 rows at the "
                "bf16 rates):", ""]
        out += [f"- {r['id']}: {r['floor_text'] or 'n/a'}" for r in trows]
        epochs = [r for r in trows if r["kind"] == "epoch"]
        if epochs:
            out += ["", "Epoch rows: first step (tracing / compilation, first touch) and whole epoch, medians; "
                    "the table compares the steady part after the first step.", "",
                    "| workload | tern | " + " | ".join(l for _, l in PEERS) + " |", "|---|---|" + "---|" * len(PEERS)]
            for r in epochs:
                cells = [f"{fmt_s(r['peers'][s]['first'])}" for s, _ in PEERS]
                out.append(f"| {r['id']} first step | {fmt_s(r['tern_first'])} | " + " | ".join(cells) + " |")
            out += ["", "Convergence: test accuracy after the epoch (same data order; goal: tern within "
                    "0.5 pt of the best peer).", "",
                    "| workload | tern | " + " | ".join(l for _, l in PEERS) + " | tern - best peer |",
                    "|---|---|" + "---|" * len(PEERS) + "---|"]
            for r in epochs:
                accs = [r["peers"][s]["acc"] for s, _ in PEERS]
                best = max((x for x in accs if x is not None), default=None)
                d = f"{100 * (r['tern_acc'] - best):+.2f} pt" if best is not None and r["tern_acc"] is not None else "n/a"
                if best is not None and r["tern_acc"] is not None:
                    d += " (met)" if r["tern_acc"] >= best - 0.005 else " (not met)"
                cells = [f"{x:.4f}" if x is not None else "n/a" for x in accs]
                tacc = f"{r['tern_acc']:.4f}" if r["tern_acc"] is not None else "n/a"
                out.append(f"| {r['id']} | {tacc} | " + " | ".join(cells) + f" | {d} |")
        rss = [r for r in trows if r["id"] in ("W4", "W5") and r["tern_rss"] and r["fastest"][1]]
        if rss:
            out += ["", "| W7: peak RSS (whole process, ru_maxrss) | tern | fastest peer | tern / peer | goal |",
                    "|---|---|---|---|---|"]
            for r in rss:
                p = r["peers"][r["fastest"][1]]["rss"]
                if p:
                    q = r["tern_rss"] / p
                    out.append(f"| {r['id']} | {r['tern_rss']:.0f} MB | {p:.0f} MB ({label[r['fastest'][1]]}) | "
                               f"{q:.2f}x{' (met)' if q <= 0.8 else ' (not met)'} | <= 0.8x |")
    if irows:
        out += ["", "Inference (in-process, f32; batch 1: p50 latency, p99 in brackets, over the calls; batch 256: "
                "rows per second). Goal: >= 1.0x onnxruntime. The floor is per call (the forward pass's FLOPs "
                "and batch-norm bytes at the machine's rates).", "",
                "| workload | tern | " + " | ".join(l for _, l in INFER_PEERS) +
                " | fastest peer / tern | vs ORT | floor per call | tern % of floor |",
                "|---|---|" + "---|" * len(INFER_PEERS) + "---|---|---|---|"]
        for r in irows:
            def cell(v, p99):
                if v is None:
                    return "n/a"
                return f"{fmt_s(v)} ({fmt_s(p99)})" if r["batch"] == 1 else f"{v:.0f}/s"
            cells = [cell(r["peers"][s]["value"], r["peers"][s]["p99"]) if r["peers"][s]["value"] else
                     ("failed" if r["peers"][s]["error"] else "n/a") for s, _ in INFER_PEERS]
            ratio = f"{r['ratio']:.2f}x vs {label[r['fastest'][1]]}" if r["ratio"] else "n/a"
            ort = f"{r['ratio_ort']:.2f}x{met(r['ratio_ort'], GOAL_ORT)}" if r["ratio_ort"] else "n/a"
            frac = f"{100 * r['fraction']:.0f}%" if r["fraction"] else "n/a"
            out.append(f"| {r['id']}: {r['desc']} | {cell(r['tern'], r['tern_p99'])} | " + " | ".join(cells) +
                       f" | {ratio} | {ort} | {fmt_s(r['floor'])} | {frac} |")
        errs = [f"{r['id']} {label[s]}: {r['peers'][s]['error'][:100]}" for r in irows for s, _ in INFER_PEERS
                if r["peers"][s]["error"]]
        out += [""] + [f"- {r['id']} floor per call: {r['floor_text'] or 'n/a'}" for r in irows]
        if errs:
            out += [""] + [f"- failed: {e}" for e in errs]
    out += ["", "| machine rate (bench/ops_bench; best run) | tern | PyTorch |", "|---|---|---|"]
    for name, unit in (("matmul_2048_f32", "GFLOP/s"), ("matmul_2048_bf16", "GFLOP/s"), ("stream_triad", "GB/s")):
        t, p = peaks.get(f"{name}|tern"), peaks.get(f"{name}|torch")
        out.append(f"| W8: {name} | {max(t):.0f} {unit} (median {statistics.median(t):.0f}) | " +
                   (f"{max(p):.0f} {unit} (median {statistics.median(p):.0f}) |" if p else "|") if t else
                   f"| W8: {name} | n/a | |")
    for d in ("f32", "bf16"):
        v = pv[f"conv_{d}"]
        out.append(f"| convolution peak {d} (best of ops_bench's conv2d_{d} rows, nominal FLOPs) | "
                   f"{v:.0f} GFLOP/s | |" if v else f"| convolution peak {d} | n/a | |")
    return "\n".join(out)


def replace_section(path, section):
    """The suite's section between its markers; everything else in the file byte for byte. A file
    without the markers gets the section at its top."""
    block = f"{BEGIN}\n{section.rstrip()}\n{END}\n"
    old = open(path).read() if os.path.exists(path) else ""
    if BEGIN in old and END in old and old.index(BEGIN) < old.index(END):
        i, j = old.index(BEGIN), old.index(END) + len(END)
        if old[j:j + 1] == "\n":
            j += 1
        new = old[:i] + block + old[j:]
    elif BEGIN in old or END in old:
        raise SystemExit(f"run_suite.py: {path} has only one of {BEGIN} / {END}: fix the file by hand")
    else:
        new = block + ("\n" + old if old else "")
    with open(path, "w") as f:
        f.write(new)


def write_markdown(a, info, tables, elapsed):
    notes_path = os.path.join(ROOT, "bench", "benchmarks_notes.md")
    notes = open(notes_path).read() if os.path.exists(notes_path) else ""
    cmd = info.get("command", "bench/run_suite.py")
    v = info.get("versions", {})
    peers = (f"TensorFlow {v.get('tensorflow', '?')} (Keras {v.get('keras', '?')}), PyTorch {v.get('torch', '?')} "
             f"(torchvision {v.get('torchvision', '?')}; {v.get('torch_build', 'PyPI')}), onnxruntime "
             f"{v.get('onnxruntime', '?')} (onnx {v.get('onnx', '?')}), numpy {v.get('numpy', '?')}, Python "
             f"{v.get('python', '?')}: bench/peers-requirements.txt, installed by bench/setup-peers.sh")
    calib = info.get("tf_calibration")
    calib_text = " (given with --tf-threads)"
    if calib:
        per = {}
        for k, t in calib.items():
            setting, flag = k.rsplit(",", 1)
            per.setdefault(setting.replace(",", "/"), []).append(f"{flag.upper()} {fmt_s(t)}")
        calib_text = (", the best of a calibration (intra/inter: W2 cut to 100 steps, 5 W4 steps): " +
                      "; ".join(f"{s} {', '.join(v)}" for s, v in per.items()))
    fsc = info.get("first_step_check")
    fsc_text = "not run in this measurement"
    if fsc:
        fsc_text = (f"`{fsc['command']}` (exit {fsc['exit']}):\n\n```\n{fsc['output']}\n```")
    epoch_note = f" Epoch rows cut to {a.epoch_steps} steps (a check of the suite, not a result)." if a.epoch_steps else ""
    text = f"""# Benchmarks: tern vs TensorFlow, PyTorch and onnxruntime on the same CPU

Generated by `{cmd}` (bench/run_suite.py) on {datetime.date.today().isoformat()} in {elapsed / 60:.1f} minutes.

- Machine: {info['cpu']}, {info['cores']} cores ({info['isa']}), Linux {info['kernel']}; 1-minute load
  average {info.get('load_before', 0):.1f} before and {info.get('load_after', 0):.1f} after the run (the machine is shared)
- Peers: {peers}
- Threads: tern and PyTorch at {info['cores']} intra-op threads; TensorFlow at intra-op
  {info['tf_threads'][0]}, inter-op {info['tf_threads'][1]}{calib_text}
- Median of {a.repeats} interleaved runs, each in a fresh process; step rows time {a.steps} steps after
  {a.warmup} warmup steps.{epoch_note}
- Same work: {fsc_text}

{tables}

{notes}"""
    replace_section(a.output, text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--python", default=os.environ.get("TERN_PEERS_PYTHON",
                                                       os.path.join(ROOT, ".venv-peers", "bin", "python")))
    ap.add_argument("--tf-threads", default="auto")
    ap.add_argument("--epoch-steps", type=int, default=0)
    ap.add_argument("--infer-calls", type=int, default=1000)
    ap.add_argument("--no-first-step-check", action="store_true")
    ap.add_argument("--output", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    if a.repeats < 1 or a.steps < 1 or a.warmup < 0 or a.epoch_steps < 0 or a.infer_calls < 1:
        ap.error("--repeats, --steps and --infer-calls must be >= 1, --warmup and --epoch-steps >= 0")
    if a.tf_threads != "auto":
        try:
            a.tf_intra, a.tf_inter = (int(x) for x in a.tf_threads.split(","))
        except ValueError:
            ap.error(f"--tf-threads takes auto or INTRA,INTER (got '{a.tf_threads}')")
    selected(a)
    build = os.path.abspath(a.build_dir)
    env = dict(os.environ)
    raw_path = os.path.join(build, "bench_raw.json")
    if a.report_only:
        if not os.path.exists(raw_path):
            ap.error(f"--report-only: {raw_path} does not exist (run the suite first)")
        with open(raw_path) as f:
            raw = json.load(f)
        if raw.get("format") != 2:
            ap.error(f"--report-only: {raw_path} was written by the previous suite (no peer configurations)")
        info, elapsed, peaks, results = raw["info"], raw["elapsed"], raw["peaks"], raw["results"]
        for k in ("repeats", "steps", "warmup", "epoch_steps"):
            setattr(a, k, raw[k])
        only = set(raw["only"])
    else:
        if not os.access(a.python, os.X_OK):
            print(f"run_suite.py: the peers' python {a.python} is missing: run bench/setup-peers.sh "
                  "(`make bench` does)", file=sys.stderr)
            return 2
        for b in ("workloads_bench", "ops_bench"):
            if not os.access(os.path.join(build, "bench", b), os.X_OK):
                print(f"run_suite.py: {build}/bench/{b} is missing: cmake --build {a.build_dir} --target "
                      "workloads_bench ops_bench", file=sys.stderr)
                return 2
        started = time.time()
        info, peaks, results, only = measure(a, build, env)
        elapsed = time.time() - started
        with open(raw_path, "w") as f:
            json.dump({"format": 2, "info": info, "elapsed": elapsed, "repeats": a.repeats, "steps": a.steps,
                       "warmup": a.warmup, "epoch_steps": a.epoch_steps, "only": sorted(only), "peaks": peaks,
                       "results": results}, f, indent=1)
    pv = peak_values(peaks)
    trows, irows = train_rows(results, only, pv), infer_rows(results, only, pv)
    tables = format_tables(trows, irows, peaks, pv)
    print(tables)
    write_markdown(a, info, tables, elapsed)
    log(f"wrote the suite's section of {a.output} ({elapsed / 60:.1f} min)")
    measured = any("error" not in x for v in results.values() for x in v)
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
