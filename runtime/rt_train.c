/*
 * rt_train.c - the trainer: FP32 master weights, optimizers, dynamic loss
 * scaling, stepping through data sets, eval, checkpoints.
 *
 * The compiled step computes the loss and the gradients of loss * scale;
 * everything after that is here, once for every model. The optimizers do
 * what torch.optim does in 1.13, operation for operation in float32 with
 * the scalar coefficients computed in double as Python computes them, so a
 * trajectory matches PyTorch's to rounding: SGD (d = g + wd p; p -= lr d),
 * SGD with momentum (buf = d on the first update, then buf = m buf + d;
 * p -= lr buf) and AdamW (p *= 1 - lr wd; m = b1 m + (1-b1) g;
 * v = b2 v + (1-b2) g^2; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)).
 *
 * Loss scaling is GradScaler's: a step whose gradients hold an inf or NaN
 * is skipped and the scale multiplied by backoff; otherwise the gradients
 * are unscaled (multiplied by the float 1/scale) inside the update, and
 * after growth_interval finite steps in a row the scale is multiplied by
 * growth. Unlike GradScaler, which halves on to 0, a back-off below
 * RT_TRAIN_MIN_LOSS_SCALE stops training with RT_TRAIN_ERR_NONFINITE: the
 * gradients are not finite at any scale (NaN data), and the scale stays a
 * value a checkpoint holds and resumes from. The elementwise loops run on
 * the runtime's thread pool; every element is independent, so results do
 * not depend on the thread count.
 *
 * Data order: the RNG state at the start of an epoch is what checkpoints
 * keep; the epoch's permutation is drawn from it again on resume, so a
 * resumed run sees exactly the batches an uninterrupted one would. The
 * dropout masks depend only on the seed and the step count, which
 * checkpoints also keep.
 *
 * Data parallelism (rt_train_set_comm): size ranks each run the step on
 * their share of a global batch of size * batch samples - rank r takes
 * samples r*batch .. (r+1)*batch - 1 of it, in the order one process would
 * take the global batch - then sum the loss and the gradients over the
 * ranks in one call (they lie in one slab for it) and divide by size: the
 * mean over the global batch when the loss is a mean over its batch, as
 * PyTorch's DistributedDataParallel computes. The inf/NaN test runs on the
 * sum, so every rank skips the same steps and keeps the same scale, and
 * every rank applies the same update to the same weights. The new state
 * (BatchNorm's running statistics) is rank 0's on every rank, as DDP
 * broadcasts rank 0's buffers; the ranks' batch statistics stay their own.
 * Each rank draws its own dropout masks (the stream's entry step * size +
 * rank: one process is rank 0 of 1, as before).
 */
#include "onnxc_rt.h"
#include "rt_train_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_trainer {
	const struct rt_train_model *m;
	struct rt_train_config cfg;
	void *step, *eval;  /* the model instances */
	struct rt_ctx *ctx; /* threads for the update loops */
	float **params, **state, **grads, **new_state, **mom1, **mom2;
	/* the step's outputs, one block: the loss, then the gradients and the
	 * new state, each at a multiple of SLAB_ALIGN floats (the all-reduce's
	 * buffer); grads[i] and new_state[i] point into it */
	float *slab;
	int64_t slab_n, state_off;
	const struct rt_train_comm *comm; /* NULL: one process */
	int rank, size;
	int dev_reduce;      /* the step's output hook reduces on the device */
	int hook_failed;     /* ... and failed in this step's run */
	const void **inputs; /* params, state, data, scale */
	void **outputs;      /* loss, grads, new state */
	const void **eval_inputs;
	void **eval_outputs;
	void **eval_scratch;
	void **batch; /* rt_train_step_data's batch buffers */
	int64_t *perm, perm_n;
	int perm_valid;
	uint64_t rng_after[4];        /* the RNG after drawing the current epoch's order */
	float loss, scale;            /* loss: this step's, the mean over the ranks */
	int64_t dropout_seed;         /* the step's dropout seed input (model->dropout) */
	struct rt_train_ckpt_meta st; /* counters, RNG at the epoch's start, scale */
	char err[1024];
};

const char *rt_train_strerror(int status)
{
	static const char *const msgs[RT_TRAIN_STATUS_COUNT] = {
		[RT_TRAIN_OK] = "success",
		[RT_TRAIN_ERR_ARGUMENT] = "invalid argument or configuration",
		[RT_TRAIN_ERR_NO_MEMORY] = "out of memory",
		[RT_TRAIN_ERR_MODEL] = "the step or eval model failed",
		[RT_TRAIN_ERR_IO] = "a file cannot be opened, read or written",
		[RT_TRAIN_ERR_CHECKPOINT] = "not a valid checkpoint of this model",
		[RT_TRAIN_ERR_FOREIGN] = "a checkpoint of another model",
		[RT_TRAIN_ERR_DATA] = "bad training data",
		[RT_TRAIN_ERR_NONFINITE] = "non-finite gradients",
		[RT_TRAIN_ERR_NO_EVAL] = "the model has no eval step",
		[RT_TRAIN_ERR_COMM] = "the data-parallel ranks disagree or cannot communicate",
	};
	if (status < 0 || status >= RT_TRAIN_STATUS_COUNT)
		return "unknown status";
	return msgs[status];
}

void rt_train_config_default(struct rt_train_config *c)
{
	memset(c, 0, sizeof *c);
	c->optimizer = RT_TRAIN_SGD;
	c->lr = 0.01;
	c->momentum = 0.9;
	c->beta1 = 0.9;
	c->beta2 = 0.999;
	c->eps = 1e-8;
	c->weight_decay = 0;
	c->loss_scaling = 0;
	c->init_scale = 65536.0;
	c->growth = 2.0;
	c->backoff = 0.5;
	c->growth_interval = 2000;
	c->seed = 0;
	c->shuffle = 1;
}

static const char *const opt_names[] = { "none", "sgd", "momentum", "adamw" };

