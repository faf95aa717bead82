#!/bin/bash
# Submits a sharded ratesweep run on Slurm: an array job of SHARDS tasks
# (sweep.sbatch) and a job that runs once all of them succeeded (afterok):
# 'ratesweep merge' (checks every shard, writes RUN_DIR/manifest.json) and
# 'ratesweep report'. Prints the two job ids.
#
# Usage: examples/slurm/submit.sh SPEC.yaml RUN_DIR [SHARDS]   (default 4)
# Environment: RATESWEEP  the ratesweep binary (default: ratesweep on PATH)
#              LOGS       directory for Slurm's output (default RUN_DIR.logs)
#              REPORT=0   merge only, no report
#              SBATCH_ARGS extra sbatch options for both jobs (partition, account, time)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
spec=$(realpath "${1:?usage: submit.sh SPEC.yaml RUN_DIR [SHARDS]}")
out=$(realpath -m "${2:?usage: submit.sh SPEC.yaml RUN_DIR [SHARDS]}")
shards=${3:-4}
ratesweep=${RATESWEEP:-ratesweep}
logs=${LOGS:-$out.logs}
mkdir -p "$logs"
read -r -a extra <<<"${SBATCH_ARGS:-}"

array=$(sbatch --parsable "${extra[@]}" --array="0-$((shards - 1))" \
	--output="$logs/sweep-%A_%a.out" \
	--export=ALL,RATESWEEP="$ratesweep" \
	"$here/sweep.sbatch" "$spec" "$out")
array=${array%%;*} # "jobid;cluster" on multi-cluster setups

then_report=""
if [ "${REPORT:-1}" != 0 ]; then
	then_report=" && '$ratesweep' report '$out'"
fi
# --kill-on-invalid-dep: if a task fails, the merge is cancelled instead of
# pending forever; rerun the failed tasks (sbatch --array=I,J sweep.sbatch ...)
# and then run 'ratesweep merge RUN_DIR' by hand.
merge=$(sbatch --parsable "${extra[@]}" --job-name=ratesweep-merge \
	--dependency="afterok:$array" --kill-on-invalid-dep=yes \
	--output="$logs/merge-%j.out" \
	--wrap="'$ratesweep' merge --shards $shards '$out'$then_report")
merge=${merge%%;*}
echo "array job $array ($shards shards), merge job $merge; logs in $logs"
