/*
 * rt_gemm.c - batched GEMM with ONNX bias broadcasting and a fused
 * epilogue, and the epilogue itself (shared with rt_conv.c).
 *
 * f32 goes to the runtime's own GEMM (rt_sgemm.c, AVX-512 or AVX2 kernels
 * chosen at run time); f64, and f32 on CPUs with neither, go to OpenBLAS
 * (cblas_sgemm / cblas_dgemm); integers, which BLAS does not have, use a
 * plain loop in unsigned arithmetic so that products and sums wrap as
 * ONNX's integer MatMul does.
 *
 * The batch is walked as flat positions p of batch_dims; each position's A
 * and B are found through the per-dimension element strides, so numpy
 * broadcasting ([2,1,3,4] x [5,4,6]) costs no copies. When B is the same
 * matrix for every position and the A matrices lie back to back (MatMul of
 * [batch, seq, hidden] by a weight), the batch is folded into the rows of
 * one tall GEMM, which runs far better than many short ones.
 *
 * rt_sgemm cuts the GEMMs into tasks for the threads itself (small ones of
 * a batch side by side, big ones each across the threads) and calls back
 * when a block of the result is final; the "finish" then adds beta * C,
 * the residual, and applies the activation to that block while it is hot.
 *
 * For BLAS, each GEMM is cut into units: one batch position, and a block
 * of its rows or columns (whichever repacks the smaller operand when BLAS
 * is called per block) so that one unit's result is about a level-2-cache
 * worth, and there are enough units to keep every thread busy. Right after
 * a unit's GEMM the finish runs on it. Units are spread over the context's
 * threads; BLAS itself runs single-threaded (rt_ctx_create sets OpenBLAS to
 * one thread): two thread pools on the same cores fight, and OpenBLAS's
 * idle workers spin for a tenth of a second after every call, which halved
 * the speed of whatever kernel ran next. Every result element is computed
 * by one BLAS call whose shape does not depend on the thread count, so
 * results do not either (nor do rt_sgemm's).
 *
 * The epilogue works in tiles of a few KB so that adding the residual and
 * applying the activation touch each element while it is in L1; each
 * activation has its own loop (a switch outside, no calls inside for the
 * cheap ones) so the compiler vectorizes it. Integers go through double
 * for the activations and saturate back, as the reference does.
 */
#include "onnxc_rt.h"
#include "rt_sgemm.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

/*
 * A unit's result of about this many elements (1 MiB of f32) stays in the
 * L2 caches. Smaller units cost more in BLAS calls and repacking than the
 * cache saves: 2^16 made 512x512x512 10% slower.
 */
#define GEMM_BLOCK_ELEMS (1 << 18)
/* Fewer multiply-adds than this and OpenBLAS runs single-threaded. */
#define GEMM_SMALL_MNK (1 << 18)
/* Elements per epilogue tile (residual add and activation in L1). */
#define EP_TILE 1024

/* ------------------------------------------------------------------------ */
/* Epilogue                                                                 */
/* ------------------------------------------------------------------------ */

/* Clamps that keep NaN, like ONNX's Clip and Relu. */
#define MAX_(x, lo) ((x) < (lo) ? (lo) : (x))
#define MIN_(x, hi) ((x) > (hi) ? (hi) : (x))

/* double to int64 as the reference stores it: NaN is 0, out of range saturates. */
static inline int64_t sat_i64(double v)
{
	return v != v ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (int64_t)v;
}

#define TO_F32(x)     ((float)(x))
#define TO_F64(x)     ((double)(x))
#define TO_I32(x)     ((int32_t)sat_i64(x))
#define TO_I64(x)     sat_i64(x)
#define ADD_F(x, y)   ((x) + (y))
#define ADD_I32(x, y) ((int32_t)((uint32_t)(x) + (uint32_t)(y)))
#define ADD_I64(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))

/* y[i] = expr(v) over the tile, v being y[i] in the compute type CT. */
#define ACT_LOOP(CT, TO, expr)            \
	for (int64_t i = 0; i < n; i++) { \
		const CT v = (CT)y[i];    \
		y[i] = TO(expr);          \
	}

