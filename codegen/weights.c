/*
 * weights.c - the weights file.
 *
 * Layout (docs/runtime.md): a 64-byte header - magic "ONNXCWT1", format
 * version 1, the model id, the data size (little-endian u64s), zeros - then
 * the data, each constant at the 64-byte-aligned offset the memory plan gave
 * it. The runtime maps the file read-only and checks the header, so a
 * truncated file or one written for another model is refused.
 */
#include "plan.h"

#include <string.h>

/* The weights image: header and data, in memory. */
unsigned char *cg_weights_image(const struct cg_plan *p, size_t *size)
{
	struct ir_module *m = p->m;
	size_t n = RT_WEIGHTS_HEADER + (size_t)p->weight_bytes;
	unsigned char *img = ir_arena_alloc_big(&m->arena, n ? n : 1);
	uint64_t hdr[4] = { 0, 1, p->model_id, (uint64_t)p->weight_bytes };
	memset(img, 0, n);
	memcpy(img, RT_WEIGHTS_MAGIC, 8);
	memcpy(img + 8, &hdr[1], 24);
	for (int i = 0; i < m->nvalues; i++) {
		const struct ir_value *v = m->values[i];
		const struct cg_val *cv = &p->vals[i];
		if (cv->buf.where != CG_WEIGHT)
			continue;
		if (!v->data) {
			ir_error(m->ctx,
			         "constant '%s' has no data (IR text names weights by "
			         "checksum only; compile the ONNX model instead)",
			         v->name);
			return NULL;
		}
		memcpy(img + RT_WEIGHTS_HEADER + cv->buf.offset, v->data,
		       (size_t)(ir_type_elems(&v->type) * ir_dtype_size(v->type.dtype)));
	}
	*size = n;
	return img;
}

bool cg_write_weights(const struct cg_plan *p, const char *path)
{
	size_t n;
	unsigned char *img = cg_weights_image(p, &n);
	FILE *f;
	bool ok;
	if (!img)
		return false;
	if (!(f = fopen(path, "wb"))) {
		ir_error(p->m->ctx, "cannot write %s", path);
		return false;
	}
	ok = fwrite(img, 1, n, f) == n;
	ok &= fclose(f) == 0;
	if (!ok)
		ir_error(p->m->ctx, "writing %s failed", path);
	ir_arena_release(&p->m->arena, img);
	return ok;
}

/* FNV-1a over the weights and the plan: changes whenever either does. */
void cg_model_id(struct cg_plan *p)
{
	uint64_t h = 0xcbf29ce484222325ull;
	struct ir_module *m = p->m;
#define MIX(ptr, len)                                           \
	do {                                                    \
		const unsigned char *q_ = (const void *)(ptr);  \
		for (size_t i_ = 0; i_ < (size_t)(len); i_++) { \
			h ^= q_[i_];                            \
			h *= 0x100000001b3ull;                  \
		}                                               \
	} while (0)
	MIX(&p->arena_bytes, sizeof p->arena_bytes);
	MIX(&p->weight_bytes, sizeof p->weight_bytes);
	for (int i = 0; i < m->nvalues; i++)
		if (p->vals[i].buf.where == CG_WEIGHT) {
			MIX(&m->values[i]->checksum, 8);
			MIX(&p->vals[i].buf.offset, 8);
		}
	for (int s = 0; s < p->nsteps; s++) {
		MIX(&p->steps[s].lib, sizeof p->steps[s].lib);
		MIX(&p->steps[s].d, sizeof p->steps[s].d);
	}
#undef MIX
	p->model_id = h;
}
