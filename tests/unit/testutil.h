/*
 * testutil.h - helpers shared by the unit tests: a diagnostic sink that
 * collects messages, and an allocator that fails the N-th allocation and
 * counts what is still allocated (for out-of-memory loops and leak checks).
 */
#ifndef ONNXC_TESTUTIL_H
#define ONNXC_TESTUTIL_H

#include "ir/ir.h"
#include "test.h"

struct diag_buf {
	char text[65536];
	size_t len;
};

static inline void diag_collect(void *ud, const char *line)
{
	struct diag_buf *d = ud;
	int n = snprintf(d->text + d->len, sizeof d->text - d->len, "%s\n", line);
	if (n > 0 && d->len + (size_t)n < sizeof d->text)
		d->len += (size_t)n;
}

/* A context whose diagnostics go to d. */
static inline void ctx_collect(struct ir_ctx *ctx, struct diag_buf *d)
{
	ir_ctx_init(ctx);
	d->len = 0;
	d->text[0] = 0;
	ctx->diag = diag_collect;
	ctx->diag_ud = d;
}

/*
 * Fails allocation number fail_at (1-based; 0: never) and tracks live blocks
 * with a size header so leaks show as live != 0.
 */
struct fail_alloc {
	long count, fail_at, live;
	bool failed;
};

static inline void *fail_alloc_fn(void *ud, void *ptr, size_t nsize)
{
	struct fail_alloc *fa = ud;
	if (nsize == 0) {
		if (ptr) {
			fa->live--;
			free(ptr);
		}
		return NULL;
	}
	if (++fa->count == fa->fail_at) {
		fa->failed = true;
		return NULL;
	}
	if (!ptr)
		fa->live++;
	return realloc(ptr, nsize);
}

static inline void ctx_fail_alloc(struct ir_ctx *ctx, struct fail_alloc *fa, long fail_at)
{
	memset(fa, 0, sizeof *fa);
	fa->fail_at = fail_at;
	ctx->alloc = fail_alloc_fn;
	ctx->alloc_ud = fa;
}

/* Prints a module to a malloc'd string. */
static inline char *print_to_string(const struct ir_module *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ir_print(m, f);
	fclose(f);
	return buf;
}

#endif
