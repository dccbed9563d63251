/*
 * attention.c - decomposed attention becomes the fused attention op.
 *
 * After this pass every Softmax(S) . V whose scores S come from one
 * Q . K^T through the forms exporters write is one `attention` node, so
 * the L x L scores and probabilities are never stored. Starting from a
 * softmax over the last axis, the pass walks back to the Q . K^T MatMul and
 * forward to the MatMul with V, accepting on the way:
 *   - Casts between float types around the softmax (FP32 softmax between
 *     half tensors): the fused op's statistics are FP32 anyway; and P . V
 *     in FP32 with V widened from half and the product narrowed back;
 *   - a scalar constant scale as Mul or Div after Q . K^T, on Q alone, on
 *     K^T alone, or split over both (torch's sqrt(scale) on each);
 *   - softcap, c * tanh(S / c) (Div by c or Mul by 1/c);
 *   - Add(S, bias) (either operand order), Where(m, S, c) and
 *     Where(m, c, S) with c = -inf (a boolean mask) or a finite c <= -65504
 *     (finfo.min and the like: the bias where(m, 0, c), which is exact);
 *     a constant bias or mask that is a lower triangle (key j <= i + off
 *     kept, every row keeping one) becomes the causal flag instead;
 *   - K^T as Transpose(K) over the last two axes, or any [.., d, Lk]
 *     tensor (transposed back by a new node: O(L d) bytes, not O(L^2));
 *   - rank 2, 3 ([B*H, L, d]) and 4 ([B, H, L, d]) operands, the same
 *     batch dimensions on Q, K and V.
 * The scale and softcap must come before the masks (as every exporter
 * orders them). Anything else is left as it is, with the reason kept for
 * onnxc report: S or P read by another node or a graph output, a softmax
 * over another axis, a scale that is not a scalar constant, operands that
 * broadcast, masks or biases in another place or of another shape.
 *
 * The fused op gives a row whose every score is -inf zeros where
 * Softmax gives NaN (ONNX's errata for Attention-23); every other result
 * is the decomposed graph's up to FP32 rounding.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

struct fuse {
	struct ir_module *m;
	struct ir_node *sm, *pv, *qk;
	struct ir_value *q, *k, *kt, *v;
	struct ir_value *out;         /* what the fused op replaces: P . V, or its narrowing cast */
	struct ir_value *bias, *keep; /* an additive bias; a bool mask (true: attend) */
	double scale, cap, fill;      /* fill: where keep is false (-inf or finite) */
	bool negate;                  /* keep is false where keys are kept */
	int causal;
	int64_t offset;
	const char *why;
};

static bool refuse(struct fuse *f, const char *why)
{
	f->why = why;
	return false;
}

/* v has one reader, under v's node's guard, and is no graph output: the
 * fused op replaces only nodes of one guard (one branch of a run-time If). */
static bool sole(const struct fuse *f, const struct ir_value *v)
{
	return v->kind == IR_VAL_NODE && v->nuses == 1 && !ir_is_output(f->m, v) &&
	       v->uses[0].index != IR_USE_GUARD && v->uses[0].node->guard == v->def->guard;
}

static bool float_cast(const struct ir_node *n)
{
	return n->op == IR_OP_CAST && ir_dtypes[n->in[0]->type.dtype].is_float &&
	       ir_dtypes[n->out[0]->type.dtype].is_float;
}

/* A constant whose elements are all one value: that value in *c. */
static bool uniform_const(const struct ir_value *v, double *c)
{
	int64_t n = ir_type_elems(&v->type);
	if (v->kind != IR_VAL_CONST || !v->data || n < 1 || !ir_dtypes[v->type.dtype].is_float)
		return false;
	*c = ir_load_f64(v->type.dtype, v->data, 0);
	for (int64_t i = 1; i < n; i++)
		if (ir_load_f64(v->type.dtype, v->data, (size_t)i) != *c)
			return false;
	return isfinite(*c) && *c != 0;
}

