#!/usr/bin/env bash
# Many positives (issue #13): 2,000 × 20,000 × 384 in one class (20,000
# positives per query) against the same run with one positive per query.
# One command:  bash bench/many_positives.sh [REPEAT]
# Reports the median wall and user seconds and the peak RSS (GNU time -v)
# of each, alternating the two runs; and `vertebrae demo`.
set -euo pipefail
REPEAT=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/vertebrae-bench}
PY=/usr/bin/python3
mkdir -p "$DIR"
VB="$DIR/vertebrae"
(cd "$ROOT" && go build -o "$VB" ./cmd/vertebrae)
for mode in one-class one-positive; do
	[ -f "$DIR/$mode/gallery_labels.txt" ] || $PY "$ROOT/bench/gen_labels.py" "$DIR/$mode" 2000 20000 384 "$mode"
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
measure() { # prints "wall user rss_kb"
	/usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Elapsed \(wall/ {n=split($2,t,":"); w=(n==3? t[1]*3600+t[2]*60+t[3] : t[1]*60+t[2])} /User time/ {u=$2} /Maximum resident/ {r=$2} END {print w, u, r}'
}
declare -A wall user rss
for i in $(seq "$REPEAT"); do
	for mode in one-class one-positive; do
		read -r w u r < <(measure "$VB" retrieval run --queries "$DIR/$mode/queries.npy" --gallery "$DIR/$mode/gallery.npy" \
			--query-labels "$DIR/$mode/query_labels.txt" --gallery-labels "$DIR/$mode/gallery_labels.txt" --quiet --json /dev/null)
		wall[$mode]+="$w "; user[$mode]+="$u "; rss[$mode]+="$r "
	done
	read -r w u r < <(measure "$VB" demo --quiet)
	wall[demo]+="$w "; user[demo]+="$u "; rss[demo]+="$r "
done
for mode in one-class one-positive demo; do
	printf '%-13s wall %s s  user %s s  peak RSS %s KB   (runs: wall %s)\n' "$mode" \
		"$(echo ${wall[$mode]} | tr ' ' '\n' | median)" "$(echo ${user[$mode]} | tr ' ' '\n' | median)" \
		"$(echo ${rss[$mode]} | tr ' ' '\n' | median)" "${wall[$mode]}"
done
