/*
 * ops_signal.c - importers for signal processing and for ops whose outputs
 * follow from shapes and constants.
 *
 * None of these is an IR op. The window functions, MelWeightMatrix and
 * EyeLike are constants computed here, in double, from operands that must
 * be constants (a graph input can be bound with --const); every other op is
 * lowered to existing IR ops around a constant that carries what it knows:
 * DFT and STFT are one MatMul by a DFT matrix, AffineGrid a MatMul by the
 * base grid, OneHot a comparison with 0..depth-1, ReverseSequence a
 * gather_elements by an index computed from the lengths. The constants
 * computed here are bounded by the folding budget and the constant limit,
 * as ConstantOfShape's and Range's are, and the node is refused past them
 * (the DFT matrix, which the lowering cannot do without, by its own bound);
 * indices built from IR ops (STFT's frames) fold under the budget and are
 * computed at run time past it.
 */
#include "fe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.141592653589793 /* numpy's np.pi: the double nearest pi */

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

static bool bind1(struct fe_node *nd, struct ir_value *y)
{
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	return true;
}

/* Input i as a constant holding one value (a scalar or one element). */
static const struct ir_value *one_value(struct fe_node *nd, int i, const char *what)
{
	const struct ir_value *c;
	int64_t n;
	if (!fe_need_const_value(nd, i, what))
		return NULL;
	c = nd->in[i];
	if ((n = ir_type_elems(&c->type)) != 1) {
		fe_fail(nd, "input %d (%s) must hold one value, not %lld", i, what, (long long)n);
		return NULL;
	}
	return c;
}

/* Input i, one constant number, as int64: floats are truncated, as ONNX
 * casts a non-integer depth or length. */
static bool const_int(struct fe_node *nd, int i, const char *what, int64_t *v)
{
	const struct ir_value *c = one_value(nd, i, what);
	double d;
	if (!c)
		return false;
	if (!ir_dtypes[c->type.dtype].is_float) {
		*v = ir_load_i64(c->type.dtype, c->data, 0);
		return true;
	}
	d = ir_load_f64(c->type.dtype, c->data, 0);
	if (!(d > -9e18 && d < 9e18))
		return fe_fail(nd, "input %d (%s) is %g, not an integer", i, what, d);
	*v = (int64_t)d;
	return true;
}

static bool const_float(struct fe_node *nd, int i, const char *what, double *v)
{
	const struct ir_value *c = one_value(nd, i, what);
	if (!c)
		return false;
	*v = ir_load_f64(c->type.dtype, c->data, 0);
	return true;
}

/* The element type an attribute names (an ONNX TensorProto code). */
static bool attr_dtype(struct fe_node *nd, const char *attr, int64_t def, bool allow_bool,
                       enum ir_dtype *t)
{
	int64_t code = fe_int(nd, attr, def);
	if (nd->failed)
		return false;
	*t = code >= 0 && code <= 64 ? ir_dtype_from_onnx((int)code) : IR_DT_NONE;
	if (*t == IR_DT_NONE || (*t == IR_BOOL && !allow_bool))
		return fe_fail(nd, "%s %s (type %lld) is not supported", attr,
		               ir_onnx_dtype_name(code >= 0 && code <= 64 ? (int)code : -1),
		               (long long)code);
	return true;
}

/*
 * Room for the values of a constant of type t that takes a visit per
 * element and extra visits (extra < 2^32) to compute at import: NULL after
 * reporting when t is past the constant limit or the work past the folding
 * budget.
 */
static double *values_for(struct fe_node *nd, const struct ir_type *t, int64_t extra)
{
	int64_t n, work;
	if (!fe_check_const_size(nd, t))
		return NULL;
	n = ir_type_elems(t);
	work = n + extra;
	if (!fe_fold_ok(nd->fe, work)) {
		fe_fail(nd,
		        "computing its constant (%lld element visits) is past the import's "
		        "folding budget",
		        (long long)work);
		return NULL;
	}
	return ir_arena_alloc_big(&nd->fe->m->arena, sizeof(double) * (size_t)(n ? n : 1));
}

/* The constant of type t holding v (from values_for, released here), named
 * after output k (k < 0: an intermediate). */
static struct ir_value *const_values(struct fe_node *nd, int k, const struct ir_type *t, double *v)
{
	int64_t n = ir_type_elems(t);
	void *data = ir_arena_alloc_big(&nd->fe->m->arena,
	                                (size_t)(n ? n : 1) * (size_t)ir_dtype_size(t->dtype));
	for (int64_t i = 0; i < n; i++)
		ir_store_f64(t->dtype, data, (size_t)i, v[i]);
	ir_arena_release(&nd->fe->m->arena, v);
	return fe_const(nd, k, t, data);
}

