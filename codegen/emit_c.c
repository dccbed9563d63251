/*
 * emit_c.c - the generated NAME.h and NAME.c.
 *
 * NAME.h is the API users program against (docs/api.md): an opaque
 * instance, create / run / destroy, and macros describing the inputs,
 * outputs and memory. NAME.c is readable straight-line code: one static
 * const descriptor and one runtime call per step, each under a comment
 * naming the ONNX nodes it covers, so a user can read what the compiler did.
 * Output is deterministic: no timestamps, no paths, no hash-order effects.
 *
 * The steps go CG_STEPS_PER_FUNCTION to a static function (NAME_steps_<i>;
 * more where a run-time loop would be cut), which NAME_run calls in order:
 * a C compiler's optimiser takes time growing faster than a function's
 * length (one NAME_run of 25,000 lines took cc 75 s at -O2), and bounded
 * functions keep it linear in the steps. A part returns the first failing
 * call's status, which NAME_run returns in turn.
 *
 * What is here is the same for every target; the target (target.h) writes
 * the file's frame around it and the parts of a call that differ (emit.h).
 */
#include "emit.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Small printers                                                           */
/* ------------------------------------------------------------------------ */

void cg_print_comment_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (s[0] == '*' && s[1] == '/')
			fputs("* /", f), s++;
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			fputc('?', f);
		else
			fputc(*s, f);
	}
}

static void comment(FILE *f, const char *indent, const char *s)
{
	fprintf(f, "%s/* ", indent);
	cg_print_comment_text(f, s);
	fprintf(f, " */\n");
}

