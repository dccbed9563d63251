/*
 * train.h - a forward model turned into a training step (or an evaluation
 * step), as ordinary IR that the rest of the compiler takes unchanged.
 *
 * The step's interface (docs/training.md), in graph order:
 *
 *   inputs   params...      the trainable weights, f32 (FP32 master weights)
 *            state...       non-trainable state the step updates (the
 *                           BatchNorm running statistics), f32
 *            data...        the model's own graph inputs, then the label
 *                           (cross-entropy or MSE), batch first
 *            loss_scale     f32[1] (training step only): the gradients come
 *                           multiplied by it (dynamic loss scaling)
 *            dropout_seed   i64 scalar (training step of a model with
 *                           training-mode Dropout only): draws the masks
 *   outputs  loss           f32[1]: the mean loss over the batch
 *            grads...       d(loss_scale * loss) / d param, one per param,
 *                           f32, the param's shape (training step only)
 *            new state...   the updated running statistics (training only)
 *            outputs...     the model's outputs (evaluation step only)
 *
 * The training step runs BatchNormalization with batch statistics and
 * Dropout with masks drawn from dropout_seed (as PyTorch's train()); the
 * evaluation step runs the model as exported (running statistics, Dropout
 * the identity) and computes the same loss.
 */
#ifndef ONNXC_PASSES_TRAIN_H
#define ONNXC_PASSES_TRAIN_H

#include "ir/ir.h"

enum train_loss { TRAIN_LOSS_CROSS_ENTROPY, TRAIN_LOSS_MSE, TRAIN_LOSS_NONE };

struct train_options {
	enum train_loss loss;
	const char *label; /* the label input's name (NULL: "label") */
	/* The model's initializers (the only values that can be trained). */
	const char *const *initializers;
	int ninitializers;
	/* Trainable: NULL for every float initializer, else these names. */
	const char *const *trainable;
	int ntrainable;
	const char *const *frozen; /* never trained */
	int nfrozen;
	float bn_momentum; /* PyTorch's convention: running = (1-m) running + m batch */
	bool eval;         /* build the evaluation step instead */
};

/* A tensor the step reads from the trainer: its IR input and its initial
 * value (the model's initializer, f32, in m's arena). */
struct train_tensor {
	struct ir_value *input;
	const char *name; /* the ONNX initializer's name */
	const float *init;
	int64_t elems;
};

struct train_step {
	struct train_tensor *params, *state;
	int nparams, nstate;
	struct ir_value **data; /* the data inputs, label last */
	int ndata;
	struct ir_value *loss_scale; /* NULL for the evaluation step */
	struct ir_value *seed;       /* dropout_seed, or NULL: no Dropout in training */
	int ndropout;                /* the model's training-mode Dropouts */
	struct ir_value *loss;
	int nmodel_outputs; /* evaluation step: the model's outputs after the loss */
};

/* Rewrites m (an imported forward model, before the code generation
 * pipeline) into the step. false after diagnostics naming the model's nodes
 * and names. */
bool train_build(struct ir_module *m, const struct train_options *o, struct train_step *s);

#endif
