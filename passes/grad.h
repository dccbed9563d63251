/*
 * grad.h - what autodiff.c and the gradient rules share (internal to passes/).
 *
 * autodiff.c holds the pass (the path marks, the walk, the rule table that
 * the grad column of ir/ops.h generates) and the helpers every rule builds
 * with; the rules live by op family in grad_*.c, named like ir/eval_*.c:
 * grad_eltwise.c, grad_linear.c, grad_nn.c, grad_norm.c, grad_reduce.c,
 * grad_move.c and grad_resize.c. A rule reads the gradients dy[i] of n's
 * results (NULL where a result has none) and adds gradients to the inputs
 * that want one (ad_wants, ad_contrib); it returns false after reporting a
 * node whose attributes it cannot handle.
 *
 * A rule of a guarded node (a branch of an If whose condition is known only
 * at run time, docs/ir.md, Guards) builds under the node's guard (ad.guard,
 * which ad_node gives every node it makes), so a backward node runs exactly
 * when its forward node did: training differentiates the branch taken.
 * ad_contrib lifts what a branch contributes to a value outside it out of
 * the branch (docs/training.md, Control flow).
 */
#ifndef ONNXC_GRAD_H
#define ONNXC_GRAD_H

#include "autodiff.h"

/* A scalar constant made by the pass. */
struct ad_scalar_entry {
	enum ir_dtype dtype;
	double v;
	struct ir_value *c;
};

struct ad {
	struct ir_module *m;
	const char *prefix;     /* "grad", or "train" for ad_train_mode */
	const char *at;         /* the forward node whose rule runs: names new nodes */
	struct ir_value *guard; /* that node's guard (a branch of a run-time If), which
	                         * every new node takes; NULL outside such a rule */
	int nfwd;               /* values that existed before the pass */
	struct ir_value **grad; /* [nfwd] accumulated gradient, or NULL */
	bool *need;             /* [nfwd] depends on some wrt value */
	bool *live;             /* [nfwd] the loss depends on it */
	/* scalar constants made so far, shared by every rule */
	struct ad_scalar_entry scalars[32];
	int nscalars;
};

typedef bool (*ad_rule)(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

/* Building nodes (autodiff.c, where each is described): each new node goes
 * at the end of the list, named after the forward node whose rule runs, and
 * is typed by inference (ad_fin; a failure is a bug in a rule). */
bool ad_is_float(const struct ir_value *v);
struct ir_node *ad_node(struct ad *a, enum ir_op op, struct ir_value *const *in, int nin, int nout);
struct ir_value *ad_fin(struct ad *a, struct ir_node *n);
struct ir_value *ad_op1(struct ad *a, enum ir_op op, struct ir_value *x);
struct ir_value *ad_op2(struct ad *a, enum ir_op op, struct ir_value *x, struct ir_value *y);
struct ir_value *ad_where(struct ad *a, struct ir_value *c, struct ir_value *x, struct ir_value *y);
struct ir_value *ad_constant(struct ad *a, const struct ir_type *t, const double *vals);
struct ir_value *ad_scalar(struct ad *a, enum ir_dtype dt, double v);
struct ir_value *ad_sc(struct ad *a, const struct ir_value *x, double v);
struct ir_value *ad_reshape(struct ad *a, struct ir_value *x, int rank, const int64_t *dims);
struct ir_value *ad_reshape_to(struct ad *a, struct ir_value *x, const struct ir_type *t);
struct ir_value *ad_transpose(struct ad *a, struct ir_value *x, const int64_t *perm);
struct ir_value *ad_transpose_last(struct ad *a, struct ir_value *x);
struct ir_value *ad_reduce(struct ad *a, enum ir_op op, struct ir_value *x, const int64_t *axes,
                           int naxes, bool keepdims);
struct ir_value *ad_expand(struct ad *a, struct ir_value *x, const struct ir_type *t);
struct ir_value *ad_zeros(struct ad *a, const struct ir_type *t);
struct ir_value *ad_cast(struct ad *a, struct ir_value *x, enum ir_dtype dt);
struct ir_value *ad_slice(struct ad *a, struct ir_value *x, const int64_t *starts,
                          const int64_t *ends, const int64_t *steps);
struct ir_value *ad_crop(struct ad *a, struct ir_value *x, const int64_t *keep);
struct ir_value *ad_pad(struct ad *a, struct ir_value *x, const int64_t *pads);
struct ir_value *ad_unbroadcast(struct ad *a, struct ir_value *g, const struct ir_type *t);
int ad_non_channel_axes(int rank, int64_t *axes);
struct ir_value *ad_channel_view(struct ad *a, struct ir_value *v, int r);
struct ir_value *ad_scatter_add(struct ad *a, const struct ir_type *t, struct ir_value *idx,
                                struct ir_value *u, int64_t axis);
/* n applied again to the gradient d, an op linear in its first input
 * (grad_eltwise.c). */
struct ir_node *ad_again(struct ad *a, const struct ir_node *n, struct ir_value *d);

/* Accumulation (autodiff.c): whether input i of n wants a gradient; adding g
 * to it; refusing a node whose results from `from` on have gradients. */
bool ad_wants(const struct ad *a, const struct ir_node *n, int i);
void ad_contrib(struct ad *a, struct ir_node *n, int i, struct ir_value *g);
/* The guard of v's node (NULL for inputs and constants). */
struct ir_value *ad_guard_of(const struct ir_value *v);
/* g, a rule's result (under a->guard, or its node's guard if stronger),
 * made readable under guard `to`: a phi(G, g, other) for each guard G that
 * `to` does not imply, innermost first; other (unguarded) is zeros of g's
 * type when NULL. */
struct ir_value *ad_lift(struct ad *a, struct ir_value *g, const struct ir_value *to,
                         struct ir_value *other);
bool ad_no_grad_through(struct ad *a, struct ir_node *n, struct ir_value *const *dy, int from);

/* The rules, by family file, named by the grad column of ir/ops.h. */

/* grad_eltwise.c */
bool grad_zero(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_copy(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_cast(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_unary(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_binary(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_again(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_where(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_phi(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

/* grad_linear.c */
bool grad_matmul(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_gemm(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_attention(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

/* grad_nn.c */
bool grad_conv(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_conv_transpose(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_global_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_avg_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_max_pool(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

/* grad_norm.c */
bool grad_layer_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_lrn(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_instance_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_batch_norm(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

/* grad_reduce.c */
bool grad_softmax(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_reduce(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_cumsum(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_cumprod(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_topk(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

/* grad_move.c */
bool grad_reshape(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_transpose(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_expand(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_concat(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_split(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_slice(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_pad(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_depth_space(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_tile(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_gather(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_gather_elements(struct ad *a, struct ir_node *n, struct ir_value *const *dy);
bool grad_scatter_elements(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

/* grad_resize.c */
bool grad_separable(struct ad *a, struct ir_node *n, struct ir_value *const *dy);

#endif
