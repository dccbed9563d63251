/*
 * onnxc_train.h - the training runtime: turns a compiled training step into
 * training (docs/training.md).
 *
 * `onnxc train` compiles the training STEP as an ordinary model library (the
 * API of docs/api.md) whose inputs and outputs follow one contract:
 *
 *   inputs:  params[P] (f32), state[S] (f32), data[D] (graph dtypes, the
 *            batch on the first axis), loss_scale (f32, 1 element), and
 *            with training-mode Dropout the dropout seed (int64 scalar)
 *   outputs: loss (f32, 1 element), grad(params)[P] * loss_scale (f32, the
 *            params' shapes), new state[S]
 *
 * and, optionally, an EVAL model: inputs params, state, data; outputs the
 * loss, then the model's own outputs. It describes both in a const struct
 * rt_train_model (NAME_train.c); everything else is here and generic: FP32
 * master weights and the optimizers (PyTorch's SGD, SGD with momentum,
 * AdamW), dynamic loss scaling (torch.cuda.amp.GradScaler's rule),
 * checkpoints, .npy data sets shuffled by a seeded RNG, ONNX export and the
 * `train` program (rt_train_main).
 *
 * No global state: everything hangs off a struct rt_trainer. Functions
 * return RT_TRAIN_OK (0) or a status; rt_train_error() then says what went
 * wrong, naming the file or tensor. Plain C11, libc, libm and pthreads.
 */
#ifndef ONNXC_TRAIN_H
#define ONNXC_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. Stable: never renumbered. */
enum rt_train_status {
	RT_TRAIN_OK = 0,
	RT_TRAIN_ERR_ARGUMENT = 1,   /* a NULL pointer, a bad configuration or option */
	RT_TRAIN_ERR_NO_MEMORY = 2,  /* an allocation failed */
	RT_TRAIN_ERR_MODEL = 3,      /* the step or eval model failed to create or run */
	RT_TRAIN_ERR_IO = 4,         /* a file cannot be opened, read or written */
	RT_TRAIN_ERR_CHECKPOINT = 5, /* not a checkpoint, truncated, corrupt or not matching */
	RT_TRAIN_ERR_FOREIGN = 6,    /* a checkpoint of another model */
	RT_TRAIN_ERR_DATA = 7,       /* a data file is missing, malformed or does not fit */
	RT_TRAIN_ERR_NONFINITE = 8,  /* non-finite gradients: loss scaling off, or at
	                                every scale down to RT_TRAIN_MIN_LOSS_SCALE */
	RT_TRAIN_ERR_NO_EVAL = 9,    /* eval requested but the model has no eval step */
	RT_TRAIN_ERR_COMM = 10,      /* data-parallel ranks disagree, or a collective failed */
	RT_TRAIN_STATUS_COUNT
};

/* A message for a status code (static storage). */
const char *rt_train_strerror(int status);

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

enum rt_train_optimizer {
	RT_TRAIN_OPT_NONE = 0, /* only in initial-weights files */
	RT_TRAIN_SGD = 1,      /* torch.optim.SGD(lr, weight_decay) */
	RT_TRAIN_MOMENTUM = 2, /* torch.optim.SGD(lr, momentum, weight_decay), dampening 0 */
	RT_TRAIN_ADAMW = 3,    /* torch.optim.AdamW(lr, betas, eps, weight_decay) */
};

/* The loss scale stays in [MIN, MAX]. Below 2^-24 the scaled loss of a
 * loss of 1 is under FP16's smallest subnormal and the scale cannot help
 * any more: a step whose gradients are still not finite there, rather than
 * backing off below the floor, is RT_TRAIN_ERR_NONFINITE (the scale is
 * left at its last value, so the trainer's state - and a checkpoint of it -
 * stays valid). MAX keeps the scale a finite float. */
#define RT_TRAIN_MIN_LOSS_SCALE 5.9604644775390625e-08 /* 2^-24 */
#define RT_TRAIN_MAX_LOSS_SCALE 3.0e38

