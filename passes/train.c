/*
 * train.c - the training and evaluation steps (train.h).
 *
 * What it does, in order:
 *   1. finds the state (the constants BatchNormalization reads as running
 *      mean and variance) and the params (every other float initializer
 *      the model uses, less --frozen, or only --trainable);
 *   2. training step: rewrites BatchNormalization to batch statistics and
 *      collects the updated running statistics (ad_train_mode);
 *   3. appends the loss to the model's first output;
 *   4. turns params and state into graph inputs, adds the label and the
 *      loss scale;
 *   5. training step: gives every Dropout the dropout_seed input, then
 *      appends the backward graph (ad_gradients); evaluation step: Dropout
 *      becomes the identity (the importer's placeholder seeds die);
 *   6. sets the step's inputs and outputs in the documented order.
 *
 * Losses, all means over the batch as PyTorch's defaults:
 *   cross-entropy  logits [..., C] (classes last), label int [...]:
 *                  -mean(sum(onehot(label) * log_softmax(logits), -1));
 *                  the one-hot is Equal + Cast, so the loss needs no
 *                  gradient of an indexing op;
 *   mse            mean((y - label)^2), label of y's type;
 *   none           the model's first output, one element, is the loss.
 */
#include "train.h"
#include "autodiff.h"
#include "passes.h"

#include <string.h>

struct tb {
	struct ir_module *m;
	struct ir_ctx *ctx;
	char err[256];
};

static struct ir_value *node(struct tb *b, enum ir_op op, const char *what, struct ir_value **in,
                             int nin)
{
	const char *name = ir_unique_name(b->m, ir_arena_printf(&b->m->arena, "loss/%s", what));
	return ir_add_node(b->m, op, name, in, nin, &name, 1)->out[0];
}

static struct ir_value *infer(struct tb *b, struct ir_value *v)
{
	if (!ir_infer_node(b->m, v->def, b->err, sizeof b->err))
		ir_panic(__FILE__, __LINE__, "loss node %s: %s", v->def->name, b->err);
	return v;
}

static struct ir_value *unary(struct tb *b, enum ir_op op, const char *what, struct ir_value *x)
{
	return infer(b, node(b, op, what, &x, 1));
}

static struct ir_value *binary(struct tb *b, enum ir_op op, const char *what, struct ir_value *x,
                               struct ir_value *y)
{
	struct ir_value *in[2] = { x, y };
	return infer(b, node(b, op, what, in, 2));
}

static struct ir_value *reshape(struct tb *b, struct ir_value *x, const int64_t *dims, int rank)
{
	struct ir_value *y = node(b, IR_OP_RESHAPE, "reshape", &x, 1);
	ir_set_ints(b->m, y->def, "shape", dims, rank);
	return infer(b, y);
}

/* Mean over every element, as f32[1] (a scalar is its own mean). */
static struct ir_value *mean_all(struct tb *b, struct ir_value *x)
{
	int64_t axes[IR_MAX_RANK], one = 1;
	struct ir_value *y;
	if (x->type.rank == 0)
		return reshape(b, x, &one, 1);
	y = node(b, IR_OP_REDUCE_MEAN, "mean", &x, 1);
	for (int i = 0; i < x->type.rank; i++)
		axes[i] = i;
	ir_set_ints(b->m, y->def, "axes", axes, x->type.rank);
	ir_set_i(b->m, y->def, "keepdims", 0);
	return reshape(b, infer(b, y), &one, 1);
}

static bool is_float(const struct ir_value *v) { return ir_dtypes[v->type.dtype].is_float; }

