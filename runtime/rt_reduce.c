/*
 * rt_reduce.c - reductions (ReduceSum ... ReduceLogSumExp), ArgMax/ArgMin,
 * CumSum/CumProd and TopK.
 *
 * rt_reduce first puts the shape in a canonical form: dimensions of size 1
 * are dropped (reducing or keeping them changes nothing) and neighbours
 * that are both reduced or both kept are merged, leaving alternating blocks
 * such as [kept, reduced, kept]. Two layouts cover every case:
 *
 *   rows  the innermost block is reduced: every output reduces contiguous
 *         runs ("segments") of that block's length, one run per index of
 *         the other reduced blocks (a plain row reduction when there are
 *         none: ReduceMean over the last axis, or over everything).
 *   cols  the innermost block is kept: every output row of that length
 *         accumulates whole contiguous vectors, one per reduced index
 *         (reducing a prefix or a middle block), elementwise across columns.
 *
 * Both inner loops run over contiguous memory with independent lanes, so
 * the compiler vectorizes them. Float sums are pairwise: a run is summed in
 * 16 lanes in leaves of at most 256 elements, the leaves and the segments
 * combined as a balanced binary tree, so the error grows with log n rather
 * than n. Every reduction is one of seven primitives (sum of x, |x|, x^2 or
 * exp(x - shift); product; max; min) generated per dtype from one macro;
 * the kinds are a primitive plus a final step (mean divides, L2 takes the
 * square root, LogSumExp is max then a shifted sum of exponentials). Max
 * and min propagate NaN, like the reference.
 *
 * Work is split across threads by outputs (rows) or by blocks of 128
 * columns (cols). A few very long rows (a full reduction of a large tensor)
 * are also cut into up to 64 pieces whose partial results are combined
 * afterwards; the pieces depend only on the shape, so results do not depend
 * on the thread count.
 *
 * Integers accumulate in wrapping 64-bit arithmetic; L2, LogSum and
 * LogSumExp of integers go through double and truncate, as the reference.
 *
 * ArgMax/ArgMin over rows make two vectorizable passes (the extreme value,
 * then its first or last position); over strided lanes they keep a running
 * best value and index per column. NaNs are handled as the reference does.
 * CumSum and CumProd accumulate floats in double and integers in wrapping
 * 64-bit arithmetic. TopK selects with a heap of k per lane (below).
 */
#include "onnxc_rt.h"
#include "rt_index_reduce.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define LANES         16  /* independent accumulators in a contiguous leaf */
#define PW_LEAF       256 /* longest run summed by lanes before splitting */
#define COL_LEAF      8   /* segments accumulated in sequence in the cols form */
#define CW            128 /* columns per cols task */
#define GRAIN         32768
#define MAX_PIECES    64
#define MAX_SPLIT_OUT 16

/* The canonical layout (struct rt_red) is rt_index_reduce.h's. */

/* Task t over rows of len cut into blocks of CW (nblocks a row): its row
 * *o and first column *c0; returns the block's width. */
static int64_t block_of(int64_t t, int64_t nblocks, int64_t len, int64_t *o, int64_t *c0)
{
	*o = t / nblocks;
	*c0 = t % nblocks * CW;
	return len - *c0 < CW ? len - *c0 : CW;
}

/* ------------------------------------------------------------------------ */
/* Primitives, generated per dtype                                          */
/* ------------------------------------------------------------------------ */

/* A primitive's result: floats in f, integers in i (and f, converted). */
struct acc {
	double f;
	int64_t i;
};

typedef struct acc (*rows_fn)(const void *x, int64_t n, struct acc shift);
typedef void (*cols_fn)(const struct rt_red *r, const void *x, int64_t j0, int64_t j1, int64_t w,
                        const struct acc *shift, struct acc *out);
typedef struct acc (*comb_fn)(struct acc a, struct acc b);

struct prim_fns {
	rows_fn rows;
	cols_fn cols;
	comb_fn comb;
};

/* Per-element transforms (m: the shift of RT_PRIM_EXP) and combining operators.
 * |x| is computed in A so that it cannot overflow for integers. */
#define F_ID(v, m, A)   ((A)(v))
#define F_ABS(v, m, A)  ((v) < 0 ? (A)0 - (A)(v) : (A)(v))
#define F_SQ(v, m, A)   ((A)(v) * (A)(v))
#define F_EXPF(v, m, A) expf((A)(v) - (m))
#define F_EXP(v, m, A)  exp((A)(v) - (m))
#define OP_ADD(a, b)    ((a) + (b))
#define OP_MUL(a, b)    ((a) * (b))
#define OP_MAX(a, b)    ((((b) > (a)) | ((b) != (b))) ? (b) : (a))
#define OP_MIN(a, b)    ((((b) < (a)) | ((b) != (b))) ? (b) : (a))

/* Folds the upper half of lanes 0..2w-1 into the lower: a constant loop the
 * compiler turns into vector operations (a loop over w it would not). */
#define HALVE(lane, w, OP)               \
	for (int j_ = 0; j_ < (w); j_++) \
	lane[j_] = OP(lane[j_], lane[j_ + (w)])

