/*
 * rt_index_pool.h - pooling windows (rt_pool.c, cuda/rtc_pool.cu).
 *
 * Fewer than three spatial dims are padded in front with dims of size 1,
 * so one geometry serves 1-D, 2-D and 3-D pooling. Windows are clipped,
 * never bounds-checked per tap: along each dim the taps whose coordinate
 * start + j * dil lies inside a range form a contiguous range of kernel
 * offsets [j0, j1). Inside the input they are the valid taps; inside the
 * input and its explicit padding they are what count_include_pad divides
 * by. Clipping to the padded extent is what ceil_mode needs: its last
 * window may run past the end padding, and those taps never count.
 */
#ifndef ONNXC_RT_INDEX_POOL_H
#define ONNXC_RT_INDEX_POOL_H

#include "rt_index.h"

/* What a window computes: max, or a sum of x, |x|, x^2 or |x|^p. */
enum rt_pool_mode { RT_PM_MAX, RT_PM_AVG, RT_PM_ABS, RT_PM_SQ, RT_PM_POW };

/* The geometry with three spatial dims (leading ones of size 1). */
struct rt_pool_geom {
	int64_t in[3], k[3], out[3], st[3], dil[3], pb[3], pe[3];
	int64_t nin; /* input elements per channel */
};

/* The taps j in [j0, j1) of one window along one dim, and where it starts. */
struct rt_pool_taps {
	int64_t start, j0, j1;
};

/* Whether rt_pool takes d (dtypes aside). */
RT_HD bool rt_pool_valid(const struct rt_pool_desc *d)
{
	if (d->nsp < 1 || d->nsp > 3 || d->n < 0 || d->c < 0 || d->kind < RT_POOL_MAX ||
	    d->kind > RT_POOL_LP)
		return false;
	for (int i = 0; i < d->nsp; i++)
		if (d->in[i] < 0 || d->out[i] < 0 || d->k[i] < 0 || d->stride[i] < 1 ||
		    d->dil[i] < 1)
			return false;
	return true;
}

/* The descriptor's geometry, spatial dims right-aligned in three. */
RT_HD void rt_pool_geom_of(const struct rt_pool_desc *d, struct rt_pool_geom *g)
{
	int off = 3 - d->nsp;
	for (int i = 0; i < 3; i++) {
		int s = i - off;
		g->in[i] = s >= 0 ? d->in[s] : 1;
		g->out[i] = s >= 0 ? d->out[s] : 1;
		g->k[i] = s >= 0 ? d->k[s] : 1;
		g->st[i] = s >= 0 ? d->stride[s] : 1;
		g->dil[i] = s >= 0 ? d->dil[s] : 1;
		g->pb[i] = s >= 0 ? d->pad_begin[s] : 0;
		g->pe[i] = s >= 0 ? d->pad_end[s] : 0;
	}
	g->nin = g->in[0] * g->in[1] * g->in[2];
}

RT_HD int rt_pool_mode_of(const struct rt_pool_desc *d)
{
	return d->kind == RT_POOL_MAX   ? RT_PM_MAX
	       : d->kind == RT_POOL_AVG ? RT_PM_AVG
	       : d->p == 1              ? RT_PM_ABS
	       : d->p == 2              ? RT_PM_SQ
	                                : RT_PM_POW;
}

/* The taps of output o's window along dim d whose coordinates lie in
 * [lo, hi). */
RT_HD void rt_pool_taps_in(const struct rt_pool_geom *g, int d, int64_t o, int64_t lo, int64_t hi,
                           struct rt_pool_taps *t)
{
	int64_t s = o * g->st[d] - g->pb[d], dil = g->dil[d], k = g->k[d], j0, j1;
	if (dil == 1) { /* the usual case, without divisions */
		j0 = lo - s > 0 ? lo - s : 0;
		j1 = hi - s > 0 ? hi - s : 0;
	} else {
		j0 = s >= lo ? 0 : (lo - s + dil - 1) / dil;
		j1 = s >= hi ? 0 : (hi - s + dil - 1) / dil;
	}
	t->start = s;
	t->j0 = j0 < k ? j0 : k;
	t->j1 = j1 < k ? j1 : k;
	if (t->j1 < t->j0)
		t->j1 = t->j0;
}

/* The valid taps (inside the input) of output o along dim d. */
RT_HD void rt_pool_valid_taps(const struct rt_pool_geom *g, int d, int64_t o,
                              struct rt_pool_taps *t)
{
	rt_pool_taps_in(g, d, o, 0, g->in[d], t);
}

/* Dim d's share of the average's divisor for output o whose valid taps
 * are valid: those taps, or with count_pad the taps inside the padded
 * extent. */
RT_HD int64_t rt_pool_tap_count(const struct rt_pool_geom *g, int count_pad, int d, int64_t o,
                                const struct rt_pool_taps *valid)
{
	struct rt_pool_taps t;
	if (!count_pad)
		return valid->j1 - valid->j0;
	rt_pool_taps_in(g, d, o, -g->pb[d], g->in[d] + g->pe[d], &t);
	return t.j1 - t.j0;
}

/* The offset within a channel of tap (j0, j1, j2) of a window starting at
 * (s0, s1, s2). */
RT_HD int64_t rt_pool_off(const struct rt_pool_geom *g, int64_t s0, int64_t s1, int64_t s2,
                          int64_t j0, int64_t j1, int64_t j2)
{
	return ((s0 + j0 * g->dil[0]) * g->in[1] + s1 + j1 * g->dil[1]) * g->in[2] + s2 +
	       j2 * g->dil[2];
}

/* The flat index ONNX reports for input offset at of channel c. */
RT_HD int64_t rt_pool_index(const struct rt_pool_geom *g, int storage_order, int64_t c, int64_t at)
{
	if (storage_order) { /* column-major: the only case that needs divisions */
		int64_t i2 = at % g->in[2], i1 = at / g->in[2] % g->in[1],
		        i0 = at / (g->in[1] * g->in[2]);
		at = i0 + g->in[0] * (i1 + g->in[1] * i2);
	}
	return c * g->nin + at;
}

#endif
