/*
 * main.c - the onnxc command line.
 *
 * One table of subcommands, each with its own option parser and --help.
 * Exit status: 0 success, 1 the input has errors (diagnostics printed),
 * 2 bad command-line usage. This is the only place that calls exit().
 */
#include "fe.h"
#include "passes/passes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

struct cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "onnxc: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see onnxc --help)\n");
}

/*
 * Matches argv[*i] against --name / --name=value; takes the value from the
 * next argument when needed. Returns the value, "" for flags, or NULL.
 */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool takes_value,
                             bool *bad)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == 0) {
		if (!takes_value)
			return "";
		if (*i + 1 >= argc) {
			usage_error("%s needs a value", name);
			*bad = true;
			return NULL;
		}
		return argv[++*i];
	}
	if (a[n] == '=' && takes_value)
		return a + n + 1;
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Model loading shared by the subcommands                                  */
/* ------------------------------------------------------------------------ */

struct model_opts {
	struct fe_options fe;
	struct fe_dim_binding dims[64];
	struct fe_shape_binding shapes[64];
};

/* Parses --shape / --dim; returns 1 if argv[*i] was one, 0 if not, -1 on error. */
static int parse_model_opt(int argc, char **argv, int *i, struct model_opts *mo)
{
	bool bad = false;
	const char *v;
	if ((v = opt_value(argc, argv, i, "--shape", true, &bad))) {
		const char *eq = strrchr(v, '=');
		struct fe_shape_binding *sb = &mo->shapes[mo->fe.nshapes];
		if (mo->fe.nshapes == 64 || !eq || eq == v) {
			usage_error("--shape takes INPUT=DIMS, e.g. --shape input=8x3x224x224");
			return -1;
		}
		if (!fe_parse_dims(eq + 1, &sb->rank, sb->dims)) {
			usage_error("--shape %s: '%s' is not a list of dimensions like 8x3x224x224",
			            v, eq + 1);
			return -1;
		}
		sb->input = strndup(v, (size_t)(eq - v));
		mo->fe.shapes = mo->shapes;
		mo->fe.nshapes++;
		return 1;
	}
	if ((v = opt_value(argc, argv, i, "--dim", true, &bad))) {
		const char *eq = strrchr(v, '=');
		char *e;
		long long x;
		struct fe_dim_binding *db = &mo->dims[mo->fe.ndims];
		if (mo->fe.ndims == 64 || !eq || eq == v) {
			usage_error("--dim takes NAME=N, e.g. --dim batch=8");
			return -1;
		}
		x = strtoll(eq + 1, &e, 10);
		if (*e || e == eq + 1 || x < 0) {
			usage_error("--dim %s: '%s' is not a non-negative integer", v, eq + 1);
			return -1;
		}
		db->name = strndup(v, (size_t)(eq - v));
		db->value = x;
		mo->fe.dims = mo->dims;
		mo->fe.ndims++;
		return 1;
	}
	return bad ? -1 : 0;
}

static void free_model_opts(struct model_opts *mo)
{
	for (int i = 0; i < mo->fe.nshapes; i++)
		free((char *)mo->shapes[i].input);
	for (int i = 0; i < mo->fe.ndims; i++)
		free((char *)mo->dims[i].name);
}

static bool is_ir_text(const char *path)
{
	char head[8];
	const char *err;
	size_t n = strlen(path);
	int fd;
	bool text;
	if (n > 4 && !strcmp(path + n - 4, ".oir"))
		return true;
	if ((fd = ir_open_regular(path, &err, NULL)) < 0)
		return false;
	text = ir_read_at(fd, head, 8, 0) && !memcmp(head, "onnxc-ir", 8);
	close(fd);
	return text;
}

static struct ir_module *load_ir_text(struct ir_ctx *ctx, const char *path)
{
	const char *err;
	size_t len;
	char *buf;
	struct ir_module *m;
	ctx->file = path;
	if (!(buf = ir_read_file(ctx, path, &len, &err))) {
		ir_error(ctx, "cannot read the file: %s", err);
		return NULL;
	}
	m = ir_parse(ctx, buf, len);
	ir_free(ctx, buf);
	return m;
}

/* Imports an ONNX model or parses IR text, then runs the import pipeline. */
static struct ir_module *load_model(struct ir_ctx *ctx, const char *path, struct model_opts *mo,
                                    const struct pass_options *po)
{
	struct ir_module *m;
	if (is_ir_text(path)) {
		if (mo->fe.ndims || mo->fe.nshapes) {
			usage_error("--shape and --dim apply to ONNX models, not IR text");
			return NULL;
		}
		return load_ir_text(ctx, path);
	}
	m = fe_import(ctx, path, &mo->fe);
	if (!m)
		return NULL;
	ctx->file = path;
	if (!pass_run(m, pass_import_pipeline, pass_import_pipeline_len, po)) {
		ir_module_free(m);
		return NULL;
	}
	return m;
}

