/*
 * lower.c - from the IR to a kernel plan.
 *
 * Three sweeps over the node list:
 *   1. epilogues: a convolution or GEMM whose single consumer chain is a
 *      bias add, a residual add and/or an activation absorbs them, so
 *      "Conv -> Add -> Relu" is one library call that finishes each output
 *      tile while it is in cache;
 *   2. fusion: elementwise nodes join their single-use elementwise
 *      producers of the same shape (union-find), so each maximal chain -
 *      broadcasts, casts, selects included - becomes one generated kernel,
 *      cut into kernels of at most CG_MAX_KERNEL_OPS ops (plan.h) where it
 *      is longer: each piece stores its result for the next to load, so a
 *      kernel costs LLVM a bounded time and a chain of N ops costs N times
 *      that, not N squared;
 *   3. steps: every remaining node becomes a step through a per-op lowering
 *      function (the table at the end), which fills the runtime descriptor.
 *      Reshapes emit nothing: they alias their source.
 *
 * Lowering fails on a valid module only where the target cannot run a step
 * (its support hooks, target.h, name the node and the target): every IR op
 * has a runtime path on every target today.
 * Empty tensors produce no step. Every walk is a loop over the node list or
 * over a kernel's bounded expressions, and every table is indexed by node
 * or value id, so lowering is linear in the module, whatever its depth.
 */
#include "passes/amp.h"
#include "target.h"

#include <stdlib.h>
#include <string.h>

struct lower {
	struct cg_plan *p;
	int *pos;   /* node id -> position in the list */
	int *group; /* node id -> union-find parent (eltwise) */
	bool *cut;  /* node id -> roots a kernel, cut off its group */
	int *part;  /* node id -> ops of its kernel up to it */
	/* per value id, for the kernel being built (where the stamp is its) */
	int *x_stamp, *x_of;       /* the expression computing the value */
	int *arg_stamp, *arg_of;   /* its argument index */
	int nvals;                 /* value ids the arrays cover */
	bool *absorbed;            /* node id -> folded into another step */
	struct ir_node **out_cast; /* node id -> the cast its library step absorbs */
	struct ir_node **by_id;
	int nids;
};

#define ARENA(l) (&(l)->p->m->arena)

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

static int64_t elems(const struct ir_value *v) { return ir_type_elems(&v->type); }
static int esize(const struct ir_value *v) { return ir_dtype_size(v->type.dtype); }
/* The runtime's dtype: the storage types (ir/dtype.h) only move, one byte
 * an element, so the runtime sees them as u8. */
static int rt_dtype(enum ir_dtype t)
{
	return ir_dtypes[t].narrow ? ir_dtypes[IR_U8].onnx : ir_dtypes[t].onnx;
}

static void strides_of(const struct ir_type *t, int64_t *st)
{
	int64_t s = 1;
	for (int i = t->rank - 1; i >= 0; i--) {
		st[i] = s;
		s *= t->dims[i];
	}
}

static int64_t prod(const int64_t *d, int from, int to)
{
	int64_t n = 1;
	for (int i = from; i < to; i++)
		n *= d[i];
	return n;
}

/* The single node using v, if v has exactly one use, as an operand of a
 * node under the guard of v's node, and is not a root (an output, or what
 * picks one's shape, read at the end of a run): a step never
 * covers nodes of different guards (docs/ir.md, Guards). */
static struct ir_node *sole_user(const struct lower *l, const struct ir_value *v)
{
	if (v->nuses != 1 || ir_is_root(l->p->m, v) || v->uses[0].index == IR_USE_GUARD ||
	    v->uses[0].node->guard != (v->kind == IR_VAL_NODE ? v->def->guard : NULL))
		return NULL;
	return v->uses[0].node;
}

int cg_step_guards(const struct cg_step *s, struct ir_value **g)
{
	int n = 0;
	for (struct ir_value *v = s->guard; v; v = v->kind == IR_VAL_NODE ? v->def->guard : NULL) {
		IR_ASSERT(n < CG_MAX_GUARDS);
		g[n++] = v;
	}
	for (int i = 0; i < n / 2; i++) { /* outermost first */
		struct ir_value *t = g[i];
		g[i] = g[n - 1 - i];
		g[n - 1 - i] = t;
	}
	return n;
}

/* arr, of n elements of size elem, with room for one more: copied into
 * one twice as big when full. */
static void *room(struct lower *l, void *arr, int n, int *cap, size_t elem)
{
	void *more;
	if (n < *cap)
		return arr;
	*cap = *cap ? 2 * *cap : 16;
	more = ir_arena_alloc(ARENA(l), elem * (size_t)*cap);
	if (n)
		memcpy(more, arr, elem * (size_t)n);
	return more;
}

static struct cg_step *new_step(struct lower *l, const struct ir_node *n)
{
	struct cg_plan *p = l->p;
	struct cg_step *s;
	p->steps = room(l, p->steps, p->nsteps, &p->cap_steps, sizeof *p->steps);
	s = &p->steps[p->nsteps++];
	memset(s, 0, sizeof *s);
	s->node = n;
	s->guard = n->guard;
	s->covers = n->name;
	return s;
}

/* A library step with its tensors (outputs first). */
static struct cg_step *lib_step(struct lower *l, const struct ir_node *n, enum cg_lib lib, int nout,
                                int nargs, ...)
{
	struct cg_step *s = new_step(l, n);
	va_list ap;
	s->lib = lib;
	s->nout = nout;
	s->nargs = nargs;
	s->args = ir_arena_alloc(ARENA(l), sizeof *s->args * (size_t)(nargs ? nargs : 1));
	va_start(ap, nargs);
	for (int i = 0; i < nargs; i++)
		s->args[i] = va_arg(ap, struct ir_value *);
	va_end(ap);
	return s;
}

static void add_cover(struct lower *l, struct cg_step *s, const struct ir_node *n)
{
	if (strcmp(s->covers, n->name))
		s->covers = ir_arena_printf(ARENA(l), "%s, %s", s->covers, n->name);
}

static struct ir_value *in(const struct ir_node *n, int i) { return i < n->nin ? n->in[i] : NULL; }

/* ------------------------------------------------------------------------ */
/* Epilogues                                                                */
/* ------------------------------------------------------------------------ */

struct epi {
	struct rt_epilogue ep;
	struct ir_value *bias; /* gemm: a [n] row bias */
	struct ir_value *residual;
	struct ir_value *result;  /* the value the step finally writes */
	struct ir_node *nodes[4]; /* absorbed nodes */
	int nnodes;
};

static bool float_storage(enum ir_dtype t) { return t == IR_F32 || t == IR_F16 || t == IR_BF16; }

/* A cast between FP32 and a half format, which a library step can absorb
 * by writing its result in the cast's type. */
static bool float_cast(const struct ir_node *a)
{
	return a && a->op == IR_OP_CAST && float_storage(a->in[0]->type.dtype) &&
	       float_storage(a->out[0]->type.dtype);
}

static bool defined_before(const struct lower *l, const struct ir_value *v, const struct ir_node *n)
{
	return v->kind != IR_VAL_NODE || l->pos[v->def->id] < l->pos[n->id];
}

static bool act_of(const struct ir_node *n, struct rt_epilogue *ep)
{
	switch (n->op) {
	case IR_OP_RELU: ep->act = RT_ACT_RELU; break;
	case IR_OP_SIGMOID: ep->act = RT_ACT_SIGMOID; break;
	case IR_OP_TANH: ep->act = RT_ACT_TANH; break;
	case IR_OP_HARD_SWISH: ep->act = RT_ACT_HARD_SWISH; break;
	case IR_OP_LEAKY_RELU:
		ep->act = RT_ACT_LEAKY_RELU;
		ep->alpha = ir_attr_f(n, "alpha");
		break;
	case IR_OP_CLIP:
		ep->act = RT_ACT_CLIP;
		ep->alpha = ir_attr_f(n, "min");
		ep->beta = ir_attr_f(n, "max");
		break;
	case IR_OP_HARD_SIGMOID:
		ep->act = RT_ACT_HARD_SIGMOID;
		ep->alpha = ir_attr_f(n, "alpha");
		ep->beta = ir_attr_f(n, "beta");
		break;
	default: return false;
	}
	return true;
}

/* Is c a constant of n elements shaped [n] or [1,...,1,n]? */
static bool row_vector(const struct ir_value *c, int64_t n)
{
	if (c->kind != IR_VAL_CONST || !c->data || elems(c) != n || c->type.rank < 1)
		return false;
	return c->type.dims[c->type.rank - 1] == n;
}

/* Collects what the producer P can absorb; marks nothing yet. */
static void match_epilogue(struct lower *l, struct ir_node *p, bool can_bias, struct epi *e)
{
	struct ir_value *r = p->out[0];
	struct ir_node *a;
	memset(e, 0, sizeof *e);
	e->result = r;
	if (!float_storage(r->type.dtype))
		return;
	a = sole_user(l, r);
	if (a && a->op == IR_OP_ADD && can_bias) {
		struct ir_value *o = a->in[0] == r ? a->in[1] : a->in[0];
		int64_t n = r->type.dims[r->type.rank - 1];
		if (a->in[0] != a->in[1] && row_vector(o, n) &&
		    ir_type_eq(&a->out[0]->type, &r->type)) {
			e->bias = o;
			e->nodes[e->nnodes++] = a;
			r = a->out[0];
			a = sole_user(l, r);
		}
	}
	if (a && a->op == IR_OP_ADD) {
		struct ir_value *o = a->in[0] == r ? a->in[1] : a->in[0];
		if (a->in[0] != a->in[1] && ir_type_eq(&o->type, &r->type) &&
		    defined_before(l, o, p)) {
			e->residual = o;
			e->ep.has_residual = 1;
			e->nodes[e->nnodes++] = a;
			r = a->out[0];
			a = sole_user(l, r);
		}
	}
	if (a && ir_type_eq(&a->out[0]->type, &r->type) && act_of(a, &e->ep)) {
		e->nodes[e->nnodes++] = a;
		r = a->out[0];
		a = sole_user(l, r);
	}
	if (float_cast(a)) {
		e->nodes[e->nnodes++] = a;
		r = a->out[0];
	}
	e->result = r;
}

