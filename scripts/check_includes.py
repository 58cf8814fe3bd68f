#!/usr/bin/env python3
"""Checks every #include against tern's layer table (DESIGN.md section 2).

The table is tern/CMakeLists.txt itself: each `tern_module(<name> DIR <dir> DEPS ...
[PRIVATE_DEPS ...] [TEST_DEPS ...])` call (and such calls in a module folder's own
tern/<folder>/CMakeLists.txt, where DIR is relative to that folder: `DIR .`). A module's library
files may include headers of the module and of the modules in the transitive closure of its DEPS;
its test files (*_test.cc, *_test_util.h, test_util.h, *_fuzz.cc) may also include the closure of
its TEST_DEPS and tests/support/.
The trees outside tern/ and the vendor headers are stated once, in TREES and VENDORS below.

Usage: check_includes.py [ROOT]   (exit 0 when clean, 1 listing every violation)
"""

import os
import re
import sys

# What the trees outside tern/ may include: the modules they link (their CMakeLists).
TREES = {
    "tools/tern": ["config", "train", "models", "io", "serve", "dist", "sweep", "transform",
                   "pipeline"],
    "bench": ["config", "train", "models", "io", "serve", "dist", "transform", "pipeline"],
    "examples": ["config", "train", "models", "io"],
    "tests/consistency": ["runtime"],
    "tests/e2e": ["runtime"],
    "tests/support": ["runtime"],
    "tests/examples": ["config"],
    "tests/serve": ["config", "serve", "transform"],
    "tests/dist": ["config", "train", "dist"],
    "tests/pipeline": ["pipeline", "config", "serve"],
    "tests/install": ["train", "serve"],
}

# Vendor headers (a prefix of the name inside <>) and the folders that wrap them. Test files
# may include gtest/gmock anywhere.
VENDORS = {
    "oneapi/dnnl": ["tern/backends/cpu"],
    "dnnl": ["tern/backends/cpu"],
    "omp.h": ["tern/backends/cpu"],
    "openssl/": ["tern/base"],
    "zlib.h": ["tern/format", "tern/data", "tern/io"],
    "jpeglib.h": ["tern/data"],
    "png.h": ["tern/data"],
    "toml++": ["tern/config", "tern/sweep", "tern/transform", "tern/pipeline", "tools/tern"],
    "CLI/": ["tools/tern"],
    "nlohmann/": ["tern/io", "tern/train", "tern/data", "tern/config", "tern/serve", "tern/sweep",
                  "tern/transform", "tern/pipeline", "tools/tern", "tests", "bench"],
    "httplib.h": ["tern/serve", "tests/serve"],
    "simdjson": ["bench"],
    "mpi.h": ["tern/dist"],
    "sqlite3.h": ["tern/pipeline"],
    "cuda": ["tern/backends/cuda"],
    "cublas": ["tern/backends/cuda"],
    "cudnn": ["tern/backends/cuda"],
    "nccl": ["tern/dist"],
    "google/protobuf": ["tern/serve"],
    "grpc": ["tern/serve"],  # grpc/, grpcpp/
    "gtest/": [],  # test files only (below)
    "gmock/": [],
    "benchmark/": ["bench"],
}

