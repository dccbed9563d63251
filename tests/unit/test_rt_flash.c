/*
 * test_rt_flash.c - rt_attention (the tiled CPU kernel) against the
 * reference evaluator (double).
 *
 * Shapes cross the kernel's tiles (128 query rows, 128 keys) and stop short
 * of them; GQA and MQA; causal masks with offsets below, at and above 0
 * (rows before the first key fully masked); biases and boolean masks of
 * every rank, broadcast along some axes, with -inf entries and a fully
 * masked row; softcap; with and without the log-sum-exp. 1 and 3 threads
 * agree bit for bit; descriptors the kernel cannot run are refused. Where
 * the case keeps the log-sum-exp, rt_attention_grad runs from the forward's
 * results against the reference backward.
 */
#include "onnxc_rt.h"
#include "refcheck.h"

struct fa_case {
	int64_t b, hq, hkv, lq, lk, dk, dv;
	int causal;
	int64_t offset;
	int mask;       /* enum rt_attention_mask */
	int mrank;      /* the mask's rank (its dims: the trailing ones of the full shape) */
	unsigned bcast; /* bit d: the mask's dim d (of the full 4) is 1 */
	float softcap;
	bool lse;
};

static void set_fa(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct fa_case *c = ud;
	ir_set_f(m, n, "scale", 1 / sqrtf((float)c->dk));
	ir_set_i(m, n, "causal", c->causal);
	ir_set_i(m, n, "causal_offset", c->offset);
	ir_set_f(m, n, "softcap", c->softcap);
}

static struct ref_tensor tensor(enum ir_dtype t, int rank, const int64_t *dims, uint64_t *seed)
{
	struct ref_tensor r = { .type = { .dtype = t, .rank = rank } };
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= r.type.dims[i] = dims[i];
	r.data = malloc((size_t)ir_dtype_size(t) * (size_t)n + 1);
	for (int64_t i = 0; i < n; i++) {
		double u;
		*seed ^= *seed << 13;
		*seed ^= *seed >> 7;
		*seed ^= *seed << 17;
		u = (double)(*seed >> 11) / 9007199254740992.0;
		if (t == IR_BOOL)
			((unsigned char *)r.data)[i] = u < 0.8; /* mostly attend */
		else
			ir_store_f64(t, r.data, (size_t)i, u < 0.1 ? -INFINITY : 2 * u - 1);
	}
	return r;
}

/* The backward from the forward's own y and lse: 1 and 3 threads agree bit
 * for bit, and match the reference (double, scores recomputed there). */
static void check_grad(struct rt_ctx *one, struct rt_ctx *three, const struct fa_case *c,
                       const struct rt_attention_desc *d, const struct ref_tensor *fin, int nfin,
                       float *y, float *lse, uint64_t *seed, const char *what)
{
	int64_t nq = c->b * c->hq * c->lq * c->dk, nk = c->b * c->hkv * c->lk * c->dk;
	int64_t nv = c->b * c->hkv * c->lk * c->dv, ny = c->b * c->hq * c->lq * c->dv;
	size_t bytes = sizeof(float) * (size_t)(2 * (nq + nk + nv) + 3);
	float *g1 = malloc(bytes), *g3 = malloc(bytes);
	float *dy = malloc(sizeof(float) * (size_t)ny + 1);
	struct ref_tensor in[7], out[3];
	const void *mask = c->mask ? fin[3].data : NULL;
	int nin = 6;
	rand_fill(IR_F32, dy, ny, -1, 1, seed);
	for (int r = 0; r < 2; r++) {
		float *g = r ? g3 : g1;
		CHECK_EQ(rt_attention_grad(r ? three : one, d, fin[0].data, fin[1].data,
		                           fin[2].data, y, lse, dy, mask, g, g + nq, g + nq + nk),
		         RT_OK);
	}
	if (memcmp(g1, g3, sizeof(float) * (size_t)(nq + nk + nv))) {
		fprintf(stderr, "%s: backward: 1 and 3 threads differ\n", what);
		CHECK(!"thread-count independent backward");
	}
	in[0] = fin[0], in[1] = fin[1], in[2] = fin[2];
	in[3] = (struct ref_tensor){
		.type = { .dtype = IR_F32, .rank = 4, .dims = { c->b, c->hq, c->lq, c->dv } },
		.data = y
	};
	in[4] = (struct ref_tensor){
		.type = { .dtype = IR_F32, .rank = 3, .dims = { c->b, c->hq, c->lq } }, .data = lse
	};
	in[5] = in[3];
	in[5].data = dy;
	if (nfin == 4)
		in[nin++] = fin[3];
	if (!ref_eval(IR_OP_ATTENTION_GRAD, set_fa, (void *)c, in, nin, out, 3)) {
		fprintf(stderr, "%s\n", what);
		CHECK(!"reference evaluation of the backward");
	} else {
		double e[3] = { rel_err(IR_F32, g1, out[0].data, nq, 1e-3, 1e-4),
			        rel_err(IR_F32, g1 + nq, out[1].data, nk, 1e-3, 1e-4),
			        rel_err(IR_F32, g1 + nq + nk, out[2].data, nv, 1e-3, 1e-4) };
		if (!(e[0] <= 1) || !(e[1] <= 1) || !(e[2] <= 1)) {
			fprintf(stderr, "%s: backward error %g (dq), %g (dk), %g (dv)\n", what,
			        e[0], e[1], e[2]);
			CHECK(!"the backward matches the reference");
		}
		for (int i = 0; i < 3; i++)
			free(out[i].data);
	}
	free(g1);
	free(g3);
	free(dy);
}

