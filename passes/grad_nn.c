/*
 * grad_nn.c - gradient rules of convolutions and pooling (ir/eval_nn.c).
 *
 * Convolutions differentiate into convolutions: conv_transpose for the data,
 * a conv of the input with the batch moved into the channels for the filter.
 * Average pooling spreads each window's gradient over its taps; max pooling
 * scatter-adds it to the argmax (the forward's indices result).
 */
#include "grad.h"

#include <math.h>
#include <string.h>

static struct ir_value *conv_like(struct ad *a, enum ir_op op, struct ir_value *x,
                                  struct ir_value *w, const int64_t *st, const int64_t *pads,
                                  const int64_t *dil, int64_t group, const int64_t *outpad)
{
	int nsp = x->type.rank - 2;
	struct ir_value *in[2] = { x, w };
	struct ir_node *c = ad_node(a, op, in, 2, 1);
	ir_set_ints(a->m, c, "strides", st, nsp);
	ir_set_ints(a->m, c, "pads", pads, 2 * nsp);
	ir_set_ints(a->m, c, "dilations", dil, nsp);
	ir_set_i(a->m, c, "group", group);
	if (op == IR_OP_CONV_TRANSPOSE)
		ir_set_ints(a->m, c, "output_padding", outpad, nsp);
	return ad_fin(a, c);
}

/*
 * The filter gradient of a convolution whose taps read x at o*st - pb +
 * j*dil for output position o and kernel offset j:
 *
 *   dw[oc, ic, j] = sum_n sum_o d[n, oc, o] * x[n, g*cg + ic, o*st - pb + j*dil]
 *
 * for x [N, Cx, S...] (cg = Cx/group channels per group), d [N, Cd, O...],
 * giving [Cd, cg, k...]. That is itself a convolution, with strides and
 * dilations swapped, of x with its channels of a group as the batch and the
 * batch as the channels ([cg, group*N, S...]) by d as the filter
 * ([Cd, N, O...]), in the same groups.
 */
static struct ir_value *filter_grad(struct ad *a, struct ir_value *x, struct ir_value *d,
                                    int64_t group, const int64_t *st, const int64_t *pads,
                                    const int64_t *dil, const int64_t *k)
{
	const struct ir_type *xt = &x->type;
	int r = xt->rank, nsp = r - 2;
	int64_t N = xt->dims[0], cg = xt->dims[1] / group, dims[IR_MAX_RANK + 1];
	int64_t perm[IR_MAX_RANK + 1], keep[IR_MAX_RANK];
	struct ir_value *xs, *ds, *g;
	for (int i = 0; i < r + 1; i++)
		perm[i] = i;
	perm[0] = 1;
	perm[1] = 0;
	if (cg == 1 || group == 1) {
		/* [N, Cx, S] -> [Cx, N, S]: already [cg, group*N, S] in memory order */
		xs = ad_transpose(a, x, perm);
	} else {
		/* [N, group, cg, S] -> [cg, group, N, S] */
		if (r + 1 > IR_MAX_RANK)
			return NULL;
		dims[0] = N;
		dims[1] = group;
		dims[2] = cg;
		memcpy(dims + 3, xt->dims + 2, sizeof(int64_t) * (size_t)nsp);
		perm[0] = 2;
		perm[1] = 1;
		perm[2] = 0;
		xs = ad_transpose(a, ad_reshape(a, x, r + 1, dims), perm);
		perm[0] = 1;
		perm[1] = 0;
		perm[2] = 2;
	}
	dims[0] = cg;
	dims[1] = group * N;
	memcpy(dims + 2, xt->dims + 2, sizeof(int64_t) * (size_t)nsp);
	xs = ad_reshape(a, xs, r, dims);
	ds = ad_transpose(a, d, perm);
	g = conv_like(a, IR_OP_CONV, xs, ds, dil, pads, st, group, NULL);
	/* the padded end may leave room for more taps than the kernel has */
	keep[0] = g->type.dims[0];
	keep[1] = g->type.dims[1];
	memcpy(keep + 2, k, sizeof(int64_t) * (size_t)nsp);
	g = ad_crop(a, g, keep);
	return ad_transpose(a, g, perm);
}

/* filter_grad's one limit: a grouped convolution of the largest rank. */
static bool filter_contrib(struct ad *a, struct ir_node *n, struct ir_value *g)
{
	if (!g) {
		ir_node_error(a->m->ctx, n->name, ir_ops[n->op].name,
		              "no gradient for the weight of a grouped %s of rank %d",
		              ir_ops[n->op].name, n->in[0]->type.rank);
		return false;
	}
	ad_contrib(a, n, 1, g);
	return true;
}

