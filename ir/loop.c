/*
 * loop.c - a run-time loop taken apart (docs/ir.md, Loops): its first
 * iteration peeled off in front of it, or the loop replaced by what it
 * carries when it runs no more. The reference evaluator (ir_fold_all) runs
 * a loop whose condition it knows this way, one peeled iteration at a
 * time, until the condition is false. And a loop's body brought together,
 * for the code generator and the writer.
 */
#include "ir.h"

#include <string.h>

/* Body value v as the peeled iteration has it: map[] for what the body
 * computes and the carried values, the entry condition for the token
 * (it is true in an iteration). */
static struct ir_value *mapped(struct ir_value *const *map, int nmap, struct ir_node *loop,
                               struct ir_value *v)
{
	if (v == loop->out[0])
		return loop->in[0];
	return v->id < nmap && map[v->id] ? map[v->id] : v;
}

int ir_loop_peel(struct ir_module *m, struct ir_node *loop)
{
	struct ir_value *t = loop->out[0];
	struct ir_node *end = ir_loop_end(t);
	int k = (end->nin - 2) / 2, nmap = m->nvalues, cloned = 0;
	struct ir_value **map = ir_malloc(m->ctx, sizeof *map * (size_t)(nmap + 1));
	memset(map, 0, sizeof *map * (size_t)(nmap + 1));
	for (int j = 0; j < k; j++)
		map[end->in[2 + j]->id] = end->in[2 + j]->def->in[0];
	for (struct ir_node *x = loop->next; x != end; x = x->next) {
		struct ir_value *in[64], **ins = in;
		const char *names[16], **outs = names;
		struct ir_node *c;
		if (!ir_guard_implies(x->guard, t) || (x->op == IR_OP_CARRY && x->guard == t))
			continue;
		if (x->nin > 64)
			ins = ir_malloc(m->ctx, sizeof *ins * (size_t)x->nin);
		if (x->nout > 16)
			outs = ir_malloc(m->ctx, sizeof *outs * (size_t)x->nout);
		for (int i = 0; i < x->nin; i++)
			ins[i] = mapped(map, nmap, loop, x->in[i]);
		for (int i = 0; i < x->nout; i++)
			outs[i] = ir_unique_name(m, x->out[i]->name);
		c = ir_add_node(m, x->op, x->name, ins, x->nin, outs, x->nout);
		if (x->nattrs)
			memcpy(c->attrs, x->attrs, sizeof *c->attrs * (size_t)x->nattrs);
		for (int i = 0; i < x->nout; i++) {
			c->out[i]->type = x->out[i]->type;
			map[x->out[i]->id] = c->out[i];
		}
		/* the token guards nothing outside its loop: its own guard instead */
		if (x->guard == t ? loop->guard : x->guard)
			ir_set_guard(m, c,
			             x->guard == t ? loop->guard
			                           : mapped(map, nmap, loop, x->guard));
		ir_move_before(m, c, loop);
		if (ins != in)
			ir_free(m->ctx, ins);
		if (outs != names)
			ir_free(m->ctx, outs);
		cloned++;
	}
	/* the loop now starts at its second iteration */
	ir_set_input(m, loop, 0, mapped(map, nmap, loop, end->in[1]));
	for (int j = 0; j < k; j++)
		ir_set_input(m, end->in[2 + j]->def, 0,
		             mapped(map, nmap, loop, end->in[2 + k + j]));
	ir_free(m->ctx, map);
	return cloned;
}

void ir_loop_exit(struct ir_module *m, struct ir_node *loop)
{
	struct ir_value *t = loop->out[0];
	struct ir_node *end = ir_loop_end(t), *prev;
	int k = (end->nin - 2) / 2;
	for (int j = 0; j < k; j++)
		ir_replace_uses(m, end->out[j], end->in[2 + j]->def->in[0]);
	prev = end->prev;
	ir_remove_node(m, end);
	/* the body, last first: each node's readers are gone before it */
	for (struct ir_node *x = prev; x != loop; x = prev) {
		prev = x->prev;
		if (ir_guard_implies(x->guard, t))
			ir_remove_node(m, x);
	}
	ir_remove_node(m, loop);
}

void ir_loops_together(struct ir_module *m)
{
	IR_FOR_EACH_NODE(m, n)
	{
		struct ir_node *end, *next;
		if (n->op != IR_OP_LOOP)
			continue;
		end = ir_loop_end(n->out[0]);
		for (struct ir_node *x = n->next; x != end; x = next) {
			next = x->next;
			if (!ir_guard_implies(x->guard, n->out[0]))
				ir_move_before(m, x, n);
		}
	}
}

/* Is v a constant holding one integer? Into *x. */
static bool const_int(const struct ir_value *v, int64_t *x)
{
	if (v->kind != IR_VAL_CONST || !v->data || ir_type_elems(&v->type) != 1 ||
	    ir_dtypes[v->type.dtype].is_float)
		return false;
	*x = ir_load_i64(v->type.dtype, v->data, 0);
	return true;
}

int64_t ir_loop_bound(const struct ir_value *cond, struct ir_value *const *carried,
                      struct ir_value *const *next, int n)
{
	const struct ir_value *c = cond, *inc, *x;
	int64_t t, x0, one;
	if (c->kind == IR_VAL_NODE && c->def->op == IR_OP_AND)
		for (int a = 0; a < 2; a++)
			if (c->def->in[a]->kind == IR_VAL_NODE &&
			    c->def->in[a]->def->op == IR_OP_LESS)
				c = c->def->in[a];
	if (c->kind != IR_VAL_NODE || c->def->op != IR_OP_LESS || !const_int(c->def->in[1], &t))
		return -1;
	inc = c->def->in[0];
	if (inc->kind != IR_VAL_NODE || inc->def->op != IR_OP_ADD ||
	    !const_int(inc->def->in[1], &one) || one != 1)
		return -1;
	x = inc->def->in[0];
	for (int j = 0; j < n; j++)
		if (carried[j] == x && next[j] == inc && x->kind == IR_VAL_NODE &&
		    x->def->op == IR_OP_CARRY && const_int(x->def->in[0], &x0))
			return t > x0 ? t - x0 : 0;
	return -1;
}
