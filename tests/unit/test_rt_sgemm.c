/*
 * test_rt_sgemm.c - the runtime's own SGEMM (rt_sgemm.c) against a
 * double-precision loop.
 *
 * rt_sgemm is internal (rt_gemm and rt_conv are its callers, tested
 * against the reference interpreter in their own files), so its interface
 * is tested here directly: every kernel set the CPU has (AVX-512, AVX2),
 * shapes around every edge the kernels have (row groups of 1..14 rows,
 * panels of 1..32 columns, one or two vectors, k blocks of 256, column
 * blocks of 256, dot products for a few rows or for the last 1..4
 * columns), m, n and k from 0 up, transposed and plain A and B, leading
 * dimensions wider than the matrices (whose gaps must stay untouched),
 * alpha, beta 0 and 1, every fused epilogue (each bias layout, residual,
 * each activation it takes), the done() callback (every element exactly
 * once), B from a packing callback, B packed ahead (b_packed), and batches. Each case runs serially and on contexts of 1 and
 * 3 threads, which must agree bit for bit. ONNXC_GEMM's effect on the
 * kernel choice is checked too.
 *
 * The tolerance is an error bound for f32 sums: a few units of rounding
 * times sqrt(k) times the sum of the magnitudes of the terms (plus one,
 * for the constants of the activations).
 */
#include "onnxc_rt.h"
#include "refcheck.h"
#include "rt_sgemm.h"

/* Sentinel in C's gaps and past its end. */
#define GAP 12345.0f

enum { BIAS_NONE, BIAS_PER_ROW, BIAS_PER_COL, BIAS_SCALAR, BIAS_FULL, BIAS_KINDS };

struct sg_case {
	int64_t m, n, k;
	int ta, tb;
	int64_t pad; /* extra elements in every leading dimension */
	float alpha;
	int beta;
	int bias, res, act;
	int packer;  /* B through a packing callback */
	int prepack; /* B packed first by rt_sgemm_pack (b_packed) */
};

struct sg_data {
	float *a, *b, *c0, *bias, *res;
	int64_t lda, ldb, ldc, csize;
	double *want, *scale;
};

static float *random_floats(int64_t n, uint64_t *seed)
{
	float *p = malloc(sizeof(float) * (size_t)(n + 1));
	rand_fill(IR_F32, p, n, -1, 1, seed);
	return p;
}

/* The activations rt_sgemm can fuse, as rt_gemm.c's epilogue defines them. */
static double act(const struct sg_case *c, double v)
{
	const double a = 0.125, b = 0.5;
	switch (c->act) {
	case RT_ACT_RELU: return v < 0 ? 0 : v;
	case RT_ACT_LEAKY_RELU: return v < 0 ? a * v : v;
	case RT_ACT_CLIP: return v < -b ? -b : v > b ? b : v;
	case RT_ACT_HARD_SIGMOID: return fmin(fmax(b + v * a, 0), 1);
	case RT_ACT_HARD_SWISH: return fmin(fmax(0.5 + v / 6, 0), 1) * v;
	default: return v;
	}
}

static float act_alpha(const struct sg_case *c) { return c->act == RT_ACT_CLIP ? -0.5f : 0.125f; }

/* bias[] offsets of element (i, j) for each layout. */
static int64_t bias_rs(const struct sg_case *c)
{
	return c->bias == BIAS_PER_ROW ? 1 : c->bias == BIAS_FULL ? c->n : 0;
}
static int64_t bias_cs(const struct sg_case *c)
{
	return c->bias == BIAS_PER_COL || c->bias == BIAS_FULL;
}