static struct ir_value *build_loss(struct tb *b, const struct train_options *o, struct ir_value *y,
                                   struct ir_value **label)
{
	struct ir_module *m = b->m;
	const char *lname = o->label ? o->label : "label";
	struct ir_type lt = y->type;
	char ts[IR_TYPE_STR_MAX];
	*label = NULL;
	if (!is_float(y)) {
		ir_error(b->ctx, "the model's first output '%s' is %s, not a float tensor: no loss",
		         y->name, ir_type_str(&y->type, ts, sizeof ts));
		return NULL;
	}
	if (o->loss == TRAIN_LOSS_NONE) {
		int64_t one = 1;
		if (ir_type_elems(&y->type) != 1) {
			ir_error(b->ctx,
			         "--loss none: the model's first output '%s' (%s) is not a scalar "
			         "loss",
			         y->name, ir_type_str(&y->type, ts, sizeof ts));
			return NULL;
		}
		if (y->type.dtype != IR_F32) {
			struct ir_value *c = node(b, IR_OP_CAST, "cast", &y, 1);
			ir_set_t(m, c->def, "to", IR_F32);
			y = infer(b, c);
		}
		return reshape(b, y, &one, 1);
	}
	if (ir_find_value(m, lname)) {
		ir_error(b->ctx,
		         "the label input '%s' clashes with a tensor of the model; name it "
		         "with --label",
		         lname);
		return NULL;
	}
	if (y->type.dtype != IR_F32) {
		struct ir_value *c = node(b, IR_OP_CAST, "cast", &y, 1);
		ir_set_t(m, c->def, "to", IR_F32);
		y = infer(b, c);
	}
	if (o->loss == TRAIN_LOSS_MSE) {
		struct ir_value *d;
		lt.dtype = IR_F32;
		*label = ir_add_input(m, lname, &lt);
		d = binary(b, IR_OP_SUB, "diff", y, *label);
		return mean_all(b, binary(b, IR_OP_MUL, "square", d, d));
	}
	/* cross-entropy: classes on the last axis */
	if (y->type.rank < 2) {
		ir_error(b->ctx,
		         "--loss cross-entropy: the model's first output '%s' (%s) needs a batch "
		         "and "
		         "a class axis",
		         y->name, ir_type_str(&y->type, ts, sizeof ts));
		return NULL;
	}
	{
		int r = y->type.rank;
		int64_t classes = y->type.dims[r - 1], dims[IR_MAX_RANK];
		struct ir_type ct = { IR_I64, 1, { classes } };
		int64_t *range = ir_arena_alloc(&m->arena, sizeof *range * (size_t)classes);
		struct ir_value *ls, *hot, *picked, *cls, *lab;
		for (int64_t c = 0; c < classes; c++)
			range[c] = c;
		lt.dtype = IR_I64;
		lt.rank = r - 1;
		*label = ir_add_input(m, lname, &lt);
		memcpy(dims, y->type.dims, sizeof dims[0] * (size_t)r);
		dims[r - 1] = 1;
		lab = reshape(b, *label, dims, r);
		cls = ir_add_const(m, ir_unique_name(m, "loss/classes"), &ct, range);
		ls = node(b, IR_OP_LOG_SOFTMAX, "log_softmax", &y, 1);
		ir_set_i(m, ls->def, "axis", r - 1);
		ls = infer(b, ls);
		hot = binary(b, IR_OP_EQUAL, "onehot", lab, cls);
		hot = node(b, IR_OP_CAST, "onehot.f32", &hot, 1);
		ir_set_t(m, hot->def, "to", IR_F32);
		hot = infer(b, hot);
		picked = node(b, IR_OP_REDUCE_SUM, "picked",
		              (struct ir_value *[]){ binary(b, IR_OP_MUL, "picked.all", hot, ls) },
		              1);
		ir_set_ints(m, picked->def, "axes", (int64_t[]){ r - 1 }, 1);
		ir_set_i(m, picked->def, "keepdims", 0);
		picked = infer(b, picked);
		return unary(b, IR_OP_NEG, "nll", mean_all(b, picked));
	}
}

/* The names of list as a set (a model may have thousands of initializers:
 * no scan per lookup). */
static void name_set(struct ir_map *set, struct ir_module *m, const char *const *list, int n)
{
	ir_map_init(set, &m->arena);
	for (int i = 0; i < n; i++)
		ir_map_put(set, list[i], (void *)list[i]);
}

static bool in_set(const struct ir_map *set, const char *name)
{
	return ir_map_get(set, name) != NULL;
}

/* The state: BatchNormalization's running mean and variance, in node order. */
static void find_state(struct tb *b, const struct train_options *o, struct train_step *s,
                       const struct ir_map *inits, bool *is_state)
{
	struct ir_module *m = b->m;
	int cap = 0;
	IR_FOR_EACH_NODE(m, n)
	if (n->op == IR_OP_BATCH_NORM)
		cap += 2;
	s->state = ir_arena_alloc(&m->arena, sizeof *s->state * (size_t)(cap ? cap : 1));
	IR_FOR_EACH_NODE(m, n)
	{
		if (n->op != IR_OP_BATCH_NORM)
			continue;
		for (int k = 3; k <= 4; k++) {
			struct ir_value *v = n->in[k];
			if (v->kind != IR_VAL_CONST || v->type.dtype != IR_F32 ||
			    !in_set(inits, v->name) || is_state[v->id])
				continue;
			is_state[v->id] = true;
			s->state[s->nstate++] = (struct train_tensor){ v, v->name, v->data,
				                                       ir_type_elems(&v->type) };
		}
	}
}

