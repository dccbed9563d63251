/*
 * memplan.c - where every tensor lives at run time.
 *
 * Graph inputs are read from the caller's buffers and graph outputs written
 * straight into the caller's buffers; constants live in the weights; every
 * other tensor and every step's workspace gets a block of one arena. A
 * reshape shares its source's storage (it is the same bytes).
 *
 * Blocks are placed "greedy by size": largest first, each at the lowest
 * offset that does not overlap a block whose lifetime [defining step, last
 * reading step] intersects its own. Before that, an elementwise kernel's
 * output takes over the block of an input that dies at that step when the
 * kernel reads it densely (element i is read before element i is written),
 * which is how chains of elementwise ops run in place.
 *
 * cg_check_memory() independently verifies the result: no two tensors alive
 * at the same time overlap.
 */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 64

struct block {
	struct ir_value *v; /* root value, or NULL for a workspace */
	int step;           /* for a workspace */
	int64_t size;       /* bytes, aligned */
	int first, last;
	struct block *joined; /* shares the storage of this block */
	int64_t offset;
	bool placed;
};

static int64_t align_up(int64_t x) { return (x + ALIGN - 1) & ~(int64_t)(ALIGN - 1); }

static int64_t bytes_of(const struct ir_value *v)
{
	return ir_type_elems(&v->type) * ir_dtype_size(v->type.dtype);
}

/* A dense copy step appended at the end: out <- src. */
static void append_copy(struct cg_plan *p, struct ir_value *out, struct ir_value *src)
{
	struct cg_step *s;
	int64_t st[IR_MAX_RANK], n = 1;
	if (p->nsteps == p->cap_steps) {
		int cap = p->cap_steps ? 2 * p->cap_steps : 64;
		struct cg_step *ns = ir_arena_alloc(p->arena, sizeof *ns * (size_t)cap);
		if (p->nsteps)
			memcpy(ns, p->steps, sizeof *ns * (size_t)p->nsteps);
		p->steps = ns;
		p->cap_steps = cap;
	}
	s = &p->steps[p->nsteps++];
	memset(s, 0, sizeof *s);
	s->node = out->def;
	s->covers = out->def ? out->def->name : out->name;
	s->lib = CG_LIB_COPY;
	s->nout = 1;
	s->nargs = 2;
	s->args = ir_arena_alloc(p->arena, sizeof *s->args * 2);
	s->args[0] = out;
	s->args[1] = src;
	/* same elements, dense to dense: one flat run */
	for (int i = 0; i < out->type.rank; i++)
		n *= out->type.dims[i];
	st[0] = 1;
	s->d.copy.esize = ir_dtype_size(out->type.dtype);
	s->d.copy.rank = 1;
	s->d.copy.dims[0] = n;
	memcpy(s->d.copy.strides, st, sizeof(int64_t));
	s->d.copy.dst_dense = 1;
}

/*
 * A graph output must own its storage. One that aliases (through reshapes)
 * a graph input, a constant or another output gets its own copy.
 */
static void separate_outputs(struct cg_plan *p)
{
	struct ir_module *m = p->m;
	for (int i = 0; i < m->noutputs; i++) {
		struct ir_value *v = m->outputs[i], *r = cg_root(p, v);
		bool shared = r->kind != IR_VAL_NODE;
		for (int k = 0; k < i && !shared; k++)
			shared = cg_root(p, m->outputs[k]) == r;
		if (!shared || v == r)
			continue;
		p->vals[v->id].alias_of = NULL;
		append_copy(p, v, r);
	}
}

/* Does the kernel of step s read arg a only densely, like its output? */
static bool dense_only(const struct cg_step *s, int a)
{
	const struct cg_kernel *k = s->k;
	int64_t st = 1;
	int64_t dense[IR_MAX_RANK];
	for (int d = k->rank - 1; d >= 0; d--) {
		dense[d] = st;
		st *= k->dims[d];
	}
	for (int i = 0; i < k->nx; i++) {
		const struct cg_kx *x = &k->x[i];
		if (x->kind != KX_LOAD || x->arg != a)
			continue;
		if (x->view.offset)
			return false;
		for (int d = 0; d < k->rank; d++)
			if (x->view.strides[d] != dense[d])
				return false;
	}
	return true;
}

