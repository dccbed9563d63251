/*
 * batchnorm.c - inference batch normalization, compiled away.
 *
 * y = (x - mean) / sqrt(var + eps) * scale + bias is a per-channel affine
 * map y = x * s + t. When x comes straight from a convolution that nothing
 * else reads and the statistics are constants, s and t fold into the
 * convolution's weights and bias at compile time and the node disappears
 * (torch folds most of these itself when exporting; models exported in
 * training mode or with BatchNorm after an activation keep them). Otherwise
 * the node becomes a multiply and an add by [C,1,...] constants, which
 * fusion then merges with its elementwise neighbours. With non-constant
 * statistics the formula is built from elementwise nodes.
 *
 * After this pass no batch_norm node remains.
 */
#include "passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool all_const(const struct ir_node *n)
{
	for (int i = 1; i < 5; i++)
		if (n->in[i]->kind != IR_VAL_CONST || !n->in[i]->data)
			return false;
	return true;
}

/* A new node before `at` (attributes set by the caller, then typed). */
static struct ir_node *add_before(struct ir_module *m, struct ir_node *at, enum ir_op op,
                                  struct ir_value *a, struct ir_value *b, const char *suffix)
{
	struct ir_value *in[2] = { a, b };
	const char *name =
	        ir_unique_name(m, ir_arena_printf(&m->arena, "%s.%s", at->out[0]->name, suffix));
	struct ir_node *n = ir_add_node(m, op, at->name, in, b ? 2 : 1, &name, 1);
	ir_move_before(m, n, at);
	if (at->guard) /* the batch normalization's branch (docs/ir.md, Guards) */
		ir_set_guard(m, n, at->guard);
	return n;
}