/* ------------------------------------------------------------------------ */
/* onnxc ir                                                                 */
/* ------------------------------------------------------------------------ */

static const char ir_help[] =
        "usage: onnxc ir MODEL.onnx|FILE.oir [options]\n"
        "\n"
        "Imports an ONNX model (or parses IR text) and prints the IR (docs/ir.md).\n"
        "\n"
        "options:\n"
        "  --shape INPUT=DIMS   bind the shape of a graph input, e.g. input=8x3x224x224\n"
        "  --dim NAME=N         bind a symbolic dimension (dim_param), e.g. batch=8\n"
        "  -o FILE              write the IR to FILE instead of standard output\n"
        "  --summary            print a summary instead of the IR\n"
        "  --verify             run the IR verifier after every pass\n"
        "  --dump-after=PASS    print the IR after PASS (or 'all') to standard error\n";

static void print_summary(const struct ir_module *m, FILE *f)
{
	int counts[IR_OP_COUNT] = { 0 }, nconst = 0;
	int64_t weight_bytes = 0;
	char tb[IR_TYPE_STR_MAX];
	fprintf(f, "model: %s\n", m->name);
	for (int i = 0; i < m->ninputs; i++)
		fprintf(f, "input  %s : %s\n", m->inputs[i]->name,
		        ir_type_str(&m->inputs[i]->type, tb, sizeof tb));
	for (int i = 0; i < m->noutputs; i++)
		fprintf(f, "output %s : %s\n", m->outputs[i]->name,
		        ir_type_str(&m->outputs[i]->type, tb, sizeof tb));
	for (int i = 0; i < m->nvalues; i++)
		if (m->values[i]->kind == IR_VAL_CONST) {
			nconst++;
			weight_bytes += ir_type_elems(&m->values[i]->type) *
			                ir_dtype_size(m->values[i]->type.dtype);
		}
	fprintf(f, "nodes: %d, constants: %d (%.2f MB)\n", m->nnodes, nconst, weight_bytes / 1e6);
	IR_FOR_EACH_NODE(m, n)
	counts[n->op]++;
	fprintf(f, "ops:");
	for (int i = 0; i < IR_OP_COUNT; i++)
		if (counts[i])
			fprintf(f, " %s=%d", ir_ops[i].name, counts[i]);
	fprintf(f, "\n");
}

static int cmd_ir(int argc, char **argv)
{
	struct model_opts mo = { 0 };
	struct pass_options po = { 0 };
	struct ir_ctx ctx;
	const char *input = NULL, *out = NULL;
	bool summary = false, bad = false;
	struct ir_module *m;
	int status = 0;

	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(ir_help, stdout);
			free_model_opts(&mo);
			return 0;
		}
		if ((r = parse_model_opt(argc, argv, &i, &mo)) != 0) {
			if (r < 0)
				goto usage;
			continue;
		}
		if ((v = opt_value(argc, argv, &i, "-o", true, &bad))) {
			out = v;
		} else if (opt_value(argc, argv, &i, "--summary", false, &bad)) {
			summary = true;
		} else if (opt_value(argc, argv, &i, "--verify", false, &bad)) {
			po.verify = true;
		} else if ((v = opt_value(argc, argv, &i, "--dump-after", true, &bad))) {
			if (strcmp(v, "all") && !pass_find(v)) {
				usage_error("--dump-after: no pass named '%s'", v);
				goto usage;
			}
			po.dump_after = v;
		} else if (bad) {
			goto usage;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			usage_error("ir: unknown option '%s'", argv[i]);
			goto usage;
		} else if (!input) {
			input = argv[i];
		} else {
			usage_error("ir: more than one input file");
			goto usage;
		}
	}
	if (!input) {
		usage_error("ir: no model given");
		goto usage;
	}
	ir_ctx_init(&ctx);
	m = load_model(&ctx, input, &mo, &po);
	if (!m) {
		free_model_opts(&mo);
		return ctx.nerrors || !is_ir_text(input) ? EXIT_INPUT : EXIT_USAGE;
	}
	{
		FILE *f = out ? fopen(out, "w") : stdout;
		if (!f) {
			fprintf(stderr, "onnxc: cannot write %s: %s\n", out, strerror(errno));
			status = EXIT_INPUT;
		} else {
			if (summary)
				print_summary(m, f);
			else
				ir_print(m, f);
			if (ferror(f) || (out && fclose(f) != 0)) {
				fprintf(stderr, "onnxc: writing %s failed\n",
				        out ? out : "standard output");
				status = EXIT_INPUT;
			}
		}
	}
	ir_module_free(m);
	free_model_opts(&mo);
	return status;