static bool grad_bias(struct ad *a, struct ir_node *n, struct ir_value *d)
{
	int64_t axes[IR_MAX_RANK];
	if (n->nin > 2 && ad_wants(a, n, 2))
		ad_contrib(a, n, 2,
		           ad_reduce(a, IR_OP_REDUCE_SUM, d, axes,
		                     ad_non_channel_axes(d->type.rank, axes), false));
	return true;
}

bool grad_conv(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *w = n->in[1], *d = dy[0];
	int nsp = x->type.rank - 2;
	const int64_t *st = ir_attr_ints(n, "strides", NULL), *pads = ir_attr_ints(n, "pads", NULL),
	              *dil = ir_attr_ints(n, "dilations", NULL);
	int64_t group = ir_attr_i(n, "group");
	if (ad_wants(a, n, 0)) {
		/* conv_transpose is conv's adjoint; output_padding restores the
		 * input positions the last stride skipped */
		int64_t op[IR_MAX_RANK];
		for (int i = 0; i < nsp; i++)
			op[i] = x->type.dims[2 + i] + pads[i] + pads[nsp + i] -
			        (st[i] * (d->type.dims[2 + i] - 1) +
			         dil[i] * (w->type.dims[2 + i] - 1) + 1);
		ad_contrib(a, n, 0,
		           conv_like(a, IR_OP_CONV_TRANSPOSE, d, w, st, pads, dil, group, op));
	}
	if (ad_wants(a, n, 1) &&
	    !filter_contrib(a, n, filter_grad(a, x, d, group, st, pads, dil, w->type.dims + 2)))
		return false;
	return grad_bias(a, n, d);
}

bool grad_conv_transpose(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *w = n->in[1], *d = dy[0];
	const int64_t *st = ir_attr_ints(n, "strides", NULL), *pads = ir_attr_ints(n, "pads", NULL),
	              *dil = ir_attr_ints(n, "dilations", NULL);
	int64_t group = ir_attr_i(n, "group");
	if (ad_wants(a, n, 0)) {
		/* conv is conv_transpose's adjoint; a large output_padding leaves
		 * positions past the input */
		struct ir_value *g = conv_like(a, IR_OP_CONV, d, w, st, pads, dil, group, NULL);
		ad_contrib(a, n, 0, ad_crop(a, g, x->type.dims));
	}
	/* x feeds output i*st - pb + j*dil: the roles of conv swapped */
	if (ad_wants(a, n, 1) &&
	    !filter_contrib(a, n, filter_grad(a, d, x, group, st, pads, dil, w->type.dims + 2)))
		return false;
	return grad_bias(a, n, d);
}

bool grad_global_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0];
	int64_t axes[IR_MAX_RANK], size = 1;
	int naxes = 0;
	if (!ad_wants(a, n, 0))
		return true;
	for (int i = 2; i < x->type.rank; i++) {
		axes[naxes++] = i;
		size *= x->type.dims[i];
	}
	if (n->op == IR_OP_GLOBAL_AVG_POOL) {
		d = ad_op2(a, IR_OP_MUL, d, ad_sc(a, x, size ? 1.0 / (double)size : 0));
		ad_contrib(a, n, 0, ad_expand(a, d, &x->type));
	} else { /* global_max_pool: as reduce_max */
		struct ir_value *m =
		        ad_cast(a, ad_op2(a, IR_OP_EQUAL, x, n->out[0]), x->type.dtype);
		struct ir_value *c = ad_reduce(a, IR_OP_REDUCE_SUM, m, axes, naxes, true);
		ad_contrib(a, n, 0, ad_op2(a, IR_OP_MUL, m, ad_op2(a, IR_OP_DIV, d, c)));
	}
	return true;
}

/* Advances a multi-index over dims (row-major). */
static void next_index(int64_t *idx, const int64_t *dims, int rank)
{
	for (int i = rank - 1; i >= 0; i--) {
		if (++idx[i] < dims[i])
			return;
		idx[i] = 0;
	}
}

/* How many taps of the windows at o along one dimension count for avg_pool. */
static int64_t pool_count(int64_t o, int64_t in, int64_t k, int64_t st, int64_t dil, int64_t pb,
                          int64_t pe, bool pad_counts)
{
	int64_t c = 0;
	for (int64_t j = 0; j < k; j++) {
		int64_t i = o * st - pb + j * dil;
		c += pad_counts ? (i >= -pb && i < in + pe) : (i >= 0 && i < in);
	}
	return c;
}

