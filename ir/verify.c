/*
 * verify.c - the IR verifier.
 *
 * Checks every invariant the rest of the compiler assumes (docs/ir.md,
 * "Invariants") and reports each violation as an error naming the node. The
 * pass pipeline runs it between passes in debug builds and with --verify, so
 * a pass that breaks the graph is caught at the pass, not three passes later.
 */
#include "ir.h"

#include <string.h>

#define VERR(n, ...) ir_node_error(m->ctx, (n)->name, ir_ops[(n)->op].name, __VA_ARGS__)

static bool value_ok(const struct ir_value *v)
{
	if (v->type.dtype <= IR_DT_NONE || v->type.dtype >= IR_DTYPE_COUNT)
		return false;
	if (v->type.rank < 0 || v->type.rank > IR_MAX_RANK)
		return false;
	return ir_type_bytes(&v->type) >= 0;
}

static int check_values(struct ir_module *m)
{
	int errs = 0;
	for (int i = 0; i < m->nvalues; i++) {
		struct ir_value *v = m->values[i];
		char tb[IR_TYPE_STR_MAX];
		if (v->id != i) {
			ir_error(m->ctx, "value '%s' has id %d at index %d", v->name, v->id, i);
			errs++;
		}
		if (v->kind == IR_VAL_DEAD) {
			if (v->nuses) {
				ir_error(m->ctx, "dead value '%s' still has %d uses", v->name,
				         v->nuses);
				errs++;
			}
			continue;
		}
		if (ir_find_value(m, v->name) != v) {
			ir_error(m->ctx, "value name '%s' is not unique", v->name);
			errs++;
		}
		if (!value_ok(v)) {
			ir_error(m->ctx, "value '%s' has an invalid type %s", v->name,
			         ir_type_str(&v->type, tb, sizeof tb));
			errs++;
		}
		if (v->kind == IR_VAL_NODE && (!v->def || v->def->out[v->def_index] != v)) {
			ir_error(m->ctx, "value '%s' has no defining node", v->name);
			errs++;
		}
		if (v->kind == IR_VAL_CONST && v->data &&
		    v->checksum !=
		            ir_checksum(v->data, (size_t)ir_type_elems(&v->type) *
		                                         (size_t)ir_dtype_size(v->type.dtype))) {
			ir_error(m->ctx, "constant '%s' does not match its checksum", v->name);
			errs++;
		}
		for (int k = 0; k < v->nuses; k++) {
			struct ir_use u = v->uses[k];
			if (!u.node ||
			    (u.index == IR_USE_GUARD ? u.node->guard != v
			                             : u.index < 0 || u.index >= u.node->nin ||
			                                       u.node->in[u.index] != v)) {
				ir_error(m->ctx, "use list of '%s' is stale", v->name);
				errs++;
				break;
			}
		}
	}
	return errs;
}

static const char *guard_name(const struct ir_value *g) { return g ? g->name : "(none)"; }

/* n's guard is a defined one-element bool, in its use list; every operand
 * that is a guarded result is read under a guard implying the producer's
 * (a phi's operands 1 and 2 excepted: they are what it merges). */
static int check_guard(struct ir_module *m, struct ir_node *n, const char *defined)
{
	struct ir_value *g = n->guard;
	int errs = 0;
	if (g) {
		int k = n->guard_use_at;
		if (g->kind == IR_VAL_DEAD || g->id >= m->nvalues || m->values[g->id] != g) {
			VERR(n, "guard is not a live value of the module");
			return 1;
		}
		if (!defined[g->id]) {
			VERR(n, "guard '%s' is used before it is defined", g->name);
			errs++;
		}
		if (g->type.dtype != IR_BOOL || ir_type_elems(&g->type) != 1) {
			char tb[IR_TYPE_STR_MAX];
			VERR(n, "guard '%s' is %s, not a bool of one element", g->name,
			     ir_type_str(&g->type, tb, sizeof tb));
			errs++;
		}
		if (k < 0 || k >= g->nuses || g->uses[k].node != n ||
		    g->uses[k].index != IR_USE_GUARD) {
			VERR(n, "guard '%s' is missing from its use list", g->name);
			errs++;
		}
	}
	for (int i = 0; i < n->nin; i++) {
		struct ir_value *v = n->in[i];
		struct ir_value *h = v->kind == IR_VAL_NODE && v->def ? v->def->guard : NULL;
		if (i >= ir_guarded_operands(n) || ir_guard_implies(g, h))
			continue;
		VERR(n,
		     "input %d '%s' is a result of a node guarded by '%s', read under guard "
		     "'%s', which does not imply it",
		     i, v->name, h->name, guard_name(g));
		errs++;
	}
	return errs;
}