static bool find_params(struct tb *b, const struct train_options *o, struct train_step *s,
                        const struct ir_map *inits, const bool *is_state)
{
	struct ir_module *m = b->m;
	int errors = b->ctx->nerrors;
	struct ir_map trainable, frozen;
	name_set(&trainable, m, o->trainable, o->ntrainable);
	name_set(&frozen, m, o->frozen, o->nfrozen);
	s->params = ir_arena_alloc(
	        &m->arena, sizeof *s->params * (size_t)(o->ninitializers ? o->ninitializers : 1));
	for (int i = 0; i < o->ntrainable; i++)
		if (!in_set(inits, o->trainable[i]))
			ir_error(b->ctx, "--trainable: the model has no initializer named '%s'",
			         o->trainable[i]);
	for (int i = 0; i < o->nfrozen; i++)
		if (!in_set(inits, o->frozen[i]))
			ir_error(b->ctx, "--frozen: the model has no initializer named '%s'",
			         o->frozen[i]);
	for (int i = 0; i < o->ninitializers; i++) {
		const char *name = o->initializers[i];
		struct ir_value *v = ir_find_value(m, name);
		bool asked = o->trainable && in_set(&trainable, name);
		if ((o->trainable && !asked) || in_set(&frozen, name))
			continue;
		if (!v || v->kind != IR_VAL_CONST || !v->nuses) {
			/* folded into another constant at import, or unused */
			if (asked)
				ir_error(b->ctx,
				         "--trainable: initializer '%s' is folded into a constant "
				         "at import (it only feeds shape arithmetic or constants)",
				         name);
			continue;
		}
		if (!is_float(v) || is_state[v->id])
			continue;
		if (v->type.dtype != IR_F32) {
			ir_error(b->ctx,
			         "initializer '%s' is %s: training needs FP32 weights (FP32 master "
			         "weights); freeze it with --frozen or export the model in FP32",
			         name, ir_dtype_name(v->type.dtype));
			continue;
		}
		s->params[s->nparams++] =
		        (struct train_tensor){ v, v->name, v->data, ir_type_elems(&v->type) };
	}
	if (b->ctx->nerrors == errors && !s->nparams) {
		ir_error(b->ctx, "nothing to train: the model has no FP32 initializers left "
		                 "trainable");
		return false;
	}
	return b->ctx->nerrors == errors;
}

/*
 * The importer's dropout nodes (training-mode Dropout) read placeholder
 * seeds: the training step gives them all its dropout_seed input (each
 * node's salt keeps its mask apart); the evaluation step drops them.
 */
static void wire_dropout(struct tb *b, const struct train_options *o, struct train_step *s)
{
	struct ir_module *m = b->m;
	struct ir_type st = { .dtype = IR_I64 };
	for (struct ir_node *n = m->first, *next; n; n = next) {
		next = n->next;
		if (n->op != IR_OP_DROPOUT)
			continue;
		s->ndropout++;
		if (o->eval) {
			struct ir_value *y = n->out[0], *x = n->in[0];
			if (ir_is_output(m, y)) { /* a graph output keeps its name */
				const char *name = y->name;
				struct ir_node *c;
				ir_rename_value(m, y, ir_unique_name(m, "dropout.removed"));
				c = ir_add_node(m, IR_OP_COPY, n->name, &x, 1, &name, 1);
				ir_move_before(m, c, n);
				x = infer(b, c->out[0]);
			}
			ir_replace_uses(m, y, x);
			ir_remove_node(m, n);
			continue;
		}
		if (!s->seed)
			s->seed = ir_add_input(m, ir_unique_name(m, "dropout_seed"), &st);
		ir_set_input(m, n, 1, s->seed);
	}
}

