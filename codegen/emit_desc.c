/*
 * emit_desc.c - the descriptors in NAME.c: one static const initializer per
 * library step, printed field by field from the struct lowering filled.
 *
 * Each descriptor type has its printer desc_<member> (the member of union
 * cg_desc that libcalls.h's desc column names); the dispatch is generated
 * from the table, so a row without a printer does not build. Floats print
 * as the shortest literal that reads back as the same float.
 */
#include "emit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Fields                                                                   */
/* ------------------------------------------------------------------------ */

void cg_c_i64s(FILE *f, const int64_t *v, int n)
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
	cg_c_i64s(f, d->batch_dims, d->batch_rank);
	fputs(", .a_strides = ", f);
	cg_c_i64s(f, d->a_strides, d->batch_rank);
	fputs(", .b_strides = ", f);
	cg_c_i64s(f, d->b_strides, d->batch_rank);
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
	cg_c_i64s(f, d->in, d->nsp);
	fputs(", .k = ", f);
	cg_c_i64s(f, d->k, d->nsp);
	fputs(", .out = ", f);
	cg_c_i64s(f, d->out, d->nsp);
	fputs(", .stride = ", f);
	cg_c_i64s(f, d->stride, d->nsp);
	fputs(", .dil = ", f);
	cg_c_i64s(f, d->dil, d->nsp);
	fputs(",\n\t.pad_begin = ", f);
	cg_c_i64s(f, d->pad_begin, d->nsp);
	fputs(", .pad_end = ", f);
	cg_c_i64s(f, d->pad_end, d->nsp);
	fputs(", ", f);
	epilogue(f, &d->ep);
	fputs(" }", f);
}

static void desc_pool(FILE *f, const struct rt_pool_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .kind = %d, .nsp = %d, .n = %lld, .c = %lld,\n\t.in = ", d->dtype,
	        d->kind, d->nsp, (long long)d->n, (long long)d->c);
	cg_c_i64s(f, d->in, d->nsp);
	fputs(", .k = ", f);
	cg_c_i64s(f, d->k, d->nsp);
	fputs(", .out = ", f);
	cg_c_i64s(f, d->out, d->nsp);
	fputs(", .stride = ", f);
	cg_c_i64s(f, d->stride, d->nsp);
	fputs(", .dil = ", f);
	cg_c_i64s(f, d->dil, d->nsp);
	fputs(",\n\t.pad_begin = ", f);
	cg_c_i64s(f, d->pad_begin, d->nsp);
	fputs(", .pad_end = ", f);
	cg_c_i64s(f, d->pad_end, d->nsp);
	fprintf(f, ", .count_include_pad = %d, .p = %d, .storage_order = %d }",
	        d->count_include_pad, d->p, d->storage_order);
}

static void desc_reduce(FILE *f, const struct rt_reduce_desc *d)
{
	fprintf(f, "{ .dtype = %d, .kind = %d, .rank = %d, .dims = ", d->dtype, d->kind, d->rank);
	cg_c_i64s(f, d->dims, d->rank);
	fprintf(f, ", .axes_mask = 0x%xu }", d->axes_mask);
}

static void desc_trap(FILE *f, const struct rt_trap_desc *d)
{
	fprintf(f, "{ .bytes = %lld }", (long long)d->bytes);
}

static void desc_copy(FILE *f, const struct rt_copy_desc *d)
{
	fprintf(f, "{ .esize = %d, .rank = %d, .dims = ", d->esize, d->rank);
	cg_c_i64s(f, d->dims, d->rank);
	fprintf(f, ", .offset = %lld, .strides = ", (long long)d->offset);
	cg_c_i64s(f, d->strides, d->rank);
	if (d->dst_dense) {
		fputs(", .dst_dense = 1 }", f);
	} else {
		fprintf(f, ",\n\t.dst_offset = %lld, .dst_strides = ", (long long)d->dst_offset);
		cg_c_i64s(f, d->dst_strides, d->rank);
		fputs(" }", f);
	}
}

