/*
 * ops_attention.c - ONNX Attention (23, 24, 25: one definition with more
 * inputs and types) as the IR's fused attention op.
 *
 * What the op's definition does around the core becomes ordinary IR ops:
 *   - 3-D inputs [B, L, heads * d] are split into heads and transposed to
 *     [B, heads, L, d] (and the 3-D result back);
 *   - past_key / past_value are concatenated in front of K and V (the
 *     present outputs are those concatenations), and the causal mask then
 *     starts past_length keys later: causal_offset = past_length;
 *   - an attn_mask shorter than the keys is padded (bool false, float
 *     -inf), as the spec says;
 *   - nonpad_kv_seqlen (24) masks the keys at and after each batch's
 *     length: a boolean mask, combined with attn_mask (and for a float one,
 *     added as 0 / -inf). Causal with nonpad_kv_seqlen and no past is
 *     aligned to each batch's last valid key (ONNX's errata of 2026, onnx
 *     PR 8068): that per-batch limit joins the mask and the op is not
 *     causal itself.
 * qk_matmul_output, when a graph reads it, is computed beside the fused op
 * by the explicit ops (MatMul, softcap, bias, Softmax) up to the stage
 * qk_matmul_output_mode names: the fused op never stores its scores.
 * softmax_precision has no effect: the fused op's softmax is FP32 for every
 * input type (at least the precision any value asks for).
 */
#include "fe.h"

#include <math.h>
#include <string.h>

static struct ir_value *binary(struct fe_node *nd, enum ir_op op, struct ir_value *a,
                               struct ir_value *b)
{
	return a && b ? fe_binary(nd, op, a, b, -1) : NULL;
}

/* [B, L, H*d] -> [B, H, L, d] */
static struct ir_value *split_heads(struct fe_node *nd, struct ir_value *x, int64_t heads,
                                    const char *what)
{
	const int64_t *d = x->type.dims, perm[4] = { 0, 2, 1, 3 };
	int64_t shape[4] = { d[0], d[1], heads, 0 };
	if (heads <= 0 || d[2] % heads)
		return fe_fail(nd, "%s's last dimension %lld is not %lld heads of one size", what,
		               (long long)d[2], (long long)heads),
		       NULL;
	shape[3] = d[2] / heads;
	return fe_transpose(nd, fe_reshape(nd, x, shape, 4, -1), perm, -1);
}

