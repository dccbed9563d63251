/*
 * ops_loss.c - importers for ONNX's loss ops, NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss, and for the optimizers of ai.onnx.preview.training
 * (Adagrad, Momentum, Adam; below), lowered to IR ops (no loss or optimizer
 * op in the IR).
 *
 * Both are the same negative log likelihood of input [N, C, d1..dk] (log
 * probabilities; SoftmaxCrossEntropyLoss takes their log_softmax over C
 * first) at target [N, d1..dk]:
 *
 *   safe   = where(target == ignore_index, 0, target)
 *   loss   = -gather_elements(input, safe[:, None], axis 1)[:, 0] * weight[safe]
 *   loss   = where(target == ignore_index, 0, loss)
 *   applied weight = where(target == ignore_index, 0, weight[safe]) (1 without weight)
 *
 * then reduction none (loss), sum (its sum) or mean (its sum over the sum of
 * the applied weights; the plain mean when nothing is weighted or ignored).
 * An ignored target may lie outside [0, C), negative included: it is
 * replaced by class 0 before anything indexes with it, and its loss is
 * selected away rather than multiplied by 0, so an infinite log probability
 * there gives 0, not NaN. Every op here has a gradient rule, so onnxc train
 * differentiates a model exported with its loss (--loss none).
 */
#include "fe.h"

#include <string.h>

/* What both ops share: the checked operands and attributes. */
struct nll {
	struct ir_value *target, *weight; /* weight: NULL when omitted */
	struct ir_value *ignored;         /* bool [N, d..]: NULL without ignore_index */
	enum { RED_NONE, RED_SUM, RED_MEAN } reduction;
};

/* A scalar constant of dtype t holding v. */
static struct ir_value *scalar(struct fe_node *nd, enum ir_dtype t, double v)
{
	struct ir_type st = { .dtype = t };
	unsigned char buf[8];
	if (ir_dtypes[t].is_float)
		ir_store_f64(t, buf, 0, v);
	else
		ir_store_i64(t, buf, 0, (int64_t)v);
	return fe_const(nd, -1, &st, buf);
}

/* Reads the attributes and checks input x, target and weight against each
 * other; x's dtype is the op's T, which holds bfloat16 from version bf16_from
 * of the op. */
static bool read_nll(struct fe_node *nd, struct nll *l, int bf16_from)
{
	const char *red = fe_str(nd, "reduction", "mean");
	bool has_ii = fe_has(nd, "ignore_index");
	int64_t ii = fe_int(nd, "ignore_index", 0);
	bool bf16 = nd->version >= bf16_from;
	const struct ir_type *x, *t, *w;
	char s1[IR_TYPE_STR_MAX], s2[IR_TYPE_STR_MAX];
	memset(l, 0, sizeof *l);
	if (!fe_inputs(nd, 2, 3) || nd->failed)
		return false;
	if (!strcmp(red, "none"))
		l->reduction = RED_NONE;
	else if (!strcmp(red, "sum"))
		l->reduction = RED_SUM;
	else if (!strcmp(red, "mean"))
		l->reduction = RED_MEAN;
	else
		return fe_fail(nd, "reduction '%s' is not one of none, sum, mean", red);
	x = &nd->in[0]->type;
	t = &nd->in[1]->type;
	if (x->dtype != IR_F16 && x->dtype != IR_F32 && x->dtype != IR_F64 &&
	    !(bf16 && x->dtype == IR_BF16))
		return fe_fail(nd, "input is %s: the op takes %s", ir_dtype_name(x->dtype),
		               bf16 ? "float16, float, double or bfloat16"
		                    : "float16, float or double");
	if (t->dtype != IR_I32 && t->dtype != IR_I64)
		return fe_fail(nd, "target is %s, not int32 or int64", ir_dtype_name(t->dtype));
	if (x->rank < 2 || t->rank != x->rank - 1 || t->dims[0] != x->dims[0] ||
	    memcmp(t->dims + 1, x->dims + 2, sizeof t->dims[0] * (size_t)(t->rank - 1)))
		return fe_fail(nd, "input %s and target %s are not [N, C, d1..dk] and [N, d1..dk]",
		               ir_type_str(x, s1, sizeof s1), ir_type_str(t, s2, sizeof s2));
	if ((l->weight = fe_in(nd, 2))) {
		w = &l->weight->type;
		if (w->dtype != x->dtype || w->rank != 1 || w->dims[0] != x->dims[1])
			return fe_fail(nd, "weight %s is not %s[%lld], one per class",
			               ir_type_str(w, s1, sizeof s1), ir_dtype_name(x->dtype),
			               (long long)x->dims[1]);
	}
	l->target = nd->in[1];
	/* an int32 target never equals an ignore_index beyond int32 */
	if (has_ii && (t->dtype == IR_I64 || (ii >= INT32_MIN && ii <= INT32_MAX))) {
		struct ir_value *eq[2] = { l->target, NULL }, *in[3];
		struct ir_type st = { .dtype = t->dtype };
		unsigned char buf[8];
		ir_store_i64(t->dtype, buf, 0, ii); /* exact: not through a double */
		if (!(eq[1] = fe_const(nd, -1, &st, buf)) ||
		    !(l->ignored = fe_simple(nd, IR_OP_EQUAL, eq, 2, -1)))
			return false;
		in[0] = l->ignored;
		in[1] = scalar(nd, t->dtype, 0);
		in[2] = l->target;
		if (!in[1] || !(l->target = fe_simple(nd, IR_OP_WHERE, in, 3, -1)))
			return false;
	}
	return !nd->failed;
}

