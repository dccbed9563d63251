/*
 * grad_move.c - gradient rules of data movement (ir/eval_move.c).
 *
 * Each moves the gradient back where the forward took it from: the inverse
 * reshape or permutation, a pad for a slice, a sum for an expand or a tile,
 * a scatter-add into zeros for the gathers.
 */
#include "grad.h"

#include <string.h>

bool grad_reshape(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (ad_wants(a, n, 0))
		ad_contrib(a, n, 0, ad_reshape_to(a, dy[0], &n->in[0]->type));
	return true;
}

bool grad_transpose(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	int c;
	const int64_t *perm = ir_attr_ints(n, "perm", &c);
	int64_t inv[IR_MAX_RANK];
	if (!ad_wants(a, n, 0))
		return true;
	for (int i = 0; i < c; i++)
		inv[perm[i]] = i;
	ad_contrib(a, n, 0, ad_transpose(a, dy[0], inv));
	return true;
}

bool grad_expand(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (ad_wants(a, n, 0))
		ad_contrib(a, n, 0, ad_unbroadcast(a, dy[0], &n->in[0]->type));
	return true;
}

bool grad_concat(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	int64_t axis = ir_attr_i(n, "axis"), sizes[64];
	struct ir_node *s;
	if (n->nin > 64) { /* too many pieces for one split: slice each */
		int64_t starts[IR_MAX_RANK] = { 0 }, ends[IR_MAX_RANK], steps[IR_MAX_RANK];
		for (int d = 0; d < dy[0]->type.rank; d++) {
			ends[d] = dy[0]->type.dims[d];
			steps[d] = 1;
		}
		for (int i = 0; i < n->nin; i++) {
			ends[axis] = starts[axis] + n->in[i]->type.dims[axis];
			if (ad_wants(a, n, i))
				ad_contrib(a, n, i, ad_slice(a, dy[0], starts, ends, steps));
			starts[axis] = ends[axis];
		}
		return true;
	}
	for (int i = 0; i < n->nin; i++)
		sizes[i] = n->in[i]->type.dims[axis];
	if (n->nin == 1) {
		if (ad_wants(a, n, 0))
			ad_contrib(a, n, 0, dy[0]);
		return true;
	}
	s = ad_node(a, IR_OP_SPLIT, &dy[0], 1, n->nin);
	ir_set_i(a->m, s, "axis", axis);
	ir_set_ints(a->m, s, "split", sizes, n->nin);
	ad_fin(a, s);
	for (int i = 0; i < n->nin; i++)
		if (ad_wants(a, n, i))
			ad_contrib(a, n, i, s->out[i]);
	return true;
}

bool grad_split(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value **parts;
	struct ir_node *c;
	if (!ad_wants(a, n, 0))
		return true;
	parts = ir_arena_alloc(&a->m->arena, sizeof *parts * (size_t)n->nout);
	for (int i = 0; i < n->nout; i++)
		parts[i] = dy[i] ? dy[i] : ad_zeros(a, &n->out[i]->type);
	if (n->nout == 1) {
		ad_contrib(a, n, 0, parts[0]);
		return true;
	}
	c = ad_node(a, IR_OP_CONCAT, parts, n->nout, 1);
	ir_set_i(a->m, c, "axis", ir_attr_i(n, "axis"));
	ad_contrib(a, n, 0, ad_fin(a, c));
	return true;
}

/*
 * slice: the gradient is dy put back where the slice took it, zeros
 * elsewhere. Negative steps first reverse dy; a step s > 1 spreads each
 * element into s (an axis of s added and padded, then merged); a final pad
 * (cropping where negative) places the result.
 */
