#!/usr/bin/python3
"""Generate onnxc's catalogue of bad / hostile ONNX models.

Usage:
    /usr/bin/python3 tests/bad/make_bad.py OUTDIR

Writes OUTDIR/<case>.onnx for every case listed in tests/bad/cases.txt, plus
the side files some cases need (external data files, a symbolic link that
points outside OUTDIR, a directory, a FIFO).  Every model is rejected by a
correct onnxc with exit status 1 and the diagnostic given in cases.txt;
tests/bad/expect_error.sh checks one case.

Deterministic (no randomness beyond a fixed seed), fast, no network.  Needs
Debian's Python (/usr/bin/python3) for onnx 1.12 and numpy.
"""
import os
import random
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
I64_MAX = 2**63 - 1

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# --------------------------------------------------------------------------
# helpers

def vi(name, dims, dtype=F):
    return helper.make_tensor_value_info(name, dtype, dims)


def model(nodes, inputs, outputs, inits=(), opset=13, ir_version=8, domains=(), **kw):
    g = helper.make_graph(list(nodes), "bad", list(inputs), list(outputs), list(inits))
    ops = [helper.make_opsetid("", opset)] if opset is not None else []
    ops += [helper.make_opsetid(d, v) for d, v in domains]
    m = helper.make_model(g, opset_imports=ops, producer_name="make_bad", **kw)
    m.ir_version = ir_version
    return m


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def relu_model(**kw):
    """x[2,3] -> Relu -> y[2,3]: a valid model that cases then break."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2, 3])], [vi("y", [2, 3])], **kw)


def attr(name, **fields):
    """An AttributeProto built by hand (helper.make_attribute infers types)."""
    a = onnx.AttributeProto()
    a.name = name
    for k, v in fields.items():
        if k in ("ints", "floats", "strings"):
            getattr(a, k).extend(v)
        elif k in ("t", "g"):
            getattr(a, k).CopyFrom(v)
        else:
            setattr(a, k, v)
    return a


def node(op, ins, outs, name, attrs=(), **kw):
    n = helper.make_node(op, ins, outs, name=name, **kw)
    n.attribute.extend(attrs)
    return n


def external_tensor(name, dims, location, offset=None, length=None, dtype=F):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key = k
            e.value = str(v)
    return t


def ext_model(t):
    """y = x + w with w[4] an (external) initializer."""
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                 [vi("x", [4])], [vi("y", [4])], [t])


# raw protobuf encoding, for what onnx.helper cannot express
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire):
    return varint(field << 3 | wire)


def ld(field, payload):
    """A length-delimited field."""
    return tag(field, 2) + varint(len(payload)) + payload


def ld_claim(field, claimed, payload):
    """A length-delimited field whose length prefix lies."""
    return tag(field, 2) + varint(claimed) + payload


IR_VERSION_8 = tag(1, 0) + varint(8)        # ModelProto.ir_version = 8
OPSET_13 = ld(8, ld(1, b"") + tag(2, 0) + varint(13))  # opset_import {domain "" version 13}


# --------------------------------------------------------------------------
# 1. files that are not (complete) ONNX models

# bad_missing_file: nothing is written (the case is that the file is absent)

@case
def bad_empty_file(d):
    return b""


@case
def bad_random_bytes(d):
    rng = random.Random(1234)
    # starts with a field tag using the reserved wire type 7: never a protobuf
    return bytes([0x0F]) + bytes(rng.randrange(256) for _ in range(4096))


@case
def bad_truncated(d):
    w = numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(8, 8), "w")
    b = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              [vi("x", [2, 8])], [vi("y", [2, 8])], [w]).SerializeToString()
    return b[: len(b) // 2]


@case
def bad_tensor_not_model(d):
    # a TensorProto's bytes: field 2 (data_type) is a varint where ModelProto
    # has a string (producer_name)
    return numpy_helper.from_array(np.ones((3, 3), np.float32), "t").SerializeToString()


@case
def bad_no_graph(d):
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.add().version = 13
    return m


@case
def bad_no_ir_version(d):
    m = relu_model()
    m.ClearField("ir_version")
    return m


@case
def bad_directory(d):
    os.mkdir(os.path.join(d, "bad_directory.onnx"))
    return None


@case
def bad_fifo_model(d):
    os.mkfifo(os.path.join(d, "bad_fifo_model.onnx"))
    return None


@case
def pb_huge_string(d):
    # producer_name claims 2^62 bytes
    return IR_VERSION_8 + ld_claim(2, 1 << 62, b"onnx")


@case
def pb_huge_graph(d):
    # the graph claims a terabyte
    return IR_VERSION_8 + OPSET_13 + ld_claim(7, 1 << 40, ld(1, b""))


@case
def pb_huge_packed_dims(d):
    # graph.initializer[0].dims: a packed repeated int64 field claiming 2^31 bytes
    init = ld(8, b"w") + tag(2, 0) + varint(1) + ld_claim(1, 1 << 31, b"\x01\x02\x03")
    return IR_VERSION_8 + OPSET_13 + ld(7, ld(5, init))


@case
def pb_huge_count_varint(d):
    # a varint that never ends (11 continuation bytes)
    return IR_VERSION_8 + tag(1, 0) + b"\xff" * 11 + b"\x01"


@case
def pb_deep_nesting(d):
    # graph.node.attribute.g.node.attribute.g... nested 40000 graphs deep
    # (about 1 MB); a recursive decoder without a depth limit overflows its
    # stack.  Built outside-in with precomputed lengths (linear time).
    depth = 40000
    # messages from the innermost out: graph, attr, node, graph, attr, node, ...
    # innermost graph is empty; each wrapper: tag + varint(len(inner)) + inner
    fields = []                      # outermost first, the field number wrapping the next message
    fields.append(7)                 # ModelProto.graph
    for _ in range(depth):
        fields += [1, 5, 6]          # GraphProto.node, NodeProto.attribute, AttributeProto.g
    n = len(fields)
    sizes = [0] * n                  # sizes[i]: bytes of the message inside fields[i]
    for i in range(n - 2, -1, -1):
        sizes[i] = len(tag(fields[i + 1], 2)) + len(varint(sizes[i + 1])) + sizes[i + 1]
    out = bytearray(IR_VERSION_8 + OPSET_13)
    for i, f in enumerate(fields):
        out += tag(f, 2) + varint(sizes[i])
    return bytes(out)


# --------------------------------------------------------------------------
# 2. opsets, domains, unsupported ops

@case
def opset_too_new(d):
    return relu_model(opset=28)


@case
def opset_too_old(d):
    return relu_model(opset=0)  # no such opset


@case
def op_version_too_old(d):
    # Relu-1 (opset 5) had consumed_inputs; onnxc reads Relu from version 6
    return relu_model(opset=5)


@case
def opset_missing(d):
    return relu_model(opset=None, domains=[("com.microsoft", 1)])


@case
def domain_unsupported(d):
    n = helper.make_node("ATen", ["x"], ["y"], name="aten", domain="org.pytorch.aten")
    return model([n], [vi("x", [2, 2])], [vi("y", [2, 2])], domains=[("org.pytorch.aten", 1)])


@case
def contrib_op_unsupported(d):
    # com.microsoft is accepted for the ops onnxc has; others are refused by name
    n = helper.make_node("FusedGemm", ["x", "x"], ["y"], name="fg", domain="com.microsoft")
    return model([n], [vi("x", [2, 2])], [vi("y", [2, 2])], domains=[("com.microsoft", 1)])


@case
def nonzero_runtime(d):
    n = helper.make_node("NonZero", ["x"], ["y"], name="nz")
    return model([n], [vi("x", [2, 2])], [vi("y", [2, 4], I64)])


@case
def sequence_op(d):
    n = helper.make_node("SplitToSequence", ["x"], ["s"], name="split")
    return model([n], [vi("x", [2, 2])], [helper.make_tensor_sequence_value_info("s", F, [1, 2])])


@case
def scatternd_max_opset16(d):
    # max and min reductions came in opset 18
    n = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="snd", reduction="max")
    return model([n], [vi("x", [4, 3]), vi("i", [2, 1], I64), vi("u", [2, 3])], [vi("y", [4, 3])],
                 opset=16)


@case
def roialign_adaptive_runtime(d):
    # sampling_ratio 0 takes ceil(roi size / bins) samples: it depends on the rois' values
    n = helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], name="roi", output_height=2,
                         output_width=2)
    return model([n], [vi("x", [1, 1, 4, 4]), vi("rois", [1, 4]), vi("bi", [1], I64)],
                 [vi("y", [1, 1, 2, 2])], opset=16)


@case
def gridsample_linear_opset16(d):
    # GridSample-16 calls it bilinear; linear came with opset 20
    n = helper.make_node("GridSample", ["x", "g"], ["y"], name="gs", mode="linear")
    return model([n], [vi("x", [1, 1, 2, 2]), vi("g", [1, 1, 1, 2])], [vi("y", [1, 1, 1, 1])],
                 opset=16)


@case
def gridsample_volumetric_opset16(d):
    n = helper.make_node("GridSample", ["x", "g"], ["y"], name="gs")
    return model([n], [vi("x", [1, 1, 2, 2, 2]), vi("g", [1, 1, 1, 1, 3])],
                 [vi("y", [1, 1, 1, 1, 1])], opset=16)


@case
def gridsample_int_linear(d):
    n = helper.make_node("GridSample", ["x", "g"], ["y"], name="gs")
    return model([n], [vi("x", [1, 1, 2, 2], TensorProto.INT32), vi("g", [1, 1, 1, 2])],
                 [vi("y", [1, 1, 1, 1], TensorProto.INT32)], opset=16)


@case
def deformconv_bad_offset(d):
    n = helper.make_node("DeformConv", ["x", "w", "off"], ["y"], name="dc")
    return model([n], [vi("x", [1, 1, 3, 3]), vi("w", [1, 1, 2, 2]), vi("off", [1, 4, 2, 2])],
                 [vi("y", [1, 1, 2, 2])], opset=19)


@case
def gelu_bad_approximate(d):
    n = helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="fast")
    return model([n], [vi("x", [2, 2])], [vi("y", [2, 2])], opset=20)


@case
def op_unsupported(d):
    n = helper.make_node("NoSuchOp", ["x"], ["y"], name="nso")
    return model([n], [vi("x", [1, 4, 4])], [vi("y", [4, 3], I64)])


def _optimizer(op, inputs, outputs, **attrs):
    n = helper.make_node(op, inputs, outputs, name="opt", domain="ai.onnx.preview.training",
                         **attrs)
    # R and T are scalars (T an int64), the tensors [2]
    scalar = {"r": F, "t": I64}
    return model([n], [vi(x, [] if x in scalar else [2], scalar.get(x, F))
                       for x in dict.fromkeys(inputs)],
                 [vi(y, [2]) for y in outputs], domains=[("ai.onnx.preview.training", 1)],
                 opset=None)


@case
def momentum_bad_mode(d):
    return _optimizer("Momentum", ["r", "t", "x", "g", "v"], ["x1", "v1"], alpha=0.9, beta=0.9,
                      norm_coefficient=0.0, mode="adam")


@case
def momentum_no_alpha(d):
    return _optimizer("Momentum", ["r", "t", "x", "g", "v"], ["x1", "v1"], beta=0.9,
                      norm_coefficient=0.0, mode="standard")


@case
def adam_inputs(d):
    return _optimizer("Adam", ["r", "t", "x", "g", "v", "h", "w"], ["x1", "v1", "h1"])


@case
def nms_runtime(d):
    # boxes computed at run time: which are selected is not known to onnxc
    n = helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms")
    return model([n], [vi("boxes", [1, 4, 4]), vi("scores", [1, 1, 4])], [vi("sel", [4, 3], I64)])


@case
def op_too_new_for_opset(d):
    n = helper.make_node("Trilu", ["x"], ["y"], name="tri")
    return model([n], [vi("x", [3, 3])], [vi("y", [3, 3])], opset=13)


@case
def function_recursive(d):
    # F calls G calls F: refused, naming the call inside G
    f = helper.make_function("pkg", "F", ["a"], ["b"],
                             [helper.make_node("G", ["a"], ["b"], domain="pkg", name="g")],
                             [helper.make_opsetid("", 18), helper.make_opsetid("pkg", 1)])
    g = helper.make_function("pkg", "G", ["a"], ["b"],
                             [helper.make_node("F", ["a"], ["b"], domain="pkg", name="f")],
                             [helper.make_opsetid("", 18), helper.make_opsetid("pkg", 1)])
    m = model([helper.make_node("F", ["x"], ["y"], name="call", domain="pkg")],
              [vi("x", [2])], [vi("y", [2])], opset=18)
    m.opset_import.extend([helper.make_opsetid("pkg", 1)])
    m.functions.extend([f, g])
    return m


@case
def function_unsupported_inside(d):
    # an unsupported op inside a function: named by the call and the inner node
    f = helper.make_function("pkg", "F", ["a"], ["b"],
                             [helper.make_node("NoSuchOp", ["a"], ["b"], name="nso")],
                             [helper.make_opsetid("", 18)])
    m = model([helper.make_node("F", ["x"], ["y"], name="call", domain="pkg")],
              [vi("x", [2])], [vi("y", [2])], opset=18)
    m.opset_import.extend([helper.make_opsetid("pkg", 1)])
    m.functions.extend([f])
    return m


@case
def if_runtime_shapes_differ(d):
    # branches of a run-time condition may give an output different shapes
    # only where it is a graph output nothing reads (docs/ir.md, Outputs of
    # run-time shape)
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [vi("t", [2])])
    else_g = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["e"], axis=0)],
                               "else", [], [vi("e", [4])])
    c = vi("c", [], TensorProto.BOOL)
    return model([helper.make_node("If", ["c"], ["b"], name="branch", then_branch=then_g,
                                   else_branch=else_g),
                  helper.make_node("Neg", ["b"], ["y"], name="reader")],
                 [vi("x", [2]), c], [vi("y", None)], opset=18)


@case
def if_runtime_dtypes_differ(d):
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [vi("t", [2])])
    else_g = helper.make_graph([helper.make_node("Cast", ["x"], ["e"], to=TensorProto.INT64)],
                               "else", [], [vi("e", [2], TensorProto.INT64)])
    c = vi("c", [1], TensorProto.BOOL)
    return model([helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g,
                                   else_branch=else_g)],
                 [vi("x", [2]), c], [vi("y", None)], opset=18)


@case
def op_empty_op_type(d):
    return model([helper.make_node("", ["x"], ["y"], name="anon")],
                 [vi("x", [2])], [vi("y", [2])])


def _three_unsupported():
    nodes = [
        helper.make_node("NoSuchOp", ["x", "x"], ["a"], name="first_nso"),
        helper.make_node("Relu", ["a"], ["b"], name="fine_relu"),
        helper.make_node("Inverse", ["b"], ["c"], name="second_inverse", domain="com.microsoft"),
        helper.make_node("StringNormalizer", ["c"], ["y"], name="third_strings"),
    ]
    return model(nodes, [vi("x", [2, 2])], [vi("y", [])], domains=[("com.microsoft", 1)])


@case
def three_unsupported(d):
    return _three_unsupported()


@case
def three_unsupported_1(d):
    return _three_unsupported()


@case
def three_unsupported_2(d):
    return _three_unsupported()


@case
def three_unsupported_3(d):
    return _three_unsupported()


# --------------------------------------------------------------------------
# 3. initializers

def init_model(t, shape=(2, 3)):
    """y = x + w for initializer w."""
    return model([helper.make_node("Add", ["x", t.name], ["y"], name="add")],
                 [vi("x", list(shape))], [vi("y", list(shape))], [t])


@case
def init_negative_dim(d):
    t = TensorProto(name="w", data_type=F, dims=[2, -3], raw_data=b"")
    return init_model(t)


@case
def init_dims_overflow(d):
    t = TensorProto(name="w", data_type=F, dims=[1 << 32, 1 << 32], raw_data=b"")
    return init_model(t)


@case
def init_bytes_overflow(d):
    # 2^61 elements fit in int64, but not 2^61 * 4 bytes
    t = TensorProto(name="w", data_type=F, dims=[1 << 31, 1 << 30], raw_data=b"")
    return init_model(t)


@case
def init_over_const_limit(d):
    # 32 GiB declared, 0 bytes present
    t = TensorProto(name="w", data_type=F, dims=[1 << 31, 4], raw_data=b"")
    return init_model(t)


@case
def init_raw_data_short(d):
    t = TensorProto(name="w", data_type=F, dims=[2, 3], raw_data=b"\0" * 8)
    return init_model(t)


@case
def init_float_data_count(d):
    t = TensorProto(name="w", data_type=F, dims=[2, 3], float_data=[1, 2, 3, 4, 5])
    return init_model(t)


@case
def init_int64_data_count(d):
    t = TensorProto(name="w", data_type=I64, dims=[3], int64_data=[1, 2, 3, 4])
    m = model([helper.make_node("Reshape", ["x", "w"], ["y"], name="rs")],
              [vi("x", [6])], [vi("y", [1, 2, 3])], [t])
    return m


@case
def init_string_dtype(d):
    t = helper.make_tensor("w", TensorProto.STRING, [2], [b"a", b"b"])
    return init_model(t, (2,))


@case
def init_unknown_dtype(d):
    t = TensorProto(name="w", data_type=99, dims=[2], raw_data=b"\0\0")
    return init_model(t, (2,))


@case
def init_rank_too_big(d):
    t = helper.make_tensor("w", F, [1] * 9, [1.0])
    return init_model(t, (1,))


@case
def init_segment(d):
    t = helper.make_tensor("w", F, [2, 3], [0.0] * 6)
    t.segment.begin = 0
    t.segment.end = 6
    return init_model(t)


@case
def init_twice(d):
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                 [vi("x", [2])], [vi("y", [2])],
                 [const("w", np.ones(2, np.float32)), const("w", np.zeros(2, np.float32))])


@case
def init_no_name(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2])], [vi("y", [2])], [const("", np.ones(2, np.float32))])


@case
def init_sparse(d):
    m = relu_model()
    sp = helper.make_sparse_tensor(helper.make_tensor("sv", F, [1], [1.0]),
                                   helper.make_tensor("si", I64, [1], [0]), [4])
    m.graph.sparse_initializer.extend([sp])
    return m


# --------------------------------------------------------------------------
# 4. graph inputs and --shape / --dim

@case
def input_negative_dim(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2, -3])], [vi("y", [2, 3])])


def sym_model():
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", ["batch", 3, 4, 4])], [vi("y", ["batch", 3, 4, 4])])


@case
def input_unbound_dim(d):
    return sym_model()


@case
def input_shape_wrong_rank(d):
    return sym_model()


@case
def input_shape_wrong_dim(d):
    return sym_model()


@case
def input_shape_unknown_input(d):
    return sym_model()


@case
def input_shape_dim_disagree(d):
    return sym_model()


@case
def input_no_shape(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [helper.make_tensor_value_info("x", F, None)], [vi("y", [2])])


@case
def input_string_dtype(d):
    return model([helper.make_node("Identity", ["x"], ["y"], name="id")],
                 [vi("x", [2], TensorProto.STRING)], [vi("y", [2], TensorProto.STRING)])


@case
def input_sequence(d):
    seq = helper.make_value_info("x", helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(F, [2])))
    return model([helper.make_node("Identity", ["x"], ["y"], name="id")], [seq], [vi("y", [2])])


@case
def input_rank_too_big(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [1] * 9)], [vi("y", [1] * 9)])


@case
def input_elems_overflow(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [1 << 40, 1 << 40])], [vi("y", [1 << 40, 1 << 40])])


@case
def input_declared_twice(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2]), vi("x", [2])], [vi("y", [2])])


@case
def input_no_name(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2]), vi("", [2])], [vi("y", [2])])


# --------------------------------------------------------------------------
# 5. graph structure

@case
def graph_undefined_input(d):
    return model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")],
                 [vi("x", [2])], [vi("y", [2])])


@case
def graph_duplicate_output(d):
    nodes = [helper.make_node("Relu", ["x"], ["t"], name="first"),
             helper.make_node("Neg", ["x"], ["t"], name="second"),
             helper.make_node("Abs", ["t"], ["y"], name="third")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])])


@case
def graph_output_shadows_input(d):
    return model([helper.make_node("Relu", ["x"], ["x"], name="relu")],
                 [vi("x", [2])], [vi("x", [2])])


@case
def graph_cycle(d):
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="n_a"),
             helper.make_node("Relu", ["a"], ["b"], name="n_b"),
             helper.make_node("Neg", ["a"], ["y"], name="n_y")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])])


@case
def graph_self_loop(d):
    return model([helper.make_node("Add", ["x", "y"], ["y"], name="loop")],
                 [vi("x", [2])], [vi("y", [2])])


@case
def graph_output_not_produced(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2])], [vi("y", [2]), vi("z", [2])])


@case
def graph_no_outputs(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2])], [])


@case
def graph_output_wrong_dtype(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2])], [vi("y", [2], I64)])


@case
def graph_output_wrong_rank(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2])], [vi("y", [2, 1])])


@case
def graph_output_wrong_dim(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x", [2, 3])], [vi("y", [2, 4])])


@case
def graph_extra_output(d):
    # Relu has one output; a second one is never bound
    return model([helper.make_node("Relu", ["x"], ["y", "z"], name="relu")],
                 [vi("x", [2])], [vi("y", [2])])


@case
def graph_extra_output_shape(d):
    return model([helper.make_node("Shape", ["x"], ["y", "z"], name="shape")],
                 [vi("x", [2])], [vi("y", [1], I64)])


# --------------------------------------------------------------------------
# 6. attributes

@case
def attr_conv_group_float(d):
    w = const("w", np.ones((4, 3, 3, 3), np.float32))
    n = node("Conv", ["x", "w"], ["y"], "conv", [attr("group", type=onnx.AttributeProto.FLOAT, f=1.0)])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w])


@case
def attr_transpose_perm_string(d):
    n = node("Transpose", ["x"], ["y"], "tr",
             [attr("perm", type=onnx.AttributeProto.STRING, s=b"1,0")])
    return model([n], [vi("x", [2, 3])], [vi("y", [3, 2])])


@case
def attr_unknown(d):
    n = node("Relu", ["x"], ["y"], "relu", [attr("frobnicate", type=onnx.AttributeProto.INT, i=1)])
    return model([n], [vi("x", [2])], [vi("y", [2])])


@case
def attr_no_name(d):
    n = node("Relu", ["x"], ["y"], "relu", [attr("", type=onnx.AttributeProto.INT, i=1)])
    return model([n], [vi("x", [2])], [vi("y", [2])])


@case
def attr_duplicate(d):
    n = node("Concat", ["x", "x"], ["y"], "cat",
             [attr("axis", type=onnx.AttributeProto.INT, i=0),
              attr("axis", type=onnx.AttributeProto.INT, i=1)])
    return model([n], [vi("x", [2, 3])], [vi("y", [4, 3])])


@case
def attr_ref_attr_name(d):
    n = node("Concat", ["x", "x"], ["y"], "cat",
             [attr("axis", type=onnx.AttributeProto.INT, ref_attr_name="ax")])
    return model([n], [vi("x", [2, 3])], [vi("y", [4, 3])])


@case
def attr_string_nul(d):
    w = const("w", np.ones((4, 3, 3, 3), np.float32))
    n = node("Conv", ["x", "w"], ["y"], "conv",
             [attr("auto_pad", type=onnx.AttributeProto.STRING, s=b"VALID\0junk")])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w])


@case
def attr_bad_auto_pad(d):
    w = const("w", np.ones((4, 3, 3, 3), np.float32))
    n = node("Conv", ["x", "w"], ["y"], "conv",
             [attr("auto_pad", type=onnx.AttributeProto.STRING, s=b"SAME_MIDDLE")])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w])


@case
def attr_constant_tensor_missing(d):
    # Constant 'value' declared TENSOR but the tensor itself is absent
    n = node("Constant", [], ["c"], "const", [attr("value", type=onnx.AttributeProto.TENSOR)])
    return model([n, helper.make_node("Add", ["x", "c"], ["y"], name="add")],
                 [vi("x", [2])], [vi("y", [2])])


@case
def attr_constant_two_values(d):
    n = node("Constant", [], ["c"], "const",
             [attr("value_float", type=onnx.AttributeProto.FLOAT, f=1.0),
              attr("value_int", type=onnx.AttributeProto.INT, i=1)])
    return model([n, helper.make_node("Add", ["x", "c"], ["y"], name="add")],
                 [vi("x", [])], [vi("y", [])])


@case
def attr_constant_bad_tensor(d):
    n = node("Constant", [], ["c"], "const",
             [attr("value", type=onnx.AttributeProto.TENSOR,
                   t=TensorProto(name="v", data_type=F, dims=[2], raw_data=b"\0\0\0"))])
    return model([n, helper.make_node("Add", ["x", "c"], ["y"], name="add")],
                 [vi("x", [2])], [vi("y", [2])])


@case
def attr_cast_to_string(d):
    n = helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.STRING)
    return model([n], [vi("x", [2])], [vi("y", [2], TensorProto.STRING)])


@case
def attr_cast_to_truncated(d):
    # to = 2^32 + 1 is no ONNX type; truncating it to int gives FLOAT (1)
    n = helper.make_node("Cast", ["x"], ["y"], name="cast", to=(1 << 32) + 1)
    return model([n], [vi("x", [2], I64)], [vi("y", [2])])


# --------------------------------------------------------------------------
# 7. shape errors in ops

@case
def conv_group_mismatch(d):
    w = const("w", np.ones((4, 1, 3, 3), np.float32))
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=2)
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w])


@case
def conv_kernel_shape_mismatch(d):
    w = const("w", np.ones((4, 3, 3, 3), np.float32))
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[5, 5])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 4, 4])], [w])


@case
def conv_weight_rank(d):
    w = const("w", np.ones((4, 3), np.float32))
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv")
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], [w])


@case
def conv_kernel_too_big(d):
    w = const("w", np.ones((4, 3, 9, 9), np.float32))
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv")
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 1, 1])], [w])


@case
def conv_zero_stride(d):
    w = const("w", np.ones((4, 3, 3, 3), np.float32))
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", strides=[0, 1])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w])


@case
def conv_group_overflow(d):
    # zero channels: every group divides them, then weight C * group overflows
    w = TensorProto(name="w", data_type=F, dims=[0, 4, 3, 3], raw_data=b"")
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=1 << 62)
    return model([n], [vi("x", [1, 0, 8, 8])], [vi("y", [1, 0, 6, 6])], [w])


@case
def conv_dilation_overflow(d):
    w = const("w", np.ones((4, 3, 3, 3), np.float32))
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", dilations=[1 << 62, 1])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w])


@case
def conv_pads_overflow(d):
    w = const("w", np.ones((4, 3, 3, 3), np.float32))
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[I64_MAX, 0, I64_MAX, 0])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [w])


@case
def conv_same_stride_overflow(d):
    w = const("w", np.ones((4, 3, 3, 3), np.float32))
    n = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", auto_pad="SAME_UPPER",
                         strides=[I64_MAX, 1])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 7, 8])], [w])


@case
def conv_transpose_stride_overflow(d):
    w = const("w", np.ones((3, 4, 3, 3), np.float32))
    n = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="convt",
                         auto_pad="SAME_UPPER", strides=[1 << 62, 1])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], [w])


@case
def pool_pads_overflow(d):
    n = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[(1 << 62) + 1, 1],
                         pads=[1 << 62, 0, 1 << 62, 0])
    return model([n], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 3, 8, 8])])


@case
def reshape_impossible(d):
    s = const("s", np.array([4, 2], np.int64))
    return model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                 [vi("x", [2, 3])], [vi("y", [4, 2])], [s])


@case
def reshape_infer_impossible(d):
    s = const("s", np.array([4, -1], np.int64))
    return model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                 [vi("x", [2, 3])], [vi("y", [4, 2])], [s])


@case
def reshape_two_minus_one(d):
    s = const("s", np.array([-1, -1], np.int64))
    return model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                 [vi("x", [2, 3])], [vi("y", [2, 3])], [s])


@case
def reshape_shape_runtime(d):
    return model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                 [vi("x", [2, 3]), vi("s", [2], I64)], [vi("y", [3, 2])])


@case
def topk_k_runtime(d):
    return model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="tk")],
                 [vi("x", [2, 3]), vi("k", [1], I64)], [vi("v", [2, 1]), vi("i", [2, 1], I64)],
                 opset=11)


@case
def topk_k_two_values(d):
    k = const("k", np.array([1, 2], np.int64))
    return model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="tk")],
                 [vi("x", [2, 3])], [vi("v", [2, 1]), vi("i", [2, 1], I64)], [k], opset=11)


@case
def topk_k_out_of_range(d):
    return model([helper.make_node("TopK", ["x"], ["v", "i"], name="tk", k=4)],
                 [vi("x", [2, 3])], [vi("v", [2, 4]), vi("i", [2, 4], I64)], opset=9)


def linear_attention(inputs, dims, outs=("y", "s"), opset=27, **attrs):
    """A LinearAttention node 'la' over f32 inputs named as in inputs with
    the shapes dims (a missing name: an omitted input)."""
    attrs.setdefault("q_num_heads", 2)
    attrs.setdefault("kv_num_heads", 2)
    node = helper.make_node("LinearAttention", list(inputs), list(outs), name="la", **attrs)
    return model([node], [vi(n, s) for n, s in zip(inputs, dims) if n],
                 [vi("y", [1, 2, 8]), vi("s", [1, 2, 4, 4])], opset=opset)


QKV = (["q", "k", "v"], [[1, 2, 8], [1, 2, 8], [1, 2, 8]])


@case
def linear_attention_bad_rule(d):
    return linear_attention(*QKV, update_rule="softmax")


@case
def linear_attention_needs_decay(d):
    return linear_attention(QKV[0] + ["", "", "b"], QKV[1] + [None, None, [1, 2, 2]])


@case
def linear_attention_forbids_beta(d):
    return linear_attention(QKV[0] + ["", "", "b"], QKV[1] + [None, None, [1, 2, 2]],
                            update_rule="linear")


@case
def linear_attention_erase_without_delta(d):
    return linear_attention(QKV[0] + ["", "g", "", "e"],
                            QKV[1] + [None, [1, 2, 2], None, [1, 2, 8]], update_rule="gated")


@case
def linear_attention_heads(d):
    return linear_attention(*QKV, update_rule="linear", q_num_heads=3)


@case
def linear_attention_decay_width(d):
    return linear_attention(QKV[0] + ["", "g"], QKV[1] + [None, [1, 2, 3]], update_rule="gated")


@case
def linear_attention_past_shape(d):
    return linear_attention(QKV[0] + ["p"], QKV[1] + [[1, 2, 4, 5]], update_rule="linear")


def lstm(inputs=("x", "w", "r"), dims=([2, 1, 3], [1, 16, 3], [1, 16, 4]), opset=14,
         op="LSTM", outs=("y", "y_h"), dtype=F, **attrs):
    """An LSTM (GRU, RNN) node 'rnn' over inputs named as in inputs with the
    shapes dims (a missing name: an omitted input)."""
    node = helper.make_node(op, list(inputs), list(outs), name="rnn", **attrs)
    return model([node], [vi(n, s, dtype) for n, s in zip(inputs, dims) if n],
                 [vi(o, None, dtype) for o in outs], opset=opset)


@case
def lstm_bad_direction(d):
    return lstm(direction="sideways")


@case
def lstm_bad_activation(d):
    return lstm(activations=["Sigmoid", "Tanh", "Swish"])


@case
def lstm_activation_count(d):
    return lstm(activations=["Sigmoid", "Tanh"])


@case
def lstm_alpha_left_over(d):
    return lstm(activations=["Sigmoid", "Tanh", "Tanh"], activation_alpha=[0.5])


@case
def lstm_hidden_size(d):
    return lstm(hidden_size=5)


@case
def lstm_clip(d):
    return lstm(clip=-1.0)


@case
def lstm_w_shape(d):
    return lstm(dims=([2, 1, 3], [1, 12, 3], [1, 16, 4]))


@case
def gru_layout(d):
    return lstm(op="GRU", dims=([2, 1, 3], [1, 12, 3], [1, 12, 4]), layout=2)


@case
def rnn_double(d):
    return lstm(op="RNN", dims=([2, 1, 3], [1, 4, 3], [1, 4, 4]), dtype=TensorProto.DOUBLE)


@case
def rnn_bidirectional_w(d):
    return lstm(op="RNN", dims=([2, 1, 3], [1, 4, 3], [1, 4, 4]), direction="bidirectional")


# com.microsoft attention ops: what onnxc refuses, by name
I32 = TensorProto.INT32
MS = "com.microsoft"


def ms_attention(op, inputs, outs, ys, inits=(), **attrs):
    """A com.microsoft node 'attn': inputs [(name or '', dims, dtype)]
    (graph inputs unless an initializer of inits has the name), outputs
    outs with the shapes ys."""
    node = helper.make_node(op, [n for n, _, _ in inputs], list(outs), name="attn", domain=MS,
                            **attrs)
    names = {t.name for t in inits}
    return model([node], [vi(n, s, t) for n, s, t in inputs if n and n not in names],
                 [vi(n, s) for n, s in zip(outs, ys) if n], list(inits), opset=17,
                 domains=[(MS, 1)])


def mha(extra=(), outs=("y",), **attrs):
    """MultiHeadAttention, 2 heads of 4: q, k, v [1, 3, 8], then extra."""
    attrs.setdefault("num_heads", 2)
    ins = [("q", [1, 3, 8], F), ("k", [1, 3, 8], F), ("v", [1, 3, 8], F)] + list(extra)
    ys = [[1, 3, 8], [1, 2, 5, 4], [1, 2, 5, 4], [1, 2, 3, 5]]
    return ms_attention("MultiHeadAttention", ins, outs, ys, **attrs)


@case
def mha_past_sequence_length(d):
    return mha([("", 0, F)] * 5 + [("psl", [1], I32)])


@case
def mha_cache_indirection(d):
    return mha([("", 0, F)] * 6 + [("ci", [1, 1, 5], I32)])


@case
def mha_qk_output(d):
    return mha(outs=("y", "", "", "qk"))


@case
def mha_kpm_cumulative(d):
    return mha([("", 0, F), ("m", [5], I32)])


@case
def mha_past_without_present(d):
    return mha([("", 0, F)] * 3 + [("pk", [1, 2, 2, 4], F), ("pv", [1, 2, 2, 4], F)])


@case
def mha_bias_with_bnsh_kv(d):
    ins = [("q", [1, 3, 8], F), ("k", [1, 2, 3, 4], F), ("v", [1, 2, 3, 4], F), ("b", [24], F)]
    return ms_attention("MultiHeadAttention", ins, ["y"], [[1, 3, 8]], num_heads=2)


def bert_attention(extra=(), outs=("y",), **attrs):
    """Attention, 2 heads of 4: x [1, 3, 8] projected by w [8, 24] and b."""
    attrs.setdefault("num_heads", 2)
    w = const("w", np.zeros((8, 24), np.float32))
    b = const("b", np.zeros(24, np.float32))
    ins = [("x", [1, 3, 8], F), ("w", [8, 24], F), ("b", [24], F)] + list(extra)
    return ms_attention("Attention", ins, outs, [[1, 3, 8], [2, 1, 2, 5, 4]], [w, b], **attrs)


@case
def attention_do_rotary(d):
    return bert_attention(do_rotary=1)


@case
def attention_share_buffer(d):
    return bert_attention([("", 0, F), ("past", [2, 1, 2, 8, 4], F)], ("y", "present"),
                          past_present_share_buffer=1)


@case
def attention_mask_4d(d):
    return bert_attention([("m", [1, 1, 8, 8], I32)])


@case
def attention_past_without_present(d):
    return bert_attention([("", 0, F), ("past", [2, 1, 2, 2, 4], F)])


def gqa(extra=(), outs=("y", "pk_out", "pv_out"), total_input=False, **attrs):
    """GroupQueryAttention, 4 query heads and 2 kv heads of 8, one token
    after a past of 4: q [1, 1, 32], k and v [1, 1, 16], total 5 (an
    initializer, or with total_input a graph input), then extra."""
    attrs.setdefault("num_heads", 4)
    attrs.setdefault("kv_num_heads", 2)
    tot = [] if total_input else [const("tot", np.array(5, np.int32))]
    ins = [("q", [1, 1, 32], F), ("k", [1, 1, 16], F), ("v", [1, 1, 16], F),
           ("pk", [1, 2, 4, 8], F), ("pv", [1, 2, 4, 8], F), ("sl", [1], I32),
           ("tot", [], I32)] + list(extra)
    ys = [[1, 1, 32], [1, 2, 5, 8], [1, 2, 5, 8], [1, 4, 1, 5]]
    return ms_attention("GroupQueryAttention", ins, outs, ys, tot, **attrs)


@case
def gqa_position_ids(d):
    return gqa([("", 0, F)] * 2 + [("pos", [1, 1], I64)])


@case
def gqa_quantized_cache(d):
    return gqa(k_quant_type="PER_TENSOR")


@case
def gqa_sliding_window_cache(d):
    return gqa(sliding_window_cache=1, local_window_size=4)


@case
def gqa_qk_output(d):
    return gqa(outs=("y", "pk_out", "pv_out", "qk"), qk_output=1)


@case
def gqa_window_not_causal(d):
    return gqa(causal=0, local_window_size=2)


@case
def gqa_total_runtime(d):
    return gqa(total_input=True)


@case
def gqa_rotary_without_cache(d):
    return gqa(do_rotary=1)


@case
def bitcast_width(d):
    return model([helper.make_node("BitCast", ["x"], ["y"], name="bc", to=TensorProto.DOUBLE)],
                 [vi("x", [2, 2])], [vi("y", [2, 2], TensorProto.DOUBLE)], opset=26)


@case
def bitcast_to_bool(d):
    return model([helper.make_node("BitCast", ["x"], ["y"], name="bc", to=TensorProto.BOOL)],
                 [vi("x", [4], TensorProto.UINT8)], [vi("y", [4], TensorProto.BOOL)], opset=26)


@case
def gather_index_out_of_range(d):
    i = const("i", np.array([0, 5], np.int64))
    return model([helper.make_node("Gather", ["x", "i"], ["y"], name="gather")],
                 [vi("x", [3, 4])], [vi("y", [2, 4])], [i])


@case
def gather_negative_index_out_of_range(d):
    i = const("i", np.array([-4], np.int64))
    return model([helper.make_node("Gather", ["x", "i"], ["y"], name="gather", axis=1)],
                 [vi("x", [3, 3])], [vi("y", [3, 1])], [i])


@case
def gather_const_fold_out_of_range(d):
    data = const("data", np.arange(6, dtype=np.int64))
    i = const("i", np.array([6], np.int64))
    nodes = [helper.make_node("Gather", ["data", "i"], ["g"], name="gather"),
             helper.make_node("Add", ["x", "g"], ["y"], name="add")]
    return model(nodes, [vi("x", [1], I64)], [vi("y", [1], I64)], [data, i])


@case
def gather_elements_out_of_range(d):
    i = const("i", np.array([[0, 7]], np.int64))
    return model([helper.make_node("GatherElements", ["x", "i"], ["y"], name="ge", axis=1)],
                 [vi("x", [2, 3])], [vi("y", [1, 2])], [i])


@case
def scatter_elements_bad_reduction(d):
    i = const("i", np.array([[0, 1]], np.int64))
    return model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="sc", axis=1,
                                   reduction="sum")],
                 [vi("x", [2, 3]), vi("u", [1, 2])], [vi("y", [2, 3])], [i], opset=16)


@case
def scatter_elements_out_of_range(d):
    i = const("i", np.array([[0, -4]], np.int64))
    return model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="sc", axis=1)],
                 [vi("x", [2, 3]), vi("u", [1, 2])], [vi("y", [2, 3])], [i])


@case
def scatter_elements_updates_shape(d):
    return model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="sc", axis=0)],
                 [vi("x", [2, 3]), vi("i", [1, 2], I64), vi("u", [2, 2])], [vi("y", [2, 3])])


@case
def matmul_inner_mismatch(d):
    return model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                 [vi("a", [2, 3]), vi("b", [4, 5])], [vi("y", [2, 5])])


@case
def matmul_dtype_mismatch(d):
    return model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                 [vi("a", [2, 3]), vi("b", [3, 5], TensorProto.DOUBLE)], [vi("y", [2, 5])])


@case
def add_no_broadcast(d):
    return model([helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                 [vi("a", [2, 3]), vi("b", [4])], [vi("y", [2, 3])])


@case
def concat_mismatch(d):
    return model([helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=0)],
                 [vi("a", [2, 3]), vi("b", [2, 4])], [vi("y", [4, 3])])


@case
def concat_axis_out_of_range(d):
    return model([helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=2)],
                 [vi("a", [2, 3]), vi("b", [2, 3])], [vi("y", [4, 3])])


@case
def concat_no_axis(d):
    return model([helper.make_node("Concat", ["a", "b"], ["y"], name="cat")],
                 [vi("a", [2, 3]), vi("b", [2, 3])], [vi("y", [4, 3])])


@case
def concat_axis_int64_min(d):
    # INT64_MIN is a value like any other, not "absent"
    return model([helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=-2**63)],
                 [vi("a", [2, 3]), vi("b", [2, 3])], [vi("y", [4, 3])])


@case
def cast_to_minus_one(d):
    return model([helper.make_node("Cast", ["x"], ["y"], name="cast", to=-1)],
                 [vi("x", [2])], [vi("y", [2])])


@case
def lrn_size_negative(d):
    return model([helper.make_node("LRN", ["x"], ["y"], name="lrn", size=-3)],
                 [vi("x", [1, 2, 3, 3])], [vi("y", [1, 2, 3, 3])])


@case
def depth_to_space_no_blocksize(d):
    return model([helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s")],
                 [vi("x", [1, 4, 2, 2])], [vi("y", [1, 1, 4, 4])])


# names with newlines, CR and ESC must not forge diagnostic lines nor send
# terminal escapes: they are printed escaped
@case
def name_forges_lines(d):
    evil = "n\nname_forges_lines.onnx: error: forged\r\x1b[2J\x9b"
    return model([helper.make_node("Frobnicate", ["x"], ["y"], name=evil)],
                 [vi("x", [2])], [vi("y", [2])])


@case
def name_c1_control(d):
    # U+009B (CSI) as UTF-8 and a lone 0x9b byte: both escaped
    return model([helper.make_node("Frobnicate", ["x"], ["y"], name="c\u009bx")],
                 [vi("x", [2])], [vi("y", [2])])


@case
def split_sizes_mismatch(d):
    s = const("s", np.array([2, 3], np.int64))
    return model([helper.make_node("Split", ["x", "s"], ["a", "b"], name="split", axis=0)],
                 [vi("x", [6])], [vi("a", [2]), vi("b", [3])], [s])


@case
def split_count_mismatch(d):
    s = const("s", np.array([2, 2, 2], np.int64))
    return model([helper.make_node("Split", ["x", "s"], ["a", "b"], name="split", axis=0)],
                 [vi("x", [6])], [vi("a", [2]), vi("b", [2])], [s])


@case
def split_uneven(d):
    return model([helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=0)],
                 [vi("x", [5])], [vi("a", [2]), vi("b", [3])])


@case
def split_sum_overflow(d):
    # opset 11: split is an attribute; the sizes add up past INT64_MAX
    n = helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=0,
                         split=[I64_MAX, I64_MAX])
    return model([n], [vi("x", [6])], [vi("a", [3]), vi("b", [3])], opset=11)


@case
def slice_step_overflow(d):
    # valid ONNX (one element), but the declared output is wrong: the only
    # correct diagnostic is the output mismatch
    c = [const("st", np.array([0], np.int64)), const("en", np.array([5], np.int64)),
         const("ax", np.array([0], np.int64)), const("sp", np.array([I64_MAX], np.int64))]
    n = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="slice")
    return model([n], [vi("x", [5])], [vi("y", [7])], c)


@case
def slice_step_min(d):
    c = [const("st", np.array([4], np.int64)), const("en", np.array([-10], np.int64)),
         const("ax", np.array([0], np.int64)), const("sp", np.array([-I64_MAX - 1], np.int64))]
    n = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="slice")
    return model([n], [vi("x", [5])], [vi("y", [7])], c)


@case
def depth_to_space_huge_block(d):
    n = helper.make_node("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=1 << 32)
    return model([n], [vi("x", [1, 4, 2, 2])], [vi("y", [1, 1, 4, 4])])


@case
def space_to_depth_bad_block(d):
    n = helper.make_node("SpaceToDepth", ["x"], ["y"], name="s2d", blocksize=3)
    return model([n], [vi("x", [1, 1, 4, 4])], [vi("y", [1, 9, 1, 1])])


@case
def transpose_bad_perm(d):
    n = helper.make_node("Transpose", ["x"], ["y"], name="tr", perm=[0, 0])
    return model([n], [vi("x", [2, 3])], [vi("y", [3, 2])])


@case
def squeeze_non_one(d):
    a = const("a", np.array([0], np.int64))
    return model([helper.make_node("Squeeze", ["x", "a"], ["y"], name="sq")],
                 [vi("x", [2, 3])], [vi("y", [3])], [a])


@case
def unsqueeze_axis_twice(d):
    a = const("a", np.array([0, 0], np.int64))
    return model([helper.make_node("Unsqueeze", ["x", "a"], ["y"], name="usq")],
                 [vi("x", [2])], [vi("y", [1, 1, 2])], [a])


@case
def expand_no_broadcast(d):
    s = const("s", np.array([3, 4], np.int64))
    return model([helper.make_node("Expand", ["x", "s"], ["y"], name="ex")],
                 [vi("x", [2, 4])], [vi("y", [3, 4])], [s])


@case
def tile_overflow(d):
    r = const("r", np.array([1 << 62, 4], np.int64))
    return model([helper.make_node("Tile", ["x", "r"], ["y"], name="tile")],
                 [vi("x", [2, 2])], [vi("y", [2, 8])], [r])


@case
def pad_too_negative(d):
    p = const("p", np.array([0, -3, 0, 0], np.int64))
    return model([helper.make_node("Pad", ["x", "p"], ["y"], name="pad")],
                 [vi("x", [2, 2])], [vi("y", [2, 2])], [p])


@case
def constant_of_shape_huge(d):
    s = const("s", np.array([1 << 40, 1 << 40], np.int64))
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos"),
             helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    return model(nodes, [vi("x", [1])], [vi("y", [1])], [s])


@case
def range_too_long(d):
    c = [const("s", np.array(0, np.float32)), const("l", np.array(1e16, np.float32)),
         const("dl", np.array(1, np.float32))]
    nodes = [helper.make_node("Range", ["s", "l", "dl"], ["r"], name="range"),
             helper.make_node("Add", ["x", "r"], ["y"], name="add")]
    return model(nodes, [vi("x", [1])], [vi("y", [1])], c)


@case
def range_zero_delta(d):
    c = [const("s", np.array(0, np.int64)), const("l", np.array(10, np.int64)),
         const("dl", np.array(0, np.int64))]
    nodes = [helper.make_node("Range", ["s", "l", "dl"], ["r"], name="range"),
             helper.make_node("Add", ["x", "r"], ["y"], name="add")]
    return model(nodes, [vi("x", [1], I64)], [vi("y", [1], I64)], c)


@case
def div_by_zero_fold(d):
    c = [const("a", np.array([6], np.int64)), const("b", np.array([0], np.int64))]
    nodes = [helper.make_node("Div", ["a", "b"], ["q"], name="div"),
             helper.make_node("Add", ["x", "q"], ["y"], name="add")]
    return model(nodes, [vi("x", [1], I64)], [vi("y", [1], I64)], c)


@case
def mod_float_fmod0(d):
    return model([helper.make_node("Mod", ["a", "b"], ["y"], name="mod")],
                 [vi("a", [2]), vi("b", [2])], [vi("y", [2])])


@case
def bitshift_bad_direction(d):
    u8 = TensorProto.UINT8
    return model([helper.make_node("BitShift", ["a", "b"], ["y"], name="shift", direction="UP")],
                 [vi("a", [2], u8), vi("b", [2], u8)], [vi("y", [2], u8)], opset=11)


@case
def bitshift_no_direction(d):
    u8 = TensorProto.UINT8
    return model([helper.make_node("BitShift", ["a", "b"], ["y"], name="shift")],
                 [vi("a", [2], u8), vi("b", [2], u8)], [vi("y", [2], u8)], opset=11)


@case
def bitshift_signed(d):
    i8 = TensorProto.INT8
    return model([helper.make_node("BitShift", ["a", "b"], ["y"], name="shift",
                                   direction="LEFT")],
                 [vi("a", [2], i8), vi("b", [2], i8)], [vi("y", [2], i8)], opset=11)


@case
def bitwise_and_float(d):
    return model([helper.make_node("BitwiseAnd", ["a", "b"], ["y"], name="and")],
                 [vi("a", [2]), vi("b", [2])], [vi("y", [2])], opset=18)


@case
def too_few_inputs(d):
    return model([helper.make_node("Add", ["x"], ["y"], name="add")],
                 [vi("x", [2])], [vi("y", [2])])


@case
def dropout_training(d):
    c = [const("r", np.array(0.5, np.float32)), const("t", np.array(True))]
    return model([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop")],
                 [vi("x", [2])], [vi("y", [2])], c)


@case
def dropout_mode_false(d):
    # valid: training_mode=false is inference; the declared output is wrong on purpose
    c = [const("r", np.array(0.5, np.float32)), const("t", np.array(False))]
    return model([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop")],
                 [vi("x", [2])], [vi("y", [3])], c)


@case
def batchnorm_training_outputs(d):
    c = [const(n, np.ones(3, np.float32)) for n in ("s", "b", "m", "v")]
    n = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm"], name="bn")
    return model([n], [vi("x", [1, 3, 2, 2])], [vi("y", [1, 3, 2, 2])], c)


@case
def resize_both_scales_sizes(d):
    c = [const("roi", np.array([], np.float32)),
         const("sc", np.array([1, 1, 2, 2], np.float32)),
         const("sz", np.array([1, 1, 4, 4], np.int64))]
    n = helper.make_node("Resize", ["x", "roi", "sc", "sz"], ["y"], name="resize")
    return model([n], [vi("x", [1, 1, 2, 2])], [vi("y", [1, 1, 4, 4])], c)


def loss_model(op="NegativeLogLikelihoodLoss", x=(3, 5), t=(3,), xtype=F, ttype=I64,
               w=None, opset=13, **attrs):
    """A loss node over x and target t (and weight w): cases break it."""
    inputs = [vi("x", list(x), xtype), vi("t", list(t), ttype)]
    inits = [] if w is None else [const("w", w)]
    n = helper.make_node(op, ["x", "t"] + (["w"] if inits else []), ["y"], name="loss", **attrs)
    return model([n], inputs, [vi("y", [], xtype)], inits, opset=opset)


@case
def loss_bad_reduction(d):
    return loss_model(reduction="avg")


@case
def loss_bf16_before_22(d):
    return loss_model(xtype=TensorProto.BFLOAT16)


@case
def loss_float_target(d):
    return loss_model(op="SoftmaxCrossEntropyLoss", ttype=F)


@case
def loss_target_shape(d):
    return loss_model(x=(3, 5, 2), t=(3, 5))


@case
def loss_weight_shape(d):
    return loss_model(op="SoftmaxCrossEntropyLoss", w=np.ones(4, np.float32))


@case
def upsample_inf_scale_empty(d):
    # scale inf is invalid; with an empty spatial dim 0 * inf is NaN, which
    # slips past the scale check and is converted to int64 (undefined)
    n = helper.make_node("Upsample", ["x"], ["y"], name="up", scales=[1.0, 1.0, float("inf"), 2.0])
    return model([n], [vi("x", [1, 1, 0, 2])], [vi("y", [1, 1, 0, 4])], opset=7)


@case
def quant_output_dtype_int2_opset21(d):
    n = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q",
                         output_dtype=26)  # INT2 is QuantizeLinear-25's (onnx 1.12 has no name)
    return model([n], [vi("x", [2])], [vi("y", [2], 26)],
                 [const("s", np.float32(0.5))], opset=21, ir_version=10)


@case
def quant_float8_zero_point(d):
    z = TensorProto(name="z", data_type=17, raw_data=b"\x38")  # FLOAT8E4M3FN 1.0
    n = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")
    return model([n], [vi("x", [2])], [vi("y", [2], 17)],
                 [const("s", np.float32(0.5)), z], opset=21, ir_version=10)


@case
def float8_add(d):
    n = helper.make_node("Add", ["a", "b"], ["y"], name="add")
    return model([n], [vi("a", [2], 17), vi("b", [2], 17)], [vi("y", [2], 17)],
                 opset=21, ir_version=10)


@case
def float8_trilu(d):
    n = helper.make_node("Trilu", ["a"], ["y"], name="trilu")
    return model([n], [vi("a", [2, 2], 17)], [vi("y", [2, 2], 17)], opset=21, ir_version=10)


@case
def det_order_17(d):
    n = helper.make_node("Det", ["x"], ["y"], name="det")
    return model([n], [vi("x", [17, 17])], [vi("y", [])], opset=22)


@case
def det_not_square(d):
    n = helper.make_node("Det", ["x"], ["y"], name="det")
    return model([n], [vi("x", [2, 3])], [vi("y", [])], opset=22)


@case
def max_roi_pool_rois_shape(d):
    n = helper.make_node("MaxRoiPool", ["x", "r"], ["y"], name="pool", pooled_shape=[2, 2])
    return model([n], [vi("x", [1, 2, 4, 4]), vi("r", [3, 4])], [vi("y", [3, 2, 2, 2])])


@case
def tfidf_strings(d):
    n = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", mode="TF",
                         min_gram_length=1, max_gram_length=1, max_skip_count=0,
                         ngram_counts=[0], ngram_indexes=[0], pool_strings=["a"])
    return model([n], [vi("x", [3], TensorProto.INT64)], [vi("y", [1])])


@case
def tfidf_weights_count(d):
    n = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", mode="TFIDF",
                         min_gram_length=1, max_gram_length=1, max_skip_count=0,
                         ngram_counts=[0], ngram_indexes=[0, 1], pool_int64s=[4, 5],
                         weights=[1.0])
    return model([n], [vi("x", [3], TensorProto.INT64)], [vi("y", [2])])


@case
def cast_e8m0_round_sideways(d):
    n = helper.make_node("Cast", ["x"], ["y"], name="cast", to=24, round_mode="sideways")
    return model([n], [vi("x", [2])], [vi("y", [2], 24)], opset=25, ir_version=11)


@case
def quant_int16_opset13(d):
    n = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")
    return model([n], [vi("x", [2])], [vi("y", [2], TensorProto.INT16)],
                 [const("s", np.float32(0.5)), const("z", np.int16(0))])


@case
def quant_axis_scale_length(d):
    n = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], name="dq", axis=1)
    return model([n], [vi("x", [2, 3], TensorProto.INT8)], [vi("y", [2, 3])],
                 [const("s", np.ones(2, np.float32))])


@case
def matmulinteger_k_too_large(d):
    k = 1 << 37
    n = helper.make_node("MatMulInteger", ["a", "b"], ["y"], name="mmi")
    return model([n], [vi("a", [1, k], TensorProto.UINT8), vi("b", [k, 1], TensorProto.INT8)],
                 [vi("y", [1, 1], TensorProto.INT32)], opset=10)


# --------------------------------------------------------------------------
# 8. external data

def write(d, name, data):
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


@case
def ext_absolute(d):
    return ext_model(external_tensor("w", [4], "/etc/passwd"))


@case
def ext_dotdot(d):
    return ext_model(external_tensor("w", [4], "../w.bin"))


@case
def ext_dotdot_inner(d):
    write(d, "ext_dotdot_inner.bin", b"\0" * 16)
    return ext_model(external_tensor("w", [4], "sub/../../ext_dotdot_inner.bin"))


@case
def ext_symlink_outside(d):
    # a link inside OUTDIR to a file outside it (this script, which exists)
    os.symlink(os.path.abspath(__file__), os.path.join(d, "ext_symlink_outside.bin"))
    return ext_model(external_tensor("w", [4], "ext_symlink_outside.bin"))


@case
def ext_short_file(d):
    write(d, "ext_short_file.bin", b"\0" * 8)
    return ext_model(external_tensor("w", [4], "ext_short_file.bin"))


@case
def ext_offset_past_end(d):
    write(d, "ext_offset_past_end.bin", b"\0" * 16)
    return ext_model(external_tensor("w", [4], "ext_offset_past_end.bin", offset=8))


@case
def ext_offset_huge(d):
    write(d, "ext_offset_huge.bin", b"\0" * 16)
    return ext_model(external_tensor("w", [4], "ext_offset_huge.bin", offset=2**64 - 8))


@case
def ext_missing_file(d):
    return ext_model(external_tensor("w", [4], "ext_missing_file.bin"))


@case
def ext_length_mismatch(d):
    write(d, "ext_length_mismatch.bin", b"\0" * 64)
    return ext_model(external_tensor("w", [4], "ext_length_mismatch.bin", length=8))


@case
def ext_bad_offset(d):
    write(d, "ext_bad_offset.bin", b"\0" * 16)
    return ext_model(external_tensor("w", [4], "ext_bad_offset.bin", offset="-4"))


@case
def ext_no_location(d):
    return ext_model(external_tensor("w", [4], None, offset=0))


@case
def ext_directory(d):
    os.mkdir(os.path.join(d, "ext_directory.dir"))
    return ext_model(external_tensor("w", [4], "ext_directory.dir"))


@case
def ext_fifo(d):
    os.mkfifo(os.path.join(d, "ext_fifo.bin"))
    return ext_model(external_tensor("w", [4], "ext_fifo.bin"))


@case
def ext_constant_attr(d):
    # external data in a Constant's tensor attribute is confined the same way
    t = external_tensor("v", [4], "../../etc/passwd")
    n = node("Constant", [], ["c"], "const", [attr("value", type=onnx.AttributeProto.TENSOR, t=t)])
    return model([n, helper.make_node("Add", ["x", "c"], ["y"], name="add")],
                 [vi("x", [4])], [vi("y", [4])])


# --------------------------------------------------------------------------

# --------------------------------------------------------------------------
# signal ops and ops whose outputs follow from shapes (frontend/ops_signal.c):
# one node 'sig' each, NAME: (op, inputs, graph inputs, initializers, opset,
# attributes); graph inputs are (name, dims, dtype), initializers arrays

I32 = TensorProto.INT32
BOOL = TensorProto.BOOL
SIGNAL_CASES = {
    "signal_const_needed": ("DFT", ["x", "n"], [("x", [1, 4, 1], F), ("n", [], I64)], {}, 17, {}),
    "signal_one_value": ("HannWindow", ["s"], [], {"s": np.array([4, 4], np.int64)}, 17, {}),
    "signal_not_integer": ("OneHot", ["i", "d", "v"], [("i", [2], I64)],
                           {"d": np.array(np.inf, np.float32), "v": np.array([0, 1], np.float32)},
                           11, {}),
    "signal_output_datatype": ("HannWindow", ["s"], [], {"s": np.array(4, np.int64)}, 17,
                               {"output_datatype": BOOL}),
    "signal_fold_budget": ("HannWindow", ["s"], [], {"s": np.array(10**8, np.int64)}, 17, {}),
    "dft_not_float": ("DFT", ["x"], [("x", [1, 4, 1], I32)], {}, 17, {}),
    "dft_parts": ("DFT", ["x"], [("x", [4, 3], F)], {}, 17, {"axis": 0}),
    "dft_axis": ("DFT", ["x"], [("x", [1, 4, 1], F)], {}, 17, {"axis": 2}),
    "dft_zero_length": ("DFT", ["x", "n"], [("x", [1, 4, 1], F)], {"n": np.array(0, np.int64)},
                        17, {}),
    "stft_signal_rank": ("STFT", ["x", "st"], [("x", [6, 1], F)], {"st": np.array(1, np.int64)},
                         17, {}),
    "stft_window_rank": ("STFT", ["x", "st", "w"], [("x", [1, 6, 1], F), ("w", [2, 2], F)],
                         {"st": np.array(1, np.int64)}, 17, {}),
    "stft_window_length": ("STFT", ["x", "st", "w", "fl"], [("x", [1, 6, 1], F), ("w", [4], F)],
                           {"st": np.array(1, np.int64), "fl": np.array(6, np.int64)}, 17, {}),
    "stft_no_frames": ("STFT", ["x", "st", "", "fl"], [("x", [1, 6, 1], F)],
                       {"st": np.array(1, np.int64), "fl": np.array(10, np.int64)}, 17, {}),
    "dft_matrix_size": ("DFT", ["x", "n"], [("x", [1, 8192, 2], F)],
                        {"n": np.array(8192, np.int64)}, 17, {}),
    "dft_max_length": ("DFT", ["x", "n"], [("x", [1, 4, 1], F)],
                       {"n": np.array(2**31, np.int64)}, 17, {}),
    "window_periodic": ("HammingWindow", ["s"], [], {"s": np.array(4, np.int64)}, 17,
                        {"periodic": 2}),
    "window_negative": ("BlackmanWindow", ["s"], [], {"s": np.array(-1, np.int64)}, 17, {}),
    "mel_sample_rate": ("MelWeightMatrix", ["m", "n", "r", "lo", "hi"], [],
                        {"m": np.array(2, np.int64), "n": np.array(8, np.int64),
                         "r": np.array(0, np.int64), "lo": np.array(0, np.float32),
                         "hi": np.array(4000, np.float32)}, 17, {}),
    "mel_not_finite": ("MelWeightMatrix", ["m", "n", "r", "lo", "hi"], [],
                       {"m": np.array(2, np.int64), "n": np.array(8, np.int64),
                        "r": np.array(8000, np.int64), "lo": np.array(0, np.float32),
                        "hi": np.array(np.inf, np.float32)}, 17, {}),
    "mel_band_outside": ("MelWeightMatrix", ["m", "n", "r", "lo", "hi"], [],
                         {"m": np.array(2, np.int64), "n": np.array(8, np.int64),
                          "r": np.array(8000, np.int64), "lo": np.array(0, np.float32),
                          "hi": np.array(16000, np.float32)}, 17, {}),
    "eyelike_rank": ("EyeLike", ["x"], [("x", [2, 2, 2], F)], {}, 17, {}),
    "onehot_rank": ("OneHot", ["i", "d", "v"], [("i", [1] * 8, I64)],
                    {"d": np.array(2, np.int64), "v": np.array([0, 1], np.float32)}, 11, {}),
    "onehot_axis": ("OneHot", ["i", "d", "v"], [("i", [2], I64)],
                    {"d": np.array(2, np.int64), "v": np.array([0, 1], np.float32)}, 11,
                    {"axis": 3}),
    "onehot_bool_indices": ("OneHot", ["i", "d", "v"], [("i", [2], BOOL)],
                            {"d": np.array(2, np.int64), "v": np.array([0, 1], np.float32)}, 11,
                            {}),
    "onehot_values": ("OneHot", ["i", "d", "v"], [("i", [2], I64)],
                      {"d": np.array(2, np.int64), "v": np.array([0, 1, 2], np.float32)}, 11, {}),
    "onehot_depth_huge": ("OneHot", ["i", "d", "v"], [("i", [2], I64)],
                          {"d": np.array(2**40, np.int64), "v": np.array([0, 1], np.float32)},
                          11, {}),
    "onehot_depth": ("OneHot", ["i", "d", "v"], [("i", [2], I64)],
                     {"d": np.array(0, np.int64), "v": np.array([0, 1], np.float32)}, 9, {}),
    "affine_theta": ("AffineGrid", ["t", "s"], [("t", [1, 2, 4], F)],
                     {"s": np.array([1, 1, 2, 2], np.int64)}, 20, {}),
    "affine_size": ("AffineGrid", ["t", "s"], [("t", [1, 2, 3], F)],
                    {"s": np.array([2, 1, 2, 2], np.int64)}, 20, {}),
    "affine_zero_dim": ("AffineGrid", ["t", "s"], [("t", [1, 2, 3], F)],
                        {"s": np.array([1, 1, 0, 2], np.int64)}, 20, {}),
    "affine_size_overflow": ("AffineGrid", ["t", "s"], [("t", [1, 3, 4], F)],
                             {"s": np.array([1, 1, 2**40, 2**40, 2**40], np.int64)}, 20, {}),
    "revseq_rank": ("ReverseSequence", ["x", "l"], [("x", [3], F), ("l", [3], I64)], {}, 10, {}),
    "revseq_axes": ("ReverseSequence", ["x", "l"], [("x", [3, 2], F), ("l", [2], I64)], {}, 10,
                    {"batch_axis": 0}),
    "revseq_lens": ("ReverseSequence", ["x", "l"], [("x", [3, 2], F), ("l", [3], I64)], {}, 10,
                    {}),
}


def signal_case(op, ins, inputs, inits, opset, attrs):
    n = helper.make_node(op, ins, ["y"], name="sig", **attrs)
    return model([n], [vi(name, dims, dt) for name, dims, dt in inputs],
                 [helper.make_tensor_value_info("y", F, None)],
                 [const(k, v) for k, v in inits.items()], opset=opset,
                 ir_version=9 if opset >= 19 else 8)


for _name, _args in SIGNAL_CASES.items():
    CASES[_name] = lambda d, a=_args: signal_case(*a)


# --------------------------------------------------------------------------
# tensor files given with --const: every size computed from a header is
# checked for overflow before anything is read or allocated

def npy_bytes(descr, shape, data=b""):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h += " " * (63 - len(h) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + data


def const_input_model():
    """x[2,3] + c[...] -> y: c is the graph input the cases bind with --const."""
    return model([helper.make_node("Identity", ["c"], ["y"], name="id")],
                 [vi("c", ["n", 1])], [vi("y", ["n", 1])])


@case
def npy_size_overflow(d):
    # (2^62, 1) float32: 2^64 bytes wrap to 0, which matched the empty data
    with open(os.path.join(d, "npy_size_overflow.npy"), "wb") as f:
        f.write(npy_bytes("<f4", "(%d, 1)" % 2**62))
    return const_input_model()


@case
def npy_elems_overflow(d):
    with open(os.path.join(d, "npy_elems_overflow.npy"), "wb") as f:
        f.write(npy_bytes("<f8", "(%d, %d)" % (2**32, 2**32)))
    return const_input_model()


@case
def npy_short_data(d):
    with open(os.path.join(d, "npy_short_data.npy"), "wb") as f:
        f.write(npy_bytes("<f4", "(%d, 1)" % 2**40, b"\0" * 8))
    return const_input_model()


# --- FlexAttention (ai.onnx.preview) and its sub-graphs ---------------------

def flex(score_mod=None, dims=((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8))):
    """A FlexAttention node 'fa' on Q, K, V, with score_mod if given."""
    kw = {"score_mod": score_mod} if score_mod is not None else {}
    n = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], name="fa",
                         domain="ai.onnx.preview", **kw)
    return model([n], [vi(x, d) for x, d in zip("qkv", dims)], [vi("y", None)], opset=26,
                 ir_version=10, domains=[("ai.onnx.preview", 1)])


@case
def flex_score_mod_two_inputs(d):
    g = helper.make_graph([helper.make_node("Add", ["s", "t"], ["o"], name="add")], "mod",
                          [vi("s", None), vi("t", None)], [vi("o", None)])
    return flex(g)


@case
def flex_score_mod_shrinks(d):
    g = helper.make_graph([helper.make_node("ReduceMax", ["s"], ["o"], name="max", keepdims=0)],
                          "mod", [vi("s", None)], [vi("o", None)])
    return flex(g)


@case
def flex_score_mod_bad_op(d):
    g = helper.make_graph([helper.make_node("NoSuchOp", ["s"], ["o"], name="nope")], "mod",
                          [vi("s", None)], [vi("o", None)])
    return flex(g)


@case
def flex_score_mod_int_input(d):
    g = helper.make_graph([helper.make_node("Identity", ["s"], ["o"], name="id")], "mod",
                          [vi("s", None, TensorProto.INT64)], [vi("o", None)])
    return flex(g)


@case
def flex_rank3(d):
    return flex(dims=((2, 4, 8), (2, 4, 8), (2, 4, 8)))


@case
def flex_heads_not_grouped(d):
    return flex(dims=((1, 3, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)))


# --------------------------------------------------------------------------
# Loop and Scan (frontend/ops_loop.c: unrolled when their iterations are known, else
# a loop run at run time, whose carried values keep their types and which stacks no
# scan output)

def loop_model(body_nodes, trip=None, cond=True, trip_input=False, body_out_cond="cond_in",
               y_dtype=F, y_input=False, y_out_dims=(2,), scan=False):
    """y = Loop(trip, cond, y0) with body (i, cond_in, y_in) -> (cond_out, y_out); y0 a
    constant, or a graph input with y_input; with scan, y_out is also a scan output."""
    outs = [vi("cond_out", [], TensorProto.BOOL), vi("y_out", list(y_out_dims), y_dtype)]
    nodes = list(body_nodes) + [helper.make_node("Identity", [body_out_cond], ["cond_out"],
                                                 name="c")]
    if scan:
        nodes.append(helper.make_node("Identity", ["y_out"], ["s_out"], name="s"))
        outs.append(vi("s_out", list(y_out_dims), y_dtype))
    body = helper.make_graph(
        nodes, "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL),
                        vi("y_in", [2], F)], outs)
    inits, inputs = ([], [vi("y0", [2])]) if y_input else ([const("y0", np.zeros(2, np.float32))], [])
    m_name = "" if trip is None and not trip_input else "m"
    if trip_input:
        inputs.append(vi("m", [], TensorProto.INT64))
    elif trip is not None:
        inits.append(const("m", np.int64(trip)))
    c_name = ""
    if cond is not None:
        inits.append(const("c", np.bool_(cond)))
        c_name = "c"
    results = ["y", "ys"] if scan else ["y"]
    graph_outs = [vi("y", [2])] + ([vi("ys", [None, 2])] if scan else [])
    return model([helper.make_node("Loop", [m_name, c_name, "y0"], results, name="loop",
                                   body=body)], inputs, graph_outs, inits, opset=16)


def add_one():
    return [helper.make_node("Constant", [], ["one"], name="one",
                             value=numpy_helper.from_array(np.ones(2, np.float32))),
            helper.make_node("Add", ["y_in", "one"], ["y_out"], name="add")]


@case
def loop_runtime_scan_output(d):
    return loop_model(add_one(), trip_input=True, scan=True)


@case
def loop_runtime_always_true(d):
    return loop_model(add_one(), trip=None, cond=True)


@case
def loop_runtime_changes_shape(d):
    return loop_model([helper.make_node("Concat", ["y_in", "y_in"], ["y_out"], name="cat",
                                        axis=0)], trip_input=True, y_out_dims=(4,))


@case
def loop_too_many_iterations(d):
    # no trip count, a condition that stays true: unrolled until the budget
    # ends, and scan outputs need the number of iterations
    return loop_model(add_one(), trip=None, cond=True, scan=True)


@case
def scan8_too_long(d):
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "a"], ["s_out"], name="add")],
        "body", [vi("s_in", [2]), vi("a", [2])], [vi("s_out", [2])])
    return model([helper.make_node("Scan", ["", "s0", "xa"], ["s"], name="scan", body=body,
                                   num_scan_inputs=1)],
                 [vi("s0", [3, 2]), vi("xa", [3, 40000, 2])], [vi("s", [3, 2])], opset=8)


@case
def loop_never_ends(d):
    return loop_model(add_one(), trip=None, cond=None)


@case
def loop_carried_changes_type(d):
    nodes = [helper.make_node("Cast", ["y_in"], ["y_out"], name="cast", to=TensorProto.DOUBLE)]
    return loop_model(nodes, trip=2, y_dtype=TensorProto.DOUBLE)


@case
def scan_lengths_differ(d):
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "a"], ["t"], name="add"),
         helper.make_node("Add", ["t", "b"], ["s_out"], name="add2")],
        "body", [vi("s_in", [2]), vi("a", [2]), vi("b", [2])], [vi("s_out", [2])])
    return model([helper.make_node("Scan", ["s0", "xa", "xb"], ["s"], name="scan", body=body,
                                   num_scan_inputs=2)],
                 [vi("s0", [2]), vi("xa", [3, 2]), vi("xb", [4, 2])], [vi("s", [2])], opset=16)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_bad.py OUTDIR")
    d = sys.argv[1]
    marker = os.path.join(d, ".make_bad")
    if os.path.isdir(d) and os.listdir(d):
        # clear a previous run's output, but never a folder this script did not make
        if not os.path.exists(marker):
            sys.exit("make_bad.py: %s is not empty and was not made by make_bad.py" % d)
        for name in os.listdir(d):
            p = os.path.join(d, name)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.unlink(p)
    os.makedirs(d, exist_ok=True)
    open(marker, "w").close()
    for name, fn in CASES.items():
        out = fn(d)
        if out is None:
            continue
        if isinstance(out, onnx.ModelProto):
            out = out.SerializeToString()
        with open(os.path.join(d, name + ".onnx"), "wb") as f:
            f.write(out)


if __name__ == "__main__":
    main()
