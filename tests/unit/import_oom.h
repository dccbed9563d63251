/*
 * import_oom.h - fe_import under allocation failure, for the unit tests
 * that link the frontend: failing allocation k = 1, 2, ... in turn, every
 * failed import reports "out of memory", leaves nothing allocated and no
 * file open; the first k that fails nothing imports a module that
 * verifies.
 */
#ifndef ONNXC_IMPORT_OOM_H
#define ONNXC_IMPORT_OOM_H

#include "frontend/fe.h"
#include "testutil.h"

#include <dirent.h>

static inline int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* The k at which the import went through (> 10: it allocates), or -1. */
static inline long oom_import_loop_with(const char *path, const struct fe_options *opt)
{
	int fds = open_fds();
	for (long k = 1; k < 1000000; k++) {
		struct diag_buf d;
		struct ir_ctx ctx;
		struct fail_alloc fa;
		struct ir_module *m;
		ctx_collect(&ctx, &d);
		ctx_fail_alloc(&ctx, &fa, k);
		m = fe_import(&ctx, path, opt);
		if (m && !fa.failed) {
			fa.fail_at = 0; /* the import is done: stop failing */
			CHECK_EQ(ir_verify(m), 0);
			ir_module_free(m);
			CHECK_EQ(fa.live, 0);
			CHECK(k > 10);
			return k;
		}
		CHECK(m == NULL);
		CHECK(fa.failed);
		CHECK_STR(d.text, "out of memory");
		CHECK_EQ(fa.live, 0);
		CHECK_EQ(open_fds(), fds);
		if (test_failures)
			break;
	}
	CHECK(!"the import never went through");
	return -1;
}

static inline long oom_import_loop(const char *path) { return oom_import_loop_with(path, NULL); }

#endif
