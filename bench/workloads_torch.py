#!/usr/bin/env python3
"""PyTorch side of the benchmark suite: the workloads of bench/workloads_bench.cc, same models
(layer for layer, Keras initializers and epsilons), data, batch, optimizer and thread count; one
workload per process, one JSON line on stdout (the same keys as the tern side).

PyTorch runs at its best setting on this CPU: batches are sliced from in-memory tensors (no
DataLoader workers competing for the cores), convolutional models use channels_last when
--channels-last is given (run_suite.py picks the faster format), bf16 runs use
torch.autocast('cpu', torch.bfloat16).

Usage: workloads_torch.py --workload w1 [--steps N] [--warmup N] [--seed S] [--threads N]
                          [--precision float32|mixed_bfloat16] [--channels-last] [--data DIR]
"""
import argparse
import gzip
import os
import json
import resource
import statistics
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_mnist(root):
    def images(name):
        x = read_idx(f"{root}/{name}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
        return torch.from_numpy(x).unsqueeze(1)  # NCHW

    def labels(name):
        return torch.from_numpy(read_idx(f"{root}/{name}-labels-idx1-ubyte.gz").astype(np.int64))

    return images("train"), labels("train"), images("t10k"), labels("t10k")


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


def cnn():
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
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


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--precision", default="float32")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    torch.set_num_threads(a.threads if a.threads > 0 else len(os.sched_getaffinity(0)))
    torch.manual_seed(a.seed)
    w = a.workload
    bf16 = a.precision == "mixed_bfloat16"
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    out = {"workload": w, "framework": "torch", "threads": torch.get_num_threads(), "precision": a.precision,
           "channels_last": a.channels_last}
    loss_fn = nn.CrossEntropyLoss()

    def step(model, opt, x, y):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if w in ("w1", "w2", "w3"):
        tx, ty, vx, vy = fashion_mnist(a.data)
        model = {"w1": lambda: mlp([1024]), "w2": lambda: mlp([512, 256], True, 0.2), "w3": cnn}[w]()
        if w == "w3":
            model = model.to(memory_format=fmt)
            tx, vx = tx.contiguous(memory_format=fmt), vx.contiguous(memory_format=fmt)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
        n, batch = tx.shape[0], 128
        model.train()
        w0, c0 = time.perf_counter(), time.process_time()
        perm = torch.randperm(n)
        steps = 0
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            step(model, opt, tx[idx], ty[idx])
            steps += 1
        out.update(seconds=time.perf_counter() - w0, cpu_seconds=time.process_time() - c0, steps=steps)
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, vx.shape[0], 256):
                correct += (model(vx[i:i + 256]).argmax(1) == vy[i:i + 256]).sum().item()
        out["test_accuracy"] = correct / vx.shape[0]
    elif w in ("w4", "w6"):
        g = torch.Generator().manual_seed(a.seed)
        if w == "w4":
            model = ResNet18().to(memory_format=fmt)
            xs = torch.rand(4, 32, 3, 32, 32, generator=g)
            xs = [x.contiguous(memory_format=fmt) for x in xs]
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        else:
            model = Transformer()
            xs = list(torch.randint(0, 8000, (4, 32, 128), generator=g))
            opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
        ys = list(torch.randint(0, 10, (4, 32), generator=g))
        model.train()
        for i in range(a.warmup):
            step(model, opt, xs[i % 4], ys[i % 4])
        times = []
        c0 = time.process_time()
        for i in range(a.steps):
            t0 = time.perf_counter()
            step(model, opt, xs[i % 4], ys[i % 4])
            times.append(time.perf_counter() - t0)
        out.update(seconds=statistics.median(times), cpu_seconds=(time.process_time() - c0) / a.steps, steps=a.steps)
    else:
        raise SystemExit(f"unknown workload {w}")
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
