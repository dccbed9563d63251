/*
 * eval.h - what the files of the reference interpreter share (internal).
 *
 * The interpreter is one evaluator per op family, spread over fold.c (the
 * driver and elementwise ops), eval_move.c (data movement), eval_reduce.c
 * (reductions and the softmax family), eval_linear.c (matmul, gemm),
 * eval_nn.c (convolutions and pooling), eval_norm.c (normalizations),
 * eval_rnn.c (LSTM, GRU and RNN) and eval_resize.c. An evaluator
 * reads the node's constant inputs and writes its results into buffers the
 * driver allocated, zeroed, in the results' dtypes. It computes floats in
 * double and rounds once on store, integers in int64; it returns false with
 * a message in err when the constants are invalid for the op.
 *
 * Index helpers work on row-major tensors: strides are counted in elements
 * and a multi-index is an array of int64 with one entry per dimension.
 */
#ifndef ONNXC_EVAL_H
#define ONNXC_EVAL_H

#include "ir.h"

#include <stdio.h>
#include <string.h>

struct fold {
	struct ir_module *m; /* for scratch memory */
	struct ir_node *n;
	void **out; /* output buffers, typed as the node's results */
	char *err;
	size_t errlen;
};

typedef bool (*eval_fn)(struct fold *f);

#define IN(i)  (f->n->in[i])
#define OUT(i) (f->n->out[i])
#define FAIL(...)                                         \
	do {                                              \
		snprintf(f->err, f->errlen, __VA_ARGS__); \
		return false;                             \
	} while (0)

static inline bool isf(enum ir_dtype t) { return ir_dtypes[t].is_float; }
static inline size_t esize(const struct ir_value *v)
{
	return (size_t)ir_dtype_size(v->type.dtype);
}
static inline int64_t nelems(const struct ir_value *v) { return ir_type_elems(&v->type); }

/* Element i of a constant, or of result k, in the common representations. */
static inline double getf(const struct ir_value *v, int64_t i)
{
	return ir_load_f64(v->type.dtype, v->data, (size_t)i);
}
static inline int64_t geti(const struct ir_value *v, int64_t i)
{
	return ir_load_i64(v->type.dtype, v->data, (size_t)i);
}
static inline void putf(struct fold *f, int k, int64_t i, double x)
{
	ir_store_f64(OUT(k)->type.dtype, f->out[k], (size_t)i, x);
}
static inline void puti(struct fold *f, int k, int64_t i, int64_t x)
{
	ir_store_i64(OUT(k)->type.dtype, f->out[k], (size_t)i, x);
}
/* Copies element src of input i to element dst of result 0, bit for bit. */
static inline void copy_elem(struct fold *f, int i, int64_t dst, int64_t src)
{
	size_t es = esize(IN(i));
	memcpy((char *)f->out[0] + (size_t)dst * es, (const char *)IN(i)->data + (size_t)src * es,
	       es);
}

/* Compares elements a and b of v: <0, 0, >0; integers exactly (u64 too),
 * and a NaN compares equal to everything. */
static inline int eval_cmp(const struct ir_value *v, int64_t a, int64_t b)
{
	enum ir_dtype t = v->type.dtype;
	if (isf(t)) {
		double x = getf(v, a), y = getf(v, b);
		return (x > y) - (x < y);
	}
	if (t == IR_U64) {
		uint64_t x = ((const uint64_t *)v->data)[a], y = ((const uint64_t *)v->data)[b];
		return (x > y) - (x < y);
	}
	int64_t x = geti(v, a), y = geti(v, b);
	return (x > y) - (x < y);
}

/* Row-major strides of a type, in elements. */
void eval_strides(const struct ir_type *t, int64_t *strides);
/* The strides of t aligned to o's rank for numpy broadcasting: zero where t
 * is broadcast. */
void eval_bcast_strides(const struct ir_type *t, const struct ir_type *o, int64_t *strides);
/* Advances a multi-index over dims; returns false after the last one. */
bool eval_next(int64_t *idx, const int64_t *dims, int rank);
/* The multi-index of row-major offset k over dims. */
void eval_unflatten(int64_t k, const int64_t *dims, int rank, int64_t *idx);
/* sum idx[i] * st[i]. */
int64_t eval_dot(const int64_t *idx, const int64_t *strides, int n);
/* outer = product of dims before axis, inner = product after it. */
void eval_axis_blocks(const struct ir_type *t, int axis, int64_t *outer, int64_t *inner);
/* Scratch memory for one evaluation, zeroed; released by eval_free (or with
 * the module). */
void *eval_alloc(struct fold *f, size_t bytes);
void eval_free(struct fold *f, void *p);
/* v's elements in double when v is float (scratch, for eval_free: converted
 * once rather than at every read of a product's or convolution's operand),
 * else NULL. */
double *eval_doubles(struct fold *f, const struct ir_value *v);

/* The evaluators, by file. */
bool eval_reshape(struct fold *f);
bool eval_transpose(struct fold *f);
bool eval_slice(struct fold *f);
bool eval_expand(struct fold *f);
bool eval_tile(struct fold *f);
bool eval_concat(struct fold *f);
bool eval_split(struct fold *f);
bool eval_gather(struct fold *f);
bool eval_gather_elements(struct fold *f);
bool eval_scatter_elements(struct fold *f);
bool eval_trilu(struct fold *f);
bool eval_pad(struct fold *f);
bool eval_depth_space(struct fold *f);

bool eval_reduce(struct fold *f);
bool eval_arg(struct fold *f);
bool eval_topk(struct fold *f);
bool eval_cumsum(struct fold *f);
bool eval_softmax(struct fold *f);

bool eval_matmul(struct fold *f);
bool eval_gemm(struct fold *f);
bool eval_conv(struct fold *f);
bool eval_linear_attention(struct fold *f);
bool eval_attention(struct fold *f);
bool eval_attention_grad(struct fold *f);
bool eval_rnn(struct fold *f);

bool eval_pool(struct fold *f);
bool eval_global_pool(struct fold *f);

bool eval_batch_norm(struct fold *f);
bool eval_instance_norm(struct fold *f);
bool eval_layer_norm(struct fold *f);
bool eval_lrn(struct fold *f);

bool eval_resize(struct fold *f);

#endif
