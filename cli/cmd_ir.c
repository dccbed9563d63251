/*
 * cmd_ir.c - `onnxc ir` (import and print the IR) and `onnxc ops`.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
        "  --codegen            print the IR code generation sees: after the code\n"
        "                       generation passes (batch-norm folding, attention\n"
        "                       fusion; mixed precision with --precision mixed)\n"
        "  --verify             run the IR verifier after every pass\n"
        "  --dump-after=PASS    print the IR after PASS (or 'all') to standard error\n"
        "\n"
        "With --precision mixed, prints the IR code generation sees: after the\n"
        "code generation passes and the mixed-precision pass, whose options follow.\n";

static void print_summary(const struct ir_module *m, FILE *f)
{
	int counts[IR_OP_COUNT] = { 0 }, nconst = 0;
	int64_t weight_bytes = 0;
	char tb[IR_TYPE_STR_MAX];
	fprintf(f, "model: %s\n", m->name);
	for (int i = 0; i < m->ninputs; i++)
		fprintf(f, "input  %s : %s\n", m->inputs[i]->name,
		        ir_type_str(&m->inputs[i]->type, tb, sizeof tb));
	for (int i = 0; i < m->noutputs; i++) {
		const struct ir_out_shape *sh = m->out_shapes[i];
		char eb[IR_TYPE_STR_MAX];
		if (sh)
			fprintf(f, "output %s : %s or %s, picked at run time\n",
			        m->outputs[i]->name, ir_type_str(&sh->then_type, tb, sizeof tb),
			        ir_type_str(&sh->else_type, eb, sizeof eb));
		else
			fprintf(f, "output %s : %s\n", m->outputs[i]->name,
			        ir_type_str(&m->outputs[i]->type, tb, sizeof tb));
	}
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

/* What ir's own options set. */
struct ir_args {
	const char *out;
	bool summary, codegen;
};

static int ir_opt(int argc, char **argv, int *i, void *ud)
{
	struct ir_args *a = ud;
	bool bad = false;
	const char *v;
	if ((v = opt_value(argc, argv, i, "-o", true, &bad)))
		a->out = v;
	else if (opt_value(argc, argv, i, "--summary", false, &bad))
		a->summary = true;
	else if (opt_value(argc, argv, i, "--codegen", false, &bad))
		a->codegen = true;
	else
		return bad ? -1 : 0;
	return 1;
}

