/*
 * test_rt_norm.c - rt_softmax, rt_layernorm, rt_instnorm and rt_lrn against
 * the reference.
 *
 * Every case runs on a context of 1 thread and one of 3 and must give
 * bit-identical results (rows never depend on how they are split), then
 * matches the reference op within f32 (or f64) tolerances. Softmax,
 * log_softmax and hardmax run over rows (the last axis, in and beyond one
 * summation block) and over strided lanes (in and beyond one block of
 * lanes), with large inputs, -inf entries (masking), whole rows of -inf,
 * NaNs, ties for hardmax, and size-0 and size-1 axes. Layer norm covers
 * one and several normalized dims, no bias, the 3-output form, inputs with
 * a large mean, and rows of one element. Instance norm and LRN cover several
 * spatial shapes, window sizes and betas (0.75 has its own path).
 *
 * The f32 kernels have an AVX2 copy chosen at run time; every case runs on
 * it (where the CPU has AVX2) and on the baseline (ONNXC_NO_AVX2=1).
 *
 * `test_rt_norm bench` (with ONNXC_BENCH=1) prints the throughput of
 * softmax and layer norm on transformer-shaped rows.
 */
#include "onnxc_rt.h"
#include "refcheck.h"

#include <time.h>

/* A kernel run: calls the kernel under test on ctx into outs. */
typedef int (*run_fn)(struct rt_ctx *ctx, const void *desc, const struct ref_tensor *in,
                      void *const *outs);

struct kcase {
	run_fn run;
	const void *desc;
	enum ir_op op;
	ref_attrs_fn attrs;
	void *ud;
	int nin, nout;
	double rtol, atol;
};

/*
 * Runs the kernel on 1 and 3 threads, demands identical bits, and compares
 * every output with the reference. The outputs have the reference's types.
 */
static void check_case(const struct kcase *k, const struct ref_tensor *in, const char *what)
{
	struct ref_tensor out[3];
	void *y1[3] = { NULL }, *y3[3] = { NULL };
	struct rt_ctx *one, *three;
	if (!ref_eval(k->op, k->attrs, k->ud, in, k->nin, out, k->nout)) {
		CHECK(!"reference evaluation");
		return;
	}
	CHECK_EQ(rt_ctx_create(&one, 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&three, 3), RT_OK);
	for (int i = 0; i < k->nout; i++) {
		size_t bytes = (size_t)ir_type_elems(&out[i].type) *
		               (size_t)ir_dtype_size(out[i].type.dtype);
		y1[i] = calloc(bytes + 1, 1);
		y3[i] = calloc(bytes + 1, 1);
	}
	CHECK_EQ(k->run(one, k->desc, in, y1), RT_OK);
	CHECK_EQ(k->run(three, k->desc, in, y3), RT_OK);
	for (int i = 0; i < k->nout; i++) {
		int64_t n = ir_type_elems(&out[i].type);
		size_t bytes = (size_t)n * (size_t)ir_dtype_size(out[i].type.dtype);
		double err = rel_err(out[i].type.dtype, y1[i], out[i].data, n, k->rtol, k->atol);
		if (memcmp(y1[i], y3[i], bytes)) {
			fprintf(stderr, "%s: output %d differs between 1 and 3 threads\n", what, i);
			CHECK(!"thread-count independent");
		}
		if (!(err <= 1)) {
			fprintf(stderr, "%s: output %d error %g\n", what, i, err);
			CHECK(err <= 1);
		}
		free(y1[i]);
		free(y3[i]);
		free(out[i].data);
	}
	rt_ctx_destroy(one);
	rt_ctx_destroy(three);
}

static int rt_code(enum ir_dtype t) { return ir_dtypes[t].onnx; }

static int64_t prod(const int64_t *d, int from, int to)
{
	int64_t n = 1;
	for (int i = from; i < to; i++)
		n *= d[i];
	return n;
}

static struct ref_tensor tensor(enum ir_dtype t, int rank, const int64_t *dims, double lo,
                                double hi, uint64_t *seed)
{
	struct ref_tensor r = { .type = { .dtype = t, .rank = rank } };
	int64_t n = prod(dims, 0, rank);
	memcpy(r.type.dims, dims, sizeof(int64_t) * (size_t)rank);
	r.data = malloc((size_t)n * (size_t)ir_dtype_size(t) + 1);
	rand_fill(t, r.data, n, lo, hi, seed);
	return r;
}

