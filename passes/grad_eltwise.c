/*
 * grad_eltwise.c - gradient rules of the elementwise ops (ir/fold.c).
 *
 * Unary ops multiply the incoming gradient by their derivative, written
 * against the reference's definition; binary ops sum a broadcast gradient
 * back to each operand's shape (ad_unbroadcast). Ops whose gradient is zero
 * wherever it exists (floor, sign, round) contribute nothing, and linear ops
 * of one operand (dropout, trilu) apply themselves again to the gradient.
 */
#include "grad.h"

#include <math.h>
#include <string.h>

/* Ops whose gradient is zero wherever it exists (floor, sign, ...). */
bool grad_zero(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	(void)a, (void)n, (void)dy;
	return true;
}

bool grad_copy(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (ad_wants(a, n, 0))
		ad_contrib(a, n, 0, dy[0]);
	return true;
}

bool grad_cast(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (ad_wants(a, n, 0))
		ad_contrib(a, n, 0, ad_cast(a, dy[0], n->in[0]->type.dtype));
	return true;
}

/* dy * f'(x) for the one-input elementwise ops, from x and y = f(x). */
bool grad_unary(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *y = n->out[0], *d = dy[0], *g;
	enum ir_op mul = IR_OP_MUL;
	if (!ad_wants(a, n, 0))
		return true;
	switch (n->op) {
	case IR_OP_NEG: g = ad_op1(a, IR_OP_NEG, d); break;
	case IR_OP_ABS: g = ad_op2(a, mul, d, ad_op1(a, IR_OP_SIGN, x)); break;
	case IR_OP_RELU:
		g = ad_where(a, ad_op2(a, IR_OP_GREATER, x, ad_sc(a, x, 0)), d, ad_sc(a, x, 0));
		break;
	case IR_OP_SQRT: g = ad_op2(a, IR_OP_DIV, ad_op2(a, mul, d, ad_sc(a, x, 0.5)), y); break;
	case IR_OP_RECIPROCAL:
		g = ad_op1(a, IR_OP_NEG, ad_op2(a, mul, d, ad_op2(a, mul, y, y)));
		break;
	case IR_OP_EXP: g = ad_op2(a, mul, d, y); break;
	case IR_OP_LOG: g = ad_op2(a, IR_OP_DIV, d, x); break;
	case IR_OP_ERF: {
		/* 2/sqrt(pi) * exp(-x^2) */
		struct ir_value *e =
		        ad_op1(a, IR_OP_EXP, ad_op1(a, IR_OP_NEG, ad_op2(a, mul, x, x)));
		g = ad_op2(a, mul, ad_op2(a, mul, d, ad_sc(a, x, 1.1283791670955126)), e);
		break;
	}
	case IR_OP_TANH:
		g = ad_op2(a, mul, d, ad_op2(a, IR_OP_SUB, ad_sc(a, x, 1), ad_op2(a, mul, y, y)));
		break;
	case IR_OP_SIGMOID:
		g = ad_op2(a, mul, ad_op2(a, mul, d, y), ad_op2(a, IR_OP_SUB, ad_sc(a, x, 1), y));
		break;
	case IR_OP_SIN: g = ad_op2(a, mul, d, ad_op1(a, IR_OP_COS, x)); break;
	case IR_OP_TAN:
		g = ad_op2(a, mul, d, ad_op2(a, IR_OP_ADD, ad_sc(a, x, 1), ad_op2(a, mul, y, y)));
		break;
	case IR_OP_ASIN:
	case IR_OP_ACOS: {
		/* +-1 / sqrt(1 - x^2) */
		struct ir_value *r = ad_op1(
		        a, IR_OP_SQRT, ad_op2(a, IR_OP_SUB, ad_sc(a, x, 1), ad_op2(a, mul, x, x)));
		g = ad_op2(a, IR_OP_DIV, n->op == IR_OP_ASIN ? d : ad_op1(a, IR_OP_NEG, d), r);
		break;
	}
	case IR_OP_ATAN:
	case IR_OP_ATANH: /* 1 / (1 + x^2), 1 / (1 - x^2) */
		g = ad_op2(a, IR_OP_DIV, d,
		           ad_op2(a, n->op == IR_OP_ATAN ? IR_OP_ADD : IR_OP_SUB, ad_sc(a, x, 1),
		                  ad_op2(a, mul, x, x)));
		break;
	case IR_OP_SINH: g = ad_op2(a, mul, d, ad_op1(a, IR_OP_COSH, x)); break;
	case IR_OP_COSH: g = ad_op2(a, mul, d, ad_op1(a, IR_OP_SINH, x)); break;
	case IR_OP_ASINH:
	case IR_OP_ACOSH: /* 1 / sqrt(x^2 + 1), 1 / sqrt(x^2 - 1) */
		g = ad_op2(a, IR_OP_DIV, d,
		           ad_op1(a, IR_OP_SQRT,
		                  ad_op2(a, n->op == IR_OP_ASINH ? IR_OP_ADD : IR_OP_SUB,
		                         ad_op2(a, mul, x, x), ad_sc(a, x, 1))));
		break;
	case IR_OP_MISH: {
		/* t = tanh(softplus(x)): t + x (1 - t^2) sigmoid(x) */
		struct ir_value *t = ad_op1(a, IR_OP_TANH, ad_op1(a, IR_OP_SOFTPLUS, x));
		struct ir_value *u = ad_op2(a, IR_OP_SUB, ad_sc(a, x, 1), ad_op2(a, mul, t, t));
		g = ad_op2(
		        a, mul, d,
		        ad_op2(a, IR_OP_ADD, t,
		               ad_op2(a, mul, ad_op2(a, mul, x, u), ad_op1(a, IR_OP_SIGMOID, x))));
		break;
	}
	case IR_OP_SHRINK: {
		/* 1 where |x| > lambd (x -+ bias), 0 in between */
		struct ir_value *l = ad_sc(a, x, ir_attr_f(n, "lambd"));
		g = ad_where(a,
		             ad_op2(a, IR_OP_OR, ad_op2(a, IR_OP_GREATER, x, l),
		                    ad_op2(a, IR_OP_LESS, x, ad_op1(a, IR_OP_NEG, l))),
		             d, ad_sc(a, x, 0));
		break;
	}
	case IR_OP_COS: g = ad_op1(a, IR_OP_NEG, ad_op2(a, mul, d, ad_op1(a, IR_OP_SIN, x))); break;
	case IR_OP_SOFTPLUS: g = ad_op2(a, mul, d, ad_op1(a, IR_OP_SIGMOID, x)); break;
	case IR_OP_SOFTSIGN: {
		struct ir_value *s = ad_op2(a, IR_OP_ADD, ad_sc(a, x, 1), ad_op1(a, IR_OP_ABS, x));
		g = ad_op2(a, IR_OP_DIV, d, ad_op2(a, mul, s, s));
		break;
	}
	case IR_OP_LEAKY_RELU: {
		struct ir_value *al = ad_sc(a, x, ir_attr_f(n, "alpha"));
		g = ad_where(a, ad_op2(a, IR_OP_GREATER_EQUAL, x, ad_sc(a, x, 0)), d,
		             ad_op2(a, mul, d, al));
		break;
	}
	case IR_OP_ELU: {
		/* alpha * (e^x - 1) has the derivative y + alpha */
		struct ir_value *al = ad_sc(a, x, ir_attr_f(n, "alpha"));
		g = ad_where(a, ad_op2(a, IR_OP_GREATER_EQUAL, x, ad_sc(a, x, 0)), d,
		             ad_op2(a, mul, d, ad_op2(a, IR_OP_ADD, y, al)));
		break;
	}
	case IR_OP_SELU: {
		double ga = ir_attr_f(n, "gamma"), al = ir_attr_f(n, "alpha");
		g = ad_where(a, ad_op2(a, IR_OP_GREATER, x, ad_sc(a, x, 0)),
		             ad_op2(a, mul, d, ad_sc(a, x, ga)),
		             ad_op2(a, mul, d, ad_op2(a, IR_OP_ADD, y, ad_sc(a, x, ga * al))));
		break;
	}
	case IR_OP_CELU: {
		/* alpha * (e^(x/alpha) - 1) has the derivative y/alpha + 1 */
		double al = ir_attr_f(n, "alpha");
		g = ad_where(a, ad_op2(a, IR_OP_GREATER, x, ad_sc(a, x, 0)), d,
		             ad_op2(a, mul, d,
		                    ad_op2(a, IR_OP_ADD, ad_op2(a, mul, y, ad_sc(a, x, 1 / al)),
		                           ad_sc(a, x, 1))));
		break;
	}
	case IR_OP_THRESHOLDED_RELU:
		g = ad_where(a, ad_op2(a, IR_OP_GREATER, x, ad_sc(a, x, ir_attr_f(n, "alpha"))), d,
		             ad_sc(a, x, 0));
		break;
	case IR_OP_HARD_SIGMOID: {
		/* alpha where the clamp is inactive: 0 < y < 1 */
		struct ir_value *in =
		        ad_op2(a, IR_OP_AND, ad_op2(a, IR_OP_GREATER, y, ad_sc(a, x, 0)),
		               ad_op2(a, IR_OP_LESS, y, ad_sc(a, x, 1)));
		g = ad_where(a, in, ad_op2(a, mul, d, ad_sc(a, x, ir_attr_f(n, "alpha"))),
		             ad_sc(a, x, 0));
		break;
	}
	case IR_OP_HARD_SWISH: {
		/* 0 below -3, 1 above 3, x/3 + 1/2 between (PyTorch's choice at the
		 * kinks) */
		struct ir_value *mid = ad_op2(a, IR_OP_ADD, ad_op2(a, mul, x, ad_sc(a, x, 1.0 / 3)),
		                              ad_sc(a, x, 0.5));
		struct ir_value *hi = ad_where(a, ad_op2(a, IR_OP_GREATER, x, ad_sc(a, x, 3)),
		                               ad_sc(a, x, 1), mid);
		struct ir_value *s =
		        ad_where(a, ad_op2(a, IR_OP_LESS, x, ad_sc(a, x, -3)), ad_sc(a, x, 0), hi);
		g = ad_op2(a, mul, d, s);
		break;
	}
	case IR_OP_CLIP: {
		/* passes where min <= x <= max, as PyTorch's clamp */
		struct ir_value *in =
		        ad_op2(a, IR_OP_AND,
		               ad_op2(a, IR_OP_GREATER_EQUAL, x, ad_sc(a, x, ir_attr_f(n, "min"))),
		               ad_op2(a, IR_OP_LESS_EQUAL, x, ad_sc(a, x, ir_attr_f(n, "max"))));
		g = ad_where(a, in, d, ad_sc(a, x, 0));
		break;
	}
	default: ir_panic(__FILE__, __LINE__, "no unary rule for %s", ir_ops[n->op].name);
	}
	ad_contrib(a, n, 0, g);
	return true;
}

