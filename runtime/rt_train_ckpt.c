/*
 * rt_train_ckpt.c - checkpoint files, and the atomic file writer.
 *
 * One binary file holds everything a run needs to continue exactly: the
 * params, the state, the optimizer's moments, the counters, the loss scale,
 * the RNG and the hyper-parameters (docs/training.md#checkpoint-format has
 * the layout). Every section says its size, the header says the file's, and
 * an FNV-1a 64 checksum over the whole file closes it, so truncation and
 * corruption are found before anything is used; the model id refuses a
 * checkpoint of another model. The initial weights `onnxc train` writes
 * (NAME.init) are the same format at step 0.
 *
 * This file needs only libc and onnxc_train.h (plus the inline helpers of
 * rt_train_internal.h), so the compiler can build it in as well.
 *
 * Files are written next to their destination under a temporary name,
 * fsynced, renamed over it and the folder fsynced: a crash leaves the old
 * file or the new one, never half of one.
 */
#include "rt_train_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC        "ONNXCKPT"
#define CKPT_VERSION      1
#define CKPT_HEADER_BYTES 64
#define CKPT_META_BYTES   208
#define OUT_BUF_BYTES     (1 << 16)

/* ------------------------------------------------------------------------ */
/* FNV-1a and the atomic writer                                             */
/* ------------------------------------------------------------------------ */

uint64_t rt_train_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void rt_train_vset_err(char *err, size_t err_size, const char *fmt, va_list ap)
{
	if (!err || !err_size)
		return;
	vsnprintf(err, err_size, fmt, ap);
	/* names and paths in the message never reach the terminal as controls:
	 * C0, DEL and C1 (U+0080..U+009F in UTF-8) become '?' */
	for (unsigned char *p = (unsigned char *)err; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0)
			p[0] = p[1] = '?';
}

void rt_train_set_err(char *err, size_t err_size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rt_train_vset_err(err, err_size, fmt, ap);
	va_end(ap);
}

int rt_train_open_regular(const char *path, int flags, int64_t *size, char *err, size_t err_size)
{
	struct stat st;
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		/* a FIFO without a reader (ENXIO) or a folder opened to write
		 * (EISDIR): say what is there, not the errno */
		if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
			rt_train_set_err(err, err_size, "%s: not a regular file", path);
			return -2;
		}
		rt_train_set_err(err, err_size, "%s: cannot open: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		rt_train_set_err(err, err_size, "%s: not a regular file", path);
		return -2;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
		int e = errno;
		close(fd);
		rt_train_set_err(err, err_size, "%s: cannot open: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if (size)
		*size = (int64_t)st.st_size;
	return fd;
}

FILE *rt_train_fopen_regular(const char *path, int flags, int64_t *size, int *how, char *err,
                             size_t err_size)
{
	int fd = rt_train_open_regular(path, flags, size, err, err_size);
	FILE *f = fd >= 0 ? fdopen(fd, (flags & O_ACCMODE) == O_RDONLY ? "rb" : "ab") : NULL;
	if (fd >= 0 && !f) {
		int e = errno;
		rt_train_set_err(err, err_size, "%s: cannot open: %s", path, strerror(e));
		close(fd);
		errno = e;
		fd = -1;
	}
	if (how)
		*how = f ? 0 : fd;
	return f;
}

static void out_free(struct rt_train_out *o)
{
	free(o->path);
	free(o->tmp);
	free(o->buf);
	o->path = o->tmp = NULL;
	o->buf = NULL;
}

int rt_train_out_open(struct rt_train_out *o, const char *path, char *err, size_t err_size)
{
	memset(o, 0, sizeof *o);
	o->fd = -1;
	o->hash = RT_TRAIN_FNV_OFFSET;
	size_t n = strlen(path);
	o->path = malloc(n + 1);
	o->tmp = malloc(n + 32);
	o->buf = malloc(OUT_BUF_BYTES);
	if (!o->path || !o->tmp || !o->buf) {
		out_free(o);
		rt_train_set_err(err, err_size, "%s: out of memory", path);
		return RT_TRAIN_ERR_NO_MEMORY;
	}
	memcpy(o->path, path, n + 1);
	snprintf(o->tmp, n + 32, "%s.tmp.%ld", path, (long)getpid());
	/* the rename would replace a FIFO or a device (/dev/null) with the file */
	struct stat st;
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		rt_train_set_err(err, err_size, "%s: not a regular file", path);
		out_free(o);
		return RT_TRAIN_ERR_IO;
	}
	char why[600];
	o->fd = rt_train_open_regular(o->tmp, O_WRONLY | O_CREAT | O_TRUNC, NULL, why, sizeof why);
	if (o->fd < 0) {
		rt_train_set_err(err, err_size, "%s: cannot create the temporary file: %s", path,
		                 why);
		out_free(o);
		return RT_TRAIN_ERR_IO;
	}
	return RT_TRAIN_OK;
}

