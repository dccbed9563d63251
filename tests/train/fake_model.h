/*
 * fake_model.h - a hand-written training step implementing the contract of
 * onnxc_train.h, for the training runtime's tests: softmax regression
 *
 *   logits = x @ W + b        x: [B, 4] ("input/x:0"), W: [4, 3], b: [3]
 *   loss   = mean over the batch of cross-entropy(logits, label)  (label: int64 [B])
 *
 * with analytic gradients multiplied by loss_scale, and one state tensor,
 * a running mean of x (0.9 rm + 0.1 mean(x)), as BatchNorm keeps. The
 * forward and backward run in double. FAKE_INJECT_* variants put an inf
 * into dW on chosen calls, to drive loss scaling. The eval model returns the
 * loss and the logits. The step has an output hook (NAME_set_output_hook),
 * called as the CUDA target calls it: with a stream (here a dummy, non-NULL).
 */
#ifndef FAKE_MODEL_H
#define FAKE_MODEL_H

#include "onnxc_train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_B 8
#define FAKE_D 4
#define FAKE_C 3

struct fake_inst {
	int calls;
	int inject; /* 1: inf on the calls in fake_inject_calls */
	rt_train_output_hook_fn hook;
	void *hook_ctx;
};

static int fake_set_output_hook(void *inst, rt_train_output_hook_fn fn, void *ctx)
{
	struct fake_inst *f = inst;
	f->hook = fn;
	f->hook_ctx = ctx;
	return 0;
}

static const int fake_inject_calls[] = { 2, 3, 7 };

static int fake_create(void **inst, const char *weights)
{
	struct fake_inst *f = calloc(1, sizeof *f);
	if (!f)
		return 2;
	if (weights && !strcmp(weights, "fail")) {
		free(f);
		return 3;
	}
	f->inject = weights && !strcmp(weights, "inject");
	*inst = f;
	return 0;
}

static void fake_destroy(void *inst) { free(inst); }
static const char *fake_strerror(int s) { return s == 3 ? "cannot open the weights" : "error"; }

/* Forward (and backward when grads): returns the loss. A label outside
 * [0, FAKE_C) is ignored, as PyTorch's ignore_index: the sample adds
 * nothing and the mean is over the others (the trainer lets through only
 * the value a range declares ignored). */
static double fake_forward(const float *x, const int64_t *label, const float *w, const float *b,
                           float *logits_out, double scale, float *dw, float *db)
{
	double loss = 0, gw[FAKE_D * FAKE_C] = { 0 }, gb[FAKE_C] = { 0 };
	int counted = 0;
	for (int n = 0; n < FAKE_B; n++)
		counted += label[n] >= 0 && label[n] < FAKE_C;
	for (int n = 0; n < FAKE_B; n++) {
		double z[FAKE_C], mx = -INFINITY, sum = 0;
		for (int c = 0; c < FAKE_C; c++) {
			z[c] = b[c];
			for (int d = 0; d < FAKE_D; d++)
				z[c] += (double)x[n * FAKE_D + d] * w[d * FAKE_C + c];
			if (logits_out)
				logits_out[n * FAKE_C + c] = (float)z[c];
			mx = z[c] > mx ? z[c] : mx;
		}
		for (int c = 0; c < FAKE_C; c++)
			sum += exp(z[c] - mx);
		int64_t y = label[n];
		if (y < 0 || y >= FAKE_C)
			continue;
		loss += -(z[y] - mx - log(sum)) / counted;
		for (int c = 0; c < FAKE_C; c++) {
			double g = (exp(z[c] - mx) / sum - (c == y)) / counted;
			gb[c] += g;
			for (int d = 0; d < FAKE_D; d++)
				gw[d * FAKE_C + c] += (double)x[n * FAKE_D + d] * g;
		}
	}
	if (dw) {
		for (int i = 0; i < FAKE_D * FAKE_C; i++)
			dw[i] = (float)(gw[i] * scale);
		for (int c = 0; c < FAKE_C; c++)
			db[c] = (float)(gb[c] * scale);
	}
	return loss;
}

/* inputs: W, b, running_mean, x, label, loss_scale;
 * outputs: loss, dW, db, new running_mean */
