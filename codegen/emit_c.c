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
 * The steps go CG_STEPS_PER_FUNCTION to a static function (NAME_steps_<i>,
 * steps i*CG_STEPS_PER_FUNCTION onwards), which NAME_run calls in order:
 * a C compiler's optimiser takes time growing faster than a function's
 * length (one NAME_run of 25,000 lines took cc 75 s at -O2), and bounded
 * functions keep it linear in the steps. A part returns the first failing
 * call's status, which NAME_run returns in turn.
 */
#include "plan.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Steps per generated function: short enough for cc's optimiser, long
 * enough that a model of a few hundred layers reads as a few functions. */
#define CG_STEPS_PER_FUNCTION 128

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

static void i64s(FILE *f, const int64_t *v, int n)
{
	if (n == 0) {
		fputs("{0}", f); /* C11 has no empty initializer */
		return;
	}
	fputc('{', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)v[i]);
	fputc('}', f);
}

static void flt(FILE *f, float v)
{
	char buf[48];
	if (v != v)
		fputs("NAN", f);
	else if (v == INFINITY || v == -INFINITY)
		fputs(v > 0 ? "INFINITY" : "-INFINITY", f);
	else {
		ir_format_float(v, buf, sizeof buf);
		/* keep it a float literal */
		fprintf(f, "%s%sf", buf, strpbrk(buf, ".e") ? "" : ".0");
	}
}

static void epilogue(FILE *f, const struct rt_epilogue *e)
{
	fprintf(f, ".ep = { .act = %d, .alpha = ", e->act);
	flt(f, e->alpha);
	fputs(", .beta = ", f);
	flt(f, e->beta);
	fprintf(f, ", .has_residual = %d }", e->has_residual);
}

/* ------------------------------------------------------------------------ */
/* Descriptors                                                              */
/* ------------------------------------------------------------------------ */

static void desc_gemm(FILE *f, const struct rt_gemm_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .m = %lld, .n = %lld, .k = %lld, .trans_a = %d, .trans_b = %d,\n\t",
	        d->dtype, (long long)d->m, (long long)d->n, (long long)d->k, d->trans_a,
	        d->trans_b);
	fprintf(f, ".batch_rank = %d, .batch_dims = ", d->batch_rank);
	i64s(f, d->batch_dims, d->batch_rank);
	fputs(", .a_strides = ", f);
	i64s(f, d->a_strides, d->batch_rank);
	fputs(", .b_strides = ", f);
	i64s(f, d->b_strides, d->batch_rank);
	fputs(",\n\t.alpha = ", f);
	flt(f, d->alpha);
	fputs(", .beta = ", f);
	flt(f, d->beta);
	fprintf(f, ", .bias = %d, ", d->bias);
	epilogue(f, &d->ep);
	fputs(" }", f);
}

static void desc_conv(FILE *f, const struct rt_conv_desc *d)
{
	fprintf(f, "{ .dtype = %d, .nsp = %d, .n = %lld, .c = %lld, .m = %lld, .group = %lld,\n\t",
	        d->dtype, d->nsp, (long long)d->n, (long long)d->c, (long long)d->m,
	        (long long)d->group);
	fputs(".in = ", f);
	i64s(f, d->in, d->nsp);
	fputs(", .k = ", f);
	i64s(f, d->k, d->nsp);
	fputs(", .out = ", f);
	i64s(f, d->out, d->nsp);
	fputs(", .stride = ", f);
	i64s(f, d->stride, d->nsp);
	fputs(", .dil = ", f);
	i64s(f, d->dil, d->nsp);
	fputs(",\n\t.pad_begin = ", f);
	i64s(f, d->pad_begin, d->nsp);
	fputs(", .pad_end = ", f);
	i64s(f, d->pad_end, d->nsp);
	fputs(", ", f);
	epilogue(f, &d->ep);
	fputs(" }", f);
}

static void desc_pool(FILE *f, const struct rt_pool_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .kind = %d, .nsp = %d, .n = %lld, .c = %lld,\n\t.in = ", d->dtype,
	        d->kind, d->nsp, (long long)d->n, (long long)d->c);
	i64s(f, d->in, d->nsp);
	fputs(", .k = ", f);
	i64s(f, d->k, d->nsp);
	fputs(", .out = ", f);
	i64s(f, d->out, d->nsp);
	fputs(", .stride = ", f);
	i64s(f, d->stride, d->nsp);
	fputs(", .dil = ", f);
	i64s(f, d->dil, d->nsp);
	fputs(",\n\t.pad_begin = ", f);
	i64s(f, d->pad_begin, d->nsp);
	fputs(", .pad_end = ", f);
	i64s(f, d->pad_end, d->nsp);
	fprintf(f, ", .count_include_pad = %d, .p = %d, .storage_order = %d }",
	        d->count_include_pad, d->p, d->storage_order);
}

static void desc_reduce(FILE *f, const struct rt_reduce_desc *d)
{
	fprintf(f, "{ .dtype = %d, .kind = %d, .rank = %d, .dims = ", d->dtype, d->kind, d->rank);
	i64s(f, d->dims, d->rank);
	fprintf(f, ", .axes_mask = 0x%xu }", d->axes_mask);
}

