/*
 * test_rt_index.c - the index arithmetic both runtimes share
 * (runtime/rt_index*.h), against brute force and against values worked
 * out by hand from the ONNX formulas.
 *
 * The kernel tests (test_rt_pool.c, test_rt_resize.c, ...) check whole
 * operations against the reference interpreter; the CUDA kernels run the
 * same functions, and test_rtc_index.c emulates them. This test pins the
 * edges of the functions themselves: pooling windows of every small
 * stride, dilation and padding, including the outputs ceil_mode adds past
 * the padded input; every resize coordinate mode at points where the
 * formulas differ, the nearest modes' ties, clamped and excluded taps; the
 * canonical form of reductions and the simplification of copies, each
 * against an enumeration of the offsets they stand for; periodic
 * reflection; trilu with k far outside the matrix.
 */
#include "onnxc_rt.h"
#include "rt_index_move.h"
#include "rt_index_pool.h"
#include "rt_index_reduce.h"
#include "rt_index_resize.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static int64_t rnd(int64_t n)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return n > 0 ? (int64_t)(seed % (uint64_t)n) : 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* ------------------------------------------------------------------------ */
/* Pooling windows                                                          */
/* ------------------------------------------------------------------------ */

/* The taps [j0, j1) are exactly the j < k whose coordinate is in [lo, hi). */
static int taps_match(const struct rt_pool_taps *t, int64_t k, int64_t dil, int64_t lo, int64_t hi)
{
	int64_t n = 0;
	if (t->j0 < 0 || t->j1 < t->j0 || t->j1 > k)
		return 0;
	for (int64_t j = 0; j < k; j++) {
		int64_t at = t->start + j * dil;
		int in = at >= lo && at < hi;
		if (in != (j >= t->j0 && j < t->j1))
			return 0;
		n += in;
	}
	return n == t->j1 - t->j0;
}

static void test_pool_windows(void)
{
	struct rt_pool_desc d = { RT_F32, RT_POOL_AVG, 1, 1, 1 };
	for (int64_t in = 0; in <= 6; in++)
		for (int64_t k = 0; k <= 4; k++)
			for (int64_t st = 1; st <= 3; st++)
				for (int64_t dil = 1; dil <= 3; dil++)
					for (int64_t pb = 0; pb <= 2; pb++)
						for (int64_t pe = 0; pe <= 2; pe++) {
							struct rt_pool_geom g;
							/* floor_mode's outputs, then the ones
							 * ceil_mode adds and some past them */
							int64_t span =
							        in + pb + pe - (k - 1) * dil - 1;
							int64_t nout =
							        (span >= 0 ? span / st + 1 : 0) + 2;
							d.in[0] = in;
							d.k[0] = k;
							d.stride[0] = st;
							d.dil[0] = dil;
							d.pad_begin[0] = pb;
							d.pad_end[0] = pe;
							d.out[0] = nout;
							CHECK(rt_pool_valid(&d));
							rt_pool_geom_of(&d, &g);
							CHECK_EQ(g.in[0] * g.in[1], 1);
							CHECK_EQ(g.nin, in);
							for (int64_t o = 0; o < nout; o++) {
								struct rt_pool_taps t;
								int64_t cnt = 0;
								rt_pool_valid_taps(&g, 2, o, &t);
								CHECK_EQ(t.start, o * st - pb);
								CHECK(taps_match(&t, k, dil, 0,
								                 in));
								CHECK_EQ(rt_pool_tap_count(&g, 0, 2,
								                           o, &t),
								         t.j1 - t.j0);
								for (int64_t j = 0; j < k; j++) {
									int64_t at =
									        t.start + j * dil;
									cnt += at >= -pb &&
									       at < in + pe;
								}
								CHECK_EQ(rt_pool_tap_count(&g, 1, 2,
								                           o, &t),
								         cnt);
							}
						}
	d.stride[0] = 0;
	CHECK(!rt_pool_valid(&d));
}

