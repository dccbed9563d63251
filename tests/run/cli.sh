#!/bin/sh
# onnxc run, check and compile on the command line (docs/cli.md):
# - compile -o creates missing parents; --shape on IR text is a usage
#   error.
# usage: cli.sh ONNXC PYTHON
set -u
onnxc=$1 py=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/onnxc-run.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" "$here/models.py" "$tmp" || exit 1
fail=0
two=$tmp/two.onnx
ext=$tmp/ext/model.onnx
# expect STATUS TEXT CMD...: the exit status, TEXT in the output, and no
# sanitizer report; the output stays in $tmp/out for the checks after it
expect() {
	want=$1 text=$2
	shift 2
	timeout -k 5 120 "$@" >"$tmp/out" 2>&1 </dev/null
	rc=$?
	if [ $rc -ne "$want" ] || { [ -n "$text" ] && ! grep -qF -- "$text" "$tmp/out"; } ||
		grep -qE "Sanitizer|runtime error|internal error" "$tmp/out"; then
		echo "FAIL (exit $rc, wanted $want and '$text'): $*"
		sed 's/^/    /' "$tmp/out"
		fail=1
	else
		echo "ok: $*"
	fi
}
# --- folders, IR text, numbers ---
expect 0 "" "$onnxc" compile "$ext" -o "$tmp/lib/a/b/c" --dim batch=2 -q
[ -f "$tmp/lib/a/b/c/libmodel.a" ] || { echo "FAIL: compile -o a/b/c made no library"; fail=1; }
: >"$tmp/file"
expect 1 "cannot create the output folder $tmp/file/x" "$onnxc" compile "$ext" -o "$tmp/file/x" \
	--dim batch=2 -q
expect 0 "" "$onnxc" ir "$two" --dim batch=2 -o "$tmp/two.oir"
for cmd in "compile -o $tmp/lib2" "report --precision mixed"; do
	# shellcheck disable=SC2086 # the command's words
	expect 2 "--shape, --dim and --const apply to ONNX models" "$onnxc" $cmd "$tmp/two.oir" \
		--shape a=2x3
done
exit $fail