/* For a binary node of the chain: which operand is the chain (other: the
 * other one). The chain operand has the node's result type; a constant or
 * a graph input is never it. */
static int chain_operand(const struct ir_node *n)
{
	for (int i = 0; i < 2; i++) {
		const struct ir_value *o = n->in[1 - i];
		if (ir_type_eq(&n->in[i]->type, &n->out[0]->type) &&
		    n->in[i]->kind == IR_VAL_NODE &&
		    (o->kind != IR_VAL_NODE || !ir_type_eq(&o->type, &n->out[0]->type)))
			return i;
	}
	/* both full and computed: the one that comes from the scores */
	for (int i = 0; i < 2; i++) {
		const struct ir_node *d = n->in[i]->kind == IR_VAL_NODE ? n->in[i]->def : NULL;
		if (d && (d->op == IR_OP_MATMUL || d->op == IR_OP_MUL || d->op == IR_OP_DIV ||
		          d->op == IR_OP_CAST))
			return i;
	}
	return -1;
}

/* A scalar constant factor of Mul / Div node n whose other operand is x:
 * the factor (1/c for Div) in *c. */
static bool scalar_factor(const struct ir_node *n, const struct ir_value *x, double *c)
{
	if (n->op == IR_OP_MUL)
		return uniform_const(n->in[n->in[0] == x ? 1 : 0], c) &&
		       (n->in[0] == x || n->in[1] == x);
	if (n->op == IR_OP_DIV && n->in[0] == x && uniform_const(n->in[1], c)) {
		*c = 1 / *c;
		return true;
	}
	return false;
}

/* Is the constant [1.., Lq, Lk] keep pattern (value(i, j) -> attended) a
 * causal mask j <= i + off with every row keeping a key? */
static bool causal_const(const struct ir_value *v, bool boolean, int64_t *off)
{
	const struct ir_type *t = &v->type;
	int64_t lq, lk, o = 0;
	if (v->kind != IR_VAL_CONST || !v->data || t->rank < 2)
		return false;
	for (int d = 0; d < t->rank - 2; d++)
		if (t->dims[d] != 1)
			return false;
	lq = t->dims[t->rank - 2], lk = t->dims[t->rank - 1];
	if (lq < 1 || lk < 1)
		return false;
	for (int64_t i = 0; i < lq; i++) {
		int64_t kept = 0;
		for (int64_t j = 0; j < lk; j++) {
			double x = ir_load_f64(t->dtype, v->data, (size_t)(i * lk + j));
			bool keep = boolean ? x != 0 : x == 0;
			if (!keep && !boolean && !(x <= -65504))
				return false; /* neither attended nor masked */
			if (keep && j != kept)
				return false; /* not a prefix of the row */
			kept += keep;
		}
		if (i == 0)
			o = kept - 1;
		if (kept == 0 || kept != (i + o + 1 < lk ? i + o + 1 : lk))
			return false;
	}
	/* rows clipped at lk say nothing of off beyond that: any off with the
	 * same rows is the same mask */
	*off = o;
	return true;
}

