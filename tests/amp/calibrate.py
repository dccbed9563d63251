#!/usr/bin/env python3
"""Calibrated mixed precision (docs/precision.md#calibration) on models that
lose their outputs under --precision mixed without it.

    calibrate.py ONNXC WORKDIR

Three models, each with references computed here in float64 (numpy):
  tiny    an MLP whose outputs are about 1e-9: FP16 flushes them to zero
          (relative L2 error 1.0);
  tail    a small detector head whose sigmoid sits deep in its tail (about
          1e-7, FP16 subnormals), its scores mixed by a 1x1 convolution;
  cancel  the difference of two nearly equal products: every value is in
          FP16's range, but rounding both products to half loses the
          difference. The range rule cannot see it; the budget must.
Calibration uses one set of inputs (seed 1), the check another (seed 2). For
each model and each policy that paints the harm half: the plain mixed
check fails (the problem is real), the calibrated one passes on the h200
profile (BF16 where it pays) and on v100 (no BF16: FP32); the report names the rule behind every node that left
FP16; a plan written with calibration and read back without it gives the
same IR; an edited plan is obeyed; bad calibration data is refused with a
diagnostic naming the file.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNXC, WORK = sys.argv[1], sys.argv[2]
# the policies that put the harm in FP16 to begin with: at these sizes the
# cost policy keeps the whole cancel model (launch-bound) in FP32 on its own
POLICIES = {"tiny": ["greedy", "cost"], "tail": ["greedy", "cost"], "cancel": ["greedy"]}
failures = []


def plan_lines(path):
    """A precision plan's lines, each split at its tabs."""
    return [l.split("\t") for l in open(path).read().splitlines() if not l.startswith("#")]


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def conv2d(x, w, b, pad):
    """NCHW, stride 1, in float64."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, w.shape[0], h + 2 * pad - k + 1, wd + 2 * pad - k + 1))
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + out.shape[2], j:j + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + b[None, :, None, None]


def init(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def models():
    r = np.random.RandomState(0)
    out = {}
    # tiny: outputs around 1e-9
    w1, b1 = r.standard_normal((256, 512)) * 0.05, r.standard_normal(512) * 0.1
    w2 = r.standard_normal((512, 128)) * 1e-9
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 128])],
        [init("w1", w1), init("b1", b1), init("w2", w2)])
    out["tiny"] = (g, {"x": (64, 256)},
                   lambda x: np.maximum(x @ w1.astype(np.float32) + b1.astype(np.float32), 0)
                   @ w2.astype(np.float32).astype(np.float64))
    # tail: a sigmoid at about 1e-7
    cw, cb = r.standard_normal((64, 16, 3, 3)) * 0.1, np.zeros(64)
    hw, hb = r.standard_normal((16, 64, 1, 1)) * 0.02, np.full(16, -16.0)
    mw = np.abs(np.eye(16)[:, :, None, None] + r.standard_normal((16, 16, 1, 1)) * 0.1)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Conv", ["r", "hw", "hb"], ["l"]),
         helper.make_node("Sigmoid", ["l"], ["p"]),
         helper.make_node("Conv", ["p", "mw"], ["y"])],
        "tail", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16, 16, 16])],
        [init("cw", cw), init("cb", cb), init("hw", hw), init("hb", hb), init("mw", mw)])
    f32 = lambda a: np.asarray(a, np.float32).astype(np.float64)
    out["tail"] = (g, {"x": (2, 16, 16, 16)},
                   lambda x: conv2d(1 / (1 + np.exp(-conv2d(np.maximum(
                       conv2d(x, f32(cw), f32(cb), 1), 0), f32(hw), f32(hb), 0))),
                       f32(mw), np.zeros(16), 0))
    # cancel: x W - x W' with W' close to W
    wa = r.standard_normal((256, 256)) * 0.05
    wb = wa + r.standard_normal((256, 256)) * 5e-5
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "wa"], ["a"]),
         helper.make_node("MatMul", ["x", "wb"], ["b"]),
         helper.make_node("Sub", ["a", "b"], ["y"])],
        "cancel", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 256])],
        [init("wa", wa), init("wb", wb)])
    out["cancel"] = (g, {"x": (64, 256)}, lambda x: x @ f32(wa) - x @ f32(wb))
    return out


def write_set(d, k, inputs, outputs=None):
    s = os.path.join(d, "test_data_set_%d" % k)
    os.makedirs(s, exist_ok=True)
    for j, (n, a) in enumerate(inputs):
        open(os.path.join(s, "input_%d.pb" % j), "wb").write(
            numpy_helper.from_array(a, n).SerializeToString())
    for j, (n, a) in enumerate(outputs or []):
        open(os.path.join(s, "output_%d.pb" % j), "wb").write(
            numpy_helper.from_array(a, n).SerializeToString())


def onnxc(*args):
    return subprocess.run([ONNXC] + list(args), capture_output=True, text=True)


def check_json(case, *extra):
    p = onnxc("check", case, "--precision", "mixed", "--json", *extra)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        return p.returncode, None, p.stderr
    errs = [o.get("rel_l2_err", 0) for o in j.get("outputs", [])]
    return p.returncode, max(errs) if errs else None, p.stderr


def plan_names():
    """Plans for nodes that share a name (the j-th line of a name is the
    j-th node of it) and for a name starting with #."""
    d = os.path.join(WORK, "names")
    os.makedirs(d, exist_ok=True)
    r = np.random.RandomState(3)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm"),
         helper.make_node("Relu", ["a"], ["r"], name="#r"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm")],
        "names", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 512])],
        [init("w1", r.standard_normal((512, 512))), init("w2", r.standard_normal((512, 512)))])
    m = os.path.join(d, "model.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), m)
    plan = os.path.join(d, "names.plan")
    p = onnxc("ir", m, "--precision", "mixed", "--write-precision-plan", plan,
              "-o", os.path.join(d, "a.oir"))
    lines = plan_lines(plan) if p.returncode == 0 else []
    check([l[0] for l in lines] == ["mm", "\\#r", "mm"],
          "a plan lists nodes sharing a name in graph order, # escaped: %s" % lines)
    edited = os.path.join(d, "edited.plan")
    open(edited, "w").write("mm\tfp16\n\\#r\tfp32\nmm\tfp32\n")
    p = onnxc("report", m, "--precision", "mixed", "--precision-plan", edited, "--json")
    got = ([(n["name"], n["precision"], n["rule"]) for n in json.loads(p.stdout)["nodes"]
            if n["precision"] != "-"] if p.returncode == 0 else p.stderr)
    check(got == [("mm", "fp16", "plan"), ("#r", "fp32", "plan"), ("mm", "fp32", "plan")],
          "the j-th plan line of a name pins the j-th node of it: %s" % (got,))
    open(edited, "w").write("mm\tfp16\nmm\tfp32\nmm\tfp32\n")
    p = onnxc("report", m, "--precision", "mixed", "--precision-plan", edited)
    check(p.returncode != 0 and "'mm' is listed more times" in p.stderr,
          "a plan with more lines for a name than nodes of it is refused")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    for name, (g, shapes, ref) in models().items():
        case, calib = os.path.join(WORK, name), os.path.join(WORK, name + ".calib")
        os.makedirs(case, exist_ok=True)
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        onnx.save(model, os.path.join(case, "model.onnx"))
        for k, seed in enumerate([2, 3]):  # the checked inputs
            x = np.random.RandomState(seed).standard_normal(shapes["x"]).astype(np.float32)
            write_set(case, k, [("x", x)], [("y", ref(x.astype(np.float64)).astype(np.float32))])
        for k, seed in enumerate([1, 11, 21]):  # the calibration inputs
            x = np.random.RandomState(seed).standard_normal(shapes["x"]).astype(np.float32)
            write_set(calib, k, [("x", x)])
        m = os.path.join(case, "model.onnx")

        for policy in POLICIES[name]:
            rc, err, log = check_json(case, "--amp-policy", policy)
            check(rc == 1 and err is not None and err > 1e-2,
                  "%s, %s: mixed without calibration fails (rel-L2 %s)" % (name, policy, err))
            for gpu in ["h200", "v100"]:
                rc, err, log = check_json(case, "--amp-policy", policy, "--calibrate", calib,
                                          "--gpu", gpu)
                check(rc == 0 and err is not None and err <= 1e-2,
                      "%s, %s: calibrated on other inputs, %s: passes (rel-L2 %s)%s"
                      % (name, policy, gpu, err, "" if rc == 0 else "\n" + log))

        # the report explains every node that left FP16
        p = onnxc("report", m, "--calibrate", calib, "--json", "--amp-policy", POLICIES[name][-1])
        rep = json.loads(p.stdout) if p.returncode == 0 else {"nodes": []}
        left = [n for n in rep["nodes"] if n["precision"] in ("fp32", "bf16")]
        check(p.returncode == 0 and "calibration" in rep and left and
              all(n["rule"] in ("range", "budget", "class", "user", "cost") and n["reason"]
                  for n in left),
              "%s: report names the rule for the %d nodes out of FP16 (%s)"
              % (name, len(left), ", ".join("%s %s %s" % (n["name"], n["precision"], n["rule"])
                                            for n in left)))
        want = "budget" if name == "cancel" else "range"
        check(any(n["rule"] == want for n in left), "%s: decided by the %s rule" % (name, want))

        # the plan round-trips: written with calibration, read back without
        plan, a, b = (os.path.join(WORK, name + s) for s in (".plan", ".a.oir", ".b.oir"))
        pol = ["--amp-policy", POLICIES[name][-1]]
        p1 = onnxc("ir", m, "--precision", "mixed", "--calibrate", calib,
                   "--write-precision-plan", plan, "-o", a, *pol)
        again = os.path.join(WORK, name + ".again.plan")
        p2 = onnxc("ir", m, "--precision", "mixed", "--precision-plan", plan, "-o", b, *pol,
                   "--write-precision-plan", again)
        same = p1.returncode == 0 and p2.returncode == 0 and open(a).read() == open(b).read()
        check(same, "%s: the plan read back reproduces the IR%s" % (name, "" if same else
                                                                     "\n" + p1.stderr + p2.stderr))
        # ... and says why: written again, each node keeps its precision, its
        # rule is "plan" and its reason quotes the old rule and reason
        first, second = (plan_lines(f) for f in (plan, again))
        kept = same and len(first) == len(second) and all(
            x[:2] == y[:2] and y[2] == "plan" and
            ("the precision plan: %s, %s" % (x[2], x[3][:20])) in y[3]
            for x, y in zip(first, second))
        check(kept, "%s: a plan read back keeps each node's rule and reason%s"
              % (name, "" if kept else ":\n%s\n%s" % (first[:3], second[:3])))
        # an edited plan is obeyed: every node to FP32
        lines = plan_lines(plan)
        edited = os.path.join(WORK, name + ".edited")
        open(edited, "w").write("".join("%s\tfp32\tuser\n" % l[0] for l in lines))
        p = onnxc("report", m, "--precision-plan", edited, "--json")
        rep = json.loads(p.stdout) if p.returncode == 0 else {"nodes": []}
        painted = [n for n in rep["nodes"] if n["precision"] != "-"]
        check(painted and all(n["precision"] == "fp32" and n["rule"] == "plan" for n in painted),
              "%s: an edited plan pins its nodes" % name)

    # bad calibration data is refused, naming the file and the input
    m = os.path.join(WORK, "tiny", "model.onnx")
    bad = os.path.join(WORK, "bad.npy")
    np.save(bad, np.zeros((3, 256), np.float32))
    p = onnxc("compile", m, "-o", os.path.join(WORK, "out"), "--precision", "mixed",
              "--calibrate", "x=" + bad)
    check(p.returncode != 0 and "bad.npy" in p.stderr and "'x'" in p.stderr,
          "a sample of the wrong shape is refused: " + p.stderr.strip().splitlines()[-1]
          if p.stderr.strip() else "no diagnostic")
    p = onnxc("compile", m, "-o", os.path.join(WORK, "out"), "--precision", "mixed",
              "--calibrate", WORK)
    check(p.returncode != 0 and "--calibrate" in p.stderr,
          "a folder without data sets is refused")
    p = onnxc("compile", m, "-o", os.path.join(WORK, "out"), "--precision-plan",
              os.path.join(WORK, "tiny.plan"))
    check(p.returncode != 0 and "--precision mixed" in p.stderr,
          "--precision-plan without --precision mixed is refused")
    open(os.path.join(WORK, "wrong.plan"), "w").write("nosuchnode\tfp16\n")
    p = onnxc("compile", m, "-o", os.path.join(WORK, "out"), "--precision", "mixed",
              "--precision-plan", os.path.join(WORK, "wrong.plan"))
    check(p.returncode != 0 and "nosuchnode" in p.stderr, "a plan naming no node is refused")
    plan_names()
    # a folder of data sets and a NAME=FILE sample together
    x = os.path.join(WORK, "x.npy")
    np.save(x, np.random.RandomState(5).standard_normal((64, 256)).astype(np.float32))
    p = onnxc("report", m, "--precision", "mixed", "--json", "--calibrate",
              os.path.join(WORK, "tiny.calib"), "--calibrate", "x=" + x)
    sets = len(os.listdir(os.path.join(WORK, "tiny.calib")))
    got = json.loads(p.stdout)["calibration"]["samples"] if p.returncode == 0 else p.stderr
    check(got == sets + 1, "a folder and NAME=FILE calibrate on %d samples (%s)" % (sets + 1, got))
    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)


main()
