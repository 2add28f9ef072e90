#!/usr/bin/env bash
# Bring up a single-host Slurm 22.05 test cluster (Debian 12) on 127.0.0.1, as root, without systemd.
#
#   sudo scripts/slurm-up.sh                 # BASE=/tmp/rlsched-slurm by default
#   export SLURM_CONF=/tmp/rlsched-slurm/etc/slurm.conf
#   scripts/slurm-down.sh                    # cancels jobs, stops the daemons by PID
#
# slurmctld and slurmdbd run as SlurmUser=slurm (Debian's default; the user is created when missing), slurmd as
# root.  One controller and three nodes, each a real slurmd on its own port of 127.0.0.1 (`slurmd -N NAME`; Debian's
# 22.05 build has MULTIPLE_SLURMD): node1 (16 CPUs; partitions debug, short and high share it) and node2-node3
# (4 CPUs each; partitions wide and accel share them; node2 has a fake GRES gpu, node3 none), plus four
# State=CLOUD nodes (cloud1-4) that Slurm's power saving starts through $BASE/bin/resume.sh and stops through
# suspend.sh.  Their "cloud" is scripts/local-cloud-provider (state in $BASE/provider): each instance is a real
# slurmd on its own port.  slurmd must run as root, and the hooks run as slurm: they reach the provider through
# $BASE/bin/cloud-provider, which goes through sudo for exactly that command (/etc/sudoers.d/rlsched-test-PORT).
# When $BASE/etc/rlsched.toml exists, resume.sh/suspend.sh go through rlsched's leasing hooks
# (plugins/slurm/rlsched-resume, rlsched-suspend: they check the daemon's heartbeat and lease permit, then run
# the config's [leasing] provider_command); without it they call the local provider directly.
# Accounting is real: a MariaDB server (its own datadir under $BASE/mysql, on 127.0.0.1 only) behind a slurmdbd
# on 127.0.0.1, so sacct, sshare and the fair-share factor work; the cluster and three accounts with different
# shares (alpha 50, beta 30, gamma 20; users root and nobody in each), plus atlas, cms and lhcb (the VOs of the
# other live tests), are registered with sacctmgr.
# The config is made for tests (docs/slurm.md, docs/multifactor.md): priority/multifactor with every factor
# weighted and short times (PriorityMaxAge 10 min, half-life 1 h, recalculation every minute) so a test sees
# sprio's factors move; admin Nice offsets still dominate (the backend's Nice step exceeds the weight sum);
# jobcomp/filetxt (the daemon's completion feed reads that file), MinJobAge (finished jobs stay visible to
# squeue), short scheduler intervals so a test sees a start within ~1 s.
#
# Idempotent: when the controller in $BASE is already up and node1 answers, it only reports that.
# Environment: BASE, RLSCHED_SLURM_PORT (slurmctld port, default 6817; node1's slurmd uses +1, slurmdbd +2, MariaDB +3,
# cloud nodes +4..+7, node2 and node3 +8 and +9), RLSCHED_SLURM_CPUS (CPUs of node1, default 16).
set -euo pipefail
BASE=${BASE:-/tmp/rlsched-slurm}
PORT=${RLSCHED_SLURM_PORT:-6817}
CPUS=${RLSCHED_SLURM_CPUS:-16}
CONF=$BASE/etc/slurm.conf
DBD_PORT=$((PORT + 2))
DB_PORT=$((PORT + 3))
DB_SOCK=$BASE/run/mariadb.sock
REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)   # the hooks and the provider live here
die() { echo "slurm-up.sh: $*" >&2; exit 1; }
now() { date +%s.%N; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }   # zombies are dead
T0=$(now)

