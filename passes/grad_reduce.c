/*
 * grad_reduce.c - gradient rules of the reductions, the softmax family,
 * topk, cumsum and cumprod (ir/eval_reduce.c).
 *
 * A reduction's gradient is the incoming gradient broadcast back over the
 * reduced axes, times the reduction's derivative.
 */
#include "grad.h"

#include <math.h>
#include <string.h>

bool grad_softmax(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *y = n->out[0], *d = dy[0], *g;
	int64_t axis = ir_attr_i(n, "axis");
	if (!ad_wants(a, n, 0))
		return true;
	if (n->op == IR_OP_SOFTMAX) { /* y * (dy - sum(dy * y)) */
		struct ir_value *s =
		        ad_reduce(a, IR_OP_REDUCE_SUM, ad_op2(a, IR_OP_MUL, d, y), &axis, 1, true);
		g = ad_op2(a, IR_OP_MUL, y, ad_op2(a, IR_OP_SUB, d, s));
	} else { /* dy - exp(y) * sum(dy) */
		struct ir_value *s = ad_reduce(a, IR_OP_REDUCE_SUM, d, &axis, 1, true);
		g = ad_op2(a, IR_OP_SUB, d, ad_op2(a, IR_OP_MUL, ad_op1(a, IR_OP_EXP, y), s));
	}
	ad_contrib(a, n, 0, g);
	return true;
}

/* The gradient of a sum over axes (keepdims or not) of x: dy broadcast back. */
static struct ir_value *spread(struct ad *a, struct ir_value *d, const struct ir_type *xt,
                               const int64_t *axes, int naxes)
{
	struct ir_type kt = *xt;
	for (int i = 0; i < naxes; i++)
		kt.dims[axes[i]] = 1;
	return ad_expand(a, ad_reshape_to(a, d, &kt), xt);
}

bool grad_reduce(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *y = n->out[0], *d = dy[0], *g;
	int naxes;
	const int64_t *axes = ir_attr_ints(n, "axes", &naxes);
	int64_t count = 1;
	if (!ad_wants(a, n, 0))
		return true;
	for (int i = 0; i < naxes; i++)
		count *= x->type.dims[axes[i]];
	switch (n->op) {
	case IR_OP_REDUCE_SUM: g = spread(a, d, &x->type, axes, naxes); break;
	case IR_OP_REDUCE_MEAN:
		g = spread(a, ad_op2(a, IR_OP_MUL, d, ad_sc(a, x, count ? 1.0 / (double)count : 0)),
		           &x->type, axes, naxes);
		break;
	case IR_OP_REDUCE_SUM_SQUARE:
		g = ad_op2(a, IR_OP_MUL, spread(a, d, &x->type, axes, naxes),
		           ad_op2(a, IR_OP_MUL, x, ad_sc(a, x, 2)));
		break;
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN: {
		/* shared evenly among ties, as PyTorch's amax */
		struct ir_value *yk = spread(a, y, &x->type, axes, naxes);
		struct ir_value *m = ad_cast(a, ad_op2(a, IR_OP_EQUAL, x, yk), x->type.dtype);
		struct ir_value *c = ad_reduce(a, IR_OP_REDUCE_SUM, m, axes, naxes, true);
		struct ir_value *dk = ad_reshape_to(a, d, &c->type);
		g = ad_op2(a, IR_OP_MUL, m, ad_op2(a, IR_OP_DIV, dk, c));
		break;
	}
	case IR_OP_REDUCE_L1:
		g = ad_op2(a, IR_OP_MUL, spread(a, d, &x->type, axes, naxes),
		           ad_op1(a, IR_OP_SIGN, x));
		break;
	case IR_OP_REDUCE_L2: {
		/* x / y, and 0 where the norm is 0 (PyTorch's choice) */
		struct ir_value *yk = spread(a, y, &x->type, axes, naxes);
		struct ir_value *z = ad_op2(a, IR_OP_EQUAL, yk, ad_sc(a, x, 0));
		struct ir_value *q = ad_op2(a, IR_OP_DIV, x, ad_where(a, z, ad_sc(a, x, 1), yk));
		g = ad_op2(a, IR_OP_MUL, spread(a, d, &x->type, axes, naxes),
		           ad_where(a, z, ad_sc(a, x, 0), q));
		break;
	}
	case IR_OP_REDUCE_LOG_SUM: /* 1 / sum(x) = e^-y */
		g = spread(a,
		           ad_op2(a, IR_OP_MUL, d, ad_op1(a, IR_OP_EXP, ad_op1(a, IR_OP_NEG, y))),
		           &x->type, axes, naxes);
		break;
	case IR_OP_REDUCE_LOG_SUM_EXP: /* softmax: e^(x - y) */
		g = ad_op2(a, IR_OP_MUL, spread(a, d, &x->type, axes, naxes),
		           ad_op1(a, IR_OP_EXP,
		                  ad_op2(a, IR_OP_SUB, x, spread(a, y, &x->type, axes, naxes))));
		break;
	default: ir_panic(__FILE__, __LINE__, "no reduce rule for %s", ir_ops[n->op].name);
	}
	ad_contrib(a, n, 0, g);
	return true;
}

