#!/usr/bin/env bash
# Bring up a single-host OpenPBS 23.06 (server, scheduler, comm, mom and its PostgreSQL datastore) for the
# live tests, as root, without systemd, entirely inside a network namespace this script creates.
#
#   sudo scripts/pbs-up.sh           # builds OpenPBS once (3-7 min on 2 cores), then starts it (5-15 s)
#   sudo scripts/pbs-down.sh         # stops every daemon by PID; --purge also removes PBS_HOME and the namespace
#   ip netns exec rlsched-pbs /opt/pbs/bin/qstat -B      # every client runs inside the namespace
#
# Why a namespace: OpenPBS drops every 127.x address, so its host name must resolve to a non-loopback address.
# Rather than edit the machine's /etc/hosts or listen on a real interface, the daemons live in netns
# $PBS_NETNS whose own loopback also carries $PBS_NS_IP/32, and /etc/netns/$PBS_NETNS/hosts (bind-mounted over
# /etc/hosts by `ip netns exec`, for processes in the namespace only) maps $PBS_HOSTNAME to it.  Nothing
# listens in the host namespace; no client ever runs there (it would resolve $PBS_HOSTNAME through DNS).
#
# The source is an unmodified OpenPBS tarball given by path (no download): $RLSCHED_PBS_TARBALL, default
# ../shared/reference/local-openpbs/openpbs-cd7ab5eda.tar.gz beside the clone (CI's layout).  The build is
# skipped when $PBS_PREFIX/sbin/pbs_server exists.  The scheduler is set to sort on job priority (rlsched's
# boost lever, `qalter -p`), job history is kept 24 h (rlsched's completion feed), root may submit jobs and a
# user $PBS_TEST_USER exists for tests that submit as someone else.
#
# Idempotent: on a running system it re-applies the server settings and returns in about a second.
# --packages-only stops after the Debian packages, --build-only after the build (scripts/test.sh installs the
# packages first, then builds in the background while the rest of the suite runs; the fixture's own call
# waits on the script's lock).
# Environment (defaults): RLSCHED_PBS_TARBALL, PBS_PREFIX (/opt/pbs), PBS_HOME_DIR (/var/spool/pbs),
# PBS_NETNS (rlsched-pbs), PBS_NS_IP (10.77.0.1), PBS_HOSTNAME (pbshost), PBS_NODE_NCPUS (8),
# PBS_TEST_USER (pbsuser), BASE (/tmp/rlsched-pbs: build tree and logs).
set -euo pipefail
REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
TARBALL=${RLSCHED_PBS_TARBALL:-$REPO/../shared/reference/local-openpbs/openpbs-cd7ab5eda.tar.gz}
PREFIX=${PBS_PREFIX:-/opt/pbs}
PHOME=${PBS_HOME_DIR:-/var/spool/pbs}
NS=${PBS_NETNS:-rlsched-pbs}
NS_IP=${PBS_NS_IP:-10.77.0.1}
HOST=${PBS_HOSTNAME:-pbshost}
NCPUS=${PBS_NODE_NCPUS:-8}
TEST_USER=${PBS_TEST_USER-pbsuser}
BASE=${BASE:-/tmp/rlsched-pbs}
LOGS=$BASE/logs
die() { echo "pbs-up.sh: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
say() { echo "pbs-up.sh [+$(since "$T0") s] $*"; }
inns() { ip netns exec "$NS" "$@"; }
T0=$(now)
STOP_AFTER=""
case "${1:-}" in
  --packages-only) STOP_AFTER=packages;;
  --build-only) STOP_AFTER=build;;
  "") ;;
  *) die "unknown option '$1' (known: --packages-only, --build-only)";;
esac

[ "$(id -u)" = 0 ] || die "must run as root (network namespace, Debian packages, PBS daemons)"
case "$NCPUS" in ''|*[!0-9]*) die "PBS_NODE_NCPUS must be an integer (got '$NCPUS')";; esac
case "$NS_IP" in 127.*) die "PBS_NS_IP must not be a 127.x address: OpenPBS ignores those";; esac
mkdir -p "$LOGS"
# Only this script's builds and starts at a time (two test sessions starting at once would race).
exec 9>"$BASE/.pbs-up.lock"
flock 9
# The build must use Debian's python3 and compilers, not a virtualenv's or pyenv's.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# 1. Packages (build and run time).  Only the missing ones are installed.
PKGS="gcc g++ make libtool autoconf automake swig perl libhwloc-dev libx11-dev libxt-dev libxext-dev
 libxft-dev libedit-dev libedit2 libical-dev libical3 libncurses-dev libexpat1-dev expat libssl-dev
 libcjson-dev libcjson1 python3-dev tcl-dev tk-dev tcl tk postgresql postgresql-contrib
 postgresql-server-dev-all sudo iproute2 util-linux"
