/*
 * rtc_index.h - the index arithmetic of the CUDA kernels (runtime/cuda/rtc_*.cu).
 *
 * Everything here is plain C that compiles as host code (gcc, for the unit
 * test tests/unit/test_rtc_index.c) and as __host__ __device__ code under
 * nvcc: output index -> input offsets, window bounds, resize coordinate
 * transforms and taps, the canonical form of a reduction, launch
 * configuration. The kernels call these functions and nothing else for
 * their addressing, and the unit test runs whole operations over small
 * tensors on the host through them and compares with the CPU runtime
 * (rt_pool, rt_resize, rt_copy, ...), so the arithmetic the kernels use is
 * verified without a GPU.
 *
 * The host parts ("plans", RTC_HOST) turn a descriptor into a flat struct
 * the kernels receive by value: dims simplified as the CPU does, strides,
 * and fast dividers. Index spaces below 2^31 elements ("small") decode a
 * flat index with 32-bit multiply-high division (rtc_div, the
 * Granlund-Montgomery method); larger ones use 64-bit division.
 *
 * Semantics follow the CPU files line by line: rt_pool.c (window taps),
 * rt_reduce.c (canonical form, finish), rt_move.c (copy simplification,
 * pad sources, trilu ranges), rt_resize.c (coordinates and taps).
 */
#ifndef ONNXC_RTC_INDEX_H
#define ONNXC_RTC_INDEX_H

#include "onnxc_rt.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define RTC_HD static inline __host__ __device__
#else
#define RTC_HD static inline
#endif
#define RTC_HOST static inline /* plans: host code only */

#define RTC_MAXR      16          /* copy ranks: a tile views rank 8 as 16 */
#define RTC_THREADS   256         /* threads per block of the elementwise kernels */
#define RTC_WAVES     16          /* blocks per multiprocessor at most */
#define RTC_SMALL     (1LL << 31) /* index spaces below this decode in 32 bits */
#define RTC_TILE      32          /* transpose tile edge */
#define RTC_ROW_BLOCK 512         /* threads on one row in block-per-row kernels */

RTC_HD int64_t rtc_min64(int64_t a, int64_t b) { return a < b ? a : b; }
RTC_HD int64_t rtc_max64(int64_t a, int64_t b) { return a > b ? a : b; }
RTC_HD int64_t rtc_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ------------------------------------------------------------------------ */
/* Launch configuration                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Blocks for items work items, per_block a block, in grid-stride loops:
 * enough to cover the work, at most RTC_WAVES per multiprocessor (the loops
 * do the rest), at least 1.
 */
RTC_HD int rtc_blocks(int64_t items, int per_block, int sm_count)
{
	int64_t need = rtc_ceil_div(items, per_block);
	int64_t cap = (int64_t)(sm_count > 0 ? sm_count : 1) * RTC_WAVES;
	need = rtc_min64(need, cap);
	return (int)(need > 0 ? need : 1);
}

/*
 * Row kernels (softmax, norms, reductions): a group of threads per row,
 * a warp (rows up to 1024 long, 8 rows a block) or a whole block
 * (RTC_ROW_BLOCK threads); reductions of short rows also a thread. A block's groups take rows first, first +
 * step, ...; in block mode every thread of a block sees the same rows, so
 * the block can synchronize.
 */
struct rtc_rows {
	int group;     /* threads per row */
	int per_block; /* rows a block works on at once */
	int threads;   /* block size */
	int blocks;
};

/* Groups of group threads (1, 32 or RTC_ROW_BLOCK) per row. */
RTC_HD struct rtc_rows rtc_rows_group(int64_t rows, int group, int sm_count)
{
	struct rtc_rows p;
	p.group = group;
	p.per_block = group >= RTC_ROW_BLOCK ? 1 : RTC_THREADS / group;
	p.threads = p.group * p.per_block;
	p.blocks = rtc_blocks(rows, p.per_block, sm_count);
	return p;
}

RTC_HD struct rtc_rows rtc_rows_plan(int64_t rows, int64_t cols, int sm_count)
{
	return rtc_rows_group(rows, cols <= 1024 ? 32 : RTC_ROW_BLOCK, sm_count);
}

RTC_HD int64_t rtc_rows_first(const struct rtc_rows *p, int64_t block, int64_t thread)
{
	return block * p->per_block + thread / p->group;
}

RTC_HD int64_t rtc_rows_step(const struct rtc_rows *p) { return (int64_t)p->blocks * p->per_block; }

/* ------------------------------------------------------------------------ */
/* Fast division of indices below 2^31                                      */
/* ------------------------------------------------------------------------ */

/* n / d for n < 2^31: q = (umulhi(n, mul) + n) >> shift. */
struct rtc_div {
	uint32_t d, mul, shift;
};

RTC_HD struct rtc_div rtc_div_of(int64_t d)
{
	struct rtc_div v;
	uint32_t l = 0;
	if (d < 1 || d >= RTC_SMALL)
		d = 1; /* unused: only small index spaces divide this way */
	while (l < 31 && ((int64_t)1 << l) < d)
		l++;
	v.d = (uint32_t)d;
	v.shift = l;
	v.mul = (uint32_t)(((((uint64_t)1 << l) - (uint64_t)d) << 32) / (uint64_t)d + 1);
	return v;
}

