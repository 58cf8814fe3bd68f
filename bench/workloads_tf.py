#!/usr/bin/env python3
"""TensorFlow / Keras 3 side of the benchmark suite (run with the peers' python:
.venv-peers/bin/python, bench/setup-peers.sh): the workloads of bench/workloads_bench.cc with the
same models (layer for layer, the same Keras initializers, epsilons and momenta), data, data
order, batch, optimizer and thread count; one workload per process, one JSON line on stdout (the
same keys as the tern side).

TensorFlow runs its own best way: `model.fit` in graph mode (a tf.function per step), without or
with XLA (--jit-compile: `model.compile(jit_compile=True)`); mixed precision is Keras'
`mixed_bfloat16` policy. Threads: --threads intra-op threads, --inter-op threads (the suite passes
the setting it found best on this machine, see run_suite.py).

Workloads:
  w1 w2 w3   one epoch of Fashion-MNIST in tern's sample order (--order FILE, written by
             `workloads_bench --order-out`), then the test accuracy; the steady part of the epoch
             (after the first step, which traces and compiles) is reported as workloads_bench does
  w4 w6 w9   steps on 4 synthetic batches (repeated), the median step after --warmup steps
  i-cnn i-resnet18  inference: `tf.function(model, jit_compile=...)` on --batch random rows,
             --steps calls after --warmup: p50 / p99 latency, rows per second
  --first-steps DIR (w1 w2 w3): dropout off, tern's initial weights (DIR/initial.safetensors) and
             order (DIR/order.json), 3 steps, their losses (bench/first_step_check.py)

Usage: workloads_tf.py --workload w1 [--steps N] [--warmup N] [--seed S] [--threads N]
                       [--inter-op N] [--precision float32|mixed_bfloat16] [--jit-compile]
                       [--order FILE] [--epoch-steps N] [--batch N] [--first-steps DIR] [--data DIR]
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402

import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

# --- models (tern/models: simple_models.cc, resnet.cc, transformer.cc) ---


def mlp(units, batch_norm=False, dropout=0.0):
    x = inp = keras.Input((28, 28))
    x = layers.Flatten()(x)
    for u in units:
        if batch_norm:
            x = layers.Dense(u, use_bias=False)(x)
            x = layers.BatchNormalization()(x)  # Keras defaults, as tern's: momentum 0.99, eps 1e-3
            x = layers.Activation("relu")(x)
        else:
            x = layers.Dense(u, activation="relu")(x)
        if dropout > 0:
            x = layers.Dropout(dropout)(x)
    return keras.Model(inp, layers.Dense(10)(x))


def cnn(dropout=0.25):
    x = inp = keras.Input((28, 28))
    x = layers.Reshape((28, 28, 1))(x)
    for f in (32, 64):
        x = layers.Conv2D(f, 3, activation="relu")(x)
        x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    if dropout > 0:
        x = layers.Dropout(dropout)(x)
    x = layers.Dense(128, activation="relu")(x)
    return keras.Model(inp, layers.Dense(10)(x))


def conv_bn(x, filters, kernel, stride, relu):
    x = layers.Conv2D(filters, kernel, strides=stride, padding="same", use_bias=False,
                      kernel_initializer="he_normal")(x)
    x = layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(x)
    return layers.Activation("relu")(x) if relu else x


def resnet(image, blocks, bottleneck, stem):
    """tern's resnet(): CIFAR stem (3x3/1) or ImageNet stem (7x7/2 + 3x3/2 max pool)."""
    x = inp = keras.Input((image, image, 3))
    if stem == "cifar":
        x = conv_bn(x, 64, 3, 1, True)
    else:
        x = conv_bn(x, 64, 7, 2, True)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    cin = 64
    for stage, n in enumerate(blocks):
        width = 64 << stage
        cout = 4 * width if bottleneck else width
        for b in range(n):
            stride = 2 if stage > 0 and b == 0 else 1
            short = conv_bn(x, cout, 1, stride, False) if stride != 1 or cin != cout else x
            if bottleneck:
                h = conv_bn(x, width, 1, 1, True)
                h = conv_bn(h, width, 3, stride, True)
                h = conv_bn(h, cout, 1, 1, False)
            else:
                h = conv_bn(x, width, 3, stride, True)
                h = conv_bn(h, width, 3, 1, False)
            x = layers.Activation("relu")(layers.Add()([short, h]))
            cin = cout
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(10)(x))


