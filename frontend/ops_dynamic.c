/*
 * ops_dynamic.c - importers for ops whose output shape depends on the
 * values of an input (NonZero, Compress, Unique).
 *
 * onnxc compiles static shapes, so these are evaluated at import when the
 * deciding input is a constant (a weight, a folded expression, or a graph
 * input bound with --const): NonZero and Unique become constants, Compress
 * a Gather with constant indices (its data may still come at run time),
 * NonMaxSuppression the constant indices of the boxes it selects.
 * Otherwise the node is refused with a diagnostic that says why and what a
 * user can do.
 */
#include "fe.h"

#include <stdint.h>
#include <string.h>

static bool fold_fits(struct fe_node *nd, int64_t work)
{
	if (!fe_fold_ok(nd->fe, work))
		return fe_fail(nd,
		               "evaluating the op at import (%lld element visits) exceeds the "
		               "folding budget",
		               (long long)work);
	return true;
}

static bool imp_nonzero(struct fe_node *nd)
{
	struct ir_value *x;
	int64_t n, nnz = 0, *out;
	struct ir_type t = { .dtype = IR_I64, .rank = 2 };
	if (!fe_inputs(nd, 1, 1) || !fe_need_values(nd, 0))
		return false;
	x = nd->in[0];
	n = ir_type_elems(&x->type);
	if (!fold_fits(nd, n * (x->type.rank + 1)))
		return false;
	for (int64_t i = 0; i < n; i++)
		nnz += ir_load_f64(x->type.dtype, x->data, (size_t)i) != 0;
	if (!nnz)
		return fe_fail(nd, "the input has no nonzero element: the output would be empty, "
		                   "and onnxc has no empty tensors");
	t.dims[0] = x->type.rank ? x->type.rank : 1;
	t.dims[1] = nnz;
	out = ir_arena_alloc(&nd->fe->m->arena, sizeof *out * (size_t)(t.dims[0] * nnz));
	for (int64_t i = 0, k = 0; i < n; i++) {
		int64_t rest = i;
		if (ir_load_f64(x->type.dtype, x->data, (size_t)i) == 0)
			continue;
		for (int d = x->type.rank - 1; d >= 0; d--) {
			out[d * nnz + k] = rest % x->type.dims[d];
			rest /= x->type.dims[d];
		}
		if (!x->type.rank)
			out[k] = 0;
		k++;
	}
	fe_bind(nd, 0, fe_const(nd, 0, &t, out));
	return true;
}

/* Output 0: x's slices along axis at the constant indices idx[0..n). */
static bool gather_at(struct fe_node *nd, struct ir_value *x, int64_t axis, int64_t *idx, int64_t n)
{
	struct ir_type it = { .dtype = IR_I64, .rank = 1, .dims = { n } };
	struct ir_value *y = fe_gather(nd, x, fe_const(nd, -1, &it, idx), axis, 0);
	if (!y)
		return false;
	fe_bind(nd, 0, y);
	return true;
}

/* Compress: the slices along axis (of the flattened input without one)
 * whose condition is true, as a Gather with their indices. */
static bool imp_compress(struct fe_node *nd)
{
	bool has_axis = fe_has(nd, "axis");
	int64_t axis = fe_int(nd, "axis", 0), len, k = 0, *idx;
	struct ir_value *x, *c;
	if (!fe_inputs(nd, 2, 2) || nd->failed || !fe_need_values(nd, 1))
		return false;
	x = nd->in[0], c = nd->in[1];
	if (c->type.dtype != IR_BOOL || c->type.rank != 1)
		return fe_fail(nd, "condition must be a 1-D bool tensor");
	if (has_axis) {
		if ((axis = fe_axis(nd, axis, x->type.rank, "axis")) < 0)
			return false;
		len = x->type.dims[axis];
	} else {
		int64_t flat = ir_type_elems(&x->type);
		if (!(x = fe_reshape(nd, x, &flat, 1, -1)))
			return false;
		len = flat, axis = 0;
	}
	if (c->type.dims[0] > len)
		return fe_fail(nd, "condition has %lld entries for an axis of %lld",
		               (long long)c->type.dims[0], (long long)len);
	idx = ir_arena_alloc(&nd->fe->m->arena, sizeof *idx * (size_t)(c->type.dims[0] + 1));
	for (int64_t i = 0; i < c->type.dims[0]; i++)
		if (((const unsigned char *)c->data)[i])
			idx[k++] = i;
	if (!k)
		return fe_fail(nd, "the condition selects nothing: the output would be empty, and "
		                   "onnxc has no empty tensors");
	return gather_at(nd, x, axis, idx, k);
}

