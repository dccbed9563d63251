/*
 * pipeline.c - every pass onnxc runs, in order, with the verifier and
 * --dump-after between them (passes.h).
 *
 * The table below is the whole pipeline. Its callers each run one stage:
 * the command line's load_model the import stage, onnxc train the train
 * stage on what the import left, and everything that consumes a model
 * (code generation, export, onnxc report, onnxc ir --precision mixed) the
 * codegen stage - once: cg_compile starts where this stage ends and runs
 * no pass again.
 *
 * Code generation's own steps (lowering to a kernel plan, memory planning,
 * emission) are not rows: they turn the finished module into a plan rather
 * than IR into IR, and they live in codegen/, which may include passes/ but
 * not the other way round - the passes library links the IR alone. So the
 * driver lives here, with every IR rewrite in the table, and codegen/
 * compile.c takes the module from it.
 */
#include "passes.h"

#include <string.h>

static const struct pass pipeline[] = {
	/* the import's normalisation */
	{ PASS_STAGE_IMPORT, "dce", pass_dce, "remove unused nodes and constants" },
	/* onnxc train: decomposed attention fused first, so that autodiff
	 * differentiates the fused op (attention_grad, FlashAttention-2's
	 * backward) instead of storing the L x L probabilities */
	{ PASS_STAGE_TRAIN, "attention", pass_attention,
	  "fuse decomposed attention before differentiating it (as the codegen stage does)" },
	{ PASS_STAGE_TRAIN, "dce", pass_dce, "remove what the fusion left unused" },
	/* onnxc train: loss, gradients and the step's interface; its own
	 * verifier call has always run in every build. Autodiff unrolls each
	 * lstm, gru and rnn on the path into primitive ops through time first
	 * (rnn_expand.c, ad_expand_recurrent): the fused op has no gradient
	 * rule, and inference keeps it */
	{ PASS_STAGE_TRAIN, "train", pass_train,
	  "turn the forward model into its training or evaluation step (train.h); recurrent "
	  "nodes on the loss's path unrolled through time (rnn_expand.c)",
	  .verify = true, .new_outputs = true },
	/* what code generation and export need */
	{ PASS_STAGE_CODEGEN, "batchnorm", pass_batchnorm,
	  "fold batch normalization into convolutions or affine ops" },
	/* before mixed precision, which prices the fused op by its traffic */
	{ PASS_STAGE_CODEGEN, "attention", pass_attention,
	  "fuse decomposed attention (MatMul, scale, mask, Softmax, MatMul) into one op" },
	{ PASS_STAGE_CODEGEN, "dce", pass_dce, "remove unused nodes and constants" },
	/* mixed precision, last: it prices the graph code generation will see.
	 * Tensor Core padding is its final step, not a row of its own: it is
	 * planned with the precision decisions (a node's half time is the
	 * better of padded and unpadded) and --dump-after=amp shows the padded
	 * IR */
	{ PASS_STAGE_CODEGEN, "amp", pass_mixed_precision,
	  "mixed precision: classify, decide, rewrite with casts, pad for Tensor Cores "
	  "(amp.h)",
	  .mixed_only = true, .verify = true },
};

#define NPASSES ((int)(sizeof pipeline / sizeof pipeline[0]))

const struct pass *pass_find(const char *name)
{
	for (int i = 0; i < NPASSES; i++)
		if (!strcmp(pipeline[i].name, name))
			return &pipeline[i];
	return NULL;
}

/* The graph outputs' names are the compiled model's API: a pass that
 * renames one is an internal error (ir_replace_value passes names on). */
static void check_output_names(const struct ir_module *m, const char *const *names,
                               const char *pass)
{
	for (int i = 0; i < m->noutputs; i++)
		if (strcmp(m->outputs[i]->name, names[i]))
			ir_panic(__FILE__, __LINE__, "pass '%s' renamed graph output '%s' to '%s'",
			         pass, names[i], m->outputs[i]->name);
}

static bool wanted(const struct pass *p, enum pass_stage stage, const struct pass_options *opt)
{
	return p->stage == stage && (!p->mixed_only || opt->mixed);
}

/* The checks after pass p: the outputs' names, the verifier, the dump. */
static bool after_pass(struct ir_module *m, const struct pass *p, const char *const *names,
                       const struct pass_options *opt)
{
#ifndef NDEBUG
	const bool verify = true;
#else
	const bool verify = opt->verify || p->verify;
#endif
	pass_guards(m); /* before the verifier: passes need not know guards */
	if (!p->new_outputs)
		check_output_names(m, names, p->name);
	if (verify && ir_verify(m)) {
		ir_error(m->ctx, "internal error: the IR is invalid after pass '%s'", p->name);
		return false;
	}
	if (opt->dump_after &&
	    (!strcmp(opt->dump_after, p->name) || !strcmp(opt->dump_after, "all"))) {
		FILE *f = opt->dump ? opt->dump : stderr;
		fprintf(f, "# after pass %s\n", p->name);
		ir_print(m, f);
	}
	return true;
}

bool pass_pipeline(struct ir_module *m, enum pass_stage stage, const struct pass_options *opt)
{
	static const struct pass_options none;
	const char **names = ir_arena_alloc(&m->arena, sizeof *names * (size_t)(m->noutputs + 1));
	if (!opt)
		opt = &none;
	for (int i = 0; i < m->noutputs; i++)
		names[i] = ir_arena_strdup(&m->arena, m->outputs[i]->name);
	for (int i = 0; i < NPASSES; i++) {
		const struct pass *p = &pipeline[i];
		int errors = m->ctx->nerrors;
		if (!wanted(p, stage, opt))
			continue;
		if (!p->run(m, opt) || m->ctx->nerrors != errors || !after_pass(m, p, names, opt))
			return false;
	}
	return true;
}