/* Tolerances: f32 results carry a few ulps of rounding per pass (exp is
 * within 1.4 ulp). */
static double rtol_of(enum ir_dtype t) { return t == IR_F32 ? 1e-6 : 1e-11; }

/* ------------------------------------------------------------------------ */
/* Softmax, LogSoftmax, Hardmax                                             */
/* ------------------------------------------------------------------------ */

static void set_axis(struct ir_module *m, struct ir_node *n, void *ud)
{
	ir_set_i(m, n, "axis", *(const int64_t *)ud);
}

static int run_softmax(struct rt_ctx *ctx, const void *d, const struct ref_tensor *in,
                       void *const *outs)
{
	return rt_softmax(ctx, d, in[0].data, outs[0]);
}

/* How the softmax input is made: uniform, large, masked, ties, or NaNs
 * (in some rows, and all of the first). */
enum fill { F_PLAIN, F_LARGE, F_MASKED, F_TIES, F_NAN };

static void check_softmax(enum ir_dtype t, int kind, int rank, const int64_t *dims, int axis,
                          enum fill fill, uint64_t *seed)
{
	static const enum ir_op ops[] = { [RT_SOFTMAX] = IR_OP_SOFTMAX,
		                          [RT_LOG_SOFTMAX] = IR_OP_LOG_SOFTMAX,
		                          [RT_HARDMAX] = IR_OP_HARDMAX };
	struct rt_softmax_desc d = { rt_code(t), kind, prod(dims, 0, axis), dims[axis],
		                     prod(dims, axis + 1, rank) };
	double scale = fill == F_LARGE ? 60 : 4;
	struct ref_tensor x = tensor(t, rank, dims, -scale, scale, seed);
	int64_t n = prod(dims, 0, rank);
	int64_t ax = axis;
	struct kcase k = { run_softmax, &d,         ops[kind],
		           set_axis,    &ax,        1,
		           1,           rtol_of(t), t == IR_F32 ? 1e-9 : 1e-15 };
	char what[96];
	for (int64_t i = 0; i < n; i++) {
		double v = ir_load_f64(t, x.data, (size_t)i);
		if (fill == F_MASKED && i % 5 == 1)
			v = -INFINITY;
		if (fill == F_MASKED && i < dims[rank - 1])
			v = -INFINITY; /* a whole row of -inf: NaN, as in the reference */
		if (fill == F_TIES)
			v = floor(v);
		if (fill == F_NAN && (i % 11 == 3 || i < dims[rank - 1]))
			v = NAN;
		ir_store_f64(t, x.data, (size_t)i, v);
	}
	if (kind == RT_LOG_SOFTMAX)
		k.atol = t == IR_F32 ? 2e-6 * scale : 1e-12 * scale;
	snprintf(what, sizeof what, "softmax kind %d %s axis %d [%lld,%lld,%lld] fill %d", kind,
	         ir_dtype_name(t), axis, (long long)d.outer, (long long)d.axis, (long long)d.inner,
	         fill);
	check_case(&k, &x, what);
	free(x.data);
}

/* Runs fn on the AVX2 kernels (where the CPU has them) and the baseline. */
static void both_isas(void (*fn)(void))
{
	unsetenv("ONNXC_NO_AVX2");
	fn();
	setenv("ONNXC_NO_AVX2", "1", 1);
	fn();
	unsetenv("ONNXC_NO_AVX2");
}

