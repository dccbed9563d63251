/*
 * tc_pad.c - zero padding for Tensor Cores.
 *
 * Half-precision GEMMs and convolutions run on Tensor Cores when their sizes
 * are multiples of 8 elements (16 bytes): GEMM M, N and K, convolution input
 * and output channels. A half MatMul or Gemm with constant weights, or a
 * group-1 convolution with constant weights, whose sizes miss that rule is
 * padded with zeros when the cost model (cost_pad_plan) predicts the padded
 * Tensor Core run, pads and slices included, to beat the unpadded one:
 *   - weights (and bias) are padded at compile time;
 *   - activations get a Pad node only where a padded size is theirs (K of A,
 *     M rows of A, the channels of x);
 *   - the output is sliced back to its shape by a Slice node that takes over
 *     the output's name, so the change is invisible outside: same shapes,
 *     and numerically the same (the extra terms are exact zeros).
 */
#include "amp.h"

#include <string.h>

static int64_t *dims_copy(const struct ir_type *t, int64_t *d)
{
	memcpy(d, t->dims, sizeof(int64_t) * (size_t)t->rank);
	return d;
}

/* v padded with zeros at the end of each axis up to dims; folded when v is a
 * constant, else a Pad node placed before reader. */
static struct ir_value *pad_to(struct ir_module *m, struct ir_value *v, const int64_t *dims,
                               struct ir_node *reader)
{
	int64_t pads[2 * IR_MAX_RANK] = { 0 };
	const struct ir_type *t = &v->type;
	bool any = false;
	struct ir_node *p;
	const char *out;
	char err[256];
	for (int i = 0; i < t->rank; i++) {
		pads[t->rank + i] = dims[i] - t->dims[i];
		any |= dims[i] != t->dims[i];
	}
	if (!any)
		return v;
	out = ir_unique_name(m, ir_arena_printf(&m->arena, "%s.padded", v->name));
	p = ir_add_node(m, IR_OP_PAD, ir_arena_printf(&m->arena, "tc_pad/%s", out), &v, 1, &out, 1);
	ir_set_ints(m, p, "pads", pads, 2 * t->rank);
	ir_set_s(m, p, "mode", "constant");
	ir_set_f(m, p, "value", 0);
	if (!ir_infer_node(m, p, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "padding %s: %s", v->name, err);
	ir_move_before(m, p, reader);
	if (v->kind == IR_VAL_CONST && v->data) {
		struct ir_value *r = p->out[0];
		if (ir_fold_node(m, p, INT64_MAX, err, sizeof err) != 1)
			ir_panic(__FILE__, __LINE__, "folding the padding of %s: %s", v->name, err);
		return r;
	}
	return p->out[0];
}

/* Re-infers n (its output grows) and slices the output back under its name. */
static void slice_back(struct ir_module *m, struct ir_node *n)
{
	struct ir_value *y = n->out[0];
	const char *name = y->name;
	struct ir_type was = y->type;
	int64_t starts[IR_MAX_RANK] = { 0 }, ends[IR_MAX_RANK], steps[IR_MAX_RANK];
	struct ir_use *uses = ir_arena_alloc(&m->arena, sizeof *uses * (size_t)(y->nuses + 1));
	int nuses = y->nuses;
	struct ir_node *s;
	char err[256];
	memcpy(uses, y->uses, sizeof *uses * (size_t)nuses);
	ir_rename_value(m, y, ir_unique_name(m, ir_arena_printf(&m->arena, "%s.padded", name)));
	if (!ir_infer_node(m, n, err, sizeof err))
		ir_panic(__FILE__, __LINE__, "padded %s: %s", n->name, err);
	for (int i = 0; i < was.rank; i++) {
		ends[i] = was.dims[i];
		steps[i] = 1;
	}
	s = ir_add_node(m, IR_OP_SLICE, ir_arena_printf(&m->arena, "tc_pad/%s", name), &y, 1, &name,
	                1);
	ir_set_ints(m, s, "starts", starts, was.rank);
	ir_set_ints(m, s, "ends", ends, was.rank);
	ir_set_ints(m, s, "steps", steps, was.rank);
	if (!ir_infer_node(m, s, err, sizeof err) || !ir_type_eq(&s->out[0]->type, &was))
		ir_panic(__FILE__, __LINE__, "slicing %s back: %s", name, err);
	if (n->next)
		ir_move_before(m, s, n->next);
	for (int i = 0; i < nuses; i++)
		ir_set_input(m, uses[i].node, uses[i].index, s->out[0]);
	for (int i = 0; i < m->noutputs; i++)
		if (m->outputs[i] == y)
			m->outputs[i] = s->out[0];
}

static void pad_gemm(struct ir_module *m, struct ir_node *n, const struct cost_pad *pp)
{
	bool gemm = n->op == IR_OP_GEMM;
	bool ta = gemm && ir_attr_i(n, "trans_a"), tb = gemm && ir_attr_i(n, "trans_b");
	struct ir_value *a = n->in[0], *b = n->in[1];
	int64_t d[IR_MAX_RANK];
	int ra = a->type.rank;
	/* A: [.., m, k] or, transposed, [k, m] */
	dims_copy(&a->type, d);
	d[ra - 2] = ta ? pp->k8 : pp->m8;
	d[ra - 1] = ta ? pp->m8 : pp->k8;
	ir_set_input(m, n, 0, pad_to(m, a, d, n));
	/* B: [k, n] or, transposed, [n, k] */
	d[0] = tb ? pp->n8 : pp->k8;
	d[1] = tb ? pp->k8 : pp->n8;
	ir_set_input(m, n, 1, pad_to(m, b, d, n));
	/* C broadcasts to [m, n]: pad the axes it spans */
	if (gemm && n->nin > 2) {
		struct ir_value *c = n->in[2];
		int rc = c->type.rank;
		dims_copy(&c->type, d);
		if (rc >= 1 && d[rc - 1] == pp->n)
			d[rc - 1] = pp->n8;
		if (rc == 2 && d[0] == pp->m)
			d[0] = pp->m8;
		ir_set_input(m, n, 2, pad_to(m, c, d, n));
	}
	if (pp->m8 != pp->m || pp->n8 != pp->n)
		slice_back(m, n);
	else if (!ir_infer_node(m, n, (char[256]){ 0 }, 256))
		ir_panic(__FILE__, __LINE__, "padded %s does not type", n->name);
}

static void pad_conv(struct ir_module *m, struct ir_node *n, const struct cost_pad *pp)
{
	struct ir_value *x = n->in[0], *w = n->in[1];
	int64_t d[IR_MAX_RANK];
	dims_copy(&x->type, d);
	d[1] = pp->k8;
	ir_set_input(m, n, 0, pad_to(m, x, d, n));
	dims_copy(&w->type, d);
	d[0] = pp->n8;
	d[1] = pp->k8;
	ir_set_input(m, n, 1, pad_to(m, w, d, n));
	if (n->nin > 2) {
		d[0] = pp->n8;
		ir_set_input(m, n, 2, pad_to(m, n->in[2], d, n));
	}
	if (pp->n8 != pp->n)
		slice_back(m, n);
	else if (!ir_infer_node(m, n, (char[256]){ 0 }, 256))
		ir_panic(__FILE__, __LINE__, "padded %s does not type", n->name);
}

int amp_pad(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	struct ir_node *next;
	int padded = 0;
	for (struct ir_node *n = m->first; n; n = next) {
		struct cost_pad pp;
		struct amp_node *a = n->id < r->nids ? &r->nodes[n->id] : NULL;
		double t16;
		next = n->next;
		if (!a || !a->paintable || a->prec != AMP_HALF ||
		    !cost_pad_plan(o->gpu, n, a->half == IR_BF16, &pp))
			continue;
		t16 = cost_time16(o->gpu, n, a->half == IR_BF16);
		if (!(pp.t16 < t16))
			continue;
		if (n->op == IR_OP_CONV)
			pad_conv(m, n, &pp);
		else
			pad_gemm(m, n, &pp);
		padded++;
		{
			size_t len = strlen(a->reason);
			snprintf(a->reason + len, sizeof a->reason - len,
			         "; padded m %lld->%lld n %lld->%lld k %lld->%lld for Tensor Cores "
			         "(%.2f us vs %.2f us)",
			         (long long)pp.m, (long long)pp.m8, (long long)pp.n,
			         (long long)pp.n8, (long long)pp.k, (long long)pp.k8, pp.t16, t16);
		}
	}
	return padded;
}
