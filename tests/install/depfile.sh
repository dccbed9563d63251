#!/bin/sh
# depfile.sh ONNXC SMALL_MODELS_DIR
# onnxc compile --depfile: a model with external data, in a folder whose
# name has a space, '$' and '#', compiled with --depfile. The depfile names
# every output and the model and its external data file, escaped so that
# GNU make reads it: make finds the outputs up to date, and out of date once
# the external data (or the model) is newer; a failed compile leaves none.
set -eu
onnxc=$1 small=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/onnxc-depfile.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*"
	[ -f "$work/dep.d" ] && sed 's/^/  | /' "$work/dep.d"
	exit 1
}

# shellcheck disable=SC2016 # a literal '$', as in the folder's name
dir='odd dir $x #1'
mkdir "$work/$dir"
cp "$small/external.onnx" "$small/external_data.bin" "$work/$dir/"
cd "$work"
"$onnxc" compile "$dir/external.onnx" -o out --name ext --depfile dep.d -q ||
	fail "onnxc compile --depfile failed"
[ -f dep.d ] || fail "no depfile written"
# shellcheck disable=SC2016
for want in 'out/ext.h' 'out/ext.c' 'out/libext.a' 'out/ext.weights' \
	'odd\ dir\ $$x\ \#1/external.onnx' 'odd\ dir\ $$x\ \#1/external_data.bin'; do
	grep -qF -- "$want" dep.d || fail "the depfile lacks $want"
done
[ ! -f dep.d.tmp ] || fail "dep.d.tmp left behind"

cat >Makefile <<'MK'
out/%:
	@echo rebuild $@
include dep.d
MK
make -q out/ext.h out/libext.a out/ext.weights || fail "make: the outputs are not up to date"
touch "$dir/external_data.bin"
if make -q out/libext.a; then
	fail "make: newer external data does not make libext.a out of date"
fi

# --embed-weights: no weights file among the outputs; a failed compile
# writes no depfile
"$onnxc" compile "$dir/external.onnx" -o out2 --name ext --embed-weights --depfile dep2.d -q
grep -qF 'out2/ext.weights' dep2.d && fail "dep2.d names a weights file with --embed-weights"
if "$onnxc" compile "$dir/missing.onnx" -o out3 --depfile dep3.d -q 2>/dev/null; then
	fail "compiling a missing model succeeded"
fi
[ ! -e dep3.d ] || fail "a failed compile wrote a depfile"

# a newline in a path cannot be written in Make syntax (it would end the
# rule and inject recipe lines): refused, nothing written
nl="$(printf 'nl\nall:;@echo injected')"
mkdir -p "$nl"
cp "$dir/external.onnx" "$dir/external_data.bin" "$nl/"
if "$onnxc" compile "$nl/external.onnx" -o out4 --name ext --depfile dep4.d -q 2>err4; then
	fail "a depfile listing a path with a newline was written"
fi
grep -qF "Make cannot express" err4 || fail "the newline refusal does not say why: $(cat err4)"
[ ! -e dep4.d ] || fail "dep4.d was written"
echo "depfile: ok"
