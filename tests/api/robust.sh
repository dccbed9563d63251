#!/bin/sh
# robust.sh ONNXC MODEL RUNTIME_LIB RUNTIME_INCLUDE [SANITIZE_FLAGS]
# Compiles MODEL as m (FP32) and mm (--precision mixed, greedy: the most
# half precision), builds robust.c against them, then
#   - fails allocation 1, 2, 3, ... of m_create / m_run (ONNXC_FAIL_ALLOC=N)
#     until a run needs no more: each must give RT_ERR_NO_MEMORY and, under
#     the sanitizer build, leak nothing (skipped where the runtime is built
#     with NDEBUG and has no failure injection);
#   - runs both with NaN, Inf and out-of-half-range inputs.
set -eu
onnxc=$1 model=$2 rtlib=$3 rtinc=$4 san=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$onnxc" compile "$model" --dim batch=2 -o "$work/m" --name m -q
"$onnxc" compile "$model" --dim batch=2 -o "$work/mm" --name mm -q --precision mixed \
	--amp-policy greedy
# shellcheck disable=SC2086
cc -std=c11 -O1 $san "$here/robust.c" -I"$work/m" -I"$work/mm" -I"$rtinc" \
	"$work/m/libm.a" "$work/mm/libmm.a" "$rtlib" -lopenblas -lpthread -lm -o "$work/robust"
"$work/robust" nonfinite "$work/m/m.weights" "$work/mm/mm.weights"
echo "non-finite inputs: ok"
# ONNXC_THREADS=2: the worker-thread array is one of the allocations
export ONNXC_THREADS=2
n=1
while :; do
	set +e
	ONNXC_FAIL_ALLOC=$n "$work/robust" fail "$work/m/m.weights"
	rc=$?
	set -e
	case $rc in
	0) break ;;
	3) n=$((n + 1)) ;;
	*) echo "allocation $n failed: exit status $rc (want 3: RT_ERR_NO_MEMORY)"; exit 1 ;;
	esac
	[ $n -le 100 ] || { echo "more than 100 allocations"; exit 1; }
done
if [ $n -eq 1 ]; then
	echo "this runtime is built with NDEBUG: no failure injection, skipped"
	exit 77
fi
echo "failure injection: allocations 1 to $((n - 1)) failed cleanly"