int rt_train_optimizer_parse(const char *name)
{
	for (int i = 1; i < 4; i++)
		if (name && !strcmp(name, opt_names[i]))
			return i;
	return 0;
}

const char *rt_train_optimizer_name(int k) { return k >= 0 && k < 4 ? opt_names[k] : "unknown"; }

int rt_train_fail(struct rt_trainer *t, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rt_train_vset_err(t->err, sizeof t->err, fmt, ap);
	va_end(ap);
	return status;
}

const struct rt_train_model *rt_train_model_of(const struct rt_trainer *t) { return t->m; }
const char *rt_train_error(const struct rt_trainer *t) { return t ? t->err : "out of memory"; }

static int check_config(struct rt_trainer *t, const struct rt_train_config *c)
{
	const char *bad = NULL;
	if (c->optimizer < RT_TRAIN_SGD || c->optimizer > RT_TRAIN_ADAMW)
		bad = "unknown optimizer";
	else if (!(c->lr >= 0 && isfinite(c->lr)))
		bad = "the learning rate must be finite and >= 0";
	else if (!(c->momentum >= 0 && c->momentum < 1))
		bad = "momentum must be in [0, 1)";
	else if (!(c->beta1 >= 0 && c->beta1 < 1 && c->beta2 >= 0 && c->beta2 < 1))
		bad = "betas must be in [0, 1)";
	else if (!(c->eps > 0 && isfinite(c->eps)))
		bad = "eps must be > 0";
	else if (!(c->weight_decay >= 0 && isfinite(c->weight_decay)))
		bad = "weight decay must be finite and >= 0";
	else if (c->loss_scaling != 0 && c->loss_scaling != 1)
		bad = "loss_scaling must be 0 or 1";
	else if (!(c->init_scale >= RT_TRAIN_MIN_LOSS_SCALE &&
	           c->init_scale <= RT_TRAIN_MAX_LOSS_SCALE))
		bad = "the initial loss scale must be in [2^-24, 3e38]";
	else if (!(c->growth >= 1 && isfinite(c->growth)))
		bad = "the loss scale's growth factor must be >= 1";
	else if (!(c->backoff > 0 && c->backoff < 1)) /* GradScaler's rule too */
		bad = "the loss scale's backoff factor must be in (0, 1)";
	else if (c->growth_interval < 1)
		bad = "the growth interval must be >= 1";
	if (bad)
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT, "%s", bad);
	return RT_TRAIN_OK;
}

static int check_tensors(struct rt_trainer *t, const char *what, int n,
                         const struct rt_train_tensor *ts, int need_f32)
{
	if (n < 0 || (n && !ts))
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT, "model: bad %s list", what);
	for (int i = 0; i < n; i++) {
		int64_t prod = 1;
		if (!ts[i].name || ts[i].rank < 0 || (ts[i].rank && !ts[i].dims))
			return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT, "model: bad %s %d", what, i);
		for (int d = 0; d < ts[i].rank; d++)
			prod *= ts[i].dims[d];
		if (prod != ts[i].elems || (need_f32 && ts[i].dtype != RT_F32) ||
		    rt_dtype_size(ts[i].dtype) == 0)
			return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT,
			                     "model: %s '%s': bad dtype or element count", what,
			                     ts[i].name);
	}
	return RT_TRAIN_OK;
}

static int check_ranges(struct rt_trainer *t)
{
	const struct rt_train_model *m = t->m;
	if (m->num_ranges < 0 || (m->num_ranges && !m->ranges))
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT, "model: bad range list");
	for (int i = 0; i < m->num_ranges; i++) {
		const struct rt_train_range *r = &m->ranges[i];
		if (r->data < 0 || r->data >= m->num_data || !r->what || !(r->lo < r->hi) ||
		    (m->data[r->data].dtype != RT_I32 && m->data[r->data].dtype != RT_I64))
			return rt_train_fail(
			        t, RT_TRAIN_ERR_ARGUMENT,
			        "model: range %d: not an int32 or int64 data input, or "
			        "an empty range",
			        i);
	}
	return RT_TRAIN_OK;
}

int64_t rt_train_range_find(const struct rt_train_model *m, const struct rt_train_range *r,
                            const void *values, int64_t n, int64_t *v)
{
	int wide = m->data[r->data].dtype == RT_I64;
	for (int64_t i = 0; i < n; i++) {
		int64_t x = wide ? ((const int64_t *)values)[i] : ((const int32_t *)values)[i];
		if ((x < r->lo || x >= r->hi) && !(r->has_ignore && x == r->ignore)) {
			*v = x;
			return i;
		}
	}
	return -1;
}

void rt_train_range_say(const struct rt_train_range *r, int64_t at, int64_t elems, int64_t v,
                        char *buf, size_t size)
{
	char where[64] = "";
	if (elems > 1)
		snprintf(where, sizeof where, ", element %lld", (long long)(at % elems));
	int k = snprintf(buf, size, "sample %lld%s: %s %lld is not in [%lld, %lld)",
	                 (long long)(at / elems), where, r->what, (long long)v, (long long)r->lo,
	                 (long long)r->hi);
	if (r->has_ignore && k > 0 && (size_t)k < size)
		snprintf(buf + k, size - (size_t)k, " nor the ignored %lld", (long long)r->ignore);
}

/* A batch's class labels and indices, before a step: RT_TRAIN_ERR_DATA
 * naming the first value out of its range. */
static int check_batch(struct rt_trainer *t, const char *what, const void *const batch[])
{
	const struct rt_train_model *m = t->m;
	for (int i = 0; i < m->num_ranges; i++) {
		const struct rt_train_range *r = &m->ranges[i];
		const struct rt_train_tensor *in = &m->data[r->data];
		int64_t v, at = rt_train_range_find(m, r, batch[r->data], m->batch * in->elems, &v);
		if (at >= 0) {
			char say[512];
			rt_train_range_say(r, at, in->elems, v, say, sizeof say);
			return rt_train_fail(t, RT_TRAIN_ERR_DATA,
			                     "%s: data input '%s' of the batch, %s", what, in->name,
			                     say);
		}
	}
	return RT_TRAIN_OK;
}

