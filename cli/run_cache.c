/*
 * run_cache.c - onnxc run's cache of compiled models.
 *
 * A build lives in CACHE/KEY/: the shared object, its weights, and a
 * manifest. KEY is a hash of the key text, which spells out everything the
 * build depends on: the bytes of the model and of every external data file
 * its tensors name (content, not times), the options that change the
 * compiled code (target, CPU, bindings, constants' bytes, precision
 * options, limits), the shapes and types of the data that bind symbolic
 * dimensions, and this onnxc build - the build ids of the loaded program
 * and libraries, the runtime library and headers a build links against,
 * the environment the compile reads ($CC, ...), and the host CPU where
 * the kernels are compiled for "native".
 *
 * A hit costs no import: the key needs only the bytes (hashed with XXH64,
 * libxxhash, near memory speed) and the names of the
 * external data files, read from the wire format (pb_scan.c); what run
 * needs afterwards - the inputs' and outputs' names and types - is the
 * manifest, written at compile time. The manifest carries the whole key
 * text and is believed only when that matches exactly and everything in it
 * parses and is in range; anything else is a miss and a recompile, never a
 * crash. A build is made in a temporary folder and renamed into place, so
 * an interrupted or concurrent run never sees half of one.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "cli.h"
#include "codegen/cg.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* A regular file's bytes, read in pieces (never the whole file in memory,
 * never blocking on a FIFO). false with *err when it cannot be read. */
static bool hash_file(const char *path, uint64_t *digest, int64_t *size, const char **err)
{
	enum { CHUNK = 1 << 20 };
	unsigned char *buf;
	XXH64_state_t *h;
	int64_t at = 0;
	int fd = ir_open_regular(path, err, size);
	bool ok = true;
	if (fd < 0)
		return false;
	buf = malloc(CHUNK);
	h = XXH64_createState();
	if (!buf || !h) {
		*err = "out of memory";
		free(buf);
		XXH64_freeState(h);
		close(fd);
		return false;
	}
	XXH64_reset(h, 0);
	while (ok && at < *size) {
		size_t n = *size - at < CHUNK ? (size_t)(*size - at) : CHUNK;
		ok = ir_read_at(fd, buf, n, at);
		XXH64_update(h, buf, n);
		at += (int64_t)n;
	}
	free(buf);
	close(fd);
	if (!ok)
		*err = "read error (did it shrink?)";
	*digest = XXH64_digest(h);
	XXH64_freeState(h);
	return ok;
}

/* ------------------------------------------------------------------------ */
/* The key text                                                             */
/* ------------------------------------------------------------------------ */

void key_printf(struct run_key *k, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || k->failed)
		return;
	if (k->len + (size_t)n + 1 > k->cap) {
		size_t cap = (k->cap ? 2 * k->cap : 1024) + (size_t)n;
		char *t = realloc(k->text, cap);
		if (!t) {
			k->failed = true;
			return;
		}
		k->text = t;
		k->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(k->text + k->len, k->cap - k->len, fmt, ap);
	va_end(ap);
	k->len += (size_t)n;
}

void key_free(struct run_key *k)
{
	free(k->text);
	memset(k, 0, sizeof *k);
}

uint64_t key_hash(const struct run_key *k) { return ir_checksum(k->text, k->len); }

/* Key lines quote names, one to one: a name with a newline or a space must
 * not forge a line or a field. */
void key_name(struct run_key *k, const char *s)
{
	key_printf(k, "%zu:", strlen(s));
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c > 0x20 && c < 0x7f && c != '\\')
			key_printf(k, "%c", c);
		else
			key_printf(k, "\\x%02x", c);
	}
}

void key_file(struct run_key *k, const char *what, const char *label, const char *path)
{
	const char *err;
	uint64_t d;
	int64_t size;
	key_printf(k, "%s ", what);
	key_name(k, label);
	if (hash_file(path, &d, &size, &err))
		key_printf(k, " %016llx %lld\n", (unsigned long long)d, (long long)size);
	else
		key_printf(k, " unreadable: %s\n", err);
}

struct locations {
	char **v;
	int n, cap;
	bool failed;
};

static void add_location(void *ud, const char *loc, size_t n)
{
	struct locations *l = ud;
	if (l->failed)
		return;
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 16;
		char **v = realloc(l->v, sizeof *v * (size_t)cap);
		if (!v) {
			l->failed = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n] = strndup(loc, n)))
		l->failed = true;
	else
		l->n++;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A location the import accepts: relative, without a ".." step (load.c). */
