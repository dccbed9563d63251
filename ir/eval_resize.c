/*
 * eval_resize.c - the reference evaluator for resize.
 *
 * Resize is separable: every dimension maps an output coordinate to a set
 * of input indices with weights (one tap for nearest, two for linear, four
 * for cubic), and an output element is the sum over all combinations of
 * one tap per dimension of the product of their weights times the input
 * element. The taps of each output coordinate are computed once per
 * dimension into a table.
 *
 * The rules follow the ONNX specification and its reference implementation
 * (onnx/reference/ops/op_resize.py), which generates the backend tests:
 *  - the coordinate transform uses the scale attribute, and the "resized
 *    length" in its formulas is scale * input length, which may be
 *    fractional (it is the integer output size only when sizes were given);
 *  - a source coordinate xo is split as i0 + ratio with ratio in (0, 1], so
 *    an integer coordinate is the second tap of the pair (i0, i0 + 1) and
 *    nearest modes only decide ties between the two;
 *  - taps outside the input read the nearest edge element, except that with
 *    exclude_outside their weights are dropped and the rest renormalized
 *    (for linear and cubic; nearest has a single tap, nothing to renormalize);
 *  - tf_crop_and_resize yields extrapolation for an output element whose
 *    source coordinate falls outside [0, length - 1] in any dimension.
 */
#include "eval.h"

#include <math.h>

/* One output coordinate's share along one dimension. */
struct taps {
	int n;         /* 0: outside the input, extrapolate */
	int64_t at[4]; /* input indices, clamped into the input */
	double w[4];
};

/*
 * The scale along dimension d: the model's float scale, or - when the model
 * gave sizes, which the IR records as empty scales (docs/ir.md) - out/in in
 * double, as the ONNX reference computes it (a float cannot hold 9/7, and
 * only the double ratio keeps align_corners' integer source coordinates
 * integer).
 */
static double scale_of(const struct ir_node *n, int d)
{
	int ns;
	const float *s = ir_attr_floats(n, "scales", &ns);
	int64_t in = n->in[0]->type.dims[d], out = n->out[0]->type.dims[d];
	if (ns)
		return s[d];
	return in ? (double)out / (double)in : 1;
}

/* The source coordinate of output coordinate x along dimension d. */
static double source_coord(const struct ir_node *n, int d, int64_t x)
{
	int rank = n->in[0]->type.rank, nroi;
	const float *roi = ir_attr_floats(n, "roi", &nroi);
	bool has_roi = nroi == 2 * rank; /* tf_crop_and_resize only */
	return ir_resize_coord(ir_attr_s(n, "coord"), x, scale_of(n, d), n->in[0]->type.dims[d],
	                       n->out[0]->type.dims[d], has_roi ? roi[d] : 0,
	                       has_roi ? roi[rank + d] : 1);
}

double ir_resize_coord(const char *coord, int64_t x, double scale, int64_t in, int64_t out,
                       double lo, double hi)
{
	double len = scale * (double)in;
	double half = ((double)x + 0.5) / scale - 0.5;
	if (!strcmp(coord, "half_pixel"))
		return half;
	if (!strcmp(coord, "half_pixel_symmetric"))
		return (double)in / 2 * (1 - (double)out / len) + half;
	if (!strcmp(coord, "pytorch_half_pixel"))
		return len > 1 ? half : 0;
	if (!strcmp(coord, "align_corners"))
		return len == 1 ? 0 : (double)x * (double)(in - 1) / (len - 1);
	if (!strcmp(coord, "asymmetric"))
		return (double)x / scale;
	/* tf_crop_and_resize: the roi's [lo, hi] in normalized units */
	if (len == 1)
		return 0.5 * (lo + hi) * (double)(in - 1);
	return lo * (double)(in - 1) + (double)x * (hi - lo) * (double)(in - 1) / (len - 1);
}

/* Keys' cubic convolution weights of the four taps i0-1 .. i0+2. */
static void cubic_weights(double r, double a, double *w)
{
	double s = 1 + r, t = 1 - r, u = 2 - r;
	w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
	w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
	w[2] = ((a + 2) * t - (a + 3)) * t * t + 1;
	w[3] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
}

/* Does nearest mode round fraction ratio (in (0, 1)) up to i0 + 1? */
static bool nearest_up(const char *mode, double ratio)
{
	if (!strcmp(mode, "round_prefer_floor"))
		return ratio > 0.5;
	if (!strcmp(mode, "round_prefer_ceil"))
		return ratio >= 0.5;
	return !strcmp(mode, "ceil");
}

