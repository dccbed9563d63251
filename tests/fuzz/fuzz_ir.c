/*
 * fuzz_ir.c - libFuzzer target: the IR text parser (ir_parse). A module it
 * accepts must verify, and print -> parse -> print must be exact.
 */
#include "fuzz.h"
#include "ir/ir.h"
#include <stdlib.h>
#include <string.h>

static char *print_module(const struct ir_module *m, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	ir_print(m, f);
	fclose(f);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ir_ctx ctx;
	struct ir_module *m, *m2;
	char *a, *b;
	size_t alen = 0, blen = 0;
	ir_ctx_init(&ctx);
	ctx.diag = fuzz_quiet;
	m = ir_parse(&ctx, (const char *)data, size);
	if (!m)
		return 0;
	if (ir_verify(m) != 0)
		__builtin_trap();
	a = print_module(m, &alen);
	ir_module_free(m);
	if (!a)
		return 0;
	m2 = ir_parse(&ctx, a, alen);
	if (!m2)
		__builtin_trap(); /* what the printer writes, the parser reads */
	b = print_module(m2, &blen);
	ir_module_free(m2);
	if (b && (alen != blen || memcmp(a, b, alen) != 0))
		__builtin_trap();
	free(a);
	free(b);
	return 0;
}