/* The scores' chain from the softmax back to Q . K^T. */
static bool walk_scores(struct fuse *f)
{
	struct ir_value *x = f->sm->in[0];
	bool scaled = false; /* a scale or softcap seen: no mask may come before it */
	f->scale = 1;
	for (;;) {
		struct ir_node *d;
		int c;
		double k;
		if (!sole(f, x))
			return refuse(f,
			              "the scores are read by another node or are a graph output");
		d = x->def;
		if (float_cast(d)) {
			x = d->in[0];
			continue;
		}
		switch (d->op) {
		case IR_OP_MATMUL: f->qk = d; return true;
		case IR_OP_MUL:
		case IR_OP_DIV:
			if ((c = chain_operand(d)) < 0)
				return refuse(f, "a product of two computed score tensors");
			if (d->op == IR_OP_MUL && d->in[c]->kind == IR_VAL_NODE &&
			    d->in[c]->def->op == IR_OP_TANH) { /* softcap: c * tanh(S / c) */
				struct ir_node *th = d->in[c]->def, *in;
				double cap, inner;
				if (!uniform_const(d->in[1 - c], &cap) || cap <= 0 ||
				    !sole(f, d->in[c]) || th->in[0]->kind != IR_VAL_NODE ||
				    !sole(f, th->in[0]))
					return refuse(f,
					              "a tanh of the scores that is not a softcap");
				in = th->in[0]->def;
				if ((in->op != IR_OP_MUL && in->op != IR_OP_DIV) ||
				    (c = chain_operand(in)) < 0 ||
				    !scalar_factor(in, in->in[c], &inner) ||
				    fabs(inner * cap - 1) > 1e-6 || f->cap > 0 || scaled)
					return refuse(f,
					              "a tanh of the scores that is not a softcap");
				f->cap = cap;
				x = in->in[c];
				continue;
			}
			if (!scalar_factor(d, d->in[c], &k))
				return refuse(f,
				              "the scores are scaled by a tensor, not a constant");
			f->scale *= k;
			scaled = true;
			x = d->in[c];
			continue;
		case IR_OP_ADD: {
			int64_t off;
			struct ir_value *b;
			if ((c = chain_operand(d)) < 0)
				return refuse(f, "a sum of two computed score tensors");
			if (scaled)
				return refuse(f, "a bias added before the scale or softcap");
			b = d->in[1 - c];
			if (!f->causal && causal_const(b, false, &off)) {
				f->causal = 1, f->offset = off;
			} else if (!f->bias && (b->type.dtype == d->out[0]->type.dtype ||
			                        b->type.dtype == IR_F32)) {
				f->bias = b;
			} else {
				return refuse(f, "more biases than one, or a bias of another type");
			}
			x = d->in[c];
			continue;
		}
		case IR_OP_WHERE: {
			int s = d->in[1]->kind == IR_VAL_NODE &&
			                        ir_type_eq(&d->in[1]->type, &d->out[0]->type)
			                ? 1
			                : 2;
			int64_t off;
			double fill;
			struct ir_value *cv = d->in[3 - s], *m = d->in[0];
			if (scaled)
				return refuse(f, "a mask applied before the scale or softcap");
			if (d->in[s]->kind != IR_VAL_NODE || cv->kind != IR_VAL_CONST ||
			    !cv->data || ir_type_elems(&cv->type) != 1)
				return refuse(f, "a Where that is not a mask with a constant fill");
			fill = ir_load_f64(cv->type.dtype, cv->data, 0);
			if (!(fill <= -65504))
				return refuse(f, "a mask whose fill is above -65504 (not a mask)");
			if (s == 1 && !f->causal && causal_const(m, true, &off)) {
				f->causal = 1, f->offset = off;
			} else if (f->keep) {
				return refuse(f, "more boolean masks than one");
			} else if (m->type.dtype != IR_BOOL) {
				return refuse(f, "a Where whose condition is not bool");
			} else {
				f->keep = m;
				f->fill = fill;
				f->negate = s == 2; /* where(m, c, S): kept where m is false */
			}
			x = d->in[s];
			continue;
		}
		default: return refuse(f, "the scores come from another op than Q . K^T");
		}
	}
}

/* Peels scalar scales off an operand of Q . K^T. */
static struct ir_value *peel(struct fuse *f, struct ir_value *x)
{
	double k;
	while (x->kind == IR_VAL_NODE && sole(f, x) &&
	       (x->def->op == IR_OP_MUL || x->def->op == IR_OP_DIV)) {
		struct ir_node *d = x->def;
		struct ir_value *o = d->in[0]->kind == IR_VAL_CONST ? d->in[1] : d->in[0];
		if (!scalar_factor(d, o, &k) || !ir_type_eq(&o->type, &x->type))
			break;
		f->scale *= k;
		x = o;
	}
	return x;
}

