/*
 * test_rt_resize.c - rt_resize (runtime/rt_resize.c) against the reference
 * interpreter's resize (ir/eval_resize.c).
 *
 * Random cases cover every mode (nearest with each rounding mode, linear,
 * cubic with two values of a and with exclude_outside), every coordinate
 * transformation (tf_crop_and_resize with random regions, some reaching
 * outside the input, and an extrapolation value), ranks 1 to 5, and per
 * dimension an identity, an upsampling or a downsampling by integer or
 * non-integer factors, given as sizes (scale = out / in) or as scales
 * (out = floor(in * scale)), including outputs and inputs of size 1 and 0.
 * Nearest results must match exactly; linear and cubic within f32 rounding.
 * Each case runs with 1 and 3 threads, which must agree bit for bit. A few
 * large cases (image-like NCHW and NHWC) take the parallel paths.
 */
#include "refcheck.h"

#include "onnxc_rt.h"

static struct rt_ctx *ctxs[2]; /* 1 and 3 threads */
static uint64_t seed = 0x2545f4914f6cdd1dull;

static const char *const mode_names[] = { "nearest", "linear", "cubic" };
static const char *const coord_names[] = { "half_pixel",         "half_pixel_symmetric",
	                                   "pytorch_half_pixel", "align_corners",
	                                   "asymmetric",         "tf_crop_and_resize" };
static const char *const nearest_names[] = { "round_prefer_floor", "round_prefer_ceil", "floor",
	                                     "ceil" };

static void setup(void)
{
	for (int i = 0; i < 2; i++)
		if (!ctxs[i])
			CHECK_EQ(rt_ctx_create(&ctxs[i], 1 + 2 * i), RT_OK);
}

/* Uniform in [0, n). */
static int64_t rnd(int64_t n)
{
	int64_t v;
	rand_fill(IR_I64, &v, 1, 0, (double)n, &seed);
	return v < n ? v : n - 1;
}

static double urand(double lo, double hi)
{
	return lo + (hi - lo) * (double)rnd(1 << 20) / (1 << 20);
}

/* A case: the descriptor and the IR's scales attribute (none when the
 * model gave sizes; the descriptor then holds out/in in double). */
struct rcase {
	struct rt_resize_desc d;
	float scales[8];
	int nscales;
};

static void set_resize(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct rcase *c = ud;
	const struct rt_resize_desc *d = &c->d;
	ir_set_s(m, n, "mode", mode_names[d->mode]);
	ir_set_s(m, n, "coord", coord_names[d->coord]);
	ir_set_s(m, n, "nearest", nearest_names[d->nearest]);
	ir_set_f(m, n, "cubic_a", d->cubic_a);
	ir_set_i(m, n, "exclude_outside", d->exclude_outside);
	ir_set_f(m, n, "extrapolation", d->extrapolation);
	ir_set_floats(m, n, "scales", c->scales, c->nscales);
	ir_set_ints(m, n, "sizes", d->out_dims, d->rank);
	ir_set_floats(m, n, "roi", d->roi,
	              d->coord == RT_COORD_TF_CROP_AND_RESIZE ? 2 * d->rank : 0);
}

/* Fills the descriptor's scales from the case: the IR's float scales, or
 * out/in when the model gave sizes. */
static void set_scales(struct rcase *c)
{
	struct rt_resize_desc *d = &c->d;
	for (int i = 0; i < d->rank; i++)
		d->scales[i] = c->nscales      ? (double)c->scales[i]
		               : d->in_dims[i] ? (double)d->out_dims[i] / (double)d->in_dims[i]
		                               : 1;
}

static const char *describe(const struct rt_resize_desc *d, char *buf, size_t n)
{
	int k = snprintf(buf, n, "%s/%s/%s a=%g excl=%d:", mode_names[d->mode],
	                 coord_names[d->coord], nearest_names[d->nearest], d->cubic_a,
	                 d->exclude_outside);
	for (int i = 0; i < d->rank && k > 0 && (size_t)k < n; i++)
		k += snprintf(buf + k, n - (size_t)k, " %lld->%lld(x%g)", (long long)d->in_dims[i],
		              (long long)d->out_dims[i], d->scales[i]);
	return buf;
}

