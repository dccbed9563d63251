/*
 * ops_transformer.c - importers for the activations, normalizations and
 * position encodings of transformers: ONNX's Gelu, Swish, RMSNormalization
 * and RotaryEmbedding, and the com.microsoft ops ONNX Runtime's transformer
 * optimizer writes into the models users ship (Gelu, FastGelu, BiasGelu,
 * QuickGelu, BiasAdd, SkipLayerNormalization, SimplifiedLayerNormalization,
 * SkipSimplifiedLayerNormalization, FusedMatMul, RotaryEmbedding). Any
 * other com.microsoft op is refused by name (import.c).
 *
 * Each is lowered to IR ops, so inference, folding, export, mixed
 * precision, gradients and both targets are those ops'. The activations'
 * elementwise chains fuse into one generated kernel: a Gelu costs what a
 * gelu IR op would. Half-precision inputs are computed in FP32 where the
 * spec says so (stash_type) and, for the activations, because the generated
 * kernel computes in FP32 anyway: the casts fuse.
 */
#include "fe.h"

#include <math.h>
#include <string.h>

static bool bind1(struct fe_node *nd, struct ir_value *y)
{
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	return true;
}

static bool is_half(enum ir_dtype t) { return t == IR_F16 || t == IR_BF16; }

/* x in type t (x itself when it already is). */
static struct ir_value *as_type(struct fe_node *nd, struct ir_value *x, enum ir_dtype t, int k)
{
	return x && x->type.dtype != t ? fe_cast(nd, x, t, k) : x;
}

static struct ir_value *mul(struct fe_node *nd, struct ir_value *a, struct ir_value *b, int k)
{
	return fe_binary(nd, IR_OP_MUL, a, b, k);
}

static struct ir_value *add(struct fe_node *nd, struct ir_value *a, struct ir_value *b, int k)
{
	return fe_binary(nd, IR_OP_ADD, a, b, k);
}

/* x times the constant c, in x's type. */
static struct ir_value *scale(struct fe_node *nd, struct ir_value *x, double c, int k)
{
	return x ? mul(nd, x, fe_scalar(nd, x->type.dtype, c), k) : NULL;
}

static bool float_input(struct fe_node *nd, int i)
{
	enum ir_dtype t = nd->in[i]->type.dtype;
	if (!ir_dtypes[t].is_float)
		return fe_fail(nd, "input %d has type %s; the op takes float types", i,
		               ir_dtype_name(t));
	return true;
}

/* ------------------------------------------------------------------------ */
/* Activations                                                              */
/* ------------------------------------------------------------------------ */

enum act { GELU_ERF, GELU_TANH, SWISH };

/* The activation of x (in x's type), named after output k. */
static struct ir_value *activate(struct fe_node *nd, struct ir_value *x, enum act a, double alpha,
                                 int k)
{
	struct ir_value *inner = NULL;
	if (!x)
		return NULL;
	switch (a) {
	case GELU_ERF: /* x/2 (1 + erf(x/sqrt(2))) */
		inner = fe_unary(nd, IR_OP_ERF, scale(nd, x, M_SQRT1_2, -1), -1);
		break;
	case GELU_TANH: /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
		inner = scale(nd, mul(nd, mul(nd, x, x, -1), x, -1), 0.044715, -1);
		inner = scale(nd, add(nd, x, inner, -1), sqrt(2 / M_PI), -1);
		inner = fe_unary(nd, IR_OP_TANH, inner, -1);
		break;
	case SWISH: /* x sigmoid(alpha x) */
		return mul(
		        nd, x,
		        fe_unary(nd, IR_OP_SIGMOID, alpha == 1 ? x : scale(nd, x, alpha, -1), -1),
		        k);
	}
	return mul(nd, scale(nd, x, 0.5, -1), add(nd, inner, fe_scalar(nd, x->type.dtype, 1), -1),
	           k);
}

/* The activation of x + bias (bias may be NULL), computed in FP32 for half
 * types, as ONNX output 0. */
static bool activation(struct fe_node *nd, struct ir_value *bias, enum act a, double alpha)
{
	struct ir_value *x = nd->in[0];
	enum ir_dtype t = x->type.dtype;
	if (!float_input(nd, 0))
		return false;
	if (bias)
		x = add(nd, x, bias, -1);
	if (!is_half(t))
		return bind1(nd, activate(nd, x, a, alpha, 0));
	return bind1(nd, fe_cast(nd, activate(nd, as_type(nd, x, IR_F32, -1), a, alpha, -1), t, 0));
}

