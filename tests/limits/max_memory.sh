#!/bin/sh
# --max-memory (docs/cli.md): a model whose planned memory is huge but cheap
# to import (x[1] -> Expand to 1e6 x 1e6 -> ReduceSum: a 4 TB intermediate)
# is refused with a diagnostic naming the model, exit status 1, by compile,
# report and run; a constant above the limit is refused at import; a small
# model (two 4 MiB weights) compiles under the default and is refused under
# a limit between one constant and both; a
# malformed size is a usage error. What the caller allocates counts too:
# Expand, Tile, Pad and Resize whose constant arguments make a 4 TB graph
# output, eight 2^61-byte inputs (the sum overflows int64), an 8 MiB
# Identity under --max-memory 1K, a Range computed at run time (beyond the
# folding budget) of 1e12 elements. Sizes no int64 holds are refused
# before any offset is computed: two 2^62-byte intermediates alive at once,
# a convolution whose im2col workspace overflows.
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
vi, i64 = helper.make_tensor_value_info, lambda n, a: helper.make_tensor(n, T.INT64, [len(a)], a)
def save(name, nodes, ins, outs, inits=()):
    g = helper.make_graph(nodes, name, ins, outs, list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
big = [1000000, 1000000]
save("expand_out", [helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [1])],
     [vi("y", T.FLOAT, big)], [i64("s", big)])
save("tile_out", [helper.make_node("Tile", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [1, 1])],
     [vi("y", T.FLOAT, big)], [i64("s", big)])
save("pad_out", [helper.make_node("Pad", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [1, 1])],
     [vi("y", T.FLOAT, [1000001, 1000001])], [i64("s", [0, 0, 1000000, 1000000])])
save("resize_out", [helper.make_node("Resize", ["x", "", "s"], ["y"])], [vi("x", T.FLOAT, [1, 1])],
     [vi("y", T.FLOAT, big)], [helper.make_tensor("s", T.FLOAT, [2], [1e6, 1e6])])
save("huge_inputs", [helper.make_node("Identity", ["x0"], ["y"])],
     [vi(f"x{i}", T.FLOAT, [2**59]) for i in range(8)], [vi("y", T.FLOAT, [2**59])])
save("identity_8m", [helper.make_node("Identity", ["x"], ["y"])], [vi("x", T.FLOAT, [1 << 20])],
     [vi("y", T.FLOAT, [1 << 20])])
rg = [helper.make_tensor(n, T.FLOAT, [], [v]) for n, v in (("s", 0), ("l", 1e12), ("d", 1))]
save("range_run_time", [helper.make_node("Range", ["s", "l", "d"], ["r"]),
                        helper.make_node("ReduceSum", ["r"], ["y"], keepdims=0)],
     [], [vi("y", T.FLOAT, [])], rg)
i64s = lambda n, a: helper.make_tensor(n, T.INT64, [len(a)], a)
save("two_huge", [helper.make_node("Expand", ["x", "s"], ["a"]),
                  helper.make_node("Expand", ["x2", "s"], ["b"]),
                  helper.make_node("Mul", ["a", "b"], ["c"]), helper.make_node("Exp", ["a"], ["e"]),
                  helper.make_node("Add", ["c", "e"], ["d"]),
                  helper.make_node("ReduceSum", ["d"], ["y"], keepdims=0)],
     [vi("x", T.FLOAT, [1]), vi("x2", T.FLOAT, [1])], [vi("y", T.FLOAT, [])],
     [i64s("s", [2**30, 2**30 - 1])])
save("conv_workspace", [helper.make_node("Expand", ["x", "xs"], ["X"]),
                        helper.make_node("Expand", ["w", "ws"], ["W"]),
                        helper.make_node("Conv", ["X", "W"], ["y"])],
     [vi("x", T.FLOAT, [1]), vi("w", T.FLOAT, [1])],
     [vi("y", T.FLOAT, [1, 1, 2**20 - 2**10 + 1, 2**10 - 2**9 + 1])],
     [i64s("xs", [1, 2**20, 2**20, 2**10]), i64s("ws", [1, 2**20, 2**10, 2**9])])
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
msg="huge_arena.onnx: error: the model needs 4000000000008 bytes of memory (arena 4000000000000"
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
for m in expand_out tile_out pad_out resize_out; do
	expect 1 "$m.onnx: error: the model needs 4000" "$onnxc" compile "$tmp/$m.onnx" -o "$tmp/out6"
done
expect 1 "outputs 4000000000000), more than --max-memory" "$onnxc" compile "$tmp/expand_out.onnx" -o "$tmp/out6"
expect 1 "the model needs 9223372036854775807 bytes" "$onnxc" compile "$tmp/huge_inputs.onnx" -o "$tmp/out6"
expect 1 "(arena 0 + weights 0 + inputs 4194304 + outputs 4194304), more than --max-memory 1024" \
	"$onnxc" compile "$tmp/identity_8m.onnx" -o "$tmp/out6" --max-memory 1K
expect 0 "" "$onnxc" compile "$tmp/identity_8m.onnx" -o "$tmp/out6" --max-memory 8M
expect 1 "range_run_time.onnx: error: the model needs 15999999934532 bytes" \
	"$onnxc" compile "$tmp/range_run_time.onnx" -o "$tmp/out6"
expect 1 "two_huge.onnx: error: the model needs more than 4611686018427387904 bytes of memory for its intermediates" \
	"$onnxc" compile "$tmp/two_huge.onnx" -o "$tmp/out6"
expect 1 "conv_workspace.onnx: error: the model needs more than 4611686018427387904 bytes of memory for its workspaces" \
	"$onnxc" compile "$tmp/conv_workspace.onnx" -o "$tmp/out6"
exit $fail
