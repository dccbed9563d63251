#!/bin/sh
# The compiler under valgrind on one small zoo model: no invalid access, no
# definite leak. Exit 77 (skipped) without valgrind.
# usage: valgrind.sh ONNXC MODEL [ARGS...]
set -u
onnxc=$1 model=$2
shift 2
command -v valgrind >/dev/null 2>&1 || { echo "valgrind not installed: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/valgrind.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
exec valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
	"$onnxc" compile "$model" -o "$tmp/out" "$@"