/* Packing an A into an acc: float-valued (f) or integer-valued (i). */
#define MK_f(v)     ((struct acc){ .f = (double)(v) })
#define MK_i(v)     ((struct acc){ .f = (double)(int64_t)(v), .i = (int64_t)(v) })
#define GET_f(a, A) ((A)(a).f)
#define GET_i(a, A) ((A)(a).i)

/*
 * One primitive NAME over elements T accumulated in A: a pairwise row
 * reduction (NAME##_pw), a pairwise column reduction over segments
 * (NAME##_cw) and the type-erased wrappers the tables hold.
 */
#define PRIM(NAME, T, A, F, OP, ID, K)                                                         \
	static A NAME##_pw(const T *restrict x, int64_t n, A m)                                \
	{                                                                                      \
		A lane[LANES], s = ID;                                                         \
		int64_t i = 0;                                                                 \
		if (n > PW_LEAF) {                                                             \
			int64_t h = (n / 2) & ~(int64_t)(LANES - 1);                           \
			A lo = NAME##_pw(x, h, m), hi = NAME##_pw(x + h, n - h, m);            \
			return OP(lo, hi);                                                     \
		}                                                                              \
		for (int j = 0; j < LANES; j++)                                                \
			lane[j] = ID;                                                          \
		for (; i + LANES <= n; i += LANES)                                             \
			for (int j = 0; j < LANES; j++)                                        \
				lane[j] = OP(lane[j], F(x[i + j], m, A));                      \
		for (; i < n; i++)                                                             \
			s = OP(s, F(x[i], m, A));                                              \
		HALVE(lane, 8, OP);                                                            \
		HALVE(lane, 4, OP);                                                            \
		HALVE(lane, 2, OP);                                                            \
		HALVE(lane, 1, OP);                                                            \
		return OP(s, lane[0]);                                                         \
	}                                                                                      \
	static void NAME##_cw(const struct rt_red *r, const T *x, int64_t j0, int64_t j1,      \
	                      int64_t w, const A *restrict m, A *restrict out)                 \
	{                                                                                      \
		if (j1 - j0 > COL_LEAF) {                                                      \
			A tmp[CW];                                                             \
			int64_t h = j0 + (j1 - j0) / 2;                                        \
			NAME##_cw(r, x, j0, h, w, m, out);                                     \
			NAME##_cw(r, x, h, j1, w, m, tmp);                                     \
			for (int64_t c = 0; c < w; c++)                                        \
				out[c] = OP(out[c], tmp[c]);                                   \
			return;                                                                \
		}                                                                              \
		for (int64_t c = 0; c < w; c++)                                                \
			out[c] = ID;                                                           \
		for (int64_t j = j0; j < j1; j++) {                                            \
			const T *restrict s = x + rt_red_seg_off(r, j);                        \
			for (int64_t c = 0; c < w; c++)                                        \
				out[c] = OP(out[c], F(s[c], m[c], A));                         \
		}                                                                              \
	}                                                                                      \
	static struct acc NAME##_rows(const void *x, int64_t n, struct acc shift)              \
	{                                                                                      \
		return MK_##K(NAME##_pw(x, n, (A)shift.f));                                    \
	}                                                                                      \
	static void NAME##_cols(const struct rt_red *r, const void *x, int64_t j0, int64_t j1, \
	                        int64_t w, const struct acc *shift, struct acc *out)           \
	{                                                                                      \
		A m[CW] = { 0 }, o[CW];                                                        \
		for (int64_t c = 0; shift && c < w; c++)                                       \
			m[c] = (A)shift[c].f;                                                  \
		NAME##_cw(r, x, j0, j1, w, m, o);                                              \
		for (int64_t c = 0; c < w; c++)                                                \
			out[c] = MK_##K(o[c]);                                                 \
	}                                                                                      \
	static struct acc NAME##_comb(struct acc a, struct acc b)                              \
	{                                                                                      \
		return MK_##K(OP(GET_##K(a, A), GET_##K(b, A)));                               \
	}

#define FNS(NAME)                                     \
	{                                             \
		NAME##_rows, NAME##_cols, NAME##_comb \
	}

/* Floats accumulate in their own type; integers wrap in uint64 (the
 * exponentials of an integer LogSumExp are double). */
