#!/bin/sh
# check.sh ONNXC MODEL EXPECTED [ARGS...]
# Passes if `ONNXC ir MODEL ARGS` prints exactly EXPECTED, and EXPECTED
# read back as IR text prints itself again (print -> parse -> print).
set -u
onnxc=$1 model=$2 expected=$3
shift 3
out=$(mktemp) || exit 1
trap 'rm -f "$out" "$out.2"' EXIT
if ! "$onnxc" ir "$model" "$@" -o "$out"; then
	echo "FAIL: onnxc ir $model $* exited with status $?"
	exit 1
fi
if ! diff -u "$expected" "$out"; then
	echo "FAIL: the IR differs from $expected (scripts/update-golden regenerates it)"
	exit 1
fi
if ! "$onnxc" ir "$expected" -o "$out.2" || ! cmp -s "$expected" "$out.2"; then
	echo "FAIL: $expected does not round-trip through the IR parser"
	diff -u "$expected" "$out.2"
	exit 1
fi
