/*
 * rnn_expand.c - lstm, gru and rnn unrolled into primitive IR ops, so that
 * autodiff differentiates them through time (backpropagation through time;
 * docs/training.md).
 *
 * The fused ops have no gradient rule: a training step rewrites each one
 * that lies between the loss and a value differentiated (ad_gradients
 * calls ad_expand_recurrent before differentiating) into the ops that
 * compute the same thing step by step, with ir/eval_rnn.c's equations in
 * its order of additions:
 *
 *   per direction  W^T, R^T, biases and peepholes sliced out once; x W^T +
 *                  Wb for every step as one matmul over [T, B, I];
 *   per step       that product's step t, h R^T + Rb (one matmul), the gate
 *                  columns sliced, each activation's argument clipped (a clip
 *                  node, when clip is not 0), the activations as their
 *                  elementwise ops (Affine and ScaledTanh as mul and add),
 *                  LSTM's peepholes, input_forget (f = 1 - i) and GRU's
 *                  linear_before_reset as the equations say;
 *   sequence_lens  where sequence_lens is not a constant holding T
 *                  everywhere, mask_t = t < sequence_lens picks the new state
 *                  or keeps the old one (where), and zeros for y past the
 *                  length. A reverse direction visits t = T-1 .. 0: the state
 *                  stays the initial one until t < length, so each sequence
 *                  starts from its own last step, as ONNX says;
 *   results        y the concat of the steps' [1, 1, B, H] in time order
 *                  (then of the directions), y_h and y_c the final states.
 *
 * The work is bounded by the input: about 30 nodes per step and direction
 * (O(T) nodes per layer), each as large as one step's state, and the
 * backward graph the rules append is of the same size. Training has no
 * fused recurrent kernel; inference keeps the fused op (only autodiff
 * calls this). A half-precision node computes in f32, as the fused op does
 * (its gates and state stay FP32), its results cast back.
 */
#include "grad.h"

#include <string.h>

/* One node being unrolled. */
struct ex {
	struct ad a;
	struct ir_node *n;
	struct ir_rnn c;
	int64_t T, B, I, H, G;
	int d;          /* the direction being built */
	double clip;    /* 0: none */
	bool masked;    /* some sequence may be shorter than T */
	bool peepholes; /* p is not a constant of zeros */
	bool coupled;   /* lstm: input_forget */
	bool lbr;       /* gru: linear_before_reset */
};

/* x[lo:hi] along axis, every other axis whole. */
static struct ir_value *part(struct ex *e, struct ir_value *x, int axis, int64_t lo, int64_t hi)
{
	int64_t s[IR_MAX_RANK], t[IR_MAX_RANK], st[IR_MAX_RANK];
	for (int i = 0; i < x->type.rank; i++) {
		s[i] = 0;
		t[i] = x->type.dims[i];
		st[i] = 1;
	}
	s[axis] = lo;
	t[axis] = hi;
	return ad_slice(&e->a, x, s, t, st);
}

/* Direction d of x [D, ...] without its first axis. */
static struct ir_value *dir(struct ex *e, struct ir_value *x)
{
	struct ir_value *s = part(e, x, 0, e->d, e->d + 1);
	return ad_reshape(&e->a, s, s->type.rank - 1, s->type.dims + 1);
}

static struct ir_value *add(struct ex *e, struct ir_value *x, struct ir_value *y)
{
	return ad_op2(&e->a, IR_OP_ADD, x, y);
}

static struct ir_value *mul(struct ex *e, struct ir_value *x, struct ir_value *y)
{
	return ad_op2(&e->a, IR_OP_MUL, x, y);
}

static struct ir_value *with_f(struct ex *e, enum ir_op op, struct ir_value *x, const char *n1,
                               double v1, const char *n2, double v2)
{
	struct ir_node *n = ad_node(&e->a, op, &x, 1, 1);
	if (n1)
		ir_set_f(e->a.m, n, n1, (float)v1);
	if (n2)
		ir_set_f(e->a.m, n, n2, (float)v2);
	return ad_fin(&e->a, n);
}