static bool location_ok(const char *loc)
{
	if (!*loc || loc[0] == '/' || loc[0] == '\\')
		return false;
	for (const char *p = loc; *p; p++) {
		bool start = p == loc || p[-1] == '/' || p[-1] == '\\';
		if (start && p[0] == '.' && p[1] == '.' && (!p[2] || p[2] == '/' || p[2] == '\\'))
			return false;
	}
	return true;
}

bool key_model(struct run_key *k, struct ir_ctx *ctx, const char *path, bool onnx)
{
	const char *err, *slash = strrchr(path, '/');
	struct locations locs = { 0 };
	size_t len;
	unsigned char *bytes = ir_read_file(ctx, path, &len, &err);
	bool ok = true;
	if (!bytes) {
		k->why = "the model cannot be read";
		return false;
	}
	key_printf(k, "model %016llx %zu\n", (unsigned long long)ir_checksum(bytes, len), len);
	if (onnx && !pb_external_locations(bytes, len, add_location, &locs)) {
		k->why = "the model is not a protobuf file onnxc can scan";
		ok = false;
	}
	ir_free(ctx, bytes);
	if (locs.failed) {
		k->why = "out of memory";
		ok = false;
	}
	/* every file once, in an order that does not depend on the model's */
	if (locs.n)
		qsort(locs.v, (size_t)locs.n, sizeof *locs.v, cmp_str);
	for (int i = 0; ok && i < locs.n; i++) {
		char *file;
		size_t n;
		if (i && !strcmp(locs.v[i], locs.v[i - 1]))
			continue;
		if (!location_ok(locs.v[i])) {
			key_printf(k, "data ");
			key_name(k, locs.v[i]);
			key_printf(k, " refused\n");
			continue;
		}
		n = (slash ? (size_t)(slash - path) : 1) + strlen(locs.v[i]) + 2;
		if (!(file = malloc(n))) {
			k->why = "out of memory";
			ok = false;
			break;
		}
		snprintf(file, n, "%.*s/%s", slash ? (int)(slash - path) : 1, slash ? path : ".",
		         locs.v[i]);
		key_file(k, "data", locs.v[i], file);
		free(file);
	}
	for (int i = 0; i < locs.n; i++)
		free(locs.v[i]);
	free(locs.v);
	return ok;
}

/* The build id of every loaded object (the program, LLVM, ...), or for one
 * without, its name: what decides the generated code besides the model. */
