#!/usr/bin/env python3
"""`tern train` as N MPI workers, as a user runs it (CTest dist_train_faults): real mpirun jobs of
the built tern on Fashion-MNIST, every one bounded in time.

  workers     --workers 2 == mpirun -np 2, and the same job twice is bitwise identical
  kill        SIGKILL of one worker mid-run: the job ends within 5 s naming the rank; --resume
              finishes with the uninterrupted run's weights_sha256
  stop        SIGSTOP of one worker: the others' watchdog aborts within T + 2 s
  configs     workers started with different configs: an error naming the key, no hang
  uneven      shards of different sizes: an error on every rank, no hang
  interrupt   SIGINT / SIGTERM to `tern train --workers 2`, SIGUSR1 to mpirun, at random
              moments: every worker stops after the same step, rank 0 checkpoints and says
              where, exit 128 + signal, --resume chains reach the uninterrupted weights_sha256

usage: train_faults_test.py TERN WORKDIR [case...]
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")

CONFIG = """
[model]
name = "cnn"
[model.args]
filters = [8, 16]
dense_units = 32
dropout = 0.25
[data]
dataset = "fashion_mnist"
dir = "/usr/share/datasets/fashion-mnist"
shuffle_buffer = 4096
{data_extra}
[loss]
name = "sparse_categorical_crossentropy"
from_logits = true
metrics = ["accuracy"]
[optimizer]
name = "adam"
learning_rate = {lr}
[training]
epochs = {epochs}
batch_size = {batch}
steps_per_epoch = {steps}
seed = 5
threads = 1
[distribute]
watchdog_timeout = {watchdog}
[callbacks.checkpoint]
save_freq = 5
keep_last = 0
[output]
dir = "{out}"
"""


class Failure(Exception):
    pass


def check(ok, message):
    if not ok:
        raise Failure(message)


def write_config(work, name, out, lr=0.002, epochs=2, batch=64, steps=30, watchdog=0,
                 data_extra=""):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(CONFIG.format(out=out, lr=lr, epochs=epochs, batch=batch, steps=steps,
                              watchdog=watchdog, data_extra=data_extra))
    return path


def mpirun(np_, args, log, extra=()):
    cmd = ["mpirun", "-np", str(np_), "--bind-to", "none", *extra] + args
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=ENV,
                            start_new_session=True)


def finish(proc, limit, what):
    try:
        return proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise Failure(f"{what}: still running after {limit} s (a hang)")


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def sha_of(metrics):
    with open(metrics) as f:
        return json.load(f)["weights_sha256"]


def worker_pid(mpirun_pid, rank, limit=30):
    """The pid of the worker with OMPI_COMM_WORLD_RANK == rank among mpirun's children."""
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            children = open(f"/proc/{mpirun_pid}/task/{mpirun_pid}/children").read().split()
        except OSError:
            children = []
        for pid in children:
            try:
                env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            except OSError:
                continue
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
                return int(pid)
        time.sleep(0.05)
    raise Failure(f"no worker of rank {rank} under mpirun {mpirun_pid}")


def run_ok(tern, work, name, np_, args, limit=240, via_workers=False):
    log_path = os.path.join(work, name + ".log")
    with open(log_path, "w") as log:
        if via_workers:
            proc = subprocess.Popen([tern, "train", *args, "--workers", str(np_)], stdout=log,
                                    stderr=subprocess.STDOUT, env=ENV, start_new_session=True)
        else:
            proc = mpirun(np_, [tern, "train", *args], log)
        rc = finish(proc, limit, name)
    check(rc == 0, f"{name}: exit {rc}\n{read(log_path)[-3000:]}")
    return read(log_path)


def case_workers(tern, work):
    out = os.path.join(work, "w")
    cfg = write_config(work, "w.toml", out, epochs=1)
    sha = []
    for i, via in enumerate([True, False, False]):
        metrics = os.path.join(work, f"w{i}.json")
        text = run_ok(tern, work, f"workers{i}", 2,
                      [cfg, "--set", f"output.dir={out}{i}", "--metrics-json", metrics],
                      via_workers=via)
        check(json.load(open(metrics)).get("workers") == 2, f"workers{i}: metrics lack workers=2")
        check(text.count("test_accuracy") == 1, f"workers{i}: only rank 0 prints the result")
        sha.append(sha_of(metrics))
    check(len(set(sha)) == 1, f"--workers 2 and mpirun -np 2 runs differ: {sha}")