/* Unique of a constant: slices along axis (elements, without one) compared
 * by value, lexicographically. */
struct uniq {
	const struct ir_value *x;
	int64_t inner, outer, len; /* slice i: [outer][i][inner] */
};
static int uniq_cmp_slices(const struct uniq *u, int64_t a, int64_t b)
{
	enum ir_dtype t = u->x->type.dtype;
	for (int64_t o = 0; o < u->outer; o++)
		for (int64_t j = 0; j < u->inner; j++) {
			size_t ia = (size_t)((o * u->len + a) * u->inner + j),
			       ib = (size_t)((o * u->len + b) * u->inner + j);
			if (ir_dtypes[t].is_float) {
				double va = ir_load_f64(t, u->x->data, ia),
				       vb = ir_load_f64(t, u->x->data, ib);
				if (va != vb)
					return va < vb ? -1 : 1;
			} else {
				int64_t va = ir_load_i64(t, u->x->data, ia),
				        vb = ir_load_i64(t, u->x->data, ib);
				if (va != vb)
					return va < vb ? -1 : 1;
			}
		}
	return 0;
}

/* Sorts v[0..n) stably by before(ctx, a, b) (is a strictly before b?): a
 * merge sort, tmp n entries of scratch (qsort is neither stable nor takes a
 * context). */
static void stable_sort(int64_t *v, int64_t *tmp, int64_t n,
                        bool (*before)(const void *ctx, int64_t a, int64_t b), const void *ctx)
{
	int64_t h = n / 2, i = 0, j = h, k = 0;
	if (n < 2)
		return;
	stable_sort(v, tmp, h, before, ctx);
	stable_sort(v + h, tmp, n - h, before, ctx);
	while (i < h && j < n)
		tmp[k++] = before(ctx, v[j], v[i]) ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	memcpy(v, tmp, sizeof *v * (size_t)k);
}

static bool uniq_before(const void *u, int64_t a, int64_t b)
{
	return uniq_cmp_slices(u, a, b) < 0;
}

static bool imp_unique(struct fe_node *nd)
{
	bool has_axis = fe_has(nd, "axis");
	int64_t axis = fe_int(nd, "axis", 0), sorted = fe_int(nd, "sorted", 1), nu = 0;
	struct uniq u;
	struct ir_value *x;
	int64_t *order, *first, *inverse, *counts, *slot;
	struct ir_type it = { .dtype = IR_I64, .rank = 1 };
	struct ir_arena *a = &nd->fe->m->arena;
	if (!fe_inputs(nd, 1, 1) || nd->failed || !fe_need_values(nd, 0))
		return false;
	x = nd->in[0];
	if (has_axis) {
		if ((axis = fe_axis(nd, axis, x->type.rank, "axis")) < 0)
			return false;
	} else {
		int64_t flat = ir_type_elems(&x->type);
		if (!(x = fe_reshape(nd, x, &flat, 1, -1)))
			return false;
		axis = 0;
	}
	if (x->kind != IR_VAL_CONST || !x->data)
		return fe_fail(nd, "the input could not be evaluated at import");
	u.x = x, u.len = x->type.dims[axis], u.outer = 1, u.inner = 1;
	for (int d = 0; d < x->type.rank; d++)
		if (d != axis)
			*(d < axis ? &u.outer : &u.inner) *= x->type.dims[d];
	if (!u.len)
		return fe_fail(nd, "the input is empty");
	if (!fold_fits(nd, ir_type_elems(&x->type) * 64))
		return false;
	order = ir_arena_alloc(a, sizeof *order * (size_t)u.len);
	first = ir_arena_alloc(a, sizeof *first * (size_t)u.len);
	inverse = ir_arena_alloc(a, sizeof *inverse * (size_t)u.len);
	counts = ir_arena_alloc(a, sizeof *counts * (size_t)u.len);
	slot = ir_arena_alloc(a, sizeof *slot * (size_t)u.len);
	for (int64_t i = 0; i < u.len; i++)
		order[i] = i;
	stable_sort(order, counts, u.len, uniq_before, &u); /* counts: scratch until filled */
	/* runs of equal slices in sorted order: slot[] numbers them */
	for (int64_t i = 0; i < u.len; i++) {
		if (!i || uniq_cmp_slices(&u, order[i - 1], order[i])) {
			first[nu] = order[i];
			counts[nu++] = 0;
		}
		slot[order[i]] = nu - 1;
		counts[nu - 1]++;
	}
	if (!sorted) { /* renumber the uniques by their first occurrence */
		int64_t *rank = ir_arena_alloc(a, sizeof *rank * (size_t)nu), *f2, *c2, m = 0;
		f2 = ir_arena_alloc(a, sizeof *f2 * (size_t)nu);
		c2 = ir_arena_alloc(a, sizeof *c2 * (size_t)nu);
		for (int64_t i = 0; i < nu; i++)
			rank[i] = -1;
		for (int64_t i = 0; i < u.len; i++)
			if (rank[slot[i]] < 0) {
				f2[m] = first[slot[i]], c2[m] = counts[slot[i]];
				rank[slot[i]] = m++;
			}
		for (int64_t i = 0; i < u.len; i++)
			slot[i] = rank[slot[i]];
		first = f2, counts = c2;
	}
	for (int64_t i = 0; i < u.len; i++)
		inverse[i] = slot[i];
	if (!gather_at(nd, x, axis, first, nu))
		return false;
	it.dims[0] = nu;
	fe_bind(nd, 1, fe_const(nd, 1, &it, first));
	it.dims[0] = u.len;
	fe_bind(nd, 2, fe_const(nd, 2, &it, inverse));
	it.dims[0] = nu;
	fe_bind(nd, 3, fe_const(nd, 3, &it, counts));
	return true;
}