bool train_build(struct ir_module *m, const struct train_options *o, struct train_step *s)
{
	struct tb b = { m, m->ctx, { 0 } };
	struct ir_value **old_in, *label, *y, **outs, **new_state = NULL;
	struct ir_type one = { IR_F32, 1, { 1 } };
	int nold, nout_model = m->noutputs, errors = m->ctx->nerrors;
	memset(s, 0, sizeof *s);
	if (!m->noutputs) {
		ir_error(b.ctx, "the model has no outputs");
		return false;
	}
	for (int i = 0; i < m->noutputs; i++)
		if (m->out_shapes[i]) {
			char t[IR_TYPE_STR_MAX], e[IR_TYPE_STR_MAX];
			ir_error(b.ctx,
			         "graph output '%s' is %s or %s as a run-time If picks; a training "
			         "step needs outputs of one shape",
			         m->outputs[i]->name,
			         ir_type_str(&m->out_shapes[i]->then_type, t, sizeof t),
			         ir_type_str(&m->out_shapes[i]->else_type, e, sizeof e));
			return false;
		}
	{
		struct ir_map inits;
		bool *is_state =
		        ir_arena_alloc(&m->arena, sizeof *is_state * (size_t)(m->nvalues + 1));
		name_set(&inits, m, o->initializers, o->ninitializers);
		find_state(&b, o, s, &inits, is_state);
		if (!find_params(&b, o, s, &inits, is_state))
			return false;
	}
	if (o->eval)
		wire_dropout(&b, o, s);
	if (!o->eval && s->nstate) {
		struct ir_value **running =
		        ir_arena_alloc(&m->arena, sizeof *running * (size_t)s->nstate);
		for (int i = 0; i < s->nstate; i++)
			running[i] = s->state[i].input;
		new_state = ir_arena_alloc(&m->arena, sizeof *new_state * (size_t)s->nstate);
		if (!ad_train_mode(m, o->bn_momentum, running, s->nstate, new_state))
			return false;
	}
	/* the graph's data inputs, before params and state join them */
	nold = m->ninputs;
	old_in = ir_arena_alloc(&m->arena, sizeof *old_in * (size_t)(nold ? nold : 1));
	memcpy(old_in, m->inputs, sizeof *old_in * (size_t)nold);
	y = m->outputs[0];
	outs = ir_arena_alloc(&m->arena, sizeof *outs * (size_t)nout_model);
	memcpy(outs, m->outputs, sizeof *outs * (size_t)nout_model);
	if (!(s->loss = build_loss(&b, o, y, &label)))
		return false;
	/* inputs: params, state, data, label (loss scale below) */
	s->data = ir_arena_alloc(&m->arena, sizeof *s->data * (size_t)(nold + 1));
	for (int i = 0; i < nold; i++)
		s->data[s->ndata++] = old_in[i];
	if (label)
		s->data[s->ndata++] = label;
	m->ninputs = 0;
	for (int i = 0; i < s->nparams; i++)
		ir_const_to_input(m, s->params[i].input);
	for (int i = 0; i < s->nstate; i++)
		ir_const_to_input(m, s->state[i].input);
	for (int i = 0; i < s->ndata; i++)
		ir_append_input(m, s->data[i]);
	m->noutputs = 0;
	ir_add_output(m, s->loss);
	if (o->eval) {
		for (int i = 0; i < nout_model; i++)
			ir_add_output(m, outs[i]);
		s->nmodel_outputs = nout_model;
	} else {
		struct ir_value **wrt = ir_arena_alloc(&m->arena, sizeof *wrt * (size_t)s->nparams);
		struct ir_value **grads =
		        ir_arena_alloc(&m->arena, sizeof *grads * (size_t)s->nparams);
		s->loss_scale = ir_add_input(m, ir_unique_name(m, "loss_scale"), &one);
		wire_dropout(&b, o, s); /* after loss_scale: the seed is the last input */
		for (int i = 0; i < s->nparams; i++)
			wrt[i] = s->params[i].input;
		if (!ad_gradients(m, s->loss, s->loss_scale, wrt, s->nparams, grads))
			return false;
		for (int i = 0; i < s->nparams; i++)
			ir_add_output(m, grads[i]);
		for (int i = 0; i < s->nstate; i++)
			ir_add_output(m, new_state[i]);
	}
	return m->ctx->nerrors == errors;
}

bool pass_train(struct ir_module *m, const struct pass_options *opt)
{
	IR_ASSERT(opt->train && opt->step);
	return train_build(m, opt->train, opt->step);
}
