#!/usr/bin/env bash
# The peers of `make bench` in a virtual environment of their own: TensorFlow 2.21 (Keras 3, XLA),
# PyTorch 2.x (eager and torch.compile) + torchvision, onnxruntime + onnx, numpy, safetensors,
# exactly the versions pinned in bench/peers-requirements.txt, from PyPI.
#
# Usage: bench/setup-peers.sh [--venv DIR] [--check]
#   --venv DIR  where the environment goes (default: .venv-peers/ at the repository root, git-ignored;
#               or $TERN_PEERS_VENV)
#   --check     verify the installed environment again (imports, torch.compile on the CPU) even if it
#               is up to date
#
# Idempotent: when the environment was built from the same requirements file and checked, a second
# run prints the versions and does nothing else. Writes DIR/peers-versions.json (the versions, read
# by bench/run_suite.py into BENCHMARKS.md). The peers are never a dependency of tern or `make test`.
# Needs: Debian's python3 with python3-venv, and a C++ compiler (torch.compile's CPU code); both are
# in scripts/install-deps.sh. Exit status: 0 ready, 1 failed, 2 usage error.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TERN_PEERS_VENV:-$ROOT/.venv-peers}"
REQ="$ROOT/bench/peers-requirements.txt"
PYTHON="${PEERS_BASE_PYTHON:-/usr/bin/python3}"
CHECK=0

while [ $# -gt 0 ]; do
  case "$1" in
    --venv)
      [ $# -ge 2 ] || { echo "setup-peers.sh: --venv needs a directory" >&2; exit 2; }
      VENV="$2"; shift 2 ;;
    --check) CHECK=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup-peers.sh: unknown argument '$1' (--venv DIR, --check)" >&2; exit 2 ;;
  esac
done

STAMP="$VENV/.tern-peers-requirements.sha256"
VERSIONS="$VENV/peers-versions.json"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"

if [ "$CHECK" -eq 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -f "$VERSIONS" ]; then
  echo "setup-peers.sh: $VENV is up to date ($REQ unchanged); versions:"
  cat "$VERSIONS"
  exit 0
fi

if [ ! -x "$PYTHON" ]; then
  echo "setup-peers.sh: $PYTHON not found (install python3: scripts/install-deps.sh)" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup-peers.sh: creating $VENV with $PYTHON ($("$PYTHON" --version 2>&1))"
  if ! "$PYTHON" -m venv "$VENV"; then
    echo "setup-peers.sh: '$PYTHON -m venv' failed: Debian's python3-venv is needed" \
      "(scripts/install-deps.sh installs it)" >&2
    rm -rf "$VENV"
    exit 1
  fi
fi
rm -f "$STAMP"

echo "setup-peers.sh: installing $(grep -c '==' "$REQ") pinned packages from $REQ (about 3 GB to" \
  "download the first time: PyPI's torch for Linux is a CUDA build, see the file's header)"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --no-deps \
  --only-binary=:all: -r "$REQ"

echo "setup-peers.sh: checking the peers (imports; torch.compile of a small function on the CPU)"
"$VENV/bin/python" - "$VERSIONS" <<'PY'
import json
import os
import platform
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import onnx
import onnxruntime as ort
import safetensors
import tensorflow as tf
import keras
import torch
import torchvision

if torch.cuda.is_available():
    print("note: a CUDA device is visible; the suite runs every peer on the CPU", file=sys.stderr)
f = torch.compile(lambda x: torch.nn.functional.relu(x @ x.T + 1.0).sum(dim=1))
x = torch.randn(8, 8)
got, want = f(x), torch.nn.functional.relu(x @ x.T + 1.0).sum(dim=1)
if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
    raise SystemExit(f"torch.compile on the CPU gave {got} instead of {want}")
versions = {
    "python": platform.python_version(),
    "tensorflow": tf.__version__,
    "keras": keras.__version__,
    "torch": torch.__version__,
    "torchvision": torchvision.__version__,
    "onnxruntime": ort.__version__,
    "onnx": onnx.__version__,
    "numpy": np.__version__,
    "safetensors": safetensors.__version__,
    "torch_build": "PyPI wheel (CUDA build, run on the CPU)",
}
with open(sys.argv[1], "w") as fh:
    json.dump(versions, fh, indent=1)
    fh.write("\n")
PY
echo "$want" > "$STAMP"
echo "setup-peers.sh: ready ($VENV); versions:"
cat "$VERSIONS"
