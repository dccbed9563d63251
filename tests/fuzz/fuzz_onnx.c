/*
 * fuzz_onnx.c - libFuzzer target: the ONNX loader and importer (fe_import)
 * on arbitrary bytes as model.onnx. Constants are capped at 64 MiB so a
 * model that asks for more is refused (as onnxc refuses one above
 * --max-memory) rather than exhausting the fuzzer's memory.
 */
#include "frontend/fe.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[256];
	struct ir_ctx ctx;
	struct fe_options opt = { .max_const_bytes = (int64_t)64 << 20 };
	struct ir_module *m;
	if (!fuzz_write_file(path, sizeof path, "model.onnx", data, size))
		return 0;
	ir_ctx_init(&ctx);
	ctx.diag = fuzz_quiet;
	m = fe_import(&ctx, path, &opt);
	if (m) {
		if (ir_verify(m) != 0)
			__builtin_trap(); /* an import that succeeds is well formed */
		ir_module_free(m);
	}
	return 0;
}