/*
 * epilogue_SFX(ep, y, r, n): y = act(y + r) over n elements (r may be
 * NULL), in tiles. T is the element type, CT the type activations are
 * computed in.
 */
#define DEFINE_EPILOGUE(SFX, T, CT, TO, ADD, EXP, TANH)                                       \
	static void act_tile_##SFX(const struct rt_epilogue *ep, T *restrict y, int64_t n)    \
	{                                                                                     \
		const CT a = (CT)ep->alpha, b = (CT)ep->beta, one = 1, zero = 0;              \
		const CT sixth = (CT)(1.0 / 6), half = (CT)0.5;                               \
		switch (ep->act) {                                                            \
		case RT_ACT_RELU: ACT_LOOP(CT, TO, MAX_(v, zero)); break;                     \
		case RT_ACT_LEAKY_RELU: ACT_LOOP(CT, TO, v < zero ? a * v : v); break;        \
		case RT_ACT_CLIP: ACT_LOOP(CT, TO, MIN_(MAX_(v, a), b)); break;               \
		case RT_ACT_SIGMOID: ACT_LOOP(CT, TO, one / (one + EXP(-v))); break;          \
		case RT_ACT_TANH: ACT_LOOP(CT, TO, TANH(v)); break;                           \
		case RT_ACT_HARD_SIGMOID: ACT_LOOP(CT, TO, MIN_(MAX_(b + v * a, zero), one)); \
			break;                                                                \
		case RT_ACT_HARD_SWISH:                                                       \
			ACT_LOOP(CT, TO, MIN_(MAX_(half + v * sixth, zero), one) * v);        \
			break;                                                                \
		default: break;                                                               \
		}                                                                             \
	}                                                                                     \
	static void epilogue_##SFX(const struct rt_epilogue *ep, void *yv, const void *rv,    \
	                           int64_t n)                                                 \
	{                                                                                     \
		T *y = yv;                                                                    \
		const T *r = rv;                                                              \
		if (!r && ep->act == RT_ACT_NONE)                                             \
			return;                                                               \
		for (int64_t t = 0; t < n; t += EP_TILE) {                                    \
			int64_t len = n - t < EP_TILE ? n - t : EP_TILE;                      \
			T *restrict yt = y + t;                                               \
			if (r) {                                                              \
				const T *restrict rt = r + t;                                 \
				for (int64_t i = 0; i < len; i++)                             \
					yt[i] = ADD(yt[i], rt[i]);                            \
			}                                                                     \
			act_tile_##SFX(ep, yt, len);                                          \
		}                                                                             \
	}

DEFINE_EPILOGUE(f32, float, float, TO_F32, ADD_F, expf, tanhf)
DEFINE_EPILOGUE(f64, double, double, TO_F64, ADD_F, exp, tanh)
DEFINE_EPILOGUE(i32, int32_t, double, TO_I32, ADD_I32, exp, tanh)
DEFINE_EPILOGUE(i64, int64_t, double, TO_I64, ADD_I64, exp, tanh)

/*
 * The f32 epilogue for rt_conv.c. onnxc_rt.h is the public contract and
 * has no place for runtime-internal helpers, so the one prototype is
 * repeated there.
 */
void rt_epilogue_f32(const struct rt_epilogue *ep, float *y, const float *residual, int64_t n);

void rt_epilogue_f32(const struct rt_epilogue *ep, float *y, const float *residual, int64_t n)
{
	epilogue_f32(ep, y, residual, n);
}

/* ------------------------------------------------------------------------ */
/* The GEMM's geometry                                                      */
/* ------------------------------------------------------------------------ */

struct gemm;

/* What differs between dtypes. */
struct gemm_type {
	int esize;
	/* float: C rect = alpha op(A) op(B), rows x cols, ldc = n */
	void (*blas)(const struct gemm *g, const void *a, const void *b, void *y, int64_t rows,
	             int64_t cols);
	/* y[0, nj) of global row r, columns from j0: += beta * C (ints: alpha, too) */
	void (*bias)(const struct gemm *g, void *y, int64_t r, int64_t j0, int64_t nj);
	void (*epi)(const struct rt_epilogue *ep, void *y, const void *res, int64_t n);
	/* integers: global row r but for the residual and activation */
	void (*row)(const struct gemm *g, int64_t r);
};

