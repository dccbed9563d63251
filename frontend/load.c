/*
 * load.c - reading ModelProto files and decoding tensors.
 *
 * The file is read whole and unpacked by protobuf-c (generated at build time
 * from the system's onnx.proto). protobuf-c validates lengths against the
 * buffer, so truncated or corrupt files fail cleanly; it gets an allocator
 * that reports failure instead of unwinding, so it can free its partial
 * message itself.
 *
 * Tensor data comes from raw_data, from the typed repeated fields, or from
 * an external file. External data is confined to the model's folder: the
 * location must be relative, must not contain "..", and after resolving
 * symbolic links must still lie inside the folder; offset and length are
 * checked against the file's size before anything is read.
 */
#include "fe.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Model file                                                               */
/* ------------------------------------------------------------------------ */

struct pb_alloc {
	struct ir_ctx *ctx;
	bool failed;
};

static void *pb_alloc_fn(void *ud, size_t size)
{
	struct pb_alloc *pa = ud;
	void *p = pa->ctx->alloc ? pa->ctx->alloc(pa->ctx->alloc_ud, NULL, size ? size : 1)
	                         : malloc(size ? size : 1);
	if (!p)
		pa->failed = true;
	return p;
}

static void pb_free_fn(void *ud, void *p)
{
	struct pb_alloc *pa = ud;
	if (!p)
		return;
	if (pa->ctx->alloc)
		pa->ctx->alloc(pa->ctx->alloc_ud, p, 0);
	else
		free(p);
}

/*
 * protobuf-c decodes nested messages recursively, so a small file of deeply
 * nested graph attributes would overflow the stack. Before decoding, walk the
 * wire format iteratively, following only the fields the schema declares as
 * messages, and refuse nesting deeper than FE_MAX_NESTING. Malformed input is
 * left for protobuf-c to reject.
 */
#define FE_MAX_NESTING 100

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return false;
		*v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
			return true;
	}
	return false;
}

static bool nesting_ok(const uint8_t *p, size_t len)
{
	struct {
		const uint8_t *end;
		const ProtobufCMessageDescriptor *d;
	} stack[FE_MAX_NESTING];
	int sp = 0;
	stack[0].end = p + len;
	stack[0].d = &onnx__model_proto__descriptor;
	while (sp >= 0) {
		const uint8_t *end = stack[sp].end;
		uint64_t tag, v;
		if (p >= end) {
			p = end;
			sp--;
			continue;
		}
		if (!read_varint(&p, end, &tag))
			return true;
		switch (tag & 7) {
		case 0:
			if (!read_varint(&p, end, &v))
				return true;
			break;
		case 1:
			if (end - p < 8)
				return true;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return true;
			p += 4;
			break;
		case 2: {
			const ProtobufCFieldDescriptor *fd;
			if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return true;
			fd = tag >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(
			                                      stack[sp].d, (unsigned)(tag >> 3))
			                            : NULL;
			if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
				if (sp + 1 == FE_MAX_NESTING)
					return false;
				sp++;
				stack[sp].end = p + v;
				stack[sp].d = fd->descriptor;
			} else {
				p += v;
			}
			break;
		}
		default: return true; /* groups or garbage: protobuf-c decides */
		}
	}
	return true;
}

Onnx__ModelProto *fe_load_model(struct fe *fe, const char *path)
{
	struct pb_alloc pa = { .ctx = fe->ctx };
	ProtobufCAllocator alloc = { .alloc = pb_alloc_fn,
		                     .free = pb_free_fn,
		                     .allocator_data = &pa };
	const char *err = NULL;
	size_t len = 0;
	unsigned char *buf = ir_read_file(fe->ctx, path, &len, &err);
	Onnx__ModelProto *mp;
	if (!buf) {
		ir_error(fe->ctx, "cannot read the model: %s", err);
		return NULL;
	}
	if (!nesting_ok(buf, len)) {
		ir_free(fe->ctx, buf);
		ir_error(fe->ctx, "not an ONNX model: messages nest more than %d deep",
		         FE_MAX_NESTING);
		return NULL;
	}
	mp = onnx__model_proto__unpack(&alloc, len, buf);
	ir_free(fe->ctx, buf);
	if (!mp) {
		if (pa.failed)
			ir_oom(fe->ctx);
		ir_error(fe->ctx, "not an ONNX model: the file is not a valid protobuf ModelProto "
		                  "(truncated or corrupt?)");
		return NULL;
	}
	if (!mp->graph || !mp->has_ir_version) {
		ir_error(fe->ctx, "not an ONNX model: %s",
		         !mp->graph ? "it has no graph" : "it has no ir_version");
		fe_free_model(fe, mp);
		return NULL;
	}
	return mp;
}

void fe_free_model(struct fe *fe, Onnx__ModelProto *mp)
{
	struct pb_alloc pa = { .ctx = fe->ctx };
	ProtobufCAllocator alloc = { .alloc = pb_alloc_fn,
		                     .free = pb_free_fn,
		                     .allocator_data = &pa };
	if (mp)
		onnx__model_proto__free_unpacked(mp, &alloc);
}