static void test_pool_index(void)
{
	struct rt_pool_desc d = { RT_F32, RT_POOL_MAX, 3, 2, 3 };
	struct rt_pool_geom g;
	int64_t in[3] = { 2, 3, 4 };
	for (int i = 0; i < 3; i++) {
		d.in[i] = in[i];
		d.k[i] = d.out[i] = d.stride[i] = d.dil[i] = 1;
	}
	rt_pool_geom_of(&d, &g);
	CHECK_EQ(rt_pool_mode_of(&d), RT_PM_MAX);
	for (int64_t i0 = 0; i0 < 2; i0++)
		for (int64_t i1 = 0; i1 < 3; i1++)
			for (int64_t i2 = 0; i2 < 4; i2++) {
				int64_t at = rt_pool_off(&g, i0, i1, i2, 0, 0, 0);
				CHECK_EQ(at, (i0 * 3 + i1) * 4 + i2);
				CHECK_EQ(rt_pool_index(&g, 0, 5, at), 5 * 24 + at);
				CHECK_EQ(rt_pool_index(&g, 1, 5, at),
				         5 * 24 + i0 + 2 * (i1 + 3 * i2));
			}
	d.kind = RT_POOL_LP;
	d.p = 2;
	CHECK_EQ(rt_pool_mode_of(&d), RT_PM_SQ);
	d.p = 3;
	CHECK_EQ(rt_pool_mode_of(&d), RT_PM_POW);
}

/* ------------------------------------------------------------------------ */
/* Resize                                                                   */
/* ------------------------------------------------------------------------ */

static struct rt_resize_desc resize_1d(int mode, int coord, int64_t in, int64_t out, double scale)
{
	struct rt_resize_desc d = { RT_F32, mode, coord, RT_NEAREST_ROUND_PREFER_FLOOR, 1 };
	d.in_dims[0] = in;
	d.out_dims[0] = out;
	d.scales[0] = scale;
	d.cubic_a = -0.75f;
	return d;
}

static void test_resize_coords(void)
{
	struct rt_resize_desc d = resize_1d(RT_RESIZE_LINEAR, RT_COORD_HALF_PIXEL, 4, 8, 2);
	CHECK(rt_resize_coord(&d, 0, 0) == -0.25);
	CHECK(rt_resize_coord(&d, 0, 3) == 1.25);
	d.coord = RT_COORD_ASYMMETRIC;
	CHECK(rt_resize_coord(&d, 0, 3) == 1.5);
	d.coord = RT_COORD_ALIGN_CORNERS;
	CHECK(rt_resize_coord(&d, 0, 0) == 0);
	CHECK(rt_resize_coord(&d, 0, 7) == 3);
	d.coord = RT_COORD_PYTORCH_HALF_PIXEL;
	CHECK(rt_resize_coord(&d, 0, 3) == 1.25);
	/* pytorch_half_pixel and align_corners of a length-1 output: 0 */
	d = resize_1d(RT_RESIZE_LINEAR, RT_COORD_PYTORCH_HALF_PIXEL, 4, 1, 0.25);
	CHECK(rt_resize_coord(&d, 0, 0) == 0);
	d.coord = RT_COORD_ALIGN_CORNERS;
	CHECK(rt_resize_coord(&d, 0, 0) == 0);
	/* half_pixel_symmetric: out 9 of in 4 at scale 2 shifts by
	 * in/2 * (1 - out/len) = -0.25 */
	d = resize_1d(RT_RESIZE_LINEAR, RT_COORD_HALF_PIXEL_SYMMETRIC, 4, 9, 2);
	CHECK(rt_resize_coord(&d, 0, 0) == -0.5);
	/* tf_crop_and_resize: roi [0.25, 0.75] of 5 elements over 10 outputs */
	d = resize_1d(RT_RESIZE_LINEAR, RT_COORD_TF_CROP_AND_RESIZE, 5, 10, 2);
	d.roi[0] = 0.25f;
	d.roi[1] = 0.75f;
	CHECK(rt_resize_coord(&d, 0, 0) == 1);
	CHECK(fabs(rt_resize_coord(&d, 0, 9) - 3) < 1e-12);
	d.out_dims[0] = 1;
	d.scales[0] = 0.2;
	CHECK(fabs(rt_resize_coord(&d, 0, 0) - 2) < 1e-12);
}

