#!/usr/bin/python3
"""PyTorch DistributedDataParallel peer for tern's data-parallel benchmark: N worker processes on this
machine, gloo backend, DDP with its default buckets (bucket_cap_mb=25, first bucket 1 MiB), each
worker on its own data shard. One JSON line per run on stdout (--json also appends it to a file).

Workloads are bench/workloads_torch.py's models, imported from it:
  w3  the CNN on Fashion-MNIST, Adam lr 1e-3 eps 1e-7; each rank trains on the rank-strided shard
      train[rank::N], reshuffled per pass with seed + rank
  w4  ResNet-18 (CIFAR stem) on synthetic 32x32x3 data, SGD lr 0.01 momentum 0.9; each rank has four
      batches of its own random tensors (seed + rank), cycled as workloads_torch.py does
--world-size 1 is the denominator: plain training in one process, no process group and no DDP wrapper.
--independent runs N such plain processes side by side (no process group): the control that shows
what N busy cores do to one worker's speed on this machine without any communication.

Timing: rank 0 times every step (zero_grad, forward, backward, optimizer step) with perf_counter and
no barrier; the batch is sliced before the clock starts. DDP's backward returns only after every
bucket's all-reduce has finished, so the step time includes the communication that backward did not
hide. samples_per_second = N * B / median step time over the steps after the warmup. The forward /
backward / optimizer split is reported too (backward_seconds feeds bench/scaling_model.py).

Pinning: when N * T <= the cores this process may use, rank r is pinned to its own T cores
(os.sched_setaffinity); otherwise nothing is pinned. The "pinned_cores" key says which.

Shared machine: "other_cpu_share" is the share of all CPUs that processes other than this one and its
workers used during the run (/proc/stat minus getrusage), "steal_share" what the hypervisor took. A
run with other_cpu_share above a few percent measured someone else's build too; --scaling-inputs waits
for a quiet moment before each run and retries a disturbed one (kQuietShare, kAttempts).

Usage (Debian's torch: run with /usr/bin/python3, not the pyenv python3):
  ddp_torch.py --workload w3|w4 --world-size N [--threads T] [--batch-per-worker B] [--steps S]
               [--warmup W] [--seed S] [--independent] [--no-pin] [--json out.json]
  ddp_torch.py --allreduce --world-size N [--bytes 4096,1048576,26214400] [--json out.json]
      gloo all-reduce of a float32 buffer of each size, back to back; median time per call on rank 0
  ddp_torch.py --scaling-inputs measured.json [--repeats R] [--json runs.jsonl]
      the issue's comparison (W3 and W4, 1 worker x 1 thread vs 2 workers x 1 thread, per-worker batch
      fixed, plus the 2-process --independent control), R interleaved repeats, medians taken; then the
      2-rank all-reduce; written in bench/scaling_model.py's --json format. Each run's line goes to
      --json (default measured.json.runs); runs already there count, so a stopped measurement resumes
"""
import argparse
import json
import os
import resource
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads_torch  # noqa: E402  (needs the path above)

kWorkloadBatch = {"w3": 128, "w4": 32}
kDefaultAllreduceBytes = "4096,1048576,26214400"  # 4 KiB (latency), DDP's first bucket, a full bucket
kQuietShare = 0.05  # --scaling-inputs: a run during which others used more CPU than this is retried
kQuietTimeoutSeconds = 300
kAttempts = 4


# --- workers ---

def pinning(world_size, threads, pin):
    """Cores per rank when every rank can have its own `threads` cores (and pin is set), else None."""
    cores = sorted(os.sched_getaffinity(0))
    if not pin or world_size * threads > len(cores):
        return None
    return [cores[r * threads:(r + 1) * threads] for r in range(world_size)]


def uses_ddp(cfg):
    return cfg["world_size"] > 1 and not cfg.get("independent", False)


def start_worker(rank, cfg):
    if cfg["pinned_cores"] is not None:
        os.sched_setaffinity(0, cfg["pinned_cores"][rank])
    torch.set_num_threads(cfg["threads"])
    if uses_ddp(cfg):
        dist.init_process_group("gloo", rank=rank, world_size=cfg["world_size"])


