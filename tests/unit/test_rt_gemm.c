/*
 * test_rt_gemm.c - rt_gemm against the reference interpreter.
 *
 * Every case runs the kernel on a context of 1 thread and one of 3 and
 * demands bit-identical results (each result element comes from the same
 * BLAS call or loop either way), then compares with the reference: Gemm
 * for the ONNX Gemm form (trans flags, alpha, beta, every kind of C), MatMul
 * for numpy batch broadcasting, and per-position Gemm for batched and
 * transposed descriptors that neither op has. The expected epilogue is the
 * reference's Add (bias row, residual) and activation ops applied to the
 * reference product. Shapes include size-0 and size-1 dimensions, a folded
 * batch, units cut into row and column blocks, and batches of small GEMMs
 * that run across the threads. Floats compare within a tolerance scaled by
 * the result's magnitude; integers exactly, including wrap-around. Every
 * f32 case runs on each kernel set (the CPU's best, ONNXC_GEMM=avx2, blas).
 */
#include "onnxc_rt.h"
#include "refcheck.h"

#include <time.h>

struct ctxs {
	struct rt_ctx *one, *three;
};

static struct ctxs ctxs_open(void)
{
	struct ctxs c = { NULL, NULL };
	CHECK_EQ(rt_ctx_create(&c.one, 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&c.three, 3), RT_OK);
	return c;
}

static void ctxs_close(struct ctxs *c)
{
	rt_ctx_destroy(c->one);
	rt_ctx_destroy(c->three);
}

static size_t nbytes(const struct ir_type *t)
{
	return (size_t)ir_type_elems(t) * (size_t)ir_dtype_size(t->dtype);
}

/* A random tensor of dtype t and dims[0..rank); values in [lo, hi). */
static struct ref_tensor tensor(enum ir_dtype t, int rank, const int64_t *dims, double lo,
                                double hi, uint64_t *seed)
{
	struct ref_tensor r = { .type = { .dtype = t, .rank = rank } };
	memcpy(r.type.dims, dims, sizeof(int64_t) * (size_t)rank);
	r.data = malloc(nbytes(&r.type) + 1);
	rand_fill(t, r.data, ir_type_elems(&r.type), lo, hi, seed);
	return r;
}

/* Integers small enough to stay exact through the reference's double
 * paths; wide ones for the wrap-around tests. */
static struct ref_tensor operand(enum ir_dtype t, int rank, const int64_t *dims, int wide,
                                 uint64_t *seed)
{
	if (ir_dtypes[t].is_float)
		return tensor(t, rank, dims, -1, 1, seed);
	if (wide)
		return tensor(t, rank, dims, -1e9, 1e9, seed);
	return tensor(t, rank, dims, -20, 20, seed);
}

/* ------------------------------------------------------------------------ */
/* The expected epilogue, through the reference's own ops                   */
/* ------------------------------------------------------------------------ */

static void act_attrs(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct rt_epilogue *ep = ud;
	switch (ep->act) {
	case RT_ACT_LEAKY_RELU: ir_set_f(m, n, "alpha", ep->alpha); break;
	case RT_ACT_CLIP:
		ir_set_f(m, n, "min", ep->alpha);
		ir_set_f(m, n, "max", ep->beta);
		break;
	case RT_ACT_HARD_SIGMOID:
		ir_set_f(m, n, "alpha", ep->alpha);
		ir_set_f(m, n, "beta", ep->beta);
		break;
	default: break;
	}
}

/* *y = op(*y, other) (other NULL: a unary op), through ref_eval. */
static void ref_apply(enum ir_op op, ref_attrs_fn set, void *ud, struct ref_tensor *y,
                      const struct ref_tensor *other)
{
	struct ref_tensor in[2] = { *y, other ? *other : *y }, out = { { 0 }, NULL };
	bool ok = ref_eval(op, set, ud, in, other ? 2 : 1, &out, 1);
	CHECK(ok);
	if (!ok)
		return;
	free(y->data);
	*y = out;
}