static bool imp_gelu(struct fe_node *nd)
{
	const char *approx = fe_str(nd, "approximate", "none");
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	if (strcmp(approx, "none") && strcmp(approx, "tanh"))
		return fe_fail(nd, "approximate='%s' is not one of 'none' and 'tanh'", approx);
	return activation(nd, NULL, approx[0] == 't' ? GELU_TANH : GELU_ERF, 0);
}

static bool imp_swish(struct fe_node *nd)
{
	float alpha = fe_float(nd, "alpha", 1.0f);
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	return activation(nd, NULL, SWISH, alpha);
}

/* com.microsoft Gelu (erf), BiasGelu (erf, of A + B), FastGelu (tanh, of
 * X + an optional bias). */
static bool imp_ms_gelu(struct fe_node *nd)
{
	bool biased = !strcmp(nd->op, "BiasGelu"), fast = !strcmp(nd->op, "FastGelu");
	if (!fe_inputs(nd, biased ? 2 : 1, fast || biased ? 2 : 1))
		return false;
	return activation(nd, fe_in(nd, 1), fast ? GELU_TANH : GELU_ERF, 0);
}

static bool imp_quick_gelu(struct fe_node *nd)
{
	float alpha = fe_float(nd, "alpha", 1.702f);
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	return activation(nd, NULL, SWISH, alpha);
}

static bool imp_bias_add(struct fe_node *nd)
{
	if (!fe_inputs(nd, 3, 3))
		return false;
	return bind1(nd, add(nd, add(nd, nd->in[0], nd->in[1], -1), nd->in[2], 0));
}

/* ------------------------------------------------------------------------ */
/* Normalizations                                                           */
/* ------------------------------------------------------------------------ */

/* The type a normalization with stash_type computes x in: the wider of the
 * two. */
static bool stash_type(struct fe_node *nd, enum ir_dtype x, enum ir_dtype *out)
{
	int64_t code = fe_int(nd, "stash_type", 1);
	enum ir_dtype s = ir_dtype_from_onnx((int)code);
	if (nd->failed)
		return false;
	if (s == IR_DT_NONE || !ir_dtypes[s].is_float)
		return fe_fail(nd, "stash_type %lld is not a float type", (long long)code);
	*out = ir_dtypes[x].size > ir_dtypes[s].size || (is_half(x) && is_half(s)) ? x : s;
	return true;
}

/* x / sqrt(mean(x^2 over [axis, rank)) + eps), computed in type t; the
 * inverse root mean square (keeping dims, type t) in *inv if asked. */
static struct ir_value *rms(struct fe_node *nd, struct ir_value *x, int axis, float eps,
                            enum ir_dtype t, struct ir_value **inv)
{
	int64_t axes[IR_MAX_RANK], count = 1;
	int n = 0;
	struct ir_value *ms, *r;
	for (int i = axis; i < x->type.rank; i++) {
		axes[n++] = i;
		count *= x->type.dims[i];
	}
	x = as_type(nd, x, t, -1);
	ms = fe_reduce(nd, IR_OP_REDUCE_SUM_SQUARE, x, axes, n, true, -1);
	ms = fe_binary(nd, IR_OP_DIV, ms, fe_scalar(nd, t, (double)count), -1);
	r = fe_unary(nd, IR_OP_RECIPROCAL,
	             fe_unary(nd, IR_OP_SQRT, add(nd, ms, fe_scalar(nd, t, eps), -1), -1), -1);
	if (inv)
		*inv = r;
	return mul(nd, x, r, -1);
}

/* RMSNormalization (23) and com.microsoft SimplifiedLayerNormalization:
 * normalized in the stash type, cast back to X's type, times the scale;
 * the latter's output 1 is the inverse root mean square. */
static bool imp_rms_norm(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", -1);
	float eps = fe_float(nd, "epsilon", 1e-5f);
	struct ir_value *x, *inv = NULL;
	enum ir_dtype t = IR_F32;
	bool ms = nd->def->domain != NULL; /* SimplifiedLayerNormalization */
	if (!fe_inputs(nd, 2, 2) || nd->failed || !float_input(nd, 0) ||
	    !stash_type(nd, nd->in[0]->type.dtype, &t))
		return false;
	if (nd->nout > (ms ? 2 : 1))
		return fe_fail(nd, "the op has at most %d outputs, not %d", ms ? 2 : 1, nd->nout);
	if ((axis = fe_axis(nd, axis, nd->in[0]->type.rank, "axis")) < 0)
		return false;
	x = rms(nd, nd->in[0], (int)axis, eps, t, &inv);
	if (!bind1(nd, mul(nd, as_type(nd, x, nd->in[0]->type.dtype, -1), nd->in[1], 0)))
		return false;
	if (nd->nout > 1)
		fe_bind(nd, 1, as_type(nd, inv, IR_F32, 1));
	return true;
}