/* Runs d on random data with both contexts and compares with the reference. */
static void check_resize(struct rcase *c)
{
	const struct rt_resize_desc *d = &c->d;
	struct ref_tensor x = { .type = { .dtype = IR_F32, .rank = d->rank } }, want = { 0 };
	int64_t nx = 1, ny = 1;
	float *y[2];
	char buf[512];
	for (int i = 0; i < d->rank; i++) {
		x.type.dims[i] = d->in_dims[i];
		nx *= d->in_dims[i];
		ny *= d->out_dims[i];
	}
	x.data = malloc((size_t)nx * sizeof(float) + 1);
	rand_fill(IR_F32, x.data, nx, -1, 1, &seed);
	for (int t = 0; t < 2; t++) {
		y[t] = malloc((size_t)ny * sizeof(float) + 1);
		CHECK_EQ(rt_resize(ctxs[t], d, x.data, y[t]), RT_OK);
	}
	if (ny && memcmp(y[0], y[1], (size_t)ny * sizeof(float)) != 0) {
		fprintf(stderr, "%s: 1 and 3 threads differ: %s\n", test_current,
		        describe(d, buf, sizeof buf));
		test_failures++;
	}
	if (ny && nx && ref_eval(IR_OP_RESIZE, set_resize, c, &x, 1, &want, 1)) {
		bool exact = d->mode == RT_RESIZE_NEAREST;
		double err =
		        rel_err(IR_F32, y[0], want.data, ny, exact ? 0 : 1e-4, exact ? 0 : 1e-5);
		if (err > 1) {
			fprintf(stderr, "%s: error %g: %s\n", test_current, err,
			        describe(d, buf, sizeof buf));
			test_failures++;
		}
	} else if (ny && nx) {
		CHECK(!"the reference refused the case");
	}
	free(x.data);
	free(want.data);
	free(y[0]);
	free(y[1]);
}

/* One dimension: an identity, an upsampling or a downsampling; with scales
 * the output size follows from the scale, with sizes the scale from the
 * output size. */
static void random_dim(struct rcase *c, int i, int64_t max_in)
{
	static const float factors[] = { 2, 3, 0.5f, 1.5f, 1.7f, 0.6f, 0.33f, 2.5f, 1.25f };
	struct rt_resize_desc *d = &c->d;
	int64_t in = rnd(30) ? 1 + rnd(max_in) : 0;
	bool same = rnd(4) == 0;
	d->in_dims[i] = in;
	if (c->nscales) {
		c->scales[i] = same ? 1 : factors[rnd(sizeof factors / sizeof *factors)];
		d->out_dims[i] = (int64_t)floor((double)in * c->scales[i]);
	} else {
		d->out_dims[i] = same ? in : rnd(20) ? 1 + rnd(2 * max_in) : 0;
	}
	/* regions inside the input, beyond it, or reversed */
	d->roi[i] = (float)urand(-0.3, 0.8);
	d->roi[d->rank + i] = (float)urand(0.2, 1.3);
}

static struct rcase random_case(int rank, int64_t max_in)
{
	static const float as[] = { -0.75f, -0.5f };
	struct rcase c = { .d = { .dtype = RT_F32, .rank = rank } };
	c.d.mode = (int)rnd(3);
	c.d.coord = (int)rnd(6);
	c.d.nearest = (int)rnd(4);
	c.d.cubic_a = as[rnd(2)];
	c.d.exclude_outside = (int)rnd(2);
	c.d.extrapolation = rnd(2) ? 0 : -7.5f;
	c.nscales = rnd(2) ? rank : 0;
	for (int i = 0; i < rank; i++)
		random_dim(&c, i, max_in);
	set_scales(&c);
	return c;
}

static void test_random(void)
{
	setup();
	for (int it = 0; it < 10000; it++) {
		int rank = 1 + (int)rnd(it % 10 == 0 ? 5 : 3);
		struct rcase c = random_case(rank, rank > 2 ? 5 : 9);
		check_resize(&c);
	}
}

/* Every combination of mode, coordinate transformation and rounding on a
 * 2-D image with non-integer factors up and down, given as sizes. */
static void test_all_modes(void)
{
	static const int64_t shapes[][4] = { { 2, 3, 5, 7 }, { 1, 2, 4, 4 }, { 1, 1, 3, 1 } };
	static const int64_t outs[][2] = { { 8, 11 }, { 3, 4 }, { 1, 1 }, { 6, 2 }, { 5, 7 } };
	static const float roi[8] = { 0, 0, 0.1f, -0.2f, 1, 1, 0.8f, 1.1f };
	setup();
	for (int combo = 0; combo < 3 * 6 * 8 * 3 * 5; combo++) {
		int mode = combo % 3, coord = combo / 3 % 6, k = combo / 18 % 8;
		int s = combo / 144 % 3, o = combo / 432;
		struct rcase c = { .d = { .dtype = RT_F32,
			                  .rank = 4,
			                  .mode = mode,
			                  .coord = coord,
			                  .nearest = k % 4,
			                  .cubic_a = -0.75f,
			                  .exclude_outside = k / 4,
			                  .extrapolation = 3.25f } };
		memcpy(c.d.roi, roi, sizeof roi);
		memcpy(c.d.in_dims, shapes[s], sizeof shapes[s]);
		memcpy(c.d.out_dims, shapes[s], sizeof shapes[s]);
		c.d.out_dims[2] = outs[o][0];
		c.d.out_dims[3] = outs[o][1];
		set_scales(&c);
		check_resize(&c);
	}
}