static void take_epilogue(struct lower *l, struct cg_step *s, const struct epi *e)
{
	for (int i = 0; i < e->nnodes; i++) {
		l->absorbed[e->nodes[i]->id] = true;
		add_cover(l, s, e->nodes[i]);
		l->p->casts_fused += e->nodes[i]->op == IR_OP_CAST;
	}
}

/* ------------------------------------------------------------------------ */
/* Library ops                                                              */
/* ------------------------------------------------------------------------ */

typedef bool (*lower_fn)(struct lower *l, struct ir_node *n);

/* MatMul (numpy semantics with batch broadcasting) and Gemm. */
static void gemm_batch(struct rt_gemm_desc *d, const struct ir_type *o, const struct ir_type *a,
                       const struct ir_type *b, int orank_mat)
{
	int br = o->rank - orank_mat;
	int ar = a->rank >= 2 ? a->rank - 2 : 0, bbr = b->rank >= 2 ? b->rank - 2 : 0;
	int64_t sa = a->rank >= 2 ? a->dims[a->rank - 2] * a->dims[a->rank - 1] : 0;
	int64_t sb = b->rank >= 2 ? b->dims[b->rank - 2] * b->dims[b->rank - 1] : 0;
	d->batch_rank = br;
	for (int i = br - 1; i >= 0; i--) {
		int ia = i - (br - ar), ib = i - (br - bbr);
		d->batch_dims[i] = o->dims[i];
		d->a_strides[i] = ia >= 0 && a->dims[ia] != 1 ? sa : 0;
		d->b_strides[i] = ib >= 0 && b->dims[ib] != 1 ? sb : 0;
		if (ia >= 0)
			sa *= a->dims[ia];
		if (ib >= 0)
			sb *= b->dims[ib];
	}
}

static bool lower_matmul(struct lower *l, struct ir_node *n)
{
	const struct ir_type *a = &n->in[0]->type, *b = &n->in[1]->type, *o = &n->out[0]->type;
	struct epi e;
	struct cg_step *s;
	struct rt_gemm_desc *d;
	match_epilogue(l, n, true, &e);
	s = lib_step(l, n, CG_LIB_GEMM, 1, 5, e.result, n->in[0], n->in[1], e.bias, e.residual);
	d = &s->d.gemm;
	d->dtype = rt_dtype(a->dtype);
	d->m = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
	d->k = a->dims[a->rank - 1];
	d->n = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
	gemm_batch(d, o, a, b, (a->rank >= 2) + (b->rank >= 2));
	d->alpha = 1;
	d->beta = e.bias ? 1 : 0;
	d->bias = e.bias ? RT_BIAS_ROW : RT_BIAS_NONE;
	d->ep = e.ep;
	take_epilogue(l, s, &e);
	return true;
}

static bool lower_gemm(struct lower *l, struct ir_node *n)
{
	const struct ir_type *a = &n->in[0]->type, *o = &n->out[0]->type;
	struct ir_value *c = in(n, 2);
	struct epi e;
	struct cg_step *s;
	struct rt_gemm_desc *d;
	match_epilogue(l, n, c == NULL, &e);
	if (e.bias)
		c = e.bias;
	s = lib_step(l, n, CG_LIB_GEMM, 1, 5, e.result, n->in[0], n->in[1], c, e.residual);
	d = &s->d.gemm;
	d->dtype = rt_dtype(a->dtype);
	d->trans_a = (int)ir_attr_i(n, "trans_a");
	d->trans_b = (int)ir_attr_i(n, "trans_b");
	d->m = o->dims[0];
	d->n = o->dims[1];
	d->k = d->trans_a ? a->dims[0] : a->dims[1];
	d->alpha = ir_attr_f(n, "alpha");
	d->beta = e.bias ? 1 : ir_attr_f(n, "beta");
	if (!c) {
		d->bias = RT_BIAS_NONE;
	} else {
		const struct ir_type *ct = &c->type;
		int64_t ce = ir_type_elems(ct);
		if (ce == 1)
			d->bias = RT_BIAS_SCALAR;
		else if (ce == d->m * d->n)
			d->bias = RT_BIAS_FULL;
		else if (ct->dims[ct->rank - 1] == d->n)
			d->bias = RT_BIAS_ROW;
		else
			d->bias = RT_BIAS_COL;
	}
	d->ep = e.ep;
	take_epilogue(l, s, &e);
	return true;
}

static void window(struct rt_conv_desc *d, const struct ir_node *n, const struct ir_type *x,
                   const struct ir_type *w, const struct ir_type *y)
{
	const int64_t *st = ir_attr_ints(n, "strides", NULL), *pd = ir_attr_ints(n, "pads", NULL);
	const int64_t *dl = ir_attr_ints(n, "dilations", NULL);
	d->dtype = rt_dtype(x->dtype);
	d->nsp = x->rank - 2;
	d->n = x->dims[0];
	d->c = x->dims[1];
	d->m = y->dims[1];
	d->group = ir_attr_i(n, "group");
	for (int i = 0; i < d->nsp; i++) {
		d->in[i] = x->dims[2 + i];
		d->k[i] = w->dims[2 + i];
		d->out[i] = y->dims[2 + i];
		d->stride[i] = st[i];
		d->dil[i] = dl[i];
		d->pad_begin[i] = pd[i];
		d->pad_end[i] = pd[d->nsp + i];
	}
}

static bool lower_conv(struct lower *l, struct ir_node *n)
{
	struct epi e;
	struct cg_step *s;
	match_epilogue(l, n, false, &e);
	s = lib_step(l, n, CG_LIB_CONV, 1, 5, e.result, n->in[0], n->in[1], in(n, 2), e.residual);
	window(&s->d.conv, n, &n->in[0]->type, &n->in[1]->type, &n->out[0]->type);
	s->d.conv.ep = e.ep;
	s->ws_bytes = (int64_t)rt_conv_workspace(&s->d.conv);
	take_epilogue(l, s, &e);
	return true;
}

static bool lower_conv_transpose(struct lower *l, struct ir_node *n)
{
	struct cg_step *s = lib_step(l, n, CG_LIB_CONV_TRANSPOSE, 1, 4, n->out[0], n->in[0],
	                             n->in[1], in(n, 2));
	window(&s->d.conv, n, &n->in[0]->type, &n->in[1]->type, &n->out[0]->type);
	s->ws_bytes = (int64_t)rt_conv_transpose_workspace(&s->d.conv);
	return true;
}

static bool lower_pool(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
	struct ir_value *idx = n->nout > 1 ? n->out[1] : NULL;
	struct cg_step *s = lib_step(l, n, CG_LIB_POOL, 2, 3, n->out[0], idx, n->in[0]);
	struct rt_pool_desc *d = &s->d.pool;
	bool global = n->op == IR_OP_GLOBAL_AVG_POOL || n->op == IR_OP_GLOBAL_MAX_POOL ||
	              n->op == IR_OP_GLOBAL_LP_POOL;
	d->dtype = rt_dtype(x->dtype);
	d->kind = n->op == IR_OP_MAX_POOL || n->op == IR_OP_GLOBAL_MAX_POOL ? RT_POOL_MAX
	          : n->op == IR_OP_LP_POOL || n->op == IR_OP_GLOBAL_LP_POOL ? RT_POOL_LP
	                                                                    : RT_POOL_AVG;
	d->nsp = x->rank - 2;
	d->n = x->dims[0];
	d->c = x->dims[1];
	for (int i = 0; i < d->nsp; i++) {
		d->in[i] = x->dims[2 + i];
		d->out[i] = y->dims[2 + i];
		d->k[i] = global ? x->dims[2 + i] : ir_attr_ints(n, "kernel", NULL)[i];
		d->stride[i] = global ? 1 : ir_attr_ints(n, "strides", NULL)[i];
		d->dil[i] = global ? 1 : ir_attr_ints(n, "dilations", NULL)[i];
		d->pad_begin[i] = global ? 0 : ir_attr_ints(n, "pads", NULL)[i];
		d->pad_end[i] = global ? 0 : ir_attr_ints(n, "pads", NULL)[d->nsp + i];
	}
	if (n->op == IR_OP_AVG_POOL)
		d->count_include_pad = (int)ir_attr_i(n, "count_include_pad");
	if (n->op == IR_OP_LP_POOL || n->op == IR_OP_GLOBAL_LP_POOL)
		d->p = (int)ir_attr_i(n, "p");
	if (n->op == IR_OP_MAX_POOL)
		d->storage_order = (int)ir_attr_i(n, "storage_order");
	return true;
}

/* [outer, axis, inner] around axis a of t. */
static void split3(const struct ir_type *t, int a, int64_t *outer, int64_t *axis, int64_t *inner)
{
	*outer = prod(t->dims, 0, a);
	*axis = t->dims[a];
	*inner = prod(t->dims, a + 1, t->rank);
}

static bool lower_softmax(struct lower *l, struct ir_node *n)
{
	struct cg_step *s = lib_step(l, n, CG_LIB_SOFTMAX, 1, 2, n->out[0], n->in[0]);
	struct rt_softmax_desc *d = &s->d.softmax;
	d->dtype = rt_dtype(n->in[0]->type.dtype);
	d->kind = n->op == IR_OP_SOFTMAX       ? RT_SOFTMAX
	          : n->op == IR_OP_LOG_SOFTMAX ? RT_LOG_SOFTMAX
	                                       : RT_HARDMAX;
	split3(&n->in[0]->type, (int)ir_attr_i(n, "axis"), &d->outer, &d->axis, &d->inner);
	return true;
}

/* A constant broadcast to want elements at compile time, or v itself. */
static struct ir_value *dense_param(struct lower *l, struct ir_value *v, const struct ir_type *to)
{
	struct ir_node *e;
	char err[256];
	if (!v || elems(v) == ir_type_elems(to))
		return v;
	IR_ASSERT(v->kind == IR_VAL_CONST && v->data);
	e = ir_add_node(l->p->m, IR_OP_EXPAND, "expand", &v, 1, NULL, 1);
	ir_set_ints(l->p->m, e, "shape", to->dims, to->rank);
	IR_ASSERT(ir_infer_node(l->p->m, e, err, sizeof err));
	IR_ASSERT(ir_fold_node(l->p->m, e, INT64_MAX, err, sizeof err) == 1);
	return e->out[0];
}