/* com.microsoft SkipLayerNormalization (input, skip, gamma, beta?, bias?)
 * and SkipSimplifiedLayerNormalization (input, skip, gamma, bias?): the
 * normalization of s = input + skip + bias over the last axis; outputs y,
 * mean (LayerNorm only), the inverse standard deviation, and s. */
static bool imp_skip_norm(struct fe_node *nd)
{
	bool simplified = !strcmp(nd->op, "SkipSimplifiedLayerNormalization");
	float eps = fe_float(nd, "epsilon", 1e-12f);
	struct ir_value *s, *bias;
	int axis;
	if (!fe_inputs(nd, 3, simplified ? 4 : 5) || nd->failed || !float_input(nd, 0))
		return false;
	if (nd->nout > 4)
		return fe_fail(nd, "the op has at most 4 outputs, not %d", nd->nout);
	axis = nd->in[0]->type.rank - 1;
	if (axis < 0)
		return fe_fail(nd, "input must have rank >= 1");
	bias = fe_in(nd, simplified ? 3 : 4);
	s = add(nd, nd->in[0], nd->in[1], bias ? -1 : 3);
	if (bias)
		s = add(nd, s, bias, 3);
	if (!s)
		return false;
	if (simplified) {
		struct ir_value *inv = NULL, *x;
		enum ir_dtype t = is_half(s->type.dtype) ? IR_F32 : s->type.dtype;
		if (nd->nout > 1 && nd->proto->output[1][0])
			return fe_fail(nd, "output 1 (mean) is not defined for "
			                   "SkipSimplifiedLayerNormalization");
		x = rms(nd, s, axis, eps, t, &inv);
		if (!bind1(nd, mul(nd, as_type(nd, x, s->type.dtype, -1), nd->in[2], 0)))
			return false;
		if (nd->nout > 2)
			fe_bind(nd, 2, as_type(nd, inv, IR_F32, 2));
	} else {
		struct ir_value *in[3] = { s, nd->in[2], fe_in(nd, 3) };
		if (!fe_layer_norm(nd, in, in[2] ? 3 : 2, axis, eps))
			return false;
	}
	fe_bind(nd, 3, s);
	return true;
}

/* ------------------------------------------------------------------------ */
/* FusedMatMul (com.microsoft)                                              */
/* ------------------------------------------------------------------------ */

/* x with its last two axes swapped. */
static struct ir_value *swap_last(struct fe_node *nd, struct ir_value *x)
{
	int64_t perm[IR_MAX_RANK];
	int r = x->type.rank;
	for (int i = 0; i < r; i++)
		perm[i] = i;
	perm[r - 2] = r - 1;
	perm[r - 1] = r - 2;
	return fe_transpose(nd, x, perm, -1);
}

static bool imp_fused_matmul(struct fe_node *nd)
{
	float alpha = fe_float(nd, "alpha", 1.0f);
	int64_t ta = fe_int(nd, "transA", 0), tb = fe_int(nd, "transB", 0);
	struct ir_value *in[2];
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	if (fe_int(nd, "transBatchA", 0) || fe_int(nd, "transBatchB", 0))
		return nd->failed ? false
		                  : fe_fail(nd, "transBatchA/transBatchB are not supported");
	for (int i = 0; i < 2; i++) {
		in[i] = nd->in[i];
		if ((i ? tb : ta) && in[i]->type.rank < 2)
			return fe_fail(nd, "transposing input %d needs rank >= 2", i);
		if (i ? tb : ta)
			in[i] = swap_last(nd, in[i]);
	}
	if (alpha == 1.0f)
		return bind1(nd, fe_binary(nd, IR_OP_MATMUL, in[0], in[1], 0));
	return bind1(nd, scale(nd, fe_binary(nd, IR_OP_MATMUL, in[0], in[1], -1), alpha, 0));
}

/* ------------------------------------------------------------------------ */
/* RotaryEmbedding (23, and com.microsoft's)                                */
/* ------------------------------------------------------------------------ */

