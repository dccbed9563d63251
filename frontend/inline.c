/*
 * inline.c - model-local functions (ModelProto.functions), inlined
 * before the graph is imported.
 *
 * A node whose (domain, op_type, overload) names a function of the model is
 * replaced by the function's body, recursively (a body may call other
 * functions of the model, never itself):
 *
 *   - the body's formal inputs and outputs become the call's actual ones
 *     (an omitted optional input is omitted in the body too; an output the
 *     call leaves out gets a fresh name);
 *   - every other tensor of the body is renamed "CALL/NAME", and each body
 *     node "CALL/NODE", so diagnostics name the calling node and the node
 *     inside the function (CALL is itself such a path for nested calls);
 *   - an attribute that refers to a function attribute (ref_attr_name)
 *     takes the call's value of it, else the function's default
 *     (FunctionProto.attribute_proto), else it is left out, as ONNX says;
 *   - each body node runs at the function's own opset of the default
 *     domain (its opset_import), which may differ from the model's;
 *   - sub-graphs (If branches: onnxscript's functions test IsScalar so) are
 *     copied with the same renaming, reading the body's values, and calls
 *     inside them, as inside the graph's own sub-graphs, are inlined too;
 *     a sub-graph's nodes run at the opset of the node that holds it.
 *
 * FunctionProto's attribute_proto (field 11) and overload (13), and
 * NodeProto's overload (8), are newer than the onnx.proto onnxc is built
 * from: they are read from the fields protobuf-c keeps as unknown.
 *
 * Inlining is bounded by FE_MAX_INLINED nodes in all, so that a small model
 * of functions calling each other twice cannot expand exponentially.
 * The proto's own node list is restored before it is freed.
 */
#include "fe.h"

#include <string.h>

#define FE_MAX_INLINED    ((size_t)1 << 20)
#define FE_MAX_CALL_DEPTH 64

struct fn {
	const Onnx__FunctionProto *f;
	const char *overload;
	Onnx__AttributeProto **defaults; /* attribute_proto */
	size_t ndefaults;
	int64_t opset; /* of the default domain in the body */
	bool active;   /* being inlined (a call of it now is recursion) */
};

/* A list of nodes being built: the graph's, or a sub-graph's. */
struct nodes {
	const Onnx__NodeProto **v;
	int64_t *opsets;
	const char **names;
	size_t n, cap;
};

/* Names: what a name of a function body or sub-graph is in the graph. A
 * sub-graph's scope has its parent's names too (it reads outer values). */
struct scope {
	struct ir_map map;
	const struct scope *parent;
};

/* The function call being inlined, where attribute references resolve
 * (NULL outside functions). */
struct frame {
	const Onnx__NodeProto *call;
	const struct fn *fn;
	const char *cname; /* the call's node name: the prefix of what it defines */
};

struct inliner {
	struct fe *fe;
	struct ir_arena *a;
	struct fn *fns;
	size_t nfns;
	struct ir_map names; /* every tensor name in use */
	size_t total;        /* nodes made, sub-graphs' included */
	bool failed;
};

/* protobuf-c allocations for what is decoded here live in the module. */
static void *arena_alloc_fn(void *ud, size_t size) { return ir_arena_alloc(ud, size ? size : 1); }
static void arena_free_fn(void *ud, void *p) { (void)ud, (void)p; }

/* The payload of the next length-delimited unknown field tag of m from
 * *from (protobuf-c keeps the length prefix in the data): true with it in
 * *data, *len. */
static bool unknown(const ProtobufCMessage *m, uint32_t tag, size_t *from, const uint8_t **data,
                    size_t *len)
{
	for (size_t i = *from; i < m->n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];
		uint64_t n = 0;
		size_t k = 0;
		if (u->tag != tag || u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
			continue;
		for (; k < u->len && k < 10; k++) {
			n |= (uint64_t)(u->data[k] & 0x7f) << (7 * k);
			if (!(u->data[k] & 0x80))
				break;
		}
		if (k >= u->len || n > u->len - k - 1)
			continue; /* cannot happen for data protobuf-c scanned */
		*from = i + 1;
		*data = u->data + k + 1;
		*len = (size_t)n;
		return true;
	}
	return false;
}

static const char *unknown_string(struct ir_arena *a, const ProtobufCMessage *m, uint32_t tag)
{
	size_t at = 0, len;
	const uint8_t *data;
	return unknown(m, tag, &at, &data, &len) ? ir_arena_strndup(a, (const char *)data, len)
	                                         : "";
}