static void check_fa(struct rt_ctx *one, struct rt_ctx *three, const struct fa_case *c,
                     uint64_t *seed)
{
	const int64_t qd[4] = { c->b, c->hq, c->lq, c->dk }, kd[4] = { c->b, c->hkv, c->lk, c->dk };
	const int64_t vd[4] = { c->b, c->hkv, c->lk, c->dv };
	const int64_t full[4] = { c->b, c->hq, c->lq, c->lk };
	int64_t md[4], st = 1;
	struct rt_attention_desc d = { .dtype = RT_F32,
		                       .mask = c->mask,
		                       .causal = c->causal,
		                       .causal_offset = c->offset,
		                       .batch = c->b,
		                       .q_heads = c->hq,
		                       .kv_heads = c->hkv,
		                       .lq = c->lq,
		                       .lk = c->lk,
		                       .dk = c->dk,
		                       .dv = c->dv,
		                       .scale = 1 / sqrtf((float)c->dk),
		                       .softcap = c->softcap };
	struct ref_tensor in[4], out[2];
	int64_t ny = c->b * c->hq * c->lq * c->dv, nl = c->b * c->hq * c->lq;
	float *y1 = malloc(sizeof(float) * (size_t)ny + 1),
	      *y3 = malloc(sizeof(float) * (size_t)ny + 1);
	float *l1 = malloc(sizeof(float) * (size_t)nl + 1),
	      *l3 = malloc(sizeof(float) * (size_t)nl + 1);
	char what[200];
	int nin = 3;
	for (int i = 0; i < 3; i++) {
		in[i].type.dtype = IR_F32;
		in[i].type.rank = 4;
	}
	rand_fill(IR_F32, in[0].data = malloc(sizeof(float) * (size_t)(ny / c->dv * c->dk) + 1),
	          c->b * c->hq * c->lq * c->dk, -2, 2, seed);
	rand_fill(IR_F32,
	          in[1].data = malloc(sizeof(float) * (size_t)(c->b * c->hkv * c->lk * c->dk) + 1),
	          c->b * c->hkv * c->lk * c->dk, -2, 2, seed);
	rand_fill(IR_F32,
	          in[2].data = malloc(sizeof(float) * (size_t)(c->b * c->hkv * c->lk * c->dv) + 1),
	          c->b * c->hkv * c->lk * c->dv, -1, 1, seed);
	memcpy(in[0].type.dims, qd, sizeof qd);
	memcpy(in[1].type.dims, kd, sizeof kd);
	memcpy(in[2].type.dims, vd, sizeof vd);
	if (c->mask) {
		for (int i = 0; i < c->mrank; i++) {
			int f = 4 - c->mrank + i;
			md[i] = c->bcast >> f & 1 ? 1 : full[f];
		}
		in[nin++] = tensor(c->mask == RT_ATTN_BOOL ? IR_BOOL : IR_F32, c->mrank, md, seed);
		for (int f = 3; f >= 0; f--) {
			int i = f - (4 - c->mrank);
			int64_t size = i >= 0 ? md[i] : 1;
			d.mask_strides[f] = size == 1 ? 0 : st;
			st *= size;
		}
		if (c->mask == RT_ATTN_BOOL && c->lq > 2 && !(c->bcast & 4) && c->mrank >= 2)
			memset((unsigned char *)in[3].data + 2 * (c->bcast & 8 ? 1 : c->lk), 0,
			       (size_t)(c->bcast & 8 ? 1 : c->lk)); /* row 2: fully masked */
	}
	snprintf(what, sizeof what,
	         "b%lld hq%lld hkv%lld lq%lld lk%lld dk%lld dv%lld causal%d/%lld mask%d rank%d "
	         "bcast%u cap%g lse%d",
	         (long long)c->b, (long long)c->hq, (long long)c->hkv, (long long)c->lq,
	         (long long)c->lk, (long long)c->dk, (long long)c->dv, c->causal,
	         (long long)c->offset, c->mask, c->mrank, c->bcast, c->softcap, c->lse);
	CHECK_EQ(rt_attention(one, &d, in[0].data, in[1].data, in[2].data,
	                      c->mask ? in[3].data : NULL, y1, c->lse ? l1 : NULL),
	         RT_OK);
	CHECK_EQ(rt_attention(three, &d, in[0].data, in[1].data, in[2].data,
	                      c->mask ? in[3].data : NULL, y3, c->lse ? l3 : NULL),
	         RT_OK);
	if (memcmp(y1, y3, sizeof(float) * (size_t)ny) ||
	    (c->lse && memcmp(l1, l3, sizeof(float) * (size_t)nl))) {
		fprintf(stderr, "%s: 1 and 3 threads differ\n", what);
		CHECK(!"thread-count independent");
	}
	if (!ref_eval(IR_OP_ATTENTION, set_fa, (void *)c, in, nin, out, c->lse ? 2 : 1)) {
		fprintf(stderr, "%s\n", what);
		CHECK(!"reference evaluation");
	} else {
		double ey = rel_err(IR_F32, y1, out[0].data, ny, 1e-4, 1e-5);
		double el = c->lse ? rel_err(IR_F32, l1, out[1].data, nl, 1e-5, 1e-5) : 0;
		if (!(ey <= 1) || !(el <= 1)) {
			fprintf(stderr, "%s: error %g (y), %g (lse)\n", what, ey, el);
			CHECK(!"matches the reference");
		}
		free(out[0].data);
		if (c->lse)
			free(out[1].data);
	}
	if (c->lse)
		check_grad(one, three, c, &d, in, nin, y1, l1, seed, what);
	for (int i = 0; i < nin; i++)
		free(in[i].data);
	free(y1);
	free(y3);
	free(l1);
	free(l3);
}