static void ref_epilogue(const struct rt_epilogue *ep, struct ref_tensor *y,
                         const struct ref_tensor *residual)
{
	static const enum ir_op ops[] = {
		[RT_ACT_RELU] = IR_OP_RELU,
		[RT_ACT_LEAKY_RELU] = IR_OP_LEAKY_RELU,
		[RT_ACT_CLIP] = IR_OP_CLIP,
		[RT_ACT_SIGMOID] = IR_OP_SIGMOID,
		[RT_ACT_TANH] = IR_OP_TANH,
		[RT_ACT_HARD_SIGMOID] = IR_OP_HARD_SIGMOID,
		[RT_ACT_HARD_SWISH] = IR_OP_HARD_SWISH,
	};
	if (ep->has_residual)
		ref_apply(IR_OP_ADD, NULL, NULL, y, residual);
	if (ep->act != RT_ACT_NONE)
		ref_apply(ops[ep->act], act_attrs, (void *)ep, y, NULL);
}

/* ------------------------------------------------------------------------ */
/* Running the kernel                                                       */
/* ------------------------------------------------------------------------ */

/* got against want: exact for integers, else within tol of the result's scale. */
static void check_close(const char *what, const struct ref_tensor *want, const void *got,
                        double tol)
{
	enum ir_dtype t = want->type.dtype;
	int64_t n = ir_type_elems(&want->type);
	double scale = 1, e;
	if (!ir_dtypes[t].is_float) {
		if (memcmp(got, want->data, nbytes(&want->type)) != 0) {
			fprintf(stderr, "%s: integer results differ\n", what);
			CHECK(0);
		}
		return;
	}
	for (int64_t i = 0; i < n; i++)
		scale = fmax(scale, fabs(ir_load_f64(t, want->data, (size_t)i)));
	e = rel_err(t, got, want->data, n, tol, tol * scale);
	if (e > 1)
		fprintf(stderr, "%s: error %.3g of tolerance\n", what, e);
	CHECK(e <= 1);
}

static double tol_of(enum ir_dtype t) { return t == IR_F64 ? 1e-10 : 1e-4; }

/* Runs d on 1 and 3 threads; checks they agree bit for bit and match want. */
static void run_once(const char *what, const struct rt_gemm_desc *d, const void *a, const void *b,
                     const void *c, const void *res, const struct ref_tensor *want)
{
	struct ctxs cx = ctxs_open();
	size_t bytes = nbytes(&want->type);
	void *y1 = malloc(bytes + 1), *y3 = malloc(bytes + 1);
	/* NaN (or -1) everywhere the kernel fails to write */
	memset(y1, 0xff, bytes + 1);
	memset(y3, 0xff, bytes + 1);
	CHECK_EQ(rt_gemm(cx.one, d, a, b, c, res, y1), RT_OK);
	CHECK_EQ(rt_gemm(cx.three, d, a, b, c, res, y3), RT_OK);
	if (memcmp(y1, y3, bytes) != 0) {
		fprintf(stderr, "%s: 1 and 3 threads differ\n", what);
		CHECK(0);
	}
	check_close(what, want, y1, tol_of(want->type.dtype));
	free(y1);
	free(y3);
	ctxs_close(&cx);
}

/*
 * run_once, and for f32 once more on each other kernel set (ONNXC_GEMM:
 * the CPU's best first, then AVX2 and OpenBLAS; a set the CPU lacks falls
 * back to one it has).
 */
static void run_check(const char *what, const struct rt_gemm_desc *d, const void *a, const void *b,
                      const void *c, const void *res, const struct ref_tensor *want)
{
	static const char *const sets[] = { "avx2", "blas" };
	char buf[200];
	run_once(what, d, a, b, c, res, want);
	for (size_t i = 0; d->dtype == RT_F32 && i < sizeof sets / sizeof sets[0]; i++) {
		setenv("ONNXC_GEMM", sets[i], 1);
		snprintf(buf, sizeof buf, "%s [%s]", what, sets[i]);
		run_once(buf, d, a, b, c, res, want);
	}
	unsetenv("ONNXC_GEMM");
}

static void free_all(struct ref_tensor *t, int n)
{
	for (int i = 0; i < n; i++)
		free(t[i].data);
}

