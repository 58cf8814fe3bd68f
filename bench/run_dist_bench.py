#!/usr/bin/env python3
"""`make bench-dist`: data-parallel scaling of tern against PyTorch DDP on this machine.

Runs, interleaved, --repeats times (medians reported), weak scaling (each worker keeps the
workload's batch: W3 128, W4 32), one intra-op thread per worker:
  tern     build/bench/dist_workloads_bench at 1 worker (no mpirun, pinned to core 0) and at 2
           workers (mpirun -np 2 --bind-to core), reduction deterministic and fast;
  control  two plain 1-worker tern processes at once, pinned to cores 0 and 1 (taskset): what
           two busy cores do to one worker without any communication (this machine's ceiling);
  PyTorch  bench/ddp_torch.py (DDP, gloo) at world sizes 1 and 2, /usr/bin/python3 (it pins
           each worker to a core of its own);
then build/bench/allreduce_bench (2 ranks) at 4 KiB, 1, 25 and 100 MiB. Writes the
"Data-parallel scaling" section of BENCHMARKS.md (between <!-- dist-bench:begin --> and
<!-- dist-bench:end -->, placed before the serving section when new), the raw results, the
Chrome traces of the traced steps and measured.json (bench/scaling_model.py's input) under
--out-dir, copies measured.json to bench/dist_measured.json and runs bench/scaling_model.py
--json bench/dist_measured.json --write-doc docs/distributed_scaling.md.

Before each run it waits (up to --quiet-timeout s) until the machine's CPUs are idle, and it
records the share of CPU time that other processes used while the run went on; a run during which
others used more than --others-limit is made again (--attempts in all, the last one kept).

Usage: bench/run_dist_bench.py [--build-dir build] [--repeats 5] [--quick] [--skip-torch]
                               [--mpirun-args "--mca mpi_yield_when_idle 1"] [--bucket-mb 25]
                               [--out-dir runs/dist_bench] [--output BENCHMARKS.md] [--no-write]
                               [--from-results runs/dist_bench/results.json]
"""
import argparse
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- dist-bench:begin -->", "<!-- dist-bench:end -->"
SERVE_BEGIN = "<!-- serve-bench:begin -->"
TORCH_PYTHON = "/usr/bin/python3"
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
GOAL_SPEEDUP = 1.85
GOAL_FAST, GOAL_DET = 0.9, 0.6
ALLREDUCE_MIB = [4 / 1024, 1, 25, 100]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --- the machine's CPU: idle waits and others' share ---

def cpu_jiffies():
    """(busy, total) jiffies of all CPUs."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    total = sum(v[:8])
    return total - idle, total


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def busy_share(seconds=1.0):
    b0, t0 = cpu_jiffies()
    time.sleep(seconds)
    b1, t1 = cpu_jiffies()
    return (b1 - b0) / max(t1 - t0, 1)


def wait_quiet(limit, timeout):
    """Waits until a 1-second sample shows the CPUs busy less than `limit`; returns the last share."""
    deadline = time.time() + timeout
    share = busy_share()
    while share > limit and time.time() < deadline:
        share = busy_share()
    return share


def load1():
    return float(open("/proc/loadavg").read().split()[0])


def run_measured(cmds, a, env=None):
    """run_once, again (up to --attempts times in all) while others used more than --others-limit
    of the CPUs during the run; the last attempt's result and how many were made."""
    for attempt in range(1, a.attempts + 1):
        outs, meta = run_once(cmds, a, env)
        if meta["others_cpu_share"] <= a.others_limit or attempt == a.attempts:
            return outs, dict(meta, attempts=attempt)
        log(f"  others used {meta['others_cpu_share']:.0%} of the CPUs during the run: again")


def run_once(cmds, a, env=None):
    """Runs the commands at once (after a quiet wait); returns (stdouts, others' CPU share, load)."""
    idle = wait_quiet(a.quiet_limit, a.quiet_timeout)
    load = load1()
    hz = os.sysconf("SC_CLK_TCK")
    ncpu = os.cpu_count()
    b0, _ = cpu_jiffies()
    c0, w0 = children_cpu(), time.time()
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, **(env or {})), cwd=ROOT) for c in cmds]
    outs = []
    for c, p in zip(cmds, procs):
        out, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"{shlex.join(c)} exited {p.returncode}:\n{err[-3000:]}")
        outs.append(out)
    b1, _ = cpu_jiffies()
    wall = time.time() - w0
    others = max(0.0, ((b1 - b0) / hz - (children_cpu() - c0)) / (wall * ncpu))
    return outs, {"others_cpu_share": round(others, 4), "idle_wait_share": round(idle, 4), "load1": load}


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in:\n" + text[-2000:])