static void desc_pad(FILE *f, const struct rt_pad_desc *d)
{
	fprintf(f, "{ .esize = %d, .mode = %d, .rank = %d, .in_dims = ", d->esize, d->mode,
	        d->rank);
	cg_c_i64s(f, d->in_dims, d->rank);
	fputs(", .pads = ", f);
	cg_c_i64s(f, d->pads, 2 * d->rank);
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
	cg_c_i64s(f, d->in_dims, d->rank);
	fputs(", .out_dims = ", f);
	cg_c_i64s(f, d->out_dims, d->rank);
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

static void desc_softmax(FILE *f, const struct rt_softmax_desc *d)
{
	fprintf(f, "{ .dtype = %d, .kind = %d, .outer = %lld, .axis = %lld, .inner = %lld }",
	        d->dtype, d->kind, (long long)d->outer, (long long)d->axis, (long long)d->inner);
}

static void desc_layernorm(FILE *f, const struct rt_layernorm_desc *d)
{
	fprintf(f, "{ .dtype = %d, .rows = %lld, .cols = %lld, .eps = ", d->dtype,
	        (long long)d->rows, (long long)d->cols);
	flt(f, d->eps);
	fputs(" }", f);
}

static void desc_instnorm(FILE *f, const struct rt_instnorm_desc *d)
{
	fprintf(f, "{ .dtype = %d, .n = %lld, .c = %lld, .spatial = %lld, .eps = ", d->dtype,
	        (long long)d->n, (long long)d->c, (long long)d->spatial);
	flt(f, d->eps);
	fputs(" }", f);
}

static void desc_lrn(FILE *f, const struct rt_lrn_desc *d)
{
	fprintf(f, "{ .dtype = %d, .n = %lld, .c = %lld, .spatial = %lld, .size = %lld, .alpha = ",
	        d->dtype, (long long)d->n, (long long)d->c, (long long)d->spatial,
	        (long long)d->size);
	flt(f, d->alpha);
	fputs(", .beta = ", f);
	flt(f, d->beta);
	fputs(", .bias = ", f);
	flt(f, d->bias);
	fputs(" }", f);
}

static void desc_arg(FILE *f, const struct rt_arg_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .is_min = %d, .select_last = %d, .outer = %lld, .axis = %lld, "
	        ".inner = %lld }",
	        d->dtype, d->is_min, d->select_last, (long long)d->outer, (long long)d->axis,
	        (long long)d->inner);
}

static void desc_topk(FILE *f, const struct rt_topk_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .smallest = %d, .outer = %lld, .axis = %lld, .inner = %lld, "
	        ".k = %lld }",
	        d->dtype, d->smallest, (long long)d->outer, (long long)d->axis, (long long)d->inner,
	        (long long)d->k);
}

static void desc_linattn(FILE *f, const struct rt_linattn_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .gated = %d, .delta = %d, .batch = %lld, .seq = %lld, "
	        ".q_heads = %lld, .kv_heads = %lld, .dk = %lld, .dv = %lld, .decay_width = %lld, "
	        ".beta_width = %lld, .erase_width = %lld, .scale = ",
	        d->dtype, d->gated, d->delta, (long long)d->batch, (long long)d->seq,
	        (long long)d->q_heads, (long long)d->kv_heads, (long long)d->dk, (long long)d->dv,
	        (long long)d->decay_width, (long long)d->beta_width, (long long)d->erase_width);
	flt(f, d->scale);
	if (d->sdtype)
		fprintf(f, ", .sdtype = %d", d->sdtype);
	fputs(" }", f);
}

static void desc_rnn(FILE *f, const struct rt_rnn_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .cell = %d, .dirs = %d, .reverse = %d, .seq = %lld, .batch = %lld, "
	        ".input = %lld, .hidden = %lld, .act = { ",
	        d->dtype, d->cell, d->dirs, d->reverse, (long long)d->seq, (long long)d->batch,
	        (long long)d->input, (long long)d->hidden);
	for (int i = 0; i < 2; i++)
		fprintf(f, "{ %d, %d, %d }%s", d->act[i][0], d->act[i][1], d->act[i][2],
		        i ? " }" : ", ");
	for (int a = 0; a < 2; a++) {
		const float(*v)[3] = a ? d->beta : d->alpha;
		fputs(a ? ", .beta = { " : ", .alpha = { ", f);
		for (int i = 0; i < 6; i++) {
			fputs(i % 3 ? ", " : i ? " }, { " : "{ ", f);
			flt(f, v[i / 3][i % 3]);
		}
		fputs(" } }", f);
	}
	fputs(", .clip = ", f);
	flt(f, d->clip);
	fprintf(f, ", .input_forget = %d, .linear_before_reset = %d", d->input_forget,
	        d->linear_before_reset);
	fputs(" }", f);
}

static void desc_attention(FILE *f, const struct rt_attention_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .mask = %d, .causal = %d, .causal_offset = %lld, .batch = %lld, "
	        ".q_heads = %lld, .kv_heads = %lld, .lq = %lld, .lk = %lld, .dk = %lld, .dv = "
	        "%lld, "
	        ".mask_strides = { %lld, %lld, %lld, %lld }, .scale = ",
	        d->dtype, d->mask, d->causal, (long long)d->causal_offset, (long long)d->batch,
	        (long long)d->q_heads, (long long)d->kv_heads, (long long)d->lq, (long long)d->lk,
	        (long long)d->dk, (long long)d->dv, (long long)d->mask_strides[0],
	        (long long)d->mask_strides[1], (long long)d->mask_strides[2],
	        (long long)d->mask_strides[3]);
	flt(f, d->scale);
	fputs(", .softcap = ", f);
	flt(f, d->softcap);
	if (d->mdtype)
		fprintf(f, ", .mdtype = %d", d->mdtype);
	fputs(" }", f);
}

