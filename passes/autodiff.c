/*
 * autodiff.c - reverse-mode automatic differentiation, as IR.
 *
 * The backward graph is made of the same ops as the forward one, so every
 * later stage (fusion, memory planning, mixed precision, the targets)
 * compiles a training step like any model. The pass works in three steps:
 *
 *  1. Which values matter: a value *needs* a gradient when it depends on
 *     some wrt value through float results, and is *live* when the loss
 *     depends on it. A node is on the path when it has a live result that
 *     needs a gradient; only such nodes get backward nodes.
 *  2. Walking the node list backwards (a reverse topological order), the
 *     rule of each node on the path reads the gradients of its results and
 *     contributes gradients to its inputs that need them. Contributions to a
 *     value with several uses are summed with add.
 *  3. The gradients of the wrt values become distinct, named node results.
 *
 * Rules live in one table indexed by the op enum, one function per op (or
 * per family), each written against the op's reference semantics in
 * ir/fold.c and ir/eval_*.c. A gradient that broadcasting spread over more
 * dimensions is summed back (unbroadcast); convolutions differentiate into
 * convolutions (conv_transpose for the data, a conv of the input with the
 * batch moved into the channels for the filter); gathers and max pooling
 * scatter-add into a zero tensor; normalizations recompute their statistics.
 *
 * ad_train_mode rewrites inference batch_norm into batch statistics
 * (PyTorch's train() mode) before differentiation.
 */
#include "autodiff.h"

#include <math.h>
#include <string.h>

/* A scalar constant made by the pass. */
struct ad_scalar {
	enum ir_dtype dtype;
	double v;
	struct ir_value *c;
};

struct ad {
	struct ir_module *m;
	const char *prefix;     /* "grad", or "train" for ad_train_mode */
	const char *at;         /* the forward node whose rule runs: names new nodes */
	int nfwd;               /* values that existed before the pass */
	struct ir_value **grad; /* [nfwd] accumulated gradient, or NULL */
	bool *need;             /* [nfwd] depends on some wrt value */
	bool *live;             /* [nfwd] the loss depends on it */
	/* scalar constants made so far, shared by every rule */
	struct ad_scalar scalars[32];
	int nscalars;
};