static void sg_data_init(const struct sg_case *c, struct sg_data *d, uint64_t *seed)
{
	int64_t ar = c->ta ? c->k : c->m, ac = c->ta ? c->m : c->k;
	int64_t br = c->tb ? c->n : c->k, bc = c->tb ? c->k : c->n;
	d->lda = ac + c->pad;
	d->ldb = bc + c->pad;
	d->ldc = c->n + c->pad;
	d->csize = c->m * d->ldc;
	d->a = random_floats(ar * d->lda, seed);
	d->b = random_floats(br * d->ldb, seed);
	d->c0 = random_floats(d->csize + 1, seed);
	d->bias = random_floats(c->m * c->n + 1, seed);
	d->res = random_floats(d->csize + 1, seed);
	d->want = calloc((size_t)(c->m * c->n + 1), sizeof(double));
	d->scale = calloc((size_t)(c->m * c->n + 1), sizeof(double));
	for (int64_t i = 0; i < c->m; i++)
		for (int64_t j = 0; j < c->n; j++) {
			double s = 0, mag = 0, v;
			for (int64_t p = 0; p < c->k; p++) {
				double x = d->a[c->ta ? p * d->lda + i : i * d->lda + p];
				double y = d->b[c->tb ? j * d->ldb + p : p * d->ldb + j];
				s += x * y;
				mag += fabs(x * y);
			}
			v = c->alpha * s;
			mag *= fabs(c->alpha);
			if (c->beta)
				v += d->c0[i * d->ldc + j], mag += fabs(d->c0[i * d->ldc + j]);
			if (c->bias) {
				double bv = 0.75 * d->bias[i * bias_rs(c) + j * bias_cs(c)];
				v += bv, mag += fabs(bv);
			}
			if (c->res)
				v += d->res[i * d->ldc + j], mag += fabs(d->res[i * d->ldc + j]);
			d->want[i * c->n + j] = act(c, v);
			d->scale[i * c->n + j] = mag;
		}
}

static void sg_data_free(struct sg_data *d)
{
	free(d->a);
	free(d->b);
	free(d->c0);
	free(d->bias);
	free(d->res);
	free(d->want);
	free(d->scale);
}

/* A packing callback: B panels the slow way, as rt_sgemm_pack_fn documents them. */
static void pack_slow(const struct rt_sgemm *g, float *dst, int64_t k0, int64_t kc, int64_t j0,
                      int64_t nc)
{
	int nr = rt_sgemm_nr(g->isa);
	for (int64_t q = 0; q < nc; q += nr)
		for (int64_t p = 0; p < kc; p++)
			for (int jj = 0; jj < nr; jj++) {
				int64_t j = j0 + q + jj;
				*dst++ = q + jj < nc ? g->b[(k0 + p) * g->b_rs + j * g->b_cs] : 0;
			}
}

/* done(): counts the times each element is finished (in an int array). */
static void count_done(const struct rt_sgemm *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
	int *seen = g->done_arg;
	for (int64_t i = i0; i < i1; i++)
		for (int64_t j = j0; j < j1; j++)
			seen[i * g->n + j]++;
}

static struct rt_sgemm sg_of(const struct sg_case *c, const struct sg_data *d, int isa, float *y,
                             int *seen)
{
	struct rt_sgemm g = {
		.isa = isa,
		.m = c->m,
		.n = c->n,
		.k = c->k,
		.a = d->a,
		.a_rs = c->ta ? 1 : d->lda,
		.a_cs = c->ta ? d->lda : 1,
		.b = d->b,
		.b_rs = c->tb ? 1 : d->ldb,
		.b_cs = c->tb ? d->ldb : 1,
		.pack_b = c->packer ? pack_slow : NULL,
		.c = y,
		.ldc = d->ldc,
		.alpha = c->alpha,
		.beta = c->beta,
		.done = count_done,
		.done_arg = seen,
	};
	if (c->bias || c->res || c->act) {
		g.fuse = 1;
		g.ep = (struct rt_sgemm_ep){ .bias = c->bias ? d->bias : NULL,
			                     .bias_rs = bias_rs(c),
			                     .bias_cs = bias_cs(c),
			                     .bias_scale = 0.75f,
			                     .res = c->res ? d->res : NULL,
			                     .res_ld = d->ldc,
			                     .act = c->act,
			                     .alpha = act_alpha(c),
			                     .beta = 0.5f };
	}
	return g;
}

static void describe(const struct sg_case *c, int isa, char *buf, size_t n)
{
	snprintf(buf, n,
	         "isa %d m=%lld n=%lld k=%lld ta=%d tb=%d pad=%lld alpha=%g beta=%d bias=%d "
	         "res=%d act=%d packer=%d",
	         isa, (long long)c->m, (long long)c->n, (long long)c->k, c->ta, c->tb,
	         (long long)c->pad, c->alpha, c->beta, c->bias, c->res, c->act, c->packer);
}

