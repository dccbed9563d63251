#!/bin/sh
# install.sh STEP BUILD SOURCE WORK [BAD_MODELS [SMALL_MODELS]]
#
# onnxc installed and used from other builds (docs/build-integration.md):
#   prefix        cmake --install BUILD into WORK/prefix: the files are there,
#                 and the installed onnxc links models with the installed
#                 runtime (onnxc run), not the build tree's
#   cmake         examples/cmake against the prefix (find_package(onnxc),
#                 onnxc_add_model): builds, runs, matches its reference; a
#                 second build does nothing; touching the model recompiles
#                 and relinks; a broken model fails the build naming the
#                 model file and the node (BAD_MODELS: tests/bad's models);
#                 a model with external data rebuilds when the data changes
#                 (SMALL_MODELS: tests/models/small.py's)
#   make          examples/make through pkg-config and --depfile: the same
#   reproducible  the same model and options compiled in two folders give
#                 byte-identical files (CPU, embedded weights, CUDA)
# Steps other than prefix need its prefix. Each works in WORK/step-STEP.
set -eu
step=$1 build=$2 src=$3 work=$4 bad=${5:-} small=${6:-}
prefix=$work/prefix
here=$work/step-$step
fail() {
	echo "FAIL ($step): $*"
	exit 1
}
# runs a command, its output in FILE; shows the output when it fails
logged() {
	log=$1
	shift
	if ! "$@" >"$log" 2>&1; then
		sed 's/^/  | /' "$log" | tail -n 40
		fail "$* failed"
	fi
}
have_cuda() { [ -f "$prefix/lib/libonnxc_rt_cuda.a" ]; }
# a private copy of the examples, so touching the model touches no one else's
copy_examples() {
	mkdir -p "$here/src/examples"
	cp -R "$src/examples/cmake" "$src/examples/make" "$src/examples/classifier.onnx" \
		"$here/src/examples/"
	model=$here/src/examples/classifier.onnx
}
# a newer mtime for FILE than anything built so far
touch_later() {
	sleep 1
	touch "$1"
}

rm -rf "$here"
mkdir -p "$here"
case $step in
prefix)
	rm -rf "$prefix"
	logged "$here/install.log" cmake --install "$build" --prefix "$prefix"
	files="bin/onnxc lib/libonnxc_rt.a include/onnxc/onnxc_rt.h lib/pkgconfig/onnxc.pc
		lib/cmake/onnxc/onnxcConfig.cmake lib/cmake/onnxc/onnxcConfigVersion.cmake
		lib/cmake/onnxc/onnxcTargets.cmake lib/cmake/onnxc/onnxcFunctions.cmake"
	if [ -f "$build/runtime/libonnxc_rt_cuda.a" ]; then
		files="$files lib/libonnxc_rt_cuda.a include/onnxc/onnxc_rt_cuda.h
			lib/pkgconfig/onnxc-cuda.pc"
	fi
	for f in $files; do
		[ -f "$prefix/$f" ] || fail "cmake --install did not install $f"
	done
	real=$(cd "$prefix" && pwd -P)
	line=$("$prefix/bin/onnxc" --version | grep '^runtime: ')
	case $line in
	"runtime: $real/"*) ;;
	*) fail "the installed onnxc does not use the installed runtime: $line" ;;
	esac
	# a zero image as .npy (version 1.0, a 128-byte header)
	{
		printf '\223NUMPY\001\000\166\000'
		printf "%-117s\n" "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 28, 28), }"
		head -c 3136 /dev/zero
	} >"$here/zero.npy"
	logged "$here/run.log" "$prefix/bin/onnxc" run "$src/examples/classifier.onnx" \
		--input "image=$here/zero.npy" --repeat 1 --cache-dir "$here/cache"
	grep -q logits "$here/run.log" || fail "onnxc run printed no logits"
	;;
