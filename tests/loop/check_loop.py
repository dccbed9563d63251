#!/usr/bin/python3
"""Loop whose trip count or condition is known only at run time (docs/ir.md,
Loop): compiled once, run as a `while` loop around the body.

Usage: check_loop.py ONNXC [ORT_RUN_JS]
       check_loop.py --ort-only [ONNXC] [ORT_RUN_JS]
       check_loop.py --write-cases DIR   (the models as `onnxc check` cases)

Builds small models with run-time Loops - a trip count that is a graph
input (M = 0, 1, 3, 17; with 0 the initial value comes back), a while
loop whose condition the body computes from the data (its number of
iterations depends on a threshold; a large trip count bounds it), a
condition with no trip count, loop-carried values that swap, pass through,
or take an outer value named directly as a body output, an If on the
iteration number inside the body, MatMul, Gemm and elementwise chains in
the body, nested loops whose inner trip count is the outer iteration
number, a Loop inside an If branch, a constant trip count too long to
unroll (200,000 iterations), int64 and bool loop-carried values (the
condition itself carried) - runs each on the CPU with several inputs,
edge cases included (one `onnxc check`
of every run), and compares every output with a numpy
float64 reference of the model (f32 within rtol 1e-5 / atol 1e-6, int64
and bool exactly), and with ONNX Runtime where scripts/ort_run.js finds
onnxruntime-node (CI installs only Debian packages, so there that part is
skipped and says so). Each model is also written back by `onnxc export`
(a Loop around the body, docs/cli.md): the ONNX checker must accept the
file, and it must compute the same under onnxc and ONNX Runtime. One model
runs with --precision mixed too (half tolerances) and compiles for --target
cuda (code only, no GPU needed).
Two loops too long to unroll have scan outputs: a Loop with a constant
trip count of 30,000 (also with --precision mixed and for --target cuda)
and a Scan of 25,000 steps, scan inputs and outputs on axes 0 and 1 in both
directions.
Loops that cannot be compiled must be refused with exit status 1, the
diagnostic naming the Loop node and why: a scan output with a run-time trip
count, one of a constant trip count whose body's condition is computed from
the data, a loop whose body's condition is constant true and that has no trip
count, a loop-carried value whose shape grows with a run-time trip count.

--ort-only skips onnxc and checks every reference against ONNX Runtime
(which must then be found): the way to validate the references.

Prints one `ok:` line per model and check, `FAIL:` lines; exits 1 on any
failure.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
from backend_case import ort_outputs, run_check, run_model  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
f32, i64 = np.float32, np.int64
rng = np.random.default_rng(17)
RTOL, ATOL = 1e-5, 1e-6          # f32 outputs against the float64 reference
MIXED_RTOL, MIXED_ATOL = 1e-2, 1e-2


# ------------------------------------------------------------ model helpers

def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0] if outs else op, **attrs)


def body(nodes, carried, outputs, inits=(), name="body"):
    """A Loop body: inputs (i, cond_in, carried...), outputs (cond, ...)."""
    return helper.make_graph(nodes, name, [vi("i", I64, []), vi("cond_in", B, [])] + carried,
                             outputs, initializer=list(inits))


def loop(name, ins, outs, g):
    return helper.make_node("Loop", ins, outs, name=name, body=g)


def make(nodes, inputs, outputs, inits=(), opset=17, full_check=True):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=full_check)
    return m


def sig(x):
    return 1 / (1 + np.exp(-x))


def rand(*shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(f32)


def d(a):
    """A float32 constant as the float64 the reference computes with."""
    return np.asarray(a, np.float64)


class Case:
    """A model, its runs (input dicts) and a float64 reference
    ref(inputs) -> [outputs in graph order]."""

    def __init__(self, name, model, runs, ref, what, rtol=RTOL, atol=ATOL):
        self.name, self.model, self.runs, self.ref, self.what = name, model, runs, ref, what
        self.rtol, self.atol = rtol, atol
        self.mixed = self.cuda = False   # also run with --precision mixed / compile for cuda


def with_identities(m):
    """The model with every sub-graph output that is an outer value routed
    through an Identity. ONNX allows the outer value as it is, and onnxc
    takes it; ONNX Runtime 1.30 refuses it ("Subgraph output (o) is an outer
    scope value being returned directly. Please update the model to add an
    Identity node between the outer scope value and the subgraph output."),
    so that is what it runs. A body input named as a body output it takes."""
    m = onnx.ModelProto.FromString(m.SerializeToString())

    def fix(g):
        local = ({o for n in g.node for o in n.output} | {i.name for i in g.input}
                 | {t.name for t in g.initializer})
        for k, o in enumerate(g.output):
            if o.name not in local:
                new = o.name + "__ident%d" % k
                g.node.append(helper.make_node("Identity", [o.name], [new], name=new))
                o.name = new
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    fix(a.g)
    for n in m.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                fix(a.g)
    onnx.checker.check_model(m, full_check=True)
    return m


# ------------------------------------------------------------ the models

def affine_m():
    """1. x_{k+1} = x_k * w + b, M a graph input, no condition."""
    w = rng.uniform(0.6, 1.1, (2, 3)).astype(f32) * np.sign(rand(2, 3))
    b = rand(3, scale=0.5)
    g = body([node("Mul", ["x_in", "w"], ["xw"]),
              node("Add", ["xw", "b"], ["x_out"]),
              node("Identity", ["cond_in"], ["cond_out"])],
             [vi("x_in", F, [2, 3])], [vi("cond_out", B, []), vi("x_out", F, [2, 3])])
    m = make([loop("affine", ["M", "", "x"], ["y"], g)],
             [vi("x", F, [2, 3]), vi("M", I64, [])], [vi("y", F, [2, 3])],
             [const("w", w), const("b", b)], opset=13)
    x = rand(2, 3)

    def ref(i):
        y = d(i["x"])
        for _ in range(int(i["M"])):
            y = y * d(w) + d(b)
        return [y]
    runs = [{"x": x, "M": np.array(n, i64)} for n in (0, 1, 3, 17)]
    return Case("affine_m", m, runs, ref, "trip count a graph input: M = 0, 1, 3, 17")


def while_threshold():
    """2. while sum(|x|) > thr: x = x / 2 + 1 / (i + 2); M = 1000 bounds it;
    the number of iterations is carried and output."""
    g = body([node("Cast", ["i"], ["fi"], to=F),
              node("Add", ["fi", "two"], ["fi2"]),
              node("Reciprocal", ["fi2"], ["r"]),
              node("Mul", ["x_in", "half"], ["hx"]),
              node("Add", ["hx", "r"], ["x_out"]),
              node("Abs", ["x_out"], ["ax"]),
              node("ReduceSum", ["ax"], ["s"], keepdims=0),
              node("Greater", ["s", "thr"], ["cond_out"]),
              node("Add", ["n_in", "one"], ["n_out"])],
             [vi("x_in", F, [4]), vi("n_in", I64, [])],
             [vi("cond_out", B, []), vi("x_out", F, [4]), vi("n_out", I64, [])])
    m = make([node("Abs", ["x"], ["ax0"]),
              node("ReduceSum", ["ax0"], ["s0"], keepdims=0),
              node("Greater", ["s0", "thr"], ["c0"]),
              loop("while", ["M", "c0", "x", "n0"], ["y", "n"], g)],
             [vi("x", F, [4]), vi("thr", F, [])], [vi("y", F, [4]), vi("n", I64, [])],
             [const("M", np.array(1000, i64)), const("n0", np.array(0, i64)),
              const("two", np.array(2, f32)), const("half", np.array(0.5, f32)),
              const("one", np.array(1, i64))], opset=16)
    x = np.array([3.0, -2.5, 1.25, -0.75], f32)     # sum |x| = 7.5

    def ref(inp):
        y, thr, n = d(inp["x"]), float(inp["thr"]), 0
        go = np.abs(y).sum() > thr
        while go and n < 1000:
            y = y / 2 + 1 / (n + 2)
            s = np.abs(y).sum()
            # float32 sums must take the same decisions
            assert abs(s - thr) > 1e-4 * max(1.0, s), "threshold %g too close to %g" % (thr, s)
            go, n = s > thr, n + 1
        return [y, np.array(n)]
    # 8.0 > sum: no iteration; 7.0: one; 2.0 and 0.3: data-dependent counts
    # (about 8 / thr); 0.0: never below, the trip count (1000) stops it
    runs = [{"x": x, "thr": np.array(t, f32)} for t in (8.0, 7.0, 2.0, 0.3, 0.0)]
    runs.append({"x": 10 * x, "thr": np.array(2.0, f32)})   # same threshold, more iterations
    return Case("while_threshold", m, runs, ref,
                "condition computed from the data, M = 1000 as a bound; iteration counts "
                + ", ".join(str(int(ref(r)[1])) for r in runs))


def cond_no_m():
    """3. k = 0; y = 0; while k < n: y += x * (k + 1) + i; k += 1 (no M)."""
    g = body([node("Add", ["k_in", "one"], ["k_out"]),
              node("Cast", ["k_out"], ["fk"], to=F),
              node("Mul", ["x", "fk"], ["xk"]),
              node("Cast", ["i"], ["fi"], to=F),
              node("Add", ["y_in", "xk"], ["y1"]),
              node("Add", ["y1", "fi"], ["y_out"]),
              node("Less", ["k_out", "n"], ["cond_out"])],
             [vi("k_in", I64, []), vi("y_in", F, [3])],
             [vi("cond_out", B, []), vi("k_out", I64, []), vi("y_out", F, [3])])
    m = make([node("Less", ["k0", "n"], ["c0"]),
              loop("counter", ["", "c0", "k0", "y0"], ["k", "y"], g)],
             [vi("x", F, [3]), vi("n", I64, [])], [vi("k", I64, []), vi("y", F, [3])],
             [const("k0", np.array(0, i64)), const("y0", np.zeros(3, f32)),
              const("one", np.array(1, i64))], opset=17)
    x = rand(3)

    def ref(inp):
        k, y, n = 0, np.zeros(3), int(inp["n"])
        while k < n:
            y = y + d(inp["x"]) * (k + 1) + k
            k += 1
        return [np.array(k), y]
    runs = [{"x": x, "n": np.array(n, i64)} for n in (-2, 0, 1, 5, 40)]
    return Case("cond_no_m", m, runs, ref, "condition, no trip count: n = -2, 0, 1, 5, 40")


def carried_forms():
    """4. carried (x, y) swap, p passes through, q becomes the outer o, z =
    2 z + x records the swaps' order; the body's outputs name its inputs
    and the outer value directly (the condition too)."""
    g = body([node("Mul", ["z_in", "two"], ["z2"]),
              node("Add", ["z2", "x_in"], ["z_out"])],
             [vi("x_in", F, [3]), vi("y_in", F, [3]), vi("p_in", F, [2]), vi("q_in", F, [2]),
              vi("z_in", F, [3])],
             [vi("cond_in", B, []), vi("y_in", F, [3]), vi("x_in", F, [3]), vi("p_in", F, [2]),
              vi("o", F, [2]), vi("z_out", F, [3])])
    m = make([loop("forms", ["M", "", "x", "y", "p", "q", "z0"], ["xf", "yf", "pf", "qf", "zf"],
                   g)],
             [vi("x", F, [3]), vi("y", F, [3]), vi("p", F, [2]), vi("q", F, [2]),
              vi("o", F, [2]), vi("M", I64, [])],
             [vi("xf", F, [3]), vi("yf", F, [3]), vi("pf", F, [2]), vi("qf", F, [2]),
              vi("zf", F, [3])],
             [const("z0", np.zeros(3, f32)), const("two", np.array(2, f32))], opset=16)
    data = {"x": rand(3), "y": rand(3), "p": rand(2), "q": rand(2), "o": rand(2)}

    def ref(inp):
        x, y, p, q, z = d(inp["x"]), d(inp["y"]), d(inp["p"]), d(inp["q"]), np.zeros(3)
        for _ in range(int(inp["M"])):
            x, y, q, z = y, x, d(inp["o"]), 2 * z + x
        return [x, y, p, q, z]
    runs = [dict(data, M=np.array(n, i64)) for n in (0, 1, 2, 5)]
    return Case("carried_forms", m, runs, ref,
                "swap, pass-through, outer value as body outputs: M = 0, 1, 2, 5")


def if_in_body():
    """5a. x = x + a on even iterations, x * w on odd ones (an If on i % 2)."""
    a, w = rand(3, scale=0.5), rng.uniform(0.5, 1.2, (2, 3)).astype(f32)
    then_g = helper.make_graph([node("Add", ["x_in", "a"], ["t"])], "even", [],
                               [vi("t", F, [2, 3])])
    else_g = helper.make_graph([node("Mul", ["x_in", "w"], ["e"])], "odd", [],
                               [vi("e", F, [2, 3])])
    g = body([node("Mod", ["i", "two"], ["r"]),
              node("Equal", ["r", "zero"], ["even"]),
              helper.make_node("If", ["even"], ["x_out"], name="parity", then_branch=then_g,
                               else_branch=else_g),
              node("Identity", ["cond_in"], ["cond_out"])],
             [vi("x_in", F, [2, 3])], [vi("cond_out", B, []), vi("x_out", F, [2, 3])])
    m = make([loop("if_body", ["M", "", "x"], ["y"], g)],
             [vi("x", F, [2, 3]), vi("M", I64, [])], [vi("y", F, [2, 3])],
             [const("a", a), const("w", w), const("two", np.array(2, i64)),
              const("zero", np.array(0, i64))], opset=18)
    x = rand(2, 3)

    def ref(inp):
        y = d(inp["x"])
        for k in range(int(inp["M"])):
            y = y + d(a) if k % 2 == 0 else y * d(w)
        return [y]
    runs = [{"x": x, "M": np.array(n, i64)} for n in (0, 1, 2, 7)]
    return Case("if_in_body", m, runs, ref, "If on iteration_num % 2 in the body: M = 0, 1, 2, 7")


def dense_body():
    """5b. h = tanh(relu(h W1 + b1 + x U) + sigmoid(Gemm(h, W2^T, b2)) - 0.5),
    h0 = x, then y = 2 h: MatMul, Gemm and elementwise chains in the body,
    reading an outer computed value (x U)."""
    n = 16
    w1, w2, u = rand(n, n, scale=0.08), rand(n, n, scale=0.08), rand(n, n, scale=0.1)
    b1, b2 = rand(n, scale=0.1), rand(n, scale=0.1)
    g = body([node("MatMul", ["h_in", "W1"], ["hw"]),
              node("Add", ["hw", "b1"], ["hb"]),
              node("Add", ["hb", "xu"], ["pre"]),
              node("Relu", ["pre"], ["r"]),
              node("Gemm", ["h_in", "W2", "b2"], ["gm"], transB=1),
              node("Sigmoid", ["gm"], ["sg"]),
              node("Add", ["r", "sg"], ["t"]),
              node("Sub", ["t", "half"], ["t2"]),
              node("Tanh", ["t2"], ["h_out"]),
              node("Identity", ["cond_in"], ["cond_out"])],
             [vi("h_in", F, [8, n])], [vi("cond_out", B, []), vi("h_out", F, [8, n])])
    m = make([node("MatMul", ["x", "U"], ["xu"]),
              loop("dense", ["M", "", "x"], ["h"], g),
              node("Mul", ["h", "twof"], ["y"])],
             [vi("x", F, [8, n]), vi("M", I64, [])], [vi("y", F, [8, n])],
             [const("W1", w1), const("b1", b1), const("W2", w2), const("b2", b2), const("U", u),
              const("half", np.array(0.5, f32)), const("twof", np.array(2, f32))], opset=17)
    x = rand(8, n)

    def ref(inp):
        xx = d(inp["x"])
        xu, h = xx @ d(u), xx
        for _ in range(int(inp["M"])):
            h = np.tanh(np.maximum(h @ d(w1) + d(b1) + xu, 0) + sig(h @ d(w2).T + d(b2)) - 0.5)
        return [2 * h]
    runs = [{"x": x, "M": np.array(k, i64)} for k in (0, 1, 4, 25)]
    c = Case("dense_body", m, runs, ref, "MatMul, Gemm, Relu, Sigmoid, Tanh in the body: "
             "M = 0, 1, 4, 25")
    c.mixed = c.cuda = True
    return c


def nested():
    """6. outer Loop(M) { inner Loop(i) { t = t * w + 0.1 j + 0.01 i; k += 1 };
    y = t + bo }: the inner trip count is the outer iteration number (0 in
    the first outer iteration), the inner body reads the outer's i."""
    w, bo = rng.uniform(0.7, 1.05, 4).astype(f32), rand(4, scale=0.3)
    inner = body([node("Mul", ["t_in", "w"], ["tw"]),
                  node("Cast", ["i"], ["fj"], to=F),    # the inner iteration number
                  node("Mul", ["fj", "tenth"], ["aj"]),
                  node("Cast", ["oi"], ["fi"], to=F),   # the outer's, an outer value here
                  node("Mul", ["fi", "hundredth"], ["ai"]),
                  node("Add", ["tw", "aj"], ["t1"]),
                  node("Add", ["t1", "ai"], ["t_out"]),
                  node("Add", ["k_in", "one"], ["k_out"]),
                  node("Identity", ["cond_in"], ["cond_out"])],
                 [vi("t_in", F, [4]), vi("k_in", I64, [])],
                 [vi("cond_out", B, []), vi("t_out", F, [4]), vi("k_out", I64, [])],
                 name="inner_body")
    outer = helper.make_graph(
        [node("Identity", ["oi"], ["trip"]),
         loop("inner", ["trip", "", "y_in", "n_in"], ["t", "n_out"], inner),
         node("Add", ["t", "bo"], ["y_out"]),
         node("Identity", ["ocond_in"], ["ocond_out"])],
        "outer_body", [vi("oi", I64, []), vi("ocond_in", B, []), vi("y_in", F, [4]),
                       vi("n_in", I64, [])],
        [vi("ocond_out", B, []), vi("y_out", F, [4]), vi("n_out", I64, [])])
    m = make([loop("outer", ["M", "", "x", "n0"], ["y", "n"], outer)],
             [vi("x", F, [4]), vi("M", I64, [])], [vi("y", F, [4]), vi("n", I64, [])],
             [const("w", w), const("bo", bo), const("n0", np.array(0, i64)),
              const("one", np.array(1, i64)), const("tenth", np.array(0.1, f32)),
              const("hundredth", np.array(0.01, f32))], opset=16)
    x = rand(4)

    def ref(inp):
        y, n = d(inp["x"]), 0
        for oi in range(int(inp["M"])):
            for j in range(oi):
                y = y * d(w) + j * d(f32(0.1)) + oi * d(f32(0.01))
                n += 1
            y = y + d(bo)
        return [y, np.array(n)]
    runs = [{"x": x, "M": np.array(k, i64)} for k in (0, 1, 3, 6)]
    return Case("nested", m, runs, ref, "inner trip count = outer iteration number: M = 0, 1, "
                "3, 6 (0, 0, 3, 15 inner iterations)")


def loop_in_if():
    """7. y = If(c) { Loop(M) { x = x * w + b } } else { -x }."""
    w, b = rng.uniform(0.6, 1.1, (2, 3)).astype(f32), rand(3, scale=0.5)
    g = body([node("Mul", ["x_in", "w"], ["xw"]),
              node("Add", ["xw", "b"], ["x_out"]),
              node("Identity", ["cond_in"], ["cond_out"])],
             [vi("x_in", F, [2, 3])], [vi("cond_out", B, []), vi("x_out", F, [2, 3])])
    then_g = helper.make_graph([loop("in_then", ["M", "", "x"], ["lt"], g)], "then", [],
                               [vi("lt", F, [2, 3])])
    else_g = helper.make_graph([node("Neg", ["x"], ["nx"])], "else", [], [vi("nx", F, [2, 3])])
    m = make([helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then_g,
                               else_branch=else_g)],
             [vi("x", F, [2, 3]), vi("c", B, []), vi("M", I64, [])], [vi("y", F, [2, 3])],
             [const("w", w), const("b", b)], opset=13)
    x = rand(2, 3)

    def ref(inp):
        y = d(inp["x"])
        if not inp["c"]:
            return [-y]
        for _ in range(int(inp["M"])):
            y = y * d(w) + d(b)
        return [y]
    runs = [{"x": x, "c": np.array(c), "M": np.array(k, i64)}
            for c in (False, True) for k in (0, 2, 5)]
    return Case("loop_in_if", m, runs, ref, "Loop in an If branch: c in {F, T} x M = 0, 2, 5")


