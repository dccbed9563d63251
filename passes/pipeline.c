/*
 * pipeline.c - runs passes in order with the verifier between them.
 */
#include "passes.h"

#include <string.h>

static const struct pass all_passes[] = {
	{ "dce", pass_dce, "remove unused nodes and constants" },
	{ "batchnorm", pass_batchnorm, "fold batch normalization into convolutions or affine ops" },
};

const struct pass pass_import_pipeline[] = {
	{ "dce", pass_dce, "remove unused nodes and constants" },
};
const int pass_import_pipeline_len = sizeof pass_import_pipeline / sizeof pass_import_pipeline[0];

const struct pass pass_codegen_pipeline[] = {
	{ "batchnorm", pass_batchnorm, "fold batch normalization into convolutions or affine ops" },
	{ "dce", pass_dce, "remove unused nodes and constants" },
};
const int pass_codegen_pipeline_len =
        sizeof pass_codegen_pipeline / sizeof pass_codegen_pipeline[0];

const struct pass *pass_find(const char *name)
{
	for (size_t i = 0; i < sizeof all_passes / sizeof all_passes[0]; i++)
		if (!strcmp(all_passes[i].name, name))
			return &all_passes[i];
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

bool pass_run(struct ir_module *m, const struct pass *passes, int n, const struct pass_options *opt)
{
	static const struct pass_options none;
	const char **names = ir_arena_alloc(&m->arena, sizeof *names * (size_t)(m->noutputs + 1));
	if (!opt)
		opt = &none;
	for (int i = 0; i < m->noutputs; i++)
		names[i] = ir_arena_strdup(&m->arena, m->outputs[i]->name);
	for (int i = 0; i < n; i++) {
		int errors = m->ctx->nerrors;
		if (!passes[i].run(m, opt) || m->ctx->nerrors != errors)
			return false;
		check_output_names(m, names, passes[i].name);
#ifndef NDEBUG
		const bool verify = true;
#else
		const bool verify = opt->verify;
#endif
		if (verify && ir_verify(m)) {
			ir_error(m->ctx, "internal error: the IR is invalid after pass '%s'",
			         passes[i].name);
			return false;
		}
		if (opt->dump_after &&
		    (!strcmp(opt->dump_after, passes[i].name) || !strcmp(opt->dump_after, "all"))) {
			FILE *f = opt->dump ? opt->dump : stderr;
			fprintf(f, "# after pass %s\n", passes[i].name);
			ir_print(m, f);
		}
	}
	return true;
}
