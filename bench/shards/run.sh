#!/usr/bin/env bash
# Per-shard cost of the job-array stages (docs/cost-model.md): writes a
# synthetic problem with `vertebrae bench --write`, then times each stage of
# deploy/slurm/stage.sbatch through the CLI on a local store, one process per
# shard run one after the other, with wall time and peak RSS from GNU time
# (Debian package "time").
#   [STORE=URI] [BIDIRECTIONAL=1] [LOCAL=1] bash bench/shards/run.sh [QUERIES GALLERY DIM SHARDS THREADS [DIR]]
# LOCAL=1 runs the shard-local stages (score --stage positives, then count):
# each shard reads and holds only its rows of the gallery.
set -euo pipefail
cd "$(dirname "$0")/../.."
nq="${1:-1000}" ng="${2:-100000}" dim="${3:-768}" shards="${4:-4}" threads="${5:-1}"
work="${6:-$(mktemp -d)}"
bidi=false
if [ -n "${BIDIRECTIONAL:-}" ]; then bidi=true; fi
mkdir -p "$work"
trap 'rm -rf "$work/store" "$work/data"' EXIT
go build -o "$work/vertebrae" ./cmd/vertebrae
vb="$work/vertebrae"
"$vb" bench --write "$work/data" --queries "$nq" --gallery "$ng" --dim "$dim" --precision float32 >/dev/null
if [ "$bidi" = true ]; then
  # Every gallery row is a positive of query (row mod Q), so every row is a
  # reverse query: the worst case for the reverse direction of a shard.
  awk -v q="$nq" -v g="$ng" 'BEGIN { for (i = 0; i < g; i++) printf "%d\t%d\t1\n", i % q, i }' >"$work/data/qrels.tsv"
fi
cat >"$work/run.yaml" <<YAML
version: 1
dataset:
  id: shard-bench
  revision: "$nq-$ng-$dim"
  queries: {path: data/queries.npy}
  gallery: {path: data/gallery.npy}
  qrels: {path: data/qrels.tsv}
retrieval: {similarity: dot, ks: [1, 10, 100], primary_metric: ndcg@10, bidirectional: $bidi}
extractors:
  - {name: tables, type: precomputed}
YAML
S="${STORE:-$work/store}" # STORE=s3://… measures an object store
t() { # label command...: prints label, wall seconds, peak RSS MiB
  /usr/bin/time -f "%e %M" -o "$work/t" "$@" >"$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
  read -r secs kb <"$work/t"
  printf '%-28s %8.2f s %8.0f MiB\n' "$label" "$secs" "$((kb / 1024))"
}
echo "Q=$nq G=$ng D=$dim float32, $shards shards, score --threads $threads; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
label=plan t "$vb" retrieval plan --store "$S" --spec "$work/run.yaml" --total-shards "$shards" --output-json "$work/plan.json"
for side in query gallery; do
  for ((i = 0; i < shards; i++)); do
    label="embed-shard $side $i" t "$vb" retrieval embed-shard --store "$S" --plan "$work/plan.json" --extractor tables --side "$side" --shard-index "$i"
  done
  label="merge $side" t "$vb" retrieval merge --store "$S" --plan "$work/plan.json" --extractor tables --side "$side"
done
label=write-relevance t "$vb" retrieval write-relevance --store "$S" --spec "$work/run.yaml" --output-json "$work/rel.json"
Q=$(jq -r '.extractors[0].endpoints[] | select(.side=="query").output_key' "$work/plan.json")
G=$(jq -r '.extractors[0].endpoints[] | select(.side=="gallery").output_key' "$work/plan.json")
R=$(jq -r .key "$work/rel.json")
score=("$vb" retrieval score --store "$S" --query-key "$Q" --gallery-key "$G" --relevance-key "$R" --config "$work/run.yaml" --threads "$threads" --total-shards "$shards")
if [ -n "${LOCAL:-}" ]; then
  for ((i = 0; i < shards; i++)); do
    label="positives stage $i" t "${score[@]}" --shard-index "$i" --stage positives
  done
fi
for ((i = 0; i < shards; i++)); do
  label="score shard $i" t "${score[@]}" --shard-index "$i"
done
label=finalize t "${score[@]}" --finalize --output-json "$work/score.json"
label=from-artifacts t "$vb" retrieval from-artifacts --store "$S" --score-key "$(jq -r .key "$work/score.json")" --json "$work/report.json"
label="unsharded score" t "$vb" retrieval score --store "$S" --query-key "$Q" --gallery-key "$G" --relevance-key "$R" --config "$work/run.yaml" --threads "$threads" --output-key bench/unsharded
echo "scoring FLOP per shard: 2*Q*G*D/N = $(echo "2 * $nq * $ng * $dim / $shards / 1000000000" | bc -l | xargs printf '%.1f') GFLOP"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