/* ------------------------------------------------------------------------ */
/* Gemm                                                                     */
/* ------------------------------------------------------------------------ */

struct gemm_case {
	enum ir_dtype t;
	int64_t m, n, k;
	int ta, tb, bias;
	float alpha, beta;
	struct rt_epilogue ep;
	int wide;
};

static void gemm_attrs(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct gemm_case *c = ud;
	ir_set_f(m, n, "alpha", c->alpha);
	ir_set_f(m, n, "beta", c->beta);
	ir_set_i(m, n, "trans_a", c->ta);
	ir_set_i(m, n, "trans_b", c->tb);
}

/* C's shape for each bias kind (SCALAR as a rank-0 tensor). */
static int c_shape(const struct gemm_case *c, int64_t *dims)
{
	switch (c->bias) {
	case RT_BIAS_SCALAR: return 0;
	case RT_BIAS_ROW: dims[0] = c->n; return 1;
	case RT_BIAS_COL: dims[0] = c->m, dims[1] = 1; return 2;
	default: dims[0] = c->m, dims[1] = c->n; return 2;
	}
}

static void gemm_case(const struct gemm_case *c, uint64_t *seed)
{
	int64_t ad[2] = { c->ta ? c->k : c->m, c->ta ? c->m : c->k };
	int64_t bd[2] = { c->tb ? c->n : c->k, c->tb ? c->k : c->n };
	int64_t cd[2], yd[2] = { c->m, c->n };
	struct ref_tensor in[4], want = { { 0 }, NULL };
	struct rt_gemm_desc d = { .dtype = ir_dtypes[c->t].onnx,
		                  .m = c->m,
		                  .n = c->n,
		                  .k = c->k,
		                  .trans_a = c->ta,
		                  .trans_b = c->tb,
		                  .alpha = c->alpha,
		                  .beta = c->beta,
		                  .bias = c->bias,
		                  .ep = c->ep };
	char what[160];
	snprintf(what, sizeof what,
	         "gemm %s m=%lld n=%lld k=%lld ta=%d tb=%d bias=%d a=%g b=%g act=%d res=%d",
	         ir_dtype_name(c->t), (long long)c->m, (long long)c->n, (long long)c->k, c->ta,
	         c->tb, c->bias, c->alpha, c->beta, c->ep.act, c->ep.has_residual);
	in[0] = operand(c->t, 2, ad, c->wide, seed);
	in[1] = operand(c->t, 2, bd, c->wide, seed);
	in[2] = operand(c->t, c_shape(c, cd), cd, c->wide, seed);
	in[3] = operand(c->t, 2, yd, c->wide, seed);
	if (ref_eval(IR_OP_GEMM, gemm_attrs, (void *)c, in, c->bias ? 3 : 2, &want, 1)) {
		ref_epilogue(&c->ep, &want, &in[3]);
		run_check(what, &d, in[0].data, in[1].data, c->bias ? in[2].data : NULL,
		          c->ep.has_residual ? in[3].data : NULL, &want);
	} else {
		CHECK(0);
	}
	free(want.data);
	free_all(in, 4);
}

static const enum ir_dtype all_types[] = { IR_F32, IR_F64, IR_I32, IR_I64 };

/* Every dtype, trans flag, bias kind and scaling on small shapes. */
static void test_gemm_forms(void)
{
	static const int64_t shapes[][3] = {
		{ 1, 1, 1 }, { 3, 5, 7 },   { 0, 4, 3 },   { 4, 0, 3 },
		{ 4, 3, 0 }, { 1, 17, 33 }, { 33, 1, 17 }, { 24, 20, 40 },
	};
	static const float scales[][2] = { { 1, 1 }, { 0.5f, -2 } };
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (size_t ti = 0; ti < 4; ti++)
		for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
			for (int tr = 0; tr < 4; tr++)
				for (int bias = RT_BIAS_NONE; bias <= RT_BIAS_FULL; bias++)
					for (int sc = 0; sc < 2; sc++) {
						struct gemm_case c = {
							all_types[ti], shapes[si][0], shapes[si][1],
							shapes[si][2], tr & 1,        tr >> 1,
							bias,          scales[sc][0], scales[sc][1],
						};
						gemm_case(&c, &seed);
					}
}