bool grad_slice(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const struct ir_type *xt = &n->in[0]->type;
	const int64_t *st = ir_attr_ints(n, "starts", NULL), *sp = ir_attr_ints(n, "steps", NULL);
	int r = xt->rank;
	int64_t lo[IR_MAX_RANK], span[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
	int64_t rs[IR_MAX_RANK], re[IR_MAX_RANK], rp[IR_MAX_RANK];
	struct ir_value *g = dy[0];
	bool reverse = false;
	if (!ad_wants(a, n, 0))
		return true;
	if (ir_type_elems(&g->type) == 0) {
		ad_contrib(a, n, 0, ad_zeros(a, xt));
		return true;
	}
	for (int i = 0; i < r; i++) {
		int64_t cnt = g->type.dims[i];
		rs[i] = 0;
		re[i] = cnt;
		rp[i] = 1;
		if (sp[i] < 0) {
			reverse = true;
			rs[i] = cnt - 1;
			re[i] = -1;
			rp[i] = -1;
			lo[i] = st[i] + (cnt - 1) * sp[i]; /* the lowest index taken */
		} else {
			lo[i] = st[i];
		}
	}
	if (reverse)
		g = ad_slice(a, g, rs, re, rp);
	for (int i = 0; i < r; i++) {
		int64_t s, cnt = g->type.dims[i];
		span[i] = cnt;
		if (cnt <= 1 || sp[i] == 1 || sp[i] == -1)
			continue;
		s = sp[i] < 0 ? -sp[i] : sp[i]; /* < the dimension: cnt > 1 */
		/* [.., cnt, ..] -> [.., cnt, 1, ..] -> pad to [.., cnt, s, ..] -> [.., cnt*s, ..] */
		struct ir_type t = g->type;
		int64_t p[2 * IR_MAX_RANK] = { 0 };
		if (r + 1 > IR_MAX_RANK) {
			ir_node_error(a->m->ctx, n->name, ir_ops[n->op].name,
			              "no gradient for slice with steps on a rank-%d tensor", r);
			return false;
		}
		memmove(t.dims + i + 2, t.dims + i + 1, sizeof(int64_t) * (size_t)(r - i - 1));
		t.dims[i + 1] = 1;
		t.rank = r + 1;
		g = ad_reshape_to(a, g, &t);
		p[(r + 1) + i + 1] = s - 1;
		g = ad_pad(a, g, p);
		t = g->type;
		t.dims[i] = cnt * s;
		memmove(t.dims + i + 1, t.dims + i + 2, sizeof(int64_t) * (size_t)(r - i - 1));
		t.rank = r;
		g = ad_reshape_to(a, g, &t);
		span[i] = cnt * s;
	}
	for (int i = 0; i < r; i++) {
		pads[i] = lo[i];
		pads[r + i] = xt->dims[i] - lo[i] - span[i]; /* negative: crop */
	}
	ad_contrib(a, n, 0, ad_pad(a, g, pads));
	return true;
}

bool grad_pad(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	int c;
	const int64_t *pads = ir_attr_ints(n, "pads", &c);
	int64_t neg[2 * IR_MAX_RANK];
	if (!ad_wants(a, n, 0))
		return true;
	if (strcmp(ir_attr_s(n, "mode"), "constant"))
		return grad_separable(a, n, dy); /* edge, reflect, wrap */
	for (int i = 0; i < c; i++)
		neg[i] = -pads[i];
	ad_contrib(a, n, 0, ad_pad(a, dy[0], neg));
	return true;
}

/*
 * depth_to_space and space_to_depth move elements without arithmetic, so
 * the gradient moves dy back: space_to_depth is the inverse of DCR
 * depth_to_space and the other way round; CRD's inverse is its reshape ->
 * transpose -> reshape undone ([N, C, H, b, W, b] -> [N, C, b, b, H, W]).
 */
bool grad_depth_space(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const struct ir_type *xt = &n->in[0]->type, *yt = &n->out[0]->type;
	int64_t b = ir_attr_i(n, "blocksize");
	struct ir_node *g;
	if (!ad_wants(a, n, 0))
		return true;
	if (n->op == IR_OP_DEPTH_TO_SPACE && !strcmp(ir_attr_s(n, "mode"), "CRD")) {
		int64_t c = yt->dims[1], h = xt->dims[2], w = xt->dims[3];
		struct ir_value *v =
		        ad_reshape(a, dy[0], 6, (int64_t[]){ xt->dims[0], c, h, b, w, b });
		v = ad_transpose(a, v, (int64_t[]){ 0, 1, 3, 5, 2, 4 });
		ad_contrib(a, n, 0, ad_reshape_to(a, v, xt));
		return true;
	}
	g = ad_node(a, n->op == IR_OP_DEPTH_TO_SPACE ? IR_OP_SPACE_TO_DEPTH : IR_OP_DEPTH_TO_SPACE,
	            &dy[0], 1, 1);
	ir_set_i(a->m, g, "blocksize", b);
	if (g->op == IR_OP_DEPTH_TO_SPACE)
		ir_set_s(a->m, g, "mode", "DCR");
	ad_contrib(a, n, 0, ad_fin(a, g));
	return true;
}

/* tile: view dy as [r0, d0, r1, d1, ...] (splitting only repeated axes) and
 * sum over the repeats. */
bool grad_tile(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const struct ir_type *xt = &n->in[0]->type;
	const int64_t *rep = ir_attr_ints(n, "repeats", NULL);
	int64_t dims[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
	int rank = 0, naxes = 0;
	if (!ad_wants(a, n, 0))
		return true;
	for (int i = 0; i < xt->rank; i++) {
		if (rep[i] != 1) {
			axes[naxes++] = rank;
			dims[rank++] = rep[i];
		}
		dims[rank++] = xt->dims[i];
	}
	if (rank > IR_MAX_RANK) {
		ir_node_error(a->m->ctx, n->name, ir_ops[n->op].name,
		              "no gradient for tile: the repeats need rank %d (at most %d)", rank,
		              IR_MAX_RANK);
		return false;
	}
	if (!naxes) {
		ad_contrib(a, n, 0, dy[0]);
		return true;
	}
	struct ir_value *g = ad_reshape(a, dy[0], rank, dims);
	ad_contrib(a, n, 0,
	           ad_reshape_to(a, ad_reduce(a, IR_OP_REDUCE_SUM, g, axes, naxes, false), xt));
	return true;
}

/*
 * gather as an embedding lookup: the table [outer, D, inner] (flattened
 * around axis) receives dy [outer, nidx, inner] scatter-added at the
 * indices, broadcast over outer and inner.
 */
bool grad_gather(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const struct ir_type *xt = &n->in[0]->type;
	int axis = (int)ir_attr_i(n, "axis");
	int64_t outer = 1, inner = 1, ni = ir_type_elems(&n->in[1]->type), dims[3];
	struct ir_type tt = { .dtype = xt->dtype, .rank = 3 }, it;
	struct ir_value *idx, *u;
	if (!ad_wants(a, n, 0))
		return true;
	for (int i = 0; i < axis; i++)
		outer *= xt->dims[i];
	for (int i = axis + 1; i < xt->rank; i++)
		inner *= xt->dims[i];
	dims[0] = outer;
	dims[1] = ni;
	dims[2] = inner;
	u = ad_reshape(a, dy[0], 3, dims);
	it = u->type;
	it.dtype = n->in[1]->type.dtype;
	dims[0] = dims[2] = 1;
	idx = ad_reshape(a, n->in[1], 3, dims);
	if (outer != 1 || inner != 1)
		idx = ad_expand(a, idx, &it);
	tt.dims[0] = outer;
	tt.dims[1] = xt->dims[axis];
	tt.dims[2] = inner;
	ad_contrib(a, n, 0, ad_reshape_to(a, ad_scatter_add(a, &tt, idx, u, 1), xt));
	return true;
}

bool grad_gather_elements(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (ad_wants(a, n, 0))
		ad_contrib(
		        a, n, 0,
		        ad_scatter_add(a, &n->in[0]->type, n->in[1], dy[0], ir_attr_i(n, "axis")));
	return true;
}

/* scatter_elements with reduction none or add: the data's gradient is dy
 * (zeroed where none overwrote it), the updates' is dy gathered back. */
bool grad_scatter_elements(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const char *red = ir_attr_s(n, "reduction");
	int64_t axis = ir_attr_i(n, "axis");
	bool none = !strcmp(red, "none");
	if (!none && strcmp(red, "add")) {
		ir_node_error(
		        a->m->ctx, n->name, ir_ops[n->op].name,
		        "no gradient for scatter_elements with reduction %s (only none and add)",
		        red);
		return false;
	}
	if (ad_wants(a, n, 0)) {
		struct ir_value *g = dy[0];
		if (none) {
			struct ir_value *in[3] = { dy[0], n->in[1], ad_zeros(a, &n->in[2]->type) };
			struct ir_node *s = ad_node(a, IR_OP_SCATTER_ELEMENTS, in, 3, 1);
			ir_set_i(a->m, s, "axis", axis);
			ir_set_s(a->m, s, "reduction", "none");
			g = ad_fin(a, s);
		}
		ad_contrib(a, n, 0, g);
	}
	if (ad_wants(a, n, 2)) {
		struct ir_value *in[2] = { dy[0], n->in[1] };
		struct ir_node *gn = ad_node(a, IR_OP_GATHER_ELEMENTS, in, 2, 1);
		ir_set_i(a->m, gn, "axis", axis);
		ad_contrib(a, n, 2, ad_fin(a, gn));
	}
	return true;
}