struct gemm {
	struct rt_ctx *ctx;
	const struct rt_gemm_desc *d;
	const struct gemm_type *t;
	const char *a, *b, *c, *res;
	char *y;
	int64_t nbatch; /* batch positions (1 when folded into rows) */
	int64_t m;      /* rows per position (nbatch * d->m when folded) */
	int64_t blk;    /* rows or columns per unit */
	int64_t nblk;   /* units per position */
	int by_cols;    /* units are column blocks (else row blocks) */
	int finish;     /* bias, residual or activation to apply */
};

/* A rectangle of one batch position's result: rows [i0, i1), columns [j0, j1). */
struct rect {
	int64_t p, i0, i1, j0, j1;
};

/* Element offsets of position p's A and B (p = 0 when folded: both 0). */
static void item_offsets(const struct gemm *g, int64_t p, int64_t *oa, int64_t *ob)
{
	const struct rt_gemm_desc *d = g->d;
	*oa = *ob = 0;
	for (int i = d->batch_rank - 1; i >= 0 && p > 0; i--) {
		int64_t q = p % d->batch_dims[i];
		p /= d->batch_dims[i];
		*oa += q * d->a_strides[i];
		*ob += q * d->b_strides[i];
	}
}

/*
 * Where the C values of global row r start for columns j0...; *step is 0
 * when one value serves the whole row. COL and FULL repeat every d->m rows
 * (C broadcasts over the batch, which may be folded into the rows).
 */
static const char *bias_at(const struct gemm *g, int64_t r, int64_t j0, int *step)
{
	int64_t i = r % g->d->m, at;
	switch (g->d->bias) {
	case RT_BIAS_SCALAR: *step = 0, at = 0; break;
	case RT_BIAS_COL: *step = 0, at = i; break;
	case RT_BIAS_ROW: *step = 1, at = j0; break;
	default: *step = 1, at = i * g->d->n + j0; break;
	}
	return g->c + at * g->t->esize;
}

/* ------------------------------------------------------------------------ */
/* Per-dtype pieces                                                         */
/* ------------------------------------------------------------------------ */

/* Floats: BLAS, and y += beta * C. */
#define DEFINE_FLOAT(SFX, T, GEMM)                                                                \
	static void blas_##SFX(const struct gemm *g, const void *a, const void *b, void *y,       \
	                       int64_t rows, int64_t cols)                                        \
	{                                                                                         \
		const struct rt_gemm_desc *d = g->d;                                              \
		GEMM(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans,                       \
		     d->trans_b ? CblasTrans : CblasNoTrans, (int)rows, (int)cols, (int)d->k,     \
		     (T)d->alpha, a, (int)(d->trans_a ? d->m : d->k), b,                          \
		     (int)(d->trans_b ? d->k : d->n), (T)0, y, (int)d->n);                        \
	}                                                                                         \
	static void bias_##SFX(const struct gemm *g, void *yv, int64_t r, int64_t j0, int64_t nj) \
	{                                                                                         \
		int step;                                                                         \
		const T *restrict c = (const T *)bias_at(g, r, j0, &step);                        \
		const T beta = (T)g->d->beta;                                                     \
		T *restrict y = yv;                                                               \
		if (step) {                                                                       \
			for (int64_t j = 0; j < nj; j++)                                          \
				y[j] += beta * c[j];                                              \
		} else {                                                                          \
			const T v = beta * c[0];                                                  \
			for (int64_t j = 0; j < nj; j++)                                          \
				y[j] += v;                                                        \
		}                                                                                 \
	}                                                                                         \
	static const struct gemm_type type_##SFX = { sizeof(T), blas_##SFX, bias_##SFX,           \
		                                     epilogue_##SFX, NULL };

DEFINE_FLOAT(f32, float, cblas_sgemm)
DEFINE_FLOAT(f64, double, cblas_dgemm)

