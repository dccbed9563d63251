/*
 * ops_attention.c - attention ops as the IR's fused attention op: ONNX
 * Attention (23, 24, 25: one definition with more inputs and types) and
 * ONNX Runtime's com.microsoft MultiHeadAttention, Attention and
 * GroupQueryAttention.
 *
 * What each op's definition does around the core becomes ordinary IR ops:
 *   - 3-D inputs [B, L, heads * d] are split into heads and transposed to
 *     [B, heads, L, d] (and the 3-D result back);
 *   - past keys and values are concatenated in front of K and V (the
 *     present outputs are those concatenations), and the causal mask then
 *     starts past_length keys later: causal_offset = past_length;
 *   - masks that differ per batch (sequence lengths) are built from an iota
 *     of key positions compared with the lengths: a boolean mask, or a bias
 *     where the op masks with a finite value.
 *
 * ONNX Attention:
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
 *
 * The com.microsoft ops compute what ONNX Runtime's CPU kernels (1.30)
 * compute; see the section below for how they differ from ONNX's op.
 * FlexAttention (ai.onnx.preview) is the decomposed graph with its
 * sub-graphs imported in place; the attention pass fuses it where it can.
 */
#include "fe.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static struct ir_value *binary(struct fe_node *nd, enum ir_op op, struct ir_value *a,
                               struct ir_value *b)
{
	return a && b ? fe_binary(nd, op, a, b, -1) : NULL;
}

