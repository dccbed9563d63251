/*
 * make_ckpt.c - writes seed checkpoints for fuzz_ckpt with
 * rt_train_ckpt_write: one without optimizer state, one with momentum, one
 * with AdamW moments and state tensors.
 *
 * usage: make_ckpt DIR
 */
#include "onnxc_train.h"
#include <stdio.h>

int main(int argc, char **argv)
{
	static const int64_t dw[2] = { 2, 3 }, db[1] = { 3 }, ds[1] = { 2 };
	static const float w[6] = { 1, -2, 3.5f, 0, 1e-3f, -7 }, b[3] = { 0.5f, 0, -1 };
	static const float s[2] = { 4, 5 }, m1w[6] = { 0 }, m1b[3] = { 1, 1, 1 };
	static const float m2w[6] = { 1, 2, 3, 4, 5, 6 }, m2b[3] = { 0 };
	const struct rt_train_ckpt_tensor params[2] = {
		{ .name = "w", .rank = 2, .dims = dw, .elems = 6, .data = w },
		{ .name = "b", .rank = 1, .dims = db, .elems = 3, .data = b },
	};
	const struct rt_train_ckpt_tensor state[1] = {
		{ .name = "running_mean", .rank = 1, .dims = ds, .elems = 2, .data = s },
	};
	const float *const mom1[2] = { m1w, m1b }, *const mom2[2] = { m2w, m2b };
	char path[4096], err[512];
	int rc = 0;
	if (argc != 2) {
		fprintf(stderr, "usage: make_ckpt DIR\n");
		return 2;
	}
	for (int k = 0; k < 3; k++) {
		struct rt_train_ckpt ck = { .model_id = 0x1234567890abcdefull + (uint64_t)k,
			                    .num_params = 2,
			                    .params = params };
		ck.meta.cfg.lr = 0.01;
		ck.meta.cfg.momentum = 0.9;
		ck.meta.cfg.beta1 = 0.9;
		ck.meta.cfg.beta2 = 0.999;
		ck.meta.cfg.eps = 1e-8;
		ck.meta.cfg.init_scale = 65536;
		ck.meta.cfg.growth = 2;
		ck.meta.cfg.backoff = 0.5;
		ck.meta.cfg.growth_interval = 2000;
		ck.meta.step = (uint64_t)k * 10;
		ck.meta.loss_scale = 65536;
		ck.meta.batch = 4;
		if (k == 1) {
			ck.meta.cfg.optimizer = RT_TRAIN_MOMENTUM;
			ck.mom1 = mom1;
		} else if (k == 2) {
			ck.meta.cfg.optimizer = RT_TRAIN_ADAMW;
			ck.mom1 = mom1;
			ck.mom2 = mom2;
			ck.num_state = 1;
			ck.state = state;
		} else {
			ck.meta.cfg.optimizer = RT_TRAIN_OPT_NONE;
		}
		snprintf(path, sizeof path, "%s/seed%d.ckpt", argv[1], k);
		if (rt_train_ckpt_write(path, &ck, err, sizeof err) != RT_TRAIN_OK) {
			fprintf(stderr, "make_ckpt: %s\n", err);
			rc = 1;
		}
	}
	return rc;
}
