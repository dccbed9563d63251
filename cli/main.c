/*
 * main.c - the onnxc command line.
 *
 * One table of subcommands, each with its own option parser and --help.
 * Exit status: 0 success, 1 the input has errors (diagnostics printed),
 * 2 bad command-line usage. This is the only place that calls exit().
 */
#include "cli.h"
#include "codegen/cg.h"

#include <string.h>

struct cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

/* ------------------------------------------------------------------------ */

static const struct cmd cmds[] = {
	{ "compile", cmd_compile, "compile a model into a C library" },
	{ "run", cmd_run, "compile a model (cached) and run it on inputs" },
	{ "check", cmd_check, "compile and run an ONNX test case, compare its outputs" },
	{ "train", cmd_train, "compile a model into a training program" },
	{ "report", cmd_report, "explain the mixed-precision decisions for a model" },
	{ "ir", cmd_ir, "import a model and print its IR" },
	{ "export", cmd_export, "write a model back as ONNX (static shapes, after the passes)" },
	{ "ops", cmd_ops, "list the supported operators" },
};

static void discard(void *ud, const char *line) {}

static void help(FILE *f)
{
	fprintf(f, "usage: onnxc COMMAND [options]\n"
	           "\n"
	           "onnxc compiles ONNX models ahead of time.\n"
	           "\n"
	           "commands:\n");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\n"
	           "Run 'onnxc COMMAND --help' for a command's options.\n"
	           "Exit status: 0 success, 1 errors in the input, 2 bad usage.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		help(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		help(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		struct ir_ctx ctx;
		const char *inc, *lib;
		printf("onnxc %s (ONNX opsets %d to %d; %d to %d where each op's version is one "
		       "onnxc implements)\n",
		       ONNXC_VERSION, FE_FULL_OPSET, FE_MAX_OPSET, FE_MIN_OPSET, FE_FULL_OPSET - 1);
		/* what compiled models link when onnxc links them itself (run,
		 * check): the installed runtime beside an installed onnxc */
		ir_ctx_init(&ctx);
		ctx.diag = discard;
		printf("runtime: %s\n", cg_runtime_paths(&ctx, &inc, &lib) ? lib : "not found");
		return 0;
	}
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	usage_error("unknown command '%s'", argv[1]);
	return EXIT_USAGE;
}
