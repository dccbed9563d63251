"""Decomposed attention blocks as exporters write them, for
check_fusion.py and scripts/bench-attention.

decomposed(batch, heads, seq, d, causal) is torch.onnx's
scaled_dot_product_attention at opset 17: Q.K^T with K transposed over its
last two axes, a scalar scale, for causal a constant lower-triangular bool
mask in Where(mask, S, -inf), Softmax over the keys, the product with V.
Inputs q [batch, heads, seq, d], k and v [batch, heads, seq_k, d] f32;
output y.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def decomposed(batch, heads, seq, d, causal, seq_k=None):
    """seq_k: the keys' length when it is not seq (a decoding step: seq 1);
    the causal mask is then bottom-right aligned, as ONNX Attention's."""
    mk = helper.make_node
    seq_k = seq if seq_k is None else seq_k
    shape = [batch, heads, seq, d]
    kv_shape = [batch, heads, seq_k, d]
    nodes = [mk("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             mk("MatMul", ["q", "kt"], ["s"]),
             mk("Mul", ["s", "scale"], ["s1"])]
    inits = [numpy_helper.from_array(np.float32(1 / np.sqrt(d)), "scale")]
    last = "s1"
    if causal:
        inits += [numpy_helper.from_array(np.tril(np.ones((seq, seq_k), bool), seq_k - seq),
                                          "tri"),
                  numpy_helper.from_array(np.float32(-np.inf), "ninf")]
        nodes.append(mk("Where", ["tri", "s1", "ninf"], ["s2"]))
        last = "s2"
    nodes += [mk("Softmax", [last], ["p"], axis=-1), mk("MatMul", ["p", "v"], ["y"])]
    g = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape if n == "q" else kv_shape)
         for n in "qkv"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="onnxc-tests")
    m.ir_version = 8
    return m
