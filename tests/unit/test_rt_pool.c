/*
 * test_rt_pool.c - rt_pool against the reference's pooling ops.
 *
 * Each case sets up one op (MaxPool with or without its indices output,
 * AveragePool, LpPool, or a global pool), lets the reference infer the
 * output shape (so ceil_mode windows that run past the padded input come
 * out as the compiler would describe them) and fills the descriptor the
 * way codegen/lower.c does. The kernel runs on 1 and 3 threads with
 * bit-identical results, then must match the reference: max values and
 * indices exactly, averages and Lp norms within f32 rounding. Shapes cover
 * 1-D, 2-D and 3-D pooling with strides, dilations, asymmetric pads,
 * count_include_pad, both storage orders, windows wider than the separable
 * path's buffer, rows longer than it, a window entirely in the padding,
 * size-0 batches and channels, and every supported dtype.
 */
#include "onnxc_rt.h"
#include "refcheck.h"

/* One pooling case; the attribute arrays hold nsp entries (pads 2*nsp). */
struct pcase {
	enum ir_op op;
	int nsp;
	int64_t in[5]; /* [n, c, spatial...] */
	int64_t k[3], st[3], dil[3], pads[6];
	int ceil, cip, p, order, indices;
};

static void set_pool(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct pcase *c = ud;
	if (c->op == IR_OP_GLOBAL_LP_POOL || c->op == IR_OP_LP_POOL)
		ir_set_i(m, n, "p", c->p);
	if (c->op != IR_OP_MAX_POOL && c->op != IR_OP_AVG_POOL && c->op != IR_OP_LP_POOL)
		return;
	ir_set_ints(m, n, "kernel", c->k, c->nsp);
	ir_set_ints(m, n, "strides", c->st, c->nsp);
	ir_set_ints(m, n, "pads", c->pads, 2 * c->nsp);
	ir_set_ints(m, n, "dilations", c->dil, c->nsp);
	ir_set_i(m, n, "ceil_mode", c->ceil);
	if (c->op == IR_OP_AVG_POOL)
		ir_set_i(m, n, "count_include_pad", c->cip);
	if (c->op == IR_OP_MAX_POOL)
		ir_set_i(m, n, "storage_order", c->order);
}

static bool is_global(enum ir_op op)
{
	return op == IR_OP_GLOBAL_AVG_POOL || op == IR_OP_GLOBAL_MAX_POOL ||
	       op == IR_OP_GLOBAL_LP_POOL;
}

/* The descriptor codegen/lower.c makes for case c with output type y. */
static struct rt_pool_desc desc_of(const struct pcase *c, enum ir_dtype t, const struct ir_type *y)
{
	bool global = is_global(c->op);
	struct rt_pool_desc d = {
		.dtype = ir_dtypes[t].onnx, .nsp = c->nsp, .n = c->in[0], .c = c->in[1]
	};
	d.kind = c->op == IR_OP_MAX_POOL || c->op == IR_OP_GLOBAL_MAX_POOL ? RT_POOL_MAX
	         : c->op == IR_OP_LP_POOL || c->op == IR_OP_GLOBAL_LP_POOL ? RT_POOL_LP
	                                                                   : RT_POOL_AVG;
	for (int i = 0; i < c->nsp; i++) {
		d.in[i] = c->in[2 + i];
		d.out[i] = y->dims[2 + i];
		d.k[i] = global ? c->in[2 + i] : c->k[i];
		d.stride[i] = global ? 1 : c->st[i];
		d.dil[i] = global ? 1 : c->dil[i];
		d.pad_begin[i] = global ? 0 : c->pads[i];
		d.pad_end[i] = global ? 0 : c->pads[c->nsp + i];
	}
	d.count_include_pad = c->op == IR_OP_AVG_POOL && c->cip;
	d.p = c->p;
	d.storage_order = c->op == IR_OP_MAX_POOL && c->order;
	return d;
}