static void desc_cumsum(FILE *f, const struct rt_cumsum_desc *d)
{
	fprintf(f,
	        "{ .dtype = %d, .exclusive = %d, .reverse = %d, .outer = %lld, .axis = %lld, "
	        ".inner = %lld, .prod = %d }",
	        d->dtype, d->exclusive, d->reverse, (long long)d->outer, (long long)d->axis,
	        (long long)d->inner, d->prod);
}

static void desc_gather(FILE *f, const struct rt_gather_desc *d)
{
	fprintf(f,
	        "{ .esize = %d, .index_dtype = %d, .outer = %lld, .axis = %lld, .inner = %lld, "
	        ".nidx = %lld }",
	        d->esize, d->index_dtype, (long long)d->outer, (long long)d->axis,
	        (long long)d->inner, (long long)d->nidx);
}

static void desc_gather_elements(FILE *f, const struct rt_gather_elements_desc *d)
{
	fprintf(f,
	        "{ .esize = %d, .index_dtype = %d, .rank = %d, .axis = %d, .data_dims = ", d->esize,
	        d->index_dtype, d->rank, d->axis);
	cg_c_i64s(f, d->data_dims, d->rank);
	fputs(", .index_dims = ", f);
	cg_c_i64s(f, d->index_dims, d->rank);
	fputs(" }", f);
}

static void desc_scatter_elements(FILE *f, const struct rt_scatter_elements_desc *d)
{
	static const char *const reductions[] = { "RT_SCATTER_NONE", "RT_SCATTER_ADD",
		                                  "RT_SCATTER_MUL", "RT_SCATTER_MAX",
		                                  "RT_SCATTER_MIN" };
	fprintf(f,
	        "{ .dtype = %d, .index_dtype = %d, .reduction = %s, "
	        ".rank = %d, .axis = %d, .data_dims = ",
	        d->dtype, d->index_dtype, reductions[d->reduction], d->rank, d->axis);
	cg_c_i64s(f, d->data_dims, d->rank);
	fputs(", .index_dims = ", f);
	cg_c_i64s(f, d->index_dims, d->rank);
	fputs(" }", f);
}

static void desc_tile(FILE *f, const struct rt_tile_desc *d)
{
	fprintf(f, "{ .esize = %d, .rank = %d, .in_dims = ", d->esize, d->rank);
	cg_c_i64s(f, d->in_dims, d->rank);
	fputs(", .repeats = ", f);
	cg_c_i64s(f, d->repeats, d->rank);
	fputs(" }", f);
}

static void desc_trilu(FILE *f, const struct rt_trilu_desc *d)
{
	fprintf(f,
	        "{ .esize = %d, .upper = %d, .batch = %lld, .rows = %lld, .cols = %lld, "
	        ".k = %lld }",
	        d->esize, d->upper, (long long)d->batch, (long long)d->rows, (long long)d->cols,
	        (long long)d->k);
}

/* ------------------------------------------------------------------------ */
/* Steps' descriptors                                                       */
/* ------------------------------------------------------------------------ */

/* The fields of s's descriptor, by its row's printer. */
static void print_desc_fields(FILE *f, const struct cg_step *s, const union cg_desc *d)
{
	switch (s->lib) {
#define CG_PRINT_D(m)  desc_##m(f, &d->m)
#define CG_PRINT_AS(m) desc_##m(f, &d->m)
#define CG_LIB(id, desc, ...)    \
	case CG_LIB_##id:        \
		CG_PRINT_##desc; \
		break;
#include "libcalls.h"
	case CG_LIB_COUNT: ir_panic(__FILE__, __LINE__, "no library call %d", s->lib);
	}
}

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

/* The descriptor types, "rt_<member>_desc" by row. */
static const char *const desc_types[CG_LIB_COUNT] = {
#define CG_LIB(id, desc, ...) [CG_LIB_##id] = "rt_" CG_XSTR(CG_MEMBER_##desc) "_desc",
#include "libcalls.h"
};

/* The descriptors, one static const per library step (d<step>). */
void cg_c_descriptors(FILE *f, const struct cg_plan *p)
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
			fprintf(f, "static const struct %s d%d = ", desc_types[st->lib], s);
			print_desc(f, st, &st->d);
			fputs(";\n", f);
		}
	}
}
