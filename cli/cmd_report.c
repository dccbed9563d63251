/*
 * cmd_report.c - `onnxc report`: what mixed precision decided and why.
 *
 * Runs what `onnxc compile --precision mixed` runs up to the kernel plan
 * (nothing is written or built) and prints, per node, its class, its
 * precision, the predicted FP32 and half times and the reason; then the
 * casts: inserted, folded into constants, fused into kernels or library
 * calls, and the standalone cast kernels left. --json prints the same as
 * one object, --dot the graph coloured by precision.
 */
#include "cli.h"
#include "codegen/cg.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* x for JSON: null where it is not finite (an error that is infinite:
 * a mixed output that overflowed, or a run that failed). */
static const char *json_number(char buf[32], double x)
{
	if (!isfinite(x))
		return "null";
	snprintf(buf, 32, "%.6g", x);
	return buf;
}

static const char report_help[] =
        "usage: onnxc report MODEL.onnx [options]\n"
        "\n"
        "Explains the mixed-precision decisions for a model: per node its class,\n"
        "precision, predicted FP32 and half times and the reason; the casts\n"
        "inserted, folded into weights, fused into kernels, and the cast kernels\n"
        "left; the padded ops; the predicted FP32 and mixed times. --precision\n"
        "mixed is implied.\n"
        "\n"
        "options:\n"
        "  --json               one JSON object (keys in docs/cli.md)\n"
        "  --dot                the graph in Graphviz dot, coloured by precision\n"
        "  -o FILE              write to FILE instead of standard output\n"
        "  --shape, --dim, --const, --verify, --dump-after   as for onnxc compile\n";

static const char *class_name(enum ir_amp c)
{
	static const char *const names[] = { "allow", "infer", "deny", "clear", "special" };
	return names[c];
}

/* What the report says about node n: its decision if it was in the model,
 * or what added it. */
static const struct amp_node *decided(const struct amp_result *r, const struct ir_node *n)
{
	return n->id < r->nids && (r->nodes[n->id].paintable || r->nodes[n->id].reason[0])
	               ? &r->nodes[n->id]
	               : NULL;
}

static void node_info(const struct amp_result *r, const struct ir_node *n, const char **cls,
                      const char **prec, const char **why, double *t32, double *t16)
{
	const struct amp_node *a = decided(r, n);
	if (a) {
		*cls = class_name(a->cls);
		*prec = !a->paintable         ? "-"
		        : a->prec != AMP_HALF ? "fp32"
		        : a->half == IR_BF16  ? "bf16"
		                              : "fp16";
		*why = a->reason;
		*t32 = a->t32;
		*t16 = a->t16;
		return;
	}
	*cls = n->op == IR_OP_CAST ? "special" : class_name(ir_ops[n->op].amp);
	*prec = "-";
	*why = n->op == IR_OP_CAST  ? "cast inserted at a precision boundary"
	       : n->op == IR_OP_PAD ? "zero padding for Tensor Cores"
	                            : "slices a padded result back";
	*t32 = *t16 = 0;
}

/* The calibration line of the text report. */
static void print_calibration(FILE *f, const struct model_opts *mo)
{
	const struct amp_result *r = &mo->amp_result;
	if (!r->ranges)
		return;
	fprintf(f,
	        "calibration: %d samples; range rule: %d nodes to BF16, %d kept FP32; budget "
	        "max rel-L2 %g: %.3g with the policy alone, %.3g after moving %d nodes back "
	        "to FP32 (%d runs of the model)\n",
	        r->calib_samples, r->range_bf16, r->range_fp32, r->budget, r->err_first,
	        r->err_final, r->budget_moved, r->budget_evals);
}