cmake)
	copy_examples
	b=$here/build
	cuda=OFF
	have_cuda && cuda=ON
	logged "$here/configure.log" cmake -S "$here/src/examples/cmake" -B "$b" -G "Unix Makefiles" \
		-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release -DONNXC_EXAMPLE_CUDA=$cuda
	logged "$here/build1.log" cmake --build "$b" -j2
	logged "$here/run1.log" "$b/classify"
	grep -q "matches the reference" "$here/run1.log" || fail "classify: no match line"
	# onnxc_add_training: the training library, linked and trained
	(cd "$b" && logged "$here/train1.log" ./train_classifier)
	grep -q "training works" "$here/train1.log" || fail "train_classifier: the loss did not go down"
	[ -x "$b/onnxc/classifier_train/train" ] || fail "onnxc_add_training built no train program"
	if [ $cuda = ON ]; then
		# cross-compiled for sm_90a without a GPU; run it where there is one
		[ -x "$b/classify_gpu" ] || fail "no classify_gpu"
		ls "$b/onnxc/classifier_gpu/classifier_kernels.ptx" >/dev/null
	fi
	# nothing changed: nothing runs
	logged "$here/build2.log" cmake --build "$b" -j2
	if grep -E 'onnxc: compiling|Linking' "$here/build2.log"; then
		fail "a build with nothing changed rebuilt something"
	fi
	# the model changed: onnxc runs again and the program is relinked
	touch_later "$model"
	logged "$here/build3.log" cmake --build "$b" -j2
	grep -q 'onnxc: compiling ../classifier.onnx (cpu)' "$here/build3.log" ||
		fail "touching the model did not recompile it"
	grep -q 'Linking C executable classify$' "$here/build3.log" ||
		fail "touching the model did not relink classify"
	logged "$here/run3.log" "$b/classify"
	logged "$here/build4.log" cmake --build "$b" -j2
	if grep -E 'onnxc: compiling|Linking' "$here/build4.log"; then
		fail "the build after the rebuild rebuilt something"
	fi
	# a broken model is a build error naming the model file and the node
	if [ -f "$bad/op_unsupported.onnx" ]; then
		cp "$bad/op_unsupported.onnx" "$model"
		touch_later "$model"
		if cmake --build "$b" -j2 >"$here/build5.log" 2>&1; then
			fail "the build of a broken model succeeded"
		fi
		grep -F "$model: error: node 'nso' (NoSuchOp)" "$here/build5.log" ||
			{
				sed 's/^/  | /' "$here/build5.log" | tail -n 20
				fail "the build error does not name the model and the node"
			}
	else
		echo "note: tests/bad's models are missing (no Python onnx): broken-model check skipped"
	fi
	# external data: onnxc's depfile makes it a dependency of the model
	if [ -f "$small/external.onnx" ]; then
		mkdir "$here/ext"
		cp "$small/external.onnx" "$small/external_data.bin" "$here/ext/"
		cat >"$here/ext/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(ext LANGUAGES C)
find_package(onnxc REQUIRED)
onnxc_add_model(ext MODEL external.onnx EMBED_WEIGHTS)
add_library(user STATIC user.c)
target_link_libraries(user PRIVATE ext)
CM
		printf '#include "external.h"\nint f(void) { return EXTERNAL_NUM_INPUTS; }\n' \
			>"$here/ext/user.c"
		logged "$here/ext1.log" cmake -S "$here/ext" -B "$here/ext-build" \
			-DCMAKE_PREFIX_PATH="$prefix"
		logged "$here/ext2.log" cmake --build "$here/ext-build"
		grep -q 'onnxc: compiling external.onnx' "$here/ext2.log" || fail "external: no compile"
		touch_later "$here/ext/external_data.bin"
		logged "$here/ext3.log" cmake --build "$here/ext-build"
		grep -q 'onnxc: compiling external.onnx' "$here/ext3.log" ||
			fail "touching the external data did not recompile the model"
		logged "$here/ext4.log" cmake --build "$here/ext-build"
		if grep 'onnxc: compiling' "$here/ext4.log"; then
			fail "external: a build with nothing changed recompiled"
		fi
	fi
	;;
make)
	copy_examples
	pc=$(find "$prefix" -name onnxc.pc)
	PKG_CONFIG_PATH=$(dirname "$pc")
	export PKG_CONFIG_PATH
	mk() { make -C "$here/src/examples/make" O="$here/out" "$@"; }
	mkdir "$here/out"
	logged "$here/make1.log" mk
	logged "$here/run1.log" "$here/out/classify"
	grep -q "matches the reference" "$here/run1.log" || fail "classify: no match line"
	[ -f "$here/out/classifier/classifier.d" ] || fail "no depfile"
	mk -q || fail "make -q: not up to date after a build"
	touch_later "$model"
	if mk -q; then
		fail "make -q: up to date after touching the model"
	fi
	logged "$here/make2.log" mk
	grep -q ' compile ../classifier.onnx' "$here/make2.log" ||
		fail "touching the model did not recompile it"
	logged "$here/run2.log" "$here/out/classify"
	mk -q || fail "make -q: not up to date after the rebuild"
	;;
reproducible)
	onnxc=$prefix/bin/onnxc
	# the same file name in unrelated folders, given relative and absolute
	mkdir -p "$here/a" "$here/b/deeper/still" "$here/b/out"
	cp "$src/examples/classifier.onnx" "$here/a/"
	cp "$src/examples/classifier.onnx" "$here/b/deeper/still/"
	compare() { # compare TAG OPTIONS...
		tag=$1
		shift
		(cd "$here/a" && logged "$here/$tag-a.log" "$onnxc" compile classifier.onnx \
			-o "$tag" --dim batch=1 -q "$@")
		logged "$here/$tag-b.log" "$onnxc" compile "$here/b/deeper/still/classifier.onnx" \
			-o "$here/b/out/$tag" --dim batch=1 -q "$@"
		(cd "$here/a/$tag" && ls) >"$here/$tag-a.files"
		(cd "$here/b/out/$tag" && ls) >"$here/$tag-b.files"
		cmp "$here/$tag-a.files" "$here/$tag-b.files" || fail "$tag: different files"
		n=0
		while read -r f; do
			cmp "$here/a/$tag/$f" "$here/b/out/$tag/$f" || fail "$tag: $f differs"
			n=$((n + 1))
		done <"$here/$tag-a.files"
		echo "$tag: $n files identical ($(tr '\n' ' ' <"$here/$tag-a.files"))"
	}
	compare cpu
	compare embed --embed-weights
	if have_cuda; then
		compare cuda --target cuda --arch sm_90a --precision mixed
	fi
	;;
*)
	fail "unknown step"
	;;
esac
echo "$step: ok"
