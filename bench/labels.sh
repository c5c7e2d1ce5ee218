#!/usr/bin/env bash
# Label-derived relevance at the cost of one positive (issue #24): Q × G × D
# float32 Gaussian embeddings, cosine, the float32 protocol, scored by
# `retrieval run` with
#   qrels-1        one qrels positive per query (the baseline),
#   classes-1      one class: G positives per query, no negatives,
#   classes-10     10 interleaved classes: G/10 positives, 9G/10 negatives,
#   classes-1000   1,000 classes: G/1000 positives per query,
# alternating the modes within every round; it prints the median wall and
# user seconds and peak RSS (GNU time -v, Debian package "time") of each,
# and each label mode's ratio to qrels-1 of the same round. Then the
# 10-class run through the artifact store, unsharded and in 4 gallery
# shards (positives stage, then count stage: one `retrieval score` process
# per shard, one after the other; then finalize).
#   bash bench/labels.sh [ROUNDS [Q G D]]        (default 3 rounds, 2000 100000 64)
set -euo pipefail
ROUNDS=${1:-3} NQ=${2:-2000} NG=${3:-100000} D=${4:-64}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/vertebrae-labels}/$NQ-$NG-$D
mkdir -p "$DIR"
VB="$DIR/vertebrae"
(cd "$ROOT" && go build -o "$VB" ./cmd/vertebrae)
for m in one-positive one-class classes-10 classes-1000; do
	[ -f "$DIR/$m/gallery_labels.txt" ] || /usr/bin/python3 "$ROOT/bench/gen_labels.py" "$DIR/$m" "$NQ" "$NG" "$D" "$m"
