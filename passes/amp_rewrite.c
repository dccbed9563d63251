/*
 * amp_rewrite.c - the precision decisions become types and casts.
 *
 * After this pass:
 *   - a half node reads and writes half tensors where it read and wrote
 *     FP32 ones (integer, boolean and FP64 tensors keep their types);
 *   - every tensor a node needs in the other precision is converted once
 *     per direction, by one cast shared by all its readers, placed before
 *     the first of them;
 *   - constants are converted at compile time instead (the weights are
 *     stored in the precision they are used in);
 *   - a model Cast to FP32 whose readers are all half is repainted to cast
 *     to half directly, and cast chains that lose nothing are folded
 *     (half -> FP32 -> half is no cast at all);
 *   - graph outputs keep their names and FP32 type: a half result gets a
 *     final cast, which takes the output's name.
 * Nothing here decides anything: amp_policy.c did.
 */
#include "amp.h"

#include <string.h>

struct rewrite {
	struct ir_module *m;
	struct amp_result *r;
	enum ir_dtype half;
	int nvals;                 /* values before the rewrite */
	enum ir_dtype *orig;       /* their dtypes, by id */
	struct ir_value **conv[3]; /* shared conversions: to FP32, FP16, BF16 */
};

static const char *suffix(enum ir_dtype t) { return ir_dtype_name(t); }

