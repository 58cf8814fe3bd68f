#!/usr/bin/env bash
# netns_hosts.sh: K "hosts" on this machine, made of Linux network namespaces, and an Open MPI job
# across them over TCP, for testing multi-host training without a cluster.
#
#   netns_hosts.sh check                   can namespaces be made here? 0, or 77 with the reason
#   netns_hosts.sh --tag T up K            make hosts tern-T-h0 .. tern-T-h<K-1>
#   netns_hosts.sh --tag T run [--slots N] [--timeout S] [-x VAR[=VALUE]]... -- COMMAND [ARG]...
#                                          mpirun COMMAND on every host (N ranks per host, 1 by
#                                          default); exits with mpirun's status, 124 on timeout
#   netns_hosts.sh --tag T down            remove everything `up` made (and kill what runs there)
#   netns_hosts.sh [--tag T] job K [run options] -- COMMAND [ARG]...
#                                          up K, run, down, cleaning up however it ends (default
#                                          tag p<PID>)
#   netns_hosts.sh selftest                the CTest dist_netns_harness (see selftest below)
#
# The network (nothing is added to the root namespace; an interrupted run leaves nothing in it):
#
#   namespace tern-T-sw ("switch"):  bridge br0 with ports v0 .. v<K-1>
#   namespace tern-T-h<i> ("host"):  lo, and eth0 = the other end of v<i>, address 10.213.X.<i+1>/24
#
# X comes from a checksum of the tag. Different tags never see each other's traffic even when
# their X collide, because each set of hosts sits behind its own switch namespace; the tag only has
# to make the namespace names unique. `job` and `selftest` use the tag p<PID>, so parallel tests
# don't collide, and every `up` first removes p<PID> namespaces whose PID is gone (left by a test
# killed with SIGKILL, where no trap runs).
#
# How a job starts (see `run`): mpirun runs inside tern-T-h0 with its own UTS namespace whose
# hostname is tern-T-h0. For every other host it calls the launcher agent netns_rsh.sh the way it
# would call ssh; the agent starts Open MPI's daemon (orted) inside the namespace owning that IP,
# with its own hostname and an environment as bare as an ssh login's, and the daemon starts the
# ranks there. Between ranks MPI uses only the TCP BTL on the 10.213.X.0/24 interfaces: no shared
# memory (vader), no UCX, no OFI, so a job that passes here really talked over the network.
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), iproute2, util-linux (unshare), coreutils (timeout)
# and, for run/job/selftest, Open MPI's mpirun. Anything missing: a message and exit 77 (CTest's
# skip code).
set -euo pipefail

kHere="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly kHere
readonly kAgent="$kHere/netns_rsh.sh"
readonly kPrefix="tern"
readonly kSkip=77
readonly kDefaultTimeout=120

say() { echo "netns_hosts: $*" >&2; }
die() {
  say "error: $*"
  exit 2
}
skip() {
  say "skipped: $*"
  exit "$kSkip"
}

usage() {
  sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- names and addresses ---

tag=""
set_tag() {
  [[ $1 =~ ^[a-z0-9]{1,24}$ ]] || die "tag '$1': use 1-24 of [a-z0-9]"
  tag=$1
}
switch_ns() { echo "$kPrefix-$tag-sw"; }
host_ns() { echo "$kPrefix-$tag-h$1"; }
subnet_octet() { echo $(($(printf '%s' "$tag" | cksum | cut -d' ' -f1) % 256)); }
subnet_cidr() { echo "10.213.$(subnet_octet).0/24"; }
host_ip() { echo "10.213.$(subnet_octet).$(($1 + 1))"; }

# Names of this tag's namespaces, one a line (none: nothing printed).
tag_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$kPrefix-$tag-(sw|h[0-9]+)\$" || true
}

# Number of hosts `up` made for this tag (0 if none).
host_count() {
  local k=0
  while ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$(host_ns "$k")"; do
    k=$((k + 1))
  done
  echo "$k"
}

# --- check: can we make namespaces at all? ---

