#!/usr/bin/env python3
"""PyTorch side of the benchmark suite: the workloads of bench/workloads_bench.cc, same models
(layer for layer, Keras initializers and epsilons), data, data order, batch, optimizer and thread
count; one workload per process, one JSON line on stdout (the same keys as the tern side).

Runs with PyTorch 2.x from the peers' environment (.venv-peers/bin/python, bench/setup-peers.sh)
and still with Debian's python3-torch 1.13 (bench/ddp_torch.py imports its models). PyTorch runs
at its best setting on this CPU: batches are sliced from in-memory tensors (no DataLoader workers
competing for the cores), convolutional models use channels_last when --channels-last is given
(run_suite.py measures both), bf16 runs use torch.autocast('cpu', torch.bfloat16), the optimizers
use their fused CPU kernels where the version has them (torch >= 2.4), and --compile wraps the
model in torch.compile (default mode; PyTorch >= 2.0).

Workloads: w1 w2 w3 (one epoch of Fashion-MNIST in tern's order, --order FILE, then the test
accuracy; the steady part after the first step is reported as workloads_bench does), w4 w6 w9
(steps on 4 synthetic batches, the median after --warmup), i-cnn i-resnet18 (inference on --batch
random rows: p50 / p99 latency, rows per second; --onnxruntime runs the model exported by
torch.onnx.export in onnxruntime instead), --first-steps DIR (w1 w2 w3: dropout off, tern's
initial weights and order from DIR, 3 steps, their losses: bench/first_step_check.py).

Usage: workloads_torch.py --workload w1 [--steps N] [--warmup N] [--seed S] [--threads N]
                          [--precision float32|mixed_bfloat16] [--channels-last] [--compile]
                          [--onnxruntime] [--order FILE] [--epoch-steps N] [--batch N]
                          [--first-steps DIR] [--data DIR]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402


def fashion_mnist(root):
    """Fashion-MNIST as torch tensors: images NCHW float32 in [0, 1], labels int64."""
    tx, ty, vx, vy = peer_common.fashion_mnist(root)
    return (torch.from_numpy(tx).unsqueeze(1), torch.from_numpy(ty), torch.from_numpy(vx).unsqueeze(1),
            torch.from_numpy(vy))


def keras_init(model):
    """Keras defaults, as tern's layers use: glorot_uniform kernels, zero biases."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def mlp(units, batch_norm=False, dropout=0.0):
    layers, prev = [nn.Flatten()], 784
    for u in units:
        if batch_norm:
            # Keras BatchNormalization: momentum 0.99 (torch 0.01), epsilon 1e-3.
            layers += [nn.Linear(prev, u, bias=False), nn.BatchNorm1d(u, eps=1e-3, momentum=0.01), nn.ReLU()]
        else:
            layers += [nn.Linear(prev, u), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        prev = u
    layers.append(nn.Linear(prev, 10))
    model = nn.Sequential(*layers)
    keras_init(model)
    return model


def cnn(dropout=0.25):
    layers = [nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
              nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten()]
    if dropout > 0:
        layers.append(nn.Dropout(dropout))
    model = nn.Sequential(*layers, nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
    keras_init(model)
    return model


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1))

    def forward(self, x):
        h = F.relu(self.b1(self.c1(x)))
        h = self.b2(self.c2(h))
        return F.relu(h + (x if self.short is None else self.short(x)))


class ResNet18(nn.Module):
    """CIFAR stem (3x3 conv, no max pool), [2, 2, 2, 2] basic blocks, as tern's resnet18."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64, eps=1e-5, momentum=0.1),
                                  nn.ReLU())
        blocks, cin = [], 64
        for stage in range(4):
            width = 64 << stage
            for b in range(2):
                blocks.append(BasicBlock(cin, width, 2 if stage > 0 and b == 0 else 1))
                cin = width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(x.mean(dim=(2, 3)))


class Bottleneck(nn.Module):
    """1x1 -> 3x3 (stride) -> 1x1 (4x width), tern's bottleneck block."""

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.c1, self.b1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width, eps=1e-5, momentum=0.1)
        self.c2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.b2 = nn.BatchNorm2d(width, eps=1e-5, momentum=0.1)
        self.c3, self.b3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1))

    def forward(self, x):
        h = F.relu(self.b1(self.c1(x)))
        h = F.relu(self.b2(self.c2(h)))
        h = self.b3(self.c3(h))
        return F.relu(h + (x if self.short is None else self.short(x)))