static void print_text(FILE *f, const char *model, const struct model_opts *mo,
                       const struct ir_module *m, const struct cg_stats *st)
{
	const struct amp_result *r = &mo->amp_result;
	const struct gpu_profile *g = mo->amp.gpu;
	fprintf(f, "%s: mixed precision %s, %s policy, GPU %s (%s)\n", model,
	        mo->amp.half == IR_BF16 ? "bf16" : "fp16",
	        mo->amp.policy == AMP_GREEDY ? "greedy" : "cost", g->name, g->source);
	fprintf(f, "predicted: %.3f ms FP32, %.3f ms mixed (%.2fx)\n", r->predicted_us_fp32 / 1e3,
	        r->predicted_us_mixed / 1e3,
	        r->predicted_us_mixed > 0 ? r->predicted_us_fp32 / r->predicted_us_mixed : 1.0);
	fprintf(f, "nodes: %d half, %d FP32\n", r->half_nodes, r->fp32_nodes);
	print_calibration(f, mo);
	fprintf(f,
	        "casts: %d inserted, %d model casts repainted or folded, %d folded into "
	        "weights\n",
	        r->casts_inserted, r->casts_repainted, r->casts_folded);
	fprintf(f, "after fusion: %d cast kernels, %d casts fused into kernels or library calls\n",
	        st->cast_kernels, st->casts_fused);
	fprintf(f, "Tensor Core padding: %d ops\n", r->padded_ops);
	fprintf(f,
	        "attention: %d fused from MatMul-Softmax-MatMul (the nodes named .../attention), "
	        "%d left as they are (the notes above say why)\n\n",
	        mo->stats.attention_fused, mo->stats.attention_refused);
	fprintf(f, "%-40s %-16s %-7s %-5s %-6s %9s %9s %9s %6s  %s\n", "node", "op", "class",
	        "prec", "rule", "T32 us", "T16 us", "|x| max", "<2^-14", "reason");
	IR_FOR_EACH_NODE(m, n)
	{
		const struct amp_node *a = decided(r, n);
		const char *cls, *prec, *why;
		double t32, t16;
		char nb[1024], mx[16] = "-", un[16] = "-";
		node_info(r, n, &cls, &prec, &why, &t32, &t16);
		if (a && a->absmax >= 0) {
			snprintf(mx, sizeof mx, "%.3g", a->absmax);
			snprintf(un, sizeof un, "%.1f%%", 100 * a->under);
		}
		fprintf(f, "%-40s %-16s %-7s %-5s %-6s %9.2f %9.2f %9s %6s  %s\n",
		        ir_escape(n->name, nb, sizeof nb), ir_ops[n->op].name, cls, prec,
		        a && a->paintable ? amp_rule_name(a->rule) : "-", t32, t16, mx, un, why);
	}
}

static void print_json(FILE *f, const char *model, const struct model_opts *mo,
                       const struct ir_module *m, const struct cg_stats *st)
{
	const struct amp_result *r = &mo->amp_result;
	bool first = true;
	fprintf(f, "{\"model\": ");
	json_string(f, model);
	fprintf(f, ", \"half\": \"%s\", \"policy\": \"%s\", \"gpu\": ",
	        mo->amp.half == IR_BF16 ? "bf16" : "fp16",
	        mo->amp.policy == AMP_GREEDY ? "greedy" : "cost");
	json_string(f, mo->amp.gpu->name);
	fprintf(f,
	        ", \"cast_kernels\": %d, \"casts_fused\": %d, \"casts_folded\": %d, "
	        "\"casts_inserted\": %d, \"casts_repainted\": %d, \"half_nodes\": %d, "
	        "\"fp32_nodes\": %d, \"padded_ops\": %d, \"predicted_ms_fp32\": %.6f, "
	        "\"predicted_ms_mixed\": %.6f, \"attention_fused\": %d, "
	        "\"attention_refused\": %d, ",
	        st->cast_kernels, st->casts_fused, r->casts_folded, r->casts_inserted,
	        r->casts_repainted, r->half_nodes, r->fp32_nodes, r->padded_ops,
	        r->predicted_us_fp32 / 1e3, r->predicted_us_mixed / 1e3, mo->stats.attention_fused,
	        mo->stats.attention_refused);
	if (r->ranges) {
		char e1[32], e2[32];
		fprintf(f,
		        "\"calibration\": {\"samples\": %d, \"range_bf16\": %d, \"range_fp32\": "
		        "%d, \"max_rel_l2\": %g, \"error_policy\": %s, \"error_final\": %s, "
		        "\"budget_moved\": %d, \"evaluations\": %d}, ",
		        r->calib_samples, r->range_bf16, r->range_fp32, r->budget,
		        json_number(e1, r->err_first), json_number(e2, r->err_final),
		        r->budget_moved, r->budget_evals);
	}
	fprintf(f, "\"nodes\": [");
	IR_FOR_EACH_NODE(m, n)
	{
		const struct amp_node *a = decided(r, n);
		const char *cls, *prec, *why;
		double t32, t16;
		node_info(r, n, &cls, &prec, &why, &t32, &t16);
		fprintf(f, "%s\n  {\"name\": ", first ? "" : ",");
		json_string(f, n->name);
		fprintf(f,
		        ", \"op\": \"%s\", \"class\": \"%s\", \"precision\": \"%s\", "
		        "\"rule\": \"%s\", \"t32_us\": %.4f, \"t16_us\": %.4f, ",
		        ir_ops[n->op].name, cls, prec,
		        a && a->paintable ? amp_rule_name(a->rule) : "-", t32, t16);
		if (a && a->absmax >= 0)
			fprintf(f, "\"absmax\": %.6g, \"below_fp16_normal\": %.6g, ", a->absmax,
			        a->under);
		fprintf(f, "\"reason\": ");
		json_string(f, why);
		fputc('}', f);
		first = false;
	}
	fprintf(f, "]}\n");
}

