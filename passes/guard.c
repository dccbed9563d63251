/*
 * guard.c - keeps the guards of a run-time If right after every pass.
 *
 * A node of a branch of an If whose condition is known only at run time is
 * guarded (docs/ir.md, Guards): it runs only when its guard holds, and its
 * results may be read only under a guard implying it, or merged by a phi.
 * A pass that inserts nodes (a cast, a pad, the nodes a fusion emits)
 * should not have to know that: after every pass, pass_pipeline calls
 * pass_guards, which gives each node reading a guarded result the strongest
 * guard among its operands' producers (nested Ifs: the guard that implies
 * the others), in list order so that the guard travels along a chain of new
 * nodes. A phi's merged operands (1 and 2) and what a loop_end takes from
 * its loop's body (operands 1 on) do not count. Two operands of
 * exclusive guards (a pass combining both branches outside a phi) are an
 * internal error.
 */
#include "passes.h"

void pass_guards(struct ir_module *m)
{
	IR_FOR_EACH_NODE(m, n)
	{
		struct ir_value *g = ir_operand_guard(n->in, ir_guarded_operands(n));
		if (ir_guard_implies(n->guard, g))
			continue;
		if (!ir_guard_implies(g, n->guard))
			ir_panic(__FILE__, __LINE__,
			         "node '%s' (%s) under guard '%s' reads a result under the "
			         "unrelated "
			         "guard '%s'",
			         n->name, ir_ops[n->op].name, n->guard->name, g->name);
		ir_set_guard(m, n, g);
	}
}