/* y against the expectation: values, gaps, and every element done once. */
static void check_result(const struct sg_case *c, const struct sg_data *d, const float *y,
                         const int *seen, const char *what)
{
	double worst = 0, tol = 4e-7 * (sqrt((double)c->k) + 4);
	int gaps = 0, dones = 0;
	for (int64_t i = 0; i < c->m; i++)
		for (int64_t j = 0; j < d->ldc; j++) {
			float got = y[i * d->ldc + j];
			double e;
			if (j >= c->n) {
				gaps += got != GAP;
				continue;
			}
			dones += seen[i * c->n + j] != 1;
			e = fabs(got - d->want[i * c->n + j]) /
			    (tol * (d->scale[i * c->n + j] + 1));
			worst = fmax(worst, e != e ? INFINITY : e);
		}
	gaps += y[d->csize] != GAP;
	if (worst > 1 || gaps || dones)
		fprintf(stderr, "%s: error %.3g of tolerance, %d gaps written, %d not done once\n",
		        what, worst, gaps, dones);
	CHECK(worst <= 1);
	CHECK_EQ(gaps, 0);
	CHECK_EQ(dones, 0);
}

/* C before the run: c0 in the matrix (for beta), GAP in the gaps and past the end. */
static void fill_c(const struct sg_case *c, const struct sg_data *d, float *y)
{
	for (int64_t i = 0; i <= d->csize; i++)
		y[i] = i < d->csize && i % d->ldc < c->n ? d->c0[i] : GAP;
}

/* The kernel sets this CPU has. */
static int best_isa(void)
{
	if (__builtin_cpu_supports("avx512f"))
		return RT_SGEMM_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return RT_SGEMM_AVX2;
	return RT_SGEMM_BLAS;
}

/* One case on every kernel set, serially and on 1 and 3 threads. */
static void sg_run(const struct sg_case *c, uint64_t *seed)
{
	struct sg_data d;
	struct rt_ctx *cx[2];
	CHECK_EQ(rt_ctx_create(&cx[0], 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&cx[1], 3), RT_OK);
	sg_data_init(c, &d, seed);
	for (int isa = RT_SGEMM_AVX2; isa <= best_isa(); isa++) {
		size_t bytes = sizeof(float) * (size_t)(d.csize + 1);
		float *y[3], *packed = NULL;
		int *seen[3];
		char what[256];
		describe(c, isa, what, sizeof what);
		for (int r = 0; r < 3; r++) {
			struct rt_sgemm g;
			y[r] = malloc(bytes);
			seen[r] = calloc((size_t)(c->m * c->n + 1), sizeof(int));
			fill_c(c, &d, y[r]);
			g = sg_of(c, &d, isa, y[r], seen[r]);
			if (c->prepack) {
				/* the buffer as aligned as the kernels need, no more */
				packed = rt_alloc_aligned(
				        64, 64 + sizeof(float) * (size_t)rt_sgemm_packed_floats(
				                                         isa, c->k, c->n));
				rt_sgemm_pack(&g, packed);
				g.b_packed = packed;
				g.b = NULL;
			}
			if (r == 0)
				rt_sgemm_serial(&g);
			else
				rt_sgemm(cx[r - 1], &g);
			check_result(c, &d, y[r], seen[r], what);
			free(packed);
			packed = NULL;
		}
		if (memcmp(y[0], y[1], bytes) || memcmp(y[0], y[2], bytes)) {
			fprintf(stderr, "%s: serial, 1 and 3 threads differ\n", what);
			CHECK(0);
		}
		for (int r = 0; r < 3; r++) {
			free(y[r]);
			free(seen[r]);
		}
	}
	sg_data_free(&d);
	rt_ctx_destroy(cx[0]);
	rt_ctx_destroy(cx[1]);
}

/* ------------------------------------------------------------------------ */
/* Cases                                                                    */
/* ------------------------------------------------------------------------ */

/* Every small shape around the tile edges, in every transpose. */
static void test_edges(void)
{
	static const int64_t ms[] = { 0, 1, 2, 5, 6, 7, 13, 14, 15, 29 };
	static const int64_t ns[] = { 0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 20, 31, 32, 33, 49 };
	static const int64_t ks[] = { 0, 1, 3, 17 };
	uint64_t seed = 0x5eed;
	for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
		for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
			for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
				for (int tr = 0; tr < 4; tr++) {
					struct sg_case c = { ms[mi], ns[ni], ks[ki], tr & 1,
						             tr >> 1 };
					c.pad = (int64_t)(mi + ni) % 3;
					c.alpha = tr == 3 ? -0.5f : 1;
					c.beta = (int)(ni + ki) % 2;
					sg_run(&c, &seed);
				}
}