/* Drops the weights of taps outside [0, in) and rescales the rest to sum 1. */
static void exclude_outside(struct taps *t, int64_t in)
{
	double sum = 0;
	for (int i = 0; i < t->n; i++) {
		if (t->at[i] < 0 || t->at[i] >= in)
			t->w[i] = 0;
		sum += t->w[i];
	}
	for (int i = 0; i < t->n; i++)
		t->w[i] /= sum;
}

/* Clamps the taps into the input and drops those of weight zero. */
static void finish_taps(struct taps *t, int64_t in)
{
	int k = 0;
	for (int i = 0; i < t->n; i++) {
		if (t->w[i] == 0)
			continue;
		t->at[k] = t->at[i] < 0 ? 0 : t->at[i] >= in ? in - 1 : t->at[i];
		t->w[k++] = t->w[i];
	}
	t->n = k;
}

static void dim_taps(const struct ir_node *n, int d, int64_t x, struct taps *t);

int ir_resize_taps(const struct ir_node *n, int d, int64_t x, int64_t at[4], double w[4])
{
	struct taps t;
	dim_taps(n, d, x, &t);
	for (int i = 0; i < t.n; i++)
		at[i] = t.at[i], w[i] = t.w[i];
	return t.n;
}

static void dim_taps(const struct ir_node *n, int d, int64_t x, struct taps *t)
{
	const char *mode = ir_attr_s(n, "mode");
	int64_t in = n->in[0]->type.dims[d], i0;
	double xo = source_coord(n, d, x), ratio;
	if (!strcmp(ir_attr_s(n, "coord"), "tf_crop_and_resize") && !(xo >= 0 && xo <= in - 1)) {
		t->n = 0;
		return;
	}
	/* beyond a few elements past either edge every tap reads the edge;
	 * clamping keeps the conversion to an integer defined */
	xo = fmin(fmax(xo, -4), (double)in + 4);
	i0 = (int64_t)floor(xo);
	ratio = xo - (double)i0;
	if (ratio == 0) {
		ratio = 1;
		i0--;
	}
	if (!strcmp(mode, "nearest")) {
		t->n = 1;
		t->at[0] = i0 + (ratio == 1 || nearest_up(ir_attr_s(n, "nearest"), ratio));
		t->w[0] = 1;
	} else if (!strcmp(mode, "linear")) {
		t->n = 2;
		t->at[0] = i0;
		t->at[1] = i0 + 1;
		t->w[0] = 1 - ratio;
		t->w[1] = ratio;
	} else {
		t->n = 4;
		for (int i = 0; i < 4; i++)
			t->at[i] = i0 - 1 + i;
		cubic_weights(ratio, ir_attr_f(n, "cubic_a"), t->w);
	}
	if (t->n > 1 && ir_attr_i(n, "exclude_outside"))
		exclude_outside(t, in);
	finish_taps(t, in);
}

/* Sum over one tap per dimension of the weights' product times the input. */
static double combine(struct fold *f, struct taps *const *t, int rank)
{
	int64_t s[IR_MAX_RANK], pick[IR_MAX_RANK] = { 0 }, count[IR_MAX_RANK];
	double sum = 0;
	for (int d = 0; d < rank; d++) {
		if (t[d]->n == 0)
			return ir_attr_f(f->n, "extrapolation");
		count[d] = t[d]->n;
	}
	eval_strides(&IN(0)->type, s);
	do {
		double w = 1;
		int64_t off = 0;
		for (int d = 0; d < rank; d++) {
			w *= t[d]->w[pick[d]];
			off += t[d]->at[pick[d]] * s[d];
		}
		sum += w * getf(IN(0), off);
	} while (eval_next(pick, count, rank));
	return sum;
}

bool eval_resize(struct fold *f)
{
	const struct ir_type *y = &OUT(0)->type;
	int rank = y->rank;
	int64_t o[IR_MAX_RANK] = { 0 }, ntaps = 0, total = ir_type_elems(y);
	struct taps *table[IR_MAX_RANK], *t[IR_MAX_RANK], *all;
	if (total == 0)
		return true;
	for (int d = 0; d < rank; d++)
		ntaps += y->dims[d];
	all = eval_alloc(f, sizeof *all * (size_t)ntaps);
	for (int d = 0; d < rank; d++) {
		table[d] = d ? table[d - 1] + y->dims[d - 1] : all;
		for (int64_t x = 0; x < y->dims[d]; x++)
			dim_taps(f->n, d, x, &table[d][x]);
	}
	for (int64_t k = 0; k < total; k++) {
		for (int d = 0; d < rank; d++)
			t[d] = &table[d][o[d]];
		putf(f, 0, k, combine(f, t, rank));
		eval_next(o, y->dims, rank);
	}
	eval_free(f, all);
	return true;
}
