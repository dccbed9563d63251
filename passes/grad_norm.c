/*
 * grad_norm.c - gradient rules of the normalizations (ir/eval_norm.c).
 *
 * Each recomputes its statistics from the input (ad_train_mode has already
 * turned batch_norm into primitive ops where training needs that), then
 * applies the normalization's closed-form derivative.
 */
#include "grad.h"

#include <math.h>

/*
 * For xhat = (x - mean) * inv over the axes given (keepdims), and dxhat the
 * gradient of xhat:
 *
 *   dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
 */
static struct ir_value *norm_dx(struct ad *a, struct ir_value *dxhat, struct ir_value *xhat,
                                struct ir_value *inv, const int64_t *axes, int naxes)
{
	struct ir_value *m1 = ad_reduce(a, IR_OP_REDUCE_MEAN, dxhat, axes, naxes, true);
	struct ir_value *m2 = ad_reduce(a, IR_OP_REDUCE_MEAN, ad_op2(a, IR_OP_MUL, dxhat, xhat),
	                                axes, naxes, true);
	struct ir_value *t = ad_op2(a, IR_OP_SUB, ad_op2(a, IR_OP_SUB, dxhat, m1),
	                            ad_op2(a, IR_OP_MUL, xhat, m2));
	return ad_op2(a, IR_OP_MUL, t, inv);
}

/* Recomputes the statistics of x over axes: *xhat and *inv (keepdims). */
static void norm_stats(struct ad *a, struct ir_value *x, const int64_t *axes, int naxes, float eps,
                       struct ir_value **xhat, struct ir_value **inv)
{
	struct ir_value *mean = ad_reduce(a, IR_OP_REDUCE_MEAN, x, axes, naxes, true);
	struct ir_value *xc = ad_op2(a, IR_OP_SUB, x, mean);
	struct ir_value *var =
	        ad_reduce(a, IR_OP_REDUCE_MEAN, ad_op2(a, IR_OP_MUL, xc, xc), axes, naxes, true);
	*inv = ad_op1(a, IR_OP_RECIPROCAL,
	              ad_op1(a, IR_OP_SQRT, ad_op2(a, IR_OP_ADD, var, ad_sc(a, x, (double)eps))));
	*xhat = ad_op2(a, IR_OP_MUL, xc, *inv);
}

/*
 * layer_norm normalizes each row of the dimensions from axis on; scale and
 * bias broadcast to the row. The statistics are those of the optional
 * results when the node has them and they are exact (f32 input), else
 * recomputed in the input's type.
 */
bool grad_layer_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0], *xhat, *inv;
	int axis = (int)ir_attr_i(n, "axis"), r = x->type.rank, naxes = 0;
	int64_t axes[IR_MAX_RANK], lead[IR_MAX_RANK];
	struct ir_type row = x->type;
	if (!ad_no_grad_through(a, n, dy, 1))
		return false;
	if (!d)
		return true;
	for (int i = axis; i < r; i++)
		axes[naxes++] = i;
	if (n->nout == 3 && x->type.dtype == IR_F32) {
		inv = n->out[2];
		xhat = ad_op2(a, IR_OP_MUL, ad_op2(a, IR_OP_SUB, x, n->out[1]), inv);
	} else {
		norm_stats(a, x, axes, naxes, ir_attr_f(n, "epsilon"), &xhat, &inv);
	}
	for (int i = 0; i < axis; i++) {
		lead[i] = i;
		row.dims[i] = 1;
	}
	if (ad_wants(a, n, 0))
		ad_contrib(a, n, 0,
		           norm_dx(a, ad_op2(a, IR_OP_MUL, d, n->in[1]), xhat, inv, axes, naxes));
	if (ad_wants(a, n, 1)) {
		struct ir_value *g = ad_op2(a, IR_OP_MUL, d, xhat);
		if (axis)
			g = ad_reduce(a, IR_OP_REDUCE_SUM, g, lead, axis, true);
		ad_contrib(a, n, 1, ad_unbroadcast(a, ad_reshape_to(a, g, &row), &n->in[1]->type));
	}
	if (n->nin > 2 && ad_wants(a, n, 2)) {
		struct ir_value *g = d;
		if (axis)
			g = ad_reduce(a, IR_OP_REDUCE_SUM, g, lead, axis, true);
		ad_contrib(a, n, 2, ad_unbroadcast(a, ad_reshape_to(a, g, &row), &n->in[2]->type));
	}
	return true;
}

