#!/bin/sh
# onnxc run and check on the command line (docs/cli.md):
# - run's cache covers every byte the compile reads: a changed external data
#   file gives the new weights' outputs, a touched one (same bytes) is still
#   a hit; a hit imports nothing (-v says each step it takes); a torn,
#   foreign or lying manifest is a recompile or a clean error, never a crash;
#   the cache folder is created with its parents;
# - a --input that does not fit the model is reported naming the file, the
#   input and what differs, and --shape / --dim only where they were given;
#   inputs without a name skip those given otherwise;
# - check freezes shape inputs and refuses a later data set whose frozen
#   input differs (also in size: that was a heap over-read), matches
#   references to outputs by the name they carry, reports a short data set;
# - models with more inputs or outputs than fixed arrays once held;
# - compile -o, run --output-dir and check --keep create missing parents;
#   --shape on IR text and malformed numbers are usage errors.
# usage: cli.sh ONNXC PYTHON
set -u
onnxc=$1 py=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/onnxc-run.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" "$here/models.py" "$tmp" || exit 1
fail=0
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
# absent TEXT: the last command's output lacks TEXT
absent() {
	if grep -qF -- "$1" "$tmp/out"; then
		echo "FAIL: the output has '$1'"
		sed 's/^/    /' "$tmp/out"
		fail=1
	fi
}
# same_npy A B: two .npy files hold the same array
same_npy() {
	"$py" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and (a == b).all() else 1)' "$1" "$2" ||
		{
			echo "FAIL: $1 and $2 differ"
			fail=1
		}
}
# the expected output of ext/model.onnx for x.npy with weights W (a .npy)
expected() {
	"$py" -c 'import sys, numpy as np
np.save(sys.argv[3], np.load(sys.argv[1]) @ np.load(sys.argv[2]))' "$tmp/x.npy" "$1" "$2"
}
# set_weights SCALE: rewrites ext/model.data (same size) with SCALE * the
# first weights, and saves them as w.npy
set_weights() {
	"$py" -c 'import sys, numpy as np
w = np.arange(12, dtype=np.float32).reshape(3, 4) * float(sys.argv[2])
open(sys.argv[1] + "/ext/model.data", "wb").write(w.tobytes())
np.save(sys.argv[1] + "/w.npy", w)' "$tmp" "$1"
}
cache=$tmp/cache/a/b
ext=$tmp/ext/model.onnx
run_ext() { # run_ext OUTDIR [options]
	o=$1
	shift
	expect 0 "output y : f32[2,4]" "$onnxc" run "$ext" --input "$tmp/x.npy" --repeat 1 \
		--cache-dir "$cache" --output-dir "$o" -v "$@"
}

# --- the cache ---
set_weights 1
run_ext "$tmp/o1"
grep -qF "cache: miss" "$tmp/out" || { echo "FAIL: the first run is no miss"; fail=1; }
[ -d "$cache" ] || { echo "FAIL: --cache-dir was not created"; fail=1; }
expected "$tmp/w.npy" "$tmp/want1.npy"
same_npy "$tmp/o1/y.npy" "$tmp/want1.npy"
run_ext "$tmp/o2"
grep -qF "cache: hit" "$tmp/out" || { echo "FAIL: the second run is no hit"; fail=1; }
absent "importing"
absent "reading the inputs"
same_npy "$tmp/o2/y.npy" "$tmp/want1.npy"
dir=$(sed -n 's/^cache: hit //p' "$tmp/out")
grep -qF "data 10:model.data" "$dir/manifest" ||
	{ echo "FAIL: the key does not name model.data"; fail=1; }