static bool lower_layer_norm(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	int axis = (int)ir_attr_i(n, "axis");
	struct ir_type norm = *x;
	struct cg_step *s;
	norm.rank = x->rank - axis;
	memmove(norm.dims, x->dims + axis, sizeof(int64_t) * (size_t)norm.rank);
	s = lib_step(l, n, CG_LIB_LAYERNORM, 3, 6, n->out[0], n->nout > 1 ? n->out[1] : NULL,
	             n->nout > 2 ? n->out[2] : NULL, n->in[0], dense_param(l, n->in[1], &norm),
	             dense_param(l, in(n, 2), &norm));
	s->d.layernorm.dtype = rt_dtype(x->dtype);
	s->d.layernorm.rows = prod(x->dims, 0, axis);
	s->d.layernorm.cols = prod(x->dims, axis, x->rank);
	s->d.layernorm.eps = ir_attr_f(n, "epsilon");
	return true;
}

static bool lower_instance_norm(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	struct cg_step *s =
	        lib_step(l, n, CG_LIB_INSTNORM, 1, 4, n->out[0], n->in[0], n->in[1], n->in[2]);
	s->d.instnorm.dtype = rt_dtype(x->dtype);
	s->d.instnorm.n = x->dims[0];
	s->d.instnorm.c = x->dims[1];
	s->d.instnorm.spatial = prod(x->dims, 2, x->rank);
	s->d.instnorm.eps = ir_attr_f(n, "epsilon");
	return true;
}

static bool lower_lrn(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	struct cg_step *s = lib_step(l, n, CG_LIB_LRN, 1, 2, n->out[0], n->in[0]);
	s->d.lrn.dtype = rt_dtype(x->dtype);
	s->d.lrn.n = x->dims[0];
	s->d.lrn.c = x->dims[1];
	s->d.lrn.spatial = prod(x->dims, 2, x->rank);
	s->d.lrn.size = ir_attr_i(n, "size");
	s->d.lrn.alpha = ir_attr_f(n, "alpha");
	s->d.lrn.beta = ir_attr_f(n, "beta");
	s->d.lrn.bias = ir_attr_f(n, "bias");
	return true;
}