/* An int64 constant of dims (rank r) holding 0, 1, ... in order (NULL
 * after reporting when it is past the constant limit). */
static struct ir_value *iota(struct fe_node *nd, const int64_t *dims, int r)
{
	struct ir_type t = { .dtype = IR_I64, .rank = r };
	int64_t n, *v;
	memcpy(t.dims, dims, sizeof *dims * (size_t)r);
	if (!fe_check_const_size(nd, &t))
		return NULL;
	n = ir_type_elems(&t);
	v = ir_arena_alloc_big(&nd->fe->m->arena, sizeof *v * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		v[i] = i;
	return fe_const(nd, -1, &t, v);
}

static struct ir_value *scalar_i64(struct fe_node *nd, int64_t v)
{
	struct ir_type t = { .dtype = IR_I64 };
	return fe_const(nd, -1, &t, &v);
}

/* x as element type t (x itself when it has it). */
static struct ir_value *cast(struct fe_node *nd, struct ir_value *x, enum ir_dtype t)
{
	struct ir_node *n;
	if (x->type.dtype == t)
		return x;
	n = fe_emit(nd, IR_OP_CAST, &x, 1, NULL, 1);
	ir_set_t(nd->fe->m, n, "to", t);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

static struct ir_value *binary(struct fe_node *nd, enum ir_op op, struct ir_value *a,
                               struct ir_value *b, int k)
{
	struct ir_value *in[2] = { a, b };
	return a && b ? fe_simple(nd, op, in, 2, k) : NULL;
}

/* Element i of the 1-D x, a scalar (a gather by a constant index). */
static struct ir_value *element(struct fe_node *nd, struct ir_value *x, int64_t i)
{
	struct ir_value *in[2] = { x, scalar_i64(nd, i) };
	struct ir_node *n = fe_emit(nd, IR_OP_GATHER, in, 2, NULL, 1);
	ir_set_i(nd->fe->m, n, "axis", 0);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

/* ------------------------------------------------------------------------ */
/* DFT and STFT                                                             */
/* ------------------------------------------------------------------------ */

/* The DFT matrix is bounded like Resize's antialiasing weights, by its
 * size (2^25 elements: a 4096-point real DFT), not by the folding budget:
 * it is the lowering, nothing computes it at run time. */
#define DFT_MAX_LENGTH  ((int64_t)1 << 30)
#define DFT_MAX_WEIGHTS ((int64_t)1 << 25)

/* cos and sin of 2 pi p / n, exact at the quarter turns. */
static void twiddle(int64_t p, int64_t n, double *c, double *s)
{
	static const double qc[4] = { 1, 0, -1, 0 }, qs[4] = { 0, 1, 0, -1 };
	p %= n;
	if ((4 * p) % n == 0) {
		*c = qc[4 * p / n];
		*s = qs[4 * p / n];
		return;
	}
	*c = cos(2 * PI * (double)p / (double)n);
	*s = sin(2 * PI * (double)p / (double)n);
}

/*
 * The DFT matrix w of m input elements of c parts (1 real, 2 complex) by
 * bins outputs of co parts: row j * c + part, column b * co + part. The
 * forward transform sums x_j e^(-2 pi i jb/n); the inverse e^(+2 pi i jb/n)
 * / n; the inverse one-sided (irfft, co 1) is the real part of the inverse
 * of the Hermitian spectrum whose first n/2 + 1 bins are given: bins 1 to
 * (n-1)/2 count twice, and the imaginary parts of bin 0 and of the Nyquist
 * bin (even n) are not read, as numpy's irfft does.
 */
static void dft_matrix(bool inverse, bool irfft, int64_t n, int64_t m, int c, int64_t bins, int co,
                       double *w)
{
	int64_t cols = bins * co;
	for (int64_t j = 0; j < m; j++)
		for (int64_t b = 0; b < bins; b++) {
			double cs, sn, *re = w + j * c * cols + b * co, *im = re + cols;
			twiddle(j * b, n, &cs, &sn);
			if (irfft) {
				bool edge = j == 0 || 2 * j == n;
				double g = edge ? 1.0 / (double)n : 2.0 / (double)n;
				re[0] = g * cs;
				if (c == 2)
					im[0] = edge ? 0 : -g * sn;
			} else if (inverse) { /* (a + ib)(cos + i sin) / n */
				re[0] = cs / (double)n;
				re[1] = sn / (double)n;
				if (c == 2) {
					im[0] = -sn / (double)n;
					im[1] = cs / (double)n;
				}
			} else { /* (a + ib)(cos - i sin) */
				re[0] = cs;
				re[1] = -sn;
				if (c == 2) {
					im[0] = sn;
					im[1] = cs;
				}
			}
		}
}

/*
 * The DFT of x (real [..., 1] or complex [..., 2]) along axis, of length n,
 * named after output k: the signal's first n elements (fewer when it is
 * shorter: the zero padding adds nothing; inverse one-sided: its first
 * n/2 + 1 bins), with the axis moved next to the parts and merged with
 * them, times one constant matrix. O(n^2) per transform: a GEMM of
 * [transforms, m * c] by [m * c, bins * co] in the signal's type (the
 * matrix is computed in double and rounded once).
 */
static struct ir_value *dft(struct fe_node *nd, struct ir_value *x, int axis, int64_t n,
                            bool inverse, bool onesided, int k)
{
	int r = x->type.rank, c = (int)x->type.dims[r - 1], co = inverse && onesided ? 1 : 2;
	bool irfft = inverse && onesided;
	int64_t m = irfft ? n / 2 + 1 : n, bins = onesided && !inverse ? n / 2 + 1 : n;
	int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK], dims[IR_MAX_RANK];
	struct ir_type wt = { .dtype = x->type.dtype, .rank = 2 };
	struct ir_value *w;
	double *v;
	if (n > DFT_MAX_LENGTH)
		return fe_fail(nd, "a DFT of %lld points is beyond the lowering's matrix",
		               (long long)n),
		       NULL;
	if (m > x->type.dims[axis])
		m = x->type.dims[axis];
	wt.dims[0] = m * c;
	wt.dims[1] = bins * co;
	if (wt.dims[0] * wt.dims[1] > DFT_MAX_WEIGHTS)
		return fe_fail(nd,
		               "a DFT of %lld points has a matrix of %lld x %lld elements, beyond "
		               "the lowering's %lld",
		               (long long)n, (long long)wt.dims[0], (long long)wt.dims[1],
		               (long long)DFT_MAX_WEIGHTS),
		       NULL;
	if (!fe_check_const_size(nd, &wt))
		return NULL;
	v = ir_arena_alloc_big(&nd->fe->m->arena, sizeof *v * (size_t)(wt.dims[0] * wt.dims[1]));
	dft_matrix(inverse, irfft, n, m, c, bins, co, v);
	w = const_values(nd, -1, &wt, v);
	if (m < x->type.dims[axis]) { /* the first m elements */
		int64_t st[IR_MAX_RANK] = { 0 }, en[IR_MAX_RANK], sp[IR_MAX_RANK];
		struct ir_node *s = fe_emit(nd, IR_OP_SLICE, &x, 1, NULL, 1);
		for (int d = 0; d < r; d++) {
			en[d] = d == axis ? m : x->type.dims[d];
			sp[d] = 1;
		}
		ir_set_ints(nd->fe->m, s, "starts", st, r);
		ir_set_ints(nd->fe->m, s, "ends", en, r);
		ir_set_ints(nd->fe->m, s, "steps", sp, r);
		if (!fe_finish(nd, s))
			return NULL;
		x = s->out[0];
	}
	for (int d = 0, j = 0; d < r; d++) /* axis next to the parts */
		if (d != axis && d != r - 1)
			perm[j++] = d;
	perm[r - 2] = axis;
	perm[r - 1] = r - 1;
	for (int d = 0; d < r; d++)
		inv[perm[d]] = d;
	if (axis != r - 2 && !(x = fe_transpose(nd, x, perm, -1)))
		return NULL;
	memcpy(dims, x->type.dims, sizeof dims);
	dims[r - 2] = m * c;
	if (!(x = fe_reshape(nd, x, dims, r - 1, -1)) || !(x = binary(nd, IR_OP_MATMUL, x, w, -1)))
		return NULL;
	dims[r - 2] = bins;
	dims[r - 1] = co;
	if (!(x = fe_reshape(nd, x, dims, r, axis == r - 2 ? k : -1)))
		return NULL;
	return axis == r - 2 ? x : fe_transpose(nd, x, inv, k);
}

/* A float signal of rank 2 or more (STFT: exactly 3) whose last dimension
 * holds 1 (real) or 2 (complex) parts. */
static bool check_signal(struct fe_node *nd, const struct ir_value *x, bool stft)
{
	const struct ir_type *t = &x->type;
	if (!ir_dtypes[t->dtype].is_float)
		return fe_fail(nd, "the signal must be a float tensor, not %s",
		               ir_dtype_name(t->dtype));
	if ((stft ? t->rank != 3 : t->rank < 2) ||
	    (t->dims[t->rank - 1] != 1 && t->dims[t->rank - 1] != 2))
		return fe_fail(nd,
		               "the signal must have %s and a last dimension of 1 (real) or 2 "
		               "(complex)",
		               stft ? "rank 3 ([batch, length, parts])" : "rank 2 or more");
	return true;
}

/* DFT-17: axis an attribute (default 1); DFT-20: an input (default -2). */
static bool imp_dft(struct fe_node *nd)
{
	bool inverse = fe_int(nd, "inverse", 0) != 0, onesided = fe_int(nd, "onesided", 0) != 0;
	int64_t axis = nd->version < 20 ? fe_int(nd, "axis", 1) : -2, n;
	struct ir_value *x;
	int r;
	if (!fe_inputs(nd, 1, nd->version < 20 ? 2 : 3) || nd->failed)
		return false;
	x = nd->in[0];
	if (!check_signal(nd, x, false))
		return false;
	r = x->type.rank;
	if (nd->version >= 20 && fe_in(nd, 2) && !const_int(nd, 2, "axis", &axis))
		return false;
	if (axis < -r || axis == -1 || axis > r - 2)
		return fe_fail(nd,
		               "axis %lld is not a signal axis of rank %d (in [%d, -2] or [0, %d])",
		               (long long)axis, r, -r, r - 2);
	if (axis < 0)
		axis += r;
	n = inverse && onesided ? 2 * (x->type.dims[axis] - 1) : x->type.dims[axis];
	if (fe_in(nd, 1) && !const_int(nd, 1, "dft_length", &n))
		return false;
	if (n < 1)
		return fe_fail(nd, "dft_length %lld is not positive", (long long)n);
	return bind1(nd, dft(nd, x, (int)axis, n, inverse, onesided, 0));
}

/*
 * STFT-17: frames of frame_length samples every frame_step, gathered by an
 * index ([frames, frame_length] along the signal axis: a constant when it
 * fits the folding budget), times the window, then the DFT of each frame. The window must have frame_length
 * samples.
 */
static bool imp_stft(struct fe_node *nd)
{
	bool onesided = fe_int(nd, "onesided", 1) != 0;
	struct ir_value *x, *win, *frames;
	int64_t step, len, flen, nf;
	struct ir_node *g;
	if (!fe_inputs(nd, 2, 4) || nd->failed)
		return false;
	x = nd->in[0];
	win = fe_in(nd, 2);
	if (!check_signal(nd, x, true))
		return false;
	len = x->type.dims[1];
	if (!const_int(nd, 1, "frame_step", &step))
		return false;
	if (win && (win->type.rank != 1 || win->type.dtype != x->type.dtype))
		return fe_fail(nd, "the window must be a 1-D tensor of the signal's type");
	flen = win ? win->type.dims[0] : len;
	if (fe_in(nd, 3) && !const_int(nd, 3, "frame_length", &flen))
		return false;
	if (win && win->type.dims[0] != flen)
		return fe_fail(nd,
		               "the window has %lld samples, frame_length is %lld: onnxc needs "
		               "them equal",
		               (long long)win->type.dims[0], (long long)flen);
	if (step < 1 || flen < 1 || flen > len)
		return fe_fail(
		        nd,
		        "frame_step %lld and frame_length %lld do not frame a signal of %lld "
		        "samples",
		        (long long)step, (long long)flen, (long long)len);
	nf = 1 + (len - flen) / step;
	{ /* index[f, j] = f * step + j: folded when it fits the budget */
		int64_t fd[2] = { nf, 1 }, jd[2] = { 1, flen };
		struct ir_value *f = iota(nd, fd, 2);
		struct ir_value *start = binary(nd, IR_OP_MUL, f, scalar_i64(nd, step), -1);
		struct ir_value *in[2] = { x, binary(nd, IR_OP_ADD, start, iota(nd, jd, 2), -1) };
		if (!in[1])
			return false;
		g = fe_emit(nd, IR_OP_GATHER, in, 2, NULL, 1); /* [batch, frames, flen, parts] */
		ir_set_i(nd->fe->m, g, "axis", 1);
		if (!fe_finish(nd, g))
			return false;
		frames = g->out[0];
	}
	if (win) {
		int64_t wd[2] = { flen, 1 };
		if (!(frames = binary(nd, IR_OP_MUL, frames, fe_reshape(nd, win, wd, 2, -1), -1)))
			return false;
	}
	return bind1(nd, dft(nd, frames, 2, flen, false, onesided, 0));
}

/* ------------------------------------------------------------------------ */
/* Windows and MelWeightMatrix                                              */
/* ------------------------------------------------------------------------ */

/*
 * HannWindow, HammingWindow, BlackmanWindow (17): size points of the window
 * over a period of size (periodic) or size - 1 (symmetric), in double with
 * ONNX's reference's formulas, rounded once to output_datatype.
 */
static bool imp_window(struct fe_node *nd)
{
	int64_t periodic = fe_int(nd, "periodic", 1), size;
	const char *op = nd->def->name;
	struct ir_type t = { .rank = 1 };
	double *v, n1;
	if (!fe_inputs(nd, 1, 1) || !attr_dtype(nd, "output_datatype", 1, false, &t.dtype))
		return false;
	if (periodic != 0 && periodic != 1)
		return fe_fail(nd, "periodic is %lld, not 0 or 1", (long long)periodic);
	if (!const_int(nd, 0, "size", &size))
		return false;
	if (size < 0)
		return fe_fail(nd, "size %lld is negative", (long long)size);
	t.dims[0] = size;
	if (!(v = values_for(nd, &t, 0)))
		return false;
	n1 = (double)(periodic ? size : size - 1);
	for (int64_t i = 0; i < size; i++) {
		double x = (double)i;
		if (!strcmp(op, "HannWindow")) {
			double sn = sin(x * PI / n1);
			v[i] = sn * sn;
		} else if (!strcmp(op, "HammingWindow")) {
			v[i] = 25.0 / 46.0 - cos(x * PI * 2 / n1) * (1 - 25.0 / 46.0);
		} else {
			v[i] = cos(x * (PI * 2) / n1) * -0.5 + cos(x * (PI * 4) / n1) * 0.08 + 0.42;
		}
	}
	return bind1(nd, const_values(nd, 0, &t, v));
}

/* v rounded to the float type t (the precision numpy computes t in). */
static double round_to(enum ir_dtype t, double v)
{
	unsigned char b[8];
	ir_store_f64(t, b, 0, v);
	return ir_load_f64(t, b, 0);
}

/* numpy's floor_divide of doubles (npy_divmod): exact where floor(a / b)
 * is not, when a / b rounds up to an integer. */
static double floor_divide(double a, double b)
{
	double mod = fmod(a, b), div = (a - mod) / b, fl;
	if (mod != 0 && (b < 0) != (mod < 0))
		div -= 1.0;
	if (div == 0)
		return copysign(0.0, a / b);
	fl = floor(div);
	return div - fl > 0.5 ? fl + 1.0 : fl;
}

/* Whether bins lo..hi (none when lo > hi) lie in [0, n). */
static bool bins_in(int64_t lo, int64_t hi, int64_t n) { return lo > hi || (lo >= 0 && hi < n); }

/*
 * MelWeightMatrix (17): [dft_length / 2 + 1, num_mel_bins] triangles with
 * peak 1 between num_mel_bins + 2 edges evenly spaced on the mel scale,
 * computed exactly as ONNX's reference does: the mel edges in the type of
 * the hertz inputs, the bins in double, floored with numpy's floor_divide.
 */
static bool imp_mel_weight_matrix(struct fe_node *nd)
{
	static const char *const what[5] = { "num_mel_bins", "dft_length", "sample_rate",
		                             "lower_edge_hertz", "upper_edge_hertz" };
	int64_t nmel, dftlen, rate, nspec, *edge;
	double lo, hi, lmel, hmel, step, *v;
	struct ir_type t = { .rank = 2 };
	enum ir_dtype ht;
	if (!fe_inputs(nd, 5, 5) || !attr_dtype(nd, "output_datatype", 1, false, &t.dtype))
		return false;
	for (int i = 0; i < 5; i++) /* all five, so each is reported */
		fe_need_const_value(nd, i, what[i]);
	if (nd->failed || !const_int(nd, 0, what[0], &nmel) ||
	    !const_int(nd, 1, what[1], &dftlen) || !const_int(nd, 2, what[2], &rate) ||
	    !const_float(nd, 3, what[3], &lo) || !const_float(nd, 4, what[4], &hi))
		return false;
	ht = nd->in[3]->type.dtype;
	if (!ir_dtypes[ht].is_float)
		ht = IR_F64;
	if (nmel < 0 || dftlen < 1 || rate == 0 || nmel > (1 << 24))
		return fe_fail(nd,
		               "num_mel_bins %lld, dft_length %lld and sample_rate %lld do not "
		               "describe a mel filter bank",
		               (long long)nmel, (long long)dftlen, (long long)rate);
	nspec = dftlen / 2 + 1;
	t.dims[0] = nspec;
	t.dims[1] = nmel;
	if (!(v = values_for(nd, &t, 2 * nmel + 2)))
		return false;
	memset(v, 0, sizeof *v * (size_t)(nspec * nmel));
	lmel = round_to(ht, 2595 * round_to(ht, log10(round_to(ht, 1 + round_to(ht, lo / 700)))));
	hmel = round_to(ht, 2595 * round_to(ht, log10(round_to(ht, 1 + round_to(ht, hi / 700)))));
	step = round_to(ht, round_to(ht, hmel - lmel) / (double)(nmel + 2));
	edge = ir_arena_alloc(&nd->fe->m->arena, sizeof *edge * (size_t)(nmel + 2));
	for (int64_t i = 0; i < nmel + 2; i++) {
		double f = 700 * (pow(10, ((double)i * step + lmel) / 2595) - 1);
		f = floor_divide((double)(dftlen + 1) * f, (double)rate);
		if (!(f > -9e18 && f < 9e18))
			return fe_fail(nd, "mel band edge %lld is not a finite frequency",
			               (long long)i);
		edge[i] = (int64_t)f;
	}
	for (int64_t i = 0; i < nmel; i++) {
		/* band i rises over bins l..c and falls over c..h - 1 */
		int64_t l = edge[i], c = edge[i + 1], h = edge[i + 2];
		if (!bins_in(l, c, nspec) || !bins_in(c, h - 1, nspec))
			return fe_fail(
			        nd,
			        "mel band %lld spans frequency bins %lld to %lld, outside the "
			        "%lld bins of a %lld-point DFT",
			        (long long)i, (long long)l, (long long)(h > c ? h - 1 : c),
			        (long long)nspec, (long long)dftlen);
		if (c == l)
			v[c * nmel + i] = 1;
		else
			for (int64_t j = l; j <= c; j++)
				v[j * nmel + i] = (double)(j - l) / (double)(c - l);
		for (int64_t j = c; j < h; j++)
			v[j * nmel + i] = (double)(h - j) / (double)(h - c);
	}
	return bind1(nd, const_values(nd, 0, &t, v));
}

/* ------------------------------------------------------------------------ */
/* EyeLike, OneHot                                                          */
/* ------------------------------------------------------------------------ */

/* EyeLike (9, 22): ones at [i, i + k] in the input's static shape; the
 * input's values are not read. */
static bool imp_eye_like(struct fe_node *nd)
{
	int64_t k = fe_int(nd, "k", 0), rows, cols;
	struct ir_type t;
	double *v;
	if (!fe_inputs(nd, 1, 1) || nd->failed)
		return false;
	t = nd->in[0]->type;
	if (fe_has(nd, "dtype") && !attr_dtype(nd, "dtype", 1, true, &t.dtype))
		return false;
	if (t.rank != 2)
		return fe_fail(nd, "the input must have rank 2, not %d", t.rank);
	rows = t.dims[0];
	cols = t.dims[1];
	if (!(v = values_for(nd, &t, 0)))
		return false;
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < cols; j++)
			v[i * cols + j] = j - i == k;
	return bind1(nd, const_values(nd, 0, &t, v));
}

/*
 * OneHot (9, 11): equal(indices, 0..depth-1) with the class axis inserted at
 * axis, then where(., on, off). The indices are cast to int64 (floats
 * truncated); from OneHot-11 those in [-depth, -1] count from the end.
 * Indices out of range match no class: all off.
 */
static bool imp_one_hot(struct fe_node *nd)
{
	int64_t axis = fe_int(nd, "axis", -1), depth, dims[IR_MAX_RANK], cls[IR_MAX_RANK];
	struct ir_value *idx, *vals, *off, *on;
	int r;
	if (!fe_inputs(nd, 3, 3) || nd->failed)
		return false;
	idx = nd->in[0];
	vals = nd->in[2];
	r = idx->type.rank;
	if (r + 1 > IR_MAX_RANK)
		return fe_fail(nd, "the result's rank %d exceeds %d", r + 1, IR_MAX_RANK);
	if (axis < -r - 1 || axis > r)
		return fe_fail(nd, "axis %lld is out of range for rank %d", (long long)axis, r + 1);
	if (axis < 0)
		axis += r + 1;
	if (!ir_dtypes[idx->type.dtype].is_float && !ir_dtypes[idx->type.dtype].is_int)
		return fe_fail(nd, "indices must be numbers, not %s",
		               ir_dtype_name(idx->type.dtype));
	if (vals->type.rank != 1 || vals->type.dims[0] != 2)
		return fe_fail(nd, "values must be [off_value, on_value]");
	if (!const_int(nd, 1, "depth", &depth))
		return false;
	if (depth < 1)
		return fe_fail(nd, "depth %lld is not positive", (long long)depth);
	if (!(idx = cast(nd, idx, IR_I64)))
		return false;
	if (nd->version >= 11) { /* idx < 0 ? idx + depth : idx */
		struct ir_value *neg = binary(nd, IR_OP_LESS, idx, scalar_i64(nd, 0), -1);
		struct ir_value *up = binary(nd, IR_OP_ADD, idx, scalar_i64(nd, depth), -1);
		idx = fe_where(nd, neg, up, idx, -1);
	}
	if (!idx)
		return false;
	for (int i = 0, j = 0; i <= r; i++) {
		dims[i] = i == axis ? 1 : idx->type.dims[j++];
		cls[i] = i == axis ? depth : 1;
	}
	if (!(idx = fe_reshape(nd, idx, dims, r + 1, -1)) || !(off = element(nd, vals, 0)) ||
	    !(on = element(nd, vals, 1)))
		return false;
	return bind1(nd, fe_where(nd, binary(nd, IR_OP_EQUAL, idx, iota(nd, cls, r + 1), -1), on,
	                          off, 0));
}

/* ------------------------------------------------------------------------ */
/* AffineGrid, ReverseSequence                                              */
/* ------------------------------------------------------------------------ */

/* Coordinate i of n along a grid dimension, as ONNX's reference computes it
 * with numpy's arange (start + i * (second - start)); with align_corners a
 * dimension of 1 is at -1, as ONNX's function body has it. */
static double grid_coord(bool align, int64_t n, int64_t i)
{
	double step = align ? (n > 1 ? 2.0 / (double)(n - 1) : 0) : 2.0 / (double)n;
	double start = align ? -1 : -1 + step / 2;
	return i == 0   ? start
	       : i == 1 ? start + step
	                : start + (double)i * ((start + step) - start);
}

/*
 * AffineGrid (20): grid[n, p] = theta[n] [x_p, y_p, (z_p,) 1]: a MatMul of
 * the constant base grid [points, s + 1] by theta transposed, [N, s + 1, s].
 */
static bool imp_affine_grid(struct fe_node *nd)
{
	bool align = fe_int(nd, "align_corners", 0) != 0;
	struct ir_value *theta, *base;
	int64_t *size, dims[IR_MAX_RANK], perm[3] = { 0, 2, 1 }, pts = 1;
	struct ir_type bt;
	double *v;
	int s, ns;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	theta = nd->in[0];
	s = theta->type.rank == 3 ? (int)theta->type.dims[1] : 0;
	if (!ir_dtypes[theta->type.dtype].is_float || (s != 2 && s != 3) ||
	    theta->type.dims[2] != s + 1)
		return fe_fail(nd, "theta must be a float tensor of [N, 2, 3] or [N, 3, 4]");
	if (!fe_need_const_value(nd, 1, "size") || (ns = fe_const_ints(nd, 1, "size", &size)) < 0)
		return false;
	if (ns != s + 2 || size[0] != theta->type.dims[0])
		return fe_fail(nd, "size must be [N, C, %s] with theta's N (%lld)",
		               s == 2 ? "H, W" : "D, H, W", (long long)theta->type.dims[0]);
	dims[0] = size[0];
	for (int d = 0; d < s; d++) {
		if (size[2 + d] < 1)
			return fe_fail(nd, "size has a spatial dimension of %lld",
			               (long long)size[2 + d]);
		if (__builtin_mul_overflow(pts, size[2 + d], &pts))
			return fe_fail(nd, "size overflows");
		dims[1 + d] = size[2 + d];
	}
	dims[1 + s] = s;
	bt = (struct ir_type){ .dtype = theta->type.dtype, .rank = 2, .dims = { pts, s + 1 } };
	if (!(v = values_for(nd, &bt, 0)))
		return false;
	for (int64_t p = 0; p < pts; p++) { /* [x, y, (z,) 1]: x along the last dimension */
		int64_t q = p;
		for (int d = s - 1; d >= 0; d--) {
			v[p * (s + 1) + (s - 1 - d)] =
			        grid_coord(align, size[2 + d], q % size[2 + d]);
			q /= size[2 + d];
		}
		v[p * (s + 1) + s] = 1;
	}
	base = const_values(nd, -1, &bt, v);
	if (!(theta = fe_transpose(nd, theta, perm, -1)) ||
	    !(theta = binary(nd, IR_OP_MATMUL, base, theta, -1)))
		return false;
	return bind1(nd, fe_reshape(nd, theta, dims, s + 2, 0));
}

/*
 * ReverseSequence (10): gather_elements along the time axis by
 * index[b, t] = t < len_b ? len_b - 1 - t : t (len_b capped at the time
 * dimension), built from the run-time lengths on the [batch, time] plane
 * and expanded over the other dimensions.
 */
static bool imp_reverse_sequence(struct fe_node *nd)
{
	int64_t ba = fe_int(nd, "batch_axis", 1), ta = fe_int(nd, "time_axis", 0);
	int64_t steps, lens_dims[2] = { 1, 1 }, time_dims[2] = { 1, 1 }, plane[IR_MAX_RANK];
	struct ir_value *x, *lens, *t, *idx;
	struct ir_node *g;
	const char *name;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	x = nd->in[0];
	lens = nd->in[1];
	if (x->type.rank < 2)
		return fe_fail(nd, "the input must have rank 2 or more, not %d", x->type.rank);
	if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
		return fe_fail(nd, "batch_axis %lld and time_axis %lld must be 0 and 1 or 1 and 0",
		               (long long)ba, (long long)ta);
	if (!ir_dtypes[lens->type.dtype].is_int || lens->type.rank != 1 ||
	    lens->type.dims[0] != x->type.dims[ba])
		return fe_fail(nd, "sequence_lens must be %lld integers, one per batch entry",
		               (long long)x->type.dims[ba]);
	steps = x->type.dims[ta];
	lens_dims[ba] = x->type.dims[ba];
	time_dims[ta] = steps;
	t = iota(nd, time_dims, 2);
	if (!(lens = cast(nd, lens, IR_I64)) || !(lens = fe_reshape(nd, lens, lens_dims, 2, -1)) ||
	    !(lens = binary(nd, IR_OP_MIN, lens, scalar_i64(nd, steps), -1)))
		return false;
	{
		struct ir_value *in = binary(nd, IR_OP_LESS, t, lens, -1);
		struct ir_value *last = binary(nd, IR_OP_SUB, lens, scalar_i64(nd, 1), -1);
		if (!(idx = fe_where(nd, in, binary(nd, IR_OP_SUB, last, t, -1), t, -1)))
			return false;
	}
	if (x->type.rank > 2) {
		struct ir_node *e;
		for (int d = 0; d < x->type.rank; d++)
			plane[d] = d < 2 ? x->type.dims[d] : 1;
		if (!(idx = fe_reshape(nd, idx, plane, x->type.rank, -1)))
			return false;
		e = fe_emit(nd, IR_OP_EXPAND, &idx, 1, NULL, 1);
		ir_set_ints(nd->fe->m, e, "shape", x->type.dims, x->type.rank);
		if (!fe_finish(nd, e))
			return false;
		idx = e->out[0];
	}
	{
		struct ir_value *in[2] = { x, idx };
		name = fe_out_name(nd, 0);
		g = fe_emit(nd, IR_OP_GATHER_ELEMENTS, in, 2, &name, 1);
		ir_set_i(nd->fe->m, g, "axis", ta);
		return fe_finish(nd, g) && bind1(nd, g->out[0]);
	}
}

const struct fe_op fe_ops_signal[] = {
	{ "DFT", imp_dft, IR_OP_MATMUL, { 17, 20 } },
	{ "STFT", imp_stft, IR_OP_MATMUL, { 17 } },
	{ "HannWindow", imp_window, IR_OP_COUNT, { 17 } },
	{ "HammingWindow", imp_window, IR_OP_COUNT, { 17 } },
	{ "BlackmanWindow", imp_window, IR_OP_COUNT, { 17 } },
	{ "MelWeightMatrix", imp_mel_weight_matrix, IR_OP_COUNT, { 17 } },
	{ "EyeLike", imp_eye_like, IR_OP_COUNT, { 9, 22 } },
	{ "OneHot", imp_one_hot, IR_OP_WHERE, { 9, 11 } },
	{ "AffineGrid", imp_affine_grid, IR_OP_MATMUL, { 20 } },
	{ "ReverseSequence", imp_reverse_sequence, IR_OP_GATHER_ELEMENTS, { 10 } },
	{ NULL, NULL, 0, { 0 } },
};