touch "$tmp/ext/model.data" # a new time, the same bytes
run_ext "$tmp/o3"
grep -qF "cache: hit" "$tmp/out" || { echo "FAIL: a touched data file is a miss"; fail=1; }
set_weights 3 # other bytes, the model file unchanged
run_ext "$tmp/o4/new/folder"
grep -qF "cache: miss" "$tmp/out" || { echo "FAIL: new weights are a hit"; fail=1; }
expected "$tmp/w.npy" "$tmp/want3.npy"
same_npy "$tmp/o4/new/folder/y.npy" "$tmp/want3.npy"
dir=$(sed -n 's/^compiled in [0-9]* ms into //p' "$tmp/out")
# a torn manifest, a foreign key, absurd counts or ranks, a missing end:
# each a miss and a recompile
cp "$dir/manifest" "$tmp/manifest"
for damage in torn foreign count rank end; do
	case $damage in
	torn) head -c 100 "$tmp/manifest" ;;
	foreign) sed 's/model\.data/other.data/' "$tmp/manifest" ;;
	count) sed 's/^in 1$/in 99999999999/' "$tmp/manifest" ;;
	rank) sed 's/ f32 2 2 3$/ f32 9 2 3/' "$tmp/manifest" ;;
	end) sed '/^end$/d' "$tmp/manifest" ;;
	esac >"$dir/manifest"
	cmp -s "$dir/manifest" "$tmp/manifest" && { echo "FAIL: '$damage' changed nothing"; fail=1; }
	run_ext "$tmp/o5"
	grep -qF "cache: miss" "$tmp/out" || { echo "FAIL: a manifest after '$damage' hit"; fail=1; }
	same_npy "$tmp/o5/y.npy" "$tmp/want3.npy"
done
rm "$dir/model.so"
run_ext "$tmp/o5"
grep -qF "cache: miss" "$tmp/out" || { echo "FAIL: a build without model.so hit"; fail=1; }
# a manifest that parses but lies about the output's size: a clean error
sed 's/^1 y f32 2 2 4$/1 y f32 2 2 400/' "$dir/manifest" >"$tmp/manifest"
cmp -s "$dir/manifest" "$tmp/manifest" && { echo "FAIL: the lie changed nothing"; fail=1; }
cp "$tmp/manifest" "$dir/manifest"
expect 1 "the run failed" "$onnxc" run "$ext" --input "$tmp/x.npy" --repeat 1 \
	--cache-dir "$cache"
run_ext "$tmp/o6" --dump-after=dce
grep -qF "cache: not used" "$tmp/out" || { echo "FAIL: --dump-after used the cache"; fail=1; }

# --- --input against the model ---
two=$tmp/two.onnx
run_two() { # run_two STATUS TEXT [options]
	st=$1 text=$2
	shift 2
	expect "$st" "$text" "$onnxc" run "$two" --repeat 1 --cache-dir "$cache" "$@"
}
run_two 1 "b5.npy: dimension 0 of input 'b' is 'batch', which $tmp/a2.npy (input 'a') set to 2; the file has 5 (f32[5,3])" \
	--input "a=$tmp/a2.npy" --input "b=$tmp/b5.npy"
absent "--shape"
run_two 1 "i64.npy: input 'a' takes f32 elements (f32[batch,3]), the file holds i64 (i64[2,3])" \
	--input "a=$tmp/i64.npy" --input "b=$tmp/a2.npy"
absent "--shape"
run_two 1 "r3.npy: input 'a' has rank 2 (f32[batch,3]), the file rank 3 (f32[2,3,1])" \
	--input "a=$tmp/r3.npy" --input "b=$tmp/a2.npy"
absent "--shape"
run_two 1 "d4.npy: input 'b' has 3 in dimension 1 (f32[batch,3]), the file 4 (f32[2,4])" \
	--input "$tmp/a2.npy" --input "$tmp/d4.npy"
absent "--shape"
run_two 1 "--input c=$tmp/a2.npy: the model has no input named 'c' (its inputs: 'a', 'b')" \
	--input "c=$tmp/a2.npy" --input "b=$tmp/a2.npy" --input "a=$tmp/a2.npy"
absent "--shape"
run_two 1 "b5.npy: input 'a' has dimension 0 'batch' = 2 from --dim batch=2, the file 5 (f32[5,3])" \
	--input "a=$tmp/b5.npy" --input "b=$tmp/a2.npy" --dim batch=2
absent "--shape"
run_two 1 "b5.npy: --shape a=2x3 fixes the shape of input 'a', but the file holds f32[5,3]" \
	--input "a=$tmp/b5.npy" --input "b=$tmp/a2.npy" --shape a=2x3
run_two 1 "input 'a' is given twice" --input "a=$tmp/a2.npy" --input "a=$tmp/a2.npy" \
	--input "b=$tmp/a2.npy"
run_two 1 "--input $tmp/a2.npy: the model has no more inputs to take it" \
	--input "$tmp/a2.npy" --input "$tmp/a2.npy" --input "$tmp/a2.npy"