check() {
  [[ $(id -u) -eq 0 ]] || skip "needs root for network namespaces (uid $(id -u))"
  command -v ip >/dev/null || skip "no 'ip' command (iproute2)"
  command -v unshare >/dev/null || skip "no 'unshare' command (util-linux)"
  command -v timeout >/dev/null || skip "no 'timeout' command (coreutils)"
  # A namespace with a bridge and a veth pair: what `up` makes, in small.
  local probe="$kPrefix-probe$$" err
  if ! err=$(ip netns add "$probe" 2>&1); then
    skip "'ip netns add' failed (no CAP_SYS_ADMIN here?): $err"
  fi
  if ! err=$(ip -n "$probe" link set lo up 2>&1); then
    ip netns del "$probe"
    skip "cannot configure a network namespace (no CAP_NET_ADMIN here?): $err"
  fi
  if ! err=$(ip -n "$probe" link add br0 type bridge 2>&1 &&
    ip -n "$probe" link add v0 type veth peer name v1 2>&1); then
    ip netns del "$probe"
    skip "cannot make a bridge and a veth pair (kernel modules 'bridge', 'veth'?): $err"
  fi
  ip netns del "$probe"
}

check_mpirun() {
  command -v mpirun >/dev/null || skip "no 'mpirun' (Debian: openmpi-bin)"
}

# --- up ---

up() {
  local k=$1 i ns sw
  if ! [[ $k =~ ^[0-9]+$ ]] || ((k < 1 || k > 250)); then die "host count '$k': 1 to 250"; fi
  check
  gc_dead_pid_tags
  [[ -z $(tag_namespaces) ]] ||
    die "namespaces for tag '$tag' exist already: $(tag_namespaces | xargs)"
  sw=$(switch_ns)
  # A failure or a signal half-way removes what was made so far (then the caller's EXIT trap,
  # if any, is back).
  local caller_exit_trap
  caller_exit_trap=$(trap -p EXIT)
  trap 'down >/dev/null 2>&1 || true' EXIT
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for ((i = 0; i < k; i++)); do
    ns=$(host_ns "$i")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    # The pair is made inside the switch namespace and one end moved straight into the host's,
    # so it never appears in the root namespace.
    ip -n "$sw" link add "v$i" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "v$i" master br0 up
    # IPv4 only: no link-local IPv6 chatter on the links (it would blur the byte counters) and
    # no second address family for Open MPI to consider. Best effort: IPv6 may be off already.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  eval "${caller_exit_trap:-trap - EXIT}"
  local table=""
  for ((i = 0; i < k; i++)); do table+=" $(host_ns "$i")=$(host_ip "$i")"; done
  say "up: $k hosts, tag $tag, $(subnet_cidr):$table"
}

# --- down ---

# PIDs of every process inside the given namespaces, one a line.
namespace_pids() {
  local ns
  for ns in "$@"; do ip netns pids "$ns" 2>/dev/null || true; done
}

