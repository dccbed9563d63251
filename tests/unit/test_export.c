/*
 * test_export.c - fe_export_onnx() without Python: every allocation failure
 * during an export unwinds with a diagnostic, leaks nothing, leaves the
 * module as it was and writes no file; the export that succeeds reads back
 * (fe_import and the import pipeline) to the same IR. (The tests in
 * tests/export/check_export.py check the files themselves.)
 *
 * usage: test_export FILE.oir WORK_DIR
 */
#include "frontend/fe.h"
#include "passes/passes.h"
#include "testutil.h"

#include <unistd.h>

static const char *oir_path, *work;

static struct ir_module *parse_file(struct ir_ctx *ctx, const char *path)
{
	const char *err;
	size_t len;
	char *text = ir_read_file(ctx, path, &len, &err);
	struct ir_module *m;
	if (!text) {
		fprintf(stderr, "cannot read %s: %s\n", path, err);
		return NULL;
	}
	m = ir_parse(ctx, text, len);
	ir_free(ctx, text);
	return m;
}

/* m printed, and m exported to out and imported again, printed. */
static void check_read_back(struct ir_module *m, const char *out)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *back;
	char *a = print_to_string(m), *b;
	ctx_collect(&ctx, &d);
	back = fe_import(&ctx, out, NULL);
	CHECK(back != NULL);
	/* the import pipeline drops the shape operands the import consumed */
	if (back && !pass_pipeline(back, PASS_STAGE_IMPORT, NULL)) {
		ir_module_free(back);
		back = NULL;
	}
	if (!back) {
		fprintf(stderr, "%s", d.text);
		free(a);
		return;
	}
	b = print_to_string(back);
	CHECK(!strcmp(a, b));
	ir_module_free(back);
	free(a);
	free(b);
}

static void test_export_oom(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct fail_alloc fa;
	struct ir_module *m;
	char out[4096], *before;
	long succeeded_at = -1, base;
	snprintf(out, sizeof out, "%s/oom.onnx", work);
	ctx_collect(&ctx, &d);
	ctx_fail_alloc(&ctx, &fa, 0);
	if (!(m = parse_file(&ctx, oir_path))) {
		CHECK(!"the .oir parses");
		return;
	}
	before = print_to_string(m);
	base = fa.live;
	for (long k = 1; k < 1000000; k++) {
		bool ok;
		unlink(out);
		d.len = 0;
		d.text[0] = 0;
		fa.failed = false;
		fa.fail_at = fa.count + k;
		ok = fe_export_onnx(m, out, NULL);
		if (ok && !fa.failed) {
			fa.fail_at = 0;
			succeeded_at = k;
			break;
		}
		CHECK(!ok);
		CHECK(fa.failed);
		CHECK_STR(d.text, "out of memory");
		CHECK_EQ(fa.live, base);
		CHECK(access(out, F_OK) != 0);
		if (test_failures)
			break;
	}
	CHECK(succeeded_at > 2); /* the struct and at least one arena block failed first */
	CHECK_EQ(fa.live, base);
	{
		char *after = print_to_string(m);
		CHECK(!strcmp(before, after)); /* the export does not touch the module */
		free(after);
	}
	check_read_back(m, out);
	free(before);
	ir_module_free(m);
	CHECK_EQ(fa.live, 0);
}

static void test_export_opset_range(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct fe_export_options o = { .opset = 12 };
	char out[4096];
	snprintf(out, sizeof out, "%s/range.onnx", work);
	ctx_collect(&ctx, &d);
	if (!(m = parse_file(&ctx, oir_path))) {
		CHECK(!"the .oir parses");
		return;
	}
	CHECK(!fe_export_onnx(m, out, &o));
	CHECK_STR(d.text, "cannot export to opset 12 (onnxc writes opsets 13 to 25)");
	d.len = 0;
	d.text[0] = 0;
	o.opset = 26;
	CHECK(!fe_export_onnx(m, out, &o));
	CHECK_STR(d.text, "cannot export to opset 26 (onnxc writes opsets 13 to 25)");
	for (int opset = FE_EXPORT_MIN_OPSET; opset <= FE_EXPORT_MAX_OPSET; opset++) {
		o.opset = opset;
		CHECK(fe_export_onnx(m, out, &o));
		check_read_back(m, out);
	}
	ir_module_free(m);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = { T(test_export_oom) T(test_export_opset_range) };
	if (argc < 3) {
		fprintf(stderr, "usage: test_export FILE.oir WORK_DIR [TEST]\n");
		return 2;
	}
	oir_path = argv[1];
	work = argv[2];
	return test_main(cases, (int)(sizeof cases / sizeof cases[0]), argc - 2, argv + 2);
}
