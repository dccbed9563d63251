#!/bin/sh
# compile.sh ONNXC MODEL DIMS...
# The CUDA target without a GPU: the model compiles for sm_80 and sm_90a in
# FP32 and in mixed precision (the greedy policy, which paints the most
# half), every generated PTX file assembles with ptxas for its architecture
# (when the CUDA toolkit's ptxas is there), and the generated launch code
# compiles as C11 with every warning on.
set -eu
onnxc=$1 model=$2
shift 2
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
rtinc=$(dirname "$0")/../../runtime
for arch in sm_80 sm_90a; do
	for precision in fp32 mixed; do
		out=$work/$arch-$precision
		policy=""
		[ "$precision" = mixed ] && policy="--amp-policy greedy"
		if ! "$onnxc" compile "$model" "$@" --target cuda --arch "$arch" \
			--precision "$precision" $policy --name net -o "$out" -q; then
			echo "FAIL: $model does not compile for $arch ($precision)"
			exit 1
		fi
		for f in net.h net.c net_kernels.ptx libnet.a; do
			[ -s "$out/$f" ] || { echo "FAIL: $arch $precision: no $f"; exit 1; }
		done
		if [ -x "$ptxas" ]; then
			if ! "$ptxas" -arch="$arch" "$out/net_kernels.ptx" -o "$out/net.cubin"; then
				echo "FAIL: ptxas rejects the PTX for $arch ($precision)"
				exit 1
			fi
		fi
		if ! cc -std=c11 -Wall -Wextra -Werror -Wno-unused-parameter -I"$rtinc" -c \
			"$out/net.c" -o "$out/check.o"; then
			echo "FAIL: the generated CUDA launch code for $arch ($precision) has warnings"
			exit 1
		fi
		echo "ok: $arch $precision ($(wc -c < "$out/net_kernels.ptx") bytes of PTX)"
	done
done