missing=()
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "missing packages and no apt-get: ${missing[*]}"
  say "installing ${missing[*]}"
  apt-get update -qq >"$LOGS/apt.log" 2>&1 || die "apt-get update failed (see $LOGS/apt.log)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
      >>"$LOGS/apt.log" 2>&1 || die "apt-get install failed (see $LOGS/apt.log)"
  say "packages installed"
fi
[ "$STOP_AFTER" = packages ] && exit 0

# 2. Build and install once.
if [ ! -x "$PREFIX/sbin/pbs_server" ]; then
  [ -r "$TARBALL" ] || die "OpenPBS source tarball not found: $TARBALL (set RLSCHED_PBS_TARBALL)"
  TB=$(now)
  say "building OpenPBS from $TARBALL into $PREFIX (3-7 min on 2 cores; log in $LOGS/build.log)"
  rm -rf "$BASE/build"
  mkdir -p "$BASE/build"
  tar -xzf "$TARBALL" -C "$BASE/build"
  SRC=$(dirname "$(find "$BASE/build" -maxdepth 2 -name configure.ac | head -1)")
  [ -f "$SRC/configure.ac" ] || die "no configure.ac inside $TARBALL"
  (
    cd "$SRC"
    ./autogen.sh
    ./configure --prefix="$PREFIX" --with-python=/usr
    make -j"$(nproc)"
    make install
  ) >"$LOGS/build.log" 2>&1 || die "build failed (last lines of $LOGS/build.log: $(tail -3 "$LOGS/build.log" | tr '\n' ' '))"
  # make install adds $PREFIX/bin to every login PATH; a client run outside the namespace would resolve the
  # PBS host name through DNS, so only namespaced calls may find them.
  rm -f /etc/profile.d/pbs.sh /etc/profile.d/pbs.csh
  rm -rf "$BASE/build"
  say "built and installed in $(since "$TB") s"
fi
[ "$STOP_AFTER" = build ] && exit 0

# 3. The namespace: its own loopback up, plus a non-127 address; a hosts file seen only inside it.
if ! ip netns exec "$NS" true 2>/dev/null; then
  ip netns delete "$NS" 2>/dev/null || true
  ip netns add "$NS"
fi
inns ip link set lo up
inns ip addr replace "$NS_IP/32" dev lo
mkdir -p "/etc/netns/$NS"
{
  echo "# written by $REPO/scripts/pbs-up.sh; visible only inside network namespace $NS"
  grep -vE "(^|[[:space:]])$HOST([[:space:]]|\$)" /etc/hosts | grep -v '^# written by .*pbs-up.sh' || true
  echo "$NS_IP $HOST"
} >"/etc/netns/$NS/hosts.tmp"
mv -f "/etc/netns/$NS/hosts.tmp" "/etc/netns/$NS/hosts"
chmod 644 "/etc/netns/$NS/hosts"
# Resolve inside the namespace only (a lookup outside could leave the machine as a DNS query).
[ "$(inns getent hosts "$HOST" | awk '{print $1}')" = "$NS_IP" ] || die "$HOST does not resolve to $NS_IP inside $NS"
NS_ID=$(inns readlink /proc/self/ns/net)

# 4. /etc/pbs.conf and PBS_HOME.
cat >/etc/pbs.conf <<EOF
PBS_SERVER=$HOST
PBS_START_SERVER=1
PBS_START_SCHED=1
PBS_START_COMM=1
PBS_START_MOM=1
PBS_EXEC=$PREFIX
PBS_HOME=$PHOME
PBS_CORE_LIMIT=unlimited
PBS_SCP=/usr/bin/scp
PBS_LEAF_NAME=$HOST
PBS_MOM_NODE_NAME=$HOST
EOF
if [ ! -f "$PHOME/pbs_environment" ] || [ ! -f /etc/init.d/pbs ]; then
  inns "$PREFIX/libexec/pbs_postinstall" >"$LOGS/postinstall.log" 2>&1 9>&- || die "pbs_postinstall failed (see $LOGS/postinstall.log)"
