#!/usr/bin/env bash
# Measured scale-out (docs/cost-model.md): a Q × G × D float32 problem
# (default 10,000 queries × 10,000,000 gallery rows × 128, a 5.1 GB gallery)
# written with `vertebrae bench --write`, embedded and merged into a store,
# then scored unsharded and as N = 1, 4, 16 contiguous gallery shards
# (positives stage, count stage, finalize), each shard's worker under
# --max-memory-bytes set to one shard's need. One process per worker, run
# one after the other, as a job array would run them. For every process:
# wall and CPU seconds and peak RSS (GNU time, Debian package "time") and the
# bytes it read (rchar of /proc/PID/io: read and pread calls on files and
# sockets, so it counts object-store responses too); hashing time is those
# bytes over this machine's SHA-256 rate (every byte read from a store is
# verified once). The summary gives the acceptance ratios: per-worker peak RSS
# over the unsharded score's, bytes read per worker over the gallery file,
# and the positives stage's CPU (all of a shard's fixed cost: it reads what
# the count stage reads and scores only the positives) over the count
# stage's scoring CPU (count − positives), mean and maximum over the shards.
#   [STORE=URI] [THREADS=1] bash bench/scale/run.sh [QUERIES GALLERY DIM "SHARD COUNTS" [DIR]]
# Needs about 3 × the gallery size of free disk in DIR (data, store, and
# the extraction shard) and the unsharded score's memory (≈ gallery size).
set -euo pipefail
cd "$(dirname "$0")/../.."
nq="${1:-10000}" ng="${2:-10000000}" dim="${3:-128}" counts="${4:-1 4 16}"
work="${5:-$(mktemp -d)}"
threads="${THREADS:-1}"
mkdir -p "$work"
trap 'rm -rf "$work/store" "$work/data"' EXIT
go build -o "$work/vertebrae" ./cmd/vertebrae
vb="$work/vertebrae"
S="${STORE:-$work/store}"

# SHA-256 rate of this machine (MB/s), for the hashing time column.
sha_mbs=$(go test -run '^$' -bench 'BenchmarkHasher' -benchtime 3x ./internal/chunkdigest 2>/dev/null |
  awk '/MB\/s/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "MB/s") { r = $i } } END { print r + 0 }')
[ "$sha_mbs" != 0 ] || sha_mbs=1000

out="$work/results.tsv"
: >"$out"
# m LABEL CMD...: runs CMD, records wall, CPU, peak RSS and bytes read.
m() {
  local label=$1
  shift
  sh -c '/usr/bin/time -f "%e %U %S %M" -o "$0.t" "$@" >"$0.out" 2>"$0.err"; rc=$?; grep -E "^rchar" /proc/$$/io >"$0.io"; exit $rc' "$work/m" "$@" ||
    { echo "$label failed:"; cat "$work/m.err"; return 1; }
  local wall user sys kb rchar
  read -r wall user sys kb <"$work/m.t"
  rchar=$(awk '{print $2}' "$work/m.io")
  printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" "$kb" "$rchar" >>"$out"
  awk -F'\t' -v r="$sha_mbs" 'END { printf "%-30s %8.2f s wall %8.2f s CPU %8.0f MiB %10.1f MB read %7.2f s hashing\n", $1, $2, $3, $4 / 1024, $5 / 1e6, $5 / 1e6 / r }' "$out"
}

echo "Q=$nq G=$ng D=$dim float32, shard counts: $counts, score --threads $threads; $(nproc) CPUs; SHA-256 $sha_mbs MB/s; store $S"
"$vb" bench --write "$work/data" --queries "$nq" --gallery "$ng" --dim "$dim" --precision float32 >/dev/null
gallery_bytes=$(stat -c %s "$work/data/gallery.npy")
cat >"$work/run.yaml" <<YAML
version: 1
dataset:
  id: scale-bench
  revision: "$nq-$ng-$dim"
  queries: {path: data/queries.npy}
  gallery: {path: data/gallery.npy}
  qrels: {path: data/qrels.tsv}