static void out_flush(struct rt_train_out *o)
{
	size_t done = 0;
	while (done < o->used && !o->err_no) {
		ssize_t w = write(o->fd, o->buf + done, o->used - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			o->err_no = w < 0 ? errno : EIO;
		else
			done += (size_t)w;
	}
	o->used = 0;
}

void rt_train_out_write(struct rt_train_out *o, const void *p, size_t n)
{
	const unsigned char *b = p;
	o->hash = rt_train_fnv1a(o->hash, p, n);
	o->bytes += n;
	while (n) {
		size_t k = OUT_BUF_BYTES - o->used;
		if (k > n)
			k = n;
		memcpy(o->buf + o->used, b, k);
		o->used += k;
		b += k;
		n -= k;
		if (o->used == OUT_BUF_BYTES)
			out_flush(o);
	}
}

void rt_train_out_abort(struct rt_train_out *o)
{
	if (o->fd >= 0) {
		close(o->fd);
		unlink(o->tmp);
	}
	o->fd = -1;
	out_free(o);
}

/* fsyncs the folder holding path, so the rename itself is durable. */
static int sync_folder(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	if (!slash) {
		dir = malloc(2);
		if (dir)
			strcpy(dir, ".");
	} else {
		size_t n = slash == path ? 1 : (size_t)(slash - path);
		dir = malloc(n + 1);
		if (dir) {
			memcpy(dir, path, n);
			dir[n] = 0;
		}
	}
	if (!dir)
		return ENOMEM;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return errno;
	int rc = fsync(fd) ? errno : 0;
	close(fd);
	/* some file systems refuse fsync on folders: not an error */
	return rc == EINVAL || rc == EROFS ? 0 : rc;
}

int rt_train_out_commit(struct rt_train_out *o, char *err, size_t err_size)
{
	out_flush(o);
	if (!o->err_no && fsync(o->fd))
		o->err_no = errno;
	if (close(o->fd) && !o->err_no)
		o->err_no = errno;
	o->fd = -1;
	if (o->err_no) {
		rt_train_set_err(err, err_size, "%s: cannot write %s: %s", o->path, o->tmp,
		                 strerror(o->err_no));
		unlink(o->tmp);
		out_free(o);
		return RT_TRAIN_ERR_IO;
	}
	if (rename(o->tmp, o->path)) {
		rt_train_set_err(err, err_size, "%s: cannot rename %s over it: %s", o->path, o->tmp,
		                 strerror(errno));
		unlink(o->tmp);
		out_free(o);
		return RT_TRAIN_ERR_IO;
	}
	int rc = sync_folder(o->path);
	if (rc) {
		rt_train_set_err(err, err_size, "%s: cannot sync its folder: %s", o->path,
		                 strerror(rc));
		out_free(o);
		return RT_TRAIN_ERR_IO;
	}
	out_free(o);
	return RT_TRAIN_OK;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                  */
/* ------------------------------------------------------------------------ */

static const unsigned char zeros[8];

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static uint64_t tensor_bytes(int rank, uint64_t name_len, int64_t elems)
{
	return pad8(16 + 8 * (uint64_t)rank + name_len) + pad8(4 * (uint64_t)elems);
}

/* A tensor section's payload size; a NULL data list means a section of
 * moments (the params' names and shapes). */
static uint64_t section_bytes(int n, const struct rt_train_ckpt_tensor *ts)
{
	uint64_t b = 8;
	for (int i = 0; i < n; i++)
		b += tensor_bytes(ts[i].rank, strlen(ts[i].name), ts[i].elems);
	return b;
}

void rt_train_out_write_f32(struct rt_train_out *o, const float *x, int64_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	rt_train_out_write(o, x, 4 * (size_t)n);
#else
	for (int64_t i = 0; i < n; i++) {
		uint32_t u;
		unsigned char b[4];
		memcpy(&u, &x[i], 4);
		rt_train_put_u32(b, u);
		rt_train_out_write(o, b, 4);
	}
#endif
}

/* A section's floats, padded to 8 bytes. */
static void write_f32s(struct rt_train_out *o, const float *x, int64_t n)
{
	rt_train_out_write_f32(o, x, n);
	if (n & 1)
		rt_train_out_write(o, zeros, 4);
}

static void write_section_header(struct rt_train_out *o, const char *tag, uint64_t bytes)
{
	unsigned char h[16] = { 0 };
	memcpy(h, tag, 4);
	rt_train_put_u64(h + 8, bytes);
	rt_train_out_write(o, h, 16);
}

/* data[i] overrides ts[i].data when data is not NULL (moments). */
static void write_tensors(struct rt_train_out *o, const char *tag, int n,
                          const struct rt_train_ckpt_tensor *ts, const float *const *data)
{
	unsigned char h[16];
	write_section_header(o, tag, section_bytes(n, ts));
	memset(h, 0, 8);
	rt_train_put_u32(h, (uint32_t)n);
	rt_train_out_write(o, h, 8);
	for (int i = 0; i < n; i++) {
		size_t name_len = strlen(ts[i].name);
		rt_train_put_u32(h, (uint32_t)name_len);
		rt_train_put_u32(h + 4, (uint32_t)ts[i].rank);
		rt_train_put_u64(h + 8, (uint64_t)ts[i].elems);
		rt_train_out_write(o, h, 16);
		for (int d = 0; d < ts[i].rank; d++) {
			rt_train_put_u64(h, (uint64_t)ts[i].dims[d]);
			rt_train_out_write(o, h, 8);
		}
		rt_train_out_write(o, ts[i].name, name_len);
		rt_train_out_write(o, zeros, (size_t)(pad8(name_len) - name_len));
		write_f32s(o, data ? data[i] : ts[i].data, ts[i].elems);
	}
}

static void put_f64(unsigned char *p, double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	rt_train_put_u64(p, u);
}

static double get_f64(const unsigned char *p)
{
	uint64_t u = rt_train_get_u64(p);
	double v;
	memcpy(&v, &u, 8);
	return v;
}

static void encode_meta(unsigned char *p, const struct rt_train_ckpt_meta *m)
{
	const uint64_t u[15] = { m->step,
		                 m->opt_step,
		                 m->skipped,
		                 m->epoch,
		                 m->epoch_pos,
		                 m->data_samples,
		                 m->rng[0],
		                 m->rng[1],
		                 m->rng[2],
		                 m->rng[3],
		                 m->good_steps,
		                 m->batch,
		                 (uint64_t)m->cfg.growth_interval,
		                 m->cfg.seed,
		                 m->cfg.shuffle ? 0 : 1 /* flags: bit 0, no shuffling */ };
	const double f[10] = { m->loss_scale, m->cfg.lr,     m->cfg.momentum,     m->cfg.beta1,
		               m->cfg.beta2,  m->cfg.eps,    m->cfg.weight_decay, m->cfg.init_scale,
		               m->cfg.growth, m->cfg.backoff };
	for (int i = 0; i < 15; i++)
		rt_train_put_u64(p + 8 * i, u[i]);
	for (int i = 0; i < 10; i++)
		put_f64(p + 120 + 8 * i, f[i]);
	rt_train_put_u32(p + 200, (uint32_t)m->cfg.optimizer);
	rt_train_put_u32(p + 204, (uint32_t)m->cfg.loss_scaling);
}

static void decode_meta(const unsigned char *p, struct rt_train_ckpt_meta *m)
{
	uint64_t u[15];
	double f[10];
	for (int i = 0; i < 15; i++)
		u[i] = rt_train_get_u64(p + 8 * i);
	for (int i = 0; i < 10; i++)
		f[i] = get_f64(p + 120 + 8 * i);
	m->step = u[0];
	m->opt_step = u[1];
	m->skipped = u[2];
	m->epoch = u[3];
	m->epoch_pos = u[4];
	m->data_samples = u[5];
	memcpy(m->rng, u + 6, sizeof m->rng);
	m->good_steps = u[10];
	m->batch = u[11];
	m->cfg.growth_interval = (int64_t)u[12];
	m->cfg.seed = u[13];
	m->cfg.shuffle = !(u[14] & 1);
	m->loss_scale = f[0];
	m->cfg.lr = f[1];
	m->cfg.momentum = f[2];
	m->cfg.beta1 = f[3];
	m->cfg.beta2 = f[4];
	m->cfg.eps = f[5];
	m->cfg.weight_decay = f[6];
	m->cfg.init_scale = f[7];
	m->cfg.growth = f[8];
	m->cfg.backoff = f[9];
	m->cfg.optimizer = (int)rt_train_get_u32(p + 200);
	m->cfg.loss_scaling = (int)rt_train_get_u32(p + 204);
}

int rt_train_ckpt_write(const char *path, const struct rt_train_ckpt *ck, char *err,
                        size_t err_size)
{
	if (!path || !ck || ck->num_params < 0 || ck->num_state < 0 ||
	    (ck->num_params && !ck->params) || (ck->num_state && !ck->state)) {
		rt_train_set_err(err, err_size, "checkpoint: invalid argument");
		return RT_TRAIN_ERR_ARGUMENT;
	}
	uint32_t sections = 3 + (ck->mom1 != NULL) + (ck->mom2 != NULL);
	uint64_t pbytes = section_bytes(ck->num_params, ck->params);
	uint64_t total = CKPT_HEADER_BYTES + 16 + CKPT_META_BYTES + 16 + pbytes + 16 +
	                 section_bytes(ck->num_state, ck->state) + 8;
	total += (ck->mom1 != NULL) * (16 + pbytes) + (ck->mom2 != NULL) * (16 + pbytes);

	struct rt_train_out o;
	int rc = rt_train_out_open(&o, path, err, err_size);
	if (rc)
		return rc;
	unsigned char h[CKPT_HEADER_BYTES] = { 0 };
	memcpy(h, CKPT_MAGIC, 8);
	rt_train_put_u32(h + 8, CKPT_VERSION);
	rt_train_put_u32(h + 12, CKPT_HEADER_BYTES);
	rt_train_put_u64(h + 16, ck->model_id);
	rt_train_put_u64(h + 24, total);
	rt_train_put_u32(h + 32, sections);
	rt_train_out_write(&o, h, sizeof h);

	unsigned char meta[CKPT_META_BYTES] = { 0 };
	encode_meta(meta, &ck->meta);
	write_section_header(&o, "META", CKPT_META_BYTES);
	rt_train_out_write(&o, meta, sizeof meta);
	write_tensors(&o, "PARM", ck->num_params, ck->params, NULL);
	write_tensors(&o, "STAT", ck->num_state, ck->state, NULL);
	if (ck->mom1)
		write_tensors(&o, "MOM1", ck->num_params, ck->params, ck->mom1);
	if (ck->mom2)
		write_tensors(&o, "MOM2", ck->num_params, ck->params, ck->mom2);
	unsigned char sum[8];
	rt_train_put_u64(sum, o.hash);
	rt_train_out_write(&o, sum, 8);
	if (o.bytes != total) { /* a bug here, not the caller's */
		rt_train_set_err(err, err_size,
		                 "%s: internal error: wrote %llu bytes, planned %llu", path,
		                 (unsigned long long)o.bytes, (unsigned long long)total);
		rt_train_out_abort(&o);
		return RT_TRAIN_ERR_IO;
	}
	return rt_train_out_commit(&o, err, err_size);
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                  */
/* ------------------------------------------------------------------------ */

struct parsed_section {
	const unsigned char *p; /* payload */
	uint64_t bytes;
	int present;
};

/* Walks a tensor section: checks every size against the payload and, with
 * out, fills tensors (names and dims into aux). Returns the count or -1. */
static int walk_tensors(const char *path, const char *tag, const struct parsed_section *s,
                        struct rt_train_ckpt_tensor *out, char **aux, uint64_t *aux_bytes,
                        char *err, size_t err_size)
{
	const unsigned char *p = s->p, *end = s->p + s->bytes;
	if (s->bytes < 8) {
		rt_train_set_err(err, err_size, "%s: corrupt checkpoint: section %s is too short",
		                 path, tag);
		return -1;
	}
	uint32_t n = rt_train_get_u32(p);
	p += 8;
	if (n > s->bytes / 16) {
		rt_train_set_err(err, err_size,
		                 "%s: corrupt checkpoint: section %s claims %u tensors", path, tag,
		                 n);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (end - p < 16)
			goto short_section;
		uint32_t name_len = rt_train_get_u32(p), rank = rt_train_get_u32(p + 4);
		uint64_t elems = rt_train_get_u64(p + 8);
		if (rank > 64 || name_len > (1u << 20) || elems > ((uint64_t)1 << 60)) {
			rt_train_set_err(
			        err, err_size,
			        "%s: corrupt checkpoint: tensor %u of section %s has a bad header",
			        path, i, tag);
			return -1;
		}
		uint64_t need = tensor_bytes((int)rank, name_len, (int64_t)elems);
		if ((uint64_t)(end - p) < need)
			goto short_section;
		uint64_t prod = 1;
		for (uint32_t d = 0; d < rank; d++) {
			uint64_t dim = rt_train_get_u64(p + 16 + 8 * d);
			if (dim && prod > ((uint64_t)1 << 60) / dim) {
				prod = (uint64_t)1 << 61;
				break;
			}
			prod *= dim;
		}
		if (prod != elems) {
			rt_train_set_err(
			        err, err_size,
			        "%s: corrupt checkpoint: tensor %u of section %s: dims do not "
			        "multiply to its %llu elements",
			        path, i, tag, (unsigned long long)elems);
			return -1;
		}
		if (out) {
			struct rt_train_ckpt_tensor *t = &out[i];
			int64_t *dims = (int64_t *)*aux;
			for (uint32_t d = 0; d < rank; d++)
				dims[d] = (int64_t)rt_train_get_u64(p + 16 + 8 * d);
			char *name = *aux + 8 * rank;
			memcpy(name, p + 16 + 8 * rank, name_len);
			name[name_len] = 0;
			*aux += pad8(8 * rank + name_len + 1);
			t->name = name;
			t->rank = (int)rank;
			t->dims = dims;
			t->elems = (int64_t)elems;
			t->data = (const float *)(const void *)(p + pad8(16 + 8 * rank + name_len));
		} else {
			*aux_bytes += pad8(8 * rank + name_len + 1);
		}
		p += need;
	}
	if (p != end) {
		rt_train_set_err(err, err_size,
		                 "%s: corrupt checkpoint: section %s has %lld extra bytes", path,
		                 tag, (long long)(end - p));
		return -1;
	}
	return (int)n;
short_section:
	rt_train_set_err(err, err_size,
	                 "%s: corrupt checkpoint: section %s is shorter than its tensors", path,
	                 tag);
	return -1;
}

static int same_tensor(const struct rt_train_ckpt_tensor *c, const struct rt_train_tensor *m)
{
	if (strcmp(c->name, m->name) || c->rank != m->rank || c->elems != m->elems)
		return 0;
	for (int d = 0; d < c->rank; d++)
		if (c->dims[d] != m->dims[d])
			return 0;
	return 1;
}

static void shape_str(char *buf, size_t n, int rank, const int64_t *dims)
{
	size_t k = (size_t)snprintf(buf, n, "(");
	for (int d = 0; d < rank && k < n; d++)
		k += (size_t)snprintf(buf + k, n - k, d ? ", %lld" : "%lld", (long long)dims[d]);
	if (k < n)
		snprintf(buf + k, n - k, ")");
}

static int check_against(const char *path, const char *what, int n,
                         const struct rt_train_ckpt_tensor *c, int mn,
                         const struct rt_train_tensor *m, char *err, size_t err_size)
{
	if (n != mn) {
		rt_train_set_err(err, err_size, "%s: checkpoint has %d %s tensors, the model %d",
		                 path, n, what, mn);
		return RT_TRAIN_ERR_CHECKPOINT;
	}
	for (int i = 0; i < n; i++)
		if (!same_tensor(&c[i], &m[i])) {
			char a[160], b[160];
			shape_str(a, sizeof a, c[i].rank, c[i].dims);
			shape_str(b, sizeof b, m[i].rank, m[i].dims);
			rt_train_set_err(
			        err, err_size,
			        "%s: %s tensor %d is '%s' %s in the checkpoint but '%s' %s in the "
			        "model",
			        path, what, i, c[i].name, a, m[i].name, b);
			return RT_TRAIN_ERR_CHECKPOINT;
		}
	return RT_TRAIN_OK;
}

int rt_train_ckpt_read(const char *path, uint64_t model_id, const struct rt_train_model *expect,
                       struct rt_train_ckpt *out, void **bufp, char *err, size_t err_size)
{
	*bufp = NULL;
	memset(out, 0, sizeof *out);
	int64_t fsize;
	FILE *f = rt_train_fopen_regular(path, O_RDONLY, &fsize, NULL, err, err_size);
	if (!f)
		return RT_TRAIN_ERR_IO;
	uint64_t size = (uint64_t)fsize;
	if (size < CKPT_HEADER_BYTES + 8) {
		fclose(f);
		rt_train_set_err(
		        err, err_size,
		        "%s: not an onnxc checkpoint or truncated (%llu bytes; at least %d)", path,
		        (unsigned long long)size, CKPT_HEADER_BYTES + 8);
		return RT_TRAIN_ERR_CHECKPOINT;
	}
	unsigned char *buf = malloc(size);
	if (!buf) {
		fclose(f);
		rt_train_set_err(err, err_size, "%s: out of memory (%llu bytes)", path,
		                 (unsigned long long)size);
		return RT_TRAIN_ERR_NO_MEMORY;
	}
	size_t got = fread(buf, 1, size, f);
	int read_err = ferror(f);
	fclose(f);
	int rc = RT_TRAIN_ERR_CHECKPOINT;
	if (read_err || got != size) {
		rt_train_set_err(err, err_size, "%s: read error", path);
		rc = RT_TRAIN_ERR_IO;
		goto fail;
	}
	if (memcmp(buf, CKPT_MAGIC, 8)) {
		rt_train_set_err(err, err_size, "%s: not an onnxc checkpoint (wrong magic)", path);
		goto fail;
	}
	uint32_t version = rt_train_get_u32(buf + 8);
	if (version != CKPT_VERSION || rt_train_get_u32(buf + 12) != CKPT_HEADER_BYTES) {
		rt_train_set_err(err, err_size,
		                 "%s: checkpoint format version %u; this runtime reads version %d",
		                 path, version, CKPT_VERSION);
		goto fail;
	}
	uint64_t declared = rt_train_get_u64(buf + 24);
	if (declared != size) {
		rt_train_set_err(
		        err, err_size,
		        "%s: truncated or corrupt checkpoint: %llu bytes, its header says %llu",
		        path, (unsigned long long)size, (unsigned long long)declared);
		goto fail;
	}
	uint64_t sum = rt_train_fnv1a(RT_TRAIN_FNV_OFFSET, buf, size - 8);
	if (sum != rt_train_get_u64(buf + size - 8)) {
		rt_train_set_err(err, err_size, "%s: corrupt checkpoint: checksum mismatch", path);
		goto fail;
	}
	uint64_t id = rt_train_get_u64(buf + 16);
	if (id != model_id) {
		rt_train_set_err(
		        err, err_size,
		        "%s: a checkpoint of another model (model id %016llx; this model is "
		        "%016llx)",
		        path, (unsigned long long)id, (unsigned long long)model_id);
		rc = RT_TRAIN_ERR_FOREIGN;
		goto fail;
	}
	out->model_id = id;

	/* the sections */
	static const char *const tags[5] = { "META", "PARM", "STAT", "MOM1", "MOM2" };
	struct parsed_section sec[5] = { { 0 } };
	uint32_t nsec = rt_train_get_u32(buf + 32);
	const unsigned char *p = buf + CKPT_HEADER_BYTES, *end = buf + size - 8;
	int last = -1;
	for (uint32_t s = 0; s < nsec; s++) {
		if (end - p < 16) {
			rt_train_set_err(err, err_size,
			                 "%s: corrupt checkpoint: section %u is cut off", path, s);
			goto fail;
		}
		int k = -1;
		for (int j = 0; j < 5; j++)
			if (!memcmp(p, tags[j], 4))
				k = j;
		uint64_t bytes = rt_train_get_u64(p + 8);
		if (k <= last) {
			rt_train_set_err(
			        err, err_size,
			        "%s: corrupt checkpoint: section %u has an unknown or repeated tag",
			        path, s);
			goto fail;
		}
		if (bytes > (uint64_t)(end - p - 16) || pad8(bytes) > (uint64_t)(end - p - 16)) {
			rt_train_set_err(
			        err, err_size,
			        "%s: corrupt checkpoint: section %s runs past the end of the file",
			        path, tags[k]);
			goto fail;
		}
		sec[k].p = p + 16;
		sec[k].bytes = bytes;
		sec[k].present = 1;
		last = k;
		p += 16 + pad8(bytes);
	}
	if (p != end) {
		rt_train_set_err(err, err_size,
		                 "%s: corrupt checkpoint: %lld bytes after the last section", path,
		                 (long long)(end - p));
		goto fail;
	}
	for (int j = 0; j < 3; j++)
		if (!sec[j].present) {
			rt_train_set_err(err, err_size, "%s: corrupt checkpoint: no %s section",
			                 path, tags[j]);
			goto fail;
		}
	if (sec[0].bytes != CKPT_META_BYTES) {
		rt_train_set_err(err, err_size,
		                 "%s: corrupt checkpoint: META has %llu bytes, not %d", path,
		                 (unsigned long long)sec[0].bytes, CKPT_META_BYTES);
		goto fail;
	}
	decode_meta(sec[0].p, &out->meta);

	/* sizes first, then one block for the tensor tables, names and dims */
	uint64_t aux_bytes = 0;
	int counts[5] = { 0 };
	for (int j = 1; j < 5; j++) {
		if (!sec[j].present)
			continue;
		counts[j] =
		        walk_tensors(path, tags[j], &sec[j], NULL, NULL, &aux_bytes, err, err_size);
		if (counts[j] < 0)
			goto fail;
	}
	for (int j = 3; j < 5; j++)
		if (sec[j].present && counts[j] != counts[1]) {
			rt_train_set_err(err, err_size,
			                 "%s: corrupt checkpoint: %s has %d tensors, PARM %d", path,
			                 tags[j], counts[j], counts[1]);
			goto fail;
		}
	uint64_t tables =
	        pad8(sizeof(struct rt_train_ckpt_tensor) * (uint64_t)(4 * counts[1] + counts[2])) +
	        pad8(2 * sizeof(float *) * (uint64_t)counts[1]);
	uint64_t base = pad8(size), offs[5];
	for (int j = 0; j < 5; j++)
		offs[j] = sec[j].present ? (uint64_t)(sec[j].p - buf) : 0;
	unsigned char *nb = realloc(buf, base + tables + aux_bytes + 8);
	if (!nb) {
		rt_train_set_err(err, err_size, "%s: out of memory", path);
		rc = RT_TRAIN_ERR_NO_MEMORY;
		goto fail;
	}
	/* the sections point into the old block: move them */
	for (int j = 0; j < 5; j++)
		if (sec[j].present)
			sec[j].p = nb + offs[j];
	buf = nb;
	struct rt_train_ckpt_tensor *tabs = (struct rt_train_ckpt_tensor *)(void *)(buf + base);
	const float **moms = (const float **)(void *)(buf + base +
	                                              pad8(sizeof *tabs *
	                                                   (uint64_t)(4 * counts[1] + counts[2])));
	char *aux = (char *)buf + base + tables;
	struct rt_train_ckpt_tensor *where[5] = { NULL, tabs, tabs + counts[1],
		                                  tabs + counts[1] + counts[2],
		                                  tabs + 2 * counts[1] + counts[2] };
	for (int j = 1; j < 5; j++)
		if (sec[j].present)
			walk_tensors(path, tags[j], &sec[j], where[j], &aux, NULL, err, err_size);
	out->num_params = counts[1];
	out->params = where[1];
	out->num_state = counts[2];
	out->state = where[2];
	for (int j = 3; j < 5; j++) {
		if (!sec[j].present)
			continue;
		const float **m = moms + (j - 3) * counts[1];
		for (int i = 0; i < counts[1]; i++) {
			if (strcmp(where[j][i].name, where[1][i].name) ||
			    where[j][i].elems != where[1][i].elems) {
				rt_train_set_err(
				        err, err_size,
				        "%s: corrupt checkpoint: %s tensor %d does not match param "
				        "'%s'",
				        path, tags[j], i, where[1][i].name);
				goto fail;
			}
			m[i] = where[j][i].data;
		}
		if (j == 3)
			out->mom1 = m;
		else
			out->mom2 = m;
	}
	if (expect) {
		rc = check_against(path, "param", out->num_params, out->params, expect->num_params,
		                   expect->params, err, err_size);
		if (!rc)
			rc = check_against(path, "state", out->num_state, out->state,
			                   expect->num_state, expect->state, err, err_size);
		if (rc)
			goto fail;
	}
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
	/* big-endian hosts: swap the floats in place */
	for (int j = 1; j < 5; j++)
		for (int i = 0; sec[j].present && i < counts[j]; i++) {
			unsigned char *d = (unsigned char *)(uintptr_t)where[j][i].data;
			for (int64_t e = 0; e < where[j][i].elems; e++) {
				uint32_t u = rt_train_get_u32(d + 4 * e);
				memcpy(d + 4 * e, &u, 4);
			}
		}
#endif
	*bufp = buf;
	return RT_TRAIN_OK;
fail:
	free(buf);
	memset(out, 0, sizeof *out);
	return rc;
}