/* Add, sub, mul, div, pow, min, max, prelu: numpy broadcasting summed back. */
bool grad_binary(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *y = n->in[1], *d = dy[0], *out = n->out[0];
	bool wx = ad_wants(a, n, 0), wy = ad_wants(a, n, 1);
	struct ir_value *gx = NULL, *gy = NULL;
	switch (n->op) {
	case IR_OP_ADD:
		gx = d;
		gy = d;
		break;
	case IR_OP_SUB:
		gx = d;
		if (wy)
			ad_contrib(a, n, 1, ad_op1(a, IR_OP_NEG, ad_unbroadcast(a, d, &y->type)));
		wy = false;
		break;
	case IR_OP_MUL:
		if (x == y) { /* a square: one contribution of 2 x dy */
			ad_contrib(
			        a, n, 0,
			        ad_op2(a, IR_OP_MUL, ad_op2(a, IR_OP_MUL, d, x), ad_sc(a, x, 2)));
			return true;
		}
		gx = wx ? ad_op2(a, IR_OP_MUL, d, y) : NULL;
		gy = wy ? ad_op2(a, IR_OP_MUL, d, x) : NULL;
		break;
	case IR_OP_DIV:
		/* d(x/y)/dy = -x/y^2 = -out/y */
		gx = wx ? ad_op2(a, IR_OP_DIV, d, y) : NULL;
		gy = wy ? ad_op1(a, IR_OP_NEG,
		                 ad_op2(a, IR_OP_DIV, ad_op2(a, IR_OP_MUL, d, out), y))
		        : NULL;
		break;
	case IR_OP_POW: {
		if (wx) {
			/* y * x^(y-1); an integer or constant exponent as constants */
			struct ir_value *e, *em1;
			if (y->kind == IR_VAL_CONST && y->data) {
				int64_t k = ir_type_elems(&y->type);
				double *v =
				        ir_arena_alloc(&a->m->arena, sizeof *v * (size_t)(k + 1));
				struct ir_type t = y->type;
				t.dtype = x->type.dtype;
				for (int64_t i = 0; i < k; i++)
					v[i] = ir_dtypes[y->type.dtype].is_float
					               ? ir_load_f64(y->type.dtype, y->data,
					                             (size_t)i)
					               : (double)ir_load_i64(y->type.dtype, y->data,
					                                     (size_t)i);
				e = ad_constant(a, &t, v);
				for (int64_t i = 0; i < k; i++)
					v[i] -= 1;
				em1 = ad_constant(a, &t, v);
			} else {
				e = ad_cast(a, y, x->type.dtype);
				em1 = ad_op2(a, IR_OP_SUB, e, ad_sc(a, x, 1));
			}
			gx = ad_op2(a, IR_OP_MUL, ad_op2(a, IR_OP_MUL, d, e),
			            ad_op2(a, IR_OP_POW, x, em1));
		}
		/* d(x^y)/dy = x^y ln x */
		gy = wy ? ad_op2(a, IR_OP_MUL, ad_op2(a, IR_OP_MUL, d, out),
		                 ad_op1(a, IR_OP_LOG, x))
		        : NULL;
		break;
	}
	case IR_OP_MIN:
	case IR_OP_MAX: {
		/* the gradient goes to x where x wins, ties included */
		struct ir_value *m = ad_cast(
		        a,
		        ad_op2(a, n->op == IR_OP_MAX ? IR_OP_GREATER_EQUAL : IR_OP_LESS_EQUAL, x,
		               y),
		        x->type.dtype);
		struct ir_value *dm = ad_op2(a, IR_OP_MUL, d, m);
		gx = dm;
		gy = wy ? ad_op2(a, IR_OP_SUB, d, dm) : NULL;
		break;
	}
	case IR_OP_PRELU: {
		/* out = x >= 0 ? x : x * slope */
		struct ir_value *pos = ad_op2(a, IR_OP_GREATER_EQUAL, x, ad_sc(a, x, 0));
		gx = wx ? ad_where(a, pos, d, ad_op2(a, IR_OP_MUL, d, y)) : NULL;
		gy = wy ? ad_where(a, pos, ad_sc(a, x, 0), ad_op2(a, IR_OP_MUL, d, x)) : NULL;
		break;
	}
	default: ir_panic(__FILE__, __LINE__, "no binary rule for %s", ir_ops[n->op].name);
	}
	if (wx)
		ad_contrib(a, n, 0, ad_unbroadcast(a, gx, &x->type));
	if (wy)
		ad_contrib(a, n, 1, ad_unbroadcast(a, gy, &y->type));
	return true;
}

