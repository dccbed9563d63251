/*
 * amp_range.c - calibration: what the values of a model look like on sample
 * inputs, and what half precision does to its outputs.
 *
 * The samples run through the reference interpreter (ir/fold.c) on a copy
 * of the module as the amp pass sees it (ir_module_clone keeps the ids, so
 * the tables here are indexed like the module): every value is computed in
 * double and stored in its type, which for a mixed plan is exactly the
 * half-precision storage the targets use. The FP32 run gives the range
 * table (each FP32 value's largest magnitude, and the share of its L2 mass
 * - the sum of its squares - held by elements below FP16's smallest
 * normal, 2^-14, where FP16 loses digits and, below 2^-24, everything) and
 * the reference outputs;
 * amp_measure runs the plan the decisions in r describe (amp_rewrite on a
 * copy) and returns its error against them: the largest relative L2 error
 * of any float output on any sample, the measure `onnxc check
 * --max-rel-l2` uses.
 *
 * The range rule (docs/precision.md#calibration): with FP16 as the half
 * type, a node that reads or writes an FP32 tensor whose largest magnitude
 * times the headroom exceeds 65504, or more than the underflow share of
 * whose L2 mass lies below 2^-14, may not run in FP16. (Mass, not a count:
 * the tiny values of a GELU's negative side cost a tensor nothing, a
 * tensor of values around 1e-9 everything.) It may run in
 * BF16 (FP32's range) where the GPU profile has BF16 Tensor Cores - the
 * policy then prices it in BF16 like any half node - else it is pinned to
 * FP32.
 */
#include "amp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct amp_calib_run {
	int nsamples, noutputs;
	bool warned; /* that a mixed plan failed to evaluate */
	float **ref; /* [sample * noutputs + i]: FP32 output i, or NULL (not float) */
};

const char *amp_rule_name(enum amp_rule r)
{
	static const char *const names[] = { "class", "cost", "range", "budget", "user", "plan" };
	return r >= 0 && r < (int)(sizeof names / sizeof names[0]) ? names[r] : "?";
}

/* Evaluates x on sample k in place: every value computed becomes a
 * constant with data. false with err set (x is then unusable). */
static bool evaluate(struct ir_module *x, const struct amp_calib *c, int k, char *err, size_t size)
{
	const struct amp_sample *s = &c->samples[k];
	while (x->ninputs) {
		struct ir_value *v = x->inputs[0];
		int j = 0;
		while (j < s->n && strcmp(s->names[j], v->name))
			j++;
		if (j == s->n || !ir_input_to_const(x, v, s->data[j])) {
			snprintf(err, size, "no tensor for input '%s'", v->name);
			return false;
		}
	}
	return ir_fold_all(x, err, size) >= 0;
}

static bool computed(const struct ir_value *v)
{
	return v->kind == IR_VAL_CONST && v->data && v->type.dtype == IR_F32;
}

static void add_range(struct amp_range *r, const struct ir_value *v)
{
	const float *d = v->data;
	int64_t n = ir_type_elems(&v->type);
	for (int64_t i = 0; i < n; i++) {
		double a = fabs((double)d[i]);
		if (!isfinite(a))
			continue;
		r->n++;
		if (a > r->absmax)
			r->absmax = a;
		r->mass += a * a;
		if (a > 0 && a < AMP_F16_MIN_NORMAL) {
			r->below++;
			r->mass_below += a * a;
		}
	}
	r->under = r->mass > 0 ? r->mass_below / r->mass : 0;
}

void amp_calib_free(struct amp_calib_run *run)
{
	if (!run)
		return;
	for (int i = 0; i < run->nsamples * run->noutputs; i++)
		free(run->ref[i]);
	free(run->ref);
	free(run);
}