/*
 * Integers: one row at a time, y row = A row times B in unsigned (wrapping)
 * arithmetic, accumulated into the row of y over B's rows (contiguous), or
 * as dot products when B is transposed (then B's columns are contiguous).
 * alpha = beta = 1 (all exporters make) adds C exactly; other factors go
 * through double, as the reference does.
 */
#define DEFINE_INT(SFX, T, U, TO, ADD)                                                            \
	static void bias_##SFX(const struct gemm *g, void *yv, int64_t r, int64_t j0, int64_t nj) \
	{                                                                                         \
		const struct rt_gemm_desc *d = g->d;                                              \
		const T zero = 0;                                                                 \
		int step = 0;                                                                     \
		const T *c =                                                                      \
		        d->bias != RT_BIAS_NONE ? (const T *)bias_at(g, r, j0, &step) : &zero;    \
		T *y = yv;                                                                        \
		if (d->alpha == 1 && (d->beta == 1 || d->bias == RT_BIAS_NONE)) {                 \
			for (int64_t j = 0; d->bias != RT_BIAS_NONE && j < nj; j++)               \
				y[j] = ADD(y[j], c[j * step]);                                    \
			return;                                                                   \
		}                                                                                 \
		for (int64_t j = 0; j < nj; j++)                                                  \
			y[j] = TO((double)d->alpha * (double)y[j] +                               \
			          (double)d->beta * (double)c[j * step]);                         \
	}                                                                                         \
	static void dot_##SFX(const struct gemm *g, int64_t r, T *restrict y)                     \
	{                                                                                         \
		const struct rt_gemm_desc *d = g->d;                                              \
		int64_t p = r / g->m, i = r % g->m, oa, ob, n = d->n, k = d->k;                   \
		int64_t as = d->trans_a ? d->m : 1;                                               \
		item_offsets(g, p, &oa, &ob);                                                     \
		const T *a = (const T *)g->a + oa + (d->trans_a ? i : i * k);                     \
		const T *b = (const T *)g->b + ob;                                                \
		if (!d->trans_b) {                                                                \
			for (int64_t q = 0; q < k; q++) {                                         \
				const U av = (U)a[q * as];                                        \
				const T *restrict bq = b + q * n;                                 \
				for (int64_t j = 0; j < n; j++)                                   \
					y[j] = (T)((U)y[j] + av * (U)bq[j]);                      \
			}                                                                         \
			return;                                                                   \
		}                                                                                 \
		for (int64_t j = 0; j < n; j++) {                                                 \
			const T *restrict bj = b + j * k;                                         \
			U acc = 0;                                                                \
			for (int64_t q = 0; q < k; q++)                                           \
				acc += (U)a[q * as] * (U)bj[q];                                   \
			y[j] = (T)acc;                                                            \
		}                                                                                 \
	}                                                                                         \
	static void row_##SFX(const struct gemm *g, int64_t r)                                    \
	{                                                                                         \
		const struct rt_gemm_desc *d = g->d;                                              \
		int64_t n = d->n;                                                                 \
		T *restrict y = (T *)g->y + r * n;                                                \
		memset(y, 0, (size_t)n * sizeof(T));                                              \
		if (d->k > 0)                                                                     \
			dot_##SFX(g, r, y);                                                       \
		bias_##SFX(g, y, r, 0, n);                                                        \
	}                                                                                         \
	static const struct gemm_type type_##SFX = { sizeof(T), NULL, bias_##SFX, epilogue_##SFX, \
		                                     row_##SFX };

DEFINE_INT(i32, int32_t, uint32_t, TO_I32, ADD_I32)
DEFINE_INT(i64, int64_t, uint64_t, TO_I64, ADD_I64)

/* ------------------------------------------------------------------------ */
/* Finishing a unit: beta * C, residual, activation                         */
/* ------------------------------------------------------------------------ */