/* x repeated to [B, H, ...]: its value of a constant shape expanded */
static struct ir_value *expand_to(struct fe_node *nd, struct ir_value *x, const int64_t *dims,
                                  int rank)
{
	struct ir_node *n;
	if (!x)
		return NULL;
	n = fe_emit(nd, IR_OP_EXPAND, &x, 1, NULL, 1);
	ir_set_ints(nd->fe->m, n, "shape", dims, rank);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

/* k or v of [B, Hkv, L, d] as [B, Hq, L, d]: each kv head repeated over its
 * group of query heads (the explicit form, for qk_matmul_output) */
static struct ir_value *repeat_heads(struct fe_node *nd, struct ir_value *x, int64_t hq)
{
	const int64_t *d = x->type.dims;
	int64_t five[5] = { d[0], d[1], 1, d[2], d[3] }, four[4] = { d[0], hq, d[2], d[3] };
	if (d[1] == hq)
		return x;
	x = fe_reshape(nd, x, five, 5, -1);
	five[2] = hq / d[1];
	return fe_reshape(nd, expand_to(nd, x, five, 5), four, 4, -1);
}

/* An int64 constant [n] holding 0 .. n-1, shaped dims (rank rank). */
static struct ir_value *iota(struct fe_node *nd, int64_t n, const int64_t *dims, int rank)
{
	struct ir_type t = { .dtype = IR_I64, .rank = rank };
	int64_t *r = ir_arena_alloc(&nd->fe->m->arena, sizeof *r * (size_t)(n ? n : 1));
	for (int i = 0; i < rank; i++)
		t.dims[i] = dims[i];
	for (int64_t i = 0; i < n; i++)
		r[i] = i;
	return fe_const(nd, -1, &t, r);
}

/* The mask padded along its last axis to lk keys (false, or -inf). */
static struct ir_value *pad_mask(struct fe_node *nd, struct ir_value *m, int64_t lk)
{
	struct ir_type t = m->type;
	int64_t have = t.dims[t.rank - 1], n;
	void *fill;
	struct ir_value *parts[2];
	if (have == lk)
		return m;
	if (have > lk)
		return fe_fail(nd, "attn_mask's last dimension %lld exceeds the %lld keys",
		               (long long)have, (long long)lk),
		       NULL;
	t.dims[t.rank - 1] = lk - have;
	n = ir_type_elems(&t);
	if (!fe_check_const_size(nd, &t))
		return NULL;
	fill = ir_arena_alloc_big(&nd->fe->m->arena,
	                          (size_t)(n ? n : 1) * (size_t)ir_dtype_size(t.dtype));
	for (int64_t i = 0; i < n; i++)
		ir_store_f64(t.dtype, fill, (size_t)i, t.dtype == IR_BOOL ? 0 : -INFINITY);
	parts[0] = m;
	parts[1] = fe_const(nd, -1, &t, fill);
	return fe_concat(nd, parts, 2, t.rank - 1, -1);
}

/* A bool mask as a bias of type t: 0 where true, -inf where false. */
static struct ir_value *as_bias(struct fe_node *nd, struct ir_value *m, enum ir_dtype t)
{
	if (!m || m->type.dtype != IR_BOOL)
		return m;
	return fe_where(nd, m, fe_scalar(nd, t, 0), fe_scalar(nd, t, -INFINITY), -1);
}

/* The mask that nonpad_kv_seqlen (and, without past, a causal frontier per
 * batch) adds: [B, 1, 1 or Lq, Lk] bool. */
static struct ir_value *nonpad_mask(struct fe_node *nd, struct ir_value *len, int64_t b, int64_t lq,
                                    int64_t lk, bool causal)
{
	const int64_t jd[4] = { 1, 1, 1, lk }, id[4] = { 1, 1, lq, 1 }, bd[4] = { b, 1, 1, 1 };
	struct ir_value *j = iota(nd, lk, jd, 4), *n, *keep;
	if (len->type.rank != 1 || len->type.dims[0] != b || !ir_dtypes[len->type.dtype].is_int)
		return fe_fail(nd, "nonpad_kv_seqlen must be [%lld] integers", (long long)b), NULL;
	n = fe_reshape(nd, len->type.dtype == IR_I64 ? len : fe_cast(nd, len, IR_I64, -1), bd, 4,
	               -1);
	keep = binary(nd, IR_OP_LESS, j, n);
	if (causal) { /* j <= i + len - lq */
		struct ir_value *lim =
		        binary(nd, IR_OP_ADD, iota(nd, lq, id, 4),
		               binary(nd, IR_OP_SUB, n, fe_scalar(nd, IR_I64, (double)lq)));
		keep = binary(nd, IR_OP_AND, keep, binary(nd, IR_OP_LESS_EQUAL, j, lim));
	}
	return keep;
}

/* The scores as qk_matmul_output_mode asks for them: 0 scaled Q.K^T, 1
 * softcapped, 2 with the bias and masks, 3 after the softmax. */
static struct ir_value *qk_output(struct fe_node *nd, struct ir_value *q, struct ir_value *k,
                                  struct ir_value *mask, float scale, float cap, bool causal,
                                  int64_t offset, int64_t mode)
{
	const int64_t perm[4] = { 0, 1, 3, 2 };
	enum ir_dtype t = q->type.dtype;
	int64_t lq = q->type.dims[2], lk = k->type.dims[2];
	struct ir_value *kt = fe_transpose(nd, repeat_heads(nd, k, q->type.dims[1]), perm, -1);
	struct ir_value *s = binary(nd, IR_OP_MATMUL, q, kt), *in[1];
	s = binary(nd, IR_OP_MUL, s, fe_scalar(nd, t, scale));
	if (mode >= 1 && cap > 0) {
		struct ir_value *c = fe_scalar(nd, t, cap);
		s = binary(nd, IR_OP_MUL, fe_unary(nd, IR_OP_TANH, binary(nd, IR_OP_DIV, s, c), -1),
		           c);
	}
	if (mode >= 2 && mask)
		s = binary(nd, IR_OP_ADD, s, as_bias(nd, mask, t));
	if (mode >= 2 && causal) {
		struct ir_type ct = { .dtype = t, .rank = 2, .dims = { lq, lk } };
		void *data;
		if (!fe_check_const_size(nd, &ct))
			return NULL;
		data = ir_arena_alloc_big(&nd->fe->m->arena, (size_t)(lq * lk > 0 ? lq * lk : 1) *
		                                                     (size_t)ir_dtype_size(t));
		for (int64_t i = 0; i < lq; i++)
			for (int64_t j = 0; j < lk; j++)
				ir_store_f64(t, data, (size_t)(i * lk + j),
				             j > i + offset ? -INFINITY : 0);
		s = binary(nd, IR_OP_ADD, s, fe_const(nd, -1, &ct, data));
	}
	if (mode == 3 && s) {
		struct ir_node *n;
		in[0] = s;
		n = fe_emit(nd, IR_OP_SOFTMAX, in, 1, NULL, 1);
		ir_set_i(nd->fe->m, n, "axis", 3);
		s = fe_finish(nd, n) ? n->out[0] : NULL;
	}
	return s;
}

static bool imp_attention(struct fe_node *nd)
{
	bool causal = fe_int(nd, "is_causal", 0) != 0, three;
	int64_t mode = fe_int(nd, "qk_matmul_output_mode", 0), hq = 0, hkv = 0, offset = 0;
	float scale, cap = fe_float(nd, "softcap", 0);
	struct ir_value *q, *k, *v, *mask = fe_in(nd, 3), *pk = fe_in(nd, 4), *pv = fe_in(nd, 5);
	struct ir_value *nonpad = fe_in(nd, 6), *in[4];
	struct ir_node *n;
	const char *outs[2];
	fe_int(nd, "softmax_precision", 0);
	if (!fe_inputs(nd, 3, 7) || nd->failed)
		return false;
	q = nd->in[0], k = nd->in[1], v = nd->in[2];
	if (mode < 0 || mode > 3)
		return fe_fail(nd, "qk_matmul_output_mode %lld is not 0, 1, 2 or 3",
		               (long long)mode);
	if (!(cap >= 0) || !isfinite(cap))
		return fe_fail(nd, "softcap %g must be finite and not negative", cap);
	if (!ir_dtypes[q->type.dtype].is_float)
		return fe_fail(nd, "Q has type %s; the op takes float types",
		               ir_dtype_name(q->type.dtype));
	if (q->type.rank != k->type.rank || q->type.rank != v->type.rank ||
	    (q->type.rank != 3 && q->type.rank != 4))
		return fe_fail(nd, "Q, K and V must all be 3-D or all 4-D");
	if (!pk != !pv)
		return fe_fail(nd, "past_key and past_value come together");
	three = q->type.rank == 3;
	if (three) {
		if (!fe_req_int(nd, "q_num_heads", &hq) || !fe_req_int(nd, "kv_num_heads", &hkv))
			return false;
		q = split_heads(nd, q, hq, "Q");
		k = split_heads(nd, k, hkv, "K");
		v = split_heads(nd, v, hkv, "V");
		if (!q || !k || !v)
			return false;
	} else {
		fe_int(nd, "q_num_heads", 0);
		fe_int(nd, "kv_num_heads", 0);
	}
	if (k->type.dims[1] <= 0 || q->type.dims[1] % k->type.dims[1])
		return fe_fail(nd, "Q's %lld heads are not a multiple of K's %lld",
		               (long long)q->type.dims[1], (long long)k->type.dims[1]);
	if (pk) {
		struct ir_value *kk[2] = { pk, k }, *vv[2] = { pv, v };
		if (pk->type.rank != 4 || pv->type.rank != 4)
			return fe_fail(nd, "past_key and past_value must be 4-D");
		offset = pk->type.dims[2];
		k = fe_concat(nd, kk, 2, 2, -1);
		v = fe_concat(nd, vv, 2, 2, -1);
		if (!k || !v)
			return false;
	}
	if (q->type.dims[3] <= 0)
		return fe_fail(nd, "the head size is 0");
	scale = fe_float(nd, "scale", (float)(1 / sqrt((double)q->type.dims[3])));
	if (mask) {
		if (mask->type.rank < 1 || mask->type.rank > 4)
			return fe_fail(nd, "attn_mask must have rank 1 to 4");
		if (mask->type.dtype != IR_BOOL && mask->type.dtype != q->type.dtype)
			return fe_fail(nd, "attn_mask has type %s; it takes bool or Q's type %s",
			               ir_dtype_name(mask->type.dtype),
			               ir_dtype_name(q->type.dtype));
		if (!(mask = pad_mask(nd, mask, k->type.dims[2])))
			return false;
	}
	if (nonpad) {
		bool per_batch = causal && !pk;
		struct ir_value *keep = nonpad_mask(nd, nonpad, q->type.dims[0], q->type.dims[2],
		                                    k->type.dims[2], per_batch);
		if (!keep)
			return false;
		if (per_batch)
			causal = false;
		if (!mask)
			mask = keep;
		else if (mask->type.dtype == IR_BOOL)
			mask = binary(nd, IR_OP_AND, mask, keep);
		else
			mask = binary(nd, IR_OP_ADD, mask, as_bias(nd, keep, mask->type.dtype));
		if (!mask)
			return false;
	}
	in[0] = q, in[1] = k, in[2] = v, in[3] = mask;
	outs[0] = three ? fe_tmp_name(nd, "heads") : fe_out_name(nd, 0);
	n = fe_emit(nd, IR_OP_ATTENTION, in, mask ? 4 : 3, outs, 1);
	ir_set_f(nd->fe->m, n, "scale", scale);
	ir_set_i(nd->fe->m, n, "causal", causal);
	ir_set_i(nd->fe->m, n, "causal_offset", causal ? offset : 0);
	ir_set_f(nd->fe->m, n, "softcap", cap);
	if (!fe_finish(nd, n))
		return false;
	if (three) {
		const int64_t perm[4] = { 0, 2, 1, 3 }, *d = n->out[0]->type.dims;
		int64_t shape[3] = { d[0], d[2], d[1] * d[3] };
		struct ir_value *y =
		        fe_reshape(nd, fe_transpose(nd, n->out[0], perm, -1), shape, 3, 0);
		if (!y)
			return false;
		fe_bind(nd, 0, y);
	} else {
		fe_bind(nd, 0, n->out[0]);
	}
	if (nd->nout > 1 && fe_out_name(nd, 1)[0])
		fe_bind(nd, 1, k);
	if (nd->nout > 2 && fe_out_name(nd, 2)[0])
		fe_bind(nd, 2, v);
	if (nd->nout > 3 && fe_out_name(nd, 3)[0] && fe_tensor_used(nd->fe, fe_out_name(nd, 3))) {
		struct ir_value *s = qk_output(nd, q, k, mask, scale, cap, causal, offset, mode);
		if (!s)
			return false;
		fe_bind(nd, 3, s);
	}
	return true;
}

const struct fe_op fe_ops_attention[] = {
	{ "Attention", imp_attention, IR_OP_ATTENTION, { 23, 24, 25 } },
	{ NULL, NULL, 0, { 0 } },
};
