/*
 * rt_norm.c - softmax, log_softmax and hardmax; layer, instance and local
 * response normalization.
 *
 * All of them work on rows or lanes of a tensor viewed as [outer, axis,
 * inner]. When inner == 1 (softmax over the last axis, as transformers use
 * it; every layer norm; instance norm's spatial rows) each row is
 * contiguous and is processed in a few vectorizable passes that stay in
 * cache: softmax takes the row maximum, writes exp(x - max) while summing
 * it, then scales by 1/sum. When inner > 1 the same passes run over blocks
 * of 64 neighbouring lanes at once, so the inner loops are still contiguous.
 *
 * exp is the hot spot of softmax, and glibc's expf is a call the compiler
 * cannot vectorize without -ffast-math, so f32 uses its own: the classic
 * range reduction x = n ln2 + r with a polynomial for e^r (Cephes'
 * coefficients; measured within 1.4 ulp of exp), written with plain
 * arithmetic and an integer mask only so that a loop of it becomes SIMD
 * code. It serves x <= 0 (softmax's x - max); results below 1e-38 flush to
 * 0. f64 uses libm.
 *
 * The runtime is built for the x86-64 baseline (SSE2: 4 floats a vector, no
 * FMA), where softmax is bound by the instruction count of exp. So the f32
 * row kernels are compiled twice from the same macros, once more under
 * `#pragma GCC target("avx2,fma")`, and the AVX2 copy runs where the CPU
 * has it (unless ONNXC_NO_AVX2=1); it is about twice as fast (see the
 * bench in test_rt_norm.c).
 *
 * Sums (softmax denominators, norm statistics) accumulate in 8 or 16 lanes
 * of the data type within blocks of 256 elements, and the block totals in
 * double, so long rows keep their precision without a slow per-element
 * double conversion. Statistics use two passes (mean, then the mean squared
 * deviation), which unlike E[x^2] - E[x]^2 does not cancel for inputs with
 * a large mean.
 *
 * Threads split the rows (or row blocks); each output depends only on its
 * own row, so results do not depend on the thread count.
 */
#include "onnxc_rt.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 256   /* elements per lane-summed block */
#define CW    64    /* lanes per block when inner > 1 */
#define GRAIN 16384 /* elements per parallel chunk, at least */

/* A grain in units of `per` elements each. */
static int64_t grain_of(int64_t per) { return per > 0 && per < GRAIN ? GRAIN / per : 1; }

/* Task t over rows of len cut into blocks of CW (nblocks a row): its row
 * *o and first column *c0; returns the block's width. */
static int64_t block_of(int64_t t, int64_t nblocks, int64_t len, int64_t *o, int64_t *c0)
{
	*o = t / nblocks;
	*c0 = t % nblocks * CW;
	return len - *c0 < CW ? len - *c0 : CW;
}

static bool float_dtype(int dtype) { return dtype == RT_F32 || dtype == RT_F64; }

/* ------------------------------------------------------------------------ */
/* Building blocks                                                          */
/* ------------------------------------------------------------------------ */

/*
 * e^x in f32 for x <= 88 (above, garbage), NaN for NaN. MADD(a, b, c) is
 * a*b + c, fused where the target has FMA. Below the range p is garbage
 * (NaN for -inf) and is masked to 0 with integer operations: a select
 * would let the compiler specialize the polynomial for one side of a
 * branch, and then it refuses to vectorize the loop because float
 * arithmetic may trap.
 */
#define DEF_EXP(NAME, MADD)                                                             \
	static inline float NAME(float x)                                               \
	{                                                                               \
		/* t's low mantissa bits hold n = round(x / ln2): no float->int cast */ \
		float t = MADD(x, 1.44269504f, 12582912.0f), n = t - 12582912.0f;       \
		float r = MADD(n, 2.12194440e-4f, MADD(n, -0.693359375f, x));           \
		float p = 1.9875691500e-4f, s;                                          \
		uint32_t bits, pb;                                                      \
		memcpy(&bits, &t, sizeof bits);                                         \
		bits = (bits - 0x4B400000u + 127u) << 23; /* 2^n */                     \
		p = MADD(p, r, 1.3981999507e-3f);                                       \
		p = MADD(p, r, 8.3334519073e-3f);                                       \
		p = MADD(p, r, 4.1665795894e-2f);                                       \
		p = MADD(p, r, 1.6666665459e-1f);                                       \
		p = MADD(p, r, 5.0000001201e-1f);                                       \
		p = MADD(p * r, r, r) + 1.0f;                                           \
		memcpy(&s, &bits, sizeof s);                                            \
		p *= s;                                                                 \
		memcpy(&pb, &p, sizeof pb);                                             \
		pb &= 0u - (uint32_t) !(x < -87.33654f); /* underflow: 0 */             \
		memcpy(&p, &pb, sizeof p);                                              \
		return p;                                                               \
	}

