#!/usr/bin/python3
"""The quantization ops against ONNX Runtime (run by CTest, tests/CMakeLists.txt).

Usage (Debian's /usr/bin/python3: it has onnx and numpy):
    check_quant.py ONNXC ORT_RUN WORKDIR

Builds, with onnx.helper, one model per quantization op form on inputs
large enough to matter (MatMulInteger and QLinearMatMul over K = 4099,
beyond what an f32 sum of 8-bit products holds exactly; grouped, strided,
dilated and padded integer convolutions; per-axis and blocked scales),
and a QDQ network in the form onnxruntime.quantization writes
(QuantizeLinear -> DequantizeLinear around Conv, MatMul and Add, int8
weights with per-channel scales, an int32 bias). Each runs under `onnxc
run` and under ONNX Runtime (scripts/ort_run.js, CPU) on the same random
inputs:
  - every model must agree exactly - integer outputs, and the float
    outputs of DequantizeLinear and DynamicQuantizeLinear, bit for bit -
    with ONNX Runtime running the graph as written (--optimization
    disabled), and the single-op models also with its default (all);
  - there ONNX Runtime fuses the QDQ network's QuantizeLinear ->
    DequantizeLinear pairs around Conv and MatMul into integer kernels
    (QLinearConv, QGemm) that round differently from the float graph the
    model specifies: its integer output may differ by one quantization
    step, no more (the count is printed);
  - `onnxc run --precision mixed` must give the single-op models' integer
    outputs bit for bit as FP32 mode does: the quantization arithmetic is
    never painted half. (The QDQ network's float Conv, MatMul and Add are
    ordinary float ops that mixed precision may paint; the count of
    outputs that then differ is printed, not checked.)
Prints one line per model with its figures. Exit status: 0 pass, 1 fail,
77 skipped (node or onnxruntime-node missing).
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, U8, I8, I16, U16, I32 = (TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8,
                            TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32)
NP = {F: np.float32, U8: np.uint8, I8: np.int8, I16: np.int16, U16: np.uint16, I32: np.int32}


class Fail(Exception):
    pass


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                          initializer=[numpy_helper.from_array(np.asarray(v), n)
                                       for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="onnxc-tests")
    m.ir_version = 10 if opset >= 21 else 8
    return m


def rand(rng, t, shape):
    if t == F:
        return rng.standard_normal(shape).astype(np.float32)
    info = np.iinfo(NP[t])
    return rng.integers(info.min, int(info.max) + 1, shape).astype(NP[t])


def cases(rng):
    """(name, model, {input: array}) per case; every input is a graph input
    or an initializer as written."""
    c = []
    x = rng.standard_normal((2, 5, 7, 3)).astype(np.float32) * 40
    # per tensor, uint8 (opset 10), and per axis int8 (13)
    c.append(("quantize_tensor", model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
        [("x", F, x.shape)], [("y", U8)],
        [("s", np.float32(0.37)), ("z", np.uint8(121))], opset=10), {"x": x}))
    c.append(("quantize_axis", model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)],
        [("x", F, x.shape)], [("y", I8)],
        [("s", (rng.random(5) + 0.05).astype(np.float32)),
         ("z", rng.integers(-20, 20, 5).astype(np.int8))]), {"x": x}))
    # int16 and blocked (21)
    c.append(("quantize_int16", model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
        [("x", F, x.shape)], [("y", I16)],
        [("s", np.float32(0.0021)), ("z", np.int16(-300))], opset=21), {"x": x}))
    c.append(("quantize_blocked", model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=2, block_size=3)],
        [("x", F, x.shape)], [("y", U8)],
        [("s", (rng.random((2, 5, 3, 3)) + 0.05).astype(np.float32)),
         ("z", rng.integers(100, 150, (2, 5, 3, 3)).astype(np.uint8))], opset=21), {"x": x}))
    q = rand(rng, I8, (4, 6, 5))
    c.append(("dequantize_axis", model(
        [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=-1)],
        [("q", I8, q.shape)], [("y", F)],
        [("s", (rng.random(5) * 0.1).astype(np.float32)),
         ("z", rng.integers(-5, 5, 5).astype(np.int8))]), {"q": q}))
    q16 = rand(rng, U16, (3, 8))
    c.append(("dequantize_uint16", model(
        [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
        [("q", U16, q16.shape)], [("y", F)],
        [("s", np.float32(3.1e-4)), ("z", np.uint16(30000))], opset=21), {"q": q16}))
    c.append(("dynamic_quantize", model(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
        [("x", F, x.shape)], [("y", U8), ("s", F), ("z", U8)], opset=11), {"x": x}))
    # integer products: K = 4099 exceeds f32's exact range for these sums
    a, b = rand(rng, U8, (3, 5, 4099)), rand(rng, I8, (4099, 6))
    c.append(("matmul_integer", model(
        [helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])],
        [("a", U8, a.shape), ("b", I8, b.shape)], [("y", I32)],
        [("za", np.uint8(3)), ("zb", rng.integers(-3, 3, 6).astype(np.int8))], opset=10),
        {"a": a, "b": b}))
    c.append(("qlinear_matmul", model(
        [helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])],
        [("a", U8, a.shape), ("b", I8, b.shape)], [("y", U8)],
        [("sa", np.float32(0.02)), ("za", np.uint8(128)), ("sb", np.float32(0.003)),
         ("zb", np.int8(0)), ("sy", np.float32(0.9)), ("zy", np.uint8(120))], opset=10),
        {"a": a, "b": b}))
    xi, wi = rand(rng, U8, (2, 4, 11, 9)), rand(rng, I8, (6, 2, 3, 2))
    c.append(("conv_integer", model(
        [helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], group=2,
                          strides=[2, 1], dilations=[1, 2], pads=[1, 0, 2, 1])],
        [("x", U8, xi.shape), ("w", I8, wi.shape)], [("y", I32)],
        [("zx", np.uint8(100)), ("zw", np.int8(0))], opset=10), {"x": xi, "w": wi}))
    w2 = rand(rng, I8, (8, 4, 3, 3))
    c.append(("qlinear_conv", model(
        [helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "bias"],
                          ["y"], pads=[1, 1, 1, 1])],
        [("x", U8, xi.shape)], [("y", U8)],
        [("sx", np.float32(0.05)), ("zx", np.uint8(110)), ("w", w2),
         ("sw", (rng.random(8) * 0.01 + 0.001).astype(np.float32)), ("zw", np.zeros(8, np.int8)),
         ("sy", np.float32(0.4)), ("zy", np.uint8(128)),
         ("bias", rng.integers(-2000, 2000, 8).astype(np.int32))], opset=10), {"x": xi}))
    return c


def qdq_network(rng):
    """A QDQ model as onnxruntime.quantization's static quantization writes
    it: uint8 activations (per tensor), int8 weights (per output channel,
    symmetric), int32 biases with scale x_scale * w_scale."""
    sx, zx = np.float32(0.02), np.uint8(128)
    wc = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    swc = (np.abs(wc).reshape(8, -1).max(1) / 127).astype(np.float32)
    wcq = np.clip(np.rint(wc / swc[:, None, None, None]), -127, 127).astype(np.int8)
    bc = np.rint(rng.standard_normal(8) * 0.1 / (sx * swc)).astype(np.int32)
    sc, zc = np.float32(0.03), np.uint8(0)
    wm = (rng.standard_normal((8 * 6 * 6, 10)) * 0.05).astype(np.float32)
    swm = (np.abs(wm).max(0) / 127).astype(np.float32)
    wmq = np.clip(np.rint(wm / swm), -127, 127).astype(np.int8)
    sm, zm = np.float32(0.05), np.uint8(130)
    ad = rng.integers(0, 255, 10).astype(np.uint8)
    sa, za = np.float32(0.01), np.uint8(100)
    so, zo = np.float32(0.06), np.uint8(125)
    n = helper.make_node
    nodes = [
        n("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        n("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        n("DequantizeLinear", ["wcq", "swc", "zwc"], ["wcd"], axis=0),
        n("DequantizeLinear", ["bc", "sbc", "zbc"], ["bcd"], axis=0),
        n("Conv", ["xd", "wcd", "bcd"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        n("Relu", ["c"], ["r"]),
        n("QuantizeLinear", ["r", "sc", "zc"], ["rq"]),
        n("DequantizeLinear", ["rq", "sc", "zc"], ["rd"]),
        n("Flatten", ["rd"], ["f"]),
        n("DequantizeLinear", ["wmq", "swm", "zwm"], ["wmd"], axis=1),
        n("MatMul", ["f", "wmd"], ["mm"]),
        n("QuantizeLinear", ["mm", "sm", "zm"], ["mq"]),
        n("DequantizeLinear", ["mq", "sm", "zm"], ["md"]),
        n("DequantizeLinear", ["ad", "sa", "za"], ["add"]),
        n("Add", ["md", "add"], ["o"]),
        n("QuantizeLinear", ["o", "so", "zo"], ["oq"]),
        n("DequantizeLinear", ["oq", "so", "zo"], ["y"]),
    ]
    inits = [("sx", sx), ("zx", zx), ("wcq", wcq), ("swc", swc), ("zwc", np.zeros(8, np.int8)),
             ("bc", bc), ("sbc", (sx * swc).astype(np.float32)), ("zbc", np.zeros(8, np.int32)),
             ("sc", sc), ("zc", zc), ("wmq", wmq), ("swm", swm), ("zwm", np.zeros(10, np.int8)),
             ("sm", sm), ("zm", zm), ("ad", ad), ("sa", sa), ("za", za), ("so", so), ("zo", zo)]
    m = model(nodes, [("x", F, (4, 3, 12, 12))], [("oq", U8), ("y", F)], inits)
    return m, {"x": rng.standard_normal((4, 3, 12, 12)).astype(np.float32)}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise Fail("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-3000:]))
    return r


def onnxc_outputs(onnxc, path, feeds, work, args=()):
    out = os.path.join(work, "onnxc" + "".join(args).replace("-", "_"))
    cmd = [onnxc, "run", path, "--repeat", "1", "--output-dir", out,
           "--cache-dir", os.path.join(work, "cache")] + list(args)
    for name, a in feeds.items():
        np.save(os.path.join(work, name + ".npy"), a)
        cmd += ["--input", "%s=%s" % (name, os.path.join(work, name + ".npy"))]
    run(cmd)
    g = onnx.load(path).graph
    return [np.load(os.path.join(out, o.name + ".npy")) for o in g.output]


def ort_outputs(node, ort_run, path, feeds, work, level):
    out = os.path.join(work, "ort_" + level)
    cmd = [node, ort_run, path, "--output-dir", out, "--optimization", level]
    for name, a in feeds.items():
        np.save(os.path.join(work, name + ".npy"), a)
        cmd += ["--input", "%s=%s" % (name, os.path.join(work, name + ".npy"))]
    info = json.loads(run(cmd).stdout.splitlines()[-1])
    return [np.load(o["file"]) for o in info["outputs"]]


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def compare(y, r, exact):
    """(figure, wrong) for onnxc's y against ONNX Runtime's r."""
    if y.dtype != r.dtype or y.shape != r.shape:
        return "%s%s vs %s%s" % (y.dtype, y.shape, r.dtype, r.shape), True
    if y.dtype.kind in "iu":
        diff = np.abs(y.astype(np.int64) - r.astype(np.int64))
        off, most = int((diff != 0).sum()), int(diff.max()) if y.size else 0
        return "%d of %d differ (by at most %d)" % (off, y.size, most), off > 0 and (
            exact or most > 1)
    err = float(np.abs(y.astype(np.float64) - r).max()) if y.size else 0.0
    return "max |difference| %.3g%s" % (err, ", bit for bit" if same(y, r) else ""), (
        not same(y, r) if exact else err > 1.0001 * 0.06)


def check(name, m, feeds, onnxc, node, ort_run, work, single):
    d = os.path.join(work, name)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    mine = onnxc_outputs(onnxc, path, feeds, d)
    mixed = onnxc_outputs(onnxc, path, feeds, d, ["--precision", "mixed"])
    plain = ort_outputs(node, ort_run, path, feeds, d, "disabled")
    fused = ort_outputs(node, ort_run, path, feeds, d, "all")
    figures, bad = [], False
    for k, y in enumerate(mine):
        out = m.graph.output[k].name
        f1, w1 = compare(y, plain[k], True)
        f2, w2 = compare(y, fused[k], single)
        figures.append("%s: ORT as written %s; ORT optimized %s" % (out, f1, f2))
        bad |= w1 or w2
        if y.dtype.kind in "iu":
            off = int((mixed[k] != y).sum())
            figures.append("%s: mixed precision %d of %d differ from FP32" % (out, off, y.size))
            bad |= single and off > 0
    print("%s: %s%s" % (name, "; ".join(figures), "  FAIL" if bad else ""))
    return not bad


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    onnxc, ort_run, work = argv
    node = shutil.which("node")
    if not node or subprocess.run([node, ort_run, "--check"], capture_output=True).returncode:
        print("skipped: node or onnxruntime-node is missing (scripts/ort_run.js --check)")
        return 77
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    rng = np.random.default_rng(20240607)
    ok = True
    try:
        for name, m, feeds in cases(rng):
            ok &= check(name, m, feeds, onnxc, node, ort_run, work, True)
        m, feeds = qdq_network(rng)
        ok &= check("qdq_network", m, feeds, onnxc, node, ort_run, work, False)
    except Fail as e:
        print("FAIL: %s" % e)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
