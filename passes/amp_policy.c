/*
 * amp_policy.c - which nodes run in half precision.
 *
 * Both policies work on the graph of FP32 tensors: a node's neighbours are
 * the producers of its FP32 inputs and the consumers of its FP32 outputs.
 * Constants never count as neighbours (their casts are folded into the
 * weights), and existing Cast nodes adapt to either side (amp_rewrite.c
 * repaints them).
 *
 * Greedy (TensorFlow's AutoMixedPrecision, docs/precision.md):
 *   1. allow nodes go half;
 *   2. deny propagates forward through infer and clear nodes that lie
 *      upstream of another deny or infer node (those stay FP32);
 *   3. infer and clear nodes both downstream and upstream of half allow
 *      nodes go half;
 *   4. half spreads through connected clear nodes in both directions.
 *
 * Cost-aware (Campo): the same classes, but every choice that can add or
 * remove casts is priced with the cost model (cost.h), counting what each
 * boundary cast costs where it will run: folded into the weights (free),
 * fused into the neighbouring kernel (its bytes only) or a kernel of its own
 * (a launch and its bytes). In the order they run:
 *   T2. deny propagation, as greedy step 2 (it depends on the classes only,
 *       so running it first lets T1 see the nodes it pins);
 *   T1. allow nodes, in order, go half only when their half time plus the
 *       casts that choice needs beats their FP32 time plus its casts, with
 *       undecided neighbours priced as able to follow;
 *   T3. infer and clear nodes whose FP32 inputs all come from half nodes go
 *       half: that moves the boundary without adding a cast;
 *   T4. each remaining connected group of infer and clear nodes goes half
 *       when that is predicted cheaper than FP32, casts included (Campo
 *       prices clear chains only; pricing infer nodes the same way is the
 *       same question);
 *   T5. single-node changes that lower the predicted time, until none does
 *       (each lowers the total, so this ends): it repairs T1's
 *       order-dependent choices.
 * Finally, if the whole assignment is predicted no faster than FP32, the
 * cost policy keeps the model in FP32: it never predicts a slowdown.
 */
#include "amp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { UNDECIDED = -1 };

struct policy {
	struct ir_module *m;
	const struct amp_options *o;
	struct amp_result *r;
	int *prec;              /* by node id: UNDECIDED, AMP_FP32 or AMP_HALF */
	bool *fixed;            /* FP32 by class, pin or deny propagation */
	bool *mark;             /* traversal scratch */
	struct ir_node **stack; /* traversal stack */
	int nstack;
	struct ir_node **group; /* T4's group */
	int ngroup;
	bool optimistic; /* undecided infer/clear nodes take either side */
};

static bool edge(const struct ir_value *v) { return v->type.dtype == IR_F32; }
static bool soft(const struct policy *p, const struct ir_node *n);

static struct amp_node *info(const struct policy *p, const struct ir_node *n)
{
	return &p->r->nodes[n->id];
}

/* A node the policy decides (it has FP32 tensors and is not a Cast). */
static bool painted(const struct policy *p, const struct ir_node *n)
{
	return info(p, n)->paintable;
}

static int prec_of(const struct policy *p, const struct ir_node *n)
{
	return p->prec[n->id] == AMP_HALF ? AMP_HALF : AMP_FP32;
}

/* A node that reads and writes either precision at no cost: a model Cast
 * (the rewrite repaints it) or, while T1 prices optimistically, an
 * undecided node (it is decided later, by the same prices, and can still
 * take the side that needs no cast). */
static bool flexible(const struct policy *p, const struct ir_node *n)
{
	if (!painted(p, n))
		return n->op == IR_OP_CAST;
	return p->optimistic && p->prec[n->id] == UNDECIDED;
}