/* Shapes across k blocks (256), column blocks (512) and the thread split. */
static void test_blocks(void)
{
	static const int64_t shapes[][3] = {
		{ 30, 520, 300 }, { 100, 1030, 513 }, { 3, 600, 770 },   { 64, 197, 257 },
		{ 200, 49, 600 }, { 45, 1100, 64 },   { 131, 67, 1025 }, { 16, 2000, 5 },
		{ 40, 516, 530 }, { 29, 2, 300 },     { 15, 1043, 40 },
	};
	uint64_t seed = 77;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int tr = 0; tr < 4; tr++) {
			struct sg_case c = {
				shapes[si][0], shapes[si][1],       shapes[si][2],      tr & 1,
				tr >> 1,       (int64_t)si % 2 * 5, tr == 1 ? 2.0f : 1, tr == 2
			};
			sg_run(&c, &seed);
		}
}

/* The fused epilogue: each bias layout, residual, each activation. */
static void test_epilogues(void)
{
	static const int acts[] = { RT_ACT_NONE, RT_ACT_RELU,         RT_ACT_LEAKY_RELU,
		                    RT_ACT_CLIP, RT_ACT_HARD_SIGMOID, RT_ACT_HARD_SWISH };
	static const int64_t shapes[][3] = { { 17, 37, 9 }, { 3, 70, 300 }, { 40, 33, 0 } };
	uint64_t seed = 99;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int bias = 0; bias < BIAS_KINDS; bias++)
			for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++)
				for (int v = 0; v < 2; v++) {
					struct sg_case c = { shapes[si][0], shapes[si][1],
						             shapes[si][2] };
					c.tb = v; /* 3 rows and tb: dot products */
					c.alpha = 1.5f;
					c.beta = v;
					c.bias = bias;
					c.res = ((int)ai + bias + v) % 2;
					c.act = acts[ai];
					c.pad = v;
					sg_run(&c, &seed);
				}
	CHECK(!rt_sgemm_fusable(RT_ACT_SIGMOID) && !rt_sgemm_fusable(RT_ACT_TANH));
}

/* B through a packing callback, and the dot products of a few rows. */
static void test_packer_and_dots(void)
{
	static const int64_t shapes[][3] = {
		{ 1, 1000, 300 }, { 4, 70, 20 }, { 2, 33, 0 }, { 5, 65, 520 }, { 20, 45, 7 }
	};
	uint64_t seed = 3;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int tr = 0; tr < 4; tr++) {
			struct sg_case c = { shapes[si][0],
				             shapes[si][1],
				             shapes[si][2],
				             tr & 1,
				             tr >> 1,
				             1,
				             1,
				             1 };
			sg_run(&c, &seed);
			c.packer = 1;
			sg_run(&c, &seed);
		}
}

/* B packed once by rt_sgemm_pack and multiplied from the panels
 * (attention's keys and values): every size up to one packed block, each
 * transpose, beta, alpha and an epilogue; bit for bit what packing on the
 * fly gives. */
static void test_prepacked(void)
{
	static const int64_t shapes[][3] = { { 1, 1, 1 },      { 3, 5, 17 },    { 14, 16, 64 },
		                             { 29, 31, 128 },  { 128, 33, 64 }, { 128, 128, 64 },
		                             { 128, 64, 128 }, { 7, 256, 256 }, { 40, 100, 0 },
		                             { 130, 49, 200 } };
	uint64_t seed = 11;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int v = 0; v < 4; v++) {
			struct sg_case c = { shapes[si][0], shapes[si][1], shapes[si][2], v & 1,
				             v >> 1 };
			struct sg_data d;
			c.pad = v % 3;
			c.alpha = v == 2 ? 0.125f : 1;
			c.beta = v & 1;
			c.res = v == 3;
			c.bias = v == 1 ? BIAS_PER_ROW : BIAS_NONE;
			c.act = v == 3 ? RT_ACT_RELU : RT_ACT_NONE;
			c.prepack = 1;
			sg_run(&c, &seed);
			/* the same products with B packed on the fly, bit for bit */
			sg_data_init(&c, &d, &seed);
			for (int isa = RT_SGEMM_AVX2;
			     isa <= best_isa() && (c.m > 4 || !c.tb || c.ta);
			     isa++) { /* (a few rows times a transposed B are dot products) */
				size_t bytes = sizeof(float) * (size_t)(d.csize + 1);
				float *y0 = malloc(bytes), *y1 = malloc(bytes), *packed;
				struct rt_sgemm g;
				fill_c(&c, &d, y0);
				fill_c(&c, &d, y1);
				g = sg_of(&c, &d, isa, y0, NULL);
				g.done = NULL;
				rt_sgemm_serial(&g);
				packed = rt_alloc_aligned(
				        64, 64 + sizeof(float) * (size_t)rt_sgemm_packed_floats(
				                                         isa, c.k, c.n));
				g.c = y1;
				rt_sgemm_pack(&g, packed);
				g.b_packed = packed;
				g.b = NULL;
				rt_sgemm_serial(&g);
				CHECK(!memcmp(y0, y1, bytes));
				free(packed);
				free(y0);
				free(y1);
			}
			sg_data_free(&d);
		}
	CHECK_EQ(rt_sgemm_packed_floats(RT_SGEMM_AVX512, 64, 100), 64 * 128);
	CHECK_EQ(rt_sgemm_packed_floats(RT_SGEMM_AVX2, 3, 16), 48);
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                  */
/* ------------------------------------------------------------------------ */

