#!/usr/bin/env bash
# Runs the job-array evaluation on Kubernetes (README "Scale-out: job arrays"):
# applies the configuration, then each stage's Job(s) in file order, waiting
# for every Job of a stage (same leading number, e.g. the two 20-embed-*)
# to complete before the next stage starts. The stage Jobs are deleted first,
# so running this again re-runs the evaluation (idempotently).
#
#   IMAGE=registry.example/vertebrae:0.1.0 NAMESPACE=eval ./run.sh
#
# Prerequisites: the Secret vertebrae-store (secret.example.yaml), the dataset
# on the vertebrae-work volume under /work/dataset, kubectl >= 1.29.
set -euo pipefail
cd "$(dirname "$0")"
IMAGE="${IMAGE:?set IMAGE to the image built from deploy/Dockerfile}"
ns=(--namespace "${NAMESPACE:-default}")
timeout_s="${STAGE_TIMEOUT_SECONDS:-86400}"

kubectl "${ns[@]}" apply -f 00-config.yaml -f 00-workspace.yaml

# wait_job NAME: poll until the Job is Complete (0) or Failed (1).
wait_job() {
  local start=$SECONDS conds
  while :; do
    conds=$(kubectl "${ns[@]}" get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}')
    case " $conds " in
      *" Complete "*) echo "job/$1 complete"; return 0 ;;
      *" Failed "*) echo "job/$1 failed; failed indexes: $(kubectl "${ns[@]}" get job "$1" -o jsonpath='{.status.failedIndexes}')" >&2; return 1 ;;
    esac
    if (( SECONDS - start > timeout_s )); then echo "job/$1: no result after ${timeout_s}s" >&2; return 1; fi
    sleep 10
  done
}

for stage in 10 20 30 35 40 50 60; do
  jobs=()
  for f in "$stage"-*.yaml; do
    name="vertebrae-${f#*-}" name="${name%.yaml}" # NN-stage.yaml holds Job vertebrae-stage (go test ./cmd/internal/deploytest checks)
    kubectl "${ns[@]}" delete job "$name" --ignore-not-found --wait=true
    sed "s|^\(          image:\) vertebrae:0.1.0 .*|\1 $IMAGE|" "$f" | kubectl "${ns[@]}" apply -f -
    jobs+=("$name")
  done
  for name in "${jobs[@]}"; do wait_job "$name"; done
done
echo "reports on the vertebrae-work volume under /work/report"
