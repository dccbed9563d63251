/*
 * fe.h - the ONNX frontend: load a ModelProto and lower it into the IR.
 *
 * Public entry points: fe_import(), and fe_export_onnx() for the way back
 * (export.c). The rest of this header is shared by the frontend's own
 * files: load.c (protobuf, tensors, external data), import.c (graph walk,
 * names, folding, diagnostics) and the per-family op importers ops_*.c,
 * which see one ONNX node at a time through struct fe_node.
 *
 * Errors in the model are reported through the ir_ctx diagnostic sink as
 * "FILE: error: node 'NAME' (OpType): what is wrong". A node that fails is
 * skipped together with everything that depends on it, and the walk goes on,
 * so one run reports every independent problem.
 *
 * frontend/ owns ONNX in and out, nothing else: it may include the IR
 * (ir/) and protoc-c's onnx.pb-c.h, never passes/, codegen/, runtime/ or
 * cli/ (tests/layout.sh checks it).
 */
#ifndef ONNXC_FE_H
#define ONNXC_FE_H

#include "ir/ir.h"

/* ------------------------------------------------------------------------ */
/* Public API                                                               */
/* ------------------------------------------------------------------------ */

struct fe_dim_binding {
	const char *name; /* a dim_param */
	int64_t value;
	bool used;
};

struct fe_shape_binding {
	const char *input; /* a graph input */
	int rank;
	int64_t dims[IR_MAX_RANK];
	bool used;
};

/* A graph input replaced by a constant (--const): specializes the model. */
struct fe_const_input {
	const char *name;
	const char *path;       /* a tensor file (.npy or .pb), or NULL */
	struct ir_value *value; /* or a constant of another module */
	bool used;
};

/* Graph inputs whose values the import needed as constants (shape
 * operands computed from an input); onnxc check freezes them and retries. */
struct fe_wanted {
	char names[16][256];
	int n;
};

struct fe_options {
	struct fe_dim_binding *dims;
	int ndims;
	struct fe_shape_binding *shapes;
	int nshapes;
	struct fe_const_input *consts;
	int nconsts;
	struct fe_wanted *wanted; /* filled in when not NULL */
	/* Importing for onnxc train: nothing that reads a float initializer is
	 * folded (the initializers become trainable inputs), and
	 * BatchNormalization in training mode is accepted (onnxc train runs
	 * every BatchNormalization with batch statistics anyway). */
	bool training;
	int64_t max_const_bytes; /* largest constant the import may create (0: 4 GiB) */
	/* Initializers whose data is not read: they become constants without
	 * data (as IR text's weights). onnxc train's eval step, whose params
	 * and state the training step already holds. */
	const char *const *no_data;
	int nno_data;
	/* called with the path of every external data file the import reads
	 * (the model's folder joined with the location), for depfiles */
	void (*on_read)(void *ud, const char *path);
	void *on_read_ud;
};

/* Imports the ONNX model at path. NULL after reporting errors through ctx
 * (ctx->file is set to path for the duration). */
struct ir_module *fe_import(struct ir_ctx *ctx, const char *path, const struct fe_options *opt);

/* Loads a tensor file (.npy, or an ONNX TensorProto .pb) as a constant of m. */
struct ir_value *fe_load_tensor(struct ir_ctx *ctx, struct ir_module *m, const char *path,
                                const char *name);
/* Writes a tensor as .npy (bfloat16 as raw 2-byte elements). */
bool fe_save_npy(const char *path, const struct ir_type *t, const void *data);

/* Training (onnxc train): the names of the model's initializers, in
 * model order, copied into a. false after diagnostics. */
struct fe_train_info {
	const char **initializers;
	int ninitializers;
};
bool fe_train_info(struct ir_ctx *ctx, struct ir_arena *a, const char *path,
                   struct fe_train_info *info);
/* The model at path serialized again without the initializers named in
 * drop (into a), in inference mode (training-mode BatchNormalization and
 * Dropout switched off, as PyTorch's eval()): the template the training
 * program appends the trained initializers to (protobuf merges
 * concatenated messages). */
bool fe_train_template(struct ir_ctx *ctx, struct ir_arena *a, const char *path,
                       const char *const *drop, int ndrop, unsigned char **bytes, size_t *len);
/* Parses "8x3x224x224"  (or "8,3,224,224"; "" for a scalar) into dims. */
bool fe_parse_dims(const char *s, int *rank, int64_t *dims);

