/*
 * dce.c - dead code elimination.
 *
 * Removes nodes none of whose results are used (by a node, as a graph
 * output or as the condition that picks an output's shape) and constants nothing reads, then renumbers values densely.
 * Import leaves such leftovers behind: folded shape arithmetic, the unused
 * outputs of multi-output ops, exporter-emitted dead branches. Graph inputs
 * always stay: they are the model's interface even when unused.
 */
#include "passes.h"

/* output[v->id]: v is a graph output (marked once: a model may have
 * thousands, and asking ir_is_output per value would be quadratic) */
static bool node_dead(const struct ir_node *n, const bool *output)
{
	for (int i = 0; i < n->nout; i++)
		if (n->out[i]->nuses || output[n->out[i]->id])
			return false;
	return true;
}

bool pass_dce(struct ir_module *m, const struct pass_options *opt)
{
	bool *output = ir_arena_alloc(&m->arena, sizeof *output * (size_t)(m->nvalues + 1));
	(void)opt;
	for (int i = 0; i < m->noutputs; i++) {
		output[m->outputs[i]->id] = true;
		if (m->out_shapes[i]) /* what picks its shape: a root too */
			output[m->out_shapes[i]->cond->id] = true;
	}
	/* one backward sweep suffices: a node's users all come after it */
	for (struct ir_node *n = m->last, *prev; n; n = prev) {
		prev = n->prev;
		if (node_dead(n, output))
			ir_remove_node(m, n);
	}
	for (int i = 0; i < m->nvalues; i++) {
		struct ir_value *v = m->values[i];
		if (v->kind == IR_VAL_CONST && !v->nuses && !output[i])
			ir_kill_value(m, v);
	}
	ir_compact(m);
	return true;
}