struct amp_calib_run *amp_calibrate(struct ir_module *m, const struct amp_options *o,
                                    struct amp_result *r)
{
	const struct amp_calib *c = o->calib;
	struct amp_calib_run *run = calloc(1, sizeof *run);
	if (!run)
		ir_panic(__FILE__, __LINE__, "out of memory");
	run->nsamples = c->nsamples;
	run->noutputs = m->noutputs;
	run->ref = calloc((size_t)(c->nsamples * m->noutputs + 1), sizeof *run->ref);
	r->calib_samples = c->nsamples;
	r->nranges = m->nvalues;
	r->ranges = ir_arena_alloc(&m->arena, sizeof *r->ranges * (size_t)(m->nvalues + 1));
	for (int k = 0; k < c->nsamples; k++) {
		struct ir_module *x = ir_module_clone(m);
		char err[512];
		if (!evaluate(x, c, k, err, sizeof err)) {
			ir_error(m->ctx, "--calibrate %s: sample %d: %s", c->source, k + 1, err);
			ir_module_free(x);
			amp_calib_free(run);
			return NULL;
		}
		for (int i = 0; i < m->nvalues; i++)
			if (computed(x->values[i]) &&
			    (k == 0 || m->values[i]->kind != IR_VAL_CONST))
				add_range(&r->ranges[i], x->values[i]);
		for (int i = 0; i < m->noutputs; i++) {
			const struct ir_value *v = x->outputs[i];
			size_t bytes = (size_t)ir_type_elems(&v->type) * sizeof(float);
			float **slot = &run->ref[k * m->noutputs + i];
			if (!computed(v))
				continue;
			if (!(*slot = malloc(bytes ? bytes : 1)))
				ir_panic(__FILE__, __LINE__, "out of memory");
			memcpy(*slot, v->data, bytes);
		}
		ir_module_free(x);
	}
	for (int i = 0; i < c->nsamples * m->noutputs; i++)
		if (run->ref[i])
			return run;
	ir_warning(m->ctx,
	           "--calibrate %s: the model has no FP32 output the samples compute; the "
	           "accuracy budget has nothing to measure (the range rule still applies)",
	           c->source);
	return run;
}

/* The FP32 tensors n touches in half precision: its FP32 inputs (but those
 * a half node still reads in FP32) and outputs. */
static void node_range(const struct amp_result *r, const struct ir_node *n, double *absmax,
                       double *under)
{
	*absmax = -1;
	*under = 0;
	for (int i = 0; i < n->nin + n->nout; i++) {
		const struct ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
		const struct amp_range *g;
		if (v->type.dtype != IR_F32 || v->id >= r->nranges ||
		    (i < n->nin && amp_reads_fp32(n, i)))
			continue;
		g = &r->ranges[v->id];
		if (!g->n)
			continue; /* not computed (a branch not taken) */
		*absmax = fmax(*absmax, g->absmax);
		*under = fmax(*under, g->under);
	}
}

void amp_range_rule(struct ir_module *m, const struct amp_options *o, struct amp_result *r)
{
	double headroom = o->headroom > 0 ? o->headroom : AMP_DEFAULT_HEADROOM;
	double share = o->underflow > 0 ? o->underflow : AMP_DEFAULT_UNDERFLOW;
	bool bf16 = o->gpu->tc_bf16_tflops > 0;
	IR_FOR_EACH_NODE(m, n)
	{
		struct amp_node *a = &r->nodes[n->id];
		bool over, under;
		node_range(r, n, &a->absmax, &a->under);
		if (a->absmax < 0 || o->half != IR_F16 || a->pin != IR_DT_NONE || !a->paintable ||
		    a->cls == IR_AMP_DENY || amp_named(n->name, o->force_half, o->nforce))
			continue;
		over = a->absmax * headroom > AMP_F16_MAX;
		under = a->under > share;
		if (!over && !under)
			continue;
		if (over)
			snprintf(a->why, sizeof a->why,
			         "|x| reaches %.3g, beyond 65504 / headroom %g", a->absmax,
			         headroom);
		else
			snprintf(a->why, sizeof a->why,
			         "%.1f%% of the L2 mass below FP16's normal range (> %g%%)",
			         100 * a->under, 100 * share);
		if (bf16) {
			a->half = IR_BF16;
			r->range_bf16++;
		} else {
			a->pin = IR_F32;
			a->pin_rule = AMP_BY_RANGE;
			r->range_fp32++;
		}
	}
}

/* Relative L2 error of a against the reference b (n floats); elements whose
 * reference is not finite do not count, a non-finite result is infinite. */
static double rel_l2(const float *a, const float *b, int64_t n)
{
	double num = 0, den = 0;
	for (int64_t i = 0; i < n; i++) {
		double d;
		if (!isfinite(b[i]))
			continue;
		if (!isfinite(a[i]))
			return INFINITY;
		d = (double)a[i] - (double)b[i];
		num += d * d;
		den += (double)b[i] * (double)b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num) > 0 ? INFINITY : 0;
}

