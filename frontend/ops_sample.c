/*
 * ops_sample.c - importers for the ops that sample an image at computed
 * positions: GridSample, RoiAlign and DeformConv, as ONNX's reference
 * (onnx/reference/ops/op_grid_sample.py, op_roi_align.py,
 * op_deform_conv.py) defines them.
 *
 * None is an IR op. Each computes, per sampling point and spatial axis, the
 * pixels it reads (taps), their weights and whether they lie inside the
 * image; one builder (gather_taps) turns the axes' taps into flat row
 * numbers of the image seen as [batch * pixels, channels], gathers those
 * rows in one gather and weights them, so every op is IR arithmetic around
 * one gather: GridSample sums the taps, RoiAlign averages or takes the
 * maximum over its samples' taps, DeformConv sums them and multiplies the
 * sampled columns by its weights in one MatMul.
 *
 * The coordinates, weights and positions are FP64 whatever the data's type
 * (COORD below: at least the reference's float32, and out of mixed
 * precision's reach), the row numbers int64 (exact for any image), and the
 * weighted sums FP32 (FP64 for FP64 data), cast back to the data's type at
 * the end.
 */
#include "fe.h"

#include <math.h>
#include <string.h>

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

/* x as element type t (x itself when it has it). */
static struct ir_value *to(struct fe_node *nd, struct ir_value *x, enum ir_dtype t)
{
	return x && x->type.dtype != t ? fe_cast(nd, x, t, -1) : x;
}

/*
 * Coordinates, weights and positions are FP64: mixed precision paints FP32
 * tensors only (docs/precision.md), so none of this arithmetic can become
 * half however the data runs, as ops_quant.c keeps its arithmetic; FP64
 * also holds every FP32 value the reference's float32 arrays hold, and
 * every position of an image exactly.
 */
#define COORD IR_F64

static struct ir_value *num(struct fe_node *nd, double v) { return fe_scalar(nd, COORD, v); }

static struct ir_value *where(struct fe_node *nd, struct ir_value *c, struct ir_value *a,
                              struct ir_value *b)
{
	return fe_where(nd, c, a, b, -1);
}

/* x clamped into [lo, hi]. */
static struct ir_value *clamp(struct fe_node *nd, struct ir_value *x, double lo, double hi)
{
	return fe_binary(nd, IR_OP_MIN, fe_binary(nd, IR_OP_MAX, x, num(nd, lo), -1), num(nd, hi),
	                 -1);
}