run_two 1 "no data for input 'b' (f32[batch,3]); give it with --input b=FILE" \
	--input "a=$tmp/a2.npy"
# an input without a name skips those given by name or with --const
run_two 0 "output y : f32[2,3]" --input "$tmp/a2.npy" --input "a=$tmp/a2.npy"
run_two 0 "output y : f32[2,3]" --const "a=$tmp/a2.npy" --input "$tmp/a2.npy"
# more inputs than the fixed arrays run once had (64)
set --
for _ in $(seq 70); do set -- "$@" --input "$tmp/one.npy"; done
expect 0 "output y : f32[1]" "$onnxc" run "$tmp/many_in.onnx" --repeat 1 --cache-dir "$cache" \
	--output-dir "$tmp/o7" "$@"
"$py" -c 'import sys, numpy as np; sys.exit(int(np.load(sys.argv[1])[0] != 70))' "$tmp/o7/y.npy" ||
	{ echo "FAIL: the sum of 70 ones is not 70"; fail=1; }

# --- check ---
expect 1 "input 'shape' was frozen as a constant (i64[2] from test_data_set_0) but $tmp/frozen_grows/test_data_set_1/input_1.pb holds another value (i64[3])" \
	"$onnxc" check "$tmp/frozen_grows"
expect 0 "passed" "$onnxc" check "$tmp/frozen_same"
expect 0 "passed" "$onnxc" check "$tmp/by_name"
expect 1 "test_data_set_0/output_0.pb is the reference for output 'zzz', which the model does not have (its outputs: 'a', 'b')" \
	"$onnxc" check "$tmp/unknown_name"
expect 1 "output_0.pb and $tmp/twice_named/test_data_set_0/output_1.pb are both references for output 'a'" \
	"$onnxc" check "$tmp/twice_named"
expect 1 '"passed": false' "$onnxc" check "$tmp/short_set" --json
expect 1 "test_data_set_1 has 0 inputs but the model takes 1" "$onnxc" check "$tmp/short_set"
expect 1 "test_data_set_0/input_0.pb: input 'x' has 4 in dimension 0 (f32[4]), the file 5 (f32[5])" \
	"$onnxc" check "$tmp/bad_input"
absent "--shape"
expect 0 "passed" "$onnxc" check "$tmp/many_out"
expect 0 "passed" "$onnxc" check "$tmp/by_name" --keep "$tmp/keep/a/b"
[ -f "$tmp/keep/a/b/model.so" ] || { echo "FAIL: check --keep made no folder"; fail=1; }
expect 2 "--rtol takes a non-negative number" "$onnxc" check "$tmp/by_name" --rtol abc
expect 2 "--atol takes a non-negative number" "$onnxc" check "$tmp/by_name" --atol -1

# --- folders, IR text, numbers ---
expect 0 "" "$onnxc" compile "$ext" -o "$tmp/lib/a/b/c" --dim batch=2 -q
[ -f "$tmp/lib/a/b/c/libmodel.a" ] || { echo "FAIL: compile -o a/b/c made no library"; fail=1; }
: >"$tmp/file"
expect 1 "cannot create the output folder $tmp/file/x" "$onnxc" compile "$ext" -o "$tmp/file/x" \
	--dim batch=2 -q
expect 0 "" "$onnxc" ir "$two" --dim batch=2 -o "$tmp/two.oir"
for cmd in "compile -o $tmp/lib2" "run --input $tmp/a2.npy --input $tmp/a2.npy" "report --precision mixed"; do
	# shellcheck disable=SC2086 # the command's words
	expect 2 "--shape, --dim and --const apply to ONNX models" "$onnxc" $cmd "$tmp/two.oir" \
		--shape a=2x3
done
# a file that cannot be written: a diagnostic naming the model and why
expect 1 "two.onnx: error: cannot write $tmp/none/x.oir: No such file or directory" \
	"$onnxc" ir "$two" --dim batch=2 -o "$tmp/none/x.oir"
expect 1 "two.onnx: error: cannot write $tmp/none/r.txt: No such file or directory" \
	"$onnxc" report "$two" --dim batch=2 --precision mixed -o "$tmp/none/r.txt"
expect 2 "--repeat takes a count" "$onnxc" run "$two" --input "$tmp/a2.npy" --repeat 5x
exit $fail