/* instance_norm: each channel of each sample over its spatial extent. */
/* The sum of v over the channel window [c - lo, c + hi] (zeros past the
 * ends), as an average pool over [N, 1, C, spatial] times its size. */
static struct ir_value *channel_window_sum(struct ad *a, struct ir_value *v, int64_t lo, int64_t hi)
{
	const struct ir_type *t = &v->type;
	int64_t sp = ir_dims_elems(t->dims + 2, t->rank - 2);
	struct ir_node *p =
	        ad_node(a, IR_OP_AVG_POOL,
	                (struct ir_value *[]){
	                        ad_reshape(a, v, 4, (int64_t[]){ t->dims[0], 1, t->dims[1], sp }) },
	                1, 1);
	ir_set_ints(a->m, p, "kernel", (int64_t[]){ lo + hi + 1, 1 }, 2);
	ir_set_ints(a->m, p, "strides", (int64_t[]){ 1, 1 }, 2);
	ir_set_ints(a->m, p, "pads", (int64_t[]){ lo, 0, hi, 0 }, 4);
	ir_set_ints(a->m, p, "dilations", (int64_t[]){ 1, 1 }, 2);
	ir_set_i(a->m, p, "ceil_mode", 0);
	ir_set_i(a->m, p, "count_include_pad", 1);
	return ad_reshape_to(
	        a, ad_op2(a, IR_OP_MUL, ad_fin(a, p), ad_sc(a, v, (double)(lo + hi + 1))), t);
}

/*
 * lrn: y = x * s^-beta with s = bias + alpha/size * sum of x^2 over the
 * window [c - lo, c + hi] (lo = (size-1)/2 rounded down, hi up). Then
 *   dx = dy * s^-beta - 2 alpha beta/size * x * W'(dy * x * s^-beta / s)
 * where W' sums over the mirrored window [c - hi, c + lo] (the outputs
 * whose window holds c). s is recomputed.
 */
bool grad_lrn(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *s, *p, *t;
	int64_t size = ir_attr_i(n, "size"), lo = (size - 1) / 2, hi = size - 1 - lo;
	double alpha = ir_attr_f(n, "alpha"), beta = ir_attr_f(n, "beta"),
	       bias = ir_attr_f(n, "bias");
	if (!ad_wants(a, n, 0))
		return true;
	s = channel_window_sum(a, ad_op2(a, IR_OP_MUL, x, x), lo, hi);
	s = ad_op2(a, IR_OP_ADD, ad_op2(a, IR_OP_MUL, s, ad_sc(a, x, alpha / (double)size)),
	           ad_sc(a, x, bias));
	p = ad_op2(a, IR_OP_POW, s, ad_sc(a, x, -beta));
	t = ad_op2(a, IR_OP_DIV, ad_op2(a, IR_OP_MUL, ad_op2(a, IR_OP_MUL, dy[0], x), p), s);
	t = ad_op2(a, IR_OP_MUL, channel_window_sum(a, t, hi, lo),
	           ad_sc(a, x, 2 * alpha * beta / (double)size));
	ad_contrib(
	        a, n, 0,
	        ad_op2(a, IR_OP_SUB, ad_op2(a, IR_OP_MUL, dy[0], p), ad_op2(a, IR_OP_MUL, x, t)));
	return true;
}

