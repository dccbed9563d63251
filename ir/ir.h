/*
 * ir.h - the onnxc tensor IR, all of it in one header (with dtype.h, the data
 * types and tensor types, which it includes).
 *
 * A module is a graph in SSA form. Every tensor is a value that is defined
 * exactly once: as a graph input, as a constant (a weight, owned by the
 * module), or as one result of one node. Every value carries a dtype and a
 * fully static shape; symbolic ONNX dimensions are bound before a module
 * exists. Every value keeps the list of its uses so passes can rewrite the
 * graph locally.
 *
 * Nodes live on a doubly linked list kept in a topological order: a node only
 * reads values defined above it. The op of a node comes from the one op table
 * in ops.h, which also gives its ONNX name, arity, attribute schema, the
 * mixed-precision class and the shape/type inference function. An IR op is
 * deliberately more regular than the ONNX op it comes from: attributes are
 * complete (the importer fills defaults and resolves auto_pad, negative
 * axes, opset differences and shape-valued inputs), so an op's output types
 * are a pure function of its input types and attributes and every later stage
 * reads one canonical form.
 *
 * ir/ owns the IR, its text form, the verifier, inference and the reference
 * evaluator (folding). It includes nothing of onnxc outside ir/: it knows no
 * frontend, pass or backend (tests/layout.sh checks it).
 *
 * Memory: everything a module points to is allocated from the module's
 * arena, including constant data, so ir_module_free() releases it all and an
 * out-of-memory unwind (see ir_ctx) cannot leak. No global state: the
 * allocator, the diagnostic sink and the error count live in struct ir_ctx,
 * which every entry point takes.
 *
 * The text form (print.c / parse.c) is documented in docs/ir.md.
 */
#ifndef ONNXC_IR_H
#define ONNXC_IR_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ONNXC_VERSION "0.1.0"
#define IR_INLINE_MAX 16 /* constants up to this many elements print inline */

/* ------------------------------------------------------------------------ */
/* Context: allocator, diagnostics, out-of-memory unwinding.                */
/* ------------------------------------------------------------------------ */

/*
 * One allocator hook for everything the compiler allocates, in the manner of
 * lua_Alloc: alloc(ud, ptr, nsize) with nsize == 0 frees ptr. Tests install a
 * hook that fails the N-th allocation to check every failure path.
 *
 * Allocation failure is not reported through every return value. Instead the
 * entry points (import, parse, ...) install a jmp_buf in ctx->oom; a failed
 * allocation longjmps there and the entry point frees the module (whose arena
 * owns every allocation), so the unwind leaks nothing. Without a handler an
 * allocation failure aborts.
 */
typedef void *(*ir_alloc_fn)(void *ud, void *ptr, size_t nsize);

/* Receives each formatted diagnostic line (without the trailing newline). */
typedef void (*ir_diag_fn)(void *ud, const char *line);

struct ir_ctx {
	ir_alloc_fn alloc; /* NULL: malloc/realloc/free */
	void *alloc_ud;
	ir_diag_fn diag; /* NULL: print to stderr */
	void *diag_ud;
	const char *file; /* input file named by diagnostics, or NULL */
	int nerrors;      /* errors reported so far */
	int nwarnings;
	int max_errors; /* stop printing after this many (0: 100) */
	jmp_buf *oom;   /* where an allocation failure unwinds to */
	/* Work so far: slots looked at in the name tables and maps, names
	 * tried by name searches, use-list updates (deterministic: the
	 * arena's address-keyed block set is not counted). Tests check that
	 * an import's work grows linearly with the model, timing nothing. */
	uint64_t probes;
};

void ir_ctx_init(struct ir_ctx *ctx);
/* never NULL: on failure unwinds to ctx->oom, or reports and exits 1 */
void *ir_malloc(struct ir_ctx *ctx, size_t n);
void *ir_realloc(struct ir_ctx *ctx, void *p, size_t n);
void ir_free(struct ir_ctx *ctx, void *p);
_Noreturn void ir_oom(struct ir_ctx *ctx);