/* Activation k of the direction, its argument clipped first. */
static struct ir_value *act(struct ex *e, int k, struct ir_value *x)
{
	double al = e->c.alpha[e->d][k], be = e->c.beta[e->d][k];
	if (e->clip > 0)
		x = with_f(e, IR_OP_CLIP, x, "min", -e->clip, "max", e->clip);
	switch ((enum ir_rnn_act)e->c.act[e->d][k]) {
	case IR_RNN_RELU: return ad_op1(&e->a, IR_OP_RELU, x);
	case IR_RNN_TANH: return ad_op1(&e->a, IR_OP_TANH, x);
	case IR_RNN_SIGMOID: return ad_op1(&e->a, IR_OP_SIGMOID, x);
	case IR_RNN_AFFINE: return add(e, mul(e, x, ad_sc(&e->a, x, al)), ad_sc(&e->a, x, be));
	case IR_RNN_LEAKY_RELU: return with_f(e, IR_OP_LEAKY_RELU, x, "alpha", al, NULL, 0);
	case IR_RNN_THRESHOLDED_RELU:
		return with_f(e, IR_OP_THRESHOLDED_RELU, x, "alpha", al, NULL, 0);
	case IR_RNN_SCALED_TANH:
		return mul(e, ad_op1(&e->a, IR_OP_TANH, mul(e, x, ad_sc(&e->a, x, be))),
		           ad_sc(&e->a, x, al));
	case IR_RNN_HARD_SIGMOID: return with_f(e, IR_OP_HARD_SIGMOID, x, "alpha", al, "beta", be);
	case IR_RNN_ELU: return with_f(e, IR_OP_ELU, x, "alpha", al, NULL, 0);
	case IR_RNN_SOFTSIGN: return ad_op1(&e->a, IR_OP_SOFTSIGN, x);
	case IR_RNN_SOFTPLUS: return ad_op1(&e->a, IR_OP_SOFTPLUS, x);
	case IR_RNN_ACT_COUNT: break;
	}
	ir_panic(__FILE__, __LINE__, "activation %d of '%s'", e->c.act[e->d][k], e->n->name);
}

/* Whether v is a constant whose every element is `want`. */
static bool const_all(const struct ir_value *v, double want)
{
	if (v->kind != IR_VAL_CONST)
		return false;
	for (int64_t i = 0; i < ir_type_elems(&v->type); i++)
		if (ir_load_f64(v->type.dtype, v->data, (size_t)i) != want)
			return false;
	return true;
}

/* The operands of one direction, sliced once. */
struct dirops {
	struct ir_value *xw;                          /* x W^T + Wb, [T, B, G*H] */
	struct ir_value *rt, *rb;                     /* R^T [H, G*H], Rb [G*H] */
	struct ir_value *rt_zr, *rb_zr, *rt_h, *rb_h; /* gru without lbr: split */
	struct ir_value *pi, *po, *pf;                /* lstm peepholes [H] */
};

/* One step from h (and c): the new h, and for lstm the new c in *cn. */
static struct ir_value *step(struct ex *e, const struct dirops *o, struct ir_value *xt,
                             struct ir_value *h, struct ir_value *c, struct ir_value **cn)
{
	int64_t H = e->H;
	if (e->n->op == IR_OP_LSTM) { /* gates i o f c */
		struct ir_value *pre =
		        add(e, xt, add(e, ad_op2(&e->a, IR_OP_MATMUL, h, o->rt), o->rb));
		struct ir_value *gi = part(e, pre, 1, 0, H), *go = part(e, pre, 1, H, 2 * H);
		struct ir_value *gf = part(e, pre, 1, 2 * H, 3 * H),
		                *gc = part(e, pre, 1, 3 * H, 4 * H);
		struct ir_value *i, *f, *og;
		if (e->peepholes) {
			gi = add(e, gi, mul(e, o->pi, c));
			gf = add(e, gf, mul(e, o->pf, c));
		}
		i = act(e, 0, gi);
		f = e->coupled ? ad_op2(&e->a, IR_OP_SUB, ad_sc(&e->a, i, 1), i) : act(e, 0, gf);
		*cn = add(e, mul(e, f, c), mul(e, i, act(e, 1, gc)));
		if (e->peepholes)
			go = add(e, go, mul(e, o->po, *cn));
		og = act(e, 0, go);
		return mul(e, og, act(e, 2, *cn));
	}
	if (e->n->op == IR_OP_GRU) { /* gates z r h */
		struct ir_value *zr, *z, *r, *hh, *xh = part(e, xt, 1, 2 * H, 3 * H);
		if (e->lbr) {
			struct ir_value *hr =
			        add(e, ad_op2(&e->a, IR_OP_MATMUL, h, o->rt), o->rb); /* [B, 3H] */
			zr = add(e, part(e, xt, 1, 0, 2 * H), part(e, hr, 1, 0, 2 * H));
			z = act(e, 0, part(e, zr, 1, 0, H));
			r = act(e, 0, part(e, zr, 1, H, 2 * H));
			hh = add(e, xh, mul(e, r, part(e, hr, 1, 2 * H, 3 * H)));
		} else {
			zr = add(e, part(e, xt, 1, 0, 2 * H),
			         add(e, ad_op2(&e->a, IR_OP_MATMUL, h, o->rt_zr), o->rb_zr));
			z = act(e, 0, part(e, zr, 1, 0, H));
			r = act(e, 0, part(e, zr, 1, H, 2 * H));
			hh = add(e, xh,
			         add(e, ad_op2(&e->a, IR_OP_MATMUL, mul(e, r, h), o->rt_h),
			             o->rb_h));
		}
		hh = act(e, 1, hh);
		return add(e, mul(e, ad_op2(&e->a, IR_OP_SUB, ad_sc(&e->a, z, 1), z), hh),
		           mul(e, z, h));
	}
	return act(e, 0, add(e, xt, add(e, ad_op2(&e->a, IR_OP_MATMUL, h, o->rt), o->rb)));
}