static bool lower_reduce(struct lower *l, struct ir_node *n)
{
	static const int kinds[] = {
		[IR_OP_REDUCE_SUM] = RT_REDUCE_SUM,
		[IR_OP_REDUCE_MEAN] = RT_REDUCE_MEAN,
		[IR_OP_REDUCE_MAX] = RT_REDUCE_MAX,
		[IR_OP_REDUCE_MIN] = RT_REDUCE_MIN,
		[IR_OP_REDUCE_PROD] = RT_REDUCE_PROD,
		[IR_OP_REDUCE_L1] = RT_REDUCE_L1,
		[IR_OP_REDUCE_L2] = RT_REDUCE_L2,
		[IR_OP_REDUCE_SUM_SQUARE] = RT_REDUCE_SUM_SQUARE,
		[IR_OP_REDUCE_LOG_SUM] = RT_REDUCE_LOG_SUM,
		[IR_OP_REDUCE_LOG_SUM_EXP] = RT_REDUCE_LOG_SUM_EXP,
	};
	const struct ir_type *x = &n->in[0]->type;
	int na;
	const int64_t *axes = ir_attr_ints(n, "axes", &na);
	struct cg_step *s = lib_step(l, n, CG_LIB_REDUCE, 1, 2, n->out[0], n->in[0]);
	struct rt_reduce_desc *d = &s->d.reduce;
	d->dtype = rt_dtype(x->dtype);
	d->kind = kinds[n->op];
	d->rank = x->rank;
	memcpy(d->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
	for (int i = 0; i < na; i++)
		d->axes_mask |= 1u << axes[i];
	return true;
}

static bool lower_arg(struct lower *l, struct ir_node *n)
{
	struct cg_step *s = lib_step(l, n, CG_LIB_ARG, 1, 2, n->out[0], n->in[0]);
	struct rt_arg_desc *d = &s->d.arg;
	d->dtype = rt_dtype(n->in[0]->type.dtype);
	d->is_min = n->op == IR_OP_ARGMIN;
	d->select_last = (int)ir_attr_i(n, "select_last_index");
	split3(&n->in[0]->type, (int)ir_attr_i(n, "axis"), &d->outer, &d->axis, &d->inner);
	return true;
}

/* TopK: values and indices, both [outer, k, inner] */
static bool lower_topk(struct lower *l, struct ir_node *n)
{
	struct cg_step *s = lib_step(l, n, CG_LIB_TOPK, 2, 3, n->out[0], n->out[1], n->in[0]);
	struct rt_topk_desc *d = &s->d.topk;
	d->dtype = rt_dtype(n->in[0]->type.dtype);
	d->smallest = ir_attr_i(n, "largest") == 0;
	d->k = ir_attr_i(n, "k");
	split3(&n->in[0]->type, (int)ir_attr_i(n, "axis"), &d->outer, &d->axis, &d->inner);
	return true;
}

/* LinearAttention: the packed inputs as they are, absent ones NULL */
static bool lower_linear_attention(struct lower *l, struct ir_node *n)
{
	struct ir_linattn_inputs in = ir_linear_attention_inputs(n);
	struct ir_value *opt[4] = { NULL, NULL, NULL, NULL };
	const int at[4] = { in.past, in.decay, in.beta, in.erase };
	struct cg_step *s;
	struct rt_linattn_desc *d;
	const int64_t *q = n->in[0]->type.dims;
	for (int i = 0; i < 4; i++)
		if (at[i] >= 0)
			opt[i] = n->in[at[i]];
	s = lib_step(l, n, CG_LIB_LINATTN, 2, 9, n->out[0], n->out[1], n->in[0], n->in[1], n->in[2],
	             opt[0], opt[1], opt[2], opt[3]);
	d = &s->d.linattn;
	d->dtype = rt_dtype(n->in[0]->type.dtype);
	d->gated = in.gated;
	d->delta = in.delta;
	d->batch = q[0];
	d->seq = q[1];
	d->q_heads = ir_attr_i(n, "q_num_heads");
	d->kv_heads = ir_attr_i(n, "kv_num_heads");
	d->dk = q[2] / d->q_heads;
	d->dv = n->in[2]->type.dims[2] / d->kv_heads;
	d->decay_width = opt[1] ? opt[1]->type.dims[2] : 0;
	d->beta_width = opt[2] ? opt[2]->type.dims[2] : 0;
	d->erase_width = opt[3] ? opt[3]->type.dims[2] : 0;
	d->scale = ir_attr_f(n, "scale");
	/* the state's own type, for a target whose runtime reads halves (the
	 * CPU stages every half tensor to FP32) */
	if (l->p->target->half_libraries && n->out[1]->type.dtype != n->in[0]->type.dtype)
		d->sdtype = rt_dtype(n->out[1]->type.dtype);
	return true;
}

_Static_assert((int)IR_RNN_RELU == (int)RT_RNN_RELU && (int)IR_RNN_AFFINE == (int)RT_RNN_AFFINE &&
                       (int)IR_RNN_SOFTPLUS == (int)RT_RNN_SOFTPLUS &&
                       (int)IR_RNN_ACT_COUNT == (int)RT_RNN_ACT_COUNT,
               "ir_rnn_act and rt_rnn_act differ");

/* LSTM, GRU, RNN: every input present (the importer fills the defaults);
 * GRU's and RNN's missing c0, p and yc are NULL. */
static bool lower_rnn(struct lower *l, struct ir_node *n)
{
	struct ir_rnn c;
	char err[160];
	bool lstm = n->op == IR_OP_LSTM;
	const int64_t *x = n->in[0]->type.dims;
	struct cg_step *s;
	struct rt_rnn_desc *d;
	if (!ir_rnn_cell(n, &c, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "node '%s': %s", n->name, err); /* verified */
	s = lib_step(l, n, CG_LIB_RNN, lstm ? 3 : 2, 11, n->out[0], n->out[1],
	             lstm ? n->out[2] : NULL, n->in[0], n->in[1], n->in[2], n->in[3], n->in[4],
	             n->in[5], in(n, 6), in(n, 7));
	d = &s->d.rnn;
	d->dtype = rt_dtype(n->in[0]->type.dtype);
	d->cell = lstm ? RT_RNN_LSTM : n->op == IR_OP_GRU ? RT_RNN_GRU : RT_RNN_RNN;
	d->dirs = c.dirs;
	d->reverse = c.reverse;
	d->seq = x[0];
	d->batch = x[1];
	d->input = x[2];
	d->hidden = n->in[2]->type.dims[2];
	/* enum ir_rnn_act and enum rt_rnn_act are one list */
	memcpy(d->act, c.act, sizeof d->act);
	memcpy(d->alpha, c.alpha, sizeof d->alpha);
	memcpy(d->beta, c.beta, sizeof d->beta);
	d->clip = ir_attr_f(n, "clip");
	d->input_forget = lstm && ir_attr_i(n, "input_forget");
	d->linear_before_reset = n->op == IR_OP_GRU && ir_attr_i(n, "linear_before_reset");
	s->ws_bytes = (int64_t)rt_rnn_workspace(d);
	return true;
}

/* The descriptor of attention or attention_grad node n, whose q, k, v are
 * its inputs 0-2 and mask (NULL: none) its last optional input. */
static void attention_desc(struct lower *l, const struct ir_node *n, const struct ir_value *mask,
                           struct rt_attention_desc *d)
{
	const int64_t *q = n->in[0]->type.dims, *k = n->in[1]->type.dims;
	d->dtype = rt_dtype(n->in[0]->type.dtype);
	d->batch = q[0];
	d->q_heads = q[1];
	d->lq = q[2];
	d->dk = q[3];
	d->kv_heads = k[1];
	d->lk = k[2];
	d->dv = n->in[2]->type.dims[3];
	d->causal = (int)ir_attr_i(n, "causal");
	d->causal_offset = ir_attr_i(n, "causal_offset");
	d->scale = ir_attr_f(n, "scale");
	d->softcap = ir_attr_f(n, "softcap");
	if (mask) {
		const int64_t full[4] = { q[0], q[1], q[2], k[2] };
		int64_t st = 1;
		d->mask = mask->type.dtype == IR_BOOL ? RT_ATTN_BOOL : RT_ATTN_BIAS;
		for (int i = 3; i >= 0; i--) {
			int md = i - (4 - mask->type.rank);
			int64_t size = md >= 0 ? mask->type.dims[md] : 1;
			d->mask_strides[i] = size == 1 && full[i] != 1 ? 0 : st;
			st *= size;
		}
		/* a bias of another type than q's (FP32 beside half q: mixed
		 * precision keeps it) says so on a target whose runtime reads
		 * halves; the CPU stages everything to FP32 */
		if (l->p->target->half_libraries && d->mask == RT_ATTN_BIAS &&
		    mask->type.dtype != n->in[0]->type.dtype)
			d->mdtype = rt_dtype(mask->type.dtype);
	}
}

/* Attention: dense q, k, v; the mask through broadcast strides. */
static bool lower_attention(struct lower *l, struct ir_node *n)
{
	struct ir_value *mask = n->nin == 4 ? n->in[3] : NULL;
	struct cg_step *s =
	        lib_step(l, n, CG_LIB_ATTENTION, 2, 6, n->out[0], n->nout == 2 ? n->out[1] : NULL,
	                 n->in[0], n->in[1], n->in[2], mask);
	attention_desc(l, n, mask, &s->d.attention);
	return true;
}

/* Its backward: q, k, v, y, lse, dy and the mask in; dq, dk, dv out. */
static bool lower_attention_grad(struct lower *l, struct ir_node *n)
{
	struct ir_value *mask = n->nin == 7 ? n->in[6] : NULL;
	struct cg_step *s =
	        lib_step(l, n, CG_LIB_ATTENTION_GRAD, 3, 10, n->out[0], n->out[1], n->out[2],
	                 n->in[0], n->in[1], n->in[2], n->in[3], n->in[4], n->in[5], mask);
	attention_desc(l, n, mask, &s->d.attention);
	return true;
}

/* CumSum, CumProd */
/* A branch that cannot run: the step fails the run when its guard holds */
static bool lower_trap(struct lower *l, struct ir_node *n)
{
	struct cg_step *s = lib_step(l, n, CG_LIB_TRAP, 1, 1, n->out[0]);
	s->d.trap.bytes = (int64_t)ir_type_bytes(&n->out[0]->type);
	return true;
}

static bool lower_cumsum(struct lower *l, struct ir_node *n)
{
	struct cg_step *s = lib_step(l, n, CG_LIB_CUMSUM, 1, 2, n->out[0], n->in[0]);
	struct rt_cumsum_desc *d = &s->d.cumsum;
	d->dtype = rt_dtype(n->in[0]->type.dtype);
	d->exclusive = (int)ir_attr_i(n, "exclusive");
	d->reverse = (int)ir_attr_i(n, "reverse");
	d->prod = n->op == IR_OP_CUMPROD;
	split3(&n->in[0]->type, (int)ir_attr_i(n, "axis"), &d->outer, &d->axis, &d->inner);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */
/* ------------------------------------------------------------------------ */

/* A dense copy step out <- in through a view of in (dims are out's). */
static struct cg_step *copy_step(struct lower *l, struct ir_node *n, struct ir_value *out,
                                 struct ir_value *src, int rank, const int64_t *dims,
                                 int64_t offset, const int64_t *strides)
{
	struct cg_step *s = lib_step(l, n, CG_LIB_COPY, 1, 2, out, src);
	struct rt_copy_desc *d = &s->d.copy;
	d->esize = esize(src);
	d->rank = rank;
	d->offset = offset;
	d->dst_dense = 1;
	memcpy(d->dims, dims, sizeof(int64_t) * (size_t)rank);
	memcpy(d->strides, strides, sizeof(int64_t) * (size_t)rank);
	return s;
}

static bool lower_copy(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	int64_t st[IR_MAX_RANK];
	strides_of(x, st);
	copy_step(l, n, n->out[0], n->in[0], x->rank, x->dims, 0, st);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Run-time loops (docs/ir.md, Loops)                                       */
/* ------------------------------------------------------------------------ */

/* A copy step dst <- src (one type) for node n, run under guard g; none
 * for an empty tensor. */
static void copy_value(struct lower *l, struct ir_node *n, struct ir_value *dst,
                       struct ir_value *src, struct ir_value *g)
{
	int64_t st[IR_MAX_RANK];
	struct cg_step *s;
	if (!elems(src))
		return;
	strides_of(&src->type, st);
	s = copy_step(l, n, dst, src, src->type.rank, src->type.dims, 0, st);
	s->guard = g;
}

/* The loop's token takes the entry condition and each carried value its
 * initial value (the carries are lowered here, before the loop opens:
 * under the loop's own guard, not its token), then the loop opens. */
static bool lower_loop(struct lower *l, struct ir_node *n)
{
	struct cg_plan *p = l->p;
	struct ir_value *t = n->out[0];
	copy_value(l, n, t, n->in[0], n->guard);
	for (int i = 0; i < t->nuses; i++) {
		struct ir_node *c = t->uses[i].node;
		if (t->uses[i].index == IR_USE_GUARD && c->op == IR_OP_CARRY) {
			copy_value(l, c, c->out[0], c->in[0], n->guard);
			l->absorbed[c->id] = true;
		}
	}
	p->loops = room(l, p->loops, p->nloops, &p->cap_loops, sizeof *p->loops);
	p->loops[p->nloops++] = (struct cg_loop){ t, p->nsteps, -1 };
	return true;
}

/* Lowered with their loop (lower_loop). */
static bool lower_carry(struct lower *l, struct ir_node *n)
{
	(void)l;
	ir_panic(__FILE__, __LINE__, "carry '%s' outside its loop's lowering", n->name);
}

/* The end of an iteration: the token takes the condition (first: a carried
 * value it reads is still this iteration's), each carried value its next
 * value (none where that is the carried value itself; cg_lower made sure no
 * next value is another carried value's storage), and the loop closes.
 * The results are the carried values' storage. */
static bool lower_loop_end(struct lower *l, struct ir_node *n)
{
	struct cg_plan *p = l->p;
	struct ir_value *t = n->in[0];
	int k = (n->nin - 2) / 2, i = p->nloops - 1;
	while (i >= 0 && p->loops[i].token != t)
		i--;
	IR_ASSERT(i >= 0 && p->loops[i].close < 0);
	copy_value(l, n, t, n->in[1], t);
	for (int j = 0; j < k; j++) {
		struct ir_value *x = n->in[2 + j], *next = n->in[2 + k + j];
		if (cg_root(p, next) != cg_root(p, x))
			copy_value(l, n, x, next, t);
		p->vals[n->out[j]->id].alias_of = cg_root(p, x);
	}
	p->loops[i].close = p->nsteps;
	return true;
}

/* Where a value's storage comes from at the IR level: through views. */
static struct ir_value *ir_root(struct ir_value *v)
{
	while (v->kind == IR_VAL_NODE && cg_is_view(v->def->op))
		v = v->def->in[0];
	return v;
}

/*
 * Before lowering, each loop's nodes are put in the order its steps need:
 * its body alone between it and its loop_end (ir_loops_together), so that
 * the body's steps are the loop's only ones. And a next value whose
 * storage is another carried value's (carried values that swap) is copied
 * in the body first: the loop_end's copies run one after the other, and
 * would otherwise read a carried value already replaced.
 */
static void prepare_loops(struct ir_module *m)
{
	ir_loops_together(m);
	IR_FOR_EACH_NODE(m, n)
	{
		struct ir_node *end;
		struct ir_value *t;
		int k;
		if (n->op != IR_OP_LOOP)
			continue;
		t = n->out[0];
		end = ir_loop_end(t);
		k = (end->nin - 2) / 2;
		for (int j = 0; j < k; j++) {
			struct ir_value *x = end->in[2 + j], *nx = end->in[2 + k + j];
			struct ir_value *r = ir_root(nx);
			bool other = false;
			for (int i = 0; i < k; i++)
				other |= i != j && r == end->in[2 + i];
			if (other) {
				struct ir_node *c = ir_add_node(
				        m, IR_OP_COPY, x->def->name, &nx, 1,
				        (const char *[]){ ir_unique_name(m, x->name) }, 1);
				char err[256];
				if (!ir_infer_node(m, c, err, sizeof err))
					ir_panic(__FILE__, __LINE__, "%s", err);
				ir_move_before(m, c, end);
				ir_set_guard(m, c, t);
				ir_set_input(m, end, 2 + k + j, c->out[0]);
			}
		}
	}
}

static bool lower_transpose(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	const int64_t *perm = ir_attr_ints(n, "perm", NULL);
	int64_t s[IR_MAX_RANK], st[IR_MAX_RANK];
	strides_of(x, s);
	for (int i = 0; i < x->rank; i++)
		st[i] = s[perm[i]];
	copy_step(l, n, n->out[0], n->in[0], x->rank, n->out[0]->type.dims, 0, st);
	return true;
}

static bool lower_slice(struct lower *l, struct ir_node *n)
{
	int64_t st[IR_MAX_RANK], off;
	ir_slice_view(n, &off, st);
	copy_step(l, n, n->out[0], n->in[0], n->in[0]->type.rank, n->out[0]->type.dims, off, st);
	return true;
}

static bool lower_expand(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type, *o = &n->out[0]->type;
	int64_t s[IR_MAX_RANK], st[IR_MAX_RANK];
	strides_of(x, s);
	for (int i = 0; i < o->rank; i++) {
		int j = i - (o->rank - x->rank);
		st[i] = j < 0 || x->dims[j] == 1 ? 0 : s[j];
	}
	copy_step(l, n, n->out[0], n->in[0], o->rank, o->dims, 0, st);
	return true;
}

/*
 * DepthToSpace and SpaceToDepth are a reshape and a transpose: one strided
 * copy over a 6-D view of the input.
 */
static bool lower_depth_space(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	int64_t b = ir_attr_i(n, "blocksize"), N = x->dims[0], C = x->dims[1], H = x->dims[2],
	        W = x->dims[3];
	int64_t v[6], vs[6], dims[6], st[6];
	int perm[6];
	struct ir_type view = { .rank = 6 };
	if (n->op == IR_OP_DEPTH_TO_SPACE) {
		bool dcr = !strcmp(ir_attr_s(n, "mode"), "DCR");
		int64_t vd[6] = { N, b, b, C / (b * b), H, W },
		        vc[6] = { N, C / (b * b), b, b, H, W };
		int pd[6] = { 0, 3, 4, 1, 5, 2 }, pc[6] = { 0, 1, 4, 2, 5, 3 };
		memcpy(v, dcr ? vd : vc, sizeof v);
		memcpy(perm, dcr ? pd : pc, sizeof perm);
	} else {
		int64_t vv[6] = { N, C, H / b, b, W / b, b };
		int pp[6] = { 0, 3, 5, 1, 2, 4 };
		memcpy(v, vv, sizeof v);
		memcpy(perm, pp, sizeof perm);
	}
	memcpy(view.dims, v, sizeof v);
	strides_of(&view, vs);
	for (int i = 0; i < 6; i++) {
		dims[i] = v[perm[i]];
		st[i] = vs[perm[i]];
	}
	copy_step(l, n, n->out[0], n->in[0], 6, dims, 0, st);
	return true;
}

/* Concat and Split: one strided copy per piece (copies[i] is piece i, empty
 * pieces included: a copy of nothing does nothing), in a single step. */
static bool lower_concat_split(struct lower *l, struct ir_node *n)
{
	bool split = n->op == IR_OP_SPLIT;
	const struct ir_value *whole = split ? n->in[0] : n->out[0];
	int axis = (int)ir_attr_i(n, "axis"), npieces = split ? n->nout : n->nin;
	int64_t ws[IR_MAX_RANK], at = 0;
	struct cg_step *s = new_step(l, n);
	s->lib = CG_LIB_COPY;
	s->split = split;
	s->nout = split ? n->nout : 1;
	s->nargs = npieces + 1;
	s->args = ir_arena_alloc(ARENA(l), sizeof *s->args * (size_t)s->nargs);
	s->copies = ir_arena_alloc(ARENA(l), sizeof *s->copies * (size_t)npieces);
	strides_of(&whole->type, ws);
	if (split) {
		for (int i = 0; i < n->nout; i++)
			s->args[i] = n->out[i];
		s->args[n->nout] = n->in[0];
	} else {
		s->args[0] = n->out[0];
		for (int i = 0; i < n->nin; i++)
			s->args[1 + i] = n->in[i];
	}
	for (int i = 0; i < npieces; i++) {
		const struct ir_value *piece = split ? n->out[i] : n->in[i];
		struct rt_copy_desc *d = &s->copies[s->ncopies++];
		int64_t ps[IR_MAX_RANK];
		strides_of(&piece->type, ps);
		d->esize = esize(piece);
		d->rank = piece->type.rank;
		memcpy(d->dims, piece->type.dims, sizeof(int64_t) * (size_t)d->rank);
		if (split) { /* dense piece <- strided region of the whole */
			d->offset = at * ws[axis];
			memcpy(d->strides, ws, sizeof(int64_t) * (size_t)d->rank);
			d->dst_dense = 1;
		} else { /* strided region of the whole <- dense piece */
			memcpy(d->strides, ps, sizeof(int64_t) * (size_t)d->rank);
			d->dst_offset = at * ws[axis];
			memcpy(d->dst_strides, ws, sizeof(int64_t) * (size_t)d->rank);
		}
		at += piece->type.dims[axis];
	}
	return true;
}

static bool lower_gather(struct lower *l, struct ir_node *n)
{
	struct cg_step *s = lib_step(l, n, CG_LIB_GATHER, 1, 3, n->out[0], n->in[0], n->in[1]);
	struct rt_gather_desc *d = &s->d.gather;
	d->esize = esize(n->in[0]);
	d->index_dtype = rt_dtype(n->in[1]->type.dtype);
	split3(&n->in[0]->type, (int)ir_attr_i(n, "axis"), &d->outer, &d->axis, &d->inner);
	d->nidx = elems(n->in[1]);
	return true;
}

static bool lower_gather_elements(struct lower *l, struct ir_node *n)
{
	struct cg_step *s =
	        lib_step(l, n, CG_LIB_GATHER_ELEMENTS, 1, 3, n->out[0], n->in[0], n->in[1]);
	struct rt_gather_elements_desc *d = &s->d.gather_elements;
	d->esize = esize(n->in[0]);
	d->index_dtype = rt_dtype(n->in[1]->type.dtype);
	d->rank = n->in[0]->type.rank;
	d->axis = (int)ir_attr_i(n, "axis");
	memcpy(d->data_dims, n->in[0]->type.dims, sizeof(int64_t) * (size_t)d->rank);
	memcpy(d->index_dims, n->in[1]->type.dims, sizeof(int64_t) * (size_t)d->rank);
	return true;
}

/*
 * Can scatter n write into its data's storage? When the data is a run-time
 * loop's carried value, read by n alone, and n's result is the value the
 * loop_end carries into it, nothing reads the carried value after n, so
 * the result can be the carried value itself: the scatter then writes only
 * its updates (the runtime skips its copy when data and result are one),
 * and the loop_end copies nothing. That is how a scan output is stacked
 * (frontend/ops_loop.c): a slice per iteration, not the whole.
 */
static bool scatter_in_place(const struct ir_node *n)
{
	const struct ir_value *x = n->in[0], *y = n->out[0];
	const struct ir_node *end;
	int k;
	if (x->kind != IR_VAL_NODE || x->def->op != IR_OP_CARRY || y->nuses != 1 ||
	    y->uses[0].node->op != IR_OP_LOOP_END)
		return false;
	end = y->uses[0].node;
	k = (end->nin - 2) / 2;
	if (n->guard != end->in[0] || y->uses[0].index < 2 + k ||
	    end->in[y->uses[0].index - k] != x)
		return false;
	for (int i = 0; i < x->nuses; i++)
		if (!(x->uses[i].node == n && x->uses[i].index == 0) &&
		    !(x->uses[i].node == end && x->uses[i].index == y->uses[0].index - k))
			return false;
	return true;
}

/* ScatterElements reads and writes its elements in their own type (the
 * CPU kernel rounds half results after each update, as the GPU does), so
 * it is not staged through FP32. */
static bool lower_scatter_elements(struct lower *l, struct ir_node *n)
{
	static const char *const reductions[] = { "none", "add", "mul", "max", "min" };
	const char *red = ir_attr_s(n, "reduction");
	struct cg_step *s = lib_step(l, n, CG_LIB_SCATTER_ELEMENTS, 1, 4, n->out[0], n->in[0],
	                             n->in[1], n->in[2]);
	struct rt_scatter_elements_desc *d = &s->d.scatter_elements;
	d->dtype = rt_dtype(n->in[0]->type.dtype);
	d->index_dtype = rt_dtype(n->in[1]->type.dtype);
	for (int i = 0; i < 5; i++)
		if (!strcmp(red, reductions[i]))
			d->reduction = i; /* enum rt_scatter_reduction's order */
	d->rank = n->in[0]->type.rank;
	d->axis = (int)ir_attr_i(n, "axis");
	memcpy(d->data_dims, n->in[0]->type.dims, sizeof(int64_t) * (size_t)d->rank);
	memcpy(d->index_dims, n->in[1]->type.dims, sizeof(int64_t) * (size_t)d->rank);
	if (scatter_in_place(n))
		l->p->vals[n->out[0]->id].alias_of = cg_root(l->p, n->in[0]);
	return true;
}

static bool lower_pad(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	const char *mode = ir_attr_s(n, "mode");
	struct cg_step *s = lib_step(l, n, CG_LIB_PAD, 1, 2, n->out[0], n->in[0]);
	struct rt_pad_desc *d = &s->d.pad;
	d->esize = esize(n->in[0]);
	d->mode = !strcmp(mode, "reflect") ? RT_PAD_REFLECT
	          : !strcmp(mode, "edge")  ? RT_PAD_EDGE
	          : !strcmp(mode, "wrap")  ? RT_PAD_WRAP
	                                   : RT_PAD_CONSTANT;
	d->rank = x->rank;
	memcpy(d->in_dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
	memcpy(d->pads, ir_attr_ints(n, "pads", NULL), sizeof(int64_t) * 2 * (size_t)x->rank);
	if (ir_dtypes[x->dtype].is_float)
		ir_store_f64(x->dtype, d->value, 0, ir_attr_f(n, "value"));
	else
		ir_store_i64(x->dtype, d->value, 0, (int64_t)ir_attr_f(n, "value"));
	return true;
}

static bool lower_tile(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	struct cg_step *s = lib_step(l, n, CG_LIB_TILE, 1, 2, n->out[0], n->in[0]);
	s->d.tile.esize = esize(n->in[0]);
	s->d.tile.rank = x->rank;
	memcpy(s->d.tile.in_dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
	memcpy(s->d.tile.repeats, ir_attr_ints(n, "repeats", NULL),
	       sizeof(int64_t) * (size_t)x->rank);
	return true;
}

static bool lower_trilu(struct lower *l, struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	struct cg_step *s = lib_step(l, n, CG_LIB_TRILU, 1, 2, n->out[0], n->in[0]);
	s->d.trilu.esize = esize(n->in[0]);
	s->d.trilu.upper = (int)ir_attr_i(n, "upper");
	s->d.trilu.k = ir_attr_i(n, "k");
	s->d.trilu.rows = x->dims[x->rank - 2];
	s->d.trilu.cols = x->dims[x->rank - 1];
	s->d.trilu.batch = prod(x->dims, 0, x->rank - 2);
	return true;
}

static int name_index(const char *s, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(s, names[i]))
			return i;
	ir_panic(__FILE__, __LINE__, "unknown resize mode '%s'", s);
}

static bool lower_resize(struct lower *l, struct ir_node *n)
{
	static const char *const modes[] = { "nearest", "linear", "cubic", NULL };
	static const char *const coords[] = { "half_pixel",
		                              "half_pixel_symmetric",
		                              "pytorch_half_pixel",
		                              "align_corners",
		                              "asymmetric",
		                              "tf_crop_and_resize",
		                              NULL };
	static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil", "floor",
		                                "ceil", NULL };
	const struct ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
	struct cg_step *s = lib_step(l, n, CG_LIB_RESIZE, 1, 2, n->out[0], n->in[0]);
	struct rt_resize_desc *d = &s->d.resize;
	int nroi;
	const float *roi = ir_attr_floats(n, "roi", &nroi);
	d->dtype = rt_dtype(x->dtype);
	d->mode = name_index(ir_attr_s(n, "mode"), modes);
	d->coord = name_index(ir_attr_s(n, "coord"), coords);
	d->nearest = name_index(ir_attr_s(n, "nearest"), nearests);
	d->rank = x->rank;
	memcpy(d->in_dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
	memcpy(d->out_dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
	{
		int ns;
		const float *sc = ir_attr_floats(n, "scales", &ns);
		for (int i = 0; i < x->rank; i++)
			d->scales[i] = ns           ? sc[i]
			               : x->dims[i] ? (double)y->dims[i] / (double)x->dims[i]
			                            : 1;
	}
	if (nroi)
		memcpy(d->roi, roi, sizeof(float) * (size_t)nroi);
	d->cubic_a = ir_attr_f(n, "cubic_a");
	d->exclude_outside = (int)ir_attr_i(n, "exclude_outside");
	d->extrapolation = ir_attr_f(n, "extrapolation");
	return true;
}

/* ------------------------------------------------------------------------ */
/* Fused elementwise kernels                                                */
/* ------------------------------------------------------------------------ */

static int find(struct lower *l, int id)
{
	while (l->group[id] != id)
		id = l->group[id] = l->group[l->group[id]];
	return id;
}

static bool fusible(const struct lower *l, const struct ir_node *n)
{
	return ir_ops[n->op].kind == IR_KIND_ELTWISE && !l->absorbed[n->id];
}

/* Unions each elementwise node with its single-use same-shape producers. */
static void group_eltwise(struct lower *l)
{
	IR_FOR_EACH_NODE(l->p->m, n)
	{
		if (!fusible(l, n))
			continue;
		for (int i = 0; i < n->nin; i++) {
			struct ir_value *v = n->in[i];
			struct ir_node *p = v->kind == IR_VAL_NODE ? v->def : NULL;
			/* same shape; the dtypes may differ (casts, comparisons) */
			if (!p || !fusible(l, p) || sole_user(l, v) != n ||
			    v->type.rank != n->out[0]->type.rank || !ir_dtypes[v->type.dtype].size)
				continue;
			if (memcmp(v->type.dims, n->out[0]->type.dims,
			           sizeof(int64_t) * (size_t)v->type.rank))
				continue;
			l->group[find(l, p->id)] = find(l, n->id);
		}
	}
}

/* The node computing v inside a kernel of group g, or NULL where the
 * kernel loads v: v comes from outside the group, or from a node cut off
 * to root a kernel of its own. */
static struct ir_node *member(struct lower *l, const struct ir_value *v, int g)
{
	struct ir_node *p = v->kind == IR_VAL_NODE ? v->def : NULL;
	return p && fusible(l, p) && find(l, p->id) == g && !l->cut[p->id] ? p : NULL;
}

/*
 * Bounds each kernel to CG_MAX_KERNEL_OPS ops. A group is an in-tree (each
 * member but the root has its one use in the group), so in list order
 * (producers first) every node knows the ops of its operands' parts not yet
 * cut off; when its own part would pass the cap, its largest operand parts
 * are cut off - each roots a kernel that stores its result - until it fits.
 * A chain of N ops becomes N / CG_MAX_KERNEL_OPS kernels of the cap.
 */
static void cut_groups(struct lower *l)
{
	IR_FOR_EACH_NODE(l->p->m, n)
	{
		struct ir_node *kids[3];
		int nkids = 0, ops = 1, g;
		if (!fusible(l, n))
			continue;
		g = find(l, n->id);
		for (int i = 0; i < n->nin; i++)
			if ((kids[nkids] = member(l, n->in[i], g)))
				ops += l->part[kids[nkids++]->id];
		while (ops > CG_MAX_KERNEL_OPS) {
			int big = 0;
			for (int i = 1; i < nkids; i++)
				if (l->part[kids[i]->id] > l->part[kids[big]->id])
					big = i;
			IR_ASSERT(nkids > 0 && !l->cut[kids[big]->id]);
			l->cut[kids[big]->id] = true;
			ops -= l->part[kids[big]->id];
			kids[big] = kids[--nkids];
		}
		l->part[n->id] = ops;
	}
}

/* Does n root a kernel: the last node of its group, or one cut off? */
static bool kernel_root(struct lower *l, const struct ir_node *n)
{
	return find(l, n->id) == n->id || l->cut[n->id];
}

struct kbuild {
	struct lower *l;
	struct cg_kernel *k;
	int group;                   /* union-find root of the group */
	const struct ir_type *space; /* the kernel's index space (root output) */
	int stamp;                   /* marks l's per-value entries of this kernel */
};

static int add_x(struct kbuild *b, const struct cg_kx *x)
{
	struct cg_kernel *k = b->k;
	k->x = room(b->l, k->x, k->nx, &k->cap_x, sizeof *k->x);
	k->x[k->nx] = *x;
	return k->nx++;
}

/* The argument index of v (added the first time). */
static int add_arg(struct kbuild *b, struct ir_value *v)
{
	struct cg_kernel *k = b->k;
	struct lower *l = b->l;
	IR_ASSERT(v->id < l->nvals);
	if (l->arg_stamp[v->id] == b->stamp)
		return l->arg_of[v->id];
	k->args = room(l, k->args, k->nargs, &k->cap_args, sizeof *k->args);
	k->args[k->nargs] = v;
	l->arg_stamp[v->id] = b->stamp;
	l->arg_of[v->id] = k->nargs;
	return k->nargs++;
}

/* Records that expression x computes v in this kernel; returns x. */
static int memo(struct kbuild *b, const struct ir_value *v, int x)
{
	IR_ASSERT(v->id < b->l->nvals);
	b->l->x_stamp[v->id] = b->stamp;
	b->l->x_of[v->id] = x;
	return x;
}

/* The expression of v where the kernel does not compute it: a scalar
 * constant as an immediate, anything else a load through a view. */
static int leaf_x(struct kbuild *b, struct ir_value *v)
{
	struct cg_kx x = { .dtype = v->type.dtype };
	if (v->kind == IR_VAL_CONST && v->data && elems(v) == 1) {
		x.kind = KX_CONST;
		if (ir_dtype_float_valued(v->type.dtype))
			x.f = ir_load_f64(v->type.dtype, v->data, 0);
		else
			x.i = ir_load_i64(v->type.dtype, v->data, 0);
	} else {
		int64_t s[IR_MAX_RANK];
		const struct ir_type *t = &v->type, *o = b->space;
		x.kind = KX_LOAD;
		x.arg = add_arg(b, v);
		strides_of(t, s);
		for (int i = 0; i < o->rank; i++) {
			int j = i - (o->rank - t->rank);
			x.view.strides[i] = j < 0 || t->dims[j] == 1 ? 0 : s[j];
		}
	}
	return memo(b, v, add_x(b, &x));
}

/*
 * The expression computing the result of top, operands first: a post-order
 * walk over the kernel's nodes with an explicit stack, which holds at most
 * the kernel's ops (cut_groups bounds them), however long the group.
 */
static int build_x(struct kbuild *b, struct ir_node *top)
{
	struct frame {
		struct ir_node *n;
		int next; /* the operand to visit next */
		int in[3];
	} st[CG_MAX_KERNEL_OPS];
	int depth = 1;
	st[0] = (struct frame){ .n = top };
	for (;;) {
		struct frame *f = &st[depth - 1];
		struct cg_kx x = { .kind = KX_OP };
		int id;
		if (f->next < f->n->nin) {
			struct ir_value *v = f->n->in[f->next];
			struct ir_node *p;
			IR_ASSERT(v->id < b->l->nvals);
			if (b->l->x_stamp[v->id] == b->stamp) {
				f->in[f->next++] = b->l->x_of[v->id];
			} else if ((p = member(b->l, v, b->group))) {
				IR_ASSERT(depth < CG_MAX_KERNEL_OPS);
				st[depth++] = (struct frame){ .n = p };
			} else {
				f->in[f->next++] = leaf_x(b, v);
			}
			continue;
		}
		x.dtype = f->n->out[0]->type.dtype;
		x.node = f->n;
		x.nin = f->n->nin;
		memcpy(x.in, f->in, sizeof x.in);
		id = memo(b, f->n->out[0], add_x(b, &x));
		if (--depth == 0)
			return id;
		f = &st[depth - 1];
		f->in[f->next++] = id;
	}
}

bool cg_dense_view(const struct cg_kernel *k, const struct cg_kx *x)
{
	int64_t st = 1;
	if (x->view.offset)
		return false;
	for (int d = k->rank - 1; d >= 0; d--) {
		if (x->view.strides[d] != st && k->dims[d] != 1)
			return false;
		st *= k->dims[d];
	}
	return true;
}

/* Merges adjacent dimensions along which every access is contiguous. */
static void collapse(struct cg_kernel *k)
{
	int64_t out_st[IR_MAX_RANK];
	struct ir_type t = { .rank = k->rank };
	memcpy(t.dims, k->dims, sizeof t.dims);
	strides_of(&t, out_st);
	for (int d = k->rank - 1; d > 0; d--) {
		bool ok = true;
		for (int i = 0; i < k->nx && ok; i++)
			if (k->x[i].kind == KX_LOAD)
				ok = k->x[i].view.strides[d - 1] ==
				     k->x[i].view.strides[d] * k->dims[d];
		if (!ok)
			continue;
		/* merge d into d-1 (output strides always merge: it is dense) */
		k->dims[d - 1] *= k->dims[d];
		for (int i = 0; i < k->nx; i++)
			if (k->x[i].kind == KX_LOAD) {
				k->x[i].view.strides[d - 1] = k->x[i].view.strides[d];
				memmove(&k->x[i].view.strides[d], &k->x[i].view.strides[d + 1],
				        sizeof(int64_t) * (size_t)(k->rank - d - 1));
			}
		memmove(&k->dims[d], &k->dims[d + 1], sizeof(int64_t) * (size_t)(k->rank - d - 1));
		k->rank--;
	}
	(void)out_st;
	if (k->rank == 0) { /* a scalar: one iteration */
		k->rank = 1;
		k->dims[0] = 1;
	}
}

static bool lower_kernel(struct lower *l, struct ir_node *root)
{
	struct cg_plan *p = l->p;
	struct cg_kernel *k = ir_arena_alloc(ARENA(l), sizeof *k);
	struct kbuild b = { .l = l,
		            .k = k,
		            .group = find(l, root->id),
		            .space = &root->out[0]->type,
		            .stamp = p->nkernels + 1 };
	struct cg_step *s;
	k->id = k->code = p->nkernels;
	k->nout = 1;
	add_arg(&b, root->out[0]);
	k->out_x[0] = build_x(&b, root);
	k->rank = b.space->rank;
	memcpy(k->dims, b.space->dims, sizeof k->dims);
	collapse(k);
	p->kernels = room(l, p->kernels, p->nkernels, &p->cap_kernels, sizeof *p->kernels);
	p->kernels[p->nkernels++] = k;
	s = new_step(l, root);
	s->is_kernel = true;
	s->k = k;
	s->nout = 1;
	s->nargs = k->nargs;
	s->args = k->args;
	s->inner = k->dims[k->rank - 1];
	s->outer = prod(k->dims, 0, k->rank - 1);
	for (int i = 0; i < k->nx; i++)
		if (k->x[i].kind == KX_OP && k->x[i].node != root)
			add_cover(l, s, k->x[i].node);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Half precision around library kernels                                    */
/* ------------------------------------------------------------------------ */

/* Library kernels that compute on their elements (libcalls.h's elems
 * YDTYPE and DTYPE; the others move bytes and take any element type). */
static bool computes(enum cg_lib lib)
{
	/* clang-format off */
	switch (lib) {
#define CG_ELEMS_YDTYPE true
#define CG_ELEMS_DTYPE  true
#define CG_ELEMS_BYTES  false
#define CG_LIB(id, desc, fn, args, elems, ...) case CG_LIB_##id: return CG_ELEMS_##elems;
#include "libcalls.h"
	case CG_LIB_COUNT: break;
	}
	/* clang-format on */
	ir_panic(__FILE__, __LINE__, "no library call %d", (int)lib);
}

/* The dtype and ydtype fields of a computing step's descriptor (ydtype
 * NULL for a call writing int64). */
static void desc_dtypes(struct cg_step *s, int **dt, int **ydt)
{
	/* clang-format off */
	switch (s->lib) {
#define CG_DTYPES_YDTYPE(m) *dt = &s->d.m.dtype; *ydt = &s->d.m.ydtype; return;
#define CG_DTYPES_DTYPE(m)  *dt = &s->d.m.dtype; *ydt = NULL; return;
#define CG_DTYPES_BYTES(m)  break;
#define CG_LIB(id, desc, fn, args, elems, ...) case CG_LIB_##id: CG_DTYPES_##elems(CG_MEMBER_##desc)
#include "libcalls.h"
	case CG_LIB_COUNT: break;
	}
	/* clang-format on */
	ir_panic(__FILE__, __LINE__, "library %d has no dtype", (int)s->lib);
}

/* Does the CPU runtime's call for s take a workspace (libcalls.h's cpu
 * RT_WS)? If so, *bytes is its size for s's descriptor. */
static bool cpu_workspace(const struct cg_step *s, int64_t *bytes)
{
	/* clang-format off */
	switch (s->lib) {
#define CG_WS_RT(fn, m)    return false;
#define CG_WS_NONE(fn, m)  return false;
#define CG_WS_RT_WS(fn, m) *bytes = (int64_t)rt_##fn##_workspace(&s->d.m); return true;
#define CG_LIB(id, desc, fn, args, elems, cpu, ...) case CG_LIB_##id: CG_WS_##cpu(fn, CG_MEMBER_##desc)
#include "libcalls.h"
	case CG_LIB_COUNT: break;
	}
	/* clang-format on */
	ir_panic(__FILE__, __LINE__, "no library call %d", (int)s->lib);
}

int cg_step_ydtype(const struct cg_step *s)
{
	int *dt, *ydt;
	if (s->is_kernel || !computes(s->lib))
		return 0;
	desc_dtypes((struct cg_step *)s, &dt, &ydt);
	return ydt ? *ydt : 0;
}

static void compute_in_f32(struct cg_step *s)
{
	int *dt, *ydt;
	desc_dtypes(s, &dt, &ydt);
	*dt = RT_F32;
}

/* A target whose libraries read and write half tensors (half_libraries):
 * a step whose result (a cast absorbed) differs in type from what it reads
 * says so in ydtype; the libraries convert. */
static void set_ydtype(struct cg_step *s)
{
	int *dt, *ydt;
	if (s->is_kernel || !computes(s->lib))
		return;
	desc_dtypes(s, &dt, &ydt);
	if (ydt && s->args[0] && rt_dtype(s->args[0]->type.dtype) != *dt)
		*ydt = rt_dtype(s->args[0]->type.dtype);
}

static bool is_half(const struct ir_value *v)
{
	return v && (v->type.dtype == IR_F16 || v->type.dtype == IR_BF16);
}

/* The FP32 twin of half constant v (every value of v is exact in FP32). */
static struct ir_value *f32_copy(struct lower *l, struct ir_value *v)
{
	struct ir_module *m = l->p->m;
	struct ir_type t = v->type;
	int64_t n = elems(v);
	float *data;
	const char *name = ir_arena_printf(ARENA(l), "%s.f32", v->name);
	struct ir_value *c = ir_find_value(m, name);
	if (c && c->kind == IR_VAL_CONST && c->type.dtype == IR_F32)
		return c; /* another step made it */
	data = ir_arena_alloc_big(ARENA(l), sizeof *data * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		data[i] = (float)ir_load_f64(v->type.dtype, v->data, (size_t)i);
	t.dtype = IR_F32;
	return ir_add_const(m, ir_unique_name(m, name), &t, data);
}

static void stage_half(struct lower *l, struct cg_step *s)
{
	bool any = false;
	int64_t ws;
	if (s->is_kernel || !computes(s->lib))
		return;
	for (int i = 0; i < s->nargs; i++)
		any |= is_half(s->args[i]);
	if (!any)
		return;
	compute_in_f32(s);
	if (cpu_workspace(s, &ws))
		s->ws_bytes = ws; /* for the FP32 descriptor */
	s->stages = ir_arena_alloc(ARENA(l), sizeof *s->stages * (size_t)s->nargs);
	for (int i = 0; i < s->nargs; i++) {
		struct cg_stage *st;
		if (!is_half(s->args[i]))
			continue;
		if (s->args[i]->kind == IR_VAL_CONST && s->args[i]->data) {
			/* a half weight: its FP32 copy, made once here (exact) */
			s->args[i] = f32_copy(l, s->args[i]);
			continue;
		}
		st = &s->stages[s->nstages++];
		st->arg = i;
		st->elems = elems(s->args[i]);
		if (s->ws_bytes < 0 || s->ws_bytes > INT64_MAX / 4 || st->elems > INT64_MAX / 16) {
			s->ws_bytes = -1; /* more than a plan can hold: memplan refuses it */
			continue;
		}
		st->ws_offset = (s->ws_bytes + 63) / 64 * 64;
		s->ws_bytes = st->ws_offset + 4 * st->elems;
	}
}

/* Library computations other than GEMM and convolution (whose epilogues
 * take casts) absorb a cast that is their result's only reader. */
static void claim_output_cast(struct lower *l, struct ir_node *n)
{
	struct ir_node *c;
	if (n->op == IR_OP_CONV || n->op == IR_OP_GEMM || n->op == IR_OP_MATMUL ||
	    !amp_fuses_output_cast(n->op) || ir_ops[n->op].kind == IR_KIND_ELTWISE ||
	    n->op == IR_OP_RESHAPE || !float_storage(n->out[0]->type.dtype))
		return;
	c = sole_user(l, n->out[0]);
	if (float_cast(c)) {
		l->out_cast[n->id] = c;
		l->absorbed[c->id] = true;
	}
}

/* Counts the casts generated kernels carry: alone (a kernel of its own) or
 * fused with other work. */
static void count_casts(struct cg_plan *p)
{
	for (int i = 0; i < p->nkernels; i++) {
		const struct cg_kernel *k = p->kernels[i];
		int casts = 0, ops = 0;
		for (int x = 0; x < k->nx; x++)
			if (k->x[x].kind == KX_OP) {
				ops++;
				casts += k->x[x].node->op == IR_OP_CAST;
			}
		if (casts && casts == ops)
			p->cast_kernels++;
		else
			p->casts_fused += casts;
	}
}

/* ------------------------------------------------------------------------ */

/*
 * Each op's lowering, named by the lower column of ir/ops.h (lower_<lower>).
 * The ops cg_lower does not dispatch through the table have named empty
 * entries, so a row without a lowering does not compile.
 */
#define lower_fused     NULL /* elementwise: fused into kernels (group_eltwise) */
#define lower_view      NULL /* reshape, bitcast: an alias of its input (cg_root) */
#define lower_direct    NULL /* copy: cg_lower calls lower_copy itself */
#define lower_rewritten NULL /* batch_norm: passes/batchnorm.c rewrites it first */

static const lower_fn lowerers[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp, why, inf, fold, ex, grad, lo, sch) \
	[IR_OP_##id] = lower_##lo,
#include "ir/ops.h"
#undef IR_OP
};

static const char *const lower_names[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp, why, inf, fold, ex, grad, lo, sch) \
	[IR_OP_##id] = #lo,
#include "ir/ops.h"
#undef IR_OP
};

bool cg_is_view(enum ir_op op) { return !strcmp(lower_names[op], "view"); }

struct ir_value *cg_root(const struct cg_plan *p, struct ir_value *v)
{
	while (p->vals[v->id].alias_of)
		v = p->vals[v->id].alias_of;
	return v;
}

/* Can p's target run step s? If not, says so naming the node and the
 * target. */
static bool target_runs(const struct cg_plan *p, const struct cg_step *s)
{
	const struct cg_target *t = p->target;
	struct ir_ctx *ctx = p->m->ctx;
	if (!s->is_kernel) {
		const char *why = NULL;
		if (t->supports_lib(s->lib) && !(why = t->refuses(p->arena, s)))
			return true;
		if (why)
			ir_node_error(ctx, s->node->name, ir_ops[s->node->op].name,
			              "the %s target cannot run it: %s", t->name, why);
		else
			ir_node_error(ctx, s->node->name, ir_ops[s->node->op].name,
			              "the %s target has no library call for it", t->name);
		return false;
	}
	for (int i = 0; i < s->k->nx; i++) {
		const struct ir_node *n = s->k->x[i].node;
		if (s->k->x[i].kind == KX_OP && !t->supports_op(n->op)) {
			ir_node_error(ctx, n->name, ir_ops[n->op].name,
			              "the %s target cannot compute it in a generated kernel",
			              t->name);
			return false;
		}
	}
	return true;
}

bool cg_lower(struct cg_plan *p)
{
	struct ir_module *m = p->m;
	struct lower l = { .p = p };
	int ids, pos = 0, nvals;
	bool ok = true;
	if (!p->target)
		p->target = cg_find_target(p->opt->target);
	IR_ASSERT(p->target);
	prepare_loops(m);
	ids = m->next_node_id + 1;
	l.pos = ir_arena_alloc(&m->arena, sizeof *l.pos * (size_t)ids);
	l.group = ir_arena_alloc(&m->arena, sizeof *l.group * (size_t)ids);
	l.absorbed = ir_arena_alloc(&m->arena, sizeof *l.absorbed * (size_t)ids);
	l.out_cast = ir_arena_alloc(&m->arena, sizeof *l.out_cast * (size_t)ids);
	l.cut = ir_arena_alloc(&m->arena, sizeof *l.cut * (size_t)ids);
	l.part = ir_arena_alloc(&m->arena, sizeof *l.part * (size_t)ids);
	l.nvals = m->nvalues;
	l.x_stamp = ir_arena_alloc(&m->arena, sizeof *l.x_stamp * (size_t)(l.nvals + 1));
	l.x_of = ir_arena_alloc(&m->arena, sizeof *l.x_of * (size_t)(l.nvals + 1));
	l.arg_stamp = ir_arena_alloc(&m->arena, sizeof *l.arg_stamp * (size_t)(l.nvals + 1));
	l.arg_of = ir_arena_alloc(&m->arena, sizeof *l.arg_of * (size_t)(l.nvals + 1));
	for (int i = 0; i < ids; i++)
		l.group[i] = i;
	IR_FOR_EACH_NODE(m, n)
	l.pos[n->id] = pos++;
	p->vals = ir_arena_alloc(&m->arena, sizeof *p->vals * (size_t)(m->nvalues + 1));
	nvals = m->nvalues;

	/* 1. epilogues claim their nodes before fusion can */
	IR_FOR_EACH_NODE(m, n)
	{
		struct epi e;
		if (n->op == IR_OP_CONV || n->op == IR_OP_GEMM || n->op == IR_OP_MATMUL) {
			match_epilogue(&l, n,
			               n->op != IR_OP_CONV && (n->op == IR_OP_MATMUL || n->nin < 3),
			               &e);
			for (int i = 0; i < e.nnodes; i++)
				l.absorbed[e.nodes[i]->id] = true;
		} else if (lowerers[n->op] && !l.absorbed[n->id]) {
			claim_output_cast(&l, n);
		}
	}
	/* 2. elementwise groups, cut into kernels of bounded size */
	group_eltwise(&l);
	cut_groups(&l);
	/* 3. steps */
	IR_FOR_EACH_NODE(m, n)
	{
		bool empty = true;
		if (cg_is_view(n->op)) {
			/* the root itself: an output given storage of its own
			 * later (separate_outputs) must not carry along the
			 * views of it, which still read the root */
			p->vals[n->out[0]->id].alias_of = cg_root(p, n->in[0]);
			continue;
		}
		if (fusible(&l, n)) {
			/* a kernel is emitted where its root (last node) stands */
			if (kernel_root(&l, n) && elems(n->out[0]))
				lower_kernel(&l, n);
			continue;
		}
		if (l.absorbed[n->id])
			continue;
		for (int i = 0; i < n->nout; i++)
			empty &= elems(n->out[i]) == 0;
		if (empty)
			continue;
		if (n->op == IR_OP_COPY) {
			lower_copy(&l, n);
			continue;
		}
		if (!lowerers[n->op])
			ir_panic(__FILE__, __LINE__, "no lowering for op %s", ir_ops[n->op].name);
		/* epilogues are matched again here, with the same result as in
		 * sweep 1: the graph has not changed */
		lowerers[n->op](&l, n);
		if (l.out_cast[n->id]) {
			struct cg_step *s = &p->steps[p->nsteps - 1];
			IR_ASSERT(s->node == n && s->args[0] == n->out[0]);
			s->args[0] = l.out_cast[n->id]->out[0];
			add_cover(&l, s, l.out_cast[n->id]);
			p->casts_fused++;
		}
	}
	for (int i = 0; i < p->nsteps; i++) {
		ok &= target_runs(p, &p->steps[i]);
		if (p->target->half_libraries)
			set_ydtype(&p->steps[i]);
		else
			stage_half(&l, &p->steps[i]);
	}
	count_casts(p);
	/* constants made while lowering (dense parameters, FP32 twins of half
	 * weights) need their entries too */
	if (m->nvalues > nvals) {
		struct cg_val *v = ir_arena_alloc(&m->arena, sizeof *v * (size_t)(m->nvalues + 1));
		memcpy(v, p->vals, sizeof *v * (size_t)nvals);
		p->vals = v;
	}
	return ok;
}

/* ------------------------------------------------------------------------ */
/* Shared kernel code                                                       */
/* ------------------------------------------------------------------------ */

int cg_inplace_output(const struct cg_plan *p, const struct cg_kernel *k, int a)
{
	struct cg_buf in = p->vals[cg_root(p, k->args[a])->id].buf;
	for (int o = 0; o < k->nout; o++) {
		struct cg_buf out = p->vals[cg_root(p, k->args[o])->id].buf;
		if (in.where == out.where && in.index == out.index && in.offset == out.offset &&
		    in.where == CG_ARENA)
			return o;
	}
	return -1;
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * UINT64_C(0x100000001b3); }

/* What the code of a kernel depends on, hashed: its index space, its
 * expressions (ops, views, constants), which inputs it reads in place. */
static uint64_t kernel_hash(const struct cg_plan *p, const struct cg_kernel *k)
{
	uint64_t h = mix(mix(mix(UINT64_C(0xcbf29ce484222325), (uint64_t)k->rank), (uint64_t)k->nx),
	                 (uint64_t)k->nargs);
	for (int d = 0; d < k->rank; d++)
		h = mix(h, (uint64_t)k->dims[d]);
	for (int i = 0; i < k->nx; i++) {
		const struct cg_kx *x = &k->x[i];
		h = mix(mix(mix(h, (uint64_t)x->kind), (uint64_t)x->dtype), (uint64_t)x->arg);
		if (x->kind == KX_OP)
			h = mix(h, (uint64_t)x->node->op);
		for (int d = 0; d < k->rank && x->kind == KX_LOAD; d++)
			h = mix(h, (uint64_t)x->view.strides[d]);
	}
	for (int a = k->nout; a < k->nargs; a++)
		h = mix(h, (uint64_t)(cg_inplace_output(p, k, a) + 1));
	return h;
}

static bool same_x(const struct cg_kernel *k, const struct cg_kx *a, const struct cg_kx *b)
{
	if (a->kind != b->kind || a->dtype != b->dtype)
		return false;
	switch (a->kind) {
	case KX_LOAD:
		return a->arg == b->arg && a->view.offset == b->view.offset &&
		       !memcmp(a->view.strides, b->view.strides, sizeof(int64_t) * (size_t)k->rank);
	case KX_CONST: return a->i == b->i && !memcmp(&a->f, &b->f, sizeof a->f);
	case KX_OP:
		return a->nin == b->nin && !memcmp(a->in, b->in, sizeof(int) * (size_t)a->nin) &&
		       ir_same_attrs(a->node, b->node);
	}
	return false;
}

/* Would a and b compile to the same function? */
static bool same_kernel(const struct cg_plan *p, const struct cg_kernel *a,
                        const struct cg_kernel *b)
{
	if (a->rank != b->rank || a->nx != b->nx || a->nargs != b->nargs || a->nout != b->nout ||
	    memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) ||
	    memcmp(a->out_x, b->out_x, sizeof(int) * (size_t)a->nout))
		return false;
	for (int i = 0; i < a->nx; i++)
		if (!same_x(a, &a->x[i], &b->x[i]))
			return false;
	for (int i = a->nout; i < a->nargs; i++)
		if (cg_inplace_output(p, a, i) != cg_inplace_output(p, b, i))
			return false;
	return true;
}

void cg_share_kernels(struct cg_plan *p)
{
	size_t cap = 16, mask;
	int *slot;
	uint64_t *hash;
	while (cap < 2 * (size_t)p->nkernels)
		cap *= 2;
	mask = cap - 1;
	slot = ir_malloc(p->m->ctx, sizeof *slot * cap);
	hash = ir_malloc(p->m->ctx, sizeof *hash * (size_t)(p->nkernels + 1));
	for (size_t i = 0; i < cap; i++)
		slot[i] = -1;
	for (int i = 0; i < p->nkernels; i++) {
		struct cg_kernel *k = p->kernels[i];
		size_t s;
		hash[i] = kernel_hash(p, k);
		for (s = hash[i] & mask; slot[s] >= 0; s = (s + 1) & mask)
			if (hash[slot[s]] == hash[i] && same_kernel(p, p->kernels[slot[s]], k))
				break;
		if (slot[s] >= 0)
			k->code = p->kernels[slot[s]]->code;
		else
			slot[s] = i;
	}
	ir_free(p->m->ctx, slot);
	ir_free(p->m->ctx, hash);
}