static int build_id(struct dl_phdr_info *info, size_t size, void *ud)
{
	struct run_key *k = ud;
	const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "onnxc";
	bool found = false;
	(void)size;
	if (strstr(name, "linux-vdso"))
		return 0; /* the kernel's; changes with it, decides nothing */
	for (int i = 0; i < info->dlpi_phnum && !found; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *p, *end;
		if (ph->p_type != PT_NOTE)
			continue;
		p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (!found && (size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
			ElfW(Nhdr) nh;
			size_t namesz, descsz;
			memcpy(&nh, p, sizeof nh);
			namesz = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
			descsz = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
			p += sizeof nh;
			if (namesz > (size_t)(end - p) || descsz > (size_t)(end - p) - namesz)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(p, "GNU", 4)) {
				key_printf(k, "object %s ", name);
				for (size_t b = 0; b < nh.n_descsz; b++)
					key_printf(k, "%02x", p[namesz + b]);
				key_printf(k, "\n");
				found = true;
			}
			p += namesz + descsz;
		}
	}
	if (!found) {
		struct stat st;
		const char *file = info->dlpi_name && info->dlpi_name[0] ? name : "/proc/self/exe";
		if (stat(file, &st) == 0)
			key_printf(k, "object %s size %lld mtime %lld.%09ld\n", name,
			           (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			           st.st_mtim.tv_nsec);
		else
			key_printf(k, "object %s\n", name);
	}
	return 0;
}

static int cmp_dirent(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int header_file(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return n > 2 && !strcmp(e->d_name + n - 2, ".h");
}

/* The processor "native" means, as far as it decides the code: a cache
 * folder shared between machines must not hand one's kernels to another. */
static void key_host_cpu(struct run_key *k)
{
	static const char *const keep[] = { "vendor_id", "cpu family", "model\t", "model name",
		                            "flags",     "Features",   "CPU part" };
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	if (!f) {
		key_printf(k, "host unknown\n");
		return;
	}
	while (fgets(line, sizeof line, f) && line[0] != '\n') /* the first processor */
		for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
			if (!strncmp(line, keep[i], strlen(keep[i])))
				key_printf(k, "host %016llx\n",
				           (unsigned long long)ir_checksum(line, strlen(line)));
	fclose(f);
}

bool key_build(struct run_key *k, struct ir_ctx *ctx, const char *target, const char *cpu)
{
	static const char *const env[] = { "CC", "ONNXC_CUDA_LIBDIRS", "ONNXC_LIBDEVICE" };
	const char *inc, *rtlib;
	struct dirent **hs;
	int nh;
	key_printf(k, "onnxc %s\n", ONNXC_VERSION);
	dl_iterate_phdr(build_id, k);
	if (!cg_runtime_paths(ctx, &inc, &rtlib))
		return false;
	key_file(k, "runtime", rtlib, rtlib);
	if (!strcmp(target, "cuda")) {
		const char *slash = strrchr(rtlib, '/');
		char cuda[4200];
		snprintf(cuda, sizeof cuda, "%.*slibonnxc_rt_cuda.a",
		         slash ? (int)(slash - rtlib + 1) : 0, rtlib);
		key_file(k, "runtime", cuda, cuda);
	}
	if ((nh = scandir(inc, &hs, header_file, cmp_dirent)) >= 0) {
		for (int i = 0; i < nh; i++) {
			char path[4200];
			snprintf(path, sizeof path, "%s/%s", inc, hs[i]->d_name);
			key_file(k, "header", path, path);
			free(hs[i]);
		}
		free(hs);
	}
	for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
		if (getenv(env[i]))
			key_printf(k, "env %s=%s\n", env[i], getenv(env[i]));
	if (!strcmp(target, "cpu") && !strcmp(cpu, "native"))
		key_host_cpu(k);
	return true;
}

/* ------------------------------------------------------------------------ */
/* The signature and the manifest                                           */
/* ------------------------------------------------------------------------ */

void run_sig_init(struct run_sig *s, struct ir_ctx *ctx)
{
	memset(s, 0, sizeof *s);
	ir_arena_init(&s->arena, ctx);
}

void run_sig_free(struct run_sig *s)
{
	ir_arena_free(&s->arena);
	memset(s, 0, sizeof *s);
}

static struct run_tensor *tensors_from(struct run_sig *s, struct ir_value *const *v, int n)
{
	struct run_tensor *t = ir_arena_alloc(&s->arena, sizeof *t * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++) {
		t[i].name = ir_arena_strdup(&s->arena, v[i]->name);
		t[i].type = v[i]->type;
	}
	return t;
}

void run_sig_from_module(struct run_sig *s, const struct ir_module *m)
{
	s->in = tensors_from(s, m->inputs, m->ninputs);
	s->nin = m->ninputs;
	s->out = tensors_from(s, m->outputs, m->noutputs);
	s->nout = m->noutputs;
}

static void put_name(FILE *f, const char *s)
{
	fprintf(f, "%zu ", strlen(s));
	fputs(s, f);
}

static void put_tensors(FILE *f, const char *what, const struct run_tensor *t, int n)
{
	fprintf(f, "%s %d\n", what, n);
	for (int i = 0; i < n; i++) {
		put_name(f, t[i].name);
		fprintf(f, " %s %d", ir_dtype_name(t[i].type.dtype), t[i].type.rank);
		for (int d = 0; d < t[i].type.rank; d++)
			fprintf(f, " %lld", (long long)t[i].type.dims[d]);
		fputc('\n', f);
	}
}

#define MANIFEST_MAGIC "onnxc-run-manifest 1\n"

bool manifest_write(const char *dir, const struct run_key *k, const struct run_sig *s)
{
	char path[4200];
	FILE *f;
	bool ok;
	snprintf(path, sizeof path, "%s/manifest", dir);
	if (!(f = fopen(path, "w")))
		return false;
	fputs(MANIFEST_MAGIC, f);
	fprintf(f, "key %zu\n", k->len);
	fwrite(k->text, 1, k->len, f);
	fprintf(f, "order %d\n", s->norder);
	for (int i = 0; i < s->norder; i++) {
		put_name(f, s->order[i]);
		fputc('\n', f);
	}
	put_tensors(f, "in", s->in, s->nin);
	put_tensors(f, "out", s->out, s->nout);
	fputs("end\n", f);
	ok = !ferror(f);
	return fclose(f) == 0 && ok;
}

/* A cursor over the manifest's bytes; every read checks the bounds. */
struct cursor {
	const char *p, *end;
	bool bad;
};

static bool word(struct cursor *c, const char *w)
{
	size_t n = strlen(w);
	if (c->bad || (size_t)(c->end - c->p) < n || memcmp(c->p, w, n))
		return !(c->bad = true);
	c->p += n;
	return true;
}

static int64_t number(struct cursor *c, int64_t max)
{
	int64_t v = 0;
	if (c->bad || c->p == c->end || *c->p < '0' || *c->p > '9') {
		c->bad = true;
		return 0;
	}
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		int digit = *c->p++ - '0';
		if (v > (max - digit) / 10) {
			c->bad = true;
			return 0;
		}
		v = v * 10 + digit;
	}
	return v;
}

/* "LEN NAME": LEN bytes after the space. */
static const char *name_at(struct cursor *c, struct ir_arena *a)
{
	int64_t n = number(c, 1 << 20);
	const char *s;
	if (!word(c, " ") || n > c->end - c->p) {
		c->bad = true;
		return NULL;
	}
	s = ir_arena_strndup(a, c->p, (size_t)n);
	c->p += n;
	return s;
}

static struct run_tensor *tensors_at(struct cursor *c, struct run_sig *s, const char *what,
                                     int *count)
{
	struct run_tensor *t;
	int n;
	word(c, what);
	word(c, " ");
	n = (int)number(c, 1 << 16);
	word(c, "\n");
	if (c->bad)
		return NULL;
	t = ir_arena_alloc(&s->arena, sizeof *t * (size_t)(n ? n : 1));
	for (int i = 0; i < n && !c->bad; i++) {
		const char *dt;
		size_t len;
		t[i].name = name_at(c, &s->arena);
		word(c, " ");
		for (dt = c->p; c->p < c->end && *c->p != ' '; c->p++)
			;
		len = (size_t)(c->p - dt);
		t[i].type.dtype = ir_dtype_from_name(dt, len);
		word(c, " ");
		t[i].type.rank = (int)number(c, IR_MAX_RANK);
		for (int d = 0; d < t[i].type.rank; d++) {
			word(c, " ");
			t[i].type.dims[d] = number(c, INT64_MAX / 10);
		}
		word(c, "\n");
		/* a buffer of this type must be one run can allocate */
		if (!t[i].type.dtype || ir_type_elems(&t[i].type) < 0 ||
		    ir_type_elems(&t[i].type) > INT64_MAX / 8)
			c->bad = true;
	}
	*count = n;
	return t;
}

bool manifest_read(struct ir_ctx *ctx, const char *dir, const struct run_key *k, struct run_sig *s)
{
	char path[4200];
	const char *err;
	size_t len;
	char *buf;
	struct cursor c;
	int64_t keylen;
	snprintf(path, sizeof path, "%s/manifest", dir);
	if (!(buf = ir_read_file(ctx, path, &len, &err)))
		return false;
	c = (struct cursor){ buf, buf + len, false };
	word(&c, MANIFEST_MAGIC);
	word(&c, "key ");
	keylen = number(&c, (int64_t)1 << 40);
	word(&c, "\n");
	if (c.bad || (size_t)keylen != k->len || (size_t)(c.end - c.p) < k->len ||
	    memcmp(c.p, k->text, k->len)) {
		ir_free(ctx, buf);
		return false;
	}
	c.p += k->len;
	word(&c, "order ");
	s->norder = (int)number(&c, 1 << 16);
	word(&c, "\n");
	if (!c.bad)
		s->order = ir_arena_alloc(&s->arena,
		                          sizeof *s->order * (size_t)(s->norder ? s->norder : 1));
	for (int i = 0; i < s->norder && !c.bad; i++) {
		s->order[i] = name_at(&c, &s->arena);
		word(&c, "\n");
	}
	s->in = tensors_at(&c, s, "in", &s->nin);
	s->out = tensors_at(&c, s, "out", &s->nout);
	word(&c, "end\n");
	if (c.p != c.end)
		c.bad = true;
	ir_free(ctx, buf);
	return !c.bad;
}

/* ------------------------------------------------------------------------ */
/* Folders                                                                  */
/* ------------------------------------------------------------------------ */

char *cache_root(struct ir_ctx *ctx, const char *base)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char root[4096];
	if (base)
		snprintf(root, sizeof root, "%s", base);
	else if (xdg && *xdg)
		snprintf(root, sizeof root, "%s/onnxc", xdg);
	else
		snprintf(root, sizeof root, "%s/.cache/onnxc", home && *home ? home : "/tmp");
	if (!make_dirs(root)) {
		ir_error(ctx, "cannot create the cache folder %s: %s", root, strerror(errno));
		return NULL;
	}
	return strdup(root);
}

void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4200];
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}
