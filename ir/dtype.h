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

/*
 * id, text, ONNX code, bytes per element in memory, float, int, signed,
 * bits per element in ONNX's files. The last rows are the storage types
 * (is_float and is_int both false, narrow true): float8, float4 and the 4-
 * and 2-bit integers. No arithmetic op takes them - only Cast and data
 * movement (ir_dtype_narrow_ok) - and each element takes one byte in memory:
 * the sub-byte integers sign- or zero-extended, float4 in the low bits. Only
 * ONNX files pack them (two 4-bit or four 2-bit values to a byte, the first
 * in the low bits); the loader unpacks and the writer packs.
 */
#define IR_DTYPES(X)                                   \
	X(F32, "f32", 1, 4, 1, 0, 1, 32)               \
	X(F16, "f16", 10, 2, 1, 0, 1, 16)              \
	X(BF16, "bf16", 16, 2, 1, 0, 1, 16)            \
	X(F64, "f64", 11, 8, 1, 0, 1, 64)              \
	X(I8, "i8", 3, 1, 0, 1, 1, 8)                  \
	X(I16, "i16", 5, 2, 0, 1, 1, 16)               \
	X(I32, "i32", 6, 4, 0, 1, 1, 32)               \
	X(I64, "i64", 7, 8, 0, 1, 1, 64)               \
	X(U8, "u8", 2, 1, 0, 1, 0, 8)                  \
	X(U16, "u16", 4, 2, 0, 1, 0, 16)               \
	X(U32, "u32", 12, 4, 0, 1, 0, 32)              \
	X(U64, "u64", 13, 8, 0, 1, 0, 64)              \
	X(BOOL, "bool", 9, 1, 0, 0, 0, 8)              \
	X(F8E4M3FN, "f8e4m3fn", 17, 1, 0, 0, 1, 8)     \
	X(F8E4M3FNUZ, "f8e4m3fnuz", 18, 1, 0, 0, 1, 8) \
	X(F8E5M2, "f8e5m2", 19, 1, 0, 0, 1, 8)         \
	X(F8E5M2FNUZ, "f8e5m2fnuz", 20, 1, 0, 0, 1, 8) \
	X(F8E8M0, "f8e8m0", 24, 1, 0, 0, 0, 8)         \
	X(F4E2M1, "f4e2m1", 23, 1, 0, 0, 1, 4)         \
	X(U4, "u4", 21, 1, 0, 0, 0, 4)                 \
	X(I4, "i4", 22, 1, 0, 0, 1, 4)                 \
	X(U2, "u2", 25, 1, 0, 0, 0, 2)                 \
	X(I2, "i2", 26, 1, 0, 0, 1, 2)

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
	int size; /* bytes per element in memory */
	bool is_float, is_int, is_signed;
	int bits;    /* bits per element in ONNX's files */
	bool narrow; /* a storage type (see IR_DTYPES) */
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

/*
 * The storage types. A minifloat (float8, float4) has a sign bit (not
 * f8e8m0), ebits of exponent with bias, mbits of mantissa and subnormals;
 * its NaN and infinity follow ONNX's spec: FN types have NaN at all ones and
 * no infinity, FNUZ types one NaN at 0x80 and no negative zero, f8e5m2 IEEE's
 * infinities and NaNs, f4e2m1 neither (NaN converts to -0, as ONNX's
 * reference does), f8e8m0 is 2^(b - 127) with NaN at 0xff.
 */
struct ir_minifloat {
	int ebits, mbits, bias;
	enum { IR_MF_FN, IR_MF_FNUZ, IR_MF_IEEE, IR_MF_NONE, IR_MF_E8M0 } kind;
	double max; /* largest finite value */
};
/* NULL for a dtype that is not a minifloat. */
const struct ir_minifloat *ir_minifloat(enum ir_dtype t);
/* Is t a float-valued type (IEEE or minifloat)? */
static inline bool ir_dtype_float_valued(enum ir_dtype t)
{
	return ir_dtypes[t].is_float || ir_minifloat(t) != NULL;
}
/* Is t an integer-valued type (the sub-byte integers included)? */
static inline bool ir_dtype_int_valued(enum ir_dtype t)
{
	return ir_dtypes[t].is_int || (ir_dtypes[t].narrow && !ir_minifloat(t));
}
/* The minifloat code of v, rounded to nearest even (f8e8m0: up to the next
 * power of two, ONNX's default round_mode). Beyond the range: saturate
 * gives +-max, as the IR's cast does (ONNX's saturate=1); else infinity or
 * NaN, whichever the type has (ONNX's saturate=0; f4e2m1 has neither and
 * saturates). ir_store_f64 is the latter. */
uint8_t ir_minifloat_encode(enum ir_dtype t, double v, bool saturate);
double ir_minifloat_decode(enum ir_dtype t, uint8_t b);
/* |v| beyond which ONNX's saturate=0 conversion gives infinity or NaN:
 * *incl says whether the bound itself overflows (a tie rounding to even
 * beyond max). */
double ir_minifloat_overflow(enum ir_dtype t, bool *incl);
/* v wrapped to a sub-byte integer type's bits, sign-extended (i4, i2). */
int64_t ir_wrap_narrow_int(enum ir_dtype t, int64_t v);

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