static void desc_copy(FILE *f, const struct rt_copy_desc *d)
{
	fprintf(f, "{ .esize = %d, .rank = %d, .dims = ", d->esize, d->rank);
	i64s(f, d->dims, d->rank);
	fprintf(f, ", .offset = %lld, .strides = ", (long long)d->offset);
	i64s(f, d->strides, d->rank);
	if (d->dst_dense) {
		fputs(", .dst_dense = 1 }", f);
	} else {
		fprintf(f, ",\n\t.dst_offset = %lld, .dst_strides = ", (long long)d->dst_offset);
		i64s(f, d->dst_strides, d->rank);
		fputs(" }", f);
	}
}

static void desc_pad(FILE *f, const struct rt_pad_desc *d)
{
	fprintf(f, "{ .esize = %d, .mode = %d, .rank = %d, .in_dims = ", d->esize, d->mode,
	        d->rank);
	i64s(f, d->in_dims, d->rank);
	fputs(", .pads = ", f);
	i64s(f, d->pads, 2 * d->rank);
	fputs(", .value = {", f);
	for (int i = 0; i < 8; i++)
		fprintf(f, "%s%u", i ? ", " : "", d->value[i]);
	fputs("} }", f);
}

static void desc_resize(FILE *f, const struct rt_resize_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .mode = %d, .coord = %d, .nearest = %d, .rank = %d,\n\t.in_dims = ",
	        d->dtype, d->mode, d->coord, d->nearest, d->rank);
	i64s(f, d->in_dims, d->rank);
	fputs(", .out_dims = ", f);
	i64s(f, d->out_dims, d->rank);
	fputs(", .scales = {", f);
	for (int i = 0; i < d->rank; i++) {
		char buf[48];
		ir_format_double(d->scales[i], buf, sizeof buf);
		fprintf(f, "%s%s", i ? ", " : "", buf);
	}
	fputs("}, .roi = {", f);
	for (int i = 0; i < 2 * d->rank; i++) {
		fputs(i ? ", " : "", f);
		flt(f, d->roi[i]);
	}
	fputs("},\n\t.cubic_a = ", f);
	flt(f, d->cubic_a);
	fprintf(f, ", .exclude_outside = %d, .extrapolation = ", d->exclude_outside);
	flt(f, d->extrapolation);
	fputs(" }", f);
}

static void desc_simple(FILE *f, const struct cg_step *s)
{
	const union cg_desc *d = &s->d;
	switch (s->lib) {
	case CG_LIB_SOFTMAX:
		fprintf(f,
		        "{ .dtype = %d, .kind = %d, .outer = %lld, .axis = %lld, .inner = %lld }",
		        d->softmax.dtype, d->softmax.kind, (long long)d->softmax.outer,
		        (long long)d->softmax.axis, (long long)d->softmax.inner);
		break;
	case CG_LIB_LAYERNORM:
		fprintf(f, "{ .dtype = %d, .rows = %lld, .cols = %lld, .eps = ", d->layernorm.dtype,
		        (long long)d->layernorm.rows, (long long)d->layernorm.cols);
		flt(f, d->layernorm.eps);
		fputs(" }", f);
		break;
	case CG_LIB_INSTNORM:
		fprintf(f, "{ .dtype = %d, .n = %lld, .c = %lld, .spatial = %lld, .eps = ",
		        d->instnorm.dtype, (long long)d->instnorm.n, (long long)d->instnorm.c,
		        (long long)d->instnorm.spatial);
		flt(f, d->instnorm.eps);
		fputs(" }", f);
		break;
	case CG_LIB_LRN:
		fprintf(f,
		        "{ .dtype = %d, .n = %lld, .c = %lld, .spatial = %lld, .size = %lld, "
		        ".alpha = ",
		        d->lrn.dtype, (long long)d->lrn.n, (long long)d->lrn.c,
		        (long long)d->lrn.spatial, (long long)d->lrn.size);
		flt(f, d->lrn.alpha);
		fputs(", .beta = ", f);
		flt(f, d->lrn.beta);
		fputs(", .bias = ", f);
		flt(f, d->lrn.bias);
		fputs(" }", f);
		break;
	case CG_LIB_ARG:
		fprintf(f,
		        "{ .dtype = %d, .is_min = %d, .select_last = %d, .outer = %lld, .axis = "
		        "%lld, "
		        ".inner = %lld }",
		        d->arg.dtype, d->arg.is_min, d->arg.select_last, (long long)d->arg.outer,
		        (long long)d->arg.axis, (long long)d->arg.inner);
		break;
	case CG_LIB_CUMSUM:
		fprintf(f,
		        "{ .dtype = %d, .exclusive = %d, .reverse = %d, .outer = %lld, .axis = "
		        "%lld, "
		        ".inner = %lld }",
		        d->cumsum.dtype, d->cumsum.exclusive, d->cumsum.reverse,
		        (long long)d->cumsum.outer, (long long)d->cumsum.axis,
		        (long long)d->cumsum.inner);
		break;
	case CG_LIB_GATHER:
		fprintf(f,
		        "{ .esize = %d, .index_dtype = %d, .outer = %lld, .axis = %lld, .inner = "
		        "%lld, "
		        ".nidx = %lld }",
		        d->gather.esize, d->gather.index_dtype, (long long)d->gather.outer,
		        (long long)d->gather.axis, (long long)d->gather.inner,
		        (long long)d->gather.nidx);
		break;
	case CG_LIB_GATHER_ELEMENTS:
		fprintf(f,
		        "{ .esize = %d, .index_dtype = %d, .rank = %d, .axis = %d, .data_dims = ",
		        d->gather_elements.esize, d->gather_elements.index_dtype,
		        d->gather_elements.rank, d->gather_elements.axis);
		i64s(f, d->gather_elements.data_dims, d->gather_elements.rank);
		fputs(", .index_dims = ", f);
		i64s(f, d->gather_elements.index_dims, d->gather_elements.rank);
		fputs(" }", f);
		break;
	case CG_LIB_SCATTER_ELEMENTS: {
		static const char *const reductions[] = { "RT_SCATTER_NONE", "RT_SCATTER_ADD",
			                                  "RT_SCATTER_MUL", "RT_SCATTER_MAX",
			                                  "RT_SCATTER_MIN" };
		const struct rt_scatter_elements_desc *se = &d->scatter_elements;
		fprintf(f,
		        "{ .dtype = %d, .index_dtype = %d, .reduction = %s, "
		        ".rank = %d, .axis = %d, .data_dims = ",
		        se->dtype, se->index_dtype, reductions[se->reduction], se->rank, se->axis);
		i64s(f, se->data_dims, se->rank);
		fputs(", .index_dims = ", f);
		i64s(f, se->index_dims, se->rank);
		fputs(" }", f);
		break;
	}
	case CG_LIB_TILE:
		fprintf(f, "{ .esize = %d, .rank = %d, .in_dims = ", d->tile.esize, d->tile.rank);
		i64s(f, d->tile.in_dims, d->tile.rank);
		fputs(", .repeats = ", f);
		i64s(f, d->tile.repeats, d->tile.rank);
		fputs(" }", f);
		break;
	case CG_LIB_TRILU:
		fprintf(f,
		        "{ .esize = %d, .upper = %d, .batch = %lld, .rows = %lld, .cols = %lld, .k "
		        "= %lld }",
		        d->trilu.esize, d->trilu.upper, (long long)d->trilu.batch,
		        (long long)d->trilu.rows, (long long)d->trilu.cols, (long long)d->trilu.k);
		break;
	default: ir_panic(__FILE__, __LINE__, "no descriptor printer for lib %d", s->lib);
	}
}

