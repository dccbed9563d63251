/*
 * eval_move.c - reference evaluators for data movement.
 *
 * These ops move elements without arithmetic, so they copy bytes and are
 * exact for every dtype. Most are one loop over the result's index space that
 * computes where each element comes from: transpose, slice and expand are the
 * same strided copy with different strides.
 */
#include "eval.h"

bool eval_reshape(struct fold *f)
{
	memcpy(f->out[0], IN(0)->data, (size_t)ir_type_elems(&IN(0)->type) * esize(IN(0)));
	return true;
}

/*
 * Copies out[i] = in[off + sum_d idx[d] * st[d]] over the output's index
 * space: transpose, slice, expand and tile are all this with different
 * strides (tile additionally wraps, handled by its caller).
 */
static void strided_copy(struct fold *f, int64_t off, const int64_t *st)
{
	const struct ir_type *o = &OUT(0)->type;
	int64_t idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(o);
	for (int64_t k = 0; k < total; k++) {
		copy_elem(f, 0, k, off + eval_dot(idx, st, o->rank));
		eval_next(idx, o->dims, o->rank);
	}
}

bool eval_transpose(struct fold *f)
{
	int64_t s[IR_MAX_RANK], st[IR_MAX_RANK];
	const int64_t *perm = ir_attr_ints(f->n, "perm", NULL);
	eval_strides(&IN(0)->type, s);
	for (int i = 0; i < IN(0)->type.rank; i++)
		st[i] = s[perm[i]];
	strided_copy(f, 0, st);
	return true;
}

bool eval_slice(struct fold *f)
{
	int64_t st[IR_MAX_RANK], off;
	if (ir_type_elems(&OUT(0)->type) == 0)
		return true; /* empty result */
	ir_slice_view(f->n, &off, st);
	strided_copy(f, off, st);
	return true;
}

bool eval_expand(struct fold *f)
{
	int64_t st[IR_MAX_RANK];
	eval_bcast_strides(&IN(0)->type, &OUT(0)->type, st);
	strided_copy(f, 0, st);
	return true;
}