def long_loop():
    """8. a constant trip count of 200,000 (5 body nodes: 1,000,000 > the
    100,000 onnxc unrolls): x = x / 2 + i * 2^-20, k += 1. x forgets its
    start within a few dozen iterations and ends near 2^-19 (M - 2): it
    checks the iteration numbers up to the last, k checks the count.
    (x = x * 0.99999 + 1e-6 is no test: float32 - ONNX Runtime's as well -
    drifts 9e-4 from float64 over 200,000 steps near its fixed point, where
    the same rounding repeats; here x * 0.5 and i * 2^-20 are exact and the
    one rounding per step is forgotten within a few steps.)"""
    trip = 200000
    g = body([node("Cast", ["i"], ["fi"], to=F),
              node("Mul", ["fi", "step"], ["t"]),
              node("Mul", ["x_in", "half"], ["hx"]),
              node("Add", ["hx", "t"], ["x_out"]),
              node("Add", ["k_in", "one"], ["k_out"])],
             [vi("x_in", F, [4]), vi("k_in", I64, [])],
             [vi("cond_in", B, []), vi("x_out", F, [4]), vi("k_out", I64, [])])
    m = make([loop("long", ["M", "", "x", "k0"], ["y", "k"], g)],
             [vi("x", F, [4])], [vi("y", F, [4]), vi("k", I64, [])],
             [const("M", np.array(trip, i64)), const("k0", np.array(0, i64)),
              const("half", np.array(0.5, f32)), const("step", np.array(2.0 ** -20, f32)),
              const("one", np.array(1, i64))], opset=17)

    def ref(inp):
        y = d(inp["x"])
        for k in range(trip):
            y = y / 2 + k * 2.0 ** -20
        return [y, np.array(trip)]
    runs = [{"x": np.array([0.0, 0.1, -0.5, 1e3], f32)}]
    return Case("long_loop", m, runs, ref, "constant trip count 200000, too long to unroll")