static void softmax_cases(void)
{
	static const int64_t a[] = { 4, 10 }, b[] = { 2, 3, 70 }, c[] = { 3, 300 };
	static const int64_t e[] = { 2, 1000 }, f[] = { 5, 1 }, g[] = { 0, 5 }, h[] = { 3, 0, 2 };
	static const int64_t big[] = { 2, 16, 256 }, wide[] = { 3, 9, 130 };
	static const enum ir_dtype types[] = { IR_F32, IR_F64 };
	uint64_t seed = 17;
	for (int ti = 0; ti < 2; ti++)
		for (int kind = RT_SOFTMAX; kind <= RT_HARDMAX; kind++) {
			enum ir_dtype t = types[ti];
			check_softmax(t, kind, 2, a, 1, F_PLAIN, &seed);
			check_softmax(t, kind, 2, a, 0, F_PLAIN, &seed);
			check_softmax(t, kind, 3, b, 1, F_PLAIN, &seed);
			check_softmax(t, kind, 3, b, 2, F_LARGE, &seed);
			check_softmax(t, kind, 2, c, 1, F_LARGE, &seed);
			check_softmax(t, kind, 2, e, 1, F_MASKED, &seed);
			check_softmax(t, kind, 3, wide, 1, F_MASKED, &seed);
			check_softmax(t, kind, 2, f, 1, F_PLAIN, &seed);
			check_softmax(t, kind, 2, f, 0, F_TIES, &seed);
			check_softmax(t, kind, 2, g, 1, F_PLAIN, &seed);
			check_softmax(t, kind, 3, h, 1, F_PLAIN, &seed);
			check_softmax(t, kind, 3, big, 2, F_PLAIN, &seed);
			check_softmax(t, kind, 3, big, 1, F_TIES, &seed);
			check_softmax(t, kind, 2, c, 1, F_TIES, &seed);
			check_softmax(t, kind, 2, a, 1, F_NAN, &seed);
			check_softmax(t, kind, 3, b, 1, F_NAN, &seed);
		}
}

static void test_softmax(void) { both_isas(softmax_cases); }

/* ------------------------------------------------------------------------ */
/* LayerNormalization, InstanceNormalization                                */
/* ------------------------------------------------------------------------ */

static const float norm_eps = 1e-5f;

static void set_layernorm(struct ir_module *m, struct ir_node *n, void *ud)
{
	ir_set_i(m, n, "axis", *(const int64_t *)ud);
	ir_set_f(m, n, "epsilon", norm_eps);
}

static void set_eps(struct ir_module *m, struct ir_node *n, void *ud)
{
	ir_set_f(m, n, "epsilon", norm_eps);
}

static int run_layernorm(struct rt_ctx *ctx, const void *d, const struct ref_tensor *in,
                         void *const *outs)
{
	return rt_layernorm(ctx, d, in[0].data, in[1].data, in[2].data, outs[0], outs[1], outs[2]);
}

static void check_layernorm(enum ir_dtype t, int rank, const int64_t *dims, int axis, bool bias,
                            int nout, double mean, uint64_t *seed)
{
	struct rt_layernorm_desc d = { rt_code(t), prod(dims, 0, axis), prod(dims, axis, rank),
		                       norm_eps };
	struct ref_tensor in[3] = {
		tensor(t, rank, dims, mean - 1, mean + 1, seed),
		tensor(t, rank - axis, dims + axis, 0.5, 1.5, seed),
		tensor(t, rank - axis, dims + axis, -1, 1, seed),
	};
	int64_t ax = axis;
	struct kcase k = {
		run_layernorm, &d,         IR_OP_LAYER_NORM,
		set_layernorm, &ax,        bias ? 3 : 2,
		nout,          rtol_of(t), t == IR_F32 ? 2e-6 * (1 + fabs(mean)) : 1e-12
	};
	char what[96];
	if (!bias) {
		free(in[2].data);
		in[2].data = NULL;
	}
	snprintf(what, sizeof what, "layernorm %s [%lld,%lld] bias %d nout %d mean %g",
	         ir_dtype_name(t), (long long)d.rows, (long long)d.cols, bias, nout, mean);
	check_case(&k, in, what);
	for (int i = 0; i < 3; i++)
		free(in[i].data);
}