static void test_attention(void)
{
	static const struct fa_case cases[] = {
		/* b hq hkv lq lk dk dv causal off mask rank bcast cap lse */
		{ 2, 3, 3, 4, 6, 8, 8, 0, 0, RT_ATTN_NONE, 0, 0, 0, true },
		{ 1, 2, 2, 130, 600, 64, 48, 0, 0, RT_ATTN_NONE, 0, 0, 0, true },
		{ 1, 4, 2, 130, 600, 32, 16, 1, 470, RT_ATTN_NONE, 0, 0, 0, true },
		{ 2, 8, 1, 70, 70, 16, 24, 1, 0, RT_ATTN_NONE, 0, 0, 0, false },
		{ 1, 2, 2, 65, 300, 8, 8, 1, -3, RT_ATTN_NONE, 0, 0, 0, true },
		{ 1, 2, 2, 9, 9, 8, 8, 1, 40, RT_ATTN_NONE, 0, 0, 0, true },
		{ 2, 3, 3, 4, 6, 8, 10, 0, 0, RT_ATTN_BIAS, 4, 0, 0, true },
		{ 2, 4, 2, 5, 257, 8, 8, 1, 252, RT_ATTN_BIAS, 2, 0, 0, true },
		{ 2, 3, 1, 66, 300, 8, 8, 0, 0, RT_ATTN_BIAS, 4, 2, 0, true },
		{ 2, 3, 3, 6, 6, 8, 8, 0, 0, RT_ATTN_BIAS, 3, 4, 0, true },
		{ 2, 3, 3, 6, 9, 8, 8, 0, 0, RT_ATTN_BOOL, 2, 0, 0, true },
		{ 2, 6, 3, 70, 513, 8, 8, 1, 443, RT_ATTN_BOOL, 4, 1, 0, true },
		{ 1, 2, 2, 7, 7, 8, 8, 0, 0, RT_ATTN_BOOL, 4, 0, 0, true },
		{ 2, 3, 3, 4, 6, 8, 8, 0, 0, RT_ATTN_NONE, 0, 0, 2.0f, true },
		{ 2, 3, 3, 4, 6, 8, 8, 1, 2, RT_ATTN_BIAS, 2, 0, 1.5f, true },
		{ 1, 1, 1, 1, 1000, 128, 128, 1, 999, RT_ATTN_NONE, 0, 0, 0, true },
		/* more than one query block, or GQA: K and V packed once per call */
		{ 1, 4, 2, 100, 300, 64, 40, 0, 0, RT_ATTN_NONE, 0, 0, 0, true },
		{ 2, 2, 2, 300, 260, 24, 72, 0, 0, RT_ATTN_BIAS, 4, 2, 0, true },
		{ 1, 6, 2, 257, 257, 16, 16, 1, 0, RT_ATTN_BOOL, 4, 1, 0, true },
		{ 1, 2, 1, 140, 150, 40, 8, 1, 10, RT_ATTN_BIAS, 2, 0, 3.0f, true },
		{ 1, 1, 1, 200, 130, 260, 300, 0, 0, RT_ATTN_NONE, 0, 0, 0, true },
		/* the causal limit cuts a packed key block short, V of several panels */
		{ 1, 4, 2, 130, 600, 32, 72, 1, 470, RT_ATTN_NONE, 0, 0, 0, true },
		{ 1, 2, 1, 1, 44, 54, 252, 1, 40, RT_ATTN_BOOL, 4, 0, 0, true },
		{ 3, 2, 2, 1, 5, 3, 1, 0, 0, RT_ATTN_BOOL, 1, 0, 0, true },
	};
	struct rt_ctx *one, *three;
	struct rt_attention_desc bad = { .dtype = RT_F32,
		                         .batch = 1,
		                         .q_heads = 3,
		                         .kv_heads = 2,
		                         .lq = 2,
		                         .lk = 2,
		                         .dk = 2,
		                         .dv = 2,
		                         .scale = 1 };
	float x[64] = { 0 }, y[64];
	uint64_t seed = 41;
	CHECK_EQ(rt_ctx_create(&one, 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&three, 3), RT_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_fa(one, three, &cases[i], &seed);
	/* q heads not a multiple of kv heads; a half type (the CPU stages
	 * them); a mask kind without a mask, and a mask without a kind */
	CHECK_EQ(rt_attention(one, &bad, x, x, x, NULL, y, NULL), RT_ERR_ARGUMENT);
	bad.q_heads = 2;
	CHECK_EQ(rt_attention(one, &bad, x, x, x, NULL, y, NULL), RT_OK);
	bad.dtype = RT_F16;
	CHECK_EQ(rt_attention(one, &bad, x, x, x, NULL, y, NULL), RT_ERR_ARGUMENT);
	bad.dtype = RT_F32;
	bad.mask = RT_ATTN_BIAS;
	CHECK_EQ(rt_attention(one, &bad, x, x, x, NULL, y, NULL), RT_ERR_ARGUMENT);
	bad.mask = RT_ATTN_NONE;
	CHECK_EQ(rt_attention(one, &bad, x, x, x, x, y, NULL), RT_ERR_ARGUMENT);
	rt_ctx_destroy(one);
	rt_ctx_destroy(three);
}

TESTS(T(test_attention))
