/*
 * ir.c - context, arena, and the module/value/node data structure.
 *
 * The graph keeps two invariants by construction and ir_verify() checks the
 * rest: every operand slot of a node appears exactly once in the use list of
 * the value it reads, and names are unique (a hash set from name to value).
 * Mutators are few and small (add, remove, replace uses, set input) so passes
 * cannot break the use lists by accident.
 */
#include "ir.h"
#include "infer.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ------------------------------------------------------------------------ */
/* Context, allocation, diagnostics                                         */
/* ------------------------------------------------------------------------ */

void ir_ctx_init(struct ir_ctx *ctx) { memset(ctx, 0, sizeof *ctx); }

_Noreturn void ir_panic(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "onnxc: internal error at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

_Noreturn void ir_oom(struct ir_ctx *ctx)
{
	ir_error(ctx, "out of memory");
	if (ctx->oom)
		longjmp(*ctx->oom, 1);
	/* nothing to unwind to (past the import): not a bug, the command stops */
	exit(EXIT_FAILURE);
}

void *ir_realloc(struct ir_ctx *ctx, void *p, size_t n)
{
	void *q;
	if (n == 0)
		n = 1;
	q = ctx->alloc ? ctx->alloc(ctx->alloc_ud, p, n) : realloc(p, n);
	if (!q)
		ir_oom(ctx);
	return q;
}

void *ir_malloc(struct ir_ctx *ctx, size_t n) { return ir_realloc(ctx, NULL, n); }

void ir_free(struct ir_ctx *ctx, void *p)
{
	if (!p)
		return;
	if (ctx->alloc)
		ctx->alloc(ctx->alloc_ud, p, 0);
	else
		free(p);
}

/* Length of the valid UTF-8 sequence at s that is not a C0 or C1 control
 * or DEL (printable as it is), or 0. */
static int printable_utf8(const unsigned char *s)
{
	int n;
	uint32_t c;
	if (s[0] >= 0x20 && s[0] < 0x7f)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0; /* controls, DEL, continuation bytes, overlong or out of range */
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	c = s[0] & (0x7f >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < 0xa0 || (n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0; /* C1 controls (U+0080..U+009F), overlong, surrogates */
	return n;
}

const char *ir_escape(const char *s, char *buf, size_t cap)
{
	size_t o = 0;
	IR_ASSERT(cap >= 8);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		char esc[8];
		int n = printable_utf8(p);
		size_t k;
		if (n) {
			if (o + (size_t)n >= cap)
				break;
			memcpy(buf + o, p, (size_t)n);
			o += (size_t)n;
			p += n;
			continue;
		}
		if (*p == '\n')
			k = (size_t)snprintf(esc, sizeof esc, "\\n");
		else if (*p == '\r')
			k = (size_t)snprintf(esc, sizeof esc, "\\r");
		else if (*p == '\t')
			k = (size_t)snprintf(esc, sizeof esc, "\\t");
		else
			k = (size_t)snprintf(esc, sizeof esc, "\\x%02x", *p);
		if (o + k >= cap)
			break;
		memcpy(buf + o, esc, k);
		o += k;
		p++;
	}
	buf[o] = 0;
	return buf;
}

void ir_verror(struct ir_ctx *ctx, const char *kind, const char *fmt, va_list ap)
{
	char line[2048], esc[2048];
	int off = 0;
	int limit = ctx->max_errors > 0 ? ctx->max_errors : 100;
	bool is_error = strcmp(kind, "error") == 0;

	if (is_error)
		ctx->nerrors++;
	else if (!strcmp(kind, "warning"))
		ctx->nwarnings++;
	if (is_error && ctx->nerrors > limit) {
		if (ctx->nerrors == limit + 1) {
			snprintf(line, sizeof line, "%s%stoo many errors, stopping the list here",
			         ctx->file ? ctx->file : "", ctx->file ? ": " : "");
			goto emit;
		}
		return;
	}
	if (ctx->file)
		off = snprintf(line, sizeof line, "%s: ", ctx->file);
	off += snprintf(line + off, sizeof line - off, "%s: ", kind);
	if (off < (int)sizeof line)
		vsnprintf(line + off, sizeof line - off, fmt, ap);
emit:
	/* names from a model never forge lines nor reach the terminal as escapes */
	ir_escape(line, esc, sizeof esc);
	if (ctx->diag)
		ctx->diag(ctx->diag_ud, esc);
	else
		fprintf(stderr, "%s\n", esc);
}

void ir_error(struct ir_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ir_verror(ctx, "error", fmt, ap);
	va_end(ap);
}

void ir_note(struct ir_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ir_verror(ctx, "note", fmt, ap);
	va_end(ap);
}

void ir_warning(struct ir_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ir_verror(ctx, "warning", fmt, ap);
	va_end(ap);
}

void ir_node_error(struct ir_ctx *ctx, const char *node, const char *op, const char *fmt, ...)
{
	char msg[1536];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ir_error(ctx, "node '%s' (%s): %s", node ? node : "?", op ? op : "?", msg);
}

/* ------------------------------------------------------------------------ */
/* Arena                                                                    */
/* ------------------------------------------------------------------------ */

struct ir_arena_block {
	struct ir_arena_block *next, *prev;
	size_t size, used;
	_Alignas(16) unsigned char data[];
};

enum { ARENA_BLOCK = 64 * 1024, ARENA_BIG = 8 * 1024 };

void ir_arena_init(struct ir_arena *a, struct ir_ctx *ctx)
{
	memset(a, 0, sizeof *a);
	a->ctx = ctx;
}

static void free_chain(struct ir_ctx *ctx, struct ir_arena_block *b)
{
	while (b) {
		struct ir_arena_block *next = b->next;
		ir_free(ctx, b);
		b = next;
	}
}

struct ir_arena_defer {
	struct ir_arena_defer *next;
	void (*fn)(void *ud);
	void *ud;
};

void ir_arena_defer(struct ir_arena *a, void (*fn)(void *ud), void *ud)
{
	struct ir_arena_defer *d = ir_arena_alloc(a, sizeof *d);
	d->fn = fn;
	d->ud = ud;
	d->next = a->defers;
	a->defers = d;
}

void ir_arena_free(struct ir_arena *a)
{
	for (struct ir_arena_defer *d = a->defers; d; d = d->next)
		d->fn(d->ud);
	a->defers = NULL;
	free_chain(a->ctx, a->head);
	free_chain(a->ctx, a->big);
	ir_free(a->ctx, a->bigset);
	a->head = a->big = NULL;
	a->bigset = NULL;
	a->bigcap = a->nbig = 0;
	a->used = 0;
}

/* The big-block set: linear probing on the data address. */
static size_t big_home(const struct ir_arena *a, const void *p)
{
	return (size_t)ir_mix64((uint64_t)(uintptr_t)p) & (a->bigcap - 1);
}

static void bigset_put(struct ir_arena *a, void *p)
{
	size_t h = big_home(a, p);
	while (a->bigset[h])
		h = (h + 1) & (a->bigcap - 1);
	a->bigset[h] = p;
	a->nbig++;
}

/* Room for one more entry; called before the block is allocated, so an
 * allocation failure leaves the arena consistent. */
static void bigset_reserve(struct ir_arena *a)
{
	void **old = a->bigset;
	size_t oldcap = a->bigcap;
	if ((a->nbig + 1) * 2 <= a->bigcap)
		return;
	a->bigcap = oldcap ? oldcap * 2 : 64;
	a->bigset = ir_malloc(a->ctx, sizeof *a->bigset * a->bigcap);
	memset(a->bigset, 0, sizeof *a->bigset * a->bigcap);
	a->nbig = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			bigset_put(a, old[i]);
	ir_free(a->ctx, old);
}

static size_t bigset_find(const struct ir_arena *a, const void *p)
{
	size_t h;
	if (!a->bigcap)
		return SIZE_MAX;
	for (h = big_home(a, p); a->bigset[h]; h = (h + 1) & (a->bigcap - 1)) {
		if (a->bigset[h] == p)
			return h;
	}
	return SIZE_MAX;
}

bool ir_arena_owns(const struct ir_arena *a, const void *p)
{
	return p && bigset_find(a, p) != SIZE_MAX;
}

/* Deletes slot h, moving later entries of its cluster back (no tombstones). */
static void bigset_delete(struct ir_arena *a, size_t h)
{
	size_t mask = a->bigcap - 1;
	a->bigset[h] = NULL;
	a->nbig--;
	for (size_t j = (h + 1) & mask; a->bigset[j]; j = (j + 1) & mask) {
		size_t home = big_home(a, a->bigset[j]);
		/* the entry at j may move to h unless its home lies in (h, j] */
		bool stays = h <= j ? h < home && home <= j : h < home || home <= j;
		if (!stays) {
			a->bigset[h] = a->bigset[j];
			a->bigset[j] = NULL;
			h = j;
		}
	}
}

void *ir_arena_alloc_big(struct ir_arena *a, size_t n)
{
	struct ir_arena_block *b;
	if (n > SIZE_MAX - sizeof *b - 16)
		ir_oom(a->ctx);
	bigset_reserve(a);
	b = ir_malloc(a->ctx, sizeof *b + n);
	b->size = b->used = n;
	b->prev = NULL;
	b->next = a->big;
	if (a->big)
		a->big->prev = b;
	a->big = b;
	a->used += n;
	bigset_put(a, b->data);
	return b->data;
}

void ir_arena_release(struct ir_arena *a, void *p)
{
	struct ir_arena_block *b = (struct ir_arena_block *)((unsigned char *)p -
	                                                     offsetof(struct ir_arena_block, data));
	size_t h = bigset_find(a, p);
	IR_ASSERT(h != SIZE_MAX);
	bigset_delete(a, h);
	if (b->prev)
		b->prev->next = b->next;
	else
		a->big = b->next;
	if (b->next)
		b->next->prev = b->prev;
	a->used -= b->size;
	ir_free(a->ctx, b);
}

void *ir_arena_alloc(struct ir_arena *a, size_t n)
{
	struct ir_arena_block *b = a->head;
	void *p;
	n = (n + 15) & ~(size_t)15;
	if (n >= ARENA_BIG) {
		p = ir_arena_alloc_big(a, n);
		memset(p, 0, n);
		return p;
	}
	if (!b || b->size - b->used < n) {
		b = ir_malloc(a->ctx, sizeof *b + ARENA_BLOCK);
		b->size = ARENA_BLOCK;
		b->used = 0;
		b->prev = NULL;
		b->next = a->head;
		a->head = b;
	}
	p = b->data + b->used;
	b->used += n;
	a->used += n;
	memset(p, 0, n);
	return p;
}

char *ir_arena_strndup(struct ir_arena *a, const char *s, size_t n)
{
	char *p = ir_arena_alloc(a, n + 1);
	if (n) /* s may be NULL then */
		memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *ir_arena_strdup(struct ir_arena *a, const char *s)
{
	return ir_arena_strndup(a, s, strlen(s));
}

char *ir_arena_printf(struct ir_arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	p = ir_arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

/* ------------------------------------------------------------------------ */
/* Op table                                                                 */
/* ------------------------------------------------------------------------ */

const struct ir_op_info ir_ops[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp_, why, inf, fold, ex, grad, lo, sch) \
	[IR_OP_##id] = { .name = nm,                                                            \
		         .onnx = ox,                                                            \
		         .min_in = imin,                                                        \
		         .max_in = imax,                                                        \
		         .min_out = omin,                                                       \
		         .max_out = omax,                                                       \
		         .kind = IR_KIND_##knd,                                                 \
		         .amp = IR_AMP_##amp_,                                                  \
		         .schema = sch,                                                         \
		         .infer = ir_infer_##inf },
#include "ops.h"
#undef IR_OP
};

enum ir_op ir_op_from_name(const char *s, size_t n)
{
	for (int i = 0; i < IR_OP_COUNT; i++)
		if (strlen(ir_ops[i].name) == n && memcmp(ir_ops[i].name, s, n) == 0)
			return (enum ir_op)i;
	return IR_OP_COUNT;
}

int ir_op_schema(enum ir_op op, struct ir_attr_def defs[IR_MAX_ATTRS])
{
	const char *p = ir_ops[op].schema;
	int n = 0;
	while (*p) {
		const char *colon;
		size_t len;
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		colon = strchr(p, ':');
		IR_ASSERT(colon && n < IR_MAX_ATTRS);
		len = (size_t)(colon - p);
		IR_ASSERT(len < sizeof defs[n].name);
		memcpy(defs[n].name, p, len);
		defs[n].name[len] = 0;
		switch (colon[1]) {
		case 'i': defs[n].kind = IR_ATTR_INT; break;
		case 'f': defs[n].kind = IR_ATTR_FLOAT; break;
		case 's': defs[n].kind = IR_ATTR_STRING; break;
		case 'I': defs[n].kind = IR_ATTR_INTS; break;
		case 'F': defs[n].kind = IR_ATTR_FLOATS; break;
		case 't': defs[n].kind = IR_ATTR_DTYPE; break;
		default: ir_panic(__FILE__, __LINE__, "bad schema for %s", ir_ops[op].name);
		}
		n++;
		p = colon + 2;
	}
	return n;
}

/* ------------------------------------------------------------------------ */
/* Names                                                                    */
/* ------------------------------------------------------------------------ */

static uint64_t hash_str(const char *s) { return ir_checksum(s, strlen(s)); }

/* XXH64 with seed 0 (libxxhash): at memory speed, where a byte-at-a-time
 * FNV-1a spent a fifth of a large model's compile. */
uint64_t ir_checksum(const void *data, size_t n) { return XXH64(data, n, 0); }

uint32_t ir_dropout_threshold(float ratio) { return (uint32_t)((double)ratio * 16777216.0 + 0.5); }

float ir_dropout_scale(float ratio)
{
	return ratio < 1 ? (float)(1.0 / (1.0 - (double)ratio)) : 0.0f;
}

void ir_map_init(struct ir_map *mp, struct ir_arena *a)
{
	memset(mp, 0, sizeof *mp);
	mp->arena = a;
}

static size_t map_slot(const struct ir_map *mp, const char *key)
{
	size_t h = (size_t)hash_str(key) & (size_t)(mp->cap - 1);
	mp->arena->ctx->probes++;
	while (mp->keys[h] && strcmp(mp->keys[h], key)) {
		mp->arena->ctx->probes++;
		h = (h + 1) & (size_t)(mp->cap - 1);
	}
	return h;
}

void **ir_map_get(const struct ir_map *mp, const char *key)
{
	size_t h;
	if (!mp->cap)
		return NULL;
	h = map_slot(mp, key);
	return mp->keys[h] ? &mp->vals[h] : NULL;
}

void ir_map_put(struct ir_map *mp, const char *key, void *val)
{
	size_t h;
	if ((mp->n + 1) * 2 > mp->cap) {
		struct ir_map big = { .arena = mp->arena, .cap = mp->cap ? mp->cap * 2 : 64 };
		big.keys = ir_arena_alloc(mp->arena, sizeof *big.keys * (size_t)big.cap);
		big.vals = ir_arena_alloc(mp->arena, sizeof *big.vals * (size_t)big.cap);
		for (int i = 0; i < mp->cap; i++)
			if (mp->keys[i])
				ir_map_put(&big, mp->keys[i], mp->vals[i]);
		big.added = mp->added; /* the scope log is the map's, whatever its size */
		big.nadded = mp->nadded;
		big.cap_added = mp->cap_added;
		big.scoped = mp->scoped;
		*mp = big;
	}
	h = map_slot(mp, key);
	if (!mp->keys[h]) {
		mp->keys[h] = key;
		mp->n++;
		if (mp->scoped) {
			if (mp->nadded == mp->cap_added) {
				int cap = mp->cap_added ? 2 * mp->cap_added : 64;
				const char **a = ir_arena_alloc(mp->arena, sizeof *a * (size_t)cap);
				if (mp->nadded)
					memcpy(a, mp->added, sizeof *a * (size_t)mp->nadded);
				mp->added = a;
				mp->cap_added = cap;
			}
			mp->added[mp->nadded++] = key;
		}
	}
	mp->vals[h] = val;
}

int ir_map_mark(struct ir_map *mp)
{
	mp->scoped = true;
	return mp->nadded;
}

/* Removes key (present) by shifting back the entries of its probe run
 * that would no longer be found past the hole (linear probing). */
static void map_del(struct ir_map *mp, const char *key)
{
	size_t mask = (size_t)(mp->cap - 1), i = map_slot(mp, key), j = i;
	IR_ASSERT(mp->keys[i]);
	for (;;) {
		size_t home;
		j = (j + 1) & mask;
		if (!mp->keys[j])
			break;
		mp->arena->ctx->probes++;
		home = (size_t)hash_str(mp->keys[j]) & mask;
		/* the entry at j stays when its home lies cyclically in (i, j] */
		if (i <= j ? i < home && home <= j : i < home || home <= j)
			continue;
		mp->keys[i] = mp->keys[j];
		mp->vals[i] = mp->vals[j];
		i = j;
	}
	mp->keys[i] = NULL;
	mp->vals[i] = NULL;
	mp->n--;
}

void ir_map_pop(struct ir_map *mp, int mark)
{
	IR_ASSERT(mp->scoped && mark >= 0 && mark <= mp->nadded);
	while (mp->nadded > mark)
		map_del(mp, mp->added[--mp->nadded]);
}

const char *ir_fresh_name(struct ir_map *next, const char *base, const char *sep,
                          bool (*taken)(void *ud, const char *name), void *ud)
{
	size_t n = strlen(base), room = strlen(sep) + 21;
	char *s = ir_arena_alloc(next->arena, n + room);
	void **slot = ir_map_get(next, base);
	intptr_t i = slot ? (intptr_t)*slot : 0;
	memcpy(s, base, n);
	for (;; i++) {
		if (i)
			snprintf(s + n, room, "%s%lld", sep, (long long)i);
		next->arena->ctx->probes++;
		if (!taken(ud, s))
			break;
	}
	/* The next search starts past it: the caller may ask again before it
	 * uses this name (an op with two unnamed outputs), and a name is
	 * handed out once. */
	if (slot)
		*slot = (void *)(i + 1);
	else
		ir_map_put(next, ir_arena_strndup(next->arena, base, n), (void *)(i + 1));
	return s;
}

static void names_grow(struct ir_module *m)
{
	int cap = m->cap_names ? m->cap_names * 2 : 256;
	struct ir_value **t = ir_arena_alloc(&m->arena, (size_t)cap * sizeof *t);
	for (int i = 0; i < m->cap_names; i++) {
		struct ir_value *v = m->names[i];
		if (v) {
			size_t h = (size_t)hash_str(v->name) & (size_t)(cap - 1);
			while (t[h])
				h = (h + 1) & (size_t)(cap - 1);
			t[h] = v;
		}
	}
	m->names = t;
	m->cap_names = cap;
}

/* The slot holding name, or the empty slot where it would go. */
static size_t names_slot(const struct ir_module *m, const char *name)
{
	size_t h = (size_t)hash_str(name) & (size_t)(m->cap_names - 1);
	m->ctx->probes++;
	while (m->names[h] && strcmp(m->names[h]->name, name)) {
		m->ctx->probes++;
		h = (h + 1) & (size_t)(m->cap_names - 1);
	}
	return h;
}

struct ir_value *ir_find_value(const struct ir_module *m, const char *name)
{
	return m->cap_names ? m->names[names_slot(m, name)] : NULL;
}

static void names_insert(struct ir_module *m, struct ir_value *v)
{
	size_t h;
	if (ir_find_value(m, v->name))
		ir_panic(__FILE__, __LINE__, "duplicate value name '%s'", v->name);
	if ((m->nnames + 1) * 2 > m->cap_names)
		names_grow(m);
	h = names_slot(m, v->name);
	m->names[h] = v;
	m->nnames++;
}

/* Takes v out of the name set, moving later entries of its cluster back
 * (linear probing needs no tombstones). */
static void names_remove(struct ir_module *m, struct ir_value *v)
{
	size_t mask = (size_t)m->cap_names - 1, h = names_slot(m, v->name);
	IR_ASSERT(m->names[h] == v);
	m->names[h] = NULL;
	m->nnames--;
	for (size_t j = (h + 1) & mask; m->names[j]; j = (j + 1) & mask) {
		size_t home = (size_t)hash_str(m->names[j]->name) & mask;
		bool stays = h <= j ? h < home && home <= j : h < home || home <= j;
		m->ctx->probes++;
		if (!stays) {
			m->names[h] = m->names[j];
			m->names[j] = NULL;
			h = j;
		}
	}
}

/* Rebuilds the name set (compaction drops the dead). */
static void names_rebuild(struct ir_module *m)
{
	m->names = NULL;
	m->cap_names = m->nnames = 0;
	for (int i = 0; i < m->nvalues; i++)
		names_insert(m, m->values[i]);
}

bool ir_is_output(const struct ir_module *m, const struct ir_value *v)
{
	m->ctx->probes += (uint64_t)m->noutputs; /* a scan: callers must not loop over it */
	for (int i = 0; i < m->noutputs; i++)
		if (m->outputs[i] == v)
			return true;
	return false;
}

bool ir_is_root(const struct ir_module *m, const struct ir_value *v)
{
	m->ctx->probes += (uint64_t)m->noutputs;
	for (int i = 0; i < m->noutputs; i++)
		if (m->outputs[i] == v || (m->out_shapes[i] && m->out_shapes[i]->cond == v))
			return true;
	return false;
}

void ir_rename_value(struct ir_module *m, struct ir_value *v, const char *name)
{
	if (ir_find_value(m, name))
		ir_panic(__FILE__, __LINE__, "duplicate value name '%s'", name);
	names_remove(m, v);
	v->name = ir_arena_strdup(&m->arena, name);
	names_insert(m, v);
}

static bool value_taken(void *m, const char *name) { return ir_find_value(m, name) != NULL; }

const char *ir_unique_name(struct ir_module *m, const char *base)
{
	return ir_fresh_name(&m->unique, base, ".", value_taken, m);
}

/* ------------------------------------------------------------------------ */
/* Module and values                                                        */
/* ------------------------------------------------------------------------ */

struct ir_module *ir_module_new(struct ir_ctx *ctx, const char *name)
{
	struct ir_arena a;
	struct ir_module *m;
	ir_arena_init(&a, ctx);
	m = ir_arena_alloc(&a, sizeof *m);
	m->arena = a;
	m->ctx = ctx;
	m->name = ir_arena_strdup(&m->arena, name ? name : "model");
	ir_map_init(&m->unique, &m->arena);
	return m;
}

void ir_module_free(struct ir_module *m)
{
	struct ir_arena a;
	if (!m)
		return;
	a = m->arena; /* m itself lives in its arena */
	ir_arena_free(&a);
}

/* Grows an arena-backed array of pointers (the old copy stays in the arena). */
static void *grow(struct ir_arena *a, void *arr, int n, int *cap, size_t elem)
{
	void *p;
	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 8;
	p = ir_arena_alloc(a, (size_t)*cap * elem);
	if (n)
		memcpy(p, arr, (size_t)n * elem);
	return p;
}

static struct ir_value *new_value(struct ir_module *m, const char *name, enum ir_value_kind kind,
                                  const struct ir_type *t)
{
	struct ir_value *v = ir_arena_alloc(&m->arena, sizeof *v);
	m->values = grow(&m->arena, m->values, m->nvalues, &m->cap_values, sizeof *m->values);
	v->id = m->nvalues;
	m->values[m->nvalues++] = v;
	v->kind = kind;
	v->name = ir_arena_strdup(&m->arena, name);
	if (t)
		v->type = *t;
	names_insert(m, v);
	return v;
}

struct ir_value *ir_add_input(struct ir_module *m, const char *name, const struct ir_type *t)
{
	struct ir_value *v = new_value(m, name, IR_VAL_INPUT, t);
	m->inputs = grow(&m->arena, m->inputs, m->ninputs, &m->cap_inputs, sizeof *m->inputs);
	m->inputs[m->ninputs++] = v;
	return v;
}

struct ir_value *ir_add_const(struct ir_module *m, const char *name, const struct ir_type *t,
                              const void *data)
{
	struct ir_value *v = new_value(m, name, IR_VAL_CONST, t);
	int64_t elems = ir_type_elems(t);
	size_t bytes;
	IR_ASSERT(elems >= 0);
	bytes = (size_t)elems * (size_t)ir_dtype_size(t->dtype);
	if (data && ir_arena_owns(&m->arena, data)) {
		v->data = (void *)data;
	} else {
		v->data = bytes >= ARENA_BIG ? ir_arena_alloc_big(&m->arena, bytes)
		                             : ir_arena_alloc(&m->arena, bytes);
		if (data && bytes)
			memcpy(v->data, data, bytes);
	}
	v->checksum = ir_checksum(v->data, bytes);
	return v;
}

struct ir_value *ir_add_const_ref(struct ir_module *m, const char *name, const struct ir_type *t,
                                  uint64_t checksum)
{
	struct ir_value *v = new_value(m, name, IR_VAL_CONST, t);
	v->checksum = checksum;
	return v;
}

void ir_add_output(struct ir_module *m, struct ir_value *v)
{
	int cap = m->cap_outputs;
	m->outputs = grow(&m->arena, m->outputs, m->noutputs, &m->cap_outputs, sizeof *m->outputs);
	if (cap != m->cap_outputs) {
		struct ir_out_shape **s =
		        ir_arena_alloc(&m->arena, sizeof *s * (size_t)m->cap_outputs);
		if (m->noutputs)
			memcpy(s, m->out_shapes, sizeof *s * (size_t)m->noutputs);
		m->out_shapes = s;
	}
	m->out_shapes[m->noutputs] = NULL;
	m->outputs[m->noutputs++] = v;
}

void ir_set_out_shape(struct ir_module *m, int i, const struct ir_out_shape *s)
{
	IR_ASSERT(i >= 0 && i < m->noutputs);
	m->out_shapes[i] = ir_arena_alloc(&m->arena, sizeof *s);
	*m->out_shapes[i] = *s;
}

void ir_append_input(struct ir_module *m, struct ir_value *v)
{
	IR_ASSERT(v->kind == IR_VAL_INPUT);
	m->inputs = grow(&m->arena, m->inputs, m->ninputs, &m->cap_inputs, sizeof *m->inputs);
	m->inputs[m->ninputs++] = v;
}

struct ir_value *ir_const_to_input(struct ir_module *m, struct ir_value *v)
{
	IR_ASSERT(v->kind == IR_VAL_CONST);
	v->kind = IR_VAL_INPUT;
	v->data = NULL;
	v->checksum = 0;
	ir_append_input(m, v);
	return v;
}

/* Where use i of n (IR_USE_GUARD: its guard) sits in the value's uses. */
static int *use_slot(struct ir_node *n, int i)
{
	return i == IR_USE_GUARD ? &n->guard_use_at : &n->use_at[i];
}

static void add_use(struct ir_module *m, struct ir_value *v, struct ir_node *n, int i)
{
	v->uses = grow(&m->arena, v->uses, v->nuses, &v->cap_uses, sizeof *v->uses);
	v->uses[v->nuses].node = n;
	v->uses[v->nuses].index = i;
	*use_slot(n, i) = v->nuses++;
}

/* Constant time: the last use fills the hole (a value read by 20,000 nodes
 * loses them one by one when they fold). */
static void drop_use(struct ir_module *m, struct ir_value *v, struct ir_node *n, int i)
{
	int k = *use_slot(n, i);
	struct ir_use last;
	m->ctx->probes++;
	if (k < 0 || k >= v->nuses || v->uses[k].node != n || v->uses[k].index != i)
		ir_panic(__FILE__, __LINE__, "use of '%s' by node '%s' not found", v->name,
		         n->name);
	last = v->uses[--v->nuses];
	v->uses[k] = last;
	*use_slot(last.node, last.index) = k;
}

void ir_kill_value(struct ir_module *m, struct ir_value *v)
{
	IR_ASSERT(v->nuses == 0);
	(void)m;
	if (v->kind == IR_VAL_CONST && v->data && ir_arena_owns(&m->arena, v->data))
		ir_arena_release(&m->arena, v->data);
	v->data = NULL;
	v->kind = IR_VAL_DEAD;
}

/* ------------------------------------------------------------------------ */
/* Nodes                                                                    */
/* ------------------------------------------------------------------------ */

/* Links n at the end of m's node list. */
static void append_node(struct ir_module *m, struct ir_node *n)
{
	n->prev = m->last;
	n->next = NULL;
	if (m->last)
		m->last->next = n;
	else
		m->first = n;
	m->last = n;
	m->nnodes++;
}

struct ir_node *ir_add_node(struct ir_module *m, enum ir_op op, const char *name,
                            struct ir_value *const *in, int nin, const char *const *out_names,
                            int nout)
{
	struct ir_node *n = ir_arena_alloc(&m->arena, sizeof *n);
	struct ir_attr_def defs[IR_MAX_ATTRS];

	while (nin > 0 && !in[nin - 1])
		nin--;
	n->id = m->next_node_id++;
	n->op = op;
	n->name = ir_arena_strdup(&m->arena, name ? name : ir_ops[op].name);
	n->nin = nin;
	n->in = ir_arena_alloc(&m->arena, (size_t)(nin ? nin : 1) * sizeof *n->in);
	n->use_at = ir_arena_alloc(&m->arena, (size_t)(nin ? nin : 1) * sizeof *n->use_at);
	for (int i = 0; i < nin; i++) {
		IR_ASSERT(in[i] && in[i]->kind != IR_VAL_DEAD);
		n->in[i] = in[i];
		add_use(m, in[i], n, i);
	}
	n->nout = nout;
	n->out = ir_arena_alloc(&m->arena, (size_t)(nout ? nout : 1) * sizeof *n->out);
	for (int i = 0; i < nout; i++) {
		const char *nm = out_names && out_names[i] ? out_names[i] : NULL;
		if (!nm) {
			char base[64];
			snprintf(base, sizeof base, "t%d", n->id);
			nm = base;
			if (nout > 1) {
				snprintf(base, sizeof base, "t%d.%d", n->id, i);
			}
			nm = ir_unique_name(m, nm);
		}
		n->out[i] = new_value(m, nm, IR_VAL_NODE, NULL);
		n->out[i]->def = n;
		n->out[i]->def_index = i;
	}
	n->nattrs = ir_op_schema(op, defs);
	n->attrs =
	        ir_arena_alloc(&m->arena, (size_t)(n->nattrs ? n->nattrs : 1) * sizeof *n->attrs);
	for (int i = 0; i < n->nattrs; i++) {
		n->attrs[i].name = ir_arena_strdup(&m->arena, defs[i].name);
		n->attrs[i].kind = defs[i].kind;
		if (defs[i].kind == IR_ATTR_STRING)
			n->attrs[i].s = "";
	}
	append_node(m, n);
	return n;
}

static void unlink_node(struct ir_module *m, struct ir_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		m->first = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		m->last = n->prev;
	n->prev = n->next = NULL;
}

void ir_move_before(struct ir_module *m, struct ir_node *n, struct ir_node *before)
{
	if (n == before)
		return;
	unlink_node(m, n);
	n->next = before;
	n->prev = before->prev;
	if (before->prev)
		before->prev->next = n;
	else
		m->first = n;
	before->prev = n;
}

void ir_remove_node(struct ir_module *m, struct ir_node *n)
{
	for (int i = 0; i < n->nout; i++) {
		IR_ASSERT(n->out[i]->nuses == 0);
		n->out[i]->kind = IR_VAL_DEAD;
	}
	for (int i = 0; i < n->nin; i++)
		drop_use(m, n->in[i], n, i);
	ir_set_guard(m, n, NULL);
	unlink_node(m, n);
	m->nnodes--;
}

void ir_detach_node(struct ir_module *m, struct ir_node *n)
{
	for (int i = 0; i < n->nin; i++)
		drop_use(m, n->in[i], n, i);
	ir_set_guard(m, n, NULL);
	unlink_node(m, n);
	m->nnodes--;
}

void ir_set_guard(struct ir_module *m, struct ir_node *n, struct ir_value *g)
{
	if (n->guard)
		drop_use(m, n->guard, n, IR_USE_GUARD);
	n->guard = g;
	if (g) {
		IR_ASSERT(g->kind != IR_VAL_DEAD);
		add_use(m, g, n, IR_USE_GUARD);
	}
}

/*
 * A copy of m whose values and nodes have m's ids, names, order, guards and
 * attributes (the arrays of which it shares), so that per-id tables made
 * for m describe the copy too. Its constants point at m's data, which no
 * pass writes: the copy must be freed before m. Dead values stay dead.
 */
struct ir_module *ir_module_clone(const struct ir_module *m)
{
	struct ir_module *c = ir_module_new(m->ctx, m->name);
	for (int i = 0; i < m->nvalues; i++) {
		const struct ir_value *s = m->values[i];
		struct ir_value *v = new_value(c, s->name, s->kind, &s->type);
		v->data = s->data;
		v->checksum = s->checksum;
	}
	for (int i = 0; i < m->ninputs; i++) {
		c->inputs =
		        grow(&c->arena, c->inputs, c->ninputs, &c->cap_inputs, sizeof *c->inputs);
		c->inputs[c->ninputs++] = c->values[m->inputs[i]->id];
	}
	for (int i = 0; i < m->noutputs; i++) {
		ir_add_output(c, c->values[m->outputs[i]->id]);
		if (m->out_shapes[i]) {
			struct ir_out_shape s = *m->out_shapes[i];
			s.cond = c->values[s.cond->id];
			ir_set_out_shape(c, i, &s);
		}
	}
	IR_FOR_EACH_NODE(m, s)
	{
		struct ir_node *n = ir_arena_alloc(&c->arena, sizeof *n);
		*n = *s;
		n->in = ir_arena_alloc(&c->arena, (size_t)(s->nin ? s->nin : 1) * sizeof *n->in);
		n->use_at = ir_arena_alloc(&c->arena,
		                           (size_t)(s->nin ? s->nin : 1) * sizeof *n->use_at);
		n->out =
		        ir_arena_alloc(&c->arena, (size_t)(s->nout ? s->nout : 1) * sizeof *n->out);
		n->attrs = ir_arena_alloc(&c->arena,
		                          (size_t)(s->nattrs ? s->nattrs : 1) * sizeof *n->attrs);
		if (s->nattrs)
			memcpy(n->attrs, s->attrs, (size_t)s->nattrs * sizeof *n->attrs);
		n->guard = NULL;
		for (int i = 0; i < s->nin; i++) {
			n->in[i] = c->values[s->in[i]->id];
			add_use(c, n->in[i], n, i);
		}
		for (int i = 0; i < s->nout; i++) {
			n->out[i] = c->values[s->out[i]->id];
			n->out[i]->def = n;
			n->out[i]->def_index = i;
		}
		if (s->guard)
			ir_set_guard(c, n, c->values[s->guard->id]);
		append_node(c, n);
	}
	c->next_node_id = m->next_node_id;
	return c;
}

int ir_guarded_operands(const struct ir_node *n)
{
	return n->op == IR_OP_PHI || n->op == IR_OP_LOOP_END ? 1 : n->nin;
}

bool ir_is_loop(const struct ir_value *v)
{
	return v && v->kind == IR_VAL_NODE && v->def->op == IR_OP_LOOP;
}

struct ir_node *ir_loop_end(const struct ir_value *t)
{
	for (int i = 0; i < t->nuses; i++)
		if (t->uses[i].index == 0 && t->uses[i].node->op == IR_OP_LOOP_END)
			return t->uses[i].node;
	return NULL;
}

bool ir_guard_implies(const struct ir_value *a, const struct ir_value *b)
{
	for (; a; a = a->kind == IR_VAL_NODE ? a->def->guard : NULL)
		if (a == b)
			return true;
	return !b;
}

struct ir_value *ir_operand_guard(struct ir_value *const *in, int nin)
{
	struct ir_value *g = NULL;
	for (int i = 0; i < nin; i++) {
		struct ir_value *h = in[i] && in[i]->kind == IR_VAL_NODE ? in[i]->def->guard : NULL;
		if (ir_guard_implies(g, h))
			continue;
		if (!ir_guard_implies(h, g))
			ir_panic(__FILE__, __LINE__,
			         "operands of one node come from exclusive guards '%s' and '%s'",
			         g->name, h->name);
		g = h;
	}
	return g;
}

void ir_set_input(struct ir_module *m, struct ir_node *n, int i, struct ir_value *v)
{
	if (i == IR_USE_GUARD) {
		IR_ASSERT(v);
		ir_set_guard(m, n, v);
		return;
	}
	IR_ASSERT(i >= 0 && i < n->nin && v);
	drop_use(m, n->in[i], n, i);
	n->in[i] = v;
	add_use(m, v, n, i);
}

/* The name-set slot holding v. */
static size_t name_slot(const struct ir_module *m, const struct ir_value *v)
{
	size_t h = (size_t)hash_str(v->name) & (size_t)(m->cap_names - 1);
	while (m->names[h] != v) {
		IR_ASSERT(m->names[h]);
		h = (h + 1) & (size_t)(m->cap_names - 1);
	}
	return h;
}

void ir_swap_names(struct ir_module *m, struct ir_value *a, struct ir_value *b)
{
	size_t sa = name_slot(m, a), sb = name_slot(m, b);
	const char *t = a->name;
	a->name = b->name;
	b->name = t;
	m->names[sa] = b;
	m->names[sb] = a;
}

void ir_replace_uses(struct ir_module *m, struct ir_value *from, struct ir_value *to)
{
	if (from == to)
		return;
	while (from->nuses) {
		struct ir_use u = from->uses[from->nuses - 1];
		ir_set_input(m, u.node, u.index, to);
	}
	for (int i = 0; i < m->noutputs; i++) {
		if (m->outputs[i] == from)
			m->outputs[i] = to;
		if (m->out_shapes[i] && m->out_shapes[i]->cond == from)
			m->out_shapes[i]->cond = to;
	}
}

void ir_replace_value(struct ir_module *m, struct ir_value *from, struct ir_value *to)
{
	IR_ASSERT(to->kind == IR_VAL_NODE);
	ir_replace_uses(m, from, to);
	if (from != to)
		ir_swap_names(m, from, to);
}

/*
 * The storage types (float8, float4, 4- and 2-bit integers; ir/dtype.h)
 * have no arithmetic: only a cast and the ops that move elements as they
 * are read or write them. Where picks elements as well (ONNX's saturate=0
 * casts are built with it); pad, scatter_elements and trilu would write
 * values of their own, which these types do not take.
 */
static bool narrow_ok(const struct ir_node *n)
{
	switch (n->op) {
	case IR_OP_CAST:
	case IR_OP_WHERE:
	case IR_OP_PHI: return true;
	case IR_OP_PAD:
	case IR_OP_SCATTER_ELEMENTS:
	case IR_OP_TRILU: return false;
	default: return ir_ops[n->op].kind == IR_KIND_MOVE;
	}
}

bool ir_infer_types(struct ir_module *m, const struct ir_node *n, struct ir_type *out, char *err,
                    size_t errlen)
{
	(void)m;
	memset(out, 0, sizeof *out * (size_t)n->nout);
	if (errlen)
		err[0] = 0;
	if (!ir_ops[n->op].infer(n, out, err, errlen))
		return false;
	for (int i = 0; i < n->nin + n->nout; i++) {
		enum ir_dtype t = i < n->nin ? (n->in[i] ? n->in[i]->type.dtype : IR_DT_NONE)
		                             : out[i - n->nin].dtype;
		if (t > IR_DT_NONE && t < IR_DTYPE_COUNT && ir_dtypes[t].narrow && !narrow_ok(n)) {
			snprintf(err, errlen,
			         "%s does not compute on %s, a storage type: cast it to a float "
			         "or integer type first",
			         ir_ops[n->op].name, ir_dtype_name(t));
			return false;
		}
	}
	return true;
}

bool ir_infer_node(struct ir_module *m, struct ir_node *n, char *err, size_t errlen)
{
	struct ir_type small[8];
	struct ir_type *out =
	        n->nout <= 8 ? small : ir_malloc(m->ctx, sizeof *out * (size_t)n->nout);
	bool ok = ir_infer_types(m, n, out, err, errlen);
	if (ok)
		for (int i = 0; i < n->nout; i++)
			n->out[i]->type = out[i];
	if (out != small)
		ir_free(m->ctx, out);
	return ok;
}

/* ------------------------------------------------------------------------ */
/* Attributes                                                               */
/* ------------------------------------------------------------------------ */

bool ir_same_attrs(const struct ir_node *a, const struct ir_node *b)
{
	if (a->op != b->op || a->nattrs != b->nattrs)
		return false;
	for (int i = 0; i < a->nattrs; i++) {
		const struct ir_attr *x = &a->attrs[i], *y = &b->attrs[i];
		if (x->kind != y->kind || strcmp(x->name, y->name) || x->n != y->n)
			return false;
		switch (x->kind) {
		case IR_ATTR_INT:
			if (x->i != y->i)
				return false;
			break;
		case IR_ATTR_FLOAT:
			if (memcmp(&x->f, &y->f, sizeof x->f))
				return false;
			break;
		case IR_ATTR_STRING:
			if (strcmp(x->s, y->s))
				return false;
			break;
		case IR_ATTR_INTS:
			if (x->n && memcmp(x->ints, y->ints, sizeof *x->ints * (size_t)x->n))
				return false;
			break;
		case IR_ATTR_FLOATS:
			if (x->n && memcmp(x->floats, y->floats, sizeof *x->floats * (size_t)x->n))
				return false;
			break;
		case IR_ATTR_DTYPE:
			if (x->t != y->t)
				return false;
			break;
		}
	}
	return true;
}

struct ir_attr *ir_attr_get(const struct ir_node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

static struct ir_attr *attr_checked(const struct ir_node *n, const char *name,
                                    enum ir_attr_kind kind)
{
	struct ir_attr *a = ir_attr_get(n, name);
	if (!a || a->kind != kind)
		ir_panic(__FILE__, __LINE__, "op %s has no attribute %s of that kind",
		         ir_ops[n->op].name, name);
	return a;
}

int64_t ir_attr_i(const struct ir_node *n, const char *name)
{
	return attr_checked(n, name, IR_ATTR_INT)->i;
}

float ir_attr_f(const struct ir_node *n, const char *name)
{
	return attr_checked(n, name, IR_ATTR_FLOAT)->f;
}

const char *ir_attr_s(const struct ir_node *n, const char *name)
{
	return attr_checked(n, name, IR_ATTR_STRING)->s;
}

const int64_t *ir_attr_ints(const struct ir_node *n, const char *name, int *count)
{
	struct ir_attr *a = attr_checked(n, name, IR_ATTR_INTS);
	if (count)
		*count = a->n;
	return a->ints;
}

const float *ir_attr_floats(const struct ir_node *n, const char *name, int *count)
{
	struct ir_attr *a = attr_checked(n, name, IR_ATTR_FLOATS);
	if (count)
		*count = a->n;
	return a->floats;
}

enum ir_dtype ir_attr_t(const struct ir_node *n, const char *name)
{
	return attr_checked(n, name, IR_ATTR_DTYPE)->t;
}

void ir_set_i(struct ir_module *m, struct ir_node *n, const char *name, int64_t v)
{
	(void)m;
	attr_checked(n, name, IR_ATTR_INT)->i = v;
}

void ir_set_f(struct ir_module *m, struct ir_node *n, const char *name, float v)
{
	(void)m;
	attr_checked(n, name, IR_ATTR_FLOAT)->f = v;
}

void ir_set_s(struct ir_module *m, struct ir_node *n, const char *name, const char *v)
{
	attr_checked(n, name, IR_ATTR_STRING)->s = ir_arena_strdup(&m->arena, v);
}

void ir_set_ints(struct ir_module *m, struct ir_node *n, const char *name, const int64_t *v,
                 int count)
{
	struct ir_attr *a = attr_checked(n, name, IR_ATTR_INTS);
	a->ints = ir_arena_alloc(&m->arena, (size_t)(count ? count : 1) * sizeof *a->ints);
	if (count)
		memcpy(a->ints, v, (size_t)count * sizeof *v);
	a->n = count;
}

void ir_set_floats(struct ir_module *m, struct ir_node *n, const char *name, const float *v,
                   int count)
{
	struct ir_attr *a = attr_checked(n, name, IR_ATTR_FLOATS);
	a->floats = ir_arena_alloc(&m->arena, (size_t)(count ? count : 1) * sizeof *a->floats);
	if (count)
		memcpy(a->floats, v, (size_t)count * sizeof *v);
	a->n = count;
}

void ir_set_t(struct ir_module *m, struct ir_node *n, const char *name, enum ir_dtype t)
{
	(void)m;
	attr_checked(n, name, IR_ATTR_DTYPE)->t = t;
}

/* ------------------------------------------------------------------------ */
/* Compaction                                                               */
/* ------------------------------------------------------------------------ */

void ir_compact(struct ir_module *m)
{
	int k = 0;
	for (int i = 0; i < m->nvalues; i++) {
		struct ir_value *v = m->values[i];
		if (v->kind == IR_VAL_DEAD)
			continue;
		v->id = k;
		m->values[k++] = v;
	}
	m->nvalues = k;
	names_rebuild(m); /* without the dead */
}