static void layernorm_cases(void)
{
	static const int64_t a[] = { 4, 10 }, b[] = { 2, 3, 40 }, c[] = { 3, 1000 };
	static const int64_t one[] = { 5, 1 }, zero[] = { 0, 7 }, big[] = { 2, 16, 256 };
	static const enum ir_dtype types[] = { IR_F32, IR_F64 };
	uint64_t seed = 23;
	for (int ti = 0; ti < 2; ti++) {
		enum ir_dtype t = types[ti];
		for (int nout = 1; nout <= 3; nout++) {
			check_layernorm(t, 2, a, 1, true, nout, 0, &seed);
			check_layernorm(t, 3, b, 1, nout != 2, nout, 0, &seed);
			check_layernorm(t, 3, b, 2, true, nout, 0, &seed);
			check_layernorm(t, 2, c, 1, nout == 1, nout, 100, &seed);
			check_layernorm(t, 2, one, 1, true, nout, 0, &seed);
			check_layernorm(t, 2, zero, 1, true, nout, 0, &seed);
			check_layernorm(t, 3, big, 2, true, nout, 3, &seed);
		}
	}
}

static void test_layernorm(void) { both_isas(layernorm_cases); }

static int run_instnorm(struct rt_ctx *ctx, const void *d, const struct ref_tensor *in,
                        void *const *outs)
{
	return rt_instnorm(ctx, d, in[0].data, in[1].data, in[2].data, outs[0]);
}

static void check_instnorm(enum ir_dtype t, int rank, const int64_t *dims, double mean,
                           uint64_t *seed)
{
	struct rt_instnorm_desc d = { rt_code(t), dims[0], dims[1], prod(dims, 2, rank), norm_eps };
	struct ref_tensor in[3] = {
		tensor(t, rank, dims, mean - 2, mean + 2, seed),
		tensor(t, 1, dims + 1, 0.5, 1.5, seed),
		tensor(t, 1, dims + 1, -1, 1, seed),
	};
	struct kcase k = { run_instnorm,
		           &d,
		           IR_OP_INSTANCE_NORM,
		           set_eps,
		           NULL,
		           3,
		           1,
		           rtol_of(t),
		           t == IR_F32 ? 2e-6 * (1 + fabs(mean)) : 1e-12 };
	check_case(&k, in, "instnorm");
	for (int i = 0; i < 3; i++)
		free(in[i].data);
}

static void instnorm_cases(void)
{
	static const int64_t a[] = { 2, 3, 5, 7 }, b[] = { 1, 4, 1000 }, c[] = { 2, 3, 1 };
	static const int64_t z[] = { 0, 3, 4 }, z2[] = { 2, 3, 0 }, v[] = { 2, 2, 3, 4, 5 };
	uint64_t seed = 29;
	for (int ti = 0; ti < 2; ti++) {
		enum ir_dtype t = ti ? IR_F64 : IR_F32;
		check_instnorm(t, 4, a, 0, &seed);
		check_instnorm(t, 3, b, 50, &seed);
		check_instnorm(t, 3, c, 0, &seed);
		check_instnorm(t, 3, z, 0, &seed);
		check_instnorm(t, 3, z2, 0, &seed);
		check_instnorm(t, 5, v, 0, &seed);
	}
}

static void test_instnorm(void) { both_isas(instnorm_cases); }

/* ------------------------------------------------------------------------ */
/* LRN                                                                      */
/* ------------------------------------------------------------------------ */

static void set_lrn(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct rt_lrn_desc *d = ud;
	ir_set_i(m, n, "size", d->size);
	ir_set_f(m, n, "alpha", d->alpha);
	ir_set_f(m, n, "beta", d->beta);
	ir_set_f(m, n, "bias", d->bias);
}

static int run_lrn(struct rt_ctx *ctx, const void *d, const struct ref_tensor *in,
                   void *const *outs)
{
	return rt_lrn(ctx, d, in[0].data, outs[0]);
}

