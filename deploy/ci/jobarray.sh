#!/usr/bin/env bash
# The simulated job array (deploy/jobarray_test.go): builds vertebrae, then
# runs the Kubernetes stage scripts of deploy/k8s as concurrent processes
# against an S3-compatible server (plan, embed, merge, positives, score,
# finalize, report), kills one embed shard, one positives stage and one score
# shard mid-shard, restarts them, and compares the report with a local run;
# then runs the Slurm scripts end to end the same way.
#
# With VERTEBRAE_TEST_S3_URI and AWS credentials set (as .ci/run does) it
# uses that server; otherwise it starts the cached versitygw on 127.0.0.1
# for its own length (build it once with
#   GOBIN=~/.cache/vertebrae/versitygw-v1.8.0 go install github.com/versity/versitygw/cmd/versitygw@v1.8.0).
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
gw_pid=""
cleanup() {
  if [ -n "$gw_pid" ]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ -z "${VERTEBRAE_TEST_S3_URI:-}" ]; then
  gw="${XDG_CACHE_HOME:-$HOME/.cache}/vertebrae/versitygw-v1.8.0/versitygw"
  [ -x "$gw" ] || { echo "jobarray: set VERTEBRAE_TEST_S3_URI or build versitygw into $gw" >&2; exit 1; }
  mkdir -p "$tmp/gw/jobarray"
  port=$((20000 + RANDOM % 20000))
  export AWS_ACCESS_KEY_ID=jobarray AWS_SECRET_ACCESS_KEY="jobarray-$RANDOM$RANDOM" AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
  "$gw" --port "127.0.0.1:$port" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --quiet posix "$tmp/gw" >"$tmp/gw.log" 2>&1 &
  gw_pid=$!
  for _ in $(seq 1 150); do # at most ~30 s
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    kill -0 "$gw_pid" 2>/dev/null || { cat "$tmp/gw.log"; exit 1; }
    sleep 0.2
  done
  export VERTEBRAE_TEST_S3_URI="s3://jobarray/x?endpoint=http://127.0.0.1:$port&use_path_style=true&region=us-east-1"
fi

mkdir -p "$tmp/bin"
go build -o "$tmp/bin/vertebrae" ./cmd/vertebrae
VERTEBRAE_JOBARRAY_BIN="$tmp/bin/vertebrae" VERTEBRAE_REQUIRE_JOBARRAY=1 VERTEBRAE_REQUIRE_S3=1 \
  timeout 300 go test -count=1 -run '^TestSimulated(JobArray|Slurm)$' -v ./cmd/internal/deploytest
