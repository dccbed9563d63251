/*
 * export.c - writing an IR module back as a standard ONNX model.
 *
 * The importer makes the IR more regular than ONNX (docs/ir.md): shape-valued
 * operands become attributes, defaults are filled, auto_pad is resolved, ops
 * are renamed. Exporting undoes that for one target opset (13 to 25): each
 * IR node becomes the ONNX node it would have been imported from, in the
 * form the op's version in effect at that opset defines, with its shape
 * operands turned back into int64 initializers (Reshape's shape, Slice's
 * starts/ends/axes/steps, Split's sizes, the reductions' axes where the
 * version takes them as an input, ...), Clip's bounds and Pad's value into
 * scalars of the data's type, and attributes under their ONNX names. The
 * table ex_ops has one entry per IR op, its writer, named by the export
 * column of ir/ops.h (or the reason the op has no ONNX form); most copy
 * inputs and attributes one to one (ex_plain).
 * Before a node is written, the op must exist at the target opset and take
 * the node's element types (export_types.h, generated from ONNX's operator
 * schemas and Changelog), and its attribute values must exist there
 * (ex_values_since: ScatterElements' max, Resize's half_pixel_symmetric).
 * Whatever cannot be expressed at the target opset - a LayerNorm before 17,
 * a bf16 Conv before 22 - is an error naming the node, never a model that
 * means something else or one that consumers reject. Where the form itself
 * changed between versions, the writer asks the same table which version is
 * in effect (ex_schema): the Reduce* ops take axes as an input where their
 * schema has a second input (ReduceSum from 13, the others from 18), and
 * Mish is itself where it exists (18) and its definition before.
 *
 * The result is a plain ModelProto: the ir_version of the ONNX release that
 * introduced the opset (never below 8: ex_ir_versions), one default-domain
 * opset, graph inputs and outputs with static shapes, every IR constant an
 * initializer (raw_data, little-endian; f16 and bf16 as their 2-byte
 * patterns), the nodes in list order and value_info for every intermediate,
 * so a checker's shape inference compares its types with the IR's. The
 * proto objects live in an arena of their own; constant data is not copied
 * but referenced, and the message is streamed to the file by protobuf-c.
 *
 * Names: values keep their IR names (unique, so SSA holds); initializers
 * the writer creates are named after the node's first result with a suffix
 * (".shape", ".starts", ...) made unique against the module and each other.
 * Nodes keep their names too, except that a repeated one gets ".1", ".2",
 * ... (several IR nodes can come from one ONNX node; ONNX Runtime wants
 * node names unique).
 */
#include "fe.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "export_types.h" /* generated: what ONNX's ops take (ex_types) */

/*
 * The ModelProto's ir_version for each target opset (a row holds from its
 * opset on): the IR version of the ONNX release that introduced the opset
 * (ONNX's docs/Versioning.md: 1.13 brought opset 18 with IR 8, 1.14 opset 19
 * with IR 9, ..., 1.20 opset 25 with IR 13), but never below 8, which export
 * has always written (the IR of the onnx.proto this writer is built from;
 * opsets 13 and 14 came with IR 7). The writer uses no field newer than IR
 * 8, so the version only says which release the file belongs to; ONNX
 * Runtime refuses an IR version newer than it knows, so export writes the
 * lowest one the opset goes with.
 */
static const struct {
	int opset, ir_version;
} ex_ir_versions[] = {
	{ 13, 8 }, { 19, 9 }, { 21, 10 }, { 23, 11 }, { 24, 12 }, { 25, 13 },
};

/* An If being written (ex_if): its branches' guards and its place. */
struct ex_level {
	const struct ir_value *then_g, *else_g;
	int pos;
};

struct ex {
	struct ir_ctx *ctx;
	struct ir_module *m;
	struct ir_arena arena; /* every proto object the writer builds */
	int64_t opset;
	struct ir_map taken;      /* names of synthesized initializers */
	struct ir_map node_names; /* node names written so far */
	struct ir_map next_name;  /* ir_fresh_name's memory for both */
	struct ir_map next_node;
	Onnx__NodeProto **nodes;
	size_t nnodes, cap_nodes;
	Onnx__TensorProto **inits;
	size_t ninits, cap_inits;
	/* If, rebuilt from guards and phis (ex_if); arrays by node id */
	int *pos;                     /* the node's place in the list */
	unsigned char *skip;          /* a not/and that built a branch's guard */
	unsigned char *done;          /* written (a phi: into its If) */
	const struct ir_node **first; /* a phi: the first phi of its If */
	const char **if_name;         /* a first phi: its If's node name */
	const char *strip;            /* node-name prefix of the branch written */
	struct ex_level *levels;      /* the Ifs being written */
	int nlevels;
	/* outputs of run-time shape (ex_unflatten): by phi id * 2 + branch - 1,
	 * what the branch gives before the import flattened and padded it
	 * (NULL: the phi's operand); by output index, whether its If's own
	 * branches give it so (else ex_shaped_outputs reshapes it) */
	const struct ir_value **unflat;
	unsigned char *unflat_out;
};

/* One ONNX node being written; its arrays are allocated to their final size. */
struct ex_node {
	struct ex *ex;
	const struct ir_node *n; /* the IR node it comes from, for names and errors */
	Onnx__NodeProto *p;
	size_t cap_in, cap_attr;
};

/* Writes IR node n as one or more ONNX nodes; false after reporting. */
typedef bool (*ex_write_fn)(struct ex *ex, const struct ir_node *n);

struct ex_op {
	ex_write_fn write;
	/* the ONNX op whose type constraints apply at opsets where the IR op's
	 * own (as ir_ops[] names it) does not exist, for an op the writer then
	 * writes as other ops (NULL: none) */
	const char *types_as;
	/* why the op has no ONNX form (write is then NULL) */
	const char *refuse;
};

/* ------------------------------------------------------------------------ */
/* Arena arrays and names                                                   */
/* ------------------------------------------------------------------------ */

/* Returns arr with room for one more element of size elem (copying when full). */
static void *ex_grow(struct ex *ex, void *arr, size_t n, size_t *cap, size_t elem)
{
	void *bigger;
	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 64;
	bigger = ir_arena_alloc(&ex->arena, *cap * elem);
	if (n)
		memcpy(bigger, arr, n * elem);
	return bigger;
}

static bool ex_name_taken(void *ud, const char *s)
{
	struct ex *ex = ud;
	return ir_find_value(ex->m, s) || ir_map_get(&ex->taken, s);
}

/* A new value name derived from node n's first result: "RESULT.what". */
static const char *ex_new_name(struct ex *ex, const struct ir_node *n, const char *what)
{
	const char *base = n->nout ? n->out[0]->name : n->name;
	const char *s =
	        ir_fresh_name(&ex->next_name, ir_arena_printf(&ex->arena, "%s.%s", base, what), "",
	                      ex_name_taken, ex);
	ir_map_put(&ex->taken, s, (void *)s);
	return s;
}

static bool ex_node_taken(void *ud, const char *s)
{
	return ir_map_get(&((struct ex *)ud)->node_names, s) != NULL;
}

/*
 * ONNX Runtime refuses a graph with two nodes of one name, and IR nodes
 * share names (every node made from one ONNX node carries its name): the
 * first keeps the name, later ones get ".1", ".2", ... as values do.
 */
static const char *ex_node_name(struct ex *ex, const char *name)
{
	const char *s = ir_fresh_name(&ex->next_node, name, ".", ex_node_taken, ex);
	ir_map_put(&ex->node_names, s, (void *)s);
	return s;
}

static bool ex_node_error(struct ex *ex, const struct ir_node *n, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static bool ex_node_error(struct ex *ex, const struct ir_node *n, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ir_node_error(ex->ctx, n->name, ir_ops[n->op].name, "cannot export: %s", msg);
	return false;
}

/* ------------------------------------------------------------------------ */
/* Types and tensors                                                        */
/* ------------------------------------------------------------------------ */

static Onnx__TypeProto *ex_type(struct ex *ex, const struct ir_type *t)
{
	Onnx__TypeProto *tp = ir_arena_alloc(&ex->arena, sizeof *tp);
	Onnx__TypeProto__Tensor *tt = ir_arena_alloc(&ex->arena, sizeof *tt);
	Onnx__TensorShapeProto *sh = ir_arena_alloc(&ex->arena, sizeof *sh);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sh);
	sh->n_dim = (size_t)t->rank;
	sh->dim = ir_arena_alloc(&ex->arena, sizeof *sh->dim * (size_t)(t->rank + 1));
	for (int i = 0; i < t->rank; i++) {
		Onnx__TensorShapeProto__Dimension *d = ir_arena_alloc(&ex->arena, sizeof *d);
		onnx__tensor_shape_proto__dimension__init(d);
		d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		d->dim_value = t->dims[i];
		sh->dim[i] = d;
	}
	tt->has_elem_type = true;
	tt->elem_type = ir_dtypes[t->dtype].onnx;
	tt->shape = sh; /* present even for a scalar: rank 0 is known */
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	return tp;
}

static Onnx__ValueInfoProto *ex_value_info(struct ex *ex, const struct ir_value *v)
{
	Onnx__ValueInfoProto *vi = ir_arena_alloc(&ex->arena, sizeof *vi);
	onnx__value_info_proto__init(vi);
	vi->name = (char *)v->name;
	vi->type = ex_type(ex, &v->type);
	return vi;
}

/* An initializer referring to data (not copied: it must outlive the write). */
static Onnx__TensorProto *ex_tensor(struct ex *ex, const char *name, const struct ir_type *t,
                                    const void *data)
{
	Onnx__TensorProto *tp = ir_arena_alloc(&ex->arena, sizeof *tp);
	int64_t *dims = ir_arena_alloc(&ex->arena, sizeof *dims * (size_t)(t->rank + 1));
	onnx__tensor_proto__init(tp);
	memcpy(dims, t->dims, sizeof *dims * (size_t)t->rank);
	tp->name = (char *)name;
	tp->n_dims = (size_t)t->rank;
	tp->dims = dims;
	tp->has_data_type = true;
	tp->data_type = ir_dtypes[t->dtype].onnx;
	tp->has_raw_data = true;
	tp->raw_data.data =
	        fe_pack_narrow(&ex->arena, t->dtype, data, ir_type_elems(t), &tp->raw_data.len);
	ex->inits = ex_grow(ex, ex->inits, ex->ninits, &ex->cap_inits, sizeof *ex->inits);
	ex->inits[ex->ninits++] = tp;
	return tp;
}