static float **alloc_f32s(int n, const struct rt_train_tensor *ts)
{
	float **a = calloc((size_t)n + 1, sizeof *a);
	for (int i = 0; a && i < n; i++)
		if (!(a[i] = calloc((size_t)ts[i].elems + 1, sizeof(float)))) {
			for (int j = 0; j < i; j++)
				free(a[j]);
			free(a);
			return NULL;
		}
	return a;
}

/* The step's outputs as one slab (struct rt_trainer's slab): the loss, the
 * gradients, the new state, each from a multiple of SLAB_ALIGN floats. */
#define SLAB_ALIGN 16
static int64_t slab_room(const struct rt_train_tensor *ts)
{
	return (ts->elems + SLAB_ALIGN - 1) / SLAB_ALIGN * SLAB_ALIGN;
}

static int alloc_slab(struct rt_trainer *t)
{
	const struct rt_train_model *m = t->m;
	int np = m->num_params, ns = m->num_state;
	int64_t n = SLAB_ALIGN;
	for (int i = 0; i < np; i++)
		n += slab_room(&m->params[i]);
	t->state_off = n;
	for (int i = 0; i < ns; i++)
		n += slab_room(&m->state[i]);
	if (!(t->grads = calloc((size_t)np + 1, sizeof *t->grads)) ||
	    !(t->new_state = calloc((size_t)ns + 1, sizeof *t->new_state)) ||
	    !(t->slab = calloc((size_t)n, sizeof(float))))
		return 0;
	t->slab_n = n;
	n = SLAB_ALIGN;
	for (int i = 0; i < np; n += slab_room(&m->params[i]), i++)
		t->grads[i] = t->slab + n;
	for (int i = 0; i < ns; n += slab_room(&m->state[i]), i++)
		t->new_state[i] = t->slab + n;
	return 1;
}

static void free_f32s(float **a, int n)
{
	for (int i = 0; a && i < n; i++)
		free(a[i]);
	free(a);
}

/* The moment buffers the optimizer kind needs. */
static int ensure_moments(struct rt_trainer *t, int kind)
{
	const struct rt_train_model *m = t->m;
	if ((kind == RT_TRAIN_MOMENTUM || kind == RT_TRAIN_ADAMW) && !t->mom1 &&
	    !(t->mom1 = alloc_f32s(m->num_params, m->params)))
		return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "out of memory (optimizer state)");
	if (kind == RT_TRAIN_ADAMW && !t->mom2 && !(t->mom2 = alloc_f32s(m->num_params, m->params)))
		return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "out of memory (optimizer state)");
	return RT_TRAIN_OK;
}

static void reset_counters(struct rt_trainer *t)
{
	memset(&t->st, 0, sizeof t->st);
	rt_train_rng_seed(t->st.rng, t->cfg.seed);
	t->st.loss_scale = t->cfg.loss_scaling ? t->cfg.init_scale : 1.0;
	t->perm_valid = 0;
}

int rt_train_create(struct rt_trainer **out, const struct rt_train_model *m,
                    const struct rt_train_config *cfg, const char *step_weights,
                    const char *eval_weights)
{
	struct rt_trainer *t;
	if (!out)
		return RT_TRAIN_ERR_ARGUMENT;
	if (!(*out = t = calloc(1, sizeof *t)))
		return RT_TRAIN_ERR_NO_MEMORY;
	if (!m || !cfg)
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT, "no model or configuration");
	t->m = m;
	t->size = 1;
	int rc;
	if (!m->step_create || !m->step_run || !m->step_destroy || m->batch < 1 ||
	    (m->eval_create && (!m->eval_run || !m->eval_destroy)))
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT,
		                     "model: missing step functions or a bad batch size");
	if ((rc = check_tensors(t, "param", m->num_params, m->params, 1)) ||
	    (rc = check_tensors(t, "state", m->num_state, m->state, 1)) ||
	    (rc = check_tensors(t, "data input", m->num_data, m->data, 0)) ||
	    (rc = check_tensors(t, "eval output", m->eval_create ? m->num_eval_outputs : 0,
	                        m->eval_outputs, 0)) ||
	    (rc = check_ranges(t)) || (rc = check_config(t, cfg)))
		return rc;
	t->cfg = *cfg;
	int np = m->num_params, ns = m->num_state, nd = m->num_data;
	if (!(t->params = alloc_f32s(np, m->params)) || !(t->state = alloc_f32s(ns, m->state)) ||
	    !alloc_slab(t) ||
	    !(t->inputs = calloc((size_t)(np + ns + nd + 2), sizeof *t->inputs)) ||
	    !(t->outputs = calloc((size_t)(1 + np + ns), sizeof *t->outputs)) ||
	    !(t->batch = calloc((size_t)nd + 1, sizeof *t->batch)))
		return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "out of memory (weights)");
	for (int i = 0; i < nd; i++)
		if (!(t->batch[i] = malloc((size_t)(m->batch * m->data[i].elems) *
		                                   (size_t)rt_dtype_size(m->data[i].dtype) +
		                           1)))
			return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "out of memory (batches)");
	for (int i = 0; i < np; i++) {
		t->inputs[i] = t->params[i];
		t->outputs[1 + i] = t->grads[i];
	}
	for (int i = 0; i < ns; i++) {
		t->inputs[np + i] = t->state[i];
		t->outputs[1 + np + i] = t->new_state[i];
	}
	t->inputs[np + ns + nd] = &t->scale;
	if (m->dropout)
		t->inputs[np + ns + nd + 1] = &t->dropout_seed;
	t->outputs[0] = t->slab;
	if ((rc = ensure_moments(t, cfg->optimizer)))
		return rc;
	if (m->eval_create) {
		int ne = m->num_eval_outputs;
		if (!(t->eval_inputs =
		              calloc((size_t)(np + ns + nd + 1), sizeof *t->eval_inputs)) ||
		    !(t->eval_outputs = calloc((size_t)ne + 1, sizeof *t->eval_outputs)) ||
		    !(t->eval_scratch = calloc((size_t)ne + 1, sizeof *t->eval_scratch)))
			return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "out of memory (eval)");
		for (int i = 0; i < ne; i++)
			if (!(t->eval_scratch[i] = malloc(
			              (size_t)m->eval_outputs[i].elems *
			                      (size_t)rt_dtype_size(m->eval_outputs[i].dtype) +
			              1)))
				return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY,
				                     "out of memory (eval)");
		memcpy(t->eval_inputs, t->inputs, (size_t)(np + ns) * sizeof *t->inputs);
	}
	if ((rc = rt_ctx_create(&t->ctx, 0)))
		return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "cannot start threads: %s",
		                     rt_status_message(rc));
	reset_counters(t);
	if ((rc = m->step_create(&t->step, step_weights))) {
		t->step = NULL;
		return rt_train_fail(t, RT_TRAIN_ERR_MODEL, "%s: cannot create the step model: %s",
		                     m->name, m->step_strerror ? m->step_strerror(rc) : "failed");
	}
	if (m->eval_create && (rc = m->eval_create(&t->eval, eval_weights))) {
		t->eval = NULL;
		return rt_train_fail(t, RT_TRAIN_ERR_MODEL, "%s: cannot create the eval model: %s",
		                     m->name, m->eval_strerror ? m->eval_strerror(rc) : "failed");
	}
	return RT_TRAIN_OK;
}