/*
 * Run-time loops (docs/ir.md, Loops): a loop's token is read as data only
 * by its one loop_end, whose guard is the loop's, and in its body (where
 * it is true: a nested If's guard is and-ed with it); the nodes it guards (its
 * body, nested guards included) come before that loop_end (closed: the
 * tokens whose loop_end has been passed); a carry is guarded by the token
 * itself; the loop_end lists every carry of its loop once, and what it
 * takes from the body is the body's or from outside the loop.
 */
static int check_loop(struct ir_module *m, struct ir_node *n, const char *closed)
{
	int errs = 0;
	for (const struct ir_value *g = n->guard; g;
	     g = g->kind == IR_VAL_NODE ? g->def->guard : NULL)
		if (ir_is_loop(g) && closed[g->id]) {
			VERR(n, "is in the body of loop '%s' but comes after its loop_end",
			     g->name);
			errs++;
		}
	if (n->op == IR_OP_LOOP) {
		const struct ir_value *t = n->out[0];
		int ends = 0;
		for (int i = 0; i < t->nuses; i++) {
			const struct ir_node *u = t->uses[i].node;
			if (t->uses[i].index == IR_USE_GUARD)
				continue;
			if (u->op == IR_OP_LOOP_END && t->uses[i].index == 0 && !ends++)
				continue;
			if (u->op != IR_OP_LOOP_END && ir_guard_implies(u->guard, t))
				continue; /* in the body (a nested If's guard): true there */
			VERR(n,
			     "its token '%s' is read by node '%s' (%s), which is neither in its "
			     "body nor its one loop_end",
			     t->name, u->name, ir_ops[u->op].name);
			errs++;
		}
		if (!ends) {
			VERR(n, "has no loop_end");
			errs++;
		}
	}
	if (n->op == IR_OP_CARRY && !ir_is_loop(n->guard)) {
		VERR(n, "a carried value must be guarded by its loop's token, not '%s'",
		     guard_name(n->guard));
		errs++;
	}
	if (n->op == IR_OP_LOOP_END) {
		struct ir_value *t = n->in[0];
		int k = (n->nin - 2) / 2, carries = 0;
		if (!ir_is_loop(t)) {
			VERR(n, "input 0 '%s' is not a loop's token", t->name);
			return errs + 1;
		}
		if (n->guard != t->def->guard) {
			VERR(n, "is guarded by '%s', its loop by '%s'", guard_name(n->guard),
			     guard_name(t->def->guard));
			errs++;
		}
		for (int i = 0; i < t->nuses; i++)
			carries += t->uses[i].index == IR_USE_GUARD &&
			           t->uses[i].node->op == IR_OP_CARRY;
		if (carries != k) {
			VERR(n, "lists %d carried values; its loop has %d", k, carries);
			errs++;
		}
		for (int i = 1; i < n->nin; i++) {
			const struct ir_value *v = n->in[i];
			const struct ir_value *h = v->kind == IR_VAL_NODE ? v->def->guard : NULL;
			if (i >= 2 && i < 2 + k &&
			    (v->kind != IR_VAL_NODE || v->def->op != IR_OP_CARRY || h != t)) {
				VERR(n, "input %d '%s' is not a carried value of its loop", i,
				     v->name);
				errs++;
			}
			for (int j = 2; j < i && i < 2 + k; j++)
				if (n->in[j] == v) {
					VERR(n, "lists carried value '%s' twice", v->name);
					errs++;
				}
			if (!ir_guard_implies(h, t) && !ir_guard_implies(t, h)) {
				VERR(n,
				     "input %d '%s' is guarded by '%s', neither in the loop nor "
				     "outside it",
				     i, v->name, h->name);
				errs++;
			}
		}
	}
	return errs;
}

