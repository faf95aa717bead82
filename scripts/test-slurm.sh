#!/usr/bin/env bash
# make test-slurm: runs examples/slurm on a real, one-node Slurm cluster on
# localhost and checks that the merged result equals a single-process run
# row for row.
#
# Installs Debian's slurm-wlm and munge if missing (needs root and apt), starts
# munged, slurmctld and slurmd by hand (no systemd) with everything (config,
# sockets, state, logs) in a temporary directory, submits the array job and its
# dependent merge job with examples/slurm/submit.sh, waits, compares, and stops
# the daemons it started, by PID, also on failure.
#
# Then the same for key shards: configs/examples/antlr-org.yaml with
# shard_by: key as KEY_SHARDS array tasks, merged, and its parts compared
# byte for byte with a single-process run over the whole log.
#
# Environment: SHARDS (default 4), SPEC (default configs/bench.yaml),
#              KEY_SHARDS (default 8), PARTS (default "grid keys": which
#              runs), WAIT (seconds a run may take, default 900),
#              KEEP=1 keeps the temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
shards=${SHARDS:-4}
spec=$(realpath "${SPEC:-configs/bench.yaml}")
started=$(date +%s)

say() { printf 'test-slurm: %s\n' "$*"; }
die() {
	say "FAIL: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (apt-get, munged and slurmd run as root here)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
	say "installing slurm-wlm and munge"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge
fi
[ -s /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing (the munge package creates it)"

go build -o bin/ratesweep ./cmd/ratesweep
ratesweep=$repo/bin/ratesweep

work=$(mktemp -d /tmp/ratesweep-slurm.XXXXXX)
chmod 755 "$work" # the munge and slurm users need to reach their directories
pids=()
cleanup() {
	local rc=$?
	set +e
	# Stop what this script started, newest first, by PID.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	if [ $rc != 0 ]; then
		for f in "$work"/log/*.log "$work"/*.logs/*.out; do
			[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
		done
	fi
	if [ "${KEEP:-0}" = 1 ]; then
		say "kept $work"
	else
		rm -rf "$work"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# munge, on its own socket so that a system munged (if any) is left alone.
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/log"
chown munge:munge "$work/munge"
chmod 755 "$work/munge"
socket=$work/munge/munge.socket
setpriv --reuid=munge --regid=munge --init-groups \
	/usr/sbin/munged --foreground --socket="$socket" --pid-file="$work/munge/munged.pid" \
	--log-file="$work/munge/munged.log" --seed-file="$work/munge/munged.seed" \
	>"$work/log/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
munge --socket="$socket" -n | unmunge --socket="$socket" >/dev/null || die "munge does not work"

# slurm.conf: this host as controller and only node (CPUs, memory from slurmd -C).
host=$(hostname -s)
node=$(slurmd -C | head -n 1)
case $node in NodeName=$host\ *) ;; *) die "slurmd -C says '$node', hostname -s says '$host'" ;; esac
chown slurm:slurm "$work/state" "$work/log"
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=ratesweep-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/state/slurmctld.pid
SlurmdPidFile=$work/spool/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i >"$work/log/slurmctld.stdout" 2>&1 &
pids+=($!)
slurmd -D >"$work/log/slurmd.stdout" 2>&1 &
pids+=($!)
for _ in $(seq 120); do
	state=$(sinfo -h -o %t 2>/dev/null || true)
	[ "$state" = idle ] && break
	sleep 0.5
done
[ "$state" = idle ] || die "the node is not idle after 60 s (sinfo: '$state')"
say "one-node cluster up: $(sinfo -h -o '%P %a %D %t %N %c CPUs')"

# submit SPEC RUN_DIR SHARDS NAME: the example, as a user runs it; waits
# for the array job and its merge job, which must both complete.
submit() {
	local spec=$1 run=$2 n=$3 name=$4 report=${5:-1} array merge states
	[ "$report" = 1 ] && ! "$ratesweep" report --help >/dev/null 2>&1 && report=0
	LOGS=$work/$name.logs RATESWEEP=$ratesweep REPORT=$report \
		examples/slurm/submit.sh "$spec" "$run" "$n" | tee "$work/$name.submit.txt"
	read -r array merge < <(sed -E 's/^array job ([0-9]+) .*merge job ([0-9]+);.*/\1 \2/' "$work/$name.submit.txt")
	if [ -z "$array" ] || [ -z "$merge" ]; then die "no job ids from submit.sh"; fi
	for _ in $(seq $((2 * ${WAIT:-900}))); do
		[ -z "$(squeue -h -j "$array,$merge" 2>/dev/null)" ] && break
		sleep 0.5
	done
	[ -z "$(squeue -h -j "$array,$merge")" ] || die "jobs still queued after ${WAIT:-900} s: $(squeue -h -j "$array,$merge")"
	states=$(scontrol -o show job "$array" | grep -o 'JobState=[A-Z_]*' | sort | uniq -c | tr -s ' ')
	say "$name: array job $array:$states"
	[ "$(scontrol -o show job "$array" | grep -c 'JobState=COMPLETED')" = "$n" ] || die "not every array task completed"
	scontrol -o show job "$merge" | grep -q 'JobState=COMPLETED' || die "merge job $merge: $(scontrol -o show job "$merge" | grep -o 'JobState=[A-Z_]*')"
	say "$name: merge job $merge: $(tail -n 2 "$work/$name.logs/merge-$merge.out" | tr '\n' ' ')"
}
if [[ " ${PARTS:-grid keys} " == *" grid "* ]]; then
	run=$work/run
	submit "$spec" "$run" "$shards" run

	# The same grid in one process; the merged run must hold the same rows.
	"$ratesweep" run "$spec" --out "$work/single" --quiet
	[ -f "$run/manifest.json" ] || die "no merged manifest.json"
	"$ratesweep" merge --sha256 "$run"
	go run ./scripts/samerows "$work/single" "$run"
	if "$ratesweep" check --help >/dev/null 2>&1; then # once 'ratesweep check' is built
		"$ratesweep" check --baseline "$work/single" "$run" --tol-abs 0 --tol-rel 0
	fi
	cmp <(grep false_cut_sum "$work/single/manifest.json") <(grep false_cut_sum "$run/manifest.json") || die "Σ false_cut differs"
fi

if [[ " ${PARTS:-grid keys} " == *" keys "* ]]; then
	# Key shards: every task reads the whole log and keeps the keys whose hash
	# is its index mod KEY_SHARDS; the merge adds them up. The parts must be
	# those of one run over the whole log, byte for byte.
	kshards=${KEY_SHARDS:-8}
	kspec=$work/keys.yaml
	sed -e "s#^  log: logs/#  log: $repo/configs/examples/logs/#" configs/examples/antlr-org.yaml >"$kspec"
	echo "shard_by: key" >>"$kspec"
	submit "$kspec" "$work/keys" "$kshards" keys 0
	[ "$(ls -d "$work"/keys/keyshards/shard-*-of-* | wc -l)" = "$kshards" ] || die "not $kshards key shard directories"
	"$ratesweep" run "$kspec" --out "$work/keys-single" --quiet
	n=0
	for f in "$work"/keys-single/points/*.parquet "$work"/keys-single/clients/*.parquet; do
		cmp "$f" "$work/keys/${f#"$work"/keys-single/}" || die "key shards: ${f#"$work"/keys-single/} differs from the single run's"
		n=$((n + 1))
	done
	go run ./scripts/samerows "$work/keys-single" "$work/keys"
	say "key shards: $kshards tasks merged into $n files equal to the single run's"
fi
say "PASS in $(($(date +%s) - started)) s"
