#!/usr/bin/python3
"""If whose condition is known only at run time (docs/ir.md, Guards).

Usage: check_if.py ONNXC [ORT_RUN_JS [RUNTIME_LIB [SANITIZE_LINK_FLAGS]]]
       check_if.py --write-cases DIR   (the models as `onnxc check` cases)

Builds small models with run-time Ifs - nested Ifs, branches reading outer
values, a branch output that is an outer value or a constant, branches with
MatMul, Gemm and elementwise chains, an If inside an If's else branch, a
condition computed in the graph, several outputs - compiles each for the CPU
and runs it with every combination of condition values (`onnxc run`),
comparing with a numpy float64 reference of the model (and with ONNX
Runtime when scripts/ort_run.js finds onnxruntime-node; CI installs only
Debian packages, so there that part is skipped and says so). One model runs
with --precision mixed too (half tolerances). Each model is also exported
(`onnxc export` writes the guarded branches back as If nodes), the ONNX
checker must accept the file, and the exported model must compute the same
for every combination; a branch replaced by a trap cannot be exported, and
the export says so naming the trap. Branches that give an output different
shapes (one rank, and two ranks through an Identity) are checked the same
way (the run writes the shape of the branch taken; the mixed-precision
export too), an export from the flat form (IR text whose branches are not
the import's), the generated C API's NAME_output_shape by
tests/if/shape_api.c (given the runtime library), and the refusals (a node
reading such an output, an If whose branch returns one, element types that
differ) by their messages. The models are also written as `onnxc check` cases (ONNX's
node-test layout, one data set per combination of conditions) and checked
so on the CPU; scripts/gpu-check bundles them (--write-cases) and checks
them on the CUDA target. Exits 1 on any failure.
"""

import itertools
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
from backend_case import ort_outputs, run_model  # noqa: E402