typedef bool (*ad_rule)(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

/* ------------------------------------------------------------------------ */
/* Building nodes                                                           */
/* ------------------------------------------------------------------------ */

static bool is_float(const struct ir_value *v) { return ir_dtypes[v->type.dtype].is_float; }

/* A new node at the end of the list, its results named after the forward
 * node; attributes are set by the caller, then fin() types it. */
static struct ir_node *node(struct ad *a, enum ir_op op, struct ir_value *const *in, int nin,
                            int nout)
{
	const char **names = ir_arena_alloc(&a->m->arena, sizeof *names * (size_t)nout);
	const char *nm = ir_arena_printf(&a->m->arena, "%s/%s", a->prefix, a->at);
	for (int i = 0; i < nout; i++) {
		const char *base =
		        nout > 1 ? ir_arena_printf(&a->m->arena, "%s/%s%d", nm, ir_ops[op].name, i)
		                 : ir_arena_printf(&a->m->arena, "%s/%s", nm, ir_ops[op].name);
		names[i] = ir_unique_name(a->m, base);
	}
	return ir_add_node(a->m, op, nm, in, nin, names, nout);
}

/* Types n by inference; a failure is a bug in a rule. */
static struct ir_value *fin(struct ad *a, struct ir_node *n)
{
	char err[256];
	if (!ir_infer_node(a->m, n, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "autodiff of '%s': %s: %s", a->at, ir_ops[n->op].name,
		         err);
	return n->out[0];
}

static struct ir_value *op1(struct ad *a, enum ir_op op, struct ir_value *x)
{
	return fin(a, node(a, op, &x, 1, 1));
}

static struct ir_value *op2(struct ad *a, enum ir_op op, struct ir_value *x, struct ir_value *y)
{
	struct ir_value *in[2] = { x, y };
	return fin(a, node(a, op, in, 2, 1));
}

static struct ir_value *where(struct ad *a, struct ir_value *c, struct ir_value *x,
                              struct ir_value *y)
{
	struct ir_value *in[3] = { c, x, y };
	return fin(a, node(a, IR_OP_WHERE, in, 3, 1));
}

/* A constant of type t with values vals (converted to t's dtype). */
static struct ir_value *constant(struct ad *a, const struct ir_type *t, const double *vals)
{
	int64_t n = ir_type_elems(t);
	size_t es = (size_t)ir_dtype_size(t->dtype);
	void *data = ir_arena_alloc(&a->m->arena, (size_t)(n ? n : 1) * es);
	for (int64_t i = 0; i < n; i++)
		ir_store_f64(t->dtype, data, (size_t)i, vals[i]);
	return ir_add_const(a->m,
	                    ir_unique_name(a->m, ir_arena_printf(&a->m->arena, "%s/%s/const",
	                                                         a->prefix, a->at)),
	                    t, data);
}

/* A scalar constant, named by its value and shared while the cache lasts. */
static struct ir_value *scalar(struct ad *a, enum ir_dtype dt, double v)
{
	struct ir_type t = { .dtype = dt };
	struct ir_value *c;
	char num[40];
	void *data = ir_arena_alloc(&a->m->arena, 8);
	for (int i = 0; i < a->nscalars; i++)
		if (a->scalars[i].dtype == dt && a->scalars[i].v == v)
			return a->scalars[i].c;
	ir_store_f64(dt, data, 0, v);
	ir_format_double(v, num, sizeof num);
	c = ir_add_const(
	        a->m,
	        ir_unique_name(a->m, ir_arena_printf(&a->m->arena, "%s/const/%s", a->prefix, num)),
	        &t, data);
	if (a->nscalars < (int)(sizeof a->scalars / sizeof a->scalars[0]))
		a->scalars[a->nscalars++] = (struct ad_scalar){ dt, v, c };
	return c;
}

/* A scalar constant of x's dtype. */
static struct ir_value *sc(struct ad *a, const struct ir_value *x, double v)
{
	return scalar(a, x->type.dtype, v);
}

static struct ir_value *reshape(struct ad *a, struct ir_value *x, int rank, const int64_t *dims)
{
	struct ir_node *n;
	if (x->type.rank == rank && !memcmp(x->type.dims, dims, sizeof(int64_t) * (size_t)rank))
		return x;
	n = node(a, IR_OP_RESHAPE, &x, 1, 1);
	ir_set_ints(a->m, n, "shape", dims, rank);
	return fin(a, n);
}

static struct ir_value *reshape_to(struct ad *a, struct ir_value *x, const struct ir_type *t)
{
	return reshape(a, x, t->rank, t->dims);
}

static struct ir_value *transpose(struct ad *a, struct ir_value *x, const int64_t *perm)
{
	struct ir_node *n = node(a, IR_OP_TRANSPOSE, &x, 1, 1);
	ir_set_ints(a->m, n, "perm", perm, x->type.rank);
	return fin(a, n);
}

/* Swaps the last two dimensions. */
static struct ir_value *transpose_last(struct ad *a, struct ir_value *x)
{
	int64_t perm[IR_MAX_RANK];
	int r = x->type.rank;
	for (int i = 0; i < r; i++)
		perm[i] = i;
	perm[r - 2] = r - 1;
	perm[r - 1] = r - 2;
	return transpose(a, x, perm);
}

static struct ir_value *reduce(struct ad *a, enum ir_op op, struct ir_value *x, const int64_t *axes,
                               int naxes, bool keepdims)
{
	struct ir_node *n = node(a, op, &x, 1, 1);
	ir_set_ints(a->m, n, "axes", axes, naxes);
	ir_set_i(a->m, n, "keepdims", keepdims);
	return fin(a, n);
}

/* Broadcasts x to t's shape; always a new node, so a scalar constant
 * expanded is a node result. */
static struct ir_value *expand(struct ad *a, struct ir_value *x, const struct ir_type *t)
{
	struct ir_node *n = node(a, IR_OP_EXPAND, &x, 1, 1);
	ir_set_ints(a->m, n, "shape", t->dims, t->rank);
	return fin(a, n);
}

static struct ir_value *zeros(struct ad *a, const struct ir_type *t)
{
	return expand(a, scalar(a, t->dtype, 0), t);
}

static struct ir_value *cast(struct ad *a, struct ir_value *x, enum ir_dtype dt)
{
	struct ir_node *n;
	if (x->type.dtype == dt)
		return x;
	n = node(a, IR_OP_CAST, &x, 1, 1);
	ir_set_t(a->m, n, "to", dt);
	return fin(a, n);
}

static struct ir_value *slice(struct ad *a, struct ir_value *x, const int64_t *starts,
                              const int64_t *ends, const int64_t *steps)
{
	struct ir_node *n = node(a, IR_OP_SLICE, &x, 1, 1);
	ir_set_ints(a->m, n, "starts", starts, x->type.rank);
	ir_set_ints(a->m, n, "ends", ends, x->type.rank);
	ir_set_ints(a->m, n, "steps", steps, x->type.rank);
	return fin(a, n);
}

/* Keeps the first keep[i] elements of each dimension (a no-op if all). */
static struct ir_value *crop(struct ad *a, struct ir_value *x, const int64_t *keep)
{
	int64_t starts[IR_MAX_RANK] = { 0 }, steps[IR_MAX_RANK];
	bool same = true;
	for (int i = 0; i < x->type.rank; i++) {
		steps[i] = 1;
		same = same && keep[i] == x->type.dims[i];
	}
	return same ? x : slice(a, x, starts, keep, steps);
}

/* Constant-mode pad with zeros; negative pads crop. */
static struct ir_value *pad(struct ad *a, struct ir_value *x, const int64_t *pads)
{
	struct ir_node *n = node(a, IR_OP_PAD, &x, 1, 1);
	ir_set_ints(a->m, n, "pads", pads, 2 * x->type.rank);
	ir_set_s(a->m, n, "mode", "constant");
	ir_set_f(a->m, n, "value", 0);
	return fin(a, n);
}

/* Sums g (a broadcast of something of type t) back to t's shape. */
static struct ir_value *unbroadcast(struct ad *a, struct ir_value *g, const struct ir_type *t)
{
	int64_t axes[IR_MAX_RANK];
	int naxes = 0, off = g->type.rank - t->rank;
	IR_ASSERT(off >= 0);
	for (int i = 0; i < g->type.rank; i++)
		if (g->type.dims[i] != 1 && (i < off || t->dims[i - off] == 1))
			axes[naxes++] = i;
	if (naxes)
		g = reduce(a, IR_OP_REDUCE_SUM, g, axes, naxes, true);
	return reshape_to(a, g, t);
}

/* The axes 0 and 2..rank-1 of an [N,C,...] tensor. */
static int non_channel_axes(int rank, int64_t *axes)
{
	int k = 0;
	for (int i = 0; i < rank; i++)
		if (i != 1)
			axes[k++] = i;
	return k;
}

/* A [C] vector as [1,C,1,...] for a rank-r [N,C,...] tensor. */
static struct ir_value *channel_view(struct ad *a, struct ir_value *v, int r)
{
	int64_t dims[IR_MAX_RANK];
	for (int i = 0; i < r; i++)
		dims[i] = 1;
	dims[1] = v->type.dims[0];
	return reshape(a, v, r, dims);
}

/* ------------------------------------------------------------------------ */
/* Accumulation                                                             */
/* ------------------------------------------------------------------------ */

/* Whether input i of n wants a gradient. */
static bool wants(const struct ad *a, const struct ir_node *n, int i)
{
	struct ir_value *v = n->in[i];
	return v->id < a->nfwd && a->need[v->id] && a->live[v->id] && is_float(v);
}

/* Adds g to the gradient of input i of n. */
static void contrib(struct ad *a, struct ir_node *n, int i, struct ir_value *g)
{
	struct ir_value *v = n->in[i];
	struct ir_value **acc = &a->grad[v->id];
	IR_ASSERT(ir_type_eq(&g->type, &v->type));
	*acc = *acc ? op2(a, IR_OP_ADD, *acc, g) : g;
}

/* ------------------------------------------------------------------------ */
/* Rules: elementwise                                                       */
/* ------------------------------------------------------------------------ */

/* Ops whose gradient is zero wherever it exists (floor, sign, ...). */
static bool grad_zero(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	(void)a, (void)n, (void)dy;
	return true;
}

static bool grad_copy(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (wants(a, n, 0))
		contrib(a, n, 0, dy[0]);
	return true;
}

static bool grad_cast(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (wants(a, n, 0))
		contrib(a, n, 0, cast(a, dy[0], n->in[0]->type.dtype));
	return true;
}

/* dy * f'(x) for the one-input elementwise ops, from x and y = f(x). */
static bool grad_unary(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *y = n->out[0], *d = dy[0], *g;
	enum ir_op mul = IR_OP_MUL;
	if (!wants(a, n, 0))
		return true;
	switch (n->op) {
	case IR_OP_NEG: g = op1(a, IR_OP_NEG, d); break;
	case IR_OP_ABS: g = op2(a, mul, d, op1(a, IR_OP_SIGN, x)); break;
	case IR_OP_RELU: g = where(a, op2(a, IR_OP_GREATER, x, sc(a, x, 0)), d, sc(a, x, 0)); break;
	case IR_OP_SQRT: g = op2(a, IR_OP_DIV, op2(a, mul, d, sc(a, x, 0.5)), y); break;
	case IR_OP_RECIPROCAL: g = op1(a, IR_OP_NEG, op2(a, mul, d, op2(a, mul, y, y))); break;
	case IR_OP_EXP: g = op2(a, mul, d, y); break;
	case IR_OP_LOG: g = op2(a, IR_OP_DIV, d, x); break;
	case IR_OP_ERF: {
		/* 2/sqrt(pi) * exp(-x^2) */
		struct ir_value *e = op1(a, IR_OP_EXP, op1(a, IR_OP_NEG, op2(a, mul, x, x)));
		g = op2(a, mul, op2(a, mul, d, sc(a, x, 1.1283791670955126)), e);
		break;
	}
	case IR_OP_TANH:
		g = op2(a, mul, d, op2(a, IR_OP_SUB, sc(a, x, 1), op2(a, mul, y, y)));
		break;
	case IR_OP_SIGMOID:
		g = op2(a, mul, op2(a, mul, d, y), op2(a, IR_OP_SUB, sc(a, x, 1), y));
		break;
	case IR_OP_SIN: g = op2(a, mul, d, op1(a, IR_OP_COS, x)); break;
	case IR_OP_TAN:
		g = op2(a, mul, d, op2(a, IR_OP_ADD, sc(a, x, 1), op2(a, mul, y, y)));
		break;
	case IR_OP_ASIN:
	case IR_OP_ACOS: {
		/* +-1 / sqrt(1 - x^2) */
		struct ir_value *r =
		        op1(a, IR_OP_SQRT, op2(a, IR_OP_SUB, sc(a, x, 1), op2(a, mul, x, x)));
		g = op2(a, IR_OP_DIV, n->op == IR_OP_ASIN ? d : op1(a, IR_OP_NEG, d), r);
		break;
	}
	case IR_OP_ATAN:
	case IR_OP_ATANH: /* 1 / (1 + x^2), 1 / (1 - x^2) */
		g = op2(a, IR_OP_DIV, d,
		        op2(a, n->op == IR_OP_ATAN ? IR_OP_ADD : IR_OP_SUB, sc(a, x, 1),
		            op2(a, mul, x, x)));
		break;
	case IR_OP_SINH: g = op2(a, mul, d, op1(a, IR_OP_COSH, x)); break;
	case IR_OP_COSH: g = op2(a, mul, d, op1(a, IR_OP_SINH, x)); break;
	case IR_OP_ASINH:
	case IR_OP_ACOSH: /* 1 / sqrt(x^2 + 1), 1 / sqrt(x^2 - 1) */
		g = op2(a, IR_OP_DIV, d,
		        op1(a, IR_OP_SQRT,
		            op2(a, n->op == IR_OP_ASINH ? IR_OP_ADD : IR_OP_SUB, op2(a, mul, x, x),
		                sc(a, x, 1))));
		break;
	case IR_OP_MISH: {
		/* t = tanh(softplus(x)): t + x (1 - t^2) sigmoid(x) */
		struct ir_value *t = op1(a, IR_OP_TANH, op1(a, IR_OP_SOFTPLUS, x));
		struct ir_value *u = op2(a, IR_OP_SUB, sc(a, x, 1), op2(a, mul, t, t));
		g = op2(a, mul, d,
		        op2(a, IR_OP_ADD, t,
		            op2(a, mul, op2(a, mul, x, u), op1(a, IR_OP_SIGMOID, x))));
		break;
	}
	case IR_OP_SHRINK: {
		/* 1 where |x| > lambd (x -+ bias), 0 in between */
		struct ir_value *l = sc(a, x, ir_attr_f(n, "lambd"));
		g = where(a,
		          op2(a, IR_OP_OR, op2(a, IR_OP_GREATER, x, l),
		              op2(a, IR_OP_LESS, x, op1(a, IR_OP_NEG, l))),
		          d, sc(a, x, 0));
		break;
	}
	case IR_OP_COS: g = op1(a, IR_OP_NEG, op2(a, mul, d, op1(a, IR_OP_SIN, x))); break;
	case IR_OP_SOFTPLUS: g = op2(a, mul, d, op1(a, IR_OP_SIGMOID, x)); break;
	case IR_OP_SOFTSIGN: {
		struct ir_value *s = op2(a, IR_OP_ADD, sc(a, x, 1), op1(a, IR_OP_ABS, x));
		g = op2(a, IR_OP_DIV, d, op2(a, mul, s, s));
		break;
	}
	case IR_OP_LEAKY_RELU: {
		struct ir_value *al = sc(a, x, ir_attr_f(n, "alpha"));
		g = where(a, op2(a, IR_OP_GREATER_EQUAL, x, sc(a, x, 0)), d, op2(a, mul, d, al));
		break;
	}
	case IR_OP_ELU: {
		/* alpha * (e^x - 1) has the derivative y + alpha */
		struct ir_value *al = sc(a, x, ir_attr_f(n, "alpha"));
		g = where(a, op2(a, IR_OP_GREATER_EQUAL, x, sc(a, x, 0)), d,
		          op2(a, mul, d, op2(a, IR_OP_ADD, y, al)));
		break;
	}
	case IR_OP_SELU: {
		double ga = ir_attr_f(n, "gamma"), al = ir_attr_f(n, "alpha");
		g = where(a, op2(a, IR_OP_GREATER, x, sc(a, x, 0)), op2(a, mul, d, sc(a, x, ga)),
		          op2(a, mul, d, op2(a, IR_OP_ADD, y, sc(a, x, ga * al))));
		break;
	}
	case IR_OP_CELU: {
		/* alpha * (e^(x/alpha) - 1) has the derivative y/alpha + 1 */
		double al = ir_attr_f(n, "alpha");
		g = where(a, op2(a, IR_OP_GREATER, x, sc(a, x, 0)), d,
		          op2(a, mul, d,
		              op2(a, IR_OP_ADD, op2(a, mul, y, sc(a, x, 1 / al)), sc(a, x, 1))));
		break;
	}
	case IR_OP_THRESHOLDED_RELU:
		g = where(a, op2(a, IR_OP_GREATER, x, sc(a, x, ir_attr_f(n, "alpha"))), d,
		          sc(a, x, 0));
		break;
	case IR_OP_HARD_SIGMOID: {
		/* alpha where the clamp is inactive: 0 < y < 1 */
		struct ir_value *in = op2(a, IR_OP_AND, op2(a, IR_OP_GREATER, y, sc(a, x, 0)),
		                          op2(a, IR_OP_LESS, y, sc(a, x, 1)));
		g = where(a, in, op2(a, mul, d, sc(a, x, ir_attr_f(n, "alpha"))), sc(a, x, 0));
		break;
	}
	case IR_OP_HARD_SWISH: {
		/* 0 below -3, 1 above 3, x/3 + 1/2 between (PyTorch's choice at the
		 * kinks) */
		struct ir_value *mid =
		        op2(a, IR_OP_ADD, op2(a, mul, x, sc(a, x, 1.0 / 3)), sc(a, x, 0.5));
		struct ir_value *hi =
		        where(a, op2(a, IR_OP_GREATER, x, sc(a, x, 3)), sc(a, x, 1), mid);
		struct ir_value *s = where(a, op2(a, IR_OP_LESS, x, sc(a, x, -3)), sc(a, x, 0), hi);
		g = op2(a, mul, d, s);
		break;
	}
	case IR_OP_CLIP: {
		/* passes where min <= x <= max, as PyTorch's clamp */
		struct ir_value *in = op2(
		        a, IR_OP_AND, op2(a, IR_OP_GREATER_EQUAL, x, sc(a, x, ir_attr_f(n, "min"))),
		        op2(a, IR_OP_LESS_EQUAL, x, sc(a, x, ir_attr_f(n, "max"))));
		g = where(a, in, d, sc(a, x, 0));
		break;
	}
	default: ir_panic(__FILE__, __LINE__, "no unary rule for %s", ir_ops[n->op].name);
	}
	contrib(a, n, 0, g);
	return true;
}

/* Add, sub, mul, div, pow, min, max, prelu: numpy broadcasting summed back. */
static bool grad_binary(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *y = n->in[1], *d = dy[0], *out = n->out[0];
	bool wx = wants(a, n, 0), wy = wants(a, n, 1);
	struct ir_value *gx = NULL, *gy = NULL;
	switch (n->op) {
	case IR_OP_ADD:
		gx = d;
		gy = d;
		break;
	case IR_OP_SUB:
		gx = d;
		if (wy)
			contrib(a, n, 1, op1(a, IR_OP_NEG, unbroadcast(a, d, &y->type)));
		wy = false;
		break;
	case IR_OP_MUL:
		if (x == y) { /* a square: one contribution of 2 x dy */
			contrib(a, n, 0, op2(a, IR_OP_MUL, op2(a, IR_OP_MUL, d, x), sc(a, x, 2)));
			return true;
		}
		gx = wx ? op2(a, IR_OP_MUL, d, y) : NULL;
		gy = wy ? op2(a, IR_OP_MUL, d, x) : NULL;
		break;
	case IR_OP_DIV:
		/* d(x/y)/dy = -x/y^2 = -out/y */
		gx = wx ? op2(a, IR_OP_DIV, d, y) : NULL;
		gy = wy ? op1(a, IR_OP_NEG, op2(a, IR_OP_DIV, op2(a, IR_OP_MUL, d, out), y)) : NULL;
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
				e = constant(a, &t, v);
				for (int64_t i = 0; i < k; i++)
					v[i] -= 1;
				em1 = constant(a, &t, v);
			} else {
				e = cast(a, y, x->type.dtype);
				em1 = op2(a, IR_OP_SUB, e, sc(a, x, 1));
			}
			gx = op2(a, IR_OP_MUL, op2(a, IR_OP_MUL, d, e), op2(a, IR_OP_POW, x, em1));
		}
		/* d(x^y)/dy = x^y ln x */
		gy = wy ? op2(a, IR_OP_MUL, op2(a, IR_OP_MUL, d, out), op1(a, IR_OP_LOG, x)) : NULL;
		break;
	}
	case IR_OP_MIN:
	case IR_OP_MAX: {
		/* the gradient goes to x where x wins, ties included */
		struct ir_value *m = cast(
		        a,
		        op2(a, n->op == IR_OP_MAX ? IR_OP_GREATER_EQUAL : IR_OP_LESS_EQUAL, x, y),
		        x->type.dtype);
		struct ir_value *dm = op2(a, IR_OP_MUL, d, m);
		gx = dm;
		gy = wy ? op2(a, IR_OP_SUB, d, dm) : NULL;
		break;
	}
	case IR_OP_PRELU: {
		/* out = x >= 0 ? x : x * slope */
		struct ir_value *pos = op2(a, IR_OP_GREATER_EQUAL, x, sc(a, x, 0));
		gx = wx ? where(a, pos, d, op2(a, IR_OP_MUL, d, y)) : NULL;
		gy = wy ? where(a, pos, sc(a, x, 0), op2(a, IR_OP_MUL, d, x)) : NULL;
		break;
	}
	default: ir_panic(__FILE__, __LINE__, "no binary rule for %s", ir_ops[n->op].name);
	}
	if (wx)
		contrib(a, n, 0, unbroadcast(a, gx, &x->type));
	if (wy)
		contrib(a, n, 1, unbroadcast(a, gy, &y->type));
	return true;
}