struct rt_train_config {
	int optimizer;           /* enum rt_train_optimizer */
	double lr;               /* learning rate */
	double momentum;         /* RT_TRAIN_MOMENTUM */
	double beta1, beta2;     /* RT_TRAIN_ADAMW */
	double eps;              /* RT_TRAIN_ADAMW */
	double weight_decay;     /* SGD: added to the gradient; AdamW: decoupled */
	int loss_scaling;        /* 1: dynamic loss scaling; 0: the scale stays 1 */
	double init_scale;       /* the first loss scale (2^16) */
	double growth;           /* the scale's factor after growth_interval good steps (2) */
	double backoff;          /* the scale's factor on a non-finite gradient (0.5; < 1) */
	int64_t growth_interval; /* good steps before growing (2000) */
	uint64_t seed;           /* the seed of the data order and the dropout masks */
	int shuffle;             /* 1: each epoch in an order shuffled by the seed; 0: the
	                            files' order (data already shuffled, or comparing runs) */
};

/* The defaults: SGD, lr 0.01, momentum 0.9, betas 0.9/0.999, eps 1e-8, no
 * weight decay, loss scaling off (2^16, x2 after 2000 good steps, x0.5),
 * seed 0. */
void rt_train_config_default(struct rt_train_config *cfg);
/* Parses "sgd", "momentum", "adamw"; 0 for anything else. */
int rt_train_optimizer_parse(const char *name);
const char *rt_train_optimizer_name(int optimizer);

/* ------------------------------------------------------------------------ */
/* The model description (what NAME_train.c fills in)                       */
/* ------------------------------------------------------------------------ */

/* One tensor of the contract. */
struct rt_train_tensor {
	const char *name;    /* params, state: the ONNX initializer's name; data: the graph
	                        input's; eval outputs: the graph output's */
	int dtype;           /* ONNX TensorProto code: 1 (float32) for params and state */
	int rank;            /* number of dims */
	const int64_t *dims; /* params, state, eval outputs: the shape; data: ONE SAMPLE's
	                        shape (the batch axis left out) */
	int64_t elems;       /* the product of dims */
};

/* The values an integer data input may hold: lo <= v < hi, or v == ignore
 * where has_ignore (a loss's ignore_index). The trainer checks them before
 * every step and eval step, and rt_train_data_open over the whole files, so
 * an out-of-range class label or index is an error naming the file, the
 * sample and the value instead of a plausible loss (PyTorch raises too). */
struct rt_train_range {
	int data;         /* the data input: an index into model->data (int32 or int64) */
	int64_t lo, hi;   /* class labels: [0, classes); indices: ONNX's [-dim, dim) */
	int has_ignore;   /* 1: ignore is valid too */
	int64_t ignore;   /* the value the loss skips */
	const char *what; /* the values in messages ("class label", "node 'N': index") */
};

/* A compiled model's API with the instance as void * (NAME_train.c wraps
 * NAME_create and friends in these signatures; do not cast the functions). */
typedef int (*rt_train_create_fn)(void **instance, const char *weights_path);
typedef int (*rt_train_run_fn)(void *instance, const void *const inputs[], void *const outputs[]);
typedef void (*rt_train_destroy_fn)(void *instance);
typedef const char *(*rt_train_strerror_fn)(int status);
/* NAME_set_output_hook's hook (onnxc_rt.h's rt_output_hook_fn, docs/api.md). */
typedef int (*rt_train_output_hook_fn)(void *ctx, void *const outputs[], const size_t bytes[],
                                       int n, void *stream);

struct rt_train_model {
	const char *name;  /* the model's name (messages, the .init file's name) */
	uint64_t model_id; /* carried by checkpoints: a hash of the step and its tensors */
	/* the training step (required) */
	rt_train_create_fn step_create;
	rt_train_run_fn step_run;
	rt_train_destroy_fn step_destroy;
	rt_train_strerror_fn step_strerror;
	/* NAME_set_output_hook of the step (NULL: none): where the outputs are
	 * device memory, data parallelism reduces them there */
	int (*step_set_output_hook)(void *instance, rt_train_output_hook_fn fn, void *ctx);
	/* the eval model (all NULL: none) */
	rt_train_create_fn eval_create;
	rt_train_run_fn eval_run;
	rt_train_destroy_fn eval_destroy;
	rt_train_strerror_fn eval_strerror;
	/* the contract's tensors, in input order */
	int num_params;
	const struct rt_train_tensor *params;
	int num_state;
	const struct rt_train_tensor *state;
	int num_data;
	const struct rt_train_tensor *data; /* per-sample shapes */
	int64_t batch;                      /* the compiled batch size */
	int dropout;          /* 1: the step takes the dropout seed after loss_scale, drawn
	                by the trainer for each step from the seed and the step
	                count (docs/training.md#dropout) */
	int num_eval_outputs; /* the eval model's outputs after the loss */
	const struct rt_train_tensor *eval_outputs;
	/* the ranges of integer data inputs (class labels, indices) */
	int num_ranges;
	const struct rt_train_range *ranges;
	/* the ONNX model with the params' and state's initializers removed (NULL,
	 * 0: no export) */
	const unsigned char *onnx_template;
	size_t onnx_template_bytes;
	/* the defaults `onnxc train` was given (optimizer 0: those of
	 * rt_train_config_default); the train program's options override them */
	struct rt_train_config defaults;
};

