/*
 * rt_index_resize.h - Resize's coordinates and taps (rt_resize.c,
 * cuda/rtc_resize.cu).
 *
 * Resize is separable: along each dim an output coordinate maps to a
 * source coordinate (the coordinate transformation mode), and from there
 * to a few input indices with weights - one tap for nearest, two for
 * linear, four for cubic. The arithmetic follows the ONNX reference
 * implementation (onnx/reference/ops/op_resize.py) step by step, in
 * double, so that nearest modes pick the same element even where rounding
 * decides; the IR's reference evaluator (ir/eval_resize.c) computes the
 * same independently, as the oracle the tests compare with:
 *  - the "resized length" in the formulas is scale * input length, which
 *    may be fractional (align_corners, pytorch_half_pixel, tf_crop);
 *  - a source coordinate xo is split as i0 + ratio with ratio in (0, 1], so
 *    an integer coordinate is the second tap of the pair (i0, i0 + 1);
 *  - taps outside the input read the edge element, except that with
 *    exclude_outside (linear, cubic) their weights are dropped and the rest
 *    renormalized;
 *  - tf_crop_and_resize yields the extrapolation value for an output element
 *    whose source coordinate falls outside [0, length - 1] in any dimension.
 * The expressions' order is part of the contract: the CPU and the GPU get
 * the same doubles from them, and the same float weights.
 */
#ifndef ONNXC_RT_INDEX_RESIZE_H
#define ONNXC_RT_INDEX_RESIZE_H

#include "rt_index.h"

#include <math.h>

/* One output coordinate's taps along one dim. */
struct rt_resize_taps {
	int n;          /* 0: outside the crop, extrapolate; else the mode's count */
	int64_t off[4]; /* input offsets in elements (index clamped, times stride) */
	float w[4];
};

/* Whether rt_resize takes d (its dtype aside). */
RT_HOST bool rt_resize_valid(const struct rt_resize_desc *d)
{
	int64_t nx = 1, ny = 1;
	if (d->rank < 0 || d->rank > 8 || d->mode < RT_RESIZE_NEAREST ||
	    d->mode > RT_RESIZE_CUBIC || d->coord < RT_COORD_HALF_PIXEL ||
	    d->coord > RT_COORD_TF_CROP_AND_RESIZE || d->nearest < RT_NEAREST_ROUND_PREFER_FLOOR ||
	    d->nearest > RT_NEAREST_CEIL)
		return false;
	for (int i = 0; i < d->rank; i++)
		if (d->in_dims[i] < 0 || d->out_dims[i] < 0 ||
		    __builtin_mul_overflow(nx, d->in_dims[i], &nx) ||
		    __builtin_mul_overflow(ny, d->out_dims[i], &ny))
			return false;
	return true;
}

/* The source coordinate of output coordinate x along dim i. */
RT_HD double rt_resize_coord(const struct rt_resize_desc *d, int i, int64_t x)
{
	double in = (double)d->in_dims[i], out = (double)d->out_dims[i], scale = d->scales[i];
	double len = scale * in, half = ((double)x + 0.5) / scale - 0.5, lo, hi;
	switch (d->coord) {
	case RT_COORD_HALF_PIXEL: return half;
	case RT_COORD_HALF_PIXEL_SYMMETRIC: return in / 2 * (1 - out / len) + half;
	case RT_COORD_PYTORCH_HALF_PIXEL: return len > 1 ? half : 0;
	case RT_COORD_ALIGN_CORNERS: return len == 1 ? 0 : (double)x * (in - 1) / (len - 1);
	case RT_COORD_ASYMMETRIC: return (double)x / scale;
	default: break;
	}
	/* tf_crop_and_resize: roi is [starts..., ends...] in normalized units */
	lo = d->roi[i];
	hi = d->roi[d->rank + i];
	if (len == 1)
		return 0.5 * (lo + hi) * (in - 1);
	return lo * (in - 1) + (double)x * (hi - lo) * (in - 1) / (len - 1);
}

/* Keys' cubic convolution weights of the four taps i0-1 .. i0+2. */
RT_HD void rt_resize_cubic_weights(double r, double a, double *w)
{
	double s = 1 + r, t = 1 - r, u = 2 - r;
	w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
	w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
	w[2] = ((a + 2) * t - (a + 3)) * t * t + 1;
	w[3] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
}