void rt_train_destroy(struct rt_trainer *t)
{
	if (!t)
		return;
	const struct rt_train_model *m = t->m;
	if (t->step)
		m->step_destroy(t->step);
	if (t->eval)
		m->eval_destroy(t->eval);
	if (t->ctx)
		rt_ctx_destroy(t->ctx);
	if (m) {
		free_f32s(t->params, m->num_params);
		free_f32s(t->mom1, m->num_params);
		free_f32s(t->mom2, m->num_params);
		free_f32s(t->state, m->num_state);
		for (int i = 0; t->batch && i < m->num_data; i++)
			free(t->batch[i]);
		for (int i = 0; t->eval_scratch && i < m->num_eval_outputs; i++)
			free(t->eval_scratch[i]);
	}
	free(t->grads);
	free(t->new_state);
	free(t->slab);
	free(t->batch);
	free(t->eval_scratch);
	free(t->eval_inputs);
	free(t->eval_outputs);
	free(t->inputs);
	free(t->outputs);
	free(t->perm);
	free(t);
}

void rt_train_get_config(const struct rt_trainer *t, struct rt_train_config *cfg) { *cfg = t->cfg; }

int rt_train_set_config(struct rt_trainer *t, const struct rt_train_config *cfg)
{
	int rc = check_config(t, cfg);
	if (rc)
		return rc;
	if (cfg->optimizer != t->cfg.optimizer && t->st.opt_step > 0)
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT,
		                     "cannot switch the optimizer from %s to %s after %llu updates",
		                     rt_train_optimizer_name(t->cfg.optimizer),
		                     rt_train_optimizer_name(cfg->optimizer),
		                     (unsigned long long)t->st.opt_step);
	if ((rc = ensure_moments(t, cfg->optimizer)))
		return rc;
	if (cfg->loss_scaling != t->cfg.loss_scaling || (t->st.step == 0 && t->cfg.loss_scaling))
		t->st.loss_scale = cfg->loss_scaling ? cfg->init_scale : 1.0;
	if (cfg->seed != t->cfg.seed && t->st.step == 0) {
		rt_train_rng_seed(t->st.rng, cfg->seed);
		t->perm_valid = 0;
	}
	t->cfg = *cfg;
	return RT_TRAIN_OK;
}

void rt_train_get_progress(const struct rt_trainer *t, struct rt_train_progress *p)
{
	p->step = (int64_t)t->st.step;
	p->opt_step = (int64_t)t->st.opt_step;
	p->skipped = (int64_t)t->st.skipped;
	p->epoch = (int64_t)t->st.epoch;
	p->epoch_pos = (int64_t)t->st.epoch_pos;
	p->loss_scale = t->st.loss_scale;
	p->good_steps = (int64_t)t->st.good_steps;
}

float *rt_train_param(struct rt_trainer *t, int i)
{
	return i >= 0 && i < t->m->num_params ? t->params[i] : NULL;
}

float *rt_train_state(struct rt_trainer *t, int i)
{
	return i >= 0 && i < t->m->num_state ? t->state[i] : NULL;
}

/* ------------------------------------------------------------------------ */
/* The update loops                                                         */
/* ------------------------------------------------------------------------ */

struct finite_job {
	const float *g;
	atomic_int bad;
};

static void finite_range(void *arg, int64_t begin, int64_t end)
{
	struct finite_job *j = arg;
	uint32_t acc = 0;
	for (int64_t i = begin; i < end; i++) {
		uint32_t u;
		memcpy(&u, &j->g[i], 4); /* the exponent's bits: immune to fast-math flags */
		acc |= (u & 0x7f800000u) == 0x7f800000u;
	}
	if (acc)
		atomic_store_explicit(&j->bad, 1, memory_order_relaxed);
}

/* Index of the first tensor with a non-finite gradient, or -1. */
static int first_nonfinite(struct rt_trainer *t)
{
	for (int i = 0; i < t->m->num_params; i++) {
		struct finite_job j = { t->grads[i], 0 };
		rt_parallel(t->ctx, t->m->params[i].elems, 1 << 14, finite_range, &j);
		if (atomic_load(&j.bad))
			return i;
	}
	return -1;
}

struct update_job {
	int kind, first;
	float *p, *m, *v;
	const float *g;
	float inv, neg_lr, wd, mom, decay, b1, one_b1, b2, one_b2, bc2_sqrt, eps, neg_step;
};