def int_bool():
    """9. s += i * i while s < limit, the carried bool flag is the body's
    condition output (the same value, named twice as body output), par ^=
    (i % 3 == 0); M and the initial condition graph inputs."""
    g = body([node("Mul", ["i", "i"], ["sq"]),
              node("Add", ["s_in", "sq"], ["s_out"]),
              node("Less", ["s_out", "limit"], ["flag_out"]),
              node("Mod", ["i", "three"], ["m3"]),
              node("Equal", ["m3", "zero"], ["z"]),
              node("Xor", ["par_in", "z"], ["par_out"])],
             [vi("s_in", I64, []), vi("flag_in", B, []), vi("par_in", B, [])],
             [vi("flag_out", B, []), vi("s_out", I64, []), vi("flag_out", B, []),
              vi("par_out", B, [])])
    m = make([loop("ints", ["M", "c0", "s0", "c0", "par0"], ["s", "flag", "par"], g)],
             [vi("M", I64, []), vi("c0", B, []), vi("limit", I64, [])],
             [vi("s", I64, []), vi("flag", B, []), vi("par", B, [])],
             [const("s0", np.array(0, i64)), const("par0", np.array(False)),
              const("three", np.array(3, i64)), const("zero", np.array(0, i64))], opset=16)

    def ref(inp):
        s, flag, par, k = 0, bool(inp["c0"]), False, 0
        go = flag
        while go and k < int(inp["M"]):
            s += k * k
            flag = s < int(inp["limit"])
            par ^= k % 3 == 0
            go, k = flag, k + 1
        return [np.array(s), np.array(flag), np.array(par)]
    runs = [{"M": np.array(mm, i64), "c0": np.array(c), "limit": np.array(lim, i64)}
            for mm, c, lim in ((10, True, 100),      # the condition stops it (8 iterations)
                               (3, True, 100),       # the trip count stops it
                               (10, False, 100),     # no iteration
                               (0, True, 100),       # no iteration
                               (10, True, 0),        # one iteration
                               (50, True, 10 ** 12))]
    return Case("int_bool", m, runs, ref, "int64 sum, bool condition carried, bool parity")