MODULE_CALL = re.compile(r"tern_module\((.*?)\)\s*$", re.S | re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
KEYWORDS = {"DIR", "DEPS", "PRIVATE_DEPS", "TEST_DEPS"}


def parse_modules(cmake_text, base="tern"):
    """name -> {"dir": str, "deps": [...], "test_deps": [...]} from tern_module calls; DIR is
    relative to `base` (the folder of the CMakeLists.txt)."""
    modules = {}
    text = re.sub(r"#[^\n]*", "", cmake_text)
    for m in MODULE_CALL.finditer(text):
        words = m.group(1).split()
        name, section, entry = words[0], None, {"dir": None, "deps": [], "test_deps": []}
        for w in words[1:]:
            if w in KEYWORDS:
                section = w
            elif section == "DIR":
                entry["dir"] = os.path.normpath(base + "/" + w)
            elif section == "DEPS" and w.startswith("tern_"):
                entry["deps"].append(w[len("tern_"):])
            elif section == "TEST_DEPS" and w.startswith("tern_"):
                entry["test_deps"].append(w[len("tern_"):])
        modules[name] = entry
    return modules


def closure(modules, roots):
    seen, stack = set(), list(roots)
    while stack:
        m = stack.pop()
        if m in seen or m not in modules:
            continue
        seen.add(m)
        stack.extend(modules[m]["deps"])
    return seen


def module_of_path(modules, path):
    """The module whose folder holds `path` (the deepest folder wins: kernels/ref over kernels)."""
    best = None
    for name, m in modules.items():
        d = m["dir"]
        # analysis/ sub-folders, and proto/ (generated headers of a module's .proto files)
        if os.path.dirname(path) in (d, d + "/analysis", d + "/proto"):
            if best is None or len(d) > len(modules[best]["dir"]):
                best = name
    return best


def is_test_file(path):
    base = os.path.basename(path)
    return base.endswith(("_test.cc", "_test_util.h", "_fuzz.cc")) or base == "test_util.h"


def allowed_for(modules, path):
    """(set of allowed modules, may include tests/support, description) for a source file."""
    mod = module_of_path(modules, path)
    if mod is not None:
        allowed = closure(modules, [mod])
        desc = f"module {mod}"
        support = False
        if is_test_file(path):
            allowed |= closure(modules, modules[mod]["test_deps"])
            desc += " (test file)"
            support = True
        return allowed, support, desc
    for tree, roots in TREES.items():
        if path.startswith(tree + "/"):
            return closure(modules, roots), True, f"tree {tree}"
    return None, False, None


def module_of_include(modules, inc):
    """The module an include of "tern/..." names."""
    return module_of_path(modules, inc)


def vendor_rule(name):
    for prefix, dirs in VENDORS.items():
        if name.startswith(prefix):
            return prefix, dirs
    return None, None


def check_file(modules, root, path):
    errors = []
    allowed, support, desc = allowed_for(modules, path)
    if allowed is None:
        return errors
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, name = m.groups()
            where = f"{path}:{lineno}: #include {kind}{name}{'>' if kind == '<' else chr(34)}"
            if kind == '"':
                if name.startswith("tern/"):
                    target = module_of_include(modules, name)
                    if target is None:
                        errors.append(f"{where}: no module holds {os.path.dirname(name)}/")
                    elif target not in allowed:
                        errors.append(
                            f"{where}: {desc} may not include module {target} (it may include: "
                            f"{', '.join(sorted(allowed))})")
                elif name.startswith("tests/"):
                    if not support:
                        errors.append(f"{where}: {desc} is library code and may not include "
                                      "test helpers")
                elif name.startswith("tools/") and not path.startswith("tools/"):
                    errors.append(f"{where}: only tools/ may include the command's headers")
                continue
            prefix, dirs = vendor_rule(name)
            if prefix is None:
                continue
            if prefix in ("gtest/", "gmock/") and (is_test_file(path) or path.startswith("tests/")):
                continue
            if not any(path.startswith(d + "/") for d in dirs) or (
                    prefix in ("gtest/", "gmock/")):
                errors.append(f"{where}: vendor header <{prefix}...> belongs in "
                              f"{', '.join(dirs) if dirs else 'test files only'}")
    return errors


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    with open(os.path.join(root, "tern/CMakeLists.txt"), encoding="utf-8") as f:
        modules = parse_modules(f.read())
    for sub in sorted(os.listdir(os.path.join(root, "tern"))):
        cmake = os.path.join(root, "tern", sub, "CMakeLists.txt")
        if os.path.isfile(cmake):
            with open(cmake, encoding="utf-8") as f:
                modules.update(parse_modules(f.read(), "tern/" + sub))
    if not modules:
        print(f"{root}/tern/CMakeLists.txt: no tern_module(...) calls found", file=sys.stderr)
        return 1
    errors, files = [], 0
    for top in ["tern", "tools", "bench", "examples", "tests"]:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d != "fuzz_corpus"]
            for fn in sorted(filenames):
                if fn.endswith((".h", ".cc")):
                    rel = os.path.relpath(os.path.join(dirpath, fn), root)
                    files += 1
                    errors.extend(check_file(modules, root, rel))
    for e in errors:
        print(e)
    print(f"check_includes: {files} files, {len(modules)} modules, {len(errors)} violation(s)",
          file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
