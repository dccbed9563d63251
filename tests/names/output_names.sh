#!/bin/sh
# A compiled model's outputs keep the model's names through every rewrite
# (docs/api.md): the generated header's NAME_OUTPUTk_NAME must list the
# graph outputs' names in order, for models whose outputs the passes
# replace - a BatchNormalization folded into a convolution without bias (the
# convolution is rebuilt), one turned into a multiply-add, an output folded
# to a constant, a GEMM padded for Tensor Cores and cast back under
# --precision mixed, and an output another output's node also reads.
# usage: output_names.sh ONNXC PYTHON
set -u
onnxc=$1 py=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/output_names.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp" <<'PY' || exit 1
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
d = sys.argv[1]
r = np.random.RandomState(0)
vi = lambda n, s: h.make_tensor_value_info(n, T.FLOAT, s)
c = lambda n, a: nh.from_array(np.asarray(a, np.float32), n)
def save(name, nodes, ins, outs, inits):
    g = h.make_graph(nodes, name, ins, outs, inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), f"{d}/{name}.onnx")
    with open(f"{d}/{name}.names", "w") as f:
        f.write("\n".join(o.name for o in outs) + "\n")
stats = [c(n, r.rand(4) + 0.5) for n in ("s", "b", "m", "v")]
x = vi("x", [1, 3, 8, 8])
y4 = lambda n: vi(n, [1, 4, 8, 8])
save("bn_folded", [h.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
                   h.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn_out"]),
                   h.make_node("Relu", ["bn_out"], ["y"])],
     [x], [y4("bn_out"), y4("y")], [c("W", r.randn(4, 3, 3, 3))] + stats)
save("bn_affine", [h.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
                   h.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn_out"]),
                   h.make_node("Sigmoid", ["c"], ["z"])],
     [x], [vi("z", [1, 4, 8, 8]), y4("bn_out")], [c("W", r.randn(4, 3, 3, 3))] + stats)
save("folded_output", [h.make_node("Add", ["a", "a"], ["twice"]), h.make_node("Relu", ["x"], ["y"])],
     [vi("x", [2])], [vi("y", [2]), vi("twice", [3])], [c("a", [1, 2, 3])])
save("gemm_padded", [h.make_node("Gemm", ["x", "w"], ["logits"])], [vi("x", [8, 1001])],
     [vi("logits", [8, 10])], [c("w", r.randn(1001, 10))])
save("shared", [h.make_node("Relu", ["x"], ["a"]), h.make_node("Neg", ["a"], ["b"])],
     [vi("x", [4])], [vi("b", [4]), vi("a", [4])], [])
PY
fail=0
check() { # check MODEL [ARGS...]
	m=$1
	shift
	if ! "$onnxc" compile "$tmp/$m.onnx" -o "$tmp/out_$m" --name m "$@" >"$tmp/log" 2>&1; then
		echo "FAIL: onnxc compile $m.onnx $*"
		cat "$tmp/log"
		fail=1
		return
	fi
	sed -n 's/^#define M_OUTPUT[0-9]*_NAME "\(.*\)"$/\1/p' "$tmp/out_$m/m.h" >"$tmp/$m.got"
	if cmp -s "$tmp/$m.got" "$tmp/$m.names"; then
		echo "ok: $m $*"
	else
		echo "FAIL: $m $*: outputs named $(tr '\n' ' ' <"$tmp/$m.got")instead of $(tr '\n' ' ' <"$tmp/$m.names")"
		fail=1
	fi
}
for m in bn_folded bn_affine folded_output gemm_padded shared; do
	check $m
	check $m --precision mixed
done
exit $fail
