#!/usr/bin/env bash
# End to end against bench's pure scoring (issue #13: "end-to-end wall time
# ≤ 1.15× the pure scoring time of bench for the same shape"), one command:
#   bash bench/overhead.sh [PAIRS] [extra retrieval run / bench flags, e.g. --precision float32]
# Each round runs `retrieval run` twice (with the digest cache warm, and with
# VERTEBRAE_DIGEST_CACHE=off so the 154 MB gallery is hashed) and then
# `vertebrae bench --repeat 1` of the same shape with float32 storage (what
# the files hold) and float64 storage (bench's default for the float64
# protocol), back to back, so all see the same machine state; the medians of
# the per-round ratios are reported, which stay meaningful while absolute
# times drift on a shared machine.
set -euo pipefail
PAIRS=${1:-9} # rounds
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
wall() { # wall seconds of one command (bash's microsecond clock; GNU time rounds to 10 ms)
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.4f", b - a}'
}
pure() { # bench's pure scoring seconds; $1 = storage of the synthetic matrices
	local s=$1
	shift
	"$VB" bench --queries 1000 --gallery 100000 --dim 384 --similarity cosine --repeat 1 --calibrate 0 --storage "$s" "$@" | awk '/^median:/ {print $2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a/b}'; }
run=("$VB" retrieval run --queries "$E2E/queries.npy" --gallery "$E2E/gallery.npy" --qrels "$E2E/qrels.tsv" --similarity cosine --quiet --json /dev/null "$@")
# One run first, so the digest cache (README "Content identity and the digest cache") holds the files' digests.
"${run[@]}" >/dev/null
warm=() cold=() p32=() p64=() r32=() r64=() c32=()
for i in $(seq "$PAIRS"); do
	w=$(wall "${run[@]}")
	c=$(VERTEBRAE_DIGEST_CACHE=off wall "${run[@]}")
	a=$(pure float32 "$@")
	b=$(pure float64 "$@")
	warm+=("$w") cold+=("$c") p32+=("$a") p64+=("$b")
	r32+=("$(ratio "$w" "$a")") r64+=("$(ratio "$w" "$b")") c32+=("$(ratio "$c" "$a")")
done
m() { printf '%s\n' "$@" | median; }
echo "Q=1000 G=100000 D=384 cosine $*, $PAIRS rounds, each: run (digest cache warm), run (VERTEBRAE_DIGEST_CACHE=off), bench --storage float32, bench --storage float64 (wall s):"
echo "  retrieval run, digests cached  $(m "${warm[@]}")   [${warm[*]}]"
echo "  retrieval run, hashing         $(m "${cold[@]}")   [${cold[*]}]"
echo "  bench pure, float32 storage    $(m "${p32[@]}")   [${p32[*]}]"
echo "  bench pure, float64 storage    $(m "${p64[@]}")   [${p64[*]}]"
echo "  per-round ratio cached / bench float32 storage   $(m "${r32[@]}")x  [${r32[*]}]"
echo "  per-round ratio cached / bench float64 storage   $(m "${r64[@]}")x  [${r64[*]}]"
echo "  per-round ratio hashing / bench float32 storage  $(m "${c32[@]}")x  [${c32[*]}]"