/* n's op again, on d in place of its first input, with n's attributes
 * (typed by the caller, after any change): the gradient of the ops that are
 * their own transpose. */
static struct ir_node *again(struct ad *a, const struct ir_node *n, struct ir_value *d)
{
	struct ir_value *in[4] = { d };
	struct ir_node *g;
	IR_ASSERT(n->nin <= 4);
	for (int i = 1; i < n->nin; i++)
		in[i] = n->in[i];
	g = node(a, n->op, in, n->nin, 1);
	memcpy(g->attrs, n->attrs, sizeof *g->attrs * (size_t)n->nattrs);
	return g;
}

/* y = x * mask(seed): dx = dy * the same mask, drawn again from the same
 * seed, salt and indices rather than kept (as FlashAttention does). trilu
 * keeps a triangle: the gradient keeps the same one. */
static bool grad_again(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (wants(a, n, 0))
		contrib(a, n, 0, fin(a, again(a, n, dy[0])));
	return true;
}

static bool grad_where(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *c = n->in[0], *z = sc(a, dy[0], 0);
	if (wants(a, n, 1))
		contrib(a, n, 1, unbroadcast(a, where(a, c, dy[0], z), &n->in[1]->type));
	if (wants(a, n, 2))
		contrib(a, n, 2, unbroadcast(a, where(a, c, z, dy[0]), &n->in[2]->type));
	return true;
}

/* ------------------------------------------------------------------------ */
/* Rules: linear algebra and convolution                                    */
/* ------------------------------------------------------------------------ */

/*
 * x @ w with numpy batch broadcasting; a 1-D operand is a row (x) or a
 * column (w) vector whose unit dimension the result drops. dx = dy @ w^T and
 * dw = x^T @ dy, each summed over the batch dimensions it was broadcast
 * along.
 */
static bool grad_matmul(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *w = n->in[1], *d = dy[0];
	struct ir_type xt = x->type, wt = w->type, dt = d->type;
	bool x1 = xt.rank == 1, w1 = wt.rank == 1;
	if (x1) { /* [K] as [1,K]: put back the M axis the result dropped */
		int pos = w1 ? dt.rank : dt.rank - 1;
		memmove(dt.dims + pos + 1, dt.dims + pos,
		        sizeof(int64_t) * (size_t)(dt.rank - pos));
		dt.dims[pos] = 1;
		dt.rank++;
		xt = (struct ir_type){ .dtype = xt.dtype, .rank = 2, .dims = { 1, xt.dims[0] } };
	}
	if (w1) { /* [K] as [K,1]: the N axis */
		dt.dims[dt.rank++] = 1;
		wt = (struct ir_type){ .dtype = wt.dtype, .rank = 2, .dims = { wt.dims[0], 1 } };
	}
	d = reshape_to(a, d, &dt);
	if (wants(a, n, 0)) {
		struct ir_value *g =
		        op2(a, IR_OP_MATMUL, d, transpose_last(a, reshape_to(a, w, &wt)));
		contrib(a, n, 0, reshape_to(a, unbroadcast(a, g, &xt), &x->type));
	}
	if (wants(a, n, 1)) {
		struct ir_value *g =
		        op2(a, IR_OP_MATMUL, transpose_last(a, reshape_to(a, x, &xt)), d);
		contrib(a, n, 1, reshape_to(a, unbroadcast(a, g, &wt), &w->type));
	}
	return true;
}

static struct ir_value *gemm(struct ad *a, struct ir_value *x, struct ir_value *y, bool ta, bool tb,
                             float alpha)
{
	struct ir_value *in[2] = { x, y };
	struct ir_node *n = node(a, IR_OP_GEMM, in, 2, 1);
	ir_set_f(a->m, n, "alpha", alpha);
	ir_set_f(a->m, n, "beta", 0);
	ir_set_i(a->m, n, "trans_a", ta);
	ir_set_i(a->m, n, "trans_b", tb);
	return fin(a, n);
}

/* y = alpha * op(A) op(B) + beta * C. */
static bool grad_gemm(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *A = n->in[0], *B = n->in[1], *d = dy[0];
	bool ta = ir_attr_i(n, "trans_a") != 0, tb = ir_attr_i(n, "trans_b") != 0;
	float alpha = ir_attr_f(n, "alpha"), beta = ir_attr_f(n, "beta");
	if (wants(a, n, 0)) /* dA = alpha dY op(B)^T, or its transpose */
		contrib(a, n, 0,
		        ta ? gemm(a, B, d, tb, true, alpha) : gemm(a, d, B, false, !tb, alpha));
	if (wants(a, n, 1)) /* dB = alpha op(A)^T dY, or its transpose */
		contrib(a, n, 1,
		        tb ? gemm(a, d, A, true, ta, alpha) : gemm(a, A, d, !ta, false, alpha));
	if (n->nin > 2 && wants(a, n, 2)) {
		struct ir_value *g = unbroadcast(a, d, &n->in[2]->type);
		if (beta != 1)
			g = op2(a, IR_OP_MUL, g, sc(a, g, beta));
		contrib(a, n, 2, g);
	}
	return true;
}

static struct ir_value *conv_like(struct ad *a, enum ir_op op, struct ir_value *x,
                                  struct ir_value *w, const int64_t *st, const int64_t *pads,
                                  const int64_t *dil, int64_t group, const int64_t *outpad)
{
	int nsp = x->type.rank - 2;
	struct ir_value *in[2] = { x, w };
	struct ir_node *c = node(a, op, in, 2, 1);
	ir_set_ints(a->m, c, "strides", st, nsp);
	ir_set_ints(a->m, c, "pads", pads, 2 * nsp);
	ir_set_ints(a->m, c, "dilations", dil, nsp);
	ir_set_i(a->m, c, "group", group);
	if (op == IR_OP_CONV_TRANSPOSE)
		ir_set_ints(a->m, c, "output_padding", outpad, nsp);
	return fin(a, c);
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
		xs = transpose(a, x, perm);
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
		xs = transpose(a, reshape(a, x, r + 1, dims), perm);
		perm[0] = 1;
		perm[1] = 0;
		perm[2] = 2;
	}
	dims[0] = cg;
	dims[1] = group * N;
	memcpy(dims + 2, xt->dims + 2, sizeof(int64_t) * (size_t)nsp);
	xs = reshape(a, xs, r, dims);
	ds = transpose(a, d, perm);
	g = conv_like(a, IR_OP_CONV, xs, ds, dil, pads, st, group, NULL);
	/* the padded end may leave room for more taps than the kernel has */
	keep[0] = g->type.dims[0];
	keep[1] = g->type.dims[1];
	memcpy(keep + 2, k, sizeof(int64_t) * (size_t)nsp);
	g = crop(a, g, keep);
	return transpose(a, g, perm);
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
	contrib(a, n, 1, g);
	return true;
}

static bool grad_bias(struct ad *a, struct ir_node *n, struct ir_value *d)
{
	int64_t axes[IR_MAX_RANK];
	if (n->nin > 2 && wants(a, n, 2))
		contrib(a, n, 2,
		        reduce(a, IR_OP_REDUCE_SUM, d, axes, non_channel_axes(d->type.rank, axes),
		               false));
	return true;
}

