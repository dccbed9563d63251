/*
 * rt_pool.c - max, average and Lp pooling over 1 to 3 spatial dimensions.
 *
 * Fewer than three spatial dimensions are padded in front with dimensions
 * of size 1, so one code path serves 1-D, 2-D and 3-D pooling. A unit of
 * work is one output row: a (batch, channel) pair and the output
 * coordinates in the first two spatial dimensions; it computes all outputs
 * along the last dimension.
 *
 * Windows are clipped, never bounds-checked per tap: for each output and
 * dimension the taps whose input coordinate lies inside the input form a
 * contiguous range of kernel offsets, computed once. Padding taps never
 * contribute (max ignores them, sums add nothing); average pooling divides
 * by the in-bounds tap count, or with count_include_pad by the taps inside
 * the input plus its explicit padding, which is also a product of
 * per-dimension ranges. Clipping to the padded extent is what ceil_mode
 * needs: its last window may run past the end padding, and those taps
 * never count.
 *
 * Pooling is separable, and the usual case runs that way: for a chunk of
 * outputs along the last dimension, the input rows in the window (all
 * pairs of valid taps in the first two dimensions) are first combined
 * elementwise into a buffer on the stack, a contiguous vectorizable loop;
 * then the outputs combine their taps along the last dimension from the
 * buffer: those whose window lies inside the input all together, one
 * vector pass per kernel tap across outputs, and the few clipped ones at
 * the edges one by one. A 3x3 window costs 6 vector passes instead of 9
 * scalar taps per output, and no per-output window arithmetic in the
 * interior. Max pooling with indices, or a window too wide for the buffer,
 * takes the direct path instead: every output visits its taps in order,
 * tracking the position of the maximum (for max, the outputs whose window
 * lies inside the input RUN at a time, tap by tap across them).
 *
 * Max propagates NaN (any NaN in a window gives NaN and, with indices, the
 * position of the first NaN), the same in both paths and in the global
 * case below, so results never depend on the path taken.
 *
 * Global pooling (the kernel covers the whole input, no padding) is a plain
 * reduction of each channel, handed to rt_reduce, which vectorizes and sums
 * pairwise.
 */
#include "onnxc_rt.h"
#include "rt_index_pool.h"

#include <math.h>
#include <stdbool.h>

#define TMPW  512   /* elements of the separable path's row buffer */
#define GRAIN 16384 /* taps per parallel chunk, at least */

struct pool_job {
	struct rt_pool_geom g;
	int mode; /* enum rt_pool_mode */
	int p, count_pad, storage_order;
	const void *x;
	void *y;
	int64_t *idx;
};

/*
 * What an output row u shares: its channel, the valid taps of its window in
 * dims 0 and 1, and their share of the average's divisor.
 */
struct row {
	int64_t c;
	struct rt_pool_taps t0, t1;
	int64_t cnt01;
};

static void row_of(const struct pool_job *jb, int64_t u, struct row *r)
{
	const struct rt_pool_geom *g = &jb->g;
	int64_t plane = g->out[0] * g->out[1], o0 = u % plane / g->out[1], o1 = u % g->out[1];
	r->c = u / plane;
	rt_pool_valid_taps(g, 0, o0, &r->t0);
	rt_pool_valid_taps(g, 1, o1, &r->t1);
	r->cnt01 = rt_pool_tap_count(&jb->g, jb->count_pad, 0, o0, &r->t0) *
	           rt_pool_tap_count(&jb->g, jb->count_pad, 1, o1, &r->t1);
}

/*
 * The outputs [*ia, *ib) of [q0, q1) whose windows along the last dim lie
 * wholly inside the input: they take every tap, so they are computed
 * together, vectorized across outputs; the rest are clipped one by one.
 */
static void interior(const struct pool_job *jb, int64_t q0, int64_t q1, int64_t *ia, int64_t *ib)
{
	const struct rt_pool_geom *g = &jb->g;
	int64_t s = g->st[2], pb = g->pb[2], last = g->in[2] - 1 + pb - (g->k[2] - 1) * g->dil[2];
	int64_t a = pb > 0 ? (pb + s - 1) / s : 0, b = last >= 0 ? last / s + 1 : 0;
	*ia = a > q0 ? a : q0;
	*ib = b < q1 ? b : q1;
	if (g->k[2] < 1 || *ia >= *ib)
		*ia = *ib = q1;
}

