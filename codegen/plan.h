/*
 * plan.h - the kernel plan: what lower.c produces and the rest of codegen
 * consumes. Internal to codegen/.
 *
 * A plan is a list of steps over tensors (IR values). Each step either calls
 * a runtime library kernel with a descriptor (struct rt_*_desc from
 * onnxc_rt.h, filled here at compile time) or runs a generated kernel. Each
 * tensor has a storage (struct cg_buf) assigned by the memory planner;
 * reshapes do not get storage of their own, they alias their source.
 */
#ifndef ONNXC_PLAN_H
#define ONNXC_PLAN_H

#include "cg.h"
#include "runtime/onnxc_rt.h"

/* ------------------------------------------------------------------------ */
/* Generated (fused elementwise) kernels                                    */
/* ------------------------------------------------------------------------ */

/* How a kernel reads one of its arguments: element offset + strides per
 * dimension of the kernel's index space (0 where broadcast). */
struct cg_view {
	int64_t offset;
	int64_t strides[IR_MAX_RANK];
};

enum cg_kx_kind { KX_LOAD, KX_CONST, KX_OP };

/* One node of a kernel's per-element expression DAG (operands come first). */
struct cg_kx {
	enum cg_kx_kind kind;
	enum ir_dtype dtype; /* the value's dtype */
	/* KX_OP */
	const struct ir_node *node; /* op and attributes */
	int in[3], nin;             /* operand expression indices */
	/* KX_LOAD */
	int arg;
	struct cg_view view;
	/* KX_CONST: the value in the representation of its dtype */
	double f;
	int64_t i;
};

/*
 * The most ops (KX_OP expressions) one generated kernel computes. A longer
 * fused chain becomes a chain of kernels, each storing its result for the
 * next (lower.c). LLVM's time on one kernel grows faster than its size (a
 * chain of 1,000 Sigmoids as one kernel took seconds, 4,000 minutes), while
 * kernels of this size cost it a fraction of a millisecond per op; no model
 * of the zoo comes near it, so their kernels are whole.
 */
#define CG_MAX_KERNEL_OPS 64

struct cg_kernel {
	int id;   /* function NAME_k<id> */
	int code; /* the function that runs it: NAME_k<code> (cg_share_kernels) */
	int rank; /* index space, dims collapsed */
	int64_t dims[IR_MAX_RANK];
	struct cg_kx *x;
	int nx, cap_x;
	int nout;               /* outputs are args 0..nout-1, dense */
	int out_x[8];           /* the expression each output stores */
	struct ir_value **args; /* outputs, then inputs */
	int nargs, cap_args;
};

/* ------------------------------------------------------------------------ */
/* Steps                                                                    */
/* ------------------------------------------------------------------------ */

/* The runtime library calls, from the rows of libcalls.h. */
enum cg_lib {
#define CG_LIB(id, ...) CG_LIB_##id,
#include "libcalls.h"
	CG_LIB_COUNT
};

/* A row's desc column: D(m) declares union cg_desc's member m (a struct
 * rt_<m>_desc), AS(m) uses the member another row declares. */
#define CG_MEMBER_D(m)  m
#define CG_MEMBER_AS(m) m
#define CG_UNION_D(m)   struct rt_##m##_desc m;
#define CG_UNION_AS(m)
#define CG_UNPAREN(...) __VA_ARGS__
#define CG_STR(x)       #x
#define CG_XSTR(x)      CG_STR(x)

struct cg_stage {
	int arg;           /* index into args */
	int64_t ws_offset; /* of the FP32 copy, from the step's workspace */
	int64_t elems;
};

union cg_desc {
#define CG_LIB(id, desc, ...) CG_UNION_##desc
#include "libcalls.h"
};

struct cg_step {
	bool is_kernel;
	const struct ir_node *node; /* the node it stands for (names, comments) */
	/* its node's guard (docs/ir.md, Guards), NULL: always runs. Every node
	 * a step covers has the same guard (fusion, epilogues and output casts
	 * never join nodes of different guards); the step runs when its guard
	 * and those of the guards' own nodes, outermost first, are true. */
	struct ir_value *guard;
	const char *covers; /* the ONNX node names it covers */
	/* library steps */
	enum cg_lib lib;
	union cg_desc d;
	/* The call's tensors in the kernel's order, NULL where absent. Outputs
	 * are args[0..nout). A COPY step with several pieces (concat, split)
	 * has one descriptor per piece in copies[] and, for piece i, reads
	 * args[nout + i] into args[0] (concat) or args[nout] into args[i]
	 * (split). */
	struct ir_value **args;
	int nargs, nout;
	struct rt_copy_desc *copies;
	int ncopies;
	bool split;
	int64_t ws_bytes; /* workspace, planned in the arena (-1: too big to plan) */
	int64_t ws_offset;
	/* Half tensors a library kernel reads or writes: the CPU kernels
	 * compute in FP32, so the step converts them through FP32 copies in
	 * its workspace (the GPU libraries read and write half directly) */
	struct cg_stage *stages;
	int nstages;
	/* kernel steps */
	struct cg_kernel *k;
	int64_t outer, inner; /* iteration split for rt_launch */
};

/* ------------------------------------------------------------------------ */
/* Storage                                                                  */
/* ------------------------------------------------------------------------ */

