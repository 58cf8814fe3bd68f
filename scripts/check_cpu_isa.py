#!/usr/bin/env python3
"""Checks that a portable build of tern runs on any x86-64 CPU (tern/backends/cpu/cpu_isa.h).

Disassembles every object file of the tern_* libraries and finds the functions that use
instructions beyond baseline x86-64 (AVX/AVX2/FMA/F16C: VEX-encoded `v...` mnemonics or ymm/zmm
registers; BMI1/2, LZCNT, MOVBE, POPCNT). Such a function is allowed only
  - in a file that marks its code with TERN_CPU_V3_BEGIN (registered only on x86-64-v3 CPUs), and
  - with a symbol that is not weak: a weak (COMDAT) copy of an inline function or template could
    be the one the linker keeps for the whole program, and baseline code would then call it.
Also checks that each marked file does use such instructions (the region took effect).

Usage: check_cpu_isa.py SOURCE_DIR BUILD_DIR   (exit 0 when clean, 1 listing every violation)
"""

import concurrent.futures
import os
import re
import subprocess
import sys

FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
BEYOND_BASELINE = re.compile(
    r"^\s*[0-9a-f]+:\s+(v[a-z0-9]+|shlx|shrx|sarx|rorx|andn|bextr|blsi|blsmsk|blsr|bzhi|pdep|pext"
    r"|mulx|lzcnt|movbe|popcnt)\b|%[yz]mm")
MARKER = "TERN_CPU_V3_BEGIN"


def source_of(obj, source_dir, build_dir):
    """tern/CMakeFiles/tern_x.dir/a/b.cc.o -> SOURCE_DIR/tern/a/b.cc (None for generated code)."""
    rel = os.path.relpath(obj, build_dir)
    m = re.match(r"(.*)/CMakeFiles/[^/]+\.dir/(.*)\.o$", rel)
    if not m:
        return None
    path = os.path.join(source_dir, m.group(1), m.group(2))
    return path if os.path.exists(path) else None


def weak_symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-2:-1] in (["W"], ["V"])}


def beyond_baseline_functions(obj):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True,
                         text=True, check=True).stdout
    found, current = set(), None
    for line in out.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = m.group(1)
        elif current and BEYOND_BASELINE.search(line):
            found.add(current)
    return found


def check_object(args):
    obj, source_dir, build_dir = args
    src = source_of(obj, source_dir, build_dir)
    marked = False
    if src:
        with open(src, encoding="utf-8", errors="replace") as f:
            marked = MARKER in f.read()
    funcs = beyond_baseline_functions(obj)
    errors = []
    if not marked:
        for fn in sorted(funcs):
            errors.append(f"{obj}: {fn} uses instructions beyond x86-64 outside a "
                          f"{MARKER} region")
    else:
        for fn in sorted(funcs & weak_symbols(obj)):
            errors.append(f"{obj}: weak symbol {fn} uses x86-64-v3 instructions (the linker may "
                          "keep this copy for baseline callers)")
        if not funcs:
            errors.append(f"{obj}: {src} marks {MARKER} but uses no x86-64-v3 instruction")
    return errors


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    source_dir, build_dir = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    objects = []
    for dirpath, _, filenames in os.walk(os.path.join(build_dir, "tern")):
        if re.search(r"/CMakeFiles/tern_[a-z_]+\.dir", dirpath):
            objects += [os.path.join(dirpath, f) for f in filenames if f.endswith(".o")]
    objects.sort()
    if not objects:
        print(f"check_cpu_isa: no object files under {build_dir}/tern", file=sys.stderr)
        return 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(check_object, [(o, source_dir, build_dir) for o in objects]))
    errors = [e for r in results for e in r]
    for e in errors:
        print(e)
    print(f"check_cpu_isa: {len(objects)} objects, {len(errors)} violation(s)", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