#define MAX_OP(a, b) ((((b) > (a)) | ((b) != (b))) ? (b) : (a))

/* Max pooling with indices computes the outputs whose windows lie inside
 * the input RUN at a time, each tap for all of them, so the compare chains
 * of the outputs run side by side (and vectorize) instead of one after the
 * other; the taps are visited in the same order, so the same index wins. */
#define RUN 64

/*
 * Per dtype T (LOWEST: the max of an empty window):
 *   S##_term    one tap's contribution to a sum
 *   S##_finish  a window's result from its max or sum and tap count
 *   S##_vert    combines an input row into the row buffer (vectorizable)
 *   S##_edge    one clipped output from the buffer
 *   S##_inner   n unclipped outputs from the buffer, count taps each
 *   S##_sep     the separable path for output row u
 *   S##_direct  the direct path for output row u, with indices
 */
#define POOL_FNS(S, T, LOWEST, ABS, POW, SQRT)                                                   \
	static T S##_term(int m, T v, int p)                                                     \
	{                                                                                        \
		switch (m) {                                                                     \
		case RT_PM_ABS: return ABS(v);                                                   \
		case RT_PM_SQ: return v * v;                                                     \
		case RT_PM_POW: return (T)POW(ABS(v), p);                                        \
		default: return v;                                                               \
		}                                                                                \
	}                                                                                        \
	static T S##_finish(int m, T acc, int64_t count, int p)                                  \
	{                                                                                        \
		switch (m) {                                                                     \
		case RT_PM_AVG: return acc / (T)count;                                           \
		case RT_PM_SQ: return (T)SQRT(acc);                                              \
		case RT_PM_POW: return (T)POW(acc, (T)1 / (T)p);                                 \
		default: return acc;                                                             \
		}                                                                                \
	}                                                                                        \
	static void S##_vert(int m, int p, T *restrict tmp, const T *restrict r, int64_t n)      \
	{                                                                                        \
		switch (m) {                                                                     \
		case RT_PM_MAX:                                                                  \
			for (int64_t i = 0; i < n; i++)                                          \
				tmp[i] = MAX_OP(tmp[i], r[i]);                                   \
			break;                                                                   \
		case RT_PM_AVG:                                                                  \
			for (int64_t i = 0; i < n; i++)                                          \
				tmp[i] += r[i];                                                  \
			break;                                                                   \
		case RT_PM_SQ:                                                                   \
			for (int64_t i = 0; i < n; i++)                                          \
				tmp[i] += r[i] * r[i];                                           \
			break;                                                                   \
		default:                                                                         \
			for (int64_t i = 0; i < n; i++)                                          \
				tmp[i] += S##_term(m, r[i], p);                                  \
		}                                                                                \
	}                                                                                        \
	static T S##_edge(const struct pool_job *jb, const T *tmp, int64_t lo, int64_t o2,       \
	                  int64_t cnt01)                                                         \
	{                                                                                        \
		const struct rt_pool_geom *g = &jb->g;                                           \
		struct rt_pool_taps t;                                                           \
		T acc = jb->mode == RT_PM_MAX ? LOWEST : 0;                                      \
		int64_t b, dil = g->dil[2];                                                      \
		rt_pool_valid_taps(g, 2, o2, &t);                                                \
		b = t.start - lo;                                                                \
		for (int64_t j = t.j0; j < t.j1; j++)                                            \
			acc = jb->mode == RT_PM_MAX ? MAX_OP(acc, tmp[b + j * dil])              \
			                            : acc + tmp[b + j * dil];                    \
		return S##_finish(jb->mode, acc,                                                 \
		                  cnt01 * rt_pool_tap_count(&jb->g, jb->count_pad, 2, o2, &t),   \
		                  jb->p);                                                        \
	}                                                                                        \
	static void S##_inner(const struct pool_job *jb, const T *tmp, int64_t n, int64_t count, \
	                      T *restrict y)                                                     \
	{                                                                                        \
		const struct rt_pool_geom *g = &jb->g;                                           \
		int64_t s = g->st[2], d = g->dil[2];                                             \
		T acc[TMPW];                                                                     \
		for (int64_t i = 0; i < n; i++)                                                  \
			acc[i] = tmp[i * s];                                                     \
		for (int64_t j = 1; j < g->k[2]; j++) {                                          \
			const T *r = tmp + j * d;                                                \
			if (jb->mode == RT_PM_MAX)                                               \
				for (int64_t i = 0; i < n; i++)                                  \
					acc[i] = MAX_OP(acc[i], r[i * s]);                       \
			else                                                                     \
				for (int64_t i = 0; i < n; i++)                                  \
					acc[i] += r[i * s];                                      \
		}                                                                                \
		if (jb->mode == RT_PM_MAX)                                                       \
			for (int64_t i = 0; i < n; i++)                                          \
				y[i] = acc[i];                                                   \
		else if (jb->mode == RT_PM_AVG)                                                  \
			for (int64_t i = 0; i < n; i++)                                          \
				y[i] = acc[i] / (T)count;                                        \
		else                                                                             \
			for (int64_t i = 0; i < n; i++)                                          \
				y[i] = S##_finish(jb->mode, acc[i], count, jb->p);               \
	}                                                                                        \
	static void S##_sep(const struct pool_job *jb, int64_t u)                                \
	{                                                                                        \
		const struct rt_pool_geom *g = &jb->g;                                           \
		int64_t per = (TMPW - 1 - (g->k[2] - 1) * g->dil[2]) / g->st[2] + 1, ia, ib;     \
		struct row rw;                                                                   \
		T tmp[TMPW], init = jb->mode == RT_PM_MAX ? LOWEST : 0;                          \
		T *y = (T *)jb->y + u * g->out[2];                                               \
		const T *x;                                                                      \
		row_of(jb, u, &rw);                                                              \
		x = (const T *)jb->x + rw.c * g->nin;                                            \
		for (int64_t q0 = 0; q0 < g->out[2]; q0 += per) {                                \
			int64_t q1 = q0 + per < g->out[2] ? q0 + per : g->out[2];                \
			int64_t lo = q0 * g->st[2] - g->pb[2];                                   \
			int64_t hi =                                                             \
			        (q1 - 1) * g->st[2] - g->pb[2] + (g->k[2] - 1) * g->dil[2] + 1;  \
			lo = lo > 0 ? lo : 0;                                                    \
			hi = hi < g->in[2] ? hi : g->in[2];                                      \
			hi = hi > lo ? hi : lo;                                                  \
			for (int64_t i = 0; i < hi - lo; i++)                                    \
				tmp[i] = init;                                                   \
			for (int64_t j0 = rw.t0.j0; j0 < rw.t0.j1; j0++)                         \
				for (int64_t j1 = rw.t1.j0; j1 < rw.t1.j1; j1++) {               \
					int64_t i0 = rw.t0.start + j0 * g->dil[0];               \
					int64_t i1 = rw.t1.start + j1 * g->dil[1];               \
					S##_vert(jb->mode, jb->p, tmp,                           \
					         x + (i0 * g->in[1] + i1) * g->in[2] + lo,       \
					         hi - lo);                                       \
				}                                                                \
			interior(jb, q0, q1, &ia, &ib);                                          \
			for (int64_t o2 = q0; o2 < ia; o2++)                                     \
				y[o2] = S##_edge(jb, tmp, lo, o2, rw.cnt01);                     \
			if (ib > ia)                                                             \
				S##_inner(jb, tmp + ia * g->st[2] - g->pb[2] - lo, ib - ia,      \
				          rw.cnt01 * g->k[2], y + ia);                           \
			for (int64_t o2 = ib; o2 < q1; o2++)                                     \
				y[o2] = S##_edge(jb, tmp, lo, o2, rw.cnt01);                     \
		}                                                                                \
	}                                                                                        \
	static void S##_max_run(const struct pool_job *jb, const struct row *rw, const T *x,     \
	                        int64_t q, int64_t n, T *y, int64_t *idx)                        \
	{                                                                                        \
		const struct rt_pool_geom *g = &jb->g;                                           \
		int64_t s = g->st[2];                                                            \
		int32_t at[RUN], o32[RUN];                                                       \
		T best[RUN], v[RUN];                                                             \
		for (int64_t l = 0; l < RUN; l++) /* lanes past n compute unused results */      \
			v[l] = best[l] = LOWEST, at[l] = -1, o32[l] = (int32_t)(l * s);          \
		for (int64_t j0 = rw->t0.j0; j0 < rw->t0.j1; j0++)                               \
			for (int64_t j1 = rw->t1.j0; j1 < rw->t1.j1; j1++)                       \
				for (int64_t j2 = 0; j2 < g->k[2]; j2++) {                       \
					int32_t off =                                            \
					        (int32_t)(((rw->t0.start + j0 * g->dil[0]) *     \
					                           g->in[1] +                    \
					                   rw->t1.start + j1 * g->dil[1]) *      \
					                          g->in[2] +                     \
					                  q * s - g->pb[2] + j2 * g->dil[2]);    \
					for (int64_t l = 0; l < n; l++)                          \
						v[l] = x[off + l * s];                           \
					for (int64_t l = 0; l < RUN; l++) {                      \
						bool take =                                      \
						        (at[l] < 0) | (v[l] > best[l]) |         \
						        ((v[l] != v[l]) & (best[l] == best[l])); \
						best[l] = take ? v[l] : best[l];                 \
						at[l] = take ? off + o32[l] : at[l];             \
					}                                                        \
				}                                                                \
		for (int64_t l = 0; l < n; l++)                                                  \
			y[l] = best[l];                                                          \
		if (idx)                                                                         \
			for (int64_t l = 0; l < n; l++)                                          \
				idx[l] = at[l] < 0 ? 0                                           \
				                   : rt_pool_index(&jb->g, jb->storage_order,    \
				                                   rw->c, at[l]);                \
	}                                                                                        \
	static void S##_direct(const struct pool_job *jb, int64_t u)                             \
	{                                                                                        \
		const struct rt_pool_geom *g = &jb->g;                                           \
		struct row rw;                                                                   \
		struct rt_pool_taps t2;                                                          \
		T *y = (T *)jb->y + u * g->out[2];                                               \
		int64_t *idx = jb->idx ? jb->idx + u * g->out[2] : NULL, ia = 0, ib = 0;         \
		const T *x;                                                                      \
		row_of(jb, u, &rw);                                                              \
		x = (const T *)jb->x + rw.c * g->nin;                                            \
		if (jb->mode == RT_PM_MAX && rw.t0.j1 > rw.t0.j0 && rw.t1.j1 > rw.t1.j0 &&       \
		    g->nin + RUN * g->st[2] <= INT32_MAX) { /* offsets fit max_run's int32 */    \
			interior(jb, 0, g->out[2], &ia, &ib);                                    \
			for (int64_t q = ia; q < ib; q += RUN)                                   \
				S##_max_run(jb, &rw, x, q, ib - q < RUN ? ib - q : RUN, y + q,   \
				            idx ? idx + q : NULL);                               \
		}                                                                                \
		for (int64_t o2 = 0; o2 < g->out[2]; o2++) {                                     \
			T best = LOWEST, sum = 0;                                                \
			if (o2 == ia && ib > ia) {                                               \
				o2 = ib - 1; /* done by S##_max_run */                           \
				continue;                                                        \
			}                                                                        \
			int64_t at = -1;                                                         \
			rt_pool_valid_taps(g, 2, o2, &t2);                                       \
			for (int64_t j0 = rw.t0.j0; j0 < rw.t0.j1; j0++)                         \
				for (int64_t j1 = rw.t1.j0; j1 < rw.t1.j1; j1++)                 \
					for (int64_t j2 = t2.j0; j2 < t2.j1; j2++) {             \
						int64_t off =                                    \
						        rt_pool_off(g, rw.t0.start, rw.t1.start, \
						                    t2.start, j0, j1, j2);       \
						T v = x[off];                                    \
						bool take = (at < 0) | (v > best) |              \
						            ((v != v) & (best == best));         \
						if (jb->mode != RT_PM_MAX)                       \
							sum += S##_term(jb->mode, v, jb->p);     \
						best = take ? v : best;                          \
						at = take ? off : at;                            \
					}                                                        \
			y[o2] = jb->mode == RT_PM_MAX                                            \
			                ? best                                                   \
			                : S##_finish(jb->mode, sum,                              \
			                             rw.cnt01 * rt_pool_tap_count(&jb->g,        \
			                                                          jb->count_pad, \
			                                                          2, o2, &t2),   \
			                             jb->p);                                     \
			if (jb->idx)                                                             \
				jb->idx[u * g->out[2] + o2] =                                    \
				        at < 0 ? 0                                               \
				               : rt_pool_index(&jb->g, jb->storage_order, rw.c,  \
				                               at);                              \
		}                                                                                \
	}