class ResNet50(nn.Module):
    """ImageNet stem (7x7/2 conv, 3x3/2 max pool), [3, 4, 6, 3] bottleneck blocks, as tern's resnet50
    with stem = "imagenet"."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64, eps=1e-5, momentum=0.1),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for stage, n in enumerate([3, 4, 6, 3]):
            width = 64 << stage
            for b in range(n):
                blocks.append(Bottleneck(cin, width, 2 if stage > 0 and b == 0 else 1))
                cin = 4 * width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(x.mean(dim=(2, 3)))


class EncoderBlock(nn.Module):
    """Post-LN block as tern's transformer_classifier: LN(x + Drop(MHA(x))); LN(x + Drop(FFN(x)))."""

    def __init__(self, d, heads, ff, dropout):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.drop1 = nn.Dropout(dropout)
        self.norm1 = nn.LayerNorm(d, eps=1e-5)
        self.ff_in = nn.Linear(d, ff)
        self.ff_out = nn.Linear(ff, d)
        self.drop2 = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(d, eps=1e-5)

    def forward(self, x):
        x = self.norm1(x + self.drop1(self.attn(x, x, x, need_weights=False)[0]))
        return self.norm2(x + self.drop2(self.ff_out(F.gelu(self.ff_in(x)))))


class Transformer(nn.Module):
    def __init__(self, vocab=8000, seq=128, d=256, heads=4, ff=1024, layers=4, dropout=0.1, classes=10):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        nn.init.uniform_(self.tok.weight, -0.05, 0.05)
        self.pos = nn.Parameter(torch.empty(seq, d))
        nn.init.xavier_uniform_(self.pos)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[EncoderBlock(d, heads, ff, dropout) for _ in range(layers)])
        self.fc = nn.Linear(d, classes)

    def forward(self, ids):
        x = self.drop(self.tok(ids) + self.pos)
        return self.fc(self.blocks(x).mean(dim=1))


