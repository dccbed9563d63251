#!/bin/sh
# --max-memory (docs/cli.md): a model whose planned memory is huge but cheap
# to import (x[1] -> Expand to 1e6 x 1e6 -> ReduceSum: a 4 TB intermediate)
# is refused with a diagnostic naming the model, exit status 1, by compile,
# report and run; a constant above the limit is refused at import; a small
# model (two 4 MiB weights) compiles under the default and is refused under
# a limit between one constant and both; a
# malformed size is a usage error.
# usage: max_memory.sh ONNXC PYTHON SMALL_MODEL_DIR
set -u
onnxc=$1 py=$2 small=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/max_memory.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp" <<'PY' || exit 1
import sys, numpy as np, onnx
from onnx import helper, TensorProto as T
d = sys.argv[1]
shape = helper.make_tensor("shape", T.INT64, [2], [1000000, 1000000])
g = helper.make_graph(
    [helper.make_node("Expand", ["x", "shape"], ["big"], name="expand"),
     helper.make_node("ReduceSum", ["big"], ["y"], name="sum", keepdims=0)],
    "huge", [helper.make_tensor_value_info("x", T.FLOAT, [1])],
    [helper.make_tensor_value_info("y", T.FLOAT, [])], [shape])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/huge_arena.onnx")
w = [helper.make_tensor(n, T.FLOAT, [1024, 1024], np.full(1 << 20, v, np.float32).tobytes(),
                        raw=True) for n, v in (("w", 1), ("v", 2))]
g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t"], name="add"),
                       helper.make_node("Mul", ["t", "v"], ["y"], name="mul")], "w4m",
                      [helper.make_tensor_value_info("x", T.FLOAT, [1024, 1024])],
                      [helper.make_tensor_value_info("y", T.FLOAT, [1024, 1024])], w)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/weights_4m.onnx")
np.save(d + "/x.npy", np.ones(1, np.float32))
PY
fail=0
expect() { # expect STATUS TEXT CMD...
	want=$1 text=$2
	shift 2
	timeout -k 5 60 "$@" >"$tmp/out" 2>&1 </dev/null
	rc=$?
	if [ $rc -ne "$want" ] || ! grep -qF -- "$text" "$tmp/out" ||
		grep -qE "Sanitizer|runtime error|internal error" "$tmp/out"; then
		echo "FAIL (exit $rc, wanted $want and '$text'): $*"
		sed 's/^/    /' "$tmp/out"
		fail=1
	else
		echo "ok: $*"
	fi
}
huge=$tmp/huge_arena.onnx
msg="huge_arena.onnx: error: the model needs 4000000000000 bytes of memory"
expect 1 "$msg" "$onnxc" compile "$huge" -o "$tmp/out1"
expect 1 "more than --max-memory 17179869184" "$onnxc" compile "$huge" -o "$tmp/out1"
expect 1 "$msg" "$onnxc" report "$huge"
expect 1 "$msg" "$onnxc" run "$huge" --input x="$tmp/x.npy" --cache-dir "$tmp/cache"
expect 1 "$msg" "$onnxc" compile "$huge" -o "$tmp/out1" --max-memory 1T
w=$tmp/weights_4m.onnx
expect 0 "" "$onnxc" compile "$w" -o "$tmp/out2"
expect 1 "weights_4m.onnx: error: the model needs" "$onnxc" compile "$w" -o "$tmp/out3" --max-memory 6M
expect 1 "has 4194304 bytes, more than the limit of 1048576" "$onnxc" ir "$w" --max-memory 1M
expect 0 "" "$onnxc" compile "$w" -o "$tmp/out4" --max-memory 64M
expect 2 "--max-memory takes a size" "$onnxc" compile "$w" -o "$tmp/out5" --max-memory lots
expect 2 "--max-memory takes a size" "$onnxc" compile "$w" -o "$tmp/out5" --max-memory -1G
exit $fail