#define MUL_ADD(a, b, c) ((a) * (b) + (c))

/* Folds the upper half of lanes 0..2w-1 into the lower: a constant loop the
 * compiler turns into vector operations (a loop over w it would not). A
 * fold of NL (8 or 16) lanes into lane[0] takes log2(NL) of them. */
#define ADD(a, b) ((a) + (b))
#define MAX(a, b) ((b) > (a) ? (b) : (a))
#define HALVE(lane, w, OP)               \
	for (int j_ = 0; j_ < (w); j_++) \
	lane[j_] = OP(lane[j_], lane[j_ + (w)])
#define FOLD(lane, NL, OP)                  \
	do {                                \
		HALVE(lane, (NL) / 2, OP);  \
		HALVE(lane, (NL) / 4, OP);  \
		HALVE(lane, (NL) / 8, OP);  \
		HALVE(lane, (NL) / 16, OP); \
	} while (0)

/*
 * A blocked sum of TERM(x[i], m, EXP) over a row: NL lanes of T within
 * blocks of BLOCK elements, block totals in double. STORE(y, i, v) may also
 * keep the terms (softmax stores its exponentials while summing them).
 */
#define BLOCKED_SUM(NAME, T, NL, TERM, EXP, STORE)                             \
	static double NAME(const T *restrict x, T *restrict y, int64_t n, T m) \
	{                                                                      \
		double total = 0;                                              \
		for (int64_t b = 0; b < n; b += BLOCK) {                       \
			T lane[NL] = { 0 }, s = 0;                             \
			int64_t e = n - b < BLOCK ? n : b + BLOCK, i = b;      \
			for (; i + (NL) <= e; i += (NL))                       \
				for (int j = 0; j < (NL); j++) {               \
					T v = TERM(x[i + j], m, EXP);          \
					STORE(y, i + j, v);                    \
					lane[j] += v;                          \
				}                                              \
			for (; i < e; i++) {                                   \
				T v = TERM(x[i], m, EXP);                      \
				STORE(y, i, v);                                \
				s += v;                                        \
			}                                                      \
			FOLD(lane, NL, ADD);                                   \
			total += s + lane[0];                                  \
		}                                                              \
		return total;                                                  \
	}

#define TERM_ID(v, m, EXP)    (v)
#define TERM_SQDEV(v, m, EXP) (((v) - (m)) * ((v) - (m)))
#define TERM_EXP(v, m, EXP)   EXP((v) - (m))
#define NO_STORE(y, i, v)     ((void)(y))
#define STORE(y, i, v)        ((y)[i] = (v))

/*
 * Row helpers of one family S (element type T, NL lanes, EXP its exp):
 * S##_max, the largest element with NaN ignored (the reference's x > max
 * rule), -inf for none; S##_sum, S##_sqdev and S##_expsum, sums of x,
 * (x - m)^2 and exp(x - m), S##_expstore the last storing exp(x - m) in y;
 * S##_affine, y = (x - mean) * inv * scale + bias with per-column scale and
 * bias (bias may be NULL) or, when scale is NULL, the scalars sc and bi.
 */
