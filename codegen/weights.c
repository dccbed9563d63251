/*
 * weights.c - the weights file.
 *
 * Layout (docs/api.md#the-weights-file): a 64-byte header - magic "ONNXCWT1", format
 * version 1, the model id, the data size (little-endian u64s), zeros - then
 * the data, each constant at the 64-byte-aligned offset the memory plan gave
 * it, zeros between. The runtime maps the file read-only and checks the
 * header, so a truncated file or one written for another model is refused.
 */
#include "plan.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The header, little-endian. */
static void weights_header(const struct cg_plan *p, unsigned char h[RT_WEIGHTS_HEADER])
{
	uint64_t w[3] = { 1, p->model_id, (uint64_t)p->weight_bytes };
	memset(h, 0, RT_WEIGHTS_HEADER);
	memcpy(h, RT_WEIGHTS_MAGIC, 8);
	memcpy(h + 8, w, sizeof w);
}

/* Value i's bytes if it is a weight (*n of them), else NULL; NULL with *n = 1
 * after reporting a weight without data. */
static const void *weight_data(const struct cg_plan *p, int i, size_t *n)
{
	const struct ir_value *v = p->m->values[i];
	*n = 0;
	if (p->vals[i].buf.where != CG_WEIGHT)
		return NULL;
	if (!v->data) {
		ir_error(p->m->ctx,
		         "constant '%s' has no data (IR text names weights by checksum only; "
		         "compile the ONNX model instead)",
		         v->name);
		*n = 1;
		return NULL;
	}
	*n = (size_t)(ir_type_elems(&v->type) * ir_dtype_size(v->type.dtype));
	return v->data;
}

/* The weights image: header and data, in memory (for --embed-weights). */
unsigned char *cg_weights_image(const struct cg_plan *p, size_t *size)
{
	struct ir_module *m = p->m;
	size_t n = RT_WEIGHTS_HEADER + (size_t)p->weight_bytes;
	unsigned char *img = ir_arena_alloc_big(&m->arena, n ? n : 1);
	memset(img, 0, n);
	weights_header(p, img);
	for (int i = 0; i < m->nvalues; i++) {
		size_t bytes;
		const void *d = weight_data(p, i, &bytes);
		if (!d && bytes) {
			ir_arena_release(&m->arena, img);
			return NULL;
		}
		if (d)
			memcpy(img + RT_WEIGHTS_HEADER + p->vals[i].buf.offset, d, bytes);
	}
	*size = n;
	return img;
}

/*
 * The weights file, written from the constants where they are: each at its
 * offset, the gaps left as holes (they read as zeros), so writing costs no
 * second copy of the weights in memory.
 */
bool cg_write_weights(const struct cg_plan *p, const char *path)
{
	unsigned char hdr[RT_WEIGHTS_HEADER];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	bool ok;
	if (fd < 0) {
		ir_error(p->m->ctx, "cannot write %s: %s", path, strerror(errno));
		return false;
	}
	weights_header(p, hdr);
	ok = ftruncate(fd, (off_t)(RT_WEIGHTS_HEADER + p->weight_bytes)) == 0 &&
	     pwrite(fd, hdr, sizeof hdr, 0) == (ssize_t)sizeof hdr;
	for (int i = 0; ok && i < p->m->nvalues; i++) {
		size_t bytes, done = 0;
		const unsigned char *d = weight_data(p, i, &bytes);
		if (!d && bytes) {
			close(fd);
			return false;
		}
		while (d && done < bytes) {
			ssize_t w =
			        pwrite(fd, d + done, bytes - done,
			               (off_t)(RT_WEIGHTS_HEADER + p->vals[i].buf.offset + done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				ok = false;
				break;
			}
			done += (size_t)w;
		}
	}
	ok &= close(fd) == 0;
	if (!ok)
		ir_error(p->m->ctx, "writing %s failed", path);
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