/* Does the nearest mode round a fraction in (0, 1) up to i0 + 1? */
RT_HD bool rt_resize_nearest_up(int mode, double ratio)
{
	switch (mode) {
	case RT_NEAREST_ROUND_PREFER_FLOOR: return ratio > 0.5;
	case RT_NEAREST_ROUND_PREFER_CEIL: return ratio >= 0.5;
	case RT_NEAREST_CEIL: return true;
	default: return false;
	}
}

/* Input indices and weights of the mode's taps around coordinate
 * i0 + ratio; returns their number. */
RT_HD int rt_resize_mode_taps(const struct rt_resize_desc *d, int64_t i0, double ratio, int64_t *at,
                              double *w)
{
	switch (d->mode) {
	case RT_RESIZE_NEAREST:
		at[0] = i0 + (ratio == 1 || rt_resize_nearest_up(d->nearest, ratio));
		w[0] = 1;
		return 1;
	case RT_RESIZE_LINEAR:
		at[0] = i0;
		at[1] = i0 + 1;
		w[0] = 1 - ratio;
		w[1] = ratio;
		return 2;
	default:
		for (int i = 0; i < 4; i++)
			at[i] = i0 - 1 + i;
		rt_resize_cubic_weights(ratio, d->cubic_a, w);
		return 4;
	}
}

/* Drops the weights of taps outside [0, in) and rescales the rest to sum 1. */
RT_HD void rt_resize_exclude_outside(int n, const int64_t *at, double *w, int64_t in)
{
	double sum = 0;
	for (int i = 0; i < n; i++) {
		if (at[i] < 0 || at[i] >= in)
			w[i] = 0;
		sum += w[i];
	}
	for (int i = 0; i < n; i++)
		w[i] /= sum;
}

/*
 * The taps of output coordinate x along dim i (input stride xs). Only the
 * first t->n taps are written (n 0: extrapolate); a caller that reads
 * every slot clears t first.
 */
RT_HD void rt_resize_dim_taps(const struct rt_resize_desc *d, int i, int64_t xs, int64_t x,
                              struct rt_resize_taps *t)
{
	int64_t in = d->in_dims[i], i0, at[4];
	double xo = rt_resize_coord(d, i, x), ratio, w[4];
	t->n = 0;
	if (d->coord == RT_COORD_TF_CROP_AND_RESIZE && !(xo >= 0 && xo <= (double)(in - 1)))
		return;
	/* beyond a few elements past either edge every tap reads the edge;
	 * clamping keeps the conversion to an integer defined */
	xo = fmin(fmax(xo, -4), (double)in + 4);
	i0 = (int64_t)floor(xo);
	ratio = xo - (double)i0;
	if (ratio == 0) {
		ratio = 1;
		i0--;
	}
	t->n = rt_resize_mode_taps(d, i0, ratio, at, w);
	if (t->n > 1 && d->exclude_outside)
		rt_resize_exclude_outside(t->n, at, w, in);
	for (int k = 0; k < t->n; k++) {
		t->off[k] = (at[k] < 0 ? 0 : at[k] >= in ? in - 1 : at[k]) * xs;
		t->w[k] = (float)w[k];
	}
}

/* Does dim i map every output coordinate to itself with weight 1? */
RT_HD bool rt_resize_identity(const struct rt_resize_desc *d, int i)
{
	struct rt_resize_taps t;
	if (d->in_dims[i] != d->out_dims[i])
		return false;
	/* with scale 1 every transform but tf_crop maps x to exactly x, whose
	 * nearest and linear taps are x with weight 1 (cubic weights at an
	 * integer are exact only for some a: those are checked) */
	if (d->scales[i] == 1 && d->coord != RT_COORD_TF_CROP_AND_RESIZE &&
	    d->mode != RT_RESIZE_CUBIC)
		return true;
	for (int64_t x = 0; x < d->out_dims[i]; x++) {
		int nonzero = 0;
		rt_resize_dim_taps(d, i, 1, x, &t);
		for (int k = 0; k < t.n; k++) {
			if (t.w[k] == 0)
				continue;
			if (t.w[k] != 1 || t.off[k] != x)
				return false;
			nonzero++;
		}
		if (nonzero != 1)
			return false;
	}
	return true;
}

#endif