static bool grad_conv(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *w = n->in[1], *d = dy[0];
	int nsp = x->type.rank - 2;
	const int64_t *st = ir_attr_ints(n, "strides", NULL), *pads = ir_attr_ints(n, "pads", NULL),
	              *dil = ir_attr_ints(n, "dilations", NULL);
	int64_t group = ir_attr_i(n, "group");
	if (wants(a, n, 0)) {
		/* conv_transpose is conv's adjoint; output_padding restores the
		 * input positions the last stride skipped */
		int64_t op[IR_MAX_RANK];
		for (int i = 0; i < nsp; i++)
			op[i] = x->type.dims[2 + i] + pads[i] + pads[nsp + i] -
			        (st[i] * (d->type.dims[2 + i] - 1) +
			         dil[i] * (w->type.dims[2 + i] - 1) + 1);
		contrib(a, n, 0,
		        conv_like(a, IR_OP_CONV_TRANSPOSE, d, w, st, pads, dil, group, op));
	}
	if (wants(a, n, 1) &&
	    !filter_contrib(a, n, filter_grad(a, x, d, group, st, pads, dil, w->type.dims + 2)))
		return false;
	return grad_bias(a, n, d);
}

static bool grad_conv_transpose(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *w = n->in[1], *d = dy[0];
	const int64_t *st = ir_attr_ints(n, "strides", NULL), *pads = ir_attr_ints(n, "pads", NULL),
	              *dil = ir_attr_ints(n, "dilations", NULL);
	int64_t group = ir_attr_i(n, "group");
	if (wants(a, n, 0)) {
		/* conv is conv_transpose's adjoint; a large output_padding leaves
		 * positions past the input */
		struct ir_value *g = conv_like(a, IR_OP_CONV, d, w, st, pads, dil, group, NULL);
		contrib(a, n, 0, crop(a, g, x->type.dims));
	}
	/* x feeds output i*st - pb + j*dil: the roles of conv swapped */
	if (wants(a, n, 1) &&
	    !filter_contrib(a, n, filter_grad(a, d, x, group, st, pads, dil, w->type.dims + 2)))
		return false;
	return grad_bias(a, n, d);
}

/* ------------------------------------------------------------------------ */
/* Rules: normalization and softmax                                         */
/* ------------------------------------------------------------------------ */

/*
 * For xhat = (x - mean) * inv over the axes given (keepdims), and dxhat the
 * gradient of xhat:
 *
 *   dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
 */
static struct ir_value *norm_dx(struct ad *a, struct ir_value *dxhat, struct ir_value *xhat,
                                struct ir_value *inv, const int64_t *axes, int naxes)
{
	struct ir_value *m1 = reduce(a, IR_OP_REDUCE_MEAN, dxhat, axes, naxes, true);
	struct ir_value *m2 =
	        reduce(a, IR_OP_REDUCE_MEAN, op2(a, IR_OP_MUL, dxhat, xhat), axes, naxes, true);
	struct ir_value *t =
	        op2(a, IR_OP_SUB, op2(a, IR_OP_SUB, dxhat, m1), op2(a, IR_OP_MUL, xhat, m2));
	return op2(a, IR_OP_MUL, t, inv);
}

/* Recomputes the statistics of x over axes: *xhat and *inv (keepdims). */
static void norm_stats(struct ad *a, struct ir_value *x, const int64_t *axes, int naxes, float eps,
                       struct ir_value **xhat, struct ir_value **inv)
{
	struct ir_value *mean = reduce(a, IR_OP_REDUCE_MEAN, x, axes, naxes, true);
	struct ir_value *xc = op2(a, IR_OP_SUB, x, mean);
	struct ir_value *var =
	        reduce(a, IR_OP_REDUCE_MEAN, op2(a, IR_OP_MUL, xc, xc), axes, naxes, true);
	*inv = op1(a, IR_OP_RECIPROCAL,
	           op1(a, IR_OP_SQRT, op2(a, IR_OP_ADD, var, sc(a, x, (double)eps))));
	*xhat = op2(a, IR_OP_MUL, xc, *inv);
}

static bool no_grad_through(struct ad *a, struct ir_node *n, struct ir_value *const *dy, int from)
{
	for (int i = from; i < n->nout; i++)
		if (dy[i]) {
			ir_node_error(a->m->ctx, n->name, ir_ops[n->op].name,
			              "no gradient for %s result %d ('%s')", ir_ops[n->op].name, i,
			              n->out[i]->name);
			return false;
		}
	return true;
}

/*
 * layer_norm normalizes each row of the dimensions from axis on; scale and
 * bias broadcast to the row. The statistics are those of the optional
 * results when the node has them and they are exact (f32 input), else
 * recomputed in the input's type.
 */
static bool grad_layer_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0], *xhat, *inv;
	int axis = (int)ir_attr_i(n, "axis"), r = x->type.rank, naxes = 0;
	int64_t axes[IR_MAX_RANK], lead[IR_MAX_RANK];
	struct ir_type row = x->type;
	if (!no_grad_through(a, n, dy, 1))
		return false;
	if (!d)
		return true;
	for (int i = axis; i < r; i++)
		axes[naxes++] = i;
	if (n->nout == 3 && x->type.dtype == IR_F32) {
		inv = n->out[2];
		xhat = op2(a, IR_OP_MUL, op2(a, IR_OP_SUB, x, n->out[1]), inv);
	} else {
		norm_stats(a, x, axes, naxes, ir_attr_f(n, "epsilon"), &xhat, &inv);
	}
	for (int i = 0; i < axis; i++) {
		lead[i] = i;
		row.dims[i] = 1;
	}
	if (wants(a, n, 0))
		contrib(a, n, 0,
		        norm_dx(a, op2(a, IR_OP_MUL, d, n->in[1]), xhat, inv, axes, naxes));
	if (wants(a, n, 1)) {
		struct ir_value *g = op2(a, IR_OP_MUL, d, xhat);
		if (axis)
			g = reduce(a, IR_OP_REDUCE_SUM, g, lead, axis, true);
		contrib(a, n, 1, unbroadcast(a, reshape_to(a, g, &row), &n->in[1]->type));
	}
	if (n->nin > 2 && wants(a, n, 2)) {
		struct ir_value *g = d;
		if (axis)
			g = reduce(a, IR_OP_REDUCE_SUM, g, lead, axis, true);
		contrib(a, n, 2, unbroadcast(a, reshape_to(a, g, &row), &n->in[2]->type));
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
	struct ir_node *p = node(a, IR_OP_AVG_POOL,
	                         (struct ir_value *[]){ reshape(
	                                 a, v, 4, (int64_t[]){ t->dims[0], 1, t->dims[1], sp }) },
	                         1, 1);
	ir_set_ints(a->m, p, "kernel", (int64_t[]){ lo + hi + 1, 1 }, 2);
	ir_set_ints(a->m, p, "strides", (int64_t[]){ 1, 1 }, 2);
	ir_set_ints(a->m, p, "pads", (int64_t[]){ lo, 0, hi, 0 }, 4);
	ir_set_i(a->m, p, "ceil_mode", 0);
	ir_set_i(a->m, p, "count_include_pad", 1);
	return reshape_to(a, op2(a, IR_OP_MUL, fin(a, p), sc(a, v, (double)(lo + hi + 1))), t);
}

/*
 * lrn: y = x * s^-beta with s = bias + alpha/size * sum of x^2 over the
 * window [c - lo, c + hi] (lo = (size-1)/2 rounded down, hi up). Then
 *   dx = dy * s^-beta - 2 alpha beta/size * x * W'(dy * x * s^-beta / s)
 * where W' sums over the mirrored window [c - hi, c + lo] (the outputs
 * whose window holds c). s is recomputed.
 */
static bool grad_lrn(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *s, *p, *t;
	int64_t size = ir_attr_i(n, "size"), lo = (size - 1) / 2, hi = size - 1 - lo;
	double alpha = ir_attr_f(n, "alpha"), beta = ir_attr_f(n, "beta"),
	       bias = ir_attr_f(n, "bias");
	if (!wants(a, n, 0))
		return true;
	s = channel_window_sum(a, op2(a, IR_OP_MUL, x, x), lo, hi);
	s = op2(a, IR_OP_ADD, op2(a, IR_OP_MUL, s, sc(a, x, alpha / (double)size)), sc(a, x, bias));
	p = op2(a, IR_OP_POW, s, sc(a, x, -beta));
	t = op2(a, IR_OP_DIV, op2(a, IR_OP_MUL, op2(a, IR_OP_MUL, dy[0], x), p), s);
	t = op2(a, IR_OP_MUL, channel_window_sum(a, t, hi, lo),
	        sc(a, x, 2 * alpha * beta / (double)size));
	contrib(a, n, 0, op2(a, IR_OP_SUB, op2(a, IR_OP_MUL, dy[0], p), op2(a, IR_OP_MUL, x, t)));
	return true;
}

static bool grad_instance_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0], *xhat, *inv;
	int r = x->type.rank, naxes = 0;
	int64_t axes[IR_MAX_RANK], nc[IR_MAX_RANK];
	for (int i = 2; i < r; i++)
		axes[naxes++] = i;
	norm_stats(a, x, axes, naxes, ir_attr_f(n, "epsilon"), &xhat, &inv);
	if (wants(a, n, 0))
		contrib(a, n, 0,
		        norm_dx(a, op2(a, IR_OP_MUL, d, channel_view(a, n->in[1], r)), xhat, inv,
		                axes, naxes));
	if (wants(a, n, 1))
		contrib(a, n, 1,
		        reduce(a, IR_OP_REDUCE_SUM, op2(a, IR_OP_MUL, d, xhat), nc,
		               non_channel_axes(r, nc), false));
	if (wants(a, n, 2))
		contrib(a, n, 2,
		        reduce(a, IR_OP_REDUCE_SUM, d, nc, non_channel_axes(r, nc), false));
	return true;
}

/*
 * Inference batch_norm, y = (x - mean) * inv * scale + bias with
 * inv = 1/sqrt(var + eps) per channel: every operand may take a gradient
 * (training mode is ad_train_mode's rewrite, not this rule).
 */
