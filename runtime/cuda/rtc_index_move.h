/*
 * rtc_index_move.h - the data movement kernels' plans (rtc_move.cu):
 * strided copies and tiles simplified as the CPU does (rt_index_move.h),
 * widened to 16-byte elements where aligned, transposes in tiles; gathers,
 * pad and trilu, each element's source offset from its flat index.
 */
#ifndef ONNXC_RTC_INDEX_MOVE_H
#define ONNXC_RTC_INDEX_MOVE_H

#include "rt_index_move.h"
#include "rtc_index.h"

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

/* Moves wide elements when the innermost run is contiguous on both sides
 * and everything (pointers x, y included) is aligned to the width. */
RT_HOST void rtc_xfer_widen(struct rtc_xfer *t, uintptr_t x, uintptr_t y)
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

/* A transpose (rt_xfer_transpose_dim) with a dim moved next to the
 * innermost; tiles only when both are long enough and the element size
 * is one the tile kernel moves. */
RT_HOST void rtc_xfer_pick_transpose(struct rtc_xfer *t)
{
	int last = t->rank - 1, in_x, j;
	t->tposed = 0;
	if (t->esize > 8 || (t->esize & (t->esize - 1)))
		return;
	j = rt_xfer_transpose_dim(t->rank, t->ss, t->ds, &in_x);
	if (j < 0 || t->n[j] < 16 || t->n[last] < 16)
		return;
	rt_xfer_move_dim(t->rank, t->n, t->ss, t->ds, j);
	t->tposed = in_x ? 1 : 2;
}

/* Finishes a plan whose rank, esize, n, ss, ds, src0, dst0 are set:
 * simplification, widening or tiles, dividers. */
RT_HOST void rtc_xfer_plan(struct rtc_xfer *t, uintptr_t x, uintptr_t y)
{
	t->rank = rt_xfer_simplify(t->rank, t->n, t->ss, t->ds);
	rtc_xfer_pick_transpose(t);
	if (!t->tposed)
		rtc_xfer_widen(t, x, y);
	t->total = rt_count(t->n, t->rank);
	t->small = t->total < RTC_SMALL;
	for (int d = 0; d < t->rank; d++)
		t->dv[d] = rtc_div_of(t->n[d]);
}

/* The plan of an rt_copy; RT_ERR_ARGUMENT as rt_copy, RT_OK with total 0
 * when there is nothing to copy. */
RT_HOST int rtc_copy_plan(const struct rt_copy_desc *d, uintptr_t x, uintptr_t y,
                          struct rtc_xfer *t)
{
	memset(t, 0, sizeof *t);
	t->total = 0;
	if (d->esize < 1 || d->rank < 0 || d->rank > 8 || rt_count(d->dims, d->rank) < 0)
		return RT_ERR_ARGUMENT;
	if (rt_count(d->dims, d->rank) == 0)
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
		rt_dense_strides(d->dims, d->rank, t->ds);
	rtc_xfer_plan(t, x, y);
	return RT_OK;
}

/* The plan of an rt_tile: output dim k is [repeats, in] with source
 * strides [0, stride]. */
RT_HOST int rtc_tile_plan(const struct rt_tile_desc *d, uintptr_t x, uintptr_t y,
                          struct rtc_xfer *t)
{
	int64_t xs[8];
	memset(t, 0, sizeof *t);
	t->total = 0;
	if (d->esize < 1 || d->rank < 0 || d->rank > 8 || rt_count(d->in_dims, d->rank) < 0 ||
	    rt_count(d->repeats, d->rank) < 0)
		return RT_ERR_ARGUMENT;
	rt_dense_strides(d->in_dims, d->rank, xs);
	t->rank = 2 * d->rank;
	t->esize = d->esize;
	t->src0 = t->dst0 = 0;
	for (int k = 0; k < d->rank; k++) {
		t->n[2 * k] = d->repeats[k];
		t->n[2 * k + 1] = d->in_dims[k];
		t->ss[2 * k] = 0;
		t->ss[2 * k + 1] = xs[k];
	}
	if (rt_count(t->n, t->rank) < 0)
		return RT_ERR_ARGUMENT;
	if (rt_count(t->n, t->rank) == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	rt_dense_strides(t->n, t->rank, t->ds);
	rtc_xfer_plan(t, x, y);
	return RT_OK;
}

/* The source and destination offsets of element f. */
RT_HD void rtc_xfer_at(const struct rtc_xfer *t, int small, int64_t f, int64_t *so, int64_t *dof)
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

RT_HD struct rtc_tmap rtc_xfer_tmap(const struct rtc_xfer *t)
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
	m.tiles = outer * rt_ceil_div(m.na, RTC_TILE) * rt_ceil_div(m.nb, RTC_TILE);
	return m;
}