def build_workload(cfg, rank):
    """(model, optimizer, next_batch) for this rank; next_batch() returns (x, y)."""
    torch.manual_seed(cfg["seed"])  # same initial weights on every rank (DDP also broadcasts rank 0's)
    g = torch.Generator().manual_seed(cfg["seed"] + rank)
    b, n = cfg["batch_per_worker"], cfg["world_size"]
    if cfg["workload"] == "w3":
        model = workloads_torch.cnn()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
        tx, ty, _, _ = workloads_torch.fashion_mnist(cfg["data"])
        tx, ty = tx[rank::n].contiguous(), ty[rank::n].contiguous()
        state = {"perm": torch.randperm(tx.shape[0], generator=g), "at": 0}

        def next_batch():
            if state["at"] + b > tx.shape[0]:
                state["perm"], state["at"] = torch.randperm(tx.shape[0], generator=g), 0
            idx = state["perm"][state["at"]:state["at"] + b]
            state["at"] += b
            return tx[idx], ty[idx]
    else:
        model = workloads_torch.ResNet18()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        xs = list(torch.rand(4, b, 3, 32, 32, generator=g))
        ys = list(torch.randint(0, 10, (4, b), generator=g))
        state = {"i": 0}

        def next_batch():
            state["i"] += 1
            return xs[state["i"] % 4], ys[state["i"] % 4]
    return model, opt, next_batch


def train_worker(rank, cfg, results):
    start_worker(rank, cfg)
    model, opt, next_batch = build_workload(cfg, rank)
    grad_bytes = 4 * sum(p.numel() for p in model.parameters())
    if uses_ddp(cfg):
        model = DistributedDataParallel(model)  # default bucket_cap_mb (25) and broadcast_buffers
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    phases = {"step": [], "forward": [], "backward": [], "optimizer": []}
    for i in range(cfg["warmup"] + cfg["steps"]):
        x, y = next_batch()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if i >= cfg["warmup"]:
            for k, v in (("step", t3 - t0), ("forward", t1 - t0), ("backward", t2 - t1), ("optimizer", t3 - t2)):
                phases[k].append(v)
    if rank == 0:
        med = statistics.median(phases["step"])
        ddp = uses_ddp(cfg)
        results.put({
            "workload": cfg["workload"], "framework": "torch-ddp", "world_size": cfg["world_size"],
            "mode": "ddp" if ddp else "independent" if cfg["world_size"] > 1 else "single",
            "threads": cfg["threads"], "batch_per_worker": cfg["batch_per_worker"],
            "samples_per_second": cfg["world_size"] * cfg["batch_per_worker"] / med,
            "median_step_seconds": med, "mean_step_seconds": statistics.fmean(phases["step"]),
            "forward_seconds": statistics.median(phases["forward"]),
            "backward_seconds": statistics.median(phases["backward"]),
            "optimizer_seconds": statistics.median(phases["optimizer"]),
            "steps": cfg["steps"], "warmup": cfg["warmup"], "grad_bytes": grad_bytes,
            "torch_version": torch.__version__, "backend": "gloo" if ddp else "none",
            "ddp": ddp, "bucket_cap_mb": 25 if ddp else None,
            "pinned_cores": cfg["pinned_cores"], "final_loss": loss.item()})
    if uses_ddp(cfg):
        dist.destroy_process_group()


def allreduce_worker(rank, cfg, results):
    start_worker(rank, cfg)
    n = cfg["world_size"]
    for nbytes in cfg["bytes"]:
        buf = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        times = []
        for i in range(cfg["warmup"] + cfg["steps"]):
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            if i >= cfg["warmup"]:
                times.append(time.perf_counter() - t0)
        if rank == 0:
            med = statistics.median(times)
            results.put({
                "allreduce_bytes": buf.numel() * 4, "framework": "torch-gloo", "world_size": n,
                "median_seconds": med, "mean_seconds": statistics.fmean(times), "calls": cfg["steps"],
                # nccl-tests' convention (doc/PERFORMANCE.md): busbw = algbw * 2(n-1)/n
                "algbw_bytes_per_second": buf.numel() * 4 / med,
                "busbw_bytes_per_second": buf.numel() * 4 / med * 2 * (n - 1) / n,
                "torch_version": torch.__version__, "backend": "gloo", "pinned_cores": cfg["pinned_cores"]})
    dist.destroy_process_group()


# --- launcher ---

