#!/usr/bin/env bash
# Peer comparison of issue #13, one command:  bash bench/run_peers.sh [REPEAT]
#
# Needs: Go, Debian python3-numpy python3-faiss (apt-get install -y
# python3-numpy python3-faiss), GNU time. Everything runs side by side in
# this one script, alternating, and medians are reported, so ratios stay
# meaningful on a shared machine. Data goes to $BENCH_DIR (default
# /tmp/vertebrae-bench); nothing is written into the repository.
set -euo pipefail
REPEAT=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_DIR:-/tmp/vertebrae-bench}
PY=/usr/bin/python3
mkdir -p "$DIR"
VB="$DIR/vertebrae"
(cd "$ROOT" && go build -o "$VB" ./cmd/vertebrae)
E2E="$DIR/e2e-1000x100000x384"
[ -f "$E2E/qrels.tsv" ] || $PY "$ROOT/bench/gen_embeddings.py" "$E2E" 1000 100000 384

# Peers run with OpenBLAS's own CPU detection (OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE unset); PEER_CORETYPE=SapphireRapids (say) forces a
# kernel where the detection of an older OpenBLAS picks a slow one.
peer=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ${PEER_CORETYPE:+OPENBLAS_CORETYPE=$PEER_CORETYPE})

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
secs() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }

ours64=() ours32=() npy=() fai=() ours64off=()
for i in $(seq "$REPEAT"); do
	run=(retrieval run --queries "$E2E/queries.npy" --gallery "$E2E/gallery.npy" --qrels "$E2E/qrels.tsv" --similarity cosine --quiet --json /dev/null)
	ours64+=("$(secs "$VB" "${run[@]}")")
	ours64off+=("$(VERTEBRAE_SCREEN=off secs "$VB" "${run[@]}")")
	ours32+=("$(secs "$VB" "${run[@]}" --precision float32)")
	npy+=("$(secs "${peer[@]}" $PY "$ROOT/bench/numpy_protocol.py" "$E2E")")
	fai+=("$(secs "${peer[@]}" $PY "$ROOT/bench/faiss_topk.py" "$E2E")")
done
m() { printf '%s\n' "$@" | median; }
o64=$(m "${ours64[@]}"); o64off=$(m "${ours64off[@]}"); o32=$(m "${ours32[@]}"); n=$(m "${npy[@]}"); f=$(m "${fai[@]}")
echo "Q=1000 G=100000 D=384 cosine, end to end, median of $REPEAT (wall s):"
echo "  vertebrae float64 (screened)      $o64   [${ours64[*]}]"
echo "  vertebrae float64 (SCREEN=off)    $o64off   [${ours64off[*]}]"
echo "  numpy float64 protocol            $n   [${npy[*]}]"
echo "  vertebrae --precision float32     $o32   [${ours32[*]}]"
echo "  faiss IndexFlatIP top-100         $f   [${fai[*]}]"
awk -v a="$n" -v b="$o64" -v c="$f" -v d="$o32" -v e="$o64off" 'BEGIN {
	printf "  ratio numpy/ours float64: %.2fx (exhaustive: %.2fx)\n", a/b, a/e
	printf "  ratio faiss/ours float32: %.2fx\n", c/d }'

# End to end vs the pure scoring time of bench for the same shape.
pure=$("$VB" bench --queries 1000 --gallery 100000 --dim 384 --similarity cosine --repeat "$REPEAT" --calibrate 0 | awk '/^median:/ {print $2}')
awk -v a="$o64" -v b="$pure" 'BEGIN { printf "  end to end / bench pure scoring (float64 cosine): %s / %s = %.2fx\n", a, b, a/b }'

# One thread, 2048 × 65536 × 768, dot: exact scoring vs OpenBLAS gemm alone,
# alternating one run of each, medians of REPEAT; positives drawn at random
# (in the bulk of the scores: the screens' worst case) and placed near their
# queries (bench --placement near, as relevant items in real embeddings).
# The screen that ran and its undecided fraction come from bench's phases.
for prec in float64 float32; do
	for pl in random near; do
		oursr=() blasr=() screen=""
		for i in $(seq "$REPEAT"); do
			out=$("$VB" bench --queries 2048 --gallery 65536 --dim 768 --similarity dot --precision $prec --placement $pl --threads 1 --repeat 1 --calibrate 0)
			oursr+=("$(awk '/^median:/ {print $2}' <<<"$out")")
			screen=$(grep -o '([0-9.e-]*), [0-9]* blocks exact ([a-z0-9]* screen)' <<<"$out" | sed 's/, [0-9]* blocks exact//')
			blasr+=("$("${peer[@]}" OPENBLAS_NUM_THREADS=1 $PY "$ROOT/bench/gemm.py" 2048 65536 768 $prec 1 | awk '{print $3}')")
		done
		ours=$(m "${oursr[@]}") blas=$(m "${blasr[@]}")
		awk -v a="$blas" -v b="$ours" -v p=$prec -v pl=$pl -v sc="$screen" -v ra="${blasr[*]}" -v rb="${oursr[*]}" 'BEGIN { printf "one thread 2048x65536x768 dot %s, %s positives: gemm %s s [%s], vertebrae %s s [%s] undecided %s, ratio gemm/ours %.2fx\n", p, pl, a, ra, b, rb, sc, a/b }'
	done
done
