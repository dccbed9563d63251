/*
 * ops_flex.c - ai.onnx.preview FlexAttention (version 1): attention with
 * user sub-graphs on the scores and on the probabilities.
 *
 *   S = (Q sqrt(scale)) (K sqrt(scale))^T   (scale: 1 / sqrt(head size))
 *   S = score_mod(S); P = Softmax(S, -1); P = prob_mod(P); Y = P V
 *
 * as ONNX's function body writes it: K and V are repeated to the query
 * heads (GQA: query head h reads kv head h / (Hq / Hkv)), the scale is
 * split over Q and K as sqrt(scale) in the inputs' type, and the scores,
 * the softmax, both sub-graphs and P V are FP32 for half inputs (FP64 for
 * double ones), the result cast back. Each sub-graph takes one tensor of
 * [B, Hq, Lq, Lk] and returns one; it is imported in place
 * (fe_import_graph), so it may be any graph onnxc imports, and what it
 * builds its masks from (Shape, Range, comparisons) folds at import.
 *
 * The result is the decomposed graph with the L x L scores in it; the
 * attention pass (passes/attention.c) fuses it back when score_mod is a
 * form it knows (none, a causal mask, a bias) and there is no prob_mod.
 */
#include "fe.h"

#include <math.h>

/* x [B, Hkv, L, d] repeated to [B, hq, L, d] (each kv head hq / Hkv times) */
static struct ir_value *to_heads(struct fe_node *nd, struct ir_value *x, int64_t hq)
{
	const int64_t *d = x->type.dims;
	int64_t wide[5] = { d[0], d[1], hq / d[1], d[2], d[3] }, out[4] = { d[0], hq, d[2], d[3] };
	int64_t one[5] = { d[0], d[1], 1, d[2], d[3] };
	struct ir_node *n;
	struct ir_value *in[1];
	if (d[1] == hq)
		return x;
	in[0] = fe_reshape(nd, x, one, 5, -1);
	if (!in[0])
		return NULL;
	n = fe_emit(nd, IR_OP_EXPAND, in, 1, NULL, 1);
	ir_set_ints(nd->fe->m, n, "shape", wide, 5);
	return fe_finish(nd, n) ? fe_reshape(nd, n->out[0], out, 4, -1) : NULL;
}

/* The sub-graph attribute name applied to x, or x when there is none. */
static struct ir_value *modify(struct fe_node *nd, const char *name, const char *tag,
                               struct ir_value *x)
{
	const Onnx__GraphProto *g = fe_attr_graph(nd, name);
	struct ir_value *y = NULL;
	if (!x || !g)
		return x;
	if (!fe_import_graph(nd, g, tag, &x, 1, &y, 1))
		return NULL;
	if (!ir_type_eq(&y->type, &x->type)) {
		char have[96], want[96];
		return fe_fail(nd, "the %s gives %s, not the %s it takes", name,
		               ir_type_str(&y->type, have, sizeof have),
		               ir_type_str(&x->type, want, sizeof want)),
		       NULL;
	}
	return y;
}

static bool imp_flex_attention(struct fe_node *nd)
{
	const int64_t perm[4] = { 0, 1, 3, 2 };
	struct ir_value *q, *k, *v, *s, *sq, *in[1];
	enum ir_dtype t, st;
	struct ir_node *n;
	int64_t hq, hkv, dk;
	float scale;
	if (!fe_inputs(nd, 3, 3))
		return false;
	q = nd->in[0], k = nd->in[1], v = nd->in[2], t = q->type.dtype;
	if (q->type.rank != 4 || k->type.rank != 4 || v->type.rank != 4)
		return fe_fail(nd,
		               "Q, K and V must be of rank 4 [batch, heads, length, head "
		               "size]; they are of rank %d, %d and %d",
		               q->type.rank, k->type.rank, v->type.rank);
	if (t != IR_F32 && t != IR_F16 && t != IR_BF16 && t != IR_F64)
		return fe_fail(nd,
		               "Q is %s; FlexAttention takes float16, bfloat16, float and double",
		               ir_dtype_name(t));
	if (k->type.dtype != t || v->type.dtype != t)
		return fe_fail(nd, "Q, K and V differ in type (%s, %s, %s)", ir_dtype_name(t),
		               ir_dtype_name(k->type.dtype), ir_dtype_name(v->type.dtype));
	hq = q->type.dims[1], hkv = k->type.dims[1], dk = q->type.dims[3];
	if (k->type.dims[0] != q->type.dims[0] || v->type.dims[0] != q->type.dims[0] ||
	    v->type.dims[1] != hkv || v->type.dims[2] != k->type.dims[2] || k->type.dims[3] != dk)
		return fe_fail(nd,
		               "K [%lld, %lld, %lld, %lld] and V [%lld, %lld, %lld, %lld] do not "
		               "fit Q [%lld, %lld, %lld, %lld]",
		               (long long)k->type.dims[0], (long long)hkv,
		               (long long)k->type.dims[2], (long long)k->type.dims[3],
		               (long long)v->type.dims[0], (long long)v->type.dims[1],
		               (long long)v->type.dims[2], (long long)v->type.dims[3],
		               (long long)q->type.dims[0], (long long)hq,
		               (long long)q->type.dims[2], (long long)dk);
	if (hkv <= 0 || hq % hkv)
		return fe_fail(nd, "%lld query heads are not a multiple of %lld key/value heads",
		               (long long)hq, (long long)hkv);
	scale = fe_has(nd, "scale") ? fe_float(nd, "scale", 0) : 1 / sqrtf((float)dk);
	if (!(scale >= 0) || isinf(scale))
		return fe_fail(nd, "scale %g is not a finite non-negative number", (double)scale);
	st = t == IR_F64 ? IR_F64 : IR_F32;
	sq = fe_scalar(nd, t, sqrtf(scale));
	k = fe_binary(nd, IR_OP_MUL, to_heads(nd, k, hq), sq, -1);
	s = fe_binary(nd, IR_OP_MATMUL, fe_binary(nd, IR_OP_MUL, q, sq, -1),
	              k ? fe_transpose(nd, k, perm, -1) : NULL, -1);
	if (s && t != st)
		s = fe_cast(nd, s, st, -1);
	if (!(s = modify(nd, "score_mod", "score_mod", s)))
		return false;
	in[0] = s;
	n = fe_emit(nd, IR_OP_SOFTMAX, in, 1, NULL, 1);
	ir_set_i(nd->fe->m, n, "axis", 3);
	if (!fe_finish(nd, n) || !(s = modify(nd, "prob_mod", "prob_mod", n->out[0])))
		return false;
	v = to_heads(nd, v, hq);
	if (v && t != st)
		v = fe_cast(nd, v, st, -1);
	s = fe_binary(nd, IR_OP_MATMUL, s, v, t == st ? 0 : -1);
	if (s && t != st)
		s = fe_cast(nd, s, t, 0);
	if (!s)
		return false;
	fe_bind(nd, 0, s);
	return true;
}

const struct fe_op fe_ops_flex[] = {
	{ "FlexAttention", imp_flex_attention, IR_OP_SOFTMAX, { 1 }, .domain = "ai.onnx.preview" },
	{ NULL, NULL, 0, { 0 } },
};