F = TensorProto.FLOAT
B = TensorProto.BOOL
rng = np.random.default_rng(11)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def graph(nodes, name, outputs, inits=()):
    return helper.make_graph(nodes, name, [], outputs, initializer=list(inits))


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def make(nodes, inputs, outputs, inits=(), opset=18, check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    return m


def sig(x):
    return 1 / (1 + np.exp(-x))


def cases():
    """name -> (model, {input: array} without conditions, [condition names],
    reference(inputs, conds) -> [outputs])."""
    c = {}
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w1 = rng.standard_normal((8, 6)).astype(np.float32)
    b1 = rng.standard_normal((6,)).astype(np.float32)
    w2 = rng.standard_normal((6, 8)).astype(np.float32)
    b2 = rng.standard_normal((6,)).astype(np.float32)

    # nested: then = relu(x) then an inner If on c2 (neg / mul by x); else
    # gives the outer x as it is; sigmoid after the merge
    inner = helper.make_node(
        "If", ["c2"], ["z"], name="inner",
        then_branch=graph([helper.make_node("Neg", ["r"], ["z1"])], "t2", [vi("z1", F, [4, 8])]),
        else_branch=graph([helper.make_node("Mul", ["r", "x"], ["z2"])], "e2",
                          [vi("z2", F, [4, 8])]))
    m = make([helper.make_node("If", ["c1"], ["y0"], name="outer",
                               then_branch=graph([helper.make_node("Relu", ["x"], ["r"]), inner],
                                                 "then", [vi("z", F, [4, 8])]),
                               else_branch=graph([], "else", [vi("x", F, [4, 8])])),
              helper.make_node("Sigmoid", ["y0"], ["y"])],
             [vi("x", F, [4, 8]), vi("c1", B, []), vi("c2", B, [1])], [vi("y", F, [4, 8])])

    def ref_nested(i, k):
        r = np.maximum(i["x"], 0)
        z = -r if k["c2"] else r * i["x"]
        return [sig(z if k["c1"] else i["x"])]
    c["nested"] = (m, {"x": x}, ["c1", "c2"], ref_nested)

    # MatMul and Gemm branches with elementwise chains, reading outer
    # weights; two outputs, one of them a constant in the else branch
    then_g = graph([helper.make_node("MatMul", ["x", "w1"], ["m"]),
                    helper.make_node("Add", ["m", "b1"], ["a"]),
                    helper.make_node("Relu", ["a"], ["ra"]),
                    helper.make_node("Mul", ["ra", "two"], ["t"]),
                    helper.make_node("Tanh", ["t"], ["t2"]),
                    helper.make_node("ReduceSum", ["t2"], ["s"], keepdims=0)],
                   "then", [vi("t2", F, [4, 6]), vi("s", F, [])])
    else_g = graph([helper.make_node("Gemm", ["x", "w2", "b2"], ["gm"], transB=1, alpha=0.5),
                    helper.make_node("Sigmoid", ["gm"], ["sg"]),
                    helper.make_node("Sub", ["sg", "b1"], ["e"])],
                   "else", [vi("e", F, [4, 6]), vi("k", F, [])],
                   [const("k", np.array(7, np.float32))])
    m = make([helper.make_node("If", ["c"], ["y", "s_out"], name="linear",
                               then_branch=then_g, else_branch=else_g),
              helper.make_node("Add", ["y", "y"], ["yy"])],
             [vi("x", F, [4, 8]), vi("c", B, [])], [vi("yy", F, [4, 6]), vi("s_out", F, [])],
             [const("w1", w1), const("b1", b1), const("w2", w2), const("b2", b2),
              const("two", np.array(2, np.float32))])

    def ref_linear(i, k):
        xx = i["x"].astype(np.float64)
        if k["c"]:
            t2 = np.tanh(2 * np.maximum(xx @ w1 + b1, 0))
            y, s = t2, t2.sum()
        else:
            y, s = sig(0.5 * xx @ w2.T + b2) - b1, 7.0
        return [2 * y, np.array(s)]
    c["linear"] = (m, {"x": x}, ["c"], ref_linear)

    # an If in the else branch of an If, the condition computed in the
    # graph (ReduceSum(x) > 0), and a condition of the inner If read from
    # an input
    inner = helper.make_node(
        "If", ["c2"], ["z"], name="inner",
        then_branch=graph([helper.make_node("Exp", ["x"], ["z1"])], "t2", [vi("z1", F, [4, 8])]),
        else_branch=graph([helper.make_node("Abs", ["x"], ["ab"]),
                           helper.make_node("Mul", ["ab", "x"], ["z2"])], "e2",
                          [vi("z2", F, [4, 8])]))
    m = make([helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
              helper.make_node("Greater", ["sum", "zero"], ["c1"]),
              helper.make_node("If", ["c1"], ["y"], name="outer",
                               then_branch=graph([helper.make_node("Sigmoid", ["x"], ["sx"])],
                                                 "then", [vi("sx", F, [4, 8])]),
                               else_branch=graph([inner], "else", [vi("z", F, [4, 8])]))],
             [vi("x", F, [4, 8]), vi("c2", B, [])], [vi("y", F, [4, 8])],
             [const("zero", np.array(0, np.float32))])

    def ref_else_if(i, k):
        xx = i["x"]
        if xx.sum() > 0:
            return [sig(xx)]
        return [np.exp(xx) if k["c2"] else np.abs(xx) * xx]
    # the computed condition takes both values through the sign of x
    c["else_if_pos"] = (m, {"x": np.abs(x)}, ["c2"], ref_else_if)
    c["else_if_neg"] = (m, {"x": -np.abs(x)}, ["c2"], ref_else_if)

    # branches giving an output different shapes (docs/ir.md, Outputs of
    # run-time shape): the run reports the shape of the branch taken.
    # "shapes": one rank, different dimensions (y: [4,6] or [8,4]), beside
    # an output of one shape; "ranks": different ranks (y: [4,6] or [4]),
    # the condition a bool[1], the output through an Identity
    m = make([helper.make_node("If", ["c"], ["y", "z"], name="pick",
                               then_branch=graph(
                                   [helper.make_node("MatMul", ["x", "w1"], ["xw"]),
                                    helper.make_node("Add", ["xw", "b1"], ["t"]),
                                    helper.make_node("Relu", ["x"], ["t2"])], "then",
                                   [vi("t", F, [4, 6]), vi("t2", F, [4, 8])]),
                               else_branch=graph(
                                   [helper.make_node("Transpose", ["x"], ["e"]),
                                    helper.make_node("Neg", ["x"], ["e2"])], "else",
                                   [vi("e", F, [8, 4]), vi("e2", F, [4, 8])]))],
             [vi("x", F, [4, 8]), vi("c", B, [])],
             [vi("y", F, ["rows", "cols"]), vi("z", F, [4, 8])],
             [const("w1", w1), const("b1", b1)])
    c["shapes"] = (m, {"x": x}, ["c"], lambda i, k: [
        i["x"] @ w1 + b1 if k["c"] else i["x"].T,
        np.maximum(i["x"], 0) if k["c"] else -i["x"]])
    m = make([helper.make_node("If", ["c"], ["yi"], name="pick",
                               then_branch=graph([helper.make_node("MatMul", ["x", "w1"], ["t"])],
                                                 "then", [vi("t", F, [4, 6])]),
                               else_branch=graph([helper.make_node("ReduceSum", ["x", "ax"],
                                                                   ["e"], keepdims=0)],
                                                 "else", [vi("e", F, [4])])),
              helper.make_node("Identity", ["yi"], ["y"])],
             [vi("x", F, [4, 8]), vi("c", B, [1])], [vi("y", F, None)],
             [const("w1", w1), const("ax", np.array([1], np.int64))], check=False)
    c["ranks"] = (m, {"x": x}, ["c"], lambda i, k: [
        i["x"] @ w1 if k["c"] else i["x"].sum(axis=1)])
    # "two": two outputs of run-time shape from one If
    m = make([helper.make_node("If", ["c"], ["y", "y2"], name="pick",
                               then_branch=graph(
                                   [helper.make_node("MatMul", ["x", "w1"], ["t"]),
                                    helper.make_node("Relu", ["x"], ["t2"])], "then",
                                   [vi("t", F, [4, 6]), vi("t2", F, [4, 8])]),
                               else_branch=graph(
                                   [helper.make_node("Transpose", ["x"], ["e"]),
                                    helper.make_node("Neg", ["x"], ["n"]),
                                    helper.make_node("Transpose", ["n"], ["e2"])], "else",
                                   [vi("e", F, [8, 4]), vi("e2", F, [8, 4])]))],
             [vi("x", F, [4, 8]), vi("c", B, [])],
             [vi("y", F, ["rows", "cols"]), vi("y2", F, ["rows2", "cols2"])],
             [const("w1", w1)])
    c["two"] = (m, {"x": x}, ["c"], lambda i, k: [
        i["x"] @ w1 if k["c"] else i["x"].T,
        np.maximum(i["x"], 0) if k["c"] else -i["x"].T])
    return c


# ONNX Runtime refuses a branch output that is an outer value (it wants an
# Identity between), which ONNX allows and onnxc takes
ORT_SKIP = {"nested"}
# onnx 1.12's checker wants a shape on every graph output, and an output of
# two ranks can have none (ONNX allows it; the model itself is not checked)
CHECKER_SKIP = {"ranks"}
# run in mixed precision as well (half tolerances)
MIXED = {"linear", "shapes"}


def write_case(name, case, d):
    """Case name as an `onnxc check` case in d: d/model.onnx and one
    test_data_set_<k> per combination of condition values (inputs in graph
    order, the float64 reference in the outputs' types)."""
    m, data, conds, ref = case
    os.makedirs(d)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for k, values in enumerate(itertools.product([False, True], repeat=len(conds))):
        s = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(s)
        inputs = dict(data)
        for cn, v in zip(conds, values):
            shape = [dd.dim_value for dd in next(
                i for i in m.graph.input if i.name == cn).type.tensor_type.shape.dim]
            inputs[cn] = np.full(shape, v, dtype=bool)
        for j, i in enumerate(m.graph.input):
            onnx.save_tensor(numpy_helper.from_array(np.asarray(inputs[i.name]), i.name),
                             os.path.join(s, "input_%d.pb" % j))
        for j, (o, w) in enumerate(zip(m.graph.output, ref(data, dict(zip(conds, values))))):
            dt = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[o.type.tensor_type.elem_type]
            onnx.save_tensor(numpy_helper.from_array(np.asarray(w).astype(dt), o.name),
                             os.path.join(s, "output_%d.pb" % j))
    return d


def main():
    if sys.argv[1:2] == ["--write-cases"]:
        for name, case in cases().items():
            write_case(name, case, os.path.join(sys.argv[2], "if_" + name))
        return 0
    onnxc = sys.argv[1]
    ort_run = sys.argv[2] if len(sys.argv) > 2 else None
    have_ort = bool(ort_run) and subprocess.run(["node", ort_run, "--check"],
                                                capture_output=True).returncode == 0
    if not have_ort:
        print("note: onnxruntime-node not found: ONNX Runtime comparisons skipped")
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for name, (m, data, conds, ref) in cases().items():
            path = os.path.join(d, name + ".onnx")
            onnx.save(m, path)
            outs = [o.name for o in m.graph.output]
            exported = os.path.join(d, name + ".exported.onnx")
            p = subprocess.run([onnxc, "export", path, "-o", exported], capture_output=True,
                               text=True)
            if p.returncode:
                print("FAIL: %s: onnxc export: %s" % (name, p.stderr.strip()))
                failures += 1
                exported = None
            elif name in CHECKER_SKIP:
                print("ok: %s exported (not checked: %s)" % (name, "an output of two ranks"))
            else:
                onnx.checker.check_model(exported, full_check=True)
                print("ok: %s exported, the checker accepts it" % name)
            # exported in mixed precision: for "shapes" a cast follows the
            # merge, and the output is written from its flat form
            exported_mixed = None
            if name in MIXED:
                exported_mixed = os.path.join(d, name + ".exported-mixed.onnx")
                p = subprocess.run([onnxc, "export", path, "-o", exported_mixed, "--precision",
                                    "mixed"], capture_output=True, text=True)
                if p.returncode:
                    print("FAIL: %s: onnxc export --precision mixed: %s" %
                          (name, p.stderr.strip()))
                    failures += 1
                    exported_mixed = None
                else:
                    onnx.checker.check_model(exported_mixed, full_check=True)
                    print("ok: %s exported in mixed precision, the checker accepts it" % name)
            files = {"exported": exported, "exported mixed": exported_mixed}
            for values in itertools.product([False, True], repeat=len(conds)):
                k = dict(zip(conds, values))
                inputs = dict(data)
                for cn in conds:
                    shape = [dd.dim_value for dd in next(
                        i for i in m.graph.input if i.name == cn).type.tensor_type.shape.dim]
                    inputs[cn] = np.full(shape, k[cn], dtype=bool)
                want = ref(data, k)
                modes = [("fp32", (), 1e-5, 1e-5)]
                if name in MIXED:
                    modes.append(("mixed", ("--precision", "mixed"), 2e-2, 2e-2))
                if exported:
                    modes.append(("exported", (), 1e-5, 1e-5))
                if exported_mixed:
                    modes.append(("exported mixed", (), 2e-2, 2e-2))
                for mode, extra, rtol, atol in modes:
                    out, err = run_model(onnxc, d, files.get(mode) or path,
                                         inputs, extra)
                    label = "%s %s %s" % (name, mode, k)
                    if out is None:
                        print("FAIL: %s: onnxc run failed: %s" % (label, err))
                        failures += 1
                        continue
                    for n, w in zip(outs, want):
                        got = np.load(os.path.join(out, n + ".npy"))
                        if got.shape != np.shape(w) or not np.allclose(got, w, rtol, atol):
                            print("FAIL: %s: output %s differs by %g" %
                                  (label, n, np.max(np.abs(got - w)) if got.shape == np.shape(w)
                                   else float("inf")))
                            failures += 1
                        else:
                            print("ok: %s: %s" % (label, n))
                if have_ort and name not in ORT_SKIP:
                    got, err = ort_outputs(ort_run, d, path, inputs, len(outs))
                    if got is None:
                        print("FAIL: %s: ONNX Runtime: %s" % (name, err))
                        failures += 1
                    else:
                        for n, g, w in zip(outs, got, want):
                            if g.shape != np.shape(w) or not np.allclose(g, w, 1e-5, 1e-5):
                                print("FAIL: %s %s: ONNX Runtime's %s differs from the "
                                      "reference" % (name, k, n))
                                failures += 1
        # a branch that cannot be compiled for these shapes (Silero VAD's
        # 8 kHz network for 512-sample chunks) becomes a trap: a warning at
        # compile time, the other branch runs, taking it fails the run
        shape = lambda name, dims: const(name, np.array(dims, np.int64))  # noqa: E731
        m = make([helper.make_node("If", ["c"], ["y"], name="by_size",
                                   then_branch=graph([helper.make_node("Reshape", ["x", "s23"],
                                                                       ["t"], name="ok")],
                                                     "then", [vi("t", F, [2, 3])], [shape("s23", [2, 3])]),
                                   else_branch=graph([helper.make_node("Reshape", ["x", "s44"],
                                                                       ["e"], name="bad")],
                                                     "else", [vi("e", F, [2, 3])], [shape("s44", [4, 4])]))],
                 [vi("x", F, [6]), vi("c", B, [])], [vi("y", F, [2, 3])])
        path = os.path.join(d, "trap.onnx")
        onnx.save(m, path)
        x = rng.standard_normal(6).astype(np.float32)
        p = subprocess.run([onnxc, "compile", path, "-o", os.path.join(d, "trap")],
                           capture_output=True, text=True)
        out, err = run_model(onnxc, d, path, {"x": x, "c": np.array(True)})
        bad, why = run_model(onnxc, d, path, {"x": x, "c": np.array(False)})
        if (p.returncode or "node 'by_size' (If): the else branch cannot be compiled" not in p.stderr
                or out is None or not np.array_equal(np.load(os.path.join(out, "y.npy")),
                                                      x.reshape(2, 3))
                or bad is not None or "took a branch that cannot run" not in why):
            print("FAIL: a branch that cannot be compiled: compile %d %s; run taken: %s; "
                  "run not taken: %s" % (p.returncode, p.stderr.strip(), err or "ok",
                                         why or "it succeeded"))
            failures += 1
        else:
            print("ok: a branch that cannot be compiled: " + p.stderr.strip().splitlines()[0])
            print("ok: ... and a run that takes it: " + why.splitlines()[-1])
        # ... and cannot be exported: the export names the trap
        p = subprocess.run([onnxc, "export", path, "-o", os.path.join(d, "out.onnx")],
                           capture_output=True, text=True)
        if p.returncode != 1 or "node 'by_size' (trap): cannot export" not in p.stderr:
            print("FAIL: onnxc export of a trap branch: status %d, %s" %
                  (p.returncode, p.stderr.strip()))
            failures += 1
        else:
            print("ok: export refuses a trap: " + p.stderr.strip().splitlines()[0])
        # the outputs of run-time shape through `onnxc check` (each data set
        # gives its own shape), as scripts/gpu-check runs them on CUDA
        for name in ("shapes", "ranks"):
            case_dir = write_case(name, cases()[name], os.path.join(d, "case_" + name))
            p = subprocess.run([onnxc, "check", case_dir, "--json"], capture_output=True,
                               text=True)
            if p.returncode:
                print("FAIL: onnxc check of %s: %s" % (name, (p.stderr or p.stdout).strip()))
                failures += 1
            else:
                print("ok: onnxc check of %s: %s" % (name, p.stdout.strip()))
        failures += check_flat_export(onnxc, d)
        failures += check_refusals(onnxc, d)
        if len(sys.argv) > 3:
            failures += check_shape_api(onnxc, d, sys.argv[3],
                                        sys.argv[4].split() if len(sys.argv) > 4 else [])
        else:
            print("note: no runtime library given: the C API check is skipped")
    print("%d failures" % failures)
    return 1 if failures else 0


FLAT_IR = """onnxc-ir 1
module "flat"
input %x : f32[2,3]
input %c : bool[]
%xf : f32[6] = reshape(%x) {shape=[6]} @xf
%n : bool[] = not(%c) @n
%a : f32[6] = relu(%xf) if %c @a
%b : f32[6] = neg(%xf) if %n @b
%y : f32[6] = phi(%c, %a, %b) @y
output %y shape(%c ? f32[2,3] : f32[3,2])
"""


def check_flat_export(onnxc, d):
    """An output of run-time shape whose branches are not the import's
    flattening of a value of each shape (a pass's rewrite; here IR text)
    is exported from its flat form: Reshape(Slice(y.flat)) in an If on its
    condition. The file, run by onnxc, gives what the IR gives."""
    src = os.path.join(d, "flat.oir")
    dst = os.path.join(d, "flat.onnx")
    with open(src, "w") as f:
        f.write(FLAT_IR)
    p = subprocess.run([onnxc, "export", src, "-o", dst], capture_output=True, text=True)
    if p.returncode:
        print("FAIL: export of a flat output of run-time shape: %s" % p.stderr.strip())
        return 1
    onnx.checker.check_model(dst, full_check=True)
    ops = [n.op_type for n in onnx.load(dst).graph.node]
    failures = 0
    x = rng.standard_normal((2, 3)).astype(np.float32)
    for c in (False, True):
        want = np.maximum(x, 0) if c else -x.reshape(3, 2)
        out, err = run_model(onnxc, d, dst, {"x": x, "c": np.array(c)})
        got = np.load(os.path.join(out, "y.npy")) if out else None
        if got is None or got.shape != want.shape or not np.allclose(got, want):
            print("FAIL: flat export c=%s: %s" % (c, err or "shape %s" % (got.shape,)))
            failures += 1
        else:
            print("ok: flat export c=%s: %s gives %s" % (c, ops, got.shape))
    return failures


def check_refusals(onnxc, d):
    """Outputs of run-time shape are allowed only as graph outputs nothing
    reads; what else would use one is refused, naming the node."""
    x = vi("x", F, [4, 8])
    differ = lambda name: helper.make_node(  # noqa: E731
        "If", ["c"], [name], name=name + "_if",
        then_branch=graph([helper.make_node("Relu", ["x"], [name + "_t"])], "then",
                          [vi(name + "_t", F, [4, 8])]),
        else_branch=graph([helper.make_node("Transpose", ["x"], [name + "_e"])], "else",
                          [vi(name + "_e", F, [8, 4])]))
    cases = {
        "read": (make([differ("y0"), helper.make_node("Neg", ["y0"], ["y"], name="reader")],
                      [x, vi("c", B, [])], [vi("y", F, None)], check=False),
                 "node 'reader' (Neg): reads 'y0', which If 'y0_if' gives shape f32[4,8] in "
                 "one branch and f32[8,4] in the other; onnxc allows branches of different "
                 "shapes only for a graph output that nothing reads"),
        "nested": (make([helper.make_node(
            "If", ["c2"], ["y"], name="outer",
            then_branch=graph([differ("y1")], "then", [vi("y1", F, None)]),
            else_branch=graph([helper.make_node("Neg", ["x"], ["n"])], "else",
                              [vi("n", F, [4, 8])]))],
            [x, vi("c", B, []), vi("c2", B, [])], [vi("y", F, None)], check=False),
            "node 'outer' (If): the then branch cannot be compiled for these shapes "
            "(node 'outer' (If): reads 'y1', which If 'outer/then/y1_if' gives shape"),
        "dtypes": (make([helper.make_node(
            "If", ["c"], ["y"], name="types",
            then_branch=graph([helper.make_node("Relu", ["x"], ["t"])], "then",
                              [vi("t", F, [4, 8])]),
            else_branch=graph([helper.make_node("Shape", ["x"], ["e"])], "else",
                              [vi("e", TensorProto.INT64, [2])]))],
            [x, vi("c", B, [])], [vi("y", F, None)], check=False),
            "node 'types' (If): output 0 is f32[4,8] in the then branch and i64[2] in the "
            "else branch; with a condition known only at run time both branches must give "
            "one element type"),
    }
    # a branch that returns one cannot be compiled: like any such branch it
    # becomes a trap (a warning; a run that takes it fails)
    trap = {"nested"}
    failures = 0
    for name, (m, want) in cases.items():
        path = os.path.join(d, "refuse_%s.onnx" % name)
        onnx.save(m, path)
        p = subprocess.run([onnxc, "compile", path, "-o", os.path.join(d, "refused")],
                           capture_output=True, text=True)
        if p.returncode != (0 if name in trap else 1) or want not in p.stderr:
            print("FAIL: refusal %s: status %d, %s" % (name, p.returncode, p.stderr.strip()))
            failures += 1
        else:
            print("ok: refusal %s: %s" % (name, p.stderr.strip().splitlines()[0]))
    return failures


def check_shape_api(onnxc, d, rtlib, san):
    """tests/if/shape_api.c against the "shapes" and "ranks" models: the
    shape s_output_shape reports and the elements at the start of the
    buffer, for each condition, against numpy."""
    failures = 0
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("shapes", "ranks", "two"):
        m, data, _, ref = cases()[name]
        work = os.path.join(d, "api_" + name)
        path = work + ".onnx"
        onnx.save(m, path)
        p = subprocess.run([onnxc, "compile", path, "--name", "s", "-o", work, "-q"],
                           capture_output=True, text=True)
        exe = os.path.join(work, "shape_api")
        if not p.returncode:
            p = subprocess.run(["cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror"] + san +
                               [os.path.join(here, "shape_api.c"), "-I" + work,
                                "-I" + os.path.join(here, "..", "..", "runtime"),
                                os.path.join(work, "libs.a"), rtlib, "-lopenblas",
                                "-lpthread", "-lm", "-o", exe], capture_output=True, text=True)
        if p.returncode:
            print("FAIL: C API %s: building: %s" % (name, p.stderr.strip()))
            failures += 1
            continue
        data["x"].tofile(os.path.join(work, "x.bin"))
        p = subprocess.run([exe, os.path.join(work, "s.weights"), os.path.join(work, "x.bin"),
                            os.path.join(work, "y")], capture_output=True, text=True)
        if p.returncode:
            print("FAIL: C API %s: %s" % (name, p.stderr.strip()))
            failures += 1
            continue
        for c in (False, True):
            want = np.asarray(ref(data, {"c": c})[0], np.float32)
            with open(os.path.join(work, "y_%d.shape" % c)) as f:
                got_shape = tuple(int(v) for v in f.read().split()[1:])
            got = np.fromfile(os.path.join(work, "y_%d.bin" % c), np.float32)
            if got_shape != want.shape or not np.allclose(got.reshape(got_shape), want,
                                                          1e-5, 1e-5):
                print("FAIL: C API %s c=%s: shape %s, want %s" % (name, c, got_shape,
                                                                  want.shape))
                failures += 1
            else:
                print("ok: C API %s c=%s: s_output_shape gives %s" % (name, c, got_shape))
    return failures


if __name__ == "__main__":
    sys.exit(main())