static void check_pool(const struct pcase *c, enum ir_dtype t, uint64_t *seed)
{
	struct ref_tensor x = { .type = { .dtype = t, .rank = 2 + c->nsp } }, out[2];
	int nout = c->indices ? 2 : 1;
	struct rt_ctx *one, *three;
	struct rt_pool_desc d;
	int64_t n, ny;
	size_t es = (size_t)ir_dtype_size(t);
	void *y1, *y3;
	int64_t *i1 = NULL, *i3 = NULL;
	memcpy(x.type.dims, c->in, sizeof(int64_t) * (size_t)(2 + c->nsp));
	n = ir_type_elems(&x.type);
	x.data = malloc((size_t)n * es + 1);
	rand_fill(t, x.data, n, ir_dtypes[t].is_float ? -3 : -100, 100, seed);
	if (!ref_eval(c->op, set_pool, (void *)c, &x, 1, out, nout)) {
		CHECK(!"reference evaluation");
		free(x.data);
		return;
	}
	d = desc_of(c, t, &out[0].type);
	ny = ir_type_elems(&out[0].type);
	y1 = calloc((size_t)ny + 1, es);
	y3 = calloc((size_t)ny + 1, es);
	if (c->indices) {
		i1 = calloc((size_t)ny + 1, 8);
		i3 = calloc((size_t)ny + 1, 8);
	}
	CHECK_EQ(rt_ctx_create(&one, 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&three, 3), RT_OK);
	CHECK_EQ(rt_pool(one, &d, x.data, y1, i1), RT_OK);
	CHECK_EQ(rt_pool(three, &d, x.data, y3, i3), RT_OK);
	CHECK(!memcmp(y1, y3, (size_t)ny * es));
	CHECK(!c->indices || !memcmp(i1, i3, (size_t)ny * 8));
	{
		bool exact = d.kind == RT_POOL_MAX;
		double err = rel_err(t, y1, out[0].data, ny, exact ? 0 : 2e-6, exact ? 0 : 1e-7);
		if (!(err <= 1) || (c->indices && memcmp(i1, out[1].data, (size_t)ny * 8))) {
			fprintf(stderr, "pool %s %s nsp %d in [%lld,%lld,...]: error %g\n",
			        ir_ops[c->op].name, ir_dtype_name(t), c->nsp, (long long)c->in[0],
			        (long long)c->in[1], err);
			CHECK(!"pool matches the reference");
		}
	}
	rt_ctx_destroy(one);
	rt_ctx_destroy(three);
	for (int i = 0; i < nout; i++)
		free(out[i].data);
	free(x.data);
	free(y1);
	free(y3);
	free(i1);
	free(i3);
}

static const enum ir_dtype float_types[] = { IR_F32, IR_F64 };
static const enum ir_dtype max_types[] = { IR_F32, IR_F64, IR_I8, IR_U8, IR_I32, IR_I64 };

/* Windows of every shape, for every op that has them: nsp, [n, c,
 * spatial...], kernel, strides, dilations, pads, ceil_mode. */
struct win {
	int nsp;
	int64_t in[5], k[3], st[3], dil[3], pads[6];
	int ceil;
};

static const struct win windows[] = {
	/* 1-D, padded both ends, with and without ceil mode */
	{ 1, { 2, 3, 11 }, { 3 }, { 2 }, { 1 }, { 1, 1 }, 0 },
	{ 1, { 2, 3, 10 }, { 3 }, { 2 }, { 2 }, { 2, 0 }, 1 },
	/* 2-D: the ResNet stem, asymmetric pads, strided 2x3 and 1x1 windows */
	{ 2, { 1, 2, 7, 9 }, { 3, 3 }, { 2, 2 }, { 1, 1 }, { 1, 1, 1, 1 }, 0 },
	{ 2, { 2, 3, 6, 8 }, { 2, 3 }, { 1, 2 }, { 2, 1 }, { 0, 1, 1, 0 }, 0 },
	{ 2, { 1, 2, 8, 8 }, { 3, 3 }, { 3, 3 }, { 1, 1 }, { 0, 0, 1, 1 }, 1 },
	{ 2, { 1, 1, 5, 5 }, { 1, 1 }, { 2, 2 }, { 1, 1 }, { 0 }, 0 },
	/* 3-D */
	{ 3, { 1, 2, 5, 6, 7 }, { 2, 3, 2 }, { 2, 1, 2 }, { 1, 1, 1 }, { 1, 0, 1, 0, 1, 1 }, 0 },
	{ 3, { 2, 1, 4, 4, 4 }, { 3, 3, 3 }, { 2, 2, 2 }, { 1, 1, 1 }, { 1, 1, 1, 1, 1, 1 }, 1 },
	/* rows longer than the row buffer; a window wider than half of it */
	{ 2, { 1, 1, 3, 1500 }, { 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1, 1, 1 }, 0 },
	{ 2, { 1, 2, 2, 700 }, { 1, 300 }, { 1, 7 }, { 1, 1 }, { 0, 5, 0, 3 }, 0 },
	/* nothing to do */
	{ 2, { 0, 3, 5, 5 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0 }, 0 },
	{ 2, { 2, 0, 5, 5 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 0 }, 0 },
};

/* Case op over window w. */
static struct pcase case_of(enum ir_op op, const struct win *w)
{
	struct pcase c = { .op = op, .nsp = w->nsp, .ceil = w->ceil };
	memcpy(c.in, w->in, sizeof c.in);
	memcpy(c.k, w->k, sizeof c.k);
	memcpy(c.st, w->st, sizeof c.st);
	memcpy(c.dil, w->dil, sizeof c.dil);
	memcpy(c.pads, w->pads, sizeof c.pads);
	return c;
}

#define NWINDOWS (sizeof windows / sizeof windows[0])