/*
 * K or V repeated over groups of query heads by reshape-expand-reshape
 * ([B, Hkv, L, d] -> [B, Hkv, 1, L, d] -> [B, Hkv, g, L, d] -> [B, Hq, L, d],
 * torch's repeat_kv and ONNX's own Attention function): the tensor before
 * the repetition, which the fused op reads in place (GQA), or x itself.
 */
static struct ir_value *ungroup(const struct fuse *f, struct ir_value *x)
{
	const struct ir_node *r2, *e, *r1;
	const struct ir_type *k0;
	int64_t g;
	if (x->type.rank != 4 || x->kind != IR_VAL_NODE || !sole(f, x) ||
	    (r2 = x->def)->op != IR_OP_RESHAPE || r2->in[0]->kind != IR_VAL_NODE ||
	    !sole(f, r2->in[0]) || (e = r2->in[0]->def)->op != IR_OP_EXPAND ||
	    e->in[0]->kind != IR_VAL_NODE || !sole(f, e->in[0]) ||
	    (r1 = e->in[0]->def)->op != IR_OP_RESHAPE)
		return x;
	k0 = &r1->in[0]->type;
	g = e->out[0]->type.dims[2];
	if (k0->rank != 4 || e->out[0]->type.rank != 5 || e->in[0]->type.dims[2] != 1 ||
	    k0->dims[0] != x->type.dims[0] || k0->dims[1] * g != x->type.dims[1] ||
	    k0->dims[2] != x->type.dims[2] || k0->dims[3] != x->type.dims[3] ||
	    e->in[0]->type.dims[1] != k0->dims[1])
		return x;
	return r1->in[0];
}

static bool same_batch(const struct ir_type *a, const struct ir_type *b)
{
	if (a->rank != b->rank)
		return false;
	for (int d = 0; d < a->rank - 2; d++)
		if (a->dims[d] != b->dims[d])
			return false;
	return true;
}