/* Whether the node names its output k (an optional output the graph wants). */
static bool named(const struct fe_node *nd, int k)
{
	return k < nd->nout && nd->proto->output[k][0];
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

/* [B, H, L, d] -> [B, L, H*d], named after output k (k < 0: an intermediate) */
static struct ir_value *merge_heads(struct fe_node *nd, struct ir_value *x, int k)
{
	const int64_t perm[4] = { 0, 2, 1, 3 };
	int64_t shape[3];
	if (!x)
		return NULL;
	shape[0] = x->type.dims[0];
	shape[1] = x->type.dims[2];
	shape[2] = x->type.dims[1] * x->type.dims[3];
	return fe_reshape(nd, fe_transpose(nd, x, perm, -1), shape, 3, k);
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

/* A bool mask as a bias of type t: 0 where true, fill where false (ONNX:
 * -inf; ONNX Runtime's ops: their mask_filter_value). Other masks as they
 * are. */
static struct ir_value *as_bias(struct fe_node *nd, struct ir_value *m, enum ir_dtype t,
                                double fill)
{
	if (!m || m->type.dtype != IR_BOOL)
		return m;
	return fe_where(nd, m, fe_scalar(nd, t, 0), fe_scalar(nd, t, fill), -1);
}

/* Integers [b] (per-batch lengths or offsets) as int64 [b, 1, 1, 1]. */
static struct ir_value *per_batch(struct fe_node *nd, struct ir_value *x, int64_t b,
                                  const char *what)
{
	const int64_t bd[4] = { b, 1, 1, 1 };
	if (x->type.rank != 1 || x->type.dims[0] != b || !ir_dtypes[x->type.dtype].is_int)
		return fe_fail(nd, "%s must be [%lld] integers", what, (long long)b), NULL;
	return fe_reshape(nd, x->type.dtype == IR_I64 ? x : fe_cast(nd, x, IR_I64, -1), bd, 4, -1);
}

/* Key positions 0 .. lk - 1 as int64 [1, 1, 1, lk]. */
static struct ir_value *key_index(struct fe_node *nd, int64_t lk)
{
	const int64_t jd[4] = { 1, 1, 1, lk };
	return iota(nd, lk, jd, 4);
}

/* Key j (key_index) against query row i shifted by off (int64,
 * [B, 1, 1, 1] or a scalar): op(j, i + off) over [.., lq, lk]. LESS_EQUAL
 * is a causal frontier, GREATER the start of a window. */
static struct ir_value *diagonal(struct fe_node *nd, enum ir_op op, struct ir_value *j,
                                 struct ir_value *off, int64_t lq)
{
	const int64_t id[4] = { 1, 1, lq, 1 };
	return binary(nd, op, j, binary(nd, IR_OP_ADD, iota(nd, lq, id, 4), off));
}

/* The mask that nonpad_kv_seqlen (and, without past, a causal frontier per
 * batch) adds: [B, 1, 1 or Lq, Lk] bool. */
static struct ir_value *nonpad_mask(struct fe_node *nd, struct ir_value *len, int64_t b, int64_t lq,
                                    int64_t lk, bool causal)
{
	struct ir_value *n = per_batch(nd, len, b, "nonpad_kv_seqlen"), *j, *keep;
	if (!n)
		return NULL;
	j = key_index(nd, lk);
	keep = binary(nd, IR_OP_LESS, j, n);
	if (causal) /* j <= i + len - lq */
		keep = binary(nd, IR_OP_AND, keep,
		              diagonal(nd, IR_OP_LESS_EQUAL, j,
		                       binary(nd, IR_OP_SUB, n, fe_scalar(nd, IR_I64, (double)lq)),
		                       lq));
	return keep;
}

/* The fused op on q [B, Hq, Lq, d], k [B, Hkv, Lk, d], v [B, Hkv, Lk, dv]
 * and a mask (or NULL): its result [B, Hq, Lq, dv], named after output k
 * (k < 0: an intermediate). */
static struct ir_value *fused(struct fe_node *nd, struct ir_value *q, struct ir_value *k,
                              struct ir_value *v, struct ir_value *mask, float scale, bool causal,
                              int64_t offset, float cap, int out)
{
	struct ir_value *in[4] = { q, k, v, mask };
	const char *name = out >= 0 ? fe_out_name(nd, out) : fe_tmp_name(nd, "heads");
	struct ir_node *n;
	if (!q || !k || !v)
		return NULL;
	n = fe_emit(nd, IR_OP_ATTENTION, in, mask ? 4 : 3, &name, 1);
	ir_set_f(nd->fe->m, n, "scale", scale);
	ir_set_i(nd->fe->m, n, "causal", causal);
	ir_set_i(nd->fe->m, n, "causal_offset", causal ? offset : 0);
	ir_set_f(nd->fe->m, n, "softcap", cap);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

/* ------------------------------------------------------------------------ */
/* ONNX Attention                                                           */
/* ------------------------------------------------------------------------ */

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
		s = binary(nd, IR_OP_ADD, s, as_bias(nd, mask, t, -INFINITY));
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
	struct ir_value *nonpad = fe_in(nd, 6), *y;
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
			mask = binary(nd, IR_OP_ADD, mask,
			              as_bias(nd, keep, mask->type.dtype, -INFINITY));
		if (!mask)
			return false;
	}
	y = fused(nd, q, k, v, mask, scale, causal, offset, cap, three ? -1 : 0);
	if (three)
		y = merge_heads(nd, y, 0);
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	fe_bind(nd, 1, k);
	fe_bind(nd, 2, v);
	if (nd->nout > 3 && fe_out_name(nd, 3)[0] && fe_tensor_used(nd->fe, fe_out_name(nd, 3))) {
		struct ir_value *s = qk_output(nd, q, k, mask, scale, cap, causal, offset, mode);
		if (!s)
			return false;
		fe_bind(nd, 3, s);
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* ONNX Runtime's com.microsoft attention ops                               */
/* ------------------------------------------------------------------------ */

/*
 * MultiHeadAttention, Attention (BERT's: one input projected by a packed
 * weight) and GroupQueryAttention compute what ONNX Runtime's CPU kernels
 * compute, which is not ONNX's Attention:
 *   - a masked key (key_padding_mask, mask_index) gets mask_filter_value
 *     (-10000 by default) added to its score, not -inf, so a fully masked
 *     row is the softmax of its shifted scores, not a zero row: those masks
 *     become a float bias of the query's type;
 *   - unidirectional masks the keys j > i + past_length (the query's rows
 *     follow the past, whatever the key length) in every row but the last,
 *     and only when the query has more than one row (ms_causal);
 *   - GroupQueryAttention's past and present are a cache buffer: batch b's
 *     new keys are written at its own past length, seqlens_k[b] + 1 -
 *     sequence_length (0 in the first prompt, where sequence_length is
 *     total_sequence_length), after its first past-length rows of past_key,
 *     zeros after them; its rows see the keys j < seqlens_k[b] + 1 and,
 *     causal, j <= i + past length (the last local_window_size of them).
 * A past reaches the computation only with the present outputs: ONNX
 * Runtime's MultiHeadAttention drops a past it does not return and its
 * Attention fails, so onnxc refuses a past without its present.
 */

static bool ms_float(struct fe_node *nd, struct ir_value *x, const char *what)
{
	if (!ir_dtypes[x->type.dtype].is_float)
		return fe_fail(nd, "%s has type %s; the op takes float types", what,
		               ir_dtype_name(x->type.dtype));
	return true;
}

/* x must have the type t and the shape dims (rank rank); 0 in dims takes
 * any size. */
static bool ms_shape(struct fe_node *nd, struct ir_value *x, const char *what, enum ir_dtype t,
                     const int64_t *dims, int rank)
{
	char have[128], want[128];
	size_t at = 0;
	bool ok = x->type.rank == rank && x->type.dtype == t;
	for (int i = 0; ok && i < rank; i++)
		ok = !dims[i] || x->type.dims[i] == dims[i];
	if (ok)
		return true;
	for (int i = 0; i < rank && at < sizeof want - 24; i++)
		at += (size_t)(dims[i] ? snprintf(want + at, sizeof want - at, "%s%lld",
		                                  i ? ", " : "", (long long)dims[i])
		                       : snprintf(want + at, sizeof want - at, "%s*",
		                                  i ? ", " : ""));
	want[at] = 0;
	return fe_fail(nd, "%s %s must be %s[%s]", what, ir_type_str(&x->type, have, sizeof have),
	               ir_dtype_name(t), want);
}

/* x + part of a packed bias (off .. off + x's last dimension), split into
 * heads: [B, L, H*d] -> [B, H, L, d]. */
static struct ir_value *biased_heads(struct fe_node *nd, struct ir_value *x, struct ir_value *bias,
                                     int64_t off, int64_t heads, const char *what)
{
	if (bias)
		x = binary(nd, IR_OP_ADD, x,
		           fe_slice_axis(nd, bias, 0, off, off + x->type.dims[2], 1, -1));
	return x ? split_heads(nd, x, heads, what) : NULL;
}

/* Part t of a packed x [B, L, N, n, H] as [B, N, L, H]. */
static struct ir_value *unpack(struct fe_node *nd, struct ir_value *x, int t)
{
	const int64_t *d = x->type.dims, perm[4] = { 0, 2, 1, 3 };
	const int64_t shape[4] = { d[0], d[1], d[2], d[4] };
	return fe_transpose(nd,
	                    fe_reshape(nd, fe_slice_axis(nd, x, 3, t, t + 1, 1, -1), shape, 4, -1),
	                    perm, -1);
}

/* Zeros of type t and shape [d0, d1, d2, d3]. */
static struct ir_value *zeros(struct fe_node *nd, enum ir_dtype t, int64_t d0, int64_t d1,
                              int64_t d2, int64_t d3)
{
	const int64_t dims[4] = { d0, d1, d2, d3 };
	return expand_to(nd, fe_scalar(nd, t, 0), dims, 4);
}

/*
 * An int32 mask of the keys (MultiHeadAttention's key_padding_mask,
 * Attention's mask_index) as ONNX Runtime's kernels read it, as a bias of
 * type t that broadcasts over [B, heads, S, T]: fill where a key is masked.
 * [B]: each batch's key count; [2B] (index only): the exclusive ends, then
 * the inclusive starts; [B, T] and [B, S, T]: nonzero keeps. index: the
 * forms of Attention's mask_index. NULL after reporting, or with *none for
 * a mask that changes nothing.
 */
static struct ir_value *key_mask(struct fe_node *nd, struct ir_value *m, const char *what,
                                 int64_t b, int64_t s, int64_t t, enum ir_dtype dt, float fill,
                                 bool index, bool *none)
{
	const int64_t *d = m->type.dims;
	int r = m->type.rank;
	struct ir_value *keep;
	char have[128];
	*none = false;
	if (m->type.dtype != IR_I32)
		return fe_fail(nd, "%s has type %s; it takes int32", what,
		               ir_dtype_name(m->type.dtype)),
		       NULL;
	if (r == 1 && d[0] == b) {
		keep = binary(nd, IR_OP_LESS, key_index(nd, t), per_batch(nd, m, b, what));
	} else if (r == 1 && index && d[0] == 2 * b) {
		struct ir_value *end = fe_slice_axis(nd, m, 0, 0, b, 1, -1);
		struct ir_value *start = fe_slice_axis(nd, m, 0, b, 2 * b, 1, -1);
		struct ir_value *j = key_index(nd, t);
		end = end ? per_batch(nd, end, b, what) : NULL;
		start = start ? per_batch(nd, start, b, what) : NULL;
		keep = binary(nd, IR_OP_AND, binary(nd, IR_OP_LESS, j, end),
		              binary(nd, IR_OP_GREATER_EQUAL, j, start));
	} else if ((r == 2 && d[0] == b && d[1] == t) ||
	           (r == 3 && d[0] == b && d[1] == s && d[2] == t)) {
		const int64_t shape[4] = { b, 1, r == 3 ? s : 1, t };
		keep = fe_reshape(nd, binary(nd, IR_OP_GREATER, m, fe_scalar(nd, IR_I32, 0)), shape,
		                  4, -1);
	} else if (r == 2 && index && (d[0] == b || d[0] == 1) && d[1] == 1) {
		/* one value per row of scores shifts the whole row: ONNX Runtime
		 * drops it */
		*none = true;
		return NULL;
	} else if (r == 1 && d[0] == 3 * b + 2) {
		return fe_fail(nd,
		               "%s of shape [3 * batch + 2] (key lengths with cumulative "
		               "offsets, for ONNX Runtime's CUDA kernels) is not supported",
		               what),
		       NULL;
	} else if (r == 4 && index) {
		return fe_fail(nd,
		               "a 4-D %s (Megatron's [batch, 1, max_sequence_length, "
		               "max_sequence_length]) is not supported (ONNX Runtime's CPU kernel "
		               "does not implement it either)",
		               what),
		       NULL;
	} else {
		return fe_fail(nd,
		               "%s %s must be [%lld]%s, [%lld, %lld] or [%lld, %lld, %lld] "
		               "(batch, query rows, keys)",
		               what, ir_type_str(&m->type, have, sizeof have), (long long)b,
		               index ? " or [2 * batch]" : "", (long long)b, (long long)t,
		               (long long)b, (long long)s, (long long)t),
		       NULL;
	}
	return as_bias(nd, keep, dt, fill);
}

/* attention_bias [B or 1, heads or 1, S, T] of type dt added to the mask so
 * far (or NULL). */
static struct ir_value *add_attention_bias(struct fe_node *nd, struct ir_value *mask,
                                           struct ir_value *ab, enum ir_dtype dt, int64_t b,
                                           int64_t heads, int64_t s, int64_t t)
{
	const int64_t *d = ab->type.dims;
	char have[128];
	if (ab->type.dtype != dt || ab->type.rank != 4 || (d[0] != b && d[0] != 1) ||
	    (d[1] != heads && d[1] != 1) || d[2] != s || d[3] != t)
		return fe_fail(nd, "attention_bias %s must be %s[%lld or 1, %lld or 1, %lld, %lld]",
		               ir_type_str(&ab->type, have, sizeof have), ir_dtype_name(dt),
		               (long long)b, (long long)heads, (long long)s, (long long)t),
		       NULL;
	return mask ? binary(nd, IR_OP_ADD, mask, ab) : ab;
}

/*
 * unidirectional as ONNX Runtime's kernels mask: rows i < S - 1 see the keys
 * j <= i + past, and the last row every key (their loop stops a row short,
 * which matters when there are more than past + S keys, as in a causal
 * cross-attention). The fused op's own causal mask (*causal) where that is
 * the same, else a -inf bias of type dt added to *mask.
 */
static bool ms_causal(struct fe_node *nd, int64_t s, int64_t t, int64_t past, enum ir_dtype dt,
                      struct ir_value **mask, bool *causal)
{
	struct ir_type ct = { .dtype = dt, .rank = 2, .dims = { s, t } };
	struct ir_value *c;
	void *data;
	*causal = s > 1 && t <= past + s;
	if (s <= 1 || *causal)
		return true;
	if (!fe_check_const_size(nd, &ct))
		return false;
	data = ir_arena_alloc_big(&nd->fe->m->arena, (size_t)(s * t) * (size_t)ir_dtype_size(dt));
	for (int64_t i = 0; i < s; i++)
		for (int64_t j = 0; j < t; j++)
			ir_store_f64(dt, data, (size_t)(i * t + j),
			             i < s - 1 && j > i + past ? -INFINITY : 0);
	c = fe_const(nd, -1, &ct, data);
	*mask = *mask ? binary(nd, IR_OP_ADD, *mask, c) : c;
	return *mask != NULL;
}

/* The default scale, 1/sqrt(head size), where the attribute is 0. */
static float ms_scale(float scale, int64_t head)
{
	return scale != 0 ? scale : (float)(1 / sqrt((double)head));
}

/*
 * com.microsoft MultiHeadAttention: query [B, S, D] with key [B, L, D] and
 * value [B, L, Dv] (a packed bias [D + D + Dv] added first), or with key and
 * value [B, N, L, H] (BNSH: a cross-attention's cached keys); or query
 * [B, L, N, 3, H] packing Q, K and V, or key [B, L, N, 2, H] packing K and V
 * (ONNX Runtime's CPU kernel has neither packing; they are read as its CUDA
 * kernels read them).
 */
static bool imp_ms_mha(struct fe_node *nd)
{
	float fill = fe_float(nd, "mask_filter_value", -10000.0f), scale = fe_float(nd, "scale", 0);
	bool uni = fe_int(nd, "unidirectional", 0) != 0, none, causal = false;
	int64_t n, b, s, dq, past = 0;
	struct ir_value *q, *k, *v, *bias, *kpm, *ab, *pk, *pv, *mask = NULL, *y;
	enum ir_dtype dt;
	if (!fe_req_int(nd, "num_heads", &n) || !fe_inputs(nd, 1, 10) || nd->failed)
		return false;
	if (fe_in(nd, 8))
		return fe_fail(nd, "input 8 (past_sequence_length, for a past and present sharing "
		                   "one buffer) is not supported");
	if (fe_in(nd, 9))
		return fe_fail(nd, "input 9 (cache_indirection, for beam search) is not supported");
	if (named(nd, 3))
		return fe_fail(nd, "output 3 (qk) is not supported");
	if (n <= 0)
		return fe_fail(nd, "num_heads %lld must be positive", (long long)n);
	q = nd->in[0], k = fe_in(nd, 1), v = fe_in(nd, 2), bias = fe_in(nd, 3);
	kpm = fe_in(nd, 4), ab = fe_in(nd, 5), pk = fe_in(nd, 6), pv = fe_in(nd, 7);
	if (!ms_float(nd, q, "query"))
		return false;
	dt = q->type.dtype, b = q->type.dims[0], s = q->type.dims[1];
	if (q->type.rank == 5) {
		const int64_t *d = q->type.dims, want[5] = { 0, 0, n, 3, 0 };
		if (k || v)
			return fe_fail(nd, "key and value must be absent when query packs Q, K and "
			                   "V (5-D)");
		if (!ms_shape(nd, q, "packed QKV query", dt, want, 5))
			return false;
		if (bias) { /* [3, N, H] -> [N, 3, H]: each bias at its place in the packing */
			const int64_t bd[3] = { 3, n, d[4] }, perm[3] = { 1, 0, 2 },
			              want1[1] = { 3 * n * d[4] };
			if (!ms_shape(nd, bias, "bias", dt, want1, 1))
				return false;
			q = binary(nd, IR_OP_ADD, q,
			           fe_transpose(nd, fe_reshape(nd, bias, bd, 3, -1), perm, -1));
			if (!q)
				return false;
		}
		k = unpack(nd, q, 1), v = unpack(nd, q, 2), q = unpack(nd, q, 0);
	} else if (q->type.rank != 3) {
		return fe_fail(nd, "query must be [batch, length, hidden] or packed QKV [batch, "
		                   "length, num_heads, 3, head]");
	} else if (k && k->type.rank == 5) {
		const int64_t want[5] = { b, 0, n, 2, q->type.dims[2] / n };
		if (v)
			return fe_fail(nd, "value must be absent when key packs K and V (5-D)");
		if (bias)
			return fe_fail(nd, "bias with a packed key and value is not supported");
		if (!ms_shape(nd, k, "packed KV key", dt, want, 5))
			return false;
		v = unpack(nd, k, 1), k = unpack(nd, k, 0), q = split_heads(nd, q, n, "query");
	} else if (!k || !v) {
		return fe_fail(nd, "key and value are required unless query packs Q, K and V "
		                   "[batch, length, num_heads, 3, head]");
	} else if (k->type.rank == 4 && v->type.rank == 4) {
		const int64_t wk[4] = { b, n, 0, q->type.dims[2] / n },
		              wv[4] = { b, n, k->type.dims[2], 0 };
		if (bias)
			return fe_fail(nd, "bias must be absent when key and value are 4-D (ONNX "
			                   "Runtime refuses it too)");
		if (pk || pv)
			return fe_fail(nd, "past_key and past_value must be absent when key and "
			                   "value are 4-D (they are the past)");
		if (!ms_shape(nd, k, "key", dt, wk, 4) || !ms_shape(nd, v, "value", dt, wv, 4))
			return false;
		q = split_heads(nd, q, n, "query");
	} else if (k->type.rank == 3 && v->type.rank == 3) {
		const int64_t wk[3] = { b, 0, q->type.dims[2] }, wv[3] = { b, k->type.dims[1], 0 };
		dq = q->type.dims[2];
		if (!ms_shape(nd, k, "key", dt, wk, 3) || !ms_shape(nd, v, "value", dt, wv, 3))
			return false;
		if (bias) {
			const int64_t want[1] = { 2 * dq + v->type.dims[2] };
			if (!ms_shape(nd, bias, "bias", dt, want, 1))
				return false;
		}
		q = biased_heads(nd, q, bias, 0, n, "query");
		k = q ? biased_heads(nd, k, bias, dq, n, "key") : NULL;
		v = k ? biased_heads(nd, v, bias, 2 * dq, n, "value") : NULL;
	} else {
		return fe_fail(nd, "key and value must be both 3-D or both 4-D");
	}
	if (!q || !k || !v)
		return false;
	if (pk || pv) {
		struct ir_value *kk[2] = { pk, k }, *vv[2] = { pv, v };
		const int64_t wk[4] = { b, n, 0, k->type.dims[3] };
		int64_t wv[4] = { b, n, 0, v->type.dims[3] };
		if (!pk || !pv)
			return fe_fail(nd, "past_key and past_value come together");
		if (!named(nd, 1) || !named(nd, 2))
			return fe_fail(nd,
			               "past_key and past_value need the present_key and "
			               "present_value outputs (ONNX Runtime's CPU kernel ignores a "
			               "past it does not return)");
		if (!ms_shape(nd, pk, "past_key", dt, wk, 4))
			return false;
		wv[2] = pk->type.dims[2];
		if (!ms_shape(nd, pv, "past_value", dt, wv, 4))
			return false;
		past = pk->type.dims[2];
		k = fe_concat(nd, kk, 2, 2, -1);
		v = fe_concat(nd, vv, 2, 2, -1);
		if (!k || !v)
			return false;
	}
	if (kpm && !(mask = key_mask(nd, kpm, "key_padding_mask", b, s, k->type.dims[2], dt, fill,
	                             false, &none)))
		return false;
	if (ab && !(mask = add_attention_bias(nd, mask, ab, dt, b, n, s, k->type.dims[2])))
		return false;
	if (uni && !ms_causal(nd, s, k->type.dims[2], past, dt, &mask, &causal))
		return false;
	y = fused(nd, q, k, v, mask, ms_scale(scale, q->type.dims[3]), causal, past, 0, -1);
	if (!(y = merge_heads(nd, y, 0)))
		return false;
	fe_bind(nd, 0, y);
	fe_bind(nd, 1, k);
	fe_bind(nd, 2, v);
	return true;
}

/*
 * com.microsoft Attention: input [B, S, Di] projected by weights [Di, D + D
 * + Dv] and bias into Q, K and V (qkv_hidden_sizes gives D, D, Dv; D = Dv
 * without it); past [2, B, N, P, H] holds the past keys and values, and
 * present the same with this step's appended.
 */
static bool imp_ms_attention(struct fe_node *nd)
{
	float fill = fe_float(nd, "mask_filter_value", -10000.0f), scale = fe_float(nd, "scale", 0);
	bool uni = fe_int(nd, "unidirectional", 0) != 0, none;
	const int64_t *sizes = NULL;
	int nsizes = fe_ints(nd, "qkv_hidden_sizes", &sizes);
	int64_t n, hs[3], b, s, total, past = 0;
	struct ir_value *x, *w, *bias, *mi, *pkv, *ab, *qkv, *q, *k, *v, *mask = NULL, *y;
	enum ir_dtype dt;
	/* rotary_embedding_dim only matters with do_rotary */
	fe_int(nd, "rotary_embedding_dim", 0);
	if (fe_int(nd, "do_rotary", 0))
		return nd->failed ? false
		                  : fe_fail(nd, "do_rotary=1 is not supported (ONNX Runtime's CPU "
		                                "kernel does not implement it either: "
		                                "MultiHeadAttention after RotaryEmbedding computes "
		                                "it)");
	if (fe_int(nd, "past_present_share_buffer", 0))
		return nd->failed ? false
		                  : fe_fail(nd, "past_present_share_buffer=1 (past and present in "
		                                "one buffer) is not supported");
	if (!fe_req_int(nd, "num_heads", &n) || !fe_inputs(nd, 2, 7) || nd->failed)
		return false;
	if (fe_in(nd, 6))
		return fe_fail(nd, "input 6 (past_sequence_length, for "
		                   "past_present_share_buffer) is not supported");
	if (n <= 0)
		return fe_fail(nd, "num_heads %lld must be positive", (long long)n);
	x = nd->in[0], w = nd->in[1], bias = fe_in(nd, 2), mi = fe_in(nd, 3);
	pkv = fe_in(nd, 4), ab = fe_in(nd, 5);
	if (!ms_float(nd, x, "input"))
		return false;
	dt = x->type.dtype;
	{
		const int64_t wx[3] = { 0, 0, 0 },
		              ww[2] = { x->type.rank == 3 ? x->type.dims[2] : 0, 0 };
		if (!ms_shape(nd, x, "input", dt, wx, 3) || !ms_shape(nd, w, "weights", dt, ww, 2))
			return false;
	}
	b = x->type.dims[0], s = x->type.dims[1];
	if (nsizes >= 0) {
		if (nsizes != 3)
			return fe_fail(nd, "qkv_hidden_sizes has %d values, not 3", nsizes);
		for (int i = 0; i < 3; i++)
			if ((hs[i] = sizes[i]) <= 0 || hs[i] % n)
				return fe_fail(
				        nd,
				        "qkv_hidden_sizes' %lld is not a positive multiple of "
				        "num_heads %lld",
				        (long long)hs[i], (long long)n);
		if (hs[0] != hs[1])
			return fe_fail(nd, "qkv_hidden_sizes' Q and K sizes %lld and %lld differ",
			               (long long)hs[0], (long long)hs[1]);
	} else {
		hs[0] = hs[1] = hs[2] = w->type.dims[1] / 3;
		if (w->type.dims[1] % 3 || hs[0] % n || !hs[0])
			return fe_fail(nd,
			               "weights' %lld columns are not three hidden sizes of "
			               "num_heads %lld heads",
			               (long long)w->type.dims[1], (long long)n);
	}
	if (hs[0] + hs[1] + hs[2] != w->type.dims[1])
		return fe_fail(nd, "weights has %lld columns for qkv_hidden_sizes' %lld",
		               (long long)w->type.dims[1], (long long)(hs[0] + hs[1] + hs[2]));
	if (bias && !ms_shape(nd, bias, "bias", dt, &w->type.dims[1], 1))
		return false;
	qkv = binary(nd, IR_OP_MATMUL, x, w);
	if (bias)
		qkv = binary(nd, IR_OP_ADD, qkv, bias);
	q = split_heads(nd, fe_slice_axis(nd, qkv, 2, 0, hs[0], 1, -1), n, "Q");
	k = q ? split_heads(nd, fe_slice_axis(nd, qkv, 2, hs[0], hs[0] + hs[1], 1, -1), n, "K")
	      : NULL;
	v = k ? split_heads(nd, fe_slice_axis(nd, qkv, 2, hs[0] + hs[1], w->type.dims[1], 1, -1), n,
	                    "V")
	      : NULL;
	if (!v)
		return false;
	if ((pkv || named(nd, 1)) && hs[1] != hs[2])
		return fe_fail(nd,
		               "past and present stack K and V: qkv_hidden_sizes' K and V sizes "
		               "%lld and %lld must be equal",
		               (long long)hs[1], (long long)hs[2]);
	if (pkv) {
		const int64_t want[5] = { 2, b, n, 0, hs[1] / n };
		struct ir_value *kk[2], *vv[2];
		int64_t shape[4];
		if (!named(nd, 1))
			return fe_fail(nd,
			               "past needs the present output (ONNX Runtime's CPU kernel "
			               "fails without it)");
		if (!ms_shape(nd, pkv, "past", dt, want, 5))
			return false;
		past = pkv->type.dims[3];
		shape[0] = b, shape[1] = n, shape[2] = past, shape[3] = hs[1] / n;
		kk[0] = fe_reshape(nd, fe_slice_axis(nd, pkv, 0, 0, 1, 1, -1), shape, 4, -1);
		vv[0] = fe_reshape(nd, fe_slice_axis(nd, pkv, 0, 1, 2, 1, -1), shape, 4, -1);
		kk[1] = k, vv[1] = v;
		k = fe_concat(nd, kk, 2, 2, -1);
		v = fe_concat(nd, vv, 2, 2, -1);
		if (!k || !v)
			return false;
	}
	total = k->type.dims[2];
	if (mi && !(mask = key_mask(nd, mi, "mask_index", b, s, total, dt, fill, true, &none)) &&
	    !none)
		return false;
	if (ab && !(mask = add_attention_bias(nd, mask, ab, dt, b, n, s, total)))
		return false;
	/* total = past + S: unidirectional is the fused op's causal mask */
	y = fused(nd, q, k, v, mask, ms_scale(scale, hs[0] / n), uni && s > 1, past, 0, -1);
	if (!(y = merge_heads(nd, y, 0)))
		return false;
	fe_bind(nd, 0, y);
	if (named(nd, 1)) { /* [2, B, N, T, H]: K and V stacked */
		const int64_t shape[5] = { 1, b, n, total, hs[1] / n };
		struct ir_value *kv[2] = { fe_reshape(nd, k, shape, 5, -1),
			                   fe_reshape(nd, v, shape, 5, -1) };
		struct ir_value *present = fe_concat(nd, kv, 2, 0, 1);
		if (!present)
			return false;
		fe_bind(nd, 1, present);
	}
	return true;
}

/*
 * GroupQueryAttention's present cache [B, Hkv, t, H] after a step that is
 * not the first prompt: batch b's first off[b] rows of past, the step's x
 * [B, Hkv, S, H] at rows off[b] .. off[b] + S - 1, zeros after (ONNX
 * Runtime clears the buffer, then copies).
 */
static struct ir_value *cache_write(struct fe_node *nd, struct ir_value *past, struct ir_value *x,
                                    struct ir_value *off, int64_t t)
{
	const int64_t *d = x->type.dims, jd[4] = { 1, 1, t, 1 }, sd[4] = { 1, 1, d[2], 1 };
	enum ir_dtype dt = x->type.dtype;
	struct ir_value *base = past, *idx, *in[3];
	struct ir_node *n;
	if (!past)
		base = zeros(nd, dt, d[0], d[1], t, d[3]);
	else if (past->type.dims[2] < t) {
		struct ir_value *parts[2] = { past, zeros(nd, dt, d[0], d[1],
			                                  t - past->type.dims[2], d[3]) };
		base = fe_concat(nd, parts, 2, 2, -1);
	}
	base = fe_where(nd, binary(nd, IR_OP_LESS, iota(nd, t, jd, 4), off), base,
	                fe_scalar(nd, dt, 0), -1);
	idx = expand_to(nd, binary(nd, IR_OP_ADD, iota(nd, d[2], sd, 4), off), d, 4);
	if (!base || !idx)
		return NULL;
	in[0] = base, in[1] = idx, in[2] = x;
	n = fe_emit(nd, IR_OP_SCATTER_ELEMENTS, in, 3, NULL, 1);
	ir_set_i(nd->fe->m, n, "axis", 2);
	ir_set_s(nd->fe->m, n, "reduction", "none");
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

/*
 * A softmax with a sink (GroupQueryAttention's head_sink [Hq], or 0 for
 * smooth_softmax): ONNX Runtime adds e^sink to each row's denominator (and
 * takes the sink into the row's maximum), which is one more key whose score
 * is the sink: a key and a value of zeros at the end (their scaled,
 * softcapped score is 0), with the sink as its bias. *k and *v
 * [B, Hkv, Lk, H] gain that key; the mask (bool or a bias) becomes the bias
 * [B, Hq, S, Lk + 1].
 */
static struct ir_value *add_sink(struct fe_node *nd, struct ir_value *sink, struct ir_value **k,
                                 struct ir_value **v, struct ir_value *mask, int64_t hq, int64_t s)
{
	const int64_t *d = (*k)->type.dims;
	const int64_t bd[4] = { d[0], hq, s, d[2] }, cd[4] = { d[0], hq, s, 1 },
	              hd[4] = { 1, hq, 1, 1 };
	enum ir_dtype dt = (*k)->type.dtype;
	struct ir_value *kk[2] = { *k, zeros(nd, dt, d[0], d[1], 1, d[3]) };
	struct ir_value *vv[2] = { *v, zeros(nd, dt, d[0], d[1], 1, (*v)->type.dims[3]) };
	struct ir_value *parts[2];
	parts[0] = expand_to(nd, as_bias(nd, mask, dt, -INFINITY), bd, 4);
	parts[1] =
	        expand_to(nd, sink ? fe_reshape(nd, sink, hd, 4, -1) : fe_scalar(nd, dt, 0), cd, 4);
	*k = fe_concat(nd, kk, 2, 2, -1);
	*v = fe_concat(nd, vv, 2, 2, -1);
	return fe_concat(nd, parts, 2, 3, -1);
}

/*
 * com.microsoft GroupQueryAttention: query [B, S, Hq * H] with key and
 * value [B, S, Hkv * H] (or query packing all three), past_key and
 * past_value [B, Hkv, P, H], seqlens_k [B] (each batch's total length - 1)
 * and total_sequence_length (the batch's largest: a constant here, as it
 * decides the present's length max(total, P) and whether the step is the
 * first prompt). With do_rotary, Q and K are rotated at each token's
 * position (its batch's past length plus its row) by cos_cache and
 * sin_cache [max, rotary / 2].
 */
static bool imp_ms_gqa(struct fe_node *nd)
{
	static const char *const refused[16] = {
		[9] = "position_ids",   [12] = "k_scale",       [13] = "v_scale",
		[14] = "q_norm_weight", [15] = "k_norm_weight",
	};
	int64_t hq, hkv, window = fe_int(nd, "local_window_size", -1), total, b, s, h, t;
	bool causal = fe_int(nd, "causal", 1) != 0, rotary = fe_int(nd, "do_rotary", 0) != 0;
	bool inter = fe_int(nd, "rotary_interleaved", 0) != 0, prompt;
	float scale = fe_float(nd, "scale", 0), cap = fe_float(nd, "softcap", 0);
	const char *kq = fe_str(nd, "k_quant_type", "NONE"),
	           *vq = fe_str(nd, "v_quant_type", "NONE");
	struct ir_value *q, *k, *v, *pk, *pv, *len, *off = NULL, *keep, *mask, *y, *kp, *vp, *past;
	struct ir_value *sink = NULL, *j;
	/* ONNX Runtime's default is -1, which is off as 0 is */
	bool smooth = fe_int(nd, "smooth_softmax", 0) == 1;
	enum ir_dtype dt;
	fe_int(nd, "kv_cache_bit_width", 0);    /* only for a quantized cache */
	fe_float(nd, "qk_norm_epsilon", 1e-6f); /* only with q_norm_weight */
	if (!fe_req_int(nd, "num_heads", &hq) || !fe_req_int(nd, "kv_num_heads", &hkv) ||
	    !fe_inputs(nd, 1, 16) || nd->failed)
		return false;
	if (!fe_in(nd, 5) || !fe_in(nd, 6))
		return fe_fail(nd,
		               "inputs 5 (seqlens_k) and 6 (total_sequence_length) are required");
	if (fe_int(nd, "sliding_window_cache", 0))
		return fe_fail(nd,
		               "sliding_window_cache=1 (a window-sized cache that evicts) is not "
		               "supported");
	if (fe_int(nd, "qk_output", 0) || named(nd, 3))
		return fe_fail(nd, "qk_output (output 3, output_qk) is not supported");
	if (strcmp(kq, "NONE") || strcmp(vq, "NONE"))
		return fe_fail(nd,
		               "k_quant_type '%s', v_quant_type '%s': a quantized KV cache is "
		               "not supported",
		               kq, vq);
	for (int i = 9; i < nd->nin; i++)
		if (fe_in(nd, i) && refused[i])
			return fe_fail(nd, "input %d (%s) is not supported", i, refused[i]);
	if (window != -1 && (window <= 0 || !causal))
		return fe_fail(nd, "local_window_size %lld must be -1, or positive with causal=1",
		               (long long)window);
	if (!(cap >= 0) || !isfinite(cap))
		return fe_fail(nd, "softcap %g must be finite and not negative", cap);
	if (hq <= 0 || hkv <= 0 || hq % hkv)
		return fe_fail(nd,
		               "num_heads %lld must be a positive multiple of kv_num_heads %lld",
		               (long long)hq, (long long)hkv);
	q = nd->in[0], k = fe_in(nd, 1), v = fe_in(nd, 2), pk = fe_in(nd, 3), pv = fe_in(nd, 4);
	if (!ms_float(nd, q, "query"))
		return false;
	dt = q->type.dtype;
	if (q->type.rank != 3)
		return fe_fail(nd, "query must be [batch, sequence_length, hidden]");
	b = q->type.dims[0], s = q->type.dims[1];
	if (!k && !v) { /* packed: Hq + 2 Hkv heads */
		int64_t all = q->type.dims[2];
		if (all % (hq + 2 * hkv) || !all)
			return fe_fail(nd,
			               "packed QKV's %lld values are not num_heads + 2 * "
			               "kv_num_heads heads of one size",
			               (long long)all);
		h = all / (hq + 2 * hkv);
		k = fe_slice_axis(nd, q, 2, hq * h, (hq + hkv) * h, 1, -1);
		v = fe_slice_axis(nd, q, 2, (hq + hkv) * h, all, 1, -1);
		q = fe_slice_axis(nd, q, 2, 0, hq * h, 1, -1);
		if (!q || !k || !v)
			return false;
	} else {
		int64_t want[3] = { b, s, 0 };
		if (!k || !v)
			return fe_fail(nd, "key and value come together");
		if (q->type.dims[2] % hq || !q->type.dims[2])
			return fe_fail(nd, "query's %lld values are not num_heads %lld heads",
			               (long long)q->type.dims[2], (long long)hq);
		h = q->type.dims[2] / hq;
		want[2] = hkv * h;
		if (!ms_shape(nd, k, "key", dt, want, 3) || !ms_shape(nd, v, "value", dt, want, 3))
			return false;
	}
	if (!fe_need_values(nd, 6))
		return false;
	if (ir_type_elems(&nd->in[6]->type) != 1 || !ir_dtypes[nd->in[6]->type.dtype].is_int)
		return fe_fail(nd, "total_sequence_length must be one integer");
	total = (int64_t)ir_load_f64(nd->in[6]->type.dtype, nd->in[6]->data, 0);
	if (total < s)
		return fe_fail(nd, "total_sequence_length %lld is less than sequence_length %lld",
		               (long long)total, (long long)s);
	/* ONNX Runtime: the first prompt is the step that is all of the total */
	prompt = s == total;
	if (!prompt && s > 1 && b != 1)
		return fe_fail(nd,
		               "a step of %lld tokens after a past (total_sequence_length %lld) "
		               "needs batch size 1",
		               (long long)s, (long long)total);
	t = total;
	if (pk || pv) {
		const int64_t want[4] = { b, hkv, 0, h };
		if (!pk || !pv)
			return fe_fail(nd, "past_key and past_value come together");
		if (!ms_shape(nd, pk, "past_key", dt, want, 4) ||
		    !ms_shape(nd, pv, "past_value", dt, pk->type.dims, 4))
			return false;
		if (pk->type.dims[2] > t)
			t = pk->type.dims[2];
	}
	/* the total length n = seqlens_k + 1, and the past length n - S */
	if (!(len = per_batch(nd, nd->in[5], b, "seqlens_k")))
		return false;
	len = binary(nd, IR_OP_ADD, len, fe_scalar(nd, IR_I64, 1));
	if (!prompt)
		off = binary(nd, IR_OP_SUB, len, fe_scalar(nd, IR_I64, (double)s));
	q = split_heads(nd, q, hq, "query");
	k = q ? split_heads(nd, k, hkv, "key") : NULL;
	v = k ? split_heads(nd, v, hkv, "value") : NULL;
	if (!v)
		return false;
	if (rotary) {
		struct ir_value *cos = fe_in(nd, 7), *sin = fe_in(nd, 8), *pos;
		const int64_t sd[2] = { 1, s }, bd[2] = { b, 1 };
		int64_t want[2] = { 0, 0 };
		if (!cos || !sin)
			return fe_fail(nd, "do_rotary=1 needs cos_cache and sin_cache");
		if (!ms_shape(nd, cos, "cos_cache", dt, want, 2))
			return false;
		want[0] = cos->type.dims[0], want[1] = cos->type.dims[1];
		if (!ms_shape(nd, sin, "sin_cache", dt, want, 2))
			return false;
		if (2 * want[1] > h || !want[1])
			return fe_fail(nd,
			               "cos_cache's %lld rotary values exceed half the head size "
			               "%lld",
			               (long long)want[1], (long long)h);
		if (want[0] < total)
			return fe_fail(nd,
			               "cos_cache's %lld positions are fewer than "
			               "total_sequence_length %lld",
			               (long long)want[0], (long long)total);
		pos = iota(nd, s, sd, 2);
		if (off)
			pos = binary(nd, IR_OP_ADD, pos, fe_reshape(nd, off, bd, 2, -1));
		q = fe_rotary(nd, q, cos, sin, pos, inter);
		k = fe_rotary(nd, k, cos, sin, pos, inter);
		if (!q || !k)
			return false;
	}
	if (prompt) { /* the step's keys, then zeros to the present's length */
		kp = k, vp = v;
		if (t > s) {
			struct ir_value *kk[2] = { k, zeros(nd, dt, b, hkv, t - s, h) };
			struct ir_value *vv[2] = { v, kk[1] };
			kp = fe_concat(nd, kk, 2, 2, -1);
			vp = fe_concat(nd, vv, 2, 2, -1);
		}
	} else {
		kp = cache_write(nd, pk, k, off, t);
		vp = cache_write(nd, pv, v, off, t);
		if (!kp || !vp)
			return false;
		k = kp, v = vp;
	}
	if (fe_in(nd, 11)) {
		const int64_t want[1] = { hq };
		if (!ms_shape(nd, fe_in(nd, 11), "head_sink", dt, want, 1))
			return false;
		sink = fe_in(nd, 11);
	}
	/* what row i of batch b sees: j < n, and causal j <= i + past (the
	 * fused op's own mask in the first prompt, where the past is 0, unless
	 * a sink key follows the keys), the last local_window_size of them */
	past = prompt ? fe_scalar(nd, IR_I64, 0) : off;
	j = key_index(nd, k->type.dims[2]);
	keep = binary(nd, IR_OP_LESS, j, len);
	if (causal && (!prompt || sink || smooth))
		keep = binary(nd, IR_OP_AND, keep, diagonal(nd, IR_OP_LESS_EQUAL, j, past, s));
	if (window > 0)
		keep = binary(
		        nd, IR_OP_AND, keep,
		        diagonal(nd, IR_OP_GREATER, j,
		                 binary(nd, IR_OP_SUB, past, fe_scalar(nd, IR_I64, (double)window)),
		                 s));
	mask = keep;
	if (fe_in(nd, 10)) { /* added after the softcap, as the fused op does */
		struct ir_value *ab =
		        add_attention_bias(nd, NULL, fe_in(nd, 10), dt, b, hq, s, total);
		mask = ab ? binary(nd, IR_OP_ADD, pad_mask(nd, ab, k->type.dims[2]),
		                   as_bias(nd, keep, dt, -INFINITY))
		          : NULL;
	}
	if ((sink || smooth) && mask)
		mask = add_sink(nd, sink, &k, &v, mask, hq, s);
	y = fused(nd, q, k, v, mask, ms_scale(scale, h), causal && prompt && !sink && !smooth, 0,
	          cap, -1);
	if (!(y = merge_heads(nd, y, 0)) || !kp || !vp)
		return false;
	fe_bind(nd, 0, y);
	fe_bind(nd, 1, kp);
	fe_bind(nd, 2, vp);
	return true;
}

/* ------------------------------------------------------------------------ */
/* FlexAttention                                                            */
/* ------------------------------------------------------------------------ */

/*
 * ai.onnx.preview FlexAttention (version 1): attention with user sub-graphs
 * on the scores and on the probabilities.
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
	k = fe_binary(nd, IR_OP_MUL, repeat_heads(nd, k, hq), sq, -1);
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
	v = repeat_heads(nd, v, hq);
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

#define MS "com.microsoft"
const struct fe_op fe_ops_attention[] = {
	{ "Attention", imp_attention, IR_OP_ATTENTION, { 23, 24, 25 } },
	{ "Attention", imp_ms_attention, IR_OP_ATTENTION, { 1 }, .domain = MS },
	{ "MultiHeadAttention", imp_ms_mha, IR_OP_ATTENTION, { 1 }, .domain = MS },
	{ "GroupQueryAttention", imp_ms_gqa, IR_OP_ATTENTION, { 1 }, .domain = MS },
	{ "FlexAttention", imp_flex_attention, IR_OP_SOFTMAX, { 1 }, .domain = "ai.onnx.preview" },
	{ NULL, NULL, 0, { 0 } },
};