void cg_print_c_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f || c == '?')
			fprintf(f, "\\%03o", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* ------------------------------------------------------------------------ */
/* Tensor references                                                        */
/* ------------------------------------------------------------------------ */

static void ref(FILE *f, const struct cg_plan *p, struct ir_value *v)
{
	struct cg_buf b;
	if (!v) {
		fputs("NULL", f);
		return;
	}
	b = p->vals[cg_root(p, v)->id].buf;
	switch (b.where) {
	case CG_INPUT: fprintf(f, "IN(%d)", b.index); break;
	case CG_OUTPUT: fprintf(f, "OUT(%d)", b.index); break;
	case CG_WEIGHT: fprintf(f, "W(%lld)", (long long)b.offset); break;
	case CG_ARENA: fprintf(f, "A(%lld)", (long long)b.offset); break;
	default: ir_panic(__FILE__, __LINE__, "value '%s' has no storage", v->name);
	}
}

static const struct cg_stage *stage_of(const struct cg_step *s, int arg)
{
	for (int i = 0; i < s->nstages; i++)
		if (s->stages[i].arg == arg)
			return &s->stages[i];
	return NULL;
}

/* Argument i of library step s: its FP32 copy when it is staged. */
static void arg_ref(FILE *f, const struct cg_plan *p, const struct cg_step *s, int i)
{
	const struct cg_stage *st = i < s->nargs ? stage_of(s, i) : NULL;
	if (st)
		fprintf(f, "A(%lld)", (long long)(s->ws_offset + st->ws_offset));
	else
		ref(f, p, i < s->nargs ? s->args[i] : NULL);
}

/* The conversions of s's staged inputs (before) or outputs (after), for a
 * target whose libraries compute in FP32 only (cg_target.half_libraries). */
static void stage_calls(FILE *f, const struct cg_plan *p, const struct cg_step *s, bool outputs)
{
	for (int i = 0; i < s->nstages; i++) {
		const struct cg_stage *st = &s->stages[i];
		const char *half = s->args[st->arg]->type.dtype == IR_F16 ? "RT_F16" : "RT_BF16";
		if ((st->arg < s->nout) != outputs)
			continue;
		fprintf(f, "\tCALL(%sconvert(%s, ", p->target->rt_prefix, p->target->rt_ctx);
		if (outputs) {
			ref(f, p, s->args[st->arg]);
			fprintf(f, ", %s, A(%lld), RT_F32, %lld));\n", half,
			        (long long)(s->ws_offset + st->ws_offset), (long long)st->elems);
		} else {
			fprintf(f, "A(%lld), RT_F32, ", (long long)(s->ws_offset + st->ws_offset));
			ref(f, p, s->args[st->arg]);
			fprintf(f, ", %s, %lld));\n", half, (long long)st->elems);
		}
	}
}

/* "nodes (op)": what a step computes, for comments and profiles. */
static void step_label(const struct cg_plan *p, int s, char *buf, size_t n)
{
	const struct cg_step *st = &p->steps[s];
	snprintf(buf, n, "%s (%s)", st->covers,
	         st->is_kernel ? "fused" : ir_ops[st->node ? st->node->op : IR_OP_COPY].name);
}

/* The runtime functions and the order of their tensors, by row of
 * libcalls.h. */
#define CG_LIB(id, desc, fn, args, ...) static const int args_##id[] = { CG_UNPAREN args };
#include "libcalls.h"

const struct cg_lib_call cg_lib_calls[CG_LIB_COUNT] = {
#define CG_LIB(id, desc, fn, args, ...) \
	[CG_LIB_##id] = { #fn, args_##id, (int)(sizeof args_##id / sizeof args_##id[0]) },
#include "libcalls.h"
};

void cg_c_tensor_args(FILE *f, const struct cg_plan *p, const struct cg_step *s)
{
	const struct cg_lib_call *c = &cg_lib_calls[s->lib];
	for (int i = 0; i < c->nargs; i++) {
		fputs(", ", f);
		arg_ref(f, p, s, c->args[i]);
	}
}

/* The call for library step s (its descriptor is d<index>): <prefix><fn>(<ctx>,
 * then what the target puts there. */
static void lib_call(FILE *f, const struct cg_plan *p, const struct cg_step *s, int index)
{
	const char *pre = p->target->rt_prefix, *ctx = p->target->rt_ctx;
	if (s->lib == CG_LIB_COPY && s->copies) {
		for (int i = 0; i < s->ncopies; i++) {
			fprintf(f, "\tCALL(%scopy(%s, &d%d[%d], ", pre, ctx, index, i);
			ref(f, p, s->split ? s->args[s->nout] : s->args[s->nout + i]);
			fputs(", ", f);
			ref(f, p, s->split ? s->args[i] : s->args[0]);
			fputs("));\n", f);
		}
		return;
	}
	stage_calls(f, p, s, false);
	fprintf(f, "\tCALL(%s%s(%s, ", pre, cg_lib_calls[s->lib].fn, ctx);
	p->target->emit_lib_args(f, p, s, index);
	fputs("));\n", f);
	stage_calls(f, p, s, true);
}

/* ------------------------------------------------------------------------ */
/* Files                                                                    */
/* ------------------------------------------------------------------------ */

static bool finish(FILE *f, struct ir_ctx *ctx, const char *path)
{
	if (fclose(f) != 0) {
		ir_error(ctx, "writing %s failed", path);
		return false;
	}
	return true;
}

void cg_c_upper(char *dst, const char *src, size_t n)
{
	size_t i = 0;
	for (; src[i] && i + 1 < n; i++)
		dst[i] = (char)toupper((unsigned char)src[i]);
	dst[i] = 0;
}

/* The macros of input or output i. An output of run-time shape (sh) has
 * no _DIMS: _RANK is the larger of its two ranks, _ELEMS and _BYTES its
 * buffer's capacity, and NAME_output_shape says what a run gave. */
static void io_macros(FILE *f, const char *n, const char *N, const char *kind, int i,
                      const struct ir_value *v, const struct ir_out_shape *sh)
{
	fprintf(f, "#define %s_%s%d_NAME ", N, kind, i);
	cg_print_c_string(f, v->name);
	fprintf(f, "\n#define %s_%s%d_DTYPE %d /* %s */\n", N, kind, i,
	        ir_dtypes[v->type.dtype].onnx, ir_dtype_name(v->type.dtype));
	if (sh) {
		int r = sh->then_type.rank > sh->else_type.rank ? sh->then_type.rank
		                                                : sh->else_type.rank;
		char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
		fprintf(f, "#define %s_%s%d_VARIABLE 1 /* %s or %s: %s_output_shape */\n", N, kind,
		        i, ir_type_str(&sh->then_type, a, sizeof a),
		        ir_type_str(&sh->else_type, b, sizeof b), n);
		fprintf(f, "#define %s_%s%d_RANK %d /* at most */\n", N, kind, i, r);
	} else {
		if (!strcmp(kind, "OUTPUT"))
			fprintf(f, "#define %s_%s%d_VARIABLE 0\n", N, kind, i);
		fprintf(f, "#define %s_%s%d_RANK %d\n", N, kind, i, v->type.rank);
		fprintf(f, "#define %s_%s%d_DIMS ", N, kind, i);
		cg_c_i64s(f, v->type.dims, v->type.rank);
		fputc('\n', f);
	}
	fprintf(f, "#define %s_%s%d_ELEMS %lld\n", N, kind, i, (long long)ir_type_elems(&v->type));
	fprintf(f, "#define %s_%s%d_BYTES %lld\n", N, kind, i,
	        (long long)(ir_type_elems(&v->type) * ir_dtype_size(v->type.dtype)));
}

bool cg_emit_header(const struct cg_plan *p, const char *path)
{
	const char *n = p->opt->name;
	char N[128];
	FILE *f = fopen(path, "w");
	struct ir_module *m = p->m;
	if (!f) {
		ir_error(m->ctx, "cannot write %s", path);
		return false;
	}
	cg_c_upper(N, n, sizeof N);
	fprintf(f,
	        "/* %s.h - generated by onnxc %s. Do not edit. The API is described in\n"
	        " * onnxc's docs/api.md. */\n",
	        n, ONNXC_VERSION);
	fprintf(f, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n", N,
	        N);
	fprintf(f, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	fprintf(f, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n", N, m->ninputs, N,
	        m->noutputs);
	fprintf(f, "#define %s_ARENA_BYTES %lld\n#define %s_WEIGHT_BYTES %lld\n", N,
	        (long long)p->arena_bytes, N, (long long)p->weight_bytes);
	fprintf(f, "#define %s_MODEL_ID 0x%016llxull\n\n", N, (unsigned long long)p->model_id);
	for (int i = 0; i < m->ninputs; i++)
		io_macros(f, n, N, "INPUT", i, m->inputs[i], NULL);
	for (int i = 0; i < m->noutputs; i++)
		io_macros(f, n, N, "OUTPUT", i, m->outputs[i], m->out_shapes[i]);
	fprintf(f,
	        "\nstruct %s;\n\n"
	        "/* Creates an instance. weights_path: the weights file (%s.weights);\n"
	        " * NULL uses the embedded weights if the library has them, otherwise\n"
	        " * %s.weights next to the executable or in the current directory.\n"
	        " * Returns 0 or a status (%s_strerror). */\n"
	        "int %s_create(struct %s **model, const char *weights_path);\n\n"
	        "/* Runs the model: inputs and outputs are dense row-major buffers of the\n"
	        " * types and shapes above, in graph order. Returns 0 or a status. */\n"
	        "int %s_run(struct %s *model, const void *const inputs[], void *const "
	        "outputs[]);\n\n"
	        "/* The same, first checking every buffer's size in bytes\n"
	        " * (%s_INPUT<i>_BYTES, %s_OUTPUT<i>_BYTES). */\n"
	        "int %s_run_checked(struct %s *model, const void *const inputs[],\n"
	        "                   const size_t input_bytes[], void *const outputs[],\n"
	        "                   const size_t output_bytes[]);\n\n"
	        "void %s_destroy(struct %s *model);\n"
	        "const char *%s_strerror(int status);\n\n"
	        "/* The shape of output k as the last run gave it: its rank, with the\n"
	        " * dimensions in dims[0..rank) (room for %s_OUTPUT<k>_RANK); -1 for no\n"
	        " * such output, and for an output of run-time shape\n"
	        " * (%s_OUTPUT<k>_VARIABLE) before a run or after one that failed.\n"
	        " * Such an output's elements fill the start of its buffer, dense\n"
	        " * row-major; the buffer holds %s_OUTPUT<k>_BYTES. */\n"
	        "int %s_output_shape(const struct %s *model, int k, int64_t dims[]);\n\n",
	        n, n, n, n, n, n, n, n, N, N, n, n, n, n, n, N, N, N, n, n);
	fprintf(f,
	        "/* A function every run calls on its outputs once they are computed,\n"
	        " * before the run returns: on the CUDA target the outputs' device\n"
	        " * memory and the run's cudaStream_t, on the CPU the caller's buffers\n"
	        " * and NULL; a nonzero return is the run's status. NULL removes it\n"
	        " * (onnxc_rt.h's rt_output_hook_fn; data-parallel training sums\n"
	        " * gradients over its ranks with it). */\n"
	        "int %s_set_output_hook(struct %s *model,\n"
	        "                       int (*fn)(void *ctx, void *const outputs[], const size_t "
	        "bytes[],\n"
	        "                                 int n, void *stream),\n"
	        "                       void *ctx);\n\n",
	        n, n);
	fprintf(f, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
	return finish(f, m->ctx, path);
}

/* step_names[], for ONNXC_PROFILE=1. */
void cg_c_step_names(FILE *f, const struct cg_plan *p)
{
	fprintf(f, "\nstatic const char *const step_names[] = {\n");
	for (int s = 0; s < p->nsteps; s++) {
		char what[1024];
		step_label(p, s, what, sizeof what);
		fputc('\t', f);
		cg_print_c_string(f, what);
		fputs(",\n", f);
	}
	if (!p->nsteps)
		fputs("\t\"\",\n", f);
	fprintf(f, "};\n");
}

/* The NULL checks at the top of NAME_run. */
void cg_c_arg_checks(FILE *f, const struct ir_module *m)
{
	fprintf(f, "\tif (!model || !inputs || !outputs)\n\t\treturn RT_ERR_ARGUMENT;\n");
	if (m->ninputs)
		fprintf(f,
		        "\tfor (int i = 0; i < %d; i++)\n\t\tif (!inputs[i])\n\t\t\treturn "
		        "RT_ERR_ARGUMENT;\n",
		        m->ninputs);
	if (m->noutputs)
		fprintf(f,
		        "\tfor (int i = 0; i < %d; i++)\n\t\tif (!outputs[i])\n\t\t\treturn "
		        "RT_ERR_ARGUMENT;\n",
		        m->noutputs);
}

/* NAME_run_checked and NAME_strerror, the same for every target. */
void cg_c_sizes(FILE *f, const char *indent, const char *array, const char *N, const char *kind,
                int n)
{
	if (!n)
		return;
	fprintf(f, "%sstatic const size_t %s[] = {", indent, array);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%s_%s%d_BYTES", i ? ", " : " ", N, kind, i);
	fprintf(f, " };\n");
}

static void output_shape_api(FILE *f, const struct cg_plan *p, const char *n);

void cg_c_common_api(FILE *f, const struct cg_plan *p, const char *n, const char *N)
{
	const struct ir_module *m = p->m;
	fprintf(f,
	        "int %s_run_checked(struct %s *model, const void *const inputs[],\n"
	        "                   const size_t input_bytes[], void *const outputs[],\n"
	        "                   const size_t output_bytes[])\n{\n",
	        n, n);
	cg_c_sizes(f, "\t", "in_bytes", N, "INPUT", m->ninputs);
	cg_c_sizes(f, "\t", "out_bytes", N, "OUTPUT", m->noutputs);
	fprintf(f, "\tif (!input_bytes || !output_bytes)\n\t\treturn RT_ERR_ARGUMENT;\n");
	if (m->ninputs)
		fprintf(f,
		        "\tfor (int i = 0; i < %d; i++)\n\t\tif (input_bytes[i] != in_bytes[i])\n"
		        "\t\t\treturn RT_ERR_INPUT_SIZE;\n",
		        m->ninputs);
	if (m->noutputs)
		fprintf(f,
		        "\tfor (int i = 0; i < %d; i++)\n\t\tif (output_bytes[i] != out_bytes[i])\n"
		        "\t\t\treturn RT_ERR_INPUT_SIZE;\n",
		        m->noutputs);
	fprintf(f, "\treturn %s_run(model, inputs, outputs);\n}\n\n", n);
	fprintf(f,
	        "const char *%s_strerror(int status)\n{\n\treturn rt_status_message(status);\n}\n",
	        n);
	output_shape_api(f, p, n);
}

static bool any_shaped(const struct ir_module *m)
{
	for (int i = 0; i < m->noutputs; i++)
		if (m->out_shapes[i])
			return true;
	return false;
}

/* NAME_output_shape: per output its one shape, or its two (struct
 * ir_out_shape) and which the last run gave (shape_pick: 0 none yet, 1 the
 * else shape, 2 the then shape). */
static void output_shape_api(FILE *f, const struct cg_plan *p, const char *n)
{
	const struct ir_module *m = p->m;
	fprintf(f, "\nint %s_output_shape(const struct %s *model, int k, int64_t dims[])\n{\n", n,
	        n);
	fprintf(f, "\tint r = -1;\n\tif (!model || !dims)\n\t\treturn -1;\n\tswitch (k) {\n");
	for (int i = 0; i < m->noutputs; i++) {
		const struct ir_out_shape *sh = m->out_shapes[i];
		const struct ir_type *t = sh ? &sh->then_type : &m->outputs[i]->type;
		fprintf(f, "\tcase %d:", i);
		if (sh) {
			fprintf(f, "\n\t\tif (model->shape_pick[%d] == 1) {\n", i);
			for (int d = 0; d < sh->else_type.rank; d++)
				fprintf(f, "\t\t\tdims[%d] = %lld;\n", d,
				        (long long)sh->else_type.dims[d]);
			fprintf(f, "\t\t\tr = %d;\n\t\t\tbreak;\n\t\t}\n", sh->else_type.rank);
			fprintf(f, "\t\tif (model->shape_pick[%d] != 2)\n\t\t\tbreak;\n", i);
		} else {
			fputc('\n', f);
		}
		for (int d = 0; d < t->rank; d++)
			fprintf(f, "\t\tdims[%d] = %lld;\n", d, (long long)t->dims[d]);
		fprintf(f, "\t\tr = %d;\n\t\tbreak;\n", t->rank);
	}
	fprintf(f, "\tdefault: break;\n\t}\n\treturn r;\n}\n");
}

void cg_c_shape_field(FILE *f, const struct cg_plan *p)
{
	if (any_shaped(p->m))
		fprintf(f, "\tunsigned char shape_pick[%d]; /* %s_output_shape */\n",
		        p->m->noutputs, p->opt->name);
}

void cg_c_shape_begin(FILE *f, const struct cg_plan *p)
{
	if (any_shaped(p->m))
		fprintf(f,
		        "\tfor (int i_ = 0; model && i_ < %d; i_++)\n"
		        "\t\tmodel->shape_pick[i_] = 0; /* a run that fails leaves no shape */\n",
		        p->m->noutputs);
}

void cg_c_shape_return(FILE *f, const struct cg_plan *p, const char *status)
{
	if (!any_shaped(p->m)) {
		fprintf(f, "\treturn %s;\n", status);
		return;
	}
	fprintf(f,
	        "\t{\n\t\tint status_ = %s;\n"
	        "\t\tfor (int i_ = 0; status_ && i_ < %d; i_++)\n"
	        "\t\t\tmodel->shape_pick[i_] = 0; /* no shape from a failed run */\n"
	        "\t\treturn status_;\n\t}\n",
	        status, p->m->noutputs);
}

void cg_c_shape_end(FILE *f, const struct cg_plan *p)
{
	for (int i = 0; i < p->m->noutputs; i++)
		if (p->m->out_shapes[i]) {
			fprintf(f,
			        "\t{ /* which shape output %d has */\n\t\tint g_ = "
			        "1;\n\t\tGUARD(g_, ",
			        i);
			ref(f, p, p->m->out_shapes[i]->cond);
			fprintf(f, ");\n\t\tmodel->shape_pick[%d] = g_ ? 2 : 1;\n\t}\n", i);
		}
}

/* The file's opening comment. */
void cg_c_banner(FILE *f, const struct cg_plan *p, const char *n, const char *what)
{
	fprintf(f, "/* %s.c - generated by onnxc %s", n, ONNXC_VERSION);
	if (p->opt->source) {
		const char *base = strrchr(p->opt->source, '/');
		fputs(" from ", f);
		cg_print_comment_text(f, base ? base + 1 : p->opt->source);
	}
	fprintf(f, ". Do not edit.\n *\n * %s */\n", what);
}

/*
 * The calls of steps [from, to), the same for every target (the macros and
 * the calls' heads differ). A step under a guard runs inside a block per
 * guard of its chain, outermost first, each read only while those before
 * it held (GUARD(g, ptr): the target's read of a bool, host or device); a
 * run-time loop's steps [open, close) run inside `for (;;)`, which reads
 * the loop's token at the top of each iteration and leaves when it is
 * false. The blocks open are a stack of the guards and tokens they test:
 * a step keeps the blocks of its chain's prefix, closes the others (never
 * a loop's: a loop closes at its close step) and opens the rest (never a
 * loop's: a loop opens at its open step).
 */
struct blocks {
	struct ir_value *open[CG_MAX_GUARDS];
	int n;
};

/* Closes blocks until the first keep remain. */
static void close_blocks(FILE *f, struct blocks *b, int keep)
{
	while (b->n > keep) {
		IR_ASSERT(!ir_is_loop(b->open[b->n - 1]));
		b->n--;
		fputs("\t}}\n", f);
	}
}

/* Makes the blocks open those of chain g[0..n). */
static void enter(FILE *f, const struct cg_plan *p, struct blocks *b, struct ir_value *const *g,
                  int n)
{
	int same = 0;
	while (same < b->n && same < n && b->open[same] == g[same])
		same++;
	close_blocks(f, b, same);
	for (int i = same; i < n; i++) {
		IR_ASSERT(!ir_is_loop(g[i]) && b->n < CG_MAX_GUARDS);
		fputs("\t{ /* under guard ", f);
		cg_print_comment_text(f, g[i]->name);
		fprintf(f, " */\n\tint g%d_ = 1;\n\tGUARD(g%d_, ", b->n, b->n);
		ref(f, p, g[i]);
		fprintf(f, ");\n\tif (g%d_) {\n", b->n);
		b->open[b->n++] = g[i];
	}
}

/* The chain of guard g (cg_step_guards), outermost first. */
static int chain_of(struct ir_value *g, struct ir_value **out)
{
	struct cg_step s = { .guard = g };
	return cg_step_guards(&s, out);
}

static void emit_steps(FILE *f, const struct cg_plan *p, int from, int to)
{
	struct blocks b = { .n = 0 };
	struct ir_value *g[CG_MAX_GUARDS];
	/* the loops opening from here (p->loops is in order of opening), and
	 * those open, innermost last: a part never splits a loop */
	int next = 0, open[CG_MAX_GUARDS], nopen = 0;
	while (next < p->nloops && p->loops[next].open < from)
		next++;
	for (int s = from; s <= to; s++) {
		const struct cg_step *st = &p->steps[s];
		char what[1024];
		/* a loop closes where its steps end (nested: the inner first) */
		while (nopen && p->loops[open[nopen - 1]].close == s) {
			struct ir_value *t = p->loops[open[--nopen]].token;
			int n = chain_of(t, g);
			enter(f, p, &b, g, n);
			IR_ASSERT(b.n == n && b.open[n - 1] == t);
			b.n--;
			fputs("\t} /* end of loop ", f);
			cg_print_comment_text(f, t->name);
			fputs(" */\n", f);
		}
		if (s == to)
			break;
		for (; next < p->nloops && p->loops[next].open == s; next++) {
			struct ir_value *t = p->loops[next].token;
			enter(f, p, &b, g, chain_of(t->def->guard, g));
			fputs("\n\tfor (;;) { /* loop ", f);
			cg_print_comment_text(f, t->name);
			fprintf(f, ": while it holds */\n\tint g%d_ = 1;\n\tGUARD(g%d_, ", b.n,
			        b.n);
			ref(f, p, t);
			fprintf(f, ");\n\tif (!g%d_)\n\t\tbreak;\n", b.n);
			IR_ASSERT(b.n < CG_MAX_GUARDS && nopen < CG_MAX_GUARDS);
			b.open[b.n++] = t;
			open[nopen++] = next;
		}
		enter(f, p, &b, g, cg_step_guards(st, g));
		step_label(p, s, what, sizeof what);
		fputc('\n', f);
		comment(f, "\t", what);
		fprintf(f, "\tBEGIN(%d);\n", s);
		if (st->is_kernel) {
			fputs("\t{\n\t\tvoid *const a[] = { ", f);
			for (int i = 0; i < st->nargs; i++) {
				fputs(i ? ", " : "", f);
				ref(f, p, st->args[i]);
			}
			p->target->emit_launch(f, p, st);
		} else {
			lib_call(f, p, st, s);
		}
		fprintf(f, "\tEND(%d);\n", s);
	}
	IR_ASSERT(!nopen);
	close_blocks(f, &b, 0);
}

int cg_c_part_end(const struct cg_plan *p, int from)
{
	int to = from + CG_STEPS_PER_FUNCTION;
	bool moved = true;
	if (to > p->nsteps)
		to = p->nsteps;
	while (moved) {
		moved = false;
		for (int i = 0; i < p->nloops; i++)
			if (p->loops[i].open < to && to < p->loops[i].close) {
				to = p->loops[i].close;
				moved = true;
			}
	}
	return to;
}

int cg_c_nparts(const struct cg_plan *p)
{
	int n = 0;
	for (int from = 0; from < p->nsteps; from = cg_c_part_end(p, from))
		n++;
	return n;
}

/* The static functions NAME_steps_<i> running the steps in bounded parts;
 * params is their parameter list, intro their first lines. */
void cg_c_parts(FILE *f, const struct cg_plan *p, const char *n, const char *params,
                const char *intro)
{
	for (int i = 0, from = 0; from < p->nsteps; i++) {
		int to = cg_c_part_end(p, from);
		fprintf(f, "\n/* Steps %d to %d. */\nstatic int %s_steps_%d(%s)\n{\n%s", from,
		        to - 1, n, i, params, intro);
		emit_steps(f, p, from, to);
		fprintf(f, "\treturn RT_OK;\n}\n");
		from = to;
	}
}

/* The calls of the parts, in order, each returning its failure. */
void cg_c_call_parts(FILE *f, const struct cg_plan *p, const char *n, const char *args)
{
	for (int i = 0; i < cg_c_nparts(p); i++)
		fprintf(f, "\tCALL(%s_steps_%d(%s));\n", n, i, args);
}

bool cg_emit_source(const struct cg_plan *p, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		ir_error(p->m->ctx, "cannot write %s", path);
		return false;
	}
	p->target->emit_source(f, p);
	return finish(f, p->m->ctx, path);
}
