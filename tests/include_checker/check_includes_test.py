#!/usr/bin/env python3
"""Tests scripts/check_includes.py on two fixture trees: `tree` (every include allowed) must pass,
`bad` (an upward include, a vendor header outside its folder, library code using a test dep and
a test helper) must fail, naming each culprit."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "..", "..", "scripts", "check_includes.py")


def run(tree):
    p = subprocess.run([sys.executable, CHECKER, os.path.join(HERE, tree)], capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout


def main():
    failures = []
    code, out = run("tree")
    if code != 0:
        failures.append(f"clean tree: exit {code}, expected 0:\n{out}")
    code, out = run("bad")
    if code != 1:
        failures.append(f"bad tree: exit {code}, expected 1")
    expected = [
        'tern/tensor/tensor.h:5: #include "tern/ops/op.h": module tensor may not include module '
        'ops (it may include: base, tensor)',
        "tern/tensor/tensor.h:3: #include <omp.h>: vendor header <omp.h...> belongs in "
        "tern/backends/cpu",
        'tern/ops/op.cc:2: #include "tern/extra/extra.h": module ops may not include module extra',
        'tern/ops/op.cc:4: #include "tests/support/helper.h": module ops is library code and may '
        "not include test helpers",
    ]
    for e in expected:
        if e not in out:
            failures.append(f"bad tree: missing violation\n  {e}\nin output:\n{out}")
    if len(out.strip().splitlines()) != len(expected):
        failures.append(f"bad tree: expected {len(expected)} violations, got:\n{out}")
    for f in failures:
        print("FAIL:", f)
    print("check_includes_test:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
