#!/bin/sh
# examples/vad: a Silero-VAD-like model (a run-time If on the sample rate
# around two Conv + LSTM networks, its state fed back call after call)
# compiled for the CPU, its streaming program built and run against torch's
# outputs at both rates (and ONNX Runtime's, where installed; again after
# `onnxc export`); then, in
# --precision mixed, the same (the LSTM stays FP32) to 1e-2, and the model
# compiled for CUDA (no GPU needed).
#   vad.sh ONNXC PYTHON SOURCE_DIR LIBONNXC_RT WORK [SANITIZE_LINK_FLAGS]
set -eu
# $san is a list of flags: split on purpose
# shellcheck disable=SC2086
onnxc=$1 python=$2 src=$3 rt=$4 work=$5 san=${6:-}
rm -rf "$work"
mkdir -p "$work"
"$python" "$src/examples/vad/make_vad.py" "$work/data" 2>/dev/null
"$onnxc" compile "$work/data/vad.onnx" -o "$work/out" --name vad -q
cc -O2 -std=c11 -Wall -Werror "$src/examples/vad/vad.c" -I"$work/out" -I"$src/runtime" \
	"$work/out/libvad.a" "$rt" $san -lopenblas -lpthread -lm -o "$work/vad"
"$work/vad" "$work/data" "$work/out/vad.weights"
# against ONNX Runtime streaming the same model, where onnxruntime-node is
# installed (not in CI)
if command -v node >/dev/null && node "$src/scripts/ort_run.js" --check >/dev/null 2>&1; then
	node "$src/examples/vad/vad_ort.js" "$work/data" "$work/ort"
	"$work/vad" "$work/ort" "$work/out/vad.weights" 1e-4 "ONNX Runtime"
else
	echo "ONNX Runtime (onnxruntime-node) not found: its comparison skipped"
fi
# exported back to ONNX (the run-time If rebuilt from its guarded branches),
# compiled again: the same streaming program, the same outputs
"$onnxc" export "$work/data/vad.onnx" -o "$work/exported.onnx"
"$onnxc" compile "$work/exported.onnx" -o "$work/exp" --name vad -q
cc -O2 -std=c11 -Wall -Werror "$src/examples/vad/vad.c" -I"$work/exp" -I"$src/runtime" \
	"$work/exp/libvad.a" "$rt" $san -lopenblas -lpthread -lm -o "$work/vad-exp"
"$work/vad-exp" "$work/data" "$work/exp/vad.weights"
"$onnxc" compile "$work/data/vad.onnx" --precision mixed -o "$work/mixed" --name vad -q
cc -O2 -std=c11 -Wall -Werror "$src/examples/vad/vad.c" -I"$work/mixed" -I"$src/runtime" \
	"$work/mixed/libvad.a" "$rt" $san -lopenblas -lpthread -lm -o "$work/vad-mixed"
"$work/vad-mixed" "$work/data" "$work/mixed/vad.weights" 1e-2
"$onnxc" compile "$work/data/vad.onnx" --target cuda -o "$work/cuda" --name vad -q
echo "compiled for cuda: $(ls "$work/cuda" | tr '\n' ' ')"