static bool default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

static bool same_domain(const char *a, const char *b)
{
	return default_domain(a) ? default_domain(b) : b && !strcmp(a, b);
}

static struct fn *find_fn(struct inliner *in, const Onnx__NodeProto *p)
{
	const char *overload = NULL;
	for (size_t i = 0; i < in->nfns; i++) {
		const Onnx__FunctionProto *f = in->fns[i].f;
		if (!f->name || !p->op_type || strcmp(f->name, p->op_type) ||
		    !same_domain(p->domain, f->domain))
			continue;
		if (!overload)
			overload = unknown_string(in->a, &p->base, 8);
		if (!strcmp(overload, in->fns[i].overload))
			return &in->fns[i];
	}
	return NULL;
}

/* A name not in use, from base. */
static const char *fresh(struct inliner *in, const char *base)
{
	const char *name = base;
	for (int k = 1; ir_map_get(&in->names, name); k++)
		name = ir_arena_printf(in->a, "%s_%d", base, k);
	ir_map_put(&in->names, name, (void *)name);
	return name;
}

static void push(struct inliner *in, struct nodes *l, const Onnx__NodeProto *p, int64_t opset,
                 const char *name)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		const Onnx__NodeProto **v = ir_arena_alloc(in->a, sizeof *v * cap);
		int64_t *s = ir_arena_alloc(in->a, sizeof *s * cap);
		const char **nm = ir_arena_alloc(in->a, sizeof *nm * cap);
		if (l->n) {
			memcpy(v, l->v, sizeof *v * l->n);
			memcpy(s, l->opsets, sizeof *s * l->n);
			memcpy(nm, l->names, sizeof *nm * l->n);
		}
		l->v = v, l->opsets = s, l->names = nm, l->cap = cap;
	}
	l->v[l->n] = p;
	l->opsets[l->n] = opset;
	l->names[l->n++] = name;
	if (++in->total > FE_MAX_INLINED && !in->failed) {
		ir_error(in->fe->ctx, "inlining the model's functions makes more than %zu nodes",
		         FE_MAX_INLINED);
		in->failed = true;
	}
}

static const char *lookup(const struct scope *sc, const char *name)
{
	for (; sc; sc = sc->parent) {
		void **r = ir_map_get(&sc->map, name);
		if (r)
			return *r;
	}
	return NULL;
}

/* What a name read in sc is: its definition's name; a name defined
 * nowhere stays undefined (the import reports it): inside a function under
 * the call's prefix, outside it as it is. */
static const char *use(struct inliner *in, const struct scope *sc, const struct frame *fr,
                       const char *name)
{
	const char *r = name[0] ? lookup(sc, name) : "";
	return r ? r : fr ? ir_arena_printf(in->a, "%s/%s", fr->cname, name) : name;
}

/* A name defined in sc: what sc maps it to already (a function's formal
 * output, bound to the call's), else fresh under the call's prefix inside
 * a function, itself outside (a sub-graph of the graph keeps its names). */
static const char *def(struct inliner *in, struct scope *sc, const struct frame *fr,
                       const char *name)
{
	void **known = name[0] ? ir_map_get(&sc->map, name) : NULL;
	const char *r;
	if (!name[0])
		return "";
	if (known)
		return *known;
	r = fr ? fresh(in, ir_arena_printf(in->a, "%s/%s", fr->cname, name)) : name;
	ir_map_put(&sc->map, name, (void *)r);
	return r;
}

static const Onnx__AttributeProto *call_attr(const Onnx__NodeProto *call, const char *name)
{
	for (size_t i = 0; i < call->n_attribute; i++)
		if (call->attribute[i]->name && !strcmp(call->attribute[i]->name, name))
			return call->attribute[i];
	return NULL;
}

/* a with name, as a copy (the original may be shared). */
static Onnx__AttributeProto *renamed_attr(struct inliner *in, const Onnx__AttributeProto *a,
                                          const char *name)
{
	Onnx__AttributeProto *c = ir_arena_alloc(in->a, sizeof *c);
	*c = *a;
	c->name = (char *)name;
	c->ref_attr_name = NULL;
	return c;
}

static void expand(struct inliner *in, struct nodes *l, const Onnx__NodeProto *p, const char *name,
                   int64_t opset, struct scope *sc, const struct frame *fr, int depth);

