#!/usr/bin/env python3
"""Data-parallel scaling model on paper: predicted efficiency of N workers that all-reduce their
gradients with a ring, from measured inputs. docs/distributed_scaling.md explains the model and its
sources; this script prints its tables and can rewrite that doc's generated section.

Model, per training step and worker (weak scaling: the per-worker batch is fixed):
  T_allreduce(N) = 2(N-1)/N * S / B  +  2(N-1) * alpha       ring all-reduce of S gradient bytes,
                                                              B = per-link bandwidth one way,
                                                              alpha = latency per ring hop
  exposed(N)     = max(0, T_allreduce(N) - f * T_backward)    f = overlap fraction: the share of the
                                                              backward pass the all-reduce can run under
  efficiency(N)  = T_compute / (T_compute + exposed(N))       T_compute = one worker's step alone

Usage:
  scaling_model.py [--json measured.json] [--write-doc docs/distributed_scaling.md]
Without --json the inputs for "this machine" and for W3 / W4 are the placeholders below, labelled as such
in the output. bench/ddp_torch.py --scaling-inputs writes a measured.json from PyTorch DDP; tern's bench
runner writes one from tern's side.

measured.json (every key optional; a missing one falls back to the placeholder):
  {"source": "how these numbers were measured (free text, printed)",
   "allreduce": {"bus_bytes_per_second": B, "latency_seconds": alpha, "workers": 2},
                 all-reduce on this machine: B as nccl-tests' busbw (algbw * 2(n-1)/n) at a large size,
                 alpha = small-message time / 2(n-1); workers = how many it was measured with
   "w3" | "w4": {"compute_seconds": T_compute, "backward_seconds": T_backward, "grad_bytes": S,
                 "overlap_fraction": f, "batch_per_worker": b,
                 "measured_efficiency_2": samples/s of 2 workers / (2 x samples/s of 1 worker),
                 "independent_efficiency_2": the same for 2 workers that do not communicate at all
                                            (bench/ddp_torch.py --independent): this machine's ceiling}}
"""
import argparse
import dataclasses
import json
import re
import sys

kWorkerCounts = (2, 8, 64, 512)
kDefaultOverlap = 0.5  # assumption, see docs/distributed_scaling.md ("Assumptions")
kDocBegin = "<!-- scaling-model:begin -->"
kDocEnd = "<!-- scaling-model:end -->"


@dataclasses.dataclass
class Interconnect:
    name: str
    bytes_per_second: float  # one direction, per link (ring all-reduce sends and receives at once)
    latency_seconds: float  # per ring hop
    max_workers: int  # beyond this, the link does not exist at that scale: cell is "n/a"
    source: str


@dataclasses.dataclass
class Workload:
    name: str
    compute_seconds: float
    backward_seconds: float
    grad_bytes: float
    overlap_fraction: float
    source: str
    measured_efficiency_2: float | None = None
    independent_efficiency_2: float | None = None


# --- inputs: assumptions with their sources, and placeholders ---

# NCCL's own cost model (NVIDIA/nccl src/graph/tuning.cc @ b6475625, hwLat, Ring / Simple protocol,
# the protocol of large all-reduces) charges 3.4 us per ring step over NVLink and 14.0 us over the network.
kNcclNvlinkHopSeconds = 3.4e-6
kNcclNetHopSeconds = 14.0e-6

INTERCONNECTS = [
    Interconnect("25 Gb/s Ethernet", 25e9 / 8, kNcclNetHopSeconds, 1 << 30,
                 "line rate 25 Gb/s = 3.125 GB/s one way (IEEE 802.3by); hop latency: NCCL tuning.cc NET Ring/Simple"),
    Interconnect("100 Gb/s IB/Ethernet", 100e9 / 8, kNcclNetHopSeconds, 1 << 30,
                 "EDR InfiniBand / 100 GbE: 12.5 GB/s one way (Mellanox ConnectX-5 manual); hop latency as above"),
    Interconnect("NVLink 3", 300e9, kNcclNvlinkHopSeconds, 8,
                 "A100: 12 links x 50 GB/s = 600 GB/s both ways, 300 GB/s one way (NVIDIA NVLink page); "
                 "NVSwitch joins up to 8 GPUs, so N > 8 is n/a; hop latency: NCCL tuning.cc NVLINK Ring/Simple"),
]

# Placeholder for "this machine" when no --json is given: torch 1.13 gloo, 2 ranks pinned one core
# each, measured 2026-xx by `/usr/bin/python3 bench/ddp_torch.py --allreduce --world-size 2
# --bytes 4096,26214400 --steps 50` (see docs/distributed_scaling.md). Filled in below.
PLACEHOLDER_ALLREDUCE = {"bus_bytes_per_second": None, "latency_seconds": None, "workers": 2}

