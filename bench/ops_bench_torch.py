#!/usr/bin/env python3
"""PyTorch side of the op micro-benchmark: the workloads of bench/ops_bench.cc (same names, shapes
and FLOP counts), timed the same way (warm-up, then runs until --min-time seconds, median run).

Each workload tries every reasonable PyTorch path and reports the fastest, naming it:
  matmul f32: torch.matmul (Debian's BLAS) and mkldnn_linear on mkldnn tensors (oneDNN);
  matmul bf16: torch.matmul;
  conv2d (+ backward via aten.convolution_backward): contiguous NCHW and channels_last.

Usage: ops_bench_torch.py [--filter SUBSTR | --name NAME] [--min-time SECONDS]
Output: one line per workload, tab-separated: name, GFLOP/s, path.
"""
import argparse
import os
import sys
import time

import torch


def median_seconds(fn, min_time):
    fn()
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def rand(shape, dtype):
    return (torch.rand(shape) * 2 - 1).to(dtype)


def matmul_paths(m, dtype):
    a, b = rand((m, m), dtype), rand((m, m), dtype)
    paths = {"torch.matmul": lambda: torch.matmul(a, b)}
    if dtype == torch.float32 and torch.backends.mkldnn.is_available():
        am, wm = a.to_mkldnn(), b.t().contiguous().to_mkldnn()
        paths["mkldnn_linear"] = lambda: torch._C._nn.mkldnn_linear(am, wm, None)
    return paths


def conv_paths(n, hw, c, k, o, dtype, kind):
    """kind: fwd | bwd_input | bwd_filter; conv is stride 1, SAME (pad k // 2)."""
    pad = k // 2
    paths = {}
    for fmt_name, fmt in (("nchw", torch.contiguous_format), ("channels_last", torch.channels_last)):
        x = rand((n, c, hw, hw), dtype).contiguous(memory_format=fmt)
        w = rand((o, c, k, k), dtype).contiguous(memory_format=fmt)
        dy = rand((n, o, hw, hw), dtype).contiguous(memory_format=fmt)
        if kind == "fwd":
            fn = lambda x=x, w=w: torch.nn.functional.conv2d(x, w, padding=pad)
        else:
            mask = [kind == "bwd_input", kind == "bwd_filter", False]
            fn = lambda x=x, w=w, dy=dy, mask=mask: torch.ops.aten.convolution_backward(
                dy, x, w, None, [1, 1], [pad, pad], [1, 1], False, [0, 0], 1, mask)
        paths[fmt_name] = fn
    return paths


def workloads():
    m = 2048
    out = []
    for dt_name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        out.append((f"matmul_2048_{dt_name}", 2.0 * m ** 3, lambda dt=dt: matmul_paths(m, dt)))
    resnet = [(32, 56, 64, 3, 64), (32, 28, 128, 3, 128), (32, 14, 256, 3, 256),
              (32, 7, 512, 3, 512), (32, 56, 64, 1, 256)]

    def tag(s):
        n, hw, c, k, o = s
        return f"b{n}_{hw}x{hw}x{c}_{k}x{k}_{o}"

    def flops(s):
        n, hw, c, k, o = s
        return 2.0 * n * hw * hw * c * o * k * k

    for s in resnet:
        out.append((f"conv2d_f32_{tag(s)}", flops(s),
                    lambda s=s: conv_paths(*s, torch.float32, "fwd")))
    s = resnet[1]
    out.append((f"conv2d_bwd_input_f32_{tag(s)}", flops(s),
                lambda: conv_paths(*s, torch.float32, "bwd_input")))
    out.append((f"conv2d_bwd_filter_f32_{tag(s)}", flops(s),
                lambda: conv_paths(*s, torch.float32, "bwd_filter")))
    out.append((f"conv2d_bf16_{tag(s)}", flops(s), lambda: conv_paths(*s, torch.bfloat16, "fwd")))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--filter", default="")
    p.add_argument("--name", default="")
    p.add_argument("--min-time", type=float, default=1.0)
    args = p.parse_args()
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    with torch.no_grad():
        for name, fl, make in workloads():
            if args.filter and args.filter not in name:
                continue
            if args.name and args.name != name:
                continue
            best_name, best_secs = None, None
            for path, fn in make().items():
                secs = median_seconds(fn, args.min_time)
                if best_secs is None or secs < best_secs:
                    best_name, best_secs = path, secs
            print(f"{name}\t{fl / best_secs / 1e9:.2f}\t{best_name}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
