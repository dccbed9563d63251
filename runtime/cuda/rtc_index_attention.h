/*
 * rtc_index_attention.h - the linear attention kernel's plan
 * (rtc_attention.cu, rt_attention.c's semantics).
 *
 * The state S [dk, dv] of a (batch, kv head) item evolves column by
 * column: every step's update of column m (decay, the delta rule's
 * correction, key (x) value) and its reads (q^T S) involve column m alone.
 * So the kernel gives each column a group of `parts` adjacent threads of a
 * warp (a power of two, at most 32) that hold the column in registers,
 * RTC_LINATTN_DK key dimensions each - part p holds dims p, p + parts,
 * p + 2 parts, ... (interleaved, so the block's reads of the staged key
 * and query vectors are consecutive) - and sum their partial dot products
 * with xor shuffles. A block holds RTC_LINATTN_THREADS / parts columns of
 * one item; the grid is items x column blocks, every step staged through
 * shared memory once per block.
 *
 * Plain C for the host unit test (tests/unit/test_rtc_index.c emulates the
 * kernel with these functions against rt_linear_attention) and RT_HD for
 * nvcc.
 */
#ifndef ONNXC_RTC_INDEX_ATTENTION_H
#define ONNXC_RTC_INDEX_ATTENTION_H

#include "onnxc_rt_cuda.h"
#include "rtc_index.h"

#define RTC_LINATTN_DK      32  /* key dims a thread holds */
#define RTC_LINATTN_THREADS 256 /* threads per block */
/* RTC_LINATTN_MAX_DK (onnxc_rt_cuda.h): 32 parts of RTC_LINATTN_DK */
#if RTC_LINATTN_MAX_DK != RTC_LINATTN_DK * 32
#error "a column's parts must fill at most a warp"
#endif

struct rtc_linattn {
	int parts;      /* threads per column */
	int cols;       /* columns per block */
	int col_blocks; /* blocks per item */
	int64_t items;  /* batch * kv_heads */
};

/* Fills p; 0 when dk is above RTC_LINATTN_MAX_DK or a size is not valid. */
RT_HOST int rtc_linattn_plan(const struct rt_linattn_desc *d, struct rtc_linattn *p)
{
	memset(p, 0, sizeof *p);
	if (d->dk <= 0 || d->dk > RTC_LINATTN_MAX_DK || d->dv <= 0 || d->batch < 0 ||
	    d->kv_heads <= 0)
		return 0;
	p->parts = 1;
	while ((int64_t)p->parts * RTC_LINATTN_DK < d->dk)
		p->parts *= 2;
	p->cols = RTC_LINATTN_THREADS / p->parts;
	p->col_blocks = (int)rt_ceil_div(d->dv, p->cols);
	p->items = d->batch * d->kv_heads;
	return 1;
}

/* Thread tid of column block cb: its column (may be past dv: then it only
 * helps stage and shuffle) and its part. */
RT_HD void rtc_linattn_thread(const struct rtc_linattn *p, int cb, int tid, int64_t *col, int *part)
{
	*part = tid % p->parts;
	*col = (int64_t)cb * p->cols + tid / p->parts;
}

/* The key dim of a part's register j. */
RT_HD int64_t rtc_linattn_dim(const struct rtc_linattn *p, int part, int j)
{
	return part + (int64_t)p->parts * j;
}

/* Where the decay (or erase gate) of step bt, kv head h and key dim i is:
 * one value per head when width is kv_heads, else one per key dim. */
RT_HD int64_t rtc_linattn_gate(int64_t width, int64_t kv_heads, int64_t dk, int64_t bt, int64_t h,
                               int64_t i)
{
	return bt * width + (width == kv_heads ? h : h * dk + i);
}

#endif