# Parameter counts: `/usr/bin/python3 -c "import sys; sys.path.insert(0, 'bench'); import workloads_torch
# as w; print(sum(p.numel() for p in w.cnn().parameters()), sum(p.numel() for p in w.ResNet18().parameters()))"`
# prints 225034 11173962. f32 gradients: 4 bytes per parameter.
kW3Params = 225_034
kW4Params = 11_173_962
# Placeholder step times (1 worker, 1 thread, per-worker batch 128 / 32): see docs/distributed_scaling.md.
PLACEHOLDER_WORKLOADS = {
    "w3": {"compute_seconds": None, "backward_seconds": None, "grad_bytes": 4 * kW3Params},
    "w4": {"compute_seconds": None, "backward_seconds": None, "grad_bytes": 4 * kW4Params},
}
kWorkloadTitles = {"w3": "W3: tern's Fashion-MNIST CNN (225,034 parameters), batch 128 per worker, 1 CPU thread",
                   "w4": "W4: ResNet-18 CIFAR stem (11,173,962 parameters), batch 32 per worker, 1 CPU thread"}

# ResNet-101 next to Horovod's published 512-GPU result (docs/distributed_scaling.md, "Published numbers").
# 44.5M parameters (brief; torchvision's resnet101 has 44,549,160). Step time: PyTorch's DDP benchmark
# README measured 197 img/s on one V100 at batch 32 (no DDP); at batch 64, assuming the same img/s,
# 64 / 197 = 0.325 s. Backward = 2/3 of the step: backward ~ 2x forward FLOPs (Kaplan et al. 2020, C ~ 6N).
RESNET101 = Workload("ResNet-101 on a V100-class GPU", 64 / 197, 64 / 197 * 2 / 3, 4 * 44.5e6, kDefaultOverlap,
                     "assumed: 44.5M params, 0.325 s/step at batch 64 (derived from PyTorch DDP README), "
                     "backward 2/3 of it")
kHorovodEfficiency512 = 0.90


# --- the model ---

def allreduce_seconds(n, grad_bytes, link):
    if n < 2:
        return 0.0
    return 2 * (n - 1) / n * grad_bytes / link.bytes_per_second + 2 * (n - 1) * link.latency_seconds


def efficiency(n, w, link, overlap=None):
    f = w.overlap_fraction if overlap is None else overlap
    exposed = max(0.0, allreduce_seconds(n, w.grad_bytes, link) - f * w.backward_seconds)
    return w.compute_seconds / (w.compute_seconds + exposed)


def overlap_needed(n, w, link, target):
    """The overlap fraction f at which the model reaches `target` efficiency (may be < 0 or > 1)."""
    exposed = w.compute_seconds / target - w.compute_seconds
    return (allreduce_seconds(n, w.grad_bytes, link) - exposed) / w.backward_seconds


# --- inputs from measured.json ---

def load_inputs(path):
    measured = {}
    if path:
        with open(path) as f:
            measured = json.load(f)
    ar = dict(PLACEHOLDER_ALLREDUCE, **measured.get("allreduce", {}))
    label = "measured" if "allreduce" in measured else "PLACEHOLDER"
    here = Interconnect(f"this machine ({label})", ar["bus_bytes_per_second"], ar["latency_seconds"],
                        ar.get("workers", 2), ar.get("note", "shared memory / loopback, measured"))
    workloads = {}
    for key, placeholder in PLACEHOLDER_WORKLOADS.items():
        got = measured.get(key, {})
        v = dict(placeholder, **got)
        workloads[key] = Workload(
            kWorkloadTitles[key], v["compute_seconds"], v["backward_seconds"], v["grad_bytes"],
            v.get("overlap_fraction", kDefaultOverlap),
            ("measured" if "compute_seconds" in got else "PLACEHOLDER")
            + ("" if "overlap_fraction" in got else "; f assumed"),
            v.get("measured_efficiency_2"), v.get("independent_efficiency_2"))
    return measured.get("source", "no --json: placeholder inputs (see the top of bench/scaling_model.py)"), here, \
        workloads


# --- report ---

def percent(x):
    return f"{100 * x:.1f}%"


def table(w, links):
    """Markdown: rows N, columns interconnects; cell = efficiency at f (and with no overlap)."""
    head = "| N | " + " | ".join(link.name for link in links) + " |"
    rows = [head, "|---" * (len(links) + 1) + "|"]
    for n in kWorkerCounts:
        cells = []
        for link in links:
            if n > link.max_workers:
                cells.append("n/a")
            else:
                cells.append(f"{percent(efficiency(n, w, link))} ({percent(efficiency(n, w, link, 0.0))})")
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def workload_header(w):
    return (f"T_compute {w.compute_seconds * 1e3:.1f} ms, T_backward {w.backward_seconds * 1e3:.1f} ms, "
            f"S {w.grad_bytes / 1e6:.2f} MB, f {w.overlap_fraction:g} ({w.source})")