static void reason(struct policy *p, const struct ir_node *n, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void reason(struct policy *p, const struct ir_node *n, const char *fmt, ...)
{
	va_list ap;
	info(p, n)->rule = AMP_BY_POLICY;
	va_start(ap, fmt);
	vsnprintf(info(p, n)->reason, sizeof info(p, n)->reason, fmt, ap);
	va_end(ap);
}

static void set_prec(struct policy *p, const struct ir_node *n, int prec)
{
	p->prec[n->id] = prec;
	info(p, n)->prec = prec == AMP_HALF ? AMP_HALF : AMP_FP32;
}

/* ------------------------------------------------------------------------ */
/* Cast prices                                                              */
/* ------------------------------------------------------------------------ */

bool amp_fuses_output_cast(enum ir_op op)
{
	enum ir_op_kind k = ir_ops[op].kind;
	/* attention_grad's ydtype is its y's and dy's type (its results are
	 * q's, k's and v's): it writes no other */
	return (k == IR_KIND_ELTWISE || k == IR_KIND_COMPUTE || k == IR_KIND_REDUCE) &&
	       op != IR_OP_ATTENTION_GRAD;
}

bool amp_cast_fuses(const struct ir_value *v, bool sole_reader, const struct ir_node *only)
{
	if (v->kind == IR_VAL_NODE && sole_reader && amp_fuses_output_cast(v->def->op))
		return true;
	return only && ir_ops[only->op].kind == IR_KIND_ELTWISE && only->op != IR_OP_CAST;
}

/* Where a precision's tensors go in value_cost's counts: FP32, FP16, BF16. */
static int bucket(enum ir_dtype t) { return t == IR_F16 ? 1 : t == IR_BF16 ? 2 : 0; }

/* The type n writes its FP32 results in under the current decisions. */
static int out_bucket(const struct policy *p, const struct ir_node *n)
{
	return prec_of(p, n) == AMP_HALF ? bucket(info(p, n)->half) : 0;
}

/*
 * What the casts on v cost under the current decisions (undecided nodes
 * count as FP32): one cast per type that some reader needs and the
 * producer does not write (FP32, FP16, and BF16 for nodes the range rule
 * moved), priced where it will run. A flexible producer writes whichever
 * type is wanted: it costs a cast only per type beyond the first.
 */
static double value_cost(const struct policy *p, const struct ir_value *v)
{
	const struct gpu_profile *g = p->o->gpu;
	int src, want[3] = { 0, 0, 0 }, nread = 0, kinds = 0;
	const struct ir_node *last[3] = { NULL, NULL, NULL };
	double cost = 0, e = (double)ir_type_elems(&v->type);
	bool flex;
	if (!edge(v) || v->kind == IR_VAL_CONST)
		return 0;
	flex = v->kind == IR_VAL_NODE && flexible(p, v->def);
	src = v->kind == IR_VAL_NODE && painted(p, v->def) ? out_bucket(p, v->def) : 0;
	for (int i = 0; i < v->nuses; i++) {
		const struct ir_node *c = v->uses[i].node;
		int w;
		if (!painted(p, c) || flexible(p, c))
			continue; /* reads either precision */
		w = out_bucket(p, c);
		want[w]++;
		last[w] = c;
		nread++;
	}
	if (ir_is_output(p->m, v)) {
		want[0]++;
		last[0] = NULL;
		nread++;
	}
	for (int w = 0; w < 3; w++) {
		bool needed = flex ? want[w] && kinds++ > 0 : want[w] && w != src;
		if (!needed)
			continue;
		if (amp_cast_fuses(v, want[w] == nread, want[w] == 1 ? last[w] : NULL))
			cost += g->cast_r_ns * e / 1000;
		else
			cost += cost_cast(g, (int64_t)e);
	}
	return cost;
}

/* Time of n in prec plus the casts on every FP32 tensor it touches. */
static double local_cost(struct policy *p, struct ir_node *n, int prec)
{
	int saved = p->prec[n->id];
	const struct ir_value *seen[64];
	int nseen = 0;
	double c;
	p->prec[n->id] = prec;
	c = prec == AMP_HALF ? info(p, n)->t16 : info(p, n)->t32;
	for (int i = 0; i < n->nin + n->nout; i++) {
		const struct ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
		bool dup = false;
		for (int k = 0; k < nseen; k++)
			dup |= seen[k] == v;
		if (dup)
			continue;
		if (nseen < 64)
			seen[nseen++] = v;
		c += value_cost(p, v);
	}
	p->prec[n->id] = saved;
	return c;
}

/* ------------------------------------------------------------------------ */
/* Traversals                                                               */
/* ------------------------------------------------------------------------ */

/* Producers of n's FP32 inputs that the policy decides. */
#define FOR_EACH_PRODUCER(p, n, x)                                                             \
	for (int i_ = 0; i_ < (n)->nin; i_++)                                                  \
		for (struct ir_node *x = edge((n)->in[i_]) && (n)->in[i_]->kind == IR_VAL_NODE \
		                                 ? (n)->in[i_]->def                            \
		                                 : NULL;                                       \
		     x && painted(p, x); x = NULL)

/* Consumers of n's FP32 outputs that the policy decides. */
#define FOR_EACH_CONSUMER(p, n, x)                                                                \
	for (int o_ = 0; o_ < (n)->nout; o_++)                                                    \
		for (int u_ = 0; edge((n)->out[o_]) && u_ < (n)->out[o_]->nuses; u_++)            \
			for (struct ir_node *x = (n)->out[o_]->uses[u_].node; x && painted(p, x); \
			     x = NULL)

static bool is_class(const struct policy *p, const struct ir_node *n, enum ir_amp a)
{
	return info(p, n)->cls == a;
}

static bool soft(const struct policy *p, const struct ir_node *n)
{
	return is_class(p, n, IR_AMP_INFER) || is_class(p, n, IR_AMP_CLEAR);
}

enum { UP = 1, DOWN = 2 };

/* What a walk does at a neighbour x reached from root: true enters x (the
 * visit must enter each node at most once: it marks what it enters). */
typedef bool (*visit_fn)(struct policy *p, struct ir_node *x, const struct ir_node *root,
                         bool *set);

/* Depth first from root along FP32 edges, to producers (UP) and/or
 * consumers (DOWN), entering the nodes visit accepts. */
static void walk(struct policy *p, struct ir_node *root, int dir, visit_fn visit, bool *set)
{
	p->nstack = 0;
	p->stack[p->nstack++] = root;
	while (p->nstack) {
		struct ir_node *n = p->stack[--p->nstack];
		if (dir & UP)
			FOR_EACH_PRODUCER(p, n, x)
		if (visit(p, x, root, set))
			p->stack[p->nstack++] = x;
		if (dir & DOWN)
			FOR_EACH_CONSUMER(p, n, x)
		if (visit(p, x, root, set))
			p->stack[p->nstack++] = x;
	}
}

static bool roots(const struct policy *p, const struct ir_node *n, enum ir_amp cls, int prec)
{
	return painted(p, n) && is_class(p, n, cls) &&
	       (prec == UNDECIDED || p->prec[n->id] == prec);
}

/* up: clear nodes upstream of deny and infer nodes */
static bool enter_clear_up(struct policy *p, struct ir_node *x, const struct ir_node *root,
                           bool *up)
{
	(void)root;
	if (up[x->id] || !is_class(p, x, IR_AMP_CLEAR))
		return false;
	return up[x->id] = true;
}

/* deny propagates into undecided infer and clear nodes of the up set */
static bool enter_deny(struct policy *p, struct ir_node *x, const struct ir_node *root, bool *up)
{
	if (!up[x->id] || p->fixed[x->id] || !soft(p, x) || p->prec[x->id] != UNDECIDED)
		return false;
	p->fixed[x->id] = true;
	set_prec(p, x, AMP_FP32);
	reason(p, x, "FP32: between deny node %s and an FP32-only or infer node", root->name);
	return true;
}

/* Zeroed scratch for one decision, given back with drop (the accuracy
 * budget decides hundreds of times on one module). */
static void *scratch(struct policy *p, size_t bytes)
{
	void *q = ir_arena_alloc_big(&p->m->arena, bytes ? bytes : 1);
	memset(q, 0, bytes ? bytes : 1);
	return q;
}

static void drop(struct policy *p, void *q) { ir_arena_release(&p->m->arena, q); }

/* Greedy step 2 / cost T2: deny nodes pin the infer and clear nodes that lie
 * between them and another deny or infer node. */
static void propagate_deny(struct policy *p)
{
	bool *up = scratch(p, (size_t)p->m->next_node_id + 1);
	IR_FOR_EACH_NODE(p->m, root)
	if (roots(p, root, IR_AMP_DENY, UNDECIDED) || roots(p, root, IR_AMP_INFER, UNDECIDED)) {
		up[root->id] = true;
		walk(p, root, UP, enter_clear_up, up);
	}
	IR_FOR_EACH_NODE(p->m, root)
	if (roots(p, root, IR_AMP_DENY, UNDECIDED))
		walk(p, root, DOWN, enter_deny, up);
	drop(p, up);
}

/* down: undecided infer and clear nodes downstream of half allow nodes */
static bool enter_down(struct policy *p, struct ir_node *x, const struct ir_node *root, bool *down)
{
	(void)root;
	if (down[x->id] || !soft(p, x) || p->prec[x->id] != UNDECIDED)
		return false;
	return down[x->id] = true;
}

/* upstream of half allow nodes: half where also downstream of one */
static bool enter_between(struct policy *p, struct ir_node *x, const struct ir_node *root,
                          bool *down)
{
	if (p->mark[x->id] || !soft(p, x) || p->prec[x->id] != UNDECIDED)
		return false;
	p->mark[x->id] = true;
	if (down[x->id]) {
		set_prec(p, x, AMP_HALF);
		reason(p, x, "half: between half allow nodes (upstream of %s)", root->name);
	}
	return true;
}

/* Greedy step 3: infer and clear nodes both downstream and upstream of half
 * allow nodes. */
static void between_allow(struct policy *p)
{
	bool *down = scratch(p, (size_t)p->m->next_node_id + 1);
	IR_FOR_EACH_NODE(p->m, root)
	if (roots(p, root, IR_AMP_ALLOW, AMP_HALF))
		walk(p, root, DOWN, enter_down, down);
	memset(p->mark, 0, sizeof *p->mark * (size_t)(p->m->next_node_id + 1));
	IR_FOR_EACH_NODE(p->m, root)
	if (roots(p, root, IR_AMP_ALLOW, AMP_HALF))
		walk(p, root, UP, enter_between, down);
	drop(p, down);
}

static bool enter_clear_half(struct policy *p, struct ir_node *x, const struct ir_node *root,
                             bool *unused)
{
	(void)unused;
	if (!is_class(p, x, IR_AMP_CLEAR) || p->prec[x->id] != UNDECIDED)
		return false;
	set_prec(p, x, AMP_HALF);
	reason(p, x, "half: clear node connected to half node %s", root->name);
	return true;
}

/* Greedy step 4: half spreads through connected clear nodes. */
static void through_clear(struct policy *p)
{
	IR_FOR_EACH_NODE(p->m, root)
	if (painted(p, root) && p->prec[root->id] == AMP_HALF)
		walk(p, root, UP | DOWN, enter_clear_half, NULL);
}

/* Cost T1: allow nodes, in order, by their price. Undecided neighbours are
 * priced as following (later allow nodes, T3 and T4 decide them by the same
 * prices); casts to FP32-only neighbours, graph inputs and outputs and allow
 * nodes already kept in FP32 count in full. */
static void allow_by_cost(struct policy *p)
{
	p->optimistic = true;
	IR_FOR_EACH_NODE(p->m, n)
	{
		double h, f;
		if (!painted(p, n) || !is_class(p, n, IR_AMP_ALLOW) || p->prec[n->id] != UNDECIDED)
			continue;
		h = local_cost(p, n, AMP_HALF);
		f = local_cost(p, n, AMP_FP32);
		set_prec(p, n, h < f ? AMP_HALF : AMP_FP32);
		reason(p, n, "%s (T1): half %.2f us vs FP32 %.2f us, casts included",
		       h < f ? "half" : "FP32", h, f);
	}
	p->optimistic = false;
}

/* Cost T5: single-node flips that lower the predicted time, until none
 * does (each flip lowers it, so this ends; the sweep limit is a guard). */
static void refine(struct policy *p)
{
	for (int sweep = 0; sweep < 64; sweep++) {
		bool changed = false;
		IR_FOR_EACH_NODE(p->m, n)
		{
			int now, to;
			double c_now, c_to;
			if (!painted(p, n) || p->fixed[n->id])
				continue;
			now = prec_of(p, n);
			to = now == AMP_HALF ? AMP_FP32 : AMP_HALF;
			c_now = local_cost(p, n, now);
			c_to = local_cost(p, n, to);
			if (c_to < c_now - 1e-6) {
				set_prec(p, n, to);
				reason(p, n, "%s (T5): changing this node alone saves %.2f us",
				       to == AMP_HALF ? "half" : "FP32", c_now - c_to);
				changed = true;
			}
		}
		if (!changed)
			return;
	}
}

/* Cost T3: infer and clear nodes fed only by half nodes. One sweep in order
 * suffices: producers come first. */
static void follow_half(struct policy *p)
{
	IR_FOR_EACH_NODE(p->m, n)
	{
		int half = 0, other = 0;
		const char *from = NULL;
		if (!painted(p, n) || !soft(p, n) || p->prec[n->id] != UNDECIDED)
			continue;
		for (int i = 0; i < n->nin; i++) {
			const struct ir_value *v = n->in[i];
			if (!edge(v) || v->kind == IR_VAL_CONST)
				continue;
			if (v->kind == IR_VAL_NODE && painted(p, v->def) &&
			    p->prec[v->def->id] == AMP_HALF) {
				half++;
				from = v->def->name;
			} else if (!(v->kind == IR_VAL_NODE && v->def->op == IR_OP_CAST)) {
				other++;
			}
		}
		if (half && !other) {
			set_prec(p, n, AMP_HALF);
			reason(p, n, "half (T3): every FP32 input comes from a half node (%s)",
			       from);
		}
	}
}

static bool enter_group(struct policy *p, struct ir_node *x, const struct ir_node *root,
                        bool *unused)
{
	(void)root;
	(void)unused;
	if (p->mark[x->id] || p->prec[x->id] != UNDECIDED)
		return false;
	p->mark[x->id] = true;
	p->group[p->ngroup++] = x;
	return true;
}

/* Cost T4: each connected group of undecided infer and clear nodes as a whole,
 * by price. */
static void groups_by_cost(struct policy *p)
{
	bool *vseen = scratch(p, (size_t)p->m->nvalues + 1);
	memset(p->mark, 0, sizeof *p->mark * (size_t)(p->m->next_node_id + 1));
	IR_FOR_EACH_NODE(p->m, root)
	{
		double h = 0, f = 0;
		if (!painted(p, root) || p->prec[root->id] != UNDECIDED || p->mark[root->id])
			continue;
		p->ngroup = 0;
		enter_group(p, root, root, NULL);
		walk(p, root, UP | DOWN, enter_group, NULL);
		/* price it both ways: node times plus the casts on every FP32
		 * tensor a group member touches, each tensor once */
		for (int pass = 0; pass < 2; pass++) {
			int prec = pass ? AMP_HALF : AMP_FP32;
			double *t = pass ? &h : &f;
			memset(vseen, 0, (size_t)p->m->nvalues);
			for (int i = 0; i < p->ngroup; i++)
				p->prec[p->group[i]->id] = prec;
			for (int i = 0; i < p->ngroup; i++) {
				struct ir_node *n = p->group[i];
				*t += pass ? info(p, n)->t16 : info(p, n)->t32;
				for (int k = 0; k < n->nin + n->nout; k++) {
					const struct ir_value *v =
					        k < n->nin ? n->in[k] : n->out[k - n->nin];
					if (!vseen[v->id]) {
						vseen[v->id] = true;
						*t += value_cost(p, v);
					}
				}
			}
		}
		for (int i = 0; i < p->ngroup; i++) {
			set_prec(p, p->group[i], h < f ? AMP_HALF : AMP_FP32);
			reason(p, p->group[i],
			       "%s (T4): a group of %d infer/clear nodes, half %.2f us vs FP32 "
			       "%.2f "
			       "us, casts included",
			       h < f ? "half" : "FP32", p->ngroup, h, f);
		}
	}
	drop(p, vseen);
}

/* ------------------------------------------------------------------------ */

/* Predicted microseconds of the whole graph under the current decisions. */
static double predict(struct policy *p, bool all_fp32)
{
	double t = 0;
	IR_FOR_EACH_NODE(p->m, n)
	{
		const struct amp_node *a = info(p, n);
		t += !all_fp32 && painted(p, n) && p->prec[n->id] == AMP_HALF ? a->t16 : a->t32;
		if (!all_fp32)
			for (int i = 0; i < n->nout; i++)
				t += value_cost(p, n->out[i]);
	}
	for (int i = 0; i < p->m->ninputs && !all_fp32; i++)
		t += value_cost(p, p->m->inputs[i]);
	return t;
}

void amp_decide(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	int ids = m->next_node_id + 1;
	struct policy p = { .m = m, .o = o, .r = r };
	p.prec = scratch(&p, sizeof *p.prec * (size_t)ids);
	p.fixed = scratch(&p, sizeof *p.fixed * (size_t)ids);
	p.mark = scratch(&p, sizeof *p.mark * (size_t)ids);
	p.stack = scratch(&p, sizeof *p.stack * (size_t)(ids + 1));
	p.group = scratch(&p, sizeof *p.group * (size_t)(ids + 1));
	for (int i = 0; i < ids; i++)
		p.prec[i] = UNDECIDED;

	/* classes that decide alone, and pins */
	IR_FOR_EACH_NODE(m, n)
	{
		struct amp_node *a = info(&p, n);
		bool force = a->pin == IR_F16 || a->pin == IR_BF16 ||
		             amp_named(n->name, o->force_half, o->nforce);
		if (!a->paintable) {
			p.prec[n->id] = AMP_FP32;
			if (!a->reason[0])
				snprintf(a->reason, sizeof a->reason,
				         n->op == IR_OP_CAST
				                 ? "a Cast: repainted or folded by the rewrite"
				                 : "no FP32 tensors");
		} else if (force && a->cls != IR_AMP_DENY) {
			p.fixed[n->id] = true;
			set_prec(&p, n, AMP_HALF);
			if (a->pin == IR_F16 || a->pin == IR_BF16) {
				reason(&p, n, "%s: %s", a->pin == IR_BF16 ? "BF16" : "FP16",
				       a->why);
				a->half = a->pin;
				a->rule = a->pin_rule;
			} else {
				reason(&p, n, "half: pinned (--force-half)");
				a->rule = AMP_BY_USER;
			}
		} else if (a->cls == IR_AMP_DENY) {
			p.fixed[n->id] = true;
			set_prec(&p, n, AMP_FP32);
			if (!a->reason[0]) {
				reason(&p, n, "FP32: deny list");
				a->rule = AMP_BY_CLASS;
			}
		}
	}

	if (o->policy == AMP_GREEDY) {
		IR_FOR_EACH_NODE(m, n)
		if (painted(&p, n) && is_class(&p, n, IR_AMP_ALLOW) && p.prec[n->id] == UNDECIDED) {
			set_prec(&p, n, AMP_HALF);
			reason(&p, n, "half: allow list");
		}
		propagate_deny(&p);
		between_allow(&p);
		through_clear(&p);
	}
	IR_FOR_EACH_NODE(m, n)
	if (painted(&p, n) && p.prec[n->id] == UNDECIDED && o->policy == AMP_GREEDY) {
		set_prec(&p, n, AMP_FP32);
		reason(&p, n, "FP32: %s node with no reason to change",
		       ir_ops[n->op].amp == IR_AMP_INFER ? "infer" : "clear");
	}
	if (o->policy == AMP_COST) {
		/* T2 depends on the classes only, so it runs first and T1 sees
		 * which neighbours it pinned */
		propagate_deny(&p);
		allow_by_cost(&p);
		follow_half(&p);
		groups_by_cost(&p);
		refine(&p);
	}

	r->predicted_us_fp32 = predict(&p, true);
	r->predicted_us_mixed = predict(&p, false);
	if (o->policy == AMP_COST && r->predicted_us_mixed >= r->predicted_us_fp32) {

		IR_FOR_EACH_NODE(m, n)
		if (painted(&p, n) && p.prec[n->id] == AMP_HALF) {
			bool force = info(&p, n)->pin == IR_F16 || info(&p, n)->pin == IR_BF16 ||
			             amp_named(n->name, o->force_half, o->nforce);
			if (force)
				continue;
			set_prec(&p, n, AMP_FP32);
			reason(&p, n,
			       "FP32: the mixed graph was predicted no faster than FP32 "
			       "(%.1f vs %.1f us)",
			       r->predicted_us_mixed, r->predicted_us_fp32);
		}
		r->predicted_us_mixed = predict(&p, false);
	}
	r->half_nodes = r->fp32_nodes = 0;
	IR_FOR_EACH_NODE(m, n)
	if (painted(&p, n)) {
		if (p.prec[n->id] == AMP_HALF)
			r->half_nodes++;
		else
			r->fp32_nodes++;
	}
	drop(&p, p.prec);
	drop(&p, p.fixed);
	drop(&p, p.mark);
	drop(&p, p.stack);
	drop(&p, p.group);
}