bool eval_tile(struct fold *f)
{
	const struct ir_type *in = &IN(0)->type, *o = &OUT(0)->type;
	int64_t s[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(o);
	eval_strides(in, s);
	for (int64_t k = 0; k < total; k++) {
		int64_t src = 0;
		for (int d = 0; d < o->rank; d++)
			src += (idx[d] % in->dims[d]) * s[d];
		copy_elem(f, 0, k, src);
		eval_next(idx, o->dims, o->rank);
	}
	return true;
}

/*
 * concat and split copy the same chunks in the same order - for each index
 * before the axis, each piece's block in turn - only in opposite directions.
 */
static void chunks(struct fold *f, bool split)
{
	int axis = (int)ir_attr_i(f->n, "axis"), npieces = split ? f->n->nout : f->n->nin;
	char *whole = split ? IN(0)->data : f->out[0];
	int64_t outer, inner;
	size_t es = esize(IN(0)), pos = 0;
	eval_axis_blocks(split ? &IN(0)->type : &OUT(0)->type, axis, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int i = 0; i < npieces; i++) {
			struct ir_value *v = split ? OUT(i) : IN(i);
			size_t chunk = (size_t)(v->type.dims[axis] * inner) * es;
			char *piece = (char *)(split ? f->out[i] : v->data) + (size_t)o * chunk;
			if (split)
				memcpy(piece, whole + pos, chunk);
			else
				memcpy(whole + pos, piece, chunk);
			pos += chunk;
		}
}

bool eval_concat(struct fold *f)
{
	chunks(f, false);
	return true;
}

bool eval_split(struct fold *f)
{
	chunks(f, true);
	return true;
}

bool eval_gather(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type, *it = &IN(1)->type;
	int axis = (int)ir_attr_i(f->n, "axis");
	int64_t outer, inner, nidx = ir_type_elems(it), dim = x->dims[axis];
	size_t es = esize(IN(0)), pos = 0;
	eval_axis_blocks(x, axis, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < nidx; j++) {
			int64_t k = ir_load_i64(it->dtype, IN(1)->data, (size_t)j);
			if (k < -dim || k >= dim)
				FAIL("index %lld is out of range for axis %d of size %lld",
				     (long long)k, axis, (long long)dim);
			if (k < 0)
				k += dim;
			memcpy((char *)f->out[0] + pos,
			       (const char *)IN(0)->data + (size_t)((o * dim + k) * inner) * es,
			       (size_t)inner * es);
			pos += (size_t)inner * es;
		}
	return true;
}

bool eval_gather_elements(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type, *it = &IN(1)->type;
	int axis = (int)ir_attr_i(f->n, "axis");
	int64_t s[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(it);
	eval_strides(x, s);
	for (int64_t k = 0; k < total; k++) {
		int64_t j = ir_load_i64(it->dtype, IN(1)->data, (size_t)k), src = 0;
		if (j < -x->dims[axis] || j >= x->dims[axis])
			FAIL("index %lld is out of range for axis %d of size %lld", (long long)j,
			     axis, (long long)x->dims[axis]);
		if (j < 0)
			j += x->dims[axis];
		for (int d = 0; d < x->rank; d++) {
			if (d != axis && idx[d] >= x->dims[d])
				FAIL("indices shape exceeds the data shape");
			src += (d == axis ? j : idx[d]) * s[d];
		}
		copy_elem(f, 0, k, src);
		eval_next(idx, it->dims, it->rank);
	}
	return true;
}

/*
 * ScatterElements combines in the result's own type after every update, as
 * ONNX defines it (a sequential loop over the updates) and the kernels do:
 * floats in double, rounded to the dtype on each store (which gives the
 * correctly rounded FP32/FP16/BF16 sum or product of two stored values),
 * integers wrapping. max and min let a NaN through, as numpy's maximum.
 */
static double scatter_f(const char *red, double a, double b)
{
	if (!strcmp(red, "add"))
		return a + b;
	if (!strcmp(red, "mul"))
		return a * b;
	if (!strcmp(red, "max"))
		return b > a || b != b ? b : a;
	return b < a || b != b ? b : a; /* min */
}

static uint64_t scatter_u(const char *red, uint64_t a, uint64_t b, bool is_signed)
{
	if (!strcmp(red, "add"))
		return a + b;
	if (!strcmp(red, "mul"))
		return a * b;
	bool b_above = is_signed ? (int64_t)b > (int64_t)a : b > a;
	bool b_below = is_signed ? (int64_t)b < (int64_t)a : b < a;
	return (!strcmp(red, "max") ? b_above : b_below) ? b : a;
}

bool eval_scatter_elements(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type, *it = &IN(1)->type;
	enum ir_dtype dt = x->dtype;
	int axis = (int)ir_attr_i(f->n, "axis");
	const char *red = ir_attr_s(f->n, "reduction");
	bool none = !strcmp(red, "none"), is_signed = ir_dtypes[dt].is_signed;
	int64_t s[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(it);
	size_t es = esize(IN(0));
	memcpy(f->out[0], IN(0)->data, (size_t)ir_type_elems(x) * es);
	eval_strides(x, s);
	for (int64_t k = 0; k < total; k++) {
		int64_t j = ir_load_i64(it->dtype, IN(1)->data, (size_t)k), dst = 0;
		if (j < -x->dims[axis] || j >= x->dims[axis])
			FAIL("index %lld is out of range for axis %d of size %lld", (long long)j,
			     axis, (long long)x->dims[axis]);
		if (j < 0)
			j += x->dims[axis];
		for (int d = 0; d < x->rank; d++)
			dst += (d == axis ? j : idx[d]) * s[d];
		if (none) {
			memcpy((char *)f->out[0] + (size_t)dst * es,
			       (const char *)IN(2)->data + (size_t)k * es, es);
		} else if (isf(dt)) {
			double a = ir_load_f64(dt, f->out[0], (size_t)dst);
			putf(f, 0, dst, scatter_f(red, a, getf(IN(2), k)));
		} else {
			uint64_t a = (uint64_t)ir_load_i64(dt, f->out[0], (size_t)dst);
			uint64_t b = (uint64_t)geti(IN(2), k);
			puti(f, 0, dst, (int64_t)scatter_u(red, a, b, is_signed));
		}
		eval_next(idx, it->dims, it->rank);
	}
	return true;
}

bool eval_trilu(struct fold *f)
{
	const struct ir_type *t = &IN(0)->type;
	int64_t total = ir_type_elems(t), k = ir_attr_i(f->n, "k"), rows, cols;
	bool upper = ir_attr_i(f->n, "upper") != 0;
	if (t->rank < 2)
		FAIL("trilu needs rank >= 2");
	rows = t->dims[t->rank - 2];
	cols = t->dims[t->rank - 1];
	/* the result buffer starts zeroed: copy only what the triangle keeps */
	for (int64_t e = 0; e < total; e++) {
		int64_t c = e % cols, r = (e / cols) % rows;
		if (upper ? (c - r >= k) : (c - r <= k))
			copy_elem(f, 0, e, e);
	}
	return true;
}

int64_t ir_pad_source(const char *mode, int64_t i, int64_t n)
{
	if (i >= 0 && i < n)
		return i;
	if (!strcmp(mode, "constant") || n == 0)
		return -1;
	if (!strcmp(mode, "edge"))
		return i < 0 ? 0 : n - 1;
	if (!strcmp(mode, "wrap"))
		return (i % n + n) % n;
	return i < 0 ? -i : 2 * (n - 1) - i; /* reflect */
}

bool eval_pad(struct fold *f)
{
	const struct ir_type *x = &IN(0)->type, *o = &OUT(0)->type;
	const int64_t *pads = ir_attr_ints(f->n, "pads", NULL);
	const char *mode = ir_attr_s(f->n, "mode");
	int64_t s[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 }, total = ir_type_elems(o);
	eval_strides(x, s);
	for (int64_t k = 0; k < total; k++) {
		int64_t src = 0;
		bool inside = true;
		for (int d = 0; d < o->rank; d++) {
			int64_t i = idx[d] - pads[d], n = x->dims[d];
			if ((i = ir_pad_source(mode, i, n)) < 0) {
				inside = false;
				break;
			}
			src += i * s[d];
		}
		if (inside)
			copy_elem(f, 0, k, src);
		else /* converted as a cast would, saturating for integers */
			putf(f, 0, k, ir_attr_f(f->n, "value"));
		eval_next(idx, o->dims, o->rank);
	}
	return true;
}

/*
 * DepthToSpace and SpaceToDepth are one index map between a deep tensor
 * [N, C*b*b, H, W] and a shallow one [N, C, H*b, W*b]: shallow element
 * (n, c, h*b + i, w*b + j) is deep element (n, dc, h, w), where the deep
 * channel dc lists the block offsets first (DCR: dc = (i*b + j)*C + c) or the
 * channel first (CRD: dc = (c*b + i)*b + j). SpaceToDepth uses DCR order.
 */
bool eval_depth_space(struct fold *f)
{
	bool d2s = f->n->op == IR_OP_DEPTH_TO_SPACE;
	bool crd = d2s && !strcmp(ir_attr_s(f->n, "mode"), "CRD");
	const struct ir_type *sh = d2s ? &OUT(0)->type : &IN(0)->type;
	int64_t b = ir_attr_i(f->n, "blocksize"), C = sh->dims[1];
	int64_t H = sh->dims[2] / b, W = sh->dims[3] / b;
	int64_t idx[4] = { 0 }, total = ir_type_elems(sh);
	for (int64_t k = 0; k < total; k++) {
		int64_t n = idx[0], c = idx[1], h = idx[2] / b, i = idx[2] % b, w = idx[3] / b,
		        j = idx[3] % b;
		int64_t dc = crd ? (c * b + i) * b + j : (i * b + j) * C + c;
		int64_t deep = ((n * C * b * b + dc) * H + h) * W + w;
		if (d2s)
			copy_elem(f, 0, k, deep);
		else
			copy_elem(f, 0, deep, k);
		eval_next(idx, sh->dims, 4);
	}
	return true;
}