/* A copy of sub-graph g of a node in scope sc: its names resolved as
 * use/def do, its nodes expanded (function calls inlined). */
static Onnx__GraphProto *copy_graph(struct inliner *in, const Onnx__GraphProto *g, int64_t opset,
                                    const struct scope *sc, const struct frame *fr, int depth)
{
	Onnx__GraphProto *c = ir_arena_alloc(in->a, sizeof *c);
	struct scope inner = { .parent = sc };
	struct nodes l = { 0 };
	*c = *g;
	ir_map_init(&inner.map, in->a);
	c->input = ir_arena_alloc(in->a, sizeof *c->input * (g->n_input + 1));
	c->output = ir_arena_alloc(in->a, sizeof *c->output * (g->n_output + 1));
	c->initializer = ir_arena_alloc(in->a, sizeof *c->initializer * (g->n_initializer + 1));
	for (size_t i = 0; i < g->n_input; i++) {
		Onnx__ValueInfoProto *v = ir_arena_alloc(in->a, sizeof *v);
		*v = *g->input[i];
		v->name = (char *)def(in, &inner, fr, v->name ? v->name : "");
		c->input[i] = v;
	}
	for (size_t i = 0; i < g->n_initializer; i++) {
		Onnx__TensorProto *t = ir_arena_alloc(in->a, sizeof *t);
		*t = *g->initializer[i];
		t->name = (char *)def(in, &inner, fr, t->name ? t->name : "");
		c->initializer[i] = t;
	}
	for (size_t i = 0; i < g->n_node && !in->failed; i++) {
		const Onnx__NodeProto *b = g->node[i];
		const char *bname = b->name && b->name[0]
		                            ? b->name
		                            : ir_arena_printf(in->a, "%s_%zu",
		                                              b->op_type ? b->op_type : "node", i);
		/* as it is: imp_if names a branch's nodes after the If */
		expand(in, &l, b, bname, opset, &inner, fr, depth);
	}
	c->node = (Onnx__NodeProto **)l.v;
	c->n_node = l.n;
	for (size_t i = 0; i < g->n_output; i++) {
		Onnx__ValueInfoProto *v = ir_arena_alloc(in->a, sizeof *v);
		*v = *g->output[i];
		v->name = (char *)use(in, &inner, fr, v->name ? v->name : "");
		c->output[i] = v;
	}
	return c;
}

/* Attribute a of a node in frame fr: a reference resolved (the call's
 * value, else the function's default, else NULL: absent), else a. */
static const Onnx__AttributeProto *resolve(struct inliner *in, const Onnx__AttributeProto *a,
                                           const struct frame *fr)
{
	const Onnx__AttributeProto *r;
	if (!a->ref_attr_name || !fr)
		return a;
	r = call_attr(fr->call, a->ref_attr_name);
	for (size_t d = 0; !r && d < fr->fn->ndefaults; d++)
		if (fr->fn->defaults[d]->name &&
		    !strcmp(fr->fn->defaults[d]->name, a->ref_attr_name))
			r = fr->fn->defaults[d];
	return r ? renamed_attr(in, r, a->name) : NULL;
}

/* p with its names resolved in sc, its attribute references in fr, its
 * sub-graphs copied; named name. */
static Onnx__NodeProto *copy_node(struct inliner *in, const Onnx__NodeProto *p, const char *name,
                                  int64_t opset, struct scope *sc, const struct frame *fr,
                                  int depth)
{
	Onnx__NodeProto *c = ir_arena_alloc(in->a, sizeof *c);
	size_t na = 0;
	*c = *p;
	c->name = (char *)name;
	c->input = ir_arena_alloc(in->a, sizeof *c->input * (p->n_input + 1));
	c->output = ir_arena_alloc(in->a, sizeof *c->output * (p->n_output + 1));
	c->attribute = ir_arena_alloc(in->a, sizeof *c->attribute * (p->n_attribute + 1));
	for (size_t i = 0; i < p->n_input; i++)
		c->input[i] = (char *)use(in, sc, fr, p->input[i]);
	for (size_t i = 0; i < p->n_attribute; i++) {
		const Onnx__AttributeProto *a = p->attribute[i];
		Onnx__AttributeProto *v = (Onnx__AttributeProto *)resolve(in, a, fr);
		if (!v)
			continue;
		if (!a->ref_attr_name && (a->g || a->n_graphs)) {
			v = renamed_attr(in, a, a->name);
			if (a->g)
				v->g = copy_graph(in, a->g, opset, sc, fr, depth);
			if (a->n_graphs) {
				v->graphs = ir_arena_alloc(in->a, sizeof *v->graphs * a->n_graphs);
				for (size_t k = 0; k < a->n_graphs; k++)
					v->graphs[k] =
					        copy_graph(in, a->graphs[k], opset, sc, fr, depth);
			}
		}
		c->attribute[na++] = v;
	}
	c->n_attribute = na;
	/* outputs last: a sub-graph cannot read its own node's outputs */
	for (size_t i = 0; i < p->n_output; i++)
		c->output[i] = (char *)def(in, sc, fr, p->output[i]);
	return c;
}