/* The pattern around softmax node f->sm, or false with f->why. */
static bool match(struct fuse *f)
{
	struct ir_value *p = f->sm->out[0], *kt;
	const struct ir_type *s = &p->type;
	int64_t axis = ir_attr_i(f->sm, "axis");
	if (axis != s->rank - 1 && axis != -1)
		return refuse(f, "the softmax is not over the last axis");
	if (s->rank < 2 || s->rank > 4)
		return refuse(f, "scores of rank other than 2, 3 and 4");
	for (;;) {
		struct ir_node *u;
		if (!sole(f, p))
			return refuse(f,
			              "the probabilities are read by another node or are a graph "
			              "output");
		u = p->uses[0].node;
		if (float_cast(u)) {
			p = u->out[0];
			continue;
		}
		if (u->op != IR_OP_MATMUL || p->uses[0].index != 0)
			return refuse(f, "the probabilities do not multiply V");
		f->pv = u;
		break;
	}
	if (!walk_scores(f))
		return false;
	f->q = peel(f, f->qk->in[0]);
	kt = peel(f, f->qk->in[1]);
	if (kt->kind == IR_VAL_NODE && kt->def->op == IR_OP_TRANSPOSE && sole(f, kt)) {
		int np;
		const int64_t *perm = ir_attr_ints(kt->def, "perm", &np);
		bool swap = np == kt->type.rank;
		for (int d = 0; d < np && swap; d++)
			swap = perm[d] == (d == np - 1 ? np - 2 : d == np - 2 ? np - 1 : d);
		if (swap)
			f->k = kt->def->in[0];
	}
	f->kt = f->k ? NULL : kt;
	f->v = f->pv->in[1];
	f->out = f->pv->out[0];
	/* P . V in FP32 with V widened from half and the product narrowed back
	 * (FlexAttention's import in half precision): V is read as it is, and
	 * the fused op, FP32 inside, replaces the narrowing cast */
	if (f->v->kind == IR_VAL_NODE && float_cast(f->v->def) && sole(f, f->v) &&
	    f->v->type.dtype == IR_F32 && sole(f, f->out) && float_cast(f->out->uses[0].node) &&
	    f->out->uses[0].node->out[0]->type.dtype == f->v->def->in[0]->type.dtype) {
		f->out = f->out->uses[0].node->out[0];
		f->v = f->v->def->in[0];
	}
	{
		const struct ir_type *q = &f->q->type, *v = &f->v->type, *k = &kt->type;
		if (q->rank != s->rank || !same_batch(q, s) || !same_batch(q, k) ||
		    !same_batch(q, v))
			return refuse(f, "Q, K and V broadcast against each other");
		if (q->dtype != k->dtype || q->dtype != v->dtype ||
		    (q->dtype != IR_F32 && q->dtype != IR_F16 && q->dtype != IR_BF16))
			return refuse(f, "Q, K and V differ in type or are not f32, f16 or bf16");
		if (v->dims[v->rank - 2] != k->dims[k->rank - 1])
			return refuse(f, "V's rows are not the keys");
	}
	if (f->k) { /* GQA: K and V repeated alike are read in place */
		struct ir_value *k0 = ungroup(f, f->k), *v0 = ungroup(f, f->v);
		if (k0 != f->k && v0 != f->v && k0->type.dims[1] == v0->type.dims[1])
			f->k = k0, f->v = v0;
	}
	if (f->bias && f->bias->type.dtype != f->q->type.dtype && f->bias->type.dtype != IR_F32)
		return refuse(f, "a bias of another type than Q's");
	if (f->qk->guard != f->sm->guard || f->pv->guard != f->sm->guard)
		return refuse(f, "its nodes lie in different branches of a run-time If");
	return true;
}

static struct ir_value *emit(struct fuse *f, enum ir_op op, const char *what,
                             struct ir_value *const *in, int nin)
{
	const char *name = ir_arena_printf(&f->m->arena, "%s/%s", f->pv->name, what);
	const char *out = ir_unique_name(
	        f->m, ir_arena_printf(&f->m->arena, "%s.%s", f->pv->out[0]->name, what));
	struct ir_node *n = ir_add_node(f->m, op, name, in, nin, &out, 1);
	ir_move_before(f->m, n, f->pv);
	if (f->pv->guard) /* the fused nodes' branch (docs/ir.md, Guards) */
		ir_set_guard(f->m, n, f->pv->guard);
	return n->out[0];
}