fi
chmod 4755 "$PREFIX/sbin/pbs_iff" "$PREFIX/sbin/pbs_rcp"
# No systemd: pbs_init.d must not take its "started at boot by systemd" path.
rm -f /etc/systemd/system/multi-user.target.wants/pbs.service /lib/systemd/system-preset/95-pbs.preset
mkdir -p "$PHOME/mom_priv"
touch "$PHOME/mom_priv/config"
# Job output is delivered with cp, not scp to "remote" $HOST.
grep -q '^\$usecp' "$PHOME/mom_priv/config" || echo '$usecp *:/ /' >>"$PHOME/mom_priv/config"

pid_of() {   # the PID in a lock/pid file, if that process is alive and is the expected program
  local p
  [ -r "$1" ] || return 0
  p=$(head -1 "$1" | tr -dc '0-9')
  if [ -n "$p" ] && [ -d "/proc/$p" ] && grep -q "$2" "/proc/$p/cmdline" 2>/dev/null; then echo "$p"; fi
}
SCHED_CFG=$PHOME/sched_priv/sched_config
prio_sort() {   # rlsched boosts with `qalter -p`, which the default scheduler config ignores
  [ -f "$SCHED_CFG" ] || return 0
  grep -q '^job_sort_key:.*job_priority' "$SCHED_CFG" && return 0
  printf 'job_sort_key: "job_priority HIGH"\tALL\n' >>"$SCHED_CFG"
  local s; s=$(pid_of "$PHOME/sched_priv/sched.lock" pbs_sched)
  if [ -n "$s" ]; then kill -HUP "$s"; fi
}
prio_sort

# 5. Start inside the namespace (unless it answers already).
for spec in server_priv/server.lock:pbs_server sched_priv/sched.lock:pbs_sched mom_priv/mom.lock:pbs_mom \
            server_priv/comm.lock:pbs_comm datastore/postmaster.pid:postgres; do
  p=$(pid_of "$PHOME/${spec%%:*}" "${spec##*:}")
  if [ -n "$p" ] && [ "$(readlink "/proc/$p/ns/net")" != "$NS_ID" ]; then
    die "${spec##*:} (pid $p) runs outside namespace $NS; stop it first"
  fi
done
if inns "$PREFIX/bin/qstat" -B >/dev/null 2>&1; then
  say "already running"
else
  TS=$(now)
  # 9>&-: the daemons must not inherit the lock, or they would hold it for as long as they run.
  inns "$PREFIX/libexec/pbs_init.d" start >"$LOGS/start.log" 2>&1 9>&- || die "pbs_init.d start failed (see $LOGS/start.log)"
  for _ in $(seq 1 720); do
    inns "$PREFIX/bin/qstat" -B >/dev/null 2>&1 && break
    sleep 0.25
  done
  inns "$PREFIX/bin/qstat" -B >/dev/null 2>&1 || die "the server did not answer within 180 s (see $LOGS/start.log)"
  say "server answers $(since "$TS") s after start"
  prio_sort   # sched_config is only written by the first start
fi

# 6. Server and node settings (idempotent).
q() { inns "$PREFIX/bin/qmgr" -c "$1"; }
q "set server job_history_enable = True"
q "set server job_history_duration = 24:00:00"
q "set server flatuid = True"
q "list server acl_roots" 2>/dev/null | grep -qE 'acl_roots = (.*,)?root(@|,|$)' || q "set server acl_roots += root"
inns "$PREFIX/bin/pbsnodes" "$HOST" >/dev/null 2>&1 || q "create node $HOST"
q "set node $HOST resources_available.ncpus = $NCPUS"
for _ in $(seq 1 240); do
  inns "$PREFIX/bin/pbsnodes" "$HOST" 2>/dev/null | grep -qE 'state = (free|job-busy)' && break
  sleep 0.25
done
inns "$PREFIX/bin/pbsnodes" "$HOST" 2>/dev/null | grep -qE 'state = (free|job-busy)' || die "node $HOST did not come up"
if [ -n "$TEST_USER" ] && ! id "$TEST_USER" >/dev/null 2>&1; then useradd -m -s /bin/bash "$TEST_USER"; fi
echo "server=$(pid_of "$PHOME/server_priv/server.lock" pbs_server) sched=$(pid_of "$PHOME/sched_priv/sched.lock" pbs_sched)" \
     "mom=$(pid_of "$PHOME/mom_priv/mom.lock" pbs_mom) comm=$(pid_of "$PHOME/server_priv/comm.lock" pbs_comm)" \
     "postgres=$(pid_of "$PHOME/datastore/postmaster.pid" postgres)" >"$BASE/pids"
say "up: $(cat "$BASE/pids"); clients: ip netns exec $NS $PREFIX/bin/qstat"
