#!/usr/bin/env bash
# CPU cost of distributed extraction (issue item "linear extraction shards
# and a streaming merge"): writes a precomputed-embeddings gallery with
# `vertebrae bench --write`, then embeds the gallery endpoint of the
# streaming-safe "precomputed" extractor as N = 1 and as N = SHARDS
# extraction shards (one process per shard, run one after the other, as a
# job array would), merges both, and prints each process's CPU time
# (user+sys), wall time and peak RSS from GNU time (Debian package "time"),
# the summed CPU of the N shards and its ratio to N = 1. The two merged
# endpoints are checked to be byte-identical.
#   [VERTEBRAE_BIN=path] bash bench/embedshard/run.sh [ROWS WIDTH SHARDS [DIR]]
# (default 1000000 128 8; VERTEBRAE_BIN skips the build, e.g. to compare
# two binaries on the same machine state).
set -euo pipefail
cd "$(dirname "$0")/../.."
rows="${1:-1000000}" dim="${2:-128}" shards="${3:-8}"
work="${4:-$(mktemp -d)}"
mkdir -p "$work"
trap 'rm -rf "$work/store1" "$work/storeN" "$work/data"' EXIT
if [ -z "${VERTEBRAE_BIN:-}" ]; then
  go build -o "$work/vertebrae" ./cmd/vertebrae
  vb="$work/vertebrae"
else
  vb="$VERTEBRAE_BIN"
fi
"$vb" bench --write "$work/data" --queries 100 --gallery "$rows" --dim "$dim" --precision float32 >/dev/null
# The digest cache never stores a file changed less than 2 s before it was
# read: wait, so that N = 1 and N = SHARDS both find the table's digest
# and finiteness that their plan recorded (a job array's plan runs long
# after its data were written).
sleep 3
cat >"$work/run.yaml" <<YAML
version: 1
dataset:
  id: embedshard-bench
  revision: "$rows-$dim"
  queries: {path: data/queries.npy}
  gallery: {path: data/gallery.npy}
  qrels: {path: data/qrels.tsv}
retrieval: {similarity: dot, ks: [1, 10], primary_metric: ndcg@10}
embedding: {batch_size: 256}
extractors:
  - {name: tables, type: precomputed}
YAML
cpu=0
t() { # label command...: prints label, CPU (user+sys) s, wall s, peak RSS MiB; adds CPU to $cpu
  /usr/bin/time -f "%U %S %e %M" -o "$work/t" "$@" >"$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
  read -r u s e kb <"$work/t"
  c=$(echo "$u + $s" | bc -l)
  cpu=$(echo "$cpu + $c" | bc -l)
  printf '%-26s cpu %7.2f s (user %6.2f sys %5.2f)  wall %7.2f s  rss %6d MiB\n' "$label" "$c" "$u" "$s" "$e" "$((kb / 1024))"
}
echo "gallery $rows x $dim float32 ($(du -h "$work/data/gallery.npy" | cut -f1)), N = 1 vs N = $shards; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A total merge
for n in 1 "$shards"; do
  S="$work/store$([ "$n" = 1 ] && echo 1 || echo N)"
  label="plan N=$n" t "$vb" retrieval plan --store "$S" --spec "$work/run.yaml" --total-shards "$n" --output-json "$work/plan$n.json"
  cpu=0
  for ((i = 0; i < n; i++)); do
    label="embed-shard $i/$n" t "$vb" retrieval embed-shard --store "$S" --plan "$work/plan$n.json" --extractor tables --side gallery --shard-index "$i"
  done
  total[$n]=$cpu
  cpu=0
  label="merge N=$n" t "$vb" retrieval merge --store "$S" --plan "$work/plan$n.json" --extractor tables --side gallery
  merge[$n]=$cpu
  if [ "$n" = 1 ]; then
    # Keep the merged array's name and digest, and free the page cache it
    # takes: with a large table, the N = 1 store and the N = SHARDS store
    # together would evict the table, and the shards would then time the
    # disk re-reading it (system time), not their own work.
    k1=$(jq -r '.extractors[0].endpoints[] | select(.side=="gallery").output_key' "$work/plan1.json")
    a1=$(find "$work/store1/$k1" -maxdepth 1 -name 'array-*' | sort)
    a1name=$(basename "$a1") a1sum=$(sha256sum <"$a1" | cut -d' ' -f1)
    rm -rf "$work/store1"
  fi
done
printf 'embed-shard CPU: N=1 %.2f s, N=%d %.2f s (sum), ratio %.2f\n' "${total[1]}" "$shards" "${total[$shards]}" "$(echo "${total[$shards]} / ${total[1]}" | bc -l)"
printf 'merge CPU:       N=1 %.2f s, N=%d %.2f s\n' "${merge[1]}" "$shards" "${merge[$shards]}"
kN=$(jq -r '.extractors[0].endpoints[] | select(.side=="gallery").output_key' "$work/plan$shards.json")
# The merged endpoint's array (named by its content hash) must be the same
# file in both stores: the same name and the same SHA-256 of its bytes.
aN=$(find "$work/storeN/$kN" -maxdepth 1 -name 'array-*' | sort)
if [ -n "$a1name" ] && [ "$a1name" = "$(basename "$aN")" ] && [ "$a1sum" = "$(sha256sum <"$aN" | cut -d' ' -f1)" ]; then
  echo "merged arrays byte-identical (N=1 vs N=$shards): $a1name"
else
  echo "merged arrays DIFFER: $a1name vs $aN"; exit 1
fi