[ "$(id -u)" = 0 ] || die "must run as root (it installs Debian packages and runs slurmctld/slurmd/munged)"
case "$PORT$CPUS" in *[!0-9]*) die "RLSCHED_SLURM_PORT and RLSCHED_SLURM_CPUS must be integers";; esac
case "$BASE" in /*) ;; *) die "BASE must be an absolute path (got '$BASE')";; esac

NODES="node1 node2 node3"
# Already up?  (pidfile alive and every node answers)
if [ -f "$BASE/run/slurmctld.pid" ] && alive "$(cat "$BASE/run/slurmctld.pid")" \
   && [ "$(SLURM_CONF=$CONF sinfo -h -N -n node1,node2,node3 -o '%N %T' 2>/dev/null | sort -u \
           | grep -Ec ' (idle|mixed|allocated)$')" = 3 ]; then
  echo "slurm-up.sh: already up (SLURM_CONF=$CONF)"
  exit 0
fi

# 1. Packages.  --no-install-recommends: slurm-wlm's Recommends pull ~40 plugin and -dev packages.
missing=()
for cmd in slurmctld:slurmctld slurmd:slurmd squeue:slurm-client munged:munge slurmdbd:slurmdbd \
           mariadbd:mariadb-server sudo:sudo; do
  command -v "${cmd%%:*}" >/dev/null || missing+=("${cmd#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "Slurm is not installed and apt-get is unavailable (need: ${missing[*]})"
  echo "slurm-up.sh: installing ${missing[*]}" >&2
  apt-get update -qq || die "apt-get update failed"
  # A package's postinst may try to start its service; without systemd that is refused harmlessly.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "apt-get install ${missing[*]} failed"
fi
T1=$(now)

# 2. munge: the package's postinst normally creates the key; create it if it is missing.
if [ ! -s /etc/munge/munge.key ]; then
  mungekey --create --keyfile=/etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
install -d -o munge -g munge -m 755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged          # daemonizes; pid in /run/munge/munged.pid
  for _ in $(seq 1 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n | unmunge >/dev/null 2>&1 || die "munged does not answer (see /var/log/munge/munged.log)"

# 3. Config and directories.  Leftover daemons of an earlier, half-failed run would hold the ports.
for f in "$BASE"/run/slurmd-*.pid "$BASE/run/slurmctld.pid" "$BASE/run/slurmdbd.pid" "$BASE/run/mariadb.pid"; do
  [ -f "$f" ] && alive "$(cat "$f")" && kill "$(cat "$f")" 2>/dev/null && sleep 0.5
  rm -f "$f"
done
# ... and so would the cloud instances of the local provider (records: "PID STATE START_TICKS"; the start time
# in clock ticks, field 22 of /proc/PID/stat, tells the instance from a process that got its PID later).
for f in "$BASE"/provider/instances/*; do
  [ -f "$f" ] || continue
  read -r pid _ start < "$f" || true
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || stat=""
  # shellcheck disable=SC2086
  [ -n "$stat" ] && set -- ${stat##*) } && [ "${20:-}" = "$start" ] && kill "$pid" 2>/dev/null && sleep 0.5
  rm -f "$f"
done
mkdir -p "$BASE"/{etc,state,spool/node1,spool/node2,spool/node3,log,run,bin,provider}
# A fresh accounting database and controller state every time: tests see no old usage (slurmctld's -c keeps
# the association usage file, which a new database would attach to other associations).
rm -rf "$BASE/mysql" "$BASE/state"
mkdir -p "$BASE/state"
# SlurmUser=slurm (not root): Debian's slurm-wlm-basic-plugins creates the user; create it if it is missing.
id slurm >/dev/null 2>&1 || useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin slurm || die "cannot create the slurm user"
# What slurmctld and slurmdbd write (state, logs with the jobcomp file and the hooks' log, pidfiles) is theirs;
# BASE and the config stay root's and readable by all (the hooks, running as slurm, read rlsched.toml there).
chmod 755 "$BASE" "$BASE/etc" "$BASE/bin"
chown -R slurm:slurm "$BASE/state" "$BASE/log" "$BASE/run"
# Bind to the hostname's address rather than 0.0.0.0, but only when the hostname resolves to loopback.
COMM=""
getent hosts "$(hostname)" | grep -q '^127\.' && COMM="CommunicationParameters=NoInAddrAny,NoCtldInAddrAny"
cat > "$CONF" <<CONF
# Written by rlsched scripts/slurm-up.sh: a test cluster on 127.0.0.1, not for production.
ClusterName=rlsched
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool/%n
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd-%n.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# Lets node1 declare more CPUs than the host has (else it goes INVAL "Low CPUs").
SlurmdParameters=config_overrides
ReturnToService=2
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# slurmdbd on 127.0.0.1 (sacct, sshare, fair-share); the daemon's completion feed still reads the jobcomp file.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
JobCompType=jobcomp/filetxt
JobCompLoc=$BASE/log/jobcomp.txt
MinJobAge=600
SchedulerType=sched/backfill
# Tests wait for starts: run the main scheduler every 2 s and backfill every 1 s (defaults 60 s and 30 s).
SchedulerParameters=sched_interval=2,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# multifactor, not basic: with basic, base priorities sit near 2^32 and Nice offsets cannot compose.
# Every factor weighted and short times, so that sprio's factors move within a test (docs/multifactor.md):
# age reaches 1 after 10 min; usage halves every hour; priorities and fair-share are recomputed every minute
# (PriorityCalcPeriod's least value).  Fair Tree (the default) with the accounts of sacctmgr below.
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
PriorityWeightQOS=0
PriorityMaxAge=0-0:10:00
PriorityDecayHalfLife=0-1
PriorityCalcPeriod=1
MpiDefault=none
$COMM
MailProg=/bin/true
KillWait=5
SlurmdTimeout=60
# --- cloud bursting through power saving (used by the lease cap, issue 6) ---
SuspendProgram=$BASE/bin/suspend.sh
ResumeProgram=$BASE/bin/resume.sh
SuspendTime=20
SuspendTimeout=10
ResumeTimeout=60
SuspendExcNodes=node[1-3]
# Needed for powered-down cloud nodes to show in sinfo.
PrivateData=cloud
TreeWidth=65533
# GRES: node2 has one "gpu" (its device file is /dev/null: Slurm drops a file-less gpu), node3 none.
GresTypes=gpu
NodeName=node1 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$CPUS RealMemory=8000 Weight=1 State=UNKNOWN
NodeName=node2 NodeAddr=127.0.0.1 NodeHostname=localhost Port=$((PORT + 8)) CPUs=4 RealMemory=2000 Gres=gpu:1 Weight=10 State=UNKNOWN
NodeName=node3 NodeAddr=127.0.0.1 NodeHostname=localhost Port=$((PORT + 9)) CPUs=4 RealMemory=2000 Weight=10 State=UNKNOWN
NodeName=cloud[1-4] NodeAddr=127.0.0.1 NodeHostname=localhost Port=[$((PORT + 4))-$((PORT + 7))] CPUs=8 RealMemory=4000 Feature=cloud Weight=100 State=CLOUD
PartitionName=debug Nodes=node1 Default=YES MaxTime=INFINITE State=UP
# Same node, short limit: lets tests exercise a class rule by partition.
PartitionName=short Nodes=node1 MaxTime=00:15:00 State=UP
# Same node, PriorityJobFactor 2: the partition factor is 1 there and 0.5 in the others (docs/multifactor.md).
PartitionName=high Nodes=node1 MaxTime=INFINITE State=UP PriorityJobFactor=2
PartitionName=cloud Nodes=cloud[1-4] MaxTime=INFINITE State=UP
PartitionName=burst Nodes=node1,cloud[1-4] MaxTime=INFINITE State=UP
# Two partitions sharing node2 and node3: multi-node jobs, job arrays, GRES and GRES-less jobs (issue 16).
PartitionName=wide Nodes=node[2-3] MaxTime=INFINITE State=UP
PartitionName=accel Nodes=node[2-3] MaxTime=INFINITE State=UP
CONF
cat > "$BASE/etc/gres.conf" <<GRES
# Written by rlsched scripts/slurm-up.sh: a fake gpu (no device behind it).
NodeName=node2 Name=gpu File=/dev/null
GRES

# The local provider starts slurmd, which runs as root; the hooks run as SlurmUser (slurm).  This wrapper is the
# provider command of the hooks and of the daemon: as root it runs the provider, as slurm it goes through sudo,
# which allows exactly this command (arguments after --dir BASE/provider are the provider's, checked by it).
PROVIDER="$REPO/scripts/local-cloud-provider"
cat > "$BASE/bin/cloud-provider" <<SCRIPT
#!/bin/bash
[ "\$(id -u)" = 0 ] && exec /usr/bin/env SLURM_CONF=$CONF "$PROVIDER" --dir "$BASE/provider" "\$@"
exec sudo -n /usr/bin/env SLURM_CONF=$CONF "$PROVIDER" --dir "$BASE/provider" "\$@"
SCRIPT
# sudoers: '=', ',', ':' and '\' are special in a command's arguments.
esc() { printf '%s' "$1" | sed 's/[=,:\\]/\\&/g'; }
SUDOERS=/etc/sudoers.d/rlsched-test-$PORT
printf 'slurm ALL=(root) NOPASSWD: /usr/bin/env %s %s --dir %s *\n' "$(esc "SLURM_CONF=$CONF")" "$(esc "$PROVIDER")" \
    "$(esc "$BASE/provider")" > "$SUDOERS.tmp"
chmod 440 "$SUDOERS.tmp"
visudo -cqf "$SUDOERS.tmp" || die "the sudoers rule for the provider is invalid ($SUDOERS.tmp)"
mv "$SUDOERS.tmp" "$SUDOERS"

cat > "$BASE/bin/resume.sh" <<SCRIPT
#!/bin/bash
# ResumeProgram: slurmctld runs it as  resume.sh <hostlist>  (e.g. cloud[1-2]).
# With $BASE/etc/rlsched.toml: rlsched's leasing hook, which may refuse (stale daemon heartbeat, lease permit)
# and then runs the config's [leasing] provider_command.  Without it: the local provider directly, which starts
# one slurmd per node (resetting the blocked-signal mask slurmscriptd leaves, with -b and </dev/null).
export SLURM_CONF=$CONF PROVIDER_DIR=$BASE/provider
echo "\$(date +%FT%T) RESUME \$*" >> $BASE/log/power.log
if [ -f $BASE/etc/rlsched.toml ]; then
  RLSCHED_CONFIG=$BASE/etc/rlsched.toml exec "$REPO/plugins/slurm/rlsched-resume" "\$@" >>$BASE/log/power.log 2>&1
fi
exec $BASE/bin/cloud-provider resume \$(scontrol show hostnames "\$1") >>$BASE/log/power.log 2>&1
SCRIPT
cat > "$BASE/bin/suspend.sh" <<SCRIPT
#!/bin/bash
# SuspendProgram: slurmctld runs it as  suspend.sh <hostlist>.  Same two paths as resume.sh; never refuses.
export SLURM_CONF=$CONF PROVIDER_DIR=$BASE/provider
echo "\$(date +%FT%T) SUSPEND \$*" >> $BASE/log/power.log
if [ -f $BASE/etc/rlsched.toml ]; then
  RLSCHED_CONFIG=$BASE/etc/rlsched.toml exec "$REPO/plugins/slurm/rlsched-suspend" "\$@" >>$BASE/log/power.log 2>&1
fi
exec $BASE/bin/cloud-provider suspend \$(scontrol show hostnames "\$1") >>$BASE/log/power.log 2>&1
SCRIPT
chmod 755 "$BASE"/bin/*.sh "$BASE/bin/cloud-provider"

cat > "$BASE/etc/slurmdbd.conf" <<DBD
# Written by rlsched scripts/slurm-up.sh: slurmdbd for the test cluster, on 127.0.0.1.
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=slurm
PidFile=$BASE/run/slurmdbd.pid
LogFile=$BASE/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=rlsched-test
StorageLoc=slurm_acct_db
DBD
chmod 600 "$BASE/etc/slurmdbd.conf"     # slurmdbd refuses a config others can read (it holds the password)
chown slurm:slurm "$BASE/etc/slurmdbd.conf"     # ... and one its SlurmUser does not own
T2=$(now)

# 4. MariaDB: its own datadir and socket under $BASE, TCP on 127.0.0.1 only (slurmdbd has no socket option).
#    Runs as root (test cluster only); the server does not daemonize, so it is started in the background.
mariadb-install-db --no-defaults --datadir="$BASE/mysql" --user=root --auth-root-authentication-method=socket \
    --skip-test-db >"$BASE/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed (see $BASE/log/mariadb-install.log)"
setsid mariadbd --no-defaults --datadir="$BASE/mysql" --user=root --bind-address=127.0.0.1 --port="$DB_PORT" \
    --socket="$DB_SOCK" --pid-file="$BASE/run/mariadb.pid" --log-error="$BASE/log/mariadb.log" \
    --skip-log-bin --innodb-buffer-pool-size=32M --innodb-log-file-size=8M --skip-name-resolve \
    </dev/null >/dev/null 2>&1 &
for _ in $(seq 1 100); do mariadb-admin --no-defaults --socket="$DB_SOCK" ping >/dev/null 2>&1 && break; sleep 0.1; done
mariadb-admin --no-defaults --socket="$DB_SOCK" ping >/dev/null 2>&1 || die "MariaDB does not answer (see $BASE/log/mariadb.log)"
mariadb --no-defaults --socket="$DB_SOCK" -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'rlsched-test';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" || die "creating the slurm database user failed"
T3=$(now)

# 5. slurmdbd (daemonizes; pid in $BASE/run/slurmdbd.pid), then the cluster and its accounts.
export SLURM_CONF=$CONF
slurmdbd || die "slurmdbd failed to start (see $BASE/log/slurmdbd.log)"
for _ in $(seq 1 100); do sacctmgr -n -P list cluster >/dev/null 2>&1 && break; sleep 0.1; done
sacctmgr -n -P list cluster >/dev/null 2>&1 || die "slurmdbd does not answer (see $BASE/log/slurmdbd.log)"
sacctmgr -i add cluster rlsched >/dev/null || die "sacctmgr add cluster failed"
# alpha/beta/gamma: three shares for the fair-share tests; atlas/cms/lhcb: the VOs other live tests submit as.
for share in alpha:50 beta:30 gamma:20 atlas,cms,lhcb:1; do
  sacctmgr -i add account "${share%%:*}" Cluster=rlsched Fairshare="${share#*:}" >/dev/null \
      || die "sacctmgr add account ${share%%:*} failed"
done
sacctmgr -i add user root,nobody Account=alpha,beta,gamma,atlas,cms,lhcb Cluster=rlsched >/dev/null || die "sacctmgr add user failed"
T4=$(now)

# 6. Controller and nodes (one slurmd per node, `-N NAME`, each on its node's port): they fork into the
#    background; pids in $BASE/run/.
slurmctld -c -f "$CONF" || die "slurmctld failed to start (see $BASE/log/slurmctld.log)"   # -c: empty state
for node in $NODES; do
  slurmd -N "$node" -f "$CONF" || die "slurmd failed to start (see $BASE/log/slurmd-$node.log)"
done
idle() { [ "$(sinfo -h -N -n "${NODES// /,}" -o '%N %T' 2>/dev/null | sort -u | grep -c ' idle$')" = 3 ]; }
for _ in $(seq 1 200); do idle && break; sleep 0.1; done
idle || die "the nodes are not idle after 20 s (states: $(sinfo -h -N -n "${NODES// /,}" -o '%N=%T' 2>&1 | sort -u \
            | tr '\n' ' ')); see $BASE/log/"
T5=$(now)
python3 -c "print(f'slurm-up.sh: install {$T1-$T0:.1f}s  config {$T2-$T1:.2f}s  mariadb {$T3-$T2:.1f}s  \
slurmdbd+accounts {$T4-$T3:.1f}s  slurmctld+3 slurmd {$T5-$T4:.2f}s  total {$T5-$T0:.1f}s')"
echo "export SLURM_CONF=$CONF"