def case_kill(tern, work):
    ref_out, out = os.path.join(work, "kref"), os.path.join(work, "k")
    ref_cfg = write_config(work, "kref.toml", ref_out, epochs=3)
    cfg = write_config(work, "k.toml", out, epochs=3)
    run_ok(tern, work, "kill_reference", 2, [ref_cfg, "--metrics-json", ref_out + ".json"])
    reference = sha_of(ref_out + ".json")
    rng = random.Random()
    log_path = os.path.join(work, "kill.log")
    with open(log_path, "w") as log:
        proc = mpirun(2, [tern, "train", cfg, "--metrics-json", out + ".json"], log)
        victim = rng.choice([0, 1])
        pid = worker_pid(proc.pid, victim)
        # A random moment after the first checkpoint.
        ckpts = os.path.join(out, "checkpoints")
        deadline = time.time() + 120
        while time.time() < deadline and not (os.path.isdir(ckpts) and os.listdir(ckpts)):
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 1.0))
        killed_at = time.time()
        os.kill(pid, signal.SIGKILL)
        rc = finish(proc, 30, "killed job")
        took = time.time() - killed_at
    text = read(log_path)
    check(rc != 0, f"killed job exited 0\n{text[-2000:]}")
    check(took < 5, f"killed job took {took:.1f} s to stop (limit 5 s)")
    check(f"rank {victim}" in text, f"the killed job's output does not name rank {victim}:\n"
          + text[-2000:])
    print(f"kill: rank {victim} killed, job stopped in {took:.2f} s (exit {rc})")
    run_ok(tern, work, "kill_resume", 2, [cfg, "--resume", "--metrics-json", out + ".json"])
    resumed = sha_of(out + ".json")
    check(resumed == reference,
          f"resumed run's weights_sha256 {resumed} != uninterrupted {reference}")


def case_stop(tern, work):
    timeout = 3
    out = os.path.join(work, "s")
    cfg = write_config(work, "s.toml", out, epochs=50, watchdog=timeout)
    log_path = os.path.join(work, "stop.log")
    with open(log_path, "w") as log:
        proc = mpirun(2, [tern, "train", cfg], log)
        pid = worker_pid(proc.pid, 1)
        ckpts = os.path.join(out, "checkpoints")
        deadline = time.time() + 120
        while time.time() < deadline and not (os.path.isdir(ckpts) and os.listdir(ckpts)):
            time.sleep(0.02)
        stopped_at = time.time()
        os.kill(pid, signal.SIGSTOP)
        rc = finish(proc, timeout + 30, "stopped job")
        took = time.time() - stopped_at
    text = read(log_path)
    check(rc != 0, f"stopped job exited 0\n{text[-2000:]}")
    check("watchdog" in text, "the stopped job's output does not mention the watchdog:\n"
          + text[-2000:])
    check(took < timeout + 2, f"watchdog took {took:.1f} s (limit {timeout} + 2 s)")
    print(f"stop: rank 1 stopped, watchdog ended the job in {took:.2f} s (exit {rc})")


def case_configs(tern, work):
    a = write_config(work, "ca.toml", os.path.join(work, "c"), lr=0.002)
    b = write_config(work, "cb.toml", os.path.join(work, "c"), lr=0.003)
    log_path = os.path.join(work, "configs.log")
    with open(log_path, "w") as log:
        cmd = ["mpirun", "--bind-to", "none", "-np", "1", tern, "train", a, ":", "-np", "1",
               tern, "train", b]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=ENV,
                                start_new_session=True)
        rc = finish(proc, 60, "mismatched configs")
    text = read(log_path)
    check(rc != 0, "mismatched configs: exit 0")
    check("optimizer.learning_rate" in text and "differ" in text,
          "mismatched configs: the error does not name the key:\n" + text[-2000:])


def case_uneven(tern, work):
    # 59999 training rows (one held out) over 2 workers in local batches of 1: 30000 and 29999
    # batches.
    cfg = write_config(work, "u.toml", os.path.join(work, "u"), batch=2, steps=-1,
                       data_extra="validation_split = 0.0000167")
    with open(cfg) as f:
        text = f.read().replace("steps_per_epoch = -1\n", "")
    with open(cfg, "w") as f:
        f.write(text)
    log_path = os.path.join(work, "uneven.log")
    with open(log_path, "w") as log:
        proc = mpirun(2, [tern, "train", cfg], log)
        rc = finish(proc, 60, "uneven shards")
    text = read(log_path)
    check(rc != 0, "uneven shards: exit 0")
    check("different numbers of batches" in text,
          "uneven shards: no error naming the batch counts:\n" + text[-2000:])