/* ------------------------------------------------------------------------ */
/* The trainer                                                              */
/* ------------------------------------------------------------------------ */

struct rt_trainer;

/*
 * Creates a trainer: validates cfg, creates the step model instance with
 * step_weights and the eval model's with eval_weights (NULL: each model's
 * default, its NAME.weights next to the program; see docs/api.md),
 * allocates the master weights (zero until rt_train_load_weights or
 * rt_train_load), the gradients and the optimizer state, and seeds the RNG.
 * Like sqlite3_open, *out is set whenever the trainer could be allocated,
 * also on failure, so rt_train_error() can say why; destroy it either way.
 */
int rt_train_create(struct rt_trainer **out, const struct rt_train_model *model,
                    const struct rt_train_config *cfg, const char *step_weights,
                    const char *eval_weights);
void rt_train_destroy(struct rt_trainer *t);

/* The last failure's message (never NULL; "" when none). */
const char *rt_train_error(const struct rt_trainer *t);

/* The trainer's configuration; set_config changes the hyper-parameters (not
 * the optimizer kind once a step has been taken). */
void rt_train_get_config(const struct rt_trainer *t, struct rt_train_config *cfg);
int rt_train_set_config(struct rt_trainer *t, const struct rt_train_config *cfg);

/* Where training stands. */
struct rt_train_progress {
	int64_t step;       /* steps taken (batches consumed, skipped ones included) */
	int64_t opt_step;   /* optimizer updates applied (AdamW's t) */
	int64_t skipped;    /* steps skipped for non-finite gradients */
	int64_t epoch;      /* completed passes over the data (rt_train_step_data) */
	int64_t epoch_pos;  /* batches taken in the current epoch */
	double loss_scale;  /* the scale the next step uses */
	int64_t good_steps; /* consecutive finite steps since the scale last changed */
};
void rt_train_get_progress(const struct rt_trainer *t, struct rt_train_progress *p);

/* The FP32 master weights and state, in the model's order (read-write). */
float *rt_train_param(struct rt_trainer *t, int i);
float *rt_train_state(struct rt_trainer *t, int i);

/* One step's outcome. */
struct rt_train_result {
	float loss;        /* the step model's loss */
	int skipped;       /* 1: non-finite gradients, no update (the scale backed off) */
	double loss_scale; /* the scale this step ran with */
};

/*
 * One training step on a batch: batch[i] points to data input i's
 * model->batch samples (dense, its dtype). Runs the step model, then, when
 * every gradient is finite, unscales and applies the optimizer; otherwise
 * skips the update and backs the scale off. The new state is taken either
 * way (as a PyTorch forward pass updates BatchNorm's running statistics).
 * A non-finite gradient with loss scaling off, or when backing off would
 * take the scale below RT_TRAIN_MIN_LOSS_SCALE, is RT_TRAIN_ERR_NONFINITE:
 * the step is counted as skipped, the weights and the scale are unchanged,
 * and the trainer can be saved and resumed as after any step.
 */
int rt_train_step(struct rt_trainer *t, const void *const batch[], struct rt_train_result *r);

/*
 * The eval model on a batch: *loss and, where outputs is not NULL, the
 * model's outputs (outputs[i] sized as model->eval_outputs[i]; NULL entries
 * are discarded). RT_TRAIN_ERR_NO_EVAL without an eval model.
 */
int rt_train_eval_step(struct rt_trainer *t, const void *const batch[], float *loss,
                       void *const outputs[]);

/* Initial weights: params and state from a checkpoint of this model (the
 * counters, the optimizer state and the RNG stay as they are). */
int rt_train_load_weights(struct rt_trainer *t, const char *path);
/* Resuming: everything from a checkpoint (weights, optimizer state and
 * kind, hyper-parameters, step, epoch and position, loss scale, RNG). */
