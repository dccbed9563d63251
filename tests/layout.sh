#!/bin/sh
# layout.sh SRC - the folders include only what their header comments allow:
#   ir/        the IR alone (it knows no frontend, pass or backend)
#   frontend/  ONNX in and out, over the IR alone (frontend/fe.h)
#   passes/    IR into IR, over the IR alone (passes/passes.h)
#   cli/       the onnxc executable: anything, and nothing includes it
# A quoted include names a folder ("ir/ir.h") or a header of the same
# folder ("fe.h"); frontend/ also takes protoc-c's generated onnx.pb-c.h.
src=$1
fail=0

# check FOLDER ALLOWED...: every quoted include in FOLDER/*.[ch] is in one
# of the ALLOWED folders or its own
check() {
	folder=$1
	shift
	for f in "$src/$folder"/*.[ch]; do
		sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
			case $inc in
			*/*) dir=${inc%%/*} ;;
			onnx.pb-c.h) [ "$folder" = frontend ] && continue; dir=generated ;;
			*) [ -f "$src/$folder/$inc" ] && continue; dir=missing ;;
			esac
			ok=false
			for a in "$@"; do
				[ "$dir" = "$a" ] && ok=true
			done
			$ok || echo "FAIL: ${f#"$src"/} includes \"$inc\" (it may include $(printf '%s/ ' "$@"))"
		done
	done
}

out=$(
	check ir ir
	check frontend ir frontend
	check passes ir passes
	for d in ir frontend passes codegen runtime runtime/cuda tests tests/unit tests/fuzz; do
		grep -ln '^[ \t]*#[ \t]*include[ \t]*"cli/' "$src/$d"/*.[ch] "$src/$d"/*.cu 2>/dev/null |
			sed "s|^$src/|FAIL: |; s|\$| includes a cli/ header|"
	done
)
if [ -n "$out" ]; then
	echo "$out"
	fail=1
fi
[ $fail = 0 ] && echo "layout: ir/, frontend/ and passes/ include only what they may; nothing includes cli/"
exit $fail
