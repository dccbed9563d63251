#!/bin/sh
# run.sh ONNXC MODEL OTHER_MODEL RUNTIME_LIB RUNTIME_INCLUDE [SANITIZE_FLAGS]
# Compiles MODEL as library m (weights file) and me (embedded weights), and
# OTHER_MODEL as m too in another folder (a foreign weights file for the same
# API), builds api_test.c against them and runs it.
set -eu
onnxc=$1 model=$2 other=$3 rtlib=$4 rtinc=$5 san=${6:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$onnxc" compile "$model" --dim batch=2 -o "$work/m" --name m -q
"$onnxc" compile "$model" --dim batch=2 -o "$work/me" --name me --embed-weights -q
"$onnxc" compile "$other" --dim batch=2 -o "$work/other" --name m -q
head -c 100 "$work/m/m.weights" > "$work/truncated.weights"
# shellcheck disable=SC2086
cc -std=c11 -O1 $san "$here/api_test.c" -I"$work/m" -I"$work/me" -I"$rtinc" \
	"$work/m/libm.a" "$work/me/libme.a" "$rtlib" -lopenblas -lpthread -lm -o "$work/api_test"
"$work/api_test" "$work/m/m.weights" "$work/other/m.weights" "$work/truncated.weights"