/* ------------------------------------------------------------------------ */
/* Tensors                                                                  */
/* ------------------------------------------------------------------------ */

bool fe_tensor_type(struct fe *fe, const Onnx__TensorProto *t, const char *who, struct ir_type *out)
{
	int code = t->has_data_type ? t->data_type : 0;
	memset(out, 0, sizeof *out);
	out->dtype = ir_dtype_from_onnx(code);
	if (out->dtype == IR_DT_NONE) {
		ir_error(fe->ctx, "%s has element type %s, which onnxc does not support", who,
		         ir_onnx_dtype_name(code));
		return false;
	}
	if (t->n_dims > IR_MAX_RANK) {
		ir_error(fe->ctx, "%s has rank %zu; onnxc supports up to %d", who, t->n_dims,
		         IR_MAX_RANK);
		return false;
	}
	out->rank = (int)t->n_dims;
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0) {
			ir_error(fe->ctx, "%s has negative dimension %lld", who,
			         (long long)t->dims[i]);
			return false;
		}
		out->dims[i] = t->dims[i];
	}
	if (ir_type_elems(out) < 0 || ir_type_elems(out) > INT64_MAX / ir_dtype_size(out->dtype)) {
		ir_error(fe->ctx, "%s has more elements than a 64-bit size can count", who);
		return false;
	}
	return true;
}

static const char *kv_get(const Onnx__TensorProto *t, const char *key)
{
	for (size_t i = 0; i < t->n_external_data; i++)
		if (t->external_data[i]->key && !strcmp(t->external_data[i]->key, key))
			return t->external_data[i]->value ? t->external_data[i]->value : "";
	return NULL;
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *e;
	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &e, 10);
	return !*e && !errno;
}

/* Reads external data for t into buf (bytes long). */
static bool read_external(struct fe *fe, const Onnx__TensorProto *t, const char *who, void *buf,
                          size_t bytes)
{
	const char *loc = kv_get(t, "location"), *off_s = kv_get(t, "offset"),
	           *len_s = kv_get(t, "length");
	uint64_t off = 0, len = bytes;
	char *path = NULL, real_dir[PATH_MAX], real_file[PATH_MAX];
	const char *err;
	int64_t size;
	int fd;
	bool ok = false;

	if (!loc || !*loc) {
		ir_error(fe->ctx, "%s: external data without a location", who);
		return false;
	}
	if (loc[0] == '/' || loc[0] == '\\') {
		ir_error(fe->ctx,
		         "%s: external data location '%s' is absolute; it must be relative "
		         "to the model's folder",
		         who, loc);
		return false;
	}
	for (const char *p = loc; *p; p++) {
		bool start = p == loc || p[-1] == '/' || p[-1] == '\\';
		if (start && p[0] == '.' && p[1] == '.' && (!p[2] || p[2] == '/' || p[2] == '\\')) {
			ir_error(fe->ctx,
			         "%s: external data location '%s' leaves the model's folder", who,
			         loc);
			return false;
		}
	}
	if ((off_s && !parse_u64(off_s, &off)) || (len_s && !parse_u64(len_s, &len))) {
		ir_error(fe->ctx, "%s: external data offset/length are not numbers", who);
		return false;
	}
	if (len != bytes) {
		ir_error(fe->ctx,
		         "%s: external data length %llu does not match the %zu bytes of its "
		         "shape",
		         who, (unsigned long long)len, bytes);
		return false;
	}
	path = ir_arena_printf(&fe->m->arena, "%s/%s", fe->dir, loc);
	if (!realpath(fe->dir, real_dir) || !realpath(path, real_file)) {
		ir_error(fe->ctx, "%s: cannot open external data '%s': %s", who, loc,
		         strerror(errno));
		return false;
	}
	{
		size_t n = strlen(real_dir);
		if (strncmp(real_file, real_dir, n) != 0 || (real_file[n] != '/' && n != 1)) {
			ir_error(fe->ctx,
			         "%s: external data '%s' resolves outside the model's folder "
			         "(a symbolic link?)",
			         who, loc);
			return false;
		}
	}
	fd = ir_open_regular(real_file, &err, &size);
	if (fd < 0) {
		ir_error(fe->ctx, "%s: cannot open external data '%s': %s", who, loc, err);
		return false;
	}
	if (fe->opt && fe->opt->on_read)
		fe->opt->on_read(fe->opt->on_read_ud, path);
	if (off > (uint64_t)size || len > (uint64_t)size - off) {
		ir_error(fe->ctx,
		         "%s: external data '%s' has %lld bytes; the tensor needs %llu bytes at "
		         "offset %llu",
		         who, loc, (long long)size, (unsigned long long)len,
		         (unsigned long long)off);
	} else if (!ir_read_at(fd, buf, bytes, (int64_t)off)) {
		ir_error(fe->ctx, "%s: reading external data '%s' failed", who, loc);
	} else {
		ok = true;
	}
	close(fd);
	return ok;
}

