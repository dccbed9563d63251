/*
 * amp_budget.c - the accuracy budget: after painting, the mixed plan runs
 * on the calibration samples (amp_measure: the reference interpreter with
 * half-precision storage) and its outputs are compared with FP32's. While
 * the error exceeds the budget (--max-rel-l2; by default the bound `onnxc
 * check` uses: 1e-2 for FP16, 5e-2 for BF16), half nodes move back to FP32:
 *
 *   1. each candidate (a half node no one pinned to half) is measured: the
 *      relative L2 error of its results in the mixed run against FP32, less
 *      its inputs' - the error it adds (amp_contributions) - and the
 *      candidates are ranked by it, largest first;
 *   2. a growing prefix of the ranking is pinned to FP32 - the first
 *      node, the first two, four, ... - until the budget holds; if even
 *      every candidate pinned misses it, they stay so and a warning says
 *      what is left (the error then comes from nodes pinned to half, or
 *      from FP32 itself);
 *   3. bisection releases nodes of that prefix again (delta debugging): a
 *      run of them goes back to the policy when the budget holds with it
 *      released, else each half of it is tried, down to single nodes.
 *      What stays pinned is a set of nodes each of which the budget needs,
 *      given the others. With a good ranking the k nodes needed are the
 *      first k, found in O(log k) runs for the prefix and O(k log k) for
 *      the bisection, whatever the model's size;
 *   4. the policy decides everything else again with those pins (they act
 *      like --keep-fp32: deny nodes), and the final error is measured.
 *
 * Pins act through amp_assign, so the cost policy stays in charge of every
 * node the budget does not force. AMP_BUDGET_MAX_RUNS bounds the work:
 * what is pinned when it is spent stays pinned (the budget still holds).
 */
#include "amp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* runs of the model on one sample (an evaluation of a plan is one per
 * sample, a contribution measure two) */
#define AMP_BUDGET_MAX_RUNS 400

struct budget {
	struct ir_module *m;
	const struct amp_options *o;
	struct amp_result *r;
	struct amp_calib_run *run;
	struct amp_node **cand; /* the candidates, ranked */
	char (*why)[AMP_WHY];   /* cand[i]'s why and pin rule before the budget */
	enum amp_rule *rule;
	double bound, last; /* the budget, the error fits() measured last */
};

static void pin(struct budget *b, int lo, int hi, bool on)
{
	for (int i = lo; i < hi; i++) {
		struct amp_node *a = b->cand[i];
		a->pin = on ? IR_F32 : IR_DT_NONE;
		a->pin_rule = on ? AMP_BY_BUDGET : b->rule[i];
		if (on)
			snprintf(a->why, sizeof a->why,
			         "the accuracy budget (max rel-L2 %g on the calibration samples)",
			         b->bound);
		else /* what the range rule said of it, if anything */
			memcpy(a->why, b->why[i], sizeof a->why);
	}
}

/* Does the error with the pins as they are meet the budget? */
static bool fits(struct budget *b)
{
	amp_assign(b->m, b->o, b->r);
	b->last = amp_measure(b->m, b->o, b->r, b->run);
	return b->last <= b->bound;
}

/* Releases what it can of cand[lo, hi), all pinned on entry: the whole
 * run when the budget holds without it, else each half in turn. */
static void release(struct budget *b, int lo, int hi)
{
	int mid = lo + (hi - lo) / 2;
	if (lo >= hi || b->r->budget_evals >= AMP_BUDGET_MAX_RUNS)
		return;
	pin(b, lo, hi, false);
	if (fits(b))
		return;
	pin(b, lo, hi, true);
	if (hi - lo == 1)
		return;
	release(b, lo, mid);
	release(b, mid, hi);
}

/* A candidate and what it adds to the error. */
struct ranked {
	double contrib;
	int id;
	struct amp_node *a;
};

/* The ranking's order: larger contribution first, then node order. */
static int by_contribution(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;
	if (a->contrib != b->contrib)
		return (a->contrib < b->contrib) - (a->contrib > b->contrib);
	return (a->id > b->id) - (a->id < b->id);
}

void amp_budget(struct ir_module *m, const struct amp_options *o, struct amp_result *r,
                struct amp_calib_run *run)
{
	struct budget b = { .m = m, .o = o, .r = r, .run = run };
	double *contrib;
	struct ranked *rk;
	int n = 0, p;
	b.bound = o->max_rel_l2 > 0 ? o->max_rel_l2 : o->half == IR_BF16 ? 5e-2 : 1e-2;
	r->budget = b.bound;
	r->err_first = r->err_final = amp_measure(m, o, r, run);
	if (r->err_first <= b.bound)
		return;
	contrib = ir_arena_alloc(&m->arena, sizeof *contrib * (size_t)(r->nids + 1));
	rk = ir_arena_alloc(&m->arena, sizeof *rk * (size_t)(m->nnodes + 1));
	b.cand = ir_arena_alloc(&m->arena, sizeof *b.cand * (size_t)(m->nnodes + 1));
	amp_contributions(m, o, r, run, contrib);
	IR_FOR_EACH_NODE(m, x)
	{
		struct amp_node *a = &r->nodes[x->id];
		if (a->paintable && a->prec == AMP_HALF && a->pin == IR_DT_NONE &&
		    !amp_named(x->name, o->force_half, o->nforce))
			rk[n++] = (struct ranked){ contrib[x->id], x->id, a };
	}
	qsort(rk, (size_t)n, sizeof *rk, by_contribution);
	b.why = ir_arena_alloc(&m->arena, sizeof *b.why * (size_t)(n + 1));
	b.rule = ir_arena_alloc(&m->arena, sizeof *b.rule * (size_t)(n + 1));
	for (int i = 0; i < n; i++) {
		b.cand[i] = rk[i].a;
		memcpy(b.why[i], rk[i].a->why, sizeof b.why[i]);
		b.rule[i] = rk[i].a->pin_rule;
	}
	for (p = n ? 1 : 0; p < n; p *= 2) {
		pin(&b, 0, p, true);
		if (fits(&b))
			break;
	}
	if (p >= n) {
		pin(&b, 0, n, true);
		p = fits(&b) ? n : 0; /* 0: nothing to release */
		if (!p)
			ir_warning(
			        m->ctx,
			        "--max-rel-l2 %g: the error on the calibration samples is %.3g "
			        "with half precision and still %.3g with the %d half nodes it may "
			        "move in FP32; they stay FP32",
			        b.bound, r->err_first, b.last, n);
	}
	if (p > 1) { /* the prefix is pinned; all of it released is where we started */
		release(&b, 0, p / 2);
		release(&b, p / 2, p);
	}
	r->budget_moved = 0;
	for (int i = 0; i < n; i++)
		r->budget_moved += b.cand[i]->pin == IR_F32;
	amp_assign(m, o, r);
	r->err_final = amp_measure(m, o, r, run);
}
