#!/usr/bin/env bash
# End to end against bench's pure scoring (issue #13: "end-to-end wall time
# ≤ 1.15× the pure scoring time of bench for the same shape"), one command:
#   bash bench/overhead.sh [PAIRS] [extra retrieval run / bench flags, e.g. --precision float32]
# Each pair runs one `retrieval run` (wall, GNU time) and then one `vertebrae
# bench --repeat 1` of the same shape back to back, so both see the same
# machine state; the median of the per-pair ratios is reported, which stays
# meaningful while absolute times drift on a shared machine.
set -euo pipefail
PAIRS=${1:-9}
shift || true
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/vertebrae-bench}
PY=/usr/bin/python3
mkdir -p "$DIR"
VB="$DIR/vertebrae"
(cd "$ROOT" && go build -o "$VB" ./cmd/vertebrae)
E2E="$DIR/e2e-1000x100000x384"
[ -f "$E2E/qrels.tsv" ] || $PY "$ROOT/bench/gen_embeddings.py" "$E2E" 1000 100000 384
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
e2e=() pure=() ratio=()
for i in $(seq "$PAIRS"); do
	w=$(/usr/bin/time -f %e "$VB" retrieval run --queries "$E2E/queries.npy" --gallery "$E2E/gallery.npy" \
		--qrels "$E2E/qrels.tsv" --similarity cosine --quiet --json /dev/null "$@" 2>&1 >/dev/null | tail -1)
	p=$("$VB" bench --queries 1000 --gallery 100000 --dim 384 --similarity cosine --repeat 1 --calibrate 0 "$@" | awk '/^median:/ {print $2}')
	e2e+=("$w") pure+=("$p") ratio+=("$(awk -v a="$w" -v b="$p" 'BEGIN {printf "%.3f", a/b}')")
done
m() { printf '%s\n' "$@" | median; }
echo "Q=1000 G=100000 D=384 cosine $*, $PAIRS alternating pairs (wall s):"
echo "  retrieval run end to end   $(m "${e2e[@]}")   [${e2e[*]}]"
echo "  bench pure scoring         $(m "${pure[@]}")   [${pure[*]}]"
echo "  per-pair ratio e2e/pure    $(m "${ratio[@]}")x  [${ratio[*]}]"