def long_scan_outputs():
    """10. a constant trip count of 30,000 (6 body nodes: 180,000 > the
    100,000 onnxc unrolls) with scan outputs: x = x / 2 + i * 2^-20 and i * i
    stacked, every iteration's; a condition input (constant true) that the
    body passes on. The scan outputs are carried values each iteration
    writes one slice of, in place (docs/ir.md, Loops)."""
    trip = 30000
    g = body([node("Cast", ["i"], ["fi"], to=F),
              node("Mul", ["fi", "step"], ["t"]),
              node("Mul", ["x_in", "half"], ["hx"]),
              node("Add", ["hx", "t"], ["x_out"]),
              node("Mul", ["i", "i"], ["sq"]),
              node("Identity", ["cond_in"], ["cond_out"])],
             [vi("x_in", F, [3])],
             [vi("cond_out", B, []), vi("x_out", F, [3]), vi("x_out", F, [3]), vi("sq", I64, [])])
    m = make([loop("long_scans", ["M", "go", "x"], ["y", "ys", "sqs"], g)],
             [vi("x", F, [3])],
             [vi("y", F, [3]), vi("ys", F, [trip, 3]), vi("sqs", I64, [trip])],
             [const("M", np.array(trip, i64)), const("go", np.array(True)),
              const("half", np.array(0.5, f32)), const("step", np.array(2.0 ** -20, f32))],
             opset=17)

    def ref(inp):
        y, ys = d(inp["x"]), np.empty((trip, 3))
        for k in range(trip):
            y = y / 2 + k * 2.0 ** -20
            ys[k] = y
        return [y, ys, np.arange(trip, dtype=i64) ** 2]
    runs = [{"x": np.array([0.0, 0.1, -0.5], f32)}, {"x": np.array([1e3, -7, 3], f32)}]
    c = Case("long_scan_outputs", m, runs, ref,
             "constant trip count 30000 with two scan outputs, too long to unroll")
    c.mixed = c.cuda = True
    return c