RTC_HD uint32_t rtc_umulhi(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
	return __umulhi(a, b);
#else
	return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

RTC_HD uint32_t rtc_div_q(struct rtc_div v, uint32_t n)
{
	return (rtc_umulhi(n, v.mul) + n) >> v.shift;
}

/* Returns n / v.d and sets *rem = n % v.d. */
RTC_HD uint32_t rtc_divmod(struct rtc_div v, uint32_t n, uint32_t *rem)
{
	uint32_t q = rtc_div_q(v, n);
	*rem = n - q * v.d;
	return q;
}

/* The innermost digit of *f over a dim of size d (or divider v when
 * small); *f becomes the rest. */
RTC_HD int64_t rtc_digit(int small, struct rtc_div v, int64_t d, int64_t *f)
{
	int64_t i;
	if (small) {
		uint32_t r, q = rtc_divmod(v, (uint32_t)*f, &r);
		*f = q;
		return r;
	}
	i = *f % d;
	*f /= d;
	return i;
}

/* ------------------------------------------------------------------------ */
/* Dtypes                                                                   */
/* ------------------------------------------------------------------------ */

RTC_HD int rtc_is_half(int dtype) { return dtype == RT_F16 || dtype == RT_BF16; }

/* The float dtypes a step computes on in FP32 (its storage is one of them). */
RTC_HD int rtc_is_f32ish(int dtype) { return dtype == RT_F32 || rtc_is_half(dtype); }

RTC_HD int rtc_is_float(int dtype) { return rtc_is_f32ish(dtype) || dtype == RT_F64; }

/*
 * The result dtype of a step that reads dtype and was asked for ydtype
 * (0: the same), or 0 when the pair is not allowed: FP32 and the halves
 * convert among themselves, FP64 and the integers write their own type.
 */
RTC_HD int rtc_out_dtype(int dtype, int ydtype)
{
	if (ydtype == 0 || ydtype == dtype)
		return dtype;
	if (rtc_is_f32ish(dtype) && rtc_is_f32ish(ydtype))
		return ydtype;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Pooling (rt_pool.c)                                                      */
/* ------------------------------------------------------------------------ */

/* What a window computes: max, or a sum of x, |x|, x^2 or |x|^p. */
enum rtc_pool_mode { RTC_P_MAX, RTC_P_AVG, RTC_P_ABS, RTC_P_SQ, RTC_P_POW };

/* The geometry with three spatial dims (leading ones of size 1). */
struct rtc_pool_geom {
	int mode, p, count_pad, storage_order, small;
	int64_t in[3], k[3], out[3], st[3], dil[3], pb[3], pe[3];
	int64_t nin;   /* input elements per channel */
	int64_t nc;    /* n * c */
	int64_t total; /* outputs */
	int64_t taps;  /* k[0] * k[1] * k[2] */
	struct rtc_div dv[3];
};

/* The valid taps [j0, j1) of a window along one dim, and its start. */
struct rtc_win {
	int64_t c; /* the channel (n * c index) */
	int64_t start[3], j0[3], j1[3];
	int64_t count; /* the average's divisor */
};

/* Fills g from d; RT_ERR_ARGUMENT for what rt_pool refuses. */
RTC_HOST int rtc_pool_geom_of(const struct rt_pool_desc *d, struct rtc_pool_geom *g)
{
	int off = 3 - d->nsp;
	memset(g, 0, sizeof *g);
	if (d->nsp < 1 || d->nsp > 3 || d->n < 0 || d->c < 0 || d->kind < RT_POOL_MAX ||
	    d->kind > RT_POOL_LP)
		return RT_ERR_ARGUMENT;
	for (int i = 0; i < d->nsp; i++)
		if (d->in[i] < 0 || d->out[i] < 0 || d->k[i] < 0 || d->stride[i] < 1 ||
		    d->dil[i] < 1)
			return RT_ERR_ARGUMENT;
	for (int i = 0; i < 3; i++) {
		int s = i - off;
		g->in[i] = s >= 0 ? d->in[s] : 1;
		g->out[i] = s >= 0 ? d->out[s] : 1;
		g->k[i] = s >= 0 ? d->k[s] : 1;
		g->st[i] = s >= 0 ? d->stride[s] : 1;
		g->dil[i] = s >= 0 ? d->dil[s] : 1;
		g->pb[i] = s >= 0 ? d->pad_begin[s] : 0;
		g->pe[i] = s >= 0 ? d->pad_end[s] : 0;
		g->dv[i] = rtc_div_of(g->out[i]);
	}
	g->mode = d->kind == RT_POOL_MAX   ? RTC_P_MAX
	          : d->kind == RT_POOL_AVG ? RTC_P_AVG
	          : d->p == 1              ? RTC_P_ABS
	          : d->p == 2              ? RTC_P_SQ
	                                   : RTC_P_POW;
	g->p = d->p;
	g->count_pad = d->count_include_pad;
	g->storage_order = d->storage_order;
	g->nin = g->in[0] * g->in[1] * g->in[2];
	g->nc = d->n * d->c;
	g->total = g->nc * g->out[0] * g->out[1] * g->out[2];
	g->taps = g->k[0] * g->k[1] * g->k[2];
	g->small = g->total < RTC_SMALL;
	return RT_OK;
}

/* The taps j in [*j0, *j1) of a window whose coordinates start + j*dil lie
 * in [lo, hi) (rt_pool.c's taps_in). */
RTC_HD void rtc_pool_taps(const struct rtc_pool_geom *g, int d, int64_t o, int64_t lo, int64_t hi,
                          int64_t *start, int64_t *j0, int64_t *j1)
{
	int64_t s = o * g->st[d] - g->pb[d], dil = g->dil[d], k = g->k[d], a, b;
	if (dil == 1) {
		a = lo - s > 0 ? lo - s : 0;
		b = hi - s > 0 ? hi - s : 0;
	} else {
		a = s >= lo ? 0 : (lo - s + dil - 1) / dil;
		b = s >= hi ? 0 : (hi - s + dil - 1) / dil;
	}
	*start = s;
	*j0 = a < k ? a : k;
	*j1 = b < k ? b : k;
	if (*j1 < *j0)
		*j1 = *j0;
}

/* The window of output f (flat over [nc, out0, out1, out2]). */
RTC_HD void rtc_pool_win(const struct rtc_pool_geom *g, int64_t f, struct rtc_win *w)
{
	int64_t o[3], count = 1;
	for (int d = 2; d >= 0; d--)
		o[d] = rtc_digit(g->small, g->dv[d], g->out[d], &f);
	w->c = f;
	for (int d = 0; d < 3; d++) {
		int64_t s, a, b;
		rtc_pool_taps(g, d, o[d], 0, g->in[d], &w->start[d], &w->j0[d], &w->j1[d]);
		if (g->count_pad) {
			rtc_pool_taps(g, d, o[d], -g->pb[d], g->in[d] + g->pe[d], &s, &a, &b);
			count *= b - a;
		} else {
			count *= w->j1[d] - w->j0[d];
		}
	}
	w->count = count;
}

/* The offset within the channel of tap (j0, j1, j2) of window w. */
RTC_HD int64_t rtc_pool_off(const struct rtc_pool_geom *g, const struct rtc_win *w, int64_t j0,
                            int64_t j1, int64_t j2)
{
	return ((w->start[0] + j0 * g->dil[0]) * g->in[1] + w->start[1] + j1 * g->dil[1]) *
	               g->in[2] +
	       w->start[2] + j2 * g->dil[2];
}

/* The number of valid taps of w, and the offset of valid tap t of them in
 * row-major order (the order the sequential loops visit). */
RTC_HD int64_t rtc_pool_ntaps(const struct rtc_win *w)
{
	return (w->j1[0] - w->j0[0]) * (w->j1[1] - w->j0[1]) * (w->j1[2] - w->j0[2]);
}

RTC_HD int64_t rtc_pool_tap(const struct rtc_pool_geom *g, const struct rtc_win *w, int64_t t)
{
	int64_t n2 = w->j1[2] - w->j0[2], n1 = w->j1[1] - w->j0[1];
	int64_t j2 = t % n2, j1 = t / n2 % n1, j0 = t / n2 / n1;
	return rtc_pool_off(g, w, w->j0[0] + j0, w->j0[1] + j1, w->j0[2] + j2);
}

/* The flat index ONNX reports for offset at of channel c. */
RTC_HD int64_t rtc_pool_index(const struct rtc_pool_geom *g, int64_t c, int64_t at)
{
	int64_t i2 = at % g->in[2], i1 = at / g->in[2] % g->in[1], i0 = at / (g->in[1] * g->in[2]);
	if (g->storage_order)
		at = i0 + g->in[0] * (i1 + g->in[1] * i2);
	return c * g->nin + at;
}

/* Many taps per output: a warp shares each window. */
RTC_HD int rtc_pool_wide(const struct rtc_pool_geom *g) { return g->taps >= 64; }

/*
 * The max rule with the tap's position: the first NaN wins and keeps
 * winning; otherwise a greater value. For a parallel combine of (v, at)
 * candidates from disjoint taps, ties (and NaN against NaN) go to the
 * smaller offset, which is the earlier tap; an empty candidate (at < 0)
 * never wins.
 */
#define RTC_MAX_TAKE(v, at, best, bat)                                    \
	((at) >= 0 &&                                                     \
	 ((bat) < 0 || (((v) != (v)) ? ((best) == (best) || (at) < (bat)) \
	                             : ((best) == (best) &&               \
	                                ((v) > (best) || ((v) == (best) && (at) < (bat)))))))

/* ------------------------------------------------------------------------ */
/* Reductions (rt_reduce.c)                                                 */
/* ------------------------------------------------------------------------ */

/*
 * The canonical form: size-1 dims dropped, neighbours both reduced or both
 * kept merged. rows: the innermost block is reduced, output k reduces nseg
 * segments of inner contiguous elements; cols: the innermost block is
 * kept, output a * inner + c reduces nseg elements inner apart (one per
 * segment). Both: output k starts at rtc_red_base, element e of it is at
 * rtc_red_elem.
 */
struct rtc_red {
	int rows, nk, nr, small;
	int64_t kdims[8], kst[8], rdims[8], rst[8];
	int64_t inner, nout, nseg, nred;
	struct rtc_div kdv[8], rdv[8], inner_dv;
};

/* Fills r; returns 0 when some dim is 0 (then only nout and nred hold). */
RTC_HOST int rtc_red_canon(const struct rt_reduce_desc *d, struct rtc_red *r)
{
	int64_t dims[8], st[8], s = 1, total = 1;
	int red[8], n = 0;
	memset(r, 0, sizeof *r);
	r->rows = r->nk = r->nr = 0;
	r->nout = r->nred = 1;
	r->inner = r->nseg = 1;
	for (int i = 0; i < d->rank; i++) {
		if ((d->axes_mask >> i) & 1)
			r->nred *= d->dims[i];
		else
			r->nout *= d->dims[i];
	}
	if (r->nout == 0 || r->nred == 0)
		return 0;
	for (int i = 0; i < d->rank; i++) {
		int ri = (d->axes_mask >> i) & 1;
		total *= d->dims[i];
		if (d->dims[i] == 1)
			continue;
		if (n && red[n - 1] == ri) {
			dims[n - 1] *= d->dims[i];
			continue;
		}
		dims[n] = d->dims[i];
		red[n++] = ri;
	}
	for (int i = n - 1; i >= 0; i--) {
		st[i] = s;
		s *= dims[i];
	}
	r->rows = n && red[n - 1];
	r->inner = n ? dims[n - 1] : 1;
	for (int i = 0; i < n - 1; i++) {
		if (red[i]) {
			r->rdims[r->nr] = dims[i];
			r->rst[r->nr++] = st[i];
		} else {
			r->kdims[r->nk] = dims[i];
			r->kst[r->nk++] = st[i];
		}
	}
	r->nseg = r->rows ? r->nred / r->inner : r->nred;
	r->small = total < RTC_SMALL;
	for (int i = 0; i < r->nk; i++)
		r->kdv[i] = rtc_div_of(r->kdims[i]);
	for (int i = 0; i < r->nr; i++)
		r->rdv[i] = rtc_div_of(r->rdims[i]);
	r->inner_dv = rtc_div_of(r->inner);
	return 1;
}

/* Offset of multi-index number j over dims (dividers dv) with strides st. */
RTC_HD int64_t rtc_red_offset(int small, int64_t j, const int64_t *dims, const struct rtc_div *dv,
                              const int64_t *st, int n)
{
	int64_t off = 0;
	if (n == 1)
		return j * st[0];
	for (int i = n - 1; i >= 0; i--)
		off += rtc_digit(small, dv[i], dims[i], &j) * st[i];
	return off;
}

/* Where output k's data start (cols: k = a * inner + c). */
RTC_HD int64_t rtc_red_base(const struct rtc_red *r, int64_t k)
{
	int64_t c = 0;
	if (!r->rows)
		c = rtc_digit(r->small, r->inner_dv, r->inner, &k);
	return (r->nk ? rtc_red_offset(r->small, k, r->kdims, r->kdv, r->kst, r->nk) : 0) + c;
}

/* The offset of element e (of nred) of an output, from its base. */
RTC_HD int64_t rtc_red_elem(const struct rtc_red *r, int64_t e)
{
	int64_t pos = 0;
	if (r->rows) {
		if (r->nseg == 1)
			return e;
		pos = rtc_digit(r->small, r->inner_dv, r->inner, &e);
	}
	return pos + (r->nr ? rtc_red_offset(r->small, e, r->rdims, r->rdv, r->rst, r->nr) : 0);
}

/* The seven primitives every kind reduces with, then finishes. */
enum rtc_prim { RTC_SUM, RTC_ABS, RTC_SQ, RTC_EXP, RTC_PROD, RTC_MAX, RTC_MIN };

RTC_HD int rtc_red_prim(int kind)
{
	switch (kind) {
	case RT_REDUCE_L1: return RTC_ABS;
	case RT_REDUCE_L2:
	case RT_REDUCE_SUM_SQUARE: return RTC_SQ;
	case RT_REDUCE_PROD: return RTC_PROD;
	case RT_REDUCE_MAX: return RTC_MAX;
	case RT_REDUCE_MIN: return RTC_MIN;
	case RT_REDUCE_LOG_SUM_EXP: return RTC_EXP;
	default: return RTC_SUM;
	}
}

/* double -> int64 as the reference stores it: NaN 0, saturating. */
RTC_HD int64_t rtc_to_i64(double v)
{
	if (v != v)
		return 0;
	if (v >= 9.2233720368547758e18)
		return INT64_MAX;
	if (v <= -9.2233720368547758e18)
		return INT64_MIN;
	return (int64_t)v;
}

/* LogSumExp's shift: the maximum, 0 when it is not finite. */
RTC_HD double rtc_lse_shift(double max) { return max - max == 0 ? max : 0; }

/*
 * A primitive's result (f for floats; i, and f = (double)i, for integers)
 * finished into the kind's value, as rt_reduce.c's finish().
 */
RTC_HD void rtc_red_finish(int kind, int is_float, int64_t nred, double shift, double *f,
                           int64_t *i)
{
	switch (kind) {
	case RT_REDUCE_MEAN:
		*f /= (double)nred;
		*i = nred ? *i / nred : 0;
		break;
	case RT_REDUCE_L2: *f = sqrt(is_float ? *f : (double)*i); break;
	case RT_REDUCE_LOG_SUM: *f = log(is_float ? *f : (double)*i); break;
	case RT_REDUCE_LOG_SUM_EXP: *f = shift + log(*f); break;
	default: break;
	}
	if (kind == RT_REDUCE_L2 || kind == RT_REDUCE_LOG_SUM || kind == RT_REDUCE_LOG_SUM_EXP)
		*i = rtc_to_i64(*f);
}

/* The cols form's blocks: tx columns of ty segment lanes (256 threads). */
RTC_HD int rtc_red_cols_tx(int64_t inner)
{
	int tx = 1;
	while (tx < 32 && tx < inner)
		tx *= 2;
	return tx;
}

/* Threads per output in the rows form: 1, a warp or a block. */
RTC_HD int rtc_red_group(int64_t nred)
{
	return nred <= 16 ? 1 : nred <= 4096 ? 32 : RTC_ROW_BLOCK;
}

/* ------------------------------------------------------------------------ */
/* ArgMax / ArgMin (rt_reduce.c)                                            */
/* ------------------------------------------------------------------------ */

/*
 * The reference scans in order: without select_last an element replaces
 * the best when strictly better, so a NaN wins only in first place; with
 * select_last when not worse, so every NaN wins and so does the element
 * after it. In parallel:
 *   first: x[0] NaN -> 0; else the best non-NaN value, ties to the lower
 *          index (NaNs are skipped);
 *   last:  L = the last NaN's index (-1: none); L = n-1 -> L; else the
 *          best of x[L+1..n), ties to the higher index.
 * RTC_ARG_BETTER(is_min, last, v, i, bv, bi) is the combine rule of the
 * candidates (bi < 0: none yet); v and bv are never NaN.
 */
#define RTC_ARG_BETTER(is_min, last, v, i, bv, bi)           \
	((bi) < 0 || ((is_min) ? (v) < (bv) : (v) > (bv)) || \
	 ((v) == (bv) && ((last) ? (i) > (bi) : (i) < (bi))))

/* Sequential lanes: thread per lane when there are many lanes or a short axis. */
RTC_HD int rtc_axis_serial(int64_t lanes, int64_t axis, int sm_count)
{
	return lanes >= (int64_t)(sm_count > 0 ? sm_count : 1) * 256 || axis <= 32;
}

/* ------------------------------------------------------------------------ */
/* [outer, axis, inner] lanes (softmax, arg, cumsum)                        */
/* ------------------------------------------------------------------------ */

/* The lanes of x viewed as [outer, axis, inner]: lane l = o * inner + i
 * starts at (o * axis) * inner + i and steps by inner. */
struct rtc_lanes {
	int small;
	int64_t lanes, axis, inner;
	struct rtc_div inner_dv;
};

RTC_HD struct rtc_lanes rtc_lanes_of(int64_t outer, int64_t axis, int64_t inner)
{
	struct rtc_lanes l;
	l.lanes = outer * inner;
	l.axis = axis;
	l.inner = inner;
	l.small = l.lanes < RTC_SMALL;
	l.inner_dv = rtc_div_of(inner);
	return l;
}

RTC_HD int64_t rtc_lane_base(const struct rtc_lanes *l, int64_t lane)
{
	int64_t i = rtc_digit(l->small, l->inner_dv, l->inner, &lane);
	return lane * l->axis * l->inner + i;
}

/* The axis position of scan step p (CumSum's order). */
RTC_HD int64_t rtc_scan_pos(int64_t axis, int reverse, int64_t p)
{
	return reverse ? axis - 1 - p : p;
}

/* ------------------------------------------------------------------------ */
/* Strided copies: rt_copy, rt_tile (rt_move.c)                             */
/* ------------------------------------------------------------------------ */

/*
 * y[dst0 + sum i_d ds_d] = x[src0 + sum i_d ss_d], i over n; offsets and
 * strides in elements of esize bytes. tposed: the copy is a transpose run
 * in tiles of the last two dims: A is the one contiguous in x (ss 1), B the
 * one contiguous in y (ds 1); 1: A is the last dim, 2: A is the one before.
 */
struct rtc_xfer {
	int rank, esize, tposed, small;
	int64_t total;
	int64_t src0, dst0;
	int64_t n[RTC_MAXR], ss[RTC_MAXR], ds[RTC_MAXR];
	struct rtc_div dv[RTC_MAXR];
};

/* Element count of dims, -1 for a negative dim or an overflow. */
RTC_HOST int64_t rtc_count(const int64_t *dims, int rank)
{
	int64_t n = 1;
	for (int d = 0; d < rank; d++)
		if (dims[d] < 0 || __builtin_mul_overflow(n, dims[d], &n))
			return -1;
	return n;
}

RTC_HOST void rtc_dense_strides(const int64_t *dims, int rank, int64_t *strides)
{
	int64_t s = 1;
	for (int d = rank - 1; d >= 0; d--) {
		strides[d] = s;
		s *= dims[d];
	}
}

/* Drops size-1 dims and merges neighbours contiguous with each other on
 * both sides (xfer_simplify); a single element becomes rank 1. */
RTC_HOST void rtc_xfer_simplify(struct rtc_xfer *t)
{
	int k = 0;
	for (int d = 0; d < t->rank; d++) {
		if (t->n[d] == 1)
			continue;
		if (k > 0 && t->ss[k - 1] == t->ss[d] * t->n[d] &&
		    t->ds[k - 1] == t->ds[d] * t->n[d]) {
			t->n[k - 1] *= t->n[d];
			t->ss[k - 1] = t->ss[d];
			t->ds[k - 1] = t->ds[d];
			continue;
		}
		t->n[k] = t->n[d];
		t->ss[k] = t->ss[d];
		t->ds[k] = t->ds[d];
		k++;
	}
	if (k == 0) {
		t->n[0] = t->ss[0] = t->ds[0] = 1;
		k = 1;
	}
	t->rank = k;
}

/* Moves wide elements when the innermost run is contiguous on both sides
 * and everything (pointers x, y included) is aligned to the width. */
RTC_HOST void rtc_xfer_widen(struct rtc_xfer *t, uintptr_t x, uintptr_t y)
{
	int last = t->rank - 1;
	if (t->ss[last] != 1 || t->ds[last] != 1)
		return;
	for (int w = 16; w > t->esize; w /= 2) {
		int64_t f = w / t->esize;
		int ok = w % t->esize == 0 && x % (uintptr_t)w == 0 && y % (uintptr_t)w == 0 &&
		         t->n[last] % f == 0 && t->src0 % f == 0 && t->dst0 % f == 0;
		for (int d = 0; ok && d < last; d++)
			ok = t->ss[d] % f == 0 && t->ds[d] % f == 0;
		if (!ok)
			continue;
		t->n[last] /= f;
		t->src0 /= f;
		t->dst0 /= f;
		for (int d = 0; d < last; d++) {
			t->ss[d] /= f;
			t->ds[d] /= f;
		}
		t->esize = w;
		return;
	}
}

/* A transpose: the innermost dim contiguous on one side only and another
 * dim contiguous on the other; that dim is moved next to the innermost
 * (xfer_pick_transpose). Tiles only when both are long enough. */
RTC_HOST void rtc_xfer_pick_transpose(struct rtc_xfer *t)
{
	int last = t->rank - 1, j;
	int src_side = t->ds[last] == 1 && t->ss[last] != 1 && t->ss[last] != 0;
	int dst_side = t->ss[last] == 1 && t->ds[last] != 1 && t->ds[last] != 0;
	int64_t n, ss, ds;
	t->tposed = 0;
	if (t->rank < 2 || !(src_side || dst_side) || t->esize > 8 || (t->esize & (t->esize - 1)))
		return;
	for (j = last - 1; j >= 0; j--)
		if ((src_side ? t->ss[j] : t->ds[j]) == 1)
			break;
	if (j < 0 || t->n[j] < 16 || t->n[last] < 16)
		return;
	n = t->n[j];
	ss = t->ss[j];
	ds = t->ds[j];
	for (int d = j; d < last - 1; d++) {
		t->n[d] = t->n[d + 1];
		t->ss[d] = t->ss[d + 1];
		t->ds[d] = t->ds[d + 1];
	}
	t->n[last - 1] = n;
	t->ss[last - 1] = ss;
	t->ds[last - 1] = ds;
	t->tposed = dst_side ? 1 : 2;
}

/* Finishes a plan whose rank, esize, n, ss, ds, src0, dst0 are set:
 * simplification, widening or tiles, dividers. */
RTC_HOST void rtc_xfer_plan(struct rtc_xfer *t, uintptr_t x, uintptr_t y)
{
	rtc_xfer_simplify(t);
	rtc_xfer_pick_transpose(t);
	if (!t->tposed)
		rtc_xfer_widen(t, x, y);
	t->total = rtc_count(t->n, t->rank);
	t->small = t->total < RTC_SMALL;
	for (int d = 0; d < t->rank; d++)
		t->dv[d] = rtc_div_of(t->n[d]);
}

/* The plan of an rt_copy; RT_ERR_ARGUMENT as rt_copy, RT_OK with total 0
 * when there is nothing to copy. */
RTC_HOST int rtc_copy_plan(const struct rt_copy_desc *d, uintptr_t x, uintptr_t y,
                           struct rtc_xfer *t)
{
	memset(t, 0, sizeof *t);
	t->total = 0;
	if (d->esize < 1 || d->rank < 0 || d->rank > 8 || rtc_count(d->dims, d->rank) < 0)
		return RT_ERR_ARGUMENT;
	if (rtc_count(d->dims, d->rank) == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	t->rank = d->rank;
	t->esize = d->esize;
	t->src0 = d->offset;
	t->dst0 = d->dst_offset;
	for (int k = 0; k < d->rank; k++) {
		t->n[k] = d->dims[k];
		t->ss[k] = d->strides[k];
		t->ds[k] = d->dst_strides[k];
	}
	if (d->dst_dense)
		rtc_dense_strides(d->dims, d->rank, t->ds);
	rtc_xfer_plan(t, x, y);
	return RT_OK;
}

/* The plan of an rt_tile: output dim k is [repeats, in] with source
 * strides [0, stride]. */
RTC_HOST int rtc_tile_plan(const struct rt_tile_desc *d, uintptr_t x, uintptr_t y,
                           struct rtc_xfer *t)
{
	int64_t xs[8];
	memset(t, 0, sizeof *t);
	t->total = 0;
	if (d->esize < 1 || d->rank < 0 || d->rank > 8 || rtc_count(d->in_dims, d->rank) < 0 ||
	    rtc_count(d->repeats, d->rank) < 0)
		return RT_ERR_ARGUMENT;
	rtc_dense_strides(d->in_dims, d->rank, xs);
	t->rank = 2 * d->rank;
	t->esize = d->esize;
	t->src0 = t->dst0 = 0;
	for (int k = 0; k < d->rank; k++) {
		t->n[2 * k] = d->repeats[k];
		t->n[2 * k + 1] = d->in_dims[k];
		t->ss[2 * k] = 0;
		t->ss[2 * k + 1] = xs[k];
	}
	if (rtc_count(t->n, t->rank) < 0)
		return RT_ERR_ARGUMENT;
	if (rtc_count(t->n, t->rank) == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	rtc_dense_strides(t->n, t->rank, t->ds);
	rtc_xfer_plan(t, x, y);
	return RT_OK;
}

/* The source and destination offsets of element f. */
RTC_HD void rtc_xfer_at(const struct rtc_xfer *t, int small, int64_t f, int64_t *so, int64_t *dof)
{
	int64_t s = t->src0, o = t->dst0;
	for (int d = t->rank - 1; d > 0; d--) {
		int64_t i = rtc_digit(small, t->dv[d], t->n[d], &f);
		s += i * t->ss[d];
		o += i * t->ds[d];
	}
	*so = s + f * t->ss[0];
	*dof = o + f * t->ds[0];
}

/* Tiles: [outer..., A tiles, B tiles]; element (a, b) of a tile is at
 * so + a + b * ss_b in x and dof + b + a * ds_a in y. */
struct rtc_tmap {
	int64_t na, nb, ss_b, ds_a, tiles;
};

RTC_HD struct rtc_tmap rtc_xfer_tmap(const struct rtc_xfer *t)
{
	struct rtc_tmap m;
	int last = t->rank - 1, a = t->tposed == 1 ? last : last - 1, b = 2 * last - 1 - a;
	int64_t outer = 1;
	for (int d = 0; d < last - 1; d++)
		outer *= t->n[d];
	m.na = t->n[a];
	m.nb = t->n[b];
	m.ss_b = t->ss[b];
	m.ds_a = t->ds[a];
	m.tiles = outer * rtc_ceil_div(m.na, RTC_TILE) * rtc_ceil_div(m.nb, RTC_TILE);
	return m;
}

/* Tile number k: its outer offsets and first (a, b). */
RTC_HD void rtc_xfer_tile(const struct rtc_xfer *t, const struct rtc_tmap *m, int64_t k,
                          int64_t *so, int64_t *dof, int64_t *a0, int64_t *b0)
{
	int64_t ta = rtc_ceil_div(m->na, RTC_TILE), tb = rtc_ceil_div(m->nb, RTC_TILE);
	int64_t s = t->src0, o = t->dst0;
	*b0 = k % tb * RTC_TILE;
	k /= tb;
	*a0 = k % ta * RTC_TILE;
	k /= ta;
	for (int d = t->rank - 3; d >= 0; d--) {
		int64_t i = k % t->n[d];
		k /= t->n[d];
		s += i * t->ss[d];
		o += i * t->ds[d];
	}
	*so = s;
	*dof = o;
}

/* ------------------------------------------------------------------------ */
/* Gathers                                                                  */
/* ------------------------------------------------------------------------ */

/* y [outer, nidx, inner] from x [outer, axis, inner] (inner in elements of
 * esize bytes, widened when aligned). */
struct rtc_gather {
	int esize, index_dtype, small;
	int64_t outer, axis, inner, nidx, total;
	struct rtc_div inner_dv, nidx_dv;
};

RTC_HOST int rtc_gather_plan(const struct rt_gather_desc *d, uintptr_t x, uintptr_t y,
                             struct rtc_gather *g)
{
	int64_t xd[3] = { d->outer, d->axis, d->inner }, yd[3] = { d->outer, d->nidx, d->inner };
	memset(g, 0, sizeof *g);
	if (d->esize < 1 || (d->index_dtype != RT_I32 && d->index_dtype != RT_I64) ||
	    rtc_count(xd, 3) < 0 || rtc_count(yd, 3) < 0)
		return RT_ERR_ARGUMENT;
	g->esize = d->esize;
	g->index_dtype = d->index_dtype;
	g->outer = d->outer;
	g->axis = d->axis;
	g->inner = d->inner;
	g->nidx = d->nidx;
	for (int w = 16; w > g->esize && g->inner; w /= 2) {
		int64_t f = w / g->esize;
		if (w % g->esize == 0 && g->inner % f == 0 && x % (uintptr_t)w == 0 &&
		    y % (uintptr_t)w == 0) {
			g->inner /= f;
			g->esize = w;
			break;
		}
	}
	g->total = g->outer * g->nidx * g->inner;
	g->small = g->total < RTC_SMALL && g->outer * g->axis * g->inner < RTC_SMALL;
	g->inner_dv = rtc_div_of(g->inner);
	g->nidx_dv = rtc_div_of(g->nidx);
	return RT_OK;
}

/* Element f of y: its index number *j and its source offset without the
 * gathered coordinate (add index * inner). */
RTC_HD int64_t rtc_gather_at(const struct rtc_gather *g, int64_t f, int64_t *j)
{
	int64_t i = rtc_digit(g->small, g->inner_dv, g->inner, &f);
	*j = rtc_digit(g->small, g->nidx_dv, g->nidx, &f);
	return f * g->axis * g->inner + i;
}

/* An index normalized into [0, dim), or -1 when out of range. */
RTC_HD int64_t rtc_norm_index(int64_t k, int64_t dim)
{
	if (k < -dim || k >= dim)
		return -1;
	return k < 0 ? k + dim : k;
}

/* GatherElements: y over idims; element f reads x at its own position with
 * the axis coordinate replaced by its index. */
struct rtc_gel {
	int esize, index_dtype, rank, axis, small;
	int64_t total, axis_n, axis_stride;
	int64_t idims[8], xs[8];
	struct rtc_div dv[8];
};

RTC_HOST int rtc_gel_plan(const struct rt_gather_elements_desc *d, struct rtc_gel *g)
{
	memset(g, 0, sizeof *g);
	if (d->esize < 1 || (d->index_dtype != RT_I32 && d->index_dtype != RT_I64) || d->rank < 1 ||
	    d->rank > 8 || d->axis < 0 || d->axis >= d->rank ||
	    rtc_count(d->data_dims, d->rank) < 0 || rtc_count(d->index_dims, d->rank) < 0)
		return RT_ERR_ARGUMENT;
	for (int k = 0; k < d->rank; k++)
		if (k != d->axis && d->index_dims[k] > d->data_dims[k])
			return RT_ERR_INDEX;
	g->esize = d->esize;
	g->index_dtype = d->index_dtype;
	g->rank = d->rank;
	g->axis = d->axis;
	g->total = rtc_count(d->index_dims, d->rank);
	g->small = g->total < RTC_SMALL && rtc_count(d->data_dims, d->rank) < RTC_SMALL;
	g->axis_n = d->data_dims[d->axis];
	rtc_dense_strides(d->data_dims, d->rank, g->xs);
	g->axis_stride = g->xs[d->axis];
	for (int k = 0; k < d->rank; k++) {
		g->idims[k] = d->index_dims[k];
		g->dv[k] = rtc_div_of(d->index_dims[k]);
	}
	return RT_OK;
}

/* The source offset of element f without the axis coordinate. */
RTC_HD int64_t rtc_gel_base(const struct rtc_gel *g, int64_t f)
{
	int64_t off = 0;
	for (int k = g->rank - 1; k >= 0; k--) {
		int64_t i = rtc_digit(g->small, g->dv[k], g->idims[k], &f);
		if (k != g->axis)
			off += i * g->xs[k];
	}
	return off;
}

/*
 * ScatterElements (rt_move.c): update f goes to y at rtc_gel_base(f) +
 * index * axis_stride, GatherElements' arithmetic over the same dims; esize
 * comes from the dtype.
 */
RTC_HOST int rtc_scel_plan(const struct rt_scatter_elements_desc *d, struct rtc_gel *g)
{
	struct rt_gather_elements_desc e;
	memset(g, 0, sizeof *g);
	memset(&e, 0, sizeof e);
	switch (d->dtype) {
	case RT_BOOL:
	case RT_I8:
	case RT_U8: e.esize = 1; break;
	case RT_F16:
	case RT_BF16:
	case RT_I16:
	case RT_U16: e.esize = 2; break;
	case RT_F32:
	case RT_I32:
	case RT_U32: e.esize = 4; break;
	case RT_F64:
	case RT_I64:
	case RT_U64: e.esize = 8; break;
	default: return RT_ERR_ARGUMENT;
	}
	if (d->reduction < RT_SCATTER_NONE || d->reduction > RT_SCATTER_MIN ||
	    (d->reduction != RT_SCATTER_NONE && d->dtype == RT_BOOL) || d->rank < 1 || d->rank > 8)
		return RT_ERR_ARGUMENT;
	e.index_dtype = d->index_dtype;
	e.rank = d->rank;
	e.axis = d->axis;
	memcpy(e.data_dims, d->data_dims, sizeof e.data_dims);
	memcpy(e.index_dims, d->index_dims, sizeof e.index_dims);
	return rtc_gel_plan(&e, g);
}

/* ------------------------------------------------------------------------ */
/* Pad (rt_move.c)                                                          */
/* ------------------------------------------------------------------------ */

struct rtc_pad {
	int esize, mode, rank, small;
	int64_t total;
	int64_t in[8], out[8], pb[8], xs[8];
	struct rtc_div dv[8];
	unsigned char value[8];
};

/* The input coordinate of padded coordinate i (-1: constant padding);
 * reflection is periodic (pad_source). */
RTC_HD int64_t rtc_pad_source(int mode, int64_t i, int64_t n)
{
	int64_t period;
	if (i >= 0 && i < n)
		return i;
	if (mode == RT_PAD_CONSTANT || n == 0)
		return -1;
	if (mode == RT_PAD_EDGE || n == 1)
		return i < 0 ? 0 : n - 1;
	period = 2 * (n - 1);
	i %= period;
	if (i < 0)
		i += period;
	return i < n ? i : period - i;
}

/* The plan of an rt_pad (total 0: nothing to write). */
RTC_HOST int rtc_pad_plan(const struct rt_pad_desc *d, uintptr_t x, uintptr_t y, struct rtc_pad *p)
{
	int k = 0;
	memset(p, 0, sizeof *p);
	p->total = 0;
	if (d->esize < 1 || d->rank < 0 || d->rank > 8 || d->mode < RT_PAD_CONSTANT ||
	    d->mode > RT_PAD_EDGE || d->esize > 8)
		return RT_ERR_ARGUMENT;
	p->esize = d->esize;
	p->mode = d->mode;
	for (int i = 0; i < 8; i++)
		p->value[i] = d->value[i];
	for (int i = 0; i < d->rank; i++) {
		p->in[i] = d->in_dims[i];
		p->pb[i] = d->pads[i];
		if (p->in[i] < 0 || __builtin_add_overflow(p->in[i], d->pads[i], &p->out[i]) ||
		    __builtin_add_overflow(p->out[i], d->pads[d->rank + i], &p->out[i]) ||
		    p->out[i] < 0)
			return RT_ERR_ARGUMENT;
	}
	p->total = rtc_count(p->out, d->rank);
	if (p->total <= 0 || rtc_count(p->in, d->rank) < 0) {
		int bad = p->total < 0;
		p->total = 0;
		return bad ? RT_ERR_ARGUMENT : RT_OK;
	}
	if (!x || !y) {
		p->total = 0;
		return RT_ERR_ARGUMENT;
	}
	if (rtc_count(p->in, d->rank) == 0)
		p->mode = RT_PAD_CONSTANT;
	/* pad_simplify: constant mode merges untouched dims into their outer
	 * neighbour; untouched size-1 dims go */
	for (int i = 0; i < d->rank; i++) {
		int untouched = p->out[i] == p->in[i] && p->pb[i] == 0;
		if (untouched && p->in[i] == 1)
			continue;
		if (untouched && k > 0 && p->mode == RT_PAD_CONSTANT) {
			p->in[k - 1] *= p->in[i];
			p->out[k - 1] *= p->in[i];
			p->pb[k - 1] *= p->in[i];
			continue;
		}
		p->in[k] = p->in[i];
		p->out[k] = p->out[i];
		p->pb[k] = p->pb[i];
		k++;
	}
	if (k == 0) {
		p->in[0] = p->out[0] = 1;
		p->pb[0] = 0;
		k = 1;
	}
	p->rank = k;
	rtc_dense_strides(p->in, k, p->xs);
	p->small = p->total < RTC_SMALL;
	for (int i = 0; i < k; i++)
		p->dv[i] = rtc_div_of(p->out[i]);
	return RT_OK;
}

/* The source offset of output element f, -1 for the pad value. */
RTC_HD int64_t rtc_pad_at(const struct rtc_pad *p, int64_t f)
{
	int64_t off = 0;
	int inside = 1;
	for (int d = p->rank - 1; d >= 0; d--) {
		int64_t i = rtc_digit(p->small, p->dv[d], p->out[d], &f);
		int64_t s = rtc_pad_source(p->mode, i - p->pb[d], p->in[d]);
		inside &= s >= 0;
		off += s * p->xs[d];
	}
	return inside ? off : -1;
}

/* ------------------------------------------------------------------------ */
/* Trilu                                                                    */
/* ------------------------------------------------------------------------ */

struct rtc_trilu {
	int esize, upper, small;
	int64_t rows, cols, k, total;
	struct rtc_div rows_dv, cols_dv;
};

RTC_HOST int rtc_trilu_plan(const struct rt_trilu_desc *d, uintptr_t x, uintptr_t y,
                            struct rtc_trilu *t)
{
	int64_t dims[4] = { d->batch, d->rows, d->cols, d->esize };
	memset(t, 0, sizeof *t);
	t->total = 0;
	if (d->esize < 1 || rtc_count(dims, 4) < 0)
		return RT_ERR_ARGUMENT;
	if (rtc_count(dims, 3) == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	t->esize = d->esize;
	t->upper = d->upper;
	t->rows = d->rows;
	t->cols = d->cols;
	/* k beyond the matrix keeps all or nothing: clamping avoids overflow */
	t->k = rtc_min64(rtc_max64(d->k, -d->rows - 1), d->cols + 1);
	t->total = rtc_count(dims, 3);
	t->small = t->total < RTC_SMALL;
	t->rows_dv = rtc_div_of(t->rows);
	t->cols_dv = rtc_div_of(t->cols);
	return RT_OK;
}

/* Whether element f keeps its value (else 0). */
RTC_HD int rtc_trilu_keep(const struct rtc_trilu *t, int64_t f)
{
	int64_t c = rtc_digit(t->small, t->cols_dv, t->cols, &f);
	int64_t r = rtc_digit(t->small, t->rows_dv, t->rows, &f), c0, c1;
	c0 = t->upper ? rtc_min64(rtc_max64(r + t->k, 0), t->cols) : 0;
	c1 = t->upper ? t->cols : rtc_min64(rtc_max64(r + t->k + 1, 0), t->cols);
	return c >= c0 && c < c1;
}

/* ------------------------------------------------------------------------ */
/* Resize (rt_resize.c)                                                     */
/* ------------------------------------------------------------------------ */

struct rtc_resize {
	int rank, mode, coord, nearest, exclude_outside, small;
	int64_t total;
	int64_t in[8], out[8], xs[8];
	int identity[8];
	double scales[8];
	float roi[16];
	float cubic_a, extrapolation;
	struct rtc_div dv[8];
};

/* One output coordinate's taps along one dim (n 0: extrapolate). */
struct rtc_taps {
	int n;
	int64_t off[4]; /* input offsets: the clamped index times the stride */
	float w[4];
};

/* The source coordinate of output coordinate x along dim i. */
RTC_HD double rtc_resize_coord(const struct rtc_resize *p, int i, int64_t x)
{
	double in = (double)p->in[i], out = (double)p->out[i], scale = p->scales[i];
	double len = scale * in, half = ((double)x + 0.5) / scale - 0.5, lo, hi;
	switch (p->coord) {
	case RT_COORD_HALF_PIXEL: return half;
	case RT_COORD_HALF_PIXEL_SYMMETRIC: return in / 2 * (1 - out / len) + half;
	case RT_COORD_PYTORCH_HALF_PIXEL: return len > 1 ? half : 0;
	case RT_COORD_ALIGN_CORNERS: return len == 1 ? 0 : (double)x * (in - 1) / (len - 1);
	case RT_COORD_ASYMMETRIC: return (double)x / scale;
	default: break;
	}
	lo = p->roi[i];
	hi = p->roi[p->rank + i];
	if (len == 1)
		return 0.5 * (lo + hi) * (in - 1);
	return lo * (in - 1) + (double)x * (hi - lo) * (in - 1) / (len - 1);
}

/* Keys' cubic convolution weights of the taps i0-1 .. i0+2. */
RTC_HD void rtc_cubic_weights(double r, double a, double *w)
{
	double s = 1 + r, t = 1 - r, u = 2 - r;
	w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
	w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
	w[2] = ((a + 2) * t - (a + 3)) * t * t + 1;
	w[3] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
}

/* Does the nearest mode round a fraction in (0, 1) up? */
RTC_HD int rtc_nearest_up(int mode, double ratio)
{
	switch (mode) {
	case RT_NEAREST_ROUND_PREFER_FLOOR: return ratio > 0.5;
	case RT_NEAREST_ROUND_PREFER_CEIL: return ratio >= 0.5;
	case RT_NEAREST_CEIL: return 1;
	default: return 0;
	}
}

/* The taps of output coordinate x along dim i (rt_resize.c's dim_taps). */
RTC_HD void rtc_resize_taps(const struct rtc_resize *p, int i, int64_t x, struct rtc_taps *t)
{
	int64_t in = p->in[i], i0, at[4];
	double xo = rtc_resize_coord(p, i, x), ratio, w[4], sum = 0;
	t->n = 0;
	if (p->coord == RT_COORD_TF_CROP_AND_RESIZE && !(xo >= 0 && xo <= (double)(in - 1)))
		return;
	xo = fmin(fmax(xo, -4), (double)in + 4);
	i0 = (int64_t)floor(xo);
	ratio = xo - (double)i0;
	if (ratio == 0) {
		ratio = 1;
		i0--;
	}
	if (p->mode == RT_RESIZE_NEAREST) {
		t->n = 1;
		at[0] = i0 + (ratio == 1 || rtc_nearest_up(p->nearest, ratio));
		w[0] = 1;
	} else if (p->mode == RT_RESIZE_LINEAR) {
		t->n = 2;
		at[0] = i0;
		at[1] = i0 + 1;
		w[0] = 1 - ratio;
		w[1] = ratio;
	} else {
		t->n = 4;
		for (int k = 0; k < 4; k++)
			at[k] = i0 - 1 + k;
		rtc_cubic_weights(ratio, p->cubic_a, w);
	}
	if (t->n > 1 && p->exclude_outside) {
		for (int k = 0; k < t->n; k++) {
			if (at[k] < 0 || at[k] >= in)
				w[k] = 0;
			sum += w[k];
		}
		for (int k = 0; k < t->n; k++)
			w[k] /= sum;
	}
	for (int k = 0; k < t->n; k++) {
		t->off[k] = (at[k] < 0 ? 0 : at[k] >= in ? in - 1 : at[k]) * p->xs[i];
		t->w[k] = (float)w[k];
	}
}

/* Does dim i map every output coordinate to itself with weight 1? */
RTC_HOST int rtc_resize_identity(const struct rtc_resize *p, int i)
{
	struct rtc_taps t;
	if (p->in[i] != p->out[i])
		return 0;
	if (p->scales[i] == 1 && p->coord != RT_COORD_TF_CROP_AND_RESIZE &&
	    p->mode != RT_RESIZE_CUBIC)
		return 1;
	for (int64_t x = 0; x < p->out[i]; x++) {
		int nonzero = 0;
		rtc_resize_taps(p, i, x, &t);
		for (int k = 0; k < t.n; k++) {
			if (t.w[k] == 0)
				continue;
			if (t.w[k] != 1 || t.off[k] != x * p->xs[i])
				return 0;
			nonzero++;
		}
		if (nonzero != 1)
			return 0;
	}
	return 1;
}

/* The plan of an rt_resize (dtype checked by the caller); total 0 when the
 * output is empty. */
RTC_HOST int rtc_resize_plan(const struct rt_resize_desc *d, struct rtc_resize *p)
{
	int64_t nx = 1, ny = 1;
	memset(p, 0, sizeof *p);
	p->total = 0;
	if (d->rank < 0 || d->rank > 8 || d->mode < RT_RESIZE_NEAREST ||
	    d->mode > RT_RESIZE_CUBIC || d->coord < RT_COORD_HALF_PIXEL ||
	    d->coord > RT_COORD_TF_CROP_AND_RESIZE || d->nearest < RT_NEAREST_ROUND_PREFER_FLOOR ||
	    d->nearest > RT_NEAREST_CEIL)
		return RT_ERR_ARGUMENT;
	for (int i = 0; i < d->rank; i++)
		if (d->in_dims[i] < 0 || d->out_dims[i] < 0 ||
		    __builtin_mul_overflow(nx, d->in_dims[i], &nx) ||
		    __builtin_mul_overflow(ny, d->out_dims[i], &ny))
			return RT_ERR_ARGUMENT;
	p->rank = d->rank;
	p->mode = d->mode;
	p->coord = d->coord;
	p->nearest = d->nearest;
	p->exclude_outside = d->exclude_outside;
	p->cubic_a = d->cubic_a;
	p->extrapolation = d->extrapolation;
	for (int i = 0; i < 16; i++)
		p->roi[i] = d->roi[i];
	for (int i = 0; i < d->rank; i++) {
		p->in[i] = d->in_dims[i];
		p->out[i] = d->out_dims[i];
		p->scales[i] = d->scales[i];
		p->dv[i] = rtc_div_of(d->out_dims[i]);
	}
	rtc_dense_strides(p->in, p->rank, p->xs);
	p->total = ny;
	p->small = ny < RTC_SMALL && nx < RTC_SMALL;
	for (int i = 0; i < d->rank; i++)
		p->identity[i] = nx > 0 && ny > 0 && rtc_resize_identity(p, i);
	return RT_OK;
}

/* ------------------------------------------------------------------------ */
/* Channels: LRN, the epilogue                                              */
/* ------------------------------------------------------------------------ */

/* x viewed as [outer, channels, inner]. */
struct rtc_chan {
	int small;
	int64_t total, channels, inner;
	struct rtc_div ch_dv, inner_dv;
};

RTC_HD struct rtc_chan rtc_chan_of(int64_t outer, int64_t channels, int64_t inner)
{
	struct rtc_chan c;
	c.total = outer * channels * inner;
	c.channels = channels;
	c.inner = inner;
	c.small = c.total < RTC_SMALL;
	c.ch_dv = rtc_div_of(channels);
	c.inner_dv = rtc_div_of(inner);
	return c;
}

/* The channel of element f. */
RTC_HD int64_t rtc_channel_of(const struct rtc_chan *c, int64_t f)
{
	rtc_digit(c->small, c->inner_dv, c->inner, &f);
	return rtc_digit(c->small, c->ch_dv, c->channels, &f);
}

/* LRN's channel window around channel c: [*lo, *hi] clipped to the input. */
RTC_HD void rtc_lrn_window(int64_t c, int64_t size, int64_t channels, int64_t *lo, int64_t *hi)
{
	*lo = rtc_max64(c - (size - 1) / 2, 0);
	*hi = rtc_min64(c + size / 2, channels - 1);
}

#endif