retrieval: {similarity: dot, ks: [1, 10, 100], primary_metric: ndcg@10}
extractors:
  - {name: tables, type: precomputed}
YAML
cd "$work"
m plan "$vb" retrieval plan --store "$S" --spec run.yaml --total-shards 1 --output-json plan.json
for side in query gallery; do
  m "embed-shard $side" "$vb" retrieval embed-shard --store "$S" --plan plan.json --extractor tables --side "$side" --shard-index 0
  m "merge $side" "$vb" retrieval merge --store "$S" --plan plan.json --extractor tables --side "$side"
done
m write-relevance "$vb" retrieval write-relevance --store "$S" --spec run.yaml --output-json rel.json
rm -f data/gallery.npy # the store holds it now, and the disk is needed
Q=$(jq -r '.extractors[0].endpoints[] | select(.side=="query").output_key' plan.json)
G=$(jq -r '.extractors[0].endpoints[] | select(.side=="gallery").output_key' plan.json)
R=$(jq -r .key rel.json)
score=("$vb" retrieval score --store "$S" --query-key "$Q" --gallery-key "$G" --relevance-key "$R" --config run.yaml --threads "$threads")
m "unsharded score" "${score[@]}" --output-key bench/unsharded --output-json score-u.json
for n in $counts; do
  # One shard's need: the query endpoint plus ⌈G/N⌉ gallery rows.
  budget=$(((nq + (ng + n - 1) / n) * dim * 4))
  for ((i = 0; i < n; i++)); do
    m "N=$n positives $i" "${score[@]}" --output-key "bench/n$n" --total-shards "$n" --shard-index "$i" --stage positives --max-memory-bytes "$budget"
  done
  for ((i = 0; i < n; i++)); do
    m "N=$n count $i" "${score[@]}" --output-key "bench/n$n" --total-shards "$n" --shard-index "$i" --max-memory-bytes "$budget"
  done
  m "N=$n finalize" "${score[@]}" --output-key "bench/n$n" --total-shards "$n" --finalize --output-json "score-n$n.json"
  same='{primary_score, protocol_fingerprint, evaluation_fingerprint}'
  if [ "$(jq -cS "$same" "score-n$n.json")" != "$(jq -cS "$same" score-u.json)" ]; then
    echo "N=$n: the finalized score differs from the unsharded one: $(jq -c . "score-n$n.json") vs $(jq -c . score-u.json)"
    exit 1
  fi
done
echo
echo "summary (gallery file $((gallery_bytes / 1000000)) MB)"
awk -F'\t' -v gb="$gallery_bytes" '
  $1 == "unsharded score" { urss = $4; uread = $5; uwall = $2 }
  $1 ~ /^N=[0-9]+ (positives|count) / {
    split($1, a, " "); n = substr(a[1], 3); st = a[2]; i = a[3]
    if ($4 > rss[n]) rss[n] = $4
    if ($5 > rd[n]) rd[n] = $5
    if (st == "positives") pc[n, i] = $3; else cc[n, i] = $3
    if (st == "count") { cnt[n]++; cpu[n] += $3 }
    ns[n] = 1
  }
  END {
    printf "%-4s %12s %10s %14s %10s %28s\n", "N", "peak RSS", "/ unshard", "read/worker", "/ gallery", "fixed / scoring CPU mean max"
    printf "%-4s %9.0f MiB %10s %11.1f MB %10.3f %28s\n", "1*", urss / 1024, "1", uread / 1e6, uread / gb, "(unsharded score)"
    for (n in ns) {
      worst = 0; sum = 0; m = 0
      for (k = 0; k < cnt[n]; k++) {
        s = cc[n, k] - pc[n, k]
        if (s <= 0) continue
        r = pc[n, k] / s; sum += r; m++
        if (r > worst) worst = r
      }
      printf "%-4s %9.0f MiB %10.3f %11.1f MB %10.3f %21.3f %6.3f\n", n, rss[n] / 1024, rss[n] / urss, rd[n] / 1e6, rd[n] / gb, (m ? sum / m : 0), worst
    }
  }' "$out"
