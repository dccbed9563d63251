/*
 * fuzz_tensor.c - libFuzzer target: the tensor file readers (fe_load_tensor)
 * for .npy and ONNX TensorProto .pb. The first byte picks the file name's
 * extension; the rest is the file.
 */
#include "frontend/fe.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[256];
	struct ir_ctx ctx;
	struct ir_module *m;
	if (size < 1)
		return 0;
	if (!fuzz_write_file(path, sizeof path, data[0] & 1 ? "t.npy" : "t.pb", data + 1, size - 1))
		return 0;
	ir_ctx_init(&ctx);
	ctx.diag = fuzz_quiet;
	m = ir_module_new(&ctx, "fuzz");
	fe_load_tensor(&ctx, m, path, "t");
	ir_module_free(m);
	return 0;
}