static void test_lrn(void)
{
	static const int64_t a[] = { 2, 7, 5, 5 }, b[] = { 1, 3, 100 }, c[] = { 1, 1, 4 };
	static const int64_t z[] = { 0, 3, 2 };
	static const int64_t *shapes[] = { a, b, c, z };
	static const int ranks[] = { 4, 3, 3, 3 };
	static const int64_t sizes[] = { 1, 2, 3, 5 };
	uint64_t seed = 31;
	for (int ti = 0; ti < 2; ti++)
		for (int s = 0; s < 4; s++)
			for (int si = 0; si < 4; si++) {
				enum ir_dtype t = ti ? IR_F64 : IR_F32;
				const int64_t *dims = shapes[s];
				struct rt_lrn_desc d = { rt_code(t),
					                 dims[0],
					                 dims[1],
					                 prod(dims, 2, ranks[s]),
					                 sizes[si],
					                 1e-2f,
					                 si & 1 ? 0.75f : 0.6f,
					                 si < 2 ? 1.0f : 2.0f };
				struct ref_tensor x = tensor(t, ranks[s], dims, -3, 3, &seed);
				struct kcase k = { run_lrn, &d, IR_OP_LRN,  set_lrn, &d,
					           1,       1,  rtol_of(t), 0 };
				check_case(&k, &x, "lrn");
				free(x.data);
			}
}

/* Bad descriptors are refused, never run. */
static void test_norm_errors(void)
{
	struct rt_ctx *ctx;
	float x[4] = { 0 }, y[4];
	struct rt_softmax_desc sd = { RT_I32, RT_SOFTMAX, 1, 4, 1 };
	struct rt_layernorm_desc ld = { RT_F16, 1, 4, 1e-5f };
	struct rt_lrn_desc rd = { RT_F32, 1, 4, 1, 0, 1, 1, 1 };
	CHECK_EQ(rt_ctx_create(&ctx, 1), RT_OK);
	CHECK_EQ(rt_softmax(ctx, &sd, x, y), RT_ERR_ARGUMENT);
	CHECK_EQ(rt_layernorm(ctx, &ld, x, x, NULL, y, NULL, NULL), RT_ERR_ARGUMENT);
	CHECK_EQ(rt_lrn(ctx, &rd, x, y), RT_ERR_ARGUMENT);
	rt_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Throughput                                                               */
/* ------------------------------------------------------------------------ */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds per call of softmax (which = 0) or layer norm over [rows, cols]. */
static double time_kernel(struct rt_ctx *ctx, int which, int64_t rows, int64_t cols, const float *x,
                          const float *p, float *y)
{
	struct rt_softmax_desc sd = { RT_F32, RT_SOFTMAX, rows, cols, 1 };
	struct rt_layernorm_desc ld = { RT_F32, rows, cols, 1e-5f };
	double t0, best = 1e9;
	for (int rep = 0; rep < 7; rep++) {
		int iters = rows * cols > 100000 ? 20 : 2000;
		t0 = now();
		for (int i = 0; i < iters; i++) {
			if (which == 0)
				rt_softmax(ctx, &sd, x, y);
			else
				rt_layernorm(ctx, &ld, x, p, p, y, NULL, NULL);
		}
		t0 = (now() - t0) / iters;
		best = t0 < best ? t0 : best;
	}
	return best;
}

static void bench(void)
{
	static const int64_t shapes[][2] = { { 32 * 4 * 64, 64 }, { 2 * 16, 256 } };
	uint64_t seed = 1;
	if (!getenv("ONNXC_BENCH"))
		return;
	for (int s = 0; s < 2; s++) {
		int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
		float *x = malloc(sizeof(float) * (size_t)n),
		      *y = malloc(sizeof(float) * (size_t)n);
		float *p = malloc(sizeof(float) * (size_t)cols);
		rand_fill(IR_F32, x, n, -4, 4, &seed);
		rand_fill(IR_F32, p, cols, 0.5, 1.5, &seed);
		for (int th = 1; th <= 2; th++) {
			struct rt_ctx *ctx;
			rt_ctx_create(&ctx, th);
			for (int which = 0; which < 2; which++) {
				double sec = time_kernel(ctx, which, rows, cols, x, p, y);
				printf("%-9s [%lld, %lld] %d thread(s): %8.2f us  %6.2f Gelem/s  "
				       "%6.2f GB/s\n",
				       which ? "layernorm" : "softmax", (long long)rows,
				       (long long)cols, th, sec * 1e6, (double)n / sec * 1e-9,
				       8.0 * (double)n / sec * 1e-9);
			}
			rt_ctx_destroy(ctx);
		}
		free(x);
		free(y);
		free(p);
	}
}

TESTS(T(test_softmax) T(test_layernorm) T(test_instnorm) T(test_lrn) T(test_norm_errors) T(bench))