/* Integer products and sums wrap. */
static void test_gemm_wrap(void)
{
	uint64_t seed = 7;
	for (size_t ti = 2; ti < 4; ti++)
		for (int tr = 0; tr < 4; tr++) {
			struct gemm_case c = { all_types[ti], 9, 11, 13, tr & 1, tr >> 1,
				               RT_BIAS_FULL,  1, 1 };
			c.wide = 1;
			gemm_case(&c, &seed);
		}
}

/* Bigger shapes: one unit, column blocks, row blocks, small blocks across threads. */
static void test_gemm_blocks(void)
{
	static const int64_t shapes[][3] = {
		{ 130, 300, 70 }, { 300, 1000, 8 }, { 1200, 250, 8 },
		{ 1, 300000, 1 }, { 300000, 1, 1 },
	};
	uint64_t seed = 11;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int tr = 0; tr < 4; tr += 3) {
			struct gemm_case c = {
				IR_F32,  shapes[si][0],     shapes[si][1], shapes[si][2], tr & 1,
				tr >> 1, 1 + (int)(si % 4), 1.5f,          0.25f
			};
			c.ep = (struct rt_epilogue){ RT_ACT_RELU, 0, 0, 1 };
			gemm_case(&c, &seed);
		}
}

/* Every activation, with and without a residual, per dtype. */
static void test_gemm_epilogues(void)
{
	static const struct rt_epilogue eps[] = {
		{ RT_ACT_NONE, 0, 0, 0 },
		{ RT_ACT_RELU, 0, 0, 0 },
		{ RT_ACT_LEAKY_RELU, 0.1f, 0, 0 },
		{ RT_ACT_CLIP, -0.5f, 0.75f, 0 },
		{ RT_ACT_SIGMOID, 0, 0, 0 },
		{ RT_ACT_TANH, 0, 0, 0 },
		{ RT_ACT_HARD_SIGMOID, 0.2f, 0.5f, 0 },
		{ RT_ACT_HARD_SWISH, 0, 0, 0 },
	};
	uint64_t seed = 5;
	for (size_t ti = 0; ti < 4; ti++)
		for (size_t ei = 0; ei < sizeof eps / sizeof eps[0]; ei++)
			for (int res = 0; res < 2; res++) {
				struct gemm_case c = { all_types[ti], 37, 45, 19,     0, 1,
					               RT_BIAS_ROW,   1,  1,  eps[ei] };
				bool is_int = !ir_dtypes[all_types[ti]].is_float;
				/* integer activations: the ones defined on integers */
				if (is_int && (ei == 2 || ei > 3))
					continue;
				if (is_int && ei == 3)
					c.ep.alpha = -30, c.ep.beta = 40;
				c.ep.has_residual = res;
				gemm_case(&c, &seed);
			}
}

/* ------------------------------------------------------------------------ */
/* MatMul: numpy batch broadcasting                                          */
/* ------------------------------------------------------------------------ */

/*
 * An operand's element stride along output batch dim i of a batch of rank
 * br: the size of everything inside that dim, or 0 where the operand lacks
 * the dim or has 1 there (numpy broadcasting aligns dims on the right).
 */
static int64_t batch_stride(const struct ir_type *t, int br, int i)
{
	int mat = t->rank >= 2 ? 2 : 0, at = i - br + (t->rank - mat);
	int64_t s = 1;
	if (at < 0 || t->dims[at] == 1 || mat == 0)
		return 0;
	for (int j = at + 1; j < t->rank; j++)
		s *= t->dims[j];
	return s;
}