static bool count_ok(struct fe *fe, const char *who, const char *field, size_t have, int64_t want)
{
	if ((int64_t)have != want) {
		ir_error(fe->ctx, "%s has %zu values in %s for %lld elements", who, have, field,
		         (long long)want);
		return false;
	}
	return true;
}

/* Decodes the typed repeated fields into buf. */
static bool decode_typed(struct fe *fe, const Onnx__TensorProto *t, const char *who,
                         enum ir_dtype dt, int64_t n, void *buf)
{
	switch (dt) {
	case IR_F32:
		if (!count_ok(fe, who, "float_data", t->n_float_data, n))
			return false;
		if (n) /* an empty field is NULL */
			memcpy(buf, t->float_data, (size_t)n * 4);
		return true;
	case IR_F64:
		if (!count_ok(fe, who, "double_data", t->n_double_data, n))
			return false;
		if (n) /* an empty field is NULL */
			memcpy(buf, t->double_data, (size_t)n * 8);
		return true;
	case IR_I64:
		if (!count_ok(fe, who, "int64_data", t->n_int64_data, n))
			return false;
		if (n) /* an empty field is NULL */
			memcpy(buf, t->int64_data, (size_t)n * 8);
		return true;
	case IR_U32:
	case IR_U64:
		if (!count_ok(fe, who, "uint64_data", t->n_uint64_data, n))
			return false;
		for (int64_t i = 0; i < n; i++)
			ir_store_i64(dt, buf, (size_t)i, (int64_t)t->uint64_data[i]);
		return true;
	case IR_F16:
	case IR_BF16:
		if (!count_ok(fe, who, "int32_data", t->n_int32_data, n))
			return false;
		for (int64_t i = 0; i < n; i++)
			((uint16_t *)buf)[i] = (uint16_t)t->int32_data[i];
		return true;
	default: /* i8 i16 i32 u8 u16 bool travel in int32_data */
		if (!count_ok(fe, who, "int32_data", t->n_int32_data, n))
			return false;
		for (int64_t i = 0; i < n; i++)
			ir_store_i64(dt, buf, (size_t)i, t->int32_data[i]);
		return true;
	}
}

/* How many values the typed field decode_typed reads for dt holds. */
static size_t typed_count(const Onnx__TensorProto *t, enum ir_dtype dt)
{
	switch (dt) {
	case IR_F32: return t->n_float_data;
	case IR_F64: return t->n_double_data;
	case IR_I64: return t->n_int64_data;
	case IR_U32:
	case IR_U64: return t->n_uint64_data;
	default: return t->n_int32_data;
	}
}

struct ir_value *fe_tensor_const(struct fe *fe, const Onnx__TensorProto *t, const char *name,
                                 const char *who)
{
	struct ir_type ty;
	int64_t n;
	size_t bytes;
	void *buf;
	bool ok;

	if (!fe_tensor_type(fe, t, who, &ty))
		return NULL;
	n = ir_type_elems(&ty);
	bytes = (size_t)n * (size_t)ir_dtype_size(ty.dtype);
	if ((int64_t)bytes > fe->max_const_bytes) {
		ir_error(fe->ctx, "%s has %zu bytes, more than the limit of %lld", who, bytes,
		         (long long)fe->max_const_bytes);
		return NULL;
	}
	if (t->segment) {
		ir_error(fe->ctx, "%s is a segment of a tensor, which onnxc does not support", who);
		return NULL;
	}
	/* data in the file must all be there before the buffer is allocated: a
	 * small file must not make onnxc allocate what its dims claim */
	if (!(t->has_data_location &&
	      t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) &&
	    !t->has_raw_data && typed_count(t, ty.dtype) != (size_t)n) {
		decode_typed(fe, t, who, ty.dtype, n, NULL); /* reports the count */
		return NULL;
	}
	if (t->has_raw_data && t->raw_data.len != bytes &&
	    !(t->has_data_location &&
	      t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)) {
		ir_error(fe->ctx, "%s has %zu bytes of raw_data; its shape needs %zu", who,
		         t->raw_data.len, bytes);
		return NULL;
	}
	buf = ir_arena_alloc_big(&fe->m->arena, bytes ? bytes : 1);
	if (t->has_data_location &&
	    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		ok = read_external(fe, t, who, buf, bytes);
	} else if (t->has_raw_data) {
		ok = t->raw_data.len == bytes;
		if (!ok)
			ir_error(fe->ctx, "%s has %zu bytes of raw_data; its shape needs %zu", who,
			         t->raw_data.len, bytes);
		else if (bytes)
			memcpy(buf, t->raw_data.data, bytes);
	} else {
		ok = decode_typed(fe, t, who, ty.dtype, n, buf);
	}
	if (!ok) {
		ir_arena_release(&fe->m->arena, buf);
		return NULL;
	}
	if (ty.dtype == IR_BOOL)
		for (size_t i = 0; i < bytes; i++)
			((uint8_t *)buf)[i] = ((uint8_t *)buf)[i] != 0;
	return ir_add_const(fe->m, name, &ty, buf);
}
