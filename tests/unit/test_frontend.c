/*
 * test_frontend.c - importer tests that need no Python at run time beyond
 * the small-model fixture: every allocation failure during an import unwinds
 * cleanly with a diagnostic and leaks nothing (memory or files).
 *
 * usage: test_frontend SMALL_MODEL_DIR
 */
#include "frontend/fe.h"
#include "import_oom.h"
#include "testutil.h"

#include <unistd.h>

static const char *dir;

static void oom_loop(const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	oom_import_loop(path);
}

static void test_import_oom_external(void) { oom_loop("external.onnx"); }
static void test_import_oom_folding(void) { oom_loop("fold_generators.onnx"); }
static void test_import_oom_unsorted(void) { oom_loop("unsorted.onnx"); }

/* --const tensor files (.npy and .pb) read during the import: their bytes
 * and the unpacked TensorProto are not the module's, and an allocation
 * that unwinds must free them too (LeakSanitizer checks the TensorProto,
 * which protobuf-c allocates with malloc). */
static void test_import_oom_const_files(void)
{
	char path[4096], npy[64], pb[64];
	const float x[24] = { 1, 2, 3 };
	const struct ir_type t = { .dtype = IR_F32, .rank = 3, .dims = { 2, 3, 4 } };
	int64_t dims[3] = { 2, 3, 4 };
	Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
	uint8_t *bytes;
	size_t n;
	FILE *f;
	snprintf(npy, sizeof npy, "/tmp/onnxc-oom-const-%ld.npy", (long)getpid());
	snprintf(pb, sizeof pb, "/tmp/onnxc-oom-const-%ld.pb", (long)getpid());
	CHECK(fe_save_npy(npy, &t, x));
	tp.n_dims = 3;
	tp.dims = dims;
	tp.has_data_type = true;
	tp.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	tp.has_raw_data = true;
	tp.raw_data.len = sizeof x;
	tp.raw_data.data = (uint8_t *)x;
	n = onnx__tensor_proto__get_packed_size(&tp);
	bytes = malloc(n);
	onnx__tensor_proto__pack(&tp, bytes);
	CHECK((f = fopen(pb, "wb")) != NULL);
	CHECK(f && fwrite(bytes, 1, n, f) == n && fclose(f) == 0);
	free(bytes);
	snprintf(path, sizeof path, "%s/shape_chain.onnx", dir);
	for (int i = 0; i < 2; i++) {
		struct fe_const_input c = { .name = "x", .path = i ? pb : npy };
		struct fe_options opt = { .consts = &c, .nconsts = 1 };
		oom_import_loop_with(path, &opt);
	}
	unlink(npy);
	unlink(pb);
}

static void test_import_missing(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	char path[4096];
	snprintf(path, sizeof path, "%s/no-such-model.onnx", dir);
	ctx_collect(&ctx, &d);
	CHECK(fe_import(&ctx, path, NULL) == NULL);
	CHECK_STR(d.text, "no-such-model.onnx: error: cannot read the model");
}

static void test_parse_dims(void)
{
	int rank;
	int64_t dims[IR_MAX_RANK];
	CHECK(fe_parse_dims("8x3x224x224", &rank, dims));
	CHECK(rank == 4 && dims[0] == 8 && dims[3] == 224);
	CHECK(fe_parse_dims("2,5", &rank, dims) && rank == 2 && dims[1] == 5);
	CHECK(fe_parse_dims("", &rank, dims) && rank == 0);
	CHECK(!fe_parse_dims("8x", &rank, dims));
	CHECK(!fe_parse_dims("-1", &rank, dims));
	CHECK(!fe_parse_dims("1x2x3x4x5x6x7x8x9", &rank, dims));
	CHECK(!fe_parse_dims("99999999999999999999", &rank, dims));
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		T(test_import_oom_external) T(test_import_oom_folding) T(test_import_oom_unsorted)
		        T(test_import_oom_const_files) T(test_import_missing) T(test_parse_dims)
	};
	if (argc < 2) {
		fprintf(stderr, "usage: test_frontend SMALL_MODEL_DIR [TEST]\n");
		return 2;
	}
	dir = argv[1];
	return test_main(cases, (int)(sizeof cases / sizeof cases[0]), argc - 1, argv + 1);
}