static bool grad_batch_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0];
	int r = x->type.rank;
	int64_t axes[IR_MAX_RANK];
	int naxes = non_channel_axes(r, axes);
	enum ir_dtype pt = n->in[1]->type.dtype, xt = x->type.dtype;
	struct ir_value *scale = n->in[1], *mean = n->in[3], *var = n->in[4];
	struct ir_value *inv = op1(
	        a, IR_OP_RECIPROCAL,
	        op1(a, IR_OP_SQRT,
	            op2(a, IR_OP_ADD, var, scalar(a, var->type.dtype, ir_attr_f(n, "epsilon")))));
	struct ir_value *inv_v = channel_view(a, cast(a, inv, xt), r);
	struct ir_value *xc = op2(a, IR_OP_SUB, x, channel_view(a, cast(a, mean, xt), r));
	struct ir_value *sd = NULL, *sdxc = NULL;
	if (wants(a, n, 0))
		contrib(a, n, 0,
		        op2(a, IR_OP_MUL, d,
		            op2(a, IR_OP_MUL, inv_v, channel_view(a, cast(a, scale, xt), r))));
	if (wants(a, n, 2) || wants(a, n, 3))
		sd = cast(a, reduce(a, IR_OP_REDUCE_SUM, d, axes, naxes, false), pt);
	if (wants(a, n, 1) || wants(a, n, 4))
		sdxc = cast(
		        a,
		        reduce(a, IR_OP_REDUCE_SUM, op2(a, IR_OP_MUL, d, xc), axes, naxes, false),
		        pt);
	if (wants(a, n, 1))
		contrib(a, n, 1,
		        cast(a, op2(a, IR_OP_MUL, sdxc, cast(a, inv, pt)), n->in[1]->type.dtype));
	if (wants(a, n, 2))
		contrib(a, n, 2, cast(a, sd, n->in[2]->type.dtype));
	if (wants(a, n, 3)) {
		struct ir_value *g = op1(a, IR_OP_NEG, op2(a, IR_OP_MUL, sd, cast(a, scale, pt)));
		contrib(a, n, 3, cast(a, op2(a, IR_OP_MUL, g, cast(a, inv, pt)), mean->type.dtype));
	}
	if (wants(a, n, 4)) {
		/* d inv / d var = -inv^3 / 2 */
		struct ir_value *i = cast(a, inv, pt);
		struct ir_value *i3 = op2(a, IR_OP_MUL, op2(a, IR_OP_MUL, i, i), i);
		struct ir_value *g = op2(a, IR_OP_MUL, op2(a, IR_OP_MUL, sdxc, cast(a, scale, pt)),
		                         op2(a, IR_OP_MUL, i3, scalar(a, pt, -0.5)));
		contrib(a, n, 4, cast(a, g, var->type.dtype));
	}
	return true;
}

static bool grad_softmax(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *y = n->out[0], *d = dy[0], *g;
	int64_t axis = ir_attr_i(n, "axis");
	if (!wants(a, n, 0))
		return true;
	if (n->op == IR_OP_SOFTMAX) { /* y * (dy - sum(dy * y)) */
		struct ir_value *s =
		        reduce(a, IR_OP_REDUCE_SUM, op2(a, IR_OP_MUL, d, y), &axis, 1, true);
		g = op2(a, IR_OP_MUL, y, op2(a, IR_OP_SUB, d, s));
	} else { /* dy - exp(y) * sum(dy) */
		struct ir_value *s = reduce(a, IR_OP_REDUCE_SUM, d, &axis, 1, true);
		g = op2(a, IR_OP_SUB, d, op2(a, IR_OP_MUL, op1(a, IR_OP_EXP, y), s));
	}
	contrib(a, n, 0, g);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Rules: pooling and reductions                                            */
/* ------------------------------------------------------------------------ */

/* The gradient of a sum over axes (keepdims or not) of x: dy broadcast back. */
static struct ir_value *spread(struct ad *a, struct ir_value *d, const struct ir_type *xt,
                               const int64_t *axes, int naxes)
{
	struct ir_type kt = *xt;
	for (int i = 0; i < naxes; i++)
		kt.dims[axes[i]] = 1;
	return expand(a, reshape_to(a, d, &kt), xt);
}

static bool grad_reduce(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *y = n->out[0], *d = dy[0], *g;
	int naxes;
	const int64_t *axes = ir_attr_ints(n, "axes", &naxes);
	int64_t count = 1;
	if (!wants(a, n, 0))
		return true;
	for (int i = 0; i < naxes; i++)
		count *= x->type.dims[axes[i]];
	switch (n->op) {
	case IR_OP_REDUCE_SUM: g = spread(a, d, &x->type, axes, naxes); break;
	case IR_OP_REDUCE_MEAN:
		g = spread(a, op2(a, IR_OP_MUL, d, sc(a, x, count ? 1.0 / (double)count : 0)),
		           &x->type, axes, naxes);
		break;
	case IR_OP_REDUCE_SUM_SQUARE:
		g = op2(a, IR_OP_MUL, spread(a, d, &x->type, axes, naxes),
		        op2(a, IR_OP_MUL, x, sc(a, x, 2)));
		break;
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN: {
		/* shared evenly among ties, as PyTorch's amax */
		struct ir_value *yk = spread(a, y, &x->type, axes, naxes);
		struct ir_value *m = cast(a, op2(a, IR_OP_EQUAL, x, yk), x->type.dtype);
		struct ir_value *c = reduce(a, IR_OP_REDUCE_SUM, m, axes, naxes, true);
		struct ir_value *dk = reshape_to(a, d, &c->type);
		g = op2(a, IR_OP_MUL, m, op2(a, IR_OP_DIV, dk, c));
		break;
	}
	case IR_OP_REDUCE_L1:
		g = op2(a, IR_OP_MUL, spread(a, d, &x->type, axes, naxes), op1(a, IR_OP_SIGN, x));
		break;
	case IR_OP_REDUCE_L2: {
		/* x / y, and 0 where the norm is 0 (PyTorch's choice) */
		struct ir_value *yk = spread(a, y, &x->type, axes, naxes);
		struct ir_value *z = op2(a, IR_OP_EQUAL, yk, sc(a, x, 0));
		struct ir_value *q = op2(a, IR_OP_DIV, x, where(a, z, sc(a, x, 1), yk));
		g = op2(a, IR_OP_MUL, spread(a, d, &x->type, axes, naxes),
		        where(a, z, sc(a, x, 0), q));
		break;
	}
	case IR_OP_REDUCE_LOG_SUM: /* 1 / sum(x) = e^-y */
		g = spread(a, op2(a, IR_OP_MUL, d, op1(a, IR_OP_EXP, op1(a, IR_OP_NEG, y))),
		           &x->type, axes, naxes);
		break;
	case IR_OP_REDUCE_LOG_SUM_EXP: /* softmax: e^(x - y) */
		g = op2(a, IR_OP_MUL, spread(a, d, &x->type, axes, naxes),
		        op1(a, IR_OP_EXP,
		            op2(a, IR_OP_SUB, x, spread(a, y, &x->type, axes, naxes))));
		break;
	default: ir_panic(__FILE__, __LINE__, "no reduce rule for %s", ir_ops[n->op].name);
	}
	contrib(a, n, 0, g);
	return true;
}

static bool grad_global_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0];
	int64_t axes[IR_MAX_RANK], size = 1;
	int naxes = 0;
	if (!wants(a, n, 0))
		return true;
	for (int i = 2; i < x->type.rank; i++) {
		axes[naxes++] = i;
		size *= x->type.dims[i];
	}
	if (n->op == IR_OP_GLOBAL_AVG_POOL) {
		d = op2(a, IR_OP_MUL, d, sc(a, x, size ? 1.0 / (double)size : 0));
		contrib(a, n, 0, expand(a, d, &x->type));
	} else { /* global_max_pool: as reduce_max */
		struct ir_value *m = cast(a, op2(a, IR_OP_EQUAL, x, n->out[0]), x->type.dtype);
		struct ir_value *c = reduce(a, IR_OP_REDUCE_SUM, m, axes, naxes, true);
		contrib(a, n, 0, op2(a, IR_OP_MUL, m, op2(a, IR_OP_DIV, d, c)));
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
static int64_t pool_count(int64_t o, int64_t in, int64_t k, int64_t st, int64_t pb, int64_t pe,
                          bool pad_counts)
{
	int64_t c = 0;
	for (int64_t j = 0; j < k; j++) {
		int64_t i = o * st - pb + j;
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
static bool grad_avg_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0], *d = dy[0], *w, *g, *cnt;
	const struct ir_type *xt = &x->type, *yt = &d->type;
	int r = xt->rank, nsp = r - 2;
	const int64_t *k = ir_attr_ints(n, "kernel", NULL), *st = ir_attr_ints(n, "strides", NULL),
	              *pads = ir_attr_ints(n, "pads", NULL);
	bool pad_counts = ir_attr_i(n, "count_include_pad") != 0, uniform = true;
	int64_t p2[2 * IR_MAX_RANK], op[IR_MAX_RANK], one[IR_MAX_RANK], o[IR_MAX_RANK] = { 0 };
	struct ir_type ct = { .dtype = xt->dtype, .rank = r }, wt = ct, ft = *yt;
	int64_t nout;
	double *counts;
	if (!wants(a, n, 0))
		return true;
	ct.dims[0] = ct.dims[1] = 1;
	memcpy(ct.dims + 2, yt->dims + 2, sizeof(int64_t) * (size_t)nsp);
	nout = ir_type_elems(&ct);
	counts = ir_arena_alloc(&a->m->arena, sizeof *counts * (size_t)(nout ? nout : 1));
	for (int64_t p = 0; p < nout; p++) {
		double c = 1;
		for (int i = 0; i < nsp; i++)
			c *= (double)pool_count(o[i], xt->dims[2 + i], k[i], st[i], pads[i],
			                        pads[nsp + i], pad_counts);
		counts[p] = c;
		uniform = uniform && c == counts[0];
		next_index(o, ct.dims + 2, nsp);
	}
	for (int64_t p = 0; p < nout; p++) /* a window wholly in ceil-mode overhang: 0 */
		counts[p] = counts[p] ? 1 / counts[p] : 0;
	cnt = uniform ? sc(a, x, nout ? counts[0] : 1) : constant(a, &ct, counts);
	g = op2(a, IR_OP_MUL, d, cnt);
	ft.dims[0] = yt->dims[0] * yt->dims[1];
	ft.dims[1] = 1;
	g = reshape_to(a, g, &ft);
	wt.dims[0] = wt.dims[1] = 1;
	memcpy(wt.dims + 2, k, sizeof(int64_t) * (size_t)nsp);
	counts = ir_arena_alloc(&a->m->arena, sizeof *counts * (size_t)ir_type_elems(&wt));
	for (int64_t i = 0; i < ir_type_elems(&wt); i++)
		counts[i] = 1;
	w = constant(a, &wt, counts);
	for (int i = 0; i < nsp; i++) {
		/* ceil mode may reach past the padded input: crop with more end padding */
		int64_t base = st[i] * (yt->dims[2 + i] - 1) + k[i] - pads[i] - pads[nsp + i];
		int64_t extra = base > xt->dims[2 + i] ? base - xt->dims[2 + i] : 0;
		p2[i] = pads[i];
		p2[nsp + i] = pads[nsp + i] + extra;
		op[i] = xt->dims[2 + i] - (base - extra);
		one[i] = 1;
	}
	g = conv_like(a, IR_OP_CONV_TRANSPOSE, g, w, st, p2, one, 1, op);
	contrib(a, n, 0, reshape_to(a, g, xt));
	return true;
}

/* Scatter-adds updates u along axis of a zero tensor of type t. */
static struct ir_value *scatter_add(struct ad *a, const struct ir_type *t, struct ir_value *idx,
                                    struct ir_value *u, int64_t axis)
{
	struct ir_value *in[3] = { zeros(a, t), idx, u };
	struct ir_node *s = node(a, IR_OP_SCATTER_ELEMENTS, in, 3, 1);
	ir_set_i(a->m, s, "axis", axis);
	ir_set_s(a->m, s, "reduction", "add");
	return fin(a, s);
}

/* max_pool routes each gradient to its window's maximum: the indices
 * result is the flat offset of the maximum in the whole input. */
static bool grad_max_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *x = n->in[0];
	int64_t total = ir_type_elems(&dy[0]->type), nx = ir_type_elems(&x->type);
	struct ir_type ft = { .dtype = x->type.dtype, .rank = 1, .dims = { nx } };
	if (!no_grad_through(a, n, dy, 1))
		return false;
	if (!wants(a, n, 0) || !dy[0])
		return true;
	IR_ASSERT(n->nout == 2 && ir_attr_i(n, "storage_order") == 0);
	struct ir_value *g = scatter_add(a, &ft, reshape(a, n->out[1], 1, &total),
	                                 reshape(a, dy[0], 1, &total), 0);
	contrib(a, n, 0, reshape_to(a, g, &x->type));
	return true;
}

