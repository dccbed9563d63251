/*
 * grad_resize.c - the gradient rule of resize (ir/eval_resize.c), shared
 * with pad in its edge and reflect modes.
 *
 * Both ops are separable: each output index along a dimension reads a few
 * input indices with fixed weights, so the gradient is applied one
 * dimension at a time, as a matrix product where the map is dense and as a
 * scatter-add where it is sparse.
 */
#include "grad.h"

#include <string.h>

/*
 * Resize, and pad in edge or reflect mode, are linear and separable: along
 * each dimension d, output o is a weighted sum of at most four inputs
 * (resize: one for nearest, two for linear, four for cubic, none where
 * tf_crop_and_resize extrapolates - ir_resize_taps, the reference
 * evaluator's own; pad: the one input it copies). dx is dy pushed back
 * through each dimension's map in turn.
 */
struct dim_map {
	int64_t in, out;
	int *n;           /* [out] taps of output o */
	int64_t (*at)[4]; /* [out] their inputs */
	double (*w)[4];   /* [out] their weights */
	int kmax;         /* the most outputs one input feeds */
};

/* Dimension d's map and its kmax; false when it is the identity. */
static bool dim_map(struct ad *a, const struct ir_node *n, int d, struct dim_map *m)
{
	bool identity;
	m->in = n->in[0]->type.dims[d];
	m->out = n->out[0]->type.dims[d];
	identity = m->in == m->out;
	m->n = ir_arena_alloc(&a->m->arena, sizeof *m->n * (size_t)(m->out + 1));
	m->at = ir_arena_alloc(&a->m->arena, sizeof *m->at * (size_t)(m->out + 1));
	m->w = ir_arena_alloc(&a->m->arena, sizeof *m->w * (size_t)(m->out + 1));
	for (int64_t o = 0; o < m->out; o++) {
		if (n->op == IR_OP_RESIZE) {
			m->n[o] = ir_resize_taps(n, d, o, m->at[o], m->w[o]);
		} else { /* pad, edge or reflect */
			int64_t i = ir_pad_source(ir_attr_s(n, "mode"),
			                          o - ir_attr_ints(n, "pads", NULL)[d], m->in);
			m->n[o] = 1;
			m->at[o][0] = i;
			m->w[o][0] = 1;
		}
		identity = identity && m->n[o] == 1 && m->at[o][0] == o && m->w[o][0] == 1;
	}
	if (identity)
		return false;
	{
		int *cnt = ir_arena_alloc(&a->m->arena, sizeof *cnt * (size_t)(m->in + 1));
		m->kmax = 0;
		for (int64_t o = 0; o < m->out; o++)
			for (int t = 0; t < m->n[o]; t++)
				if (++cnt[m->at[o][t]] > m->kmax)
					m->kmax = cnt[m->at[o][t]];
	}
	return true;
}

/* dy through map m along dimension d, densely: one matmul by M[o, k] (the
 * weight of input k in output o), from the left for the second-to-last
 * dimension, between transposes for the ones before it. */
static struct ir_value *dim_dense(struct ad *a, struct ir_value *g, int d, const struct dim_map *m)
{
	int r = g->type.rank;
	bool left = d == r - 2;
	struct ir_type mt = { g->type.dtype, 2, { left ? m->in : m->out, left ? m->out : m->in } };
	double *vals = ir_arena_alloc(&a->m->arena, sizeof *vals * (size_t)(m->in * m->out + 1));
	int64_t perm[IR_MAX_RANK];
	struct ir_value *mat;
	for (int64_t o = 0; o < m->out; o++)
		for (int t = 0; t < m->n[o]; t++)
			vals[left ? m->at[o][t] * m->out + o : o * m->in + m->at[o][t]] +=
			        m->w[o][t];
	mat = ad_constant(a, &mt, vals);
	if (d == r - 1)
		return ad_op2(a, IR_OP_MATMUL, g, mat);
	if (left)
		return ad_op2(a, IR_OP_MATMUL, mat, g);
	for (int i = 0; i < r; i++)
		perm[i] = i == d ? r - 1 : i == r - 1 ? d : i;
	return ad_transpose(a, ad_op2(a, IR_OP_MATMUL, ad_transpose(a, g, perm), mat), perm);
}

