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
 * kernel reads it densely (element i is read before element i is written)
 * and its elements are no wider than the input's (so writing element i
 * overwrites no later element), which is how chains of elementwise ops run
 * in place.
 *
 * cg_check_memory() independently verifies the result: no two tensors alive
 * at the same time overlap.
 *
 * Both are near linear in the plan: the placement finds the blocks alive
 * with a given one through a segment tree over steps (n log n, plus the
 * pairs of blocks alive at once that it has to step over), the checker
 * sweeps the tensors in offset order over another (n log n).
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
};

/* Sizes and sums of sizes stay below this, so no offset arithmetic of the
 * planner, its checker or --max-memory's total can overflow int64. */
#define MAX_BYTES ((int64_t)1 << 62)

static int64_t align_up(int64_t x) { return (x + ALIGN - 1) & ~(int64_t)(ALIGN - 1); }

/* *sum += n within MAX_BYTES (n >= 0); false, reported, past it. */
static bool add_bytes(const struct cg_plan *p, int64_t *sum, int64_t n, const char *what)
{
	if (n >= 0 && n <= MAX_BYTES && *sum <= MAX_BYTES - n) {
		*sum += n;
		return true;
	}
	ir_error(p->m->ctx, "the model needs more than %lld bytes of memory for its %s",
	         (long long)MAX_BYTES, what);
	return false;
}

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
	/* by value id: the storage root of an earlier output */
	bool *taken = ir_arena_alloc(p->arena, sizeof *taken * (size_t)(m->nvalues + 1));
	for (int i = 0; i < m->noutputs; i++) {
		struct ir_value *v = m->outputs[i], *r = cg_root(p, v);
		bool shared = r->kind != IR_VAL_NODE || taken[r->id];
		if (!shared || v == r) {
			taken[r->id] = true;
			continue;
		}
		p->vals[v->id].alias_of = NULL;
		taken[v->id] = true;
		append_copy(p, v, r);
	}
}

/* Does the kernel of step s read arg a only densely, like its output? */
static bool dense_only(const struct cg_step *s, int a)
{
	const struct cg_kernel *k = s->k;
	for (int i = 0; i < k->nx; i++)
		if (k->x[i].kind == KX_LOAD && k->x[i].arg == a && !cg_dense_view(k, &k->x[i]))
			return false;
	return true;
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
	if (x->first != y->first)
		return x->first - y->first;
	return x < y ? -1 : x > y; /* the blocks' order: deterministic */
}

/* A placed block's bytes [off, end), as the gap search reads them. */
struct span_of {
	int64_t off, end;
};

/* Sorts s[0..n) by offset (a bottom-up merge sort through tmp: where many
 * blocks are alive at once, as in a training step, this is most of the
 * planner's time, and an inline comparison is a third of qsort's). */
static void sort_spans(struct span_of *s, struct span_of *tmp, int n)
{
	for (int w = 1; w < n; w *= 2) {
		for (int lo = 0; lo < n; lo += 2 * w) {
			int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = s[j].off < s[i].off ? s[j++] : s[i++];
			while (i < mid)
				tmp[k++] = s[i++];
			while (j < hi)
				tmp[k++] = s[j++];
		}
		memcpy(s, tmp, sizeof *s * (size_t)n);
	}
}

/*
 * The placed blocks, found by lifetime: a segment tree over the steps. A
 * placed block is listed at the O(log steps) tree nodes whose ranges tile
 * its lifetime, and at the leaf of its first step (counted up the tree).
 * The blocks alive at some step of [a, e] are those alive at step a (on the
 * lists from leaf a to the root) and those starting in (a, e] (found down
 * the counts, skipping empty subtrees): each once, in O(log steps) plus
 * their number.
 */
struct placed {
	struct ir_ctx *ctx;
	int size;             /* leaves: a power of two, at least the steps */
	int *cover;           /* per tree node: its list of covering blocks */
	int *start;           /* per leaf: its list of blocks starting there */
	int *starts;          /* per tree node: blocks starting in its range */
	struct block **entry; /* list entries: the block ... */
	int *next;            /* ... and the next entry (-1 ends a list) */
	int nentries, cap;
	struct span_of *hits, *tmp; /* a query's result, and room to sort it */
	int nhits;
	int64_t work; /* the queries' results, added up */
};