static void test_resize_taps(void)
{
	/* asymmetric at scale 2: output 3 is 1.5 (a tie), output 4 is 2 */
	static const int modes[4] = { RT_NEAREST_ROUND_PREFER_FLOOR, RT_NEAREST_ROUND_PREFER_CEIL,
		                      RT_NEAREST_FLOOR, RT_NEAREST_CEIL };
	static const int64_t at_tie[4] = { 1, 2, 1, 2 }, at_125[4] = { 1, 1, 1, 2 };
	struct rt_resize_desc d = resize_1d(RT_RESIZE_NEAREST, RT_COORD_ASYMMETRIC, 4, 8, 2);
	struct rt_resize_taps t;
	double w[4];
	for (int m = 0; m < 4; m++) {
		d.nearest = modes[m];
		rt_resize_dim_taps(&d, 0, 1, 3, &t);
		CHECK_EQ(t.n, 1);
		CHECK_EQ(t.off[0], at_tie[m]);
		CHECK(t.w[0] == 1);
		rt_resize_dim_taps(&d, 0, 1, 4, &t);
		CHECK_EQ(t.off[0], 2);
		d.coord = RT_COORD_HALF_PIXEL; /* output 3: 1.25 */
		rt_resize_dim_taps(&d, 0, 1, 3, &t);
		CHECK_EQ(t.off[0], at_125[m]);
		d.coord = RT_COORD_ASYMMETRIC;
	}
	/* linear at -0.25: taps -1 and 0, both reading element 0 (stride 3) */
	d = resize_1d(RT_RESIZE_LINEAR, RT_COORD_HALF_PIXEL, 4, 8, 2);
	rt_resize_dim_taps(&d, 0, 3, 0, &t);
	CHECK_EQ(t.n, 2);
	CHECK(t.off[0] == 0 && t.off[1] == 0);
	CHECK(t.w[0] == 0.25f && t.w[1] == 0.75f);
	rt_resize_dim_taps(&d, 0, 3, 3, &t); /* 1.25 */
	CHECK(t.off[0] == 3 && t.off[1] == 6);
	CHECK(t.w[0] == 0.75f && t.w[1] == 0.25f);
	d.exclude_outside = 1; /* the outside tap's weight goes to the other */
	rt_resize_dim_taps(&d, 0, 3, 0, &t);
	CHECK(t.w[0] == 0 && t.w[1] == 1);
	/* cubic: a partition of unity; at an integer exactly one tap */
	for (int i = 0; i <= 8; i++) {
		double r = i / 8.0 + (i == 0 ? 1e-3 : 0);
		rt_resize_cubic_weights(r, -0.75, w);
		CHECK(fabs(w[0] + w[1] + w[2] + w[3] - 1) < 1e-12);
	}
	rt_resize_cubic_weights(1, -0.5, w);
	CHECK(w[0] == 0 && w[1] == 0 && w[2] == 1 && w[3] == 0);
	/* tf_crop_and_resize outside [0, in - 1]: extrapolate (no taps) */
	d = resize_1d(RT_RESIZE_LINEAR, RT_COORD_TF_CROP_AND_RESIZE, 4, 4, 1);
	d.roi[0] = -0.5f;
	d.roi[1] = 1.5f;
	rt_resize_dim_taps(&d, 0, 1, 0, &t);
	CHECK_EQ(t.n, 0);
	rt_resize_dim_taps(&d, 0, 1, 2, &t);
	CHECK_EQ(t.n, 2);
	/* far outside the input the coordinate is clamped, the taps the edge */
	d = resize_1d(RT_RESIZE_CUBIC, RT_COORD_ASYMMETRIC, 3, 4, 1e-9);
	rt_resize_dim_taps(&d, 0, 1, 3, &t);
	CHECK_EQ(t.n, 4);
	for (int k = 0; k < 4; k++)
		CHECK_EQ(t.off[k], 2);
}