/*
 * Rotates the first rdim features of each head of x by the angles whose
 * cosines and sines are cos, sin [B or 1, S, rdim/2]: pairs (x1, x2) are
 * the two halves of those features, or neighbours when interleaved, and
 * become (cos x1 - sin x2, sin x1 + cos x2); the rest pass through. x is
 * [B, heads, S, head] or [B, S, heads * head]; output k.
 */
static struct ir_value *rotate(struct fe_node *nd, struct ir_value *x, struct ir_value *cos,
                               struct ir_value *sin, bool interleaved, int64_t rdim, int64_t heads,
                               int k)
{
	const struct ir_type *t = &x->type;
	bool packed = t->rank == 3;
	int64_t d[5], hd, half = rdim / 2, cd[5];
	struct ir_value *x1, *x2, *real, *imag, *rot, *parts[2];
	int last = 3;
	if (packed) {
		if (heads <= 0 || t->dims[2] % heads) {
			fe_fail(nd,
			        "a 3-D input needs num_heads dividing its last dimension "
			        "(%lld)",
			        (long long)t->dims[2]);
			return NULL;
		}
		d[0] = t->dims[0], d[1] = t->dims[1], d[2] = heads, d[3] = t->dims[2] / heads;
		x = fe_reshape(nd, x, d, 4, -1);
	} else if (t->rank != 4) {
		{
			fe_fail(nd, "input must be 3-D or 4-D, not %d-D", t->rank);
			return NULL;
		}
	}
	if (!x || !cos || !sin)
		return NULL;
	memcpy(d, x->type.dims, sizeof *d * 4);
	hd = d[3];
	if (rdim == 0)
		rdim = hd, half = hd / 2;
	if (rdim < 0 || rdim > hd || rdim % 2) {
		fe_fail(nd,
		        "rotary_embedding_dim %lld must be even and at most the head "
		        "size %lld",
		        (long long)rdim, (long long)hd);
		return NULL;
	}
	if (cos->type.rank != 3 || cos->type.dims[2] != half ||
	    !ir_type_eq(&cos->type, &sin->type)) {
		fe_fail(nd, "cos and sin must be [batch, sequence, %lld]", (long long)half);
		return NULL;
	}
	/* cos, sin as [B, 1, S, half] (heads first) or [B, S, 1, half] */
	cd[0] = cos->type.dims[0];
	cd[1] = packed ? cos->type.dims[1] : 1;
	cd[2] = packed ? 1 : cos->type.dims[1];
	cd[3] = half;
	cd[4] = 1;
	rot = rdim < hd ? fe_slice_axis(nd, x, 3, 0, rdim, 1, -1) : x;
	if (interleaved) { /* [..., half, 2]: the pairs on a new last axis */
		int64_t r5[5] = { d[0], d[1], d[2], half, 2 };
		rot = fe_reshape(nd, rot, r5, 5, -1);
		last = 4;
	}
	cos = fe_reshape(nd, cos, cd, interleaved ? 5 : 4, -1);
	sin = fe_reshape(nd, sin, cd, interleaved ? 5 : 4, -1);
	x1 = interleaved ? fe_slice_axis(nd, rot, 4, 0, 1, 1, -1)
	                 : fe_slice_axis(nd, rot, 3, 0, half, 1, -1);
	x2 = interleaved ? fe_slice_axis(nd, rot, 4, 1, 2, 1, -1)
	                 : fe_slice_axis(nd, rot, 3, half, rdim, 1, -1);
	real = fe_binary(nd, IR_OP_SUB, mul(nd, cos, x1, -1), mul(nd, sin, x2, -1), -1);
	imag = add(nd, mul(nd, sin, x1, -1), mul(nd, cos, x2, -1), -1);
	parts[0] = real, parts[1] = imag;
	bool done = !interleaved && rdim == hd && !packed;
	rot = fe_concat(nd, parts, 2, last, done ? k : -1);
	if (done)
		return rot;
	if (interleaved) {
		int64_t r4[4] = { d[0], d[1], d[2], rdim };
		done = rdim == hd && !packed;
		rot = fe_reshape(nd, rot, r4, 4, done ? k : -1);
		if (done)
			return rot;
	}
	if (rdim < hd) {
		parts[0] = rot;
		parts[1] = fe_slice_axis(nd, x, 3, rdim, hd, 1, -1);
		rot = fe_concat(nd, parts, 2, 3, packed ? -1 : k);
	}
	return packed ? fe_reshape(nd, rot, t->dims, 3, k) : rot;
}

