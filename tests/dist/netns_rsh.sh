#!/usr/bin/env bash
# netns_rsh.sh: the "ssh" that Open MPI's rsh launcher calls (--mca plm_rsh_agent) to start its
# daemon on a network-namespace host made by netns_hosts.sh.
#
# Open MPI 4.1 calls the agent as
#     AGENT [plm_rsh_args...] HOST WORD...
# (it adds -x before plm_rsh_args only when the agent's file name is ssh), e.g.
#     netns_rsh.sh 10.213.7.2 ' orted' -mca ess '"env"' -mca ess_base_jobid '"1234"' ...
# The WORDs are one shell command line split at spaces, quoting included, and are joined with
# spaces and given to the login shell, as sshd does. Here the command runs:
#   - inside the network namespace whose eth0 has address HOST (table TERN_NETNS_HOSTS,
#     "IP=NAMESPACE IP=NAMESPACE ...", set by netns_hosts.sh run; without it, the one tern-*
#     namespace holding HOST),
#   - in a UTS namespace of its own whose hostname is the namespace's name, so each host has
#     its own hostname as on real machines,
#   - with the environment an ssh login gets (HOME, USER, LOGNAME, SHELL, PATH) and nothing
#     else of the caller's, so a job only sees the variables it forwards with mpirun -x, as on
#     real machines (TERN_NETNS_HOSTS is kept for daemons that start further daemons).
# Exit status: the command's, or 255 (as ssh) when the host is unknown.
set -euo pipefail

fail() {
  echo "netns_rsh: $*" >&2
  exit 255
}

# ssh-style options before HOST: skip them (those that take a value, with their value).
while (($#)) && [[ $1 == -* ]]; do
  case $1 in
    -[BbcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
    --) shift; break ;;
    *) shift ;;
  esac
done
(($# >= 2)) || fail "usage: netns_rsh.sh [options] HOST COMMAND..."
host=$1
shift

ns=""
for entry in ${TERN_NETNS_HOSTS:-}; do
  [[ ${entry%%=*} == "$host" ]] && ns=${entry#*=}
done
if [[ -z $ns ]]; then
  # No table, or not in it: look for the one tern-* namespace with this address.
  for candidate in $(ip netns list | awk '$1 ~ /^tern-/ {print $1}'); do
    if ip -n "$candidate" -o -4 addr show | grep -q " inet ${host//./\\.}/"; then
      [[ -z $ns ]] || fail "host $host: in both $ns and $candidate (set TERN_NETNS_HOSTS)"
      ns=$candidate
    fi
  done
fi
[[ -n $ns ]] || fail "host $host: no tern-* network namespace has this address"

user=$(id -un)
shell=$(getent passwd "$user" | cut -d: -f7)
shell=${shell:-/bin/sh}
home=$(getent passwd "$user" | cut -d: -f6)
# sshd's default PATH (Debian), with the sbin directories for root.
path=/usr/local/bin:/usr/bin:/bin
(($(id -u) != 0)) || path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# shellcheck disable=SC2016  # $1 and $@ are for sh
exec ip netns exec "$ns" unshare --uts -- \
  sh -c 'hostname "$1" && shift && exec "$@"' sh "$ns" \
  env -i HOME="${home:-/}" USER="$user" LOGNAME="$user" SHELL="$shell" PATH="$path" \
  TERN_NETNS_HOSTS="${TERN_NETNS_HOSTS:-}" \
  "$shell" -c "cd && $*"