static void test_resize_identity(void)
{
	struct rt_resize_desc d = resize_1d(RT_RESIZE_LINEAR, RT_COORD_HALF_PIXEL, 5, 5, 1);
	CHECK(rt_resize_valid(&d));
	CHECK(rt_resize_identity(&d, 0));
	d.mode = RT_RESIZE_CUBIC; /* checked tap by tap: exact at integers */
	CHECK(rt_resize_identity(&d, 0));
	d.coord = RT_COORD_TF_CROP_AND_RESIZE;
	d.roi[0] = 0;
	d.roi[1] = 0.5f;
	CHECK(!rt_resize_identity(&d, 0));
	d = resize_1d(RT_RESIZE_NEAREST, RT_COORD_HALF_PIXEL, 5, 6, 1.2);
	CHECK(!rt_resize_identity(&d, 0));
	d.nearest = 9;
	CHECK(!rt_resize_valid(&d));
}

/* ------------------------------------------------------------------------ */
/* Reductions: the canonical form against an enumeration                     */
/* ------------------------------------------------------------------------ */

static void test_reduce_canon(void)
{
	for (int round = 0; round < 400; round++) {
		struct rt_reduce_desc d = { RT_F32, RT_REDUCE_SUM, (int)rnd(6) };
		struct rt_red r;
		int64_t total = 1, st[8], nout = 1;
		int64_t *want, *got;
		for (int i = 0; i < d.rank; i++) {
			d.dims[i] = rnd(4);
			total *= d.dims[i];
		}
		d.axes_mask = (unsigned)rnd(1 << d.rank);
		rt_dense_strides(d.dims, d.rank, st);
		for (int i = 0; i < d.rank; i++)
			if (!((d.axes_mask >> i) & 1))
				nout *= d.dims[i];
		if (!rt_red_canon(&d, &r)) {
			CHECK_EQ(total, 0);
			CHECK_EQ(r.nout, nout);
			continue;
		}
		CHECK_EQ(r.nout, nout);
		CHECK_EQ(r.nout * r.nred, total);
		CHECK_EQ(r.nseg * (r.rows ? r.inner : 1), r.nred);
		/* want[k * nred + e]: the offsets output k reduces, sorted */
		want = calloc((size_t)total, sizeof *want);
		got = calloc((size_t)total, sizeof *got);
		int64_t *fill = calloc((size_t)nout, sizeof *fill);
		for (int64_t f = 0; f < total; f++) {
			int64_t rest = f, k = 0, kmul = 1;
			for (int i = d.rank - 1; i >= 0; i--) {
				int64_t c = rest % d.dims[i];
				rest /= d.dims[i];
				if (!((d.axes_mask >> i) & 1)) {
					k += c * kmul;
					kmul *= d.dims[i];
				}
			}
			want[k * r.nred + fill[k]++] = f;
		}
		for (int64_t k = 0; k < nout; k++) {
			int64_t base = r.rows ? rt_red_kept_off(&r, k)
			                      : rt_red_kept_off(&r, k / r.inner) + k % r.inner;
			int64_t e = 0;
			for (int64_t j = 0; j < r.nseg; j++)
				for (int64_t i = 0; i < (r.rows ? r.inner : 1); i++)
					got[k * r.nred + e++] = base + rt_red_seg_off(&r, j) + i;
			qsort(got + k * r.nred, (size_t)r.nred, sizeof *got, cmp_i64);
		}
		for (int64_t f = 0; f < total; f++)
			CHECK_EQ(got[f], want[f]);
		free(want);
		free(got);
		free(fill);
	}
}