/* cache[ids] ([max, half] by [B, S]: [B, S, half]). */
static struct ir_value *gather_rows(struct fe_node *nd, struct ir_value *cache,
                                    struct ir_value *ids)
{
	struct ir_value *in[2] = { cache, ids };
	const char *name = fe_tmp_name(nd, "gather");
	struct ir_node *n;
	if (!cache || !ids)
		return NULL;
	n = fe_emit(nd, IR_OP_GATHER, in, 2, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", 0);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_rotary(struct fe_node *nd, struct ir_value *x, struct ir_value *cos_cache,
                           struct ir_value *sin_cache, struct ir_value *pos, bool interleaved)
{
	if (!x || !pos)
		return NULL;
	return rotate(nd, x, gather_rows(nd, cos_cache, pos), gather_rows(nd, sin_cache, pos),
	              interleaved, 2 * cos_cache->type.dims[1], 0, -1);
}

/* ONNX RotaryEmbedding (23): x, cos_cache, sin_cache, position_ids?; the
 * caches are [B, S, half] without position ids, [max, half] with them. */
static bool imp_rotary(struct fe_node *nd)
{
	int64_t inter = fe_int(nd, "interleaved", 0), heads = fe_int(nd, "num_heads", 0),
	        rdim = fe_int(nd, "rotary_embedding_dim", 0);
	struct ir_value *cos, *sin, *ids;
	if (!fe_inputs(nd, 3, 4) || nd->failed || !float_input(nd, 0))
		return false;
	cos = nd->in[1], sin = nd->in[2], ids = fe_in(nd, 3);
	if (ids) {
		cos = gather_rows(nd, cos, ids);
		sin = gather_rows(nd, sin, ids);
	}
	return bind1(nd, rotate(nd, nd->in[0], cos, sin, inter != 0, rdim, heads, 0));
}

/* com.microsoft RotaryEmbedding: x, position_ids, cos_cache, sin_cache;
 * position_ids [B, S], or [1]: the position of the first token. */
static bool imp_ms_rotary(struct fe_node *nd)
{
	int64_t inter = fe_int(nd, "interleaved", 0), heads = fe_int(nd, "num_heads", 0),
	        rdim = fe_int(nd, "rotary_embedding_dim", 0);
	struct ir_value *ids, *cos, *sin;
	if (!fe_inputs(nd, 4, 4) || nd->failed || !float_input(nd, 0))
		return false;
	if (fe_int(nd, "is_packed_batching", 0))
		return nd->failed ? false : fe_fail(nd, "is_packed_batching=1 is not supported");
	if (fe_float(nd, "scale", 1.0f) != 1.0f)
		return nd->failed ? false : fe_fail(nd, "scale other than 1 is not supported");
	ids = nd->in[1];
	if (ids->type.rank == 1 && ids->type.dims[0] == 1) {
		/* positions start .. start + S - 1, the same for every batch */
		int64_t s = nd->in[0]->type.dims[nd->in[0]->type.rank == 4 ? 2 : 1],
		        one_s[2] = { 1, s };
		struct ir_type rt = { .dtype = ids->type.dtype, .rank = 1, .dims = { s } };
		void *r = ir_arena_alloc(&nd->fe->m->arena, (size_t)(s * ir_dtype_size(rt.dtype)));
		for (int64_t i = 0; i < s; i++)
			ir_store_i64(rt.dtype, r, (size_t)i, i);
		ids = fe_reshape(nd, add(nd, ids, fe_const(nd, -1, &rt, r), -1), one_s, 2, -1);
	} else if (ids->type.rank != 2) {
		return fe_fail(nd, "position_ids must be [batch, sequence] or [1]");
	}
	cos = gather_rows(nd, nd->in[2], ids);
	sin = gather_rows(nd, nd->in[3], ids);
	return bind1(nd, rotate(nd, nd->in[0], cos, sin, inter != 0, rdim, heads, 0));
}

/* ------------------------------------------------------------------------ */
/* State-space and KV-cache ops (opsets 24, 27)                             */
/* ------------------------------------------------------------------------ */

/*
 * CausalConvWithState (27): a depthwise causal convolution over [B, C, L]
 * whose left context is the past state [B, C, K-1] (zeros without one),
 * with an optional bias and SiLU; present_state is the last K-1 steps of
 * the context and the input.
 */
static bool imp_causal_conv(struct fe_node *nd)
{
	const char *act = fe_str(nd, "activation", "none");
	struct ir_value *x, *w, *past, *ctx, *parts[2], *y;
	int64_t b, c, l, k, strides[1] = { 1 }, pads[2] = { 0, 0 }, dil[1] = { 1 };
	bool silu;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 4) || nd->failed || !float_input(nd, 0))
		return false;
	if (strcmp(act, "none") && strcmp(act, "silu") && strcmp(act, "swish"))
		return fe_fail(nd, "activation '%s' is not one of 'none', 'silu' and 'swish'", act);
	silu = strcmp(act, "none") != 0;
	x = nd->in[0], w = nd->in[1], past = fe_in(nd, 3);
	if (x->type.rank != 3 || w->type.rank != 3 || w->type.dims[0] != x->type.dims[1] ||
	    w->type.dims[1] != 1)
		return fe_fail(nd,
		               "input must be [batch, channels, length] and weight [channels, 1, "
		               "kernel]");
	b = x->type.dims[0], c = x->type.dims[1], l = x->type.dims[2], k = w->type.dims[2];
	if (k < 2 && nd->nout > 1 && nd->proto->output[1][0])
		return fe_fail(nd, "a kernel of size 1 gives an empty present_state, which is not "
		                   "supported (onnxc has no empty tensors)");
	if (past) {
		if (past->type.rank != 3 || past->type.dims[0] != b || past->type.dims[1] != c ||
		    past->type.dims[2] != k - 1)
			return fe_fail(nd, "past_state must be [%lld, %lld, %lld]", (long long)b,
			               (long long)c, (long long)(k - 1));
		parts[0] = past, parts[1] = x;
		ctx = fe_concat(nd, parts, 2, 2, -1);
	} else {
		ctx = x;
		pads[0] = k - 1; /* the zero context as the convolution's padding */
	}
	{
		struct ir_value *in[3] = { ctx, w, fe_in(nd, 2) };
		n = fe_emit(nd, IR_OP_CONV, in, in[2] ? 3 : 2, NULL, 1);
		ir_set_ints(nd->fe->m, n, "strides", strides, 1);
		ir_set_ints(nd->fe->m, n, "pads", pads, 2);
		ir_set_ints(nd->fe->m, n, "dilations", dil, 1);
		ir_set_i(nd->fe->m, n, "group", c);
		if (!ctx || !fe_finish(nd, n))
			return false;
		y = n->out[0];
	}
	if (silu) /* in FP32 for half types, as the function body computes it */
		y = as_type(nd,
		            activate(nd,
		                     as_type(nd, y, is_half(y->type.dtype) ? IR_F32 : y->type.dtype,
		                             -1),
		                     SWISH, 1, -1),
		            x->type.dtype, -1);
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	if (nd->nout < 2 || !nd->proto->output[1][0])
		return true;
	/* the last K-1 steps of context + input */
	if (!past && l < k - 1) {
		struct ir_type zt = { .dtype = x->type.dtype,
			              .rank = 3,
			              .dims = { b, c, k - 1 - l } };
		void *zeros = ir_arena_alloc(
		        &nd->fe->m->arena, (size_t)(ir_type_elems(&zt) * ir_dtype_size(zt.dtype)));
		memset(zeros, 0, (size_t)(ir_type_elems(&zt) * ir_dtype_size(zt.dtype)));
		parts[0] = fe_const(nd, -1, &zt, zeros), parts[1] = x;
		fe_bind(nd, 1, fe_concat(nd, parts, 2, 2, 1));
		return true;
	}
	l = ctx->type.dims[2];
	fe_bind(nd, 1, fe_slice_axis(nd, ctx, 2, l - (k - 1), l, 1, 1));
	return true;
}

