#!/bin/sh
# Seed corpora for the fuzz targets, from the project's own test files:
#   OUT/onnx    the hostile models (tests/bad), the small golden models, the MLP
#   OUT/ir      the golden IR texts (tests/golden/*.oir)
#   OUT/tensor  .pb inputs of the fixtures and a few .npy files (first byte:
#               0 .pb, 1 .npy - see fuzz_tensor.c)
#   OUT/ckpt    checkpoints written by rt_train_ckpt_write (make_ckpt)
#   OUT/train   the models of OUT/onnx (fuzz_train imports them for training)
# Missing fixtures leave a corpus smaller, never fail.
# usage: seed.sh OUT MAKE_CKPT SOURCE_DIR TESTDATA BAD_MODELS
set -eu
out=$1 make_ckpt=$2 src=$3 data=$4 bad=$5
rm -rf "$out"
mkdir -p "$out/onnx" "$out/ir" "$out/tensor" "$out/ckpt" "$out/train"
for f in "$bad"/*.onnx "$data"/small/*.onnx "$data"/zoo/mlp/model.onnx; do
	[ -f "$f" ] || continue
	[ "$(wc -c <"$f")" -le 1048576 ] || continue
	cp "$f" "$out/onnx/$(basename "$(dirname "$f")")_$(basename "$f")"
done
cp "$src"/tests/golden/*.oir "$out/ir/"
n=0
for f in "$data"/zoo/mlp/test_data_set_0/*.pb "$data"/zoo/cnn_opset11/test_data_set_0/*.pb; do
	[ -f "$f" ] || continue
	[ "$(wc -c <"$f")" -le 262144 ] || continue
	n=$((n + 1))
	{ printf '\000'; cat "$f"; } >"$out/tensor/pb$n"
done
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	/usr/bin/python3 - "$out/tensor" <<'PY'
import io, sys, numpy as np
arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(3.5, dtype=np.float64),
          np.arange(4, dtype=np.int64), np.array([True, False]), np.ones((2, 2), np.float16),
          np.arange(8, dtype=np.int8).reshape(2, 2, 2), np.zeros((0, 3), np.float32),
          np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)), np.arange(3, dtype='>f4')]
for i, a in enumerate(arrays):
    b = io.BytesIO()
    np.save(b, a)
    open(f"{sys.argv[1]}/npy{i}", "wb").write(b"\x01" + b.getvalue())
PY
fi
"$make_ckpt" "$out/ckpt"
cp "$out"/onnx/* "$out/train/" 2>/dev/null || true
for t in onnx ir tensor ckpt train; do
	echo "$t: $(ls "$out/$t" | wc -l) seeds"
done