static void update_range(void *arg, int64_t begin, int64_t end)
{
	const struct update_job *j = arg;
	float *p = j->p, *m = j->m, *v = j->v;
	const float *g = j->g;
	switch (j->kind) {
	case RT_TRAIN_SGD:
		for (int64_t i = begin; i < end; i++) {
			float d = g[i] * j->inv;
			if (j->wd != 0)
				d = d + j->wd * p[i];
			p[i] = p[i] + j->neg_lr * d;
		}
		break;
	case RT_TRAIN_MOMENTUM:
		for (int64_t i = begin; i < end; i++) {
			float d = g[i] * j->inv;
			if (j->wd != 0)
				d = d + j->wd * p[i];
			m[i] = j->first ? d : m[i] * j->mom + d;
			p[i] = p[i] + j->neg_lr * m[i];
		}
		break;
	case RT_TRAIN_ADAMW:
		for (int64_t i = begin; i < end; i++) {
			float d = g[i] * j->inv;
			p[i] = p[i] * j->decay;
			m[i] = m[i] * j->b1 + j->one_b1 * d;
			v[i] = v[i] * j->b2 + j->one_b2 * d * d;
			float denom = sqrtf(v[i]) / j->bc2_sqrt + j->eps;
			p[i] = p[i] + j->neg_step * m[i] / denom;
		}
		break;
	}
}

/* The update with the gradients divided by scale (the loss scale times
 * the rank count). */
static void apply_update(struct rt_trainer *t, double scale)
{
	const struct rt_train_config *c = &t->cfg;
	struct update_job j = { 0 };
	double step = (double)t->st.opt_step; /* already counts this update */
	j.kind = c->optimizer;
	j.first = t->st.opt_step == 1;
	j.inv = (float)(1.0 / scale);
	j.neg_lr = (float)-c->lr;
	j.wd = (float)c->weight_decay;
	j.mom = (float)c->momentum;
	j.decay = (float)(1.0 - c->lr * c->weight_decay);
	j.b1 = (float)c->beta1;
	j.one_b1 = (float)(1.0 - c->beta1);
	j.b2 = (float)c->beta2;
	j.one_b2 = (float)(1.0 - c->beta2);
	j.bc2_sqrt = (float)sqrt(1.0 - pow(c->beta2, step));
	j.eps = (float)c->eps;
	j.neg_step = (float)-(c->lr / (1.0 - pow(c->beta1, step)));
	for (int i = 0; i < t->m->num_params; i++) {
		j.p = t->params[i];
		j.g = t->grads[i];
		j.m = t->mom1 ? t->mom1[i] : NULL;
		j.v = t->mom2 ? t->mom2[i] : NULL;
		rt_parallel(t->ctx, t->m->params[i].elems, 1 << 14, update_range, &j);
	}
}

/* ------------------------------------------------------------------------ */
/* Steps                                                                    */
/* ------------------------------------------------------------------------ */

int rt_train_step(struct rt_trainer *t, const void *const batch[], struct rt_train_result *r)
{
	struct rt_train_result dummy;
	if (!r)
		r = &dummy;
	memset(r, 0, sizeof *r);
	if (!t || !batch)
		return t ? rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT, "train step: NULL batch")
		         : RT_TRAIN_ERR_ARGUMENT;
	const struct rt_train_model *m = t->m;
	int np = m->num_params, ns = m->num_state, nd = m->num_data;
	double scale = t->cfg.loss_scaling ? t->st.loss_scale : 1.0;
	for (int i = 0; i < nd; i++) {
		if (!batch[i])
			return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT,
			                     "train step: data input %d is NULL", i);
		t->inputs[np + ns + i] = batch[i];
	}
	char what[48];
	snprintf(what, sizeof what, "step %llu", (unsigned long long)t->st.step + 1);
	int rc = check_batch(t, what, batch);
	if (rc)
		return rc;
	t->scale = (float)scale;
	t->dropout_seed = (int64_t)rt_train_dropout_seed(
	        t->cfg.seed, t->st.step * (uint64_t)t->size + (uint64_t)t->rank);
	t->slab[0] = NAN;
	t->hook_failed = 0;
	rc = m->step_run(t->step, t->inputs, t->outputs);
	if (rc && t->hook_failed)
		return rt_train_fail(t, RT_TRAIN_ERR_COMM,
		                     "step %llu: the all-reduce over %s on the device failed",
		                     (unsigned long long)t->st.step + 1, t->comm->name);
	if (rc)
		return rt_train_fail(t, RT_TRAIN_ERR_MODEL, "step %llu: the step model failed: %s",
		                     (unsigned long long)t->st.step + 1,
		                     m->step_strerror ? m->step_strerror(rc) : "error");
	if (t->size > 1 && !t->dev_reduce) { /* the sums over the ranks; the state rank 0's */
		if (t->rank)
			memset(t->slab + t->state_off, 0,
			       (size_t)(t->slab_n - t->state_off) * sizeof(float));
		if (t->comm->sum_f32(t->comm->ctx, t->slab, t->slab_n))
			return rt_train_fail(t, RT_TRAIN_ERR_COMM,
			                     "step %llu: the all-reduce over %s failed",
			                     (unsigned long long)t->st.step + 1, t->comm->name);
	}
	t->loss = t->slab[0] / (float)t->size;
	for (int i = 0; i < ns; i++)
		memcpy(t->state[i], t->new_state[i], (size_t)m->state[i].elems * sizeof(float));
	t->st.step++;
	r->loss = t->loss;
	r->loss_scale = scale;
	int bad = first_nonfinite(t);
	if (bad >= 0) {
		t->st.skipped++;
		t->st.good_steps = 0;
		r->skipped = 1;
		if (!t->cfg.loss_scaling)
			return rt_train_fail(
			        t, RT_TRAIN_ERR_NONFINITE,
			        "step %llu: the gradient of '%s' is not finite (loss %g; "
			        "loss scaling is off)",
			        (unsigned long long)t->st.step, m->params[bad].name,
			        (double)t->loss);
		/* halving for ever would reach 0 (2^16 after ~1100 steps), which
		 * no checkpoint can hold: stop at the floor instead */
		if (t->st.loss_scale * t->cfg.backoff < RT_TRAIN_MIN_LOSS_SCALE)
			return rt_train_fail(
			        t, RT_TRAIN_ERR_NONFINITE,
			        "step %llu: the gradient of '%s' is not finite at any loss scale "
			        "(loss %g): the scale has backed off to %g and would go below "
			        "its floor 2^-24; %llu of %llu steps skipped - look for NaN or "
			        "inf in the data or the weights",
			        (unsigned long long)t->st.step, m->params[bad].name,
			        (double)t->loss, t->st.loss_scale,
			        (unsigned long long)t->st.skipped, (unsigned long long)t->st.step);
		t->st.loss_scale *= t->cfg.backoff;
		return RT_TRAIN_OK;
	}
	t->st.opt_step++;
	apply_update(t, scale * t->size);
	if (t->cfg.loss_scaling && ++t->st.good_steps >= (uint64_t)t->cfg.growth_interval) {
		t->st.loss_scale *= t->cfg.growth;
		if (t->st.loss_scale > RT_TRAIN_MAX_LOSS_SCALE) /* stays a finite float */
			t->st.loss_scale = RT_TRAIN_MAX_LOSS_SCALE;
		t->st.good_steps = 0;
	}
	return RT_TRAIN_OK;
}