# Kills every process inside the given namespaces, by PID: TERM, up to 5 s to go, then KILL.
kill_namespace_processes() {
  local -a pids
  local tick
  mapfile -t pids < <(namespace_pids "$@")
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for ((tick = 0; tick < 50; tick++)); do
    mapfile -t pids < <(namespace_pids "$@")
    ((${#pids[@]})) || return 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

down() {
  local namespaces ns left
  mapfile -t namespaces < <(tag_namespaces)
  ((${#namespaces[@]})) || return 0
  kill_namespace_processes "${namespaces[@]}"
  # Hosts first: deleting a host namespace deletes its veth pair, then the switch goes.
  for ns in "${namespaces[@]}"; do
    [[ $ns == *-sw ]] || ip netns del "$ns" 2>/dev/null || true
  done
  ip netns del "$(switch_ns)" 2>/dev/null || true
  left=$(tag_namespaces | xargs)
  if [[ -n $left ]]; then
    say "error: down: still there: $left"
    return 1
  fi
  say "down: tag $tag removed"
}

# Removes namespaces of default (p<PID>) tags whose process is gone.
gc_dead_pid_tags() {
  local t saved=$tag
  for t in $(ip netns list 2>/dev/null | awk '{print $1}' |
    sed -nE "s/^$kPrefix-p([0-9]+)-(sw|h[0-9]+)\$/\1/p" | sort -u); do
    if ! kill -0 "$t" 2>/dev/null; then
      tag="p$t"
      say "removing hosts left by process $t, which is gone"
      down || true
    fi
  done
  tag=$saved
}

# --- run ---

# The arguments as one line a shell would split back into them (quoted only where needed).
shell_words() {
  local word line=""
  for word in "$@"; do
    [[ $word =~ ^[A-Za-z0-9_./:,=+@%-]+$ ]] || word=$(printf '%q' "$word")
    line+="${line:+ }$word"
  done
  echo "$line"
}

# The running `timeout ... mpirun`, and what a signal to this script does to it.
child=""
on_signal() {
  [[ -z $child ]] || kill -TERM "$child" 2>/dev/null || true
  [[ -z $child ]] || wait "$child" 2>/dev/null || true
  exit "$1"
}

run() {
  local slots=1 secs=$kDefaultTimeout k i hosts="" map="" cidr ns0 rc=0
  local -a exports=(-x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM)
  while (($#)); do
    case $1 in
      --slots) slots=${2:?--slots needs a value}; shift 2 ;;
      --timeout) secs=${2:?--timeout needs a value}; shift 2 ;;
      -x) exports+=(-x "${2:?-x needs VAR or VAR=VALUE}"); shift 2 ;;
      --) shift; break ;;
      *) die "run: unknown option '$1' (the command goes after --)" ;;
    esac
  done
  (($#)) || die "run: no command (netns_hosts.sh --tag T run [options] -- COMMAND...)"
  [[ $slots =~ ^[1-9][0-9]*$ ]] || die "run: --slots '$slots'"
  [[ $secs =~ ^[1-9][0-9]*$ ]] || die "run: --timeout '$secs'"
  check_mpirun
  k=$(host_count)
  ((k > 0)) || die "run: no hosts for tag '$tag' (run 'up' first)"
  for ((i = 0; i < k; i++)); do
    hosts+="${hosts:+,}$(host_ip "$i"):$slots"
    map+="${map:+ }$(host_ip "$i")=$(host_ns "$i")"
  done
  cidr=$(subnet_cidr)
  ns0=$(host_ns 0)
  # mpirun refuses to run as root without these; ranks get them too (-x above).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # The agent's IP -> namespace table (the agent also hands it on to the daemons it starts).
  export TERN_NETNS_HOSTS="$map"
  # shellcheck disable=SC2054  # the commas are mpirun's
  local -a mpirun_cmd=(
    mpirun -np $((k * slots)) --host "$hosts"
    # Start the other hosts' daemons through the namespace agent instead of ssh.
    --mca plm_rsh_agent "$kAgent"
    # Point-to-point over the ob1 PML and the TCP BTL only: no vader (shared memory through
    # /dev/shm, which all namespaces share), no UCX or OFI (which bring shared memory of
    # their own), "self" for a rank's messages to itself.
    --mca pml ob1 --mca btl tcp,self
    # MPI traffic and Open MPI's own control channel (OOB) on the hosts' network only.
    --mca btl_tcp_if_include "$cidr" --mca oob_tcp_if_include "$cidr"
    # Every "host" believes it has all of this machine's cores: binding would put every
    # host's rank 0 on core 0.
    --bind-to none
    "${exports[@]}"
    "$@"
  )
  say "run: $(shell_words "${mpirun_cmd[@]}")"
  # mpirun in host 0, under its own hostname, bounded in time (KILL 10 s after the TERM). In the
  # background so that a signal to this script is handled at once (bash runs traps only between
  # commands, and `wait` is one it interrupts): on_signal passes it on to `timeout`.
  # shellcheck disable=SC2016  # $0 and $@ are for sh
  timeout -k 10 "$secs" \
    ip netns exec "$ns0" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$ns0" \
    "${mpirun_cmd[@]}" <&0 &
  child=$!
  wait "$child" || rc=$?
  child=""
  # Evidence for the log: what went over each host's eth0 (this job and any before it).
  say "run: exit $rc; bytes through eth0 since up:$(for ((i = 0; i < k; i++)); do
    printf ' h%d rx %s tx %s' "$i" \
      "$(ip netns exec "$(host_ns "$i")" cat /sys/class/net/eth0/statistics/rx_bytes)" \
      "$(ip netns exec "$(host_ns "$i")" cat /sys/class/net/eth0/statistics/tx_bytes)"
  done)"
  if ((rc == 124 || rc == 137)); then
    say "run: timed out after $secs s; killing what is left on the hosts"
    local -a hs=()
    for ((i = 0; i < k; i++)); do hs+=("$(host_ns "$i")"); done
    kill_namespace_processes "${hs[@]}"
  fi
  return "$rc"
}

# --- job: up, run, down ---

job() {
  local k=$1 rc=0
  shift
  up "$k"
  # However the job ends (error, timeout, Ctrl-C, CTest's SIGTERM), the hosts go. (Set after
  # `up`, which refuses a tag whose hosts exist already: those are not this job's to remove.)
  trap 'down || true' EXIT
  run "$@" || rc=$?
  return "$rc"
}

# --- selftest ---

# Two hosts; each rank prints its rank, hostname and addresses; both hosts' addresses and
# hostnames must appear, each in its own rank. Then: a rank's exit status comes back through
# mpirun, a job over its time limit is stopped with 124, and after `down` no namespace is left.
selftest() {
  local out rc ip0 ip1 n0 n1 expect line
  check
  check_mpirun
  up 2
  # The output goes through a file, not $(...): a signal must find `run` in this shell.
  out=$(mktemp)
  trap 'down || true; rm -f "$out"' EXIT
  ip0=$(host_ip 0) ip1=$(host_ip 1) n0=$(host_ns 0) n1=$(host_ns 1)

  # shellcheck disable=SC2016  # expanded by the ranks' sh
  run --timeout 60 -- \
    sh -c 'echo "rank $OMPI_COMM_WORLD_RANK host $(hostname) ip $(hostname -I)"' >"$out"
  cat "$out"
  for expect in "rank 0 host $n0 ip $ip0" "rank 1 host $n1 ip $ip1"; do
    line=$(grep -F "$expect" "$out" || true)
    [[ -n $line ]] || die "selftest: no line '$expect' in the output above"
  done

  rc=0
  # shellcheck disable=SC2016  # expanded by the ranks' sh
  run --timeout 60 -- sh -c 'exit $((OMPI_COMM_WORLD_RANK + 3))' >/dev/null 2>&1 || rc=$?
  [[ $rc -eq 3 || $rc -eq 4 ]] || die "selftest: ranks exiting 3 and 4 gave mpirun status $rc"
  say "selftest: a rank's exit status comes back ($rc)"

  rc=0
  run --timeout 3 -- sleep 60 >/dev/null 2>&1 || rc=$?
  [[ $rc -eq 124 ]] || die "selftest: 'sleep 60' under --timeout 3 gave $rc, not 124"
  [[ -z $(ip netns pids "$n1") ]] || die "selftest: processes left on $n1 after the timeout"
  say "selftest: a job over its time limit is stopped (124)"

  down
  trap - EXIT
  rm -f "$out"
  [[ -z $(tag_namespaces) ]] || die "selftest: namespaces left: $(tag_namespaces | xargs)"
  say "selftest: passed"
}

# --- command line ---

main() {
  local cmd given=${TERN_NETNS_TAG:-}
  if [[ ${1:-} == --tag ]]; then
    (($# >= 2)) || usage
    given=$2
    shift 2
  fi
  if [[ -n $given ]]; then
    # p<digits> is the form of the default tags, which gc_dead_pid_tags may remove.
    [[ ! $given =~ ^p[0-9]+$ ]] || die "tag '$given': p<digits> is kept for the default tags"
    set_tag "$given"
  else
    set_tag "p$$"
  fi
  (($#)) || usage
  cmd=$1
  shift
  trap 'on_signal 130' INT
  trap 'on_signal 143' TERM
  # Separate up / run / down calls must name the same hosts: they need a tag of their own.
  if [[ -z $given && $cmd =~ ^(up|run|down)$ ]]; then
    die "$cmd: give the hosts a tag (--tag T or TERN_NETNS_TAG=T)"
  fi
  case $cmd in
    check) check ;;
    up) (($# == 1)) || usage; up "$1" ;;
    run) run "$@" ;;
    down) (($# == 0)) || usage; check; down ;;
    job) (($# >= 1)) || usage; job "$@" ;;
    selftest) (($# == 0)) || usage; selftest ;;
    -h | --help | help) usage ;;
    *) say "unknown command '$cmd'"; usage ;;
  esac
}

main "$@"