/* Tile number k: its outer offsets and first (a, b). */
RT_HD void rtc_xfer_tile(const struct rtc_xfer *t, const struct rtc_tmap *m, int64_t k, int64_t *so,
                         int64_t *dof, int64_t *a0, int64_t *b0)
{
	int64_t ta = rt_ceil_div(m->na, RTC_TILE), tb = rt_ceil_div(m->nb, RTC_TILE);
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

RT_HOST int rtc_gather_plan(const struct rt_gather_desc *d, uintptr_t x, uintptr_t y,
                            struct rtc_gather *g)
{
	int64_t xd[3] = { d->outer, d->axis, d->inner }, yd[3] = { d->outer, d->nidx, d->inner };
	memset(g, 0, sizeof *g);
	if (d->esize < 1 || (d->index_dtype != RT_I32 && d->index_dtype != RT_I64) ||
	    rt_count(xd, 3) < 0 || rt_count(yd, 3) < 0)
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
RT_HD int64_t rtc_gather_at(const struct rtc_gather *g, int64_t f, int64_t *j)
{
	int64_t i = rtc_digit(g->small, g->inner_dv, g->inner, &f);
	*j = rtc_digit(g->small, g->nidx_dv, g->nidx, &f);
	return f * g->axis * g->inner + i;
}

/* An index normalized into [0, dim), or -1 when out of range. */
RT_HD int64_t rtc_norm_index(int64_t k, int64_t dim)
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

RT_HOST int rtc_gel_plan(const struct rt_gather_elements_desc *d, struct rtc_gel *g)
{
	memset(g, 0, sizeof *g);
	if (d->esize < 1 || (d->index_dtype != RT_I32 && d->index_dtype != RT_I64) || d->rank < 1 ||
	    d->rank > 8 || d->axis < 0 || d->axis >= d->rank ||
	    rt_count(d->data_dims, d->rank) < 0 || rt_count(d->index_dims, d->rank) < 0)
		return RT_ERR_ARGUMENT;
	for (int k = 0; k < d->rank; k++)
		if (k != d->axis && d->index_dims[k] > d->data_dims[k])
			return RT_ERR_INDEX;
	g->esize = d->esize;
	g->index_dtype = d->index_dtype;
	g->rank = d->rank;
	g->axis = d->axis;
	g->total = rt_count(d->index_dims, d->rank);
	g->small = g->total < RTC_SMALL && rt_count(d->data_dims, d->rank) < RTC_SMALL;
	g->axis_n = d->data_dims[d->axis];
	rt_dense_strides(d->data_dims, d->rank, g->xs);
	g->axis_stride = g->xs[d->axis];
	for (int k = 0; k < d->rank; k++) {
		g->idims[k] = d->index_dims[k];
		g->dv[k] = rtc_div_of(d->index_dims[k]);
	}
	return RT_OK;
}

/* The source offset of element f without the axis coordinate. */
RT_HD int64_t rtc_gel_base(const struct rtc_gel *g, int64_t f)
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
RT_HOST int rtc_scel_plan(const struct rt_scatter_elements_desc *d, struct rtc_gel *g)
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

/* The plan of an rt_pad (total 0: nothing to write). */
RT_HOST int rtc_pad_plan(const struct rt_pad_desc *d, uintptr_t x, uintptr_t y, struct rtc_pad *p)
{
	int k = 0;
	memset(p, 0, sizeof *p);
	p->total = 0;
	if (rt_pad_shape(d, p->in, p->out, p->pb) != RT_OK)
		return RT_ERR_ARGUMENT;
	p->esize = d->esize;
	p->mode = d->mode;
	for (int i = 0; i < 8; i++)
		p->value[i] = d->value[i];
	p->total = rt_count(p->out, d->rank);
	if (p->total <= 0 || rt_count(p->in, d->rank) < 0) {
		int bad = p->total < 0;
		p->total = 0;
		return bad ? RT_ERR_ARGUMENT : RT_OK;
	}
	if (!x || !y) {
		p->total = 0;
		return RT_ERR_ARGUMENT;
	}
	if (rt_count(p->in, d->rank) == 0)
		p->mode = RT_PAD_CONSTANT;
	k = rt_pad_simplify(d->rank, p->mode, p->in, p->out, p->pb);
	p->rank = k;
	rt_dense_strides(p->in, k, p->xs);
	p->small = p->total < RTC_SMALL;
	for (int i = 0; i < k; i++)
		p->dv[i] = rtc_div_of(p->out[i]);
	return RT_OK;
}

/* The source offset of output element f, -1 for the pad value. */
RT_HD int64_t rtc_pad_at(const struct rtc_pad *p, int64_t f)
{
	int64_t off = 0;
	int inside = 1;
	for (int d = p->rank - 1; d >= 0; d--) {
		int64_t i = rtc_digit(p->small, p->dv[d], p->out[d], &f);
		int64_t s = rt_pad_source(p->mode, i - p->pb[d], p->in[d]);
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

RT_HOST int rtc_trilu_plan(const struct rt_trilu_desc *d, uintptr_t x, uintptr_t y,
                           struct rtc_trilu *t)
{
	int64_t dims[4] = { d->batch, d->rows, d->cols, d->esize };
	memset(t, 0, sizeof *t);
	t->total = 0;
	if (d->esize < 1 || rt_count(dims, 4) < 0)
		return RT_ERR_ARGUMENT;
	if (rt_count(dims, 3) == 0)
		return RT_OK;
	if (!x || !y)
		return RT_ERR_ARGUMENT;
	t->esize = d->esize;
	t->upper = d->upper;
	t->rows = d->rows;
	t->cols = d->cols;
	t->k = rt_trilu_k(d);
	t->total = rt_count(dims, 3);
	t->small = t->total < RTC_SMALL;
	t->rows_dv = rtc_div_of(t->rows);
	t->cols_dv = rtc_div_of(t->cols);
	return RT_OK;
}

/* Whether element f keeps its value (else 0). */
RT_HD int rtc_trilu_keep(const struct rtc_trilu *t, int64_t f)
{
	int64_t c = rtc_digit(t->small, t->cols_dv, t->cols, &f);
	int64_t r = rtc_digit(t->small, t->rows_dv, t->rows, &f), c0, c1;
	rt_trilu_cols(t->upper, t->k, r, t->cols, &c0, &c1);
	return c >= c0 && c < c1;
}

#endif