int rt_train_eval_step(struct rt_trainer *t, const void *const batch[], float *loss,
                       void *const outputs[])
{
	const struct rt_train_model *m = t->m;
	if (!t->eval)
		return rt_train_fail(t, RT_TRAIN_ERR_NO_EVAL, "%s has no eval model", m->name);
	if (!batch)
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT, "eval step: NULL batch");
	int np = m->num_params, ns = m->num_state;
	for (int i = 0; i < m->num_data; i++) {
		if (!batch[i])
			return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT,
			                     "eval step: data input %d is NULL", i);
		t->eval_inputs[np + ns + i] = batch[i];
	}
	int rc = check_batch(t, "eval step", batch);
	if (rc)
		return rc;
	float l = NAN;
	t->eval_outputs[0] = &l;
	for (int i = 0; i < m->num_eval_outputs; i++)
		t->eval_outputs[1 + i] = outputs && outputs[i] ? outputs[i] : t->eval_scratch[i];
	rc = m->eval_run(t->eval, t->eval_inputs, t->eval_outputs);
	if (rc)
		return rt_train_fail(t, RT_TRAIN_ERR_MODEL, "the eval model failed: %s",
		                     m->eval_strerror ? m->eval_strerror(rc) : "error");
	if (loss)
		*loss = l;
	return RT_TRAIN_OK;
}

/* ------------------------------------------------------------------------ */
/* Data                                                                     */
/* ------------------------------------------------------------------------ */

int64_t rt_train_global_batch(const struct rt_trainer *t) { return t->m->batch * t->size; }

int64_t rt_train_data_batches(const struct rt_trainer *t, const struct rt_train_data *d)
{
	return d->samples / rt_train_global_batch(t);
}

static void gather(struct rt_trainer *t, struct rt_train_data *d, const int64_t *idx)
{
	for (int i = 0; i < d->num; i++) {
		size_t sb = d->sample_bytes[i];
		unsigned char *dst = t->batch[i];
		const unsigned char *src = d->arrays[i];
		for (int64_t b = 0; b < t->m->batch; b++)
			memcpy(dst + (size_t)b * sb, src + (size_t)idx[b] * sb, sb);
	}
}

/* The order of the next epoch's samples in t->perm. */
static void epoch_order(struct rt_trainer *t, int64_t n)
{
	if (t->cfg.shuffle) {
		rt_train_shuffle(t->rng_after, t->perm, n);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		t->perm[i] = i;
}

int rt_train_step_data(struct rt_trainer *t, struct rt_train_data *d, struct rt_train_result *r)
{
	int64_t n = d->samples, gb = rt_train_global_batch(t), nb = n / gb;
	if (t->st.data_samples && t->st.data_samples != (uint64_t)n)
		return rt_train_fail(t, RT_TRAIN_ERR_DATA,
		                     "the run's data set had %llu samples, this one has %lld: "
		                     "cannot continue its epoch",
		                     (unsigned long long)t->st.data_samples, (long long)n);
	t->st.data_samples = (uint64_t)n;
	if (!t->perm_valid || t->perm_n != n) {
		int64_t *p = realloc(t->perm, (size_t)n * sizeof *p);
		if (!p)
			return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY,
			                     "out of memory (shuffling)");
		t->perm = p;
		t->perm_n = n;
		memcpy(t->rng_after, t->st.rng, sizeof t->rng_after);
		epoch_order(t, n);
		t->perm_valid = 1;
	}
	if (t->st.epoch_pos >= (uint64_t)nb) { /* the next epoch, the next order */
		t->st.epoch++;
		t->st.epoch_pos = 0;
		memcpy(t->st.rng, t->rng_after, sizeof t->st.rng);
		epoch_order(t, n);
	}
	/* this rank's share of the global batch */
	gather(t, d, t->perm + t->st.epoch_pos * (uint64_t)gb + t->rank * t->m->batch);
	int rc = rt_train_step(t, (const void *const *)t->batch, r);
	if (rc == RT_TRAIN_OK || rc == RT_TRAIN_ERR_NONFINITE)
		t->st.epoch_pos++;
	return rc;
}

int rt_train_eval_data(struct rt_trainer *t, struct rt_train_data *d, double *mean_loss)
{
	int64_t nb = d->samples / t->m->batch;
	double sum = 0;
	int64_t idx_storage[64], *idx = idx_storage;
	if (t->m->batch > 64 && !(idx = malloc((size_t)t->m->batch * sizeof *idx)))
		return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "out of memory");
	int rc = RT_TRAIN_OK;
	for (int64_t b = 0; b < nb && !rc; b++) {
		float l;
		for (int64_t k = 0; k < t->m->batch; k++)
			idx[k] = b * t->m->batch + k;
		gather(t, d, idx);
		rc = rt_train_eval_step(t, (const void *const *)t->batch, &l, NULL);
		sum += l;
	}
	if (idx != idx_storage)
		free(idx);
	if (!rc && mean_loss)
		*mean_loss = nb ? sum / (double)nb : NAN;
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Checkpoints                                                              */
/* ------------------------------------------------------------------------ */

