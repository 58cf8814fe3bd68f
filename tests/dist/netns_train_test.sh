#!/usr/bin/env bash
# netns_train_test.sh: data-parallel `tern train` over 2 ranks ends with the same weights whether
# the ranks share one machine or sit on two hosts that talk over TCP.
#
#   netns_train_test.sh TERN_BINARY CONFIG WORKDIR [--set KEY=VALUE]...
#
#   1. mpirun -np 2 --oversubscribe on this machine (no namespaces; Open MPI picks the transport,
#      shared memory between the two ranks):
#        TERN_BINARY train CONFIG --set training.threads=1 [--set ...]
#                    --set output.dir=WORKDIR/local --metrics-json WORKDIR/local.json
#   2. the same on 2 network-namespace hosts, one rank each, MPI over TCP only (netns_hosts.sh job),
#      into WORKDIR/hosts and WORKDIR/hosts.json
#   3. "weights_sha256" of the two metrics files must be equal.
#
# The metrics file is the one rank 0 writes. Extra --set pairs (e.g. a short training.epochs) go to
# both runs. Each run is bounded by TERN_NETNS_STEP_TIMEOUT seconds (default 100).
# Exit: 0 equal, 1 a run failed or the weights differ (the message says which), 2 usage,
# 77 skipped (no root / no network namespaces / no mpirun here).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly here
readonly step_timeout=${TERN_NETNS_STEP_TIMEOUT:-100}

say() { echo "netns_train_test: $*" >&2; }
fail() {
  say "FAIL: $*"
  exit 1
}
usage() {
  sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2
  exit 2
}

(($# >= 3)) || usage
[[ -x $1 && -f $1 ]] || { say "not an executable: $1"; exit 2; }
[[ -f $2 ]] || { say "no config file: $2"; exit 2; }
tern=$(realpath "$1")
config=$(realpath "$2")
mkdir -p "$3"
workdir=$(realpath "$3")
shift 3
extra=("$@")
for ((i = 0; i < ${#extra[@]}; i += 2)); do
  [[ ${extra[i]} == --set && $((i + 1)) -lt ${#extra[@]} ]] || usage
done

# Skips before spending time on the one-machine run.
rc=0
"$here/netns_hosts.sh" check || rc=$?
((rc == 0)) || exit "$rc"
command -v mpirun >/dev/null || { say "skipped: no 'mpirun' (Debian: openmpi-bin)"; exit 77; }
# netns_hosts.sh check passed, so we are root: mpirun wants these to run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

rm -rf "$workdir/local" "$workdir/hosts" "$workdir/local.json" "$workdir/hosts.json"

# Runs a command in the background and waits for it, so that a TERM or INT to this script
# (Ctrl-C, CTest) reaches it at once: netns_hosts.sh then removes its hosts before exiting.
child=""
trap '[[ -z $child ]] || kill -TERM "$child" 2>/dev/null; wait; exit 143' TERM
trap '[[ -z $child ]] || kill -TERM "$child" 2>/dev/null; wait; exit 130' INT
run_waited() {
  local rc=0
  "$@" <&0 &
  child=$!
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

train_args=(train "$config" --set training.threads=1 "${extra[@]}")

say "1/3: mpirun -np 2 on this machine -> $workdir/local.json"
rc=0
run_waited timeout -k 10 "$step_timeout" \
  mpirun -np 2 --oversubscribe --bind-to none \
  "$tern" "${train_args[@]}" --set "output.dir=$workdir/local" \
  --metrics-json "$workdir/local.json" || rc=$?
((rc != 124 && rc != 137)) || fail "the one-machine run took over $step_timeout s"
((rc == 0)) || fail "the one-machine run (mpirun -np 2) exited $rc"

say "2/3: 2 namespace hosts, one rank each, MPI over TCP -> $workdir/hosts.json"
rc=0
run_waited "$here/netns_hosts.sh" job 2 --timeout "$step_timeout" -- \
  "$tern" "${train_args[@]}" --set "output.dir=$workdir/hosts" \
  --metrics-json "$workdir/hosts.json" || rc=$?
((rc != 124 && rc != 137)) || fail "the 2-host run took over $step_timeout s"
((rc == 0)) || fail "the 2-host run (netns_hosts.sh job 2) exited $rc"

say "3/3: weights_sha256, one machine against two hosts"
"${PYTHON3:-python3}" - "$workdir/local.json" "$workdir/hosts.json" <<'EOF'
import json
import sys


def weights_sha256(path, run):
    try:
        with open(path) as f:
            value = json.load(f).get("weights_sha256")
    except (OSError, ValueError) as e:
        sys.exit(f"netns_train_test: FAIL: {run}: cannot read its metrics: {e}")
    if not isinstance(value, str) or not value:
        sys.exit(f"netns_train_test: FAIL: {run}: no weights_sha256 in {path}")
    return value


local = weights_sha256(sys.argv[1], "one machine (mpirun -np 2)")
hosts = weights_sha256(sys.argv[2], "2 namespace hosts over TCP")
if local != hosts:
    sys.exit("netns_train_test: FAIL: the weights differ between one machine and two hosts:\n"
             f"  one machine (mpirun -np 2)   {local}  {sys.argv[1]}\n"
             f"  2 namespace hosts over TCP   {hosts}  {sys.argv[2]}")
print(f"netns_train_test: same weights on one machine and on two hosts: {local}")
EOF