static struct ir_value *typed(struct ir_module *m, struct ir_node *n)
{
	char err[256];
	if (!ir_infer_node(m, n, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "batchnorm rewrite: %s", err);
	return n->out[0];
}

/* An elementwise node before `at`, typed by inference. */
static struct ir_value *emit(struct ir_module *m, struct ir_node *at, enum ir_op op,
                             struct ir_value *a, struct ir_value *b, const char *suffix)
{
	return typed(m, add_before(m, at, op, a, b, suffix));
}

/* A [C,1,...,1] view of a [C] parameter for a rank-r input. */
static struct ir_value *channel_view(struct ir_module *m, struct ir_node *at, struct ir_value *v,
                                     int r)
{
	int64_t shape[IR_MAX_RANK];
	struct ir_node *n;
	shape[0] = v->type.dims[0];
	for (int i = 1; i < r - 1; i++)
		shape[i] = 1;
	n = add_before(m, at, IR_OP_RESHAPE, v, NULL, "chan");
	ir_set_ints(m, n, "shape", shape, r - 1);
	return typed(m, n);
}

static struct ir_value *new_const(struct ir_module *m, const char *base, enum ir_dtype dt, int rank,
                                  const int64_t *dims, const double *vals)
{
	struct ir_type t = { .dtype = dt, .rank = rank };
	int64_t n;
	void *data;
	memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
	n = ir_type_elems(&t);
	data = ir_arena_alloc_big(&m->arena, (size_t)n * (size_t)ir_dtype_size(dt));
	for (int64_t i = 0; i < n; i++)
		ir_store_f64(dt, data, (size_t)i, vals[i]);
	return ir_add_const(m, ir_unique_name(m, base), &t, data);
}

/* Folds s, t into the convolution producing x; false if it does not apply. */
static bool fold_into_conv(struct ir_module *m, struct ir_node *bn, const double *s,
                           const double *t)
{
	struct ir_value *x = bn->in[0];
	struct ir_node *conv = x->kind == IR_VAL_NODE ? x->def : NULL;
	struct ir_value *w, *b;
	int64_t C, per;
	double *wv, *bv;
	if (!conv || conv->op != IR_OP_CONV || x->nuses != 1 || ir_is_output(m, x) ||
	    conv->guard != bn->guard) /* not across branches of a run-time If */
		return false;
	w = conv->in[1];
	b = conv->nin > 2 ? conv->in[2] : NULL;
	if (w->kind != IR_VAL_CONST || !w->data || (b && (b->kind != IR_VAL_CONST || !b->data)))
		return false;
	C = w->type.dims[0];
	per = ir_type_elems(&w->type) / (C ? C : 1);
	/* scratch in the module's arena: nothing leaks if an allocation unwinds */
	wv = ir_arena_alloc(&m->arena, sizeof *wv * (size_t)(ir_type_elems(&w->type) + 1));
	bv = ir_arena_alloc(&m->arena, sizeof *bv * (size_t)(C + 1));
	for (int64_t c = 0; c < C; c++) {
		for (int64_t i = 0; i < per; i++)
			wv[c * per + i] =
			        ir_load_f64(w->type.dtype, w->data, (size_t)(c * per + i)) * s[c];
		bv[c] = (b ? ir_load_f64(b->type.dtype, b->data, (size_t)c) : 0) * s[c] + t[c];
	}
	{
		struct ir_value *nw = new_const(m, ir_arena_printf(&m->arena, "%s.bn", w->name),
		                                w->type.dtype, w->type.rank, w->type.dims, wv);
		struct ir_value *nb =
		        new_const(m, ir_arena_printf(&m->arena, "%s.bias.bn", conv->name),
		                  w->type.dtype, 1, &C, bv);
		ir_set_input(m, conv, 1, nw);
		if (b) {
			ir_set_input(m, conv, 2, nb);
		} else {
			/* grow the conv by its optional bias input */
			struct ir_value *in[3] = { conv->in[0], nw, nb };
			const char *name = ir_unique_name(m, conv->out[0]->name);
			struct ir_node *nc;
			struct ir_value *old = conv->out[0];
			char err[256];
			nc = ir_add_node(m, IR_OP_CONV, conv->name, in, 3, &name, 1);
			for (int i = 0; i < conv->nattrs; i++)
				nc->attrs[i] = conv->attrs[i];
			ir_move_before(m, nc, conv);
			if (conv->guard)
				ir_set_guard(m, nc, conv->guard);
			IR_ASSERT(ir_infer_node(m, nc, err, sizeof err));
			ir_replace_uses(m, old, nc->out[0]);
			ir_remove_node(m, conv);
			conv = nc;
		}
	}
	ir_replace_value(m, bn->out[0], conv->out[0]);
	ir_remove_node(m, bn);
	return true;
}

static void rewrite(struct ir_module *m, struct ir_node *bn)
{
	struct ir_value *x = bn->in[0], *y;
	int r = x->type.rank;
	float eps = ir_attr_f(bn, "epsilon");
	if (all_const(bn)) {
		int64_t C = x->type.dims[1], dims[IR_MAX_RANK];
		enum ir_dtype pt = bn->in[1]->type.dtype;
		double *s = malloc(sizeof *s * (size_t)(C + 1)),
		       *t = malloc(sizeof *t * (size_t)(C + 1));
		if (!s || !t)
			ir_oom(m->ctx);
		for (int64_t c = 0; c < C; c++) {
			double sc = ir_load_f64(pt, bn->in[1]->data, (size_t)c);
			double bi = ir_load_f64(bn->in[2]->type.dtype, bn->in[2]->data, (size_t)c);
			double mu = ir_load_f64(bn->in[3]->type.dtype, bn->in[3]->data, (size_t)c);
			double var = ir_load_f64(bn->in[4]->type.dtype, bn->in[4]->data, (size_t)c);
			s[c] = sc / sqrt(var + (double)eps);
			t[c] = bi - mu * s[c];
		}
		if (fold_into_conv(m, bn, s, t)) {
			free(s);
			free(t);
			return;
		}
		dims[0] = C;
		for (int i = 1; i < r - 1; i++)
			dims[i] = 1;
		{
			struct ir_value *sv =
			        new_const(m, ir_arena_printf(&m->arena, "%s.scale", bn->name),
			                  x->type.dtype, r - 1, dims, s);
			struct ir_value *tv =
			        new_const(m, ir_arena_printf(&m->arena, "%s.shift", bn->name),
			                  x->type.dtype, r - 1, dims, t);
			y = emit(m, bn, IR_OP_ADD, emit(m, bn, IR_OP_MUL, x, sv, "scaled"), tv,
			         "bn");
		}
		free(s);
		free(t);
	} else {
		/* (x - mean) * (scale / sqrt(var + eps)) + bias, per channel */
		struct ir_type et = { .dtype = bn->in[4]->type.dtype };
		unsigned char eb[8];
		struct ir_value *e, *sd, *k;
		ir_store_f64(et.dtype, eb, 0, eps);
		e = ir_add_const(m,
		                 ir_unique_name(m, ir_arena_printf(&m->arena, "%s.eps", bn->name)),
		                 &et, eb);
		sd = emit(m, bn, IR_OP_SQRT, emit(m, bn, IR_OP_ADD, bn->in[4], e, "vareps"), NULL,
		          "std");
		k = channel_view(m, bn, emit(m, bn, IR_OP_DIV, bn->in[1], sd, "k"), r);
		y = emit(m, bn, IR_OP_SUB, x, channel_view(m, bn, bn->in[3], r), "centered");
		y = emit(m, bn, IR_OP_ADD, emit(m, bn, IR_OP_MUL, y, k, "scaled"),
		         channel_view(m, bn, bn->in[2], r), "bn");
	}
	ir_replace_value(m, bn->out[0], y);
	ir_remove_node(m, bn);
}

bool pass_batchnorm(struct ir_module *m, const struct pass_options *opt)
{
	(void)opt;
	for (struct ir_node *n = m->first, *next; n; n = next) {
		next = n->next;
		if (n->op == IR_OP_BATCH_NORM)
			rewrite(m, n);
	}
	return true;
}