/* x[:, target] for x [N, C, d..]: [N, d..], an intermediate. */
static struct ir_value *pick(struct fe_node *nd, struct ir_value *x, struct ir_value *target)
{
	const struct ir_type *t = &target->type;
	int64_t dims[IR_MAX_RANK];
	struct ir_value *in[2] = { x, NULL };
	const char *name = fe_tmp_name(nd, "picked");
	struct ir_node *n;
	/* the target [N, d..] as indices [N, 1, d..] of the class axis */
	dims[0] = t->dims[0];
	dims[1] = 1;
	memcpy(dims + 2, t->dims + 1, sizeof dims[0] * (size_t)(t->rank - 1));
	if (!(in[1] = fe_reshape(nd, target, dims, t->rank + 1, -1)))
		return NULL;
	n = fe_emit(nd, IR_OP_GATHER_ELEMENTS, in, 2, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", 1);
	return fe_finish(nd, n) ? fe_reshape(nd, n->out[0], t->dims, t->rank, -1) : NULL;
}

/* The loss of log probabilities lp [N, C, d..], bound to output 0. */
static bool nll_loss(struct fe_node *nd, const struct nll *l, struct ir_value *lp)
{
	enum ir_dtype dt = lp->type.dtype;
	bool none = l->reduction == RED_NONE,
	     ratio = l->reduction == RED_MEAN && (l->weight || l->ignored);
	struct ir_value *zero = l->ignored ? scalar(nd, dt, 0) : NULL, *w = NULL, *loss, *in[3];
	/* each value is named after the output where it is the last */
	if ((l->ignored && !zero) || !(loss = pick(nd, lp, l->target)) ||
	    !(loss = fe_simple(nd, IR_OP_NEG, &loss, 1, none && !l->weight && !zero ? 0 : -1)))
		return false;
	if (l->weight) {
		if (!(w = fe_gather(nd, l->weight, l->target, 0, -1)))
			return false;
		in[0] = loss;
		in[1] = w;
		if (!(loss = fe_simple(nd, IR_OP_MUL, in, 2, none && !zero ? 0 : -1)))
			return false;
	}
	if (zero) {
		in[0] = l->ignored;
		in[1] = zero;
		in[2] = loss;
		if (!(loss = fe_simple(nd, IR_OP_WHERE, in, 3, none ? 0 : -1)))
			return false;
		if (ratio) { /* the applied weights: 0 where ignored */
			in[2] = w ? w : scalar(nd, dt, 1);
			if (!in[2] || !(w = fe_simple(nd, IR_OP_WHERE, in, 3, -1)))
				return false;
		}
	}
	if (ratio) {
		in[0] = fe_reduce_all(nd, IR_OP_REDUCE_SUM, loss, -1);
		in[1] = fe_reduce_all(nd, IR_OP_REDUCE_SUM, w, -1);
		loss = in[0] && in[1] ? fe_simple(nd, IR_OP_DIV, in, 2, 0) : NULL;
	} else if (!none) {
		loss = fe_reduce_all(nd,
		                     l->reduction == RED_SUM ? IR_OP_REDUCE_SUM : IR_OP_REDUCE_MEAN,
		                     loss, 0);
	}
	if (!loss)
		return false;
	fe_bind(nd, 0, loss);
	return true;
}

static bool imp_nll_loss(struct fe_node *nd)
{
	struct nll l;
	/* bfloat16 joined T in version 22 */
	return read_nll(nd, &l, 22) && nll_loss(nd, &l, nd->in[0]);
}

/* The log probabilities are the optional second output, log_prob. */
static bool imp_softmax_cross_entropy(struct fe_node *nd)
{
	struct nll l;
	const char *name;
	struct ir_node *n;
	if (!read_nll(nd, &l, 13)) /* bfloat16 joined T in version 13 */
		return false;
	name = nd->nout > 1 && nd->proto->output[1][0] ? fe_out_name(nd, 1)
	                                               : fe_tmp_name(nd, "log_prob");
	n = fe_emit(nd, IR_OP_LOG_SOFTMAX, nd->in, 1, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", 1);
	if (!fe_finish(nd, n))
		return false;
	fe_bind(nd, 1, n->out[0]);
	return nll_loss(nd, &l, n->out[0]);
}

/* ------------------------------------------------------------------------ */
/* The optimizers of ai.onnx.preview.training                               */
/* ------------------------------------------------------------------------ */

/*
 * Adagrad, Momentum and Adam (domain ai.onnx.preview.training, version 1):
 * one update of n tensors X with their gradients G and optimizer state,
 * given the learning rate R and the update count T (scalars, run-time
 * inputs). Inputs R, T, X1..Xn, G1..Gn, then the state tensors by kind
 * (Adagrad H; Momentum V; Adam V then H); outputs the new X1..Xn, then the
 * new state by kind. Everything is elementwise: the IR ops below fuse into
 * a kernel per tensor. T > 0 switches Momentum's gradient coefficient to
 * beta and Adam's bias correction on (a where, T being a run-time value).
 * The formulas are ONNX's (docs/Operators.md, ai.onnx.preview.training).
 */
enum optim { ADAGRAD, MOMENTUM, ADAM };

struct optim_in {
	int n;                    /* tensors updated */
	enum ir_dtype dt;         /* their type */
	struct ir_value *r, *t;   /* R and T in dt */
	struct ir_value *started; /* T > 0 */
};

static struct ir_value *in_dtype(struct fe_node *nd, struct ir_value *v, enum ir_dtype dt)
{
	return v && v->type.dtype != dt ? fe_cast(nd, v, dt, -1) : v;
}

/* Checks the inputs (k per tensor: X, G and the state) and outputs. */
static bool optim_inputs(struct fe_node *nd, int k, int outs, struct optim_in *o)
{
	struct ir_value *r, *t, *x;
	if (!fe_inputs(nd, 2 + k, -1) || nd->failed)
		return false;
	if ((nd->nin - 2) % k)
		return fe_fail(nd, "takes R, T and %d tensors per updated tensor, not %d inputs", k,
		               nd->nin);
	o->n = (nd->nin - 2) / k;
	if (nd->nout != outs * o->n)
		return fe_fail(nd, "updates %d tensors: it has %d outputs, not %d", o->n,
		               outs * o->n, nd->nout);
	r = nd->in[0], t = nd->in[1], x = nd->in[2];
	o->dt = x->type.dtype;
	if (o->dt != IR_F32 && o->dt != IR_F64)
		return fe_fail(nd, "the tensors must be f32 or f64, not %s", ir_dtype_name(o->dt));
	if ((r->type.dtype != IR_F32 && r->type.dtype != IR_F64) || ir_type_elems(&r->type) != 1)
		return fe_fail(nd, "R must be one f32 or f64 value");
	if (t->type.dtype != IR_I64 || ir_type_elems(&t->type) != 1)
		return fe_fail(nd, "T must be one i64 value");
	for (int i = 2; i < nd->nin; i++) {
		struct ir_value *v = fe_in(nd, i);
		if (!v || !ir_type_eq(&v->type, &nd->in[2 + (i - 2) % o->n]->type))
			return fe_fail(nd,
			               "input %d must be of the type and shape of the tensor it "
			               "goes with (%s)",
			               i, nd->proto->input[2 + (i - 2) % o->n]);
	}
	o->r = in_dtype(nd, r, o->dt);
	o->t = in_dtype(nd, t, o->dt);
	o->started = fe_binary(nd, IR_OP_GREATER, t, fe_scalar(nd, IR_I64, 0), -1);
	return o->r && o->t && o->started;
}

static struct ir_value *k_(struct fe_node *nd, enum ir_dtype dt, double v)
{
	return fe_scalar(nd, dt, v);
}

/* a * x + y (a a scalar constant) */
static struct ir_value *axpy(struct fe_node *nd, double a, struct ir_value *x, struct ir_value *y,
                             int k)
{
	struct ir_value *ax = fe_binary(nd, IR_OP_MUL, k_(nd, x->type.dtype, a), x, -1);
	return fe_binary(nd, IR_OP_ADD, ax, y, k);
}

static bool bind_out(struct fe_node *nd, int k, struct ir_value *v)
{
	if (!v)
		return false;
	fe_bind(nd, k, v);
	return true;
}

/* A required float attribute: false after reporting it missing. */
static bool req_float(struct fe_node *nd, const char *name, double *v)
{
	if (!fe_has(nd, name))
		return nd->failed ? false : fe_fail(nd, "attribute '%s' is required", name);
	*v = fe_float(nd, name, 0);
	return !nd->failed;
}

static bool imp_optimizer(struct fe_node *nd)
{
	enum optim kind = !strcmp(nd->op, "Adagrad")    ? ADAGRAD
	                  : !strcmp(nd->op, "Momentum") ? MOMENTUM
	                                                : ADAM;
	struct optim_in o = { 0 };
	struct ir_value *rate = NULL, *coef = NULL;
	double alpha = 0, beta = 0, eps = 0, nc = 0, ncp = 0, decay = 0;
	bool nesterov = false;
	if (kind == ADAGRAD) {
		decay = fe_float(nd, "decay_factor", 0);
		eps = fe_float(nd, "epsilon", 0);
		nc = fe_float(nd, "norm_coefficient", 0);
	} else if (kind == MOMENTUM) {
		const char *mode = fe_str(nd, "mode", "");
		if (!req_float(nd, "alpha", &alpha) || !req_float(nd, "beta", &beta) ||
		    !req_float(nd, "norm_coefficient", &nc))
			return false;
		if (strcmp(mode, "standard") && strcmp(mode, "nesterov"))
			return fe_fail(nd, "mode '%s' is not one of standard and nesterov", mode);
		nesterov = !strcmp(mode, "nesterov");
	} else {
		alpha = fe_float(nd, "alpha", 0.9f);
		beta = fe_float(nd, "beta", 0.999f);
		eps = fe_float(nd, "epsilon", 0);
		nc = fe_float(nd, "norm_coefficient", 0);
		ncp = fe_float(nd, "norm_coefficient_post", 0);
	}
	if (!optim_inputs(nd, kind == ADAM ? 4 : 3, kind == ADAM ? 3 : 2, &o))
		return false;
	if (kind == ADAGRAD) /* R / (1 + T decay_factor) */
		rate = fe_binary(nd, IR_OP_DIV, o.r, axpy(nd, decay, o.t, k_(nd, o.dt, 1), -1), -1);
	else if (kind == MOMENTUM) /* beta once T > 0, 1 before */
		coef = fe_where(nd, o.started, k_(nd, o.dt, beta), k_(nd, o.dt, 1), -1);
	else { /* R sqrt(1 - beta^T) / (1 - alpha^T) once T > 0, R before */
		struct ir_value *bt = fe_binary(nd, IR_OP_POW, k_(nd, o.dt, beta), o.t, -1),
		                *at = fe_binary(nd, IR_OP_POW, k_(nd, o.dt, alpha), o.t, -1);
		struct ir_value *num = fe_unary(
		        nd, IR_OP_SQRT, fe_binary(nd, IR_OP_SUB, k_(nd, o.dt, 1), bt, -1), -1);
		struct ir_value *den = fe_binary(nd, IR_OP_SUB, k_(nd, o.dt, 1), at, -1);
		rate = fe_where(
		        nd, o.started,
		        fe_binary(nd, IR_OP_DIV, fe_binary(nd, IR_OP_MUL, o.r, num, -1), den, -1),
		        o.r, -1);
	}
	if (!rate && !coef)
		return false;
	for (int i = 0; i < o.n; i++) {
		struct ir_value *x = nd->in[2 + i], *gr = nd->in[2 + o.n + i],
		                *s1 = nd->in[2 + 2 * o.n + i];
		/* the gradient of the regularization term added */
		struct ir_value *g = axpy(nd, nc, x, gr, -1), *step;
		if (kind == ADAGRAD) {
			struct ir_value *h = fe_binary(nd, IR_OP_ADD, s1,
			                               fe_binary(nd, IR_OP_MUL, g, g, -1), o.n + i);
			struct ir_value *hs =
			        fe_binary(nd, IR_OP_ADD, fe_unary(nd, IR_OP_SQRT, h, -1),
			                  k_(nd, o.dt, eps), -1);
			step = fe_binary(nd, IR_OP_DIV, fe_binary(nd, IR_OP_MUL, rate, g, -1), hs,
			                 -1);
			if (!bind_out(nd, o.n + i, h))
				return false;
		} else if (kind == MOMENTUM) {
			struct ir_value *v =
			        fe_binary(nd, IR_OP_ADD,
			                  fe_binary(nd, IR_OP_MUL, k_(nd, o.dt, alpha), s1, -1),
			                  fe_binary(nd, IR_OP_MUL, coef, g, -1), o.n + i);
			step = fe_binary(nd, IR_OP_MUL, o.r,
			                 nesterov ? axpy(nd, alpha, v, g, -1) : v, -1);
			if (!bind_out(nd, o.n + i, v))
				return false;
		} else {
			struct ir_value *s2 = nd->in[2 + 3 * o.n + i];
			struct ir_value *v = fe_binary(
			        nd, IR_OP_ADD,
			        fe_binary(nd, IR_OP_MUL, k_(nd, o.dt, alpha), s1, -1),
			        fe_binary(nd, IR_OP_MUL, k_(nd, o.dt, 1 - alpha), g, -1), o.n + i);
			struct ir_value *h = fe_binary(
			        nd, IR_OP_ADD, fe_binary(nd, IR_OP_MUL, k_(nd, o.dt, beta), s2, -1),
			        fe_binary(nd, IR_OP_MUL, k_(nd, o.dt, 1 - beta),
			                  fe_binary(nd, IR_OP_MUL, g, g, -1), -1),
			        2 * o.n + i);
			struct ir_value *hs =
			        fe_binary(nd, IR_OP_ADD, fe_unary(nd, IR_OP_SQRT, h, -1),
			                  k_(nd, o.dt, eps), -1);
			step = fe_binary(nd, IR_OP_MUL, rate, fe_binary(nd, IR_OP_DIV, v, hs, -1),
			                 -1);
			if (!bind_out(nd, o.n + i, v) || !bind_out(nd, 2 * o.n + i, h))
				return false;
		}
		if (kind == ADAM && ncp != 0) { /* regularization after the update */
			struct ir_value *xn = fe_binary(nd, IR_OP_SUB, x, step, -1);
			if (!bind_out(nd, i,
			              fe_binary(nd, IR_OP_MUL, k_(nd, o.dt, 1 - ncp), xn, i)))
				return false;
		} else if (!bind_out(nd, i, fe_binary(nd, IR_OP_SUB, x, step, i))) {
			return false;
		}
	}
	return true;
}

#define TRAINING "ai.onnx.preview.training"

const struct fe_op fe_ops_loss[] = {
	{ "NegativeLogLikelihoodLoss", imp_nll_loss, IR_OP_GATHER_ELEMENTS, { 12, 13, 22 } },
	{ "SoftmaxCrossEntropyLoss", imp_softmax_cross_entropy, IR_OP_LOG_SOFTMAX, { 12, 13 } },
	{ "Adagrad", imp_optimizer, IR_OP_SQRT, { 1 }, .domain = TRAINING },
	{ "Momentum", imp_optimizer, IR_OP_MUL, { 1 }, .domain = TRAINING },
	{ "Adam", imp_optimizer, IR_OP_SQRT, { 1 }, .domain = TRAINING },
	{ NULL, NULL, 0, { 0 } },
};