static void finish_rect(const struct gemm *g, const struct rect *u)
{
	const struct rt_gemm_desc *d = g->d;
	int64_t n = d->n, es = g->t->esize, nj = u->j1 - u->j0;
	int whole = u->j0 == 0 && u->j1 == n; /* the rows are one contiguous run */
	for (int64_t i = u->i0; i < u->i1; i++) {
		int64_t r = u->p * g->m + i, at = (r * n + u->j0) * es;
		if (d->bias != RT_BIAS_NONE && d->beta != 0)
			g->t->bias(g, g->y + at, r, u->j0, nj);
		if (!whole)
			g->t->epi(&d->ep, g->y + at, g->res ? g->res + at : NULL, nj);
	}
	if (whole) {
		int64_t at = (u->p * g->m + u->i0) * n * es;
		g->t->epi(&d->ep, g->y + at, g->res ? g->res + at : NULL, (u->i1 - u->i0) * n);
	}
}

struct finish_job {
	const struct gemm *g;
	struct rect u;
};

static void finish_range(void *arg, int64_t b, int64_t e)
{
	const struct finish_job *f = arg;
	struct rect u = f->u;
	u.i0 = f->u.i0 + b;
	u.i1 = f->u.i0 + e;
	finish_rect(f->g, &u);
}

/* Finishes u, across the threads when it is big enough to pay for them. */
static void finish_parallel(const struct gemm *g, const struct rect *u)
{
	struct finish_job f = { g, *u };
	int64_t nj = u->j1 - u->j0;
	rt_parallel(g->ctx, u->i1 - u->i0, (8192 + nj - 1) / nj, finish_range, &f);
}

/* ------------------------------------------------------------------------ */
/* Units                                                                    */
/* ------------------------------------------------------------------------ */

static struct rect unit_rect(const struct gemm *g, int64_t unit)
{
	struct rect u = { unit / g->nblk, 0, g->m, 0, g->d->n };
	int64_t b = unit % g->nblk, *lo = g->by_cols ? &u.j0 : &u.i0,
	        *hi = g->by_cols ? &u.j1 : &u.i1;
	int64_t end = *hi;
	*lo = b * g->blk;
	*hi = *lo + g->blk < end ? *lo + g->blk : end;
	return u;
}

/* The GEMM of one unit, then its finish (across threads when par). */
static void run_unit(const struct gemm *g, int64_t unit, int par)
{
	const struct rt_gemm_desc *d = g->d;
	struct rect u = unit_rect(g, unit);
	int64_t oa, ob, es = g->t->esize, rows = u.i1 - u.i0, cols = u.j1 - u.j0;
	char *y = g->y + ((u.p * g->m + u.i0) * d->n + u.j0) * es;
	item_offsets(g, u.p, &oa, &ob);
	oa += d->trans_a ? u.i0 : u.i0 * d->k;
	ob += d->trans_b ? u.j0 * d->k : u.j0;
	if (d->k > 0) {
		g->t->blas(g, g->a + oa * es, g->b + ob * es, y, rows, cols);
	} else {
		/* an empty sum; BLAS would reject the zero leading dimension */
		for (int64_t i = 0; i < rows; i++)
			memset(y + i * d->n * es, 0, (size_t)(cols * es));
	}
	if (!g->finish)
		return;
	if (par)
		finish_parallel(g, &u);
	else
		finish_rect(g, &u);
}

static void units_range(void *arg, int64_t b, int64_t e)
{
	for (int64_t u = b; u < e; u++)
		run_unit(arg, u, 0);
}

static void rows_range(void *arg, int64_t b, int64_t e)
{
	const struct gemm *g = arg;
	int64_t bytes = g->d->n * g->t->esize;
	for (int64_t r = b; r < e; r++) {
		g->t->row(g, r);
		g->t->epi(&g->d->ep, g->y + r * bytes, g->res ? g->res + r * bytes : NULL, g->d->n);
	}
}

/* ------------------------------------------------------------------------ */
/* f32 through rt_sgemm                                                     */
/* ------------------------------------------------------------------------ */

struct sg_batch {
	const struct gemm *g;
	int isa;
};

/* A block of position s->item's result is final: finish it. */
static void sg_done(const struct rt_sgemm *s, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
	struct rect u = { s->item, i0, i1, j0, j1 };
	finish_rect(s->done_arg, &u);
}