bool grad_instance_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0], *xhat, *inv;
	int r = x->type.rank, naxes = 0;
	int64_t axes[IR_MAX_RANK], nc[IR_MAX_RANK];
	for (int i = 2; i < r; i++)
		axes[naxes++] = i;
	norm_stats(a, x, axes, naxes, ir_attr_f(n, "epsilon"), &xhat, &inv);
	if (ad_wants(a, n, 0))
		ad_contrib(a, n, 0,
		           norm_dx(a, ad_op2(a, IR_OP_MUL, d, ad_channel_view(a, n->in[1], r)),
		                   xhat, inv, axes, naxes));
	if (ad_wants(a, n, 1))
		ad_contrib(a, n, 1,
		           ad_reduce(a, IR_OP_REDUCE_SUM, ad_op2(a, IR_OP_MUL, d, xhat), nc,
		                     ad_non_channel_axes(r, nc), false));
	if (ad_wants(a, n, 2))
		ad_contrib(
		        a, n, 2,
		        ad_reduce(a, IR_OP_REDUCE_SUM, d, nc, ad_non_channel_axes(r, nc), false));
	return true;
}

/*
 * Inference batch_norm, y = (x - mean) * inv * scale + bias with
 * inv = 1/sqrt(var + eps) per channel: every operand may take a gradient
 * (training mode is ad_train_mode's rewrite, not this rule).
 */
bool grad_batch_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0];
	int r = x->type.rank;
	int64_t axes[IR_MAX_RANK];
	int naxes = ad_non_channel_axes(r, axes);
	enum ir_dtype pt = n->in[1]->type.dtype, xt = x->type.dtype;
	struct ir_value *scale = n->in[1], *mean = n->in[3], *var = n->in[4];
	struct ir_value *inv =
	        ad_op1(a, IR_OP_RECIPROCAL,
	               ad_op1(a, IR_OP_SQRT,
	                      ad_op2(a, IR_OP_ADD, var,
	                             ad_scalar(a, var->type.dtype, ir_attr_f(n, "epsilon")))));
	struct ir_value *inv_v = ad_channel_view(a, ad_cast(a, inv, xt), r);
	struct ir_value *xc = ad_op2(a, IR_OP_SUB, x, ad_channel_view(a, ad_cast(a, mean, xt), r));
	struct ir_value *sd = NULL, *sdxc = NULL;
	if (ad_wants(a, n, 0))
		ad_contrib(a, n, 0,
		           ad_op2(a, IR_OP_MUL, d,
		                  ad_op2(a, IR_OP_MUL, inv_v,
		                         ad_channel_view(a, ad_cast(a, scale, xt), r))));
	if (ad_wants(a, n, 2) || ad_wants(a, n, 3))
		sd = ad_cast(a, ad_reduce(a, IR_OP_REDUCE_SUM, d, axes, naxes, false), pt);
	if (ad_wants(a, n, 1) || ad_wants(a, n, 4))
		sdxc = ad_cast(a,
		               ad_reduce(a, IR_OP_REDUCE_SUM, ad_op2(a, IR_OP_MUL, d, xc), axes,
		                         naxes, false),
		               pt);
	if (ad_wants(a, n, 1))
		ad_contrib(a, n, 1,
		           ad_cast(a, ad_op2(a, IR_OP_MUL, sdxc, ad_cast(a, inv, pt)),
		                   n->in[1]->type.dtype));
	if (ad_wants(a, n, 2))
		ad_contrib(a, n, 2, ad_cast(a, sd, n->in[2]->type.dtype));
	if (ad_wants(a, n, 3)) {
		struct ir_value *g =
		        ad_op1(a, IR_OP_NEG, ad_op2(a, IR_OP_MUL, sd, ad_cast(a, scale, pt)));
		ad_contrib(
		        a, n, 3,
		        ad_cast(a, ad_op2(a, IR_OP_MUL, g, ad_cast(a, inv, pt)), mean->type.dtype));
	}
	if (ad_wants(a, n, 4)) {
		/* d inv / d var = -inv^3 / 2 */
		struct ir_value *i = ad_cast(a, inv, pt);
		struct ir_value *i3 = ad_op2(a, IR_OP_MUL, ad_op2(a, IR_OP_MUL, i, i), i);
		struct ir_value *g =
		        ad_op2(a, IR_OP_MUL, ad_op2(a, IR_OP_MUL, sdxc, ad_cast(a, scale, pt)),
		               ad_op2(a, IR_OP_MUL, i3, ad_scalar(a, pt, -0.5)));
		ad_contrib(a, n, 4, ad_cast(a, g, var->type.dtype));
	}
	return true;
}