static void test_max_pool(void)
{
	uint64_t seed = 1;
	for (size_t w = 0; w < NWINDOWS; w++)
		for (size_t ti = 0; ti < sizeof max_types / sizeof max_types[0]; ti++)
			for (int v = 0; v < 3; v++) {
				struct pcase c = case_of(IR_OP_MAX_POOL, &windows[w]);
				c.indices = v > 0;
				c.order = v == 2;
				check_pool(&c, max_types[ti], &seed);
			}
}

static void test_avg_lp_pool(void)
{
	uint64_t seed = 2;
	for (size_t w = 0; w < NWINDOWS; w++)
		for (int ti = 0; ti < 2; ti++)
			for (int v = 0; v < 5; v++) {
				struct pcase c = case_of(v < 2 ? IR_OP_AVG_POOL : IR_OP_LP_POOL,
				                         &windows[w]);
				/* the windows' dilations and ceil mode too
				 * (AveragePool-19, LpPool-18) */
				c.cip = v == 1;
				c.p = v - 1;
				check_pool(&c, float_types[ti], &seed);
			}
}

/* Global pools: a reduction per channel (rt_reduce), or the window path
 * for Lp with p > 2. */
static void test_global_pool(void)
{
	static const int64_t shapes[][5] = { { 2, 3, 4, 5 },     { 1, 2, 7 }, { 1, 4, 2, 3, 4 },
		                             { 1, 1, 300, 200 }, { 0, 2, 3 }, { 2, 3, 0, 4 } };
	static const int ranks[] = { 4, 3, 5, 4, 3, 4 };
	uint64_t seed = 3;
	for (int s = 0; s < 6; s++)
		for (int v = 0; v < 5; v++) {
			struct pcase c = { .nsp = ranks[s] - 2, .p = v < 2 ? 0 : v - 1 };
			c.op = v == 0   ? IR_OP_GLOBAL_MAX_POOL
			       : v == 1 ? IR_OP_GLOBAL_AVG_POOL
			                : IR_OP_GLOBAL_LP_POOL;
			memcpy(c.in, shapes[s], sizeof(int64_t) * (size_t)ranks[s]);
			for (int ti = 0; ti < 2; ti++)
				if (!(v == 0 && s == 5)) /* an empty max has no value */
					check_pool(&c, float_types[ti], &seed);
		}
}

/* A window whose taps all fall in the padding: max gives -inf (index 0),
 * average NaN without count_include_pad. */
static void test_pool_padding_only(void)
{
	struct pcase c = {
		.nsp = 1, .in = { 1, 2, 2 }, .k = { 2 }, .st = { 1 }, .dil = { 4 }, .pads = { 1, 2 }
	};
	uint64_t seed = 4;
	for (int v = 0; v < 2; v++) {
		c.op = IR_OP_MAX_POOL;
		c.indices = v;
		check_pool(&c, IR_F32, &seed);
	}
	c.op = IR_OP_AVG_POOL;
	c.k[0] = 3;
	c.dil[0] = 1;
	c.pads[0] = c.pads[1] = 2;
	c.in[2] = 0; /* only padding */
	for (c.cip = 0; c.cip < 2; c.cip++)
		check_pool(&c, IR_F64, &seed);
}

/* NaN propagates through max pooling; bad descriptors are refused. */
static void test_pool_nan_and_errors(void)
{
	struct rt_ctx *ctx;
	float x[8] = { 1, 2, NAN, 4, 5, 6, 7, 8 }, y[4];
	int64_t idx[4];
	struct rt_pool_desc d = { RT_F32, RT_POOL_MAX, 1, 1, 1, { 8 }, { 2 }, { 4 }, { 2 }, { 1 } };
	CHECK_EQ(rt_ctx_create(&ctx, 1), RT_OK);
	CHECK_EQ(rt_pool(ctx, &d, x, y, NULL), RT_OK);
	CHECK(y[0] == 2 && isnan(y[1]) && y[2] == 6 && y[3] == 8);
	CHECK_EQ(rt_pool(ctx, &d, x, y, idx), RT_OK);
	CHECK(y[0] == 2 && isnan(y[1]) && idx[1] == 2 && idx[3] == 7);
	d.kind = RT_POOL_AVG;
	d.dtype = RT_I32;
	CHECK_EQ(rt_pool(ctx, &d, x, y, NULL), RT_ERR_ARGUMENT);
	d.dtype = RT_F32;
	d.stride[0] = 0;
	CHECK_EQ(rt_pool(ctx, &d, x, y, NULL), RT_ERR_ARGUMENT);
	d.stride[0] = 2;
	d.nsp = 4;
	CHECK_EQ(rt_pool(ctx, &d, x, y, NULL), RT_ERR_ARGUMENT);
	rt_ctx_destroy(ctx);
}

TESTS(T(test_max_pool) T(test_avg_lp_pool) T(test_global_pool) T(test_pool_padding_only)
              T(test_pool_nan_and_errors))
