/*
 * amp.c - the mixed-precision pass: classify, decide, rewrite, pad (amp.h),
 * and its row in the pipeline (pass_mixed_precision).
 */
#include "amp.h"
#include "passes.h"

#include <string.h>

/* Predicted times of every node, FP32 and half (the better of padded and
 * unpadded when padding is on). */
static void node_times(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	bool bf16 = o->half == IR_BF16;
	IR_FOR_EACH_NODE(m, n)
	{
		struct amp_node *a = &r->nodes[n->id];
		struct cost_pad pp;
		a->t32 = n->op == IR_OP_RESHAPE ? 0 : cost_time32(o->gpu, n);
		a->t16 = n->op == IR_OP_RESHAPE ? 0 : cost_time16(o->gpu, n, bf16);
		if (!o->no_pad && cost_pad_plan(o->gpu, n, bf16, &pp) && pp.t16 < a->t16)
			a->t16 = pp.t16;
	}
}

bool pass_amp(struct ir_module *m, const struct amp_options *opt, struct amp_result *r)
{
	static const struct pass_options quiet;
	struct amp_options o1 = *opt, *o = &o1;
	memset(r, 0, sizeof *r);
	if (!o->gpu)
		o->gpu = cost_builtin("h200");
	if (o->half == IR_DT_NONE)
		o->half = IR_F16;
	IR_ASSERT(o->gpu && (o->half == IR_F16 || o->half == IR_BF16));
	r->nids = m->next_node_id + 1;
	r->nodes = ir_arena_alloc(&m->arena, sizeof *r->nodes * (size_t)r->nids);
	amp_classify(m, o, r);
	node_times(m, o, r);
	amp_decide(m, o, r);
	amp_rewrite(m, o, r);
	if (!o->no_pad)
		r->padded_ops = amp_pad(m, o, r);
	return pass_dce(m, &quiet);
}

/* The node named name, or NULL. */
static bool has_node(const struct ir_module *m, const char *name)
{
	IR_FOR_EACH_NODE(m, n)
	if (!strcmp(n->name, name))
		return true;
	return false;
}

/* The pins name nodes of the module as the passes before left it (a
 * BatchNormalization folded into its convolution is gone); every missing
 * one is reported before the profile and the lists are read. */
bool pass_mixed_precision(struct ir_module *m, const struct pass_options *opt)
{
	struct pass_mixed *x = opt->mixed;
	struct amp_options *o = x->amp;
	struct ir_ctx *ctx = m->ctx;
	int errors = ctx->nerrors;
	for (int i = 0; i < o->nkeep; i++)
		if (!has_node(m, o->keep_fp32[i]))
			ir_error(ctx, "--keep-fp32: the model has no node named '%s'",
			         o->keep_fp32[i]);
	for (int i = 0; i < o->nforce; i++)
		if (!has_node(m, o->force_half[i]))
			ir_error(ctx, "--force-half: the model has no node named '%s'",
			         o->force_half[i]);
	if (x->gpu) {
		if (!cost_load_profile(ctx, x->gpu, x->profile))
			return false;
		o->gpu = x->profile;
	}
	if (x->lists && !amp_read_lists(ctx, x->lists, o))
		return false;
	return ctx->nerrors == errors && pass_amp(m, o, x->result);
}