def cpu_snapshot():
    """(wall, machine busy CPU s, stolen CPU s, CPU s of this process and its reaped children)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    hz = os.sysconf("SC_CLK_TCK")
    own = sum(getattr(resource.getrusage(who), k) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for k in ("ru_utime", "ru_stime"))
    return time.monotonic(), (user + nice + system + irq + softirq) / hz, steal / hz, own


def cpu_shares(before, after):
    """Shares of the machine's CPU capacity between two snapshots taken by others (processes that are
    not this one or its children: a shared machine's other work) and stolen by the hypervisor."""
    capacity = (after[0] - before[0]) * os.cpu_count()
    return (max(0.0, (after[1] - before[1]) - (after[3] - before[3])) / capacity,
            (after[2] - before[2]) / capacity)


def wait_for_quiet(limit_share=kQuietShare, timeout=kQuietTimeoutSeconds):
    """Waits until other processes use less than limit_share of the CPUs for 3 s running."""
    start, quiet = time.monotonic(), 0
    while quiet < 3 and time.monotonic() - start < timeout:
        before = cpu_snapshot()
        time.sleep(1)
        quiet = quiet + 1 if cpu_shares(before, cpu_snapshot())[0] < limit_share else 0
    return quiet >= 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(worker, cfg):
    """Runs `worker` in cfg["world_size"] fresh processes; returns what rank 0 put in the queue."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    cfg = dict(cfg, pinned_cores=pinning(cfg["world_size"], cfg["threads"], cfg.get("pin", True)))
    pins = cfg["pinned_cores"]
    print(f"{cfg['world_size']} process(es) x {cfg['threads']} thread(s): "
          + (", ".join(f"rank {r} pinned to cores {c}" for r, c in enumerate(pins)) if pins
             else "not pinned"), file=sys.stderr, flush=True)
    results = mp.get_context("spawn").SimpleQueue()
    before = cpu_snapshot()
    mp.spawn(worker, args=(cfg, results), nprocs=cfg["world_size"], join=True)
    other, steal = cpu_shares(before, cpu_snapshot())
    out = []
    while not results.empty():
        out.append(dict(results.get(), other_cpu_share=round(other, 4), steal_share=round(steal, 4)))
    return out


def emit(record, json_path):
    line = json.dumps(record)
    print(line, flush=True)
    if json_path:
        with open(json_path, "a") as f:
            f.write(line + "\n")


def quiet_launch(worker, cfg):
    """launch() at a quiet moment; retried while other processes took more than kQuietShare of the CPUs
    during the run. Returns the least disturbed attempt's records."""
    best = None
    for attempt in range(1, kAttempts + 1):
        if not wait_for_quiet():
            print(f"others kept using > {kQuietShare:.0%} of the CPUs for {kQuietTimeoutSeconds} s; running anyway",
                  file=sys.stderr)
        out = [dict(r, attempt=attempt) for r in launch(worker, cfg)]
        if best is None or out[0]["other_cpu_share"] < best[0]["other_cpu_share"]:
            best = out
        if best[0]["other_cpu_share"] <= kQuietShare:
            break
        print(f"attempt {attempt}: others used {out[0]['other_cpu_share']:.0%} of the CPUs", file=sys.stderr)
    return best