/* A new int64 initializer (rank 1, or a scalar); returns its name. */
static const char *ex_ints(struct ex *ex, const struct ir_node *n, const char *what,
                           const int64_t *v, int count, bool scalar)
{
	struct ir_type t = { .dtype = IR_I64, .rank = scalar ? 0 : 1, .dims = { count } };
	int64_t *data = ir_arena_alloc(&ex->arena, sizeof *data * (size_t)(count + 1));
	const char *name = ex_new_name(ex, n, what);
	IR_ASSERT(!scalar || count == 1);
	memcpy(data, v, sizeof *data * (size_t)count);
	ex_tensor(ex, name, &t, data);
	return name;
}

static const char *ex_floats(struct ex *ex, const struct ir_node *n, const char *what,
                             const float *v, int count)
{
	struct ir_type t = { .dtype = IR_F32, .rank = 1, .dims = { count } };
	float *data = ir_arena_alloc(&ex->arena, sizeof *data * (size_t)(count + 1));
	const char *name = ex_new_name(ex, n, what);
	memcpy(data, v, sizeof *data * (size_t)count);
	ex_tensor(ex, name, &t, data);
	return name;
}

/*
 * A scalar initializer of dtype dt holding v (Clip's bounds, Pad's value),
 * or NULL after an error when an integer or bool dtype cannot hold v exactly.
 * A float dtype rounds v, which bounds and fills the same values as v does.
 */
static const char *ex_scalar(struct ex *ex, const struct ir_node *n, const char *what,
                             enum ir_dtype dt, double v)
{
	struct ir_type t = { .dtype = dt };
	void *data = ir_arena_alloc(&ex->arena, 8);
	const char *name;
	if (ir_dtypes[dt].is_float) {
		ir_store_f64(dt, data, 0, v);
	} else {
		/* 2^63 bounds the conversion; the load-back catches narrower types */
		if (!(v == floor(v) && fabs(v) < 9223372036854775808.0))
			return ex_node_error(ex, n, "%s %g is not a value of type %s", what, v,
			                     ir_dtype_name(dt)),
			       NULL;
		ir_store_i64(dt, data, 0, (int64_t)v);
		if ((double)ir_load_i64(dt, data, 0) != v)
			return ex_node_error(ex, n, "%s %g is not a value of type %s", what, v,
			                     ir_dtype_name(dt)),
			       NULL;
	}
	name = ex_new_name(ex, n, what);
	ex_tensor(ex, name, &t, data);
	return name;
}

/* ------------------------------------------------------------------------ */
/* Nodes and attributes                                                     */
/* ------------------------------------------------------------------------ */

/* An ONNX node named name exactly (a name ex_node_name gave), with room for
 * max_in inputs, nout outputs and max_attr attributes. */
static struct ex_node *ex_node_named(struct ex *ex, const struct ir_node *n, const char *op_type,
                                     const char *name, int max_in, int nout, int max_attr)
{
	struct ex_node *en = ir_arena_alloc(&ex->arena, sizeof *en);
	Onnx__NodeProto *p = ir_arena_alloc(&ex->arena, sizeof *p);
	onnx__node_proto__init(p);
	p->name = (char *)name;
	p->op_type = (char *)op_type;
	p->input = ir_arena_alloc(&ex->arena, sizeof *p->input * (size_t)(max_in + 1));
	p->output = ir_arena_alloc(&ex->arena, sizeof *p->output * (size_t)(nout + 1));
	p->attribute = ir_arena_alloc(&ex->arena, sizeof *p->attribute * (size_t)(max_attr + 1));
	en->ex = ex;
	en->n = n;
	en->p = p;
	en->cap_in = (size_t)max_in;
	en->cap_attr = (size_t)max_attr;
	ex->nodes = ex_grow(ex, ex->nodes, ex->nnodes, &ex->cap_nodes, sizeof *ex->nodes);
	ex->nodes[ex->nnodes++] = p;
	return en;
}

/* Inside a branch, the prefix "IF/then/" the importer gave its nodes'
 * names is left out: read back, they get it again. */
static const char *ex_unprefixed(const struct ex *ex, const char *name)
{
	size_t k = ex->strip ? strlen(ex->strip) : 0;
	return k && strncmp(name, ex->strip, k) == 0 && name[k] ? name + k : name;
}

/* A new ONNX node of type op_type from IR node n, with room for max_in inputs
 * and max_attr attributes; the caller adds inputs and outputs. */
static struct ex_node *ex_node_new(struct ex *ex, const struct ir_node *n, const char *op_type,
                                   const char *name, int max_in, int max_attr)
{
	return ex_node_named(ex, n, op_type, ex_node_name(ex, ex_unprefixed(ex, name)), max_in,
	                     n->nout, max_attr);
}

static void ex_in(struct ex_node *en, const char *name)
{
	IR_ASSERT(en->p->n_input < en->cap_in);
	en->p->input[en->p->n_input++] = (char *)name;
}

static void ex_out(struct ex_node *en, const char *name)
{
	IR_ASSERT(en->p->n_output < (size_t)en->n->nout);
	en->p->output[en->p->n_output++] = (char *)name;
}

/* The usual node: IR node n as its ONNX op, named like n, with n's results
 * and room for extra inputs beyond n's own. */
static struct ex_node *ex_std(struct ex *ex, const struct ir_node *n, int extra_in)
{
	struct ex_node *en =
	        ex_node_new(ex, n, ir_ops[n->op].onnx, n->name, n->nin + extra_in, n->nattrs + 2);
	for (int i = 0; i < n->nout; i++)
		ex_out(en, n->out[i]->name);
	return en;
}

static Onnx__AttributeProto *ex_attr(struct ex_node *en, const char *name,
                                     Onnx__AttributeProto__AttributeType type)
{
	Onnx__AttributeProto *a = ir_arena_alloc(&en->ex->arena, sizeof *a);
	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = true;
	a->type = type;
	IR_ASSERT(en->p->n_attribute < en->cap_attr);
	en->p->attribute[en->p->n_attribute++] = a;
	return a;
}