int rt_train_load(struct rt_trainer *t, const char *path);
/* Writes a checkpoint atomically (a temporary file in the same folder,
 * fsync, rename, fsync of the folder). */
int rt_train_save(struct rt_trainer *t, const char *path);
/* Writes the trained model as ONNX: the model's template followed by the
 * params and state as float initializers (atomically). */
int rt_train_export_onnx(struct rt_trainer *t, const char *path);

/* ------------------------------------------------------------------------ */
/* Data sets                                                                */
/* ------------------------------------------------------------------------ */

struct rt_train_data;

/*
 * Opens DIR/FILE.npy for every data input, FILE being the input's name
 * mapped by rt_train_data_file_name. Every array must hold one sample shape
 * equal to the input's per-sample dims, the same sample count, and the
 * input's dtype or a convertible one (float64 -> float32, int32 <-> int64).
 * Errors are the trainer's (rt_train_error).
 */
int rt_train_data_open(struct rt_trainer *t, const char *dir, struct rt_train_data **out);
void rt_train_data_close(struct rt_train_data *d);
int64_t rt_train_data_samples(const struct rt_train_data *d);
/* The file name for a graph input's name: every byte outside [A-Za-z0-9._-]
 * becomes '_', a leading '.' too, then ".npy". Returns the full length, as
 * snprintf does (the name is cut to fit size). */
size_t rt_train_data_file_name(const char *input_name, char *buf, size_t size);

/*
 * The next batch from d: an epoch visits the samples in an order shuffled
 * (Fisher-Yates) by the trainer's RNG, in batches of model->batch; the
 * last partial batch is dropped. Then rt_train_step. Resumes exactly after
 * rt_train_load (the checkpoint holds the RNG state of the epoch's start).
 */
int rt_train_step_data(struct rt_trainer *t, struct rt_train_data *d, struct rt_train_result *r);
/* The eval model over every full batch of d in file order: the mean loss. */
int rt_train_eval_data(struct rt_trainer *t, struct rt_train_data *d, double *mean_loss);
/* Full batches per epoch. */
int64_t rt_train_data_batches(const struct rt_trainer *t, const struct rt_train_data *d);

/* ------------------------------------------------------------------------ */
/* The train program                                                        */
/* ------------------------------------------------------------------------ */

/* `train --data DIR (--steps N | --epochs E) ...` (docs/training.md): the
 * whole program; returns its exit status (0, 1 on an error, 2 on a usage
 * error). NAME_train's main is `return rt_train_main(&NAME_train_model, argc, argv);`. */
int rt_train_main(const struct rt_train_model *model, int argc, char **argv);

/* ------------------------------------------------------------------------ */
/* Data parallelism (docs/training.md#data-parallel-training)               */
/* ------------------------------------------------------------------------ */

/*
 * The processes that train together: each runs the step on its share of a
 * global batch of size * model->batch samples (rank r the r-th share), the
 * loss and the gradients are summed over the ranks and divided by size, and
 * every rank applies the same update (rt_train.c says exactly what is
 * reduced). The trainer knows no transport: rt_train_main_mpi fills this in
 * over MPI. NULL, or size 1, is one process.
 */
struct rt_train_comm {
	int rank, size;
	const char *name; /* the transport, for messages ("MPI") */
	void *ctx;        /* the transport's own */
	/* sums x[0..n) over the ranks, in place, the same on every rank; 0 on
	 * success */
	int (*sum_f32)(void *ctx, float *x, int64_t n);
	/* the smallest and the largest of v over the ranks; 0 on success */
	int (*min_max_u64)(void *ctx, uint64_t v, uint64_t *min, uint64_t *max);
	/* Where the transport reduces device memory (NCCL), on a stream (a
	 * cudaStream_t): the step's outputs are reduced on the device, through
	 * the step's output hook, before they are copied back - the same sums as
	 * on the host. dev_sum_f32 sums n floats at x in place; dev_bcast_f32
	 * gives every rank root's n floats at x; dev_group(ctx, 0) and
	 * dev_group(ctx, 1) bracket the calls of one step (one launch). All
	 * NULL: the sums are sum_f32's, on the host. 0 on success. */
	int (*dev_sum_f32)(void *ctx, void *x, int64_t n, void *stream);
	int (*dev_bcast_f32)(void *ctx, void *x, int64_t n, int root, void *stream);
	int (*dev_group)(void *ctx, int end);
};
/* Makes t rank c->rank of c->size (before its first step; c must outlive
 * t). The data's epochs are then in global batches (rt_train_data_batches),
 * checkpoints hold the global batch, and rt_train_load resumes a checkpoint
 * of another rank count at the same sample of its epoch. */
