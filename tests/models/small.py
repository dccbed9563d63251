#!/usr/bin/python3
"""Small hand-built ONNX models for the golden IR tests.

Usage: /usr/bin/python3 tests/models/small.py OUTDIR

Each model isolates one thing the importer must normalize (opset
differences, auto_pad, shape arithmetic, aliasing, tensor encodings ...).
tests/golden/NAME.oir holds the IR that `onnxc ir OUTDIR/NAME.onnx ARGS`
must print, where ARGS come from tests/golden/cases.txt. Deterministic:
no randomness, fixed values.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def model(nodes, inputs, outputs, inits=(), opset=17, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="onnxc-tests")
    m.ir_version = 8 if opset >= 15 else 7 if opset >= 12 else 6 if opset >= 11 else 4
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def cases():
    c = {}

    # torch-style shape arithmetic on a symbolic batch: must fold away
    c["shape_chain"] = model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
         helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
         helper.make_node("Concat", ["b1", "minus1"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [vi("x", F, ["batch", 3, 4])], [vi("y", F, ["batch", 12])],
        [const("zero", np.int64(0)), const("ax0", np.array([0], np.int64)),
         const("minus1", np.array([-1], np.int64))])

    # before opset 13 Softmax flattens to 2-D from its axis
    c["softmax_opset11"] = model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=1)],
        [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])], opset=11)

    c["squeeze_opset11"] = model(
        [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, -1]),
         helper.make_node("Squeeze", ["u"], ["y"], axes=[0])],
        [vi("x", F, [3, 4])], [vi("y", F, [3, 4, 1])], opset=11)

    c["squeeze_opset13"] = model(
        [helper.make_node("Squeeze", ["x"], ["y"])],
        [vi("x", F, [1, 3, 1, 4])], [vi("y", F, [3, 4])], opset=13)

    c["conv_same_upper"] = model(
        [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])],
        [vi("x", F, [1, 2, 7, 8])], [vi("y", F, [1, 4, 4, 4])],
        [const("w", np.arange(4 * 2 * 3 * 3, dtype=np.float32).reshape(4, 2, 3, 3))])

    c["slice_normalize"] = model(
        [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
        [vi("x", F, [10, 6, 5])], [vi("y", F, None)],
        [const("st", np.array([-1, 2, -100], np.int64)),
         const("en", np.array([-9223372036854775807, 9223372036854775807, 100], np.int64)),
         const("ax", np.array([0, 1, 2], np.int64)),
         const("sp", np.array([-3, 1, 2], np.int64))])

    c["clip_forms"] = model(
        [helper.make_node("Clip", ["x", "lo", "hi"], ["a"]),
         helper.make_node("Clip", ["a", "", "hi"], ["y"])],
        [vi("x", F, [4])], [vi("y", F, [4])],
        [const("lo", np.float32(-1.5)), const("hi", np.float32(6.0))], opset=13)

    c["clip_opset9"] = model(
        [helper.make_node("Clip", ["x"], ["y"], min=0.0, max=6.0)],
        [vi("x", F, [4])], [vi("y", F, [4])], opset=9)

    c["reduce_forms"] = model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["a"], keepdims=0),
         helper.make_node("ReduceMean", ["x"], ["b"], axes=[-1, 0]),
         helper.make_node("ReduceMax", ["x"], ["c"]),
         helper.make_node("ReduceSum", ["x"], ["d"], noop_with_empty_axes=1)],
        [vi("x", F, [2, 3, 4])],
        [vi("a", F, [2, 4]), vi("b", F, [1, 3, 1]), vi("c", F, [1, 1, 1]),
         vi("d", F, [2, 3, 4])],
        [const("axes", np.array([-2], np.int64))], opset=13)

    c["fold_generators"] = model(
        [helper.make_node("ConstantOfShape", ["shp"], ["z"],
                          value=helper.make_tensor("v", TensorProto.INT64, [1], [7])),
         helper.make_node("Range", ["r0", "r1", "r2"], ["r"]),
         helper.make_node("Add", ["z", "r"], ["zr"]),
         helper.make_node("Cast", ["zr"], ["zrf"], to=F),
         helper.make_node("Mul", ["x", "zrf"], ["y"])],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
        [const("shp", np.array([2, 3], np.int64)), const("r0", np.int64(10)),
         const("r1", np.int64(1)), const("r2", np.int64(-3))])

    c["split_forms"] = model(
        [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1),
         helper.make_node("Split", ["x", "sizes"], ["d", "e"], axis=-1)],
        [vi("x", F, [2, 6])], [vi("a", F, None), vi("c", F, None), vi("e", F, None)],
        [const("sizes", np.array([1, 5], np.int64))], opset=13)

    c["resize_opset11"] = model(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                          coordinate_transformation_mode="align_corners")],
        [vi("x", F, [1, 1, 4, 4])], [vi("y", F, [1, 1, 7, 9])],
        [const("sizes", np.array([1, 1, 7, 9], np.int64))], opset=11)

    c["upsample_opset9"] = model(
        [helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")],
        [vi("x", F, [1, 1, 2, 3])], [vi("y", F, [1, 1, 4, 6])],
        [const("scales", np.array([1, 1, 2, 2], np.float32))], opset=9)

    # Identity, Dropout and no-op Cast alias their input; outputs that would
    # alias an input or each other get a copy
    c["aliases"] = model(
        [helper.make_node("Identity", ["x"], ["i"]),
         helper.make_node("Dropout", ["i"], ["d"]),
         helper.make_node("Cast", ["d"], ["c"], to=F),
         helper.make_node("Gemm", ["c", "w"], ["g"], transB=1, alpha=0.5)],
        [vi("x", F, [2, 3])],
        [vi("g", F, [2, 4]), vi("c", F, [2, 3]), vi("g2", F, [2, 4])],
        [const("w", np.ones((4, 3), np.float32))], opset=13)
    c["aliases"].graph.output[2].name = "g"

    c["expand_broadcast"] = model(
        [helper.make_node("Expand", ["x", "shape"], ["y"])],
        [vi("x", F, [3, 1])], [vi("y", F, [2, 3, 4])],
        [const("shape", np.array([2, 1, 4], np.int64))])

    c["batchnorm_opset7"] = model(
        [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                          spatial=1, epsilon=1e-3, momentum=0.9)],
        [vi("x", F, [1, 2, 3, 3])], [vi("y", F, [1, 2, 3, 3])],
        [const("s", np.array([1, 2], np.float32)), const("b", np.array([0, 1], np.float32)),
         const("m", np.array([0.5, -0.5], np.float32)),
         const("v", np.array([1, 4], np.float32))], opset=7)

    c["variadic"] = model(
        [helper.make_node("Sum", ["a", "b", "c"], ["s"]),
         helper.make_node("Mean", ["a", "b"], ["m"]),
         helper.make_node("Max", ["a"], ["x"])],
        [vi("a", F, [3]), vi("b", F, [1]), vi("c", F, [3])],
        [vi("s", F, [3]), vi("m", F, [3]), vi("x", F, [3])])

    # the bitwise ops; BitShift's direction becomes left=0/1, and a shift by
    # the width or more folds to 0 (numpy's, so ONNX's reference)
    U8 = TensorProto.UINT8
    c["bitwise_forms"] = model(
        [helper.make_node("BitwiseAnd", ["a", "b"], ["t_and"]),
         helper.make_node("BitwiseOr", ["t_and", "b"], ["t_or"]),
         helper.make_node("BitwiseXor", ["t_or", "a"], ["t_xor"]),
         helper.make_node("BitwiseNot", ["t_xor"], ["t_not"]),
         helper.make_node("BitShift", ["t_not", "b"], ["y"], direction="RIGHT"),
         helper.make_node("BitShift", ["k", "s"], ["k_left"], direction="LEFT"),
         helper.make_node("BitwiseNot", ["k_left"], ["k_not"]),
         helper.make_node("BitShift", ["k_not", "b"], ["z"], direction="LEFT")],
        [vi("a", U8, [3]), vi("b", U8, [3])], [vi("y", U8, [3]), vi("z", U8, [3])],
        [const("k", np.array([3, 3, 3], np.uint8)), const("s", np.array([1, 8, 200], np.uint8))],
        opset=18)

    # CumProd: CumSum's importer, a negative axis normalized
    c["cumprod_forms"] = model(
        [helper.make_node("CumProd", ["x", "ax"], ["y"], exclusive=1, reverse=1)],
        [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], [const("ax", np.int32(-1))], opset=26)

    # the storage types: packed int4 raw data, uint4 packed in int32_data, a
    # float8 initializer; QuantizeLinear to uint4, DequantizeLinear of int4,
    # a saturate=0 cast to float8e5m2 (codes: onnx 1.12 has no names for them)
    i4 = [-8, 7, -1, 0, 3]
    packed = bytes((i4[k] & 15) | ((i4[k + 1] & 15) << 4 if k + 1 < 5 else 0)
                   for k in range(0, 5, 2))
    c["storage_types"] = model(
        [helper.make_node("DequantizeLinear", ["w4", "s"], ["y1"]),
         helper.make_node("Cast", ["x"], ["c8"], to=19, saturate=0),
         helper.make_node("Cast", ["c8"], ["y2"], to=1),
         helper.make_node("QuantizeLinear", ["x", "s", "z4"], ["y3"]),
         helper.make_node("Cast", ["f8"], ["e"], to=1),
         helper.make_node("Mul", ["x", "e"], ["y4"])],
        [vi("x", F, [5])],
        [vi("y1", F, [5]), vi("y2", F, [5]), vi("y3", 21, [5]), vi("y4", F, [5])],
        [TensorProto(name="w4", data_type=22, dims=[5], raw_data=packed),
         TensorProto(name="z4", data_type=21, dims=[], int32_data=[9]),
         TensorProto(name="f8", data_type=17, dims=[5], raw_data=bytes([0x38, 0xfe, 0x7e, 1, 0x80])),
         const("s", np.float32(0.5))],
        opset=21)

    # TopK: k an attribute (1), a constant input (10), largest and sorted
    # (11), a negative axis. (sorted=0 imports the same, but ONNX Runtime
    # then returns its own order, which export.small cannot compare.)
    c["topk_opset1"] = model(
        [helper.make_node("TopK", ["x"], ["v", "i"], k=2)],
        [vi("x", F, [3, 4])], [vi("v", F, [3, 2]), vi("i", TensorProto.INT64, [3, 2])],
        opset=9)
    c["topk_forms"] = model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-2, largest=0, sorted=1)],
        [vi("x", F, [3, 4])], [vi("v", F, [2, 4]), vi("i", TensorProto.INT64, [2, 4])],
        [const("k", np.array([2], np.int64))], opset=11)

    # BitCast: the same bytes as another type of their size; to the same type
    # it is the input itself
    c["bitcast_forms"] = model(
        [helper.make_node("BitCast", ["x"], ["a"], to=TensorProto.INT32),
         helper.make_node("BitCast", ["b"], ["c"], to=TensorProto.UINT8),
         helper.make_node("BitCast", ["x"], ["d"], to=TensorProto.FLOAT)],
        [vi("x", F, [2, 3]), vi("b", TensorProto.BOOL, [4])],
        [vi("a", TensorProto.INT32, [2, 3]), vi("c", TensorProto.UINT8, [4]),
         vi("d", F, [2, 3])], opset=26)

    # nodes listed out of order must be sorted topologically
    c["unsorted"] = model(
        [helper.make_node("Relu", ["t"], ["y"]),
         helper.make_node("Neg", ["x"], ["t"])],
        [vi("x", F, [2])], [vi("y", F, [2])])

    # every tensor encoding: typed fields for each dtype, raw data, fp16 bits
    inits = [
        # make_tensor converts values to float16 / bfloat16 bit patterns itself
        helper.make_tensor("f16", TensorProto.FLOAT16, [2], [1.5, -2.0]),
        helper.make_tensor("bf16", TensorProto.BFLOAT16, [2], [1.0, -0.375]),
        helper.make_tensor("f64", TensorProto.DOUBLE, [2], [0.1, 2.5]),
        helper.make_tensor("i8", TensorProto.INT8, [2], [-128, 127]),
        helper.make_tensor("u8", TensorProto.UINT8, [2], [0, 255]),
        helper.make_tensor("i16", TensorProto.INT16, [1], [-300]),
        helper.make_tensor("u16", TensorProto.UINT16, [1], [65535]),
        helper.make_tensor("i32", TensorProto.INT32, [1], [-70000]),
        helper.make_tensor("u32", TensorProto.UINT32, [1], [4294967295]),
        helper.make_tensor("u64", TensorProto.UINT64, [1], [18446744073709551615]),
        helper.make_tensor("b", TensorProto.BOOL, [3], [True, False, True]),
        helper.make_tensor("raw", F, [2], np.array([0.25, 8], np.float32).tobytes(), raw=True),
    ]
    outs = [helper.make_node("Identity", [t.name], [t.name + "_out"]) for t in inits]
    c["encodings"] = model(outs, [], [vi(t.name + "_out", t.data_type, list(t.dims))
                                      for t in inits], inits)
    # the loss ops: SoftmaxCrossEntropyLoss with weights, an ignore_index
    # (an int32 target), the mean over the applied weights and log_prob;
    # NegativeLogLikelihoodLoss of [N, C] without either, no reduction
    c["loss_sce"] = model(
        [helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["y", "lp"],
                          ignore_index=-1)],
        [vi("x", F, [2, 3, 4]), vi("t", TensorProto.INT32, [2, 4])],
        [vi("y", F, []), vi("lp", F, [2, 3, 4])],
        [const("w", np.array([0.5, 1, 2], np.float32))], opset=13)
    c["loss_nll"] = model(
        [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], reduction="none")],
        [vi("x", F, [3, 5]), vi("t", I64, [3])], [vi("y", F, [3])], opset=13)
    c.update(amp_cases())
    c.update(function_cases())
    c.update(transformer_cases())
    return c


def with_defaults(f, **defaults):
    """f with default attribute values (FunctionProto.attribute_proto, field
    11, newer than onnx 1.12's proto: appended as raw protobuf bytes, which
    the parser keeps as an unknown field)."""
    raw = f.SerializeToString()
    for name, value in defaults.items():
        a = helper.make_attribute(name, value).SerializeToString()
        n, length = len(a), b""
        while True:
            length += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)])
            n >>= 7
            if not n:
                break
        raw += bytes([11 << 3 | 2]) + length + a
    g = onnx.FunctionProto()
    g.ParseFromString(raw)
    return g


def ref_attr(name, ref, kind):
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, kind
    return a


def function_cases():
    """Model-local functions (torch.onnx's dynamo exporter wraps modules in
    them) and If on a constant condition, at opset 18."""
    c = {}
    # pkg.Act(x) = LeakyRelu(x * scale, alpha): alpha refers to the call's
    # attribute "slope" (default 0.25), scale is a tensor of the body; the
    # second call leaves slope to the default. Body tensor names collide
    # with the graph's ("t"), and the body runs at opset 13 while the model
    # is at 18: its ReduceSum takes axes as an input in both, its ReduceMean
    # an attribute inside and an input outside.
    leaky = helper.make_node("LeakyRelu", ["t"], ["u"], name="act")
    leaky.attribute.extend([ref_attr("alpha", "slope", onnx.AttributeProto.FLOAT)])
    act = helper.make_function(
        "pkg", "Act", ["x"], ["y"],
        [helper.make_node("Constant", [], ["scale"], value_float=2.0),
         helper.make_node("Mul", ["x", "scale"], ["t"], name="mul"),
         leaky,
         helper.make_node("ReduceMean", ["u"], ["y"], axes=[1], keepdims=1, name="mean")],
        [helper.make_opsetid("", 13)], ["slope"])
    act = with_defaults(act, slope=0.25)
    # pkg.Twice(x) = Act(Act(x)) with slope 0.5 on the first: a nested call
    first = helper.make_node("Act", ["x"], ["h"], domain="pkg", name="first", slope=0.5)
    twice = helper.make_function(
        "pkg", "Twice", ["x"], ["y"],
        [first, helper.make_node("Act", ["h"], ["y"], domain="pkg", name="second")],
        [helper.make_opsetid("", 18), helper.make_opsetid("pkg", 1)])
    m = model([helper.make_node("Relu", ["x"], ["t"], name="pre"),
               helper.make_node("Twice", ["t"], ["y"], domain="pkg", name="block"),
               helper.make_node("ReduceMean", ["t", "ax"], ["m"], keepdims=0, name="m18")],
              [vi("x", F, [2, 3])], [vi("y", F, [2, 1]), vi("m", F, [2])],
              [const("ax", np.array([1], np.int64))], opset=18)
    m.opset_import.extend([helper.make_opsetid("pkg", 1)])
    m.ir_version = 9
    m.functions.extend([act, twice])
    c["functions"] = m

    # an If inside a function (onnxscript's torch_lib tests IsScalar so),
    # its condition from the call's attribute "flag", its branches reading
    # the body's values; and the graph's own If whose branch calls the
    # function: pkg.Pick(x) = flag ? Neg(x + 1) : Abs(x + 1)
    flag = helper.make_node("Constant", [], ["f"], name="flag")
    flag.attribute.extend([ref_attr("value_int", "flag", onnx.AttributeProto.INT)])
    pick = helper.make_function(
        "pkg", "Pick", ["x"], ["y"],
        [helper.make_node("Constant", [], ["one"], value_float=1.0),
         helper.make_node("Add", ["x", "one"], ["x1"], name="add"),
         flag,
         helper.make_node("Cast", ["f"], ["c"], to=TensorProto.BOOL, name="cond"),
         helper.make_node(
             "If", ["c"], ["y"], name="if",
             then_branch=helper.make_graph([helper.make_node("Neg", ["x1"], ["n"], name="neg")],
                                           "t", [], [vi("n", F, [2])]),
             else_branch=helper.make_graph([helper.make_node("Abs", ["x1"], ["a"], name="abs")],
                                           "e", [], [vi("a", F, [2])]))],
        [helper.make_opsetid("", 18)], ["flag"])
    m = model([helper.make_node("Pick", ["x"], ["p"], domain="pkg", name="p0", flag=0),
               helper.make_node("If", ["yes"], ["y"], name="outer",
                                then_branch=helper.make_graph(
                                    [helper.make_node("Pick", ["p"], ["q"], domain="pkg",
                                                      name="p1", flag=1)],
                                    "t", [], [vi("q", F, [2])]),
                                else_branch=helper.make_graph(
                                    [helper.make_node("Identity", ["p"], ["r"])], "e", [],
                                    [vi("r", F, [2])]))],
              [vi("x", F, [2])], [vi("y", F, [2])],
              [helper.make_tensor("yes", TensorProto.BOOL, [], [True])], opset=18)
    m.opset_import.extend([helper.make_opsetid("pkg", 1)])
    m.ir_version = 9
    m.functions.extend([pick])
    c["functions_if"] = m

    # If on a shape test that folds: the else branch is taken (dim 0 is 2,
    # not 1); it reads x from the outer scope, has an initializer of its
    # own and a nested If, whose condition is a constant too
    inner = helper.make_node(
        "If", ["yes"], ["z"], name="inner",
        then_branch=helper.make_graph([helper.make_node("Neg", ["s"], ["z1"])], "t2", [],
                                      [vi("z1", F, [2, 3])]),
        else_branch=helper.make_graph([helper.make_node("Abs", ["s"], ["z2"])], "e2", [],
                                      [vi("z2", F, [2, 3])]))
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"])], "then", [],
                               [vi("r", F, [2, 3])])
    else_g = helper.make_graph(
        [helper.make_node("Add", ["x", "bias"], ["s"], name="add"), inner], "else", [],
        [vi("z", F, [2, 3])], [const("bias", np.array([1, 2, 3], np.float32))])
    m = model([helper.make_node("Shape", ["x"], ["shp"]),
               helper.make_node("Gather", ["shp", "zero"], ["d0"], axis=0),
               helper.make_node("Equal", ["d0", "one"], ["cond"]),
               helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g,
                                else_branch=else_g)],
              [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
              [const("zero", np.array(0, np.int64)), const("one", np.array(1, np.int64)),
               helper.make_tensor("yes", TensorProto.BOOL, [], [True])], opset=18)
    m.ir_version = 9
    c["if_constant"] = m

    # If on a run-time condition (docs/ir.md, Guards): both branches are
    # imported, each node guarded; the then branch nests an If on a second
    # run-time condition (its guards and-ed with the outer one), the else
    # branch gives an outer value as it is; phis merge the outputs
    inner = helper.make_node(
        "If", ["c2"], ["z"], name="inner",
        then_branch=helper.make_graph([helper.make_node("Neg", ["r"], ["z1"])], "t2", [],
                                      [vi("z1", F, [2, 3])]),
        else_branch=helper.make_graph([helper.make_node("Mul", ["r", "x"], ["z2"])], "e2",
                                      [], [vi("z2", F, [2, 3])]))
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), inner], "then", [],
                               [vi("z", F, [2, 3])])
    else_g = helper.make_graph([], "else", [], [vi("x", F, [2, 3])])
    m = model([helper.make_node("If", ["c1"], ["y0"], name="outer", then_branch=then_g,
                                else_branch=else_g),
               helper.make_node("Sigmoid", ["y0"], ["y"])],
              [vi("x", F, [2, 3]), vi("c1", TensorProto.BOOL, []),
               vi("c2", TensorProto.BOOL, [1])], [vi("y", F, [2, 3])], opset=18)
    m.ir_version = 9
    c["if_runtime"] = m

    # If on a run-time condition whose branches give an output different
    # shapes (docs/ir.md, Outputs of run-time shape): each branch's value
    # flat and padded to the larger count, merged by a phi, the output's
    # shape picked by the condition at the end of a run (y: [2,4] or [2,1];
    # tests/if/check_if.py has ranks that differ); the condition is a
    # bool[1] (read through a view), the second output has one shape
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["t"], name="mm"),
         helper.make_node("Relu", ["x"], ["t2"], name="relu")], "then", [],
        [vi("t", F, [2, 4]), vi("t2", F, [2, 3])])
    else_g = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["e"], name="sum", axes=[1]),
         helper.make_node("Neg", ["x"], ["e2"], name="neg")], "else", [],
        [vi("e", F, [2, 1]), vi("e2", F, [2, 3])])
    m = model([helper.make_node("If", ["c"], ["y", "z"], name="pick", then_branch=then_g,
                                else_branch=else_g)],
              [vi("x", F, [2, 3]), vi("c", TensorProto.BOOL, [1])],
              [vi("y", F, [2, "cols"]), vi("z", F, [2, 3])],
              [const("w", np.arange(12, dtype=np.float32).reshape(3, 4))], opset=11)
    c["if_shapes"] = m

    # Loop whose trip count and condition are known only at run time
    # (docs/ir.md, Loops): one loop around its body, the iteration number
    # carried (the body reads it, and the trip count bounds it), the
    # condition the body computes and-ed with i + 1 < m
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], name="fi", to=F),
         helper.make_node("Mul", ["x_in", "two"], ["x2"], name="x2"),
         helper.make_node("Add", ["x2", "fi"], ["x_out"], name="x_out"),
         helper.make_node("ReduceSum", ["x_out"], ["s"], name="s", keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["go"], name="go")],
        "body", [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
                 vi("x_in", F, [2, 3])],
        [vi("go", TensorProto.BOOL, []), vi("x_out", F, [2, 3])],
        [const("two", np.array(2, np.float32)), const("limit", np.array(100, np.float32))])
    m = model([helper.make_node("Loop", ["m", "c", "x"], ["y0"], name="loop", body=body),
               helper.make_node("Sigmoid", ["y0"], ["y"])],
              [vi("x", F, [2, 3]), vi("m", TensorProto.INT64, []),
               vi("c", TensorProto.BOOL, [])], [vi("y", F, [2, 3])], opset=18)
    m.ir_version = 9
    c["loop_runtime"] = m

    # A Scan too long to unroll (40,000 steps of a 3-node body: past the
    # 100,000 body nodes onnxc unrolls) as a run-time loop: its scan input
    # read by a gather at the iteration number, its scan output (reversed)
    # a carried value each iteration scatters its slice into
    body = helper.make_graph(
        [helper.make_node("Mul", ["s_in", "a"], ["sa"], name="sa"),
         helper.make_node("Add", ["sa", "xt"], ["s_out"], name="s_out"),
         helper.make_node("Tanh", ["s_out"], ["yt"], name="yt")],
        "body", [vi("s_in", F, [2]), vi("xt", F, [2])], [vi("s_out", F, [2]), vi("yt", F, [2])],
        [const("a", np.array([0.5, -0.5], np.float32))])
    m = model([helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], name="scan", body=body,
                                num_scan_inputs=1, scan_output_directions=[1])],
              [vi("s0", F, [2]), vi("xs", F, [40000, 2])],
              [vi("s", F, [2]), vi("ys", F, [40000, 2])], opset=16)
    c["scan_runtime"] = m

    # Resize-18 antialias: 4 -> 2 by 0.5 along H and W, a MatMul by the
    # filter's weights per dimension (H moved last and back); by hand, the
    # stretched triangle at 0.5 gives output 0 taps -1..2 weighted
    # 1/8, 3/8, 3/8, 1/8, tap -1 read at the edge: [1/2, 3/8, 1/8, 0]
    c["resize_antialias"] = model(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear", antialias=1)],
        [vi("x", F, [1, 1, 4, 4])], [vi("y", F, [1, 1, 2, 2])],
        [const("s", np.array([1, 1, 0.5, 0.5], np.float32))], opset=18)
    c["resize_antialias"].ir_version = 8

    # DFT-17, real input, one-sided, dft_length 4 < 5 samples: the first
    # 4 samples (a slice) times a constant [4, 3 bins x 2 parts] matrix
    c["dft_rfft"] = model(
        [helper.make_node("DFT", ["x", "n"], ["y"], onesided=1)],
        [vi("x", F, [2, 5, 1])], [vi("y", F, [2, 3, 2])],
        [const("n", np.array(4, np.int64))], opset=17)

    # DFT-20, complex input, inverse along axis 0 (an input) padded to 3:
    # the axis moved next to the parts and back by transposes
    c["dft_inverse_axis"] = model(
        [helper.make_node("DFT", ["x", "n", "axis"], ["y"], inverse=1)],
        [vi("x", F, [2, 1, 2])], [vi("y", F, [3, 1, 2])],
        [const("n", np.array(3, np.int64)), const("axis", np.array(0, np.int64))], opset=20)
    c["dft_inverse_axis"].ir_version = 9

    # STFT: two frames of 4 every 2 samples gathered by a constant index,
    # times the run-time window, then the one-sided DFT
    c["stft_window"] = model(
        [helper.make_node("STFT", ["x", "step", "w"], ["y"])],
        [vi("x", F, [1, 6, 1]), vi("w", F, [4])], [vi("y", F, [1, 2, 3, 2])],
        [const("step", np.array(2, np.int64))], opset=17)

    # windows, EyeLike, MelWeightMatrix: constants
    c["signal_constants"] = model(
        [helper.make_node("HannWindow", ["four"], ["hann"], periodic=0),
         helper.make_node("EyeLike", ["x"], ["eye"], k=1, dtype=TensorProto.INT32),
         helper.make_node("MelWeightMatrix", ["two", "eight", "rate", "lo", "hi"], ["mel"])],
        [vi("x", F, [2, 3])],
        [vi("hann", F, [4]), vi("eye", TensorProto.INT32, [2, 3]), vi("mel", F, [5, 2])],
        [const("four", np.array(4, np.int64)), const("two", np.array(2, np.int64)),
         const("eight", np.array(8, np.int64)), const("rate", np.array(8000, np.int64)),
         const("lo", np.array(0, np.float32)), const("hi", np.array(4000, np.float32))],
        opset=17)

    # OneHot-11 at axis 0: negative indices wrap (where), compared with
    # 0..2, off and on gathered from the constant values (folded)
    c["onehot_axis0"] = model(
        [helper.make_node("OneHot", ["i", "depth", "vals"], ["y"], axis=0)],
        [vi("i", I64, [2])], [vi("y", F, [3, 2])],
        [const("depth", np.array(3, np.int64)), const("vals", np.array([-1, 5], np.float32))],
        opset=11)

    # AffineGrid 2-D: the constant base grid [H*W, 3] times theta transposed
    c["affine_grid_2d"] = model(
        [helper.make_node("AffineGrid", ["theta", "size"], ["y"], align_corners=1)],
        [vi("theta", F, [1, 2, 3])], [vi("y", F, [1, 2, 3, 2])],
        [const("size", np.array([1, 1, 2, 3], np.int64))], opset=20)
    c["affine_grid_2d"].ir_version = 9

    # ReverseSequence: the gather index from the run-time lengths on the
    # [time, batch] plane, expanded over the last dimension
    c["reverse_sequence"] = model(
        [helper.make_node("ReverseSequence", ["x", "lens"], ["y"])],
        [vi("x", F, [3, 2, 2]), vi("lens", I64, [2])], [vi("y", F, [3, 2, 2])], opset=10)
    return c


def transformer_cases():
    """Transformer ops the importer lowers to several IR ops."""
    c = {}
    H = TensorProto.FLOAT16
    c["gelu_tanh"] = model([helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")],
                           [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=20)
    # half input: the statistics in FP32 (stash_type 1), cast back before the scale
    c["rms_norm_fp16"] = model(
        [helper.make_node("RMSNormalization", ["x", "g"], ["y"], axis=-1, epsilon=1e-6)],
        [vi("x", H, [2, 4])], [vi("y", H, [2, 4])],
        [const("g", np.ones(4, np.float16))], opset=23)
    # interleaved pairs, half the head rotated, positions gathered from the caches
    c["rotary_interleaved_partial"] = model(
        [helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"],
                          interleaved=1, rotary_embedding_dim=4)],
        [vi("x", F, [1, 2, 3, 8]), vi("pos", I64, [1, 3])], [vi("y", F, [1, 2, 3, 8])],
        [const("cos", np.ones((5, 2), np.float32)), const("sin", np.zeros((5, 2), np.float32))],
        opset=23)
    # a diagonal, then a batched contraction
    c["einsum_diagonal"] = model(
        [helper.make_node("Einsum", ["a", "b"], ["y"], equation="bii,bi->b")],
        [vi("a", F, [2, 3, 3]), vi("b", F, [2, 3])], [vi("y", F, [2])], opset=12)
    c["group_norm_18"] = model(
        [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)],
        [vi("x", F, [1, 4, 2])], [vi("y", F, [1, 4, 2])],
        [const("s", np.ones(2, np.float32)), const("b", np.zeros(2, np.float32))], opset=18)
    m = model([helper.make_node("SkipLayerNormalization", ["x", "skip", "g", "b"],
                                ["y", "", "", "sum"], domain="com.microsoft", epsilon=1e-5)],
              [vi("x", F, [1, 2, 4]), vi("skip", F, [1, 2, 4])],
              [vi("y", F, [1, 2, 4]), vi("sum", F, [1, 2, 4])],
              [const("g", np.ones(4, np.float32)), const("b", np.zeros(4, np.float32))])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    c["ms_skip_layer_norm"] = m
    # ai.onnx.preview.training's optimizers, in a model that imports only
    # that domain: Adagrad of one tensor, Nesterov momentum of two
    TR = "ai.onnx.preview.training"
    m = model([helper.make_node("Adagrad", ["r", "t", "x", "g", "h"], ["x1", "h1"], domain=TR,
                                decay_factor=0.1, epsilon=1e-6, norm_coefficient=0.01),
               helper.make_node("Momentum", ["r", "t", "a", "b", "ga", "gb", "va", "vb"],
                                ["a1", "b1", "va1", "vb1"], domain=TR, alpha=0.9, beta=0.5,
                                mode="nesterov", norm_coefficient=0.0)],
              [vi("r", F, []), vi("t", I64, []), vi("x", F, [3]), vi("g", F, [3]),
               vi("h", F, [3]), vi("a", F, [2]), vi("b", F, [2, 2]), vi("ga", F, [2]),
               vi("gb", F, [2, 2]), vi("va", F, [2]), vi("vb", F, [2, 2])],
              [vi("x1", F, [3]), vi("h1", F, [3]), vi("a1", F, [2]), vi("b1", F, [2, 2]),
               vi("va1", F, [2]), vi("vb1", F, [2, 2])])
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid(TR, 1))
    c["optimizers"] = m
    # KV-cache update in circular mode: the positions wrap modulo the cache
    c["tensor_scatter_circular"] = model(
        [helper.make_node("TensorScatter", ["cache", "up", "w"], ["y"], mode="circular")],
        [vi("cache", F, [2, 4, 3]), vi("up", F, [2, 2, 3]), vi("w", I64, [2])],
        [vi("y", F, [2, 4, 3])], opset=24)
    # causal depthwise convolution with SiLU: without a past state the zero
    # context is the convolution's padding
    c["causal_conv_silu"] = model(
        [helper.make_node("CausalConvWithState", ["x", "w"], ["y", "state"], activation="silu")],
        [vi("x", F, [1, 2, 5])], [vi("y", F, [1, 2, 5]), vi("state", F, [1, 2, 2])],
        [const("w", np.ones((2, 1, 3), np.float32))], opset=27)
    # LinearAttention: the default rule (gated_delta) with GQA, a per-head
    # decay, a shared beta, an erase gate and the default scale 1/sqrt(dk);
    # linear with a past state, an explicit scale and chunk_size, and no
    # present_state: the IR takes only the inputs present
    c["linear_attention_forms"] = model(
        [helper.make_node("LinearAttention", ["q", "k", "v", "", "g", "b", "e"], ["y", "s"],
                          q_num_heads=4, kv_num_heads=2),
         helper.make_node("LinearAttention", ["k", "k", "v", "p"], ["y2", ""],
                          q_num_heads=2, kv_num_heads=2, update_rule="linear", scale=0.25,
                          chunk_size=16)],
        [vi("q", F, [1, 3, 16]), vi("k", F, [1, 3, 8]), vi("v", F, [1, 3, 6]),
         vi("g", F, [1, 3, 2]), vi("b", F, [1, 3, 1]), vi("e", F, [1, 3, 8]),
         vi("p", F, [1, 2, 4, 3])],
        [vi("y", F, [1, 3, 12]), vi("s", F, [1, 2, 4, 3]), vi("y2", F, [1, 3, 6])], opset=27)
    # LSTM, GRU and RNN in the IR's one form: an LSTM of layout 1 (x, its
    # initial states and results transposed) with sequence_lens and only
    # Y_h and Y_c used; a bidirectional GRU with linear_before_reset, one
    # direction's activations given (repeated for the other) and their
    # alphas; a reverse RNN with every optional input absent (zero
    # biases and state, full lengths), a clip and only Y used
    rng = np.random.default_rng(11)
    c["rnn_forms"] = model(
        [helper.make_node("LSTM", ["x", "lw", "lr", "lb", "sl", "h0", "c0"], ["", "lh", "lc"],
                          hidden_size=3, layout=1, direction="forward"),
         helper.make_node("GRU", ["xs", "gw", "gr"], ["gy", "gh"], direction="bidirectional",
                          linear_before_reset=1, activations=["HardSigmoid", "LeakyRelu"],
                          activation_alpha=[0.25, 0.1]),
         helper.make_node("RNN", ["xs", "rw", "rr"], ["ry"], direction="reverse", clip=2.5)],
        [vi("x", F, [2, 4, 5]), vi("sl", TensorProto.INT32, [2]), vi("h0", F, [2, 1, 3]),
         vi("c0", F, [2, 1, 3]), vi("xs", F, [4, 2, 5])],
        [vi("lh", F, [2, 1, 3]), vi("lc", F, [2, 1, 3]), vi("gy", F, [4, 2, 2, 3]),
         vi("gh", F, [2, 2, 3]), vi("ry", F, [4, 1, 2, 3])],
        [const("lw", rng.standard_normal((1, 12, 5)).astype(np.float32)),
         const("lr", rng.standard_normal((1, 12, 3)).astype(np.float32)),
         const("lb", rng.standard_normal((1, 24)).astype(np.float32)),
         const("gw", rng.standard_normal((2, 9, 5)).astype(np.float32)),
         const("gr", rng.standard_normal((2, 9, 3)).astype(np.float32)),
         const("rw", rng.standard_normal((1, 3, 5)).astype(np.float32)),
         const("rr", rng.standard_normal((1, 3, 3)).astype(np.float32))], opset=14)
    # Attention (23/24) as the fused IR op: 4-D GQA, causal, softcap and a
    # bool mask shorter than the keys (padded with false); 3-D with a past
    # (concatenated), a float mask and the present outputs (not causal: an
    # offset by the past has no ONNX form without the past, so export would
    # write the explicit ops); nonpad_kv_seqlen with causal and no past (a per-batch
    # frontier joins the mask); qk_matmul_output after the bias (explicit
    # ops beside the fused one)
    c["attention_forms"] = model(
        [helper.make_node("Attention", ["q", "k", "v", "m"], ["y"], is_causal=1, softcap=3.0,
                          scale=0.3),
         helper.make_node("Attention", ["q3", "k3", "v3", "b", "pk", "pv"], ["y3", "pk2", "pv2"],
                          q_num_heads=2, kv_num_heads=2),
         helper.make_node("Attention", ["q", "k", "v", "", "", "", "len"], ["y4"], is_causal=1),
         helper.make_node("Attention", ["q", "k", "v", "b4"], ["y5", "", "", "qk"],
                          qk_matmul_output_mode=2)],
        [vi("q", F, [2, 4, 3, 8]), vi("k", F, [2, 2, 5, 8]), vi("v", F, [2, 2, 5, 6]),
         vi("m", TensorProto.BOOL, [3, 4]), vi("q3", F, [1, 2, 8]), vi("k3", F, [1, 2, 8]),
         vi("v3", F, [1, 2, 6]), vi("b", F, [2, 5]), vi("pk", F, [1, 2, 3, 4]),
         vi("pv", F, [1, 2, 3, 3]), vi("len", I64, [2]), vi("b4", F, [2, 1, 3, 5])],
        [vi("y", F, [2, 4, 3, 6]), vi("y3", F, [1, 2, 6]), vi("pk2", F, [1, 2, 5, 4]),
         vi("pv2", F, [1, 2, 5, 3]), vi("y4", F, [2, 4, 3, 6]), vi("y5", F, [2, 4, 3, 6]),
         vi("qk", F, [2, 4, 3, 5])], opset=24)
    # decomposed attention that passes/attention.c fuses (onnxc ir --codegen):
    #  a: HF BERT: Q.K^T / sqrt(d) + bias, K transposed over the last two axes
    #  b: torch 1.13 MultiheadAttention: the scale on Q, rank 3 [B*H, L, d],
    #     K^T from a transpose that is not a swap (a transpose is inserted)
    #  c: torchlib SDPA: sqrt(scale) on Q and on K^T, a constant causal bool
    #     mask in Where(m, S, -inf) (the causal flag) and a padding mask added
    #  d: softcap c * tanh(S / c), Where(pad, finfo.min, S) (a negated mask
    #     with a finite fill: an FP32 bias), FP32 softmax between f16 casts
    #  e: GQA by unsqueeze-expand-reshape (K and V read in place) and a
    #     bottom-right causal bias of finfo.min (Lq 2 < Lk 4: offset 2)
    #  f: f16 Q.K^T, an FP32 softmax and P.V in FP32 with V widened from f16,
    #     the product narrowed back (FlexAttention's import in half precision)
    L, D = 4, 8
    tri = np.tril(np.ones((L, L), bool))
    br = np.where(np.tril(np.ones((2, 4), bool), k=2), 0, np.finfo(np.float32).min)
    mk = helper.make_node
    c["attention_fused_forms"] = model(
        [mk("Transpose", ["ka"], ["kat"], perm=[0, 1, 3, 2]),
         mk("MatMul", ["qa", "kat"], ["sa"]), mk("Div", ["sa", "sqrtd"], ["sa2"]),
         mk("Add", ["sa2", "biasa"], ["sa3"]), mk("Softmax", ["sa3"], ["pa"], axis=-1),
         mk("MatMul", ["pa", "va"], ["ya"]),
         mk("Mul", ["qb", "invsqrtd"], ["qb2"]), mk("Transpose", ["kb"], ["kbt"], perm=[1, 2, 0]),
         mk("MatMul", ["qb2", "kbt"], ["sb"]), mk("Softmax", ["sb"], ["pb"], axis=2),
         mk("MatMul", ["pb", "vb"], ["yb"]),
         mk("Mul", ["qa", "qrt"], ["qc"]), mk("Transpose", ["ka"], ["kct"], perm=[0, 1, 3, 2]),
         mk("Mul", ["kct", "qrt"], ["kct2"]), mk("MatMul", ["qc", "kct2"], ["sc"]),
         mk("Where", ["tri", "sc", "ninf"], ["sc2"]), mk("Add", ["sc2", "padc"], ["sc3"]),
         mk("Softmax", ["sc3"], ["pc"], axis=3), mk("MatMul", ["pc", "va"], ["yc"]),
         mk("Cast", ["qa"], ["qd"], to=TensorProto.FLOAT16),
         mk("Cast", ["kat"], ["kdt"], to=TensorProto.FLOAT16),
         mk("Cast", ["va"], ["vd"], to=TensorProto.FLOAT16),
         mk("MatMul", ["qd", "kdt"], ["sd"]), mk("Mul", ["sd", "scale16"], ["sd1"]),
         mk("Div", ["sd1", "cap16"], ["sd2"]), mk("Tanh", ["sd2"], ["sd3"]),
         mk("Mul", ["sd3", "cap16"], ["sd4"]), mk("Cast", ["sd4"], ["sd5"], to=F),
         mk("Where", ["pad", "fmin", "sd5"], ["sd6"]), mk("Softmax", ["sd6"], ["pd32"], axis=-1),
         mk("Cast", ["pd32"], ["pd"], to=TensorProto.FLOAT16), mk("MatMul", ["pd", "vd"], ["yd16"]),
         mk("Cast", ["yd16"], ["yd"], to=F),
         mk("Reshape", ["ke"], ["ke1"], allowzero=0), mk("Expand", ["ke1", "rep"], ["ke2"]),
         mk("Reshape", ["ke2", "heads4"], ["ke3"]),
         mk("Reshape", ["ve"], ["ve1"]), mk("Expand", ["ve1", "rep"], ["ve2"]),
         mk("Reshape", ["ve2", "heads4"], ["ve3"]),
         mk("Transpose", ["ke3"], ["ket"], perm=[0, 1, 3, 2]), mk("MatMul", ["qe", "ket"], ["se"]),
         mk("Mul", ["se", "invsqrtd"], ["se2"]), mk("Add", ["se2", "brc"], ["se3"]),
         mk("Softmax", ["se3"], ["pe"], axis=-1), mk("MatMul", ["pe", "ve3"], ["ye"]),
         mk("MatMul", ["qd", "kdt"], ["sf"]), mk("Cast", ["sf"], ["sf1"], to=F),
         mk("Mul", ["sf1", "invsqrtd"], ["sf2"]), mk("Softmax", ["sf2"], ["pf"], axis=-1),
         mk("Cast", ["vd"], ["vf"], to=F), mk("MatMul", ["pf", "vf"], ["yf32"]),
         mk("Cast", ["yf32"], ["yf16"], to=TensorProto.FLOAT16),
         mk("Cast", ["yf16"], ["yf"], to=F)],
        [vi("qa", F, [2, 2, L, D]), vi("ka", F, [2, 2, L, D]), vi("va", F, [2, 2, L, D]),
         vi("biasa", F, [2, 1, 1, L]), vi("qb", F, [4, L, D]), vi("kb", F, [L, 4, D]),
         vi("vb", F, [4, L, 6]), vi("padc", F, [2, 1, 1, L]),
         vi("pad", TensorProto.BOOL, [2, 1, 1, L]), vi("qe", F, [1, 4, 2, D]),
         vi("ke", F, [1, 2, 4, D]), vi("ve", F, [1, 2, 4, D])],
        [vi("ya", F, [2, 2, L, D]), vi("yb", F, [4, L, 6]), vi("yc", F, [2, 2, L, D]),
         vi("yd", F, [2, 2, L, D]), vi("ye", F, [1, 4, 2, D]), vi("yf", F, [2, 2, L, D])],
        [const("sqrtd", np.float32(np.sqrt(D))), const("invsqrtd", np.float32(1 / np.sqrt(D))),
         const("qrt", np.float32(D ** -0.25)), const("tri", tri),
         const("ninf", np.float32(-np.inf)), const("scale16", np.float16(1 / np.sqrt(D))),
         const("cap16", np.float16(5)), const("fmin", np.float32(np.finfo(np.float32).min)),
         const("rep", np.array([1, 2, 2, 4, D], np.int64)),
         const("heads4", np.array([1, 4, 4, D], np.int64)),
         const("brc", br.astype(np.float32))], opset=13)
    # Reshape with one input: fix the two unsqueezes as reshapes with shapes
    for n in c["attention_fused_forms"].graph.node:
        if n.op_type == "Reshape" and len(n.input) == 1:
            n.input.append("split5")
            del n.attribute[:]
    c["attention_fused_forms"].graph.initializer.append(
        const("split5", np.array([1, 2, 1, 4, D], np.int64)))
    # decomposed attention left as it is, each for its reason: the
    # probabilities also a graph output; a softmax over the queries' axis;
    # a scale that is a graph input; a bias added before the scale
    c["attention_refused_forms"] = model(
        [mk("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
         mk("MatMul", ["q", "kt"], ["s1"]), mk("Softmax", ["s1"], ["p1"], axis=-1),
         mk("MatMul", ["p1", "v"], ["y1"]),
         mk("MatMul", ["q", "kt"], ["s2"]), mk("Softmax", ["s2"], ["p2"], axis=2),
         mk("MatMul", ["p2", "v"], ["y2"]),
         mk("MatMul", ["q", "kt"], ["s3"]), mk("Mul", ["s3", "t"], ["s3b"]),
         mk("Softmax", ["s3b"], ["p3"], axis=-1), mk("MatMul", ["p3", "v"], ["y3"]),
         mk("MatMul", ["q", "kt"], ["s4"]), mk("Add", ["s4", "b"], ["s4b"]),
         mk("Mul", ["s4b", "half"], ["s4c"]), mk("Softmax", ["s4c"], ["p4"], axis=-1),
         mk("MatMul", ["p4", "v"], ["y4"])],
        [vi("q", F, [1, 2, L, D]), vi("k", F, [1, 2, L, D]), vi("v", F, [1, 2, L, D]),
         vi("t", F, []), vi("b", F, [1, 1, 1, L])],
        [vi("y1", F, [1, 2, L, D]), vi("p1", F, [1, 2, L, L]), vi("y2", F, [1, 2, L, D]),
         vi("y3", F, [1, 2, L, D]), vi("y4", F, [1, 2, L, D])],
        [const("half", np.float32(0.5))], opset=13)
    # Col2Im with pads and strides: a scatter-add into the padded image, then a slice
    c["col2im_pads"] = model(
        [helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], pads=[1, 0, 1, 0],
                          strides=[2, 1])],
        [vi("x", F, [1, 4, 4])], [vi("y", F, [1, 1, 3, 3])],
        [const("img", np.array([3, 3], np.int64)), const("blk", np.array([2, 2], np.int64))],
        opset=18)
    # GatherND with a batch axis: rows of a 2-D view, the batch's offset added
    c["gathernd_batch"] = model(
        [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
        [vi("x", F, [2, 3, 4]), vi("i", I64, [2, 1])], [vi("y", F, [2, 4])], opset=13)
    # GridSample, RoiAlign, DeformConv (frontend/ops_sample.c): taps per
    # axis, combined into row numbers of [N * pixels, C], one gather
    c["grid_sample_cubic"] = model(
        [helper.make_node("GridSample", ["x", "grid"], ["y"], mode="cubic",
                          padding_mode="reflection")],
        [vi("x", F, [1, 2, 3, 4]), vi("grid", F, [1, 2, 1, 2])], [vi("y", F, [1, 2, 2, 1])],
        opset=20)
    c["grid_sample_cubic"].ir_version = 9
    c["roi_align_max"] = model(
        [helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], mode="max", output_height=2,
                          output_width=1, sampling_ratio=1)],
        [vi("x", F, [2, 1, 4, 4]), vi("rois", F, [1, 4]), vi("bi", I64, [1])],
        [vi("y", F, [1, 1, 2, 1])], opset=16)
    c["deform_conv_mask"] = model(
        [helper.make_node("DeformConv", ["x", "w", "off", "b", "mask"], ["y"])],
        [vi("x", F, [1, 2, 3, 3]), vi("w", F, [1, 2, 2, 1]), vi("off", F, [1, 4, 2, 3]),
         vi("b", F, [1]), vi("mask", F, [1, 2, 2, 3])], [vi("y", F, [1, 1, 2, 3])], opset=19)
    c["deform_conv_mask"].ir_version = 9
    # data-dependent shapes folded at import: a constant condition becomes a
    # gather of its indices; NonZero, Unique and NonMaxSuppression of
    # constants become constants (box 1 overlaps box 0 by IoU 0.82 > 0.5)
    c["dynamic_folded"] = model(
        [helper.make_node("Compress", ["x", "keep"], ["y"], axis=1),
         helper.make_node("NonZero", ["keep"], ["nz"]),
         helper.make_node("Unique", ["u"], ["uy", "ui", "uinv", "uc"], sorted=0),
         helper.make_node("NonMaxSuppression", ["boxes", "scores", "most", "iou"], ["sel"])],
        [vi("x", F, [2, 4])],
        [vi("y", F, [2, 2]), vi("nz", I64, [1, 2]), vi("uy", F, [3]), vi("ui", I64, [3]),
         vi("uinv", I64, [5]), vi("uc", I64, [3]), vi("sel", I64, [2, 3])],
        [const("keep", np.array([False, True, False, True])),
         const("u", np.array([2, 1, 2, 3, 1], np.float32)),
         const("boxes", np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], np.float32)),
         const("scores", np.array([[[0.9, 0.8, 0.7]]], np.float32)),
         const("most", np.array([2], np.int64)), const("iou", np.array([0.5], np.float32))],
        opset=13)
    # QuantizeLinear-21 blocked: the scale and zero point [2, 2] repeated
    # by 2 along axis 1 and cut to x's 3 columns; the division in f32 is
    # an f64 one rounded to f32 (a cast there and back)
    U8 = TensorProto.UINT8
    c["quantize_blocked"] = model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1, block_size=2)],
        [vi("x", F, [2, 3])], [vi("y", U8, [2, 3])],
        [const("s", np.array([[0.5, 2], [1, 4]], np.float32)),
         const("z", np.array([[0, 10], [20, 30]], np.uint8))], opset=21)
    c["quantize_blocked"].ir_version = 10
    # QLinearConv: an im2col of the 4 taps of a 2x2 kernel (pads 1, stride 2)
    # and an f64 MatMul, wrapped to int32 and requantized
    c["qlinear_conv"] = model(
        [helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"], ["y"],
                          pads=[1, 1, 1, 1], strides=[2, 2])],
        [vi("x", U8, [1, 1, 3, 3])], [vi("y", U8, [1, 2, 2, 2])],
        [const("sx", np.float32(0.5)), const("zx", np.uint8(100)),
         const("w", np.array([1, -2, 3, -4, 5, 6, -7, 8], np.int8).reshape(2, 1, 2, 2)),
         const("sw", np.array([0.25, 0.125], np.float32)), const("zw", np.zeros(2, np.int8)),
         const("sy", np.float32(0.75)), const("zy", np.uint8(128))], opset=10)
    return c


def weights(shape, seed):
    """Deterministic weights of a small magnitude (no RNG state involved)."""
    n = int(np.prod(shape))
    return (((np.arange(n) * 7919 + seed * 104729) % 2001 - 1000) / 20000.0).astype(
        np.float32).reshape(shape)


def amp_cases():
    """Graphs that show each mixed-precision traversal (tests/golden/cases.txt
    runs them with --precision mixed and both policies)."""
    c = {}
    # a MatMul too small to gain: its casts cost more than half saves
    c["amp_small_matmul"] = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [vi("x", F, [1, 16])], [vi("y", F, [1, 16])], [const("w", weights((16, 16), 1))])
    # Exp is deny: the Add it feeds stays FP32 (it is infer and lies between
    # Exp and the next allow op); the MatMuls are big enough to gain
    c["amp_exp_add"] = model(
        [helper.make_node("MatMul", ["x", "w1"], ["a"]),
         helper.make_node("Exp", ["a"], ["e"]),
         helper.make_node("Add", ["e", "b"], ["s"]),
         helper.make_node("MatMul", ["s", "w2"], ["y"])],
        [vi("x", F, [512, 512])], [vi("y", F, [512, 512])],
        [const("w1", weights((512, 512), 2)), const("b", weights((512,), 3)),
         const("w2", weights((512, 512), 4))])
    # a loss on half logits: log_softmax (infer) and the picked values feed
    # only deny sums, so the loss is computed in FP32
    c["amp_loss"] = model(
        [helper.make_node("MatMul", ["x", "w"], ["logits"]),
         helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "t", "cw"], ["y"],
                          ignore_index=-100)],
        [vi("x", F, [64, 256]), vi("t", I64, [64])], [vi("y", F, [])],
        [const("w", weights((256, 256), 7)), const("cw", weights((256,), 8) + 1)])
    # a clear op (MaxPool) between two half convolutions follows them
    c["amp_clear_between"] = model(
        [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
         helper.make_node("MaxPool", ["c1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Conv", ["p", "w2"], ["y"], pads=[1, 1, 1, 1])],
        [vi("x", F, [8, 64, 56, 56])], [vi("y", F, [8, 64, 28, 28])],
        [const("w1", weights((64, 64, 3, 3), 5)), const("w2", weights((64, 64, 3, 3), 6))])
    # casts already in the model: an int64 -> FP32 Cast feeding a half MatMul
    # is repainted to cast to half directly; the model's FP32 -> FP16 -> FP32
    # round trip on a result that is now half anyway folds away, and so does
    # the FP16 -> FP32 Cast of a half input read by a half Relu
    c["amp_model_casts"] = model(
        [helper.make_node("Cast", ["ids"], ["idf"], to=F),
         helper.make_node("MatMul", ["idf", "w"], ["a"]),
         helper.make_node("Cast", ["a"], ["a16"], to=TensorProto.FLOAT16),
         helper.make_node("Cast", ["a16"], ["a32"], to=F),
         helper.make_node("MatMul", ["a32", "w2"], ["y"]),
         helper.make_node("Cast", ["h"], ["h32"], to=F),
         helper.make_node("Relu", ["h32"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["z"])],
        [vi("ids", I64, [256, 512]), vi("h", TensorProto.FLOAT16, [256, 512])],
        [vi("y", F, [256, 512]), vi("z", F, [256, 512])],
        [const("w", weights((512, 512), 7)), const("w2", weights((512, 512), 8))])
    # Tensor Core padding: K = 1001 padded to 1008 (weights at compile time,
    # the activation by a Pad node)
    c["amp_gemm_k1001"] = model(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
        [vi("x", F, [512, 1001])], [vi("y", F, [512, 512])],
        [const("w", weights((512, 1001), 9)), const("b", weights((512,), 10))])
    # a first convolution with 3 input channels: padded to 8 at batch 32,
    # where the Tensor Core gain pays for the Pad; not at batch 1
    c["amp_first_conv"] = model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[3, 3, 3, 3], strides=[2, 2]),
         helper.make_node("Relu", ["c"], ["y"])],
        [vi("x", F, ["batch", 3, 224, 224])], [vi("y", F, ["batch", 64, 112, 112])],
        [const("w", weights((64, 3, 7, 7), 11)), const("b", weights((64,), 12))])
    return c


def external_model(outdir):
    """An initializer in an external file next to the model."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    with open(os.path.join(outdir, "external_data.bin"), "wb") as f:
        f.write(b"\0" * 16 + w.tobytes())
    t = TensorProto(name="w", data_type=F, dims=[2, 3])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "external_data.bin"), ("offset", "16"), ("length", "24")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                 [vi("x", F, [1, 2])], [vi("y", F, [1, 3])], [t])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    all_cases = cases()
    all_cases["external"] = external_model(outdir)
    for name, m in all_cases.items():
        with open(os.path.join(outdir, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