/* dy through map m along dimension d, sparsely: input k receives from at
 * most kmax outputs, so dx is a sum of kmax gathers of dy along d, each
 * weighted per input (zero weights pad the shorter lists). */
static struct ir_value *dim_sparse(struct ad *a, struct ir_value *g, int d, const struct dim_map *m)
{
	int r = g->type.rank, kmax = m->kmax;
	int *cnt = ir_arena_alloc(&a->m->arena, sizeof *cnt * (size_t)(m->in + 1)); /* so far */
	int64_t *src = ir_arena_alloc(&a->m->arena, sizeof *src * (size_t)(m->in * kmax + 1));
	double *wt = ir_arena_alloc(&a->m->arena, sizeof *wt * (size_t)(m->in * kmax + 1));
	struct ir_type it = { IR_I64, 1, { m->in } }, wt_t = { g->type.dtype, r, { 0 } };
	struct ir_value *sum = NULL;
	for (int64_t o = 0; o < m->out; o++)
		for (int t = 0; t < m->n[o]; t++) {
			int64_t k = m->at[o][t];
			src[k * kmax + cnt[k]] = o;
			wt[k * kmax + cnt[k]++] = m->w[o][t];
		}
	for (int i = 0; i < r; i++)
		wt_t.dims[i] = i == d ? m->in : 1;
	for (int j = 0; j < kmax; j++) {
		int64_t *idx = ir_arena_alloc(&a->m->arena, sizeof *idx * (size_t)(m->in + 1));
		double *w = ir_arena_alloc(&a->m->arena, sizeof *w * (size_t)(m->in + 1));
		struct ir_value *in[2], *term;
		struct ir_node *gn;
		for (int64_t k = 0; k < m->in; k++) {
			idx[k] = j < cnt[k] ? src[k * kmax + j] : 0;
			w[k] = j < cnt[k] ? wt[k * kmax + j] : 0;
		}
		in[0] = g;
		in[1] = ir_add_const(
		        a->m,
		        ir_unique_name(a->m, ir_arena_printf(&a->m->arena, "%s/%s/taps", a->prefix,
		                                             a->at)),
		        &it, idx);
		gn = ad_node(a, IR_OP_GATHER, in, 2, 1);
		ir_set_i(a->m, gn, "axis", d);
		term = ad_op2(a, IR_OP_MUL, ad_fin(a, gn), ad_constant(a, &wt_t, w));
		sum = sum ? ad_op2(a, IR_OP_ADD, sum, term) : term;
	}
	return sum;
}

/*
 * One dimension at a time: sparsely while no input receives from more than
 * eight outputs (upsampling by up to 4x linearly, 8x nearest, and every
 * downsampling and padding but the widest), densely otherwise (a large
 * upsampling factor of a short dimension: a small matrix).
 */
bool grad_separable(struct ad *a, struct ir_node *n, struct ir_value *const *dy)
{
	struct ir_value *g = dy[0];
	if (!ad_wants(a, n, 0))
		return true;
	for (int d = g->type.rank - 1; d >= 0; d--) {
		struct dim_map m;
		if (!dim_map(a, n, d, &m))
			continue;
		if (m.kmax == 0) { /* every output extrapolated: nothing flows back */
			struct ir_type t = g->type;
			t.dims[d] = m.in;
			g = ad_zeros(a, &t);
			continue;
		}
		g = m.kmax <= 8 ? dim_sparse(a, g, d, &m) : dim_dense(a, g, d, &m);
	}
	ad_contrib(a, n, 0, g);
	return true;
}
