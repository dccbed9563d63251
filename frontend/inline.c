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
 *     domain (its opset_import), which may differ from the model's.
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

struct inliner {
	struct fe *fe;
	struct ir_arena *a;
	struct fn *fns;
	size_t nfns;
	struct ir_map names; /* every tensor name in use */
	const Onnx__NodeProto **out;
	int64_t *opsets;
	const char **node_names;
	size_t n, cap;
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

static void push(struct inliner *in, const Onnx__NodeProto *p, int64_t opset, const char *name)
{
	if (in->n == in->cap) {
		size_t cap = in->cap ? 2 * in->cap : 64;
		const Onnx__NodeProto **o = ir_arena_alloc(in->a, sizeof *o * cap);
		int64_t *s = ir_arena_alloc(in->a, sizeof *s * cap);
		const char **nm = ir_arena_alloc(in->a, sizeof *nm * cap);
		if (in->n) {
			memcpy(o, in->out, sizeof *o * in->n);
			memcpy(s, in->opsets, sizeof *s * in->n);
			memcpy(nm, in->node_names, sizeof *nm * in->n);
		}
		in->out = o, in->opsets = s, in->node_names = nm, in->cap = cap;
	}
	in->out[in->n] = p;
	in->opsets[in->n] = opset;
	in->node_names[in->n++] = name;
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

static bool has_subgraph(const Onnx__NodeProto *p)
{
	for (size_t i = 0; i < p->n_attribute; i++)
		if (p->attribute[i]->g || p->attribute[i]->n_graphs)
			return true;
	return false;
}

static void expand(struct inliner *in, const Onnx__NodeProto *p, const char *name, int64_t opset,
                   int depth);

/* The body of fn in place of call (named cname). */
static void inline_call(struct inliner *in, struct fn *fn, const Onnx__NodeProto *call,
                        const char *cname, int depth)
{
	const Onnx__FunctionProto *f = fn->f;
	struct ir_map rename; /* body tensor -> graph tensor */
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
	ir_map_init(&rename, in->a);
	for (size_t i = 0; i < f->n_input; i++)
		ir_map_put(&rename, f->input[i], i < call->n_input ? call->input[i] : "");
	for (size_t i = 0; i < f->n_output; i++)
		ir_map_put(&rename, f->output[i],
		           i < call->n_output && call->output[i][0]
		                   ? call->output[i]
		                   : (char *)fresh(in, ir_arena_printf(in->a, "%s/%s", cname,
		                                                       f->output[i])));
	fn->active = true;
	for (size_t k = 0; k < f->n_node && !in->failed; k++) {
		const Onnx__NodeProto *b = f->node[k];
		Onnx__NodeProto *c = ir_arena_alloc(in->a, sizeof *c);
		const char *bname = ir_arena_printf(
		        in->a, "%s/%s", cname,
		        b->name && b->name[0]
		                ? b->name
		                : ir_arena_printf(in->a, "%s_%zu", b->op_type ? b->op_type : "node",
		                                  k));
		size_t na = 0;
		if (has_subgraph(b)) {
			ir_node_error(
			        in->fe->ctx, bname, b->op_type ? b->op_type : "?",
			        "a node with sub-graphs inside function '%s' is not supported",
			        f->name);
			in->failed = true;
			break;
		}
		*c = *b;
		c->input = ir_arena_alloc(in->a, sizeof *c->input * (b->n_input + 1));
		c->output = ir_arena_alloc(in->a, sizeof *c->output * (b->n_output + 1));
		c->attribute = ir_arena_alloc(in->a, sizeof *c->attribute * (b->n_attribute + 1));
		for (size_t i = 0; i < b->n_input; i++) {
			void **r = b->input[i][0] ? ir_map_get(&rename, b->input[i]) : NULL;
			/* a name the body does not define stays undefined: the
			 * import reports it under its inlined name */
			c->input[i] = !b->input[i][0] ? ""
			              : r             ? *r
			                  : ir_arena_printf(in->a, "%s/%s", cname, b->input[i]);
		}
		for (size_t i = 0; i < b->n_output; i++) {
			void **r = b->output[i][0] ? ir_map_get(&rename, b->output[i]) : NULL;
			if (!b->output[i][0])
				c->output[i] = "";
			else if (r)
				c->output[i] = *r;
			else {
				c->output[i] = (char *)fresh(
				        in, ir_arena_printf(in->a, "%s/%s", cname, b->output[i]));
				ir_map_put(&rename, b->output[i], c->output[i]);
			}
		}
		for (size_t i = 0; i < b->n_attribute; i++) {
			const Onnx__AttributeProto *a = b->attribute[i], *v = a;
			if (a->ref_attr_name) {
				v = call_attr(call, a->ref_attr_name);
				for (size_t d = 0; !v && d < fn->ndefaults; d++)
					if (fn->defaults[d]->name &&
					    !strcmp(fn->defaults[d]->name, a->ref_attr_name))
						v = fn->defaults[d];
				if (!v)
					continue; /* not given, no default: absent */
				v = renamed_attr(in, v, a->name);
			}
			c->attribute[na++] = (Onnx__AttributeProto *)v;
		}
		c->n_attribute = na;
		c->name = (char *)bname;
		expand(in, c, bname, fn->opset, depth + 1);
	}
	fn->active = false;
}

static void expand(struct inliner *in, const Onnx__NodeProto *p, const char *name, int64_t opset,
                   int depth)
{
	struct fn *fn = find_fn(in, p);
	if (!fn) {
		push(in, p, opset, name);
	} else {
		inline_call(in, fn, p, name, depth);
	}
	if (in->n > FE_MAX_INLINED && !in->failed) {
		ir_error(in->fe->ctx, "inlining the model's functions makes more than %zu nodes",
		         FE_MAX_INLINED);
		in->failed = true;
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
	bool any = false;

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
	for (size_t i = 0; i < g->n_initializer; i++)
		if (g->initializer[i]->name)
			ir_map_put(&in.names, g->initializer[i]->name, g->initializer[i]->name);
	for (size_t i = 0; i < g->n_input; i++)
		if (g->input[i]->name)
			ir_map_put(&in.names, g->input[i]->name, g->input[i]->name);
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_output; k++)
			ir_map_put(&in.names, g->node[i]->output[k], g->node[i]->output[k]);
	for (size_t i = 0; i < g->n_node && !in.failed; i++) {
		any |= find_fn(&in, g->node[i]) != NULL;
		expand(&in, g->node[i], names[i], fe->opset, 0);
	}
	if (in.failed)
		return false;
	if (!any)
		return true;
	fe->saved_node = g->node;
	fe->saved_n_node = g->n_node;
	g->node = (Onnx__NodeProto **)in.out;
	g->n_node = in.n;
	fe->node_opset = in.opsets;
	fe->node_names = in.node_names;
	return true;
}

void fe_restore_functions(struct fe *fe)
{
	if (fe->saved_node && fe->model) {
		fe->model->graph->node = fe->saved_node;
		fe->model->graph->n_node = fe->saved_n_node;
		fe->saved_node = NULL;
	}
}
