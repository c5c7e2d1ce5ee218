#!/usr/bin/env bash
# Submits the job-array evaluation to Slurm (README "Scale-out: job arrays"):
# one job per stage, the sharded stages as job arrays (SLURM_ARRAY_TASK_ID is
# the shard index), each stage depending on the previous one with
# afterok (an array is "ok" when every task succeeded).
#
#   VERTEBRAE_RUN_FILE=$PWD/run.yaml VERTEBRAE_WORK=/shared/eval \
#   VERTEBRAE_STORE='s3://my-bucket/vertebrae?region=us-east-1' \
#   VERTEBRAE_EXTRACTOR=tables VERTEBRAE_EMBED_SHARDS=4 VERTEBRAE_SCORE_SHARDS=8 \
#   deploy/slurm/submit.sh [extra sbatch options, e.g. --partition=cpu --account=me]
#
# VERTEBRAE_WORK must be on a filesystem every node sees (it holds the plan
# and the keys handed between stages); the run file's path must be the same
# on every node. Credentials (AWS_*, GOOGLE_APPLICATION_CREDENTIALS) are
# taken from the submitting environment (sbatch exports it by default).
set -euo pipefail
: "${VERTEBRAE_RUN_FILE:?}" "${VERTEBRAE_WORK:?}" "${VERTEBRAE_STORE:?}" "${VERTEBRAE_EXTRACTOR:?}"
export VERTEBRAE_RUN_FILE VERTEBRAE_WORK VERTEBRAE_STORE VERTEBRAE_EXTRACTOR
export VERTEBRAE_EMBED_SHARDS="${VERTEBRAE_EMBED_SHARDS:-4}" VERTEBRAE_SCORE_SHARDS="${VERTEBRAE_SCORE_SHARDS:-8}"
stage="$(cd "$(dirname "$0")" && pwd)/stage.sbatch"
mkdir -p "$VERTEBRAE_WORK/state" "$VERTEBRAE_WORK/logs"
sb=(sbatch --parsable --chdir="$VERTEBRAE_WORK" --output="$VERTEBRAE_WORK/logs/%x-%A_%a.out" "$@")

plan=$(      "${sb[@]}" --job-name=vertebrae-plan                                                                   "$stage" plan)
eg=$(        "${sb[@]}" --job-name=vertebrae-embed-gallery --dependency="afterok:$plan"    --array="0-$((VERTEBRAE_EMBED_SHARDS - 1))" "$stage" embed-gallery)
eq=$(        "${sb[@]}" --job-name=vertebrae-embed-query   --dependency="afterok:$plan"    --array="0-$((VERTEBRAE_EMBED_SHARDS - 1))" "$stage" embed-query)
merge=$(     "${sb[@]}" --job-name=vertebrae-merge         --dependency="afterok:$eg:$eq"                                   "$stage" merge)
positives=$( "${sb[@]}" --job-name=vertebrae-positives     --dependency="afterok:$merge"   --array="0-$((VERTEBRAE_SCORE_SHARDS - 1))" "$stage" positives)
score=$(     "${sb[@]}" --job-name=vertebrae-score         --dependency="afterok:$positives" --array="0-$((VERTEBRAE_SCORE_SHARDS - 1))" "$stage" score)
finalize=$(  "${sb[@]}" --job-name=vertebrae-finalize      --dependency="afterok:$score"                                   "$stage" finalize)
report=$(    "${sb[@]}" --job-name=vertebrae-report        --dependency="afterok:$finalize"                                "$stage" report)
echo "submitted: plan $plan, embed $eg $eq, merge $merge, positives $positives, score $score, finalize $finalize, report $report"