/* NonMaxSuppression's box a of boxes b ([y1, x1, y2, x2], any two opposite
 * corners; or [x_center, y_center, width, height]) as min and max corners,
 * in FP32 as ONNX's reference computes. */
struct nms_box {
	float x0, x1, y0, y1;
};

static struct nms_box nms_box_at(const float *b, int center)
{
	struct nms_box r;
	if (center) {
		r.x0 = b[0] - b[2] / 2, r.x1 = b[0] + b[2] / 2;
		r.y0 = b[1] - b[3] / 2, r.y1 = b[1] + b[3] / 2;
	} else {
		r.x0 = b[1] < b[3] ? b[1] : b[3], r.x1 = b[1] < b[3] ? b[3] : b[1];
		r.y0 = b[0] < b[2] ? b[0] : b[2], r.y1 = b[0] < b[2] ? b[2] : b[0];
	}
	return r;
}

/* Does a suppress b: intersection over union above iou (degenerate boxes
 * never do)? */
static bool nms_suppresses(struct nms_box a, struct nms_box b, float iou)
{
	float ix0 = a.x0 > b.x0 ? a.x0 : b.x0, ix1 = a.x1 < b.x1 ? a.x1 : b.x1,
	      iy0 = a.y0 > b.y0 ? a.y0 : b.y0, iy1 = a.y1 < b.y1 ? a.y1 : b.y1;
	float inter, area_a, area_b, uni;
	if (ix1 <= ix0 || iy1 <= iy0)
		return false;
	inter = (ix1 - ix0) * (iy1 - iy0);
	area_a = (a.x1 - a.x0) * (a.y1 - a.y0);
	area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
	uni = area_a + area_b - inter;
	if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0)
		return false;
	return inter / uni > iou;
}

/* Candidates by score, best first, ties to the lower box (sorted stably:
 * ONNX's reference order). */
static bool nms_before(const void *score, int64_t a, int64_t b)
{
	return ((const float *)score)[a] > ((const float *)score)[b];
}

/*
 * NonMaxSuppression (10, 11) of constant boxes [B, N, 4] and scores
 * [B, C, N]: per batch and class, the boxes scoring above score_threshold
 * (all without one) in score order, each kept unless a box kept before it
 * overlaps it by more than iou_threshold, at most max_output_boxes_per_class
 * (default 0: none). The result [selected, 3] holds (batch, class, box).
 */
