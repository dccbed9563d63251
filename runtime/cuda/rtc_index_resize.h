/*
 * rtc_index_resize.h - the resize kernels' plan (rtc_resize.cu): the
 * descriptor, its input strides, which dims are identities (found once on
 * the host) and the dividers of the output dims. The coordinates and taps
 * a thread computes are the CPU's (rt_index_resize.h).
 */
#ifndef ONNXC_RTC_INDEX_RESIZE_H
#define ONNXC_RTC_INDEX_RESIZE_H

#include "rt_index_resize.h"
#include "rtc_index.h"

struct rtc_resize {
	struct rt_resize_desc d;
	int small;
	int64_t total;
	int64_t xs[8];
	int identity[8];
	struct rtc_div dv[8];
};

/* The taps of output coordinate x along dim i. */
RT_HD void rtc_resize_taps(const struct rtc_resize *p, int i, int64_t x, struct rt_resize_taps *t)
{
	rt_resize_dim_taps(&p->d, i, p->xs[i], x, t);
}

/* The plan of an rt_resize (dtype checked by the caller); total 0 when the
 * output is empty. */
RT_HOST int rtc_resize_plan(const struct rt_resize_desc *d, struct rtc_resize *p)
{
	int64_t nx = 1, ny = 1;
	memset(p, 0, sizeof *p);
	p->total = 0;
	if (!rt_resize_valid(d))
		return RT_ERR_ARGUMENT;
	for (int i = 0; i < d->rank; i++) {
		nx *= d->in_dims[i];
		ny *= d->out_dims[i];
	}
	p->d = *d;
	for (int i = 0; i < d->rank; i++)
		p->dv[i] = rtc_div_of(d->out_dims[i]);
	rt_dense_strides(d->in_dims, d->rank, p->xs);
	p->total = ny;
	p->small = ny < RTC_SMALL && nx < RTC_SMALL;
	for (int i = 0; i < d->rank; i++)
		p->identity[i] = nx > 0 && ny > 0 && rt_resize_identity(d, i);
	return RT_OK;
}

#endif