/*
 * LinearAttention (27): one IR op on the packed [B, T, heads * dim] inputs
 * as ONNX gives them (the kernels index heads inside the last dimension, so
 * no transposes are materialised). The IR takes only the inputs present,
 * in ONNX's order (past and erase say whether those two are; the update
 * rule says for decay and beta, which it requires or forbids). A scale of
 * 0 (or none) is 1/sqrt(dk); chunk_size is a tuning hint with no effect on
 * the results.
 */
static bool imp_linear_attention(struct fe_node *nd)
{
	static const char *const names[] = { "past_state", "decay", "beta", "erase_gate" };
	const char *rule = fe_str(nd, "update_rule", "gated_delta");
	float scale = fe_float(nd, "scale", 0);
	int64_t hq, hkv;
	bool gated, delta;
	struct ir_value *in[7];
	const char *outs[2];
	struct ir_node *n;
	int nin = 3;
	fe_int(nd, "chunk_size", 64);
	if (!fe_req_int(nd, "q_num_heads", &hq) || !fe_req_int(nd, "kv_num_heads", &hkv) ||
	    !fe_inputs(nd, 3, 7) || nd->failed || !float_input(nd, 0))
		return false;
	gated = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
	delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
	if (!gated && !delta && strcmp(rule, "linear"))
		return fe_fail(
		        nd, "update_rule '%s' is not one of linear, gated, delta and gated_delta",
		        rule);
	for (int i = 1; i < 3; i++) {
		bool needed = i == 1 ? gated : delta;
		if (needed != (fe_in(nd, 3 + i) != NULL))
			return fe_fail(nd, "update_rule '%s' %s input %d (%s)", rule,
			               needed ? "requires" : "forbids", 3 + i, names[i]);
	}
	if (fe_in(nd, 6) && !delta)
		return fe_fail(nd, "update_rule '%s' forbids input 6 (erase_gate)", rule);
	memcpy(in, nd->in, sizeof *in * 3);
	for (int i = 0; i < 4; i++)
		if (fe_in(nd, 3 + i))
			in[nin++] = fe_in(nd, 3 + i);
	if (scale == 0 && nd->in[0]->type.rank == 3 && hq > 0 &&
	    nd->in[0]->type.dims[2] % hq == 0 && nd->in[0]->type.dims[2] > 0)
		scale = (float)(1 / sqrt((double)(nd->in[0]->type.dims[2] / hq)));
	outs[0] = fe_out_name(nd, 0);
	outs[1] = fe_out_name(nd, 1);
	n = fe_emit(nd, IR_OP_LINEAR_ATTENTION, in, nin, outs, 2);
	ir_set_i(nd->fe->m, n, "q_num_heads", hq);
	ir_set_i(nd->fe->m, n, "kv_num_heads", hkv);
	ir_set_f(nd->fe->m, n, "scale", scale);
	ir_set_s(nd->fe->m, n, "update_rule", rule);
	ir_set_i(nd->fe->m, n, "past", fe_in(nd, 3) != NULL);
	ir_set_i(nd->fe->m, n, "erase", fe_in(nd, 6) != NULL);
	if (!fe_finish(nd, n))
		return false;
	fe_bind(nd, 0, n->out[0]);
	fe_bind(nd, 1, n->out[1]);
	return true;
}