static int check_node(struct ir_module *m, struct ir_node *n, const char *defined)
{
	const struct ir_op_info *op = &ir_ops[n->op];
	struct ir_attr_def defs[IR_MAX_ATTRS];
	int ndefs, errs = 0;
	char err[512];

	if (n->nin < op->min_in || (op->max_in >= 0 && n->nin > op->max_in)) {
		VERR(n, "has %d inputs", n->nin);
		return 1;
	}
	if (n->nout < op->min_out || (op->max_out >= 0 && n->nout > op->max_out)) {
		VERR(n, "has %d outputs", n->nout);
		return 1;
	}
	for (int i = 0; i < n->nin; i++) {
		struct ir_value *v = n->in[i];
		int k = n->use_at[i];
		if (!v || v->kind == IR_VAL_DEAD || v->id >= m->nvalues || m->values[v->id] != v) {
			VERR(n, "input %d is not a live value of the module", i);
			return errs + 1;
		}
		if (!defined[v->id]) {
			VERR(n, "input %d '%s' is used before it is defined", i, v->name);
			errs++;
		}
		/* where the node says (ir.c keeps use_at exact): constant time */
		if (k < 0 || k >= v->nuses || v->uses[k].node != n || v->uses[k].index != i) {
			VERR(n, "input %d '%s' is missing from its use list", i, v->name);
			errs++;
		}
	}
	errs += check_guard(m, n, defined);
	for (int i = 0; i < n->nout; i++) {
		struct ir_value *v = n->out[i];
		if (v->kind != IR_VAL_NODE || v->def != n || v->def_index != i) {
			VERR(n, "output %d '%s' does not point back to the node", i, v->name);
			errs++;
		}
	}
	ndefs = ir_op_schema(n->op, defs);
	if (ndefs != n->nattrs) {
		VERR(n, "has %d attributes, the op has %d", n->nattrs, ndefs);
		return errs + 1;
	}
	for (int i = 0; i < ndefs; i++) {
		if (strcmp(n->attrs[i].name, defs[i].name) || n->attrs[i].kind != defs[i].kind) {
			VERR(n, "attribute %d is '%s', expected '%s'", i, n->attrs[i].name,
			     defs[i].name);
			return errs + 1;
		}
	}
	if (errs)
		return errs;
	{
		struct ir_type small[8];
		struct ir_type *t =
		        n->nout <= 8 ? small : ir_malloc(m->ctx, sizeof *t * (size_t)n->nout);
		if (!ir_infer_types(m, n, t, err, sizeof err)) {
			VERR(n, "%s", err);
			errs++;
		} else {
			for (int i = 0; i < n->nout; i++) {
				char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
				if (!ir_type_eq(&t[i], &n->out[i]->type)) {
					VERR(n, "output '%s' is %s but inference gives %s",
					     n->out[i]->name,
					     ir_type_str(&n->out[i]->type, a, sizeof a),
					     ir_type_str(&t[i], b, sizeof b));
					errs++;
				}
			}
		}
		if (t != small)
			ir_free(m->ctx, t);
	}
	return errs;
}

/* Output v of run-time shape sh: its condition a defined bool of one
 * element, its value the larger branch's elements, flat (ir.h). */