#define FLOAT_PRIMS(S, T, EXPF)                            \
	PRIM(S##_sum, T, T, F_ID, OP_ADD, 0, f)            \
	PRIM(S##_abs, T, T, F_ABS, OP_ADD, 0, f)           \
	PRIM(S##_sq, T, T, F_SQ, OP_ADD, 0, f)             \
	PRIM(S##_exp, T, T, EXPF, OP_ADD, 0, f)            \
	PRIM(S##_prod, T, T, F_ID, OP_MUL, 1, f)           \
	PRIM(S##_max, T, T, F_ID, OP_MAX, -(T)INFINITY, f) \
	PRIM(S##_min, T, T, F_ID, OP_MIN, (T)INFINITY, f)
#define MINMAX_PRIMS(S, T, LO, HI)               \
	PRIM(S##_max, T, T, F_ID, OP_MAX, LO, i) \
	PRIM(S##_min, T, T, F_ID, OP_MIN, HI, i)
#define INT_PRIMS(S, T, LO, HI)                         \
	PRIM(S##_sum, T, uint64_t, F_ID, OP_ADD, 0, i)  \
	PRIM(S##_abs, T, uint64_t, F_ABS, OP_ADD, 0, i) \
	PRIM(S##_sq, T, uint64_t, F_SQ, OP_ADD, 0, i)   \
	PRIM(S##_exp, T, double, F_EXP, OP_ADD, 0, f)   \
	PRIM(S##_prod, T, uint64_t, F_ID, OP_MUL, 1, i) \
	MINMAX_PRIMS(S, T, LO, HI)

FLOAT_PRIMS(f32, float, F_EXPF)
FLOAT_PRIMS(f64, double, F_EXP)
INT_PRIMS(i32, int32_t, INT32_MIN, INT32_MAX)
INT_PRIMS(i64, int64_t, INT64_MIN, INT64_MAX)
MINMAX_PRIMS(u8, uint8_t, 0, UINT8_MAX)
MINMAX_PRIMS(i8, int8_t, INT8_MIN, INT8_MAX)

#define ALL_PRIMS(S)                                                                  \
	{                                                                             \
		FNS(S##_sum), FNS(S##_abs), FNS(S##_sq), FNS(S##_exp), FNS(S##_prod), \
		        FNS(S##_max), FNS(S##_min)                                    \
	}
#define MINMAX_ONLY(S)                                                     \
	{                                                                  \
		[RT_PRIM_MAX] = FNS(S##_max), [RT_PRIM_MIN] = FNS(S##_min) \
	}

/* The primitives of a dtype, or NULL when it has no reductions. */
static const struct prim_fns *prims_of(int dtype)
{
	static const struct prim_fns f32[RT_PRIM_COUNT] = ALL_PRIMS(f32),
	                             f64[RT_PRIM_COUNT] = ALL_PRIMS(f64),
	                             i32[RT_PRIM_COUNT] = ALL_PRIMS(i32),
	                             i64[RT_PRIM_COUNT] = ALL_PRIMS(i64),
	                             u8[RT_PRIM_COUNT] = MINMAX_ONLY(u8),
	                             i8[RT_PRIM_COUNT] = MINMAX_ONLY(i8);
	switch (dtype) {
	case RT_F32: return f32;
	case RT_F64: return f64;
	case RT_I32: return i32;
	case RT_I64: return i64;
	case RT_U8: return u8;
	case RT_I8: return i8;
	default: return NULL;
	}
}

/* ------------------------------------------------------------------------ */
/* Final step and stores                                                    */
/* ------------------------------------------------------------------------ */

static bool is_float(int dtype) { return dtype == RT_F32 || dtype == RT_F64; }

/* LogSumExp's shift (its integer part is never read). */
static struct acc lse_shift(struct acc max) { return (struct acc){ rt_red_lse_shift(max.f), 0 }; }

static void store(int dtype, void *y, int64_t at, double f, int64_t i)
{
	switch (dtype) {
	case RT_F32: ((float *)y)[at] = (float)f; break;
	case RT_F64: ((double *)y)[at] = f; break;
	case RT_I32: ((int32_t *)y)[at] = (int32_t)i; break;
	case RT_I64: ((int64_t *)y)[at] = i; break;
	case RT_U8: ((uint8_t *)y)[at] = (uint8_t)i; break;
	case RT_I8: ((int8_t *)y)[at] = (int8_t)i; break;
	}
}

/* Turns a primitive's result v (and LogSumExp's shift) into output at. */
static void finish(const struct rt_red *r, struct acc v, struct acc shift, void *y, int64_t at)
{
	double f = v.f;
	int64_t i = v.i;
	rt_red_finish(r->kind, is_float(r->dtype), r->nred, shift.f, &f, &i);
	store(r->dtype, y, at, f, i);
}

/* Outputs of an empty reduction: the identity, finished (mean 0/0 is NaN). */
static void reduce_empty(const struct rt_red *r, int64_t nout, void *y)
{
	struct acc v = { 0, 0 }, shift = { 0, 0 };
	if (r->kind == RT_REDUCE_PROD)
		v = (struct acc){ 1, 1 };
	if (is_float(r->dtype) && r->kind == RT_REDUCE_MAX)
		v.f = -INFINITY;
	if (is_float(r->dtype) && r->kind == RT_REDUCE_MIN)
		v.f = INFINITY;
	for (int64_t k = 0; k < nout; k++)
		finish(r, v, shift, y, k);
}

/* ------------------------------------------------------------------------ */
/* The rows form                                                            */
/* ------------------------------------------------------------------------ */

struct rows_job {
	const struct rt_red *r;
	const struct prim_fns *p;
	const char *x;
	void *y;
	int es;                  /* element size */
	int64_t npieces;         /* pieces per output (>1 only with a single segment) */
	enum rt_red_prim prim;   /* the primitive of a pieces phase */
	const struct acc *shift; /* per output, for a RT_PRIM_EXP pieces phase */
	struct acc *part;        /* results per (output, piece) */
};

/* Primitive q over segments [j0, j1) of the output whose data start at x. */
static struct acc segs(const struct rows_job *jb, enum rt_red_prim q, const char *x, int64_t j0,
                       int64_t j1, struct acc shift)
{
	int64_t h;
	if (j1 - j0 == 1)
		return jb->p[q].rows(x + rt_red_seg_off(jb->r, j0) * jb->es, jb->r->inner, shift);
	h = j0 + (j1 - j0) / 2;
	return jb->p[q].comb(segs(jb, q, x, j0, h, shift), segs(jb, q, x, h, j1, shift));
}

static const char *out_base(const struct rows_job *jb, int64_t k)
{
	const struct rt_red *r = jb->r;
	return jb->x + rt_red_kept_off(r, k) * jb->es;
}

/* Whole outputs [b, e): the primitive (after the max, for LogSumExp). */
static void rows_whole(void *arg, int64_t b, int64_t e)
{
	const struct rows_job *jb = arg;
	enum rt_red_prim q = rt_red_prim_of(jb->r->kind);
	for (int64_t k = b; k < e; k++) {
		const char *x = out_base(jb, k);
		struct acc shift = { 0, 0 }, v;
		if (q == RT_PRIM_EXP)
			shift = lse_shift(segs(jb, RT_PRIM_MAX, x, 0, jb->r->nseg, shift));
		v = segs(jb, q, x, 0, jb->r->nseg, shift);
		finish(jb->r, v, shift, jb->y, k);
	}
}

/* Pieces [b, e) of the single-segment outputs: partial results. */
static void rows_pieces(void *arg, int64_t b, int64_t e)
{
	const struct rows_job *jb = arg;
	int64_t len = jb->r->inner;
	for (int64_t t = b; t < e; t++) {
		int64_t k = t / jb->npieces, p = t % jb->npieces;
		int64_t lo = len * p / jb->npieces, hi = len * (p + 1) / jb->npieces;
		struct acc shift = jb->shift ? jb->shift[k] : (struct acc){ 0, 0 };
		jb->part[t] = jb->p[jb->prim].rows(out_base(jb, k) + lo * jb->es, hi - lo, shift);
	}
}

/* Runs one pieces phase of primitive q and combines the pieces into res. */
static void pieces_phase(struct rt_ctx *ctx, struct rows_job *jb, enum rt_red_prim q,
                         const struct acc *shift, struct acc *res)
{
	struct acc part[MAX_SPLIT_OUT * MAX_PIECES];
	jb->prim = q;
	jb->shift = shift;
	jb->part = part;
	rt_parallel(ctx, jb->r->nout * jb->npieces, 1, rows_pieces, jb);
	for (int64_t k = 0; k < jb->r->nout; k++) {
		res[k] = part[k * jb->npieces];
		for (int64_t p = 1; p < jb->npieces; p++)
			res[k] = jb->p[q].comb(res[k], part[k * jb->npieces + p]);
	}
}

static void reduce_rows(struct rt_ctx *ctx, const struct rt_red *r, const struct prim_fns *p,
                        const void *x, void *y)
{
	struct rows_job jb = { r, p, x, y, rt_dtype_size(r->dtype), 1, RT_PRIM_SUM, NULL, NULL };
	struct acc shift[MAX_SPLIT_OUT], v[MAX_SPLIT_OUT];
	enum rt_red_prim q = rt_red_prim_of(r->kind);
	int64_t np = r->inner / GRAIN;
	if (r->nseg > 1 || r->nout > MAX_SPLIT_OUT || np < 2) {
		int64_t grain = GRAIN / r->nred;
		rt_parallel(ctx, r->nout, grain > 1 ? grain : 1, rows_whole, &jb);
		return;
	}
	jb.npieces = np < MAX_PIECES ? np : MAX_PIECES;
	for (int64_t k = 0; k < r->nout; k++)
		shift[k] = (struct acc){ 0, 0 };
	if (q == RT_PRIM_EXP) {
		pieces_phase(ctx, &jb, RT_PRIM_MAX, NULL, shift);
		for (int64_t k = 0; k < r->nout; k++)
			shift[k] = lse_shift(shift[k]);
	}
	pieces_phase(ctx, &jb, q, shift, v);
	for (int64_t k = 0; k < r->nout; k++)
		finish(r, v[k], shift[k], y, k);
}

/* ------------------------------------------------------------------------ */
/* The cols form                                                            */
/* ------------------------------------------------------------------------ */

struct cols_job {
	const struct rt_red *r;
	const struct prim_fns *p;
	const char *x;
	void *y;
	int es;
	int64_t nchunks; /* column blocks per output row */
};

static void cols_range(void *arg, int64_t b, int64_t e)
{
	const struct cols_job *jb = arg;
	const struct rt_red *r = jb->r;
	enum rt_red_prim q = rt_red_prim_of(r->kind);
	struct acc shift[CW] = { { 0, 0 } }, v[CW];
	for (int64_t t = b; t < e; t++) {
		int64_t a, c0, w = block_of(t, jb->nchunks, r->inner, &a, &c0);
		int64_t off = rt_red_kept_off(r, a) + c0;
		const char *x = jb->x + off * jb->es;
		if (q == RT_PRIM_EXP) {
			jb->p[RT_PRIM_MAX].cols(r, x, 0, r->nseg, w, NULL, shift);
			for (int64_t c = 0; c < w; c++)
				shift[c] = lse_shift(shift[c]);
		}
		jb->p[q].cols(r, x, 0, r->nseg, w, q == RT_PRIM_EXP ? shift : NULL, v);
		for (int64_t c = 0; c < w; c++)
			finish(r, v[c], shift[c], jb->y, a * r->inner + c0 + c);
	}
}

static void reduce_cols(struct rt_ctx *ctx, const struct rt_red *r, const struct prim_fns *p,
                        const void *x, void *y)
{
	struct cols_job jb = { r, p, x, y, rt_dtype_size(r->dtype), (r->inner + CW - 1) / CW };
	int64_t grain = GRAIN / (r->nseg * CW);
	rt_parallel(ctx, r->nout / r->inner * jb.nchunks, grain > 1 ? grain : 1, cols_range, &jb);
}

int rt_reduce(struct rt_ctx *ctx, const struct rt_reduce_desc *d, const void *x, void *y)
{
	const struct prim_fns *p = prims_of(d->dtype);
	struct rt_red r;
	if (!p || d->rank < 0 || d->rank > 8 || d->kind < RT_REDUCE_SUM ||
	    d->kind > RT_REDUCE_LOG_SUM_EXP || !p[rt_red_prim_of(d->kind)].rows)
		return RT_ERR_ARGUMENT;
	for (int i = 0; i < d->rank; i++)
		if (d->dims[i] < 0)
			return RT_ERR_ARGUMENT;
	if (!rt_red_canon(d, &r)) {
		reduce_empty(&r, r.nout, y);
		return RT_OK;
	}
	if (r.rows)
		reduce_rows(ctx, &r, p, x, y);
	else
		reduce_cols(ctx, &r, p, x, y);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* ArgMax / ArgMin                                                          */
/* ------------------------------------------------------------------------ */

/*
 * The reference semantics: scanning in order, an element replaces the best
 * so far when it compares greater (argmax), or with select_last when it
 * does not compare less; a comparison with NaN is neither. So without
 * select_last a NaN wins only in first place and then keeps it, and with
 * select_last every NaN wins, and so does whatever follows one.
 *
 * Rows find the extreme value with the strict rule in lanes (a first NaN
 * poisons every lane, later ones are skipped), then its first or last
 * position; that is exact except for select_last on a row holding a NaN,
 * which falls back to the sequential scan.
 */
typedef int64_t (*argrow_fn)(const void *x, int64_t n, int last);
typedef void (*argcol_fn)(const void *x, int64_t axis, int64_t inner, int64_t w, int64_t *y);

#define CMP_GT(a, b)  ((a) > (b))
#define CMP_GE(a, b)  (!((a) < (b)))
#define CMP_LT(a, b)  ((a) < (b))
#define CMP_LE(a, b)  (!((a) > (b)))
#define PICK_GT(a, b) ((b) > (a) ? (b) : (a))
#define PICK_LT(a, b) ((b) < (a) ? (b) : (a))

#define ARG_ROW(NAME, T, PICK, CMP_LAST)                                   \
	static int64_t NAME(const void *xv, int64_t n, int last)           \
	{                                                                  \
		const T *restrict x = xv;                                  \
		T lane[LANES], m = x[0];                                   \
		int64_t i = 0, best = 0;                                   \
		bool nan = false;                                          \
		for (int64_t k = 0; last && k < n; k++)                    \
			nan |= x[k] != x[k];                               \
		if (nan) {                                                 \
			for (int64_t k = 1; k < n; k++)                    \
				best = CMP_LAST(x[k], x[best]) ? k : best; \
			return best;                                       \
		}                                                          \
		for (int j = 0; j < LANES; j++)                            \
			lane[j] = x[0];                                    \
		for (; i + LANES <= n; i += LANES)                         \
			for (int j = 0; j < LANES; j++)                    \
				lane[j] = PICK(lane[j], x[i + j]);         \
		for (; i < n; i++)                                         \
			m = PICK(m, x[i]);                                 \
		HALVE(lane, 8, PICK);                                      \
		HALVE(lane, 4, PICK);                                      \
		HALVE(lane, 2, PICK);                                      \
		HALVE(lane, 1, PICK);                                      \
		m = PICK(m, lane[0]);                                      \
		if (m != m)                                                \
			return 0;                                          \
		if (last) {                                                \
			for (i = n - 1; i > 0 && x[i] != m; i--)           \
				;                                          \
			return i;                                          \
		}                                                          \
		for (i = 0; i < n - 1 && x[i] != m; i++)                   \
			;                                                  \
		return i;                                                  \
	}

/* Lanes w apart along the axis, inner apart between axis positions. */
#define ARG_COL(NAME, T, CMP)                                                    \
	static void NAME(const void *xv, int64_t axis, int64_t inner, int64_t w, \
	                 int64_t *restrict y)                                    \
	{                                                                        \
		const T *x = xv;                                                 \
		T best[CW];                                                      \
		for (int64_t c = 0; c < w; c++) {                                \
			best[c] = x[c];                                          \
			y[c] = 0;                                                \
		}                                                                \
		for (int64_t a = 1; a < axis; a++) {                             \
			const T *restrict s = x + a * inner;                     \
			for (int64_t c = 0; c < w; c++) {                        \
				bool better = CMP(s[c], best[c]);                \
				best[c] = better ? s[c] : best[c];               \
				y[c] = better ? a : y[c];                        \
			}                                                        \
		}                                                                \
	}

struct arg_fns {
	argrow_fn row_max, row_min;
	argcol_fn col[4]; /* max, max last, min, min last */
};

#define ARG_FNS(S, T)                                                                          \
	ARG_ROW(S##_argrow_max, T, PICK_GT, CMP_GE)                                            \
	ARG_ROW(S##_argrow_min, T, PICK_LT, CMP_LE)                                            \
	ARG_COL(S##_argcol_gt, T, CMP_GT)                                                      \
	ARG_COL(S##_argcol_ge, T, CMP_GE)                                                      \
	ARG_COL(S##_argcol_lt, T, CMP_LT)                                                      \
	ARG_COL(S##_argcol_le, T, CMP_LE)                                                      \
	static const struct arg_fns S##_arg = { S##_argrow_max,                                \
		                                S##_argrow_min,                                \
		                                { S##_argcol_gt, S##_argcol_ge, S##_argcol_lt, \
		                                  S##_argcol_le } };

ARG_FNS(f32, float)
ARG_FNS(f64, double)
ARG_FNS(i8, int8_t)
ARG_FNS(u8, uint8_t)
ARG_FNS(i16, int16_t)
ARG_FNS(u16, uint16_t)
ARG_FNS(i32, int32_t)
ARG_FNS(u32, uint32_t)
ARG_FNS(i64, int64_t)
ARG_FNS(u64, uint64_t)

static const struct arg_fns *arg_fns_of(int dtype)
{
	switch (dtype) {
	case RT_F32: return &f32_arg;
	case RT_F64: return &f64_arg;
	case RT_I8: return &i8_arg;
	case RT_U8: return &u8_arg;
	case RT_I16: return &i16_arg;
	case RT_U16: return &u16_arg;
	case RT_I32: return &i32_arg;
	case RT_U32: return &u32_arg;
	case RT_I64: return &i64_arg;
	case RT_U64: return &u64_arg;
	default: return NULL;
	}
}

typedef void (*cum_fn)(const void *x, void *y, int64_t axis, int64_t inner, int64_t w, int excl,
                       int rev);

/* An [outer, axis, inner] job: ArgMax/ArgMin or CumSum/CumProd. */
struct axis_job {
	const char *x;
	char *y;
	int64_t outer, axis, inner, nchunks;
	int es; /* element size of x */
	const struct arg_fns *arg;
	cum_fn cum;
	int flags;
};

static struct axis_job axis_job_of(const void *x, void *y, int64_t outer, int64_t axis,
                                   int64_t inner, int dtype, int flags)
{
	struct axis_job jb = {
		x, y, outer, axis, inner, 0, rt_dtype_size(dtype), NULL, NULL, flags
	};
	return jb;
}

static void arg_rows(void *arg, int64_t b, int64_t e)
{
	const struct axis_job *jb = arg;
	const struct arg_fns *f = jb->arg;
	argrow_fn fn = jb->flags & 2 ? f->row_min : f->row_max;
	for (int64_t o = b; o < e; o++)
		((int64_t *)jb->y)[o] = fn(jb->x + o * jb->axis * jb->es, jb->axis, jb->flags & 1);
}

static void arg_cols(void *arg, int64_t b, int64_t e)
{
	const struct axis_job *jb = arg;
	const struct arg_fns *f = jb->arg;
	for (int64_t t = b; t < e; t++) {
		int64_t o, c0, w = block_of(t, jb->nchunks, jb->inner, &o, &c0);
		f->col[jb->flags](jb->x + (o * jb->axis * jb->inner + c0) * jb->es, jb->axis,
		                  jb->inner, w, (int64_t *)jb->y + o * jb->inner + c0);
	}
}

/* Runs rows (inner == 1) or column blocks of an [outer, axis, inner] job. */
static void run_axis(struct rt_ctx *ctx, struct axis_job *jb, rt_range_fn rows, rt_range_fn cols)
{
	int64_t grain;
	if (jb->outer == 0 || jb->inner == 0)
		return;
	if (jb->inner == 1) {
		grain = GRAIN / (jb->axis ? jb->axis : 1);
		rt_parallel(ctx, jb->outer, grain > 1 ? grain : 1, rows, jb);
		return;
	}
	jb->nchunks = (jb->inner + CW - 1) / CW;
	grain = GRAIN / ((jb->axis ? jb->axis : 1) * CW);
	rt_parallel(ctx, jb->outer * jb->nchunks, grain > 1 ? grain : 1, cols, jb);
}

int rt_arg(struct rt_ctx *ctx, const struct rt_arg_desc *d, const void *x, int64_t *y)
{
	const struct arg_fns *f = arg_fns_of(d->dtype);
	struct axis_job jb = axis_job_of(x, y, d->outer, d->axis, d->inner, d->dtype,
	                                 (d->is_min ? 2 : 0) | (d->select_last ? 1 : 0));
	jb.arg = f;
	if (!f || d->outer < 0 || d->axis < 0 || d->inner < 0)
		return RT_ERR_ARGUMENT;
	/* an empty axis has no extreme; the reference answers 0 */
	if (d->axis == 0) {
		memset(y, 0, sizeof *y * (size_t)(d->outer * d->inner));
		return RT_OK;
	}
	run_axis(ctx, &jb, arg_rows, arg_cols);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* CumSum, CumProd                                                          */
/* ------------------------------------------------------------------------ */

/*
 * Floats accumulate in double, integers in uint64 (wrapping like ONNX's
 * integer arithmetic); OP is + (CumSum) or * (CumProd) and ID its identity.
 * x and y may be the same buffer: every element is read before its own
 * position is written.
 */

#define CUMSCAN(NAME, T, A, OP, ID)                                                        \
	static void NAME(const void *xv, void *yv, int64_t axis, int64_t inner, int64_t w, \
	                 int excl, int rev)                                                \
	{                                                                                  \
		const T *x = xv;                                                           \
		T *y = yv;                                                                 \
		A acc[CW], one = ID;                                                       \
		int64_t step = rev ? -inner : inner, at = rev ? (axis - 1) * inner : 0;    \
		if (w == 1) { /* one lane: keep its running value in a register */         \
			for (int64_t t = 0; t < axis; t++, at += step) {                   \
				A next = one OP(A) x[at];                                  \
				y[at] = (T)(excl ? one : next);                            \
				one = next;                                                \
			}                                                                  \
			return;                                                            \
		}                                                                          \
		for (int64_t c = 0; c < w; c++)                                            \
			acc[c] = ID;                                                       \
		for (int64_t t = 0; t < axis; t++, at += step)                             \
			for (int64_t c = 0; c < w; c++) {                                  \
				A next = acc[c] OP(A) x[at + c];                           \
				y[at + c] = (T)(excl ? acc[c] : next);                     \
				acc[c] = next;                                             \
			}                                                                  \
	}

CUMSCAN(cum_f32, float, double, +, 0)
CUMSCAN(cum_f64, double, double, +, 0)
CUMSCAN(cum_i32, int32_t, uint64_t, +, 0)
CUMSCAN(cum_i64, int64_t, uint64_t, +, 0)
CUMSCAN(cumprod_f32, float, double, *, 1)
CUMSCAN(cumprod_f64, double, double, *, 1)
CUMSCAN(cumprod_i32, int32_t, uint64_t, *, 1)
CUMSCAN(cumprod_i64, int64_t, uint64_t, *, 1)

static cum_fn cum_fn_of(int dtype, int prod)
{
	switch (dtype) {
	case RT_F32: return prod ? cumprod_f32 : cum_f32;
	case RT_F64: return prod ? cumprod_f64 : cum_f64;
	case RT_I32: return prod ? cumprod_i32 : cum_i32;
	case RT_I64: return prod ? cumprod_i64 : cum_i64;
	default: return NULL;
	}
}

static void cum_rows(void *arg, int64_t b, int64_t e)
{
	const struct axis_job *jb = arg;
	cum_fn fn = jb->cum;
	for (int64_t o = b; o < e; o++)
		fn(jb->x + o * jb->axis * jb->es, jb->y + o * jb->axis * jb->es, jb->axis, 1, 1,
		   jb->flags & 1, jb->flags & 2);
}

static void cum_cols(void *arg, int64_t b, int64_t e)
{
	const struct axis_job *jb = arg;
	cum_fn fn = jb->cum;
	for (int64_t t = b; t < e; t++) {
		int64_t o, c0, w = block_of(t, jb->nchunks, jb->inner, &o, &c0);
		int64_t off = (o * jb->axis * jb->inner + c0) * jb->es;
		fn(jb->x + off, jb->y + off, jb->axis, jb->inner, w, jb->flags & 1, jb->flags & 2);
	}
}

int rt_cumsum(struct rt_ctx *ctx, const struct rt_cumsum_desc *d, const void *x, void *y)
{
	cum_fn fn = cum_fn_of(d->dtype, d->prod);
	struct axis_job jb = axis_job_of(x, y, d->outer, d->axis, d->inner, d->dtype,
	                                 (d->exclusive ? 1 : 0) | (d->reverse ? 2 : 0));
	jb.cum = fn;
	if (!fn || d->outer < 0 || d->axis < 0 || d->inner < 0)
		return RT_ERR_ARGUMENT;
	if (d->axis == 0)
		return RT_OK;
	run_axis(ctx, &jb, cum_rows, cum_cols);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* TopK                                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Each lane keeps a heap of the k best positions seen so far, rooted at the
 * worst of them, in the lane's own indices output (k int64 step apart, so
 * strided lanes need no workspace): a position better than the root
 * replaces it. The heap is then sorted in place, best first, and the values
 * gathered: n log k comparisons per lane. "Better" is the reference's
 * order, a strict total order: by value (a NaN above every number, equal to
 * another NaN; largest 0 reverses the values, not the ties), then the lower
 * position.
 */
#define TOPK_GT_F(a, b) ((a) > (b) || ((a) != (a) && (b) == (b)))
#define TOPK_GT_I(a, b) ((a) > (b))

#define TOPK_LANE(NAME, T, GT)                                                                    \
	static bool NAME##_better(const T *x, int64_t st, int small, int64_t i, int64_t j)        \
	{                                                                                         \
		T a = x[i * st], b = x[j * st];                                                   \
		bool above = small ? GT(b, a) : GT(a, b), below = small ? GT(a, b) : GT(b, a);    \
		return above || (!below && i < j);                                                \
	}                                                                                         \
	/* sifts h[p] down a heap of size n whose root is its worst */                            \
	static void NAME##_sift(const T *x, int64_t st, int small, int64_t *h, int64_t n,         \
	                        int64_t p)                                                        \
	{                                                                                         \
		for (int64_t c; (c = 2 * p + 1) < n; p = c) {                                     \
			int64_t t;                                                                \
			if (c + 1 < n && NAME##_better(x, st, small, h[c * st], h[(c + 1) * st])) \
				c++;                                                              \
			if (!NAME##_better(x, st, small, h[p * st], h[c * st]))                   \
				return;                                                           \
			t = h[p * st];                                                            \
			h[p * st] = h[c * st];                                                    \
			h[c * st] = t;                                                            \
		}                                                                                 \
	}                                                                                         \
	static void NAME(const void *xv, int64_t n, int64_t st, int64_t k, int small, void *yv,   \
	                 int64_t *h)                                                              \
	{                                                                                         \
		const T *x = xv;                                                                  \
		T *y = yv;                                                                        \
		for (int64_t j = 0; j < k; j++)                                                   \
			h[j * st] = j;                                                            \
		for (int64_t p = k / 2; p-- > 0;)                                                 \
			NAME##_sift(x, st, small, h, k, p);                                       \
		for (int64_t j = k; j < n; j++)                                                   \
			if (NAME##_better(x, st, small, j, h[0])) {                               \
				h[0] = j;                                                         \
				NAME##_sift(x, st, small, h, k, 0);                               \
			}                                                                         \
		for (int64_t e = k - 1; e > 0; e--) {                                             \
			int64_t t = h[0];                                                         \
			h[0] = h[e * st];                                                         \
			h[e * st] = t;                                                            \
			NAME##_sift(x, st, small, h, e, 0);                                       \
		}                                                                                 \
		for (int64_t j = 0; j < k; j++)                                                   \
			y[j * st] = x[h[j * st] * st];                                            \
	}

typedef void (*topk_fn)(const void *x, int64_t n, int64_t st, int64_t k, int small, void *y,
                        int64_t *h);

TOPK_LANE(topk_f32, float, TOPK_GT_F)
TOPK_LANE(topk_f64, double, TOPK_GT_F)
TOPK_LANE(topk_i8, int8_t, TOPK_GT_I)
TOPK_LANE(topk_u8, uint8_t, TOPK_GT_I)
TOPK_LANE(topk_i16, int16_t, TOPK_GT_I)
TOPK_LANE(topk_u16, uint16_t, TOPK_GT_I)
TOPK_LANE(topk_i32, int32_t, TOPK_GT_I)
TOPK_LANE(topk_u32, uint32_t, TOPK_GT_I)
TOPK_LANE(topk_i64, int64_t, TOPK_GT_I)
TOPK_LANE(topk_u64, uint64_t, TOPK_GT_I)

static topk_fn topk_fn_of(int dtype)
{
	switch (dtype) {
	case RT_F32: return topk_f32;
	case RT_F64: return topk_f64;
	case RT_I8: return topk_i8;
	case RT_U8: return topk_u8;
	case RT_I16: return topk_i16;
	case RT_U16: return topk_u16;
	case RT_I32: return topk_i32;
	case RT_U32: return topk_u32;
	case RT_I64: return topk_i64;
	case RT_U64: return topk_u64;
	default: return NULL;
	}
}

struct topk_job {
	const struct rt_topk_desc *d;
	topk_fn fn;
	const char *x;
	char *y;
	int64_t *idx;
	int es;
};

/* Lanes b..e, lane t = (o, i): x from o * axis * inner + i, the results
 * from o * k * inner + i, inner apart. */
static void topk_lanes(void *arg, int64_t b, int64_t e)
{
	const struct topk_job *jb = arg;
	const struct rt_topk_desc *d = jb->d;
	for (int64_t t = b; t < e; t++) {
		int64_t o = t / d->inner, i = t % d->inner, out = o * d->k * d->inner + i;
		jb->fn(jb->x + (o * d->axis * d->inner + i) * jb->es, d->axis, d->inner, d->k,
		       d->smallest, jb->y + out * jb->es, jb->idx + out);
	}
}

int rt_topk(struct rt_ctx *ctx, const struct rt_topk_desc *d, const void *x, void *values,
            int64_t *indices)
{
	struct topk_job jb = {
		d, topk_fn_of(d->dtype), x, values, indices, rt_dtype_size(d->dtype)
	};
	int64_t lanes, grain;
	if (!jb.fn || d->outer < 0 || d->axis < 0 || d->inner < 0 || d->k < 0 || d->k > d->axis)
		return RT_ERR_ARGUMENT;
	lanes = d->outer * d->inner;
	if (lanes == 0 || d->k == 0)
		return RT_OK;
	grain = GRAIN / (d->axis ? d->axis : 1);
	rt_parallel(ctx, lanes, grain > 1 ? grain : 1, topk_lanes, &jb);
	return RT_OK;
}