/* ------------------------------------------------------------------------ */
/* Rules: data movement                                                     */
/* ------------------------------------------------------------------------ */

static bool grad_reshape(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (wants(a, n, 0))
		contrib(a, n, 0, reshape_to(a, dy[0], &n->in[0]->type));
	return true;
}

static bool grad_transpose(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	int c;
	const int64_t *perm = ir_attr_ints(n, "perm", &c);
	int64_t inv[IR_MAX_RANK];
	if (!wants(a, n, 0))
		return true;
	for (int i = 0; i < c; i++)
		inv[perm[i]] = i;
	contrib(a, n, 0, transpose(a, dy[0], inv));
	return true;
}

static bool grad_expand(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (wants(a, n, 0))
		contrib(a, n, 0, unbroadcast(a, dy[0], &n->in[0]->type));
	return true;
}

static bool grad_concat(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
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
			if (wants(a, n, i))
				contrib(a, n, i, slice(a, dy[0], starts, ends, steps));
			starts[axis] = ends[axis];
		}
		return true;
	}
	for (int i = 0; i < n->nin; i++)
		sizes[i] = n->in[i]->type.dims[axis];
	if (n->nin == 1) {
		if (wants(a, n, 0))
			contrib(a, n, 0, dy[0]);
		return true;
	}
	s = node(a, IR_OP_SPLIT, &dy[0], 1, n->nin);
	ir_set_i(a->m, s, "axis", axis);
	ir_set_ints(a->m, s, "split", sizes, n->nin);
	fin(a, s);
	for (int i = 0; i < n->nin; i++)
		if (wants(a, n, i))
			contrib(a, n, i, s->out[i]);
	return true;
}

static bool grad_split(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value **parts;
	struct ir_node *c;
	if (!wants(a, n, 0))
		return true;
	parts = ir_arena_alloc(&a->m->arena, sizeof *parts * (size_t)n->nout);
	for (int i = 0; i < n->nout; i++)
		parts[i] = dy[i] ? dy[i] : zeros(a, &n->out[i]->type);
	if (n->nout == 1) {
		contrib(a, n, 0, parts[0]);
		return true;
	}
	c = node(a, IR_OP_CONCAT, parts, n->nout, 1);
	ir_set_i(a->m, c, "axis", ir_attr_i(n, "axis"));
	contrib(a, n, 0, fin(a, c));
	return true;
}

/*
 * slice: the gradient is dy put back where the slice took it, zeros
 * elsewhere. Negative steps first reverse dy; a step s > 1 spreads each
 * element into s (an axis of s added and padded, then merged); a final pad
 * (cropping where negative) places the result.
 */
