#!/bin/sh
# Integer attributes at the ends of int64 (ONNX allows them; exporters write
# INT64_MAX for "to the end"): Slice with INT64_MIN/INT64_MAX starts, ends
# and steps, folded at import (the reference evaluator) and compiled (the
# lowering), must give numpy's answer with no signed overflow - which the
# sanitizer build of this test would report.
# usage: int_extremes.sh ONNXC PYTHON
set -u
onnxc=$1 py=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/int_extremes.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp" <<'PY' || exit 1
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
d = sys.argv[1]
MIN, MAX = -2**63, 2**63 - 1
x = np.arange(30, dtype=np.float32).reshape(5, 6)
cases = {  # name: (starts, ends, steps)
    "slice_extreme_steps": ([MIN, MAX], [MAX, MIN], [MAX, MIN]),
    "slice_extreme_ends": ([MIN, 1], [MAX, MAX], [2, MAX]),
    "slice_reverse_all": ([MAX, MAX], [MIN, MIN], [-1, MIN]),
}
for name, (s, e, st) in cases.items():
    ref = x[tuple(slice(a, b, c) for a, b, c in zip(s, e, st))]
    for const in (False, True):
        inits = [nh.from_array(np.array(v, np.int64), k)
                 for k, v in (("s", s), ("e", e), ("a", [0, 1]), ("st", st))]
        ins = []
        if const:
            inits.append(nh.from_array(x, "x"))
        else:
            ins = [h.make_tensor_value_info("x", T.FLOAT, [5, 6])]
        g = h.make_graph([h.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], name, ins,
                         [h.make_tensor_value_info("y", T.FLOAT, list(ref.shape))], inits)
        suffix = "_const" if const else ""
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), f"{d}/{name}{suffix}.onnx")
    np.save(f"{d}/{name}.npy", ref)
np.save(f"{d}/x.npy", x)
PY
fail=0
for m in slice_extreme_steps slice_extreme_ends slice_reverse_all; do
	for v in "" _const; do
		if [ -z "$v" ]; then set -- --input x="$tmp/x.npy"; else set --; fi
		if ! "$onnxc" run "$tmp/$m$v.onnx" "$@" --repeat 1 --cache-dir "$tmp/cache" \
			--output-dir "$tmp/out$m$v" >"$tmp/log" 2>&1 ||
			grep -qE "Sanitizer|runtime error" "$tmp/log"; then
			echo "FAIL: onnxc run $m$v.onnx"
			cat "$tmp/log"
			fail=1
		elif ! "$py" -c "import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and (a == b).all() else 1)" "$tmp/out$m$v/y.npy" "$tmp/$m.npy"; then
			echo "FAIL: $m$v: not numpy's slice"
			fail=1
		else
			echo "ok: $m$v"
		fi
	done
done
exit $fail