static void test_reduce_finish(void)
{
	double f = 9;
	int64_t i = 9;
	CHECK_EQ(rt_red_prim_of(RT_REDUCE_L2), RT_PRIM_SQ);
	CHECK_EQ(rt_red_prim_of(RT_REDUCE_MEAN), RT_PRIM_SUM);
	CHECK_EQ(rt_red_prim_of(RT_REDUCE_LOG_SUM_EXP), RT_PRIM_EXP);
	rt_red_finish(RT_REDUCE_L2, 0, 3, 0, &f, &i);
	CHECK(f == 3 && i == 3);
	f = 7, i = 7;
	rt_red_finish(RT_REDUCE_MEAN, 0, 2, 0, &f, &i);
	CHECK(f == 3.5 && i == 3);
	CHECK(rt_red_lse_shift(2.5) == 2.5);
	CHECK(rt_red_lse_shift(INFINITY) == 0 && rt_red_lse_shift(-INFINITY) == 0);
	CHECK(rt_red_lse_shift(NAN) == 0);
	CHECK_EQ(rt_red_to_i64(NAN), 0);
	CHECK_EQ(rt_red_to_i64(1e300), INT64_MAX);
	CHECK_EQ(rt_red_to_i64(-1e300), INT64_MIN);
	CHECK_EQ(rt_red_to_i64(-2.9), -2);
}

/* ------------------------------------------------------------------------ */
/* Copies: simplified and reordered, the same (source, destination) pairs   */
/* ------------------------------------------------------------------------ */

/* The (src, dst) offset pairs of a copy, sorted by destination. */
static void xfer_pairs(int rank, const int64_t *n, const int64_t *ss, const int64_t *ds,
                       int64_t total, int64_t *pairs)
{
	for (int64_t f = 0; f < total; f++) {
		int64_t rest = f, so = 0, dof = 0;
		for (int d = rank - 1; d >= 0; d--) {
			so += rest % n[d] * ss[d];
			dof += rest % n[d] * ds[d];
			rest /= n[d];
		}
		pairs[2 * f] = dof;
		pairs[2 * f + 1] = so;
	}
	qsort(pairs, (size_t)total, 2 * sizeof *pairs, cmp_i64);
}

static void test_xfer(void)
{
	for (int round = 0; round < 2000; round++) {
		int rank = 1 + (int)rnd(5), in_x, j;
		int64_t n[16], ss[16], ds[16], perm[8], total = 1, a[2 * 1024], b[2 * 1024];
		/* a transpose-like view: source dims in a random order, some
		 * broadcast, the destination dense */
		for (int d = 0; d < rank; d++) {
			n[d] = 1 + rnd(4);
			total *= n[d];
			perm[d] = d;
		}
		for (int d = rank - 1; d > 0; d--) {
			int64_t k = rnd(d + 1), t = perm[d];
			perm[d] = perm[k];
			perm[k] = t;
		}
		rt_dense_strides(n, rank, ds);
		{
			int64_t s = 1;
			for (int d = rank - 1; d >= 0; d--) {
				ss[perm[d]] = rnd(5) ? s : 0;
				s *= n[perm[d]];
			}
		}
		xfer_pairs(rank, n, ss, ds, total, a);
		rank = rt_xfer_simplify(rank, n, ss, ds);
		CHECK(rank >= 1);
		for (int d = 0; d < rank; d++)
			CHECK(n[d] > 1 || rank == 1);
		j = rt_xfer_transpose_dim(rank, ss, ds, &in_x);
		if (j >= 0) {
			CHECK((in_x ? ds[j] : ss[j]) == 1);
			rt_xfer_move_dim(rank, n, ss, ds, j);
		}
		xfer_pairs(rank, n, ss, ds, total, b);
		for (int64_t f = 0; f < 2 * total; f++)
			CHECK_EQ(b[f], a[f]);
	}
}