#define IABS(v) ((v) < 0 ? -(v) : (v))
#define UABS(v) (v)

POOL_FNS(f32, float, -INFINITY, fabsf, powf, sqrtf)
POOL_FNS(f64, double, -INFINITY, fabs, pow, sqrt)
POOL_FNS(i8, int8_t, INT8_MIN, IABS, pow, sqrt)
POOL_FNS(u8, uint8_t, 0, UABS, pow, sqrt)
POOL_FNS(i32, int32_t, INT32_MIN, IABS, pow, sqrt)
POOL_FNS(i64, int64_t, INT64_MIN, IABS, pow, sqrt)

typedef void (*row_fn)(const struct pool_job *jb, int64_t u);

struct pool_fns {
	int dtype;
	row_fn sep, direct;
};

static const struct pool_fns *fns_of(int dtype)
{
	static const struct pool_fns table[] = {
		{ RT_F32, f32_sep, f32_direct }, { RT_F64, f64_sep, f64_direct },
		{ RT_I8, i8_sep, i8_direct },    { RT_U8, u8_sep, u8_direct },
		{ RT_I32, i32_sep, i32_direct }, { RT_I64, i64_sep, i64_direct },
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (table[i].dtype == dtype)
			return &table[i];
	return NULL;
}

struct pool_run {
	const struct pool_job *jb;
	row_fn fn;
};

static void pool_range(void *arg, int64_t b, int64_t e)
{
	const struct pool_run *r = arg;
	for (int64_t u = b; u < e; u++)
		r->fn(r->jb, u);
}

/* ------------------------------------------------------------------------ */
/* Entry                                                                    */
/* ------------------------------------------------------------------------ */

/* A global pool (one window covering each whole channel) as a reduction;
 * returns -1 when d is not one. */
static int pool_global(struct rt_ctx *ctx, const struct rt_pool_desc *d,
                       const struct rt_pool_geom *g, int m, const void *x, void *y,
                       const int64_t *indices)
{
	struct rt_reduce_desc r = { d->dtype, 0, 2, { d->n * d->c, g->nin }, 2u };
	static const int kinds[] = { [RT_PM_MAX] = RT_REDUCE_MAX,
		                     [RT_PM_AVG] = RT_REDUCE_MEAN,
		                     [RT_PM_ABS] = RT_REDUCE_L1,
		                     [RT_PM_SQ] = RT_REDUCE_L2,
		                     [RT_PM_POW] = -1 };
	if (indices || kinds[m] < 0)
		return -1;
	for (int i = 0; i < 3; i++)
		if (g->k[i] != g->in[i] || g->out[i] != 1 || g->pb[i] || g->pe[i] ||
		    (g->dil[i] != 1 && g->in[i] > 1))
			return -1;
	r.kind = kinds[m];
	return rt_reduce(ctx, &r, x, y);
}

int rt_pool(struct rt_ctx *ctx, const struct rt_pool_desc *d, const void *x, void *y,
            int64_t *indices)
{
	const struct pool_fns *f = fns_of(d->dtype);
	struct pool_job jb = { .x = x, .y = y, .idx = indices };
	struct pool_run run = { &jb, NULL };
	int64_t rows, taps, grain;
	int status;
	if (!f || !rt_pool_valid(d) ||
	    (d->kind != RT_POOL_MAX && !(d->dtype == RT_F32 || d->dtype == RT_F64)))
		return RT_ERR_ARGUMENT;
	rt_pool_geom_of(d, &jb.g);
	jb.mode = rt_pool_mode_of(d);
	jb.p = d->p;
	jb.count_pad = d->count_include_pad;
	jb.storage_order = d->storage_order;
	rows = d->n * d->c * jb.g.out[0] * jb.g.out[1];
	if (rows == 0 || jb.g.out[2] == 0)
		return RT_OK;
	if ((status = pool_global(ctx, d, &jb.g, jb.mode, x, y, indices)) >= 0)
		return status;
	/* the separable path needs one window's span in the buffer */
	run.fn = indices || (jb.g.k[2] - 1) * jb.g.dil[2] >= TMPW / 2 ? f->direct : f->sep;
	taps = jb.g.out[2] * jb.g.k[0] * jb.g.k[1] * jb.g.k[2];
	grain = taps > 0 && taps < GRAIN ? GRAIN / taps : 1;
	rt_parallel(ctx, rows, grain, pool_range, &run);
	return RT_OK;
}