class PositionEmbedding(layers.Layer):
    """Adds a learned [seq, d] table to every sequence (tern's PositionEmbedding + Add)."""

    def build(self, input_shape):
        self.table = self.add_weight(shape=tuple(input_shape[1:]), initializer="glorot_uniform",
                                     name="embeddings")

    def call(self, x):
        return x + keras.ops.cast(self.table, x.dtype)


def transformer(vocab=8000, seq=128, d=256, heads=4, ff=1024, num_layers=4, dropout=0.1):
    ids = keras.Input((seq,), dtype="int64")
    tok = layers.Embedding(vocab, d)(ids)  # Keras' default init: uniform(-0.05, 0.05), as tern
    x = layers.Dropout(dropout)(PositionEmbedding()(tok))
    for _ in range(num_layers):
        h = layers.MultiHeadAttention(heads, d // heads, dropout=dropout)(x, x)
        x = layers.LayerNormalization(epsilon=1e-5)(layers.Add()([x, layers.Dropout(dropout)(h)]))
        h = layers.Dense(ff, activation="gelu")(x)
        h = layers.Dropout(dropout)(layers.Dense(d)(h))
        x = layers.LayerNormalization(epsilon=1e-5)(layers.Add()([x, h]))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(ids, layers.Dense(10)(x))


def build(w, dropout=True):
    if w == "w1":
        return mlp([1024])
    if w == "w2":
        return mlp([512, 256], True, 0.2 if dropout else 0.0)
    if w in ("w3", "i-cnn"):
        return cnn(0.25 if dropout else 0.0)
    if w in ("w4", "i-resnet18"):
        return resnet(32, [2, 2, 2, 2], False, "cifar")
    if w == "w9":
        return resnet(64, [3, 4, 6, 3], True, "imagenet")
    if w == "w6":
        return transformer()
    raise SystemExit(f"workloads_tf.py: unknown workload {w} (w1 w2 w3 w4 w6 w9 i-cnn i-resnet18)")


def compile_model(model, w, jit):
    if w in ("w4", "w9"):
        opt = keras.optimizers.SGD(0.01, momentum=0.9)
    else:
        opt = keras.optimizers.Adam(1e-3, epsilon=1e-7)
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=jit)