static void list_push(struct placed *t, int *head, struct block *b)
{
	if (t->nentries == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->entry = ir_realloc(t->ctx, t->entry, sizeof *t->entry * (size_t)t->cap);
		t->next = ir_realloc(t->ctx, t->next, sizeof *t->next * (size_t)t->cap);
	}
	t->entry[t->nentries] = b;
	t->next[t->nentries] = *head;
	*head = t->nentries++;
}

static void placed_init(struct placed *t, struct ir_ctx *ctx, int steps, int nblocks)
{
	memset(t, 0, sizeof *t);
	t->ctx = ctx;
	t->size = 1;
	while (t->size < steps)
		t->size *= 2;
	t->cover = ir_malloc(ctx, sizeof *t->cover * (size_t)(2 * t->size));
	t->start = ir_malloc(ctx, sizeof *t->start * (size_t)t->size);
	t->starts = ir_malloc(ctx, sizeof *t->starts * (size_t)(2 * t->size));
	t->hits = ir_malloc(ctx, sizeof *t->hits * (size_t)(nblocks + 1));
	t->tmp = ir_malloc(ctx, sizeof *t->tmp * (size_t)(nblocks + 1));
	for (int i = 0; i < 2 * t->size; i++) {
		t->cover[i] = -1;
		t->starts[i] = 0;
	}
	for (int i = 0; i < t->size; i++)
		t->start[i] = -1;
}

static void placed_free(struct placed *t)
{
	ir_free(t->ctx, t->cover);
	ir_free(t->ctx, t->start);
	ir_free(t->ctx, t->starts);
	ir_free(t->ctx, t->entry);
	ir_free(t->ctx, t->next);
	ir_free(t->ctx, t->hits);
	ir_free(t->ctx, t->tmp);
}

static void placed_add(struct placed *t, struct block *b)
{
	int l = b->first + t->size, r = b->last + t->size + 1;
	for (; l < r; l /= 2, r /= 2) {
		if (l & 1)
			list_push(t, &t->cover[l++], b);
		if (r & 1)
			list_push(t, &t->cover[--r], b);
	}
	list_push(t, &t->start[b->first], b);
	for (int i = b->first + t->size; i; i /= 2)
		t->starts[i]++;
}

static void take_list(struct placed *t, int e)
{
	for (; e >= 0; e = t->next[e])
		t->hits[t->nhits++] = (struct span_of){ t->entry[e]->offset,
			                                t->entry[e]->offset + t->entry[e]->size };
}

/* The blocks starting within tree node x's range. */
static void take_starts(struct placed *t, int x)
{
	int stack[2 * 32], n = 0; /* a path's siblings: two per level */
	stack[n++] = x;
	while (n) {
		x = stack[--n];
		if (!t->starts[x])
			continue;
		if (x >= t->size) {
			take_list(t, t->start[x - t->size]);
			continue;
		}
		stack[n++] = 2 * x + 1;
		stack[n++] = 2 * x;
	}
}

/* The placed blocks alive at some step of b's lifetime, into t->hits. */
static void placed_query(struct placed *t, const struct block *b)
{
	int l = b->first + 1 + t->size, r = b->last + t->size + 1;
	t->nhits = 0;
	for (int i = b->first + t->size; i; i /= 2)
		take_list(t, t->cover[i]);
	for (; l < r; l /= 2, r /= 2) {
		if (l & 1)
			take_starts(t, l++);
		if (r & 1)
			take_starts(t, --r);
	}
}

/* Lowest offset for b clear of every placed block alive at the same time:
 * the first gap between them, by offset, that b fits. */
static int64_t best_offset(struct placed *t, const struct block *b)
{
	int64_t off = 0;
	placed_query(t, b);
	t->work += t->nhits;
	sort_spans(t->hits, t->tmp, t->nhits);
	for (int i = 0; i < t->nhits; i++) {
		if (t->hits[i].off >= off + b->size)
			break;
		if (t->hits[i].end > off)
			off = t->hits[i].end;
	}
	return off;
}