/* n's op again, on d in place of its first input, with n's attributes
 * (typed by the caller, after any change): the gradient of the ops that are
 * their own transpose. */
struct ir_node *ad_again(struct ad *a, const struct ir_node *n, struct ir_value *d)
{
	struct ir_value *in[4] = { d };
	struct ir_node *g;
	IR_ASSERT(n->nin <= 4);
	for (int i = 1; i < n->nin; i++)
		in[i] = n->in[i];
	g = ad_node(a, n->op, in, n->nin, 1);
	memcpy(g->attrs, n->attrs, sizeof *g->attrs * (size_t)n->nattrs);
	return g;
}

/* y = x * mask(seed): dx = dy * the same mask, drawn again from the same
 * seed, salt and indices rather than kept (as FlashAttention does). trilu
 * keeps a triangle: the gradient keeps the same one. */
bool grad_again(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (ad_wants(a, n, 0))
		ad_contrib(a, n, 0, ad_fin(a, ad_again(a, n, dy[0])));
	return true;
}

bool grad_where(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *c = n->in[0], *z = ad_sc(a, dy[0], 0);
	if (ad_wants(a, n, 1))
		ad_contrib(a, n, 1, ad_unbroadcast(a, ad_where(a, c, dy[0], z), &n->in[1]->type));
	if (ad_wants(a, n, 2))
		ad_contrib(a, n, 2, ad_unbroadcast(a, ad_where(a, c, z, dy[0]), &n->in[2]->type));
	return true;
}

/*
 * y = phi(c, a, b), the merge of a run-time If: dy goes to the branch
 * taken, masked by c (as where's rule does) for an operand from outside the
 * branch (an outer value the branch passes through, which has other readers
 * that ran). An operand computed inside its branch, under a guard stronger
 * than the phi's, is read nowhere else but under that guard, where c chose
 * it: dy itself is its gradient, and the rules of the branch run only when
 * it was taken (docs/training.md, Control flow).
 */
bool grad_phi(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	for (int i = 1; i <= 2; i++) {
		struct ir_value *g = ad_guard_of(n->in[i]), *z, *d = dy[0];
		if (!ad_wants(a, n, i))
			continue;
		if (g == n->guard || !ir_guard_implies(g, n->guard)) {
			z = ad_sc(a, d, 0);
			d = i == 1 ? ad_where(a, n->in[0], d, z) : ad_where(a, n->in[0], z, d);
		}
		ad_contrib(a, n, i, d);
	}
	return true;
}