def case_interrupt(tern, work):
    """SIGINT / SIGTERM to `tern train --workers 2` (which supervises mpirun and turns the first
    one into SIGUSR1, forwarded by mpirun to every rank), and SIGUSR1 to an mpirun started by
    hand, at random moments: every worker stops after the same step (the ranks fold the request
    into the step's all-reduce), rank 0 checkpoints and says where, the exit status is 128 +
    signal, and --resume chains finish with the uninterrupted weights_sha256."""
    ref_out = os.path.join(work, "iref")
    ref_cfg = write_config(work, "iref.toml", ref_out, epochs=3)
    run_ok(tern, work, "interrupt_reference", 2, [ref_cfg, "--metrics-json", ref_out + ".json"],
           via_workers=True)
    reference = sha_of(ref_out + ".json")
    rng = random.Random(20261126)
    plan = [(signal.SIGINT, True), (signal.SIGUSR1, False), (signal.SIGTERM, True),
            (signal.SIGINT, True)]
    graceful, chain, attempt = 0, 0, 0
    out = os.path.join(work, "i0")
    cfg = write_config(work, "i0.toml", out, epochs=3)
    while graceful < len(plan):
        attempt += 1
        check(attempt <= 20, f"only {graceful} graceful stops in 20 runs")
        sig, via_workers = plan[graceful]
        log_path = os.path.join(work, f"interrupt{attempt}.log")
        with open(log_path, "w") as log:
            args = [tern, "train", cfg, "--resume", "--metrics-json", out + ".json"]
            if via_workers:
                proc = subprocess.Popen(args + ["--workers", "2"], stdout=log,
                                        stderr=subprocess.STDOUT, env=ENV, start_new_session=True)
            else:
                proc = mpirun(2, args, log)
            deadline = time.time() + 120
            while time.time() < deadline and "Epoch" not in read(log_path) and \
                    proc.poll() is None:
                time.sleep(0.02)
            time.sleep(rng.uniform(0, 2.0))
            if proc.poll() is None:
                proc.send_signal(sig)
            rc = finish(proc, 120, "interrupted job")
        text = read(log_path)
        if rc == 0:  # finished before the signal
            check(sha_of(out + ".json") == reference, f"chain {chain} differs from the reference")
            chain += 1
            out = os.path.join(work, f"i{chain}")
            cfg = write_config(work, f"i{chain}.toml", out, epochs=3)
            continue
        check(rc == 128 + sig, f"{signal.Signals(sig).name}: exit {rc}, expected {128 + sig}\n"
              + text[-3000:])
        check(text.count("tern: SIGUSR1: stopping after this step") == 2,
              "not every rank was asked to stop:\n" + text[-3000:])
        check(text.count("interrupted by SIGUSR1 after step") == 1 and "checkpoint: " + out in text,
              "rank 0 did not report the checkpoint once:\n" + text[-3000:])
        graceful += 1
        step = text.split("interrupted by SIGUSR1 after step ")[1].split(" ")[0]
        how = "tern train --workers 2" if via_workers else "mpirun"
        print(f"interrupt: {signal.Signals(sig).name} to {how}: both ranks stopped after step "
              f"{step}, exit {rc}")
    run_ok(tern, work, "interrupt_finish", 2, [cfg, "--resume", "--metrics-json", out + ".json"],
           via_workers=True)
    resumed = sha_of(out + ".json")
    check(resumed == reference,
          f"resumed run's weights_sha256 {resumed} != uninterrupted {reference}")


def case_interrupt_one_rank(tern, work):
    """SIGUSR1 to rank 1 alone: rank 0 learns of it from the step's sums, both stop after the
    same step, and rank 0 checkpoints and names the signal rank 1 got (not a generic SIGTERM:
    the random moments of case_interrupt hit this when the signal reached one rank a step before
    the other)."""
    out = os.path.join(work, "one")
    cfg = write_config(work, "one.toml", out, epochs=3)
    log_path = os.path.join(work, "one_rank.log")
    with open(log_path, "w") as log:
        proc = mpirun(2, [tern, "train", cfg, "--metrics-json", out + ".json"], log)
        pid = worker_pid(proc.pid, 1)
        deadline = time.time() + 120
        while time.time() < deadline and "Epoch" not in read(log_path) and proc.poll() is None:
            time.sleep(0.02)
        check(proc.poll() is None, "one rank: the job ended before the signal\n"
              + read(log_path)[-2000:])
        os.kill(pid, signal.SIGUSR1)
        rc = finish(proc, 120, "job with one rank interrupted")
    text = read(log_path)
    check(rc == 128 + signal.SIGUSR1, f"one rank: exit {rc}, expected {128 + signal.SIGUSR1}\n"
          + text[-3000:])
    check(text.count("tern: SIGUSR1: stopping after this step") == 1,
          "one rank: not exactly one rank got the signal:\n" + text[-3000:])
    check(text.count("interrupted by SIGUSR1 after step") == 1 and "checkpoint: " + out in text,
          "one rank: rank 0 did not report SIGUSR1 and its checkpoint once:\n" + text[-3000:])
    step = text.split("interrupted by SIGUSR1 after step ")[1].split(" ")[0]
    print(f"interrupt_one_rank: SIGUSR1 to rank 1 only, rank 0 stopped after step {step} too")


CASES = {"workers": case_workers, "kill": case_kill, "stop": case_stop, "configs": case_configs,
         "uneven": case_uneven, "interrupt": case_interrupt,
         "interrupt_one_rank": case_interrupt_one_rank}


def main():
    tern, work = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(CASES)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failed = []
    for name in names:
        t0 = time.time()
        try:
            CASES[name](tern, work)
            print(f"PASS {name} ({time.time() - t0:.1f} s)", flush=True)
        except Failure as e:
            print(f"FAIL {name}: {e}", flush=True)
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
