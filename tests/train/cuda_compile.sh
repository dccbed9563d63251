#!/bin/sh
# cuda_compile.sh ONNXC PYTHON - a training step for the CUDA target without
# a GPU: tests/train/models.py's drop model (two training-mode Dropouts)
# trains through `onnxc train --target cuda` for sm_90a in mixed precision
# (the greedy policy: half dropout kernels); the step's and the eval model's
# PTX assemble with ptxas (when the toolkit's ptxas is there) and the
# program, linked, says there is no device (exit 1) when there is none.
# The GPT-style decoder trains for the CUDA target with its causal
# attention fused: the step runs one rtc_attention and one
# rtc_attention_grad per block and never a softmax over L x L scores. The
# branch model's step (a run-time If) runs direct, without a CUDA Graph.
# Where onnxc has MPI and NCCL the program is NCCL's (rt_train_main_nccl,
# libnccl linked) and, started by `mpirun -np 2` without a GPU, every rank
# says so and the run ends (exit status not 0) instead of hanging.
set -u
onnxc=$1 py=$2
w=$(mktemp -d "${TMPDIR:-/tmp}/onnxc_train_cuda_XXXXXX") || exit 1
trap 'rm -rf "$w"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$py" "$(dirname "$0")/models.py" "$w" drop sgd --steps 2 2>/dev/null || exit 77
"$onnxc" train "$w/model.onnx" -o "$w/out" --name net -q --target cuda --arch sm_90a \
	--precision mixed --amp-policy greedy || fail "onnxc train --target cuda"
grep -q "dropout_seed" "$w/out/net_step.h" || fail "the step takes no dropout seed"
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$ptxas" ]; then
	for m in step eval; do
		"$ptxas" -arch=sm_90a "$w/out/net_${m}_kernels.ptx" -o "$w/$m.cubin" ||
			fail "ptxas rejects the $m model's PTX"
	done
fi
"$w/out/train" --data "$w/data" --steps 1 > "$w/log" 2>&1
st=$?
if [ "$st" = 0 ]; then
	echo "ran on a GPU"
else
	[ "$st" = 1 ] && grep -q "no CUDA device" "$w/log" || { cat "$w/log"; fail "exit $st"; }
fi
if grep -q "rt_train_main_nccl" "$w/out/net_train_main.c"; then
	readelf -d "$w/out/train" | grep -q "NEEDED.*libnccl" || fail "the program does not link NCCL"
	if command -v mpirun >/dev/null; then
		timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 \
			-x ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
			"$w/out/train" --data "$w/data" --steps 1 > "$w/mpi.log" 2>&1
		st=$?
		if [ "$st" = 0 ]; then
			echo "ran on GPUs over NCCL"
		else
			[ "$st" != 124 ] || fail "mpirun -np 2 without a GPU hangs"
			for r in 0 1; do
				grep -q "(rank $r of 2): no CUDA device" "$w/mpi.log" ||
					{ cat "$w/mpi.log"; fail "rank $r does not say there is no device"; }
			done
		fi
	fi
	echo "ok: the program reduces over NCCL (rt_train_main_nccl, libnccl linked)"
fi

"$py" "$(dirname "$0")/models.py" "$w/gpt" gpt sgd --steps 2 2>/dev/null || fail "models.py gpt"
"$onnxc" train "$w/gpt/model.onnx" -o "$w/gpt/out" --name net -q --target cuda --arch sm_90a \
	--precision mixed || fail "onnxc train --target cuda (gpt)"
grep -q "rtc_attention_grad(" "$w/gpt/out/net_step.c" || fail "the gpt step has no fused attention_grad"
grep -q "rtc_attention(" "$w/gpt/out/net_step.c" || fail "the gpt step has no fused attention"
if [ -x "$ptxas" ]; then
	"$ptxas" -arch=sm_90a "$w/gpt/out/net_step_kernels.ptx" -o "$w/gpt.cubin" ||
		fail "ptxas rejects the gpt step's PTX"
fi
# a run-time If (models.py's branch): the step's guarded kernels run
# without a CUDA Graph (the launch code reads each guard back)
"$py" "$(dirname "$0")/models.py" "$w/branch" branch sgd --steps 2 2>/dev/null ||
	fail "models.py branch"
"$onnxc" train "$w/branch/model.onnx" -o "$w/branch/out" --name net -q --target cuda \
	--arch sm_90a --precision mixed --amp-policy greedy --verify ||
	fail "onnxc train --target cuda (branch)"
grep -q "info.direct = 1" "$w/branch/out/net_step.c" ||
	fail "the branch step would run as a CUDA Graph"
if [ -x "$ptxas" ]; then
	"$ptxas" -arch=sm_90a "$w/branch/out/net_step_kernels.ptx" -o "$w/branch.cubin" ||
		fail "ptxas rejects the branch step's PTX"
fi
echo "ok: the dropout, gpt and branch training steps compile for sm_90a"