bool cg_plan_memory(struct cg_plan *p)
{
	struct ir_module *m = p->m;
	struct block *blocks, **order, **block_of;
	struct placed placed;
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
		/* a guarded step reads its guards (and the outer ones) */
		{
			struct ir_value *g[CG_MAX_GUARDS];
			int ng = cg_step_guards(st, g);
			for (int i = 0; i < ng; i++) {
				struct ir_value *r = cg_root(p, g[i]);
				p->vals[r->id].needed = true;
				if (s < p->vals[r->id].first)
					p->vals[r->id].first = s;
				if (s > p->vals[r->id].last)
					p->vals[r->id].last = s;
			}
		}
	}
	/* a run-time loop's steps run again in every iteration: what they read
	 * from before the loop (its token and carried values included) lives
	 * until the loop ends */
	for (int i = 0; i < p->nloops; i++) {
		const struct cg_loop *lp = &p->loops[i];
		for (int s = lp->open; s < lp->close; s++) {
			const struct cg_step *st = &p->steps[s];
			struct ir_value *g[CG_MAX_GUARDS];
			int ng = cg_step_guards(st, g);
			for (int a = 0; a < st->nargs + ng; a++) {
				struct ir_value *v = a < st->nargs ? st->args[a] : g[a - st->nargs];
				struct cg_val *cv = v ? &p->vals[cg_root(p, v)->id] : NULL;
				if (cv && cv->first < lp->open && cv->last < lp->close - 1)
					cv->last = lp->close - 1;
			}
		}
	}
	for (int i = 0; i < m->noutputs; i++) {
		p->vals[cg_root(p, m->outputs[i])->id].needed = true;
		if (m->out_shapes[i]) { /* read at the end of a run (cg_c_shape_end) */
			struct cg_val *cv = &p->vals[cg_root(p, m->out_shapes[i]->cond)->id];
			cv->needed = true;
			if (cv->first == INT32_MAX)
				cv->first = 0;
			cv->last = p->nsteps ? p->nsteps - 1 : 0;
		}
	}

	/* fixed storage: inputs, outputs, weights */
	for (int i = 0; i < m->ninputs; i++)
		p->vals[m->inputs[i]->id].buf = (struct cg_buf){ CG_INPUT, i, 0 };
	for (int i = 0; i < m->nvalues; i++) {
		struct ir_value *v = m->values[i];
		if (v->kind == IR_VAL_CONST && p->vals[i].needed) {
			p->vals[i].buf = (struct cg_buf){ CG_WEIGHT, 0, woff };
			if (!add_bytes(p, &woff, bytes_of(v), "weights"))
				return false;
			woff = align_up(woff);
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
	block_of = ir_arena_alloc(p->arena, sizeof *block_of * (size_t)(m->nvalues + 1));
	for (int i = 0; i < m->nvalues; i++) {
		struct cg_val *cv = &p->vals[i];
		struct ir_value *v = m->values[i];
		if (v->kind != IR_VAL_NODE || !cv->needed || cv->alias_of || cv->buf.where)
			continue;
		cv->buf.where = CG_ARENA;
		if (cv->last < cv->first)
			cv->last = cv->first;
		block_of[i] = &blocks[nb];
		blocks[nb++] = (struct block){ .v = v, .first = cv->first, .last = cv->last };
		if (!add_bytes(p, &blocks[nb - 1].size, bytes_of(v), "intermediates"))
			return false;
	}
	for (int s = 0; s < p->nsteps; s++)
		if (p->steps[s].ws_bytes) {
			blocks[nb++] = (struct block){ .step = s, .first = s, .last = s };
			if (!add_bytes(p, &blocks[nb - 1].size, p->steps[s].ws_bytes, "workspaces"))
				return false;
		}
	/* the sum bounds every offset greedy placement can give */
	for (int i = 0; i < nb; i++) {
		blocks[i].size = align_up(blocks[i].size);
		if (!add_bytes(p, &p->naive_bytes, blocks[i].size, "intermediates"))
			return false;
	}

	/* in place: a kernel's output takes a dense input's block that dies here */
	for (int s = 0; s < p->nsteps; s++) {
		struct cg_step *st = &p->steps[s];
		struct block *out;
		if (!st->is_kernel)
			continue;
		out = block_of[st->args[0]->id];
		if (!out || out->joined)
			continue;
		for (int a = st->nout; a < st->nargs; a++) {
			struct ir_value *r = cg_root(p, st->args[a]);
			struct block *in = block_of[r->id];
			/* elements no wider than the input's: writing element i
			 * then overwrites no element after i before it is read
			 * (an f32 over a bool or f16 input would) */
			if (!in || p->vals[r->id].last != s || !dense_only(st, a) ||
			    ir_dtype_size(st->args[0]->type.dtype) > ir_dtype_size(r->type.dtype))
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
	placed_init(&placed, m->ctx, p->nsteps, nplace);
	for (int i = 0; i < nplace; i++) {
		order[i]->offset = best_offset(&placed, order[i]);
		placed_add(&placed, order[i]);
		if (order[i]->offset + order[i]->size > p->arena_bytes)
			p->arena_bytes = order[i]->offset + order[i]->size;
	}
	p->plan_work = placed.work;
	placed_free(&placed);
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
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * The sweep's tree over steps: for a range of steps, the largest end offset
 * (and its span) among the spans swept so far alive at one of them. tag[x]
 * is the largest end of a span whose lifetime tiles x's whole range, top[x]
 * the largest of the tags at x and below: a range's answer is the tops of
 * its tiling nodes and the tags above them, which lie on the paths from its
 * two end leaves to the root.
 */
struct end_tree {
	int size;
	int64_t *tag, *top;
	int *tag_span, *top_span;
};

static void raise_to(int64_t *v, int *who, int64_t end, int span)
{
	if (end > *v) {
		*v = end;
		*who = span;
	}
}

static void end_tree_add(struct end_tree *t, int first, int last, int64_t end, int span)
{
	int l = first + t->size, r = last + t->size + 1;
	for (int i = l; i; i /= 2)
		raise_to(&t->top[i], &t->top_span[i], end, span);
	for (int i = r - 1; i; i /= 2)
		raise_to(&t->top[i], &t->top_span[i], end, span);
	for (; l < r; l /= 2, r /= 2) {
		if (l & 1) {
			raise_to(&t->tag[l], &t->tag_span[l], end, span);
			raise_to(&t->top[l], &t->top_span[l], end, span), l++;
		}
		if (r & 1) {
			--r;
			raise_to(&t->tag[r], &t->tag_span[r], end, span);
			raise_to(&t->top[r], &t->top_span[r], end, span);
		}
	}
}

static int64_t end_tree_max(const struct end_tree *t, int first, int last, int *span)
{
	int l = first + t->size, r = last + t->size + 1;
	int64_t best = INT64_MIN;
	for (int i = l; i; i /= 2)
		raise_to(&best, span, t->tag[i], t->tag_span[i]);
	for (int i = r - 1; i; i /= 2)
		raise_to(&best, span, t->tag[i], t->tag_span[i]);
	for (; l < r; l /= 2, r /= 2) {
		if (l & 1)
			raise_to(&best, span, t->top[l], t->top_span[l]), l++;
		if (r & 1)
			--r, raise_to(&best, span, t->top[r], t->top_span[r]);
	}
	return best;
}

/* Every tensor a step reads that a step computes (not an input or a
 * weight, and not empty) was written by an earlier step. */
static int check_order(const struct cg_plan *p)
{
	struct ir_module *m = p->m;
	bool *written = ir_malloc(m->ctx, sizeof *written * (size_t)(m->nvalues + 1));
	int bad = 0;
	memset(written, 0, sizeof *written * (size_t)(m->nvalues + 1));
	for (int s = 0; s < p->nsteps; s++) {
		const struct cg_step *st = &p->steps[s];
		for (int a = st->nout; a < st->nargs; a++) {
			struct ir_value *r = st->args[a] ? cg_root(p, st->args[a]) : NULL;
			if (r && r->kind == IR_VAL_NODE && !written[r->id] && bytes_of(r)) {
				ir_error(m->ctx,
				         "memory plan: step %d reads '%s' before a step writes it",
				         s, r->name);
				bad++;
			}
		}
		for (int a = 0; a < st->nout; a++)
			if (st->args[a])
				written[cg_root(p, st->args[a])->id] = true;
	}
	ir_free(m->ctx, written);
	return bad;
}

/*
 * Checked independently of the planner's own structures, from the plan's
 * storage alone: every arena tensor and workspace is a span of bytes over a
 * range of steps, and two spans conflict when both ranges meet. An in-place
 * pair (a kernel's output over a dense input dying at that step) shares its
 * block by design: where the output lies within the input's bytes and
 * begins where the input ends, the output's span starts one step later (at
 * the shared step the input's span covers its bytes). Then a sweep in
 * offset order asks, for each span, the largest end offset among the
 * earlier spans alive at one of its steps: past its offset, they overlap.
 * O(n log n) for n spans; each conflicting span is reported once, with the
 * span reaching furthest over it.
 */
int cg_check_memory(const struct cg_plan *p)
{
	struct ir_module *m = p->m;
	struct ir_ctx *ctx = m->ctx;
	struct span *sp = ir_malloc(ctx, sizeof *sp * (size_t)(m->nvalues + p->nsteps + 1));
	struct end_tree t = { .size = 1 };
	int n = 0, bad = 0;
	for (int i = 0; i < m->nvalues; i++) {
		const struct cg_val *cv = &p->vals[i];
		const struct cg_val *src;
		struct span s;
		if (cv->alias_of || cv->buf.where != CG_ARENA || !cv->needed)
			continue;
		s = (struct span){ m->values[i]->name, cv->buf.offset, bytes_of(m->values[i]),
			           cv->first, cv->last < cv->first ? cv->first : cv->last };
		src = cv->inplace_of ? &p->vals[cv->inplace_of->id] : NULL;
		if (src && src->buf.where == CG_ARENA && s.off == src->buf.offset &&
		    s.size <= bytes_of(cv->inplace_of) && src->last == s.first)
			s.first++;
		if (s.first <= s.last)
			sp[n++] = s;
	}
	for (int s = 0; s < p->nsteps; s++)
		if (p->steps[s].ws_bytes)
			sp[n++] = (struct span){ "workspace", p->steps[s].ws_offset,
				                 p->steps[s].ws_bytes, s, s };
	while (t.size < p->nsteps)
		t.size *= 2;
	t.tag = ir_malloc(ctx, sizeof *t.tag * (size_t)(2 * t.size));
	t.top = ir_malloc(ctx, sizeof *t.top * (size_t)(2 * t.size));
	t.tag_span = ir_malloc(ctx, sizeof *t.tag_span * (size_t)(2 * t.size));
	t.top_span = ir_malloc(ctx, sizeof *t.top_span * (size_t)(2 * t.size));
	for (int i = 0; i < 2 * t.size; i++) {
		t.tag[i] = t.top[i] = INT64_MIN;
		t.tag_span[i] = t.top_span[i] = -1;
	}
	bad += check_order(p);
	qsort(sp, (size_t)n, sizeof *sp, cmp_span);
	for (int i = 0; i < n; i++) {
		int other = -1;
		if (sp[i].off < 0 || sp[i].off + sp[i].size > p->arena_bytes) {
			ir_error(ctx, "memory plan: '%s' lies outside the arena", sp[i].what);
			bad++;
		}
		if (!sp[i].size)
			continue;
		if (sp[i].first < 0 || sp[i].last >= p->nsteps) {
			ir_error(ctx, "memory plan: '%s' lives outside the steps", sp[i].what);
			bad++;
			continue;
		}
		if (end_tree_max(&t, sp[i].first, sp[i].last, &other) > sp[i].off) {
			ir_error(ctx, "memory plan: '%s' and '%s' are alive together but overlap",
			         sp[other].what, sp[i].what);
			bad++;
		}
		end_tree_add(&t, sp[i].first, sp[i].last, sp[i].off + sp[i].size, i);
	}
	ir_free(ctx, t.tag);
	ir_free(ctx, t.top);
	ir_free(ctx, t.tag_span);
	ir_free(ctx, t.top_span);
	ir_free(ctx, sp);
	return bad;
}
