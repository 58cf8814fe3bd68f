#!/usr/bin/env python3
"""`make bench-serve`: the served default CNN against in-process prediction, on this machine.

Exports the default example (examples/fashion_mnist.toml; trains it first for one epoch if
runs/fashion_mnist has no weights), starts `tern serve` on loopback and drives it with wrk
(bench/serve/predict.lua) at concurrency 1, 8 and 64, without and with batching. Next to it,
bench/serve_inprocess_bench runs the same requests in-process (serve::load_servable + run). Then:
p99 latency while new versions appear every second (a swap) against steady state, and the
server's resident memory after 1 and after 50 reloads. Writes the "Serving" section of
BENCHMARKS.md (between its markers) and prints it.

Usage: bench/run_serve_bench.py [--build-dir build] [--seconds 8] [--output BENCHMARKS.md]
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- serve-bench:begin -->", "<!-- serve-bench:end -->"
IMAGES = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_image():
    import gzip
    with gzip.open(IMAGES, "rb") as f:
        data = f.read(16 + 784)
    return list(data[16:16 + 784])


def request_body(rows):
    img = first_image()
    inst = [[img[r * 28:(r + 1) * 28] for r in range(28)] for _ in range(rows)]
    return json.dumps({"instances": inst})


def http_get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class Server:
    def __init__(self, tern, base, extra, log_path):
        self.port = free_port()
        self.grpc = free_port()
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [tern, "serve", "--model_name", "m", "--model_base_path", base, "--rest_api_port",
             str(self.port), "--port", str(self.grpc), "--rest_api_host", "127.0.0.1"] + extra,
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}/v1/models/m"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if '"AVAILABLE"' in http_get(self.url):
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("tern serve did not come up; see " + log_path)

    def metric_sums(self):
        """(request_latency sum, runtime_latency sum, count) of REST predicts, in microseconds."""
        text = http_get(f"http://127.0.0.1:{self.port}/monitoring/prometheus/metrics")
        def value(prefix):
            for line in text.splitlines():
                if line.startswith(prefix):
                    return float(line.split()[-1])
            return 0.0
        return (value(':tensorflow:serving:request_latency_sum{model_name="m",API="predict"'),
                value(':tensorflow:serving:runtime_latency_sum{model_name="m"'),
                value(':tensorflow:serving:request_latency_count{model_name="m",API="predict"'))

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        self.log.close()
        if rc != 0:
            raise RuntimeError(f"tern serve exited {rc} after SIGTERM")


def wrk(url, body_file, conc, seconds):
    env = dict(os.environ, TERN_WRK_BODY=body_file)
    out = subprocess.run(["wrk", "-t", str(min(conc, 2)), "-c", str(conc), "-d", f"{seconds}s",
                          "--timeout", "10s", "-s", os.path.join(ROOT, "bench/serve/predict.lua"),
                          url + ":predict"], env=env, capture_output=True, text=True, check=True).stdout
    r = {}
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "status":
            r.setdefault("status", {})[p[1]] = int(p[2])
        elif p and p[0] in ("requests",):
            r.update({p[i]: int(p[i + 1]) for i in range(0, len(p), 2)})
        elif p and p[0].startswith("latency_p"):
            r[p[0]] = int(p[1])
        elif p and p[0] == "latency_mean_us":
            r["latency_mean_us"] = float(p[1])
            r["rps"] = float(p[3])
    bad = sum(v for k, v in r.get("status", {}).items() if k != "200")
    errors = sum(r.get(k, 0) for k in ("errors_connect", "errors_read", "errors_write", "errors_timeout"))
    r["failed"] = bad + errors
    return r


def inprocess(build, model_dir, rows, seconds, threads=1):
    out = subprocess.run([os.path.join(build, "bench/serve_inprocess_bench"), model_dir,
                          "--rows", str(rows), "--seconds", str(seconds), "--threads", str(threads)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def ensure_export(tern, work):
    weights = os.path.join(ROOT, "runs/fashion_mnist/weights.safetensors")
    if not os.path.exists(weights):
        log("training the default example (1 epoch) for its weights ...")
        subprocess.run([tern, "train", os.path.join(ROOT, "examples/fashion_mnist.toml"), "--set",
                        "training.epochs=1", "--quiet"], check=True, cwd=ROOT)
    src = os.path.join(work, "export")
    subprocess.run([tern, "export", os.path.join(ROOT, "examples/fashion_mnist.toml"), "--out",
                    os.path.join(src, "1")], check=True, cwd=ROOT, capture_output=True)
    return os.path.join(src, "1")


def copy_version(src, base, v):
    tmp = os.path.join(base, f".tmp-{v}")
    shutil.copytree(src, tmp)
    os.rename(tmp, os.path.join(base, str(v)))


def wait_available(url, v, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            st = json.loads(http_get(url + f"/versions/{v}"))
            if st["model_version_status"][0]["state"] == "AVAILABLE":
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"version {v} did not become AVAILABLE")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--output", default=os.path.join(ROOT, "BENCHMARKS.md"))
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    tern = os.path.join(build, "tools/tern/tern")
    work = tempfile.mkdtemp(prefix="tern-serve-bench-")
    started = time.time()
    src = ensure_export(tern, work)
    body1 = os.path.join(work, "body1.json")
    with open(body1, "w") as f:
        f.write(request_body(1))
    rows = []
    inproc = inprocess(build, src, 1, a.seconds)
    inproc64 = inprocess(build, src, 64, a.seconds)
    inproc64_all = inprocess(build, src, 64, a.seconds, threads=0)
    log(f"in-process: batch 1 {inproc}, batch 64 {inproc64}")
    batching_file = os.path.join(work, "batching.pbtxt")
    with open(batching_file, "w") as f:
        f.write("max_batch_size { value: 64 }\nbatch_timeout_micros { value: 0 }\n"
                "num_batch_threads { value: 2 }\nmax_enqueued_batches { value: 1000 }\n")
    for batching in (False, True):
        base = os.path.join(work, f"base-{int(batching)}")
        os.makedirs(base)
        copy_version(src, base, 1)
        monitoring = os.path.join(work, "monitoring.pbtxt")
        with open(monitoring, "w") as f:
            f.write("prometheus_config { enable: true }\n")
        extra = ["--monitoring_config_file", monitoring]
        if batching:
            extra += ["--enable_batching", "--batching_parameters_file", batching_file]
        srv = Server(tern, base, extra, os.path.join(work, f"serve-{int(batching)}.log"))
        try:
            for conc in (1, 8, 64):
                wrk(srv.url, body1, conc, 2)  # warm up connections and executables
                before = srv.metric_sums()
                r = wrk(srv.url, body1, conc, a.seconds)
                after = srv.metric_sums()
                n = max(after[2] - before[2], 1)
                r["server_us"] = (after[0] - before[0]) / n
                r["runtime_us"] = (after[1] - before[1]) / n
                log(f"batching={batching} c={conc}: {r}")
                rows.append((batching, conc, r))
            if batching:
                steady = rows[-2][2]  # c=8
                # p99 during swaps: a new version every second while wrk runs at c=8.
                env = dict(os.environ, TERN_WRK_BODY=body1)
                swap_seconds = 3 * a.seconds  # several swaps: each loads while wrk saturates both cores
                p = subprocess.Popen(["wrk", "-t", "2", "-c", "8", "-d", f"{swap_seconds}s", "--timeout", "10s",
                                      "-s", os.path.join(ROOT, "bench/serve/predict.lua"), srv.url + ":predict"],
                                     env=env, stdout=subprocess.PIPE, text=True)
                v = 2
                t_end = time.time() + swap_seconds - 2
                while time.time() < t_end:
                    copy_version(src, base, v)
                    wait_available(srv.url, v)
                    v += 1
                    time.sleep(0.5)
                out = p.communicate()[0]
                swap = {l.split()[0]: l.split()[1] for l in out.splitlines() if l.startswith("latency_p")}
                swap_failed = sum(int(l.split()[2]) for l in out.splitlines()
                                  if l.startswith("status ") and l.split()[1] != "200")
                swaps = v - 2
                # Memory across reloads: RSS after the next reload, then after 50 more.
                copy_version(src, base, v)
                wait_available(srv.url, v)
                rss1 = srv.rss_kib()
                for k in range(1, 51):
                    copy_version(src, base, v + k)
                    wait_available(srv.url, v + k)
                rss50 = srv.rss_kib()
        finally:
            srv.stop()
    shutil.rmtree(work, ignore_errors=True)
    report(a, rows, inproc, inproc64, inproc64_all, steady, swap, swap_failed, swaps, rss1, rss50, time.time() - started)


def report(a, rows, inproc, inproc64, inproc64_all, steady, swap, swap_failed, swaps, rss1, rss50, seconds):
    lines = [BEGIN, "## Serving: `tern serve` (REST) against in-process prediction", "",
             f"Generated by `make bench-serve` (bench/run_serve_bench.py --seconds {a.seconds}) on "
             f"{time.strftime('%Y-%m-%d')} in {seconds / 60:.1f} minutes, on the machine above. The model is "
             "the default example's CNN exported with `tern export` (raw uint8 pixels in, "
             "normalization inside); each request is one 28x28 image in the row format. wrk "
             "(bench/serve/predict.lua) runs on the same 2 cores as the server, so the figures "
             "include the load generator's own CPU.", "",
             "| batching | concurrency | requests/s | p50 | p99 | failed | server-side mean (model run) |",
             "|---|---|---|---|---|---|---|"]
    for batching, conc, r in rows:
        lines.append(f"| {'on' if batching else 'off'} | {conc} | {r['rps']:.0f} | "
                     f"{r['latency_p50_us'] / 1000:.2f} ms | {r['latency_p99_us'] / 1000:.2f} ms | {r['failed']} | "
                     f"{r['server_us']:.0f} us ({r['runtime_us']:.0f} us) |")
    best_served = max(r["rps"] for b, c, r in rows if b)
    c1 = [r for b, c, r in rows if not b and c == 1][0]
    lines += ["",
              f"- In-process (`serve::load_servable` + `run`, bench/serve_inprocess_bench, one intra-op "
              f"thread as `tern serve` uses by default): batch 1 {inproc['rows_per_s']:.0f} rows/s "
              f"(p50 {inproc['p50_us']:.0f} us); batch 64 {inproc64['rows_per_s']:.0f} rows/s "
              f"({inproc64_all['rows_per_s']:.0f} rows/s on both cores).",
              f"- Served throughput with batching (one-row requests) / in-process batch-64 throughput "
              f"on both cores: {best_served / inproc64_all['rows_per_s']:.2f} (goal >= 0.8); / in-process "
              f"batch-1 throughput: {best_served / inproc['rows_per_s']:.2f}.",
              f"- Added latency at concurrency 1 without batching, server-side (TF Serving's "
              f"request_latency - runtime_latency, the mean over the run): "
              f"{c1['server_us'] - c1['runtime_us']:.0f} us (goal <= 150 us, Triton's ~150 us is measured the "
              f"same way); as the client sees it (wrk p50 - in-process p50 of one row): "
              f"{c1['latency_p50_us'] - inproc['p50_us']:.0f} us, which adds wrk and the loopback TCP stack.",
              f"- p99 during {swaps} version swaps at concurrency 8 with batching: "
              f"{int(swap['latency_p99_us']) / 1000:.2f} ms against {steady['latency_p99_us'] / 1000:.2f} ms "
              f"steady ({int(swap['latency_p99_us']) / max(steady['latency_p99_us'], 1):.2f}x; goal <= 2x); "
              f"{swap_failed} failed requests.",
              f"- Resident memory after 1 reload {rss1 / 1024:.1f} MiB, after 50 more {rss50 / 1024:.1f} MiB "
              f"({(rss50 / rss1 - 1) * 100:+.1f}%; goal within 10%).", END]
    text = "\n".join(lines) + "\n"
    print(text)
    old = open(a.output).read() if os.path.exists(a.output) else ""
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text + old[old.index(END) + len(END) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(a.output, "w") as f:
        f.write(new)


if __name__ == "__main__":
    main()