# --- the runs ---

class Runner:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build_dir)
        self.bench = os.path.join(self.build, "bench/dist_workloads_bench")
        self.commands = {}  # kind -> one example command line

    def steps(self, w):
        if self.a.quick:
            return {"w3": (20, 3), "w4": (4, 2)}[w]
        # W3: 200 of the 234 batches a rank's half of Fashion-MNIST gives (one epoch; 100 steps
        # moved the median by several points between runs), W4 20 steps of ~0.6 s.
        return {"w3": (200, 20), "w4": (20, 3)}[w]

    def tern_args(self, w, reduction=None, trace=None):
        steps, warmup = self.steps(w)
        args = [self.bench, "--workload", w, "--steps", str(steps), "--warmup", str(warmup),
                "--threads", "1", "--trace-steps", "3"]
        if reduction:
            args += ["--reduction", reduction, "--bucket-mb", str(self.a.bucket_mb)]
        if trace:
            args += ["--trace", trace]
        return args

    def record(self, kind, cmds):
        self.commands[kind] = " & ".join(shlex.join(c) for c in cmds)

    def tern(self, w, workers, reduction=None):
        trace = os.path.join(self.a.out_dir, f"trace_{w}_{workers}w_{reduction or 'single'}.json")
        args = self.tern_args(w, reduction, trace)
        if workers > 1:
            args = ["mpirun", "-np", str(workers), "--bind-to", "core"] + \
                shlex.split(self.a.mpirun_args) + args
        else:  # pinned like a rank of mpirun --bind-to core and like ddp_torch.py's workers
            args = ["taskset", "-c", "0"] + args
        self.record(f"{w}: tern {workers} worker{'s' if workers > 1 else ''} {reduction or ''}".strip(), [args])
        outs, meta = run_measured([args], self.a, MPI_ENV)
        return dict(last_json(outs[0]), **meta)

    def independent(self, w):
        """Two 1-worker processes at once, one per core."""
        cmds = [["taskset", "-c", str(core)] + self.tern_args(w) for core in (0, 1)]
        self.record(f"{w}: tern 2 independent processes", cmds)
        outs, meta = run_measured(cmds, self.a)
        rs = [last_json(o) for o in outs]
        return dict(rs[0], samples_per_second=sum(r["samples_per_second"] for r in rs),
                    workers=2, each=[r["samples_per_second"] for r in rs], **meta)

    def torch(self, w, world):
        steps, warmup = self.steps(w)
        args = [TORCH_PYTHON, "-B", os.path.join(ROOT, "bench/ddp_torch.py"), "--workload", w,
                "--world-size", str(world), "--threads", "1", "--steps", str(steps),
                "--warmup", str(warmup)]
        self.record(f"{w}: PyTorch {world} worker{'s' if world > 1 else ''}", [args])
        outs, meta = run_measured([args], self.a)
        return dict(last_json(outs[0]), **meta)

    def allreduce(self):
        path = os.path.join(self.a.out_dir, "allreduce.json")
        args = ["mpirun", "-np", "2", "--bind-to", "core"] + shlex.split(self.a.mpirun_args) + [
            os.path.join(self.build, "bench/allreduce_bench"), "--sizes-mib",
            ",".join(f"{m:g}" for m in ALLREDUCE_MIB), "--repeats", "5" if self.a.quick else "20",
            "--json", path]
        self.record("all-reduce (tern)", [args])
        outs, meta = run_measured([args], self.a, MPI_ENV)
        log(outs[0])
        return dict(json.load(open(path)), **meta)

    def torch_allreduce(self):
        args = [TORCH_PYTHON, "-B", os.path.join(ROOT, "bench/ddp_torch.py"), "--allreduce",
                "--world-size", "2", "--bytes",
                ",".join(str(int(m * (1 << 20))) for m in ALLREDUCE_MIB)]
        self.record("all-reduce (gloo)", [args])
        outs, meta = run_measured([args], self.a)
        return [json.loads(l) for l in outs[0].splitlines() if l.startswith("{")]