/* Export (export.c): an IR module written back as a standard ONNX model. */
#define FE_EXPORT_MIN_OPSET     13
#define FE_EXPORT_MAX_OPSET     25
#define FE_EXPORT_DEFAULT_OPSET 17

struct fe_export_options {
	int64_t opset;        /* the ai.onnx opset to target (0: FE_EXPORT_DEFAULT_OPSET) */
	const char *producer; /* ModelProto.producer_name (NULL: "onnxc") */
};

/* Writes m to path as an ONNX ModelProto (o may be NULL for the defaults).
 * false after reporting through m->ctx: every node that cannot be expressed
 * at the opset, constants without data, an unwritable file. */
bool fe_export_onnx(struct ir_module *m, const char *path, const struct fe_export_options *o);

/* Whether export has a writer for op (the export column of ir/ops.h). When
 * it has none, *refusal (if refusal is not NULL) is why: the error exporting
 * such a node reports; NULL there is a gap in the table (a unit test checks
 * there is none). */
bool fe_export_writes(enum ir_op op, const char **refusal);

/* ------------------------------------------------------------------------ */
/* Internal                                                                 */
/* ------------------------------------------------------------------------ */

#include "onnx.pb-c.h"

/* Models of default-domain opsets FE_MIN_OPSET to FE_MAX_OPSET are read.
 * From FE_FULL_OPSET on, every op onnxc imports has every version of it
 * implemented (scripts/op-versions.py checks the tables); below it, a node
 * imports when the version in effect at its opset is one the table lists,
 * and is refused otherwise (the op's older versions carry attributes such
 * as consumed_inputs or broadcast that onnxc does not read). */
#define FE_MIN_OPSET  1
#define FE_FULL_OPSET 7
#define FE_MAX_OPSET  27

/* The model file while tensors are read from it (load.c): large raw_data
 * stays in the file and is read from fd into the constant that holds it. */
struct fe_source {
	int fd;    /* -1: closed */
	void *map; /* the file mapped while it is scanned, or NULL */
	size_t map_len;
};

struct fe {
	struct ir_ctx *ctx;
	struct ir_module *m;
	const struct fe_options *opt;
	const char *path;
	char *dir; /* the model's folder, for external data */
	Onnx__ModelProto *model;
	struct fe_source *src;  /* of model (NULL: tensors carry their data) */
	int64_t opset;          /* of the default domain */
	struct ir_map values;   /* ONNX tensor name -> ir_value (NULL: poisoned) */
	struct ir_map reserved; /* every ONNX tensor name in the graph */
	struct ir_map tmp_next; /* fe_tmp_name's ir_fresh_name memory */
	struct ir_map reads;    /* tensors read by a node or a graph output, once asked */
	struct ir_map wanted;   /* values want_inputs has visited */
	struct ir_map no_data;  /* opt->no_data */
	int64_t max_const_bytes;
	int64_t fold_budget; /* folding work left (fe_fold_ok) */
	/* the graph's nodes with model-local functions inlined (inline.c):
	 * the default-domain opset and the name of each node (NULL: no
	 * function was called, every node is at opset), and the proto's own
	 * node list, put back before the proto is freed */
	const int64_t *node_opset;
	const char **node_names;
	Onnx__NodeProto **saved_node;
	size_t saved_n_node;
	int ndropout; /* training-mode Dropouts so far: the next one's salt */
	/* the guard of every node fe_emit creates (NULL: unguarded): set while
	 * the branches of an If with a run-time condition are imported */
	struct ir_value *guard;
	/* If results whose branches give different shapes (imp_if), by value
	 * name: only a graph output may be one; a chain through next */
	struct ir_map shaped;
	struct fe_shaped *first_shaped;
};

/* An If result of run-time shape: the value, its shape, who made it. */
struct fe_shaped {
	struct ir_value *v;
	struct ir_out_shape shape;
	const char *node; /* the If */
	struct fe_shaped *next;
};

/* One ONNX node being imported. */
struct fe_node {
	struct fe *fe;
	const Onnx__NodeProto *proto;
	const char *name;        /* proto name, or synthesized "OpType_INDEX" */
	const char *op;          /* op_type */
	const struct fe_op *def; /* its entry in the op tables */
	int64_t opset;           /* of the default domain where the node is */
	int version;             /* of the op in effect there (fe_op_version) */
	int nin, nout;
	struct ir_value **in;     /* NULL where the input is omitted ("") */
	unsigned char *attr_used; /* per proto attribute: read by the importer */
	bool failed;              /* an error was reported for this node */
};