static const struct {
	const char *type, *fn;
} libs[CG_LIB_COUNT] = {
	[CG_LIB_GEMM] = { "rt_gemm_desc", "rt_gemm" },
	[CG_LIB_CONV] = { "rt_conv_desc", "rt_conv" },
	[CG_LIB_CONV_TRANSPOSE] = { "rt_conv_desc", "rt_conv_transpose" },
	[CG_LIB_POOL] = { "rt_pool_desc", "rt_pool" },
	[CG_LIB_SOFTMAX] = { "rt_softmax_desc", "rt_softmax" },
	[CG_LIB_LAYERNORM] = { "rt_layernorm_desc", "rt_layernorm" },
	[CG_LIB_INSTNORM] = { "rt_instnorm_desc", "rt_instnorm" },
	[CG_LIB_LRN] = { "rt_lrn_desc", "rt_lrn" },
	[CG_LIB_REDUCE] = { "rt_reduce_desc", "rt_reduce" },
	[CG_LIB_ARG] = { "rt_arg_desc", "rt_arg" },
	[CG_LIB_CUMSUM] = { "rt_cumsum_desc", "rt_cumsum" },
	[CG_LIB_COPY] = { "rt_copy_desc", "rt_copy" },
	[CG_LIB_GATHER] = { "rt_gather_desc", "rt_gather" },
	[CG_LIB_GATHER_ELEMENTS] = { "rt_gather_elements_desc", "rt_gather_elements" },
	[CG_LIB_SCATTER_ELEMENTS] = { "rt_scatter_elements_desc", "rt_scatter_elements" },
	[CG_LIB_PAD] = { "rt_pad_desc", "rt_pad" },
	[CG_LIB_TILE] = { "rt_tile_desc", "rt_tile" },
	[CG_LIB_TRILU] = { "rt_trilu_desc", "rt_trilu" },
	[CG_LIB_RESIZE] = { "rt_resize_desc", "rt_resize" },
};

static void print_desc_fields(FILE *f, const struct cg_step *s, const union cg_desc *d);

/* A descriptor initializer; ydtype (set by the CUDA target only) is added
 * before the closing brace when it is not 0. */
static void print_desc(FILE *f, const struct cg_step *s, const union cg_desc *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int yd = cg_step_ydtype(s);
	if (!m)
		ir_panic(__FILE__, __LINE__, "out of memory printing a descriptor");
	print_desc_fields(m, s, d);
	fclose(m);
	if (yd && len >= 2 && !strcmp(buf + len - 2, " }")) {
		buf[len - 2] = 0;
		fprintf(f, "%s, .ydtype = %d }", buf, yd);
	} else {
		fputs(buf, f);
	}
	free(buf);
}

