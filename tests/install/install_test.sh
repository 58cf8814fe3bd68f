#!/usr/bin/env bash
# tern as a C++ developer gets it: installs BUILD_DIR into a fresh prefix, then builds consumer/ (a
# project of its own, outside this tree) against that prefix and runs it:
#   1. CMake: find_package(tern CONFIG): per-module targets (tern::train, tern::serve) and tern::tern;
#   2. pkg-config: g++ with `pkg-config --cflags --libs tern` and nothing else.
# Each program trains a small model with the C++ API and exports it.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/tern_install_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { echo "== $*"; }

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
"$prefix/bin/tern" --version
for f in include/tern/nn/model.h include/tern/serve/export.h share/doc/tern/LICENSE \
         share/doc/tern/README.md share/doc/tern/CHANGELOG.md; do
  test -f "$prefix/$f" || { echo "missing $prefix/$f"; exit 1; }
done
config=$(find "$prefix" -name tern-config.cmake)
pc=$(find "$prefix" -name tern.pc)
test -n "$config" && test -n "$pc"
# Nothing installed may point back into the source or build tree.
if grep -rl -e "$src" -e "$build" "$(dirname "$config")" "$pc"; then
  echo "installed package files name the source or build tree"; exit 1
fi
# The libraries' own paths (a shared build runs from the prefix, found through RUNPATH).
libdir=$(dirname "$(dirname "$pc")")

step "find_package(tern): consumer/ in its own build tree"
cmake -S "$src/tests/install/consumer" -B "$work/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" > "$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
grep "tern .* from " "$work/cmake.log"
cmake --build "$work/cmake" -j 2
mkdir -p "$work/out"
"$work/cmake/consumer_modules" "$work/out/modules"
"$work/cmake/consumer_all" "$work/out/all"

step "pkg-config: g++ $(basename "$pc")"
export PKG_CONFIG_PATH=$(dirname "$pc")
pkg-config --modversion tern
cflags=$(pkg-config --cflags tern)
libs=$(pkg-config --libs tern)
echo "cflags: $cflags"
echo "libs: $libs"
# shellcheck disable=SC2086  # word splitting of the flags is intended
g++ -std=c++20 -O1 $cflags "$src/tests/install/consumer/main.cc" -o "$work/consumer_pkg" $libs
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/consumer_pkg" "$work/out/pkg"
step "ok"