static void dot_id(FILE *f, const char *prefix, int id) { fprintf(f, "%s%d", prefix, id); }

static void dot_label(FILE *f, const char *s)
{
	for (; *s; s++)
		fprintf(f, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
}

static const char *dtype_color(enum ir_dtype t)
{
	return t == IR_F16 || t == IR_BF16 ? "#2ca02c" : t == IR_F32 ? "#1f77b4" : "#7f7f7f";
}

/* Nodes are boxes filled by precision (green FP16, purple BF16, blue FP32,
 * grey neither; a node the range rule, the budget, the user or the plan
 * decided names the rule), casts orange diamonds; edges are coloured by the dtype they
 * carry; graph inputs and outputs are ellipses. */
static void print_dot(FILE *f, const struct ir_module *m, const struct amp_result *r)
{
	fprintf(f, "digraph \"");
	dot_label(f, m->name);
	fprintf(f, "\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
	for (int i = 0; i < m->ninputs; i++) {
		fprintf(f, "  ");
		dot_id(f, "v", m->inputs[i]->id);
		fprintf(f, " [shape=ellipse, label=\"");
		dot_label(f, m->inputs[i]->name);
		fprintf(f, "\"];\n");
	}
	IR_FOR_EACH_NODE(m, n)
	{
		enum ir_dtype t = n->out[0]->type.dtype;
		bool half = false, f32 = false;
		for (int i = 0; i < n->nin; i++) {
			half |= n->in[i]->type.dtype == IR_F16 || n->in[i]->type.dtype == IR_BF16;
			f32 |= n->in[i]->type.dtype == IR_F32;
		}
		half |= t == IR_F16 || t == IR_BF16;
		fprintf(f, "  ");
		dot_id(f, "n", n->id);
		if (n->op == IR_OP_CAST)
			fprintf(f,
			        " [shape=diamond, style=filled, fillcolor=\"#ff7f0e\", "
			        "label=\"cast "
			        "%s\"];\n",
			        ir_dtype_name(t));
		else {
			const struct amp_node *a = decided(r, n);
			bool bf16 = a && a->paintable && a->prec == AMP_HALF && a->half == IR_BF16;
			fprintf(f, " [shape=box, style=filled, fillcolor=\"%s\", label=\"",
			        bf16 ? "#c5b0d5"
			        : n->op != IR_OP_RESHAPE && half && !(f32 && t == IR_F32)
			                ? "#b5e7a0"
			        : f32 || t == IR_F32 ? "#aec7e8"
			                             : "#dddddd");
			dot_label(f, n->name);
			fprintf(f, "\\n%s", ir_ops[n->op].name);
			if (a && a->paintable && a->rule != AMP_BY_POLICY &&
			    a->rule != AMP_BY_CLASS)
				fprintf(f, "\\n(%s)", amp_rule_name(a->rule));
			fprintf(f, "\"];\n");
		}
		for (int i = 0; i < n->nin; i++) {
			const struct ir_value *v = n->in[i];
			if (v->kind == IR_VAL_CONST)
				continue;
			fprintf(f, "  ");
			if (v->kind == IR_VAL_NODE)
				dot_id(f, "n", v->def->id);
			else
				dot_id(f, "v", v->id);
			fprintf(f, " -> ");
			dot_id(f, "n", n->id);
			fprintf(f, " [color=\"%s\"];\n", dtype_color(v->type.dtype));
		}
	}
	for (int i = 0; i < m->noutputs; i++) {
		const struct ir_value *v = m->outputs[i];
		fprintf(f, "  out%d [shape=ellipse, label=\"", i);
		dot_label(f, v->name);
		fprintf(f, "\"];\n  ");
		if (v->kind == IR_VAL_NODE)
			dot_id(f, "n", v->def->id);
		else
			dot_id(f, "v", v->id);
		fprintf(f, " -> out%d [color=\"%s\"];\n", i, dtype_color(v->type.dtype));
	}
	fprintf(f, "}\n");
}

/* What report's own options set. */
struct report_args {
	const char *out;
	bool json, dot;
};

static int report_opt(int argc, char **argv, int *i, void *ud)
{
	struct report_args *a = ud;
	bool bad = false;
	const char *v;
	if (opt_value(argc, argv, i, "--json", false, &bad))
		a->json = true;
	else if (opt_value(argc, argv, i, "--dot", false, &bad))
		a->dot = true;
	else if ((v = opt_value(argc, argv, i, "-o", true, &bad)))
		a->out = v;
	else
		return bad ? -1 : 0;
	return 1;
}

int cmd_report(int argc, char **argv)
{
	struct model_opts mo = { .mixed = true };
	struct report_args ra = { 0 };
	struct cg_options co = { .name = "model", .target = "cpu", .cpu = "native" };
	struct cg_stats st;
	struct ir_ctx ctx;
	struct ir_module *m = NULL;
	const char *input = NULL, *out;
	struct cmd_args args = { "report", report_help, &mo, report_opt, &ra, &input };
	bool json, dot;
	int status = EXIT_INPUT, r = parse_args(argc, argv, &args);
	FILE *f = NULL;

	if (r == 2) {
		free_model_opts(&mo);
		return 0;
	}
	if (r < 0)
		goto usage;
	out = ra.out;
	json = ra.json;
	dot = ra.dot;
	if (!input) {
		usage_error("report: no model given");
		goto usage;
	}
	if (!mo.mixed) {
		usage_error(
		        "report: explains --precision mixed; there is nothing to report for fp32");
		goto usage;
	}
	if (json && dot) {
		usage_error("report: --json and --dot exclude each other");
		goto usage;
	}
	if (!model_opts_fit("report", input, &mo))
		goto usage;
	ir_ctx_init(&ctx);
	if (!(m = load_model(&ctx, input, &mo)))
		goto done;
	ctx.file = input;
	co.max_memory = model_max_memory(&mo);
	mo.stats.explain = true; /* a note for each attention left decomposed */
	if (!prepare_model(m, &mo) || !cg_analyze(m, &co, &st))
		goto done;
	if (!mo.amp.gpu)
		mo.amp.gpu = cost_builtin("h200");
	if (!(f = out ? fopen(out, "w") : stdout)) {
		ir_error(&ctx, "cannot write %s: %s", out, strerror(errno));
		goto done;
	}
	if (json)
		print_json(f, input, &mo, m, &st);
	else if (dot)
		print_dot(f, m, &mo.amp_result);
	else
		print_text(f, input, &mo, m, &st);
	status = 0;
	if (f != stdout && fclose(f)) {
		ir_error(&ctx, "cannot write %s: %s", out, strerror(errno));
		status = EXIT_INPUT;
	}
done:
	ir_module_free(m);
	free_model_opts(&mo);
	return status;
usage:
	free_model_opts(&mo);
	return EXIT_USAGE;
}