typedef bool (*fe_import_fn)(struct fe_node *nd);

/*
 * A row of the op tables. versions lists every version of the ONNX op
 * (the opset that introduced it, as ONNX's docs/Changelog.md numbers them)
 * that onnxc implements, ascending, up to FE_MAX_OPSET: the first is the
 * oldest onnxc accepts, and no version ONNX defined after it is missing (a
 * test compares the table with ONNX's list), so the version in effect at an
 * opset is the last one not above it, and the importer may switch on it.
 * removed: the opset from which ONNX deprecated the op (0: never).
 * domain: NULL for the default domain; an op of another domain (ONNX
 * Runtime's com.microsoft) is versioned by the model's import of it; ""
 * for one of ONNX Runtime's ops that it registers in the default domain
 * (versioned by the default opset, listed with ONNX Runtime's).
 */
#define FE_MAX_VERSIONS 12
struct fe_op {
	const char *name; /* ONNX op_type */
	fe_import_fn import;
	enum ir_op ir; /* for the generic importers */
	unsigned char versions[FE_MAX_VERSIONS];
	int removed;
	const char *domain;
};
const struct fe_op *fe_find_op(const char *domain, const char *op_type);
/* The version of op in effect at opset: 0 when the op does not exist there
 * (or onnxc does not implement the version that does, or it was removed). */
int fe_op_version(const struct fe_op *op, int64_t opset);
/* The op tables, for listings: a NULL-terminated array of tables. */
extern const struct fe_op *const fe_op_tables[];

/*
 * Loads the ModelProto at path (no import) and calls fn on it, under an
 * out-of-memory guard and with a scratch module for the loader's memory:
 * what onnxc asks of a model besides importing it. false when the model
 * cannot be read (reported) or fn returns false.
 */
typedef bool (*fe_proto_fn)(struct fe *fe, Onnx__ModelProto *mp, void *ud);
bool fe_with_proto(struct ir_ctx *ctx, const char *path, fe_proto_fn fn, void *ud);

/* One field of protobuf's wire format (load.c): fe_wire_next reads the
 * field at *p of [*p, end) and moves *p past it; 1, 0 at the end, -1 when
 * it does not parse (groups included: ONNX has none). */
struct fe_wire_field {
	uint64_t num; /* field number */
	int type;     /* wire type: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
	const uint8_t *start, *val, *end; /* the field, its payload, its end */
};
int fe_wire_next(const uint8_t **p, const uint8_t *end, struct fe_wire_field *f);
/* Walks a ModelProto's messages iteratively, following only the fields the
 * schema declares as messages; visit (may be NULL) sees each such field f of
 * a message of type d and returns 1 to descend into it, 0 to skip it, -1 to
 * stop. 1 when walked, 0 when messages nest deeper than FE_MAX_NESTING, -1
 * on malformed input or when visit stopped. */
#define FE_MAX_NESTING 100
typedef int (*fe_wire_visit_fn)(void *ud, const ProtobufCMessageDescriptor *d,
                                const struct fe_wire_field *f);
int fe_wire_walk(const uint8_t *p, size_t len, fe_wire_visit_fn visit, void *ud);