static bool imp_nms(struct fe_node *nd)
{
	int center = (int)fe_int(nd, "center_point_box", 0);
	struct ir_value *bx, *sc, *opt[3];
	int64_t nb, nc, n, limit = 0, nsel = 0, *sel, *cand, *tmp, *kept;
	float iou = 0, thr = 0;
	const float *boxes, *scores;
	struct ir_arena *a = &nd->fe->m->arena;
	struct ir_type t = { .dtype = IR_I64, .rank = 2 };
	if (!fe_inputs(nd, 2, 5) || nd->failed)
		return false;
	if (center != 0 && center != 1)
		return fe_fail(nd, "center_point_box must be 0 or 1, not %d", center);
	bx = nd->in[0], sc = nd->in[1];
	if (bx->type.dtype != IR_F32 || sc->type.dtype != IR_F32 || bx->type.rank != 3 ||
	    sc->type.rank != 3 || bx->type.dims[2] != 4 || sc->type.dims[0] != bx->type.dims[0] ||
	    sc->type.dims[2] != bx->type.dims[1])
		return fe_fail(nd, "boxes must be f32 [batches, boxes, 4] and scores f32 [batches, "
		                   "classes, boxes]");
	for (int i = 0; i < 3; i++) {
		opt[i] = fe_in(nd, i + 2);
		if (opt[i] && ir_type_elems(&opt[i]->type) != 1)
			return fe_fail(nd, "input %d must hold one value", i + 2);
	}
	if (!fe_need_values(nd, 0) || !fe_need_values(nd, 1) ||
	    (opt[0] && !fe_need_values(nd, 2)) || (opt[1] && !fe_need_values(nd, 3)) ||
	    (opt[2] && !fe_need_values(nd, 4)))
		return false;
	if (opt[0])
		limit = ir_load_i64(opt[0]->type.dtype, opt[0]->data, 0);
	if (opt[1])
		iou = (float)ir_load_f64(opt[1]->type.dtype, opt[1]->data, 0);
	if (opt[2])
		thr = (float)ir_load_f64(opt[2]->type.dtype, opt[2]->data, 0);
	nb = bx->type.dims[0], nc = sc->type.dims[1], n = bx->type.dims[1];
	limit = limit < 0 ? 0 : limit < n ? limit : n;
	/* per class: a sort, then each candidate against the kept ones (the
	 * score elements are bounded by the model; the product saturates) */
	{
		int64_t elems = nb * nc * n, per = 32 + limit;
		if (!fold_fits(nd, elems > INT64_MAX / per ? INT64_MAX : elems * per))
			return false;
	}
	boxes = bx->data, scores = sc->data;
	sel = ir_arena_alloc(a, sizeof *sel * (size_t)(3 * nb * nc * limit + 3));
	cand = ir_arena_alloc(a, sizeof *cand * (size_t)(n + 1));
	tmp = ir_arena_alloc(a, sizeof *tmp * (size_t)(n + 1));
	kept = ir_arena_alloc(a, sizeof *kept * (size_t)(limit + 1));
	for (int64_t b = 0; b < nb; b++)
		for (int64_t c = 0; c < nc; c++) {
			const float *s = scores + (b * nc + c) * n, *bb = boxes + b * n * 4;
			int64_t m = 0, nk = 0;
			for (int64_t i = 0; i < n; i++)
				if (!opt[2] || s[i] > thr)
					cand[m++] = i;
			stable_sort(cand, tmp, m, nms_before, s);
			for (int64_t i = 0; i < m && nk < limit; i++) {
				struct nms_box bi = nms_box_at(bb + cand[i] * 4, center);
				bool keep = true;
				for (int64_t j = 0; j < nk && keep; j++)
					keep = !nms_suppresses(
					        bi, nms_box_at(bb + kept[j] * 4, center), iou);
				if (!keep)
					continue;
				kept[nk++] = cand[i];
				sel[3 * nsel] = b, sel[3 * nsel + 1] = c,
				        sel[3 * nsel + 2] = cand[i];
				nsel++;
			}
		}
	if (!nsel)
		return fe_fail(nd,
		               "no box is selected: the output would be empty, and onnxc has no "
		               "empty tensors");
	t.dims[0] = nsel, t.dims[1] = 3;
	fe_bind(nd, 0, fe_const(nd, 0, &t, sel));
	return true;
}

const struct fe_op fe_ops_dynamic[] = {
	{ "NonZero", imp_nonzero, IR_OP_COUNT, { 9, 13 } },
	{ "Compress", imp_compress, IR_OP_GATHER, { 9, 11 } },
	{ "Unique", imp_unique, IR_OP_GATHER, { 11 } },
	{ "NonMaxSuppression", imp_nms, IR_OP_COUNT, { 10, 11 } },
	{ NULL, NULL, 0, { 0 } },
};