static struct block *find_block(struct block *b, int nb, const struct ir_value *v)
{
	for (int i = 0; i < nb; i++)
		if (b[i].v == v)
			return &b[i];
	return NULL;
}

static struct block *resolve(struct block *b)
{
	while (b->joined)
		b = b->joined;
	return b;
}

static int cmp_size(const void *a, const void *b)
{
	const struct block *x = *(struct block *const *)a, *y = *(struct block *const *)b;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->first - y->first;
}

static bool overlap_time(const struct block *a, const struct block *b)
{
	return a->first <= b->last && b->first <= a->last;
}

/* Lowest offset for b clear of every placed block alive at the same time. */
static int64_t best_offset(struct block **placed, int np, const struct block *b)
{
	int64_t off = 0;
	bool moved = true;
	while (moved) {
		moved = false;
		for (int i = 0; i < np; i++) {
			const struct block *o = placed[i];
			if (!overlap_time(o, b) || off >= o->offset + o->size ||
			    o->offset >= off + b->size)
				continue;
			off = o->offset + o->size;
			moved = true;
		}
	}
	return off;
}

bool cg_plan_memory(struct cg_plan *p)
{
	struct ir_module *m = p->m;
	struct block *blocks;
	struct block **order;
	int nb = 0, nplace = 0;
	int64_t woff = 0;

	separate_outputs(p);
	for (int i = 0; i < m->nvalues; i++) {
		p->vals[i].first = INT32_MAX;
		p->vals[i].last = -1;
	}
	/* lifetimes of storage roots */
	for (int s = 0; s < p->nsteps; s++) {
		struct cg_step *st = &p->steps[s];
		for (int a = 0; a < st->nargs; a++) {
			struct ir_value *r;
			if (!st->args[a])
				continue;
			r = cg_root(p, st->args[a]);
			p->vals[r->id].needed = true;
			if (s < p->vals[r->id].first)
				p->vals[r->id].first = s;
			if (s > p->vals[r->id].last)
				p->vals[r->id].last = s;
		}
	}
	for (int i = 0; i < m->noutputs; i++)
		p->vals[cg_root(p, m->outputs[i])->id].needed = true;

	/* fixed storage: inputs, outputs, weights */
	for (int i = 0; i < m->ninputs; i++)
		p->vals[m->inputs[i]->id].buf = (struct cg_buf){ CG_INPUT, i, 0 };
	for (int i = 0; i < m->nvalues; i++) {
		struct ir_value *v = m->values[i];
		if (v->kind == IR_VAL_CONST && p->vals[i].needed) {
			p->vals[i].buf = (struct cg_buf){ CG_WEIGHT, 0, woff };
			woff = align_up(woff + bytes_of(v));
		}
	}
	p->weight_bytes = woff;
	for (int i = 0; i < m->noutputs; i++) {
		struct ir_value *r = cg_root(p, m->outputs[i]);
		if (r->kind == IR_VAL_NODE)
			p->vals[r->id].buf = (struct cg_buf){ CG_OUTPUT, i, 0 };
	}

	/* arena blocks: node results without fixed storage, and workspaces */
	blocks = ir_arena_alloc(p->arena, sizeof *blocks * (size_t)(m->nvalues + p->nsteps + 1));
	for (int i = 0; i < m->nvalues; i++) {
		struct cg_val *cv = &p->vals[i];
		struct ir_value *v = m->values[i];
		if (v->kind != IR_VAL_NODE || !cv->needed || cv->alias_of || cv->buf.where)
			continue;
		cv->buf.where = CG_ARENA;
		if (cv->last < cv->first)
			cv->last = cv->first;
		blocks[nb++] = (struct block){
			.v = v, .size = align_up(bytes_of(v)), .first = cv->first, .last = cv->last
		};
	}
	for (int s = 0; s < p->nsteps; s++)
		if (p->steps[s].ws_bytes)
			blocks[nb++] = (struct block){ .step = s,
				                       .size = align_up(p->steps[s].ws_bytes),
				                       .first = s,
				                       .last = s };
	for (int i = 0; i < nb; i++)
		p->naive_bytes += blocks[i].size;

	/* in place: a kernel's output takes a dense input's block that dies here */
	for (int s = 0; s < p->nsteps; s++) {
		struct cg_step *st = &p->steps[s];
		struct block *out;
		if (!st->is_kernel)
			continue;
		out = find_block(blocks, nb, st->args[0]);
		if (!out || out->joined)
			continue;
		for (int a = st->nout; a < st->nargs; a++) {
			struct ir_value *r = cg_root(p, st->args[a]);
			struct block *in = find_block(blocks, nb, r);
			if (!in || p->vals[r->id].last != s || !dense_only(st, a))
				continue;
			in = resolve(in);
			if (in->size != out->size || in == out)
				continue;
			out->joined = in;
			if (out->last > in->last)
				in->last = out->last;
			p->vals[st->args[0]->id].inplace_of = r;
			break;
		}
	}

	/* place the blocks, largest first */
	order = ir_arena_alloc(p->arena, sizeof *order * (size_t)(nb + 1));
	for (int i = 0; i < nb; i++)
		if (!blocks[i].joined)
			order[nplace++] = &blocks[i];
	qsort(order, (size_t)nplace, sizeof *order, cmp_size);
	for (int i = 0; i < nplace; i++) {
		order[i]->offset = best_offset(order, i, order[i]);
		order[i]->placed = true;
		if (order[i]->offset + order[i]->size > p->arena_bytes)
			p->arena_bytes = order[i]->offset + order[i]->size;
	}
	for (int i = 0; i < nb; i++) {
		int64_t off = resolve(&blocks[i])->offset;
		if (blocks[i].v)
			p->vals[blocks[i].v->id].buf.offset = off;
		else
			p->steps[blocks[i].step].ws_offset = off;
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* Checker                                                                  */
/* ------------------------------------------------------------------------ */

struct span {
	const char *what;
	int64_t off, size;
	int first, last;
	const struct ir_value *v;
};

int cg_check_memory(const struct cg_plan *p)
{
	struct ir_module *m = p->m;
	struct span *sp = calloc((size_t)(m->nvalues + p->nsteps + 1), sizeof *sp);
	int n = 0, bad = 0;
	if (!sp)
		return 1;
	for (int i = 0; i < m->nvalues; i++) {
		const struct cg_val *cv = &p->vals[i];
		if (cv->alias_of || cv->buf.where != CG_ARENA || !cv->needed)
			continue;
		sp[n++] = (struct span){ m->values[i]->name,
			                 cv->buf.offset,
			                 bytes_of(m->values[i]),
			                 cv->first,
			                 cv->last < cv->first ? cv->first : cv->last,
			                 m->values[i] };
	}
	for (int s = 0; s < p->nsteps; s++)
		if (p->steps[s].ws_bytes)
			sp[n++] = (struct span){
				"workspace", p->steps[s].ws_offset, p->steps[s].ws_bytes, s, s, NULL
			};
	for (int i = 0; i < n; i++) {
		if (sp[i].off < 0 || sp[i].off + sp[i].size > p->arena_bytes) {
			ir_error(m->ctx, "memory plan: '%s' lies outside the arena", sp[i].what);
			bad++;
		}
		for (int k = i + 1; k < n; k++) {
			bool t = sp[i].first <= sp[k].last && sp[k].first <= sp[i].last;
			bool b = sp[i].off < sp[k].off + sp[k].size &&
			         sp[k].off < sp[i].off + sp[i].size;
			/* an in-place pair shares its block by design */
			bool pair = sp[i].v && sp[k].v &&
			            (p->vals[sp[i].v->id].inplace_of == sp[k].v ||
			             p->vals[sp[k].v->id].inplace_of == sp[i].v);
			if (t && b && !pair && sp[i].size && sp[k].size) {
				ir_error(
				        m->ctx,
				        "memory plan: '%s' and '%s' are alive together but overlap",
				        sp[i].what, sp[k].what);
				bad++;
			}
		}
	}
	free(sp);
	return bad;
}