static int fake_run(void *inst, const void *const in[], void *const out[])
{
	struct fake_inst *f = inst;
	const float *w = in[0], *b = in[1], *rm = in[2], *x = in[3];
	const int64_t *label = in[4];
	float scale = *(const float *)in[5];
	float *dw = out[1], *db = out[2], *nrm = out[3];
	f->calls++;
	*(float *)out[0] = (float)fake_forward(x, label, w, b, NULL, scale, dw, db);
	for (int d = 0; d < FAKE_D; d++) {
		double mean = 0;
		for (int n = 0; n < FAKE_B; n++)
			mean += x[n * FAKE_D + d];
		nrm[d] = (float)(0.9 * rm[d] + 0.1 * mean / FAKE_B);
	}
	for (size_t i = 0; f->inject && i < sizeof fake_inject_calls / sizeof(int); i++)
		if (f->calls == fake_inject_calls[i])
			dw[5] = INFINITY;
	if (f->hook) {
		static const size_t bytes[] = { sizeof(float), FAKE_D * FAKE_C * sizeof(float),
			                        FAKE_C * sizeof(float), FAKE_D * sizeof(float) };
		return f->hook(f->hook_ctx, out, bytes, 4, &f->calls);
	}
	return 0;
}

/* eval: inputs W, b, running_mean, x, label; outputs loss, logits */
static int fake_eval_run(void *inst, const void *const in[], void *const out[])
{
	*(float *)out[0] = (float)fake_forward(in[3], in[4], in[0], in[1], out[1], 1, NULL, NULL);
	return 0;
}

static const int64_t fake_w_dims[] = { FAKE_D, FAKE_C }, fake_b_dims[] = { FAKE_C },
                     fake_rm_dims[] = { FAKE_D }, fake_x_dims[] = { FAKE_D },
                     fake_logit_dims[] = { FAKE_B, FAKE_C };
static const struct rt_train_tensor fake_params[] = {
	{ "W", 1, 2, fake_w_dims, FAKE_D *FAKE_C },
	{ "b", 1, 1, fake_b_dims, FAKE_C },
};
static const struct rt_train_tensor fake_state[] = {
	{ "running_mean", 1, 1, fake_rm_dims, FAKE_D },
};
static const struct rt_train_tensor fake_data[] = {
	{ "input/x:0", 1, 1, fake_x_dims, FAKE_D },
	{ "label", 7, 0, NULL, 1 },
};
static const struct rt_train_tensor fake_eval_outputs[] = {
	{ "logits", 1, 2, fake_logit_dims, FAKE_B *FAKE_C },
};
/* the label: a class in [0, FAKE_C), as onnxc train describes cross-entropy's */
static const struct rt_train_range fake_ranges[] = {
	{ 1, 0, FAKE_C, 0, 0, "class label" },
};

static const struct rt_train_model fake_train_model = {
	.name = "fake",
	.model_id = 0x1234abcd5678ef00ull,
	.step_create = fake_create,
	.step_run = fake_run,
	.step_destroy = fake_destroy,
	.step_strerror = fake_strerror,
	.step_set_output_hook = fake_set_output_hook,
	.eval_create = fake_create,
	.eval_run = fake_eval_run,
	.eval_destroy = fake_destroy,
	.eval_strerror = fake_strerror,
	.num_params = 2,
	.params = fake_params,
	.num_state = 1,
	.state = fake_state,
	.num_data = 2,
	.data = fake_data,
	.batch = FAKE_B,
	.num_eval_outputs = 1,
	.eval_outputs = fake_eval_outputs,
	.num_ranges = 1,
	.ranges = fake_ranges,
	.defaults = { .optimizer = RT_TRAIN_MOMENTUM,
	              .lr = 0.1,
	              .momentum = 0.9,
	              .beta1 = 0.9,
	              .beta2 = 0.999,
	              .eps = 1e-8,
	              .loss_scaling = 1,
	              .init_scale = 65536,
	              .growth = 2,
	              .backoff = 0.5,
	              .growth_interval = 2000,
	              .seed = 1 },
};

#endif
