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

void ir_verror(struct ir_ctx *ctx, const char *kind, const char *fmt, va_list ap)
{
	char line[2048];
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
	if (ctx->diag)
		ctx->diag(ctx->diag_ud, line);
	else
		fprintf(stderr, "%s\n", line);
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

void ir_arena_free(struct ir_arena *a)
{
	free_chain(a->ctx, a->head);
	free_chain(a->ctx, a->big);
	ir_free(a->ctx, a->big_set);
	a->head = a->big = NULL;
	a->big_set = NULL;
	a->big_cap = a->big_count = 0;
	a->used = 0;
}

/* The slot of p in a's set of large blocks, or the empty slot it would take
 * (linear probing; the set is never more than half full). */
static size_t big_home(const struct ir_arena *a, const void *p)
{
	return (size_t)(((uintptr_t)p >> 4) * UINT64_C(0x9e3779b97f4a7c15)) & (a->big_cap - 1);
}

static size_t big_slot(const struct ir_arena *a, const void *p)
{
	size_t h = big_home(a, p);
	while (a->big_set[h] && a->big_set[h] != p)
		h = (h + 1) & (a->big_cap - 1);
	return h;
}

static void big_set_add(struct ir_arena *a, void *p)
{
	if ((a->big_count + 1) * 2 > a->big_cap) {
		void **old = a->big_set;
		size_t cap = a->big_cap;
		a->big_cap = cap ? 2 * cap : 64;
		a->big_set = ir_malloc(a->ctx, sizeof *a->big_set * a->big_cap);
		memset(a->big_set, 0, sizeof *a->big_set * a->big_cap);
		for (size_t i = 0; i < cap; i++)
			if (old[i])
				a->big_set[big_slot(a, old[i])] = old[i];
		ir_free(a->ctx, old);
	}
	a->big_set[big_slot(a, p)] = p;
	a->big_count++;
}

/* Removes p, shifting back the entries that probed past its slot. */
static void big_set_remove(struct ir_arena *a, const void *p)
{
	size_t mask = a->big_cap - 1, hole = big_slot(a, p), i = hole;
	IR_ASSERT(a->big_set[hole] == p);
	a->big_set[hole] = NULL;
	a->big_count--;
	for (;;) {
		size_t home;
		i = (i + 1) & mask;
		if (!a->big_set[i])
			return;
		home = big_home(a, a->big_set[i]);
		/* an entry whose probe from home passed the hole moves into it */
		if (((i - home) & mask) < ((i - hole) & mask))
			continue;
		a->big_set[hole] = a->big_set[i];
		a->big_set[i] = NULL;
		hole = i;
	}
}

void *ir_arena_alloc_big(struct ir_arena *a, size_t n)
{
	struct ir_arena_block *b;
	if (n > SIZE_MAX - sizeof *b - 16)
		ir_oom(a->ctx);
	b = ir_malloc(a->ctx, sizeof *b + n);
	b->size = b->used = n;
	b->prev = NULL;
	b->next = a->big;
	if (a->big)
		a->big->prev = b;
	a->big = b;
	a->used += n;
	big_set_add(a, b->data);
	return b->data;
}

void ir_arena_release(struct ir_arena *a, void *p)
{
	struct ir_arena_block *b = (struct ir_arena_block *)((unsigned char *)p -
	                                                     offsetof(struct ir_arena_block, data));
	if (b->prev)
		b->prev->next = b->next;
	else
		a->big = b->next;
	if (b->next)
		b->next->prev = b->prev;
	a->used -= b->size;
	big_set_remove(a, p);
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

/* Does p point into one of a's big blocks (start of its data)? */
static bool arena_owns_big(const struct ir_arena *a, const void *p)
{
	return a->big_cap && a->big_set[big_slot(a, p)] == p;
}

/* ------------------------------------------------------------------------ */
/* Op table                                                                 */
/* ------------------------------------------------------------------------ */

const struct ir_op_info ir_ops[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp_, sch, inf) \
	[IR_OP_##id] = { .name = nm,                                   \
		         .onnx = ox,                                   \
		         .min_in = imin,                               \
		         .max_in = imax,                               \
		         .min_out = omin,                              \
		         .max_out = omax,                              \
		         .kind = IR_KIND_##knd,                        \
		         .amp = IR_AMP_##amp_,                         \
		         .schema = sch,                                \
		         .infer = inf },
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

uint64_t ir_checksum(const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint32_t ir_dropout_threshold(float ratio) { return (uint32_t)((double)ratio * 16777216.0 + 0.5); }

float ir_dropout_scale(float ratio)
{
	return ratio < 1 ? (float)(1.0 / (1.0 - (double)ratio)) : 0.0f;
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

struct ir_value *ir_find_value(const struct ir_module *m, const char *name)
{
	size_t h;
	if (!m->cap_names)
		return NULL;
	h = (size_t)hash_str(name) & (size_t)(m->cap_names - 1);
	while (m->names[h]) {
		if (strcmp(m->names[h]->name, name) == 0)
			return m->names[h];
		h = (h + 1) & (size_t)(m->cap_names - 1);
	}
	return NULL;
}

static void names_insert(struct ir_module *m, struct ir_value *v)
{
	size_t h;
	if (ir_find_value(m, v->name))
		ir_panic(__FILE__, __LINE__, "duplicate value name '%s'", v->name);
	if ((m->nnames + 1) * 2 > m->cap_names)
		names_grow(m);
	h = (size_t)hash_str(v->name) & (size_t)(m->cap_names - 1);
	while (m->names[h])
		h = (h + 1) & (size_t)(m->cap_names - 1);
	m->names[h] = v;
	m->nnames++;
}

/* Rebuilds the name set: open addressing has no cheap delete. */
static void names_rebuild(struct ir_module *m)
{
	m->names = NULL;
	m->cap_names = m->nnames = 0;
	for (int i = 0; i < m->nvalues; i++)
		names_insert(m, m->values[i]);
}

bool ir_is_output(const struct ir_module *m, const struct ir_value *v)
{
	for (int i = 0; i < m->noutputs; i++)
		if (m->outputs[i] == v)
			return true;
	return false;
}

void ir_rename_value(struct ir_module *m, struct ir_value *v, const char *name)
{
	if (ir_find_value(m, name))
		ir_panic(__FILE__, __LINE__, "duplicate value name '%s'", name);
	v->name = ir_arena_strdup(&m->arena, name);
	names_rebuild(m);
}

const char *ir_unique_name(struct ir_module *m, const char *base)
{
	const char *name = base;
	for (int i = 1; ir_find_value(m, name); i++)
		name = ir_arena_printf(&m->arena, "%s.%d", base, i);
	return name == base ? ir_arena_strdup(&m->arena, base) : name;
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
	if (data && arena_owns_big(&m->arena, data)) {
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
	m->outputs = grow(&m->arena, m->outputs, m->noutputs, &m->cap_outputs, sizeof *m->outputs);
	m->outputs[m->noutputs++] = v;
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

static void add_use(struct ir_module *m, struct ir_value *v, struct ir_node *n, int i)
{
	v->uses = grow(&m->arena, v->uses, v->nuses, &v->cap_uses, sizeof *v->uses);
	v->uses[v->nuses].node = n;
	v->uses[v->nuses].index = i;
	v->nuses++;
}

static void drop_use(struct ir_value *v, struct ir_node *n, int i)
{
	for (int k = 0; k < v->nuses; k++) {
		if (v->uses[k].node == n && v->uses[k].index == i) {
			v->uses[k] = v->uses[--v->nuses];
			return;
		}
	}
	ir_panic(__FILE__, __LINE__, "use of '%s' by node '%s' not found", v->name, n->name);
}

void ir_kill_value(struct ir_module *m, struct ir_value *v)
{
	IR_ASSERT(v->nuses == 0);
	(void)m;
	if (v->kind == IR_VAL_CONST && v->data && arena_owns_big(&m->arena, v->data))
		ir_arena_release(&m->arena, v->data);
	v->data = NULL;
	v->kind = IR_VAL_DEAD;
}

/* ------------------------------------------------------------------------ */
/* Nodes                                                                    */
/* ------------------------------------------------------------------------ */

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
	n->prev = m->last;
	if (m->last)
		m->last->next = n;
	else
		m->first = n;
	m->last = n;
	m->nnodes++;
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
		drop_use(n->in[i], n, i);
	unlink_node(m, n);
	m->nnodes--;
}

void ir_detach_node(struct ir_module *m, struct ir_node *n)
{
	for (int i = 0; i < n->nin; i++)
		drop_use(n->in[i], n, i);
	unlink_node(m, n);
	m->nnodes--;
}

void ir_set_input(struct ir_module *m, struct ir_node *n, int i, struct ir_value *v)
{
	IR_ASSERT(i >= 0 && i < n->nin && v);
	drop_use(n->in[i], n, i);
	n->in[i] = v;
	add_use(m, v, n, i);
}

void ir_replace_uses(struct ir_module *m, struct ir_value *from, struct ir_value *to)
{
	if (from == to)
		return;
	while (from->nuses) {
		struct ir_use u = from->uses[from->nuses - 1];
		ir_set_input(m, u.node, u.index, to);
	}
	for (int i = 0; i < m->noutputs; i++)
		if (m->outputs[i] == from)
			m->outputs[i] = to;
}

bool ir_infer_types(struct ir_module *m, const struct ir_node *n, struct ir_type *out, char *err,
                    size_t errlen)
{
	(void)m;
	memset(out, 0, sizeof *out * (size_t)n->nout);
	if (errlen)
		err[0] = 0;
	return ir_ops[n->op].infer(n, out, err, errlen);
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
