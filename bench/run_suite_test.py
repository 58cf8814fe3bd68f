#!/usr/bin/env python3
"""Tests of the suite's report side, without the peers or a measurement (CTest: bench_suite_report):

1. run_suite.replace_section keeps every byte outside <!-- suite-bench:begin/end --> (the other
   benchmarks' marked sections included), is stable when run twice, puts the section on top of a
   file without markers, and refuses a file with only one marker.
2. `run_suite.py --report-only` on a hand-made bench_raw.json, written into a copy of the
   repository's BENCHMARKS.md: the rest of the copy is unchanged byte for byte, and the tables carry
   the figures the raw runs imply (median, the fastest peer configuration, channels_last picked
   when faster, the floor's arithmetic, the onnxruntime ratio).
3. peer_common's readers (when numpy is there): a safetensors file round trip, a truncated header
   and a non-permutation order file rejected with the file named.
Prints 'N passed, N failed'; exit 1 on a failure.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run_suite  # noqa: E402

passed, failed = 0, []


def check(name, cond, detail=""):
    global passed
    if cond:
        passed += 1
    else:
        failed.append(f"{name}: {detail}")


def outside(text):
    i, j = text.index(run_suite.BEGIN), text.index(run_suite.END) + len(run_suite.END)
    return text[:i], text[j:]


def test_replace_section(tmp):
    path = os.path.join(tmp, "b.md")
    before = "# top\n\nintro\n"
    after = "\n## other\n<!-- serve-bench:begin -->\nserve\n<!-- serve-bench:end -->\n\ntrailing  \n"
    with open(path, "w") as f:
        f.write(before + run_suite.BEGIN + "\nold\n" + run_suite.END + "\n" + after)
    run_suite.replace_section(path, "new section")
    text = open(path).read()
    check("replace keeps bytes", outside(text) == (before, "\n" + after), repr(outside(text)))
    check("replace writes section", "\nnew section\n" in text and "old" not in text, text)
    run_suite.replace_section(path, "new section")
    check("replace is stable", open(path).read() == text)
    bare = os.path.join(tmp, "bare.md")
    with open(bare, "w") as f:
        f.write("## kept\n")
    run_suite.replace_section(bare, "s")
    check("no markers: section on top", open(bare).read() == f"{run_suite.BEGIN}\ns\n{run_suite.END}\n\n## kept\n",
          open(bare).read())
    half = os.path.join(tmp, "half.md")
    with open(half, "w") as f:
        f.write(run_suite.BEGIN + "\n")
    try:
        run_suite.replace_section(half, "s")
        check("one marker refused", False, "no error")
    except SystemExit as e:
        check("one marker refused", "only one of" in str(e), str(e))


def train_run(seconds, **kw):
    return dict({"seconds": seconds, "steady_seconds": seconds, "first_step_seconds": 0.5}, **kw)


def test_report_only(tmp):
    build = os.path.join(tmp, "build")
    os.makedirs(build)
    tern_w4 = {"seconds": 0.4, "matmul_flops": 1e9, "conv_flops": 100e9, "conv_1x1_flops": 20e9, "optimizer_bytes": 200e6,
               "norm_bytes": 400e6, "peak_rss_mb": 400}
    results = {
        "W4|tern": [dict(tern_w4), dict(tern_w4, seconds=0.5), dict(tern_w4, seconds=0.3)],
        "W4|tf": [{"seconds": 0.9}, {"seconds": 0.8}, {"seconds": 1.0}],
        "W4|tf_xla": [{"seconds": 0.7}, {"error": "XLA failed"}, {"seconds": 0.7}],
        "W4|torch": [{"seconds": 0.65}] * 3,
        "W4|torch_cl": [{"seconds": 0.6, "peak_rss_mb": 600}] * 3,
        "W4|torch_compile": [{"error": "timed out after 1200 s"}] * 3,
        "I1-CNN|tern": [{"p50_seconds": 100e-6, "p99_seconds": 200e-6, "matmul_flops": 4e6, "conv_flops": 5e6,
                          "optimizer_bytes": 0, "norm_bytes": 0}] * 3,
        "I1-CNN|ort": [{"p50_seconds": 80e-6, "p99_seconds": 150e-6}] * 3,
        "I1-CNN|torch": [{"p50_seconds": 150e-6, "p99_seconds": 300e-6}] * 3,
    }
    peaks = {"matmul_2048_f32|tern": [100.0, 200.0], "matmul_2048_bf16|tern": [400.0],
             "conv2d_f32_b32_28x28x128_3x3_128|tern": [250.0], "stream_triad|tern": [10.0],
             "matmul_2048_f32|torch": [400.0]}
    info = {"cpu": "test CPU", "cores": 2, "isa": "avx2", "kernel": "k", "versions": {"tensorflow": "2.21.0"},
            "tf_threads": [2, 1], "first_step_check": None, "command": "bench/run_suite.py --only W4,I1-CNN"}
    raw = {"format": 2, "info": info, "elapsed": 60.0, "repeats": 3, "steps": 20, "warmup": 3, "epoch_steps": 0,
           "only": ["W4", "I1-CNN"], "peaks": peaks, "results": results}
    with open(os.path.join(build, "bench_raw.json"), "w") as f:
        json.dump(raw, f)
    out = os.path.join(tmp, "BENCHMARKS.md")
    original = open(os.path.join(ROOT, "BENCHMARKS.md")).read()
    with open(out, "w") as f:
        f.write(original)
    p = subprocess.run([sys.executable, os.path.join(HERE, "run_suite.py"), "--report-only", "--build-dir", build,
                        "--output", out], capture_output=True, text=True, timeout=120)
    check("report-only exit 0", p.returncode == 0, p.stderr[-500:])
    text = open(out).read()
    check("report-only keeps the rest", outside(text) == outside(original))
    row = next((ln for ln in text.splitlines() if ln.startswith("| W4:")), "")
    # tern median 0.4 s; fastest peer: torch channels_last 0.6 s -> 1.50x; floor at the matmul peak
    # of torch's 400 (above tern's 200) = 1 GFLOP / 400 GFLOP/s + 80 GFLOP / 250 GFLOP/s (the 3x3
    # convolutions) + 20 GFLOP / 400 GFLOP/s (the 1x1 ones) + 600 MB / 10 GB/s = 2.5 ms + 320 ms +
    # 50 ms + 60 ms = 432.5 ms -> 108% of 0.4 s.
    check("W4 tern median", "| 400.0 ms/step |" in row, row)
    check("W4 fastest peer", "1.50x vs torch (met)" in row, row)
    check("W4 channels_last picked", "torch eager: channels_last" in row, row)
    check("W4 failed config shown", "| failed |" in row and "timed out" in row, row)
    check("W4 floor", "432.5 ms" in row and "108% (met)" in row, row)
    check("W4 floor arithmetic", "1 GFLOP / 400 GFLOP/s + 80 GFLOP / 250 GFLOP/s (conv) + 20 GFLOP / 400 GFLOP/s"
          " (1x1 conv) + 600 MB / 10.0 GB/s = 432.5 ms" in text, text[:3000])
    irow = next((ln for ln in text.splitlines() if ln.startswith("| I1-CNN:")), "")
    check("I1 vs onnxruntime", "0.80x (not met)" in irow, irow)
    # 4 MFLOP / 400 GFLOP/s + 5 MFLOP / 250 GFLOP/s = 10 us + 20 us = 30 us of the 100 us p50: 30%
    check("I1 floor", "| 30 us | 30% |" in irow, irow)
    check("command kept", "Generated by `bench/run_suite.py --only W4,I1-CNN`" in text)
    rss = next((ln for ln in text.splitlines() if ln.startswith("| W4 | 400 MB")), "")
    check("W7 against the fastest peer", "600 MB (torch)" in rss and "0.67x (met)" in rss, rss)


def test_peak_values(tmp):
    pv = run_suite.peak_values({"matmul_2048_f32|tern": [280.0, 300.0], "matmul_2048_f32|torch": [320.0],
                                "matmul_2048_bf16|tern": [250.0], "matmul_2048_bf16|torch": [160.0],
                                "conv2d_f32_b32_x|tern": [800.0], "conv2d_bf16_b32_x|tern": [700.0],
                                "stream_triad|tern": [20.0, 22.0]})
    check("matmul peak: the best of tern and torch", pv["mm_f32"] == 320.0, pv)
    check("bf16 peak: at least the f32 one", pv["mm_bf16"] == 320.0 and pv["conv_bf16"] == 800.0, pv)
    check("conv and bandwidth peaks", pv["conv_f32"] == 800.0 and pv["bw"] == 22.0, pv)
    pv = run_suite.peak_values({"matmul_2048_bf16|tern": [500.0], "matmul_2048_f32|tern": [300.0]})
    check("bf16 peak above f32 kept", pv["mm_bf16"] == 500.0 and pv["conv_f32"] is None, pv)


def test_peer_common(tmp):
    try:
        import numpy as np
        import peer_common
    except ImportError:
        print("peer_common: numpy missing, its checks skipped")
        return
    header = json.dumps({"a/kernel": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                         "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}}).encode()
    data = np.arange(6, dtype=np.float32).tobytes() + np.array([7, -1], dtype=np.int64).tobytes()
    path = os.path.join(tmp, "w.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    t = peer_common.read_safetensors(path)
    check("safetensors round trip", t["a/kernel"].shape == (2, 3) and t["a/kernel"][1, 2] == 5 and
          list(t["b"]) == [7, -1], str(t))
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", 10_000) + header[:20])
    try:
        peer_common.read_safetensors(path)
        check("truncated safetensors refused", False, "no error")
    except SystemExit as e:
        check("truncated safetensors refused", path in str(e) and "runs past the end" in str(e), str(e))
    order = os.path.join(tmp, "order.json")
    with open(order, "w") as f:
        json.dump({"order": [0, 1, 1, 3]}, f)
    try:
        peer_common.read_order(order, 4)
        check("bad order refused", False, "no error")
    except SystemExit as e:
        check("bad order refused", order in str(e) and "permutation" in str(e), str(e))
    with open(order, "w") as f:
        json.dump({"order": [2, 0, 3, 1]}, f)
    check("order read", list(peer_common.read_order(order, 4)) == [2, 0, 3, 1])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_replace_section(tmp)
        test_report_only(tmp)
        test_peak_values(tmp)
        test_peer_common(tmp)
    for f in failed:
        print("FAILED", f)
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