/*
 * avg_pool: each window spreads dy/count over its taps, which is a
 * conv_transpose by a kernel of ones of each [N*C, 1, O...] channel. The
 * counts depend only on the geometry: a constant of the output's spatial
 * shape (a scalar when they are all equal).
 */
bool grad_avg_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0], *w, *g, *cnt;
	const struct ir_type *xt = &x->type, *yt = &d->type;
	int r = xt->rank, nsp = r - 2;
	const int64_t *k = ir_attr_ints(n, "kernel", NULL), *st = ir_attr_ints(n, "strides", NULL),
	              *pads = ir_attr_ints(n, "pads", NULL),
	              *dil = ir_attr_ints(n, "dilations", NULL);
	bool pad_counts = ir_attr_i(n, "count_include_pad") != 0, uniform = true;
	int64_t p2[2 * IR_MAX_RANK], op[IR_MAX_RANK], o[IR_MAX_RANK] = { 0 };
	struct ir_type ct = { .dtype = xt->dtype, .rank = r }, wt = ct, ft = *yt;
	int64_t nout;
	double *counts;
	if (!ad_wants(a, n, 0))
		return true;
	ct.dims[0] = ct.dims[1] = 1;
	memcpy(ct.dims + 2, yt->dims + 2, sizeof(int64_t) * (size_t)nsp);
	nout = ir_type_elems(&ct);
	counts = ir_arena_alloc(&a->m->arena, sizeof *counts * (size_t)(nout ? nout : 1));
	for (int64_t p = 0; p < nout; p++) {
		double c = 1;
		for (int i = 0; i < nsp; i++)
			c *= (double)pool_count(o[i], xt->dims[2 + i], k[i], st[i], dil[i], pads[i],
			                        pads[nsp + i], pad_counts);
		counts[p] = c;
		uniform = uniform && c == counts[0];
		next_index(o, ct.dims + 2, nsp);
	}
	for (int64_t p = 0; p < nout; p++) /* a window wholly in ceil-mode overhang: 0 */
		counts[p] = counts[p] ? 1 / counts[p] : 0;
	cnt = uniform ? ad_sc(a, x, nout ? counts[0] : 1) : ad_constant(a, &ct, counts);
	g = ad_op2(a, IR_OP_MUL, d, cnt);
	ft.dims[0] = yt->dims[0] * yt->dims[1];
	ft.dims[1] = 1;
	g = ad_reshape_to(a, g, &ft);
	wt.dims[0] = wt.dims[1] = 1;
	memcpy(wt.dims + 2, k, sizeof(int64_t) * (size_t)nsp);
	counts = ir_arena_alloc(&a->m->arena, sizeof *counts * (size_t)ir_type_elems(&wt));
	for (int64_t i = 0; i < ir_type_elems(&wt); i++)
		counts[i] = 1;
	w = ad_constant(a, &wt, counts);
	for (int i = 0; i < nsp; i++) {
		/* ceil mode may reach past the padded input: crop with more end padding */
		int64_t base = st[i] * (yt->dims[2 + i] - 1) + dil[i] * (k[i] - 1) + 1 - pads[i] -
		               pads[nsp + i];
		int64_t extra = base > xt->dims[2 + i] ? base - xt->dims[2 + i] : 0;
		p2[i] = pads[i];
		p2[nsp + i] = pads[nsp + i] + extra;
		op[i] = xt->dims[2 + i] - (base - extra);
	}
	g = conv_like(a, IR_OP_CONV_TRANSPOSE, g, w, st, p2, dil, 1, op);
	ad_contrib(a, n, 0, ad_reshape_to(a, g, xt));
	return true;
}

/* max_pool routes each gradient to its window's maximum: the indices
 * result is the flat offset of the maximum in the whole input. */
bool grad_max_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0];
	int64_t total = ir_type_elems(&dy[0]->type), nx = ir_type_elems(&x->type);
	struct ir_type ft = { .dtype = x->type.dtype, .rank = 1, .dims = { nx } };
	if (!ad_no_grad_through(a, n, dy, 1))
		return false;
	if (!ad_wants(a, n, 0) || !dy[0])
		return true;
	IR_ASSERT(n->nout == 2 && ir_attr_i(n, "storage_order") == 0);
	struct ir_value *g = ad_scatter_add(a, &ft, ad_reshape(a, n->out[1], 1, &total),
	                                    ad_reshape(a, dy[0], 1, &total), 0);
	ad_contrib(a, n, 0, ad_reshape_to(a, g, &x->type));
	return true;
}