def median_run(runs, key="samples_per_second"):
    """The run with the median `key` (the lower middle one for an even count), and the spread."""
    s = sorted(runs, key=lambda r: r[key])
    m = dict(s[(len(s) - 1) // 2])
    m["runs"] = [r[key] for r in runs]
    m["others_cpu_share_max"] = max(r["others_cpu_share"] for r in runs)
    m["load1_max"] = max(r["load1"] for r in runs)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "runs/dist_bench"))
    ap.add_argument("--output", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="few steps, one repeat: a smoke run")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--mpirun-args", default="", help="extra mpirun arguments (e.g. --mca ...)")
    ap.add_argument("--bucket-mb", type=float, default=25)
    ap.add_argument("--quiet-limit", type=float, default=0.15,
                    help="wait before each run until the CPUs are busier than this less (0..1)")
    ap.add_argument("--quiet-timeout", type=float, default=60)
    ap.add_argument("--others-limit", type=float, default=0.05,
                    help="run again when others used more than this share of the CPUs during a run")
    ap.add_argument("--attempts", type=int, default=3)
    ap.add_argument("--workloads", default="w3,w4")
    ap.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md and docs/")
    ap.add_argument("--from-results", metavar="RESULTS_JSON",
                    help="run nothing: write the outputs from an earlier run's results.json")
    a = ap.parse_args()
    if a.quick:
        a.repeats = 1
        a.attempts = 1
    a.out_dir = os.path.abspath(a.out_dir)
    os.makedirs(a.out_dir, exist_ok=True)
    if a.from_results:  # rewrite the outputs from an earlier run's results.json, running nothing
        with open(a.from_results) as f:
            results = json.load(f)
        a.quick = results["quick"]
        return write_outputs(a, results)
    torch_script = os.path.join(ROOT, "bench/ddp_torch.py")
    have_torch = not a.skip_torch and os.path.exists(torch_script)
    if not a.skip_torch and not have_torch:
        log("bench/ddp_torch.py is not in this tree: PyTorch DDP runs are left out")
    r = Runner(a)
    started = time.time()
    load_before = load1()
    workloads = a.workloads.split(",")
    raw = {w: {} for w in workloads}
    for rep in range(a.repeats):
        for w in workloads:
            plan = [("tern 1w", lambda: r.tern(w, 1)),
                    ("tern 2w deterministic", lambda: r.tern(w, 2, "deterministic")),
                    ("tern 2w fast", lambda: r.tern(w, 2, "fast")),
                    ("tern 2x independent", lambda: r.independent(w))]
            if have_torch:
                plan += [("torch 1w", lambda: r.torch(w, 1)), ("torch 2w", lambda: r.torch(w, 2))]
            for name, fn in plan:
                res = fn()
                log(f"[{time.time() - started:6.0f} s] repeat {rep + 1} {w} {name}: "
                    f"{res['samples_per_second']:.1f} samples/s (others' CPU {res['others_cpu_share']:.0%}, "
                    f"load {res['load1']:.2f})")
                raw[w].setdefault(name, []).append(res)
    ar = r.allreduce()
    gloo = r.torch_allreduce() if have_torch else None
    load_after = load1()
    results = {"workloads": {w: {k: median_run(v) for k, v in raw[w].items()} for w in workloads},
               "raw": raw, "allreduce": ar, "gloo_allreduce": gloo, "commands": r.commands,
               "load_before": load_before, "load_after": load_after,
               "minutes": (time.time() - started) / 60, "quick": a.quick, "repeats": a.repeats,
               "mpirun_args": a.mpirun_args, "bucket_mb": a.bucket_mb, "machine": machine(),
               "date": time.strftime("%Y-%m-%d")}
    with open(os.path.join(a.out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_outputs(a, results)


def write_outputs(a, results):
    """measured.json, the section (printed, and written into --output), scaling_model.py's doc."""
    measured = measured_json(results)
    measured_path = os.path.join(a.out_dir, "measured.json")
    with open(measured_path, "w") as f:
        json.dump(measured, f, indent=1)
    text = report(a, results)
    print(text)
    if a.no_write:
        return
    write_section(a.output, text)
    # The committed copy docs/distributed_scaling.md is generated from.
    committed = os.path.join(ROOT, "bench/dist_measured.json")
    with open(committed, "w") as f:
        json.dump(measured, f, indent=1)
        f.write("\n")
    model = os.path.join(ROOT, "bench/scaling_model.py")
    if os.path.exists(model):
        subprocess.run([sys.executable, model, "--json", os.path.relpath(committed, ROOT),
                        "--write-doc", "docs/distributed_scaling.md"], check=True, cwd=ROOT)
    else:
        log("bench/scaling_model.py is not in this tree: docs/distributed_scaling.md not written; "
            f"run `bench/scaling_model.py --json {measured_path} --write-doc "
            "docs/distributed_scaling.md` once it is")


def machine():
    model, cpus = "?", os.cpu_count()
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return {"cpu": model, "cpus": cpus, "kernel": platform.release(), "mpi": mpi}


# --- outputs ---

def measured_json(res):
    """bench/scaling_model.py's input, from tern's deterministic 2-worker runs."""
    out = {"source": f"tern, bench/run_dist_bench.py on {res['machine']['cpu']} x {res['machine']['cpus']} "
                     f"cores, {res.get('date', '?')}: 2 workers x 1 thread, deterministic reduction; "
                     "compute = 1-worker median step, backward = its traced grad/ ops; no "
                     "overlap_fraction (the model's default applies): hidden_seconds_2 is bounded by "
                     "this machine's all-reduce time, not by the backward pass"}
    rows = {(x["size_mib"], x["mode"]): x for x in res["allreduce"]["results"]}
    big, small = rows.get((100, "deterministic")), rows.get((ALLREDUCE_MIB[0], "deterministic"))
    if big and small:
        n = res["allreduce"]["ranks"]
        out["allreduce"] = {"bus_bytes_per_second": big["busbw_bytes_per_s"],
                            "latency_seconds": small["median_s"] / (2 * (n - 1)), "workers": n}
    for w, runs in res["workloads"].items():
        one, two = runs.get("tern 1w"), runs.get("tern 2w deterministic")
        ind = runs.get("tern 2x independent")
        if not one or not two:
            continue
        backward = (one.get("trace") or {}).get("backward_seconds_per_step", 0)
        hidden = two["allreduce_seconds_per_step"] - two["exposed_seconds_per_step"]
        # No overlap_fraction: the time tern hid here is bounded by the all-reduce itself (and the
        # last bucket only starts when backward ends), so it does not identify the model's f.
        entry = {"compute_seconds": one["step_seconds"], "backward_seconds": backward,
                 "grad_bytes": two["grad_bytes_per_step"], "batch_per_worker": one["batch_per_worker"],
                 "measured_efficiency_2": two["samples_per_second"] / (2 * one["samples_per_second"]),
                 "allreduce_seconds_2": two["allreduce_seconds_per_step"],
                 "hidden_seconds_2": hidden}
        if ind:
            entry["independent_efficiency_2"] = ind["samples_per_second"] / (2 * one["samples_per_second"])
        out[w] = entry
    return out


def met(ok):
    return "goal met" if ok else "goal not met"


def report(a, res):
    m = res["machine"]
    W = {"w3": "W3 CNN, Fashion-MNIST, Adam, batch 128/worker",
         "w4": "W4 ResNet-18, synthetic 32x32, SGD momentum, batch 32/worker"}
    def timed(w):  # (steps, warmup) as the runs reported them
        run = res["raw"].get(w, {}).get("tern 1w", [{}])[0]
        if "steps" in run and "warmup" in run:
            return run["steps"], run["warmup"]
        return Runner(a).steps(w)
    w3_steps, w4_steps = timed("w3"), timed("w4")

    def per_repeat(w, name):  # efficiency of each repeat against the same repeat's 1 worker
        ones, twos = res["raw"][w]["tern 1w"], res["raw"][w][name]
        return ", ".join(f"{t['samples_per_second'] / (2 * o['samples_per_second']):.1%}"
                         for o, t in zip(ones, twos))
    lines = [BEGIN, "## Data-parallel scaling: tern (MPI) against PyTorch DDP (gloo)", "",
             f"Generated by `make bench-dist` (bench/run_dist_bench.py{' --quick' if a.quick else ''}"
             f"{' --mpirun-args ' + shlex.quote(res['mpirun_args']) if res['mpirun_args'] else ''}) on "
             f"{res.get('date', '?')} in {res['minutes']:.1f} minutes. Machine: {m['cpu']}, "
             f"{m['cpus']} cores, Linux {m['kernel']}, {m['mpi']}. 1-minute load average "
             f"{res['load_before']:.2f} before and {res['load_after']:.2f} after; the largest share of "
             f"the CPUs that other processes (and the hypervisor's steal) used during any run: "
             f"{max(r['others_cpu_share_max'] for ws in res['workloads'].values() for r in ws.values()):.0%}.",
             "",
             f"Weak scaling, one intra-op thread per worker, {res['repeats']} interleaved repeats "
             f"(median shown, every run in a fresh process). A step's time is rank 0's interval "
             f"between consecutive step ends (input, step, fit's per-step collectives); samples/s = "
             f"workers x batch / median step. W3 times {w3_steps[0]} steps after "
             f"{w3_steps[1]} warmup steps on each rank's shard, W4 "
             f"{w4_steps[0]} after {w4_steps[1]}. Efficiency = 2-worker "
             f"samples/s / (2 x 1-worker samples/s); goal >= {GOAL_SPEEDUP}x ({GOAL_SPEEDUP / 2:.1%}). "
             "\"2 independent\" is two 1-worker tern processes at once, one per core, no "
             "communication: the machine's own ceiling for two busy cores.", "",
             "| workload | run | 1 worker samples/s | 2 workers samples/s | speed-up | efficiency | "
             "goal | efficiency per repeat |",
             "|---|---|---|---|---|---|---|---|"]
    for w, runs in res["workloads"].items():
        one = runs["tern 1w"]["samples_per_second"]
        for name, label in (("tern 2w deterministic", "tern, deterministic"),
                            ("tern 2w fast", "tern, fast"),
                            ("tern 2x independent", "tern, 2 independent (control)")):
            two = runs[name]["samples_per_second"]
            goal = met(two / one >= GOAL_SPEEDUP) if "independent" not in name else "(ceiling)"
            lines.append(f"| {W[w]} | {label} | {one:.1f} | {two:.1f} | {two / one:.2f}x | "
                         f"{two / (2 * one):.1%} | {goal} | {per_repeat(w, name)} |")
        if "torch 1w" in runs:
            t1, t2 = runs["torch 1w"]["samples_per_second"], runs["torch 2w"]["samples_per_second"]
            lines.append(f"| {W[w]} | PyTorch DDP | {t1:.1f} | {t2:.1f} | {t2 / t1:.2f}x | "
                         f"{t2 / (2 * t1):.1%} | {met(t2 / t1 >= GOAL_SPEEDUP)} | |")
    if any("torch 1w" in runs for runs in res["workloads"].values()):
        lines += ["", "tern against PyTorch (samples/s ratio, tern / PyTorch, higher is better for "
                  "tern); goal: the 2-worker ratio at least the 1-worker ratio.", "",
                  "| workload | 1 worker | 2 workers, deterministic | 2 workers, fast | goal |",
                  "|---|---|---|---|---|"]
        for w, runs in res["workloads"].items():
            if "torch 1w" not in runs:
                continue
            r1 = runs["tern 1w"]["samples_per_second"] / runs["torch 1w"]["samples_per_second"]
            rd = runs["tern 2w deterministic"]["samples_per_second"] / runs["torch 2w"]["samples_per_second"]
            rf = runs["tern 2w fast"]["samples_per_second"] / runs["torch 2w"]["samples_per_second"]
            lines.append(f"| {w.upper()} | {r1:.2f}x | {rd:.2f}x | {rf:.2f}x | deterministic "
                         f"{met(rd >= r1)}, fast {met(rf >= r1)} |")
    else:
        lines += ["", "PyTorch DDP was not run (bench/ddp_torch.py missing or --skip-torch)."]
    lines += ["", "Where a 2-worker step's time goes (tern, rank 0, per step). Stats: the gradient "
              "reducer's counters over the timed steps (all-reduce = time on the comm thread, exposed "
              "= time the step blocked in all_reduce_wait). Trace: the 3 traced steps after them, the "
              "comm thread's all-reduce scopes against the main thread's ops: under compute (hidden), "
              "inside all_reduce_start (the comm thread, just woken, preempted the main thread on their "
              "shared core), under all_reduce_wait (exposed). CPU: each thread's schedstat; run-queue = "
              "runnable but waiting for the core.", "",
              "| workload | reduction | step (1 worker) | all-reduce | exposed | hidden, stats | "
              "trace: not waited on / under compute / inside start / waited on | grad MB / buckets | "
              "main thread CPU (1 worker) / run-queue | comm thread CPU |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for w, runs in res["workloads"].items():
        one = runs["tern 1w"]
        one_cpu = one["threads_cpu"].get("main", {}).get("run_seconds_per_step", 0)
        for red in ("deterministic", "fast"):
            x = runs[f"tern 2w {red}"]
            th = x["threads_cpu"]
            mt, ct = th.get("main", {}), th.get("tern-allreduce", {})
            tr = x.get("trace", {})
            lines.append(
                f"| {w.upper()} | {red} | {x['step_seconds'] * 1e3:.1f} ms ({one['step_seconds'] * 1e3:.1f}) | "
                f"{x['allreduce_seconds_per_step'] * 1e3:.1f} ms | {x['exposed_seconds_per_step'] * 1e3:.1f} ms | "
                f"{x['hidden_fraction']:.0%} | {1 - tr.get('exposed_fraction', 0):.0%} / "
                f"{tr.get('hidden_fraction', 0):.0%} / {tr.get('in_start_fraction', 0):.0%} / "
                f"{tr.get('exposed_fraction', 0):.0%} | "
                f"{x['grad_bytes_per_step'] / 1e6:.1f} / {x['buckets']} | "
                f"{mt.get('run_seconds_per_step', 0) * 1e3:.1f} ms ({one_cpu * 1e3:.1f}) / "
                f"{mt.get('runqueue_seconds_per_step', 0) * 1e3:.1f} ms | "
                f"{ct.get('run_seconds_per_step', 0) * 1e3:.1f} ms |")
    lines += ["", "\"hidden, stats\" (1 - exposed / all-reduce) is to be compared with the trace's \"not "
              "waited on\" (taken on other steps, so they agree only roughly); the trace splits it into "
              "time truly under compute and time inside all_reduce_start. Overlap is in wall time: with "
              "one core per worker the comm thread runs on the core the compute needs, so no part of the "
              "all-reduce is free here. Traces (Perfetto / chrome://tracing): "
              f"`{os.path.relpath(a.out_dir, ROOT)}/trace_*.json`.", ""]
    ar = res["allreduce"]
    rows = {(x["size_mib"], x["mode"]): x for x in ar["results"]}
    lines += [f"All-reduce, f32, {ar['ranks']} ranks (bench/allreduce_bench, median of {ar['repeats']} "
              "repeats of the slowest rank; algorithm bandwidth = bytes / time). Fast mode *is* "
              "MPI_Allreduce in place, called through the Communicator (not separately timed: its "
              "ratio to MPI_Allreduce is 1 by construction, goal >= 0.9x met by design); the "
              f"deterministic goal is >= {GOAL_DET}x of it.", "",
              "| size | fast = MPI_Allreduce | deterministic | deterministic / fast | goal |"
              + (" gloo (PyTorch) |" if res.get("gloo_allreduce") else ""),
              "|---|---|---|---|---|" + ("---|" if res.get("gloo_allreduce") else "")]
    # bench/ddp_torch.py --allreduce lines: bytes and median seconds of gloo's all_reduce.
    gloo = {g.get("allreduce_bytes", g.get("bytes")): g.get("median_seconds", g.get("median_s"))
            for g in (res.get("gloo_allreduce") or [])}
    for mib in ALLREDUCE_MIB:
        f, d = rows[(mib, "fast")], rows[(mib, "deterministic")]
        size = f"{mib * 1024:g} KiB" if mib < 1 else f"{mib:g} MiB"
        ratio = d["algbw_bytes_per_s"] / f["algbw_bytes_per_s"]
        line = (f"| {size} | {f['median_s'] * 1e3:.3f} ms, {f['algbw_bytes_per_s'] / 1e9:.2f} GB/s | "
                f"{d['median_s'] * 1e3:.3f} ms, {d['algbw_bytes_per_s'] / 1e9:.2f} GB/s | {ratio:.2f}x | "
                f"{met(ratio >= GOAL_DET)} |")
        if gloo:
            g = gloo.get(int(mib * (1 << 20)))
            line += f" {g * 1e3:.3f} ms, {mib * (1 << 20) / g / 1e9:.2f} GB/s |" if g else " |"
        lines.append(line)
    lines += ["", "Commands (each run also writes one JSON line; raw results in "
              f"`{os.path.relpath(a.out_dir, ROOT)}/results.json`):", ""]
    for kind, cmd in res["commands"].items():
        lines.append(f"- {kind}: `{cmd.replace(ROOT + '/', '')}`")
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_section(path, text):
    old = open(path).read() if os.path.exists(path) else ""
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text + old[old.index(END) + len(END) + 1:]
    elif SERVE_BEGIN in old:
        i = old.index(SERVE_BEGIN)
        new = old[:i] + text + "\n" + old[i:]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    main()
