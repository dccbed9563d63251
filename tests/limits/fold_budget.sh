#!/bin/sh
# The import's folding budget (frontend/fe.h, docs/security.md#limits):
# folding is bounded by the input, not only by the constant limit. What
# would exceed the budget is left to run time - and still computes the
# same values.
#   - ConstantOfShape of 2,621,442 x 3 then Cast (a 150-byte model that took
#     0.6 s to fold): an expand and a cast at run time, not two constants;
#   - a chain of Casts over a 1M-element constant: the first few fold until
#     the budget is spent, the rest run (counted, not timed);
#   - a model with 16 MiB of weights folds a Transpose of them (the budget
#     grows with the initializers);
#   - Range beyond the budget runs as an index sequence, and gives numpy's
#     arange (float32, int32, int64); Range(INT64_MIN, INT64_MAX, INT64_MAX)
#     folds exactly (no signed overflow).
# usage: fold_budget.sh ONNXC PYTHON
set -u
onnxc=$1 py=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fold_budget.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp" <<'PY' || exit 1
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
d = sys.argv[1]
def save(name, nodes, outs, inits, ins=()):
    g = h.make_graph(nodes, name, list(ins), outs, inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), f"{d}/{name}.onnx")
def cos(shape, v, out="c"):
    return h.make_node("ConstantOfShape", ["shape"], [out],
                       value=nh.from_array(np.array([v], np.float32)))
i64 = lambda n, a: nh.from_array(np.array(a, np.int64), n)
save("slow_cast", [cos(None, 1.5), h.make_node("Cast", ["c"], ["y"], to=T.FLOAT16)],
     [h.make_tensor_value_info("y", T.FLOAT16, [2621442, 3])], [i64("shape", [2621442, 3])])
save("small_cos", [cos(None, 2.0)], [h.make_tensor_value_info("c", T.FLOAT, [4, 4])],
     [i64("shape", [4, 4])])
# 1M elements: the ConstantOfShape and three casts fit the 4M base budget
nodes, prev = [cos(None, 0.5)], "c"
for k in range(8):
    nodes.append(h.make_node("Cast", [prev], [f"t{k}"], to=T.DOUBLE if k % 2 == 0 else T.FLOAT))
    prev = f"t{k}"
save("cast_chain", nodes, [h.make_tensor_value_info(prev, T.FLOAT, [1024, 1024])],
     [i64("shape", [1024, 1024])])
w = nh.from_array(np.arange(1 << 22, dtype=np.float32).reshape(2048, 2048), "w")
save("big_weight", [h.make_node("Transpose", ["w"], ["wt"]), h.make_node("MatMul", ["x", "wt"], ["y"])],
     [h.make_tensor_value_info("y", T.FLOAT, [1, 2048])], [w],
     [h.make_tensor_value_info("x", T.FLOAT, [1, 2048])])
for name, dt, npdt, s, delta in (("range_f32", T.FLOAT, np.float32, 0.5, 0.25),
                                 ("range_i32", T.INT32, np.int32, -7, 3),
                                 ("range_i64", T.INT64, np.int64, -7, -3)):
    n = 5000000
    lim = s + delta * n
    inits = [nh.from_array(np.array(v, npdt), k) for k, v in (("s", s), ("l", lim), ("d", delta))]
    save(name, [h.make_node("Range", ["s", "l", "d"], ["y"])],
         [h.make_tensor_value_info("y", dt, [n])], inits)
    np.save(f"{d}/{name}.npy", (np.array(s, npdt) + np.arange(n).astype(npdt) * np.array(delta, npdt)))
inits = [nh.from_array(np.array(v, np.int64), k)
         for k, v in (("s", -2**63), ("l", 2**63 - 1), ("d", 2**63 - 1))]
save("range_ovf", [h.make_node("Range", ["s", "l", "d"], ["y"])],
     [h.make_tensor_value_info("y", T.INT64, [3])], inits)
PY
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ir() { # ir NAME: the IR of NAME.onnx in $tmp/NAME.oir, or a failure
	if ! "$onnxc" ir "$tmp/$1.onnx" -o "$tmp/$1.oir" 2>"$tmp/$1.err" ||
		grep -qE "Sanitizer|runtime error" "$tmp/$1.err"; then
		bad "onnxc ir $1.onnx"
		cat "$tmp/$1.err"
		return 1
	fi
}
ir slow_cast && { grep -q "= expand(" "$tmp/slow_cast.oir" && grep -q "= cast(" "$tmp/slow_cast.oir" &&
	! grep -q "^const %y " "$tmp/slow_cast.oir" || bad "slow_cast folded: $(cat "$tmp/slow_cast.oir")"; }
ir small_cos && { grep -q "^const %c[.0-9]* : f32\[4,4\]" "$tmp/small_cos.oir" || bad "small_cos not folded"; }
if ir cast_chain; then
	# t0..t2 folded (t0 and t1 then unused), t3..t7 left
	left=$(grep -c "= cast(" "$tmp/cast_chain.oir")
	grep -q "^const %t2 " "$tmp/cast_chain.oir" && [ "$left" -eq 5 ] ||
		bad "cast_chain: wanted t0..t2 folded and 5 casts left: $(cat "$tmp/cast_chain.oir")"
fi
ir big_weight && { grep -q "^const %wt " "$tmp/big_weight.oir" || bad "big_weight: the transpose was not folded"; }
ir range_ovf && { grep -q "\[-9223372036854775808, -1, 9223372036854775806\]" "$tmp/range_ovf.oir" ||
	bad "range_ovf: $(cat "$tmp/range_ovf.oir")"; }
for r in range_f32 range_i32 range_i64; do
	ir $r && { grep -q "= cumsum(" "$tmp/$r.oir" || bad "$r: folded at import"; }
	if ! "$onnxc" run "$tmp/$r.onnx" --repeat 1 --cache-dir "$tmp/cache" --output-dir "$tmp/out_$r" \
		>"$tmp/$r.run" 2>&1; then
		bad "onnxc run $r.onnx"
		cat "$tmp/$r.run"
	elif ! "$py" -c "import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.dtype == b.dtype and a.shape == b.shape and (a == b).all() else 1)" \
		"$tmp/out_$r/y.npy" "$tmp/$r.npy"; then
		bad "$r: the run-time Range differs from numpy's arange"
	fi
done
[ $fail -eq 0 ] && echo "fold budget: ok"
exit $fail