/* A cast node reading v, writing a new value named name (NULL: derived). */
static struct ir_node *new_cast(struct ir_module *m, struct ir_value *v, enum ir_dtype to,
                                const char *name)
{
	const char *out =
	        name ? name
	             : ir_unique_name(m, ir_arena_printf(&m->arena, "%s.%s", v->name, suffix(to)));
	struct ir_node *c = ir_add_node(m, IR_OP_CAST, ir_arena_printf(&m->arena, "amp/%s", out),
	                                &v, 1, &out, 1);
	char err[256];
	ir_set_t(m, c, "to", to);
	if (!ir_infer_node(m, c, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "cast of %s: %s", v->name, err);
	return c;
}

/* A constant converted at compile time. */
static struct ir_value *convert_const(struct rewrite *w, struct ir_value *v, enum ir_dtype to)
{
	struct ir_module *m = w->m;
	struct ir_type t = v->type;
	int64_t n = ir_type_elems(&t);
	void *data;
	t.dtype = to;
	data = ir_arena_alloc_big(&m->arena, (size_t)(n ? n : 1) * (size_t)ir_dtype_size(to));
	for (int64_t i = 0; i < n; i++)
		ir_store_f64(to, data, (size_t)i, ir_load_f64(v->type.dtype, v->data, (size_t)i));
	w->r->casts_folded++;
	return ir_add_const(
	        m, ir_unique_name(m, ir_arena_printf(&m->arena, "%s.%s", v->name, suffix(to))), &t,
	        data);
}

/* v as to, for reader n: shared per value and direction. */
static struct ir_value *convert(struct rewrite *w, struct ir_value *v, enum ir_dtype to,
                                struct ir_node *n)
{
	int dir = to == IR_F16 ? 1 : to == IR_BF16 ? 2 : 0;
	struct ir_value *c;
	IR_ASSERT(v->id < w->nvals);
	if ((c = w->conv[dir][v->id]))
		return c;
	if (v->kind == IR_VAL_CONST && v->data) {
		c = convert_const(w, v, to);
	} else {
		struct ir_node *cast = new_cast(w->m, v, to, NULL);
		ir_move_before(w->m, cast, n);
		w->r->casts_inserted++;
		c = cast->out[0];
	}
	return w->conv[dir][v->id] = c;
}

/* A model Cast to FP32 whose readers all run in one half type casts to it
 * instead. */
static void repaint(struct rewrite *w, struct ir_node *c)
{
	struct ir_value *y = c->out[0];
	enum ir_dtype to = IR_DT_NONE;
	char err[256];
	if (ir_attr_t(c, "to") != IR_F32 || !y->nuses || ir_is_output(w->m, y))
		return;
	for (int i = 0; i < y->nuses; i++) {
		const struct ir_node *u = y->uses[i].node;
		const struct amp_node *a = u->id < w->r->nids ? &w->r->nodes[u->id] : NULL;
		if (!a || a->prec != AMP_HALF || !a->paintable || (to && a->half != to))
			return;
		to = a->half;
	}
	ir_set_t(w->m, c, "to", to);
	if (!ir_infer_node(w->m, c, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "repainting %s: %s", c->name, err);
	w->r->casts_repainted++;
}

/* Converting from a to b and back to a loses nothing. */
static bool lossless(enum ir_dtype a, enum ir_dtype b)
{
	if (a == b)
		return true;
	if (a == IR_F16 || a == IR_BF16)
		return b == IR_F32 || b == IR_F64;
	return a == IR_F32 && b == IR_F64;
}

/* Folds Cast(Cast(x)) when the inner cast loses nothing, and casts to the
 * type a tensor already has. */
static void fold_chains(struct rewrite *w)
{
	struct ir_node *next;
	for (struct ir_node *c = w->m->first; c; c = next) {
		struct ir_value *x = c->in[0];
		bool inserted = c->id >= w->r->nids;
		next = c->next;
		if (c->op != IR_OP_CAST)
			continue;
		if (x->kind == IR_VAL_NODE && x->def->op == IR_OP_CAST &&
		    lossless(x->def->in[0]->type.dtype, x->type.dtype)) {
			ir_set_input(w->m, c, 0, x->def->in[0]);
			x = c->in[0];
		}
		if (x->type.dtype == c->out[0]->type.dtype && !ir_is_output(w->m, c->out[0])) {
			ir_replace_uses(w->m, c->out[0], x);
			ir_remove_node(w->m, c);
			if (inserted)
				w->r->casts_inserted--;
			else
				w->r->casts_repainted++;
		}
	}
}

void amp_rewrite(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	struct rewrite w = { .m = m, .r = r, .half = o->half, .nvals = m->nvalues };
	struct ir_node **order = ir_arena_alloc(&m->arena, sizeof *order * (size_t)(m->nnodes + 1));
	int nn = 0;
	char err[256];
	w.orig = ir_arena_alloc(&m->arena, sizeof *w.orig * (size_t)(w.nvals + 1));
	w.conv[0] = ir_arena_alloc(&m->arena, sizeof *w.conv[0] * (size_t)(w.nvals + 1));
	w.conv[1] = ir_arena_alloc(&m->arena, sizeof *w.conv[1] * (size_t)(w.nvals + 1));
	w.conv[2] = ir_arena_alloc(&m->arena, sizeof *w.conv[2] * (size_t)(w.nvals + 1));
	for (int i = 0; i < w.nvals; i++)
		w.orig[i] = m->values[i]->type.dtype;
	IR_FOR_EACH_NODE(m, n)
	order[nn++] = n;

	for (int k = 0; k < nn; k++) {
		struct ir_node *n = order[k];
		const struct amp_node *a = &r->nodes[n->id];
		bool half = a->paintable && a->prec == AMP_HALF;
		if (n->op == IR_OP_CAST) {
			repaint(&w, n);
			continue;
		}
		if (!a->paintable)
			continue;
		for (int i = 0; i < n->nin; i++) {
			struct ir_value *v = n->in[i];
			enum ir_dtype want;
			if (v->id >= w.nvals || w.orig[v->id] != IR_F32)
				continue;
			want = half && !amp_reads_fp32(n, i) ? a->half : IR_F32;
			if (v->type.dtype != want)
				ir_set_input(m, n, i, convert(&w, v, want, n));
		}
		if (half && !ir_infer_node(m, n, err, sizeof err))
			ir_panic(__FILE__, __LINE__, "%s in half precision: %s", n->name, err);
	}
	/* graph outputs keep their names and types */
	for (int i = 0; i < m->noutputs; i++) {
		struct ir_value *v = m->outputs[i];
		const char *name = v->name;
		struct ir_node *c;
		if (v->id >= w.nvals || v->type.dtype == w.orig[v->id])
			continue;
		ir_rename_value(m, v,
		                ir_unique_name(m, ir_arena_printf(&m->arena, "%s.%s", name,
		                                                  suffix(v->type.dtype))));
		c = new_cast(m, v, w.orig[v->id], name);
		m->outputs[i] = c->out[0];
		r->casts_inserted++;
	}
	fold_chains(&w);
}