int rt_train_save(struct rt_trainer *t, const char *path)
{
	const struct rt_train_model *m = t->m;
	struct rt_train_ckpt ck = { 0 };
	struct rt_train_ckpt_tensor *ts =
	        calloc((size_t)(m->num_params + m->num_state) + 1, sizeof *ts);
	if (!ts)
		return rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "%s: out of memory", path);
	for (int i = 0; i < m->num_params + m->num_state; i++) {
		int p = i < m->num_params;
		const struct rt_train_tensor *mt = p ? &m->params[i] : &m->state[i - m->num_params];
		ts[i] = (struct rt_train_ckpt_tensor){ mt->name, mt->rank, mt->dims, mt->elems,
			                               p ? t->params[i]
			                                 : t->state[i - m->num_params] };
	}
	ck.model_id = m->model_id;
	ck.meta = t->st;
	ck.meta.cfg = t->cfg;
	ck.meta.batch = (uint64_t)rt_train_global_batch(t);
	ck.num_params = m->num_params;
	ck.params = ts;
	ck.num_state = m->num_state;
	ck.state = ts + m->num_params;
	if (t->cfg.optimizer == RT_TRAIN_MOMENTUM || t->cfg.optimizer == RT_TRAIN_ADAMW)
		ck.mom1 = (const float *const *)t->mom1;
	if (t->cfg.optimizer == RT_TRAIN_ADAMW)
		ck.mom2 = (const float *const *)t->mom2;
	int rc = rt_train_ckpt_write(path, &ck, t->err, sizeof t->err);
	free(ts);
	return rc;
}

static void copy_tensors(float **dst, int n, const struct rt_train_ckpt_tensor *src)
{
	for (int i = 0; i < n; i++)
		memcpy(dst[i], src[i].data, (size_t)src[i].elems * sizeof(float));
}

int rt_train_load_weights(struct rt_trainer *t, const char *path)
{
	struct rt_train_ckpt ck;
	void *buf;
	int rc = rt_train_ckpt_read(path, t->m->model_id, t->m, &ck, &buf, t->err, sizeof t->err);
	if (rc)
		return rc;
	copy_tensors(t->params, ck.num_params, ck.params);
	copy_tensors(t->state, ck.num_state, ck.state);
	free(buf);
	return RT_TRAIN_OK;
}

int rt_train_load(struct rt_trainer *t, const char *path)
{
	struct rt_train_ckpt ck;
	void *buf;
	int rc = rt_train_ckpt_read(path, t->m->model_id, t->m, &ck, &buf, t->err, sizeof t->err);
	if (rc)
		return rc;
	const struct rt_train_ckpt_meta *meta = &ck.meta;
	int kind = meta->cfg.optimizer;
	char msg[sizeof t->err + 32];
	rc = RT_TRAIN_ERR_CHECKPOINT;
	if (kind == RT_TRAIN_OPT_NONE) { /* initial weights: nothing to resume */
		snprintf(msg, sizeof msg, "an initial-weights file, not a training checkpoint");
		goto bad;
	}
	struct rt_trainer probe = *t;
	if (check_config(&probe, &meta->cfg)) {
		snprintf(msg, sizeof msg, "bad hyper-parameters: %s", probe.err);
		goto bad;
	}
	if (((kind == RT_TRAIN_MOMENTUM || kind == RT_TRAIN_ADAMW) && !ck.mom1) ||
	    (kind == RT_TRAIN_ADAMW && !ck.mom2)) {
		snprintf(msg, sizeof msg, "optimizer %s without its moments",
		         rt_train_optimizer_name(kind));
		goto bad;
	}
	if (!(meta->rng[0] | meta->rng[1] | meta->rng[2] | meta->rng[3])) {
		snprintf(msg, sizeof msg, "an all-zero RNG state");
		goto bad;
	}
	/* the checkpoint holds global state: a run of another rank count (another
	 * global batch) resumes at the same sample of the epoch */
	uint64_t gb = (uint64_t)rt_train_global_batch(t), epoch_pos = meta->epoch_pos;
	if (meta->batch != gb) {
		uint64_t at = meta->epoch_pos * meta->batch;
		if (!meta->batch || meta->batch % (uint64_t)t->m->batch ||
		    meta->epoch_pos > UINT64_MAX / meta->batch) {
			snprintf(msg, sizeof msg,
			         "written for a global batch of %llu, not a multiple of the "
			         "model's batch %lld",
			         (unsigned long long)meta->batch, (long long)t->m->batch);
			goto bad;
		}
		if (meta->data_samples && at + meta->batch > meta->data_samples)
			epoch_pos = meta->data_samples / gb; /* at the epoch's end */
		else if (at % gb) {
			snprintf(msg, sizeof msg,
			         "stopped %llu samples into its epoch, which is not a whole "
			         "number of this run's global batches of %llu (%d rank%s of "
			         "%lld): resume with the rank count it was written with, or "
			         "from a checkpoint written at the end of an epoch",
			         (unsigned long long)at, (unsigned long long)gb, t->size,
			         t->size > 1 ? "s" : "", (long long)t->m->batch);
			goto bad;
		} else
			epoch_pos = at / gb;
	}
	/* every step counted is an update or a skip, and the epoch's position
	 * lies in its data (a position, not a step count: a run of another
	 * global batch may have resumed it) */
	if (meta->opt_step > meta->step || meta->skipped != meta->step - meta->opt_step ||
	    meta->epoch_pos > (meta->data_samples ? meta->data_samples / meta->batch : 0)) {
		snprintf(msg, sizeof msg,
		         "inconsistent counters: step %llu, %llu updates, %llu skipped, %llu "
		         "batches into the epoch",
		         (unsigned long long)meta->step, (unsigned long long)meta->opt_step,
		         (unsigned long long)meta->skipped, (unsigned long long)meta->epoch_pos);
		goto bad;
	}
	if (!(meta->loss_scale >= RT_TRAIN_MIN_LOSS_SCALE &&
	      meta->loss_scale <= RT_TRAIN_MAX_LOSS_SCALE)) {
		snprintf(msg, sizeof msg, "the loss scale %g is outside [2^-24, 3e38]",
		         meta->loss_scale);
		goto bad;
	}
	if ((rc = ensure_moments(t, kind))) {
		free(buf);
		return rc;
	}
	copy_tensors(t->params, ck.num_params, ck.params);
	copy_tensors(t->state, ck.num_state, ck.state);
	if (ck.mom1)
		for (int i = 0; i < ck.num_params; i++)
			memcpy(t->mom1[i], ck.mom1[i], (size_t)ck.params[i].elems * sizeof(float));
	if (ck.mom2)
		for (int i = 0; i < ck.num_params; i++)
			memcpy(t->mom2[i], ck.mom2[i], (size_t)ck.params[i].elems * sizeof(float));
	t->cfg = meta->cfg;
	t->st = *meta;
	t->st.epoch_pos = epoch_pos;
	t->st.batch = gb;
	t->perm_valid = 0;
	free(buf);
	return RT_TRAIN_OK;
bad:
	free(buf);
	return rt_train_fail(t, RT_TRAIN_ERR_CHECKPOINT, "%s: %s", path, msg);
}