def long_scan():
    """11. a Scan over 25,000 steps (5 body nodes: 125,000 > the 100,000
    onnxc unrolls): s = tanh(s a + x1), y1 = s + x2, y2 = s x1, with scan
    input x1 on axis 0 forwards, x2 on axis 1 backwards, y1 stacked on axis
    1, y2 on axis 0 backwards."""
    n = 25000
    a = np.array([0.9, -0.7], f32)
    g = helper.make_graph([node("Mul", ["s_in", "a"], ["sa"]),
                           node("Add", ["sa", "x1"], ["pre"]),
                           node("Tanh", ["pre"], ["s_out"]),
                           node("Add", ["s_out", "x2"], ["y1"]),
                           node("Mul", ["s_out", "x1"], ["y2"])], "scan_body",
                          [vi("s_in", F, [2]), vi("x1", F, [2]), vi("x2", F, [2])],
                          [vi("s_out", F, [2]), vi("y1", F, [2]), vi("y2", F, [2])],
                          initializer=[const("a", a)])
    m = make([helper.make_node("Scan", ["s0", "X1", "X2"], ["sf", "Y1", "Y2"], name="long_scan",
                               body=g, num_scan_inputs=2, scan_input_axes=[0, 1],
                               scan_input_directions=[0, 1], scan_output_axes=[1, 0],
                               scan_output_directions=[0, 1])],
             [vi("s0", F, [2]), vi("X1", F, [n, 2]), vi("X2", F, [2, n])],
             [vi("sf", F, [2]), vi("Y1", F, [2, n]), vi("Y2", F, [n, 2])], opset=16)

    def ref(inp):
        s, x1s, x2s = d(inp["s0"]), d(inp["X1"]), d(inp["X2"])
        y1, y2 = np.empty((2, n)), np.empty((n, 2))
        for t in range(n):
            x1 = x1s[t]
            s = np.tanh(s * d(a) + x1)
            y1[:, t] = s + x2s[:, n - 1 - t]
            y2[n - 1 - t] = s * x1
        return [s, y1, y2]
    runs = [{"s0": rand(2), "X1": rand(n, 2), "X2": rand(2, n)}]
    return Case("long_scan", m, runs, ref,
                "Scan of 25000 steps, too long to unroll: scan axes 0 and 1, both directions")