usage:
	free_model_opts(&mo);
	return EXIT_USAGE;
}

/* ------------------------------------------------------------------------ */
/* onnxc ops                                                                */
/* ------------------------------------------------------------------------ */

static const char *const amp_names[] = { "allow", "infer", "deny", "clear", "special" };
static const char *const kind_names[] = { "eltwise", "reduce", "move", "compute" };

static int cmp_fe_op(const void *a, const void *b)
{
	return strcmp((*(const struct fe_op *const *)a)->name,
	              (*(const struct fe_op *const *)b)->name);
}

/* docs/ops.md is this output (a test keeps them equal). */
static void print_ops_markdown(void)
{
	static const struct fe_op *const tables[] = { fe_ops_elementwise, fe_ops_nn, fe_ops_shape };
	printf("# Operators\n\n"
	       "Generated by `onnxc ops --markdown`; a test checks this file matches the build.\n\n"
	       "## ONNX operators onnxc imports\n\n"
	       "Opsets %d to %d of the default domain. *Since* is the first opset in which\n"
	       "onnxc accepts the operator; *lowers to* is the IR op it becomes (shape\n"
	       "queries and generators are evaluated at import and become constants).\n\n"
	       "| ONNX op | since | lowers to |\n|---|---|---|\n",
	       FE_MIN_OPSET, FE_MAX_OPSET);
	const struct fe_op *list[256];
	size_t n = 0;
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
		for (const struct fe_op *o = tables[t]; o->name && n < 256; o++)
			list[n++] = o;
	qsort(list, n, sizeof *list, cmp_fe_op);
	for (size_t i = 0; i < n; i++)
		printf("| %s | %d | %s |\n", list[i]->name,
		       list[i]->since > FE_MIN_OPSET ? list[i]->since : FE_MIN_OPSET,
		       list[i]->ir == IR_OP_COUNT ? "(constant)" : ir_ops[list[i]->ir].name);
	printf("\n## IR ops\n\n"
	       "Attributes are all required in the IR (the importer fills ONNX defaults);\n"
	       "letters give their kinds: i int, f float, s string, I ints, F floats,\n"
	       "t dtype. *AMP* is the mixed-precision class (docs/precision.md).\n\n"
	       "| op | ONNX | inputs | outputs | kind | AMP | attributes |\n"
	       "|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < IR_OP_COUNT; i++) {
		const struct ir_op_info *o = &ir_ops[i];
		char in[32], out[32];
		snprintf(in, sizeof in,
		         o->max_in < 0            ? "%d+"
		         : o->min_in == o->max_in ? "%d"
		                                  : "%d-%d",
		         o->min_in, o->max_in);
		snprintf(out, sizeof out,
		         o->max_out < 0             ? "%d+"
		         : o->min_out == o->max_out ? "%d"
		                                    : "%d-%d",
		         o->min_out, o->max_out);
		printf("| %s | %s | %s | %s | %s | %s | %s |\n", o->name, o->onnx, in, out,
		       kind_names[o->kind], amp_names[o->amp], o->schema[0] ? o->schema : "");
	}
}

static int cmd_ops(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: onnxc ops [--markdown]\n\nLists the IR ops and the ONNX ops onnxc "
		       "imports.\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--markdown")) {
		print_ops_markdown();
		return 0;
	}
	if (argc > 1) {
		usage_error("ops: unknown option '%s'", argv[1]);
		return EXIT_USAGE;
	}
	for (int i = 0; i < IR_OP_COUNT; i++)
		printf("%-20s %-22s %-8s %-8s %s\n", ir_ops[i].name, ir_ops[i].onnx,
		       kind_names[ir_ops[i].kind], amp_names[ir_ops[i].amp], ir_ops[i].schema);
	return 0;
}

/* ------------------------------------------------------------------------ */

static const struct cmd cmds[] = {
	{ "ir", cmd_ir, "import a model and print its IR" },
	{ "ops", cmd_ops, "list the supported operators" },
};

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
		printf("onnxc %s (ONNX opsets %d to %d)\n", ONNXC_VERSION, FE_MIN_OPSET,
		       FE_MAX_OPSET);
		return 0;
	}
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	usage_error("unknown command '%s'", argv[1]);
	return EXIT_USAGE;
}
