#!/usr/bin/env bash
# Artifact write / verified read of a 200,000 x 768 float32 endpoint (614 MB)
# on the local store, against cp of the same bytes, with peak RSS from GNU
# time (Debian package "time"). Usage: bash bench/artifacts/run.sh [DIR]
# (DIR defaults to a fresh temporary directory on the same disk as /tmp).
set -euo pipefail
cd "$(dirname "$0")/../.."
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
trap 'rm -rf "$work"/store "$work"/copy "$work"/artifacts' EXIT
go build -o "$work/artifacts" ./bench/artifacts
secs() { date +%s.%N; }
echo "== write (hash pass + upload pass, temp file + fsync + rename)"
/usr/bin/time -v "$work/artifacts" write "$work/store" 2> "$work/write.time" | tee "$work/write.out"
grep -E 'Maximum resident|Elapsed' "$work/write.time"
file=$(sed -n 's/^file //p' "$work/write.out")
echo "== read back with verification"
/usr/bin/time -v "$work/artifacts" read "$work/store" 2> "$work/read.time"
grep -E 'Maximum resident|Elapsed' "$work/read.time"
bytes=$(stat -c %s "$file")
mkdir -p "$work/copy"
echo "== cp of the same bytes"
t0=$(secs); cp "$file" "$work/copy/a"; t1=$(secs)
echo "cp: $(echo "$bytes / ($t1 - $t0) / 1000000" | bc -l | xargs printf '%.0f') MB/s"
t0=$(secs); cp "$file" "$work/copy/b"; sync "$work/copy/b"; t1=$(secs)
echo "cp + sync: $(echo "$bytes / ($t1 - $t0) / 1000000" | bc -l | xargs printf '%.0f') MB/s"
echo "== cat (read) of the same bytes"
t0=$(secs); cat "$file" > /dev/null; t1=$(secs)
echo "cat: $(echo "$bytes / ($t1 - $t0) / 1000000" | bc -l | xargs printf '%.0f') MB/s"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
