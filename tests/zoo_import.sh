#!/bin/sh
# zoo_import.sh ONNXC MODEL [ARGS...]
# Imports a zoo model with the verifier on, then checks print -> parse ->
# print round-trips exactly.
set -u
onnxc=$1 model=$2
shift 2
out=$(mktemp) || exit 1
trap 'rm -f "$out" "$out.2"' EXIT
"$onnxc" ir "$model" "$@" --verify -o "$out" || { echo "FAIL: import of $model"; exit 1; }
"$onnxc" ir "$out" --verify -o "$out.2" || { echo "FAIL: parse of the printed IR"; exit 1; }
cmp -s "$out" "$out.2" || { echo "FAIL: print -> parse -> print differs"; diff "$out" "$out.2" | head; exit 1; }
grep -q ' = ' "$out" || { echo "FAIL: empty IR"; exit 1; }
echo "ok: $(grep -c ' = [a-z_]*(' "$out") nodes"