/* A COORD constant of dims (rank r) holding v. */
static struct ir_value *coord_const(struct fe_node *nd, const int64_t *dims, int r, const float *v)
{
	struct ir_type t = { .dtype = COORD, .rank = r };
	int64_t n;
	double *data;
	memcpy(t.dims, dims, sizeof *dims * (size_t)r);
	if (!fe_check_const_size(nd, &t))
		return NULL;
	n = ir_type_elems(&t);
	data = ir_arena_alloc(&nd->fe->m->arena, sizeof *data * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		data[i] = v[i];
	return fe_const(nd, -1, &t, data);
}

/* The vector [n] of v, as a [1, 1, n] constant. */
static struct ir_value *coord_row(struct fe_node *nd, const float *v, int64_t n)
{
	int64_t dims[3] = { 1, 1, n };
	return coord_const(nd, dims, 3, v);
}

/* The element type the weighted sums of data of type t are computed in. */
static enum ir_dtype acc_type(enum ir_dtype t)
{
	return t == IR_F64 ? IR_F64 : ir_dtypes[t].is_float ? IR_F32 : t;
}

/*
 * x [N, C, spatial...] as the rows [N * groups * pixels, C / groups] the
 * taps gather: channel group g of image n is rows (n * groups + g) * pixels
 * onwards.
 */
static struct ir_value *image_rows(struct fe_node *nd, struct ir_value *x, int64_t groups)
{
	int r = x->type.rank;
	int64_t dims[IR_MAX_RANK + 1], perm[IR_MAX_RANK + 1], rows[2];
	int64_t pixels = ir_dims_elems(x->type.dims + 2, r - 2);
	dims[0] = x->type.dims[0];
	dims[1] = groups;
	dims[2] = x->type.dims[1] / groups;
	memcpy(dims + 3, x->type.dims + 2, sizeof *dims * (size_t)(r - 2));
	perm[0] = 0, perm[1] = 1, perm[r] = 2;
	for (int d = 2; d < r; d++)
		perm[d] = d + 1;
	rows[0] = x->type.dims[0] * groups * pixels;
	rows[1] = dims[2];
	return fe_reshape(nd, fe_transpose(nd, fe_reshape(nd, x, dims, r + 1, -1), perm, -1), rows,
	                  2, -1);
}

/* The int64 [b, 1, 1] constant of each batch entry's first row, i * stride. */
static struct ir_value *batch_rows(struct fe_node *nd, int64_t b, int64_t stride)
{
	struct ir_type t = { .dtype = IR_I64, .rank = 3, .dims = { b, 1, 1 } };
	int64_t *v = ir_arena_alloc(&nd->fe->m->arena, sizeof *v * (size_t)(b ? b : 1));
	for (int64_t i = 0; i < b; i++)
		v[i] = i * stride;
	return fe_check_const_size(nd, &t) ? fe_const(nd, -1, &t, v) : NULL;
}

/* ------------------------------------------------------------------------ */
/* The sampling builder                                                     */
/* ------------------------------------------------------------------------ */

/* One spatial axis's taps at each of B x P sampling points. */
struct taps {
	struct ir_value *pos; /* COORD [B, P, T]: integer positions inside the axis */
	struct ir_value *w;   /* COORD [B, P, T]: their weights; NULL: one tap of weight 1 */
	struct ir_value *in;  /* bool [B, P, T]: where the tap is a pixel; NULL: everywhere */
};

/*
 * The taps of rows (image_rows, [B' * pixels, C]) at B x P points along k
 * spatial axes of the sizes given, every combination of one tap per axis:
 * [B, P, T_0 * ... * T_{k-1}, C] in type acc, each value weighted by the
 * product of its axes' weights and zero where any axis's tap is outside.
 * base ([B, 1, 1] int64) is each point batch's first row.
 */
static struct ir_value *gather_taps(struct fe_node *nd, struct ir_value *rows,
                                    struct ir_value *base, const int64_t *size,
                                    const struct taps *ax, int k, enum ir_dtype acc)
{
	struct ir_value *row = NULL, *w = NULL, *in = NULL, *g, *gin[2];
	int64_t b = ax[0].pos->type.dims[0], p = ax[0].pos->type.dims[1], t = 1, stride = 1;
	int64_t dims[IR_MAX_RANK], flat[4];
	struct ir_node *n;
	for (int d = k - 1; d >= 0; d--) {
		int64_t td = ax[d].pos->type.dims[2];
		struct ir_value *pd, *wd, *id;
		dims[0] = b, dims[1] = p;
		for (int e = 0; e < k; e++)
			dims[2 + e] = e == d ? td : 1;
		pd = fe_reshape(nd, to(nd, ax[d].pos, IR_I64), dims, k + 2, -1);
		pd = fe_binary(nd, IR_OP_MUL, pd, fe_scalar(nd, IR_I64, (double)stride), -1);
		row = row ? fe_binary(nd, IR_OP_ADD, pd, row, -1) : pd;
		if (ax[d].w) {
			wd = fe_reshape(nd, ax[d].w, dims, k + 2, -1);
			w = w ? fe_binary(nd, IR_OP_MUL, wd, w, -1) : wd;
		}
		if (ax[d].in) {
			id = fe_reshape(nd, ax[d].in, dims, k + 2, -1);
			in = in ? fe_binary(nd, IR_OP_AND, id, in, -1) : id;
		}
		stride *= size[d];
		t *= td;
	}
	flat[0] = b, flat[1] = p, flat[2] = t, flat[3] = 1;
	row = fe_reshape(nd, row, flat, 3, -1);
	gin[0] = rows;
	gin[1] = fe_binary(nd, IR_OP_ADD, row, base, -1);
	if (!gin[0] || !gin[1])
		return NULL;
	n = fe_emit(nd, IR_OP_GATHER, gin, 2, NULL, 1); /* [B, P, T, C] */
	ir_set_i(nd->fe->m, n, "axis", 0);
	if (!fe_finish(nd, n))
		return NULL;
	g = to(nd, n->out[0], acc);
	if (w) /* the product of the axes' weights, in the order the reference's is */
		g = fe_binary(nd, IR_OP_MUL, g, to(nd, fe_reshape(nd, w, flat, 4, -1), acc), -1);
	if (in)
		g = where(nd, fe_reshape(nd, in, flat, 4, -1), g, fe_scalar(nd, acc, 0));
	return g;
}

/* ------------------------------------------------------------------------ */
/* GridSample's taps                                                        */
/* ------------------------------------------------------------------------ */

enum interp { NEAREST, LINEAR, CUBIC };
enum padding { ZEROS, BORDER, REFLECTION };

/*
 * x reflected by the borders lo and hi until inside them, as the
 * reference's _gs_reflect: the distance dx past the border crossed makes n
 * whole spans of hi - lo and a remainder r, measured from that border when
 * n is even and from the other when odd.
 */
static struct ir_value *reflect(struct fe_node *nd, struct ir_value *x, double lo, double hi)
{
	struct ir_value *below, *above, *dx, *n, *r, *half, *odd, *from_lo;
	double span = hi - lo;
	if (span <= 0) /* an axis of one pixel with align_corners: it has only 0 */
		return clamp(nd, x, lo, lo);
	below = fe_binary(nd, IR_OP_LESS, x, num(nd, lo), -1);
	above = fe_binary(nd, IR_OP_GREATER, x, num(nd, hi), -1);
	dx = where(nd, below, fe_binary(nd, IR_OP_SUB, num(nd, lo), x, -1),
	           fe_binary(nd, IR_OP_SUB, x, num(nd, hi), -1));
	n = fe_unary(nd, IR_OP_FLOOR, fe_binary(nd, IR_OP_DIV, dx, num(nd, span), -1), -1);
	r = fe_binary(nd, IR_OP_SUB, dx, fe_binary(nd, IR_OP_MUL, n, num(nd, span), -1), -1);
	half = fe_binary(nd, IR_OP_MUL, n, num(nd, 0.5), -1);
	odd = fe_unary(nd, IR_OP_NOT,
	               fe_binary(nd, IR_OP_EQUAL, fe_unary(nd, IR_OP_FLOOR, half, -1), half, -1),
	               -1);
	from_lo = fe_binary(nd, IR_OP_XOR, below, odd, -1);
	return where(nd, fe_binary(nd, IR_OP_OR, below, above, -1),
	             where(nd, from_lo, fe_binary(nd, IR_OP_ADD, num(nd, lo), r, -1),
	                   fe_binary(nd, IR_OP_SUB, num(nd, hi), r, -1)),
	             x);
}

/* Keys' cubic convolution weight (A = -0.75) of a tap at distance s: the
 * near formula for the two inner taps, the far one for the outer two. */
#define CUBIC_A (-0.75)
static struct ir_value *cubic_weights(struct fe_node *nd, struct ir_value *s)
{
	static const bool inner[4] = { false, true, true, false };
	struct ir_type it = { .dtype = IR_BOOL, .rank = 3, .dims = { 1, 1, 4 } };
	struct ir_value *nearw, *farw;
	/* ((A + 2) s - (A + 3)) s s + 1 */
	nearw = fe_binary(nd, IR_OP_MUL, num(nd, CUBIC_A + 2), s, -1);
	nearw = fe_binary(nd, IR_OP_SUB, nearw, num(nd, CUBIC_A + 3), -1);
	nearw = fe_binary(nd, IR_OP_MUL, fe_binary(nd, IR_OP_MUL, nearw, s, -1), s, -1);
	nearw = fe_binary(nd, IR_OP_ADD, nearw, num(nd, 1), -1);
	/* ((A s - 5A) s + 8A) s - 4A */
	farw = fe_binary(nd, IR_OP_MUL, num(nd, CUBIC_A), s, -1);
	farw = fe_binary(nd, IR_OP_SUB, farw, num(nd, 5 * CUBIC_A), -1);
	farw = fe_binary(nd, IR_OP_ADD, fe_binary(nd, IR_OP_MUL, farw, s, -1), num(nd, 8 * CUBIC_A),
	                 -1);
	farw = fe_binary(nd, IR_OP_SUB, fe_binary(nd, IR_OP_MUL, farw, s, -1), num(nd, 4 * CUBIC_A),
	                 -1);
	return where(nd, fe_const(nd, -1, &it, inner), nearw, farw);
}

/*
 * The taps along an axis of n pixels at the coordinates x ([B, P, 1] COORD,
 * in pixels, padded as GridSample pads them before interpolating): the
 * pixel nearest (x already rounded), the two of linear or the four of
 * cubic interpolation from floor(x), each padded as padding says: zero
 * outside (in), clamped to the border, or reflected by lo and hi.
 */
static struct taps axis_taps(struct fe_node *nd, struct ir_value *x, int64_t n, enum interp ip,
                             enum padding pad, double lo, double hi)
{
	static const float offs[3][4] = { { 0 }, { 0, 1 }, { -1, 0, 1, 2 } };
	static const float lin_a[2] = { 1, 0 }, lin_b[2] = { -1, 1 };
	int nt = ip == NEAREST ? 1 : ip == LINEAR ? 2 : 4;
	struct ir_value *base = fe_unary(nd, IR_OP_FLOOR, x, -1), *o = coord_row(nd, offs[ip], nt);
	struct ir_value *t = fe_binary(nd, IR_OP_SUB, x, base, -1);
	struct taps a = { .pos = fe_binary(nd, IR_OP_ADD, base, o, -1) };
	if (ip == LINEAR) /* 1 - t and t, as a + b t */
		a.w = fe_binary(nd, IR_OP_ADD, coord_row(nd, lin_a, 2),
		                fe_binary(nd, IR_OP_MUL, coord_row(nd, lin_b, 2), t, -1), -1);
	else if (ip == CUBIC) /* at distances t + 1, t, 1 - t, 2 - t */
		a.w = cubic_weights(
		        nd, fe_unary(nd, IR_OP_ABS, fe_binary(nd, IR_OP_SUB, t, o, -1), -1));
	if (pad == ZEROS)
		a.in = fe_binary(
		        nd, IR_OP_AND, fe_binary(nd, IR_OP_GREATER_EQUAL, a.pos, num(nd, 0), -1),
		        fe_binary(nd, IR_OP_LESS_EQUAL, a.pos, num(nd, (double)(n - 1)), -1), -1);
	else if (pad == REFLECTION)
		a.pos = reflect(nd, a.pos, lo, hi);
	/* zeros: any pixel for the taps outside; reflection: none is, but the
	 * clamp keeps a row number in the image whatever rounding did */
	a.pos = clamp(nd, a.pos, 0, (double)(n - 1));
	return a;
}

/* ------------------------------------------------------------------------ */
/* GridSample                                                               */
/* ------------------------------------------------------------------------ */

static bool one_of(const char *s, const char *const *names, int n, int *k)
{
	for (*k = 0; *k < n; ++*k)
		if (!strcmp(s, names[*k]))
			return true;
	return false;
}

/*
 * The pixel coordinate along an axis of n pixels of the normalized grid
 * values g ([B, P, 1] COORD), as the reference unnormalizes, rounds (nearest:
 * half to even) and pads it (border: clamped, reflection: reflected, when
 * outside [lo, hi]) before interpolating.
 */
static struct ir_value *grid_coord(struct fe_node *nd, struct ir_value *g, int64_t n, bool align,
                                   enum interp ip, enum padding pad, double lo, double hi)
{
	struct ir_value *x, *one = num(nd, 1);
	if (align) /* (g + 1) / 2 (n - 1) */
		x = fe_binary(nd, IR_OP_MUL,
		              fe_binary(nd, IR_OP_DIV, fe_binary(nd, IR_OP_ADD, g, one, -1),
		                        num(nd, 2), -1),
		              num(nd, (double)(n - 1)), -1);
	else /* ((g + 1) n - 1) / 2 */
		x = fe_binary(
		        nd, IR_OP_DIV,
		        fe_binary(nd, IR_OP_SUB,
		                  fe_binary(nd, IR_OP_MUL, fe_binary(nd, IR_OP_ADD, g, one, -1),
		                            num(nd, (double)n), -1),
		                  one, -1),
		        num(nd, 2), -1);
	if (ip == NEAREST)
		x = fe_unary(nd, IR_OP_ROUND, x, -1);
	if (pad == BORDER)
		x = where(nd, fe_binary(nd, IR_OP_LESS, x, num(nd, lo), -1), num(nd, 0),
		          where(nd, fe_binary(nd, IR_OP_GREATER, x, num(nd, hi), -1),
		                num(nd, (double)(n - 1)), x));
	else if (pad == REFLECTION)
		x = reflect(nd, x, lo, hi);
	return x;
}

/*
 * GridSample (16: bilinear/nearest/bicubic of a 4-D input; 20: linear,
 * nearest, cubic, N-D; 22: bfloat16): for each output point, the taps of
 * every spatial axis of X at the grid's coordinate for that axis (the grid
 * lists them x first: the last axis first), weighted and summed.
 */
static bool imp_grid_sample(struct fe_node *nd)
{
	static const char *const modes16[3] = { "nearest", "bilinear", "bicubic" };
	static const char *const modes20[3] = { "nearest", "linear", "cubic" };
	static const char *const pads[3] = { "zeros", "border", "reflection" };
	const char *const *modes = nd->version < 20 ? modes16 : modes20;
	const char *mode = fe_str(nd, "mode", modes[LINEAR]);
	const char *padding = fe_str(nd, "padding_mode", "zeros");
	bool align = fe_int(nd, "align_corners", 0) != 0;
	struct ir_value *x, *grid, *y;
	struct taps ax[IR_MAX_RANK];
	int64_t size[IR_MAX_RANK], dims[IR_MAX_RANK], gdims[3], perm[3] = { 0, 2, 1 }, p;
	enum ir_dtype acc;
	int r, k, ip, pad;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	if (!one_of(mode, modes, 3, &ip))
		return fe_fail(nd, "mode '%s' is not one of %s, %s, %s", mode, modes[0], modes[1],
		               modes[2]);
	if (!one_of(padding, pads, 3, &pad))
		return fe_fail(nd, "padding_mode '%s' is not one of zeros, border, reflection",
		               padding);
	x = nd->in[0];
	grid = nd->in[1];
	r = x->type.rank;
	k = r - 2;
	if (nd->version < 20 ? r != 4 : r < 3)
		return fe_fail(nd, "X must be [N, C, %s, not of rank %d",
		               nd->version < 20 ? "H, W] (N-D from opset 20)" : "spatial...]", r);
	if (grid->type.rank != r || grid->type.dims[0] != x->type.dims[0] ||
	    grid->type.dims[r - 1] != k || !ir_dtypes[grid->type.dtype].is_float)
		return fe_fail(nd,
		               "grid must be a float tensor of [N, spatial out..., %d] with X's "
		               "N (%lld)",
		               k, (long long)x->type.dims[0]);
	if (ip != NEAREST && !ir_dtypes[x->type.dtype].is_float)
		return fe_fail(nd, "mode '%s' interpolates, and X is %s: onnxc interpolates floats",
		               mode, ir_dtype_name(x->type.dtype));
	p = ir_dims_elems(grid->type.dims + 1, k);
	gdims[0] = x->type.dims[0], gdims[1] = p, gdims[2] = k;
	grid = to(nd, fe_reshape(nd, grid, gdims, 3, -1), COORD);
	for (int d = 0; d < k; d++) {
		int64_t n = x->type.dims[2 + d];
		double lo = align ? 0 : -0.5, hi = align ? (double)n - 1 : (double)n - 0.5;
		struct ir_value *c = fe_slice_axis(nd, grid, 2, k - 1 - d, k - d, 1, -1);
		size[d] = n;
		ax[d] = axis_taps(nd, grid_coord(nd, c, n, align, ip, pad, lo, hi), n, ip, pad, lo,
		                  hi);
		if (!ax[d].pos)
			return false;
	}
	acc = acc_type(x->type.dtype);
	y = gather_taps(nd, image_rows(nd, x, 1),
	                batch_rows(nd, x->type.dims[0], ir_dims_elems(size, k)), size, ax, k, acc);
	if (!y)
		return false;
	dims[0] = x->type.dims[0], dims[1] = p, dims[2] = x->type.dims[1];
	y = ip == NEAREST ? fe_reshape(nd, y, dims, 3, -1)
	                  : fe_reduce(nd, IR_OP_REDUCE_SUM, y, (int64_t[]){ 2 }, 1, false, -1);
	y = to(nd, fe_transpose(nd, y, perm, -1), x->type.dtype);
	dims[1] = x->type.dims[1];
	memcpy(dims + 2, nd->in[1]->type.dims + 1, sizeof *dims * (size_t)k);
	return bind1(nd, fe_reshape(nd, y, dims, r, 0));
}

/* ------------------------------------------------------------------------ */
/* RoiAlign                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * RoiAlign's taps along an axis of n pixels at the sample coordinates y
 * ([R, P, G] COORD): none (zero weights) when y is outside [-1, n]; else y
 * raised to 0, its lower pixel and the next (both the last past n - 1,
 * where y becomes the last), weighted 1 - l and l by its fraction l above
 * the lower. used ([R, 1, G] bool, or NULL) marks the samples a region
 * has; the others weigh zero. [R, P, G * 2].
 */
static struct taps roi_taps(struct fe_node *nd, struct ir_value *y, int64_t n,
                            struct ir_value *used)
{
	static const float offs[2] = { 0, 1 }, lin_a[2] = { 1, 0 }, lin_b[2] = { -1, 1 };
	int64_t od[4] = { 1, 1, 1, 2 }, dims[4], flat[3];
	struct ir_value *in, *low, *l, *w;
	struct taps a = { 0 };
	if (!y)
		return a;
	memcpy(dims, y->type.dims, sizeof *dims * 3);
	dims[3] = 1;
	flat[0] = dims[0], flat[1] = dims[1], flat[2] = dims[2] * 2;
	in = fe_binary(nd, IR_OP_AND, fe_binary(nd, IR_OP_GREATER_EQUAL, y, num(nd, -1), -1),
	               fe_binary(nd, IR_OP_LESS_EQUAL, y, num(nd, (double)n), -1), -1);
	if (used)
		in = fe_binary(nd, IR_OP_AND, in, used, -1);
	y = clamp(nd, y, 0, (double)(n - 1));
	low = fe_unary(nd, IR_OP_FLOOR, y, -1);
	l = fe_reshape(nd, fe_binary(nd, IR_OP_SUB, y, low, -1), dims, 4, -1);
	low = fe_reshape(nd, low, dims, 4, -1);
	w = fe_binary(nd, IR_OP_ADD, coord_const(nd, od, 4, lin_a),
	              fe_binary(nd, IR_OP_MUL, coord_const(nd, od, 4, lin_b), l, -1), -1);
	w = where(nd, fe_reshape(nd, in, dims, 4, -1), w, num(nd, 0));
	a.w = fe_reshape(nd, w, flat, 3, -1);
	a.pos = fe_binary(nd, IR_OP_MIN,
	                  fe_binary(nd, IR_OP_ADD, low, coord_const(nd, od, 4, offs), -1),
	                  num(nd, (double)(n - 1)), -1);
	a.pos = fe_reshape(nd, a.pos, flat, 3, -1);
	return a;
}

/* Column c of the regions [R, 4] (COORD) as [R, 1, 1], times scale less
 * offset. */
static struct ir_value *roi_edge(struct fe_node *nd, struct ir_value *rois, int c, double scale,
                                 double offset)
{
	int64_t dims[3] = { rois->type.dims[0], 1, 1 };
	struct ir_value *e =
	        fe_reshape(nd, fe_slice_axis(nd, rois, 1, c, c + 1, 1, -1), dims, 3, -1);
	return fe_binary(nd, IR_OP_SUB, fe_binary(nd, IR_OP_MUL, e, num(nd, scale), -1),
	                 num(nd, offset), -1);
}

/* The sample grid of each region along an axis: its samples per bin and
 * whether it has each of the most any region has. */
struct roi_grid {
	int64_t most;          /* the samples per bin of the region with the most */
	struct ir_value *g;    /* COORD scalar (sampling_ratio) or [R, 1, 1] constant */
	struct ir_value *used; /* bool [R, 1, most], or NULL: every region has them all */
	int64_t *count;        /* each region's samples per bin (reference's int(ceil)) */
};

/* The extent of region i along an axis (columns c and c + 2), as the IR
 * computes it. */
static double roi_extent(const double *roi, int c, double scale, double offset, bool floor1)
{
	double e = (roi[c + 2] * scale - offset) - (roi[c] * scale - offset);
	return floor1 && e < 1 ? 1 : e;
}

/*
 * The sample grids of both axes: sampling_ratio samples per bin when it is
 * positive; else ceil(extent / bins) per region, which needs the regions'
 * values (a constant rois).
 */
static bool roi_grids(struct fe_node *nd, int64_t ratio, const int64_t *bins, double scale,
                      double offset, bool floor1, struct roi_grid *grid)
{
	const struct ir_value *rv = nd->in[1];
	int64_t nr = rv->type.dims[0];
	if (ratio > 0) {
		for (int a = 0; a < 2; a++)
			grid[a] = (struct roi_grid){ .most = ratio, .g = num(nd, (double)ratio) };
		return true;
	}
	if (!fe_is_const(nd, 1) || !rv->data)
		return fe_fail(nd,
		               "sampling_ratio 0 makes the number of samples per bin depend on the "
		               "values of rois, which are computed at run time, and onnxc compiles "
		               "static shapes: give a sampling_ratio above 0, or bind the graph "
		               "input rois comes from with --const INPUT=FILE.npy");
	for (int a = 0; a < 2; a++) {
		struct ir_type gt = { .dtype = COORD, .rank = 3, .dims = { nr, 1, 1 } };
		struct ir_type ut = { .dtype = IR_BOOL, .rank = 3, .dims = { nr, 1, 0 } };
		double *gv = ir_arena_alloc(&nd->fe->m->arena, sizeof *gv * (size_t)(nr ? nr : 1));
		bool *uv;
		grid[a].count =
		        ir_arena_alloc(&nd->fe->m->arena, sizeof(int64_t) * (size_t)(nr ? nr : 1));
		grid[a].most = 1;
		for (int64_t i = 0; i < nr; i++) {
			double roi[4];
			double c;
			for (int j = 0; j < 4; j++)
				roi[j] = ir_load_f64(rv->type.dtype, rv->data, (size_t)(i * 4 + j));
			/* axis 0 is y (columns 1 and 3), axis 1 x (0 and 2) */
			c = ceil(roi_extent(roi, 1 - a, scale, offset, floor1) / (double)bins[a]);
			if (!(c > -1e9 && c < 1e9))
				return fe_fail(nd, "region %lld has %g samples per bin",
				               (long long)i, c);
			grid[a].count[i] = (int64_t)c;
			gv[i] = c > 0 ? c : 1; /* a region without samples uses none */
			if (c > grid[a].most)
				grid[a].most = (int64_t)c;
		}
		ut.dims[2] = grid[a].most;
		if (!fe_check_const_size(nd, &ut))
			return false;
		uv = ir_arena_alloc(&nd->fe->m->arena, (size_t)(nr * grid[a].most) + 1);
		for (int64_t i = 0; i < nr; i++)
			for (int64_t s = 0; s < grid[a].most; s++)
				uv[i * grid[a].most + s] = s < grid[a].count[i];
		grid[a].g = fe_const(nd, -1, &gt, gv);
		grid[a].used = fe_const(nd, -1, &ut, uv);
	}
	return true;
}

/* The sample coordinates of each region along an axis, [R, P, most]:
 * start + bin * b + (s + 0.5) * bin / g, b the point's bin along the axis
 * (q / every of point q, modulo bins), s the sample. */
static struct ir_value *roi_samples(struct fe_node *nd, struct ir_value *start,
                                    struct ir_value *bin, const struct roi_grid *grid, int64_t bins,
                                    int64_t every, int64_t points)
{
	float *bv = ir_arena_alloc(&nd->fe->m->arena, sizeof *bv * (size_t)points);
	float *sv = ir_arena_alloc(&nd->fe->m->arena, sizeof *sv * (size_t)grid->most);
	int64_t bd[3] = { 1, points, 1 };
	struct ir_value *b, *s;
	for (int64_t q = 0; q < points; q++)
		bv[q] = (float)(q / every % bins);
	for (int64_t i = 0; i < grid->most; i++)
		sv[i] = (float)i + 0.5f;
	b = fe_binary(nd, IR_OP_MUL, coord_const(nd, bd, 3, bv), bin, -1);
	s = fe_binary(nd, IR_OP_DIV,
	              fe_binary(nd, IR_OP_MUL, coord_row(nd, sv, grid->most), bin, -1), grid->g,
	              -1);
	return fe_binary(nd, IR_OP_ADD, fe_binary(nd, IR_OP_ADD, start, b, -1), s, -1);
}

/* Which taps of gather_taps' [R, 1, T, 1] are of samples the region has
 * (T: the y samples' two taps, each by the x samples' two). */
static struct ir_value *roi_used(struct fe_node *nd, const struct roi_grid *grid, int64_t nr)
{
	int64_t tx = grid[1].most * 2, t = grid[0].most * 2 * tx;
	struct ir_type ut = { .dtype = IR_BOOL, .rank = 4, .dims = { nr, 1, t, 1 } };
	bool *uv;
	if (!fe_check_const_size(nd, &ut))
		return NULL;
	uv = ir_arena_alloc(&nd->fe->m->arena, (size_t)(nr * t) + 1);
	for (int64_t i = 0; i < nr; i++)
		for (int64_t j = 0; j < t; j++)
			uv[i * t + j] =
			        j / tx / 2 < grid[0].count[i] && j % tx / 2 < grid[1].count[i];
	return fe_const(nd, -1, &ut, uv);
}

/* Which regions have samples, [R, 1, 1]. */
static struct ir_value *roi_any(struct fe_node *nd, const struct roi_grid *grid, int64_t nr)
{
	struct ir_type at = { .dtype = IR_BOOL, .rank = 3, .dims = { nr, 1, 1 } };
	bool *av = ir_arena_alloc(&nd->fe->m->arena, (size_t)nr + 1);
	for (int64_t i = 0; i < nr; i++)
		av[i] = grid[0].count[i] > 0 && grid[1].count[i] > 0;
	return fe_const(nd, -1, &at, av);
}

/*
 * RoiAlign (10; 16: coordinate_transformation_mode, half_pixel by default;
 * 22: bfloat16): per region and output bin, the bilinear taps of its
 * samples, averaged over the samples (the taps' weighted sum divided by
 * the count), or the maximum over samples and taps of each weighted tap
 * (the reference's max mode).
 */
static bool imp_roi_align(struct fe_node *nd)
{
	const char *mode = fe_str(nd, "mode", "avg");
	const char *coord = nd->version >= 16
	                            ? fe_str(nd, "coordinate_transformation_mode", "half_pixel")
	                            : "output_half_pixel";
	int64_t bins[2] = { fe_int(nd, "output_height", 1), fe_int(nd, "output_width", 1) };
	int64_t ratio = fe_int(nd, "sampling_ratio", 0), nr, pts, size[2], dims[4];
	int64_t perm[3] = { 0, 2, 1 }, bd[3];
	float scale = fe_float(nd, "spatial_scale", 1.0f);
	struct ir_value *x, *rois, *bi, *start[2], *ext[2], *y;
	struct roi_grid grid[2];
	struct taps ax[2];
	bool half;
	enum ir_dtype acc;
	if (!fe_inputs(nd, 3, 3) || nd->failed)
		return false;
	if (strcmp(mode, "avg") && strcmp(mode, "max"))
		return fe_fail(nd, "mode '%s' is not one of avg, max", mode);
	if (strcmp(coord, "half_pixel") && strcmp(coord, "output_half_pixel"))
		return fe_fail(nd,
		               "coordinate_transformation_mode '%s' is not one of half_pixel, "
		               "output_half_pixel",
		               coord);
	half = !strcmp(coord, "half_pixel");
	x = nd->in[0], rois = nd->in[1], bi = nd->in[2];
	if (x->type.rank != 4 || !ir_dtypes[x->type.dtype].is_float)
		return fe_fail(nd, "X must be a float tensor of [N, C, H, W]");
	nr = rois->type.dims[0];
	if (rois->type.rank != 2 || rois->type.dims[1] != 4 ||
	    !ir_dtypes[rois->type.dtype].is_float)
		return fe_fail(nd, "rois must be a float tensor of [num_rois, 4]");
	if (bi->type.rank != 1 || bi->type.dims[0] != nr || !ir_dtypes[bi->type.dtype].is_int)
		return fe_fail(nd, "batch_indices must be %lld integers, one per region",
		               (long long)nr);
	if (bins[0] < 1 || bins[1] < 1 || ratio < 0)
		return fe_fail(nd,
		               "output_height %lld, output_width %lld and sampling_ratio %lld must "
		               "be positive (sampling_ratio 0: adaptive)",
		               (long long)bins[0], (long long)bins[1], (long long)ratio);
	if (!roi_grids(nd, ratio, bins, scale, half ? 0.5f : 0.0f, !half, grid))
		return false;
	size[0] = x->type.dims[2], size[1] = x->type.dims[3];
	pts = bins[0] * bins[1];
	rois = to(nd, rois, COORD);
	for (int a = 0; a < 2; a++) { /* axis 0: y, columns 1 and 3; axis 1: x, 0 and 2 */
		struct ir_value *bin;
		start[a] = roi_edge(nd, rois, 1 - a, scale, half ? 0.5 : 0);
		ext[a] = fe_binary(nd, IR_OP_SUB, roi_edge(nd, rois, 3 - a, scale, half ? 0.5 : 0),
		                   start[a], -1);
		if (!half)
			ext[a] = fe_binary(nd, IR_OP_MAX, ext[a], num(nd, 1), -1);
		bin = fe_binary(nd, IR_OP_DIV, ext[a], num(nd, (double)bins[a]), -1);
		ax[a] = roi_taps(
		        nd, roi_samples(nd, start[a], bin, &grid[a], bins[a], a ? 1 : bins[1], pts),
		        size[a], grid[a].used);
		if (!ax[a].pos)
			return false;
	}
	bd[0] = nr, bd[1] = 1, bd[2] = 1;
	bi = fe_binary(nd, IR_OP_MUL, fe_reshape(nd, to(nd, bi, IR_I64), bd, 3, -1),
	               fe_scalar(nd, IR_I64, (double)(size[0] * size[1])), -1);
	acc = acc_type(x->type.dtype);
	y = gather_taps(nd, image_rows(nd, x, 1), bi, size, ax, 2, acc); /* [R, P, T, C] */
	if (!y)
		return false;
	if (!strcmp(mode, "avg")) {
		struct ir_value *count;
		y = fe_reduce(nd, IR_OP_REDUCE_SUM, y, (int64_t[]){ 2 }, 1, false, -1);
		if (ratio > 0) {
			count = fe_scalar(nd, acc, (double)(ratio * ratio));
		} else {
			struct ir_type ct = { .dtype = IR_F64, .rank = 2, .dims = { nr, 1 } };
			double *cv = ir_arena_alloc(&nd->fe->m->arena,
			                            sizeof *cv * (size_t)(nr ? nr : 1));
			for (int64_t i = 0; i < nr; i++) {
				int64_t c = grid[0].count[i] * grid[1].count[i];
				cv[i] = (double)(c > 1 ? c : 1);
			}
			count = to(nd, fe_const(nd, -1, &ct, cv), acc);
			count = fe_reshape(nd, count, (int64_t[]){ nr, 1, 1 }, 3, -1);
		}
		y = fe_binary(nd, IR_OP_DIV, y, count, -1);
	} else {
		if (ratio <= 0) /* only the samples a region has: none is a maximum of 0 */
			y = where(nd, roi_used(nd, grid, nr), y, fe_scalar(nd, acc, -INFINITY));
		y = fe_reduce(nd, IR_OP_REDUCE_MAX, y, (int64_t[]){ 2 }, 1, false, -1);
		if (ratio <= 0)
			y = where(nd, roi_any(nd, grid, nr), y, fe_scalar(nd, acc, 0));
	}
	y = to(nd, fe_transpose(nd, y, perm, -1), x->type.dtype);
	dims[0] = nr, dims[1] = x->type.dims[1], dims[2] = bins[0], dims[3] = bins[1];
	return bind1(nd, fe_reshape(nd, y, dims, 4, 0));
}

/* ------------------------------------------------------------------------ */
/* MaxRoiPool                                                               */
/* ------------------------------------------------------------------------ */

/* v rounded half away from zero (C's round), in f64: floor(|v| + 0.5) is
 * exact there for every f32 v. */
static struct ir_value *round_away(struct fe_node *nd, struct ir_value *v)
{
	struct ir_value *a = fe_unary(
	        nd, IR_OP_FLOOR,
	        fe_binary(nd, IR_OP_ADD, fe_unary(nd, IR_OP_ABS, v, -1), num(nd, 0.5), -1), -1);
	return fe_binary(nd, IR_OP_MUL, a, fe_unary(nd, IR_OP_SIGN, v, -1), -1);
}

/*
 * One axis of MaxRoiPool's bins, as ONNX's reference computes them: the
 * region's first and last pixel rounded from rois[:, lo] and [:, hi] times
 * spatial_scale (in the calculation type ct), its extent at least 1 pixel,
 * bin j covering [floor(j * size), ceil((j + 1) * size)) from the first
 * pixel, clipped to the image, size = extent / bins in ct. The mask [R, bins,
 * n] says which of the n pixels each bin takes; *empty [R, bins] which bins
 * take none.
 */
static struct ir_value *roi_pool_mask(struct fe_node *nd, struct ir_value *rois, int lo, int hi,
                                      float scale, int64_t bins, int64_t n, enum ir_dtype ct,
                                      struct ir_value **empty)
{
	int64_t nr = rois->type.dims[0], d3[3] = { nr, 1, 1 }, d2[2] = { nr, bins };
	struct ir_value *e[2], *size, *st, *en, *pix, *jj;
	float *j0 = ir_arena_alloc(&nd->fe->m->arena, sizeof *j0 * (size_t)(bins + 1));
	float *px = ir_arena_alloc(&nd->fe->m->arena, sizeof *px * (size_t)(n ? n : 1));
	for (int64_t j = 0; j <= bins; j++)
		j0[j] = (float)j;
	for (int64_t i = 0; i < n; i++)
		px[i] = (float)i;
	for (int k = 0; k < 2; k++) {
		struct ir_value *c =
		        fe_slice_axis(nd, rois, 1, k ? hi : lo, (k ? hi : lo) + 1, 1, -1);
		c = fe_binary(nd, IR_OP_MUL, c, fe_scalar(nd, ct, scale), -1);
		e[k] = round_away(nd, to(nd, fe_reshape(nd, c, d3, 3, -1), COORD));
	}
	size = fe_binary(
	        nd, IR_OP_MAX,
	        fe_binary(nd, IR_OP_ADD, fe_binary(nd, IR_OP_SUB, e[1], e[0], -1), num(nd, 1), -1),
	        num(nd, 1), -1);
	size = fe_binary(nd, IR_OP_DIV, to(nd, size, ct), fe_scalar(nd, ct, (double)bins), -1);
	jj = to(nd, coord_row(nd, j0, bins + 1), ct); /* [1, 1, bins + 1] */
	jj = fe_binary(nd, IR_OP_MUL, jj, size, -1);  /* in ct, as the reference */
	st = fe_unary(nd, IR_OP_FLOOR, to(nd, fe_slice_axis(nd, jj, 2, 0, bins, 1, -1), COORD), -1);
	en = fe_unary(nd, IR_OP_CEIL, to(nd, fe_slice_axis(nd, jj, 2, 1, bins + 1, 1, -1), COORD),
	              -1);
	st = clamp(nd, fe_binary(nd, IR_OP_ADD, st, e[0], -1), 0, (double)n);
	en = clamp(nd, fe_binary(nd, IR_OP_ADD, en, e[0], -1), 0, (double)n);
	/* [R, 1, bins] -> [R, bins, 1] against the pixels [1, 1, n] */
	st = fe_reshape(nd, st, (int64_t[]){ nr, bins, 1 }, 3, -1);
	en = fe_reshape(nd, en, (int64_t[]){ nr, bins, 1 }, 3, -1);
	*empty = fe_reshape(nd, fe_binary(nd, IR_OP_LESS_EQUAL, en, st, -1), d2, 2, -1);
	pix = coord_row(nd, px, n);
	return fe_binary(nd, IR_OP_AND, fe_binary(nd, IR_OP_GREATER_EQUAL, pix, st, -1),
	                 fe_binary(nd, IR_OP_LESS, pix, en, -1), -1);
}

/*
 * MaxRoiPool (1): the maximum of X over each bin of each region, 0 for a
 * bin without pixels. The bins are data: a mask of the pixels each takes,
 * along W and then along H, so the maxima are two masked reduce_max over
 * the region's image ([R, C, H, bins_w], then [R, C, bins_h, bins_w]).
 */
static bool imp_max_roi_pool(struct fe_node *nd)
{
	const int64_t *ps;
	float scale = fe_float(nd, "spatial_scale", 1.0f);
	struct ir_value *x, *rois, *b, *mw, *mh, *ew, *eh, *y, *ninf;
	int64_t nr, c, h, w, bh, bw, ax[1];
	enum ir_dtype ct;
	if (!fe_inputs(nd, 2, 2) || nd->failed)
		return false;
	if (fe_ints(nd, "pooled_shape", &ps) != 2 || nd->failed)
		return nd->failed ? false : fe_fail(nd, "pooled_shape must be 2 positive ints");
	x = nd->in[0], rois = nd->in[1], bh = ps[0], bw = ps[1];
	if (bh < 1 || bw < 1)
		return fe_fail(nd, "pooled_shape must be 2 positive ints");
	if (x->type.rank != 4 || !ir_dtypes[x->type.dtype].is_float)
		return fe_fail(nd, "X must be a float tensor of [N, C, H, W]");
	if (rois->type.rank != 2 || rois->type.dims[1] != 5 || rois->type.dtype != x->type.dtype)
		return fe_fail(nd, "rois must be [num_rois, 5] of X's type");
	nr = rois->type.dims[0], c = x->type.dims[1], h = x->type.dims[2], w = x->type.dims[3];
	ct = x->type.dtype == IR_F64 ? IR_F64 : IR_F32;
	rois = to(nd, rois, ct);
	mw = roi_pool_mask(nd, rois, 1, 3, scale, bw, w, ct, &ew); /* [R, bw, W] */
	mh = roi_pool_mask(nd, rois, 2, 4, scale, bh, h, ct, &eh); /* [R, bh, H] */
	/* each region's image: X[batch index], the index truncated as int() */
	b = fe_reshape(nd, to(nd, fe_slice_axis(nd, rois, 1, 0, 1, 1, -1), IR_I64), &nr, 1, -1);
	if (!b || !mw || !mh)
		return false;
	{
		const char *name = fe_tmp_name(nd, "image");
		struct ir_value *in[2] = { x, b };
		struct ir_node *g = fe_emit(nd, IR_OP_GATHER, in, 2, &name, 1);
		ir_set_i(nd->fe->m, g, "axis", 0);
		if (!fe_finish(nd, g))
			return false;
		y = g->out[0]; /* [R, C, H, W] */
	}
	ninf = fe_scalar(nd, x->type.dtype, -INFINITY);
	/* along W: [R, C, H, 1, W] masked by [R, 1, 1, bw, W] */
	y = fe_reshape(nd, y, (int64_t[]){ nr, c, h, 1, w }, 5, -1);
	mw = fe_reshape(nd, mw, (int64_t[]){ nr, 1, 1, bw, w }, 5, -1);
	ax[0] = 4;
	y = fe_reduce(nd, IR_OP_REDUCE_MAX, where(nd, mw, y, ninf), ax, 1, false, -1);
	/* along H: [R, C, 1, H, bw] masked by [R, 1, bh, H, 1] */
	y = fe_reshape(nd, y, (int64_t[]){ nr, c, 1, h, bw }, 5, -1);
	mh = fe_reshape(nd, mh, (int64_t[]){ nr, 1, bh, h, 1 }, 5, -1);
	ax[0] = 3;
	y = fe_reduce(nd, IR_OP_REDUCE_MAX, where(nd, mh, y, ninf), ax, 1, false, -1);
	/* empty bins: [R, 1, bh, 1] or [R, 1, 1, bw] */
	ew = fe_reshape(nd, ew, (int64_t[]){ nr, 1, 1, bw }, 4, -1);
	eh = fe_reshape(nd, eh, (int64_t[]){ nr, 1, bh, 1 }, 4, -1);
	y = fe_where(nd, fe_binary(nd, IR_OP_OR, eh, ew, -1), fe_scalar(nd, x->type.dtype, 0), y,
	             0);
	return bind1(nd, y);
}

/* ------------------------------------------------------------------------ */
/* DeformConv                                                               */
/* ------------------------------------------------------------------------ */

/* Whether v has exactly the dims given. */
static bool has_dims(const struct ir_value *v, const int64_t *dims, int r)
{
	if (v->type.rank != r)
		return false;
	for (int d = 0; d < r; d++)
		if (v->type.dims[d] != dims[d])
			return false;
	return true;
}

/*
 * DeformConv (19; 22: bfloat16): each kernel tap of each output point
 * samples its offset group's channels bilinearly (zero outside, the
 * reference's GridSample with align_corners) at its window position plus
 * the offset, times the mask; the samples [N, group, C/group * kernel,
 * out] are the columns of one MatMul by the weights [group, M/group,
 * C/group * kernel], plus the bias.
 */
static bool imp_deform_conv(struct fe_node *nd)
{
	int64_t group = fe_int(nd, "group", 1), og = fe_int(nd, "offset_group", 1);
	int64_t n, c, m, kp, op, pts, size[IR_MAX_RANK], out[IR_MAX_RANK], dims[IR_MAX_RANK];
	int64_t perm[5] = { 0, 1, 4, 2, 3 };
	struct ir_value *x, *wt, *off, *bias, *mask, *y;
	struct taps ax[IR_MAX_RANK];
	struct fe_window w = { 0 };
	enum ir_dtype acc;
	int k;
	if (!fe_inputs(nd, 3, 5) || nd->failed)
		return false;
	x = nd->in[0], wt = nd->in[1], off = nd->in[2];
	bias = fe_in(nd, 3), mask = fe_in(nd, 4);
	if (!fe_conv_window(nd, &x->type, &wt->type, &w))
		return false;
	if (!ir_dtypes[x->type.dtype].is_float)
		return fe_fail(nd, "X must be a float tensor, not %s",
		               ir_dtype_name(x->type.dtype));
	k = w.nsp;
	n = x->type.dims[0], c = x->type.dims[1], m = wt->type.dims[0];
	if (group < 1 || og < 1 || c % group || m % group || c % og ||
	    wt->type.dims[1] * group != c)
		return fe_fail(nd,
		               "group %lld and offset_group %lld do not divide %lld input channels "
		               "(and %lld output channels) for a weight of %lld channels per group",
		               (long long)group, (long long)og, (long long)c, (long long)m,
		               (long long)wt->type.dims[1]);
	kp = ir_dims_elems(w.kernel, k);
	for (int d = 0; d < k; d++) {
		int64_t ext = (w.kernel[d] - 1) * w.dilations[d] + 1;
		size[d] = x->type.dims[2 + d];
		out[d] = (size[d] + w.pads[d] + w.pads[k + d] - ext) / w.strides[d] + 1;
		if (out[d] < 1)
			return fe_fail(nd, "the kernel does not fit spatial dim %d", d);
	}
	op = ir_dims_elems(out, k);
	pts = kp * op;
	dims[0] = n, dims[1] = og * kp * k;
	memcpy(dims + 2, out, sizeof *dims * (size_t)k);
	if (!has_dims(off, dims, k + 2) || off->type.dtype != x->type.dtype)
		return fe_fail(nd,
		               "offset must be [N, offset_group * kernel size * %d, out...] = "
		               "[%lld, %lld, ...] of X's type",
		               k, (long long)n, (long long)dims[1]);
	dims[1] = og * kp;
	if (mask && (!has_dims(mask, dims, k + 2) || mask->type.dtype != x->type.dtype))
		return fe_fail(nd,
		               "mask must be [N, offset_group * kernel size, out...] = [%lld, "
		               "%lld, ...] of X's type",
		               (long long)n, (long long)dims[1]);
	if (bias && (bias->type.rank != 1 || bias->type.dims[0] != m))
		return fe_fail(nd, "B must hold %lld values, one per output channel", (long long)m);
	{ /* offsets [N * og, kernel, axis, out] */
		int64_t od[4] = { n * og, kp, k, op };
		off = to(nd, fe_reshape(nd, off, od, 4, -1), COORD);
	}
	for (int d = 0; d < k; d++) {
		/* window position o * stride - pad + tap * dilation, plus the offset */
		float *cv = ir_arena_alloc(&nd->fe->m->arena, sizeof *cv * (size_t)pts);
		int64_t cd[3] = { 1, pts, 1 }, pd[3] = { n * og, pts, 1 };
		struct ir_value *pos;
		for (int64_t q = 0; q < pts; q++) {
			int64_t kq = q / op, oq = q % op, kd = kq, od = oq;
			for (int e = k - 1; e > d; e--)
				kd /= w.kernel[e], od /= out[e];
			cv[q] = (float)(od % out[d] * w.strides[d] - w.pads[d] +
			                kd % w.kernel[d] * w.dilations[d]);
		}
		pos = fe_reshape(nd, fe_slice_axis(nd, off, 2, d, d + 1, 1, -1), pd, 3, -1);
		pos = fe_binary(nd, IR_OP_ADD, coord_const(nd, cd, 3, cv), pos, -1);
		ax[d] = axis_taps(nd, pos, size[d], LINEAR, ZEROS, 0, (double)size[d] - 1);
		if (!ax[d].pos)
			return false;
	}
	acc = acc_type(x->type.dtype);
	y = gather_taps(nd, image_rows(nd, x, og), batch_rows(nd, n * og, ir_dims_elems(size, k)),
	                size, ax, k, acc);
	y = fe_reduce(nd, IR_OP_REDUCE_SUM, y, (int64_t[]){ 2 }, 1, false,
	              -1); /* [N og, P, C/og] */
	if (mask) {
		int64_t md[3] = { n * og, pts, 1 };
		y = fe_binary(nd, IR_OP_MUL, y, to(nd, fe_reshape(nd, mask, md, 3, -1), acc), -1);
	}
	{ /* the columns [N, group, C/group * kernel, out] */
		int64_t sd[5] = { n, og, kp, op, c / og }, cd[4] = { n, group, c / group * kp, op };
		y = fe_reshape(nd, y, sd, 5, -1);
		y = fe_reshape(nd, fe_transpose(nd, y, perm, -1), cd, 4, -1);
	}
	{
		int64_t wd[3] = { group, m / group, c / group * kp };
		y = fe_binary(nd, IR_OP_MATMUL, fe_reshape(nd, wt, wd, 3, -1),
		              to(nd, y, x->type.dtype), -1);
	}
	dims[0] = n, dims[1] = m;
	memcpy(dims + 2, out, sizeof *dims * (size_t)k);
	if (!bias)
		return bind1(nd, fe_reshape(nd, y, dims, k + 2, 0));
	y = fe_reshape(nd, y, dims, k + 2, -1);
	dims[0] = 1;
	for (int d = 0; d < k; d++)
		dims[2 + d] = 1;
	return bind1(nd, fe_binary(nd, IR_OP_ADD, y, fe_reshape(nd, bias, dims, k + 2, -1), 0));
}

const struct fe_op fe_ops_sample[] = {
	{ "GridSample", imp_grid_sample, IR_OP_GATHER, { 16, 20, 22 } },
	{ "RoiAlign", imp_roi_align, IR_OP_GATHER, { 10, 16, 22 } },
	{ "DeformConv", imp_deform_conv, IR_OP_GATHER, { 19, 22 } },
	{ "MaxRoiPool", imp_max_roi_pool, IR_OP_REDUCE_MAX, { 1, 22 } },
	{ NULL, NULL, 0, { 0 } },
};
