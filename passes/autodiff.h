/*
 * autodiff.h - reverse-mode automatic differentiation over the IR, for
 * training (docs/training.md).
 *
 * A training step is an ordinary module: the trainable weights are graph
 * inputs, the loss is appended to the forward graph, and ad_gradients()
 * appends the backward graph, made of ordinary IR ops, whose gradient
 * values the caller makes graph outputs. Everything after that (fusion,
 * memory planning, mixed precision, the CPU and CUDA targets) compiles the
 * step unchanged.
 */
#ifndef ONNXC_AUTODIFF_H
#define ONNXC_AUTODIFF_H

#include "ir/ir.h"

/*
 * Appends to m the nodes computing d(seed * loss) / d wrt[i] into grads[i],
 * for i in 0..nwrt.
 *
 *   loss  a float value with exactly one element (any shape).
 *   seed  NULL (the gradient of the loss is 1) or a one-element float value,
 *         typically a graph input holding the loss scale of mixed-precision
 *         training; it multiplies every gradient.
 *   wrt   float values (graph inputs, usually; any value works).
 *   grads receives, per wrt[i], a node result of exactly wrt[i]'s type that
 *         is distinct from every other grads[j], from every wrt and from the
 *         existing graph outputs, so the caller can make each one a graph
 *         output. It is named "grad/<wrt name>". Where the loss does not
 *         depend on wrt[i] it is a zero tensor (a scalar constant expanded,
 *         never a constant of the full size).
 *
 * Only nodes on a path from some wrt to the loss get backward nodes; they are
 * appended at the end of the node list, named "grad/<forward node name>",
 * with values named "grad/<forward node name>/<what>". Integer and bool
 * values carry no gradient. A max_pool on the path without its indices
 * result is replaced by an identical node with one (the backward graph
 * scatters the gradient to the argmax), so the forward computes the same.
 * An lstm, gru or rnn on the path is unrolled into primitive ops first
 * (ad_expand_recurrent): backpropagation through time, exact, with O(T)
 * nodes per layer.
 *
 * Returns false after reporting an error through m->ctx: an invalid loss,
 * seed or wrt; ops on the path without a gradient rule ("node 'X' (op): no
 * gradient for op ..."), every such node reported before anything is built;
 * or a node whose rule cannot handle its attributes (pad in reflect mode,
 * scatter_elements with reduction max, ...), which may leave a partial
 * backward graph (that still verifies).
 */
bool ad_gradients(struct ir_module *m, struct ir_value *loss, struct ir_value *seed,
                  struct ir_value *const *wrt, int nwrt, struct ir_value **grads);

/*
 * Replaces lstm, gru or rnn node n by the primitive ops that compute its
 * results step by step (passes/rnn_expand.c: slices, matmuls, the
 * activations as elementwise ops, where masks for sequence_lens, concat),
 * so that the primitive rules differentiate it through time. The new
 * results, one per result of n, go to results[] and take over n's uses and
 * names; n is removed. ad_gradients calls it for every recurrent node on
 * the path; inference never does (the fused op stays). Returns false after
 * reporting a node whose attributes say no valid cell.
 */
bool ad_expand_recurrent(struct ir_module *m, struct ir_node *n, struct ir_value **results);

/* Whether ad_gradients has a rule for op (ops whose gradient is zero, such as
 * floor or sign, count as having one). */
bool ad_has_rule(enum ir_op op);

/*
 * Rewrites every batch_norm of m (the IR's batch_norm is inference mode: it
 * normalizes with the given statistics) into training mode, as PyTorch's
 * BatchNorm in train(): the mean and the biased variance over the batch and
 * spatial axes normalize the batch, in ordinary IR ops, so autodiff through
 * it falls out of the primitive rules. The running statistics are updated as
 * PyTorch does, with the unbiased batch variance for the running variance:
 *
 *   running_mean' = (1 - momentum) * running_mean + momentum * mean
 *   running_var'  = (1 - momentum) * running_var  + momentum * var * n/(n-1)
 *
 * where n is the number of values per channel (PyTorch's default momentum is
 * 0.1). running[0..nrunning) are the values whose updates the caller wants
 * (batch_norm mean and variance operands, usually constants it then makes
 * graph inputs); updated[i] receives a node result holding running[i]'s
 * update, named "<running name>/updated", from the first batch_norm reading
 * it (as its mean or its variance), or a copy of running[i] when no
 * batch_norm reads it. Returns false after reporting an error: a batch_norm
 * with one value per channel, whose unbiased variance is undefined.
 */
bool ad_train_mode(struct ir_module *m, float momentum, struct ir_value *const *running,
                   int nrunning, struct ir_value **updated);

#endif
