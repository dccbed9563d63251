/*
 * rtc_index.h - the index arithmetic of the CUDA kernels (runtime/cuda/rtc_*.cu)
 * that is the GPU's own: launch configuration, fast division of flat
 * indices, the dtypes a step computes in, [outer, axis, inner] lanes and
 * channels. The families, named like the CPU files, are rtc_index_pool.h,
 * rtc_index_reduce.h, rtc_index_move.h and rtc_index_resize.h.
 *
 * The semantics (window taps, coordinate transforms, canonical forms,
 * copy simplification) are not here but in the runtime's shared headers
 * (runtime/rt_index*.h), one copy the CPU runtime calls too. What the CUDA
 * headers add are the "plans" (RT_HOST): a descriptor turned on the host
 * into a flat struct the kernels receive by value, with the shared
 * arithmetic's results and fast dividers; and the per-thread decoding of a
 * flat index into the offsets the shared functions describe.
 *
 * Everything here is plain C that compiles as host code (gcc, for the unit
 * test tests/unit/test_rtc_index.c) and as __host__ __device__ code under
 * nvcc (RT_HD). The unit test runs whole operations over small tensors on
 * the host through these functions and compares with the CPU runtime, so
 * the arithmetic the kernels use is verified without a GPU.
 *
 * Index spaces below 2^31 elements ("small") decode a flat index with
 * 32-bit multiply-high division (rtc_div, the Granlund-Montgomery method);
 * larger ones use 64-bit division.
 */
#ifndef ONNXC_RTC_INDEX_H
#define ONNXC_RTC_INDEX_H

#include "onnxc_rt.h"
#include "rt_index.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define RTC_MAXR      16          /* copy ranks: a tile views rank 8 as 16 */
#define RTC_THREADS   256         /* threads per block of the elementwise kernels */
#define RTC_WAVES     16          /* blocks per multiprocessor at most */
#define RTC_SMALL     (1LL << 31) /* index spaces below this decode in 32 bits */
#define RTC_TILE      32          /* transpose tile edge */
#define RTC_ROW_BLOCK 512         /* threads on one row in block-per-row kernels */

/* ------------------------------------------------------------------------ */
/* Launch configuration                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Blocks for items work items, per_block a block, in grid-stride loops:
 * enough to cover the work, at most RTC_WAVES per multiprocessor (the loops
 * do the rest), at least 1.
 */
RT_HD int rtc_blocks(int64_t items, int per_block, int sm_count)
{
	int64_t need = rt_ceil_div(items, per_block);
	int64_t cap = (int64_t)(sm_count > 0 ? sm_count : 1) * RTC_WAVES;
	need = rt_min64(need, cap);
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
RT_HD struct rtc_rows rtc_rows_group(int64_t rows, int group, int sm_count)
{
	struct rtc_rows p;
	p.group = group;
	p.per_block = group >= RTC_ROW_BLOCK ? 1 : RTC_THREADS / group;
	p.threads = p.group * p.per_block;
	p.blocks = rtc_blocks(rows, p.per_block, sm_count);
	return p;
}

RT_HD struct rtc_rows rtc_rows_plan(int64_t rows, int64_t cols, int sm_count)
{
	return rtc_rows_group(rows, cols <= 1024 ? 32 : RTC_ROW_BLOCK, sm_count);
}

RT_HD int64_t rtc_rows_first(const struct rtc_rows *p, int64_t block, int64_t thread)
{
	return block * p->per_block + thread / p->group;
}

RT_HD int64_t rtc_rows_step(const struct rtc_rows *p) { return (int64_t)p->blocks * p->per_block; }

/* ------------------------------------------------------------------------ */
/* Fast division of indices below 2^31                                      */
/* ------------------------------------------------------------------------ */

/* n / d for n < 2^31: q = (umulhi(n, mul) + n) >> shift. */
struct rtc_div {
	uint32_t d, mul, shift;
};

RT_HD struct rtc_div rtc_div_of(int64_t d)
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

RT_HD uint32_t rtc_umulhi(uint32_t a, uint32_t b)
{
#ifdef __CUDA_ARCH__
	return __umulhi(a, b);
#else
	return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

RT_HD uint32_t rtc_div_q(struct rtc_div v, uint32_t n)
{
	return (rtc_umulhi(n, v.mul) + n) >> v.shift;
}

/* Returns n / v.d and sets *rem = n % v.d. */
RT_HD uint32_t rtc_divmod(struct rtc_div v, uint32_t n, uint32_t *rem)
{
	uint32_t q = rtc_div_q(v, n);
	*rem = n - q * v.d;
	return q;
}

/* The innermost digit of *f over a dim of size d (or divider v when
 * small); *f becomes the rest. */
RT_HD int64_t rtc_digit(int small, struct rtc_div v, int64_t d, int64_t *f)
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

RT_HD int rtc_is_half(int dtype) { return dtype == RT_F16 || dtype == RT_BF16; }

/* The float dtypes a step computes on in FP32 (its storage is one of them). */
RT_HD int rtc_is_f32ish(int dtype) { return dtype == RT_F32 || rtc_is_half(dtype); }

RT_HD int rtc_is_float(int dtype) { return rtc_is_f32ish(dtype) || dtype == RT_F64; }

/*
 * The result dtype of a step that reads dtype and was asked for ydtype
 * (0: the same), or 0 when the pair is not allowed: FP32 and the halves
 * convert among themselves, FP64 and the integers write their own type.
 */
RT_HD int rtc_out_dtype(int dtype, int ydtype)
{
	if (ydtype == 0 || ydtype == dtype)
		return dtype;
	if (rtc_is_f32ish(dtype) && rtc_is_f32ish(ydtype))
		return ydtype;
	return 0;
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

RT_HD struct rtc_lanes rtc_lanes_of(int64_t outer, int64_t axis, int64_t inner)
{
	struct rtc_lanes l;
	l.lanes = outer * inner;
	l.axis = axis;
	l.inner = inner;
	l.small = l.lanes < RTC_SMALL;
	l.inner_dv = rtc_div_of(inner);
	return l;
}

RT_HD int64_t rtc_lane_base(const struct rtc_lanes *l, int64_t lane)
{
	int64_t i = rtc_digit(l->small, l->inner_dv, l->inner, &lane);
	return lane * l->axis * l->inner + i;
}

/* The axis position of scan step p (CumSum's order). */
RT_HD int64_t rtc_scan_pos(int64_t axis, int reverse, int64_t p)
{
	return reverse ? axis - 1 - p : p;
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

RT_HD struct rtc_chan rtc_chan_of(int64_t outer, int64_t channels, int64_t inner)
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
RT_HD int64_t rtc_channel_of(const struct rtc_chan *c, int64_t f)
{
	rtc_digit(c->small, c->inner_dv, c->inner, &f);
	return rtc_digit(c->small, c->ch_dv, c->channels, &f);
}

/* LRN's channel window around channel c: [*lo, *hi] clipped to the input. */
RT_HD void rtc_lrn_window(int64_t c, int64_t size, int64_t channels, int64_t *lo, int64_t *hi)
{
	*lo = rt_max64(c - (size - 1) / 2, 0);
	*hi = rt_min64(c + size / 2, channels - 1);
}

#endif