static struct ir_value *finish(struct fuse *f, struct ir_value *v)
{
	char err[256];
	if (!ir_infer_node(f->m, v->def, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "attention fusion at %s: %s", f->pv->name, err);
	return v;
}

static struct ir_value *reshape4(struct fuse *f, struct ir_value *x, const char *what)
{
	int64_t dims[4] = { 1, 1, 1, 1 };
	const struct ir_type *t = &x->type;
	struct ir_value *r;
	if (t->rank == 4)
		return x;
	for (int d = 0; d < t->rank; d++)
		dims[4 - t->rank + d] = t->dims[d];
	r = emit(f, IR_OP_RESHAPE, what, &x, 1);
	ir_set_ints(f->m, r->def, "shape", dims, 4);
	return finish(f, r);
}

static struct ir_value *scalar(struct fuse *f, enum ir_dtype t, double v)
{
	struct ir_type st = { .dtype = t };
	void *data = ir_arena_alloc(&f->m->arena, 8);
	ir_store_f64(t, data, 0, v);
	return ir_add_const(
	        f->m,
	        ir_unique_name(f->m, ir_arena_printf(&f->m->arena, "%s.fill", f->pv->out[0]->name)),
	        &st, data);
}

/* The matched pattern as one attention node (and the reshapes around it). */
static void rewrite(struct fuse *f)
{
	struct ir_value *q = reshape4(f, f->q, "q4"), *v = reshape4(f, f->v, "v4"), *k, *mask;
	struct ir_value *in[4], *y;
	int rank = f->q->type.rank;
	if (f->k) {
		k = reshape4(f, f->k, "k4");
	} else {
		const int64_t perm[4] = { 0, 1, 3, 2 };
		struct ir_value *kt = reshape4(f, f->kt, "kt4");
		k = emit(f, IR_OP_TRANSPOSE, "k", &kt, 1);
		ir_set_ints(f->m, k->def, "perm", perm, 4);
		k = finish(f, k);
	}
	if (f->keep && f->negate)
		f->keep = finish(f, emit(f, IR_OP_NOT, "keep", &f->keep, 1));
	mask = f->keep;
	if (f->keep && (f->bias || !isinf(f->fill))) { /* the bool mask as an FP32 bias */
		enum ir_dtype t = f->bias ? f->bias->type.dtype : IR_F32;
		struct ir_value *w[3] = { f->keep, scalar(f, t, 0), scalar(f, t, f->fill) };
		mask = finish(f, emit(f, IR_OP_WHERE, "mask_bias", w, 3));
		if (f->bias) {
			struct ir_value *a[2] = { f->bias, mask };
			mask = finish(f, emit(f, IR_OP_ADD, "bias", a, 2));
		}
	} else if (f->bias) {
		mask = f->bias;
	}
	in[0] = q, in[1] = k, in[2] = v, in[3] = mask;
	y = emit(f, IR_OP_ATTENTION, "attention", in, mask ? 4 : 3);
	ir_set_f(f->m, y->def, "scale", (float)f->scale);
	ir_set_i(f->m, y->def, "causal", f->causal);
	ir_set_i(f->m, y->def, "causal_offset", f->offset);
	ir_set_f(f->m, y->def, "softcap", (float)f->cap);
	y = finish(f, y);
	if (rank != 4) {
		y = emit(f, IR_OP_RESHAPE, "y", &y, 1);
		ir_set_ints(f->m, y->def, "shape", f->out->type.dims, rank);
		y = finish(f, y);
	}
	if (y->type.dtype != f->out->type.dtype)
		ir_panic(__FILE__, __LINE__, "attention fusion at %s: result type", f->pv->name);
	ir_replace_value(f->m, f->out, y);
}

/* Does v (through float casts) multiply something as a MatMul's left
 * operand? Then its softmax was attention, fused or not. */
static bool feeds_matmul(const struct ir_value *v, int depth)
{
	for (int i = 0; i < v->nuses && depth < 4; i++) {
		const struct ir_node *u = v->uses[i].node;
		if ((u->op == IR_OP_MATMUL && v->uses[i].index == 0) ||
		    (float_cast(u) && feeds_matmul(u->out[0], depth + 1)))
			return true;
	}
	return false;
}

bool pass_attention(struct ir_module *m, const struct pass_options *opt)
{
	int fused = 0, refused = 0;
	if (opt && opt->no_fuse_attention)
		return true;
	IR_FOR_EACH_NODE(m, n)
	{
		struct fuse f = { .m = m, .sm = n };
		if (n->op != IR_OP_SOFTMAX)
			continue;
		if (match(&f)) {
			rewrite(&f);
			fused++;
		} else if (f.pv || feeds_matmul(n->out[0], 0)) {
			refused++;
			if (opt && opt->stats && opt->stats->explain)
				ir_note(m->ctx, "node '%s' (softmax): attention not fused: %s",
				        n->name, f.why);
		}
	}
	if (opt && opt->stats) {
		opt->stats->attention_fused += fused;
		opt->stats->attention_refused += refused;
	}
	return true;
}