/* Reports an error on the node and marks it failed; returns false. */
bool fe_fail(struct fe_node *nd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Attributes. Each getter marks the attribute as understood, reports a
 * wrong type (and marks the node failed), and returns def when absent. */
bool fe_has(struct fe_node *nd, const char *name);
int64_t fe_int(struct fe_node *nd, const char *name, int64_t def);
/* A required int: false after reporting it missing (or of the wrong type).
 * Every int64 is a value here, none stands for "absent". */
bool fe_req_int(struct fe_node *nd, const char *name, int64_t *v);
float fe_float(struct fe_node *nd, const char *name, float def);
const char *fe_str(struct fe_node *nd, const char *name, const char *def);
/* Returns the count, or -1 if absent; *v points into the proto. */
int fe_ints(struct fe_node *nd, const char *name, const int64_t **v);
int fe_floats(struct fe_node *nd, const char *name, const float **v);
int fe_strs(struct fe_node *nd, const char *name, const ProtobufCBinaryData **v);
/* An INTS attribute of exactly len values into out, or len copies of fill
 * when absent; false after reporting a wrong length. */
bool fe_ints_len(struct fe_node *nd, const char *name, int len, int64_t fill, int64_t *out);
const Onnx__TensorProto *fe_tensor_attr(struct fe_node *nd, const char *name);
void fe_ignore(struct fe_node *nd, const char *name); /* accepted, has no effect */

/* Inputs. */
struct ir_value *fe_in(struct fe_node *nd, int i); /* NULL if omitted */
/* Checks the node has between min and max inputs (max -1: any) and that the
 * first min are present; reports otherwise. */
bool fe_inputs(struct fe_node *nd, int min, int max);
/* Input i as constant integers (any integer dtype); -1 and an error if it is
 * not a constant. *v is arena memory. */
int fe_const_ints(struct fe_node *nd, int i, const char *what, int64_t **v);
int fe_const_floats(struct fe_node *nd, int i, const char *what, float **v);
/* Input i's values decide the output's shape (NonZero, Unique, ...): true
 * when it is a constant, else a diagnostic saying so and what a user can do
 * (and the graph inputs it comes from are wanted, for onnxc check). */
bool fe_need_values(struct fe_node *nd, int i);
/* Input i must be a constant with data: reports (naming what) if not. */
bool fe_need_const(struct fe_node *nd, int i, const char *what);
/* The same for an operand that decides values, not shapes (a DFT's length,
 * a window's size): the message names --const, which binds a graph input. */
bool fe_need_const_value(struct fe_node *nd, int i, const char *what);
bool fe_is_const(struct fe_node *nd, int i);

/* Building. Names a new IR value after the node's k-th ONNX output. */
const char *fe_out_name(struct fe_node *nd, int k);
/* A fresh name for an intermediate value, derived from the node's output. */
const char *fe_tmp_name(struct fe_node *nd, const char *suffix);
/* Creates an IR node named after the ONNX node; results named by names (NULL
 * entries get fe_tmp_name). Attributes start zeroed. */
struct ir_node *fe_emit(struct fe_node *nd, enum ir_op op, struct ir_value *const *in, int nin,
                        const char *const *names, int nout);
/* Infers types (reporting errors on the ONNX node), folds constants. false
 * if inference failed. After folding, n->out[] are still the results. */
bool fe_finish(struct fe_node *nd, struct ir_node *n);
/*
 * The folding budget: folding (and constants built at import, such as
 * ConstantOfShape's) is bounded by the input, not only by the constant
 * limit. Work up to FE_FOLD_FREE element visits (ir_fold_work) is always
 * done - shape arithmetic is far below it; larger work is taken from a
 * budget of FE_FOLD_BASE plus FE_FOLD_PER_BYTE visits per byte of the
 * model's initializers, and what would exceed it is left to run time.
 * fe_fold_ok says whether work fits, and takes it from the budget if so.
 */
#define FE_FOLD_FREE     ((int64_t)1 << 12)
#define FE_FOLD_BASE     ((int64_t)1 << 22)
#define FE_FOLD_PER_BYTE 2
bool fe_fold_ok(struct fe *fe, int64_t work);
/* Whether a constant of type t may be created at import (its element count
 * and the constant limit); reports on nd if not. */
bool fe_check_const_size(struct fe_node *nd, const struct ir_type *t);
/* Whether a node of the graph reads the tensor, or it is a graph output. */
bool fe_tensor_used(struct fe *fe, const char *name);
/* Whether v is a float initializer of the model (a weight). */
bool fe_is_weight(struct fe *fe, const struct ir_value *v);
/* emit + finish for a one-result node whose result is ONNX output k (or an
 * intermediate when k < 0); returns the result or NULL. No attributes. */
struct ir_value *fe_simple(struct fe_node *nd, enum ir_op op, struct ir_value *const *in, int nin,
                           int k);
/* Binds ONNX output k to v (aliasing: Identity binds its input). */
void fe_bind(struct fe_node *nd, int k, struct ir_value *v);
/* A new constant named after output k (k < 0: an intermediate). */
struct ir_value *fe_const(struct fe_node *nd, int k, const struct ir_type *t, const void *data);

/* Normalizes axis into [0, rank); reports and returns -1 when out of range. */
int64_t fe_axis(struct fe_node *nd, int64_t axis, int rank, const char *what);
/* Normalizes axes in place: non-negative, sorted, unique. Count or -1. */
int fe_norm_axes(struct fe_node *nd, int64_t *axes, int n, int rank);
/* A reshape of x to dims, named after output k (k < 0: an intermediate). */
struct ir_value *fe_reshape(struct fe_node *nd, struct ir_value *x, const int64_t *dims, int rank,
                            int k);

/*
 * Lowerings' building blocks (an ONNX op as several IR ops). Each returns
 * the result, named after ONNX output k (k < 0: an intermediate), or NULL
 * after reporting; a NULL input gives NULL, so a chain is checked once.
 */
/* A rank-0 constant of type t holding v (rounded to t). */
struct ir_value *fe_scalar(struct fe_node *nd, enum ir_dtype t, double v);
struct ir_value *fe_unary(struct fe_node *nd, enum ir_op op, struct ir_value *x, int k);
struct ir_value *fe_binary(struct fe_node *nd, enum ir_op op, struct ir_value *a,
                           struct ir_value *b, int k);
/* where(c, a, b) */
struct ir_value *fe_where(struct fe_node *nd, struct ir_value *c, struct ir_value *a,
                          struct ir_value *b, int k);
struct ir_value *fe_cast(struct fe_node *nd, struct ir_value *x, enum ir_dtype t, int k);
/* x cast to float8 type t as ONNX's saturate=0 does it (the IR's cast
 * saturates): out-of-range values become t's infinity or NaN. */
struct ir_value *fe_cast_no_saturate(struct fe_node *nd, struct ir_value *x, enum ir_dtype t,
                                     int k);
/* x[start:end:step] along axis, the other axes whole. */
struct ir_value *fe_slice_axis(struct fe_node *nd, struct ir_value *x, int axis, int64_t start,
                               int64_t end, int64_t step, int k);
struct ir_value *fe_concat(struct fe_node *nd, struct ir_value *const *xs, int n, int axis, int k);
struct ir_value *fe_transpose(struct fe_node *nd, struct ir_value *x, const int64_t *perm, int k);
/* gather(x, idx) along axis: a rank-0 idx takes one slice, without the axis. */
struct ir_value *fe_gather(struct fe_node *nd, struct ir_value *x, struct ir_value *idx,
                           int64_t axis, int k);
/* x broadcast to dims (ONNX Expand with a constant shape). */
struct ir_value *fe_expand(struct fe_node *nd, struct ir_value *x, const int64_t *dims, int rank,
                           int k);
/* A zero tensor (an expand of a scalar: a run-time fill when large, never
 * a large constant). */
struct ir_value *fe_zeros(struct fe_node *nd, enum ir_dtype t, const int64_t *dims, int rank);
/* data with up written (reduction "none") or combined at idx along axis. */
struct ir_value *fe_scatter(struct fe_node *nd, struct ir_value *data, struct ir_value *idx,
                            struct ir_value *up, int64_t axis, const char *reduction, int k);
/* A Reduce* IR op over sorted, non-negative axes. */
struct ir_value *fe_reduce(struct fe_node *nd, enum ir_op op, struct ir_value *x,
                           const int64_t *axes, int naxes, bool keepdims, int k);

/* The same over every axis of x: a scalar. */
struct ir_value *fe_reduce_all(struct fe_node *nd, enum ir_op op, struct ir_value *x, int k);

/* LayerNormalization's IR node (ops_nn.c) with the ONNX outputs the node
 * uses: y, and the mean and inverse standard deviation where asked. */
bool fe_layer_norm(struct fe_node *nd, struct ir_value *const *in, int nin, int64_t axis,
                   float eps);
/* The window of a convolution of x by weight wt [M, C/group, kernel...]
 * (ops_nn.c): the kernel from the weight (checked against kernel_shape),
 * strides, dilations, and pads with auto_pad resolved. */
struct fe_window {
	int nsp;
	int64_t kernel[IR_MAX_RANK], strides[IR_MAX_RANK], dilations[IR_MAX_RANK];
	int64_t pads[2 * IR_MAX_RANK];
};
bool fe_conv_window(struct fe_node *nd, const struct ir_type *x, const struct ir_type *wt,
                    struct fe_window *w);

/* RotaryEmbedding's rotation (ops_transformer.c) of x [B, heads, S, head]:
 * each token's first 2 * R features rotated by the rows pos [B, S] (int64)
 * of cos_cache and sin_cache [max, R], halves or (interleaved) neighbours
 * paired; the rest pass through. */
struct ir_value *fe_rotary(struct fe_node *nd, struct ir_value *x, struct ir_value *cos_cache,
                           struct ir_value *sin_cache, struct ir_value *pos, bool interleaved);

/* Loading (load.c). fe_load_model leaves the file open in fe->src (owned
 * by fe->m's arena, which closes it on an unwind); fe_free_model frees the
 * proto and closes the file. */
Onnx__ModelProto *fe_load_model(struct fe *fe, const char *path);
void fe_free_model(struct fe *fe, Onnx__ModelProto *mp);
/* The payload of t the loader left in the file: true with its offset and
 * length there; false when t carries its own data. */
bool fe_payload(const struct fe *fe, const Onnx__TensorProto *t, int64_t *offset, size_t *len);
/* Reads that payload into buf (len bytes); false after reporting (who
 * names the tensor). */
bool fe_read_payload(struct fe *fe, const char *who, void *buf, int64_t offset, size_t len);
/* Gives t its raw_data back from the file (memory of fe->m) so that the
 * proto can be packed, saving in u what fe_payload_restore puts back
 * before the proto is freed: 1, 0 when t holds its data, -1 after
 * reporting a read error. */
struct fe_payload_undo {
	Onnx__TensorProto *t;
	ProtobufCBinaryData raw;
	protobuf_c_boolean has_raw;
	size_t nunknown;
	ProtobufCMessageUnknownField *unknown;
};
int fe_payload_inline(struct fe *fe, Onnx__TensorProto *t, struct fe_payload_undo *u);
void fe_payload_restore(const struct fe_payload_undo *u);
/* data (n elements of dt, a byte each for the storage types) as an ONNX
 * file holds it, *len bytes: sub-byte types packed into arena a, others
 * data itself. */
uint8_t *fe_pack_narrow(struct ir_arena *a, enum ir_dtype dt, const uint8_t *data, int64_t n,
                        size_t *len);
/* Decodes a TensorProto into a new module constant named name. who names the
 * tensor in messages ("initializer 'w'", "attribute 'value'"). NULL on error
 * (reported). */
struct ir_value *fe_tensor_const(struct fe *fe, const Onnx__TensorProto *t, const char *name,
                                 const char *who);
/* Decodes the type of a tensor (dtype and dims) with checks. */
bool fe_tensor_type(struct fe *fe, const Onnx__TensorProto *t, const char *who,
                    struct ir_type *out);

/* Sub-graph g of node nd imported in place, at nd's opset: its nodes named
 * "NODE/TAG/SUB", reading outer values directly and g's inputs bound to
 * in[0..nin), its outputs into out[0..nout). False when it fails
 * (reported). fe_attr_graph: nd's graph attribute name (marked used), or
 * NULL. */
bool fe_import_graph(struct fe_node *nd, const Onnx__GraphProto *g, const char *tag,
                     struct ir_value *const *in, int nin, struct ir_value **out, int nout);
const Onnx__GraphProto *fe_attr_graph(struct fe_node *nd, const char *name);

/* Model-local functions (inline.c): replaces the graph's calls of them,
 * its sub-graphs' included, by their bodies (names[] are the graph's node
 * names); false after diagnostics. fe_free_model puts the proto's own
 * node list back. */
bool fe_inline_functions(struct fe *fe, const char **names);

/* The op tables of each family, terminated by a NULL name. */
extern const struct fe_op fe_ops_elementwise[];
extern const struct fe_op fe_ops_nn[];
extern const struct fe_op fe_ops_shape[];
extern const struct fe_op fe_ops_transformer[];
extern const struct fe_op fe_ops_attention[];
extern const struct fe_op fe_ops_recurrent[];
extern const struct fe_op fe_ops_loop[]; /* ops_loop.c: Loop and Scan, unrolled */
extern const struct fe_op fe_ops_dynamic[];
extern const struct fe_op fe_ops_loss[];
extern const struct fe_op fe_ops_signal[];
extern const struct fe_op fe_ops_quant[];
extern const struct fe_op fe_ops_sample[];
extern const struct fe_op fe_ops_text[];

#endif