/* The descriptor the compiler builds for MatMul (codegen/lower.c). */
static void matmul_desc(struct rt_gemm_desc *d, const struct ir_type *a, const struct ir_type *b,
                        const struct ir_type *o)
{
	d->dtype = ir_dtypes[a->dtype].onnx;
	d->m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
	d->k = a->dims[a->rank - 1];
	d->n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
	d->alpha = 1;
	d->batch_rank = o->rank - (a->rank >= 2) - (b->rank >= 2);
	for (int i = 0; i < d->batch_rank; i++) {
		d->batch_dims[i] = o->dims[i];
		d->a_strides[i] = batch_stride(a, d->batch_rank, i);
		d->b_strides[i] = batch_stride(b, d->batch_rank, i);
	}
}

struct mm_case {
	int ra, rb;
	int64_t a[5], b[5];
};

/* A MatMul, with a row bias (as the compiler fuses Add) and an epilogue. */
static void matmul_case(enum ir_dtype t, const struct mm_case *mc, int bias,
                        const struct rt_epilogue *ep, uint64_t *seed)
{
	struct ref_tensor in[4], want = { { 0 }, NULL };
	struct rt_gemm_desc d = { 0 };
	char what[160];
	int n = 0;
	snprintf(what, sizeof what,
	         "matmul %s rank %d x %d [..%lld,%lld] x [..%lld] bias=%d act=%d res=%d",
	         ir_dtype_name(t), mc->ra, mc->rb, (long long)mc->a[0],
	         (long long)mc->a[mc->ra - 1], (long long)mc->b[mc->rb - 1], bias, ep->act,
	         ep->has_residual);
	in[n++] = operand(t, mc->ra, mc->a, 0, seed);
	in[n++] = operand(t, mc->rb, mc->b, 0, seed);
	if (!ref_eval(IR_OP_MATMUL, NULL, NULL, in, 2, &want, 1)) {
		CHECK(0);
		free_all(in, n);
		return;
	}
	matmul_desc(&d, &in[0].type, &in[1].type, &want.type);
	in[n++] = operand(t, 1, &d.n, 0, seed);
	in[n++] = operand(t, want.type.rank, want.type.dims, 0, seed);
	if (bias) {
		d.bias = RT_BIAS_ROW;
		d.beta = 1;
		ref_apply(IR_OP_ADD, NULL, NULL, &want, &in[2]);
	}
	d.ep = *ep;
	ref_epilogue(ep, &want, &in[3]);
	run_check(what, &d, in[0].data, in[1].data, bias ? in[2].data : NULL,
	          ep->has_residual ? in[3].data : NULL, &want);
	free(want.data);
	free_all(in, n);
}

static const struct mm_case mm_cases[] = {
	{ 4, 3, { 2, 1, 3, 4 }, { 5, 4, 6 } },    /* both broadcast */
	{ 1, 2, { 4 }, { 4, 3 } },                /* a vector times a matrix */
	{ 2, 1, { 3, 4 }, { 4 } },                /* a matrix times a vector */
	{ 1, 1, { 4 }, { 4 } },                   /* a dot product: rank 0 */
	{ 3, 1, { 2, 3, 4 }, { 4 } },             /* batched matrix-vector */
	{ 1, 3, { 4 }, { 2, 4, 3 } },             /* a vector times a batch */
	{ 3, 2, { 2, 3, 4 }, { 4, 5 } },          /* folds into 6 rows */
	{ 3, 3, { 6, 3, 4 }, { 1, 4, 5 } },       /* folds: B broadcast by a 1 */
	{ 3, 3, { 2, 3, 4 }, { 2, 4, 5 } },       /* plain batch */
	{ 3, 3, { 1, 3, 4 }, { 6, 4, 5 } },       /* A broadcast */
	{ 4, 4, { 3, 1, 4, 5 }, { 1, 2, 5, 6 } }, /* outer product of batches */
	{ 4, 2, { 2, 3, 1, 7 }, { 7, 2 } },       /* m = 1 rows fold */
	{ 3, 2, { 2, 0, 3 }, { 3, 4 } },          /* m = 0 */
	{ 3, 2, { 0, 3, 4 }, { 4, 5 } },          /* an empty batch */
	{ 3, 2, { 5, 4, 0 }, { 0, 3 } },          /* k = 0: zeros */
	{ 3, 3, { 40, 8, 16 }, { 40, 16, 8 } },   /* small GEMMs across threads */
	{ 3, 3, { 2, 2, 8 }, { 2, 8, 140000 } },  /* column blocks per position */
	{ 3, 2, { 8, 64, 16 }, { 16, 600 } },     /* folded, blocked */
	{ 5, 2, { 2, 1, 1, 3, 5 }, { 5, 2 } },    /* rank 5 with ones */
};

