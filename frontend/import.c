/*
 * import.c - lowering an ONNX graph into the IR.
 *
 * The walk:
 *   1. load and validate the ModelProto, find the default-domain opset;
 *   2. collect every tensor name, rejecting duplicates, and check that every
 *      op is supported at this opset - all problems reported, then stop;
 *   3. bind graph inputs to static shapes (--shape / --dim), decode
 *      initializers into module constants;
 *   4. order nodes topologically (ONNX requires it; not every exporter
 *      complies), reporting undefined inputs and cycles;
 *   5. import node by node through the op tables (ops_*.c); each new IR node
 *      gets its types inferred and is folded when its inputs are constants,
 *      which is how shape arithmetic disappears;
 *   6. bind graph outputs and check them against the declared types.
 *
 * A node whose import fails poisons its outputs: nodes that read them are
 * skipped silently, so the error list shows each root cause once.
 */
#include "fe.h"

#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Node helpers                                                             */
/* ------------------------------------------------------------------------ */

bool fe_fail(struct fe_node *nd, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ir_node_error(nd->fe->ctx, nd->name, nd->op, "%s", msg);
	nd->failed = true;
	return false;
}

static const char *attr_type_name(int t)
{
	static const char *const names[] = { "undefined",      "a float",  "an int",
		                             "a string",       "a tensor", "a graph",
		                             "floats",         "ints",     "strings",
		                             "tensors",        "graphs",   "a sparse tensor",
		                             "sparse tensors", "a type",   "types" };
	return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

/* The declared type, or the one implied by the fields set (very old models
 * leave type unset). */
static int attr_type(const Onnx__AttributeProto *a)
{
	if (a->has_type && a->type)
		return a->type;
	if (a->has_f)
		return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	if (a->has_i)
		return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	if (a->has_s)
		return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	if (a->t)
		return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	if (a->g)
		return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	if (a->n_floats)
		return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
	if (a->n_ints)
		return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	if (a->n_strings)
		return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
	return 0;
}

static const Onnx__AttributeProto *find_attr(struct fe_node *nd, const char *name, int want)
{
	const Onnx__NodeProto *p = nd->proto;
	for (size_t i = 0; i < p->n_attribute; i++) {
		const Onnx__AttributeProto *a = p->attribute[i];
		if (!a->name || strcmp(a->name, name))
			continue;
		nd->attr_used[i] = 1;
		if (a->ref_attr_name) {
			fe_fail(nd,
			        "attribute '%s' refers to a function attribute, which is only "
			        "valid "
			        "inside a function",
			        name);
			return NULL;
		}
		if (want >= 0 && attr_type(a) != want) {
			fe_fail(nd, "attribute '%s' must be %s, not %s", name, attr_type_name(want),
			        attr_type_name(attr_type(a)));
			return NULL;
		}
		return a;
	}
	return NULL;
}

bool fe_has(struct fe_node *nd, const char *name)
{
	const Onnx__NodeProto *p = nd->proto;
	for (size_t i = 0; i < p->n_attribute; i++)
		if (p->attribute[i]->name && !strcmp(p->attribute[i]->name, name))
			return true;
	return false;
}

void fe_ignore(struct fe_node *nd, const char *name) { find_attr(nd, name, -1); }

int64_t fe_int(struct fe_node *nd, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a =
	        find_attr(nd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	return a ? a->i : def;
}

bool fe_req_int(struct fe_node *nd, const char *name, int64_t *v)
{
	const Onnx__AttributeProto *a =
	        find_attr(nd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	if (a) {
		*v = a->i;
		return true;
	}
	return nd->failed ? false : fe_fail(nd, "attribute '%s' is required", name);
}

float fe_float(struct fe_node *nd, const char *name, float def)
{
	const Onnx__AttributeProto *a =
	        find_attr(nd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	return a ? a->f : def;
}

const char *fe_str(struct fe_node *nd, const char *name, const char *def)
{
	const Onnx__AttributeProto *a =
	        find_attr(nd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	if (!a)
		return def;
	if (a->s.len && memchr(a->s.data, 0, a->s.len)) { /* an empty string is NULL */
		fe_fail(nd, "attribute '%s' contains a NUL byte", name);
		return def;
	}
	return ir_arena_strndup(&nd->fe->m->arena, (const char *)a->s.data, a->s.len);
}

int fe_ints(struct fe_node *nd, const char *name, const int64_t **v)
{
	const Onnx__AttributeProto *a =
	        find_attr(nd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	if (!a)
		return -1;
	if (a->n_ints > (1u << 24))
		return fe_fail(nd, "attribute '%s' has %zu values", name, a->n_ints), -1;
	*v = a->ints;
	return (int)a->n_ints;
}

int fe_strs(struct fe_node *nd, const char *name, const ProtobufCBinaryData **v)
{
	const Onnx__AttributeProto *a =
	        find_attr(nd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
	if (!a)
		return -1;
	if (a->n_strings > (1u << 24))
		return fe_fail(nd, "attribute '%s' has %zu values", name, a->n_strings), -1;
	*v = a->strings;
	return (int)a->n_strings;
}

int fe_floats(struct fe_node *nd, const char *name, const float **v)
{
	const Onnx__AttributeProto *a =
	        find_attr(nd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
	if (!a)
		return -1;
	if (a->n_floats > (1u << 24))
		return fe_fail(nd, "attribute '%s' has %zu values", name, a->n_floats), -1;
	*v = a->floats;
	return (int)a->n_floats;
}

const Onnx__TensorProto *fe_tensor_attr(struct fe_node *nd, const char *name)
{
	const Onnx__AttributeProto *a =
	        find_attr(nd, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	if (a && !a->t)
		fe_fail(nd, "attribute '%s' is declared a tensor but holds none", name);
	return a ? a->t : NULL;
}

struct ir_value *fe_in(struct fe_node *nd, int i) { return i < nd->nin ? nd->in[i] : NULL; }

bool fe_inputs(struct fe_node *nd, int min, int max)
{
	if (nd->nin < min || (max >= 0 && nd->nin > max)) {
		if (max == min)
			return fe_fail(nd, "takes %d input%s, not %d", min, min == 1 ? "" : "s",
			               nd->nin);
		if (max < 0)
			return fe_fail(nd, "takes at least %d inputs, not %d", min, nd->nin);
		return fe_fail(nd, "takes %d to %d inputs, not %d", min, max, nd->nin);
	}
	for (int i = 0; i < min; i++)
		if (!nd->in[i])
			return fe_fail(nd, "input %d is required", i);
	return true;
}

bool fe_is_const(struct fe_node *nd, int i)
{
	struct ir_value *v = fe_in(nd, i);
	return v && v->kind == IR_VAL_CONST && v->data;
}

/*
 * Records the graph inputs v is computed from (for onnxc check's retry):
 * depth first, left to right, each value visited once per import (a walk
 * that revisited shared operands could take exponential time).
 */
static void want_inputs(struct fe *fe, struct fe_wanted *w, struct ir_value *v)
{
	struct ir_arena *a = &fe->m->arena;
	int n = 0, cap = 64;
	struct ir_value **stack = ir_arena_alloc(a, sizeof *stack * (size_t)cap);
	stack[n++] = v;
	while (n && w->n < 16) {
		v = stack[--n];
		if (ir_map_get(&fe->wanted, v->name))
			continue;
		ir_map_put(&fe->wanted, v->name, v);
		if (v->kind == IR_VAL_INPUT) {
			bool have = false;
			for (int k = 0; k < w->n && !have; k++)
				have = !strcmp(w->names[k], v->name);
			if (!have)
				snprintf(w->names[w->n++], sizeof w->names[0], "%s", v->name);
		} else if (v->kind == IR_VAL_NODE) {
			if (n + v->def->nin > cap) {
				struct ir_value **big;
				cap = 2 * (n + v->def->nin);
				big = ir_arena_alloc(a, sizeof *big * (size_t)cap);
				memcpy(big, stack, sizeof *big * (size_t)n);
				stack = big;
			}
			for (int i = v->def->nin - 1; i >= 0; i--) /* the first on top */
				stack[n++] = v->def->in[i];
		}
	}
}

/* Input i must be a constant with data; hint says how to make it one. */
static bool need_const(struct fe_node *nd, int i, const char *what, const char *hint)
{
	struct ir_value *v = fe_in(nd, i);
	if (!v)
		return fe_fail(nd, "input %d (%s) is missing", i, what);
	if (nd->fe->opt && nd->fe->opt->wanted && (v->kind != IR_VAL_CONST || !v->data))
		want_inputs(nd->fe, nd->fe->opt->wanted, v);
	if (v->kind != IR_VAL_CONST || !v->data)
		return fe_fail(nd,
		               "input %d (%s) '%s' must be a constant, but it is computed at run "
		               "time; %s",
		               i, what, nd->proto->input[i], hint);
	return true;
}

bool fe_need_values(struct fe_node *nd, int i)
{
	struct ir_value *v = fe_in(nd, i);
	if (v && v->kind == IR_VAL_CONST && v->data)
		return true;
	if (v && nd->fe->opt && nd->fe->opt->wanted)
		want_inputs(nd->fe, nd->fe->opt->wanted, v);
	return fe_fail(nd,
	               "the shape of the output depends on the values of input %d '%s', which are "
	               "computed at run time, and onnxc compiles static shapes: bind the graph "
	               "input it comes from with --const INPUT=FILE.npy, or export the model "
	               "without the op",
	               i, v ? nd->proto->input[i] : "");
}

bool fe_need_const(struct fe_node *nd, int i, const char *what)
{
	return need_const(nd, i, what,
	                  "onnxc needs static shapes (bind symbolic dimensions with --dim or "
	                  "--shape)");
}

bool fe_need_const_value(struct fe_node *nd, int i, const char *what)
{
	return need_const(nd, i, what,
	                  "onnxc computes what it decides at import (bind a graph input to a "
	                  "tensor file with --const INPUT=FILE)");
}

/* An INTS attribute with an exact length, or a default filled with fill. */
bool fe_ints_len(struct fe_node *nd, const char *name, int len, int64_t fill, int64_t *out)
{
	const int64_t *v;
	int c = fe_ints(nd, name, &v);
	if (c < 0) {
		for (int i = 0; i < len; i++)
			out[i] = fill;
		return !nd->failed;
	}
	if (c != len)
		return fe_fail(nd, "attribute '%s' has %d values, expected %d", name, c, len);
	memcpy(out, v, sizeof *out * (size_t)len);
	return true;
}

int fe_const_ints(struct fe_node *nd, int i, const char *what, int64_t **v)
{
	struct ir_value *c = fe_in(nd, i);
	int64_t n;
	if (!fe_need_const(nd, i, what))
		return -1;
	if (!ir_dtypes[c->type.dtype].is_int) {
		fe_fail(nd, "input %d (%s) must be integers, not %s", i, what,
		        ir_dtype_name(c->type.dtype));
		return -1;
	}
	n = ir_type_elems(&c->type);
	if (n > (1 << 24)) {
		fe_fail(nd, "input %d (%s) has %lld values", i, what, (long long)n);
		return -1;
	}
	*v = ir_arena_alloc(&nd->fe->m->arena, sizeof **v * (size_t)(n ? n : 1));
	for (int64_t k = 0; k < n; k++)
		(*v)[k] = ir_load_i64(c->type.dtype, c->data, (size_t)k);
	return (int)n;
}

int fe_const_floats(struct fe_node *nd, int i, const char *what, float **v)
{
	struct ir_value *c = fe_in(nd, i);
	int64_t n;
	if (!fe_need_const(nd, i, what))
		return -1;
	n = ir_type_elems(&c->type);
	if (n > (1 << 24)) {
		fe_fail(nd, "input %d (%s) has %lld values", i, what, (long long)n);
		return -1;
	}
	*v = ir_arena_alloc(&nd->fe->m->arena, sizeof **v * (size_t)(n ? n : 1));
	for (int64_t k = 0; k < n; k++)
		(*v)[k] = (float)ir_load_f64(c->type.dtype, c->data, (size_t)k);
	return (int)n;
}

int64_t fe_axis(struct fe_node *nd, int64_t axis, int rank, const char *what)
{
	if (axis < -rank || axis >= rank) {
		fe_fail(nd, "%s %lld is out of range for rank %d", what, (long long)axis, rank);
		return -1;
	}
	return axis < 0 ? axis + rank : axis;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Normalizes axes in place: non-negative, sorted, unique. Returns count or -1. */
int fe_norm_axes(struct fe_node *nd, int64_t *axes, int n, int rank)
{
	for (int i = 0; i < n; i++)
		if ((axes[i] = fe_axis(nd, axes[i], rank, "axis")) < 0)
			return -1;
	qsort(axes, (size_t)n, sizeof *axes, cmp_i64);
	for (int i = 1; i < n; i++)
		if (axes[i] == axes[i - 1])
			return fe_fail(nd, "axis %lld is listed twice", (long long)axes[i]), -1;
	return n;
}

static bool name_taken(void *ud, const char *s)
{
	struct fe *fe = ud;
	return ir_find_value(fe->m, s) || ir_map_get(&fe->reserved, s);
}

const char *fe_tmp_name(struct fe_node *nd, const char *suffix)
{
	struct fe *fe = nd->fe;
	const char *base = nd->nout && nd->proto->output[0][0] ? nd->proto->output[0] : nd->name;
	return ir_fresh_name(&fe->tmp_next, ir_arena_printf(&fe->m->arena, "%s.%s", base, suffix),
	                     "", name_taken, fe);
}

const char *fe_out_name(struct fe_node *nd, int k)
{
	const char *s = k >= 0 && k < nd->nout ? nd->proto->output[k] : "";
	if (!s[0] || ir_find_value(nd->fe->m, s))
		return fe_tmp_name(nd, k >= 0 ? "out" : "tmp");
	return s;
}

struct ir_node *fe_emit(struct fe_node *nd, enum ir_op op, struct ir_value *const *in, int nin,
                        const char *const *names, int nout)
{
	const char *nm[64];
	struct ir_node *n;
	IR_ASSERT(nout <= 64 || names);
	if (!names) {
		for (int i = 0; i < nout; i++)
			nm[i] = fe_tmp_name(nd, ir_ops[op].name);
		names = nm;
	}
	n = ir_add_node(nd->fe->m, op, nd->name, in, nin, names, nout);
	if (nd->fe->guard)
		ir_set_guard(nd->fe->m, n, nd->fe->guard);
	return n;
}

static bool has_subgraphs(const Onnx__NodeProto *p)
{
	for (size_t k = 0; k < p->n_attribute; k++)
		if (p->attribute[k]->g || p->attribute[k]->n_graphs)
			return true;
	return false;
}

/* Every tensor a node of g (its sub-graphs' included: they read outer
 * values) or g's outputs read, into r (keys point into g). Sub-graphs
 * nest at most FE_MAX_NESTING deep (the loader checked). */
static void graph_reads(const Onnx__GraphProto *g, struct ir_map *r)
{
	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *p = g->node[i];
		for (size_t k = 0; k < p->n_input; k++)
			ir_map_put(r, p->input[k], (void *)p->input[k]);
		for (size_t k = 0; k < p->n_attribute; k++) {
			if (p->attribute[k]->g)
				graph_reads(p->attribute[k]->g, r);
			for (size_t j = 0; j < p->attribute[k]->n_graphs; j++)
				graph_reads(p->attribute[k]->graphs[j], r);
		}
	}
	for (size_t i = 0; i < g->n_output; i++)
		if (g->output[i]->name)
			ir_map_put(r, g->output[i]->name, (void *)g->output[i]->name);
}

bool fe_tensor_used(struct fe *fe, const char *name)
{
	if (!fe->reads.cap) /* built on the first question: one pass over the graph */
		graph_reads(fe->model->graph, &fe->reads);
	return ir_map_get(&fe->reads, name) != NULL;
}

bool fe_is_weight(struct fe *fe, const struct ir_value *v)
{
	void **p;
	if (v->kind != IR_VAL_CONST || !ir_dtypes[v->type.dtype].is_float)
		return false;
	p = ir_map_get(&fe->reserved, v->name);
	return p && !strcmp(*p, "initializer");
}

bool fe_check_const_size(struct fe_node *nd, const struct ir_type *t)
{
	int64_t n = ir_type_elems(t);
	if (n < 0)
		return fe_fail(nd,
		               "the result would have more elements than a 64-bit size can count");
	if (n > nd->fe->max_const_bytes / ir_dtype_size(t->dtype))
		return fe_fail(nd,
		               "the result would have %lld elements, more than the constant limit "
		               "of %lld bytes allows",
		               (long long)n, (long long)nd->fe->max_const_bytes);
	return true;
}

bool fe_fold_ok(struct fe *fe, int64_t work)
{
	if (work <= FE_FOLD_FREE)
		return true;
	if (work > fe->fold_budget)
		return false;
	fe->fold_budget -= work;
	return true;
}

bool fe_finish(struct fe_node *nd, struct ir_node *n)
{
	struct ir_module *m = nd->fe->m;
	char err[512];
	int64_t in_elems = 0, out_elems = 0, limit;
	int r;
	if (!ir_infer_node(m, n, err, sizeof err)) {
		fe_fail(nd, "%s", err);
		ir_remove_node(m, n);
		return false;
	}
	for (int i = 0; i < n->nout; i++) {
		int64_t e = ir_type_elems(&n->out[i]->type);
		if (e < 0 || e > INT64_MAX / 8) {
			fe_fail(nd, "result has more elements than a 64-bit size can count");
			ir_remove_node(m, n);
			return false;
		}
		out_elems += e;
	}
	/* Fold when cheap, or when it does not grow the constants much: folding
	 * an Expand of a scalar into a huge tensor would bloat the weights. */
	for (int i = 0; i < n->nin; i++)
		in_elems += ir_type_elems(&n->in[i]->type);
	limit = in_elems * 2 > 65536 ? in_elems * 2 : 65536;
	if (limit > ((int64_t)1 << 26))
		limit = (int64_t)1 << 26;
	(void)out_elems;
	if (n->op == IR_OP_DROPOUT)
		return true; /* its seed is a placeholder until train_build */
	if (nd->fe->opt && nd->fe->opt->training)
		for (int i = 0; i < n->nin; i++)
			if (fe_is_weight(nd->fe, n->in[i]))
				return true;
	if (!ir_fold_ready(n) || !fe_fold_ok(nd->fe, ir_fold_work(n)))
		return true; /* left to run time */
	r = ir_fold_node(m, n, limit, err, sizeof err);
	if (r < 0 && n->guard)
		return true; /* perhaps a branch not taken: the node runs only if it is */
	if (r < 0) {
		fe_fail(nd, "%s", err);
		ir_remove_node(m, n);
		return false;
	}
	return true;
}

struct ir_value *fe_simple(struct fe_node *nd, enum ir_op op, struct ir_value *const *in, int nin,
                           int k)
{
	const char *name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, ir_ops[op].name);
	struct ir_node *n = fe_emit(nd, op, in, nin, &name, 1);
	if (!fe_finish(nd, n))
		return NULL;
	return n->out[0];
}

struct ir_value *fe_reshape(struct fe_node *nd, struct ir_value *x, const int64_t *dims, int rank,
                            int k)
{
	const char *name;
	struct ir_node *n;
	if (!x)
		return NULL;
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "reshape");
	n = fe_emit(nd, IR_OP_RESHAPE, &x, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "shape", dims, rank);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

/* ------------------------------------------------------------------------ */
/* Building lowerings: each takes NULL inputs (an earlier step failed,      */
/* reported) and returns NULL, so a lowering chains them and checks once.   */
/* ------------------------------------------------------------------------ */

struct ir_value *fe_scalar(struct fe_node *nd, enum ir_dtype t, double v)
{
	struct ir_type ty = { .dtype = t };
	unsigned char buf[sizeof(double)];
	ir_store_f64(t, buf, 0, v);
	return fe_const(nd, -1, &ty, buf);
}

struct ir_value *fe_unary(struct fe_node *nd, enum ir_op op, struct ir_value *x, int k)
{
	return x ? fe_simple(nd, op, &x, 1, k) : NULL;
}

struct ir_value *fe_binary(struct fe_node *nd, enum ir_op op, struct ir_value *a,
                           struct ir_value *b, int k)
{
	struct ir_value *in[2] = { a, b };
	return a && b ? fe_simple(nd, op, in, 2, k) : NULL;
}

struct ir_value *fe_where(struct fe_node *nd, struct ir_value *c, struct ir_value *a,
                          struct ir_value *b, int k)
{
	struct ir_value *in[3] = { c, a, b };
	return c && a && b ? fe_simple(nd, IR_OP_WHERE, in, 3, k) : NULL;
}

struct ir_value *fe_cast(struct fe_node *nd, struct ir_value *x, enum ir_dtype t, int k)
{
	const char *name;
	struct ir_node *n;
	if (!x)
		return NULL;
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "cast");
	n = fe_emit(nd, IR_OP_CAST, &x, 1, &name, 1);
	ir_set_t(nd->fe->m, n, "to", t);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_slice_axis(struct fe_node *nd, struct ir_value *x, int axis, int64_t start,
                               int64_t end, int64_t step, int k)
{
	int64_t starts[IR_MAX_RANK], ends[IR_MAX_RANK], steps[IR_MAX_RANK];
	const char *name;
	struct ir_node *n;
	int rank;
	if (!x)
		return NULL;
	rank = x->type.rank;
	for (int i = 0; i < rank; i++) {
		starts[i] = i == axis ? start : 0;
		ends[i] = i == axis ? end : x->type.dims[i];
		steps[i] = i == axis ? step : 1;
	}
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "slice");
	n = fe_emit(nd, IR_OP_SLICE, &x, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "starts", starts, rank);
	ir_set_ints(nd->fe->m, n, "ends", ends, rank);
	ir_set_ints(nd->fe->m, n, "steps", steps, rank);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_concat(struct fe_node *nd, struct ir_value *const *xs, int n_in, int axis,
                           int k)
{
	const char *name;
	struct ir_node *n;
	for (int i = 0; i < n_in; i++)
		if (!xs[i])
			return NULL;
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "concat");
	n = fe_emit(nd, IR_OP_CONCAT, xs, n_in, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_transpose(struct fe_node *nd, struct ir_value *x, const int64_t *perm, int k)
{
	const char *name;
	struct ir_node *n;
	if (!x)
		return NULL;
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "transpose");
	n = fe_emit(nd, IR_OP_TRANSPOSE, &x, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "perm", perm, x->type.rank);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_gather(struct fe_node *nd, struct ir_value *x, struct ir_value *idx,
                           int64_t axis, int k)
{
	struct ir_value *in[2] = { x, idx };
	const char *name;
	struct ir_node *n;
	if (!x || !idx)
		return NULL;
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "gather");
	n = fe_emit(nd, IR_OP_GATHER, in, 2, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_expand(struct fe_node *nd, struct ir_value *x, const int64_t *dims, int rank,
                           int k)
{
	const char *name;
	struct ir_node *n;
	if (!x)
		return NULL;
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "expand");
	n = fe_emit(nd, IR_OP_EXPAND, &x, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "shape", dims, rank);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_zeros(struct fe_node *nd, enum ir_dtype t, const int64_t *dims, int rank)
{
	return fe_expand(nd, fe_scalar(nd, t, 0), dims, rank, -1);
}

struct ir_value *fe_scatter(struct fe_node *nd, struct ir_value *data, struct ir_value *idx,
                            struct ir_value *up, int64_t axis, const char *reduction, int k)
{
	struct ir_value *in[3] = { data, idx, up };
	const char *name;
	struct ir_node *n;
	if (!data || !idx || !up)
		return NULL;
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "scatter");
	n = fe_emit(nd, IR_OP_SCATTER_ELEMENTS, in, 3, &name, 1);
	ir_set_i(nd->fe->m, n, "axis", axis);
	ir_set_s(nd->fe->m, n, "reduction", reduction);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_reduce(struct fe_node *nd, enum ir_op op, struct ir_value *x,
                           const int64_t *axes, int naxes, bool keepdims, int k)
{
	const char *name;
	struct ir_node *n;
	if (!x)
		return NULL;
	name = k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, ir_ops[op].name);
	n = fe_emit(nd, op, &x, 1, &name, 1);
	ir_set_ints(nd->fe->m, n, "axes", axes, naxes);
	ir_set_i(nd->fe->m, n, "keepdims", keepdims);
	return fe_finish(nd, n) ? n->out[0] : NULL;
}

struct ir_value *fe_reduce_all(struct fe_node *nd, enum ir_op op, struct ir_value *x, int k)
{
	int64_t axes[IR_MAX_RANK];
	for (int i = 0; x && i < x->type.rank; i++)
		axes[i] = i;
	return fe_reduce(nd, op, x, axes, x ? x->type.rank : 0, false, k);
}

void fe_bind(struct fe_node *nd, int k, struct ir_value *v)
{
	if (k < nd->nout && nd->proto->output[k][0])
		ir_map_put(&nd->fe->values, nd->proto->output[k], v);
}

struct ir_value *fe_const(struct fe_node *nd, int k, const struct ir_type *t, const void *data)
{
	return ir_add_const(nd->fe->m, k >= 0 ? fe_out_name(nd, k) : fe_tmp_name(nd, "const"), t,
	                    data);
}

/* ------------------------------------------------------------------------ */
/* Op tables                                                                */
/* ------------------------------------------------------------------------ */

/* Ops of the walk itself (control flow). */
static bool imp_if(struct fe_node *nd);
static const struct fe_op fe_ops_control[] = {
	{ "If", imp_if, IR_OP_COUNT, { 1, 11, 13, 16, 19, 21, 23, 24, 25 } },
	{ NULL, NULL, 0, { 0 } },
};

const struct fe_op *const fe_op_tables[] = { fe_ops_elementwise, fe_ops_nn,        fe_ops_shape,
	                                     fe_ops_transformer, fe_ops_dynamic,   fe_ops_loss,
	                                     fe_ops_signal,      fe_ops_quant,     fe_ops_sample,
	                                     fe_ops_text,        fe_ops_attention, fe_ops_recurrent,
	                                     fe_ops_control,     fe_ops_loop,      NULL };

static bool default_domain(const char *d) { return !d || !d[0] || !strcmp(d, "ai.onnx"); }

static bool same_domain(const char *row, const char *d)
{
	return row && row[0] ? d && !strcmp(row, d) : default_domain(d);
}

const struct fe_op *fe_find_op(const char *domain, const char *op_type)
{
	for (const struct fe_op *const *t = fe_op_tables; *t; t++)
		for (const struct fe_op *o = *t; o->name; o++)
			if (!strcmp(o->name, op_type) && same_domain(o->domain, domain))
				return o;
	return NULL;
}

/*
 * Default-domain ops onnxc does not compile because of what they need, not
 * because they are missing: refused with the category named.
 */
static const struct {
	const char *ops; /* space-separated */
	const char *why;
} refused_kinds[] = {
	{ "StringConcat StringNormalizer StringSplit RegexFullMatch",
	  "it works on strings, and onnxc has no string tensors" },
	{ "SequenceAt SequenceConstruct SequenceEmpty SequenceErase SequenceInsert "
	  "SequenceLength SequenceMap SplitToSequence ConcatFromSequence",
	  "it works on sequences, and onnxc compiles tensors only" },
	{ "Optional OptionalGetElement OptionalHasElement",
	  "it works on optional values, and onnxc compiles tensors only" },
	{ "RandomNormal RandomNormalLike RandomUniform RandomUniformLike Bernoulli Multinomial",
	  "it draws random numbers, and onnxc's inference models are deterministic" },
	{ "ImageDecoder", "it decodes encoded images (bytes), and onnxc compiles tensors only" },
};

static const char *refused_kind(const char *op)
{
	size_t n = strlen(op);
	for (size_t i = 0; i < sizeof refused_kinds / sizeof *refused_kinds; i++)
		for (const char *p = refused_kinds[i].ops; (p = strstr(p, op)); p += n)
			if ((p == refused_kinds[i].ops || p[-1] == ' ') && (!p[n] || p[n] == ' '))
				return refused_kinds[i].why;
	return NULL;
}

/* What the ops of a domain onnxc does not compile are, or "". */
static const char *domain_kind(const char *d)
{
	if (d && !strcmp(d, "ai.onnx.ml"))
		return ": the classical machine-learning ops (trees, linear models, encoders) are "
		       "not compiled";
	if (d && !strcmp(d, "ai.onnx.preview.training"))
		return ": its optimizer ops are not compiled (onnxc train generates the optimizer "
		       "step itself)";
	return "";
}

/* Whether onnxc imports any op of the (non-default) domain d. */
static bool known_domain(const char *d)
{
	for (const struct fe_op *const *t = fe_op_tables; *t; t++)
		for (const struct fe_op *o = *t; o->name; o++)
			if (o->domain && o->domain[0] && d && !strcmp(o->domain, d))
				return true;
	return false;
}

int fe_op_version(const struct fe_op *op, int64_t opset)
{
	int v = 0;
	if (op->removed && opset >= op->removed)
		return 0;
	for (int i = 0; i < FE_MAX_VERSIONS && op->versions[i]; i++)
		if (op->versions[i] <= opset)
			v = op->versions[i];
	return v;
}

/* ------------------------------------------------------------------------ */
/* The walk                                                                 */
/* ------------------------------------------------------------------------ */

static const char *node_name(struct fe *fe, const Onnx__NodeProto *p, size_t idx)
{
	if (p->name && p->name[0])
		return p->name;
	return ir_arena_printf(&fe->m->arena, "%s_%zu", p->op_type ? p->op_type : "node", idx);
}

/* The model's version of domain d (1 when it does not import it, as
 * ONNX's checker would refuse). */
static int64_t domain_opset(const struct fe *fe, const char *d)
{
	for (size_t i = 0; i < fe->model->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = fe->model->opset_import[i];
		if (o->domain && !strcmp(o->domain, d))
			return o->has_version ? o->version : 1;
	}
	return 1;
}

/* The version of op in effect for a node at default-domain opset: ops of
 * other domains go by the model's version of their domain. */
static int node_version(const struct fe *fe, const struct fe_op *op, int64_t opset)
{
	return fe_op_version(op,
	                     op->domain && op->domain[0] ? domain_opset(fe, op->domain) : opset);
}

/* " (version N)" of the model's import of domain d, or "". */
static const char *domain_version(struct fe *fe, const char *d)
{
	for (size_t i = 0; i < fe->model->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = fe->model->opset_import[i];
		if (o->domain && !strcmp(o->domain, d))
			return ir_arena_printf(&fe->m->arena, " (version %lld)",
			                       (long long)(o->has_version ? o->version : 1));
	}
	return "";
}

/* The default-domain opset node i of the graph is at (inline.c). */
static int64_t node_opset(const struct fe *fe, size_t i)
{
	return fe->node_opset ? fe->node_opset[i] : fe->opset;
}

static bool find_opset(struct fe *fe)
{
	Onnx__ModelProto *mp = fe->model;
	fe->opset = -1;
	for (size_t i = 0; i < mp->n_opset_import; i++) {
		Onnx__OperatorSetIdProto *o = mp->opset_import[i];
		if (default_domain(o->domain))
			fe->opset = o->has_version ? o->version : 1;
	}
	if (fe->opset < 0) {
		/* a model of other domains' ops alone (the training optimizers,
		 * the ML ops) need not import the default one: its opset is moot */
		bool any = false;
		for (size_t i = 0; mp->graph && i < mp->graph->n_node && !any; i++)
			any = default_domain(mp->graph->node[i]->domain);
		if (!any && mp->n_opset_import) {
			fe->opset = FE_MAX_OPSET;
			return true;
		}
	}
	if (fe->opset < 0) {
		const char *other = mp->n_opset_import && mp->opset_import[0]->domain
		                            ? mp->opset_import[0]->domain
		                            : NULL;
		ir_error(fe->ctx, "the model imports no version of the default ONNX opset%s%s%s%s",
		         other ? " (only domain '" : "", other ? other : "", other ? "')" : "",
		         domain_kind(other));
		return false;
	}
	if (fe->opset < FE_MIN_OPSET || fe->opset > FE_MAX_OPSET) {
		ir_error(fe->ctx, "opset %lld is %s than onnxc supports (opsets %d to %d)",
		         (long long)fe->opset, fe->opset < FE_MIN_OPSET ? "older" : "newer",
		         FE_MIN_OPSET, FE_MAX_OPSET);
		return false;
	}
	return true;
}

/* Every tensor name, rejecting duplicates; checks ops are supported. */
static bool scan_graph(struct fe *fe, const char **names)
{
	Onnx__GraphProto *g = fe->model->graph;
	struct ir_map *r = &fe->reserved;
	int errors = fe->ctx->nerrors, unsupported = 0;

	for (size_t i = 0; i < g->n_initializer; i++) {
		const char *n = g->initializer[i]->name;
		if (!n || !n[0]) {
			ir_error(fe->ctx, "initializer %zu has no name", i);
			continue;
		}
		if (ir_map_get(r, n))
			ir_error(fe->ctx, "initializer '%s' is defined twice", n);
		ir_map_put(r, n, (void *)"initializer");
	}
	for (size_t i = 0; i < g->n_input; i++) {
		const char *n = g->input[i]->name;
		void **prev;
		if (!n || !n[0]) {
			ir_error(fe->ctx, "graph input %zu has no name", i);
			continue;
		}
		prev = ir_map_get(r, n);
		if (prev && strcmp(*prev, "initializer"))
			ir_error(fe->ctx, "graph input '%s' is declared twice", n);
		if (!prev)
			ir_map_put(r, n, (void *)"graph input");
	}
	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *p = g->node[i];
		const struct fe_op *op;
		if (!p->op_type || !p->op_type[0]) {
			ir_node_error(fe->ctx, names[i], "?", "node has no op_type");
			continue;
		}
		for (size_t k = 0; k < p->n_output; k++) {
			const char *n = p->output[k];
			void **prev;
			if (!n[0])
				continue;
			prev = ir_map_get(r, n);
			if (prev)
				ir_node_error(fe->ctx, names[i], p->op_type,
				              "output '%s' is already defined (by %s)", n,
				              (const char *)*prev);
			else
				ir_map_put(r, n,
				           ir_arena_printf(&fe->m->arena, "node '%s'", names[i]));
		}
		if (!default_domain(p->domain) && !known_domain(p->domain)) {
			ir_node_error(fe->ctx, names[i], p->op_type,
			              "domain '%s'%s is not supported (onnxc supports the default "
			              "ONNX domain and some com.microsoft ops)%s",
			              p->domain, domain_version(fe, p->domain),
			              domain_kind(p->domain));
			unsupported++;
			continue;
		}
		op = fe_find_op(p->domain, p->op_type);
		if (!op && !default_domain(p->domain)) {
			ir_node_error(fe->ctx, names[i], p->op_type,
			              "op is not supported by onnxc (domain '%s'%s)", p->domain,
			              domain_version(fe, p->domain));
			unsupported++;
		} else if (!op) {
			const char *why = refused_kind(p->op_type);
			ir_node_error(
			        fe->ctx, names[i], p->op_type,
			        "op is not supported by onnxc (default domain, opset %lld)%s%s",
			        (long long)node_opset(fe, i), why ? ": " : "", why ? why : "");
			unsupported++;
		} else if (!node_version(fe, op, node_opset(fe, i))) {
			int64_t opset = op->domain && op->domain[0] ? domain_opset(fe, op->domain)
			                                            : node_opset(fe, i);
			if (op->removed && opset >= op->removed)
				ir_node_error(
				        fe->ctx, names[i], p->op_type,
				        "op was removed from ONNX in opset %d (the node is at "
				        "opset %lld)",
				        op->removed, (long long)opset);
			else if (op->versions[0] <= FE_FULL_OPSET && op->versions[0] > 1)
				/* an older version may exist: onnxc does not read it */
				ir_node_error(fe->ctx, names[i], p->op_type,
				              "onnxc imports %s from its version %d (opset %d) on; "
				              "the node is at opset %lld",
				              p->op_type, op->versions[0], op->versions[0],
				              (long long)opset);
			else
				ir_node_error(fe->ctx, names[i], p->op_type,
				              "op does not exist in opset %lld (it was added in "
				              "opset %d)",
				              (long long)opset, op->versions[0]);
			unsupported++;
		}
	}
	if (unsupported)
		ir_note(fe->ctx, "%d node%s cannot be imported (listed above)", unsupported,
		        unsupported == 1 ? "" : "s");
	return fe->ctx->nerrors == errors;
}

static struct fe_dim_binding *find_dim(const struct fe_options *opt, const char *name)
{
	for (int i = 0; opt && i < opt->ndims; i++)
		if (!strcmp(opt->dims[i].name, name))
			return &opt->dims[i];
	return NULL;
}

static struct fe_const_input *find_const(const struct fe_options *opt, const char *input)
{
	for (int i = 0; opt && i < opt->nconsts; i++)
		if (!strcmp(opt->consts[i].name, input))
			return &opt->consts[i];
	return NULL;
}

/* Graph input vi replaced by the constant given with --const. */
static bool bind_const_input(struct fe *fe, const Onnx__ValueInfoProto *vi,
                             struct fe_const_input *ci)
{
	const Onnx__TypeProto *tp = vi->type;
	struct ir_value *v;
	char tb[IR_TYPE_STR_MAX];
	ci->used = true;
	if (ci->path)
		v = fe_load_tensor(fe->ctx, fe->m, ci->path, vi->name);
	else
		v = ir_add_const(fe->m, ir_unique_name(fe->m, vi->name), &ci->value->type,
		                 ci->value->data);
	if (!v)
		return false;
	if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type) {
		const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
		bool ok = ir_dtype_from_onnx(tt->elem_type) == v->type.dtype;
		if (tt->shape) {
			ok &= (int)tt->shape->n_dim == v->type.rank;
			for (size_t d = 0; ok && d < tt->shape->n_dim; d++)
				ok = tt->shape->dim[d]->value_case !=
				             ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
				     tt->shape->dim[d]->dim_value == v->type.dims[d];
		}
		if (!ok) {
			ir_error(fe->ctx,
			         "--const %s: the tensor is %s, which does not fit the input's "
			         "declared type",
			         vi->name, ir_type_str(&v->type, tb, sizeof tb));
			return false;
		}
	}
	ir_map_put(&fe->values, vi->name, v);
	return true;
}

static struct fe_shape_binding *find_shape(const struct fe_options *opt, const char *input)
{
	for (int i = 0; opt && i < opt->nshapes; i++)
		if (!strcmp(opt->shapes[i].input, input))
			return &opt->shapes[i];
	return NULL;
}

/* Graph inputs (those without an initializer) with bound shapes. */
static bool bind_inputs(struct fe *fe)
{
	Onnx__GraphProto *g = fe->model->graph;
	char unbound[1024] = "";
	size_t ulen = 0;
	int nunbound = 0, errors = fe->ctx->nerrors;

	for (size_t i = 0; i < g->n_input; i++) {
		const Onnx__ValueInfoProto *vi = g->input[i];
		const Onnx__TypeProto *tp = vi->type;
		struct fe_shape_binding *sb;
		struct ir_type t = { 0 };
		void **known;
		if (!vi->name || !vi->name[0])
			continue;
		known = ir_map_get(&fe->values, vi->name);
		if (known)
			continue; /* an initializer: a constant */
		if (find_const(fe->opt, vi->name)) {
			bind_const_input(fe, vi, find_const(fe->opt, vi->name));
			continue;
		}
		if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
		    !tp->tensor_type) {
			ir_error(fe->ctx,
			         "graph input '%s' is not a tensor (sequences, maps and optionals "
			         "are not supported)",
			         vi->name);
			continue;
		}
		t.dtype = ir_dtype_from_onnx(
		        tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0);
		if (t.dtype == IR_DT_NONE) {
			ir_error(fe->ctx,
			         "graph input '%s' has element type %s (%d), which onnxc does not "
			         "support",
			         vi->name, ir_onnx_dtype_name(tp->tensor_type->elem_type),
			         tp->tensor_type->elem_type);
			continue;
		}
		sb = find_shape(fe->opt, vi->name);
		if (sb)
			sb->used = true;
		if (tp->tensor_type->shape) {
			const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
			if (sh->n_dim > IR_MAX_RANK) {
				ir_error(fe->ctx,
				         "graph input '%s' has rank %zu; onnxc supports up to %d",
				         vi->name, sh->n_dim, IR_MAX_RANK);
				continue;
			}
			if (sb && sb->rank != (int)sh->n_dim) {
				ir_error(fe->ctx,
				         "--shape %s has rank %d but the model declares rank %zu",
				         vi->name, sb->rank, sh->n_dim);
				continue;
			}
			t.rank = (int)sh->n_dim;
			for (size_t d = 0; d < sh->n_dim; d++) {
				const Onnx__TensorShapeProto__Dimension *dim = sh->dim[d];
				int64_t v = -1;
				const char *param = NULL;
				if (dim->value_case ==
				    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
					v = dim->dim_value;
					if (v < 0) {
						ir_error(fe->ctx,
						         "graph input '%s' has negative dimension "
						         "%lld",
						         vi->name, (long long)v);
						v = 0;
					}
					if (sb && sb->dims[d] != v) {
						ir_error(fe->ctx,
						         "--shape %s: dimension %zu is %lld in the "
						         "model, "
						         "not %lld",
						         vi->name, d, (long long)v,
						         (long long)sb->dims[d]);
					}
				} else if (
				        dim->value_case ==
				                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
				        dim->dim_param[0]) {
					struct fe_dim_binding *db =
					        find_dim(fe->opt, dim->dim_param);
					param = dim->dim_param;
					if (db) {
						db->used = true;
						v = db->value;
						if (sb && sb->dims[d] != v)
							ir_error(fe->ctx,
							         "--shape %s and --dim %s disagree "
							         "on "
							         "dimension %zu",
							         vi->name, param, d);
					}
				}
				if (sb)
					v = sb->dims[d];
				if (v < 0) {
					nunbound++;
					if (ulen < sizeof unbound - 200)
						ulen += (size_t)snprintf(
						        unbound + ulen, sizeof unbound - ulen,
						        "%s%s (input '%s' dimension %zu)",
						        nunbound > 1 ? ", " : "",
						        param ? param : "?", vi->name, d);
					v = 1;
				}
				t.dims[d] = v;
			}
		} else if (sb) {
			t.rank = sb->rank;
			memcpy(t.dims, sb->dims, sizeof(int64_t) * (size_t)sb->rank);
		} else {
			ir_error(fe->ctx,
			         "graph input '%s' has no shape in the model; give it with "
			         "--shape %s=DIMS",
			         vi->name, vi->name);
			continue;
		}
		if (ir_type_elems(&t) < 0 || ir_type_elems(&t) > INT64_MAX / 8) {
			ir_error(fe->ctx,
			         "graph input '%s' has more elements than a 64-bit size can count",
			         vi->name);
			continue;
		}
		ir_map_put(&fe->values, vi->name, ir_add_input(fe->m, vi->name, &t));
	}
	if (nunbound)
		ir_error(fe->ctx,
		         "unbound symbolic dimension%s: %s; bind them with --dim NAME=N or "
		         "--shape INPUT=DIMS",
		         nunbound == 1 ? "" : "s", unbound);
	for (int i = 0; fe->opt && i < fe->opt->ndims; i++)
		if (!fe->opt->dims[i].used)
			ir_warning(fe->ctx,
			           "--dim %s matches no symbolic dimension of the model's inputs",
			           fe->opt->dims[i].name);
	for (int i = 0; fe->opt && i < fe->opt->nshapes; i++)
		if (!fe->opt->shapes[i].used)
			ir_error(fe->ctx, "--shape %s matches no graph input",
			         fe->opt->shapes[i].input);
	for (int i = 0; fe->opt && i < fe->opt->nconsts; i++)
		if (!fe->opt->consts[i].used)
			ir_error(fe->ctx, "--const %s matches no graph input",
			         fe->opt->consts[i].name);
	return fe->ctx->nerrors == errors;
}

static bool load_initializers(struct fe *fe)
{
	Onnx__GraphProto *g = fe->model->graph;
	int errors = fe->ctx->nerrors;
	for (size_t i = 0; i < g->n_initializer; i++) {
		const Onnx__TensorProto *t = g->initializer[i];
		struct ir_value *v;
		char *who;
		if (!t->name || !t->name[0] || ir_map_get(&fe->values, t->name))
			continue; /* reported by scan_graph */
		who = ir_arena_printf(&fe->m->arena, "initializer '%s'", t->name);
		if (ir_map_get(&fe->no_data, t->name)) {
			struct ir_type ty;
			v = fe_tensor_type(fe, t, who, &ty)
			            ? ir_add_const_ref(fe->m, t->name, &ty, 0)
			            : NULL;
		} else {
			v = fe_tensor_const(fe, t, t->name, who);
		}
		if (v)
			ir_map_put(&fe->values, t->name, v);
	}
	if (g->n_sparse_initializer)
		ir_error(fe->ctx, "sparse initializers are not supported");
	return fe->ctx->nerrors == errors;
}

/* Binary heap of node indices, for a stable topological order. */
struct heap {
	int *a;
	int n;
};

static void heap_push(struct heap *h, int v)
{
	int i = h->n++;
	h->a[i] = v;
	while (i && h->a[(i - 1) / 2] > h->a[i]) {
		int p = (i - 1) / 2, t = h->a[p];
		h->a[p] = h->a[i];
		h->a[i] = t;
		i = p;
	}
}

static int heap_pop(struct heap *h)
{
	int top = h->a[0], i = 0;
	h->a[0] = h->a[--h->n];
	for (;;) {
		int l = 2 * i + 1, r = l + 1, s = i;
		if (l < h->n && h->a[l] < h->a[s])
			s = l;
		if (r < h->n && h->a[r] < h->a[s])
			s = r;
		if (s == i)
			break;
		int t = h->a[s];
		h->a[s] = h->a[i];
		h->a[i] = t;
		i = s;
	}
	return top;
}

/*
 * Orders nodes so each comes after the producers of its inputs: Kahn's
 * algorithm taking the lowest original index first, which keeps an already
 * sorted graph in its order. Reports undefined inputs and cycles.
 */
static int *topo_order(struct fe *fe, const Onnx__GraphProto *g, const char **names)
{
	struct ir_arena *a = &fe->m->arena;
	int nn = (int)g->n_node, done = 0, errors = fe->ctx->nerrors;
	int *order = ir_arena_alloc(a, sizeof(int) * (size_t)(nn + 1));
	int *indeg = ir_arena_alloc(a, sizeof(int) * (size_t)(nn + 1));
	int *nsucc = ir_arena_alloc(a, sizeof(int) * (size_t)(nn + 1));
	int **succ = ir_arena_alloc(a, sizeof(int *) * (size_t)(nn + 1));
	struct ir_map producer;
	struct heap h = { ir_arena_alloc(a, sizeof(int) * (size_t)(nn + 1)), 0 };

	ir_map_init(&producer, a);
	for (int i = 0; i < nn; i++)
		for (size_t k = 0; k < g->node[i]->n_output; k++)
			if (g->node[i]->output[k][0] &&
			    !ir_map_get(&producer, g->node[i]->output[k]))
				ir_map_put(&producer, g->node[i]->output[k],
				           (void *)(intptr_t)(i + 1));
	/* count edges, then fill successor lists; what a node's sub-graphs
	 * read of this graph is an input too */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < nn; i++) {
			const Onnx__NodeProto *p = g->node[i];
			size_t nreads = p->n_input;
			const char **reads = (const char **)p->input;
			if (has_subgraphs(p)) {
				struct ir_map r;
				ir_map_init(&r, a);
				for (size_t k = 0; k < p->n_attribute; k++)
					if (p->attribute[k]->g)
						graph_reads(p->attribute[k]->g, &r);
				reads = ir_arena_alloc(a, sizeof *reads *
				                                  (p->n_input + (size_t)r.n + 1));
				if (p->n_input) /* a node of no inputs has none to copy (NULL) */
					memcpy(reads, p->input, sizeof *reads * p->n_input);
				for (int k = 0; k < r.cap; k++)
					if (r.keys[k] && ir_map_get(&producer, r.keys[k]))
						reads[nreads++] = r.keys[k];
			}
			for (size_t k = 0; k < nreads; k++) {
				const char *in = reads[k];
				void **pr;
				if (!in[0] || ir_map_get(&fe->values, in))
					continue;
				pr = ir_map_get(&producer, in);
				if (!pr) {
					if (pass == 0 && k < p->n_input)
						ir_node_error(fe->ctx, names[i], p->op_type,
						              "input '%s' is not defined by any "
						              "node, initializer or "
						              "graph input",
						              in);
					continue;
				}
				int src = (int)(intptr_t)*pr - 1;
				if (pass == 0) {
					nsucc[src]++;
					indeg[i]++;
				} else {
					succ[src][nsucc[src]++] = i;
				}
			}
		}
		if (pass == 0)
			for (int i = 0; i < nn; i++) {
				succ[i] = ir_arena_alloc(a, sizeof(int) * (size_t)(nsucc[i] + 1));
				nsucc[i] = 0;
			}
	}
	if (fe->ctx->nerrors != errors)
		return NULL;
	for (int i = 0; i < nn; i++)
		if (!indeg[i])
			heap_push(&h, i);
	while (h.n) {
		int i = heap_pop(&h);
		order[done++] = i;
		for (int k = 0; k < nsucc[i]; k++)
			if (--indeg[succ[i][k]] == 0)
				heap_push(&h, succ[i][k]);
	}
	if (done < nn) {
		for (int i = 0; i < nn; i++)
			if (indeg[i]) {
				ir_node_error(fe->ctx, names[i], g->node[i]->op_type,
				              "the graph has a cycle through this node");
				break;
			}
		return NULL;
	}
	return order;
}

static int cmp_attr_name(const void *a, const void *b)
{
	return strcmp((*(Onnx__AttributeProto *const *)a)->name,
	              (*(Onnx__AttributeProto *const *)b)->name);
}

/* Every attribute has a name, none twice: sorted, so n log n for a node
 * with thousands of them. */
static bool attrs_unique(struct fe_node *nd)
{
	const Onnx__NodeProto *p = nd->proto;
	Onnx__AttributeProto **sorted;
	for (size_t i = 0; i < p->n_attribute; i++)
		if (!p->attribute[i]->name || !p->attribute[i]->name[0])
			return fe_fail(nd, "attribute %zu has no name", i);
	if (p->n_attribute < 2)
		return true;
	sorted = ir_arena_alloc(&nd->fe->m->arena, sizeof *sorted * p->n_attribute);
	memcpy(sorted, p->attribute, sizeof *sorted * p->n_attribute);
	qsort(sorted, p->n_attribute, sizeof *sorted, cmp_attr_name);
	for (size_t i = 1; i < p->n_attribute; i++)
		if (!strcmp(sorted[i - 1]->name, sorted[i]->name))
			return fe_fail(nd, "attribute '%s' is given twice", sorted[i]->name);
	return true;
}

/* The record of v if it is an If result of run-time shape, else NULL. */
static struct fe_shaped *shaped(const struct fe *fe, const struct ir_value *v)
{
	void **s = fe->first_shaped ? ir_map_get(&fe->shaped, v->name) : NULL;
	return s && ((struct fe_shaped *)*s)->v == v ? *s : NULL;
}

/* false, reported on nd, if nd reads v and v is an If result of run-time
 * shape: those are allowed only as graph outputs (docs/ir.md), through an
 * Identity too (which binds its input as it is). */
static bool fixed_shape(struct fe_node *nd, const struct ir_value *v)
{
	const struct fe_shaped *s = shaped(nd->fe, v);
	char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
	if (!s || (nd->def && !nd->def->domain && !strcmp(nd->def->name, "Identity")))
		return true;
	return fe_fail(nd,
	               "reads '%s', which If '%s' gives shape %s in one branch and %s in the "
	               "other; onnxc allows branches of different shapes only for a graph "
	               "output that nothing reads",
	               v->name, s->node, ir_type_str(&s->shape.then_type, a, sizeof a),
	               ir_type_str(&s->shape.else_type, b, sizeof b));
}

static void import_node(struct fe *fe, const Onnx__NodeProto *p, const char *name, int64_t opset)
{
	const struct fe_op *op = fe_find_op(p->domain, p->op_type);
	struct fe_node nd = { .fe = fe,
		              .proto = p,
		              .name = name,
		              .op = p->op_type,
		              .def = op,
		              .opset = opset,
		              .version = node_version(fe, op, opset) };
	struct ir_arena *a = &fe->m->arena;

	nd.nin = (int)p->n_input;
	nd.nout = (int)p->n_output;
	nd.in = ir_arena_alloc(a, sizeof *nd.in * (size_t)(nd.nin + 1));
	nd.attr_used = ir_arena_alloc(a, p->n_attribute + 1);
	for (int i = 0; i < nd.nin; i++) {
		void **v;
		if (!p->input[i][0])
			continue;
		v = ir_map_get(&fe->values, p->input[i]);
		IR_ASSERT(v);
		if (!*v)
			goto poison; /* depends on a node that failed */
		nd.in[i] = *v;
		if (!fixed_shape(&nd, *v))
			goto poison;
	}
	if (!attrs_unique(&nd))
		goto poison;
	if (!op->import(&nd) || nd.failed)
		goto poison;
	for (size_t i = 0; i < p->n_attribute; i++)
		if (!nd.attr_used[i]) {
			fe_fail(&nd, "attribute '%s' is not supported", p->attribute[i]->name);
			goto poison;
		}
	for (int k = 0; k < nd.nout; k++) {
		void **v = p->output[k][0] ? ir_map_get(&fe->values, p->output[k]) : NULL;
		if (p->output[k][0] && (!v || !*v)) {
			fe_fail(&nd, "has %d outputs, but the op does not produce output %d ('%s')",
			        nd.nout, k, p->output[k]);
			goto poison;
		}
	}
	return;
poison:
	for (int k = 0; k < nd.nout; k++)
		if (p->output[k][0])
			ir_map_put(&fe->values, p->output[k], NULL);
}

/*
 * Sub-graph g of node nd imported in place, at nd's opset: its nodes named
 * "NODE/TAG/SUB", reading outer values directly and g's inputs bound to
 * in[0..nin) (their declared element types checked), its outputs into
 * out[0..nout). False when it fails (reported; nd is marked failed when a
 * node of g failed).
 */
bool fe_import_graph(struct fe_node *nd, const Onnx__GraphProto *g, const char *tag,
                     struct ir_value *const *in, int nin, struct ir_value **out, int nout)
{
	struct fe *fe = nd->fe;
	const char **names;
	int *order, errors = fe->ctx->nerrors;
	if ((int)g->n_input != nin)
		return fe_fail(nd, "the %s has %zu inputs for the %d the op gives it", tag,
		               g->n_input, nin);
	if ((int)g->n_output != nout)
		return fe_fail(nd, "the %s has %zu outputs for the %d the op takes", tag,
		               g->n_output, nout);
	for (int i = 0; i < nin; i++) {
		const Onnx__ValueInfoProto *vi = g->input[i];
		const Onnx__TypeProto *t = vi->type;
		if (!vi->name || !vi->name[0] || ir_map_get(&fe->values, vi->name))
			return fe_fail(nd, "the %s's input %d has no name or one in use", tag, i);
		if (t && t->tensor_type && t->tensor_type->has_elem_type &&
		    ir_dtype_from_onnx(t->tensor_type->elem_type) != in[i]->type.dtype)
			return fe_fail(nd,
			               "the %s's input '%s' is declared %s, but the op gives it %s",
			               tag, vi->name, ir_onnx_dtype_name(t->tensor_type->elem_type),
			               ir_dtype_name(in[i]->type.dtype));
		ir_map_put(&fe->values, vi->name, in[i]);
	}
	for (size_t i = 0; i < g->n_initializer; i++) {
		const Onnx__TensorProto *t = g->initializer[i];
		struct ir_value *v;
		if (!t->name || !t->name[0] || ir_map_get(&fe->values, t->name))
			return fe_fail(nd, "the %s's initializer %zu has no name or one in use",
			               tag, i);
		v = fe_tensor_const(fe, t, ir_unique_name(fe->m, t->name),
		                    ir_arena_printf(&fe->m->arena, "initializer '%s'", t->name));
		if (!v)
			return fe_fail(nd, "the %s's initializer '%s' cannot be read", tag,
			               t->name);
		ir_map_put(&fe->values, t->name, v);
	}
	names = ir_arena_alloc(&fe->m->arena, sizeof *names * (g->n_node + 1));
	for (size_t i = 0; i < g->n_node; i++) {
		const Onnx__NodeProto *b = g->node[i];
		const struct fe_op *op = b->op_type ? fe_find_op(b->domain, b->op_type) : NULL;
		names[i] = ir_arena_printf(&fe->m->arena, "%s/%s/%s", nd->name, tag,
		                           node_name(fe, b, i));
		if (!op || !node_version(fe, op, nd->opset))
			ir_node_error(fe->ctx, names[i], b->op_type ? b->op_type : "?",
			              "op is not supported by onnxc (domain '%s', opset %lld)",
			              b->domain && b->domain[0] ? b->domain : "ai.onnx",
			              (long long)nd->opset);
		for (size_t k = 0; k < b->n_output; k++)
			if (b->output[k][0] && ir_map_get(&fe->values, b->output[k]))
				ir_node_error(fe->ctx, names[i], b->op_type ? b->op_type : "?",
				              "output '%s' is already defined", b->output[k]);
	}
	if (fe->ctx->nerrors != errors || !(order = topo_order(fe, g, names))) {
		nd->failed = true;
		return false;
	}
	for (size_t i = 0; i < g->n_node; i++)
		import_node(fe, g->node[order[i]], names[order[i]], nd->opset);
	for (int k = 0; k < nout; k++) {
		void **v = g->output[k]->name ? ir_map_get(&fe->values, g->output[k]->name) : NULL;
		if (!v)
			return fe_fail(nd, "the %s's output '%s' is not defined in it", tag,
			               g->output[k]->name ? g->output[k]->name : "");
		if (!*v) { /* a node of the sub-graph failed (reported) */
			nd->failed = true;
			return false;
		}
		if (!fixed_shape(nd, *v))
			return false;
		out[k] = *v;
	}
	return true;
}

/* nd's graph attribute name (marked used), or NULL. */
const Onnx__GraphProto *fe_attr_graph(struct fe_node *nd, const char *name)
{
	const Onnx__NodeProto *p = nd->proto;
	for (size_t i = 0; i < p->n_attribute; i++)
		if (p->attribute[i]->name && !strcmp(p->attribute[i]->name, name)) {
			nd->attr_used[i] = 1;
			return p->attribute[i]->g;
		}
	return NULL;
}

/* runtime/onnxc_rt.h's RT_ERR_BRANCH, which the frontend does not include
 * (it depends on the IR alone); docs/api.md lists the codes */
#define RT_ERR_BRANCH_CODE 11

/* A branch imported on trial: its diagnostics kept, not reported. */
struct trial {
	char first[1024]; /* the first line */
	int lines;
};

static void trial_diag(void *ud, const char *line)
{
	struct trial *t = ud;
	if (!t->lines++)
		snprintf(t->first, sizeof t->first, "%s", line);
}

/*
 * Branch g imported under the current guard. When it cannot be (a branch
 * valid only for other shapes than the compiled ones, as Silero VAD's
 * 8 kHz network is for 512-sample chunks), nothing is reported and the
 * error count is as it was; false, with its diagnostics in t.
 */
static bool try_branch(struct fe_node *nd, const Onnx__GraphProto *g, const char *tag,
                       struct ir_value **out, struct trial *t)
{
	struct ir_ctx *ctx = nd->fe->ctx;
	ir_diag_fn diag = ctx->diag;
	void *ud = ctx->diag_ud;
	int errors = ctx->nerrors, warnings = ctx->nwarnings;
	bool ok;
	ctx->diag = trial_diag;
	ctx->diag_ud = t;
	ok = fe_import_graph(nd, g, tag, NULL, 0, out, nd->nout);
	ctx->diag = diag;
	ctx->diag_ud = ud;
	if (ok && ctx->nerrors == errors)
		return true;
	ctx->nerrors = errors;
	ctx->nwarnings = warnings;
	nd->failed = false;
	return false;
}

/* A trial's first diagnostic reported after all, and counted. */
static void report_trial(struct ir_ctx *ctx, const struct trial *t)
{
	if (ctx->diag)
		ctx->diag(ctx->diag_ud, t->first);
	else
		fprintf(stderr, "%s\n", t->first);
	ctx->nerrors++;
}

/* What a trial's first diagnostic says, without "FILE: error: ". */
static const char *trial_reason(const struct trial *t)
{
	const char *s = strstr(t->first, "error: ");
	return s ? s + 7 : t->first;
}

/* Branch value x, flat and padded with zeros to n elements, computed under
 * guard g. */
static struct ir_value *flat_padded(struct fe_node *nd, struct ir_value *x, int64_t n,
                                    struct ir_value *g)
{
	int64_t e = ir_type_elems(&x->type), pads[2] = { 0, n - e };
	struct ir_value *outer = nd->fe->guard;
	struct ir_node *p = NULL;
	const char *name;
	nd->fe->guard = g;
	if (x->type.rank != 1)
		x = fe_reshape(nd, x, &e, 1, -1);
	if (x && e < n) {
		name = fe_tmp_name(nd, "pad");
		p = fe_emit(nd, IR_OP_PAD, &x, 1, &name, 1);
		ir_set_ints(nd->fe->m, p, "pads", pads, 2);
		ir_set_s(nd->fe->m, p, "mode", "constant");
		ir_set_f(nd->fe->m, p, "value", 0);
		x = fe_finish(nd, p) ? p->out[0] : NULL;
	}
	nd->fe->guard = outer;
	return x;
}

/*
 * Output k of If nd, whose branches give *t and *e of one dtype but
 * different shapes: each branch's value becomes its elements flat, padded
 * to the larger count, and the record of a result of run-time shape is
 * returned for imp_if to complete (NULL: reported). Only a graph output
 * may be such a result (fixed_shape).
 */
static struct fe_shaped *shaped_output(struct fe_node *nd, int k, struct ir_value *c,
                                       struct ir_value *g_then, struct ir_value *g_else,
                                       struct ir_value **t, struct ir_value **e)
{
	struct fe_shaped *r;
	char a[IR_TYPE_STR_MAX], b[IR_TYPE_STR_MAX];
	int64_t nt = ir_type_elems(&(*t)->type), ne = ir_type_elems(&(*e)->type);
	int64_t n = nt > ne ? nt : ne;
	if ((*t)->type.dtype != (*e)->type.dtype) {
		fe_fail(nd,
		        "output %d is %s in the then branch and %s in the else branch; with a "
		        "condition known only at run time both branches must give one element "
		        "type",
		        k, ir_type_str(&(*t)->type, a, sizeof a),
		        ir_type_str(&(*e)->type, b, sizeof b));
		return NULL;
	}
	r = ir_arena_alloc(&nd->fe->m->arena, sizeof *r);
	r->shape = (struct ir_out_shape){ c, (*t)->type, (*e)->type };
	r->node = nd->name;
	if (!(*t = flat_padded(nd, *t, n, g_then)) || !(*e = flat_padded(nd, *e, n, g_else)))
		return NULL;
	return r;
}

/*
 * If. A condition that is a constant (exporters leave many: a shape test
 * folded at import) imports the branch taken in place, its nodes named
 * "IF/then/NODE" or "IF/else/NODE", reading outer values directly; its
 * outputs are the If's. A condition known only at run time imports both
 * branches in place, every node of the then branch guarded by the
 * condition and every node of the else branch by its negation (inside an
 * outer branch: and-ed with the outer guard, by nodes under the outer
 * guard), and each output becomes phi(cond, then, else) (docs/ir.md,
 * Guards). Both branches' outputs must then have one type. A branch that
 * cannot be imported with the compiled shapes becomes a trap: the model
 * compiles (with a warning naming the reason), and a run that takes the
 * branch fails with RT_ERR_BRANCH.
 */
static bool imp_if(struct fe_node *nd)
{
	struct fe *fe = nd->fe;
	const Onnx__GraphProto *then_g, *else_g, *g;
	struct ir_value *out[64], *eout[64], *c, *outer = fe->guard, *g_then, *g_else;
	struct trial t_then = { .lines = 0 }, t_else = { .lines = 0 };
	bool cond, ok, ok_else;
	if (!fe_inputs(nd, 1, 1))
		return false;
	c = nd->in[0];
	if (ir_type_elems(&c->type) != 1)
		return fe_fail(nd, "the condition has %lld elements, not one",
		               (long long)ir_type_elems(&c->type));
	then_g = fe_attr_graph(nd, "then_branch");
	else_g = fe_attr_graph(nd, "else_branch");
	if (nd->nout > 64)
		return fe_fail(nd, "has %d outputs; onnxc takes at most 64", nd->nout);
	if (fe_is_const(nd, 0)) {
		cond = ir_load_f64(c->type.dtype, c->data, 0) != 0;
		if (!(g = cond ? then_g : else_g))
			return fe_fail(nd, "attribute '%s' (a graph) is required",
			               cond ? "then_branch" : "else_branch");
		if (!fe_import_graph(nd, g, cond ? "then" : "else", NULL, 0, out, nd->nout))
			return false;
		for (int k = 0; k < nd->nout; k++)
			fe_bind(nd, k, out[k]);
		return true;
	}
	if (!then_g || !else_g)
		return fe_fail(nd, "attribute '%s' (a graph) is required",
		               then_g ? "else_branch" : "then_branch");
	if (c->type.dtype != IR_BOOL)
		return fe_fail(nd, "the condition is %s, not bool", ir_dtype_name(c->type.dtype));
	/* guards and the phis' condition: a scalar (a view of c) */
	if (c->type.rank && !(c = fe_reshape(nd, c, (const int64_t[]){ 0 }, 0, -1)))
		return false;
	g_then = outer ? fe_binary(nd, IR_OP_AND, outer, c, -1) : c;
	g_else = fe_unary(nd, IR_OP_NOT, c, -1);
	if (outer && g_else)
		g_else = fe_binary(nd, IR_OP_AND, outer, g_else, -1);
	if (!g_then || !g_else)
		return false;
	fe->guard = g_then;
	ok = try_branch(nd, then_g, "then", out, &t_then);
	fe->guard = g_else;
	ok_else = try_branch(nd, else_g, "else", eout, &t_else);
	if (!ok && !ok_else) {
		fe->guard = outer;
		report_trial(fe->ctx, &t_then);
		report_trial(fe->ctx, &t_else);
		return fe_fail(nd, "neither branch can be compiled (above)");
	}
	if (!ok || !ok_else) { /* the other branch's outputs, from a trap */
		const struct trial *t = ok ? &t_else : &t_then;
		struct ir_value **bad = ok ? eout : out, **good = ok ? out : eout;
		fe->guard = ok ? g_else : g_then;
		for (int k = 0; k < nd->nout; k++) {
			const char *name = fe_tmp_name(nd, "trap");
			struct ir_node *n = fe_emit(nd, IR_OP_TRAP, NULL, 0, &name, 1);
			ir_set_t(fe->m, n, "dtype", good[k]->type.dtype);
			ir_set_ints(fe->m, n, "shape", good[k]->type.dims, good[k]->type.rank);
			ir_set_s(fe->m, n, "message",
			         ir_arena_printf(&fe->m->arena, "the %s branch cannot run: %s",
			                         ok ? "else" : "then", trial_reason(t)));
			if (!fe_finish(nd, n))
				return false;
			bad[k] = n->out[0];
		}
		ir_warning(
		        fe->ctx,
		        "node '%s' (If): the %s branch cannot be compiled for these shapes (%s); "
		        "a run that takes it fails with status %d (RT_ERR_BRANCH)",
		        nd->name, ok ? "else" : "then", trial_reason(t), RT_ERR_BRANCH_CODE);
	}
	fe->guard = outer;
	for (int k = 0; k < nd->nout; k++) {
		struct ir_value *v;
		struct fe_shaped *r = NULL;
		if (!ir_type_eq(&out[k]->type, &eout[k]->type) &&
		    !(r = shaped_output(nd, k, c, g_then, g_else, &out[k], &eout[k])))
			return false;
		if (!(v = fe_simple(nd, IR_OP_PHI, (struct ir_value *[]){ c, out[k], eout[k] }, 3,
		                    k)))
			return false;
		fe_bind(nd, k, v);
		if (r) {
			r->v = v;
			r->next = fe->first_shaped;
			fe->first_shaped = r;
			ir_map_put(&fe->shaped, v->name, r);
		}
	}
	return true;
}

/* Does declared shape sh (fixed or symbolic dimensions) fit t? */
static bool declared_fits(const Onnx__TensorShapeProto *sh, const struct ir_type *t)
{
	if ((int)sh->n_dim != t->rank)
		return false;
	for (size_t d = 0; d < sh->n_dim; d++)
		if (sh->dim[d]->value_case ==
		            ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
		    sh->dim[d]->dim_value != t->dims[d])
			return false;
	return true;
}

struct dims_str {
	char s[IR_TYPE_STR_MAX];
};

/* Declared shape sh as "[2,?,3]", after t's dtype. */
static struct dims_str declared_str(const Onnx__TensorShapeProto *sh, const struct ir_type *t)
{
	struct dims_str r;
	size_t n = (size_t)snprintf(r.s, sizeof r.s, "%s[", ir_dtype_name(t->dtype));
	for (size_t d = 0; d < sh->n_dim && n < sizeof r.s; d++) {
		const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
		if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			n += (size_t)snprintf(r.s + n, sizeof r.s - n, "%s%lld", d ? "," : "",
			                      (long long)dm->dim_value);
		else
			n += (size_t)snprintf(r.s + n, sizeof r.s - n, "%s?", d ? "," : "");
	}
	if (n < sizeof r.s)
		snprintf(r.s + n, sizeof r.s - n, "]");
	return r;
}

/* Graph outputs, checked against the model's declared types. An If result
 * of run-time shape is one (ir_set_out_shape), checked against both. */
static void bind_outputs(struct fe *fe)
{
	Onnx__GraphProto *g = fe->model->graph;
	struct ir_map bound; /* value name -> the value, for each output so far */
	ir_map_init(&bound, &fe->m->arena);
	for (size_t i = 0; i < g->n_output; i++) {
		const Onnx__ValueInfoProto *vi = g->output[i];
		void **slot = vi->name ? ir_map_get(&fe->values, vi->name) : NULL;
		struct ir_value *v;
		const struct fe_shaped *r;
		bool dup;
		if (!slot) {
			ir_error(fe->ctx, "graph output '%s' is not produced by any node",
			         vi->name ? vi->name : "");
			continue;
		}
		if (!(v = *slot))
			continue;  /* its node failed */
		r = shaped(fe, v); /* before v is renamed */
		dup = ir_map_get(&bound, v->name) != NULL;
		if (v->kind != IR_VAL_NODE || dup) {
			/* outputs are distinct node results, named like the model's:
			 * the copy takes the name from a constant holding it (a folded
			 * output); a graph input or another output keeps its own */
			struct ir_value *taken = ir_find_value(fe->m, vi->name);
			const char *name = taken ? ir_unique_name(fe->m, vi->name) : vi->name;
			struct ir_node *n =
			        ir_add_node(fe->m, IR_OP_COPY, vi->name, &v, 1, &name, 1);
			char err[256];
			IR_ASSERT(ir_infer_node(fe->m, n, err, sizeof err));
			if (taken && taken->kind == IR_VAL_CONST)
				ir_swap_names(fe->m, taken, n->out[0]);
			v = n->out[0];
		} else if (strcmp(v->name, vi->name)) {
			/* a node result bound to the output through aliases (an
			 * Identity, a Cast to its own type): it takes the output's
			 * name, which a constant may hold if the output was folded */
			struct ir_value *taken = ir_find_value(fe->m, vi->name);
			if (taken)
				ir_swap_names(fe->m, taken, v);
			else
				ir_rename_value(fe->m, v, vi->name);
		}
		if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
		    vi->type->tensor_type) {
			const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
			char have[IR_TYPE_STR_MAX * 2 + 8];
			if (r) {
				char e[IR_TYPE_STR_MAX];
				ir_type_str(&r->shape.then_type, have, IR_TYPE_STR_MAX);
				snprintf(have + strlen(have), sizeof have - strlen(have), " or %s",
				         ir_type_str(&r->shape.else_type, e, sizeof e));
			} else {
				ir_type_str(&v->type, have, sizeof have);
			}
			if (tt->has_elem_type && tt->elem_type &&
			    ir_dtype_from_onnx(tt->elem_type) != v->type.dtype)
				ir_error(fe->ctx,
				         "graph output '%s' is declared %s but computes %s",
				         vi->name, ir_onnx_dtype_name(tt->elem_type), have);
			else if (tt->shape &&
			         (r ? !declared_fits(tt->shape, &r->shape.then_type) &&
			                          !declared_fits(tt->shape, &r->shape.else_type)
			            : !declared_fits(tt->shape, &v->type)))
				ir_error(fe->ctx,
				         "graph output '%s' is declared with shape %s but computes "
				         "%s",
				         vi->name, declared_str(tt->shape, &v->type).s, have);
		}
		ir_add_output(fe->m, v);
		if (r)
			ir_set_out_shape(fe->m, fe->m->noutputs - 1, &r->shape);
		ir_map_put(&bound, v->name, v);
	}
	if (!g->n_output)
		ir_error(fe->ctx, "the graph has no outputs");
}

static bool import_graph(struct fe *fe)
{
	Onnx__GraphProto *g = fe->model->graph;
	const char **names = ir_arena_alloc(&fe->m->arena, sizeof *names * (g->n_node + 1));
	int *order;
	int errors = fe->ctx->nerrors;

	for (size_t i = 0; i < g->n_node; i++)
		names[i] = node_name(fe, g->node[i], i);
	if (!fe_inline_functions(fe, names))
		return false;
	if (fe->node_names)
		names = fe->node_names;
	if (!scan_graph(fe, names))
		return false;
	load_initializers(fe);
	fe->fold_budget = FE_FOLD_BASE;
	for (int i = 0; i < fe->m->nvalues; i++) {
		const struct ir_value *v = fe->m->values[i];
		if (v->kind == IR_VAL_CONST && fe->fold_budget < INT64_MAX / 4)
			fe->fold_budget += FE_FOLD_PER_BYTE * ir_type_elems(&v->type) *
			                   ir_dtype_size(v->type.dtype);
	}
	if (!bind_inputs(fe) || fe->ctx->nerrors != errors)
		return false;
	if (!(order = topo_order(fe, g, names)))
		return false;
	for (size_t i = 0; i < g->n_node; i++)
		import_node(fe, g->node[order[i]], names[order[i]],
		            node_opset(fe, (size_t)order[i]));
	for (const struct fe_shaped *r = fe->first_shaped; r; r = r->next)
		if (r->v->nuses) /* fixed_shape sees every node's inputs: a backstop */
			ir_error(fe->ctx,
			         "node '%s' reads '%s', whose shape If '%s' picks at run time; "
			         "only a graph output may be such a value",
			         r->v->uses[0].node->name, r->v->name, r->node);
	bind_outputs(fe);
	return fe->ctx->nerrors == errors;
}

struct ir_module *fe_import(struct ir_ctx *ctx, const char *path, const struct fe_options *opt)
{
	struct fe fe = { .ctx = ctx, .opt = opt, .path = path };
	jmp_buf jb, *saved_oom = ctx->oom;
	const char *saved_file = ctx->file;
	struct ir_module *volatile m = NULL;
	Onnx__ModelProto *volatile mp = NULL;
	volatile bool ok = false;

	ctx->file = path;
	if (setjmp(jb)) {
		fe.m = m;
		fe.src = NULL; /* the arena closes the file */
		fe_free_model(&fe, mp);
		ir_module_free(m);
		ctx->oom = saved_oom;
		ctx->file = saved_file;
		return NULL;
	}
	ctx->oom = &jb;
	m = ir_module_new(ctx, "model");
	fe.m = m;
	fe.max_const_bytes = opt && opt->max_const_bytes ? opt->max_const_bytes : (int64_t)4 << 30;
	ir_map_init(&fe.values, &m->arena);
	ir_map_init(&fe.reserved, &m->arena);
	ir_map_init(&fe.tmp_next, &m->arena);
	ir_map_init(&fe.reads, &m->arena);
	ir_map_init(&fe.wanted, &m->arena);
	ir_map_init(&fe.no_data, &m->arena);
	ir_map_init(&fe.shaped, &m->arena);
	for (int i = 0; opt && i < opt->nno_data; i++)
		ir_map_put(&fe.no_data, opt->no_data[i], (void *)opt->no_data[i]);
	{
		char *tmp = ir_arena_strdup(&m->arena, path);
		fe.dir = ir_arena_strdup(&m->arena, dirname(tmp));
	}
	mp = fe_load_model(&fe, path);
	if (mp) {
		fe.model = mp;
		if (mp->graph->name && mp->graph->name[0])
			m->name = ir_arena_strdup(&m->arena, mp->graph->name);
		ok = find_opset(&fe) && import_graph(&fe);
	}
	fe_free_model(&fe, mp);
	ctx->oom = saved_oom;
	ctx->file = saved_file;
	if (!ok) {
		ir_module_free(m);
		return NULL;
	}
	return m;
}

bool fe_parse_dims(const char *s, int *rank, int64_t *dims)
{
	*rank = 0;
	if (!*s)
		return true;
	for (;;) {
		char *e;
		long long v;
		if (*rank == IR_MAX_RANK || *s < '0' || *s > '9')
			return false;
		v = strtoll(s, &e, 10);
		if (v < 0 || e == s || v == LLONG_MAX)
			return false;
		dims[(*rank)++] = v;
		if (!*e)
			return true;
		if (*e != 'x' && *e != ',')
			return false;
		s = e + 1;
	}
}

bool fe_with_proto(struct ir_ctx *ctx, const char *path, fe_proto_fn fn, void *ud)
{
	struct fe fe = { .ctx = ctx };
	struct ir_module *volatile m = NULL;
	Onnx__ModelProto *volatile mp = NULL;
	jmp_buf jb, *saved = ctx->oom;
	const char *saved_file = ctx->file;
	volatile bool ok = false;
	ctx->file = path;
	if (setjmp(jb)) {
		ctx->oom = saved;
		ctx->file = saved_file;
		fe.src = NULL; /* the arena closes the file */
		if (mp)
			fe_free_model(&fe, mp);
		ir_module_free(m);
		return false;
	}
	ctx->oom = &jb;
	m = ir_module_new(ctx, "proto");
	fe.m = m;
	if ((mp = fe_load_model(&fe, path)))
		ok = fn(&fe, mp, ud);
	ctx->oom = saved;
	ctx->file = saved_file;
	if (mp)
		fe_free_model(&fe, mp);
	ir_module_free(m);
	return ok;
}

struct train_info {
	struct ir_arena *a;
	struct fe_train_info *info;
};

static bool train_info(struct fe *fe, Onnx__ModelProto *mp, void *ud)
{
	struct train_info *r = ud;
	Onnx__GraphProto *g = mp->graph;
	struct fe_train_info *info = r->info;
	(void)fe;
	info->initializers = ir_arena_alloc(
	        r->a, sizeof *info->initializers * (g->n_initializer ? g->n_initializer : 1));
	for (size_t i = 0; i < g->n_initializer; i++)
		if (g->initializer[i]->name)
			info->initializers[info->ninitializers++] =
			        ir_arena_strdup(r->a, g->initializer[i]->name);
	return true;
}

bool fe_train_info(struct ir_ctx *ctx, struct ir_arena *a, const char *path,
                   struct fe_train_info *info)
{
	struct train_info r = { a, info };
	memset(info, 0, sizeof *info);
	return fe_with_proto(ctx, path, train_info, &r);
}

struct train_template {
	struct ir_arena *a;
	const char *const *drop;
	int ndrop;
	unsigned char *bytes;
	size_t len;
};

/* What the inference switch changed on one node, to put back. */
struct mode_undo {
	Onnx__NodeProto *node;
	size_t n_input, n_output;
	Onnx__AttributeProto *attr;
	int64_t attr_i;
};

/* The nodes of g and of every graph its nodes hold (If's branches, Loop's
 * body). */
static size_t count_nodes(const Onnx__GraphProto *g)
{
	size_t n = g->n_node;
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_attribute; k++) {
			const Onnx__AttributeProto *at = g->node[i]->attribute[k];
			if (at->g)
				n += count_nodes(at->g);
			for (size_t j = 0; j < at->n_graphs; j++)
				n += count_nodes(at->graphs[j]);
		}
	return n;
}

/*
 * The trained model is for inference, as PyTorch's eval(): a
 * BatchNormalization in training mode (attribute training_mode=1, its
 * running-statistics outputs unread) gets training_mode=0 and one output,
 * and a Dropout loses its training_mode input (absent means false), in the
 * graphs nodes hold too (a branch of an If). The nodes are changed in place
 * and put back from undo (count_nodes entries) after packing.
 */
static int inference_mode(Onnx__GraphProto *g, const struct ir_map *reads, struct mode_undo *undo)
{
	int n = 0;
	for (size_t i = 0; i < g->n_node; i++) {
		Onnx__NodeProto *p = g->node[i];
		struct mode_undo u = { p, p->n_input, p->n_output, NULL, 0 };
		bool changed = false;
		for (size_t k = 0; k < p->n_attribute; k++) {
			Onnx__AttributeProto *at = p->attribute[k];
			if (at->g)
				n += inference_mode(at->g, reads, undo + n);
			for (size_t j = 0; j < at->n_graphs; j++)
				n += inference_mode(at->graphs[j], reads, undo + n);
		}
		if (!strcmp(p->op_type, "Dropout") && p->n_input > 2) {
			p->n_input = 2;
			changed = true;
		} else if (!strcmp(p->op_type, "BatchNormalization")) {
			bool stats_read = false;
			for (size_t k = 1; k < p->n_output; k++)
				stats_read |= p->output[k][0] && ir_map_get(reads, p->output[k]);
			if (stats_read)
				continue;
			for (size_t k = 0; k < p->n_attribute; k++)
				if (!strcmp(p->attribute[k]->name, "training_mode") &&
				    p->attribute[k]->i != 0) {
					u.attr = p->attribute[k];
					u.attr_i = u.attr->i;
					u.attr->i = 0;
					changed = true;
				}
			if (p->n_output > 1) { /* before opset 14 extra outputs meant training */
				p->n_output = 1;
				changed = true;
			}
		}
		if (changed)
			undo[n++] = u;
	}
	return n;
}

/* The model without the dropped initializers, switched to inference mode,
 * packed (the trainer appends the trained initializers). */
static bool train_template(struct fe *fe, Onnx__ModelProto *mp, void *ud)
{
	struct train_template *r = ud;
	Onnx__GraphProto *g = mp->graph;
	size_t keep = 0, n = g->n_initializer;
	Onnx__TensorProto **all = g->initializer;
	Onnx__TensorProto **kept = ir_arena_alloc(&fe->m->arena, sizeof *kept * (n ? n : 1));
	size_t nall = count_nodes(g);
	struct mode_undo *undo = ir_arena_alloc(&fe->m->arena, sizeof *undo * (nall ? nall : 1));
	struct ir_map reads, dropped;
	int nundo;
	ir_map_init(&reads, &fe->m->arena);
	ir_map_init(&dropped, &fe->m->arena);
	graph_reads(g, &reads);
	nundo = inference_mode(g, &reads, undo);
	if (nundo) { /* what the switched nodes read no more */
		ir_map_init(&reads, &fe->m->arena);
		graph_reads(g, &reads);
	}
	/* Constants nothing reads any more (Dropout's training_mode) go too */
	Onnx__NodeProto **nodes = g->node,
	                **live = ir_arena_alloc(&fe->m->arena,
	                                        sizeof *live * (g->n_node ? g->n_node : 1));
	size_t nnodes = g->n_node, nlive = 0;
	for (size_t i = 0; i < nnodes; i++)
		if (!nundo || strcmp(nodes[i]->op_type, "Constant") || nodes[i]->n_output != 1 ||
		    ir_map_get(&reads, nodes[i]->output[0]))
			live[nlive++] = nodes[i];
	for (int k = 0; k < r->ndrop; k++)
		ir_map_put(&dropped, r->drop[k], (void *)r->drop[k]);
	struct fe_payload_undo *inl = NULL; /* tensors given their raw_data back */
	size_t ninl = 0, cap_inl = 0;
	bool ok = true;
	for (size_t i = 0; i < n; i++)
		if (!all[i]->name || !ir_map_get(&dropped, all[i]->name))
			kept[keep++] = all[i];
	/* the kept tensors' large raw_data is still in the file */
	for (size_t i = 0; ok && i < keep + nlive; i++) {
		Onnx__NodeProto *p = i < keep ? NULL : live[i - keep];
		size_t nt = p ? p->n_attribute : 1;
		for (size_t k = 0; ok && k < nt; k++) {
			Onnx__TensorProto *t = p ? p->attribute[k]->t : kept[i];
			int got;
			if (!t)
				continue;
			if (ninl == cap_inl) {
				struct fe_payload_undo *big;
				cap_inl = cap_inl ? 2 * cap_inl : 16;
				big = ir_arena_alloc(&fe->m->arena, sizeof *big * cap_inl);
				if (ninl)
					memcpy(big, inl, sizeof *big * ninl);
				inl = big;
			}
			got = fe_payload_inline(fe, t, &inl[ninl]);
			ninl += got > 0;
			ok = got >= 0;
		}
	}
	g->initializer = kept;
	g->n_initializer = keep;
	g->node = live;
	g->n_node = nlive;
	if (ok) {
		r->len = onnx__model_proto__get_packed_size(mp);
		r->bytes = ir_arena_alloc_big(r->a, r->len ? r->len : 1);
		onnx__model_proto__pack(mp, r->bytes);
	}
	for (size_t i = 0; i < ninl; i++)
		fe_payload_restore(&inl[i]);
	g->initializer = all;
	g->n_initializer = n;
	g->node = nodes;
	g->n_node = nnodes;
	for (int i = 0; i < nundo; i++) {
		undo[i].node->n_input = undo[i].n_input;
		undo[i].node->n_output = undo[i].n_output;
		if (undo[i].attr)
			undo[i].attr->i = undo[i].attr_i;
	}
	return ok;
}

bool fe_train_template(struct ir_ctx *ctx, struct ir_arena *a, const char *path,
                       const char *const *drop, int ndrop, unsigned char **bytes, size_t *len)
{
	struct train_template r = { a, drop, ndrop, NULL, 0 };
	if (!fe_with_proto(ctx, path, train_template, &r))
		return false;
	*bytes = r.bytes;
	*len = r.len;
	return true;
}
