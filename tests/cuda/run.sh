#!/bin/sh
# run.sh ONNXC CASE_DIR [COMPILE OPTIONS...]
# The CUDA target end to end on whatever machine this is: the model compiles
# for the CPU and for CUDA with the same header (a program switches targets
# by relinking), `onnxc check --target cuda` links the generated code
# against cudart, cuBLASLt and cuDNN and runs it. On a machine with a GPU the
# outputs must match the test data; without one (CI) the only acceptable
# failure is the model's "no CUDA device" status, exit 1, no crash.
set -u
onnxc=$1 case=$2
shift 2
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
for t in cpu cuda; do
	"$onnxc" compile "$case/model.onnx" "$@" --target $t --name net -o "$work/$t" -q ||
		{ echo "FAIL: does not compile for $t"; exit 1; }
done
cmp "$work/cpu/net.h" "$work/cuda/net.h" ||
	{ echo "FAIL: the CPU and CUDA headers differ"; diff "$work/cpu/net.h" "$work/cuda/net.h"; exit 1; }
"$onnxc" check "$case" --target cuda >"$work/out" 2>&1
rc=$?
cat "$work/out"
if [ $rc -eq 0 ]; then
	echo "ok: ran on a CUDA device and matched"
	exit 0
fi
if [ $rc -eq 1 ] && grep -q "no CUDA device" "$work/out"; then
	echo "ok: linked; no device here, and the model says so"
	exit 0
fi
echo "FAIL: exit $rc"
exit 1
