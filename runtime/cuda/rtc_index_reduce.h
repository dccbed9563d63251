/*
 * rtc_index_reduce.h - the reduction kernels' plans (rtc_reduce.cu): the
 * shared canonical form (rt_index_reduce.h) with fast dividers, the
 * offsets a thread decodes from an output and element number, the group
 * sizes, and the combine rule of ArgMax/ArgMin's parallel candidates.
 */
#ifndef ONNXC_RTC_INDEX_REDUCE_H
#define ONNXC_RTC_INDEX_REDUCE_H

#include "rt_index_reduce.h"
#include "rtc_index.h"

/* The canonical form c and dividers of its dims: output k starts at
 * rtc_red_base, element e of it is at rtc_red_elem from there. */
struct rtc_red {
	struct rt_red c;
	int small;
	struct rtc_div kdv[8], rdv[8], inner_dv;
};

/* Fills r; returns 0 when some dim is 0 (then only c.nout and c.nred hold). */
RT_HOST int rtc_red_canon(const struct rt_reduce_desc *d, struct rtc_red *r)
{
	memset(r, 0, sizeof *r);
	if (!rt_red_canon(d, &r->c))
		return 0;
	r->small = r->c.nout * r->c.nred < RTC_SMALL;
	for (int i = 0; i < r->c.nk; i++)
		r->kdv[i] = rtc_div_of(r->c.kdims[i]);
	for (int i = 0; i < r->c.nr; i++)
		r->rdv[i] = rtc_div_of(r->c.rdims[i]);
	r->inner_dv = rtc_div_of(r->c.inner);
	return 1;
}

/* Offset of multi-index number j over dims (dividers dv) with strides st:
 * rt_red_offset's, with a digit per dim decoded by rtc_digit (the small
 * test stays inside the loop: hoisting it lets nvcc version every loop
 * that calls this, a quarter more code for the same results). */