/*
 * TensorScatter (24): the KV-cache update. update [B, ..., S, ...] is
 * written into past_cache [B, ..., max, ...] along axis at positions
 * write_indices[b] + s (modulo max in circular mode; from 0 without
 * write_indices): a scatter_elements with those positions as indices.
 */
static bool imp_tensor_scatter(struct fe_node *nd)
{
	const char *mode = fe_str(nd, "mode", "linear");
	int64_t axis = fe_int(nd, "axis", -2), seq, max, shape[IR_MAX_RANK];
	struct ir_value *past, *up, *wi, *pos, *idx;
	struct ir_type rt = { .dtype = IR_I64 };
	int64_t *r;
	struct ir_node *n;
	if (!fe_inputs(nd, 2, 3) || nd->failed)
		return false;
	if (strcmp(mode, "linear") && strcmp(mode, "circular"))
		return fe_fail(nd, "mode '%s' is not one of 'linear' and 'circular'", mode);
	past = nd->in[0], up = nd->in[1], wi = fe_in(nd, 2);
	if (up->type.rank != past->type.rank || up->type.rank < 2)
		return fe_fail(nd, "update must have past_cache's rank (>= 2)");
	if ((axis = fe_axis(nd, axis, past->type.rank, "axis")) < 0)
		return false;
	if (axis == 0)
		return fe_fail(nd, "axis must not be the batch axis");
	for (int d = 0; d < up->type.rank; d++)
		if (d != axis && up->type.dims[d] != past->type.dims[d])
			return fe_fail(nd, "update and past_cache differ in dimension %d", d);
	seq = up->type.dims[axis], max = past->type.dims[axis];
	if (seq > max)
		return fe_fail(nd, "the update's %lld steps exceed the cache's %lld",
		               (long long)seq, (long long)max);
	/* s along axis, as [1, ..., S, ..., 1] */
	rt.rank = up->type.rank;
	for (int d = 0; d < rt.rank; d++)
		rt.dims[d] = d == axis ? seq : 1;
	r = ir_arena_alloc(&nd->fe->m->arena, sizeof *r * (size_t)seq);
	for (int64_t s = 0; s < seq; s++)
		r[s] = s;
	pos = fe_const(nd, -1, &rt, r);
	if (wi) {
		if (wi->type.rank != 1 || wi->type.dims[0] != up->type.dims[0] ||
		    !ir_dtypes[wi->type.dtype].is_int)
			return fe_fail(nd, "write_indices must be [%lld] integers",
			               (long long)up->type.dims[0]);
		for (int d = 0; d < rt.rank; d++)
			shape[d] = d ? 1 : up->type.dims[0];
		pos = add(nd, pos, fe_reshape(nd, as_type(nd, wi, IR_I64, -1), shape, rt.rank, -1),
		          -1);
	}
	if (!strcmp(mode, "circular")) {
		struct ir_value *in[2] = { pos, fe_scalar(nd, IR_I64, (double)max) };
		n = fe_emit(nd, IR_OP_MOD, in, 2, NULL, 1);
		ir_set_i(nd->fe->m, n, "fmod", 0);
		pos = pos && fe_finish(nd, n) ? n->out[0] : NULL;
	}
	if (!pos)
		return false;
	n = fe_emit(nd, IR_OP_EXPAND, &pos, 1, NULL, 1);
	ir_set_ints(nd->fe->m, n, "shape", up->type.dims, up->type.rank);
	if (!fe_finish(nd, n))
		return false;
	idx = n->out[0];
	{
		struct ir_value *in[3] = { past, idx, up };
		const char *name = fe_out_name(nd, 0);
		n = fe_emit(nd, IR_OP_SCATTER_ELEMENTS, in, 3, &name, 1);
		ir_set_i(nd->fe->m, n, "axis", axis);
		ir_set_s(nd->fe->m, n, "reduction", "none");
		if (!fe_finish(nd, n))
			return false;
	}
	fe_bind(nd, 0, n->out[0]);
	return true;
}