/* ------------------------------------------------------------------------ */
/* Pad and trilu                                                            */
/* ------------------------------------------------------------------------ */

static void test_pad_source(void)
{
	for (int64_t n = 0; n <= 6; n++)
		for (int64_t i = -25; i <= 25; i++) {
			int64_t r = i, e = i < 0 ? 0 : i >= n ? n - 1 : i;
			int inside = i >= 0 && i < n;
			CHECK_EQ(rt_pad_source(RT_PAD_CONSTANT, i, n), inside ? i : -1);
			if (n == 0) {
				CHECK_EQ(rt_pad_source(RT_PAD_EDGE, i, n), -1);
				CHECK_EQ(rt_pad_source(RT_PAD_REFLECT, i, n), -1);
				continue;
			}
			CHECK_EQ(rt_pad_source(RT_PAD_EDGE, i, n), e);
			/* reflect without repeating the edge, as often as it takes */
			while (n > 1 && (r < 0 || r >= n))
				r = r < 0 ? -r : 2 * (n - 1) - r;
			CHECK_EQ(rt_pad_source(RT_PAD_REFLECT, i, n), n == 1 ? 0 : r);
		}
}

static void test_pad_shape(void)
{
	struct rt_pad_desc d = { 4, RT_PAD_CONSTANT, 3, { 2, 1, 3 }, { 0, 0, 1, 0, 0, 2 } };
	int64_t in[8], out[8], pb[8];
	int k;
	CHECK_EQ(rt_pad_shape(&d, in, out, pb), RT_OK);
	CHECK(out[0] == 2 && out[1] == 1 && out[2] == 6);
	/* constant mode: the untouched dim 0 merges, the size-1 dim goes */
	k = rt_pad_simplify(3, RT_PAD_CONSTANT, in, out, pb);
	CHECK_EQ(k, 2);
	CHECK(in[0] == 2 && in[1] == 3 && out[1] == 6 && pb[1] == 1);
	CHECK_EQ(rt_pad_shape(&d, in, out, pb), RT_OK);
	CHECK_EQ(rt_pad_simplify(3, RT_PAD_REFLECT, in, out, pb), 2);
	d.pads[5] = INT64_MAX;
	CHECK_EQ(rt_pad_shape(&d, in, out, pb), RT_ERR_ARGUMENT);
	d.pads[5] = -5;
	CHECK_EQ(rt_pad_shape(&d, in, out, pb), RT_ERR_ARGUMENT);
	d.pads[5] = 0;
	d.esize = 9;
	CHECK_EQ(rt_pad_shape(&d, in, out, pb), RT_ERR_ARGUMENT);
}

static void test_trilu(void)
{
	struct rt_trilu_desc d = { 4, 0, 1, 3, 5 };
	for (int upper = 0; upper <= 1; upper++)
		for (int64_t k = -6; k <= 8; k++)
			for (int64_t r = 0; r < d.rows; r++) {
				int64_t c0, c1;
				d.k = k;
				rt_trilu_cols(upper, rt_trilu_k(&d), r, d.cols, &c0, &c1);
				for (int64_t c = 0; c < d.cols; c++)
					CHECK_EQ(c >= c0 && c < c1,
					         upper ? c - r >= k : c - r <= k);
			}
	d.k = INT64_MAX;
	CHECK_EQ(rt_trilu_k(&d), d.cols + 1);
	d.k = INT64_MIN;
	CHECK_EQ(rt_trilu_k(&d), -d.rows - 1);
}

TESTS(T(test_pool_windows) T(test_pool_index) T(test_resize_coords) T(test_resize_taps)
              T(test_resize_identity) T(test_reduce_canon) T(test_reduce_finish) T(test_xfer)
                      T(test_pad_source) T(test_pad_shape) T(test_trilu))