/* x W^T + Wb, R^T, Rb (and the GRU's split) and the peepholes of direction
 * e->d; x, w, r, b, p already in the compute type. */
static void direction_ops(struct ex *e, struct dirops *o, struct ir_value *x, struct ir_value *w,
                          struct ir_value *r, struct ir_value *b, struct ir_value *p)
{
	int64_t GH = e->G * e->H, H = e->H;
	struct ir_value *bd = dir(e, b); /* [2 G H]: Wb then Rb */
	struct ir_value *wt = ad_transpose_last(&e->a, dir(e, w));
	memset(o, 0, sizeof *o);
	o->xw = add(e, ad_op2(&e->a, IR_OP_MATMUL, x, wt), part(e, bd, 0, 0, GH));
	o->rt = ad_transpose_last(&e->a, dir(e, r));
	o->rb = part(e, bd, 0, GH, 2 * GH);
	if (e->n->op == IR_OP_GRU && !e->lbr) {
		o->rt_zr = part(e, o->rt, 1, 0, 2 * H);
		o->rt_h = part(e, o->rt, 1, 2 * H, 3 * H);
		o->rb_zr = part(e, o->rb, 0, 0, 2 * H);
		o->rb_h = part(e, o->rb, 0, 2 * H, 3 * H);
	}
	if (e->n->op == IR_OP_LSTM && e->peepholes) {
		struct ir_value *pd = dir(e, p); /* [3H]: i o f */
		o->pi = part(e, pd, 0, 0, H);
		o->po = part(e, pd, 0, H, 2 * H);
		o->pf = part(e, pd, 0, 2 * H, 3 * H);
	}
}

/* The concat of vals[0..n) along axis (one value: itself). */
static struct ir_value *concat(struct ex *e, struct ir_value **vals, int n, int axis)
{
	struct ir_node *c;
	if (n == 1)
		return vals[0];
	c = ad_node(&e->a, IR_OP_CONCAT, vals, n, 1);
	ir_set_i(e->a.m, c, "axis", axis);
	return ad_fin(&e->a, c);
}

/* Moves the nodes after mark (built at the end of the list) before n. */
static void move_built(struct ir_module *m, struct ir_node *mark, struct ir_node *n)
{
	while (mark->next)
		ir_move_before(m, mark->next, n);
}