/* ------------------------------------------------------------------------ */
/* Data parallelism                                                         */
/* ------------------------------------------------------------------------ */

/* The step's output hook where the communicator reduces device memory:
 * the same sums as rt_train_step's on the host (the loss and the gradients
 * summed, the new state rank 0's), on the run's stream, one group. */
static int reduce_outputs(void *ctx, void *const out[], const size_t bytes[], int n, void *stream)
{
	struct rt_trainer *t = ctx;
	const struct rt_train_comm *c = t->comm;
	int sums = 1 + t->m->num_params, bad;
	if (!stream || n != sums + t->m->num_state) { /* not device memory, or not the step */
		t->hook_failed = 1;
		return RT_TRAIN_ERR_COMM;
	}
	bad = c->dev_group(c->ctx, 0);
	for (int i = 0; i < n && !bad; i++)
		bad = i < sums ? c->dev_sum_f32(c->ctx, out[i], (int64_t)(bytes[i] / sizeof(float)),
		                                stream)
		               : c->dev_bcast_f32(c->ctx, out[i],
		                                  (int64_t)(bytes[i] / sizeof(float)), 0, stream);
	bad |= c->dev_group(c->ctx, 1);
	t->hook_failed = bad != 0;
	return bad ? RT_TRAIN_ERR_COMM : 0;
}

int rt_train_set_comm(struct rt_trainer *t, const struct rt_train_comm *c)
{
	const struct rt_train_model *m = t->m;
	if (!c || c->size == 1) {
		if (t->dev_reduce)
			m->step_set_output_hook(t->step, NULL, NULL);
		t->comm = NULL;
		t->rank = 0;
		t->size = 1;
		t->dev_reduce = 0;
		return RT_TRAIN_OK;
	}
	if (c->size < 1 || c->rank < 0 || c->rank >= c->size || !c->sum_f32 || !c->min_max_u64 ||
	    !c->name)
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT,
		                     "communicator: rank %d of %d, or a missing function", c->rank,
		                     c->size);
	if (t->st.step)
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT, "communicator: set after %llu steps",
		                     (unsigned long long)t->st.step);
	int dev = c->dev_sum_f32 && c->dev_bcast_f32 && c->dev_group;
	if (dev && !m->step_set_output_hook)
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT,
		                     "communicator: %s reduces device memory, and the step model "
		                     "has no output hook",
		                     c->name);
	if (dev && m->step_set_output_hook(t->step, reduce_outputs, t))
		return rt_train_fail(t, RT_TRAIN_ERR_MODEL, "cannot set the step's output hook");
	t->comm = c;
	t->rank = c->rank;
	t->size = c->size;
	t->perm_valid = 0;
	t->dev_reduce = dev;
	return RT_TRAIN_OK;
}

int rt_train_agree(struct rt_trainer *t, const char *what, uint64_t v)
{
	uint64_t lo, hi;
	if (t->size == 1)
		return RT_TRAIN_OK;
	if (t->comm->min_max_u64(t->comm->ctx, v, &lo, &hi))
		return rt_train_fail(t, RT_TRAIN_ERR_COMM, "comparing %s over %s failed", what,
		                     t->comm->name);
	if (lo != hi)
		return rt_train_fail(t, RT_TRAIN_ERR_COMM,
		                     "%s differs between the %d ranks (this rank's: %#llx)", what,
		                     t->size, (unsigned long long)v);
	return RT_TRAIN_OK;
}

static uint64_t hash_f32s(uint64_t h, float *const *a, int n, const struct rt_train_tensor *ts)
{
	for (int i = 0; a && i < n; i++)
		h = rt_train_fnv1a(h, a[i], (size_t)ts[i].elems * sizeof(float));
	return h;
}

uint64_t rt_train_hash(const struct rt_trainer *t)
{
	const struct rt_train_model *m = t->m;
	const struct rt_train_ckpt_meta *s = &t->st;
	uint64_t c[11] = { s->step,      s->opt_step,   s->skipped, s->epoch,
		           s->epoch_pos, s->good_steps, s->rng[0],  s->rng[1],
		           s->rng[2],    s->rng[3],     0 };
	memcpy(&c[10], &s->loss_scale, sizeof c[10]);
	uint64_t h = rt_train_fnv1a(RT_TRAIN_FNV_OFFSET, c, sizeof c);
	h = hash_f32s(h, t->params, m->num_params, m->params);
	h = hash_f32s(h, t->state, m->num_state, m->state);
	h = hash_f32s(h, t->mom1, m->num_params, m->params);
	return hash_f32s(h, t->mom2, m->num_params, m->params);
}