def load_tern_weights(model, path, w):
    """tern's initial weights (Keras layouts: dense [in, out], conv HWIO, flatten over (h, w, c))
    into the w1 / w2 / w3 model (Linear [out, in], Conv2d OIHW, flatten over (c, h, w))."""
    t = peer_common.read_safetensors(path)

    def dense(i):
        return f"dense_{i}" if i else "dense"

    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm1d)]
    with torch.no_grad():
        for i, m in enumerate(convs):
            name = f"conv2d_{i}" if i else "conv2d"
            m.weight.copy_(torch.from_numpy(t[name + "/kernel"].transpose(3, 2, 0, 1)))
            m.bias.copy_(torch.from_numpy(t[name + "/bias"]))
        for i, m in enumerate(linears):
            k = t[dense(i) + "/kernel"]
            if i == 0 and convs:  # the flatten after the last pooling: rows (h, w, c) -> (c, h, w)
                c = convs[-1].out_channels
                hw = int(round((k.shape[0] // c) ** 0.5))
                k = k.reshape(hw, hw, c, -1).transpose(2, 0, 1, 3).reshape(k.shape[0], -1)
            m.weight.copy_(torch.from_numpy(np.ascontiguousarray(k.T)))
            if m.bias is not None:
                m.bias.copy_(torch.from_numpy(t[dense(i) + "/bias"]))
        for i, m in enumerate(norms):
            name = f"batch_normalization_{i}" if i else "batch_normalization"
            m.weight.copy_(torch.from_numpy(t[name + "/gamma"]))
            m.bias.copy_(torch.from_numpy(t[name + "/beta"]))
            m.running_mean.copy_(torch.from_numpy(t[name + "/moving_mean"]))
            m.running_var.copy_(torch.from_numpy(t[name + "/moving_variance"]))


def make_optimizer(params, w):
    """SGD momentum 0.9 (w4, w9) or Adam (Keras' epsilon 1e-7), fused where the version has it."""
    params = list(params)
    for fused in (True, False):
        try:
            kw = {"fused": True} if fused else {}
            if w in ("w4", "w9"):
                return torch.optim.SGD(params, lr=0.01, momentum=0.9, **kw), fused
            return torch.optim.Adam(params, lr=1e-3, eps=1e-7, **kw), fused
        except (TypeError, RuntimeError):
            continue


def run_onnxruntime(model, x, threads):
    """model exported by torch.onnx.export, then an onnxruntime session (CPU, `threads` intra-op
    threads, sequential execution, every graph optimization)."""
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["logits"])
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feed = {"x": x.numpy()}
    return (lambda: sess.run(None, feed)), ort.__version__


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--precision", default="float32", choices=["float32", "mixed_bfloat16"])
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--onnxruntime", action="store_true")
    p.add_argument("--order", default="")
    p.add_argument("--epoch-steps", type=int, default=0)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--first-steps", default="")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    threads = a.threads if a.threads > 0 else len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    torch.manual_seed(a.seed)
    w = a.workload
    bf16 = a.precision == "mixed_bfloat16"
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    if a.compile and not hasattr(torch, "compile"):
        raise SystemExit(f"--compile needs PyTorch >= 2.0 (this is {torch.__version__})")
    if a.onnxruntime and not w.startswith("i-"):
        raise SystemExit("--onnxruntime runs the inference workloads only (i-cnn, i-resnet18)")
    out = {"workload": w, "framework": "onnxruntime" if a.onnxruntime else "torch", "torch": torch.__version__,
           "threads": torch.get_num_threads(), "precision": a.precision, "channels_last": a.channels_last,
           "compile": a.compile}
    loss_fn = nn.CrossEntropyLoss()

    def step(model, opt, x, y):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def maybe_compile(model):
        return torch.compile(model) if a.compile else model

    if w in ("w1", "w2", "w3"):
        tx, ty, vx, vy = fashion_mnist(a.data)
        first = bool(a.first_steps)
        order_path = os.path.join(a.first_steps, "order.json") if first else a.order
        order = (torch.from_numpy(peer_common.read_order(order_path, tx.shape[0])) if order_path
                 else torch.randperm(tx.shape[0]))
        drop = not first
        model = {"w1": lambda: mlp([1024]), "w2": lambda: mlp([512, 256], True, 0.2 if drop else 0.0),
                 "w3": lambda: cnn(0.25 if drop else 0.0)}[w]()
        if first:
            load_tern_weights(model, os.path.join(a.first_steps, "initial.safetensors"), w)
        if w == "w3":
            model = model.to(memory_format=fmt)
            tx, vx = tx.contiguous(memory_format=fmt), vx.contiguous(memory_format=fmt)
        opt, out["fused_optimizer"] = make_optimizer(model.parameters(), w)
        net = maybe_compile(model)
        n, batch = tx.shape[0], 128
        steps = -(-n // batch)
        if first:
            steps = 3
        elif a.epoch_steps > 0:
            steps = min(steps, a.epoch_steps)
        model.train()
        losses, first_end = [], None
        w0, c0 = time.perf_counter(), time.process_time()
        for s in range(steps):
            idx = order[s * batch:(s + 1) * batch]
            loss = step(net, opt, tx[idx], ty[idx])
            if first:
                losses.append(loss.item())
            if s == 0:
                first_end = time.perf_counter() - w0
        wall = time.perf_counter() - w0
        if first:
            out["losses"] = losses
            peer_common.emit(out)
            return
        out.update(seconds=wall, cpu_seconds=time.process_time() - c0, steps=steps, first_step_seconds=first_end,
                   steady_seconds=peer_common.steady_seconds(wall, first_end, steps))
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, vx.shape[0], 256):
                correct += (net(vx[i:i + 256]).argmax(1) == vy[i:i + 256]).sum().item()
        out["test_accuracy"] = correct / vx.shape[0]
    elif w in ("w4", "w6", "w9"):
        g = torch.Generator().manual_seed(a.seed)
        if w in ("w4", "w9"):
            model = (ResNet18() if w == "w4" else ResNet50()).to(memory_format=fmt)
            hw = 32 if w == "w4" else 64
            xs = torch.rand(4, 32, 3, hw, hw, generator=g)
            xs = [x.contiguous(memory_format=fmt) for x in xs]
        else:
            model = Transformer()
            xs = list(torch.randint(0, 8000, (4, 32, 128), generator=g))
        opt, out["fused_optimizer"] = make_optimizer(model.parameters(), w)
        net = maybe_compile(model)
        ys = list(torch.randint(0, 10, (4, 32), generator=g))
        model.train()
        for i in range(a.warmup):
            step(net, opt, xs[i % 4], ys[i % 4])
        times = []
        c0 = time.process_time()
        for i in range(a.steps):
            t0 = time.perf_counter()
            step(net, opt, xs[i % 4], ys[i % 4])
            times.append(time.perf_counter() - t0)
        out.update(seconds=statistics.median(times), cpu_seconds=(time.process_time() - c0) / a.steps, steps=a.steps)
    elif w in ("i-cnn", "i-resnet18"):
        model = (cnn() if w == "i-cnn" else ResNet18()).eval()
        shape = (a.batch, 1, 28, 28) if w == "i-cnn" else (a.batch, 3, 32, 32)
        x = torch.rand(*shape, generator=torch.Generator().manual_seed(a.seed))
        if a.onnxruntime:
            call, out["onnxruntime"] = run_onnxruntime(model, x, threads)
        else:
            model = model.to(memory_format=fmt)
            x = x.contiguous(memory_format=fmt)
            net = maybe_compile(model)

            def call():
                with torch.no_grad():
                    return net(x)
        for _ in range(max(a.warmup, 1)):
            call()
        times = []
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(a.steps):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        wall = time.perf_counter() - w0
        times.sort()
        out.update(batch=a.batch, seconds=statistics.median(times), p50_seconds=peer_common.percentile(times, 0.5),
                   p99_seconds=peer_common.percentile(times, 0.99), rows_per_second=a.batch * a.steps / wall,
                   cpu_seconds=(time.process_time() - c0) / a.steps, steps=a.steps)
    else:
        raise SystemExit(f"unknown workload {w} (w1 w2 w3 w4 w6 w9 i-cnn i-resnet18)")
    peer_common.emit(out)


if __name__ == "__main__":
    main()
