/*
 * cmd_export.c - `onnxc export`: a model, after the passes code generation
 * runs, written back as a standard ONNX model with static shapes (export.c).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char export_help[] =
        "usage: onnxc export MODEL.onnx|FILE.oir -o OUT.onnx [options]\n"
        "\n"
        "Imports a model, runs the passes code generation runs (batch normalization\n"
        "folded, dead code removed; with --precision mixed, the mixed-precision pass)\n"
        "and writes the IR back as a standard ONNX model: every shape static, every\n"
        "constant an initializer, shape operands as int64 initializers, attributes\n"
        "as the target opset defines them.\n"
        "\n"
        "options:\n"
        "  -o FILE              the ONNX file to write (required)\n"
        "  --opset N            the ai.onnx opset to target, 13 to 25 (default 17)\n"
        "  --shape INPUT=DIMS   bind the shape of a graph input, e.g. input=8x3x224x224\n"
        "  --dim NAME=N         bind a symbolic dimension, e.g. batch=8\n"
        "  --const INPUT=FILE   make a graph input a constant (.npy or .pb)\n"
        "  --verify             run the IR verifier after every pass\n"
        "  --dump-after=PASS    print the IR after PASS (or 'all') to standard error\n";

/* Parses --opset's value; false (after a usage message) if it is no opset
 * the writer targets. */
static bool parse_opset(const char *v, int64_t *opset)
{
	char *e;
	long long x = strtoll(v, &e, 10);
	if (e == v || *e || x < FE_EXPORT_MIN_OPSET || x > FE_EXPORT_MAX_OPSET) {
		usage_error("export: --opset takes %d to %d, not '%s'", FE_EXPORT_MIN_OPSET,
		            FE_EXPORT_MAX_OPSET, v);
		return false;
	}
	*opset = x;
	return true;
}

/* What export's own options set. */
struct export_args {
	const char *out;
	struct fe_export_options *eo;
};

static int export_opt(int argc, char **argv, int *i, void *ud)
{
	struct export_args *a = ud;
	bool bad = false;
	const char *v;
	if ((v = opt_value(argc, argv, i, "-o", true, &bad)))
		a->out = v;
	else if ((v = opt_value(argc, argv, i, "--opset", true, &bad)))
		return parse_opset(v, &a->eo->opset) ? 1 : -1;
	else
		return bad ? -1 : 0;
	return 1;
}

int cmd_export(int argc, char **argv)
{
	struct model_opts mo = { 0 };
	struct fe_export_options eo = { .opset = FE_EXPORT_DEFAULT_OPSET };
	struct export_args ea = { .eo = &eo };
	struct ir_ctx ctx;
	struct ir_module *m;
	const char *input = NULL, *out;
	struct cmd_args args = { "export", export_help, &mo, export_opt, &ea, &input };
	int status = 0, r = parse_args(argc, argv, &args);

	if (r == 2) {
		free_model_opts(&mo);
		return 0;
	}
	if (r < 0)
		goto usage;
	out = ea.out;
	if (!input || !out) {
		usage_error(!input ? "export: no model given" : "export: no output file (-o)");
		goto usage;
	}
	ir_ctx_init(&ctx);
	m = load_model(&ctx, input, &mo);
	if (!m) {
		free_model_opts(&mo);
		return ctx.nerrors || !is_ir_text(input) ? EXIT_INPUT : EXIT_USAGE;
	}
	/* decomposed attention stays as the model has it: fused, it would be
	 * written back as those ops below opset 23 anyway, and onnxc fuses it
	 * again when it compiles the export */
	mo.passes.no_fuse_attention = true;
	if (!prepare_model(m, &mo) || !fe_export_onnx(m, out, &eo))
		status = EXIT_INPUT;
	ir_module_free(m);
	free_model_opts(&mo);
	return status;
usage:
	free_model_opts(&mo);
	return EXIT_USAGE;
}