/*
 * The finish of position p as an epilogue rt_sgemm applies in its kernels;
 * 0 when it cannot: an activation it lacks, or a bias that repeats down a
 * folded batch (rows i % m).
 */
static int sg_fuse(const struct gemm *g, int64_t p, struct rt_sgemm_ep *e)
{
	const struct rt_gemm_desc *d = g->d;
	const int64_t n = d->n;
	int per_row = d->bias == RT_BIAS_COL || d->bias == RT_BIAS_FULL;
	if (!rt_sgemm_fusable(d->ep.act) || (per_row && g->m != d->m))
		return 0;
	*e = (struct rt_sgemm_ep){
		.res = g->res ? (const float *)(const void *)g->res + p * g->m * n : NULL,
		.res_ld = n,
		.act = d->ep.act,
		.alpha = d->ep.alpha,
		.beta = d->ep.beta,
	};
	if (g->c && d->beta != 0) {
		e->bias = (const float *)(const void *)g->c;
		e->bias_rs = d->bias == RT_BIAS_COL ? 1 : d->bias == RT_BIAS_FULL ? n : 0;
		e->bias_cs = d->bias == RT_BIAS_ROW || d->bias == RT_BIAS_FULL;
		e->bias_scale = d->beta;
	}
	return 1;
}

/* Batch position p as an rt_sgemm (the strides absorb the transposes). */
static void sg_item(void *arg, int64_t p, struct rt_sgemm *s)
{
	const struct sg_batch *sb = arg;
	const struct gemm *g = sb->g;
	const struct rt_gemm_desc *d = g->d;
	int64_t oa, ob;
	item_offsets(g, p, &oa, &ob);
	*s = (struct rt_sgemm){
		.isa = sb->isa,
		.m = g->m,
		.n = d->n,
		.k = d->k,
		.a = (const float *)(const void *)g->a + oa,
		.a_rs = d->trans_a ? 1 : d->k,
		.a_cs = d->trans_a ? d->m : 1,
		.b = (const float *)(const void *)g->b + ob,
		.b_rs = d->trans_b ? 1 : d->n,
		.b_cs = d->trans_b ? d->k : 1,
		.c = (float *)(void *)g->y + p * g->m * d->n,
		.ldc = d->n,
		.alpha = d->alpha,
		.done_arg = (void *)g,
	};
	if (!sg_fuse(g, p, &s->ep))
		s->done = g->finish ? sg_done : NULL;
	else
		s->fuse = 1;
}

/* ------------------------------------------------------------------------ */
/* Planning                                                                 */
/* ------------------------------------------------------------------------ */

static const struct gemm_type *type_of(int dtype)
{
	switch (dtype) {
	case RT_F32: return &type_f32;
	case RT_F64: return &type_f64;
	case RT_I32: return &type_i32;
	case RT_I64: return &type_i64;
	default: return NULL;
	}
}

/*
 * Can the batch fold into rows? It can when B is shared by every position
 * and the A matrices follow each other densely in batch order.
 */
static int foldable(const struct rt_gemm_desc *d)
{
	int64_t want = d->m * d->k;
	if (d->trans_a)
		return 0;
	for (int i = d->batch_rank - 1; i >= 0; i--) {
		if (d->batch_dims[i] == 1)
			continue;
		if (d->b_strides[i] != 0 || d->a_strides[i] != want)
			return 0;
		want *= d->batch_dims[i];
	}
	return 1;
}

static int desc_ok(const struct rt_gemm_desc *d)
{
	if (d->m < 0 || d->n < 0 || d->k < 0 || d->batch_rank < 0 || d->batch_rank > 6 ||
	    d->bias < RT_BIAS_NONE || d->bias > RT_BIAS_FULL)
		return 0;
	for (int i = 0; i < d->batch_rank; i++)
		if (d->batch_dims[i] < 0)
			return 0;
	/* BLAS takes int sizes */
	return d->m <= INT_MAX && d->n <= INT_MAX && d->k <= INT_MAX;
}

/*
 * Cuts each position's GEMM into units of at most about GEMM_BLOCK_ELEMS
 * results, and into at least THREAD_UNITS units in all when
 * the work is large enough to be worth splitting. The split depends on the
 * shapes only, never on the thread count.
 */