/* Image-sized cases: NCHW and NHWC layouts, the parallel paths. */
static void test_large(void)
{
	enum { NE = RT_RESIZE_NEAREST, LI = RT_RESIZE_LINEAR, CU = RT_RESIZE_CUBIC };
	enum { HP = RT_COORD_HALF_PIXEL, PT = RT_COORD_PYTORCH_HALF_PIXEL };
	enum { AC = RT_COORD_ALIGN_CORNERS, AS = RT_COORD_ASYMMETRIC };
	static const struct {
		int mode, coord;
		int64_t in[4], out[4];
		float scale; /* 0: sizes */
	} cases[] = {
		{ NE, AS, { 1, 32, 20, 20 }, { 1, 32, 40, 40 }, 2 },
		{ LI, HP, { 2, 16, 30, 30 }, { 2, 16, 60, 45 }, 0 },
		{ LI, AC, { 1, 8, 64, 64 }, { 1, 8, 31, 200 }, 0 },
		{ CU, HP, { 1, 4, 32, 32 }, { 1, 4, 64, 64 }, 2 },
		{ LI, PT, { 1, 20, 20, 64 }, { 1, 40, 40, 64 }, 0 }, /* NHWC */
		{ NE, HP, { 1, 16, 16, 48 }, { 1, 32, 24, 48 }, 0 },
		{ LI, HP, { 1, 1, 1, 3000 }, { 1, 1, 1, 7000 }, 0 },
		{ LI, HP, { 3, 50, 40, 30 }, { 3, 50, 40, 30 }, 1 }, /* a copy */
	};
	setup();
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct rcase c = { .d = { .dtype = RT_F32,
			                  .rank = 4,
			                  .mode = cases[i].mode,
			                  .coord = cases[i].coord,
			                  .cubic_a = -0.75f } };
		memcpy(c.d.in_dims, cases[i].in, sizeof c.d.in_dims[0] * 4);
		memcpy(c.d.out_dims, cases[i].out, sizeof c.d.out_dims[0] * 4);
		if (cases[i].scale) {
			c.nscales = 4;
			for (int k = 0; k < 4; k++)
				c.scales[k] =
				        c.d.in_dims[k] == c.d.out_dims[k] ? 1 : cases[i].scale;
		}
		set_scales(&c);
		check_resize(&c);
	}
}

/* A scalar, empty outputs and inputs, bad descriptors. */
static void test_edges(void)
{
	struct rt_resize_desc d = { .dtype = RT_F32, .rank = 0 };
	float x[4] = { 1.5f, 2, 3, 4 }, y[8] = { 0 };
	setup();
	CHECK_EQ(rt_resize(ctxs[1], &d, x, y), RT_OK);
	CHECK(y[0] == 1.5f);
	d = (struct rt_resize_desc){ .dtype = RT_F32,
		                     .rank = 2,
		                     .in_dims = { 2, 2 },
		                     .out_dims = { 0, 4 },
		                     .scales = { 0, 2 } };
	CHECK_EQ(rt_resize(ctxs[1], &d, NULL, NULL), RT_OK);
	d.in_dims[0] = 0;
	d.out_dims[0] = 2;
	CHECK_EQ(rt_resize(ctxs[1], &d, x, y), RT_OK); /* nothing to read: zeros */
	CHECK(y[0] == 0 && y[7] == 0);
	d.dtype = RT_F64;
	CHECK_EQ(rt_resize(ctxs[1], &d, x, y), RT_ERR_ARGUMENT);
	d.dtype = RT_F32;
	d.coord = 6;
	CHECK_EQ(rt_resize(ctxs[1], &d, x, y), RT_ERR_ARGUMENT);
	/* absurd scales must not send a tap out of the input */
	d = (struct rt_resize_desc){ .dtype = RT_F32,
		                     .rank = 1,
		                     .mode = RT_RESIZE_CUBIC,
		                     .in_dims = { 4 },
		                     .out_dims = { 8 },
		                     .scales = { 1e-30f } };
	CHECK_EQ(rt_resize(ctxs[0], &d, x, y), RT_OK);
	d.scales[0] = NAN;
	CHECK_EQ(rt_resize(ctxs[0], &d, x, y), RT_OK);
	d.scales[0] = 0;
	d.coord = RT_COORD_TF_CROP_AND_RESIZE;
	d.roi[0] = -INFINITY;
	CHECK_EQ(rt_resize(ctxs[0], &d, x, y), RT_OK);
}

TESTS(T(test_random) T(test_all_modes) T(test_large) T(test_edges))