static bool out_shape_ok(const struct ir_module *m, const struct ir_value *v,
                         const struct ir_out_shape *sh, const char *defined)
{
	const struct ir_value *c = sh->cond;
	int64_t a = ir_type_elems(&sh->then_type), b = ir_type_elems(&sh->else_type);
	if (!c || c->kind == IR_VAL_DEAD || c->id >= m->nvalues || !defined[c->id] ||
	    c->type.dtype != IR_BOOL || ir_type_elems(&c->type) != 1) {
		ir_error(m->ctx,
		         "graph output '%s': its shape's condition is not a defined bool "
		         "of one element",
		         v->name);
		return false;
	}
	if (c->kind == IR_VAL_NODE && c->def->guard) {
		ir_error(m->ctx, "graph output '%s': its shape's condition '%s' is guarded",
		         v->name, c->name);
		return false;
	}
	if (sh->then_type.dtype != v->type.dtype || sh->else_type.dtype != v->type.dtype ||
	    v->type.rank != 1 || v->type.dims[0] != (a > b ? a : b)) {
		char t[IR_TYPE_STR_MAX], e[IR_TYPE_STR_MAX], h[IR_TYPE_STR_MAX];
		ir_error(m->ctx,
		         "graph output '%s' is %s, not the elements of %s or %s flat and "
		         "padded to the larger",
		         v->name, ir_type_str(&v->type, h, sizeof h),
		         ir_type_str(&sh->then_type, t, sizeof t),
		         ir_type_str(&sh->else_type, e, sizeof e));
		return false;
	}
	return true;
}

int ir_verify(struct ir_module *m)
{
	int errs = check_values(m), count = 0, e;
	/* one allocation: a failing second one would leak the first */
	char *defined = ir_malloc(m->ctx, 2 * (size_t)(m->nvalues ? m->nvalues : 1));
	char *closed = defined + (m->nvalues ? m->nvalues : 1);
	struct ir_node *prev = NULL;

	memset(defined, 0, (size_t)m->nvalues);
	memset(closed, 0, (size_t)m->nvalues);
	for (int i = 0; i < m->nvalues; i++)
		defined[i] =
		        m->values[i]->kind == IR_VAL_INPUT || m->values[i]->kind == IR_VAL_CONST;
	for (int i = 0; i < m->ninputs; i++) {
		if (m->inputs[i]->kind != IR_VAL_INPUT) {
			ir_error(m->ctx, "graph input '%s' is not an input value",
			         m->inputs[i]->name);
			errs++;
		}
	}
	IR_FOR_EACH_NODE(m, n)
	{
		if (n->prev != prev) {
			ir_error(m->ctx, "node list is corrupt at node '%s'", n->name);
			errs++;
			break;
		}
		prev = n;
		if (++count > m->nnodes) {
			ir_error(m->ctx, "node list is longer than the node count");
			errs++;
			break;
		}
		if (!(e = check_node(m, n, defined)))
			e = check_loop(m, n, closed);
		errs += e;
		if (n->op == IR_OP_LOOP_END && ir_is_loop(n->in[0]))
			closed[n->in[0]->id] = 1;
		for (int i = 0; i < n->nout; i++)
			if (n->out[i]->id < m->nvalues)
				defined[n->out[i]->id] = 1;
	}
	if (count != m->nnodes || prev != m->last) {
		ir_error(m->ctx, "node count %d does not match the list (%d)", m->nnodes, count);
		errs++;
	}
	for (int i = 0; i < m->noutputs; i++) {
		struct ir_value *v = m->outputs[i];
		if (!v || v->kind == IR_VAL_DEAD || v->id >= m->nvalues || !defined[v->id]) {
			ir_error(m->ctx, "graph output %d is not a defined value", i);
			errs++;
		} else if (v->kind == IR_VAL_NODE && v->def->guard) {
			ir_error(m->ctx,
			         "graph output '%s' is a result of node '%s', guarded by '%s'",
			         v->name, v->def->name, v->def->guard->name);
			errs++;
		} else if (m->out_shapes[i] && !out_shape_ok(m, v, m->out_shapes[i], defined)) {
			errs++;
		}
	}
	ir_free(m->ctx, defined);
	return errs;
}