#define THREAD_UNITS 8
static void plan_blocks(struct gemm *g)
{
	int64_t n = g->d->n, len, min, want;
	g->by_cols = g->m <= n;
	len = g->by_cols ? n : g->m;
	g->blk = len;
	g->nblk = 1;
	/* blocks narrower than this lose more in BLAS than the cache gains */
	min = g->by_cols ? 64 : 16;
	want = g->m * n * g->d->k >= GEMM_SMALL_MNK && g->nbatch < THREAD_UNITS
	               ? (THREAD_UNITS + g->nbatch - 1) / g->nbatch
	               : 1;
	if (g->m * n <= GEMM_BLOCK_ELEMS && (want <= 1 || len < 2 * min))
		return;
	g->blk = g->m * n > GEMM_BLOCK_ELEMS ? GEMM_BLOCK_ELEMS / (g->by_cols ? g->m : n) : len;
	if (want > 1 && g->blk > (len + want - 1) / want)
		g->blk = (len + want - 1) / want;
	if (g->blk < min)
		g->blk = min;
	g->nblk = (len + g->blk - 1) / g->blk;
	/* balance the blocks, in multiples of 16 */
	g->blk = ((len + g->nblk - 1) / g->nblk + 15) / 16 * 16;
	g->nblk = (len + g->blk - 1) / g->blk;
}

static int gemm_init(struct gemm *g, struct rt_ctx *ctx, const struct rt_gemm_desc *d,
                     const void *a, const void *b, const void *c, const void *residual, void *y)
{
	memset(g, 0, sizeof *g);
	g->ctx = ctx;
	g->d = d;
	if (!(g->t = type_of(d->dtype)) || !desc_ok(d))
		return RT_ERR_ARGUMENT;
	g->nbatch = 1;
	for (int i = 0; i < d->batch_rank; i++)
		g->nbatch *= d->batch_dims[i];
	g->m = d->m;
	if (g->nbatch == 0 || d->m == 0 || d->n == 0)
		return RT_OK;
	if (!y || (d->k > 0 && (!a || !b)) || (d->bias != RT_BIAS_NONE && !c) ||
	    (d->ep.has_residual && !residual))
		return RT_ERR_ARGUMENT;
	if (foldable(d) && g->t->blas) {
		g->m *= g->nbatch;
		g->nbatch = 1;
		if (g->m > INT_MAX)
			return RT_ERR_ARGUMENT;
	}
	g->a = a;
	g->b = b;
	g->c = d->bias != RT_BIAS_NONE ? c : NULL;
	g->res = d->ep.has_residual ? residual : NULL;
	g->y = y;
	g->finish = (g->c && d->beta != 0) || g->res || d->ep.act != RT_ACT_NONE;
	plan_blocks(g);
	return RT_OK;
}

int rt_gemm(struct rt_ctx *ctx, const struct rt_gemm_desc *d, const void *a, const void *b,
            const void *c, const void *residual, void *y)
{
	struct gemm g;
	int64_t units, unit_mnk;
	int isa, status = gemm_init(&g, ctx, d, a, b, c, residual, y);
	if (status || g.nbatch == 0 || d->m == 0 || d->n == 0)
		return status;
	if (d->dtype == RT_F32 && (isa = rt_sgemm_isa()) != RT_SGEMM_BLAS) {
		struct sg_batch sb = { &g, isa };
		rt_sgemm_batch(ctx, g.nbatch, sg_item, &sb);
		return RT_OK;
	}
	if (!g.t->blas) {
		int64_t work = d->n * (d->k + 1);
		rt_parallel(ctx, g.nbatch * g.m, (16384 + work - 1) / work, rows_range, &g);
		return RT_OK;
	}
	units = g.nbatch * g.nblk;
	unit_mnk = (g.by_cols ? g.m * g.blk : g.blk * d->n) * d->k;
	if (units == 1) {
		run_unit(&g, 0, 1);
		return RT_OK;
	}
	rt_parallel(ctx, units, (32768 + unit_mnk) / (unit_mnk + 1), units_range, &g);
	return RT_OK;
}