def cases():
    return [affine_m(), while_threshold(), cond_no_m(), carried_forms(), if_in_body(),
            dense_body(), nested(), loop_in_if(), long_loop(), int_bool(), long_scan_outputs(),
            long_scan()]


# ------------------------------------------------------------ refusals

def refusals():
    """what -> (model, inputs, the Loop node's name, words one of which the
    diagnostic must say after naming the node: why)."""
    r = {}
    # (a) a scan output with a run-time trip count
    g = body([node("Add", ["x_in", "one"], ["x_out"]), node("Identity", ["cond_in"], ["cond_out"]),
              node("Identity", ["x_out"], ["scan"])],
             [vi("x_in", F, [3])],
             [vi("cond_out", B, []), vi("x_out", F, [3]), vi("scan", F, [3])])
    m = make([loop("scanning", ["M", "", "x"], ["y", "ys"], g)],
             [vi("x", F, [3]), vi("M", I64, [])], [vi("y", F, [3]), vi("ys", F, [None, 3])],
             [const("one", np.array(1, f32))], opset=16)
    r["scan output, run-time trip count"] = (
        m, {"x": rand(3), "M": np.array(4, i64)}, "scanning", ("scan",))
    # (b) a condition and no trip count, the body's condition constant true
    g = body([node("Add", ["x_in", "one"], ["x_out"]),
              helper.make_node("Constant", [], ["yes"], name="yes",
                               value=numpy_helper.from_array(np.array(True), "yes"))],
             [vi("x_in", F, [3])], [vi("yes", B, []), vi("x_out", F, [3])])
    m = make([loop("forever", ["", "c", "x"], ["y"], g)],
             [vi("x", F, [3]), vi("c", B, [])], [vi("y", F, [3])],
             [const("one", np.array(1, f32))], opset=16)
    r["condition always true, no trip count"] = (
        m, {"x": rand(3), "c": np.array(True)}, "forever", ("never end", "infinite", "always true"))
    # (c) a loop-carried value growing (Concat) with a run-time trip count
    g = body([node("Slice", ["x_in", "s0", "s1"], ["head"]),
              node("Concat", ["x_in", "head"], ["x_out"], axis=0),
              node("Identity", ["cond_in"], ["cond_out"])],
             [vi("x_in", F, [None])], [vi("cond_out", B, []), vi("x_out", F, [None])],
             [const("s0", np.array([0], i64)), const("s1", np.array([1], i64))])
    m = make([loop("growing", ["M", "", "x"], ["y"], g)],
             [vi("x", F, [3]), vi("M", I64, [])], [vi("y", F, [None])], opset=16,
             full_check=False)
    r["carried value changes shape, run-time trip count"] = (
        m, {"x": rand(3), "M": np.array(3, i64)}, "growing", ("shape", "type", "f32[4]"))
    # (d) scan outputs of a constant trip count too long to unroll, the
    # body's condition computed from the data (how many iterations run is
    # known only at run time)
    g = body([node("Add", ["x_in", "one"], ["x_out"]),
              node("ReduceSum", ["x_out"], ["s"], keepdims=0),
              node("Less", ["s", "lim"], ["cond_out"])],
             [vi("x_in", F, [3])], [vi("cond_out", B, []), vi("x_out", F, [3]),
                                    vi("x_out", F, [3])])
    m = make([loop("stopping", ["M", "c", "x"], ["y", "ys"], g)],
             [vi("x", F, [3])], [vi("y", F, [3]), vi("ys", F, [None, 3])],
             [const("one", np.array(1, f32)), const("lim", np.array(100, f32)),
              const("M", np.array(50000, i64)), const("c", np.array(True))], opset=16)
    r["scan output, condition from the data, too long to unroll"] = (
        m, {"x": rand(3)}, "stopping", ("scan",))
    return r


