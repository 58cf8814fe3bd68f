"""What the peers of the benchmark suite share (numpy only): Fashion-MNIST from its IDX files, the
epoch's sample order tern wrote (workloads_bench --order-out), tern's initial weights
(safetensors, read here in a few lines so that no package is needed), and the JSON line.

Used by bench/workloads_tf.py, bench/workloads_torch.py and bench/first_step_check.py.
"""
import gzip
import json
import resource
import struct

import numpy as np

SAFETENSORS_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
                      "U8": np.uint8, "F16": np.float16}


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise SystemExit(f"{path}: not an IDX file of unsigned bytes (magic {data[:4]!r})")
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    want = int(np.prod(dims)) + 4 + 4 * ndim
    if len(data) != want:
        raise SystemExit(f"{path}: {len(data)} bytes, the header {dims} needs {want}")
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_mnist(root):
    """(train_x, train_y, test_x, test_y): images as float32 [n, 28, 28] in [0, 1] (x / 255, as
    tern's idx_images_to_f32), labels int64."""
    def images(name):
        return read_idx(f"{root}/{name}-images-idx3-ubyte.gz").astype(np.float32) / np.float32(255.0)

    def labels(name):
        return read_idx(f"{root}/{name}-labels-idx1-ubyte.gz").astype(np.int64)

    return images("train"), labels("train"), images("t10k"), labels("t10k")


def read_order(path, rows):
    """The rows of the training split in tern's order for one epoch (a permutation of 0..rows-1)."""
    try:
        with open(path) as f:
            doc = json.load(f)
        order = np.asarray(doc["order"], dtype=np.int64)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{path}: not an order file written by workloads_bench --order-out ({e})")
    if order.shape != (rows,) or not np.array_equal(np.sort(order), np.arange(rows)):
        raise SystemExit(f"{path}: 'order' is not a permutation of the {rows} training rows "
                         f"({order.shape[0]} entries)")
    return order


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (the tensors tern's save_weights wrote)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise SystemExit(f"{path}: {len(data)} bytes, too short for a safetensors header")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise SystemExit(f"{path}: header of {n} bytes runs past the end of the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + n])
    except ValueError as e:
        raise SystemExit(f"{path}: header at byte 8 is not JSON ({e})")
    body = memoryview(data)[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        dtype = SAFETENSORS_DTYPES.get(t.get("dtype"))
        begin, end = t["data_offsets"]
        if dtype is None:
            raise SystemExit(f"{path}: tensor '{name}' has dtype {t.get('dtype')} (reader knows "
                             f"{', '.join(SAFETENSORS_DTYPES)})")
        count = int(np.prod(t["shape"])) if t["shape"] else 1
        if end - begin != count * np.dtype(dtype).itemsize or end > len(body):
            raise SystemExit(f"{path}: tensor '{name}' spans bytes {begin}..{end} of the data, "
                             f"which does not fit shape {t['shape']} {t['dtype']}")
        out[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(t["shape"]).copy()
    return out


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def steady_seconds(wall, first_step_end, steps):
    """The steady part of an epoch as workloads_bench reports it: from the end of the first step
    to the end of the epoch, scaled to the epoch's number of steps."""
    if steps < 2:
        return wall
    return (wall - first_step_end) * steps / (steps - 1)


def percentile(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


def emit(out):
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out), flush=True)
