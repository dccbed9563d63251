/*
 * amp.c - the mixed-precision pass: classify, decide, rewrite, pad (amp.h),
 * and its row in the pipeline (pass_mixed_precision).
 */
#include "amp.h"
#include "passes.h"

#include <stdint.h>
#include <string.h>

/* Predicted times of every node, FP32 and in its half type (the better of
 * padded and unpadded when padding is on). */
static void node_times(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	IR_FOR_EACH_NODE(m, n)
	{
		struct amp_node *a = &r->nodes[n->id];
		bool bf16 = a->half == IR_BF16;
		struct cost_pad pp;
		a->t32 = n->op == IR_OP_RESHAPE ? 0 : cost_time32(o->gpu, n);
		a->t16 = n->op == IR_OP_RESHAPE ? 0 : cost_time16(o->gpu, n, bf16);
		if (!o->no_pad && cost_pad_plan(o->gpu, n, bf16, &pp) && pp.t16 < a->t16)
			a->t16 = pp.t16;
	}
}

void amp_assign(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	amp_classify(m, o, r);
	IR_FOR_EACH_NODE(m, n)
	{
		struct amp_node *a = &r->nodes[n->id];
		if (a->pin == IR_F16 || a->pin == IR_BF16)
			a->half = a->pin;
	}
	node_times(m, o, r);
	amp_decide(m, o, r);
	/* a node the range rule moved to BF16 says so, whatever the policy
	 * chose */
	IR_FOR_EACH_NODE(m, n)
	{
		struct amp_node *a = &r->nodes[n->id];
		char policy[sizeof a->reason];
		if (!a->paintable || a->half == o->half || a->pin != IR_DT_NONE)
			continue;
		snprintf(policy, sizeof policy, "%s", a->reason);
		snprintf(a->reason, sizeof a->reason, "%s (FP16 %.80s); %.60s",
		         a->prec == AMP_HALF ? "BF16" : "FP32", a->why, policy);
		a->rule = AMP_BY_RANGE;
	}
}

/* The plan's pins on the nodes they name (pass_mixed_precision checked the
 * names). Node names need not be unique: the plan lists a node per line in
 * graph order, so its j-th line for a name pins the j-th node of that name.
 * false after reporting lines left over (more lines for a name than the
 * model has nodes of it). */
static bool plan_pins(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	struct ir_map first; /* name -> 1 + its first pin not used yet */
	int *next = ir_arena_alloc(&m->arena, sizeof *next * (size_t)(o->nplan + 1));
	bool ok = true;
	ir_map_init(&first, &m->arena);
	for (int i = o->nplan - 1; i >= 0; i--) {
		void **slot = ir_map_get(&first, o->plan[i].node);
		next[i] = slot ? (int)(intptr_t)*slot : 0;
		ir_map_put(&first, o->plan[i].node, (void *)(intptr_t)(i + 1));
	}
	IR_FOR_EACH_NODE(m, n)
	{
		void **slot = ir_map_get(&first, n->name);
		int i = slot ? (int)(intptr_t)*slot - 1 : -1;
		const struct amp_pin *p = i >= 0 ? &o->plan[i] : NULL;
		struct amp_node *a = &r->nodes[n->id];
		if (!p)
			continue;
		*slot = (void *)(intptr_t)next[i];
		a->pin = p->dtype;
		a->pin_rule = AMP_BY_PLAN;
		snprintf(a->why, sizeof a->why, "the precision plan%s%s",
		         p->why && *p->why ? ": " : "", p->why ? p->why : "");
	}
	for (int i = 0; i < o->nplan; i++) {
		void **slot = ir_map_get(&first, o->plan[i].node);
		if (slot && *slot && (int)(intptr_t)*slot - 1 == i) {
			ir_error(m->ctx,
			         "--precision-plan: '%s' is listed more times than the model has "
			         "nodes of that name",
			         o->plan[i].node);
			*slot = NULL;
			ok = false;
		}
	}
	return ok;
}

bool pass_amp(struct ir_module *m, const struct amp_options *opt, struct amp_result *r)
{
	static const struct pass_options quiet;
	struct amp_options o1 = *opt, *o = &o1;
	struct amp_calib_run *run = NULL;
	memset(r, 0, sizeof *r);
	if (!o->gpu)
		o->gpu = cost_builtin("h200");
	if (o->half == IR_DT_NONE)
		o->half = IR_F16;
	IR_ASSERT(o->gpu && (o->half == IR_F16 || o->half == IR_BF16));
	r->nids = m->next_node_id + 1;
	r->nodes = ir_arena_alloc(&m->arena, sizeof *r->nodes * (size_t)r->nids);
	for (int i = 0; i < r->nids; i++) {
		r->nodes[i].half = o->half;
		r->nodes[i].absmax = -1;
	}
	if (!plan_pins(m, o, r))
		return false;
	if (o->calib) {
		if (!(run = amp_calibrate(m, o, r)))
			return false;
		amp_classify(m, o, r); /* the rule passes over what stays FP32 anyway */
		amp_range_rule(m, o, r);
	}
	amp_assign(m, o, r);
	IR_FOR_EACH_NODE(m, n)
	{
		const struct amp_node *a = &r->nodes[n->id];
		if ((a->pin == IR_F16 || a->pin == IR_BF16) && a->prec != AMP_HALF)
			ir_warning(m->ctx, "--precision-plan: node '%s' stays FP32 (%s)", n->name,
			           a->reason);
	}
	if (run)
		amp_budget(m, o, r, run);
	amp_calib_free(run);
	amp_rewrite(m, o, r);
	if (!o->no_pad)
		r->padded_ops = amp_pad(m, o, r);
	return pass_dce(m, &quiet);
}

/* The names of m's nodes, for the pins' checks (node names need not be
 * unique: a set). */
static struct ir_map node_names(struct ir_module *m)
{
	struct ir_map names;
	ir_map_init(&names, &m->arena);
	IR_FOR_EACH_NODE(m, n)
	ir_map_put(&names, n->name, n);
	return names;
}

/* The pins name nodes of the module as the passes before left it (a
 * BatchNormalization folded into its convolution is gone); every missing
 * one is reported before the profile and the lists are read. */
bool pass_mixed_precision(struct ir_module *m, const struct pass_options *opt)
{
	struct pass_mixed *x = opt->mixed;
	struct amp_options *o = x->amp;
	struct ir_ctx *ctx = m->ctx;
	struct ir_map names = node_names(m);
	int errors = ctx->nerrors;
	for (int i = 0; i < o->nkeep; i++)
		if (!ir_map_get(&names, o->keep_fp32[i]))
			ir_error(ctx, "--keep-fp32: the model has no node named '%s'",
			         o->keep_fp32[i]);
	for (int i = 0; i < o->nforce; i++)
		if (!ir_map_get(&names, o->force_half[i]))
			ir_error(ctx, "--force-half: the model has no node named '%s'",
			         o->force_half[i]);
	for (int i = 0; i < o->nplan; i++)
		if (!ir_map_get(&names, o->plan[i].node))
			ir_error(ctx,
			         "--precision-plan: the model has no node named '%s' (a plan "
			         "written for another model, or other options?)",
			         o->plan[i].node);
	if (x->gpu) {
		if (!cost_load_profile(ctx, x->gpu, x->profile))
			return false;
		o->gpu = x->profile;
	}
	if (x->lists && !amp_read_lists(ctx, x->lists, o))
		return false;
	if (ctx->nerrors != errors || !pass_amp(m, o, x->result))
		return false;
	return !x->plan_out || amp_write_plan(ctx, m, x->result, x->plan_out);
}