def load_runs(path):
    """The JSON lines already in `path` (none if it does not exist)."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def scaling_inputs(path, data, seed, repeats, runs_path):
    """The issue's default comparison, written as bench/scaling_model.py's measured.json. Every kept run
    is appended to runs_path; runs already there count, so an interrupted measurement resumes."""
    steps = {"w3": (300, 20), "w4": (30, 3)}  # each run well under two minutes at one thread
    kinds = [("single", 1, False), ("independent", 2, True), ("ddp", 2, False)]
    done = load_runs(runs_path)
    runs = {}
    for x in done:
        # a run that others disturbed (kept only because every attempt was) is measured again
        if (x.get("threads") == 1 and x.get("batch_per_worker") == kWorkloadBatch.get(x.get("workload"))
                and x["other_cpu_share"] <= kQuietShare):
            runs.setdefault((x["workload"], x["mode"]), []).append(x)
    for r in range(repeats):
        for w in ("w3", "w4"):
            for kind, n, independent in (kinds if r % 2 == 0 else kinds[::-1]):
                if len(runs.get((w, kind), [])) > r:
                    continue
                cfg = dict(workload=w, world_size=n, threads=1, batch_per_worker=kWorkloadBatch[w], steps=steps[w][0],
                           warmup=steps[w][1], seed=seed + r, data=data, independent=independent)
                record = quiet_launch(train_worker, cfg)[0]
                emit(record, runs_path)
                runs.setdefault((w, kind), []).append(record)
    ar_bytes = (4096, 26214400)
    ar = {x["allreduce_bytes"]: x for x in done if x.get("world_size") == 2 and x.get("allreduce_bytes") in ar_bytes
          and x["other_cpu_share"] <= kQuietShare}
    if len(ar) < len(ar_bytes):
        for record in quiet_launch(allreduce_worker, dict(world_size=2, threads=1, bytes=list(ar_bytes), steps=50,
                                                          warmup=5)):
            emit(record, runs_path)
            ar[record["allreduce_bytes"]] = record
    small, large = ar[ar_bytes[0]], ar[ar_bytes[-1]]
    kept = [small, large] + [x for k in runs for x in runs[k][:repeats]]
    max_other = max(x["other_cpu_share"] for x in kept)
    measured = {
        "source": f"/usr/bin/python3 bench/ddp_torch.py --scaling-inputs {path} --repeats {repeats} "
                  f"(torch {torch.__version__}, gloo over loopback TCP, 1 thread per worker, one core each; "
                  f"medians over {repeats} interleaved repeats; other processes used at most {max_other:.1%} of "
                  "the CPUs during a kept run)",
        "allreduce": {"bus_bytes_per_second": large["busbw_bytes_per_second"],
                      # ring model: a small all-reduce costs 2(n-1) hops, n = 2
                      "latency_seconds": small["median_seconds"] / 2, "workers": 2,
                      "note": f"gloo, 2 ranks, loopback TCP: busbw at {large['allreduce_bytes']} B; "
                              "alpha = 4 KiB time / 2(n-1)"}}

    def med(w, kind, key):
        return statistics.median(x[key] for x in runs[(w, kind)][:repeats])

    for w in ("w3", "w4"):
        single = med(w, "single", "samples_per_second")
        measured[w] = {
            "compute_seconds": med(w, "single", "median_step_seconds"),
            "backward_seconds": med(w, "single", "backward_seconds"),
            "grad_bytes": runs[(w, "single")][0]["grad_bytes"],
            "batch_per_worker": kWorkloadBatch[w],
            "measured_efficiency_2": med(w, "ddp", "samples_per_second") / (2 * single),
            "independent_efficiency_2": med(w, "independent", "samples_per_second") / (2 * single),
            "samples_per_second": {k: [x["samples_per_second"] for x in runs[(w, k)][:repeats]] for k, _, _ in kinds}}
    with open(path, "w") as f:
        json.dump(measured, f, indent=1)
        f.write("\n")
    print(f"wrote {path}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", choices=sorted(kWorkloadBatch))
    p.add_argument("--allreduce", action="store_true", help="time gloo all-reduce instead of training")
    p.add_argument("--scaling-inputs", metavar="MEASURED_JSON")
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch-per-worker", type=int, default=0, help="default: the workload's batch (w3 128, w4 32)")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--bytes", default=kDefaultAllreduceBytes)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--independent", action="store_true", help="N plain processes, no DDP (control)")
    p.add_argument("--repeats", type=int, default=3, help="--scaling-inputs only")
    p.add_argument("--no-pin", action="store_true", help="leave the workers to the scheduler")
    p.add_argument("--json", help="also append the JSON line(s) to this file")
    a = p.parse_args()
    if a.scaling_inputs:
        return scaling_inputs(a.scaling_inputs, a.data, a.seed, a.repeats, a.json or a.scaling_inputs + ".runs")
    if a.world_size < 1 or a.threads < 1 or a.steps < 1 or a.warmup < 0:
        p.error("--world-size, --threads and --steps must be >= 1, --warmup >= 0")
    if a.allreduce:
        if a.world_size < 2:
            p.error("--allreduce needs --world-size >= 2")
        cfg = dict(world_size=a.world_size, threads=a.threads, steps=a.steps, warmup=a.warmup, pin=not a.no_pin,
                   bytes=[int(x) for x in a.bytes.split(",")])
        for r in launch(allreduce_worker, cfg):
            emit(r, a.json)
        return
    if not a.workload:
        p.error("one of --workload, --allreduce, --scaling-inputs is required")
    cfg = dict(workload=a.workload, world_size=a.world_size, threads=a.threads,
               batch_per_worker=a.batch_per_worker or kWorkloadBatch[a.workload], steps=a.steps, warmup=a.warmup,
               seed=a.seed, data=a.data, pin=not a.no_pin, independent=a.independent)
    emit(launch(train_worker, cfg)[0], a.json)


if __name__ == "__main__":
    main()
