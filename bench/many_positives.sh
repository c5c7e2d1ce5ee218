#!/usr/bin/env bash
# Many positives (issue #13): 2,000 × 20,000 × 384 in one class (20,000
# positives per query) against the same run with one positive per query.
# One command:  bash bench/many_positives.sh [REPEAT]
# Reports the median wall and user seconds and the peak RSS (GNU time -v)
# of each, alternating the runs within every round:
#   one-class         embedding digests from the digest cache (filled by an
#                     earlier run); the labels are hashed (SPEC §2.7 label form);
#   one-class-hashing VERTEBRAE_DIGEST_CACHE=off: the embedding files are
#                     hashed too, as on a first run;
#   one-positive      the baseline (digests cached);
#   classes-2/-10     10,000 / 2,000 positives per query, interleaved with
#                     as many / 9× as many negatives (digests cached);
# and `vertebrae demo`.
set -euo pipefail
REPEAT=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/vertebrae-bench}
PY=/usr/bin/python3
mkdir -p "$DIR"
VB="$DIR/vertebrae"
(cd "$ROOT" && go build -o "$VB" ./cmd/vertebrae)
modes=(one-class one-positive classes-2 classes-10)
for mode in "${modes[@]}"; do
	[ -f "$DIR/$mode/gallery_labels.txt" ] || $PY "$ROOT/bench/gen_labels.py" "$DIR/$mode" 2000 20000 384 "$mode"
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
measure() { # prints "wall user rss_kb"
	/usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Elapsed \(wall/ {n=split($2,t,":"); w=(n==3? t[1]*3600+t[2]*60+t[3] : t[1]*60+t[2])} /User time/ {u=$2} /Maximum resident/ {r=$2} END {print w, u, r}'
}
runargs() { # the retrieval run of a mode
	echo retrieval run --queries "$DIR/$1/queries.npy" --gallery "$DIR/$1/gallery.npy" \
		--query-labels "$DIR/$1/query_labels.txt" --gallery-labels "$DIR/$1/gallery_labels.txt" --quiet --json /dev/null
}
for mode in "${modes[@]}"; do # one run each first, so the digest cache holds their embedding digests
	"$VB" $(runargs "$mode") >/dev/null
done
declare -A wall user rss
for i in $(seq "$REPEAT"); do
	for mode in one-class one-class-hashing one-positive classes-2 classes-10 demo; do
		case $mode in
		demo) read -r w u r < <(measure "$VB" demo --quiet) ;;
		one-class-hashing) read -r w u r < <(measure env VERTEBRAE_DIGEST_CACHE=off "$VB" $(runargs one-class)) ;;
		*) read -r w u r < <(measure "$VB" $(runargs "$mode")) ;;
		esac
		wall[$mode]+="$w " user[$mode]+="$u " rss[$mode]+="$r "
	done
done
for mode in one-class one-class-hashing one-positive classes-2 classes-10 demo; do
	printf '%-17s wall %s s  user %s s  peak RSS %s KB   (runs: wall %s)\n' "$mode" \
		"$(echo ${wall[$mode]} | tr ' ' '\n' | median)" "$(echo ${user[$mode]} | tr ' ' '\n' | median)" \
		"$(echo ${rss[$mode]} | tr ' ' '\n' | median)" "${wall[$mode]}"
done
# Per-round ratios against the one-positive run of the same round.
for mode in one-class one-class-hashing classes-2 classes-10; do
	read -ra a <<<"${wall[$mode]}"
	read -ra b <<<"${wall[one-positive]}"
	rs=()
	for k in "${!a[@]}"; do rs+=("$(awk -v x="${a[$k]}" -v y="${b[$k]}" 'BEGIN {printf "%.2f", x/y}')"); done
	printf '%-17s / one-positive: median %sx  (rounds %s)\n' "$mode" "$(printf '%s\n' "${rs[@]}" | median)" "${rs[*]}"
done