# ------------------------------------------------------------ running

def compare(got, want, rtol, atol):
    """(ok, max abs error) of one output: floats within the tolerances,
    integers and bools exactly, shapes and kinds of element equal."""
    want = np.asarray(want)
    if got.shape != want.shape or got.dtype.kind != want.dtype.kind:
        return False, float("inf")
    if want.dtype.kind == "f":
        err = float(np.max(np.abs(got.astype(np.float64) - want), initial=0))
        return bool(np.allclose(got, want, rtol, atol)), err
    err = float(np.max(np.abs(got.astype(np.int64) - want.astype(np.int64)), initial=0))
    return bool(np.array_equal(got, want)), err


def show(inp):
    return "{%s}" % ", ".join(
        "%s=%s" % (k, ("%g" % v if v.dtype.kind == "f" else v.item()) if v.ndim == 0
                   else "%s%s" % (v.dtype, list(v.shape)))
        for k, v in inp.items())


def check_runs(label, case, outs, run_one, rtol, atol):
    """Runs every input set through run_one(inputs) -> ([outputs], error);
    prints FAIL lines, one ok line; returns the number of failures."""
    fails, worst = 0, 0.0
    for inp in case.runs:
        want = case.ref(inp)
        got, err = run_one(inp)
        if got is None:
            print("FAIL: %s %s %s: %s" % (case.name, label, show(inp), err))
            fails += 1
            continue
        for n, g, w in zip(outs, got, want):
            ok, e = compare(g, w, rtol, atol)
            if not ok:
                print("FAIL: %s %s %s: output %s differs by %g (got %s%s, want %s%s)" %
                      (case.name, label, show(inp), n, e, g.dtype, list(g.shape),
                       np.asarray(w).dtype, list(np.shape(w))))
                fails += 1
            else:
                worst = max(worst, e)
    if not fails:
        print("ok: %s %s: %d run%s match%s the reference (max abs error %.3g; %s)" %
              (case.name, label, len(case.runs), "s" * (len(case.runs) > 1),
               "es" * (len(case.runs) == 1), worst, case.what))
    return fails


def write_case_dir(case, d, model=None):
    """The case as an `onnxc check` case in d, ONNX's node-test layout:
    d/model.onnx (case.model, or model) and a test_data_set_<k> per run
    (inputs in graph order, the float64 reference as the outputs' type)."""
    os.makedirs(d)
    onnx.save(model or case.model, os.path.join(d, "model.onnx"))
    ins = [i.name for i in case.model.graph.input]
    outs = case.model.graph.output
    for k, inp in enumerate(case.runs):
        s = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(s)
        for j, n in enumerate(ins):
            onnx.save_tensor(numpy_helper.from_array(np.asarray(inp[n]), n),
                             os.path.join(s, "input_%d.pb" % j))
        for j, (o, w) in enumerate(zip(outs, case.ref(inp))):
            dt = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[o.type.tensor_type.elem_type]
            onnx.save_tensor(numpy_helper.from_array(np.asarray(w).astype(dt), o.name),
                             os.path.join(s, "output_%d.pb" % j))
    return d


def write_cases(root):
    """Every model as an `onnxc check` case, ROOT/loop_<name>/ (write_case_dir):
    scripts/gpu-check bundles them and checks each on the CUDA target."""
    for case in cases():
        write_case_dir(case, os.path.join(root, "loop_" + case.name))
    return 0