RT_HD int64_t rtc_red_offset(int small, int64_t j, const int64_t *dims, const struct rtc_div *dv,
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
RT_HD int64_t rtc_red_base(const struct rtc_red *r, int64_t k)
{
	int64_t c = 0;
	if (!r->c.rows)
		c = rtc_digit(r->small, r->inner_dv, r->c.inner, &k);
	return (r->c.nk ? rtc_red_offset(r->small, k, r->c.kdims, r->kdv, r->c.kst, r->c.nk) : 0) +
	       c;
}

/* The offset of element e (of nred) of an output, from its base. */
RT_HD int64_t rtc_red_elem(const struct rtc_red *r, int64_t e)
{
	int64_t pos = 0;
	if (r->c.rows) {
		if (r->c.nseg == 1)
			return e;
		pos = rtc_digit(r->small, r->inner_dv, r->c.inner, &e);
	}
	return pos +
	       (r->c.nr ? rtc_red_offset(r->small, e, r->c.rdims, r->rdv, r->c.rst, r->c.nr) : 0);
}

/* The cols form's blocks: tx columns of ty segment lanes (256 threads). */
RT_HD int rtc_red_cols_tx(int64_t inner)
{
	int tx = 1;
	while (tx < 32 && tx < inner)
		tx *= 2;
	return tx;
}

/* Threads per output in the rows form: 1, a warp or a block. */
RT_HD int rtc_red_group(int64_t nred) { return nred <= 16 ? 1 : nred <= 4096 ? 32 : RTC_ROW_BLOCK; }

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
RT_HD int rtc_axis_serial(int64_t lanes, int64_t axis, int sm_count)
{
	return lanes >= (int64_t)(sm_count > 0 ? sm_count : 1) * 256 || axis <= 32;
}

/* ------------------------------------------------------------------------ */
/* TopK (rt_reduce.c)                                                       */
/* ------------------------------------------------------------------------ */

/*
 * The reference's order (rt_reduce.c's TOPK_LANE: by value, a NaN above
 * every number and equal to another NaN, -0 equal to +0; smallest reverses
 * the values, not the ties; then the lower position) as an unsigned rank:
 * element i is better than j when its rank is higher, or equal and i < j.
 * A key maps a value to bits-wide unsigned integers in the value's order
 * (floats through their sign-magnitude bits, NaN to the largest key,
 * signed integers offset by their minimum); the rank is the key, or its
 * complement for smallest.
 *
 * The block kernel (a block per lane) finds the k-th best rank by radix
 * select, 8 bits a pass from the top: each pass counts the candidates
 * (the ranks that agree with the prefix found so far) per byte and
 * rtc_topk_bucket picks the byte of the k-th best. The k best positions
 * are then those ranked above that threshold and the first `need` of
 * those equal to it, compacted in position order; a bitonic network
 * (rtc_bitonic_pair) sorts them best first, and the values are gathered.
 */
RT_HD uint64_t rtc_topk_key_f32(float v)
{
	uint32_t u;
	if (v != v)
		return 0xffffffffu;
	if (v == 0)
		v = 0; /* -0 ranks with +0 */
	memcpy(&u, &v, sizeof u);
	return u >> 31 ? (uint32_t)~u : u | 0x80000000u;
}

RT_HD uint64_t rtc_topk_key_f64(double v)
{
	uint64_t u;
	if (v != v)
		return ~0ull;
	if (v == 0)
		v = 0;
	memcpy(&u, &v, sizeof u);
	return u >> 63 ? ~u : u | (1ull << 63);
}

/* A signed integer of bits bits (8 to 64). */
RT_HD uint64_t rtc_topk_key_signed(int64_t v, int bits)
{
	return bits == 64 ? (uint64_t)v ^ (1ull << 63) : (uint64_t)(v + ((int64_t)1 << (bits - 1)));
}

RT_HD uint64_t rtc_topk_rank(uint64_t key, int bits, int smallest)
{
	uint64_t all = bits == 64 ? ~0ull : (1ull << bits) - 1;
	return smallest ? ~key & all : key;
}

/* The byte (of 256 counts of candidates, hist) that holds the *need-th
 * best candidate; *need becomes its place among that byte's (1: first). */
RT_HD int rtc_topk_bucket(const unsigned long long *hist, int64_t *need)
{
	for (int b = 255; b > 0; b--) {
		if ((int64_t)hist[b] >= *need)
			return b;
		*need -= (int64_t)hist[b];
	}
	return 0;
}

/*
 * Comparator t (of n2 / 2, n2 the power of two at or above the count) of
 * a bitonic sorting network's phase (size, j), phases in the order
 * size = 2, 4, ..., n2 and j = size / 2, ..., 1: the positions a < b it
 * compares, putting the better at a. j = size / 2 is the flip (each block
 * of size against its mirror image), the rest are half-cleaners. Every
 * comparator leaves the larger of its pair at the higher position, so the
 * positions past the count act as the worst values and stay put: a
 * comparator with b at or past the count is skipped.
 */
RT_HD void rtc_bitonic_pair(int64_t t, int64_t size, int64_t j, int64_t *a, int64_t *b)
{
	int64_t blk = t / j, off = t % j;
	if (2 * j == size) {
		*a = blk * size + off;
		*b = blk * size + size - 1 - off;
	} else {
		*a = blk * 2 * j + off;
		*b = *a + j;
	}
}

/* Where lane's values start in x ([outer, axis, inner]) and its results in
 * the outputs ([outer, k, inner]). */
RT_HD void rtc_topk_bases(const struct rtc_lanes *l, int64_t k, int64_t lane, int64_t *xb,
                          int64_t *yb)
{
	int64_t i = rtc_digit(l->small, l->inner_dv, l->inner, &lane);
	*xb = lane * l->axis * l->inner + i;
	*yb = lane * k * l->inner + i;
}

#endif