#define MS "com.microsoft"
const struct fe_op fe_ops_transformer[] = {
	{ "Gelu", imp_gelu, IR_OP_ERF, { 20 } },
	{ "Swish", imp_swish, IR_OP_SIGMOID, { 24 } },
	{ "RMSNormalization", imp_rms_norm, IR_OP_REDUCE_SUM_SQUARE, { 23 } },
	{ "RotaryEmbedding", imp_rotary, IR_OP_CONCAT, { 23 } },
	{ "TensorScatter", imp_tensor_scatter, IR_OP_SCATTER_ELEMENTS, { 24 } },
	{ "CausalConvWithState", imp_causal_conv, IR_OP_CONV, { 27 } },
	{ "LinearAttention", imp_linear_attention, IR_OP_LINEAR_ATTENTION, { 27 } },
	{ "Gelu", imp_ms_gelu, IR_OP_ERF, { 1 }, .domain = MS },
	{ "BiasGelu", imp_ms_gelu, IR_OP_ERF, { 1 }, .domain = MS },
	{ "FastGelu", imp_ms_gelu, IR_OP_TANH, { 1 }, .domain = MS },
	{ "QuickGelu", imp_quick_gelu, IR_OP_SIGMOID, { 1 }, .domain = MS },
	{ "BiasAdd", imp_bias_add, IR_OP_ADD, { 1 }, .domain = MS },
	{ "SkipLayerNormalization", imp_skip_norm, IR_OP_LAYER_NORM, { 1 }, .domain = MS },
	{ "SimplifiedLayerNormalization",
	  imp_rms_norm,
	  IR_OP_REDUCE_SUM_SQUARE,
	  { 1 },
	  .domain = MS },
	/* ONNX Runtime registers this one in the default domain too */
	{ "SimplifiedLayerNormalization",
	  imp_rms_norm,
	  IR_OP_REDUCE_SUM_SQUARE,
	  { 1 },
	  .domain = "" },
	{ "SkipSimplifiedLayerNormalization",
	  imp_skip_norm,
	  IR_OP_REDUCE_SUM_SQUARE,
	  { 1 },
	  .domain = MS },
	{ "FusedMatMul", imp_fused_matmul, IR_OP_MATMUL, { 1 }, .domain = MS },
	{ "RotaryEmbedding", imp_ms_rotary, IR_OP_CONCAT, { 1 }, .domain = MS },
	{ NULL, NULL, 0, { 0 } },
};