/* The body of fn in place of call (named cname, read in scope sc of the
 * frame fr around it), onto l. */
static void inline_call(struct inliner *in, struct nodes *l, struct fn *fn,
                        const Onnx__NodeProto *call, const char *cname, const struct scope *sc,
                        const struct frame *fr, int depth)
{
	const Onnx__FunctionProto *f = fn->f;
	struct scope body = { 0 }; /* functions see nothing of the graph */
	struct frame here = { call, fn, cname };
	if (fn->active || depth >= FE_MAX_CALL_DEPTH) {
		if (fn->active)
			ir_node_error(in->fe->ctx, cname, call->op_type,
			              "function '%s' calls itself (recursion is not allowed)",
			              f->name);
		else
			ir_node_error(in->fe->ctx, cname, call->op_type,
			              "function calls nest deeper than %d levels",
			              FE_MAX_CALL_DEPTH);
		in->failed = true;
		return;
	}
	if (call->n_input > f->n_input || call->n_output > f->n_output) {
		ir_node_error(
		        in->fe->ctx, cname, call->op_type,
		        "the call has %zu inputs and %zu outputs; function '%s' takes %zu and "
		        "%zu",
		        call->n_input, call->n_output, f->name, f->n_input, f->n_output);
		in->failed = true;
		return;
	}
	ir_map_init(&body.map, in->a);
	for (size_t i = 0; i < f->n_input; i++)
		ir_map_put(&body.map, f->input[i],
		           i < call->n_input ? (void *)use(in, sc, fr, call->input[i]) : "");
	for (size_t i = 0; i < f->n_output; i++) {
		bool given = i < call->n_output && call->output[i][0];
		ir_map_put(&body.map, f->output[i],
		           given ? (void *)def(in, (struct scope *)sc, fr, call->output[i])
		                 : (char *)fresh(in, ir_arena_printf(in->a, "%s/%s", cname,
		                                                     f->output[i])));
	}
	fn->active = true;
	for (size_t k = 0; k < f->n_node && !in->failed; k++) {
		const Onnx__NodeProto *b = f->node[k];
		const char *bname = ir_arena_printf(
		        in->a, "%s/%s", cname,
		        b->name && b->name[0]
		                ? b->name
		                : ir_arena_printf(in->a, "%s_%zu", b->op_type ? b->op_type : "node",
		                                  k));
		expand(in, l, b, bname, fn->opset, &body, &here, depth + 1);
	}
	fn->active = false;
}

/* Node p (named name) onto l: a function call inlined, else a copy with
 * its names resolved (the graph's own nodes outside functions, which have
 * no sub-graph, as they are). */
static void expand(struct inliner *in, struct nodes *l, const Onnx__NodeProto *p, const char *name,
                   int64_t opset, struct scope *sc, const struct frame *fr, int depth)
{
	struct fn *fn = find_fn(in, p);
	bool subgraphs = false;
	if (fn) {
		if (fr) { /* a call in a function: its attributes may refer to the frame's */
			Onnx__NodeProto *c = ir_arena_alloc(in->a, sizeof *c);
			size_t na = 0;
			*c = *p;
			c->attribute =
			        ir_arena_alloc(in->a, sizeof *c->attribute * (p->n_attribute + 1));
			for (size_t i = 0; i < p->n_attribute; i++)
				if ((c->attribute[na] = (Onnx__AttributeProto *)resolve(
				             in, p->attribute[i], fr)))
					na++;
			c->n_attribute = na;
			p = c;
		}
		inline_call(in, l, fn, p, name, sc, fr, depth);
		return;
	}
	for (size_t i = 0; i < p->n_attribute; i++)
		subgraphs |= p->attribute[i]->g || p->attribute[i]->n_graphs;
	if (!fr && !sc->parent && !subgraphs) {
		push(in, l, p, opset, name);
		return;
	}
	push(in, l, copy_node(in, p, name, opset, sc, fr, depth), opset, name);
}

