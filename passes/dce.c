/*
 * dce.c - dead code elimination.
 *
 * Removes nodes none of whose results are used (by a node or as a graph
 * output) and constants nothing reads, then renumbers values densely.
 * Import leaves such leftovers behind: folded shape arithmetic, the unused
 * outputs of multi-output ops, exporter-emitted dead branches. Graph inputs
 * always stay: they are the model's interface even when unused.
 */
#include "passes.h"

static bool node_dead(const struct ir_module *m, const struct ir_node *n)
{
	for (int i = 0; i < n->nout; i++)
		if (n->out[i]->nuses || ir_is_output(m, n->out[i]))
			return false;
	return true;
}

bool pass_dce(struct ir_module *m, const struct pass_options *opt)
{
	(void)opt;
	/* one backward sweep suffices: a node's users all come after it */
	for (struct ir_node *n = m->last, *prev; n; n = prev) {
		prev = n->prev;
		if (node_dead(m, n))
			ir_remove_node(m, n);
	}
	for (int i = 0; i < m->nvalues; i++) {
		struct ir_value *v = m->values[i];
		if (v->kind == IR_VAL_CONST && !v->nuses && !ir_is_output(m, v))
			ir_kill_value(m, v);
	}
	ir_compact(m);
	return true;
}
