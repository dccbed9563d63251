/*
 * rt_index_move.h - data movement's index arithmetic (rt_move.c,
 * cuda/rtc_move.cu): strided copies simplified, pad's source coordinates,
 * trilu's kept columns.
 *
 * Most copies are simpler than their descriptor: a transpose of
 * [N, C, H, W] to [N, H, W, C] is a 3-D copy once H and W are merged, a
 * slice of the last dim a 2-D copy, an expand a copy with zero strides.
 * So a copy y[sum i_d ds_d] = x[sum i_d ss_d] over i < n is first
 * simplified: size-1 dims are dropped and neighbours contiguous with each
 * other on both sides merged. A copy may visit its index space in any
 * order, so dims may also be reordered: a transpose (the innermost dim
 * contiguous on one side only, another dim contiguous on the other) moves
 * that other dim next to the innermost, and both runtimes then work in
 * tiles of the last two dims.
 */
#ifndef ONNXC_RT_INDEX_MOVE_H
#define ONNXC_RT_INDEX_MOVE_H

#include "rt_index.h"

/*
 * Drops size-1 dims of a copy over n (source strides ss, destination
 * strides ds, in elements) and merges each dim into its outer neighbour
 * when the two are contiguous with each other in source and destination
 * alike. Returns the new rank; a single element is rank 1 of size 1.
 */
RT_HD int rt_xfer_simplify(int rank, int64_t *n, int64_t *ss, int64_t *ds)
{
	int k = 0;
	for (int d = 0; d < rank; d++) {
		if (n[d] == 1)
			continue;
		if (k > 0 && ss[k - 1] == ss[d] * n[d] && ds[k - 1] == ds[d] * n[d]) {
			n[k - 1] *= n[d];
			ss[k - 1] = ss[d];
			ds[k - 1] = ds[d];
			continue;
		}
		n[k] = n[d];
		ss[k] = ss[d];
		ds[k] = ds[d];
		k++;
	}
	if (k == 0) {
		n[0] = ss[0] = ds[0] = 1;
		k = 1;
	}
	return k;
}

/*
 * A transpose of a simplified copy: the innermost dim contiguous on one
 * side only, and some other dim contiguous on the other side. Returns that
 * dim (the innermost such), or -1; *in_x says which side the innermost
 * dim is contiguous on: 1 in the source x, 0 in the destination.
 */
RT_HD int rt_xfer_transpose_dim(int rank, const int64_t *ss, const int64_t *ds, int *in_x)
{
	int last = rank - 1, j;
	bool src_side = ds[last] == 1 && ss[last] != 1 && ss[last] != 0;
	bool dst_side = ss[last] == 1 && ds[last] != 1 && ds[last] != 0;
	*in_x = dst_side;
	if (rank < 2 || !(src_side || dst_side))
		return -1;
	for (j = last - 1; j >= 0; j--)
		if ((src_side ? ss[j] : ds[j]) == 1)
			break;
	return j;
}

/* Moves dim j next to the innermost (the copy's order is free). */
RT_HD void rt_xfer_move_dim(int rank, int64_t *n, int64_t *ss, int64_t *ds, int j)
{
	int last = rank - 1;
	int64_t nj = n[j], ssj = ss[j], dsj = ds[j];
	for (int d = j; d < last - 1; d++) {
		n[d] = n[d + 1];
		ss[d] = ss[d + 1];
		ds[d] = ds[d + 1];
	}
	n[last - 1] = nj;
	ss[last - 1] = ssj;
	ds[last - 1] = dsj;
}

/* ------------------------------------------------------------------------ */
/* Pad                                                                      */
/* ------------------------------------------------------------------------ */

/*
 * Pad's dims: in, the padded out and the begin pads pb of d; RT_OK, or
 * RT_ERR_ARGUMENT for a descriptor rt_pad refuses (value holds 8 bytes, a
 * dim negative or overflowing).
 */
RT_HOST int rt_pad_shape(const struct rt_pad_desc *d, int64_t *in, int64_t *out, int64_t *pb)
{
	if (d->esize < 1 || d->rank < 0 || d->rank > 8 || d->mode < RT_PAD_CONSTANT ||
	    d->mode > RT_PAD_WRAP || d->esize > 8)
		return RT_ERR_ARGUMENT;
	for (int k = 0; k < d->rank; k++) {
		in[k] = d->in_dims[k];
		pb[k] = d->pads[k];
		if (in[k] < 0 || __builtin_add_overflow(in[k], d->pads[k], &out[k]) ||
		    __builtin_add_overflow(out[k], d->pads[d->rank + k], &out[k]) || out[k] < 0)
			return RT_ERR_ARGUMENT;
	}
	return RT_OK;
}

/* The input coordinate of padded coordinate i (in [0, n) unless constant
 * mode says outside: -1). Reflection is periodic so that any pad stays in
 * range; for pads smaller than n it is ONNX's single reflection. Wrap is i
 * modulo n (ONNX's Pad-19, numpy's wrap). */
RT_HD int64_t rt_pad_source(int mode, int64_t i, int64_t n)
{
	int64_t period;
	if (i >= 0 && i < n)
		return i;
	if (mode == RT_PAD_CONSTANT || n == 0)
		return -1;
	if (mode == RT_PAD_EDGE || n == 1)
		return i < 0 ? 0 : n - 1;
	if (mode == RT_PAD_WRAP)
		return (i % n + n) % n;
	period = 2 * (n - 1);
	i %= period;
	if (i < 0)
		i += period;
	return i < n ? i : period - i;
}

/*
 * Merges dims the pad leaves alone into their outer neighbour (constant
 * mode only: there a padded slab of the merged dim is contiguous) and
 * drops untouched size-1 dims. Returns the new rank, at least 1 (all of
 * it untouched: one plain row).
 */
RT_HD int rt_pad_simplify(int rank, int mode, int64_t *in, int64_t *out, int64_t *pb)
{
	int k = 0;
	for (int d = 0; d < rank; d++) {
		bool untouched = out[d] == in[d] && pb[d] == 0;
		if (untouched && in[d] == 1)
			continue;
		if (untouched && k > 0 && mode == RT_PAD_CONSTANT) {
			in[k - 1] *= in[d];
			out[k - 1] *= in[d];
			pb[k - 1] *= in[d];
			continue;
		}
		in[k] = in[d];
		out[k] = out[d];
		pb[k] = pb[d];
		k++;
	}
	if (k == 0) {
		in[0] = out[0] = 1;
		pb[0] = 0;
		k = 1;
	}
	return k;
}

/* ------------------------------------------------------------------------ */
/* Trilu                                                                    */
/* ------------------------------------------------------------------------ */

/* k beyond the matrix keeps all or nothing: clamping avoids overflow. */
RT_HD int64_t rt_trilu_k(const struct rt_trilu_desc *d)
{
	return rt_min64(rt_max64(d->k, -d->rows - 1), d->cols + 1);
}

/* The columns [*c0, *c1) row r of a cols-wide matrix keeps (k clamped). */
RT_HD void rt_trilu_cols(int upper, int64_t k, int64_t r, int64_t cols, int64_t *c0, int64_t *c1)
{
	*c0 = upper ? rt_min64(rt_max64(r + k, 0), cols) : 0;
	*c1 = upper ? cols : rt_min64(rt_max64(r + k + 1, 0), cols);
}

#endif