struct batch {
	const struct sg_case *c;
	struct sg_data *d; /* one per item */
	float **y;
	int isa;
};

static void batch_item(void *arg, int64_t i, struct rt_sgemm *g)
{
	const struct batch *b = arg;
	*g = sg_of(b->c, &b->d[i], b->isa, b->y[i], NULL);
	g->done = NULL;
}

/* count GEMMs of one shape through rt_sgemm_batch, each against its own expectation. */
static void batch_case(const struct sg_case *c, int64_t count, int threads, uint64_t *seed)
{
	const int isa = best_isa();
	struct rt_ctx *ctx;
	struct sg_data *d = calloc((size_t)count, sizeof *d);
	float **y = calloc((size_t)count, sizeof *y);
	int *seen = malloc(sizeof(int) * (size_t)(c->m * c->n + 1));
	struct batch b = { c, d, y, isa };
	char what[256];
	describe(c, isa, what, sizeof what);
	for (int64_t i = 0; i < count; i++) {
		sg_data_init(c, &d[i], seed);
		y[i] = malloc(sizeof(float) * (size_t)(d[i].csize + 1));
		fill_c(c, &d[i], y[i]);
	}
	CHECK_EQ(rt_ctx_create(&ctx, threads), RT_OK);
	rt_sgemm_batch(ctx, count, batch_item, &b);
	rt_ctx_destroy(ctx);
	for (int i = 0; i < c->m * c->n; i++)
		seen[i] = 1;
	for (int64_t i = 0; i < count; i++) {
		check_result(c, &d[i], y[i], seen, what);
		sg_data_free(&d[i]);
		free(y[i]);
	}
	free(seen);
	free(y);
	free(d);
}

static void test_batches(void)
{
	/* small ones side by side, big ones one at a time */
	static const struct sg_case cases[] = {
		{ 8, 8, 8, 0, 0, 0, 1, 0, 0, 1, RT_ACT_RELU },
		{ 33, 40, 20, 1, 1, 2, 1, 1, BIAS_PER_ROW },
		{ 300, 200, 80, 0, 1, 0, 1, 0, BIAS_PER_COL, 0, RT_ACT_CLIP },
	};
	static const int64_t counts[] = { 0, 1, 5, 12 };
	uint64_t seed = 1;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (size_t n = 0; n < sizeof counts / sizeof counts[0]; n++)
			batch_case(&cases[i], counts[n], 1 + 2 * (int)(n % 2), &seed);
}

/* ------------------------------------------------------------------------ */
/* The kernel choice                                                        */
/* ------------------------------------------------------------------------ */

static void test_isa_choice(void)
{
	const int best = best_isa();
	CHECK_EQ(unsetenv("ONNXC_GEMM"), 0);
	CHECK_EQ(rt_sgemm_isa(), best);
	setenv("ONNXC_GEMM", "blas", 1);
	CHECK_EQ(rt_sgemm_isa(), RT_SGEMM_BLAS);
	setenv("ONNXC_GEMM", "avx2", 1);
	CHECK_EQ(rt_sgemm_isa(), best < RT_SGEMM_AVX2 ? best : RT_SGEMM_AVX2);
	setenv("ONNXC_GEMM", "avx512", 1);
	CHECK_EQ(rt_sgemm_isa(), best);
	setenv("ONNXC_GEMM", "nonsense", 1);
	CHECK_EQ(rt_sgemm_isa(), best);
	unsetenv("ONNXC_GEMM");
	CHECK_EQ(rt_sgemm_nr(RT_SGEMM_AVX512), 32);
	CHECK_EQ(rt_sgemm_nr(RT_SGEMM_AVX2), 16);
}

TESTS(T(test_edges) T(test_blocks) T(test_epilogues) T(test_packer_and_dots) T(test_prepacked)
              T(test_batches) T(test_isa_choice))