static void test_matmul(void)
{
	static const struct rt_epilogue none = { 0 }, relu_res = { RT_ACT_RELU, 0, 0, 1 },
	                                tanh_res = { RT_ACT_TANH, 0, 0, 1 };
	uint64_t seed = 99;
	for (size_t i = 0; i < sizeof mm_cases / sizeof mm_cases[0]; i++) {
		for (size_t ti = 0; ti < 4; ti++)
			matmul_case(all_types[ti], &mm_cases[i], 0, &none, &seed);
		matmul_case(IR_F32, &mm_cases[i], 1, &relu_res, &seed);
		matmul_case(IR_F32, &mm_cases[i], 1, &tanh_res, &seed);
		matmul_case(IR_F64, &mm_cases[i], 1, &relu_res, &seed);
		matmul_case(IR_I64, &mm_cases[i], 1, &relu_res, &seed);
	}
}

/* ------------------------------------------------------------------------ */
/* Batched, transposed descriptors (no ONNX op has both): per-position Gemm  */
/* ------------------------------------------------------------------------ */

struct item_ref {
	const struct gemm_case *c;
	const struct ref_tensor *a, *b, *bias;
	struct ref_tensor want;
	int64_t oa, ob, p;
};

/* The reference for batch position it->p: a Gemm on that position's A and B. */
static void item_expect(struct item_ref *it)
{
	const struct gemm_case *c = it->c;
	int64_t es = ir_dtype_size(c->t), mn = c->m * c->n;
	struct ref_tensor in[3] = { { it->a->type }, { it->b->type }, *it->bias }, out;
	in[0].type.rank = in[1].type.rank = 2;
	memmove(in[0].type.dims, in[0].type.dims + 2, 2 * sizeof(int64_t));
	memmove(in[1].type.dims, in[1].type.dims + 1, 2 * sizeof(int64_t));
	in[0].data = (char *)it->a->data + it->oa * es;
	in[1].data = (char *)it->b->data + it->ob * es;
	if (ref_eval(IR_OP_GEMM, gemm_attrs, (void *)c, in, 3, &out, 1)) {
		memcpy((char *)it->want.data + it->p * mn * es, out.data, (size_t)(mn * es));
		free(out.data);
	} else {
		CHECK(0);
	}
}

/* A [3, 2, ...] batch with A varying over both dims and B only over the first. */
static void test_batched_trans(void)
{
	uint64_t seed = 4242;
	for (int tr = 0; tr < 4; tr++)
		for (int bias = RT_BIAS_SCALAR; bias <= RT_BIAS_FULL; bias++) {
			struct gemm_case c = { IR_F32, 5, 7, 6, tr & 1, tr >> 1, bias, 0.5f, 2 };
			int64_t ad[4] = { 3, 2, c.ta ? c.k : c.m, c.ta ? c.m : c.k };
			int64_t bd[3] = { 3, c.tb ? c.n : c.k, c.tb ? c.k : c.n }, cd[2];
			int64_t yd[4] = { 3, 2, c.m, c.n };
			struct ref_tensor a = operand(IR_F32, 4, ad, 0, &seed);
			struct ref_tensor b = operand(IR_F32, 3, bd, 0, &seed);
			struct ref_tensor cc = operand(IR_F32, c_shape(&c, cd), cd, 0, &seed);
			struct item_ref it = { &c, &a, &b, &cc, operand(IR_F32, 4, yd, 0, &seed) };
			struct rt_gemm_desc d = { .dtype = RT_F32,
				                  .m = c.m,
				                  .n = c.n,
				                  .k = c.k,
				                  .trans_a = c.ta,
				                  .trans_b = c.tb,
				                  .batch_rank = 2,
				                  .batch_dims = { 3, 2 },
				                  .a_strides = { 2 * c.m * c.k, c.m * c.k },
				                  .b_strides = { c.k * c.n, 0 },
				                  .alpha = c.alpha,
				                  .beta = c.beta,
				                  .bias = bias };
			for (it.p = 0; it.p < 6; it.p++) {
				it.oa = it.p * c.m * c.k;
				it.ob = it.p / 2 * c.k * c.n;
				item_expect(&it);
			}
			run_check("batched transposed gemm", &d, a.data, b.data, cc.data, NULL,
			          &it.want);
			free(a.data);
			free(b.data);
			free(cc.data);
			free(it.want.data);
		}
}