int rt_train_set_comm(struct rt_trainer *t, const struct rt_train_comm *c);
/* RT_TRAIN_OK when v is the same on every rank (a collective: every rank
 * calls it), else RT_TRAIN_ERR_COMM naming what. */
int rt_train_agree(struct rt_trainer *t, const char *what, uint64_t v);
/* FNV-1a of the weights, the state, the optimizer's moments, the counters,
 * the loss scale and the RNG: the same on every rank of a run. */
uint64_t rt_train_hash(const struct rt_trainer *t);

/* rt_train_main as one rank of c (NULL: one process): rank 0 alone prints,
 * logs, checkpoints, evaluates and exports; every rank reads the data, the
 * initial weights and a resumed checkpoint (a shared file system), which
 * must agree. A nonzero status on any rank must end every rank: the others
 * may be waiting in a collective (rt_train_main_mpi calls MPI_Abort). */
int rt_train_main_comm(const struct rt_train_model *model, const struct rt_train_comm *c, int argc,
                       char **argv);
/* In libonnxc_rt_mpi.a, where onnxc was built with MPI: under an MPI
 * launcher (mpirun or srun: OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE or
 * SLURM_STEP_NUM_TASKS set) rt_train_main_comm over MPI_COMM_WORLD, else
 * rt_train_main without initializing MPI. */
int rt_train_main_mpi(const struct rt_train_model *model, int argc, char **argv);
/* In libonnxc_rt_nccl.a, where onnxc was built with MPI, CUDA and NCCL: the
 * same for a CUDA-target step, each rank on its machine's next GPU, the
 * step's outputs reduced on the device by NCCL (struct rt_train_comm's
 * dev_* functions, through the step's output hook), MPI for the rest. */
int rt_train_main_nccl(const struct rt_train_model *model, int argc, char **argv);

/* ------------------------------------------------------------------------ */
/* Checkpoint files (docs/training.md#checkpoint-format)                    */
/* ------------------------------------------------------------------------ */

/*
 * runtime/rt_train_ckpt.c is self-contained (libc and this header): the
 * compiler compiles or links it to write NAME.init, a checkpoint at step 0
 * with optimizer RT_TRAIN_OPT_NONE, the params and the state.
 */

/* The counters and settings a checkpoint carries. */
struct rt_train_ckpt_meta {
	uint64_t step, opt_step, skipped, epoch, epoch_pos;
	uint64_t data_samples; /* the sample count the epoch's order was drawn for (0: none) */
	uint64_t rng[4];       /* xoshiro256** state at the start of the current epoch */
	double loss_scale;
	uint64_t good_steps;
	struct rt_train_config cfg;
	uint64_t batch;
};

struct rt_train_ckpt_tensor {
	const char *name;
	int rank;
	const int64_t *dims;
	int64_t elems;
	const float *data;
};

struct rt_train_ckpt {
	uint64_t model_id;
	struct rt_train_ckpt_meta meta;
	int num_params;
	const struct rt_train_ckpt_tensor *params;
	int num_state;
	const struct rt_train_ckpt_tensor *state;
	/* per param: the optimizer's moments (NULL: no such section). Momentum
	 * has mom1 (the buffer), AdamW mom1 and mom2 (exp_avg, exp_avg_sq). */
	const float *const *mom1;
	const float *const *mom2;
};

/* Writes ck to path atomically; on failure returns a status and a message
 * in err (may be NULL). */
int rt_train_ckpt_write(const char *path, const struct rt_train_ckpt *ck, char *err,
                        size_t err_size);

/*
 * Reads and checks a checkpoint: magic, version, sizes, checksum, model_id
 * (RT_TRAIN_ERR_FOREIGN) and, when expect is not NULL, that its params and
 * state have expect's names and shapes. On success *out points into *buf,
 * which the caller frees (free()); ck's tensor arrays are in buf too.
 */
int rt_train_ckpt_read(const char *path, uint64_t model_id, const struct rt_train_model *expect,
                       struct rt_train_ckpt *out, void **buf, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