def check_case(onnxc, label, case, d, rtol, atol, extra=()):
    """`onnxc check` of case dir d (every run in one process), the outputs
    within rtol/atol of the reference (integers and bools exactly), compiled
    without freezing an input; prints an ok or FAIL line, returns failures."""
    ok, r = run_check(onnxc, d, ["--rtol", repr(rtol), "--atol", repr(atol)] + list(extra))
    outs = r.get("outputs", [])
    if ok and r.get("frozen_inputs", 0) == 0:
        print("ok: %s %s: %d run%s match%s the reference (max abs error %.3g; %s)" %
              (case.name, label, len(case.runs), "s" * (len(case.runs) > 1),
               "es" * (len(case.runs) == 1), max((o["max_abs_err"] for o in outs), default=0),
               case.what))
        return 0
    if ok:
        print("FAIL: %s %s: onnxc check froze %d input(s) to compile it" %
              (case.name, label, r["frozen_inputs"]))
    elif outs:
        print("FAIL: %s %s: %s" % (case.name, label, "; ".join(
            "output %s: %d mismatches, max abs error %g" %
            (o["name"], o["mismatches"], o["max_abs_err"]) for o in outs if o["mismatches"])))
    else:
        print("FAIL: %s %s: %s" % (case.name, label,
                                   (r.get("error") or r.get("message") or str(r)).strip()))
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ort-only", action="store_true",
                    help="skip onnxc: check the references against ONNX Runtime")
    ap.add_argument("--write-cases", metavar="DIR",
                    help="write every model and its runs as onnxc check cases into DIR")
    ap.add_argument("onnxc", nargs="?")
    ap.add_argument("ort_run", nargs="?")
    args = ap.parse_args()
    if args.write_cases:
        return write_cases(args.write_cases)
    onnxc, ort_run = args.onnxc, args.ort_run
    if args.ort_only and onnxc and onnxc.endswith(".js") and not ort_run:
        onnxc, ort_run = None, onnxc
    if args.ort_only and not ort_run:
        ort_run = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                               "scripts", "ort_run.js")
    if not args.ort_only and not onnxc:
        ap.error("ONNXC is required (or --ort-only)")
    if not args.ort_only and not os.access(onnxc, os.X_OK):
        print("FAIL: %s is not an executable onnxc" % onnxc)
        return 1
    have_ort = bool(ort_run) and subprocess.run(["node", ort_run, "--check"],
                                                capture_output=True).returncode == 0
    if not have_ort:
        if args.ort_only:
            print("FAIL: --ort-only: onnxruntime-node not found by %s" % ort_run)
            return 1
        print("note: onnxruntime-node not found: ONNX Runtime comparisons skipped")
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for case in cases():
            path = os.path.join(d, case.name + ".onnx")
            onnx.save(case.model, path)
            outs = [o.name for o in case.model.graph.output]
            if not args.ort_only:
                cdir = write_case_dir(case, os.path.join(d, case.name))
                failures += check_case(onnxc, "fp32", case, cdir, case.rtol, case.atol)
                # written back by onnxc export: the checker accepts it, and
                # it computes the same (with onnxc, and ONNX Runtime below)
                exported = os.path.join(d, case.name + ".exported.onnx")
                p = subprocess.run([onnxc, "export", path, "-o", exported],
                                   capture_output=True, text=True)
                if p.returncode:
                    print("FAIL: %s: onnxc export: %s" % (case.name, p.stderr.strip()))
                    failures += 1
                    exported = None
                else:
                    try:
                        onnx.checker.check_model(onnx.load(exported), full_check=True)
                    except (onnx.checker.ValidationError,
                            onnx.shape_inference.InferenceError) as e:
                        print("FAIL: %s: the ONNX checker rejects the export: %s" %
                              (case.name, e))
                        failures += 1
                    edir = write_case_dir(case, os.path.join(d, case.name + ".exported"),
                                          onnx.load(exported))
                    failures += check_case(onnxc, "exported", case, edir, case.rtol, case.atol)
                if case.mixed:
                    failures += check_case(onnxc, "mixed", case, cdir, MIXED_RTOL, MIXED_ATOL,
                                           ("--precision", "mixed"))
                if case.cuda:
                    p = subprocess.run([onnxc, "compile", path, "--target", "cuda", "-o",
                                        os.path.join(d, case.name + "-cuda"), "-q"],
                                       capture_output=True, text=True)
                    if p.returncode:
                        print("FAIL: %s: onnxc compile --target cuda: %s" %
                              (case.name, p.stderr.strip()))
                        failures += 1
                    else:
                        print("ok: %s compiles for --target cuda: %s" % (
                            case.name, " ".join(sorted(os.listdir(d + "/" + case.name + "-cuda")))))
            if have_ort:
                ort_path, label = path, "ONNX Runtime"
                ort_model = with_identities(case.model)
                if ort_model != case.model:
                    ort_path = os.path.join(d, case.name + ".ort.onnx")
                    onnx.save(ort_model, ort_path)
                    label += " (outer values as body outputs through an Identity)"
                failures += check_runs(
                    label, case, outs,
                    lambda inp: ort_outputs(ort_run, d, ort_path, inp, len(outs)),
                    case.rtol, case.atol)
                if not args.ort_only and exported:
                    failures += check_runs(
                        "exported, ONNX Runtime", case, outs,
                        lambda inp: ort_outputs(ort_run, d, exported, inp, len(outs)),
                        case.rtol, case.atol)
        if args.ort_only:
            print("%d failures" % failures)
            return 1 if failures else 0
        for what, (m, inputs, loop_name, why) in refusals().items():
            path = os.path.join(d, loop_name + ".onnx")
            onnx.save(m, path)
            p = subprocess.run([onnxc, "compile", path, "-o", os.path.join(d, loop_name)],
                               capture_output=True, text=True)
            out, err = run_model(onnxc, d, path, inputs)
            msg = p.stderr.strip()
            named = "node '%s' (Loop)" % loop_name
            reason = msg.split(named, 1)[-1].lower()     # what follows the node's name
            if (p.returncode != 1 or named not in msg or not any(w in reason for w in why)
                    or out is not None or named not in err):
                print("FAIL: refusal (%s): compile status %d: %s; run: %s" %
                      (what, p.returncode, msg or "no message", err or "it ran"))
                failures += 1
            else:
                print("ok: refusal (%s): %s" % (what, msg.splitlines()[0]))
    print("%d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