static bool grad_slice(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const struct ir_type *xt = &n->in[0]->type;
	const int64_t *st = ir_attr_ints(n, "starts", NULL), *sp = ir_attr_ints(n, "steps", NULL);
	int r = xt->rank;
	int64_t lo[IR_MAX_RANK], span[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
	int64_t rs[IR_MAX_RANK], re[IR_MAX_RANK], rp[IR_MAX_RANK];
	struct ir_value *g = dy[0];
	bool reverse = false;
	if (!wants(a, n, 0))
		return true;
	if (ir_type_elems(&g->type) == 0) {
		contrib(a, n, 0, zeros(a, xt));
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
		g = slice(a, g, rs, re, rp);
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
		g = reshape_to(a, g, &t);
		p[(r + 1) + i + 1] = s - 1;
		g = pad(a, g, p);
		t = g->type;
		t.dims[i] = cnt * s;
		memmove(t.dims + i + 1, t.dims + i + 2, sizeof(int64_t) * (size_t)(r - i - 1));
		t.rank = r;
		g = reshape_to(a, g, &t);
		span[i] = cnt * s;
	}
	for (int i = 0; i < r; i++) {
		pads[i] = lo[i];
		pads[r + i] = xt->dims[i] - lo[i] - span[i]; /* negative: crop */
	}
	contrib(a, n, 0, pad(a, g, pads));
	return true;
}

/*
 * Resize, and pad in edge or reflect mode, are linear and separable: along
 * each dimension d, output o is a weighted sum of at most four inputs
 * (resize: one for nearest, two for linear, four for cubic, none where
 * tf_crop_and_resize extrapolates - ir_resize_taps, the reference
 * evaluator's own; pad: the one input it copies). dx is dy pushed back
 * through each dimension's map in turn.
 */
struct dim_map {
	int64_t in, out;
	int *n;           /* [out] taps of output o */
	int64_t (*at)[4]; /* [out] their inputs */
	double (*w)[4];   /* [out] their weights */
	int kmax;         /* the most outputs one input feeds */
};

/* Dimension d's map and its kmax; false when it is the identity. */
static bool dim_map(struct ad *a, const struct ir_node *n, int d, struct dim_map *m)
{
	bool identity;
	m->in = n->in[0]->type.dims[d];
	m->out = n->out[0]->type.dims[d];
	identity = m->in == m->out;
	m->n = ir_arena_alloc(&a->m->arena, sizeof *m->n * (size_t)(m->out + 1));
	m->at = ir_arena_alloc(&a->m->arena, sizeof *m->at * (size_t)(m->out + 1));
	m->w = ir_arena_alloc(&a->m->arena, sizeof *m->w * (size_t)(m->out + 1));
	for (int64_t o = 0; o < m->out; o++) {
		if (n->op == IR_OP_RESIZE) {
			m->n[o] = ir_resize_taps(n, d, o, m->at[o], m->w[o]);
		} else { /* pad, edge or reflect */
			int64_t i = o - ir_attr_ints(n, "pads", NULL)[d], last = m->in - 1;
			if (i < 0 || i > last)
				i = !strcmp(ir_attr_s(n, "mode"), "edge") ? (i < 0 ? 0 : last)
				    : i < 0                               ? -i
				                                          : 2 * last - i;
			m->n[o] = 1;
			m->at[o][0] = i;
			m->w[o][0] = 1;
		}
		identity = identity && m->n[o] == 1 && m->at[o][0] == o && m->w[o][0] == 1;
	}
	if (identity)
		return false;
	{
		int *cnt = ir_arena_alloc(&a->m->arena, sizeof *cnt * (size_t)(m->in + 1));
		m->kmax = 0;
		for (int64_t o = 0; o < m->out; o++)
			for (int t = 0; t < m->n[o]; t++)
				if (++cnt[m->at[o][t]] > m->kmax)
					m->kmax = cnt[m->at[o][t]];
	}
	return true;
}

/* dy through map m along dimension d, densely: one matmul by M[o, k] (the
 * weight of input k in output o), from the left for the second-to-last
 * dimension, between transposes for the ones before it. */
static struct ir_value *dim_dense(struct ad *a, struct ir_value *g, int d, const struct dim_map *m)
{
	int r = g->type.rank;
	bool left = d == r - 2;
	struct ir_type mt = { g->type.dtype, 2, { left ? m->in : m->out, left ? m->out : m->in } };
	double *vals = ir_arena_alloc(&a->m->arena, sizeof *vals * (size_t)(m->in * m->out + 1));
	int64_t perm[IR_MAX_RANK];
	struct ir_value *mat;
	for (int64_t o = 0; o < m->out; o++)
		for (int t = 0; t < m->n[o]; t++)
			vals[left ? m->at[o][t] * m->out + o : o * m->in + m->at[o][t]] +=
			        m->w[o][t];
	mat = constant(a, &mt, vals);
	if (d == r - 1)
		return op2(a, IR_OP_MATMUL, g, mat);
	if (left)
		return op2(a, IR_OP_MATMUL, mat, g);
	for (int i = 0; i < r; i++)
		perm[i] = i == d ? r - 1 : i == r - 1 ? d : i;
	return transpose(a, op2(a, IR_OP_MATMUL, transpose(a, g, perm), mat), perm);
}

/* dy through map m along dimension d, sparsely: input k receives from at
 * most kmax outputs, so dx is a sum of kmax gathers of dy along d, each
 * weighted per input (zero weights pad the shorter lists). */
static struct ir_value *dim_sparse(struct ad *a, struct ir_value *g, int d, const struct dim_map *m)
{
	int r = g->type.rank, kmax = m->kmax;
	int *cnt = ir_arena_alloc(&a->m->arena, sizeof *cnt * (size_t)(m->in + 1)); /* so far */
	int64_t *src = ir_arena_alloc(&a->m->arena, sizeof *src * (size_t)(m->in * kmax + 1));
	double *wt = ir_arena_alloc(&a->m->arena, sizeof *wt * (size_t)(m->in * kmax + 1));
	struct ir_type it = { IR_I64, 1, { m->in } }, wt_t = { g->type.dtype, r, { 0 } };
	struct ir_value *sum = NULL;
	for (int64_t o = 0; o < m->out; o++)
		for (int t = 0; t < m->n[o]; t++) {
			int64_t k = m->at[o][t];
			src[k * kmax + cnt[k]] = o;
			wt[k * kmax + cnt[k]++] = m->w[o][t];
		}
	for (int i = 0; i < r; i++)
		wt_t.dims[i] = i == d ? m->in : 1;
	for (int j = 0; j < kmax; j++) {
		int64_t *idx = ir_arena_alloc(&a->m->arena, sizeof *idx * (size_t)(m->in + 1));
		double *w = ir_arena_alloc(&a->m->arena, sizeof *w * (size_t)(m->in + 1));
		struct ir_value *in[2], *term;
		struct ir_node *gn;
		for (int64_t k = 0; k < m->in; k++) {
			idx[k] = j < cnt[k] ? src[k * kmax + j] : 0;
			w[k] = j < cnt[k] ? wt[k * kmax + j] : 0;
		}
		in[0] = g;
		in[1] = ir_add_const(
		        a->m,
		        ir_unique_name(a->m, ir_arena_printf(&a->m->arena, "%s/%s/taps", a->prefix,
		                                             a->at)),
		        &it, idx);
		gn = node(a, IR_OP_GATHER, in, 2, 1);
		ir_set_i(a->m, gn, "axis", d);
		term = op2(a, IR_OP_MUL, fin(a, gn), constant(a, &wt_t, w));
		sum = sum ? op2(a, IR_OP_ADD, sum, term) : term;
	}
	return sum;
}

/*
 * One dimension at a time: sparsely while no input receives from more than
 * eight outputs (upsampling by up to 4x linearly, 8x nearest, and every
 * downsampling and padding but the widest), densely otherwise (a large
 * upsampling factor of a short dimension: a small matrix).
 */
static bool grad_separable(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *g = dy[0];
	if (!wants(a, n, 0))
		return true;
	for (int d = g->type.rank - 1; d >= 0; d--) {
		struct dim_map m;
		if (!dim_map(a, n, d, &m))
			continue;
		if (m.kmax == 0) { /* every output extrapolated: nothing flows back */
			struct ir_type t = g->type;
			t.dims[d] = m.in;
			g = zeros(a, &t);
			continue;
		}
		g = m.kmax <= 8 ? dim_sparse(a, g, d, &m) : dim_dense(a, g, d, &m);
	}
	contrib(a, n, 0, g);
	return true;
}

static bool grad_pad(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	int c;
	const int64_t *pads = ir_attr_ints(n, "pads", &c);
	int64_t neg[2 * IR_MAX_RANK];
	if (!wants(a, n, 0))
		return true;
	if (strcmp(ir_attr_s(n, "mode"), "constant"))
		return grad_separable(a, n, dy); /* edge, reflect */
	for (int i = 0; i < c; i++)
		neg[i] = -pads[i];
	contrib(a, n, 0, pad(a, dy[0], neg));
	return true;
}

/*
 * depth_to_space and space_to_depth move elements without arithmetic, so
 * the gradient moves dy back: space_to_depth is the inverse of DCR
 * depth_to_space and the other way round; CRD's inverse is its reshape ->
 * transpose -> reshape undone ([N, C, H, b, W, b] -> [N, C, b, b, H, W]).
 */
static bool grad_depth_space(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const struct ir_type *xt = &n->in[0]->type, *yt = &n->out[0]->type;
	int64_t b = ir_attr_i(n, "blocksize");
	struct ir_node *g;
	if (!wants(a, n, 0))
		return true;
	if (n->op == IR_OP_DEPTH_TO_SPACE && !strcmp(ir_attr_s(n, "mode"), "CRD")) {
		int64_t c = yt->dims[1], h = xt->dims[2], w = xt->dims[3];
		struct ir_value *v =
		        reshape(a, dy[0], 6, (int64_t[]){ xt->dims[0], c, h, b, w, b });
		v = transpose(a, v, (int64_t[]){ 0, 1, 3, 5, 2, 4 });
		contrib(a, n, 0, reshape_to(a, v, xt));
		return true;
	}
	g = node(a, n->op == IR_OP_DEPTH_TO_SPACE ? IR_OP_SPACE_TO_DEPTH : IR_OP_DEPTH_TO_SPACE,
	         &dy[0], 1, 1);
	ir_set_i(a->m, g, "blocksize", b);
	if (g->op == IR_OP_DEPTH_TO_SPACE)
		ir_set_s(a->m, g, "mode", "DCR");
	contrib(a, n, 0, fin(a, g));
	return true;
}

/* tile: view dy as [r0, d0, r1, d1, ...] (splitting only repeated axes) and
 * sum over the repeats. */
static bool grad_tile(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const struct ir_type *xt = &n->in[0]->type;
	const int64_t *rep = ir_attr_ints(n, "repeats", NULL);
	int64_t dims[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
	int rank = 0, naxes = 0;
	if (!wants(a, n, 0))
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
		contrib(a, n, 0, dy[0]);
		return true;
	}
	struct ir_value *g = reshape(a, dy[0], rank, dims);
	contrib(a, n, 0, reshape_to(a, reduce(a, IR_OP_REDUCE_SUM, g, axes, naxes, false), xt));
	return true;
}

/*
 * gather as an embedding lookup: the table [outer, D, inner] (flattened
 * around axis) receives dy [outer, nidx, inner] scatter-added at the
 * indices, broadcast over outer and inner.
 */
static bool grad_gather(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	const struct ir_type *xt = &n->in[0]->type;
	int axis = (int)ir_attr_i(n, "axis");
	int64_t outer = 1, inner = 1, ni = ir_type_elems(&n->in[1]->type), dims[3];
	struct ir_type tt = { .dtype = xt->dtype, .rank = 3 }, it;
	struct ir_value *idx, *u;
	if (!wants(a, n, 0))
		return true;
	for (int i = 0; i < axis; i++)
		outer *= xt->dims[i];
	for (int i = axis + 1; i < xt->rank; i++)
		inner *= xt->dims[i];
	dims[0] = outer;
	dims[1] = ni;
	dims[2] = inner;
	u = reshape(a, dy[0], 3, dims);
	it = u->type;
	it.dtype = n->in[1]->type.dtype;
	dims[0] = dims[2] = 1;
	idx = reshape(a, n->in[1], 3, dims);
	if (outer != 1 || inner != 1)
		idx = expand(a, idx, &it);
	tt.dims[0] = outer;
	tt.dims[1] = xt->dims[axis];
	tt.dims[2] = inner;
	contrib(a, n, 0, reshape_to(a, scatter_add(a, &tt, idx, u, 1), xt));
	return true;
}

static bool grad_gather_elements(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	if (wants(a, n, 0))
		contrib(a, n, 0,
		        scatter_add(a, &n->in[0]->type, n->in[1], dy[0], ir_attr_i(n, "axis")));
	return true;
}

/* scatter_elements with reduction none or add: the data's gradient is dy
 * (zeroed where none overwrote it), the updates' is dy gathered back. */
static bool grad_scatter_elements(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
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
	if (wants(a, n, 0)) {
		struct ir_value *g = dy[0];
		if (none) {
			struct ir_value *in[3] = { dy[0], n->in[1], zeros(a, &n->in[2]->type) };
			struct ir_node *s = node(a, IR_OP_SCATTER_ELEMENTS, in, 3, 1);
			ir_set_i(a->m, s, "axis", axis);
			ir_set_s(a->m, s, "reduction", "none");
			g = fin(a, s);
		}
		contrib(a, n, 0, g);
	}
	if (wants(a, n, 2)) {
		struct ir_value *in[2] = { dy[0], n->in[1] };
		struct ir_node *gn = node(a, IR_OP_GATHER_ELEMENTS, in, 2, 1);
		ir_set_i(a->m, gn, "axis", axis);
		contrib(a, n, 2, fin(a, gn));
	}
	return true;
}

static bool grad_cumsum(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_node *c;
	if (!wants(a, n, 0))
		return true;
	c = again(a, n, dy[0]);
	ir_set_i(a->m, c, "reverse", !ir_attr_i(n, "reverse"));
	contrib(a, n, 0, fin(a, c));
	return true;
}

/* ------------------------------------------------------------------------ */
/* The rule table                                                           */
/* ------------------------------------------------------------------------ */

/* Each op's rule, named by the grad column of ir/ops.h (grad_<grad>); none:
 * the op has no rule, and ad_gradients reports a node of it on the path. */
#define grad_none NULL

static const ad_rule rules[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp, why, inf, fold, ex, grad, lo, sch) \
	[IR_OP_##id] = grad_##grad,
#include "ir/ops.h"
#undef IR_OP
};

bool ad_has_rule(enum ir_op op) { return op >= 0 && op < IR_OP_COUNT && rules[op]; }

/* ------------------------------------------------------------------------ */
/* The pass                                                                 */
/* ------------------------------------------------------------------------ */

/* Copies n's attributes to p (same op). */
static void copy_attrs(struct ir_module *m, struct ir_node *p, const struct ir_node *n)
{
	for (int i = 0; i < n->nattrs; i++) {
		const struct ir_attr *at = &n->attrs[i];
		switch (at->kind) {
		case IR_ATTR_INT: ir_set_i(m, p, at->name, at->i); break;
		case IR_ATTR_FLOAT: ir_set_f(m, p, at->name, at->f); break;
		case IR_ATTR_STRING: ir_set_s(m, p, at->name, at->s); break;
		case IR_ATTR_INTS: ir_set_ints(m, p, at->name, at->ints, at->n); break;
		case IR_ATTR_FLOATS: ir_set_floats(m, p, at->name, at->floats, at->n); break;
		case IR_ATTR_DTYPE: ir_set_t(m, p, at->name, at->t); break;
		}
	}
}

/*
 * Gives a max_pool without row-major indices a node that has them: an
 * identical max_pool with two results takes over the uses (and the name) of
 * the first result. The old node goes unless its column-major indices have
 * users.
 */
static struct ir_node *with_indices(struct ir_module *m, struct ir_node *n)
{
	struct ir_value *old = n->out[0];
	struct ir_node *p = ir_add_node(m, IR_OP_MAX_POOL, n->name, n->in, 1, NULL, 2);
	char err[256];
	copy_attrs(m, p, n);
	ir_set_i(m, p, "storage_order", 0);
	ir_move_before(m, p, n);
	if (!ir_infer_node(m, p, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "max_pool with indices: %s", err);
	ir_replace_value(m, old, p->out[0]);
	ir_rename_value(
	        m, p->out[1],
	        ir_unique_name(m, ir_arena_printf(&m->arena, "%s/indices", p->out[0]->name)));
	if (n->nout == 1 || (n->out[1]->nuses == 0 && !ir_is_output(m, n->out[1])))
		ir_remove_node(m, n);
	return p;
}

/* Sizes the marks for the values m has now and marks the paths. */
static void mark_paths(struct ad *a, struct ir_value *loss, struct ir_value *const *wrt, int nwrt)
{
	struct ir_module *m = a->m;
	a->nfwd = m->nvalues;
	a->need = ir_arena_alloc(&m->arena, sizeof *a->need * (size_t)a->nfwd);
	a->live = ir_arena_alloc(&m->arena, sizeof *a->live * (size_t)a->nfwd);
	a->grad = ir_arena_alloc(&m->arena, sizeof *a->grad * (size_t)a->nfwd);
	for (int i = 0; i < nwrt; i++)
		a->need[wrt[i]->id] = true;
	IR_FOR_EACH_NODE(m, n)
	{
		bool any = false;
		for (int i = 0; i < n->nin; i++)
			any = any || a->need[n->in[i]->id];
		for (int i = 0; any && i < n->nout; i++)
			if (is_float(n->out[i]))
				a->need[n->out[i]->id] = true;
	}
	a->live[loss->id] = true;
	for (struct ir_node *n = m->last; n; n = n->prev) {
		bool any = false;
		for (int i = 0; i < n->nout; i++)
			any = any || a->live[n->out[i]->id];
		for (int i = 0; any && i < n->nin; i++)
			a->live[n->in[i]->id] = true;
	}
}

static bool on_path(const struct ad *a, const struct ir_value *v)
{
	return v->id < a->nfwd && a->need[v->id] && a->live[v->id];
}

static bool check_args(struct ir_module *m, struct ir_value *loss, struct ir_value *seed,
                       struct ir_value *const *wrt, int nwrt)
{
	char buf[IR_TYPE_STR_MAX];
	if (!is_float(loss) || ir_type_elems(&loss->type) != 1 || loss->kind == IR_VAL_DEAD) {
		ir_error(m->ctx, "the loss '%s' must be a float value with one element, not %s",
		         loss->name, ir_type_str(&loss->type, buf, sizeof buf));
		return false;
	}
	if (seed && (!is_float(seed) || ir_type_elems(&seed->type) != 1)) {
		ir_error(m->ctx,
		         "the loss scale '%s' must be a float value with one element, not %s",
		         seed->name, ir_type_str(&seed->type, buf, sizeof buf));
		return false;
	}
	for (int i = 0; i < nwrt; i++)
		if (!is_float(wrt[i]) || wrt[i]->kind == IR_VAL_DEAD) {
			ir_error(m->ctx, "cannot differentiate with respect to '%s' of type %s",
			         wrt[i]->name, ir_type_str(&wrt[i]->type, buf, sizeof buf));
			return false;
		}
	return true;
}

/* Makes each gradient a distinct node result named grad/<wrt name>. */
static void name_grads(struct ad *a, struct ir_value *const *wrt, int nwrt, struct ir_value **grads)
{
	/* taken[id]: an earlier gradient is that value, or it is a graph output
	 * (marked once: no scan per gradient) */
	bool *taken = ir_arena_alloc(&a->m->arena, sizeof *taken * (size_t)(a->m->nvalues + 1));
	for (int i = 0; i < a->m->noutputs; i++)
		taken[a->m->outputs[i]->id] = true;
	for (int i = 0; i < nwrt; i++) {
		struct ir_value *g = grads[i];
		const char *name = ir_unique_name(
		        a->m, ir_arena_printf(&a->m->arena, "grad/%s", wrt[i]->name));
		bool shared = g->kind != IR_VAL_NODE || g->id < a->nfwd || taken[g->id];
		taken[g->id] = true;
		if (shared) {
			struct ir_node *c = ir_add_node(a->m, IR_OP_COPY, name, &g, 1, &name, 1);
			grads[i] = fin(a, c);
		} else {
			ir_rename_value(a->m, g, name);
		}
	}
}

bool ad_gradients(struct ir_module *m, struct ir_value *loss, struct ir_value *seed,
                  struct ir_value *const *wrt, int nwrt, struct ir_value **grads)
{
	struct ad a = { .m = m, .prefix = "grad" };
	struct ir_node *last;
	bool ok = true, again = false;
	if (!check_args(m, loss, seed, wrt, nwrt))
		return false;
	mark_paths(&a, loss, wrt, nwrt);
	/* a max_pool on the path needs the indices of its maxima */
	for (struct ir_node *n = m->first, *next; n; n = next) {
		next = n->next; /* the replacement goes before n */
		if (n->op == IR_OP_MAX_POOL && on_path(&a, n->out[0]) &&
		    (n->nout < 2 || ir_attr_i(n, "storage_order"))) {
			bool is_loss = n->out[0] == loss;
			struct ir_node *p = with_indices(m, n);
			loss = is_loss ? p->out[0] : loss;
			again = true;
		}
	}
	if (again)
		mark_paths(&a, loss, wrt, nwrt);
	/* every op on the path needs a rule: report them all before building */
	IR_FOR_EACH_NODE(m, n)
	{
		bool on = false, in = false;
		for (int i = 0; i < n->nout; i++)
			on = on || on_path(&a, n->out[i]);
		for (int i = 0; i < n->nin; i++)
			in = in || wants(&a, n, i);
		if (on && in && !rules[n->op]) {
			ir_node_error(
			        m->ctx, n->name, ir_ops[n->op].name,
			        "no gradient for %s (it lies between the loss '%s' and a value "
			        "differentiated)",
			        ir_ops[n->op].name, loss->name);
			ok = false;
		}
	}
	if (!ok)
		return false;
	last = m->last;
	a.at = loss->name;
	a.grad[loss->id] = seed ? reshape_to(&a, cast(&a, seed, loss->type.dtype), &loss->type)
	                        : constant(&a, &loss->type, (const double[]){ 1 });
	for (struct ir_node *n = last; n; n = n->prev) {
		struct ir_value *small[16], **d = small;
		bool on = false, in = false;
		if (n->nout > 16)
			d = ir_arena_alloc(&m->arena, sizeof *d * (size_t)n->nout);
		for (int i = 0; i < n->nout; i++) {
			d[i] = on_path(&a, n->out[i]) ? a.grad[n->out[i]->id] : NULL;
			on = on || d[i];
		}
		for (int i = 0; i < n->nin; i++)
			in = in || wants(&a, n, i);
		if (!on || !in)
			continue;
		a.at = n->name;
		ok = rules[n->op](&a, n, d) && ok;
	}
	if (!ok)
		return false;
	for (int i = 0; i < nwrt; i++) {
		grads[i] = a.grad[wrt[i]->id];
		if (!grads[i]) {
			a.at = wrt[i]->name;
			grads[i] = zeros(&a, &wrt[i]->type);
		}
	}
	name_grads(&a, wrt, nwrt, grads);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Training-mode batch normalization                                        */
/* ------------------------------------------------------------------------ */

/* Moves the nodes after mark (built at the end of the list) before n. */
static void move_built(struct ir_module *m, struct ir_node *mark, struct ir_node *n)
{
	while (mark->next)
		ir_move_before(m, mark->next, n);
}

/* The running statistic old updated by batch statistic s (keepdims [1,C,...]). */
static struct ir_value *running_update(struct ad *a, struct ir_value *old, struct ir_value *s,
                                       double momentum, double factor)
{
	struct ir_value *b = cast(a, reshape_to(a, s, &old->type), old->type.dtype);
	struct ir_value *u = op2(a, IR_OP_ADD, op2(a, IR_OP_MUL, old, sc(a, old, 1 - momentum)),
	                         op2(a, IR_OP_MUL, b, sc(a, old, momentum * factor)));
	ir_rename_value(
	        a->m, u,
	        ir_unique_name(a->m, ir_arena_printf(&a->m->arena, "%s/updated", old->name)));
	return u;
}

/* The index of v in running[], if its update is still wanted; else -1. */
static int wanted(struct ir_value *v, struct ir_value *const *running, int nrunning,
                  struct ir_value *const *updated)
{
	for (int i = 0; i < nrunning; i++)
		if (running[i] == v && !updated[i])
			return i;
	return -1;
}

bool ad_train_mode(struct ir_module *m, float momentum, struct ir_value *const *running,
                   int nrunning, struct ir_value **updated)
{
	struct ad a = { .m = m, .prefix = "train" };
	struct ir_node *next;
	bool ok = true;
	for (int i = 0; i < nrunning; i++)
		updated[i] = NULL;
	for (struct ir_node *n = m->first; n; n = next) {
		struct ir_value *x = n->in[0], *mean, *xc, *var, *inv, *y;
		struct ir_node *mark = m->last;
		int64_t axes[IR_MAX_RANK], per = 1;
		int naxes, r = x->type.rank, k;
		next = n->next;
		if (n->op != IR_OP_BATCH_NORM)
			continue;
		naxes = non_channel_axes(r, axes);
		for (int i = 0; i < naxes; i++)
			per *= x->type.dims[axes[i]];
		if (per < 2) {
			ir_node_error(m->ctx, n->name, ir_ops[n->op].name,
			              "training needs more than one value per channel, the input "
			              "has %lld",
			              (long long)per);
			ok = false;
			continue;
		}
		a.at = n->name;
		mean = reduce(&a, IR_OP_REDUCE_MEAN, x, axes, naxes, true);
		xc = op2(&a, IR_OP_SUB, x, mean);
		var = reduce(&a, IR_OP_REDUCE_MEAN, op2(&a, IR_OP_MUL, xc, xc), axes, naxes, true);
		inv = op1(&a, IR_OP_RECIPROCAL,
		          op1(&a, IR_OP_SQRT,
		              op2(&a, IR_OP_ADD, var, sc(&a, x, (double)ir_attr_f(n, "epsilon")))));
		y = op2(&a, IR_OP_MUL, op2(&a, IR_OP_MUL, xc, inv),
		        channel_view(&a, cast(&a, n->in[1], x->type.dtype), r));
		y = op2(&a, IR_OP_ADD, y, channel_view(&a, cast(&a, n->in[2], x->type.dtype), r));
		if ((k = wanted(n->in[3], running, nrunning, updated)) >= 0)
			updated[k] = running_update(&a, n->in[3], mean, momentum, 1);
		if ((k = wanted(n->in[4], running, nrunning, updated)) >= 0)
			updated[k] = running_update(&a, n->in[4], var, momentum,
			                            (double)per / (double)(per - 1));
		move_built(m, mark, n);
		ir_replace_value(m, n->out[0], y);
		ir_remove_node(m, n);
	}
	for (int i = 0; i < nrunning; i++)
		if (!updated[i]) {
			const char *name = ir_unique_name(
			        m, ir_arena_printf(&m->arena, "%s/updated", running[i]->name));
			a.at = running[i]->name;
			updated[i] =
			        fin(&a, ir_add_node(m, IR_OP_COPY, name, &running[i], 1, &name, 1));
		}
	return ok;
}