done
[ -f "$DIR/one-positive/qrels.txt" ] || awk -v n="$NQ" -v g="$NG" 'BEGIN { for (i = 0; i < n; i++) print i, 0, i % g, 1 }' >"$DIR/one-positive/qrels.txt"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
measure() { # prints "wall user rss_kb"
	/usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Elapsed \(wall/ {n=split($2,t,":"); w=(n==3? t[1]*3600+t[2]*60+t[3] : t[1]*60+t[2])} /User time/ {u=$2} /Maximum resident/ {r=$2} END {print w, u, r}'
}
run() { # the retrieval run of a mode
	local data=$DIR/$1
	[ "$1" = qrels-1 ] && data=$DIR/one-positive
	local rel=(--query-labels "$data/query_labels.txt" --gallery-labels "$data/gallery_labels.txt")
	[ "$1" = qrels-1 ] && rel=(--qrels "$data/qrels.txt")
	measure "$VB" retrieval run --queries "$data/queries.npy" --gallery "$data/gallery.npy" "${rel[@]}" \
		--similarity cosine --precision float32 --quiet --json /dev/null
}
modes=(qrels-1 classes-1 classes-10 classes-1000)
declare -A wall user rss
for m in "${modes[@]}"; do run "${m/classes-1/one-class}" >/dev/null 2>&1 || true; done # warm the page cache and the digest cache
for i in $(seq "$ROUNDS"); do
	for m in "${modes[@]}"; do
		data=$m
		[ "$m" = classes-1 ] && data=one-class
		read -r w u r < <(run "$data")
		wall[$m]+="$w " user[$m]+="$u " rss[$m]+="$r "
	done
done
echo "Q=$NQ G=$NG D=$D float32 cosine; $(nproc) CPUs, $ROUNDS rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
for m in "${modes[@]}"; do
	printf '%-13s wall %6.2f s  user %6.2f s  peak RSS %5.0f MiB   (walls: %s)\n' "$m" \
		"$(echo ${wall[$m]} | tr ' ' '\n' | median)" "$(echo ${user[$m]} | tr ' ' '\n' | median)" \
		"$(echo "$(echo ${rss[$m]} | tr ' ' '\n' | median) / 1024" | bc -l)" "${wall[$m]}"
done
read -ra bw <<<"${wall[qrels-1]}"
read -ra br <<<"${rss[qrels-1]}"
for m in classes-1 classes-10 classes-1000; do
	read -ra a <<<"${wall[$m]}"
	read -ra r <<<"${rss[$m]}"
	ws=() rs=()
	for k in "${!a[@]}"; do
		ws+=("$(awk -v x="${a[$k]}" -v y="${bw[$k]}" 'BEGIN {printf "%.2f", x/y}')")
		rs+=("$(awk -v x="${r[$k]}" -v y="${br[$k]}" 'BEGIN {printf "%.2f", x/y}')")
	done
	printf '%-13s / qrels-1: wall %sx (rounds %s), peak RSS %sx\n' "$m" "$(printf '%s\n' "${ws[@]}" | median)" "${ws[*]}" "$(printf '%s\n' "${rs[@]}" | median)"
done

# The 10-class run through the artifact store: unsharded and 4 gallery shards.
S=$DIR/store
rm -rf "$S"
cat >"$DIR/labels.yaml" <<YAML
version: 1
dataset:
  id: labels-bench
  revision: "$NQ-$NG-$D"
  queries: {path: classes-10/queries.npy}
  gallery: {path: classes-10/gallery.npy}
  labels: {queries: classes-10/query_labels.txt, gallery: classes-10/gallery_labels.txt}
retrieval: {similarity: cosine, precision: float32}
extractors:
  - {name: tables, type: precomputed}
YAML
cd "$DIR"
"$VB" retrieval plan --store "$S" --spec labels.yaml --total-shards 4 --output-json plan.json >/dev/null
for side in query gallery; do
	for i in 0 1 2 3; do "$VB" retrieval embed-shard --store "$S" --plan plan.json --extractor tables --side "$side" --shard-index "$i" >/dev/null; done
	"$VB" retrieval merge --store "$S" --plan plan.json --extractor tables --side "$side" >/dev/null
done
"$VB" retrieval write-relevance --store "$S" --spec labels.yaml --output-json rel.json >/dev/null
Q=$(jq -r '.extractors[0].endpoints[] | select(.side=="query").output_key' plan.json)
G=$(jq -r '.extractors[0].endpoints[] | select(.side=="gallery").output_key' plan.json)
R=$(jq -r .key rel.json)
score=("$VB" retrieval score --store "$S" --query-key "$Q" --gallery-key "$G" --relevance-key "$R" --config labels.yaml)
read -r w u r < <(measure "${score[@]}" --output-key bench/unsharded --output-json unsharded.json)
printf 'store, classes-10 unsharded:   wall %6.2f s  user %6.2f s  peak RSS %5.0f MiB\n' "$w" "$u" "$(echo "$r / 1024" | bc -l)"
# The documented scale-out path: every shard's positives stage, then every
# shard's count stage (each reads only its rows), then finalize.
for stage in positives count; do
	tw=0 tu=0 mr=0
	for i in 0 1 2 3; do
		read -r w u r < <(measure "${score[@]}" --total-shards 4 --shard-index "$i" --stage "$stage")
		tw=$(echo "$tw + $w" | bc -l) tu=$(echo "$tu + $u" | bc -l) mr=$((r > mr ? r : mr))
	done
	printf 'store, classes-10, 4 shards, %-9s stage: wall %6.2f s  user %6.2f s summed over shards, largest shard peak RSS %5.0f MiB\n' \
		"$stage" "$tw" "$tu" "$(echo "$mr / 1024" | bc -l)"
done
read -r w u r < <(measure "${score[@]}" --total-shards 4 --finalize --output-json score.json)
printf 'store, classes-10, 4 shards, finalize:        wall %6.2f s  user %6.2f s  peak RSS %5.0f MiB\n' "$w" "$u" "$(echo "$r / 1024" | bc -l)"
same() { jq -S 'del(.output_key, .key, .score_key)' "$1"; }
if [ "$(same unsharded.json)" = "$(same score.json)" ]; then echo "finalized score = unsharded score"; else echo "finalized score DIFFERS from the unsharded score" >&2; exit 1; fi