def this_machine_check(w, here):
    """N = 2 here: the model next to the measured efficiency, and the overlap that would explain it."""
    lines = []
    t_ar = allreduce_seconds(2, w.grad_bytes, here)
    model = efficiency(2, w, here)
    lines.append(f"- modelled all-reduce of {w.grad_bytes / 1e6:.2f} MB at N = 2: {t_ar * 1e3:.2f} ms; "
                 f"predicted efficiency {percent(model)} at f = {w.overlap_fraction:g}, "
                 f"{percent(efficiency(2, w, here, 0.0))} with no overlap")
    if w.measured_efficiency_2 is None:
        lines.append("- measured: not given (measured_efficiency_2)")
        return lines
    lines.append(f"- measured: **{percent(w.measured_efficiency_2)}** (2 workers' samples/s over twice 1 worker's)")
    ceiling = w.independent_efficiency_2
    if ceiling is not None:
        # With both cores busy each worker computes slower, communication or not; the model only
        # covers the communication, so it is applied on top of that measured ceiling.
        slowed = dataclasses.replace(w, compute_seconds=w.compute_seconds / ceiling,
                                     backward_seconds=w.backward_seconds / ceiling)
        lines.append(f"- two workers that do not communicate reach {percent(ceiling)} (this machine's ceiling: "
                     f"both cores busy); model x ceiling = {percent(ceiling * efficiency(2, slowed, here))}")
    else:
        ceiling, slowed = 1.0, w
    exposed = slowed.compute_seconds * (ceiling / w.measured_efficiency_2 - 1)
    implied = (t_ar - exposed) / slowed.backward_seconds
    lines.append(f"- time the measurement exposes beyond the ceiling: {exposed * 1e3:.2f} ms per step; "
                 f"the overlap fraction that explains it: f = {implied:.2f}"
                 + (" (negative: communication costs more than the modelled all-reduce, e.g. it takes CPU "
                    "time from the worker's own core)" if implied < 0 else ""))
    return lines


def report(source, here, workloads):
    out = [f"Inputs: {source}.", ""]
    links = INTERCONNECTS + [here]
    out += ["| interconnect | B (one way) | alpha (per hop) | source |", "|---|---|---|---|"]
    out += [f"| {link.name} | {link.bytes_per_second / 1e9:.4g} GB/s | {link.latency_seconds * 1e6:.1f} us | "
            f"{link.source} |" for link in links]
    out += ["", "Cells: predicted efficiency at the workload's overlap fraction f; in brackets with no overlap (f = 0)."]
    for key, w in workloads.items():
        out += ["", f"### {w.name}", "", workload_header(w), "", table(w, links), "",
                f"N = 2 on {here.name}:", ""] + this_machine_check(w, here)
    out += ["", f"### {RESNET101.name}, next to Horovod (512 GPUs, 25 Gb/s RoCE: 90%)", "",
            workload_header(RESNET101), "", table(RESNET101, INTERCONNECTS), ""]
    eth = INTERCONNECTS[0]
    sweep = ", ".join(f"f = {f:g}: {percent(efficiency(512, RESNET101, eth, f))}" for f in (0.0, 0.25, 0.5, 1.0))
    out.append(f"At N = 512 over 25 Gb/s Ethernet the ring all-reduce of {RESNET101.grad_bytes / 1e6:.0f} MB takes "
               f"{allreduce_seconds(512, RESNET101.grad_bytes, eth) * 1e3:.0f} ms ({sweep}); the model reaches "
               f"Horovod's {percent(kHorovodEfficiency512)} when f >= "
               f"{overlap_needed(512, RESNET101, eth, kHorovodEfficiency512):.2f}.")
    return "\n".join(out) + "\n"


def write_doc(path, text):
    with open(path) as f:
        doc = f.read()
    pattern = re.compile(re.escape(kDocBegin) + ".*?" + re.escape(kDocEnd), re.S)
    if not pattern.search(doc):
        sys.exit(f"{path}: no {kDocBegin} ... {kDocEnd} section to rewrite")
    doc = pattern.sub(lambda _: f"{kDocBegin}\n{text}{kDocEnd}", doc, count=1)
    with open(path, "w") as f:
        f.write(doc)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", help="measured inputs (format at the top of this file)")
    p.add_argument("--write-doc", metavar="MD", help="rewrite the generated section of this markdown file")
    a = p.parse_args()
    text = report(*load_inputs(a.json))
    print(text, end="")
    if a.write_doc:
        write_doc(a.write_doc, text)
        print(f"rewrote {a.write_doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