static void print_desc_fields(FILE *f, const struct cg_step *s, const union cg_desc *d)
{
	switch (s->lib) {
	case CG_LIB_GEMM: desc_gemm(f, &d->gemm); break;
	case CG_LIB_CONV:
	case CG_LIB_CONV_TRANSPOSE: desc_conv(f, &d->conv); break;
	case CG_LIB_POOL: desc_pool(f, &d->pool); break;
	case CG_LIB_REDUCE: desc_reduce(f, &d->reduce); break;
	case CG_LIB_COPY: desc_copy(f, &d->copy); break;
	case CG_LIB_PAD: desc_pad(f, &d->pad); break;
	case CG_LIB_RESIZE: desc_resize(f, &d->resize); break;
	default: desc_simple(f, s); break;
	}
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

static void arg_list(FILE *f, const struct cg_plan *p, const struct cg_step *s, const int *order,
                     int n)
{
	for (int i = 0; i < n; i++) {
		fputs(", ", f);
		arg_ref(f, p, s, order[i]);
	}
}

/* The conversions of s's staged inputs (before) or outputs (after). */
static void stage_calls(FILE *f, const struct cg_plan *p, const struct cg_step *s, bool outputs)
{
	for (int i = 0; i < s->nstages; i++) {
		const struct cg_stage *st = &s->stages[i];
		const char *half = s->args[st->arg]->type.dtype == IR_F16 ? "RT_F16" : "RT_BF16";
		if ((st->arg < s->nout) != outputs)
			continue;
		fputs("\tCALL(rt_convert(ctx, ", f);
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

/* The call for library step s (its descriptor is d<index>). */
static void lib_call(FILE *f, const struct cg_plan *p, const struct cg_step *s, int index)
{
	/* argument orders of the runtime calls, as indices into s->args */
	static const int gemm[] = { 1, 2, 3, 4, 0 }, conv[] = { 1, 2, 3, 4, 0 },
	                 convt[] = { 1, 2, 3, 0 }, pool[] = { 2, 0, 1 }, two[] = { 1, 0 },
	                 gather[] = { 1, 2, 0 }, ln[] = { 3, 4, 5, 0, 1, 2 },
	                 inorm[] = { 1, 2, 3, 0 };
	static const int scatter[] = { 1, 2, 3, 0 };
	const char *fn = libs[s->lib].fn;
	bool cuda = cg_target_cuda(p->opt);
	/* rt_X(ctx, &d<s>, ...) on the CPU; rtc_X(M, &d<s>, ...) on CUDA, and
	 * rtc_gemm(M, model->p<s>, ...) where a plan stands for the descriptor */
	const char *pre = cuda ? "rtc_" : "rt_", *ctx = cuda ? "M" : "ctx";
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
	if (cuda &&
	    (s->lib == CG_LIB_GEMM || s->lib == CG_LIB_CONV || s->lib == CG_LIB_CONV_TRANSPOSE))
		fprintf(f, "\tCALL(%s%s(M, model->p%d", pre, fn + 3, index);
	else
		fprintf(f, "\tCALL(%s%s(%s, &d%d", pre, fn + 3, ctx, index);
	switch (s->lib) {
	case CG_LIB_GEMM: arg_list(f, p, s, gemm, 5); break;
	case CG_LIB_CONV: arg_list(f, p, s, conv, 5); break;
	case CG_LIB_CONV_TRANSPOSE: arg_list(f, p, s, convt, 4); break;
	case CG_LIB_POOL: arg_list(f, p, s, pool, 3); break;
	case CG_LIB_GATHER:
	case CG_LIB_GATHER_ELEMENTS: arg_list(f, p, s, gather, 3); break;
	case CG_LIB_SCATTER_ELEMENTS: arg_list(f, p, s, scatter, 4); break;
	case CG_LIB_LAYERNORM: arg_list(f, p, s, ln, 6); break;
	case CG_LIB_INSTNORM: arg_list(f, p, s, inorm, 4); break;
	default: arg_list(f, p, s, two, 2); break;
	}
	if (!cuda && (s->lib == CG_LIB_CONV || s->lib == CG_LIB_CONV_TRANSPOSE))
		fprintf(f, ", A(%lld)", (long long)s->ws_offset);
	fputs("));\n", f);
	stage_calls(f, p, s, true);
}

/* ------------------------------------------------------------------------ */
/* Files                                                                    */
/* ------------------------------------------------------------------------ */

static void upper(char *dst, const char *src, size_t n)
{
	size_t i = 0;
	for (; src[i] && i + 1 < n; i++)
		dst[i] = (char)toupper((unsigned char)src[i]);
	dst[i] = 0;
}

static void io_macros(FILE *f, const char *N, const char *kind, int i, const struct ir_value *v)
{
	fprintf(f, "#define %s_%s%d_NAME ", N, kind, i);
	cg_print_c_string(f, v->name);
	fprintf(f, "\n#define %s_%s%d_DTYPE %d /* %s */\n", N, kind, i,
	        ir_dtypes[v->type.dtype].onnx, ir_dtype_name(v->type.dtype));
	fprintf(f, "#define %s_%s%d_RANK %d\n", N, kind, i, v->type.rank);
	fprintf(f, "#define %s_%s%d_DIMS ", N, kind, i);
	i64s(f, v->type.dims, v->type.rank);
	fprintf(f, "\n#define %s_%s%d_ELEMS %lld\n", N, kind, i,
	        (long long)ir_type_elems(&v->type));
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
	upper(N, n, sizeof N);
	fprintf(f,
	        "/* %s.h - generated by onnxc %s. Do not edit. The API is described in\n"
	        " * onnxc's docs/api.md. */\n",
	        n, ONNXC_VERSION);
	fprintf(f, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n\n", N, N);
	fprintf(f, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	fprintf(f, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n", N, m->ninputs, N,
	        m->noutputs);
	fprintf(f, "#define %s_ARENA_BYTES %lld\n#define %s_WEIGHT_BYTES %lld\n", N,
	        (long long)p->arena_bytes, N, (long long)p->weight_bytes);
	fprintf(f, "#define %s_MODEL_ID 0x%016llxull\n\n", N, (unsigned long long)p->model_id);
	for (int i = 0; i < m->ninputs; i++)
		io_macros(f, N, "INPUT", i, m->inputs[i]);
	for (int i = 0; i < m->noutputs; i++)
		io_macros(f, N, "OUTPUT", i, m->outputs[i]);
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
	        "const char *%s_strerror(int status);\n\n",
	        n, n, n, n, n, n, n, n, N, N, n, n, n, n, n);
	fprintf(f, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
	if (fclose(f) != 0) {
		ir_error(m->ctx, "writing %s failed", path);
		return false;
	}
	return true;
}

/* The descriptors, one static const per library step (d<step>). */
static void emit_descriptors(FILE *f, const struct cg_plan *p)
{
	for (int s = 0; s < p->nsteps; s++) {
		const struct cg_step *st = &p->steps[s];
		if (st->is_kernel)
			continue;
		if (st->copies) {
			fprintf(f, "static const struct rt_copy_desc d%d[%d] = {\n", s,
			        st->ncopies ? st->ncopies : 1);
			for (int i = 0; i < st->ncopies; i++) {
				fputc('\t', f);
				desc_copy(f, &st->copies[i]);
				fputs(",\n", f);
			}
			fputs("};\n", f);
		} else {
			fprintf(f, "static const struct %s d%d = ", libs[st->lib].type, s);
			print_desc(f, st, &st->d);
			fputs(";\n", f);
		}
	}
}

/* step_names[], for ONNXC_PROFILE=1. */
static void emit_step_names(FILE *f, const struct cg_plan *p)
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
static void emit_arg_checks(FILE *f, const struct ir_module *m)
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
static void emit_common_api(FILE *f, const struct cg_plan *p, const char *n, const char *N)
{
	const struct ir_module *m = p->m;
	fprintf(f,
	        "int %s_run_checked(struct %s *model, const void *const inputs[],\n"
	        "                   const size_t input_bytes[], void *const outputs[],\n"
	        "                   const size_t output_bytes[])\n{\n",
	        n, n);
	if (m->ninputs) {
		fprintf(f, "\tstatic const size_t in_bytes[] = {");
		for (int i = 0; i < m->ninputs; i++)
			fprintf(f, "%s%s_INPUT%d_BYTES", i ? ", " : " ", N, i);
		fprintf(f, " };\n");
	}
	if (m->noutputs) {
		fprintf(f, "\tstatic const size_t out_bytes[] = {");
		for (int i = 0; i < m->noutputs; i++)
			fprintf(f, "%s%s_OUTPUT%d_BYTES", i ? ", " : " ", N, i);
		fprintf(f, " };\n");
	}
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
}

/* The file's opening comment. */
static void emit_banner(FILE *f, const struct cg_plan *p, const char *n, const char *what)
{
	fprintf(f, "/* %s.c - generated by onnxc %s", n, ONNXC_VERSION);
	if (p->opt->source) {
		const char *base = strrchr(p->opt->source, '/');
		fputs(" from ", f);
		cg_print_comment_text(f, base ? base + 1 : p->opt->source);
	}
	fprintf(f, ". Do not edit.\n *\n * %s */\n", what);
}

/* The calls of steps [from, to) (shared by both targets; the macros differ). */
static void emit_steps(FILE *f, const struct cg_plan *p, const char *n, int from, int to)
{
	bool cuda = cg_target_cuda(p->opt);
	for (int s = from; s < to; s++) {
		const struct cg_step *st = &p->steps[s];
		char what[1024];
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
			if (cuda)
				fprintf(f,
				        " };\n\t\tCALL(rtc_launch(M, model->k%d, a, %d, "
				        "%lld));\n\t}\n",
				        st->k->id, st->nargs, (long long)(st->outer * st->inner));
			else
				fprintf(f, " };\n\t\trt_launch(ctx, %s_k%d, a, %lld, %lld);\n\t}\n",
				        n, st->k->code, (long long)st->outer, (long long)st->inner);
		} else {
			lib_call(f, p, st, s);
		}
		fprintf(f, "\tEND(%d);\n", s);
	}
}

static int nparts(const struct cg_plan *p)
{
	return (p->nsteps + CG_STEPS_PER_FUNCTION - 1) / CG_STEPS_PER_FUNCTION;
}

/* The static functions NAME_steps_<i> running the steps in bounded parts;
 * params is their parameter list, intro their first lines. */
static void emit_parts(FILE *f, const struct cg_plan *p, const char *n, const char *params,
                       const char *intro)
{
	for (int i = 0; i < nparts(p); i++) {
		int from = i * CG_STEPS_PER_FUNCTION, to = from + CG_STEPS_PER_FUNCTION;
		if (to > p->nsteps)
			to = p->nsteps;
		fprintf(f, "\n/* Steps %d to %d. */\nstatic int %s_steps_%d(%s)\n{\n%s", from,
		        to - 1, n, i, params, intro);
		emit_steps(f, p, n, from, to);
		fprintf(f, "\treturn RT_OK;\n}\n");
	}
}

/* The calls of the parts, in order, each returning its failure. */
static void call_parts(FILE *f, const struct cg_plan *p, const char *n, const char *args)
{
	for (int i = 0; i < nparts(p); i++)
		fprintf(f, "\tCALL(%s_steps_%d(%s));\n", n, i, args);
}

static bool finish(FILE *f, struct ir_ctx *ctx, const char *path)
{
	if (fclose(f) != 0) {
		ir_error(ctx, "writing %s failed", path);
		return false;
	}
	return true;
}

static bool emit_source_cpu(const struct cg_plan *p, FILE *f, const char *path)
{
	const char *n = p->opt->name;
	char N[128], what[256];
	struct ir_module *m = p->m;
	upper(N, n, sizeof N);
	snprintf(what, sizeof what,
	         "One runtime call per step over a %lld-byte arena; the fused elementwise\n"
	         " * kernels %s_k<i> are in %s_kernels.o.",
	         (long long)p->arena_bytes, n, n);
	emit_banner(f, p, n, what);
	fprintf(f,
	        "#include \"%s.h\"\n\n#include <math.h>\n#include <onnxc_rt.h>\n#include "
	        "<stdlib.h>\n\n",
	        n);
	fprintf(f, "struct %s {\n\tstruct rt_model m;\n};\n\n", n);
	if (p->opt->embed_weights)
		fprintf(f, "extern const unsigned char %s_weights_blob[];\n", n);
	for (int i = 0; i < p->nkernels; i++)
		if (p->kernels[i]->code == p->kernels[i]->id)
			fprintf(f, "void %s_k%d(void *const *args, int64_t begin, int64_t end);\n",
			        n, p->kernels[i]->id);
	fprintf(f, "\n#define IN(i) ((void *)inputs[i])\n#define OUT(i) (outputs[i])\n"
	           "#define W(off) ((void *)(model->m.weights + (off)))\n"
	           "#define A(off) ((void *)(model->m.arena + (off)))\n"
	           "#define CALL(x) do { int st_ = (x); if (st_) return st_; } while (0)\n"
	           "#define BEGIN(s) (t0 = rt_step_begin(&model->m))\n"
	           "#define END(s) rt_step_end(&model->m, (s), t0)\n\n");
	emit_descriptors(f, p);
	emit_step_names(f, p);
	{
		char params[256];
		snprintf(params, sizeof params,
		         "struct %s *model, struct rt_ctx *ctx, const void *const inputs[], "
		         "void *const outputs[]",
		         n);
		emit_parts(f, p, n, params, "\tdouble t0;\n\t(void)inputs;\n\t(void)outputs;\n");
	}
	fprintf(f,
	        "\nint %s_run(struct %s *model, const void *const inputs[], void *const "
	        "outputs[])\n{\n",
	        n, n);
	fprintf(f, "\tstruct rt_ctx *ctx;\n");
	emit_arg_checks(f, m);
	fprintf(f, "\tctx = model->m.ctx;\n\trt_model_begin_run(&model->m);\n");
	call_parts(f, p, n, "model, ctx, inputs, outputs");
	fprintf(f, "%s\treturn RT_OK;\n}\n\n", nparts(p) ? "" : "\t(void)ctx;\n");
	emit_common_api(f, p, n, N);

	fprintf(f,
	        "\nint %s_create(struct %s **out, const char *weights_path)\n{\n"
	        "\tstruct %s *model;\n\tint st;\n\tchar path[4096];\n"
	        "\tif (!out)\n\t\treturn RT_ERR_ARGUMENT;\n\t*out = NULL;\n"
	        "\tif (!(model = rt_calloc(1, sizeof *model)))\n\t\treturn RT_ERR_NO_MEMORY;\n",
	        n, n, n);
	if (p->opt->embed_weights)
		fprintf(f,
		        "\tst = rt_model_open(&model->m, %s_ARENA_BYTES, weights_path, "
		        "%s_weights_blob,\n"
		        "\t                   %s_MODEL_ID, %s_WEIGHT_BYTES);\n",
		        N, n, N, N);
	else
		fprintf(f,
		        "\tif (!weights_path && %s_WEIGHT_BYTES)\n"
		        "\t\tweights_path = rt_default_weights(\"%s.weights\", path, sizeof "
		        "path);\n"
		        "\tst = rt_model_open(&model->m, %s_ARENA_BYTES, weights_path, NULL, "
		        "%s_MODEL_ID,\n"
		        "\t                   %s_WEIGHT_BYTES);\n",
		        N, n, N, N, N);
	fprintf(f,
	        "\t(void)path;\n\tif (st) {\n\t\tfree(model);\n\t\treturn st;\n\t}\n"
	        "\trt_model_steps(&model->m, %d, step_names);\n",
	        p->nsteps);
	fprintf(f, "\t*out = model;\n\treturn RT_OK;\n}\n\n");
	fprintf(f,
	        "void %s_destroy(struct %s *model)\n{\n\tif (!model)\n\t\treturn;\n"
	        "\trt_model_close(&model->m);\n\tfree(model);\n}\n",
	        n, n);
	return finish(f, m->ctx, path);
}

/* What create prepares for step s (CUDA): its kernel or plan, if any;
 * false if none. */
static bool prepare_step(FILE *f, const struct cg_plan *p, const char *n, int s)
{
	const struct cg_step *st = &p->steps[s];
	if (st->is_kernel)
		fprintf(f, "\tCALL(rtc_kernel(M, \"%s_k%d\", &model->k%d));\n", n, st->k->code,
		        st->k->id);
	else if (st->lib == CG_LIB_GEMM)
		fprintf(f, "\tCALL(rtc_gemm_plan(M, &d%d, &model->p%d));\n", s, s);
	else if (st->lib == CG_LIB_CONV)
		fprintf(f, "\tCALL(rtc_conv_plan(M, &d%d, &model->p%d));\n", s, s);
	else if (st->lib == CG_LIB_CONV_TRANSPOSE)
		fprintf(f, "\tCALL(rtc_conv_transpose_plan(M, &d%d, &model->p%d));\n", s, s);
	else
		return false;
	return true;
}

/*
 * The CUDA flavour: the same steps as a function NAME_steps over device
 * pointers, run once under capture at create time (a CUDA Graph replayed by
 * every run) or directly at each run when there is no graph; GEMM and
 * convolution steps use plans made at create time, generated kernels are
 * looked up in the embedded PTX once.
 */
static bool emit_source_cuda(const struct cg_plan *p, FILE *f, const char *path, size_t ptx_bytes)
{
	const char *n = p->opt->name;
	char N[128], what[320];
	struct ir_module *m = p->m;
	upper(N, n, sizeof N);
	snprintf(what, sizeof what,
	         "CUDA (%s): one runtime call per step over a %lld-byte device arena,\n"
	         " * captured once into a CUDA Graph; the fused elementwise kernels %s_k<i>\n"
	         " * are PTX (%s_kernels.ptx), embedded as %s_ptx.",
	         p->opt->arch, (long long)p->arena_bytes, n, n, n);
	emit_banner(f, p, n, what);
	fprintf(f,
	        "#include \"%s.h\"\n\n#include <math.h>\n#include <onnxc_rt_cuda.h>\n#include "
	        "<stdlib.h>\n\n",
	        n);
	fprintf(f, "struct %s {\n\tstruct rtc_model *m;\n", n);
	for (int s = 0; s < p->nsteps; s++) {
		const struct cg_step *st = &p->steps[s];
		if (st->is_kernel)
			fprintf(f, "\tstruct rtc_fn *k%d;\n", st->k->id);
		else if (st->lib == CG_LIB_GEMM)
			fprintf(f, "\tstruct rtc_gemm *p%d;\n", s);
		else if (st->lib == CG_LIB_CONV || st->lib == CG_LIB_CONV_TRANSPOSE)
			fprintf(f, "\tstruct rtc_conv *p%d;\n", s);
	}
	fprintf(f, "};\n\n");
	fprintf(f, "extern const unsigned char %s_ptx[];\n", n);
	if (p->opt->embed_weights)
		fprintf(f, "extern const unsigned char %s_weights_blob[];\n", n);
	fprintf(f, "\n#define M (model->m)\n"
	           "#define IN(i) rtc_input(M, (i))\n#define OUT(i) rtc_output(M, (i))\n"
	           "#define W(off) ((void *)(rtc_weights(M) + (off)))\n"
	           "#define A(off) ((void *)(rtc_arena(M) + (off)))\n"
	           "#define CALL(x) do { int st_ = (x); if (st_) return st_; } while (0)\n"
	           "#define BEGIN(s) rtc_step_begin(M, (s))\n"
	           "#define END(s) rtc_step_end(M, (s))\n\n");
	emit_descriptors(f, p);
	emit_step_names(f, p);
	if (m->ninputs) {
		fprintf(f, "\nstatic const size_t input_sizes[] = {");
		for (int i = 0; i < m->ninputs; i++)
			fprintf(f, "%s%s_INPUT%d_BYTES", i ? ", " : " ", N, i);
		fprintf(f, " };\n");
	}
	if (m->noutputs) {
		fprintf(f, "static const size_t output_sizes[] = {");
		for (int i = 0; i < m->noutputs; i++)
			fprintf(f, "%s%s_OUTPUT%d_BYTES", i ? ", " : " ", N, i);
		fprintf(f, " };\n");
	}

	/* the steps */
	{
		char params[160];
		snprintf(params, sizeof params, "struct %s *model", n);
		emit_parts(f, p, n, params, "");
	}
	fprintf(f, "\nstatic int %s_steps(struct %s *model)\n{\n", n, n);
	call_parts(f, p, n, "model");
	fprintf(f, "%s\treturn RT_OK;\n}\n\n", nparts(p) ? "" : "\t(void)model;\n");

	fprintf(f,
	        "int %s_run(struct %s *model, const void *const inputs[], void *const "
	        "outputs[])\n{\n",
	        n, n);
	emit_arg_checks(f, m);
	fprintf(f,
	        "\tCALL(rtc_run_begin(M, inputs));\n"
	        "\tCALL(rtc_direct(M) ? %s_steps(model) : rtc_run_graph(M));\n"
	        "\treturn rtc_run_end(M, outputs);\n}\n\n",
	        n);
	emit_common_api(f, p, n, N);

	/* create: open, plans, kernels (in parts, as the steps), capture */
	for (int i = 0; i < nparts(p); i++) {
		int from = i * CG_STEPS_PER_FUNCTION, to = from + CG_STEPS_PER_FUNCTION;
		fprintf(f, "\n/* The plans and kernels of steps %d to %d. */\n", from,
		        (to < p->nsteps ? to : p->nsteps) - 1);
		fprintf(f, "static int %s_prepare_%d(struct %s *model)\n{\n", n, i, n);
		bool any = false;
		for (int s = from; s < to && s < p->nsteps; s++)
			any |= prepare_step(f, p, n, s);
		fprintf(f, "%s\treturn RT_OK;\n}\n", any ? "" : "\t(void)model;\n");
	}
	fprintf(f,
	        "\n/* Plans, kernels and the graph; a failure leaves nothing behind. */\n"
	        "static int %s_prepare(struct %s *model)\n{\n",
	        n, n);
	for (int i = 0; i < nparts(p); i++)
		fprintf(f, "\tCALL(%s_prepare_%d(model));\n", n, i);
	fprintf(f,
	        "\tCALL(rtc_capture_begin(M));\n"
	        "\tif (!rtc_direct(M)) {\n"
	        "\t\tint st = %s_steps(model), st2 = rtc_capture_end(M);\n"
	        "\t\treturn st ? st : st2;\n"
	        "\t}\n"
	        "\treturn rtc_capture_end(M);\n}\n\n",
	        n);
	fprintf(f,
	        "int %s_create(struct %s **out, const char *weights_path)\n{\n"
	        "\tstruct %s *model;\n\tstruct rtc_model_info info = { 0 };\n\tint st;\n"
	        "\tchar path[4096];\n"
	        "\tif (!out)\n\t\treturn RT_ERR_ARGUMENT;\n\t*out = NULL;\n"
	        "\tif (!(model = rt_calloc(1, sizeof *model)))\n\t\treturn RT_ERR_NO_MEMORY;\n",
	        n, n, n);
	if (!p->opt->embed_weights)
		fprintf(f,
		        "\tif (!weights_path && %s_WEIGHT_BYTES)\n"
		        "\t\tweights_path = rt_default_weights(\"%s.weights\", path, sizeof "
		        "path);\n",
		        N, n);
	fprintf(f,
	        "\tinfo.arena_bytes = %s_ARENA_BYTES;\n\tinfo.weights_path = weights_path;\n"
	        "\tinfo.embedded_weights = %s;\n\tinfo.model_id = %s_MODEL_ID;\n"
	        "\tinfo.weights_bytes = %s_WEIGHT_BYTES;\n"
	        "\tinfo.ptx = (const char *)%s_ptx; /* %zu bytes */\n"
	        "\tinfo.ninputs = %d;\n\tinfo.noutputs = %d;\n"
	        "\tinfo.input_bytes = %s;\n\tinfo.output_bytes = %s;\n"
	        "\tinfo.nsteps = %d;\n\tinfo.step_names = step_names;\n"
	        "\t(void)path;\n",
	        N,
	        p->opt->embed_weights ? ir_arena_printf(&p->m->arena, "%s_weights_blob", n)
	                              : "NULL",
	        N, N, n, ptx_bytes, m->ninputs, m->noutputs, m->ninputs ? "input_sizes" : "NULL",
	        m->noutputs ? "output_sizes" : "NULL", p->nsteps);
	fprintf(f,
	        "\tif ((st = rtc_model_open(&model->m, &info)) || (st = %s_prepare(model))) {\n"
	        "\t\trtc_model_close(model->m);\n\t\tfree(model);\n\t\treturn st;\n\t}\n"
	        "\t*out = model;\n\treturn RT_OK;\n}\n\n",
	        n);
	fprintf(f,
	        "void %s_destroy(struct %s *model)\n{\n\tif (!model)\n\t\treturn;\n"
	        "\trtc_model_close(model->m);\n\tfree(model);\n}\n",
	        n, n);
	return finish(f, m->ctx, path);
}

bool cg_emit_source(const struct cg_plan *p, const char *path, size_t ptx_bytes)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		ir_error(p->m->ctx, "cannot write %s", path);
		return false;
	}
	return cg_target_cuda(p->opt) ? emit_source_cuda(p, f, path, ptx_bytes)
	                              : emit_source_cpu(p, f, path);
}