/* Every tensor name g and its sub-graphs define, into in->names (sub-graphs
 * nest at most FE_MAX_NESTING deep: the loader checked). */
static void note_names(struct inliner *in, const Onnx__GraphProto *g)
{
	for (size_t i = 0; i < g->n_initializer; i++)
		if (g->initializer[i]->name)
			ir_map_put(&in->names, g->initializer[i]->name, g->initializer[i]->name);
	for (size_t i = 0; i < g->n_input; i++)
		if (g->input[i]->name)
			ir_map_put(&in->names, g->input[i]->name, g->input[i]->name);
	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *p = g->node[i];
		for (size_t k = 0; k < p->n_output; k++)
			ir_map_put(&in->names, p->output[k], p->output[k]);
		for (size_t k = 0; k < p->n_attribute; k++) {
			if (p->attribute[k]->g)
				note_names(in, p->attribute[k]->g);
			for (size_t j = 0; j < p->attribute[k]->n_graphs; j++)
				note_names(in, p->attribute[k]->graphs[j]);
		}
	}
}

bool fe_inline_functions(struct fe *fe, const char **names)
{
	Onnx__ModelProto *mp = fe->model;
	Onnx__GraphProto *g = mp->graph;
	ProtobufCAllocator alloc = { .alloc = arena_alloc_fn,
		                     .free = arena_free_fn,
		                     .allocator_data = &fe->m->arena };
	struct inliner in = { .fe = fe, .a = &fe->m->arena };
	struct scope top = { 0 };
	struct nodes l = { 0 };

	if (!mp->n_functions)
		return true;
	in.fns = ir_arena_alloc(in.a, sizeof *in.fns * mp->n_functions);
	for (size_t i = 0; i < mp->n_functions; i++) {
		const Onnx__FunctionProto *f = mp->functions[i];
		struct fn *fn = &in.fns[in.nfns++];
		size_t at = 0, len;
		const uint8_t *data;
		fn->f = f;
		fn->overload = unknown_string(in.a, &f->base, 13);
		fn->opset = -1;
		for (size_t k = 0; k < f->n_opset_import; k++)
			if (default_domain(f->opset_import[k]->domain))
				fn->opset = f->opset_import[k]->has_version
				                    ? f->opset_import[k]->version
				                    : 1;
		if (fn->opset < 0)
			fn->opset = fe->opset;
		else if (fn->opset < FE_MIN_OPSET || fn->opset > FE_MAX_OPSET) {
			ir_error(fe->ctx,
			         "function '%s' imports opset %lld, outside opsets %d to %d",
			         f->name ? f->name : "", (long long)fn->opset, FE_MIN_OPSET,
			         FE_MAX_OPSET);
			in.failed = true;
		}
		while (unknown(&f->base, 11, &at, &data, &len)) {
			Onnx__AttributeProto *a = onnx__attribute_proto__unpack(&alloc, len, data);
			if (!a) {
				ir_error(fe->ctx,
				         "function '%s' has an unreadable default attribute",
				         f->name ? f->name : "");
				in.failed = true;
				break;
			}
			if (!fn->defaults) /* at most one per unknown field */
				fn->defaults = ir_arena_alloc(
				        in.a, sizeof *fn->defaults * f->base.n_unknown_fields);
			fn->defaults[fn->ndefaults++] = a;
		}
	}
	if (in.failed)
		return false;
	ir_map_init(&in.names, in.a);
	note_names(&in, g);
	ir_map_init(&top.map, in.a);
	for (size_t i = 0; i < g->n_node && !in.failed; i++)
		expand(&in, &l, g->node[i], names[i], fe->opset, &top, NULL, 0);
	if (in.failed)
		return false;
	fe->saved_node = g->node;
	fe->saved_n_node = g->n_node;
	g->node = (Onnx__NodeProto **)l.v;
	g->n_node = l.n;
	fe->node_opset = l.opsets;
	fe->node_names = l.names;
	return true;
}