int cmd_ir(int argc, char **argv)
{
	struct model_opts mo = { 0 };
	struct ir_args ia = { 0 };
	struct ir_ctx ctx;
	const char *input = NULL, *out;
	struct cmd_args args = { "ir", ir_help, &mo, ir_opt, &ia, &input };
	bool summary;
	struct ir_module *m;
	int status = 0, r = parse_args(argc, argv, &args);

	if (r == 2) {
		free_model_opts(&mo);
		return 0;
	}
	if (r < 0)
		goto usage;
	out = ia.out;
	summary = ia.summary;
	if (!input) {
		usage_error("ir: no model given");
		goto usage;
	}
	ir_ctx_init(&ctx);
	m = load_model(&ctx, input, &mo);
	if (!m) {
		free_model_opts(&mo);
		return ctx.nerrors || !is_ir_text(input) ? EXIT_INPUT : EXIT_USAGE;
	}
	if ((mo.mixed || mo.amp_flag || ia.codegen) && !prepare_model(m, &mo)) {
		ir_module_free(m);
		free_model_opts(&mo);
		return EXIT_INPUT;
	}
	{
		FILE *f = out ? fopen(out, "w") : stdout;
		if (!f) {
			ctx.file = input;
			ir_error(&ctx, "cannot write %s: %s", out, strerror(errno));
			status = EXIT_INPUT;
		} else {
			if (summary)
				print_summary(m, f);
			else
				ir_print(m, f);
			if (ferror(f) || (out && fclose(f) != 0)) {
				ctx.file = input;
				ir_error(&ctx, "writing %s failed: %s",
				         out ? out : "standard output", strerror(errno));
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

/* The rows of the default domain's ops, or of the others'. */
static void print_op_rows(const struct fe_op *const *list, size_t n, bool other_domains)
{
	for (size_t i = 0; i < n; i++) {
		char v[64] = "";
		size_t len = 0;
		if ((list[i]->domain != NULL) != other_domains)
			continue;
		for (int k = 0; k < FE_MAX_VERSIONS && list[i]->versions[k]; k++)
			len += (size_t)snprintf(v + len, sizeof v - len, "%s%d", k ? ", " : "",
			                        list[i]->versions[k]);
		if (list[i]->removed)
			snprintf(v + len, sizeof v - len, " (removed in %d)", list[i]->removed);
		if (other_domains)
			printf("| %s | %s | %s | %s |\n", list[i]->name,
			       list[i]->domain[0] ? list[i]->domain : "(default)", v,
			       ir_ops[list[i]->ir].name);
		else
			printf("| %s | %s | %s |\n", list[i]->name, v,
			       list[i]->ir == IR_OP_COUNT ? "(import)" : ir_ops[list[i]->ir].name);
	}
}

/* docs/ops.md is this output (a test keeps them equal). */
static void print_ops_markdown(void)
{
	printf("# Operators\n\n"
	       "Generated by `onnxc ops --markdown`; a test checks this file matches the build.\n\n"
	       "## ONNX operators onnxc imports\n\n"
	       "Opsets %d to %d of the default domain. *Versions* are the versions of the\n"
	       "operator (numbered, as in ONNX's docs/Changelog.md, by the opset that\n"
	       "introduced them) onnxc implements, each with its own semantics; a model at\n"
	       "opset N gets the last version not above N. From opset %d on every version\n"
	       "is implemented; a node of an older model imports when its version is\n"
	       "listed here (an older one is refused). *Lowers to* is the IR op it\n"
	       "becomes (the main one, where it is lowered to several); *(import)*:\n"
	       "evaluated at import - shape queries and generators\n"
	       "become constants, an If whose condition is a constant becomes the branch\n"
	       "it takes, and a Loop or Scan whose iterations are known becomes them\n"
	       "(unrolled, up to 100,000 body nodes); any other is a `loop` run at run\n"
	       "time (docs/ir.md, Loops).\n\n"
	       "| ONNX op | versions | lowers to |\n|---|---|---|\n",
	       FE_MIN_OPSET, FE_MAX_OPSET, FE_FULL_OPSET);
	const struct fe_op *list[512];
	size_t n = 0;
	for (const struct fe_op *const *t = fe_op_tables; *t; t++)
		for (const struct fe_op *o = *t; o->name; o++) {
			IR_ASSERT(n < sizeof list / sizeof *list);
			list[n++] = o;
		}
	qsort(list, n, sizeof *list, cmp_fe_op);
	print_op_rows(list, n, false);
	printf("\n## Operators of other domains onnxc imports\n\n"
	       "The ops of ONNX Runtime's com.microsoft domain that its transformer optimizer\n"
	       "writes into models (with ONNX Runtime 1.30's CPU semantics), the optimizers of\n"
	       "ONNX's ai.onnx.preview.training domain and ai.onnx.preview's FlexAttention;\n"
	       "any other op of these domains is refused by name. *Versions* are the domain's.\n\n"
	       "| op | domain | versions | lowers to |\n|---|---|---|---|\n");
	print_op_rows(list, n, true);
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
	printf("\n## Mixed-precision classes\n\n"
	       "Why each IR op has its class (docs/precision.md explains the classes;\n"
	       "`--amp-lists` moves ops between them).\n\n"
	       "| op | class | why |\n|---|---|---|\n");
	for (int i = 0; i < IR_OP_COUNT; i++)
		printf("| %s | %s | %s |\n", ir_ops[i].name, amp_names[ir_ops[i].amp],
		       amp_class_reason((enum ir_op)i));
}

int cmd_ops(int argc, char **argv)
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