static void ex_attr_i(struct ex_node *en, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = ex_attr(en, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	a->has_i = true;
	a->i = v;
}

static void ex_attr_f(struct ex_node *en, const char *name, float v)
{
	Onnx__AttributeProto *a = ex_attr(en, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = true;
	a->f = v;
}

static void ex_attr_s(struct ex_node *en, const char *name, const char *s)
{
	Onnx__AttributeProto *a = ex_attr(en, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = true;
	a->s.len = strlen(s);
	a->s.data = (uint8_t *)s;
}

static void ex_attr_ints(struct ex_node *en, const char *name, const int64_t *v, int count)
{
	Onnx__AttributeProto *a = ex_attr(en, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	a->n_ints = (size_t)count;
	a->ints = (int64_t *)v;
}

static void ex_attr_floats(struct ex_node *en, const char *name, const float *v, int count)
{
	Onnx__AttributeProto *a = ex_attr(en, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
	a->n_floats = (size_t)count;
	a->floats = (float *)v;
}

/* IR attribute names that differ from the ONNX ones (for every op). */
static const char *ex_attr_name(const char *ir)
{
	static const char *const names[][2] = {
		{ "kernel", "kernel_shape" },
		{ "trans_a", "transA" },
		{ "trans_b", "transB" },
		{ "coord", "coordinate_transformation_mode" },
		{ "nearest", "nearest_mode" },
		{ "cubic_a", "cubic_coeff_a" },
		{ "extrapolation", "extrapolation_value" },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(ir, names[i][0]))
			return names[i][1];
	return ir;
}

/* Every attribute of n except those named in skip (NULL-terminated). */
static void ex_ir_attrs(struct ex_node *en, const char *const *skip)
{
	for (int i = 0; i < en->n->nattrs; i++) {
		const struct ir_attr *a = &en->n->attrs[i];
		const char *name = ex_attr_name(a->name);
		bool skipped = false;
		for (const char *const *s = skip; s && *s; s++)
			skipped |= !strcmp(*s, a->name);
		if (skipped)
			continue;
		switch (a->kind) {
		case IR_ATTR_INT: ex_attr_i(en, name, a->i); break;
		case IR_ATTR_FLOAT: ex_attr_f(en, name, a->f); break;
		case IR_ATTR_STRING: ex_attr_s(en, name, a->s); break;
		case IR_ATTR_INTS: ex_attr_ints(en, name, a->ints, a->n); break;
		case IR_ATTR_FLOATS: ex_attr_floats(en, name, a->floats, a->n); break;
		case IR_ATTR_DTYPE: ex_attr_i(en, name, ir_dtypes[a->t].onnx); break;
		}
	}
}

static void ex_ir_inputs(struct ex_node *en)
{
	for (int i = 0; i < en->n->nin; i++)
		ex_in(en, en->n->in[i]->name);
}

/* ------------------------------------------------------------------------ */
/* The versions in effect                                                   */
/* ------------------------------------------------------------------------ */

/* The schema row of ONNX op in effect at opset, or NULL; *first is the
 * lowest opset the op has a row for (0: none at all). */
static const struct ex_types *ex_types_find(const char *op, int64_t opset, int *first)
{
	const struct ex_types *best = NULL;
	*first = 0;
	for (size_t i = 0; i < sizeof ex_types / sizeof ex_types[0]; i++) {
		const struct ex_types *t = &ex_types[i];
		if (strcmp(t->op, op))
			continue;
		if (!*first || t->since < *first)
			*first = t->since;
		if (t->since <= opset && (!best || t->since > best->since))
			best = t;
	}
	return best;
}

/* The version of ONNX op in effect at the target opset (its row in
 * export_types.h), or NULL where the op does not exist there. */
static const struct ex_types *ex_schema(const struct ex *ex, const char *op)
{
	int first;
	return ex_types_find(op, ex->opset, &first);
}

/* ------------------------------------------------------------------------ */
/* Writers                                                                  */
/* ------------------------------------------------------------------------ */

/* Inputs and attributes one to one. */
static bool ex_plain(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en = ex_std(ex, n, 0);
	ex_ir_inputs(en);
	ex_ir_attrs(en, NULL);
	return true;
}

/* Conv, ConvTranspose: also kernel_shape, from the weight. */
static bool ex_conv(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en = ex_std(ex, n, 0);
	const struct ir_type *w = &n->in[1]->type;
	ex_ir_inputs(en);
	ex_ir_attrs(en, NULL);
	ex_attr_ints(en, "kernel_shape", w->dims + 2, w->rank - 2);
	return true;
}

/* Clip: bounds as scalar inputs of the data's type; infinite ones omitted. */
static bool ex_clip(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en = ex_std(ex, n, 2);
	float lo = ir_attr_f(n, "min"), hi = ir_attr_f(n, "max");
	enum ir_dtype dt = n->in[0]->type.dtype;
	const char *lo_name = "", *hi_name = NULL;
	if (lo != -INFINITY && !(lo_name = ex_scalar(ex, n, "min", dt, lo)))
		return false;
	if (hi != INFINITY && !(hi_name = ex_scalar(ex, n, "max", dt, hi)))
		return false;
	ex_in(en, n->in[0]->name);
	if (lo_name[0] || hi_name)
		ex_in(en, lo_name);
	if (hi_name)
		ex_in(en, hi_name);
	return true;
}

/* Reshape: the shape as an input. A 0 in it is a dimension of size 0, which
 * needs allowzero (opset 14); before that 0 means "copy the input's". */
static bool ex_reshape(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en;
	const struct ir_type *x = &n->in[0]->type;
	int rank;
	const int64_t *shape = ir_attr_ints(n, "shape", &rank);
	bool zero = false;
	for (int i = 0; i < rank; i++) {
		if (shape[i] != 0)
			continue;
		zero = true;
		if (ex->opset < 14 && (i >= x->rank || x->dims[i] != 0))
			return ex_node_error(ex, n,
			                     "the result has a dimension of size 0, which Reshape "
			                     "can express from opset 14 (allowzero)");
	}
	en = ex_std(ex, n, 1);
	ex_in(en, n->in[0]->name);
	ex_in(en, ex_ints(ex, n, "shape", shape, rank, false));
	if (zero && ex->opset >= 14)
		ex_attr_i(en, "allowzero", 1);
	return true;
}

/* An op whose attribute named attr is its second input (int64 1-D). */
static bool ex_ints_input(struct ex *ex, const struct ir_node *n, const char *attr)
{
	struct ex_node *en = ex_std(ex, n, 1);
	const char *const skip[] = { attr, NULL };
	int count;
	const int64_t *v = ir_attr_ints(n, attr, &count);
	ex_in(en, n->in[0]->name);
	ex_in(en, ex_ints(ex, n, attr, v, count, false));
	ex_ir_attrs(en, skip);
	return true;
}

/* Split: the sizes as the split input, which every version takes (opset
 * 18's num_outputs is another way to say equal parts, never needed). */
static bool ex_split(struct ex *ex, const struct ir_node *n)
{
	return ex_ints_input(ex, n, "split");
}
static bool ex_expand(struct ex *ex, const struct ir_node *n)
{
	return ex_ints_input(ex, n, "shape");
}
static bool ex_tile(struct ex *ex, const struct ir_node *n)
{
	return ex_ints_input(ex, n, "repeats");
}
/* Reduce*: the axes as an input where the op's version in effect takes
 * them so (a second input: ReduceSum from opset 13, the others from 18),
 * else as the attribute. The IR's axes are never empty, so
 * noop_with_empty_axes keeps its default. */
static bool ex_reduce(struct ex *ex, const struct ir_node *n)
{
	if (ex_schema(ex, ir_ops[n->op].onnx)->nin < 2)
		return ex_plain(ex, n);
	return ex_ints_input(ex, n, "axes");
}

/* Slice: the axes that are not taken whole (all of them if none is), with
 * an end of -1 for a negative step ("through index 0" in the IR) written
 * as -(dim+1), which ONNX clamps to the same place. */
static bool ex_slice(struct ex *ex, const struct ir_node *n)
{
	const struct ir_type *x = &n->in[0]->type;
	int64_t st[IR_MAX_RANK], stop[IR_MAX_RANK], sp[IR_MAX_RANK], ax[IR_MAX_RANK];
	int rank, k = 0;
	const int64_t *s = ir_attr_ints(n, "starts", &rank), *e = ir_attr_ints(n, "ends", &rank),
	              *p = ir_attr_ints(n, "steps", &rank);
	struct ex_node *en;
	if (rank == 0) { /* a scalar: nothing to slice */
		en = ex_node_new(ex, n, "Identity", n->name, 1, 0);
		ex_out(en, n->out[0]->name);
		ex_in(en, n->in[0]->name);
		return true;
	}
	for (int pass = 0; pass < 2 && k == 0; pass++)
		for (int i = 0; i < rank; i++) {
			if (pass == 0 && s[i] == 0 && e[i] == x->dims[i] && p[i] == 1)
				continue;
			st[k] = s[i];
			stop[k] = p[i] < 0 && e[i] == -1 ? -(x->dims[i] + 1) : e[i];
			sp[k] = p[i];
			ax[k++] = i;
		}
	en = ex_std(ex, n, 4);
	ex_in(en, n->in[0]->name);
	ex_in(en, ex_ints(ex, n, "starts", st, k, false));
	ex_in(en, ex_ints(ex, n, "ends", stop, k, false));
	ex_in(en, ex_ints(ex, n, "axes", ax, k, false));
	ex_in(en, ex_ints(ex, n, "steps", sp, k, false));
	return true;
}

/* Pad: pads as an input, the fill as a scalar of the data's type (only for
 * constant mode, and only when it is not +0). The pads cover every axis,
 * so opset 18's axes input is left out. */
static bool ex_pad(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en;
	int count;
	const int64_t *pads = ir_attr_ints(n, "pads", &count);
	const char *mode = ir_attr_s(n, "mode"), *value = NULL;
	float v = ir_attr_f(n, "value");
	if (!strcmp(mode, "constant") && (v != 0 || signbit(v)) &&
	    !(value = ex_scalar(ex, n, "value", n->in[0]->type.dtype, v)))
		return false;
	en = ex_std(ex, n, 2);
	ex_in(en, n->in[0]->name);
	ex_in(en, ex_ints(ex, n, "pads", pads, count, false));
	if (value)
		ex_in(en, value);
	ex_attr_s(en, "mode", mode);
	return true;
}

/* Trilu: k as an optional scalar input. */
static bool ex_trilu(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en = ex_std(ex, n, 1);
	const char *const skip[] = { "k", NULL };
	int64_t k = ir_attr_i(n, "k");
	ex_in(en, n->in[0]->name);
	if (k != 0)
		ex_in(en, ex_ints(ex, n, "k", &k, 1, true));
	ex_ir_attrs(en, skip);
	return true;
}

/* AveragePool and LpPool: dilations exist from AveragePool-19 and
 * LpPool-18, as does LpPool's ceil_mode; before, only their defaults are
 * expressible, and they are left out. */
static bool ex_window_pool(struct ex *ex, const struct ir_node *n)
{
	int since = n->op == IR_OP_AVG_POOL ? 19 : 18, nsp;
	const int64_t *dil = ir_attr_ints(n, "dilations", &nsp);
	bool dilated = false, ceil_mode = ir_attr_i(n, "ceil_mode") != 0;
	const char *const skip[] = { "dilations", n->op == IR_OP_LP_POOL ? "ceil_mode" : NULL,
		                     NULL };
	struct ex_node *en;
	for (int i = 0; i < nsp; i++)
		dilated |= dil[i] != 1;
	if (ex->opset < since && (dilated || (n->op == IR_OP_LP_POOL && ceil_mode)))
		return ex_node_error(ex, n,
		                     "%s takes %s from opset %d; the export targets opset %lld "
		                     "(use --opset %d or later)",
		                     ir_ops[n->op].onnx, dilated ? "dilations" : "ceil_mode", since,
		                     (long long)ex->opset, since);
	en = ex_std(ex, n, 0);
	ex_ir_inputs(en);
	ex_ir_attrs(en, ex->opset < since ? skip : NULL);
	return true;
}

/* ScatterElements: the reduction attribute only when it is not "none"
 * (the attribute exists from opset 16; ex_values_since says from which
 * opset each value does). */
static bool ex_scatter_elements(struct ex *ex, const struct ir_node *n)
{
	const char *red = ir_attr_s(n, "reduction");
	const char *const skip[] = { "reduction", NULL };
	struct ex_node *en;
	bool none = !strcmp(red, "none");
	en = ex_std(ex, n, 0);
	ex_ir_inputs(en);
	ex_ir_attrs(en, skip);
	if (!none)
		ex_attr_s(en, "reduction", red);
	return true;
}

/* BitShift: the IR's left flag as ONNX's direction. */
static bool ex_bit_shift(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en = ex_std(ex, n, 0);
	ex_ir_inputs(en);
	ex_attr_s(en, "direction", ir_attr_i(n, "left") ? "LEFT" : "RIGHT");
	return true;
}

/* CumSum: the axis as a scalar input. */
static bool ex_cumsum(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en = ex_std(ex, n, 1);
	const char *const skip[] = { "axis", NULL };
	int64_t axis = ir_attr_i(n, "axis");
	ex_in(en, n->in[0]->name);
	ex_in(en, ex_ints(ex, n, "axis", &axis, 1, true));
	ex_ir_attrs(en, skip);
	return true;
}

/* TopK: k as a one-element input (TopK-10 on; every target has it). The
 * IR's results are always sorted, ONNX's default. */
static bool ex_topk(struct ex *ex, const struct ir_node *n)
{
	struct ex_node *en = ex_std(ex, n, 1);
	const char *const skip[] = { "k", NULL };
	int64_t k = ir_attr_i(n, "k");
	ex_in(en, n->in[0]->name);
	ex_in(en, ex_ints(ex, n, "k", &k, 1, false));
	ex_ir_attrs(en, skip);
	return true;
}

/*
 * Resize: roi only for tf_crop_and_resize; scales when the model gave
 * scales, else sizes (an empty scales attribute means sizes were given, see
 * docs/ir.md); the other attributes under their ONNX names. Opset 18's
 * antialias, axes and keep_aspect_ratio_policy keep their defaults, which
 * are what the IR means (scales or sizes for every axis, no antialiasing).
 */
static bool ex_resize(struct ex *ex, const struct ir_node *n)
{
	const char *const skip[] = { "scales", "sizes", "roi", NULL };
	int rank = n->in[0]->type.rank, nscales, nsizes, nroi;
	const float *scales = ir_attr_floats(n, "scales", &nscales);
	const int64_t *sizes = ir_attr_ints(n, "sizes", &nsizes);
	const float *roi = ir_attr_floats(n, "roi", &nroi);
	bool crop = !strcmp(ir_attr_s(n, "coord"), "tf_crop_and_resize");
	struct ex_node *en;
	if (crop != (nroi > 0) || (nroi && nroi != 2 * rank))
		return ex_node_error(ex, n,
		                     "roi has %d values, which does not fit coordinate mode '%s' "
		                     "at rank %d",
		                     nroi, ir_attr_s(n, "coord"), rank);
	en = ex_std(ex, n, 3);
	ex_in(en, n->in[0]->name);
	ex_in(en, nroi ? ex_floats(ex, n, "roi", roi, nroi) : "");
	if (nscales) {
		ex_in(en, ex_floats(ex, n, "scales", scales, nscales));
	} else {
		ex_in(en, "");
		ex_in(en, ex_ints(ex, n, "sizes", sizes, nsizes, false));
	}
	ex_ir_attrs(en, skip);
	return true;
}

/* Mish: itself where it exists (opset 18), before that its definition,
 * x * tanh(softplus(x)). */
static bool ex_mish(struct ex *ex, const struct ir_node *n)
{
	const char *sp, *th;
	struct ex_node *a, *b, *c;
	if (ex_schema(ex, "Mish"))
		return ex_plain(ex, n);
	sp = ex_new_name(ex, n, "softplus");
	th = ex_new_name(ex, n, "tanh");
	a = ex_node_new(ex, n, "Softplus", ir_arena_printf(&ex->arena, "%s/softplus", n->name), 1,
	                0);
	ex_in(a, n->in[0]->name);
	ex_out(a, sp);
	b = ex_node_new(ex, n, "Tanh", ir_arena_printf(&ex->arena, "%s/tanh", n->name), 1, 0);
	ex_in(b, sp);
	ex_out(b, th);
	c = ex_node_new(ex, n, "Mul", n->name, 2, 0);
	ex_in(c, n->in[0]->name);
	ex_in(c, th);
	ex_out(c, n->out[0]->name);
	return true;
}

/* One ONNX node of n's: op_type over inputs (NULL-terminated), writing a
 * new value named after n and what, or out when given; returns its name. */
static const char *ex_step(struct ex *ex, const struct ir_node *n, const char *op_type,
                           const char *what, const char *out, const char *const *inputs)
{
	int nin = 0;
	struct ex_node *en;
	while (inputs[nin])
		nin++;
	en = ex_node_new(ex, n, op_type, ir_arena_printf(&ex->arena, "%s/%s", n->name, what), nin,
	                 1);
	for (int i = 0; i < nin; i++)
		ex_in(en, inputs[i]);
	out = out ? out : ex_new_name(ex, n, what);
	ex_out(en, out);
	return out;
}

/*
 * Attention: ONNX's Attention where the target opset has it (23 on) and it
 * can say what the node means: its causal mask starts at the first key
 * (ONNX offsets it only by a past input), a mask is bool or Q's type.
 * Otherwise as the graph exporters write it, which every target opset has
 * and which onnxc's code generation fuses again (passes/attention.c):
 * Softmax(MatMul(Q, K^T) * scale [softcapped] + bias | Where(mask, S, -inf)
 * [+ the causal mask as a constant]) . V, with K and V repeated over each
 * group of query heads first (GQA). One difference remains: a row whose
 * every score is masked comes out NaN there (ONNX's Softmax) and zero here.
 * The log-sum-exp output exists only in training graphs and has no form.
 */
static bool ex_attention(struct ex *ex, const struct ir_node *n)
{
	const int64_t *q = n->in[0]->type.dims, *k = n->in[1]->type.dims;
	int64_t lq = q[2], lk = k[2], group = q[1] / k[1];
	enum ir_dtype dt = n->in[0]->type.dtype;
	double cap = ir_attr_f(n, "softcap");
	const char *kk = n->in[1]->name, *vv = n->in[2]->name, *s;
	if (n->nout == 2)
		return ex_node_error(ex, n,
		                     "its log-sum-exp output (a training graph's) has no "
		                     "ONNX form");
	if (ex_schema(ex, "Attention") &&
	    (!ir_attr_i(n, "causal") || !ir_attr_i(n, "causal_offset")) &&
	    (n->nin == 3 || n->in[3]->type.dtype == IR_BOOL || n->in[3]->type.dtype == dt)) {
		struct ex_node *en = ex_node_new(ex, n, "Attention", n->name, 4, 3);
		for (int i = 0; i < n->nin; i++)
			ex_in(en, n->in[i]->name);
		ex_out(en, n->out[0]->name);
		ex_attr_f(en, "scale", ir_attr_f(n, "scale"));
		ex_attr_i(en, "is_causal", ir_attr_i(n, "causal"));
		if (cap > 0)
			ex_attr_f(en, "softcap", (float)cap);
		return true;
	}
	if (group > 1) { /* [B, Hkv, 1, L, d] -> [B, Hkv, g, L, d] -> [B, Hq, L, d] */
		for (int t = 0; t < 2; t++) {
			const int64_t *d = t ? n->in[2]->type.dims : k;
			int64_t five[5] = { d[0], d[1], 1, d[2], d[3] },
			        four[4] = { d[0], q[1], d[2], d[3] };
			const char *x = t ? vv : kk, *u, *e;
			u = ex_step(ex, n, "Reshape", t ? "v_split" : "k_split", NULL,
			            (const char *[]){ x, ex_ints(ex, n, "shape5", five, 5, false),
			                              NULL });
			five[2] = group;
			e = ex_step(
			        ex, n, "Expand", t ? "v_rep" : "k_rep", NULL,
			        (const char *[]){ u, ex_ints(ex, n, "rep", five, 5, false), NULL });
			x = ex_step(ex, n, "Reshape", t ? "v_heads" : "k_heads", NULL,
			            (const char *[]){ e, ex_ints(ex, n, "shape4", four, 4, false),
			                              NULL });
			*(t ? &vv : &kk) = x;
		}
	}
	{
		struct ex_node *tr = ex_node_new(
		        ex, n, "Transpose", ir_arena_printf(&ex->arena, "%s/kt", n->name), 1, 1);
		static const int64_t perm[4] = { 0, 1, 3, 2 }; /* the node keeps the pointer */
		ex_in(tr, kk);
		ex_out(tr, kk = ex_new_name(ex, n, "kt"));
		ex_attr_ints(tr, "perm", perm, 4);
	}
	s = ex_step(ex, n, "MatMul", "qk", NULL, (const char *[]){ n->in[0]->name, kk, NULL });
	s = ex_step(
	        ex, n, "Mul", "scaled", NULL,
	        (const char *[]){ s, ex_scalar(ex, n, "scale", dt, ir_attr_f(n, "scale")), NULL });
	if (cap > 0) {
		const char *c = ex_scalar(ex, n, "softcap", dt, cap);
		s = ex_step(ex, n, "Div", "capped", NULL, (const char *[]){ s, c, NULL });
		s = ex_step(ex, n, "Tanh", "tanh", NULL, (const char *[]){ s, NULL });
		s = ex_step(ex, n, "Mul", "softcapped", NULL, (const char *[]){ s, c, NULL });
	}
	if (n->nin == 4 && n->in[3]->type.dtype == IR_BOOL)
		s = ex_step(ex, n, "Where", "masked", NULL,
		            (const char *[]){ n->in[3]->name, s,
		                              ex_scalar(ex, n, "neg_inf", dt, -INFINITY), NULL });
	else if (n->nin == 4)
		s = ex_step(ex, n, "Add", "biased", NULL,
		            (const char *[]){ s, n->in[3]->name, NULL });
	if (ir_attr_i(n, "causal")) {
		struct ir_type t = { .dtype = dt, .rank = 2, .dims = { lq, lk } };
		void *data = ir_arena_alloc_big(&ex->arena, (size_t)(lq * lk > 0 ? lq * lk : 1) *
		                                                    (size_t)ir_dtype_size(dt));
		const char *name = ex_new_name(ex, n, "causal");
		int64_t off = ir_attr_i(n, "causal_offset");
		for (int64_t i = 0; i < lq; i++)
			for (int64_t j = 0; j < lk; j++)
				ir_store_f64(dt, data, (size_t)(i * lk + j),
				             j > i + off ? -INFINITY : 0);
		ex_tensor(ex, name, &t, data);
		s = ex_step(ex, n, "Add", "causal_masked", NULL, (const char *[]){ s, name, NULL });
	}
	{
		struct ex_node *sm = ex_node_new(
		        ex, n, "Softmax", ir_arena_printf(&ex->arena, "%s/softmax", n->name), 1, 1);
		ex_in(sm, s);
		ex_out(sm, s = ex_new_name(ex, n, "probs"));
		ex_attr_i(sm, "axis", -1);
	}
	ex_step(ex, n, "MatMul", "pv", n->out[0]->name, (const char *[]){ s, vv, NULL });
	return true;
}

/*
 * LSTM, GRU, RNN: the IR's form is ONNX's layout 0 with every input (the
 * importer filled the defaults); hidden_size from r, the activations by
 * name with alphas and betas only for those that take them (the order
 * ONNX Runtime reads them in), clip only when set.
 */
static bool ex_rnn(struct ex *ex, const struct ir_node *n)
{
	struct ir_rnn c;
	char err[160];
	struct ex_node *en;
	Onnx__AttributeProto *a;
	ProtobufCBinaryData *names = ir_arena_alloc(&ex->arena, sizeof *names * 6);
	float *al = ir_arena_alloc(&ex->arena, sizeof *al * 6);
	float *be = ir_arena_alloc(&ex->arena, sizeof *be * 6);
	int na = 0, nb = 0, k = 0;
	if (!ir_rnn_cell(n, &c, err, sizeof err))
		return ex_node_error(ex, n, "%s", err);
	en = ex_std(ex, n, 0);
	ex_ir_inputs(en);
	for (int d = 0; d < c.dirs; d++)
		for (int i = 0; i < c.nact; i++, k++) {
			const struct ir_rnn_act_def *def = &ir_rnn_acts[c.act[d][i]];
			names[k].data = (uint8_t *)def->name;
			names[k].len = strlen(def->name);
			if (def->alpha)
				al[na++] = c.alpha[d][i];
			if (def->beta)
				be[nb++] = c.beta[d][i];
		}
	ex_attr_s(en, "direction", ir_attr_s(n, "direction"));
	ex_attr_i(en, "hidden_size", n->in[2]->type.dims[2]);
	a = ex_attr(en, "activations", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
	a->n_strings = (size_t)k;
	a->strings = names;
	if (na)
		ex_attr_floats(en, "activation_alpha", al, na);
	if (nb)
		ex_attr_floats(en, "activation_beta", be, nb);
	if (ir_attr_f(n, "clip") > 0)
		ex_attr_f(en, "clip", ir_attr_f(n, "clip"));
	if (n->op == IR_OP_LSTM && ir_attr_i(n, "input_forget"))
		ex_attr_i(en, "input_forget", 1);
	if (n->op == IR_OP_GRU)
		ex_attr_i(en, "linear_before_reset", ir_attr_i(n, "linear_before_reset"));
	return true;
}

/* ------------------------------------------------------------------------ */
/* The op table: one entry per IR op                                        */
/* ------------------------------------------------------------------------ */

/*
 * Targets are opsets 13 to 25. Whether an op exists at the target opset, and
 * which element types it takes there, comes from export_types.h (generated
 * from ONNX's schemas and Changelog), so the table says only how to write
 * each op. Raising FE_EXPORT_MAX_OPSET means extracting a newer Changelog
 * (scripts/gen-export-types) and reading its entries for the ops export
 * writes: a new input or attribute whose default is not what the IR means,
 * or a form that changes, needs its writer to ask ex_schema; an attribute
 * value that appears needs a row in ex_values_since.
 */
/* The writers the export column of ops.h names (ex_op_<export>). */
static const struct ex_op ex_op_plain = { ex_plain };
static const struct ex_op ex_op_window_pool = { ex_window_pool };
static const struct ex_op ex_op_bit_shift = { ex_bit_shift };
static const struct ex_op ex_op_clip = { ex_clip };
static const struct ex_op ex_op_conv = { ex_conv };
static const struct ex_op ex_op_cumsum = { ex_cumsum };
static const struct ex_op ex_op_expand = { ex_expand };
static const struct ex_op ex_op_pad = { ex_pad };
static const struct ex_op ex_op_reduce = { ex_reduce };
static const struct ex_op ex_op_reshape = { ex_reshape };
static const struct ex_op ex_op_resize = { ex_resize };
static const struct ex_op ex_op_scatter_elements = { ex_scatter_elements };
static const struct ex_op ex_op_slice = { ex_slice };
static const struct ex_op ex_op_split = { ex_split };
static const struct ex_op ex_op_tile = { ex_tile };
static const struct ex_op ex_op_topk = { ex_topk };
/* Before opset 23 Attention is written as its definition and takes what
 * MatMul takes. */
static const struct ex_op ex_op_attention = { ex_attention, "MatMul" };
static const struct ex_op ex_op_trilu = { ex_trilu };
static const struct ex_op ex_op_rnn = { ex_rnn };
/* Before opset 18 Mish is written as its definition and takes what
 * Softplus takes. */
static const struct ex_op ex_op_mish = { ex_mish, "Softplus" };
static const struct ex_op ex_op_refuse_backward = {
	NULL, NULL, "a training step's backward op has no ONNX form"
};
static bool ex_if(struct ex *ex, const struct ir_node *phi);
/* a phi is written as the If it merges (with the If's other phis) */
static const struct ex_op ex_op_if = { ex_if };
static const struct ex_op ex_op_refuse_trap = {
	NULL, NULL,
	"the branch was not imported for the shapes the model is compiled for (it traps when "
	"taken), so the If cannot be written back; compile for shapes both branches accept"
};
static bool ex_loop(struct ex *ex, const struct ir_node *n);
static const struct ex_op ex_op_loop = { ex_loop };
/* a loop's carries and loop_end are written with it (ex_loop) */
static bool ex_loop_part(struct ex *ex, const struct ir_node *n)
{
	return ex_node_error(ex, n, "is not written with its loop");
}
static const struct ex_op ex_op_loop_part = { ex_loop_part };
static const struct ex_op ex_op_refuse_dropout = {
	NULL, NULL,
	"training-mode dropout draws its mask from onnxc's own random stream, which ONNX's "
	"Dropout cannot express"
};

static const struct ex_op *const ex_ops[IR_OP_COUNT] = {
#define IR_OP(id, nm, ox, imin, imax, omin, omax, knd, amp, why, inf, fold, ex, grad, lo, sch) \
	[IR_OP_##id] = &ex_op_##ex,
#include "ir/ops.h"
#undef IR_OP
};

bool fe_export_writes(enum ir_op op, const char **refusal)
{
	if (refusal)
		*refusal = ex_ops[op]->write ? NULL : ex_ops[op]->refuse;
	return ex_ops[op]->write != NULL;
}

/* ------------------------------------------------------------------------ */
/* The model                                                                */
/* ------------------------------------------------------------------------ */

/* The types formal parameter k of n accepts (the last one when variadic). */
static uint32_t ex_param_mask(const uint32_t *masks, int n, unsigned variadic, int k)
{
	if (k < n)
		return masks[k];
	return variadic && n ? masks[n - 1] : 0;
}

/* Checks the dtype of input (is_out false) or output k of n against mask. */
static bool ex_type_ok(struct ex *ex, const struct ir_node *n, const char *op, bool is_out, int k,
                       uint32_t mask)
{
	enum ir_dtype dt = (is_out ? n->out : n->in)[k]->type.dtype;
	char list[128] = "";
	size_t len = 0;
	if (mask & (1u << ir_dtypes[dt].onnx))
		return true;
	for (int t = 1; t < IR_DTYPE_COUNT; t++)
		if (mask & (1u << ir_dtypes[t].onnx) && len < sizeof list - 16)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
			                        len ? ", " : "", ir_dtypes[t].name);
	return ex_node_error(ex, n,
	                     "ONNX %s at opset %lld does not take %s for its %s %d (it takes %s)",
	                     op, (long long)ex->opset, ir_dtype_name(dt),
	                     is_out ? "output" : "input", k, len ? list : "none");
}

/*
 * Attribute values that ONNX ops take only from some opset on: a node with
 * one cannot be written at an earlier target. (Values the IR has that no
 * version takes are the IR's business: its inference refuses them.)
 */
static const struct ex_value_since {
	enum ir_op op;
	const char *attr, *value; /* an IR attribute (string) and its value */
	int since;                /* the first opset whose ONNX op takes it */
} ex_values_since[] = {
	{ IR_OP_SCATTER_ELEMENTS, "reduction", "add", 16 },
	{ IR_OP_SCATTER_ELEMENTS, "reduction", "mul", 16 },
	{ IR_OP_SCATTER_ELEMENTS, "reduction", "max", 18 },
	{ IR_OP_SCATTER_ELEMENTS, "reduction", "min", 18 },
	{ IR_OP_RESIZE, "coord", "half_pixel_symmetric", 19 },
	{ IR_OP_PAD, "mode", "wrap", 19 },
};

static bool ex_check_values(struct ex *ex, const struct ir_node *n)
{
	for (size_t i = 0; i < sizeof ex_values_since / sizeof ex_values_since[0]; i++) {
		const struct ex_value_since *v = &ex_values_since[i];
		const struct ir_attr *a;
		if (v->op != n->op || ex->opset >= v->since)
			continue;
		a = ir_attr_get(n, v->attr);
		IR_ASSERT(a && a->kind == IR_ATTR_STRING);
		if (strcmp(a->s, v->value))
			continue;
		return ex_node_error(ex, n,
		                     "ONNX %s takes %s '%s' from opset %d; the export targets "
		                     "opset %lld (use --opset %d or later)",
		                     ir_ops[n->op].onnx, ex_attr_name(a->name), v->value, v->since,
		                     (long long)ex->opset, v->since);
	}
	return true;
}

/*
 * The op must exist at the target opset, take the node's element types
 * there (export_types.h) and its attribute values (ex_values_since): a bf16
 * Conv, say, is no valid ONNX before opset 22 and gets an error instead of a
 * model every consumer rejects.
 */
static bool ex_check_op(struct ex *ex, const struct ir_node *n)
{
	const char *op = ir_ops[n->op].onnx;
	int first;
	const struct ex_types *t = ex_types_find(op, ex->opset, &first);
	bool ok = true, as = false;
	if (!t && ex_ops[n->op]->types_as) {
		t = ex_types_find(op = ex_ops[n->op]->types_as, ex->opset, &first);
		as = t != NULL;
	}
	if (!t && first)
		return ex_node_error(ex, n,
		                     "%s exists from opset %d; the export targets opset %lld (use "
		                     "--opset %d or later)",
		                     op, first, (long long)ex->opset, first);
	if (!t) { /* ops newer than the writer's last opset (CumProd, 26) */
		const struct fe_op *f = fe_find_op(NULL, op);
		if (f && f->versions[0] > FE_EXPORT_MAX_OPSET)
			return ex_node_error(ex, n,
			                     "%s exists from opset %d, after the last opset onnxc "
			                     "export writes (%d)",
			                     op, f->versions[0], FE_EXPORT_MAX_OPSET);
	}
	if (!t)
		ir_panic(__FILE__, __LINE__,
		         "export_types.h has no ONNX op '%s' (run "
		         "scripts/gen-export-types)",
		         op);
	/* written as other ops, the inputs and outputs past types_as's own
	 * (Attention's mask, say) go to ops the writer picks for their types */
	for (int i = 0; i < n->nin && ok && (!as || i < t->nin); i++)
		ok = ex_type_ok(ex, n, op, false, i,
		                ex_param_mask(t->in, t->nin, t->in_variadic, i));
	for (int i = 0; i < n->nout && ok && (!as || i < t->nout); i++)
		ok = ex_type_ok(ex, n, op, true, i,
		                ex_param_mask(t->out, t->nout, t->out_variadic, i));
	return ok && ex_check_values(ex, n);
}

/* ------------------------------------------------------------------------ */
/* If, rebuilt from guards and phis                                         */
/* ------------------------------------------------------------------------ */

/*
 * The importer turns an If on a run-time condition c inside guard O (NULL
 * outside any branch) into the then branch's nodes under T (c itself, or
 * and(O, c) computed under O when nested), the else branch's under E
 * (not(c), or and(O, not(c))), and one phi(c, then_k, else_k) under O per
 * output (docs/ir.md, Guards). The writer turns that back into one If per c
 * and O, at the place of its first phi: its outputs are the phis, its then
 * branch the nodes under T (nested Ifs under guards within T are written
 * inside it the same way), its else branch those under E; the not/and
 * nodes that built T and E are left out, since reading the If back builds
 * them again, and so are the "IF/then/" prefixes of the branch nodes'
 * names. A branch output computed outside the branch goes through an
 * Identity in the branch (ONNX scoping lets a branch return an outer value,
 * but ONNX Runtime refuses it). What a branch reads
 * from outside must come before the If's place in the list (the IR's
 * order is topological, but a pass could put a node a branch reads after
 * the first phi: that If is refused, naming it).
 */

/* The node computing op(a, b) (op(a) when b is NULL) under guard g. */
static const struct ir_node *ex_guard_node(const struct ir_value *a, const struct ir_value *b,
                                           enum ir_op op, const struct ir_value *g)
{
	for (int i = 0; a && i < a->nuses; i++) {
		const struct ir_node *n = a->uses[i].node;
		if (n->op == op && a->uses[i].index == 0 && n->guard == g && (!b || n->in[1] == b))
			return n;
	}
	return NULL;
}

/* The guard-building nodes of the If a phi merges, and its branches' guards
 * (NULL where the importer built none: a branch without nodes). */
struct ex_branches {
	const struct ir_node *and_then, *not_cond, *and_else;
	const struct ir_value *then_g, *else_g;
};

static struct ex_branches ex_branches(const struct ir_node *phi)
{
	const struct ir_value *c = phi->in[0], *o = phi->guard;
	struct ex_branches b = { .not_cond = ex_guard_node(c, NULL, IR_OP_NOT, o) };
	if (!o) {
		b.then_g = c;
		b.else_g = b.not_cond ? b.not_cond->out[0] : NULL;
		return b;
	}
	if ((b.and_then = ex_guard_node(o, c, IR_OP_AND, o)))
		b.then_g = b.and_then->out[0];
	if (b.not_cond && (b.and_else = ex_guard_node(o, b.not_cond->out[0], IR_OP_AND, o)))
		b.else_g = b.and_else->out[0];
	return b;
}

/* Whether every use of n's result is as a guard or by a skipped node. */
static bool ex_guard_only(const struct ex *ex, const struct ir_node *n)
{
	const struct ir_value *v = n->out[0];
	for (int i = 0; i < v->nuses; i++)
		if (v->uses[i].index != IR_USE_GUARD && !ex->skip[v->uses[i].node->id])
			return false;
	return true;
}

/* Marks the nodes that built branch guards (ex->skip), and each phi's
 * first phi of its If (ex->first). */
static void ex_find_ifs(struct ex *ex)
{
	bool changed = true;
	IR_FOR_EACH_NODE(ex->m, n)
	{
		struct ex_branches b;
		if (n->op != IR_OP_PHI || ex->first[n->id])
			continue;
		b = ex_branches(n);
		for (const struct ir_node *p = n; p; p = p->next)
			if (p->op == IR_OP_PHI && p->in[0] == n->in[0] && p->guard == n->guard)
				ex->first[p->id] = n;
		if (b.and_then)
			ex->skip[b.and_then->id] = 1;
		if (b.not_cond)
			ex->skip[b.not_cond->id] = 1;
		if (b.and_else)
			ex->skip[b.and_else->id] = 1;
	}
	/* a not/and the model also reads as data is written after all */
	while (changed) {
		changed = false;
		IR_FOR_EACH_NODE(ex->m, n)
		if (ex->skip[n->id] && !ex_guard_only(ex, n)) {
			ex->skip[n->id] = 0;
			changed = true;
		}
	}
}

/* Whether node d lies in a branch of level l. */
static bool ex_in_level(const struct ex_level *l, const struct ir_node *d)
{
	return (l->then_g && ir_guard_implies(d->guard, l->then_g)) ||
	       (l->else_g && ir_guard_implies(d->guard, l->else_g));
}

/* Whether v, read inside the Ifs being written, is visible there: defined
 * in the same branch, or before the If of the scope it is defined in. */
static bool ex_visible(const struct ex *ex, const struct ir_value *v)
{
	int j = 0;
	if (v->kind != IR_VAL_NODE)
		return true;
	while (j < ex->nlevels && ex_in_level(&ex->levels[j], v->def))
		j++;
	return j == ex->nlevels || ex->pos[v->def->id] < ex->levels[j].pos;
}

static bool ex_write_node(struct ex *ex, const struct ir_node *n);

/* Writes the nodes under guard g (NULL: outside every branch) in list
 * order, an If at the place of its first phi. */
static bool ex_scope(struct ex *ex, const struct ir_value *g)
{
	bool ok = true;
	/* the If takes its phi's name first: read back, its branch nodes are
	 * named after it, and a node written before it may share the name */
	IR_FOR_EACH_NODE(ex->m, n)
	if (n->guard == g && n->op == IR_OP_PHI && ex->first[n->id] == n)
		ex->if_name[n->id] = ex_node_name(ex, ex_unprefixed(ex, n->name));
	IR_FOR_EACH_NODE(ex->m, n)
	{
		if (n->guard != g || ex->skip[n->id] || ex->done[n->id])
			continue;
		for (int i = 0; i < n->nin && ex->nlevels; i++)
			if (n->in[i] && !ex_visible(ex, n->in[i]))
				return ex_node_error(
				        ex, n,
				        "it reads '%s', which comes after the If it is "
				        "in; the writer cannot order the If",
				        n->in[i]->name);
		ok &= ex_write_node(ex, n);
		ex->done[n->id] = 1;
	}
	return ok;
}

/* value_info for the results of the nodes under guard g, but for the
 * graph's outputs: out[0..nout) (or, outside every branch, the module's). */
static void ex_value_infos(struct ex *ex, Onnx__GraphProto *gp, const struct ir_value *g,
                           const char *const *out, size_t nout)
{
	size_t n = 0;
	IR_FOR_EACH_NODE(ex->m, nd)
	if (nd->guard == g && !ex->skip[nd->id])
		n += (size_t)nd->nout;
	gp->value_info = ir_arena_alloc(&ex->arena, sizeof *gp->value_info * (n + 1));
	IR_FOR_EACH_NODE(ex->m, nd)
	{
		if (nd->guard != g || ex->skip[nd->id] || nd->op == IR_OP_LOOP)
			continue; /* a loop's token is no ONNX value */
		for (int i = 0; i < nd->nout; i++) {
			const struct ir_value *v = nd->out[i];
			bool is_out = !g && ir_is_output(ex->m, v);
			for (size_t k = 0; k < nout && !is_out; k++)
				is_out = strcmp(out[k], v->name) == 0;
			if (!is_out)
				gp->value_info[gp->n_value_info++] = ex_value_info(ex, v);
		}
	}
}

/* Output i of a sub-graph (an If's branch, a Loop's body) written under
 * guard g returns v: as it is where a node under g computes it (and, with
 * before, no output before it returns it), else through an Identity named
 * PREFIXout_i (ONNX lets a sub-graph return an outer value as it is, ONNX
 * Runtime refuses that) whose result is named after n's with what.
 * Returns the name the sub-graph returns. */
static const char *ex_sub_output(struct ex *ex, const struct ir_node *n, const struct ir_value *v,
                                 const struct ir_value *g, const char *prefix, const char *what,
                                 int i, const char *const *before)
{
	struct ex_node *id;
	bool again = false;
	for (int j = 0; before && j < i; j++)
		again |= strcmp(before[j], v->name) == 0;
	if (v->kind == IR_VAL_NODE && g && v->def->guard == g && !again)
		return v->name;
	id = ex_node_named(ex, n, "Identity",
	                   ex_node_name(ex, ir_arena_printf(&ex->arena, "%sout_%d", prefix, i)), 1,
	                   1, 0);
	ex_in(id, v->name);
	return id->p->output[id->p->n_output++] = (char *)ex_new_name(ex, n, what);
}

/* One branch of the If merged by phis[0..k): the nodes under g, returning
 * each phi's operand `which` (1: then, 2: else). */
static Onnx__GraphProto *ex_branch(struct ex *ex, const struct ir_node *const *phis, int k,
                                   const struct ir_value *g, int which)
{
	Onnx__GraphProto *gp = ir_arena_alloc(&ex->arena, sizeof *gp);
	Onnx__NodeProto **nodes = ex->nodes;
	size_t nnodes = ex->nnodes, cap = ex->cap_nodes;
	const char *strip = ex->strip;
	const char **out = ir_arena_alloc(&ex->arena, sizeof *out * (size_t)(k + 1));
	onnx__graph_proto__init(gp);
	gp->name = (char *)ir_arena_printf(&ex->arena, "%s/%s", phis[0]->name,
	                                   which == 1 ? "then" : "else");
	ex->nodes = NULL;
	ex->nnodes = ex->cap_nodes = 0;
	ex->strip = ir_arena_printf(&ex->arena, "%s/", gp->name);
	if (g)
		ex_scope(ex, g);
	gp->n_output = (size_t)k;
	gp->output = ir_arena_alloc(&ex->arena, sizeof *gp->output * (size_t)(k + 1));
	for (int i = 0; i < k; i++) {
		const struct ir_value *v = ex->unflat[phis[i]->id * 2 + which - 1]
		                                   ? ex->unflat[phis[i]->id * 2 + which - 1]
		                                   : phis[i]->in[which];
		if (!ex_visible(ex, v))
			ex_node_error(ex, phis[i],
			              "its operand '%s' comes after the If's first merge; the "
			              "writer cannot order the If",
			              v->name);
		gp->output[i] = ex_value_info(ex, v);
		out[i] = gp->output[i]->name =
		        (char *)ex_sub_output(ex, phis[i], v, g, which == 1 ? "then_" : "else_",
		                              which == 1 ? "then" : "else", i, NULL);
	}
	gp->n_node = ex->nnodes;
	gp->node = ex->nodes;
	if (g)
		ex_value_infos(ex, gp, g, out, (size_t)k);
	ex->nodes = nodes;
	ex->nnodes = nnodes;
	ex->cap_nodes = cap;
	ex->strip = strip;
	return gp;
}

/* Writes the If whose first phi is phi (the other phis of the If are done
 * with it). */
static bool ex_if(struct ex *ex, const struct ir_node *phi)
{
	struct ex_branches b = ex_branches(phi);
	const struct ir_node **phis;
	struct ex_node *en;
	Onnx__AttributeProto *a;
	int k = 0, errors = ex->ctx->nerrors;
	if (ex->first[phi->id] != phi || ex->done[phi->id])
		return true; /* written with its If */
	for (const struct ir_node *p = phi; p; p = p->next)
		k += ex->first[p->id] == phi;
	phis = ir_arena_alloc(&ex->arena, sizeof *phis * (size_t)k);
	k = 0;
	for (const struct ir_node *p = phi; p; p = p->next)
		if (ex->first[p->id] == phi) {
			phis[k++] = p;
			ex->done[p->id] = 1;
		}
	ex->levels[ex->nlevels++] = (struct ex_level){ b.then_g, b.else_g, ex->pos[phi->id] };
	en = ex_node_named(ex, phi, "If", ex->if_name[phi->id], 1, k, 2);
	ex_in(en, phi->in[0]->name);
	for (int i = 0; i < k; i++)
		en->p->output[en->p->n_output++] = (char *)phis[i]->out[0]->name;
	a = ex_attr(en, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
	a->g = ex_branch(ex, phis, k, b.then_g, 1);
	a = ex_attr(en, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
	a->g = ex_branch(ex, phis, k, b.else_g, 2);
	ex->nlevels--;
	return ex->ctx->nerrors == errors;
}

/*
 * A run-time loop (docs/ir.md, Loops) is written as a Loop whose condition
 * and carried iteration number do the work of a trip count (the importer
 * folded one into them), with the trip count too where it is a constant
 * (ir_loop_bound): its inputs the entry condition and the carried values'
 * initial values, its outputs loop_end's results. Its body is the nodes
 * under the token (nested Ifs and loops inside it written the same way,
 * the "LOOP/body/" prefix of their names left out); its inputs an
 * iteration number nothing reads, the condition and the carried values
 * (named as the carries), its outputs the condition and the next values
 * loop_end takes, through an Identity where the body does not compute one
 * itself (ONNX Runtime refuses an outer value as a body output) or where
 * it is an output already.
 */
static bool ex_loop(struct ex *ex, const struct ir_node *n)
{
	const struct ir_value *t = n->out[0];
	const struct ir_node *end = ir_loop_end(t);
	int k = (end->nin - 2) / 2, errors = ex->ctx->nerrors;
	Onnx__GraphProto *gp = ir_arena_alloc(&ex->arena, sizeof *gp);
	const char *strip = ex->strip, *name = ex_node_name(ex, ex_unprefixed(ex, n->name));
	const char **out = ir_arena_alloc(&ex->arena, sizeof *out * (size_t)(k + 2));
	struct ex_node *en = ex_node_named(ex, n, "Loop", name, 2 + k, k, 1);
	Onnx__NodeProto **nodes = ex->nodes; /* the scope's, the Loop in it */
	size_t nnodes = ex->nnodes, cap = ex->cap_nodes;
	/* the trip count the importer folded into the condition, written back
	 * so that the reader sees the loop's length without unrolling it (a
	 * double holds it exactly below 2^53) */
	int64_t trip = ir_loop_bound(end->in[1], end->in + 2, end->in + 2 + k, k);
	const char *m = trip >= 0 && trip < (int64_t)1 << 53
	                        ? ex_scalar(ex, n, "trip_count", IR_I64, (double)trip)
	                        : "";
	if (!m)
		return false;
	ex_in(en, m);
	ex_in(en, n->in[0]->name);
	for (int j = 0; j < k; j++) {
		const struct ir_node *c = end->in[2 + j]->def;
		ex_in(en, c->in[0]->name);
		en->p->output[en->p->n_output++] = (char *)end->out[j]->name;
		ex->skip[c->id] = 1; /* a body input */
	}
	ex->done[end->id] = 1;
	onnx__graph_proto__init(gp);
	gp->name = (char *)ir_arena_printf(&ex->arena, "%s/body", name);
	gp->n_input = (size_t)(k + 2);
	gp->input = ir_arena_alloc(&ex->arena, sizeof *gp->input * (size_t)(k + 3));
	{
		struct ir_type it = { .dtype = IR_I64 }, bt = { .dtype = IR_BOOL };
		gp->input[0] = ir_arena_alloc(&ex->arena, sizeof *gp->input[0]);
		onnx__value_info_proto__init(gp->input[0]);
		gp->input[0]->name = (char *)ex_new_name(ex, n, "iteration");
		gp->input[0]->type = ex_type(ex, &it);
		gp->input[1] = ir_arena_alloc(&ex->arena, sizeof *gp->input[1]);
		onnx__value_info_proto__init(gp->input[1]);
		gp->input[1]->name = (char *)ex_new_name(ex, n, "cond");
		gp->input[1]->type = ex_type(ex, &bt);
	}
	for (int j = 0; j < k; j++)
		gp->input[2 + j] = ex_value_info(ex, end->in[2 + j]);
	/* the body's nodes, then its outputs */
	ex->nodes = NULL;
	ex->nnodes = ex->cap_nodes = 0;
	ex->strip = ir_arena_printf(&ex->arena, "%s/body/", n->name);
	ex->levels[ex->nlevels++] = (struct ex_level){ t, NULL, ex->pos[n->id] };
	ex_scope(ex, t);
	gp->n_output = (size_t)(k + 1);
	gp->output = ir_arena_alloc(&ex->arena, sizeof *gp->output * (size_t)(k + 2));
	for (int i = 0; i <= k; i++) {
		const struct ir_value *v = end->in[i ? 2 + k + i - 1 : 1];
		if (!ex_visible(ex, v))
			ex_node_error(
			        ex, end,
			        "its input '%s' comes after its loop; the writer cannot order "
			        "the Loop",
			        v->name);
		gp->output[i] = ex_value_info(ex, v);
		out[i] = gp->output[i]->name =
		        (char *)ex_sub_output(ex, end, v, t, "", i ? "next" : "cond", i, out);
	}
	gp->n_node = ex->nnodes;
	gp->node = ex->nodes;
	ex_value_infos(ex, gp, t, out, (size_t)(k + 1));
	ex->nlevels--;
	ex->nodes = nodes;
	ex->nnodes = nnodes;
	ex->cap_nodes = cap;
	ex->strip = strip;
	ex_attr(en, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = gp;
	return ex->ctx->nerrors == errors;
}

static bool ex_write_node(struct ex *ex, const struct ir_node *n)
{
	if (ex_ops[n->op]->refuse)
		return ex_node_error(ex, n, "%s", ex_ops[n->op]->refuse);
	if (n->op == IR_OP_PHI) /* its types are its operands' writers' to check */
		return ex_if(ex, n);
	if (n->op == IR_OP_LOOP)
		return ex_loop(ex, n);
	return ex_check_op(ex, n) && ex_ops[n->op]->write(ex, n);
}

/* Every constant becomes an initializer; one without data cannot. */
static bool ex_constants(struct ex *ex)
{
	int errors = ex->ctx->nerrors;
	for (int i = 0; i < ex->m->nvalues; i++) {
		const struct ir_value *v = ex->m->values[i];
		if (v->kind != IR_VAL_CONST)
			continue;
		if (!v->data) {
			ir_error(ex->ctx,
			         "cannot export: constant '%s' has no data (IR text names large "
			         "weights by checksum only; export the ONNX model instead)",
			         v->name);
			continue;
		}
		ex_tensor(ex, v->name, &v->type, v->data);
	}
	return ex->ctx->nerrors == errors;
}

/* The declared type of output vi, of run-time shape sh: where the two
 * shapes have one rank, that rank, with a dimension parameter NAME_dD
 * where they differ; else no shape (ONNX allows it; the checker of some
 * onnx versions wants a shape on a graph output all the same). */
static void ex_shaped_type(struct ex *ex, Onnx__ValueInfoProto *vi, const struct ir_out_shape *sh)
{
	Onnx__TensorShapeProto *s;
	if (sh->then_type.rank != sh->else_type.rank) {
		vi->type->tensor_type->shape = NULL;
		return;
	}
	vi->type = ex_type(ex, &sh->then_type);
	s = vi->type->tensor_type->shape;
	for (int d = 0; d < sh->then_type.rank; d++)
		if (sh->then_type.dims[d] != sh->else_type.dims[d]) {
			s->dim[d]->value_case =
			        ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			s->dim[d]->dim_param =
			        (char *)ir_arena_printf(&ex->arena, "%s_d%d", vi->name, d);
		}
}

static Onnx__GraphProto *ex_graph(struct ex *ex)
{
	struct ir_module *m = ex->m;
	Onnx__GraphProto *g = ir_arena_alloc(&ex->arena, sizeof *g);
	onnx__graph_proto__init(g);
	g->name = (char *)m->name;
	g->n_input = (size_t)m->ninputs;
	g->input = ir_arena_alloc(&ex->arena, sizeof *g->input * (size_t)(m->ninputs + 1));
	for (int i = 0; i < m->ninputs; i++)
		g->input[i] = ex_value_info(ex, m->inputs[i]);
	g->n_output = (size_t)m->noutputs;
	g->output = ir_arena_alloc(&ex->arena, sizeof *g->output * (size_t)(m->noutputs + 1));
	for (int i = 0; i < m->noutputs; i++) {
		const struct ir_out_shape *sh = m->out_shapes[i];
		g->output[i] = ex_value_info(ex, m->outputs[i]);
		if (sh) /* its shape is known only at run time */
			ex_shaped_type(ex, g->output[i], sh);
	}
	ex_value_infos(ex, g, NULL, NULL, 0);
	g->n_node = ex->nnodes;
	g->node = ex->nodes;
	g->n_initializer = ex->ninits;
	g->initializer = ex->inits;
	return g;
}

static int64_t ex_ir_version(int64_t opset)
{
	int64_t v = 0;
	for (size_t i = 0; i < sizeof ex_ir_versions / sizeof ex_ir_versions[0]; i++)
		if (ex_ir_versions[i].opset <= opset)
			v = ex_ir_versions[i].ir_version;
	IR_ASSERT(v != 0);
	return v;
}

static Onnx__ModelProto *ex_model(struct ex *ex, const struct fe_export_options *o)
{
	Onnx__ModelProto *mp = ir_arena_alloc(&ex->arena, sizeof *mp);
	Onnx__OperatorSetIdProto *os = ir_arena_alloc(&ex->arena, sizeof *os);
	onnx__model_proto__init(mp);
	onnx__operator_set_id_proto__init(os);
	os->domain = ""; /* the default domain, ai.onnx */
	os->has_version = true;
	os->version = ex->opset;
	mp->has_ir_version = true;
	mp->ir_version = ex_ir_version(ex->opset);
	mp->producer_name = (char *)(o && o->producer ? o->producer : "onnxc");
	mp->producer_version = ONNXC_VERSION;
	mp->n_opset_import = 1;
	mp->opset_import = ir_arena_alloc(&ex->arena, sizeof *mp->opset_import);
	mp->opset_import[0] = os;
	mp->graph = ex_graph(ex);
	return mp;
}

/* protobuf-c output straight to a file. */
struct ex_file {
	ProtobufCBuffer base;
	FILE *f;
	bool failed;
};

static void ex_file_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct ex_file *ef = (struct ex_file *)b;
	if (!ef->failed && len && fwrite(data, 1, len, ef->f) != len)
		ef->failed = true;
}

static bool ex_write_file(struct ex *ex, const Onnx__ModelProto *mp, const char *path)
{
	struct ex_file ef = { .base = { .append = ex_file_append } };
	size_t size = protobuf_c_message_get_packed_size(&mp->base);
	int err = 0;
	if (size > INT32_MAX) {
		ir_error(ex->ctx,
		         "cannot export: the model would take %zu bytes; a protobuf file is "
		         "limited to 2 GiB (external data is not supported)",
		         size);
		return false;
	}
	if (!(ef.f = fopen(path, "wb"))) {
		ir_error(ex->ctx, "cannot write %s: %s", path, strerror(errno));
		return false;
	}
	protobuf_c_message_pack_to_buffer(&mp->base, &ef.base);
	if (ef.failed || fflush(ef.f) != 0)
		err = errno ? errno : EIO;
	if (fclose(ef.f) != 0 && !err)
		err = errno ? errno : EIO;
	if (err) {
		ir_error(ex->ctx, "cannot write %s: %s", path, strerror(err));
		unlink(path);
		return false;
	}
	return true;
}

/* Branch value v of an output of run-time shape before the import made
 * it t's elements flat and padded (a pad of zeros after a reshape, each
 * read by nothing else, which are then skipped), or NULL. */
static const struct ir_value *ex_unflat(struct ex *ex, const struct ir_value *v,
                                        const struct ir_type *t)
{
	const struct ir_node *pad = NULL, *flat = NULL;
	if (v->kind == IR_VAL_NODE && v->def->op == IR_OP_PAD && v->nuses == 1 &&
	    ir_type_elems(&v->def->in[0]->type) == ir_type_elems(t)) {
		pad = v->def;
		v = pad->in[0];
	}
	if (!ir_type_eq(&v->type, t) && v->kind == IR_VAL_NODE && v->def->op == IR_OP_RESHAPE &&
	    v->nuses == 1) {
		flat = v->def;
		v = flat->in[0];
	}
	if (!ir_type_eq(&v->type, t))
		return NULL;
	if (pad)
		ex->skip[pad->id] = 1;
	if (flat)
		ex->skip[flat->id] = 1;
	return v;
}

/* Where output k of run-time shape is the phi of an If on its condition,
 * that If gives it in the branches' own shapes, as the ONNX model did:
 * reading the file back gives the same IR. */
static void ex_unflatten(struct ex *ex)
{
	struct ir_module *m = ex->m;
	for (int k = 0; k < m->noutputs; k++) {
		const struct ir_out_shape *sh = m->out_shapes[k];
		const struct ir_node *phi = m->outputs[k]->def;
		const struct ir_value *t, *e;
		if (!sh || !phi || phi->op != IR_OP_PHI || phi->in[0] != sh->cond ||
		    phi->in[1]->nuses != 1 || phi->in[2]->nuses != 1)
			continue;
		t = ex_unflat(ex, phi->in[1], &sh->then_type);
		e = t ? ex_unflat(ex, phi->in[2], &sh->else_type) : NULL;
		if (!t || !e)
			continue; /* what a pass made of it: ex_shaped_outputs */
		ex->unflat[phi->id * 2] = t;
		ex->unflat[phi->id * 2 + 1] = e;
		ex->unflat_out[k] = 1;
	}
}

/* A branch of ex_shaped's If: Reshape(Slice(flat, [0], [elems]), dims),
 * named after output v's node with what. */
static Onnx__GraphProto *ex_shaped_branch(struct ex *ex, const struct ir_value *v, const char *flat,
                                          const struct ir_type *t, const char *what)
{
	Onnx__GraphProto *gp = ir_arena_alloc(&ex->arena, sizeof *gp);
	Onnx__NodeProto **nodes = ex->nodes;
	size_t nnodes = ex->nnodes, cap = ex->cap_nodes;
	const struct ir_node *n = v->def;
	int64_t zero = 0, elems = ir_type_elems(t);
	const char *sliced, *y;
	onnx__graph_proto__init(gp);
	gp->name = (char *)ir_arena_printf(&ex->arena, "%s/%s", n->name, what);
	ex->nodes = NULL;
	ex->nnodes = ex->cap_nodes = 0;
	sliced = ex_step(ex, n, "Slice", ir_arena_printf(&ex->arena, "%s_slice", what), NULL,
	                 (const char *[]){ flat, ex_ints(ex, n, "zero", &zero, 1, false),
	                                   ex_ints(ex, n, "elems", &elems, 1, false), NULL });
	y = ex_step(
	        ex, n, "Reshape", what, NULL,
	        (const char *[]){ sliced, ex_ints(ex, n, "dims", t->dims, t->rank, false), NULL });
	gp->n_output = 1;
	gp->output = ir_arena_alloc(&ex->arena, sizeof *gp->output * 2);
	gp->output[0] = ex_value_info(ex, v);
	gp->output[0]->name = (char *)y;
	gp->output[0]->type = ex_type(ex, t);
	gp->n_node = ex->nnodes;
	gp->node = ex->nodes;
	ex->nodes = nodes;
	ex->nnodes = nnodes;
	ex->cap_nodes = cap;
	return gp;
}

/*
 * Outputs of run-time shape (ir.h, struct ir_out_shape). The IR's value,
 * the elements flat and padded, is written as NAME.flat; an If on the
 * output's condition gives NAME, in each branch Reshape(Slice(NAME.flat,
 * 0, elems), dims) of that branch's shape: ONNX of dynamic shape, which
 * the importer reads back as an output of run-time shape again.
 */
static void ex_shaped_outputs(struct ex *ex)
{
	struct ir_module *m = ex->m;
	for (int i = 0; i < m->noutputs; i++) {
		const struct ir_out_shape *sh = m->out_shapes[i];
		const struct ir_value *v = m->outputs[i];
		const char *flat;
		struct ex_node *en;
		Onnx__AttributeProto *a;
		if (!sh || ex->unflat_out[i])
			continue;
		flat = ex_new_name(ex, v->def, "flat");
		for (size_t j = 0; j < ex->nnodes; j++)
			for (size_t o = 0; o < ex->nodes[j]->n_output; o++)
				if (!strcmp(ex->nodes[j]->output[o], v->name))
					ex->nodes[j]->output[o] = (char *)flat;
		en = ex_node_named(
		        ex, v->def, "If",
		        ex_node_name(ex, ir_arena_printf(&ex->arena, "%s/shape", v->name)), 1, 1,
		        2);
		ex_in(en, sh->cond->name);
		en->p->output[en->p->n_output++] = (char *)v->name;
		a = ex_attr(en, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
		a->g = ex_shaped_branch(ex, v, flat, &sh->then_type, "then");
		a = ex_attr(en, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
		a->g = ex_shaped_branch(ex, v, flat, &sh->else_type, "else");
	}
}

static bool ex_run(struct ex *ex, const char *path, const struct fe_export_options *o)
{
	struct ir_arena *a = &ex->arena;
	size_t ids = (size_t)ex->m->next_node_id + 1;
	int errors = ex->ctx->nerrors, k = 0;
	if (!ex_constants(ex))
		return false;
	ex->pos = ir_arena_alloc(a, sizeof *ex->pos * ids);
	ex->skip = ir_arena_alloc(a, ids);
	ex->done = ir_arena_alloc(a, ids);
	ex->first = ir_arena_alloc(a, sizeof *ex->first * ids);
	ex->if_name = ir_arena_alloc(a, sizeof *ex->if_name * ids);
	ex->levels = ir_arena_alloc(a, sizeof *ex->levels * ids); /* all zeroed */
	ex->unflat = ir_arena_alloc(a, sizeof *ex->unflat * 2 * ids);
	ex->unflat_out = ir_arena_alloc(a, (size_t)ex->m->noutputs + 1);
	ir_loops_together(ex->m); /* a node a pass left inside a loop goes before it */
	IR_FOR_EACH_NODE(ex->m, n)
	ex->pos[n->id] = k++;
	ex_find_ifs(ex);
	ex_unflatten(ex); /* after: its skips are no guards' */
	ex_scope(ex, NULL);
	ex_shaped_outputs(ex);
	/* a guarded node no phi merges out of its branch (none is made so) */
	IR_FOR_EACH_NODE(ex->m, n)
	if (!ex->done[n->id] && !ex->skip[n->id] && ex->ctx->nerrors == errors)
		ex_node_error(ex, n, "it runs under guard '%s', and no If merges its branch",
		              n->guard ? n->guard->name : "(none)");
	if (ex->ctx->nerrors != errors)
		return false;
	return ex_write_file(ex, ex_model(ex, o), path);
}

bool fe_export_onnx(struct ir_module *m, const char *path, const struct fe_export_options *o)
{
	struct ir_ctx *ctx = m->ctx;
	struct ex *volatile ex = NULL;
	jmp_buf jb, *saved_oom = ctx->oom;
	int64_t opset = o && o->opset ? o->opset : FE_EXPORT_DEFAULT_OPSET;
	bool ok;

	if (opset < FE_EXPORT_MIN_OPSET || opset > FE_EXPORT_MAX_OPSET) {
		ir_error(ctx, "cannot export to opset %lld (onnxc writes opsets %d to %d)",
		         (long long)opset, FE_EXPORT_MIN_OPSET, FE_EXPORT_MAX_OPSET);
		return false;
	}
	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__) {
		ir_error(ctx, "cannot export: raw_data is little-endian and this host is not");
		return false;
	}
	if (setjmp(jb)) {
		ctx->oom = saved_oom;
		if (ex) {
			ir_arena_free(&ex->arena);
			ir_free(ctx, ex);
		}
		return false;
	}
	ctx->oom = &jb;
	ex = ir_malloc(ctx, sizeof *ex);
	memset(ex, 0, sizeof *ex);
	ex->ctx = ctx;
	ex->m = m;
	ex->opset = opset;
	ir_arena_init(&ex->arena, ctx);
	ir_map_init(&ex->taken, &ex->arena);
	ir_map_init(&ex->node_names, &ex->arena);
	ir_map_init(&ex->next_name, &ex->arena);
	ir_map_init(&ex->next_node, &ex->arena);
	ok = ex_run(ex, path, o);
	ctx->oom = saved_oom;
	ir_arena_free(&ex->arena);
	ir_free(ctx, ex);
	return ok;
}
