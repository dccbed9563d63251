/*
 * rt_index_reduce.h - a reduction's canonical form, primitive and final
 * step (rt_reduce.c, cuda/rtc_reduce.cu).
 *
 * The canonical form: dims of size 1 are dropped (reducing or keeping them
 * changes nothing) and neighbours that are both reduced or both kept are
 * merged, leaving alternating blocks such as [kept, reduced, kept]. Two
 * layouts cover every case:
 *
 *   rows  the innermost block is reduced: output k reduces nseg segments
 *         of inner contiguous elements, one segment per index of the other
 *         reduced blocks;
 *   cols  the innermost block is kept: output a * inner + c reduces nseg
 *         elements inner apart, one per index of the reduced blocks.
 *
 * Output k's data start at the offset of its index over the kept blocks
 * (rt_red_kept_off), a segment at the offset of its index over the
 * reduced blocks (rt_red_seg_off). Every kind is one of seven primitives
 * followed by a final step (rt_red_finish).
 */
#ifndef ONNXC_RT_INDEX_REDUCE_H
#define ONNXC_RT_INDEX_REDUCE_H

#include "rt_index.h"

#include <math.h>
#include <string.h>

struct rt_red {
	int dtype, kind;
	int rows;                 /* innermost block reduced (else kept) */
	int nk, nr;               /* kept / reduced blocks other than the inner one */
	int64_t kdims[8], kst[8]; /* kept blocks and their element strides in x */
	int64_t rdims[8], rst[8]; /* reduced blocks (the segments) and strides */
	int64_t inner;            /* length of the innermost block */
	int64_t nout, nseg, nred; /* outputs, segments per output, elements per output */
};

/*
 * Fills r from the descriptor (its dims checked non-negative). Returns
 * false when some dim is 0; then only nout (the number of outputs) and
 * nred are meaningful.
 */
RT_HOST bool rt_red_canon(const struct rt_reduce_desc *d, struct rt_red *r)
{
	int64_t dims[8], st[8], s = 1;
	bool red[8];
	int n = 0;
	memset(r, 0, sizeof *r);
	r->dtype = d->dtype;
	r->kind = d->kind;
	r->nout = r->nred = 1;
	r->inner = r->nseg = 1;
	for (int i = 0; i < d->rank; i++) {
		if ((d->axes_mask >> i) & 1)
			r->nred *= d->dims[i];
		else
			r->nout *= d->dims[i];
	}
	if (r->nout == 0 || r->nred == 0)
		return false;
	for (int i = 0; i < d->rank; i++) {
		bool ri = (d->axes_mask >> i) & 1;
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
	return true;
}

/* Offset of multi-index number j over dims with element strides st. */
RT_HD int64_t rt_red_offset(int64_t j, const int64_t *dims, const int64_t *st, int n)
{
	int64_t off = 0;
	if (n == 1)
		return j * st[0];
	for (int i = n - 1; i >= 0; i--) {
		off += j % dims[i] * st[i];
		j /= dims[i];
	}
	return off;
}

/* Where the data of kept index a start (rows: a is the output). */
RT_HD int64_t rt_red_kept_off(const struct rt_red *r, int64_t a)
{
	return r->nk ? rt_red_offset(a, r->kdims, r->kst, r->nk) : 0;
}

/* Where segment j of an output starts, from the output's data. */
RT_HD int64_t rt_red_seg_off(const struct rt_red *r, int64_t j)
{
	return r->nr ? rt_red_offset(j, r->rdims, r->rst, r->nr) : 0;
}

/* The seven primitives every kind reduces with, then finishes. */
enum rt_red_prim {
	RT_PRIM_SUM,  /* x */
	RT_PRIM_ABS,  /* |x| */
	RT_PRIM_SQ,   /* x^2 */
	RT_PRIM_EXP,  /* exp(x - shift) */
	RT_PRIM_PROD, /* product */
	RT_PRIM_MAX,
	RT_PRIM_MIN,
	RT_PRIM_COUNT
};

RT_HD int rt_red_prim_of(int kind)
{
	switch (kind) {
	case RT_REDUCE_L1: return RT_PRIM_ABS;
	case RT_REDUCE_L2:
	case RT_REDUCE_SUM_SQUARE: return RT_PRIM_SQ;
	case RT_REDUCE_PROD: return RT_PRIM_PROD;
	case RT_REDUCE_MAX: return RT_PRIM_MAX;
	case RT_REDUCE_MIN: return RT_PRIM_MIN;
	case RT_REDUCE_LOG_SUM_EXP: return RT_PRIM_EXP;
	default: return RT_PRIM_SUM;
	}
}

/* double -> int64 without undefined behaviour: NaN is 0, overflow
 * saturates (as the reference stores doubles into integers). */
RT_HD int64_t rt_red_to_i64(double v)
{
	if (v != v)
		return 0;
	if (v >= 9.2233720368547758e18)
		return INT64_MAX;
	if (v <= -9.2233720368547758e18)
		return INT64_MIN;
	return (int64_t)v;
}

/* LogSumExp's shift: the maximum, or 0 when it is not finite (then the
 * sum of exponentials is 0 or inf and the result -inf or inf, not NaN). */
RT_HD double rt_red_lse_shift(double max) { return max - max == 0 ? max : 0; }

/*
 * A primitive's result (f for floats; i, and f = (double)i, for integers)
 * finished into the kind's value: mean divides, L2 takes the square root,
 * LogSum the log, LogSumExp adds the shift back; L2, LogSum and LogSumExp
 * of integers go through double and truncate, as the reference.
 */
RT_HD void rt_red_finish(int kind, int is_float, int64_t nred, double shift, double *f, int64_t *i)
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
		*i = rt_red_to_i64(*f);
}

#endif