#define ROW_HELPERS(S, T, NL, EXP)                                                           \
	static T S##_max(const T *restrict x, int64_t n)                                     \
	{                                                                                    \
		T lane[NL], m = -(T)INFINITY;                                                \
		int64_t i = 0;                                                               \
		for (int j = 0; j < (NL); j++)                                               \
			lane[j] = -(T)INFINITY;                                              \
		for (; i + (NL) <= n; i += (NL))                                             \
			for (int j = 0; j < (NL); j++)                                       \
				lane[j] = MAX(lane[j], x[i + j]);                            \
		for (; i < n; i++)                                                           \
			m = MAX(m, x[i]);                                                    \
		FOLD(lane, NL, MAX);                                                         \
		return MAX(m, lane[0]);                                                      \
	}                                                                                    \
	BLOCKED_SUM(S##_sum, T, NL, TERM_ID, EXP, NO_STORE)                                  \
	BLOCKED_SUM(S##_sqdev, T, NL, TERM_SQDEV, EXP, NO_STORE)                             \
	BLOCKED_SUM(S##_expsum, T, NL, TERM_EXP, EXP, NO_STORE)                              \
	BLOCKED_SUM(S##_expstore, T, NL, TERM_EXP, EXP, STORE)                               \
	static void S##_affine(const T *restrict x, T *restrict y, int64_t n, T mean, T inv, \
	                       const T *scale, const T *bias, T sc, T bi)                    \
	{                                                                                    \
		if (scale && bias)                                                           \
			for (int64_t i = 0; i < n; i++)                                      \
				y[i] = (x[i] - mean) * inv * scale[i] + bias[i];             \
		else if (scale)                                                              \
			for (int64_t i = 0; i < n; i++)                                      \
				y[i] = (x[i] - mean) * inv * scale[i];                       \
		else                                                                         \
			for (int64_t i = 0; i < n; i++)                                      \
				y[i] = (x[i] - mean) * (inv * sc) + bi;                      \
	}

/* ------------------------------------------------------------------------ */
/* The kernels of a family                                                  */
/* ------------------------------------------------------------------------ */

/*
 * S##_softmax_row: a row of n (inner == 1). Softmax scales the stored
 * exponentials; log softmax needs only their sum: y = (x - max) -
 * log(sum). Hardmax marks the first maximum (the first element when there
 * is none: all NaN or -inf). A NaN in the row makes the softmax row NaN, as
 * in the reference.
 *
 * S##_softmax_cols: w lanes (w <= CW) inner apart, over axis positions: the
 * same passes with per-lane maxima and sums. The exponentials are stored
 * for log softmax too (and overwritten): a store under a condition would
 * not vectorize.
 *
 * S##_norm_row: normalizes a row, y = (x - mean) * inv_std * scale + bias,
 * with per-column scale and bias (layer norm, ch < 0) or scale[ch] and
 * bias[ch] (instance norm), and returns the statistics.
 */
#define KERNELS(S, T, NL, EXP)                                                                  \
	ROW_HELPERS(S, T, NL, EXP)                                                              \
	static void S##_softmax_row(const void *xv, void *yv, int64_t n, int kind)              \
	{                                                                                       \
		const T *restrict x = xv;                                                       \
		T *restrict y = yv, m = S##_max(x, n), inv, lse;                                \
		int64_t at = 0;                                                                 \
		if (kind == RT_HARDMAX) {                                                       \
			while (at < n - 1 && x[at] != m)                                        \
				at++;                                                           \
			memset(y, 0, sizeof(T) * (size_t)n);                                    \
			y[m == -(T)INFINITY ? 0 : at] = 1;                                      \
			return;                                                                 \
		}                                                                               \
		if (kind == RT_LOG_SOFTMAX) {                                                   \
			lse = (T)log(S##_expsum(x, NULL, n, m));                                \
			for (int64_t i = 0; i < n; i++)                                         \
				y[i] = (x[i] - m) - lse;                                        \
			return;                                                                 \
		}                                                                               \
		inv = 1 / (T)S##_expstore(x, y, n, m);                                          \
		for (int64_t i = 0; i < n; i++)                                                 \
			y[i] *= inv;                                                            \
	}                                                                                       \
	static void S##_hardmax_cols(const T *x, T *y, int64_t axis, int64_t inner, int64_t w)  \
	{                                                                                       \
		for (int64_t c = 0; c < w; c++) {                                               \
			T m = -(T)INFINITY;                                                     \
			int64_t at = 0;                                                         \
			for (int64_t a = 0; a < axis; a++) {                                    \
				if (x[a * inner + c] > m) {                                     \
					m = x[a * inner + c];                                   \
					at = a;                                                 \
				}                                                               \
				y[a * inner + c] = 0;                                           \
			}                                                                       \
			y[at * inner + c] = 1;                                                  \
		}                                                                               \
	}                                                                                       \
	static void S##_softmax_cols(const void *xv, void *yv, int64_t axis, int64_t inner,     \
	                             int64_t w, int kind)                                       \
	{                                                                                       \
		const T *x = xv;                                                                \
		T *y = yv, m[CW], s[CW];                                                        \
		if (kind == RT_HARDMAX) {                                                       \
			S##_hardmax_cols(x, y, axis, inner, w);                                 \
			return;                                                                 \
		}                                                                               \
		for (int64_t c = 0; c < w; c++) {                                               \
			m[c] = -(T)INFINITY;                                                    \
			s[c] = 0;                                                               \
		}                                                                               \
		for (int64_t a = 0; a < axis; a++) {                                            \
			const T *restrict xa = x + a * inner;                                   \
			for (int64_t c = 0; c < w; c++)                                         \
				m[c] = MAX(m[c], xa[c]);                                        \
		}                                                                               \
		for (int64_t a = 0; a < axis; a++) {                                            \
			const T *restrict xa = x + a * inner;                                   \
			T *restrict ya = y + a * inner;                                         \
			for (int64_t c = 0; c < w; c++) {                                       \
				ya[c] = EXP(xa[c] - m[c]);                                      \
				s[c] += ya[c];                                                  \
			}                                                                       \
		}                                                                               \
		for (int64_t c = 0; c < w; c++)                                                 \
			s[c] = kind == RT_SOFTMAX ? 1 / s[c] : (T)log(s[c]);                    \
		for (int64_t a = 0; a < axis; a++) {                                            \
			const T *restrict xa = x + a * inner;                                   \
			T *restrict ya = y + a * inner;                                         \
			if (kind == RT_SOFTMAX)                                                 \
				for (int64_t c = 0; c < w; c++)                                 \
					ya[c] *= s[c];                                          \
			else                                                                    \
				for (int64_t c = 0; c < w; c++)                                 \
					ya[c] = (xa[c] - m[c]) - s[c];                          \
		}                                                                               \
	}                                                                                       \
	static void S##_norm_row(const void *xv, void *yv, int64_t n, double eps,               \
	                         const void *scale, const void *bias, int64_t ch, double *mean, \
	                         double *inv)                                                   \
	{                                                                                       \
		const T *x = xv, *sc = scale, *bi = bias;                                       \
		double mu = n ? S##_sum(x, NULL, n, 0) / (double)n : 0;                         \
		double var = n ? S##_sqdev(x, NULL, n, (T)mu) / (double)n : 0;                  \
		*mean = mu;                                                                     \
		*inv = 1 / sqrt(var + eps);                                                     \
		if (ch >= 0)                                                                    \
			S##_affine(x, yv, n, (T)mu, (T)*inv, NULL, NULL, sc[ch], bi[ch]);       \
		else                                                                            \
			S##_affine(x, yv, n, (T)mu, (T)*inv, sc, bi, 1, 0);                     \
	}                                                                                       \
	static const struct kernels S##_kernels = { S##_softmax_row, S##_softmax_cols,          \
		                                    S##_norm_row };

struct kernels {
	void (*softmax_row)(const void *x, void *y, int64_t n, int kind);
	void (*softmax_cols)(const void *x, void *y, int64_t axis, int64_t inner, int64_t w,
	                     int kind);
	void (*norm_row)(const void *x, void *y, int64_t n, double eps, const void *scale,
	                 const void *bias, int64_t ch, double *mean, double *inv);
};

DEF_EXP(exp_f32, MUL_ADD)
KERNELS(f32, float, 8, exp_f32)
KERNELS(f64, double, 8, exp)

/* The AVX2 copy of the f32 kernels (GCC on x86-64; elsewhere only the
 * baseline). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
DEF_EXP(exp_avx2, fmaf)
KERNELS(avx2, float, 16, exp_avx2)
#pragma GCC pop_options

/* ONNXC_NO_AVX2=1 forces the baseline, for tests and comparisons. */
static const struct kernels *f32_best(void)
{
	const char *off = getenv("ONNXC_NO_AVX2");
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
	    !(off && *off && *off != '0'))
		return &avx2_kernels;
	return &f32_kernels;
}
#else
static const struct kernels *f32_best(void) { return &f32_kernels; }
#endif

/* The kernels for dtype, or NULL. */
static const struct kernels *kernels_of(int dtype)
{
	return dtype == RT_F32 ? f32_best() : dtype == RT_F64 ? &f64_kernels : NULL;
}

/* ------------------------------------------------------------------------ */
/* Softmax, LogSoftmax, Hardmax                                             */
/* ------------------------------------------------------------------------ */

struct softmax_job {
	const struct rt_softmax_desc *d;
	const struct kernels *k;
	const char *x;
	char *y;
	int64_t es, nchunks;
};

static void softmax_rows(void *arg, int64_t b, int64_t e)
{
	const struct softmax_job *jb = arg;
	int64_t n = jb->d->axis;
	for (int64_t o = b; o < e; o++)
		jb->k->softmax_row(jb->x + o * n * jb->es, jb->y + o * n * jb->es, n, jb->d->kind);
}

static void softmax_cols(void *arg, int64_t b, int64_t e)
{
	const struct softmax_job *jb = arg;
	const struct rt_softmax_desc *d = jb->d;
	for (int64_t t = b; t < e; t++) {
		int64_t o, c0, w = block_of(t, jb->nchunks, d->inner, &o, &c0);
		int64_t off = (o * d->axis * d->inner + c0) * jb->es;
		jb->k->softmax_cols(jb->x + off, jb->y + off, d->axis, d->inner, w, d->kind);
	}
}

int rt_softmax(struct rt_ctx *ctx, const struct rt_softmax_desc *d, const void *x, void *y)
{
	struct softmax_job jb = { d, kernels_of(d->dtype),    x,
		                  y, rt_dtype_size(d->dtype), (d->inner + CW - 1) / CW };
	if (!jb.k || d->kind < RT_SOFTMAX || d->kind > RT_HARDMAX || d->outer < 0 || d->axis < 0 ||
	    d->inner < 0)
		return RT_ERR_ARGUMENT;
	if (d->outer == 0 || d->axis == 0 || d->inner == 0)
		return RT_OK;
	if (d->inner == 1)
		rt_parallel(ctx, d->outer, grain_of(d->axis), softmax_rows, &jb);
	else
		rt_parallel(ctx, d->outer * jb.nchunks, grain_of(d->axis * CW), softmax_cols, &jb);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* LayerNormalization, InstanceNormalization                                */
/* ------------------------------------------------------------------------ */

/* One row job for both norms: layer norm has per-column params, instance
 * norm a scale and bias per channel (row % channels). */
struct norm_job {
	const struct kernels *k;
	int64_t es, cols, channels; /* channels: 0 for layer norm */
	double eps;
	const char *x, *scale, *bias;
	char *y;
	float *mean, *inv_std;
};

static void norm_rows(void *arg, int64_t b, int64_t e)
{
	const struct norm_job *jb = arg;
	int64_t n = jb->cols;
	for (int64_t r = b; r < e; r++) {
		double mean, inv;
		jb->k->norm_row(jb->x + r * n * jb->es, jb->y + r * n * jb->es, n, jb->eps,
		                jb->scale, jb->bias, jb->channels ? r % jb->channels : -1, &mean,
		                &inv);
		if (jb->mean)
			jb->mean[r] = (float)mean;
		if (jb->inv_std)
			jb->inv_std[r] = (float)inv;
	}
}

int rt_layernorm(struct rt_ctx *ctx, const struct rt_layernorm_desc *d, const void *x,
                 const void *scale, const void *bias, void *y, float *mean, float *inv_std)
{
	struct norm_job jb = { kernels_of(d->dtype),
		               rt_dtype_size(d->dtype),
		               d->cols,
		               0,
		               d->eps,
		               x,
		               scale,
		               bias,
		               y,
		               mean,
		               inv_std };
	if (!jb.k || d->rows < 0 || d->cols < 0 || (!scale && d->cols))
		return RT_ERR_ARGUMENT;
	rt_parallel(ctx, d->rows, grain_of(d->cols), norm_rows, &jb);
	return RT_OK;
}

int rt_instnorm(struct rt_ctx *ctx, const struct rt_instnorm_desc *d, const void *x,
                const void *scale, const void *bias, void *y)
{
	struct norm_job jb = { kernels_of(d->dtype),
		               rt_dtype_size(d->dtype),
		               d->spatial,
		               d->c,
		               d->eps,
		               x,
		               scale,
		               bias,
		               y,
		               NULL,
		               NULL };
	if (!jb.k || d->n < 0 || d->c < 0 || d->spatial < 0)
		return RT_ERR_ARGUMENT;
	if (d->n == 0 || d->c == 0 || d->spatial == 0)
		return RT_OK;
	if (!scale || !bias)
		return RT_ERR_ARGUMENT;
	rt_parallel(ctx, d->n * d->c, grain_of(d->spatial), norm_rows, &jb);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* LRN                                                                      */
/* ------------------------------------------------------------------------ */

/*
 * y = x / (bias + alpha/size * sum of x^2 over the channel window)^beta over
 * a block of w spatial positions of one image and channel. beta = 0.75 (the
 * usual value) is t^-0.75 = 1/sqrt(t*sqrt(t)): two square roots are much
 * cheaper than pow, which other betas call. (Neither vectorizes: without
 * -fno-math-errno a square root may set errno.)
 */
#define LRN_BLOCK(S, T, SQRT, POW)                                                        \
	static void S##_lrn_block(const T *x, T *restrict y, int64_t c, int64_t channels, \
	                          int64_t stride, int64_t w, const struct rt_lrn_desc *d) \
	{                                                                                 \
		T sq[CW] = { 0 }, k = (T)d->alpha / (T)d->size;                           \
		int64_t lo = c - (d->size - 1) / 2, hi = c + d->size / 2;                 \
		for (int64_t i = lo < 0 ? 0 : lo; i <= hi && i < channels; i++) {         \
			const T *restrict xi = x + (i - c) * stride;                      \
			for (int64_t s = 0; s < w; s++)                                   \
				sq[s] += xi[s] * xi[s];                                   \
		}                                                                         \
		if (d->beta == 0.75f) {                                                   \
			for (int64_t s = 0; s < w; s++) {                                 \
				T t = (T)d->bias + k * sq[s];                             \
				y[s] = x[s] / SQRT(t * SQRT(t));                          \
			}                                                                 \
			return;                                                           \
		}                                                                         \
		for (int64_t s = 0; s < w; s++)                                           \
			y[s] = x[s] / POW((T)d->bias + k * sq[s], (T)d->beta);            \
	}

LRN_BLOCK(f32, float, sqrtf, powf)
LRN_BLOCK(f64, double, sqrt, pow)

struct lrn_job {
	const struct rt_lrn_desc *d;
	const char *x;
	char *y;
	int64_t nchunks;
};

static void lrn_range(void *arg, int64_t b, int64_t e)
{
	const struct lrn_job *jb = arg;
	const struct rt_lrn_desc *d = jb->d;
	for (int64_t t = b; t < e; t++) {
		int64_t row, s0, w = block_of(t, jb->nchunks, d->spatial, &row, &s0);
		int64_t off = row * d->spatial + s0;
		if (d->dtype == RT_F32)
			f32_lrn_block((const float *)jb->x + off, (float *)jb->y + off, row % d->c,
			              d->c, d->spatial, w, d);
		else
			f64_lrn_block((const double *)jb->x + off, (double *)jb->y + off,
			              row % d->c, d->c, d->spatial, w, d);
	}
}

int rt_lrn(struct rt_ctx *ctx, const struct rt_lrn_desc *d, const void *x, void *y)
{
	struct lrn_job jb = { d, x, y, (d->spatial + CW - 1) / CW };
	if (!float_dtype(d->dtype) || d->n < 0 || d->c < 0 || d->spatial < 0 || d->size < 1)
		return RT_ERR_ARGUMENT;
	if (d->n == 0 || d->c == 0 || d->spatial == 0)
		return RT_OK;
	rt_parallel(ctx, d->n * d->c * jb.nchunks, grain_of(CW * d->size), lrn_range, &jb);
	return RT_OK;
}
