#!/bin/sh
# expect_error.sh ONNXC MODEL EXPECTED [ARGS...]
#
# Runs `ONNXC ir MODEL ARGS... -o /dev/null` (120 s timeout: it only catches
# hangs - a bad model is handled in milliseconds) and passes only if
#   - the exit status is exactly 1 (errors in the input),
#   - stderr contains EXPECTED (a fixed string),
#   - stderr names MODEL,
#   - stderr has no "internal error", "Sanitizer" or "runtime error",
#   - stderr has no control character but the newlines ending its lines
#     (names from a model are escaped: they never forge lines or reach the
#     terminal as escape sequences).
# Prints what went wrong (and onnxc's output) on failure.
set -u

if [ $# -lt 3 ]; then
	echo "usage: expect_error.sh ONNXC MODEL EXPECTED [ARGS...]" >&2
	exit 2
fi
onnxc=$1
model=$2
expected=$3
shift 3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/expect_error.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

if command -v timeout >/dev/null 2>&1; then
	timeout -k 5 120 "$onnxc" ir "$model" "$@" -o /dev/null >"$tmp/out" 2>"$tmp/err" </dev/null
else
	"$onnxc" ir "$model" "$@" -o /dev/null >"$tmp/out" 2>"$tmp/err" </dev/null
fi
rc=$?

problems=
add() { problems="$problems
  - $1"; }

case $rc in
1) ;;
124) add "timed out after 120 s (exit status 124)" ;;
0) add "exit status 0: the error was not detected" ;;
2) add "exit status 2 (usage error), expected 1" ;;
*)
	if [ "$rc" -gt 128 ]; then
		add "killed by signal $((rc - 128)) (exit status $rc)"
	else
		add "exit status $rc, expected 1"
	fi
	;;
esac
grep -qF -- "$expected" "$tmp/err" || add "stderr lacks the expected text: $expected"
grep -qF -- "$model" "$tmp/err" || add "stderr does not name the model file $model"
grep -qF -- "internal error" "$tmp/err" && add "stderr reports an internal error"
grep -qF -- "Sanitizer" "$tmp/err" && add "stderr has a sanitizer report"
grep -qF -- "runtime error" "$tmp/err" && add "stderr has a UBSan runtime error"
tr -d '\n' <"$tmp/err" | LC_ALL=C grep -q '[[:cntrl:]]' && add "stderr has control characters"

if [ -z "$problems" ]; then
	exit 0
fi
echo "FAIL: $onnxc ir $model $* -o /dev/null$problems"
echo "--- stderr (first 60 lines):"
head -n 60 "$tmp/err"
if [ -s "$tmp/out" ]; then
	echo "--- stdout (first 20 lines):"
	head -n 20 "$tmp/out"
fi
exit 1
