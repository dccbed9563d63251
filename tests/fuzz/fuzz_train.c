/*
 * fuzz_train.c - libFuzzer target: the front half of `onnxc train` on
 * arbitrary bytes as model.onnx: the import in training mode
 * (training-mode BatchNormalization and Dropout, nothing folded through a
 * weight), then train_build - the loss, batch statistics, Dropout's seed
 * and the backward graph of whatever the model computes - for the training
 * step and, on a second import, the eval step. A model is either refused
 * with diagnostics or gives a step that verifies; an autodiff rule that
 * panics, or a step the verifier rejects, is a bug.
 *
 * The loss follows the input's length (odd: MSE, even: cross-entropy), so
 * both are reached without spending input bytes. Constants are capped at
 * 64 MiB as in fuzz_onnx.c, and the compile at 1 GiB of allocations: past
 * it ir_malloc unwinds to an "out of memory" diagnostic (where `onnxc
 * train` reports it and exits 1) rather than the fuzzer's memory limit
 * killing the run.
 */
#include "frontend/fe.h"
#include "fuzz.h"
#include "passes/train.h"

#include <setjmp.h>
#include <stdlib.h>

struct budget {
	size_t used, limit;
};

/* ir_alloc_fn with a running total (each block carries its size). */
static void *budget_alloc(void *ud, void *ptr, size_t nsize)
{
	struct budget *b = ud;
	size_t *h = ptr ? (size_t *)ptr - 2 : NULL, old = h ? h[0] : 0;
	if (nsize == 0) {
		b->used -= old;
		free(h);
		return NULL;
	}
	if (nsize > b->limit || b->used - old + nsize > b->limit)
		return NULL;
	if (!(h = realloc(h, nsize + 2 * sizeof *h)))
		return NULL;
	b->used = b->used - old + nsize;
	h[0] = nsize;
	return h + 2;
}

static void build(const char *path, bool eval, size_t size)
{
	struct ir_ctx ctx;
	struct budget b = { 0, (size_t)1 << 30 };
	struct fe_options opt = { .training = true, .max_const_bytes = (int64_t)64 << 20 };
	struct ir_arena a;
	struct fe_train_info info;
	struct train_step s;
	struct ir_module *volatile m = NULL;
	jmp_buf jb;
	ir_ctx_init(&ctx);
	ctx.diag = fuzz_quiet;
	ctx.alloc = budget_alloc;
	ctx.alloc_ud = &b;
	ir_arena_init(&a, &ctx);
	if (!fe_train_info(&ctx, &a, path, &info) || !(m = fe_import(&ctx, path, &opt)))
		goto out;
	ctx.oom = &jb;
	if (!setjmp(jb)) {
		struct train_options to = {
			.loss = size & 1 ? TRAIN_LOSS_MSE : TRAIN_LOSS_CROSS_ENTROPY,
			.initializers = info.initializers,
			.ninitializers = info.ninitializers,
			.bn_momentum = 0.1f,
			.eval = eval,
		};
		if (train_build(m, &to, &s) && ir_verify(m) != 0)
			__builtin_trap(); /* a step that builds is well formed */
	}
	ctx.oom = NULL;
out:
	if (m)
		ir_module_free(m);
	ir_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[256];
	if (!fuzz_write_file(path, sizeof path, "model.onnx", data, size))
		return 0;
	build(path, false, size);
	build(path, true, size);
	return 0;
}