class StepTimes(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.times, self.losses, self.first_end = [], [], None

    def on_train_batch_begin(self, batch, logs=None):
        self.t0 = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        now = time.perf_counter()
        if self.first_end is None:
            self.first_end = now
        self.times.append(now - self.t0)
        if logs and "loss" in logs:
            self.losses.append(float(logs["loss"]))


def load_tern_weights(model, path):
    """tern's initial weights into the Keras model: the same layouts (dense [in, out], conv HWIO),
    matched in order per kind (kernels, biases, gammas, betas, moving statistics)."""
    tensors = peer_common.read_safetensors(path)
    by_layer = {}
    for name, value in tensors.items():
        layer, _, var = name.rpartition("/")
        by_layer.setdefault(layer, {})[var] = value

    def numbered(prefix):  # "dense", "dense_1", "dense_2", ...: tern's names in creation order
        names = [n for n in by_layer if n == prefix or (n.startswith(prefix + "_") and n[len(prefix) + 1:].isdigit())]
        return sorted(names, key=lambda n: 0 if n == prefix else int(n[len(prefix) + 1:]) + 1)

    kinds = {"Dense": "dense", "Conv2D": "conv2d", "BatchNormalization": "batch_normalization"}
    for kind, prefix in kinds.items():
        ours = [l for l in model.layers if type(l).__name__ == kind]
        theirs = numbered(prefix)
        if len(ours) != len(theirs):
            raise SystemExit(f"{path}: {len(theirs)} {kind} layers in the file, {len(ours)} in the model")
        for layer, name in zip(ours, theirs):
            src = by_layer[name]
            if kind == "BatchNormalization":
                values = [src["gamma"], src["beta"], src["moving_mean"], src["moving_variance"]]
            else:
                values = [src["kernel"]] + ([src["bias"]] if "bias" in src else [])
            want = [tuple(v.shape) for v in layer.get_weights()]
            if want != [v.shape for v in values]:
                raise SystemExit(f"{path}: '{name}' has shapes {[v.shape for v in values]}, the model "
                                 f"layer {layer.name} {want}")
            layer.set_weights(values)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--inter-op", type=int, default=1)
    p.add_argument("--precision", default="float32", choices=["float32", "mixed_bfloat16"])
    p.add_argument("--jit-compile", action="store_true")
    p.add_argument("--order", default="")
    p.add_argument("--epoch-steps", type=int, default=0)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--first-steps", default="")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    threads = a.threads if a.threads > 0 else len(os.sched_getaffinity(0))
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.inter_op)
    keras.utils.set_random_seed(a.seed)
    if a.precision == "mixed_bfloat16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    w = a.workload
    out = {"workload": w, "framework": "tensorflow", "tensorflow": tf.__version__, "keras": keras.__version__,
           "threads": threads, "inter_op": a.inter_op, "precision": a.precision}

    if w in ("w1", "w2", "w3"):
        tx, ty, vx, vy = peer_common.fashion_mnist(a.data)
        first = bool(a.first_steps)
        order_path = os.path.join(a.first_steps, "order.json") if first else a.order
        order = peer_common.read_order(order_path, tx.shape[0]) if order_path else np.arange(tx.shape[0])
        model = build(w, dropout=not first)
        compile_model(model, w, a.jit_compile)
        out["xla"] = bool(model.jit_compile)
        if first:
            load_tern_weights(model, os.path.join(a.first_steps, "initial.safetensors"))
        steps = -(-tx.shape[0] // 128)
        if first:
            steps = 3
        elif a.epoch_steps > 0:
            steps = min(steps, a.epoch_steps)
        x, y = tx[order[:steps * 128]], ty[order[:steps * 128]]
        timer = StepTimes()
        w0, c0 = time.perf_counter(), time.process_time()
        model.fit(x, y, batch_size=128, epochs=1, shuffle=False, verbose=0, callbacks=[timer])
        wall = time.perf_counter() - w0
        if first:
            # Keras logs the running mean of the epoch's losses; step k's own loss is
            # k * mean_k - (k - 1) * mean_(k-1) (the first one is exact).
            m = timer.losses
            out["losses"] = [m[0]] + [(k + 1) * m[k] - k * m[k - 1] for k in range(1, len(m))]
            peer_common.emit(out)
            return
        out.update(seconds=wall, cpu_seconds=time.process_time() - c0, steps=len(timer.times),
                   first_step_seconds=timer.first_end - w0,
                   steady_seconds=peer_common.steady_seconds(wall, timer.first_end - w0, len(timer.times)))
        _, acc = model.evaluate(vx, vy, batch_size=256, verbose=0)
        out["test_accuracy"] = float(acc)
    elif w in ("w4", "w6", "w9"):
        rng = np.random.default_rng(a.seed)
        if w == "w6":
            xs = rng.integers(0, 8000, (4 * 32, 128), dtype=np.int64)
        else:
            hw = 64 if w == "w9" else 32
            xs = rng.random((4 * 32, hw, hw, 3), dtype=np.float32)
        ys = rng.integers(0, 10, (4 * 32,), dtype=np.int64)
        ds = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(32).repeat()
        model = build(w)
        compile_model(model, w, a.jit_compile)
        out["xla"] = bool(model.jit_compile)
        timer = StepTimes()
        if a.warmup > 0:
            model.fit(ds, epochs=1, steps_per_epoch=a.warmup, shuffle=False, verbose=0)
        c0 = time.process_time()
        model.fit(ds, epochs=1, steps_per_epoch=a.steps, shuffle=False, verbose=0, callbacks=[timer])
        out.update(seconds=statistics.median(timer.times), cpu_seconds=(time.process_time() - c0) / a.steps,
                   steps=a.steps)
    elif w in ("i-cnn", "i-resnet18"):
        model = build(w)
        shape = (a.batch, 28, 28) if w == "i-cnn" else (a.batch, 32, 32, 3)
        x = tf.constant(np.random.default_rng(a.seed).random(shape, dtype=np.float32))
        f = tf.function(lambda t: model(t, training=False), jit_compile=a.jit_compile)
        out["xla"] = a.jit_compile
        for _ in range(max(a.warmup, 1)):
            f(x)
        times = []
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(a.steps):
            t0 = time.perf_counter()
            f(x)
            times.append(time.perf_counter() - t0)
        wall = time.perf_counter() - w0
        times.sort()
        out.update(batch=a.batch, seconds=statistics.median(times), p50_seconds=peer_common.percentile(times, 0.5),
                   p99_seconds=peer_common.percentile(times, 0.99), rows_per_second=a.batch * a.steps / wall,
                   cpu_seconds=(time.process_time() - c0) / a.steps, steps=a.steps)
    else:
        build(w)  # names the valid workloads
    peer_common.emit(out)


if __name__ == "__main__":
    main()