/* A mixed plan that the interpreter cannot finish (an index computed from
 * rounded values out of range, say) does not fit the budget; said once. */
static void mixed_failed(struct ir_module *m, const struct amp_options *o,
                         struct amp_calib_run *run, int k, const char *err)
{
	if (run->warned)
		return;
	run->warned = true;
	ir_warning(m->ctx,
	           "--calibrate %s: sample %d fails in mixed precision (%s); the accuracy "
	           "budget counts such a plan as missing it",
	           o->calib->source, k + 1, err);
}

double amp_measure(struct ir_module *m, const struct amp_options *o, struct amp_result *r,
                   struct amp_calib_run *run)
{
	double worst = 0;
	for (int k = 0; k < run->nsamples; k++) {
		struct ir_module *x = ir_module_clone(m);
		struct amp_result scratch = *r; /* the rewrite counts what it does */
		char err[512];
		r->budget_evals++;
		amp_rewrite(x, o, &scratch);
		if (!evaluate(x, o->calib, k, err, sizeof err)) {
			mixed_failed(m, o, run, k, err);
			ir_module_free(x);
			return INFINITY;
		}
		for (int i = 0; i < run->noutputs; i++) {
			const float *ref = run->ref[k * run->noutputs + i];
			const struct ir_value *v = x->outputs[i];
			if (ref && computed(v))
				worst = fmax(worst, rel_l2(v->data, ref, ir_type_elems(&v->type)));
		}
		ir_module_free(x);
	}
	return worst;
}

/* Relative L2 distance of a (any float type) from the reference b (FP32),
 * as rel_l2 does; both are computed constants of one shape. */
static double rel_l2_value(const struct ir_value *a, const struct ir_value *b)
{
	int64_t n = ir_type_elems(&b->type);
	const float *ref = b->data;
	double num = 0, den = 0;
	for (int64_t i = 0; i < n; i++) {
		double x = ir_load_f64(a->type.dtype, a->data, (size_t)i), d;
		if (!isfinite(ref[i]))
			continue;
		if (!isfinite(x))
			return INFINITY;
		d = x - (double)ref[i];
		num += d * d;
		den += (double)ref[i] * (double)ref[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num) > 0 ? INFINITY : 0;
}

/* The error of value id in the mixed run xm against the FP32 run x32; -1
 * where either did not compute it (a branch not taken). */
static double value_error(const struct ir_module *xm, const struct ir_module *x32, int id)
{
	const struct ir_value *a = xm->values[id], *b = x32->values[id];
	if (!computed(b) || a->kind != IR_VAL_CONST || !a->data ||
	    !ir_dtypes[a->type.dtype].is_float)
		return -1;
	return rel_l2_value(a, b);
}

void amp_contributions(struct ir_module *m, const struct amp_options *o, struct amp_result *r,
                       struct amp_calib_run *run, double *contrib)
{
	for (int k = 0; k < run->nsamples; k++) {
		struct ir_module *x32 = ir_module_clone(m), *xm = ir_module_clone(m);
		struct amp_result scratch = *r;
		char err[512];
		bool ok;
		amp_rewrite(xm, o, &scratch);
		ok = evaluate(x32, o->calib, k, err, sizeof err);
		if (ok && !(ok = evaluate(xm, o->calib, k, err, sizeof err)))
			mixed_failed(m, o, run, k, err);
		IR_FOR_EACH_NODE(m, n)
		{
			const struct amp_node *a = &r->nodes[n->id];
			double out = 0, in = 0;
			if (!ok || n->id >= r->nids || !a->paintable || a->prec != AMP_HALF)
				continue;
			for (int i = 0; i < n->nout; i++)
				if (n->out[i]->type.dtype == IR_F32)
					out = fmax(out, value_error(xm, x32, n->out[i]->id));
			for (int i = 0; i < n->nin; i++)
				if (n->in[i]->type.dtype == IR_F32 &&
				    n->in[i]->kind != IR_VAL_CONST)
					in = fmax(in, value_error(xm, x32, n->in[i]->id));
			contrib[n->id] = fmax(contrib[n->id], out - in);
		}
		ir_module_free(xm);
		ir_module_free(x32);
		r->budget_evals += 2;
	}
}
