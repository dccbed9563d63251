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
 * Rules live in one table indexed by the op enum, generated from the grad
 * column of ir/ops.h: one function per op (or per family), each written
 * against the op's reference semantics in ir/fold.c and ir/eval_*.c and kept
 * in the grad_*.c file of the same family (grad.h). A gradient that broadcasting spread over more
 * dimensions is summed back (unbroadcast); convolutions differentiate into
 * convolutions (conv_transpose for the data, a conv of the input with the
 * batch moved into the channels for the filter); gathers and max pooling
 * scatter-add into a zero tensor; normalizations recompute their statistics.
 *
 * A run-time If differentiates the branch taken: a guarded node's rule
 * builds under its guard, phi's rule sends dy to the operand chosen, and a
 * branch's contribution to a value outside it is lifted out through phis
 * (ad_lift), so every gradient the optimizer reads is unguarded.
 *
 * ad_train_mode rewrites inference batch_norm into batch statistics
 * (PyTorch's train() mode) before differentiation.
 */
#include "grad.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Building nodes                                                           */
/* ------------------------------------------------------------------------ */

bool ad_is_float(const struct ir_value *v) { return ir_dtypes[v->type.dtype].is_float; }

/* A new node at the end of the list, its results named after the forward
 * node, under a->guard; attributes are set by the caller, then ad_fin()
 * types it. */
struct ir_node *ad_node(struct ad *a, enum ir_op op, struct ir_value *const *in, int nin, int nout)
{
	struct ir_node *n;
	const char **names = ir_arena_alloc(&a->m->arena, sizeof *names * (size_t)nout);
	const char *nm = ir_arena_printf(&a->m->arena, "%s/%s", a->prefix, a->at);
	for (int i = 0; i < nout; i++) {
		const char *base =
		        nout > 1 ? ir_arena_printf(&a->m->arena, "%s/%s%d", nm, ir_ops[op].name, i)
		                 : ir_arena_printf(&a->m->arena, "%s/%s", nm, ir_ops[op].name);
		names[i] = ir_unique_name(a->m, base);
	}
	n = ir_add_node(a->m, op, nm, in, nin, names, nout);
	if (a->guard)
		ir_set_guard(a->m, n, a->guard);
	return n;
}

/* Types n by inference; a failure is a bug in a rule. */
struct ir_value *ad_fin(struct ad *a, struct ir_node *n)
{
	char err[256];
	if (!ir_infer_node(a->m, n, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "autodiff of '%s': %s: %s", a->at, ir_ops[n->op].name,
		         err);
	return n->out[0];
}

struct ir_value *ad_op1(struct ad *a, enum ir_op op, struct ir_value *x)
{
	return ad_fin(a, ad_node(a, op, &x, 1, 1));
}

struct ir_value *ad_op2(struct ad *a, enum ir_op op, struct ir_value *x, struct ir_value *y)
{
	struct ir_value *in[2] = { x, y };
	return ad_fin(a, ad_node(a, op, in, 2, 1));
}

struct ir_value *ad_where(struct ad *a, struct ir_value *c, struct ir_value *x, struct ir_value *y)
{
	struct ir_value *in[3] = { c, x, y };
	return ad_fin(a, ad_node(a, IR_OP_WHERE, in, 3, 1));
}

/* A constant of type t with values vals (converted to t's dtype). */
struct ir_value *ad_constant(struct ad *a, const struct ir_type *t, const double *vals)
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
struct ir_value *ad_scalar(struct ad *a, enum ir_dtype dt, double v)
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
		a->scalars[a->nscalars++] = (struct ad_scalar_entry){ dt, v, c };
	return c;
}

/* A scalar constant of x's dtype. */
struct ir_value *ad_sc(struct ad *a, const struct ir_value *x, double v)
{
	return ad_scalar(a, x->type.dtype, v);
}

struct ir_value *ad_reshape(struct ad *a, struct ir_value *x, int rank, const int64_t *dims)
{
	struct ir_node *n;
	if (x->type.rank == rank && !memcmp(x->type.dims, dims, sizeof(int64_t) * (size_t)rank))
		return x;
	n = ad_node(a, IR_OP_RESHAPE, &x, 1, 1);
	ir_set_ints(a->m, n, "shape", dims, rank);
	return ad_fin(a, n);
}

struct ir_value *ad_reshape_to(struct ad *a, struct ir_value *x, const struct ir_type *t)
{
	return ad_reshape(a, x, t->rank, t->dims);
}

struct ir_value *ad_transpose(struct ad *a, struct ir_value *x, const int64_t *perm)
{
	struct ir_node *n = ad_node(a, IR_OP_TRANSPOSE, &x, 1, 1);
	ir_set_ints(a->m, n, "perm", perm, x->type.rank);
	return ad_fin(a, n);
}

/* Swaps the last two dimensions. */
struct ir_value *ad_transpose_last(struct ad *a, struct ir_value *x)
{
	int64_t perm[IR_MAX_RANK];
	int r = x->type.rank;
	for (int i = 0; i < r; i++)
		perm[i] = i;
	perm[r - 2] = r - 1;
	perm[r - 1] = r - 2;
	return ad_transpose(a, x, perm);
}

struct ir_value *ad_reduce(struct ad *a, enum ir_op op, struct ir_value *x, const int64_t *axes,
                           int naxes, bool keepdims)
{
	struct ir_node *n = ad_node(a, op, &x, 1, 1);
	ir_set_ints(a->m, n, "axes", axes, naxes);
	ir_set_i(a->m, n, "keepdims", keepdims);
	return ad_fin(a, n);
}

/* Broadcasts x to t's shape; always a new node, so a scalar constant
 * expanded is a node result. */
struct ir_value *ad_expand(struct ad *a, struct ir_value *x, const struct ir_type *t)
{
	struct ir_node *n = ad_node(a, IR_OP_EXPAND, &x, 1, 1);
	ir_set_ints(a->m, n, "shape", t->dims, t->rank);
	return ad_fin(a, n);
}

struct ir_value *ad_zeros(struct ad *a, const struct ir_type *t)
{
	return ad_expand(a, ad_scalar(a, t->dtype, 0), t);
}

struct ir_value *ad_cast(struct ad *a, struct ir_value *x, enum ir_dtype dt)
{
	struct ir_node *n;
	if (x->type.dtype == dt)
		return x;
	n = ad_node(a, IR_OP_CAST, &x, 1, 1);
	ir_set_t(a->m, n, "to", dt);
	return ad_fin(a, n);
}

struct ir_value *ad_slice(struct ad *a, struct ir_value *x, const int64_t *starts,
                          const int64_t *ends, const int64_t *steps)
{
	struct ir_node *n = ad_node(a, IR_OP_SLICE, &x, 1, 1);
	ir_set_ints(a->m, n, "starts", starts, x->type.rank);
	ir_set_ints(a->m, n, "ends", ends, x->type.rank);
	ir_set_ints(a->m, n, "steps", steps, x->type.rank);
	return ad_fin(a, n);
}

/* Keeps the first keep[i] elements of each dimension (a no-op if all). */
struct ir_value *ad_crop(struct ad *a, struct ir_value *x, const int64_t *keep)
{
	int64_t starts[IR_MAX_RANK] = { 0 }, steps[IR_MAX_RANK];
	bool same = true;
	for (int i = 0; i < x->type.rank; i++) {
		steps[i] = 1;
		same = same && keep[i] == x->type.dims[i];
	}
	return same ? x : ad_slice(a, x, starts, keep, steps);
}

/* Constant-mode pad with zeros; negative pads crop. */
struct ir_value *ad_pad(struct ad *a, struct ir_value *x, const int64_t *pads)
{
	struct ir_node *n = ad_node(a, IR_OP_PAD, &x, 1, 1);
	ir_set_ints(a->m, n, "pads", pads, 2 * x->type.rank);
	ir_set_s(a->m, n, "mode", "constant");
	ir_set_f(a->m, n, "value", 0);
	return ad_fin(a, n);
}

/* Sums g (a broadcast of something of type t) back to t's shape. */
struct ir_value *ad_unbroadcast(struct ad *a, struct ir_value *g, const struct ir_type *t)
{
	int64_t axes[IR_MAX_RANK];
	int naxes = 0, off = g->type.rank - t->rank;
	IR_ASSERT(off >= 0);
	for (int i = 0; i < g->type.rank; i++)
		if (g->type.dims[i] != 1 && (i < off || t->dims[i - off] == 1))
			axes[naxes++] = i;
	if (naxes)
		g = ad_reduce(a, IR_OP_REDUCE_SUM, g, axes, naxes, true);
	return ad_reshape_to(a, g, t);
}

/* The axes 0 and 2..rank-1 of an [N,C,...] tensor. */
int ad_non_channel_axes(int rank, int64_t *axes)
{
	int k = 0;
	for (int i = 0; i < rank; i++)
		if (i != 1)
			axes[k++] = i;
	return k;
}

/* A [C] vector as [1,C,1,...] for a rank-r [N,C,...] tensor. */
struct ir_value *ad_channel_view(struct ad *a, struct ir_value *v, int r)
{
	int64_t dims[IR_MAX_RANK];
	for (int i = 0; i < r; i++)
		dims[i] = 1;
	dims[1] = v->type.dims[0];
	return ad_reshape(a, v, r, dims);
}

/* Scatter-adds updates u along axis of a zero tensor of type t. */
struct ir_value *ad_scatter_add(struct ad *a, const struct ir_type *t, struct ir_value *idx,
                                struct ir_value *u, int64_t axis)
{
	struct ir_value *in[3] = { ad_zeros(a, t), idx, u };
	struct ir_node *s = ad_node(a, IR_OP_SCATTER_ELEMENTS, in, 3, 1);
	ir_set_i(a->m, s, "axis", axis);
	ir_set_s(a->m, s, "reduction", "add");
	return ad_fin(a, s);
}

/* ------------------------------------------------------------------------ */
/* Accumulation                                                             */
/* ------------------------------------------------------------------------ */

/* Whether input i of n wants a gradient. */
bool ad_wants(const struct ad *a, const struct ir_node *n, int i)
{
	struct ir_value *v = n->in[i];
	return v->id < a->nfwd && a->need[v->id] && a->live[v->id] && ad_is_float(v);
}

struct ir_value *ad_guard_of(const struct ir_value *v)
{
	return v->kind == IR_VAL_NODE ? v->def->guard : NULL;
}

/* g is under a->guard even when it is a value from outside (a rule passing
 * dy on as it is): it exists only when the rule's branch ran. The phis take
 * the guard their condition needs, not a->guard: they run where the
 * branch's result may not exist. */
struct ir_value *ad_lift(struct ad *a, struct ir_value *g, const struct ir_value *to,
                         struct ir_value *other)
{
	struct ir_value *saved = a->guard, *from = ad_guard_of(g);
	if (ir_guard_implies(a->guard, from))
		from = a->guard;
	a->guard = NULL;
	while (!ir_guard_implies(to, from)) {
		struct ir_node *p;
		if (!other)
			other = ad_zeros(a, &g->type);
		p = ad_node(a, IR_OP_PHI, (struct ir_value *[]){ from, g, other }, 3, 1);
		/* under the guard's own node: one If further out */
		from = ad_guard_of(from);
		ir_set_guard(a->m, p, from);
		g = ad_fin(a, p);
	}
	a->guard = saved;
	return g;
}

/*
 * Adds g to the gradient of input i of n. A contribution from inside a
 * branch of a run-time If to a value outside it (a weight, an outer value
 * the branch reads) exists only when the branch ran: it is lifted out first,
 * phi(G, g, zeros) for each guard G between them (ad_lift), so the sum, and
 * the gradient of a weight in the end, is readable wherever the value is.
 * The sum runs under the value's own guard, which implies every lifted
 * contribution's.
 */
void ad_contrib(struct ad *a, struct ir_node *n, int i, struct ir_value *g)
{
	struct ir_value *v = n->in[i], *to = ad_guard_of(v), *saved = a->guard;
	struct ir_value **acc = &a->grad[v->id];
	IR_ASSERT(ir_type_eq(&g->type, &v->type));
	g = ad_lift(a, g, to, NULL);
	if (!*acc) {
		*acc = g;
		return;
	}
	a->guard = to;
	*acc = ad_op2(a, IR_OP_ADD, *acc, g);
	a->guard = saved;
}

/* false after reporting n when a result from `from` on has a gradient: the
 * rule covers only the results before it. */
bool ad_no_grad_through(struct ad *a, struct ir_node *n, struct ir_value *const *dy, int from)
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
	if (n->guard)
		ir_set_guard(m, p, n->guard);
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
			if (ad_is_float(n->out[i]))
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
	if (!ad_is_float(loss) || ir_type_elems(&loss->type) != 1 || loss->kind == IR_VAL_DEAD) {
		ir_error(m->ctx, "the loss '%s' must be a float value with one element, not %s",
		         loss->name, ir_type_str(&loss->type, buf, sizeof buf));
		return false;
	}
	if (seed && (!ad_is_float(seed) || ir_type_elems(&seed->type) != 1)) {
		ir_error(m->ctx,
		         "the loss scale '%s' must be a float value with one element, not %s",
		         seed->name, ir_type_str(&seed->type, buf, sizeof buf));
		return false;
	}
	for (int i = 0; i < nwrt; i++)
		if (!ad_is_float(wrt[i]) || wrt[i]->kind == IR_VAL_DEAD) {
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
			grads[i] = ad_fin(a, c);
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
	/* a recurrent node on the path becomes its steps in primitive ops,
	 * which the rules differentiate through time (rnn_expand.c) */
	for (struct ir_node *n = m->first, *next; n; n = next) {
		struct ir_value *res[3];
		bool on = false, in = false;
		int k = -1;     /* the result that is the loss */
		next = n->next; /* the expansion goes before n */
		if (n->op != IR_OP_LSTM && n->op != IR_OP_GRU && n->op != IR_OP_RNN)
			continue;
		for (int i = 0; i < n->nout; i++) {
			on = on || on_path(&a, n->out[i]);
			k = n->out[i] == loss ? i : k;
		}
		for (int i = 0; i < n->nin; i++)
			in = in || ad_wants(&a, n, i);
		if (!on || !in)
			continue;
		if (!ad_expand_recurrent(m, n, res))
			return false;
		loss = k >= 0 ? res[k] : loss;
		again = true;
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
			in = in || ad_wants(&a, n, i);
		if (on && in && !rules[n->op]) {
			ir_node_error(
			        m->ctx, n->name, ir_ops[n->op].name,
			        "no gradient for %s (it lies between the loss '%s' and a value "
			        "differentiated)%s",
			        ir_ops[n->op].name, loss->name,
			        ir_ops[n->op].onnx && !strcmp(ir_ops[n->op].onnx, "Loop")
			                ? "; a Loop whose iterations are known only at run time "
			                  "is not differentiated: a trip count bound with --const "
			                  "unrolls it, and the unrolled iterations are"
			                : "");
			ok = false;
		}
	}
	if (!ok)
		return false;
	last = m->last;
	a.at = loss->name;
	a.grad[loss->id] =
	        seed ? ad_reshape_to(&a, ad_cast(&a, seed, loss->type.dtype), &loss->type)
	             : ad_constant(&a, &loss->type, (const double[]){ 1 });
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
			in = in || ad_wants(&a, n, i);
		if (!on || !in)
			continue;
		a.at = n->name;
		a.guard = n->guard;
		ok = rules[n->op](&a, n, d) && ok;
		a.guard = NULL;
	}
	if (!ok)
		return false;
	for (int i = 0; i < nwrt; i++) {
		grads[i] = a.grad[wrt[i]->id];
		if (!grads[i]) {
			a.at = wrt[i]->name;
			grads[i] = ad_zeros(&a, &wrt[i]->type);
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

/* The running statistic old updated by batch statistic s (keepdims [1,C,...]).
 * A node in a branch of a run-time If updates it only when the branch runs:
 * else the statistic is prev, as an earlier node left it (or old). */
static struct ir_value *running_update(struct ad *a, struct ir_value *old, struct ir_value *s,
                                       double momentum, double factor, struct ir_value *prev)
{
	struct ir_value *b = ad_cast(a, ad_reshape_to(a, s, &old->type), old->type.dtype);
	struct ir_value *u =
	        ad_op2(a, IR_OP_ADD, ad_op2(a, IR_OP_MUL, old, ad_sc(a, old, 1 - momentum)),
	               ad_op2(a, IR_OP_MUL, b, ad_sc(a, old, momentum * factor)));
	u = ad_lift(a, u, NULL, prev ? prev : old);
	ir_rename_value(
	        a->m, u,
	        ir_unique_name(a->m, ir_arena_printf(&a->m->arena, "%s/updated", old->name)));
	return u;
}

/* The index of v in running[], if n's update of it is wanted; else -1. The
 * first node to read a statistic updates it, and so does every node after
 * it in a branch of a run-time If (when the branch runs). */
static int wanted(const struct ir_node *n, struct ir_value *v, struct ir_value *const *running,
                  int nrunning, struct ir_value *const *updated)
{
	for (int i = 0; i < nrunning; i++)
		if (running[i] == v && (!updated[i] || n->guard))
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
		naxes = ad_non_channel_axes(r, axes);
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
		a.guard = n->guard;
		mean = ad_reduce(&a, IR_OP_REDUCE_MEAN, x, axes, naxes, true);
		xc = ad_op2(&a, IR_OP_SUB, x, mean);
		var = ad_reduce(&a, IR_OP_REDUCE_MEAN, ad_op2(&a, IR_OP_MUL, xc, xc), axes, naxes,
		                true);
		inv = ad_op1(&a, IR_OP_RECIPROCAL,
		             ad_op1(&a, IR_OP_SQRT,
		                    ad_op2(&a, IR_OP_ADD, var,
		                           ad_sc(&a, x, (double)ir_attr_f(n, "epsilon")))));
		y = ad_op2(&a, IR_OP_MUL, ad_op2(&a, IR_OP_MUL, xc, inv),
		           ad_channel_view(&a, ad_cast(&a, n->in[1], x->type.dtype), r));
		y = ad_op2(&a, IR_OP_ADD, y,
		           ad_channel_view(&a, ad_cast(&a, n->in[2], x->type.dtype), r));
		if ((k = wanted(n, n->in[3], running, nrunning, updated)) >= 0)
			updated[k] = running_update(&a, n->in[3], mean, momentum, 1, updated[k]);
		if ((k = wanted(n, n->in[4], running, nrunning, updated)) >= 0)
			updated[k] = running_update(&a, n->in[4], var, momentum,
			                            (double)per / (double)(per - 1), updated[k]);
		a.guard = NULL;
		move_built(m, mark, n);
		ir_replace_value(m, n->out[0], y);
		ir_remove_node(m, n);
	}
	for (int i = 0; i < nrunning; i++)
		if (!updated[i]) {
			const char *name = ir_unique_name(
			        m, ir_arena_printf(&m->arena, "%s/updated", running[i]->name));
			a.at = running[i]->name;
			updated[i] = ad_fin(
			        &a, ir_add_node(m, IR_OP_COPY, name, &running[i], 1, &name, 1));
		}
	return ok;
}