enum cg_where { CG_NOWHERE, CG_INPUT, CG_OUTPUT, CG_WEIGHT, CG_ARENA };

struct cg_buf {
	enum cg_where where;
	int index;      /* CG_INPUT / CG_OUTPUT: which */
	int64_t offset; /* CG_WEIGHT / CG_ARENA: bytes */
};

/* Per IR value (indexed by value id). */
struct cg_val {
	struct ir_value *alias_of; /* a reshape aliases its source's storage */
	struct cg_buf buf;
	int first, last;             /* steps defining and last reading it */
	bool needed;                 /* read by some step or an output */
	struct ir_value *inplace_of; /* shares the block of this dying input */
};

/* A run-time loop (docs/ir.md, Loops): steps [open, close) run in a loop
 * while the bool at token holds; the steps before open that lower the loop
 * node and its carries set the token and the carried values first. A
 * part of NAME.c (emit_c.c) never splits a loop. */
struct cg_loop {
	struct ir_value *token;
	int open, close;
};

struct cg_plan {
	struct ir_module *m;
	const struct cg_options *opt;
	/* what runs the plan; cg_lower sets it from opt->target when a plan
	 * made by hand (the tests) leaves it NULL */
	const struct cg_target *target;
	struct ir_arena *arena; /* the module's arena */
	struct cg_step *steps;
	int nsteps, cap_steps;
	struct cg_kernel **kernels;
	int nkernels, cap_kernels;
	struct cg_loop *loops; /* in the order they open */
	int nloops, cap_loops;
	struct cg_val *vals; /* by value id */
	int64_t arena_bytes, naive_bytes, weight_bytes;
	int cast_kernels, casts_fused; /* cg_stats */
	int64_t plan_work; /* placed blocks the memory planner looked at (tests bound it) */
	uint64_t model_id;
	size_t kernel_bytes; /* the generated kernels' code NAME.c embeds (CUDA: the PTX) */
};

/* lower.c */
bool cg_lower(struct cg_plan *p);
/* The ydtype of a computing step's descriptor (0 for the others). */
int cg_step_ydtype(const struct cg_step *s);
/* Does load x read its argument densely, element for element like the
 * kernel's output (dimensions of extent 1 read any stride)? */
bool cg_dense_view(const struct cg_kernel *k, const struct cg_kx *x);
/* Is op's result an alias of its input (the lower column's view: reshape,
 * bitcast)? */
bool cg_is_view(enum ir_op op);
/* The storage root of v (following view aliases). */
struct ir_value *cg_root(const struct cg_plan *p, struct ir_value *v);

/* lower.c, after the memory plan: a kernel that would compile to the same
 * function as an earlier one (same index space, expressions, views and
 * in-place inputs) runs the earlier one's code (its code field). */
void cg_share_kernels(struct cg_plan *p);
/* The output whose storage argument a of k shares (in place), or -1. */
int cg_inplace_output(const struct cg_plan *p, const struct cg_kernel *k, int a);

/* The guards step s runs under, outermost first, into g (at most
 * CG_MAX_GUARDS); returns how many. */
#define CG_MAX_GUARDS 64
int cg_step_guards(const struct cg_step *s, struct ir_value **g);

/* memplan.c */
bool cg_plan_memory(struct cg_plan *p);
/* Checks that no two tensors alive at once overlap in the arena; returns
 * the number of conflicts (reported). */
int cg_check_memory(const struct cg_plan *p);

/* llvm.c: writes path (an object file for the CPU target). */
bool cg_llvm_emit(const struct cg_plan *p, const char *path, const char *ll_path);

/* emit_c.c: NAME.h, and NAME.c in the frame of p->target's emit_source */
bool cg_emit_header(const struct cg_plan *p, const char *path);
bool cg_emit_source(const struct cg_plan *p, const char *path);

/* weights.c */
bool cg_write_weights(const struct cg_plan *p, const char *path);
unsigned char *cg_weights_image(const struct cg_plan *p, size_t *size);
void cg_model_id(struct cg_plan *p);

/* llvm.c, the CUDA target: the kernels as PTX for arch (sm_80 ...), in the
 * module's arena, NUL-terminated (*size excludes the NUL). */
bool cg_llvm_emit_ptx(const struct cg_plan *p, const char *arch, char **ptx, size_t *size,
                      const char *ll_path);

/* llvm.c: an object defining `const unsigned char symbol[]` holding data. */
bool cg_llvm_emit_blob(const struct cg_plan *p, const char *path, const char *symbol,
                       const void *data, size_t size);

/* build.c */
bool cg_exists(const char *path);
/* The library file beside the runtime library rtlib (libonnxc_rt.a): the
 * CUDA, MPI and NCCL runtimes sit in its folder, built or installed. */
char *cg_runtime_sibling(struct ir_arena *a, const char *rtlib, const char *file);
bool cg_build(const struct cg_plan *p, const char *const *objects, int nobjects);
/* An object in OUTDIR defining symbol as the bytes of file (a file in
 * OUTDIR), 64-byte aligned, made by the assembler's .incbin: the bytes go
 * from file to object with nothing in memory (--embed-weights). */
bool cg_embed_file(const struct cg_plan *p, const char *object, const char *symbol,
                   const char *file);

#endif