bool grad_cumsum(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_node *c;
	if (!ad_wants(a, n, 0))
		return true;
	c = ad_again(a, n, dy[0]);
	ir_set_i(a->m, c, "reverse", !ir_attr_i(n, "reverse"));
	ad_contrib(a, n, 0, ad_fin(a, c));
	return true;
}

/*
 * cumprod: y_j is the product of the x_k in j's prefix (suffix when
 * reverse), x_j itself included unless exclusive, so dx_i is the sum, over
 * the j whose prefix holds i, of dy_j times that prefix's product without
 * x_i. For every i at once: the same scan over x with x_i replaced by 1, on
 * a new axis of length n ahead of the scanned one, masked to those j and
 * summed over them. No division, so exact where x has zeros; it takes n
 * times the memory of x.
 */
bool grad_cumprod(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *m, *p;
	const struct ir_type *t = &x->type;
	int ax = (int)ir_attr_i(n, "axis"), r = t->rank;
	bool excl = ir_attr_i(n, "exclusive") != 0, rev = ir_attr_i(n, "reverse") != 0;
	int64_t len = t->dims[ax], j_axis = ax + 1;
	struct ir_type row = *t, grid = { .dtype = IR_BOOL, .rank = r + 1 };
	double *eye, *dep;
	struct ir_node *c;
	if (!ad_wants(a, n, 0))
		return true;
	if (r + 1 > IR_MAX_RANK) {
		ir_node_error(a->m->ctx, n->name, ir_ops[n->op].name,
		              "no gradient for cumprod on a rank-%d tensor", r);
		return false;
	}
	/* row: x with a 1 ahead of the axis; grid: [i, j] over the two axes */
	memmove(row.dims + ax + 1, row.dims + ax, sizeof(int64_t) * (size_t)(r - ax));
	row.dims[ax] = 1;
	row.rank = r + 1;
	for (int d = 0; d <= r; d++)
		grid.dims[d] = d == ax || d == ax + 1 ? len : 1;
	eye = ir_arena_alloc(&a->m->arena, sizeof *eye * (size_t)(len * len + 1));
	dep = ir_arena_alloc(&a->m->arena, sizeof *dep * (size_t)(len * len + 1));
	for (int64_t i = 0; i < len; i++)
		for (int64_t j = 0; j < len; j++) {
			eye[i * len + j] = i == j;
			dep[i * len + j] = rev ? (excl ? j < i : j <= i) : (excl ? j > i : j >= i);
		}
	m = ad_where(a, ad_constant(a, &grid, eye), ad_sc(a, x, 1), ad_reshape_to(a, x, &row));
	c = ad_node(a, IR_OP_CUMPROD, &m, 1, 1);
	ir_set_i(a->m, c, "axis", ax + 1);
	ir_set_i(a->m, c, "exclusive", excl);
	ir_set_i(a->m, c, "reverse", rev);
	p = ad_op2(a, IR_OP_MUL, ad_fin(a, c), ad_reshape_to(a, dy[0], &row));
	p = ad_where(a, ad_constant(a, &grid, dep), p, ad_sc(a, x, 0));
	ad_contrib(a, n, 0, ad_reduce(a, IR_OP_REDUCE_SUM, p, &j_axis, 1, false));
	return true;
}

/* topk: dy added back where each value came from (the indices of a lane are
 * distinct, so adding places them); the indices have no gradient. */
bool grad_topk(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (!ad_no_grad_through(a, n, dy, 1))
		return false;
	if (ad_wants(a, n, 0) && dy[0])
		ad_contrib(
		        a, n, 0,
		        ad_scatter_add(a, &n->in[0]->type, n->out[1], dy[0], ir_attr_i(n, "axis")));
	return true;
}