bool ad_expand_recurrent(struct ir_module *m, struct ir_node *n, struct ir_value **results)
{
	struct ex e = { .a = { .m = m, .prefix = "bptt", .at = n->name, .guard = n->guard },
		        .n = n };
	struct ir_node *mark = m->last;
	enum ir_dtype dt = n->in[0]->type.dtype, ct = IR_F32;
	struct ir_value *x, *w, *r, *b, *h0, *c0 = NULL, *p = NULL, **ys, *yd[2], *yh[2], *yc[2];
	struct ir_value *zero, *lens = n->in[4];
	int nvalues = m->nvalues;
	char err[160];
	IR_ASSERT(n->op == IR_OP_LSTM || n->op == IR_OP_GRU || n->op == IR_OP_RNN);
	if (!ir_rnn_cell(n, &e.c, err, sizeof err)) {
		ir_node_error(m->ctx, n->name, ir_ops[n->op].name, "%s", err);
		return false;
	}
	e.T = n->in[0]->type.dims[0];
	e.B = n->in[0]->type.dims[1];
	e.I = n->in[0]->type.dims[2];
	e.H = n->in[2]->type.dims[2];
	e.G = e.c.gates;
	e.clip = ir_attr_f(n, "clip");
	e.masked = !const_all(lens, (double)e.T);
	e.coupled = n->op == IR_OP_LSTM && ir_attr_i(n, "input_forget");
	e.lbr = n->op == IR_OP_GRU && ir_attr_i(n, "linear_before_reset");
	e.peepholes = n->op == IR_OP_LSTM && !const_all(n->in[7], 0);
	x = ad_cast(&e.a, n->in[0], ct);
	w = ad_cast(&e.a, n->in[1], ct);
	r = ad_cast(&e.a, n->in[2], ct);
	b = ad_cast(&e.a, n->in[3], ct);
	h0 = ad_cast(&e.a, n->in[5], ct);
	if (n->op == IR_OP_LSTM) {
		c0 = ad_cast(&e.a, n->in[6], ct);
		p = ad_cast(&e.a, n->in[7], ct);
	}
	zero = ad_scalar(&e.a, ct, 0);
	ys = ir_arena_alloc(&m->arena, sizeof *ys * (size_t)(e.T ? e.T : 1));
	for (e.d = 0; e.d < e.c.dirs; e.d++) {
		struct dirops o;
		struct ir_value *h = dir(&e, h0), *c = c0 ? dir(&e, c0) : NULL;
		bool back = e.d == 1 || e.c.reverse;
		int64_t ydims[4] = { 1, 1, e.B, e.H }, sdims[3] = { 1, e.B, e.H };
		direction_ops(&e, &o, x, w, r, b, p);
		for (int64_t s = 0; s < e.T; s++) {
			int64_t t = back ? e.T - 1 - s : s, bh[2] = { e.B, e.G * e.H };
			struct ir_value *xt = ad_reshape(&e.a, part(&e, o.xw, 0, t, t + 1), 2, bh);
			struct ir_value *cn = NULL, *hn = step(&e, &o, xt, h, c, &cn), *y = hn;
			if (e.masked) {
				/* mask [B, 1]: t < sequence_lens */
				int64_t b1[2] = { e.B, 1 };
				struct ir_value *mask =
				        ad_reshape(&e.a,
				                   ad_op2(&e.a, IR_OP_LESS,
				                          ad_scalar(&e.a, IR_I32, (double)t), lens),
				                   2, b1);
				y = ad_where(&e.a, mask, hn, zero);
				hn = ad_where(&e.a, mask, hn, h);
				if (c)
					cn = ad_where(&e.a, mask, cn, c);
			}
			h = hn;
			c = cn;
			ys[t] = ad_reshape(&e.a, y, 4, ydims);
		}
		if (e.T) {
			yd[e.d] = concat(&e, ys, (int)e.T, 0);
		} else {
			struct ir_type t0 = { ct, 4, { 0, 1, e.B, e.H } };
			yd[e.d] = ad_zeros(&e.a, &t0);
		}
		yh[e.d] = ad_reshape(&e.a, h, 3, sdims);
		if (c)
			yc[e.d] = ad_reshape(&e.a, c, 3, sdims);
	}
	results[0] = ad_cast(&e.a, concat(&e, yd, e.c.dirs, 1), dt);
	results[1] = ad_cast(&e.a, concat(&e, yh, e.c.dirs, 0), dt);
	if (n->op == IR_OP_LSTM)
		results[2] = ad_cast(&e.a, concat(&e, yc, e.c.dirs, 0), dt);
	for (int i = 0; i < n->nout; i++)
		IR_ASSERT(ir_type_eq(&results[i]->type, &n->out[i]->type));
	move_built(m, mark, n);
	for (int i = 0; i < n->nout; i++) {
		/* each result is a node built here: it takes over the name */
		IR_ASSERT(results[i]->kind == IR_VAL_NODE && results[i]->id >= nvalues);
		ir_replace_value(m, n->out[i], results[i]);
	}
	ir_remove_node(m, n);
	return true;
}
