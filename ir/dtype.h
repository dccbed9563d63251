/*
 * dtype.h - data types and tensor types: the dtype table, element access in
 * the common representations, half-precision conversion, shapes (dtype.c).
 *
 * The bottom of the ir library: it depends on nothing else in it, and ir.h
 * includes it, so everything that includes ir.h sees it.
 */
#ifndef ONNXC_DTYPE_H
#define ONNXC_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IR_MAX_RANK 8 /* ONNX has no limit; no exporter we know goes past 6 */

/* ------------------------------------------------------------------------ */
/* Data types.                                                              */
/* ------------------------------------------------------------------------ */

/*   id     text    ONNX code  bytes  float  int  signed */
#define IR_DTYPES(X)                    \
	X(F32, "f32", 1, 4, 1, 0, 1)    \
	X(F16, "f16", 10, 2, 1, 0, 1)   \
	X(BF16, "bf16", 16, 2, 1, 0, 1) \
	X(F64, "f64", 11, 8, 1, 0, 1)   \
	X(I8, "i8", 3, 1, 0, 1, 1)      \
	X(I16, "i16", 5, 2, 0, 1, 1)    \
	X(I32, "i32", 6, 4, 0, 1, 1)    \
	X(I64, "i64", 7, 8, 0, 1, 1)    \
	X(U8, "u8", 2, 1, 0, 1, 0)      \
	X(U16, "u16", 4, 2, 0, 1, 0)    \
	X(U32, "u32", 12, 4, 0, 1, 0)   \
	X(U64, "u64", 13, 8, 0, 1, 0)   \
	X(BOOL, "bool", 9, 1, 0, 0, 0)

enum ir_dtype {
	IR_DT_NONE = 0,
#define X(id, ...) IR_##id,
	IR_DTYPES(X)
#undef X
	        IR_DTYPE_COUNT
};

struct ir_dtype_info {
	const char *name;
	int onnx; /* TensorProto.DataType */
	int size; /* bytes per element */
	bool is_float, is_int, is_signed;
};
extern const struct ir_dtype_info ir_dtypes[IR_DTYPE_COUNT];

static inline int ir_dtype_size(enum ir_dtype t) { return ir_dtypes[t].size; }
static inline const char *ir_dtype_name(enum ir_dtype t) { return ir_dtypes[t].name; }
enum ir_dtype ir_dtype_from_onnx(int onnx_code); /* IR_DT_NONE if unsupported */
enum ir_dtype ir_dtype_from_name(const char *s, size_t n);
const char *ir_onnx_dtype_name(int onnx_code); /* "FLOAT", "STRING", ... */

/* Element access in a common representation: for folding and printing. */
double ir_load_f64(enum ir_dtype t, const void *p, size_t i);
int64_t ir_load_i64(enum ir_dtype t, const void *p, size_t i);
void ir_store_f64(enum ir_dtype t, void *p, size_t i, double v);
void ir_store_i64(enum ir_dtype t, void *p, size_t i, int64_t v);

/* IEEE binary16 and bfloat16, round to nearest even (NaN stays NaN). */
uint16_t ir_f32_to_f16(float f);
float ir_f16_to_f32(uint16_t h);
uint16_t ir_f32_to_bf16(float f);
float ir_bf16_to_f32(uint16_t h);

/* ------------------------------------------------------------------------ */
/* Types: a dtype and a static shape.                                       */
/* ------------------------------------------------------------------------ */

struct ir_type {
	enum ir_dtype dtype;
	int rank;
	int64_t dims[IR_MAX_RANK];
};

/* Element count; -1 if it overflows int64 (importers reject that first). */
int64_t ir_type_elems(const struct ir_type *t);
/* Element count of dims[0..rank), -1 on overflow or a negative dim. */
int64_t ir_dims_elems(const int64_t *dims, int rank);
/* Size in bytes; -1 if it overflows int64. Every value of a module has a
 * size (the verifier checks it), so later stages multiply freely. */
int64_t ir_type_bytes(const struct ir_type *t);
bool ir_type_eq(const struct ir_type *a, const struct ir_type *b);
/* "f32[1,3,224,224]" into buf; returns buf. */
char *ir_type_str(const struct ir_type *t, char *buf, size_t n);
#define IR_TYPE_STR_MAX (16 + IR_MAX_RANK * 21)
/* Numpy broadcasting of two shapes; false if incompatible. */
bool ir_broadcast(const struct ir_type *a, const struct ir_type *b, struct ir_type *out);

#endif
