#!/usr/bin/env bash
# The Debian package as a user gets it: CPack builds the .deb from BUILD_DIR (as `make package`
# does from its own build tree), its control fields and contents are checked, dpkg installs it into
# a fresh root (its own dpkg database: nothing on this machine changes), and the installed `tern
# --version` runs from that root.
#   deb_test.sh BUILD_DIR VERSION
set -euo pipefail
build=$(realpath "$1")
version=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tern_deb_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { echo "== $*"; }

step "cpack -G DEB"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" > "$work/cpack.log" ||
  { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/pkg/tern_*.deb)
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
test "$(dpkg-deb -f "$deb" Package)" = tern
test "$(dpkg-deb -f "$deb" Version)" = "$version"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libdnnl libc6 libstdc++6 libgomp1; do
  [[ $depends == *"$lib"* ]] || { echo "Depends lacks $lib: $depends"; exit 1; }
done
dpkg-deb --contents "$deb" > "$work/contents"
for f in ./usr/bin/tern ./usr/include/tern/nn/model.h ./usr/share/doc/tern/copyright \
         ./usr/share/doc/tern/README.md; do
  grep -q " $f\$" "$work/contents" || { echo "the package lacks $f"; exit 1; }
done
for pattern in '/libtern_base\.\(a\|so\)$' '/cmake/tern/tern-config\.cmake$' '/pkgconfig/tern\.pc$'; do
  grep -q "$pattern" "$work/contents" || { echo "the package lacks $pattern"; exit 1; }
done

step "dpkg --root (a fresh root with an empty dpkg database)"
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/log"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
# The root has none of the dependencies installed (they are this machine's libraries, found by
# the dynamic loader below); scripts run nowhere.
dpkg --root="$root" --force-depends --force-not-root --force-script-chrootless -i "$deb"
dpkg --root="$root" -s tern | grep -x "Status: install ok installed"
out=$(LD_LIBRARY_PATH="$root/usr/lib:$root/usr/lib/x86_64-linux-gnu" "$root/usr/bin/tern" --version)
echo "$out"
[[ $out == "tern $version"* ]] || { echo "expected 'tern $version'"; exit 1; }
dpkg --root="$root" --force-not-root --force-script-chrootless -r tern
test ! -e "$root/usr/bin/tern"
step "ok"