/* Descriptors the kernel must refuse rather than run. */
static void test_gemm_refuses(void)
{
	struct rt_ctx *ctx;
	float a[4] = { 0 }, b[4] = { 0 }, y[4];
	struct rt_gemm_desc d = { .dtype = RT_F32, .m = 2, .n = 2, .k = 2, .alpha = 1 };
	CHECK_EQ(rt_ctx_create(&ctx, 1), RT_OK);
	CHECK_EQ(rt_gemm(ctx, &d, a, b, NULL, NULL, y), RT_OK);
	d.dtype = RT_F16;
	CHECK_EQ(rt_gemm(ctx, &d, a, b, NULL, NULL, y), RT_ERR_ARGUMENT);
	d.dtype = RT_F32;
	d.batch_rank = 7;
	CHECK_EQ(rt_gemm(ctx, &d, a, b, NULL, NULL, y), RT_ERR_ARGUMENT);
	d.batch_rank = 0;
	d.bias = RT_BIAS_ROW;
	CHECK_EQ(rt_gemm(ctx, &d, a, b, NULL, NULL, y), RT_ERR_ARGUMENT);
	d.bias = RT_BIAS_NONE;
	d.ep.has_residual = 1;
	CHECK_EQ(rt_gemm(ctx, &d, a, b, NULL, NULL, y), RT_ERR_ARGUMENT);
	d.ep.has_residual = 0;
	d.k = -1;
	CHECK_EQ(rt_gemm(ctx, &d, a, b, NULL, NULL, y), RT_ERR_ARGUMENT);
	rt_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Throughput (printed, not checked)                                        */
/* ------------------------------------------------------------------------ */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_gemm_throughput(void)
{
	int64_t n = 512, dims[2] = { n, n };
	uint64_t seed = 1;
	struct ref_tensor a = tensor(IR_F32, 2, dims, -1, 1, &seed);
	struct ref_tensor b = tensor(IR_F32, 2, dims, -1, 1, &seed);
	struct ref_tensor c = tensor(IR_F32, 1, dims, -1, 1, &seed);
	float *y = malloc(sizeof(float) * (size_t)(n * n));
	struct rt_gemm_desc d = { .dtype = RT_F32, .m = n, .n = n, .k = n, .alpha = 1, .beta = 1 };
	struct rt_ctx *ctx;
	CHECK_EQ(rt_ctx_create(&ctx, 2), RT_OK);
	for (int v = 0; v < 2; v++) {
		double best = 1e9;
		d.bias = v ? RT_BIAS_ROW : RT_BIAS_NONE;
		d.ep.act = v ? RT_ACT_RELU : RT_ACT_NONE;
		for (int i = 0; i < 20; i++) {
			double t0 = now();
			rt_gemm(ctx, &d, a.data, b.data, c.data, NULL, y);
			best = fmin(best, now() - t0);
		}
		printf("rt_gemm f32 512x512x512%s, 2 threads: %.1f GFLOP/s (%.3f ms)\n",
		       v ? " +bias+relu" : "", 2.0 * (double)(n * n * n) / best * 1e-9, best * 1e3);
	}
	rt_ctx_destroy(ctx);
	free(y);
	free(a.data);
	free(b.data);
	free(c.data);
}

TESTS(T(test_gemm_forms) T(test_gemm_wrap) T(test_gemm_blocks) T(test_gemm_epilogues) T(test_matmul)
              T(test_batched_trans) T(test_gemm_refuses) T(test_gemm_throughput))
