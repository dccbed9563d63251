/*
 * rtc_index_pool.h - the pooling kernels' plan (rtc_pool.cu): the shared
 * window arithmetic (rt_index_pool.h) per flat output index, and the
 * combine rule of the max's parallel candidates.
 */
#ifndef ONNXC_RTC_INDEX_POOL_H
#define ONNXC_RTC_INDEX_POOL_H

#include "rt_index_pool.h"
#include "rtc_index.h"

/* The geometry and what a window computes, for the kernels. */
struct rtc_pool_geom {
	int mode, p, count_pad, storage_order, small;
	struct rt_pool_geom geom;
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
RT_HOST int rtc_pool_geom_of(const struct rt_pool_desc *d, struct rtc_pool_geom *g)
{
	const struct rt_pool_geom *s = &g->geom;
	memset(g, 0, sizeof *g);
	if (!rt_pool_valid(d))
		return RT_ERR_ARGUMENT;
	rt_pool_geom_of(d, &g->geom);
	for (int i = 0; i < 3; i++)
		g->dv[i] = rtc_div_of(s->out[i]);
	g->mode = rt_pool_mode_of(d);
	g->p = d->p;
	g->count_pad = d->count_include_pad;
	g->storage_order = d->storage_order;
	g->nc = d->n * d->c;
	g->total = g->nc * s->out[0] * s->out[1] * s->out[2];
	g->taps = s->k[0] * s->k[1] * s->k[2];
	g->small = g->total < RTC_SMALL;
	return RT_OK;
}

/* The window of output f (flat over [nc, out0, out1, out2]). */
RT_HD void rtc_pool_win(const struct rtc_pool_geom *g, int64_t f, struct rtc_win *w)
{
	int64_t o[3], count = 1;
	for (int d = 2; d >= 0; d--)
		o[d] = rtc_digit(g->small, g->dv[d], g->geom.out[d], &f);
	w->c = f;
	for (int d = 0; d < 3; d++) {
		struct rt_pool_taps t;
		rt_pool_valid_taps(&g->geom, d, o[d], &t);
		w->start[d] = t.start;
		w->j0[d] = t.j0;
		w->j1[d] = t.j1;
		count *= rt_pool_tap_count(&g->geom, g->count_pad, d, o[d], &t);
	}
	w->count = count;
}

/* The offset within the channel of tap (j0, j1, j2) of window w. */
RT_HD int64_t rtc_pool_off(const struct rtc_pool_geom *g, const struct rtc_win *w, int64_t j0,
                           int64_t j1, int64_t j2)
{
	return rt_pool_off(&g->geom, w->start[0], w->start[1], w->start[2], j0, j1, j2);
}

/* The number of valid taps of w, and the offset of valid tap t of them in
 * row-major order (the order the sequential loops visit). */
RT_HD int64_t rtc_pool_ntaps(const struct rtc_win *w)
{
	return (w->j1[0] - w->j0[0]) * (w->j1[1] - w->j0[1]) * (w->j1[2] - w->j0[2]);
}

RT_HD int64_t rtc_pool_tap(const struct rtc_pool_geom *g, const struct rtc_win *w, int64_t t)
{
	int64_t n2 = w->j1[2] - w->j0[2], n1 = w->j1[1] - w->j0[1];
	int64_t j2 = t % n2, j1 = t / n2 % n1, j0 = t / n2 / n1;
	return rtc_pool_off(g, w, w->j0[0] + j0, w->j0[1] + j1, w->j0[2] + j2);
}

/* The flat index ONNX reports for offset at of channel c. */
RT_HD int64_t rtc_pool_index(const struct rtc_pool_geom *g, int64_t c, int64_t at)
{
	return rt_pool_index(&g->geom, g->storage_order, c, at);
}

/* Many taps per output: a warp shares each window. */
RT_HD int rtc_pool_wide(const struct rtc_pool_geom *g) { return g->taps >= 64; }

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

#endif