/* "FILE: error: MSG" (FILE omitted when ctx->file is NULL). Control
 * characters and invalid UTF-8 in the line are escaped (ir_escape). */
void ir_error(struct ir_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ir_warning(struct ir_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "FILE: note: MSG": neither counted nor cut off by max_errors. */
void ir_note(struct ir_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "FILE: error: node 'NAME' (OP): MSG" - the form every model error takes. */
void ir_node_error(struct ir_ctx *ctx, const char *node, const char *op, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
void ir_verror(struct ir_ctx *ctx, const char *kind, const char *fmt, va_list ap);
/* s copied into buf (NUL-terminated, cut to fit cap >= 8 bytes) with what
 * a terminal would act on made visible: newline, CR and tab as \n \r \t,
 * other C0 and C1 controls, DEL and bytes that are not UTF-8 as \xNN.
 * Printable UTF-8 passes as it is. Returns buf. */
const char *ir_escape(const char *s, char *buf, size_t cap);

/* Internal bugs abort loudly with file and line; they are never user errors. */
#define IR_ASSERT(c) ((c) ? (void)0 : ir_panic(__FILE__, __LINE__, "assertion failed: %s", #c))
_Noreturn void ir_panic(const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/*
 * Files (io.c). ir_open_regular opens path read-only if and only if it is a
 * regular file - never blocking on a FIFO - and returns the descriptor (or -1
 * with *err). ir_read_file reads a whole regular file into memory from ctx's
 * allocator, NUL-terminated; on failure it returns NULL with *err set (it does
 * not unwind). ir_read_at reads exactly n bytes at offset.
 */
int ir_open_regular(const char *path, const char **err, int64_t *size);
bool ir_read_at(int fd, void *buf, size_t n, int64_t offset);
void *ir_read_file(struct ir_ctx *ctx, const char *path, size_t *len, const char **err);

/* ------------------------------------------------------------------------ */
/* Arena.                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * A bump allocator over a chain of blocks. Requests larger than a block get a
 * block of their own, which can be given back early with ir_arena_release()
 * (constant folding drops large intermediates that way); a hash set of those
 * blocks answers ir_arena_owns() in constant time. ir_arena_defer() hands
 * the arena a resource that is not memory (a file descriptor, a mapping):
 * ir_arena_free() releases it, on an out-of-memory unwind too.
 */
struct ir_arena_block;
struct ir_arena_defer;
struct ir_arena {
	struct ir_ctx *ctx;
	struct ir_arena_block *head; /* current small-object block */
	struct ir_arena_block *big;  /* list of large blocks */
	size_t used;                 /* bytes handed out, for reports */
	void **bigset;               /* open addressing: the data of each big block */
	size_t bigcap, nbig;
	struct ir_arena_defer *defers; /* run by ir_arena_free, last first */
};

void ir_arena_init(struct ir_arena *a, struct ir_ctx *ctx);
void ir_arena_free(struct ir_arena *a);
void *ir_arena_alloc(struct ir_arena *a, size_t n);          /* 16-byte aligned, zeroed */
void *ir_arena_alloc_big(struct ir_arena *a, size_t n);      /* own block, not zeroed */
void ir_arena_release(struct ir_arena *a, void *p);          /* p from alloc_big */
bool ir_arena_owns(const struct ir_arena *a, const void *p); /* p from alloc_big of a */
/* Calls fn(ud) when a is freed. Register before acquiring what fn releases
 * (the record is arena memory) and let ud say when nothing is held. */
void ir_arena_defer(struct ir_arena *a, void (*fn)(void *ud), void *ud);
char *ir_arena_strdup(struct ir_arena *a, const char *s);
char *ir_arena_strndup(struct ir_arena *a, const char *s, size_t n);
char *ir_arena_printf(struct ir_arena *a, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* String -> pointer map over an arena, open addressing; keys are not copied
 * (they must live as long as the map). */
struct ir_map {
	struct ir_arena *arena;
	const char **keys;
	void **vals;
	int cap, n;
	/* the keys added, in order, when scoped (ir_map_mark) */
	const char **added;
	int nadded, cap_added;
	bool scoped;
};
void ir_map_init(struct ir_map *mp, struct ir_arena *a);
void **ir_map_get(const struct ir_map *mp, const char *key); /* NULL if absent */
void ir_map_put(struct ir_map *mp, const char *key, void *val);
/*
 * Scopes (the importer's loop bodies, imported once per iteration under the
 * same names): ir_map_mark returns a mark, and ir_map_pop removes every key
 * added since that mark, so the map is as it was (values rebound since stay
 * rebound). Keys are remembered from the first mark on.
 */
int ir_map_mark(struct ir_map *mp);
void ir_map_pop(struct ir_map *mp, int mark);

/*
 * The first of "base", "base<sep>1", "base<sep>2", ... for which
 * taken(ud, name) is false, allocated in next's arena. next remembers for
 * each base where the last search ended, so asking one base for n names
 * costs O(n), not O(n^2); while no name is freed, that is the name a search
 * from 1 would find.
 */
const char *ir_fresh_name(struct ir_map *next, const char *base, const char *sep,
                          bool (*taken)(void *ud, const char *name), void *ud);

#include "dtype.h"

/* ------------------------------------------------------------------------ */
/* Ops.                                                                     */
/* ------------------------------------------------------------------------ */

enum ir_op {
#define IR_OP(id, ...) IR_OP_##id,
#include "ops.h"
#undef IR_OP
	IR_OP_COUNT
};

/* Mixed-precision class (docs/precision.md). */
enum ir_amp { IR_AMP_ALLOW, IR_AMP_INFER, IR_AMP_DENY, IR_AMP_CLEAR, IR_AMP_SPECIAL };

/* What family an op belongs to; fusion and folding dispatch on it. */
enum ir_op_kind {
	IR_KIND_ELTWISE, /* elementwise over numpy-broadcast inputs */
	IR_KIND_REDUCE,  /* reduces some axes */
	IR_KIND_MOVE,    /* data movement: no arithmetic on elements */
	IR_KIND_COMPUTE, /* everything else (GEMM, conv, norms, ...) */
};

enum ir_attr_kind {
	IR_ATTR_INT,    /* schema letter i */
	IR_ATTR_FLOAT,  /* f: an ONNX float, kept as float32 */
	IR_ATTR_STRING, /* s */
	IR_ATTR_INTS,   /* I */
	IR_ATTR_FLOATS, /* F */
	IR_ATTR_DTYPE,  /* t: a dtype, printed by name */
};

struct ir_node;
/* Computes output types from input types and attributes. Returns false and
 * writes a message to err on invalid operands. */
typedef bool (*ir_infer_fn)(const struct ir_node *n, struct ir_type *out, char *err, size_t errlen);

struct ir_op_info {
	const char *name;   /* text form: "conv" */
	const char *onnx;   /* the ONNX op it imports from / exports as */
	int min_in, max_in; /* optional inputs are trailing */
	int min_out, max_out;
	enum ir_op_kind kind;
	enum ir_amp amp;
	const char *schema; /* attributes: "group:i pads:I ..." (all required) */
	ir_infer_fn infer;
};
extern const struct ir_op_info ir_ops[IR_OP_COUNT];

enum ir_op ir_op_from_name(const char *s, size_t n); /* IR_OP_COUNT if none */

/* Attribute schema, parsed from ir_op_info.schema. */
#define IR_MAX_ATTRS 12
struct ir_attr_def {
	char name[32];
	enum ir_attr_kind kind;
};
int ir_op_schema(enum ir_op op, struct ir_attr_def defs[IR_MAX_ATTRS]);

/* ------------------------------------------------------------------------ */
/* Values, nodes, modules.                                                  */
/* ------------------------------------------------------------------------ */

struct ir_attr {
	const char *name; /* points into the schema's names (arena copy) */
	enum ir_attr_kind kind;
	int n; /* element count for INTS / FLOATS */
	union {
		int64_t i;
		float f;
		const char *s;
		int64_t *ints;
		float *floats;
		enum ir_dtype t;
	};
};

enum ir_value_kind { IR_VAL_INPUT, IR_VAL_CONST, IR_VAL_NODE, IR_VAL_DEAD };

struct ir_use {
	struct ir_node *node;
	int index; /* which input of node; IR_USE_GUARD: node's guard */
};
#define IR_USE_GUARD (-1)

struct ir_value {
	int id; /* index in module->values */
	enum ir_value_kind kind;
	const char *name; /* unique in the module; the ONNX tensor name */
	struct ir_type type;
	struct ir_node *def; /* IR_VAL_NODE: the defining node */
	int def_index;       /* which output of def */
	/* IR_VAL_CONST: */
	void *data;        /* dense row-major; NULL for a weight read back
	                           from text, which names it by checksum only */
	uint64_t checksum; /* ir_checksum of the data bytes */
	struct ir_use *uses;
	int nuses, cap_uses;
};

struct ir_node {
	int id; /* unique in the module, creation order */
	enum ir_op op;
	const char *name; /* the ONNX node name (synthesized if anonymous) */
	struct ir_value **in;
	int *use_at; /* where operand i sits in in[i]->uses: O(1) removal */
	int nin;
	struct ir_value **out;
	int nout;
	struct ir_attr *attrs; /* in schema order, all present */
	int nattrs;
	/* NULL: the node always runs. Else a bool value of one element: the
	 * node runs only when it is true (and, nested, when the guard of the
	 * guard's own node holds: ir_guard_implies); when it does not run its
	 * results are unspecified and only a phi may read them (docs/ir.md,
	 * Guards). The guard is a use of the value (index IR_USE_GUARD), so
	 * DCE and ir_replace_uses see it; set it with ir_set_guard. */
	struct ir_value *guard;
	int guard_use_at; /* where the guard sits in guard->uses */
	struct ir_node *prev, *next;
};

/*
 * A graph output whose shape is known only at run time: an If whose branches
 * give the output different static shapes (docs/ir.md, Outputs of run-time
 * shape). The output value holds the elements of the branch taken, dense
 * and flat, padded to the larger count: dtype[max(elems)]. Its shape is
 * then_type's where cond (a bool of one element) holds, else_type's where
 * not. cond is a root like the output itself (DCE keeps it, the memory plan
 * keeps it alive to the end of a run) but not a use.
 */
struct ir_out_shape {
	struct ir_value *cond;
	struct ir_type then_type, else_type;
};

struct ir_module {
	struct ir_ctx *ctx;
	struct ir_arena arena; /* owns every byte reachable from the module */
	const char *name;
	struct ir_value **values; /* by id; dead values stay until compaction */
	int nvalues, cap_values;
	struct ir_node *first, *last;
	int nnodes, next_node_id;
	struct ir_value **inputs; /* graph inputs, in graph order */
	int ninputs, cap_inputs;
	struct ir_value **outputs; /* graph outputs, in graph order */
	int noutputs, cap_outputs;
	/* by output index, beside outputs: NULL for an output of fixed shape */
	struct ir_out_shape **out_shapes;
	struct ir_value **names; /* open-addressing hash set by name */
	int cap_names, nnames;
	struct ir_map unique; /* base -> where ir_unique_name's last search ended */
};

struct ir_module *ir_module_new(struct ir_ctx *ctx, const char *name);
void ir_module_free(struct ir_module *m);
/* A copy with m's value and node ids (per-id tables made for m fit it); its
 * constants share m's data, so it must be freed before m. */
struct ir_module *ir_module_clone(const struct ir_module *m);

struct ir_value *ir_find_value(const struct ir_module *m, const char *name);
/* A name not used yet in m, derived from base ("base", "base.1", ...). */
const char *ir_unique_name(struct ir_module *m, const char *base);

/* Value constructors; the name must be unique (checked: internal error). */
struct ir_value *ir_add_input(struct ir_module *m, const char *name, const struct ir_type *t);
/* data is copied unless it already lies in m's arena (then it is adopted). */
struct ir_value *ir_add_const(struct ir_module *m, const char *name, const struct ir_type *t,
                              const void *data);
struct ir_value *ir_add_const_ref(struct ir_module *m, const char *name, const struct ir_type *t,
                                  uint64_t checksum);
void ir_add_output(struct ir_module *m, struct ir_value *v);
/* Makes output i one of run-time shape (struct ir_out_shape; copied). */
void ir_set_out_shape(struct ir_module *m, int i, const struct ir_out_shape *s);

/*
 * Creates a node with nin inputs (entries may be NULL only for trailing
 * optional inputs, which are then dropped) and nout results named by
 * out_names (NULL: synthesized). Attributes are set to zero values of their
 * kinds; set them with ir_set_* before inferring types. The node is appended
 * at the end of the list; ir_move_before() places it elsewhere.
 */
struct ir_node *ir_add_node(struct ir_module *m, enum ir_op op, const char *name,
                            struct ir_value *const *in, int nin, const char *const *out_names,
                            int nout);
void ir_move_before(struct ir_module *m, struct ir_node *n, struct ir_node *before);
/* Unlinks n and marks its results dead; they must have no uses left. */
void ir_remove_node(struct ir_module *m, struct ir_node *n);
/* Unlinks n and drops its operand uses but leaves its results alone: the
 * caller turns them into something else (constant folding does). */
void ir_detach_node(struct ir_module *m, struct ir_node *n);
/* Appends input value v to m->inputs (reordering inputs: set
 * m->ninputs = 0, then append them in the new order). */
void ir_append_input(struct ir_module *m, struct ir_value *v);
/* Turns constant v into a graph input appended to m->inputs (its data
 * stays in m's arena: the caller keeps the pointer if it needs it). */
struct ir_value *ir_const_to_input(struct ir_module *m, struct ir_value *v);
/* Whether v is one of m's graph outputs. */
bool ir_is_output(const struct ir_module *m, const struct ir_value *v);
/* Whether v is a graph output or what picks one's shape (struct
 * ir_out_shape): a value the compiled model keeps to the end of a run. */
bool ir_is_root(const struct ir_module *m, const struct ir_value *v);
/* Gives v a new name (unused so far). */
void ir_rename_value(struct ir_module *m, struct ir_value *v, const char *name);
/* a and b trade names (O(1): the set of names stays the same). */
void ir_swap_names(struct ir_module *m, struct ir_value *a, struct ir_value *b);
/* Redirects every use of from (graph output slots included) to to. */
void ir_replace_uses(struct ir_module *m, struct ir_value *from, struct ir_value *to);
/* Replaces from by the node result to: its uses, its output slots and its
 * name (the two swap names), as a rewrite that computes from differently
 * does. A graph output's name is the compiled model's API and survives
 * every rewrite; pass_pipeline checks it (docs/ir.md). */
void ir_replace_value(struct ir_module *m, struct ir_value *from, struct ir_value *to);
/* i may be IR_USE_GUARD: sets n's guard (ir_set_guard). */
void ir_set_input(struct ir_module *m, struct ir_node *n, int i, struct ir_value *v);
/* Sets (g non-NULL) or clears n's guard. */
void ir_set_guard(struct ir_module *m, struct ir_node *n, struct ir_value *g);
/* How many of n's operands, from the first, are read where n runs, so that
 * n's guard must imply their producers' guards: all but what a phi merges
 * (operands 1, 2) and what a loop_end takes from its body (operands 1 on). */
int ir_guarded_operands(const struct ir_node *n);
/* Is v a run-time loop's token, the result of a loop node (docs/ir.md,
 * Loops)? */
bool ir_is_loop(const struct ir_value *v);
/* The loop_end reading loop token t, NULL when none does. */
struct ir_node *ir_loop_end(const struct ir_value *t);
/* Loop node loop's first iteration copied in front of it (its token read
 * as the entry condition, its carried values as their initial values), the
 * loop left to start at the second: how many nodes were copied. */
int ir_loop_peel(struct ir_module *m, struct ir_node *loop);
/* The loop replaced by its carried values' initial values (it runs no
 * iteration), its body removed. */
void ir_loop_exit(struct ir_module *m, struct ir_node *loop);
/* The bound a run-time loop's condition puts on its iterations: cond is
 * less(x + 1, T), alone or and-ed with another condition, T a constant and
 * x one of the carried values carried[0..n) that starts at a constant x0
 * and takes x + 1 each iteration (its next value next[j]), so at most
 * T - x0 iterations run (0 when T <= x0). -1 for any other condition. The
 * importer's trip count has this form (frontend/ops_loop.c); the writer
 * writes it back as the Loop's (frontend/export.c). */
int64_t ir_loop_bound(const struct ir_value *cond, struct ir_value *const *carried,
                      struct ir_value *const *next, int n);
/* Moves the nodes between each loop and its loop_end that are not in its
 * body (a pass may put one there: they read nothing of the body) before
 * the loop, leaving the body alone between the two. */
void ir_loops_together(struct ir_module *m);
/* Does guard a imply guard b: b is NULL, or a is b, or a's defining node
 * is guarded by a guard that implies b (nested Ifs)? */
bool ir_guard_implies(const struct ir_value *a, const struct ir_value *b);
/* The guard a node reading operands in[0..nin) needs: the strongest guard
 * among the producers of those operands (the one implying the others), or
 * NULL when none is guarded. Panics when two are unrelated (no pass may
 * combine values of exclusive branches outside a phi). */
struct ir_value *ir_operand_guard(struct ir_value *const *in, int nin);
/* Marks an unused input/constant value dead. */
void ir_kill_value(struct ir_module *m, struct ir_value *v);
/* Runs the op's inference into out[0..nout). false: message in err. */
bool ir_infer_types(struct ir_module *m, const struct ir_node *n, struct ir_type *out, char *err,
                    size_t errlen);
/* The same, setting the result types of n. */
bool ir_infer_node(struct ir_module *m, struct ir_node *n, char *err, size_t errlen);

struct ir_attr *ir_attr_get(const struct ir_node *n, const char *name);
/* Do a and b have the same op and attribute values (names aside)? */
bool ir_same_attrs(const struct ir_node *a, const struct ir_node *b);
int64_t ir_attr_i(const struct ir_node *n, const char *name);
float ir_attr_f(const struct ir_node *n, const char *name);
const char *ir_attr_s(const struct ir_node *n, const char *name);
const int64_t *ir_attr_ints(const struct ir_node *n, const char *name, int *count);
/* What a slice node reads of its input, in elements of the row-major
 * input: the first element's offset, and per dimension the distance
 * between consecutive elements taken (0 where one or none is taken, so a
 * step of INT64_MAX never multiplies a stride). */
void ir_slice_view(const struct ir_node *n, int64_t *offset, int64_t *strides);
const float *ir_attr_floats(const struct ir_node *n, const char *name, int *count);
enum ir_dtype ir_attr_t(const struct ir_node *n, const char *name);
void ir_set_i(struct ir_module *m, struct ir_node *n, const char *name, int64_t v);
void ir_set_f(struct ir_module *m, struct ir_node *n, const char *name, float v);
void ir_set_s(struct ir_module *m, struct ir_node *n, const char *name, const char *v);
void ir_set_ints(struct ir_module *m, struct ir_node *n, const char *name, const int64_t *v,
                 int count);
void ir_set_floats(struct ir_module *m, struct ir_node *n, const char *name, const float *v,
                   int count);
void ir_set_t(struct ir_module *m, struct ir_node *n, const char *name, enum ir_dtype t);

/* Drops dead values from m->values and renumbers ids densely. */
void ir_compact(struct ir_module *m);

/* XXH64 (seed 0) of n bytes: constants' checksums, name hashing. */
uint64_t ir_checksum(const void *data, size_t n);

/* Where linear_attention node n's optional inputs are (ir/infer.c): their
 * indices in n->in, -1 for those absent. gated and delta say what its
 * update_rule does (gated: decay the state; delta: correct the value). */
struct ir_linattn_inputs {
	int past, decay, beta, erase;
	bool gated, delta;
};
struct ir_linattn_inputs ir_linear_attention_inputs(const struct ir_node *n);

/* A recurrent node's cell (lstm, gru, rnn; ir/infer.c): what its op and
 * attributes say, read once for every layer. The activations are ONNX's,
 * in this order (runtime/onnxc_rt.h's RT_RNN_* follow it). */
enum ir_rnn_act {
	IR_RNN_RELU,
	IR_RNN_TANH,
	IR_RNN_SIGMOID,
	IR_RNN_AFFINE,
	IR_RNN_LEAKY_RELU,
	IR_RNN_THRESHOLDED_RELU,
	IR_RNN_SCALED_TANH,
	IR_RNN_HARD_SIGMOID,
	IR_RNN_ELU,
	IR_RNN_SOFTSIGN,
	IR_RNN_SOFTPLUS,
	IR_RNN_ACT_COUNT
};
/* Each activation's ONNX name and the parameters it takes, with ONNX
 * Runtime's defaults (ONNX leaves them to the ops of the same names). */
struct ir_rnn_act_def {
	const char *name;
	bool alpha, beta;
	float alpha_def, beta_def;
};
extern const struct ir_rnn_act_def ir_rnn_acts[IR_RNN_ACT_COUNT];
struct ir_rnn {
	int gates;     /* G: 4 (lstm: i o f c), 3 (gru: z r h), 1 (rnn) */
	int nact;      /* activations per direction: 3 (f g h), 2 (f g), 1 (f) */
	int dirs;      /* D: 1, or 2 (bidirectional: forward, then reverse) */
	bool reverse;  /* the one direction runs backwards */
	int act[2][3]; /* enum ir_rnn_act, per direction */
	float alpha[2][3], beta[2][3];
};
/* false with a message in err when n's attributes say no valid cell. */
bool ir_rnn_cell(const struct ir_node *n, struct ir_rnn *c, char *err, size_t errlen);

/* Resize's taps (ir/eval_resize.c): output coordinate x of dimension d of
 * resize node n reads inputs at[0..count) with weights w; count 0 where
 * tf_crop_and_resize extrapolates. Returns count (at most 4). */
int ir_resize_taps(const struct ir_node *n, int d, int64_t x, int64_t at[4], double w[4]);
/* Resize's coordinate transformation (ir/eval_resize.c): the source
 * coordinate of output coordinate x along a dimension of in elements
 * resized to out by scale (tf_crop_and_resize: the roi's lo and hi). */
double ir_resize_coord(const char *coord, int64_t x, double scale, int64_t in, int64_t out,
                       double lo, double hi);
/* The input coordinate pad (in mode, its "mode" attribute) reads for
 * padded coordinate i - pads_begin, along a dimension of n elements: i
 * itself inside [0, n), else -1 for constant padding, the nearest end for
 * edge, ONNX's single reflection for reflect (|pads| < n) and i modulo n
 * for wrap (any pads). */
int64_t ir_pad_source(const char *mode, int64_t i, int64_t n);

/*
 * Dropout's random stream (docs/ir.md#dropout), shared by the reference
 * evaluator; the code generator emits the same arithmetic. Element i
 * (row-major) of a dropout node run with seed s is kept when the top 24
 * bits of
 *     ir_mix64(ir_dropout_key(s, salt) + (i + 1) * IR_GOLDEN64)
 * are at least ir_dropout_threshold(ratio): SplitMix64's output i of a
 * stream whose key is SplitMix64's output salt of the seed's stream. A kept
 * element is multiplied by ir_dropout_scale(ratio), a dropped one by 0.
 */
#define IR_GOLDEN64 0x9e3779b97f4a7c15ull
static inline uint64_t ir_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static inline uint64_t ir_dropout_key(uint64_t seed, int64_t salt)
{
	return ir_mix64(seed + ((uint64_t)salt + 1) * IR_GOLDEN64);
}
/* round(ratio * 2^24) for ratio in [0, 1]: 0 keeps everything. */
uint32_t ir_dropout_threshold(float ratio);
/* The float 1 / (1 - ratio); 0 when ratio is 1 (everything dropped). */
float ir_dropout_scale(float ratio);

/* ------------------------------------------------------------------------ */
/* Whole-module services.                                                   */
/* ------------------------------------------------------------------------ */

/* Checks every invariant listed in docs/ir.md; reports each violation through
 * ctx and returns the number found. */
int ir_verify(struct ir_module *m);

/* Text form. */
void ir_print(const struct ir_module *m, FILE *f);
bool ir_ident_char(int c);                          /* [A-Za-z0-9_./-] */
void ir_print_name(const char *s, FILE *f);         /* bare if possible, else quoted */
void ir_format_float(float v, char *buf, size_t n); /* shortest round-trip form */
void ir_format_double(double v, char *buf, size_t n);
/* Parses text (len bytes); NULL after reporting errors through ctx. */
struct ir_module *ir_parse(struct ir_ctx *ctx, const char *text, size_t len);

/*
 * Constant folding: if every input of n is a constant with data and the op can
 * be evaluated, computes its results, turns them into constants (keeping their
 * names and uses) and removes n. Returns 1 if n was folded, 0 if it was left
 * alone (not foldable, or a result larger than max_elems), -1 if evaluation
 * found an error in the constants (message in err: an index out of range, an
 * integer division by zero).
 */
int ir_fold_node(struct ir_module *m, struct ir_node *n, int64_t max_elems, char *err,
                 size_t errlen);
/* What folding n costs: the element visits (multiply-adds for products and
 * convolutions, taps for resize) of its evaluator, saturated at INT64_MAX.
 * The importer's folding budget is counted in these units. */
int64_t ir_fold_work(const struct ir_node *n);
/* Whether n can be folded now: an evaluator, and data for every input. */
bool ir_fold_ready(const struct ir_node *n);
/* Whether op has an evaluator (every op does: fold.c is the reference
 * interpreter the compiled kernels are tested against). */
bool ir_can_fold(enum ir_op op);

/*
 * Reference evaluation. ir_input_to_const turns graph input v into a
 * constant holding a copy of data (v's type, row-major) and drops it from
 * m->inputs; false if v is not a graph input of m. ir_fold_all then folds
 * every node in list order with no size or cost limit and returns the number
 * of nodes left unfolded (those with an input that is not a constant with
 * data, and guarded nodes whose guard is not a constant true), or -1 with a message naming the node in err when evaluation finds an
 * error in the constants or a run-time loop runs too long. A loop whose
 * condition is a constant runs by peeling one iteration at a time in front
 * of it (ir_loop_peel) until the condition is false (ir_loop_exit), copying
 * at most 2^22 body nodes in all. Graph outputs whose nodes folded become
 * constants with data.
 */
bool ir_input_to_const(struct ir_module *m, struct ir_value *v, const void *data);
int ir_fold_all(struct ir_module *m, char *err, size_t errlen);

#define IR_FOR_EACH_NODE(m, n) for (struct ir_node *n = (m)->first; n; n = n->next)

#endif
