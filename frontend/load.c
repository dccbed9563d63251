/*
 * load.c - reading ModelProto files and decoding tensors.
 *
 * The file is mapped and unpacked by protobuf-c (generated at build time
 * from the system's onnx.proto). protobuf-c validates lengths against the
 * buffer, so truncated or corrupt files fail cleanly; it gets an allocator
 * that reports failure instead of unwinding, so it can free its partial
 * message itself.
 *
 * protobuf-c copies every bytes field, so unpacking a file with W bytes of
 * weights would cost W on top of the file. The loader instead unpacks a
 * skeleton of the file (strip below) in which each large raw_data is
 * replaced by where it lies in the file; fe_tensor_const reads it from
 * there straight into the constant. The file stays open until
 * fe_free_model, and the module's arena closes it on an unwind.
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
#include <sys/mman.h>
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

int fe_wire_next(const uint8_t **p, const uint8_t *end, struct fe_wire_field *f)
{
	uint64_t tag, v;
	if (*p >= end)
		return 0;
	f->start = *p;
	if (!read_varint(p, end, &tag) || !(tag >> 3))
		return -1;
	f->num = tag >> 3;
	f->type = (int)(tag & 7);
	switch (f->type) {
	case 0:
		f->val = *p;
		if (!read_varint(p, end, &v))
			return -1;
		break;
	case 1:
	case 5:
		if (end - *p < (f->type == 1 ? 8 : 4))
			return -1;
		f->val = *p;
		*p += f->type == 1 ? 8 : 4;
		break;
	case 2:
		if (!read_varint(p, end, &v) || v > (uint64_t)(end - *p))
			return -1;
		f->val = *p;
		*p += v;
		break;
	default: return -1; /* groups, garbage */
	}
	f->end = *p;
	return 1;
}

int fe_wire_walk(const uint8_t *p, size_t len, fe_wire_visit_fn visit, void *ud)
{
	struct {
		const uint8_t *end;
		const ProtobufCMessageDescriptor *d;
	} stack[FE_MAX_NESTING];
	int sp = 0;
	stack[0].end = p + len;
	stack[0].d = &onnx__model_proto__descriptor;
	while (sp >= 0) {
		const ProtobufCFieldDescriptor *fd;
		struct fe_wire_field f;
		int r = fe_wire_next(&p, stack[sp].end, &f);
		if (r == 0) {
			sp--;
			continue;
		}
		if (r < 0)
			return -1;
		if (f.type != 2 || f.num > UINT32_MAX)
			continue;
		fd = protobuf_c_message_descriptor_get_field(stack[sp].d, (unsigned)f.num);
		if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (visit && (r = visit(ud, stack[sp].d, &f)) <= 0) {
			if (r < 0)
				return -1;
			continue;
		}
		if (sp + 1 == FE_MAX_NESTING)
			return 0;
		sp++;
		stack[sp].end = f.end;
		stack[sp].d = fd->descriptor;
		p = f.val;
	}
	return 1;
}

/* Malformed input is left for protobuf-c to reject. */
static bool nesting_ok(const uint8_t *p, size_t len)
{
	return fe_wire_walk(p, len, NULL, NULL) != 0;
}

/* ------------------------------------------------------------------------ */
/* The skeleton: large payloads stay in the file                            */
/* ------------------------------------------------------------------------ */

/*
 * Where the import reads tensors - graph initializers and node attributes'
 * tensor (Constant, ConstantOfShape) - a TensorProto's raw_data of at least
 * FE_PAYLOAD_MIN bytes is replaced by a field FE_PAYLOAD_FIELD, which ONNX
 * does not define (protobuf-c keeps it as an unknown field), holding the
 * payload's offset and length in the file as two little-endian u64s. Such a
 * field already in those tensors is dropped, and only the last raw_data of
 * a tensor (the one protobuf keeps) is written, so every payload field the
 * import sees is the loader's. A message that does not parse is copied as
 * it is, for protobuf-c to reject as before.
 */
#define FE_PAYLOAD_FIELD 536870911u /* the largest field number */
#define FE_PAYLOAD_MIN   4096

enum strip_kind { S_NONE, S_MODEL, S_GRAPH, S_NODE, S_ATTR, S_TENSOR };

/* The messages below the model that hold the tensors the import reads. */
static const struct {
	enum strip_kind parent;
	const char *field;
	enum strip_kind child;
} strip_rules[] = {
	{ S_MODEL, "graph", S_GRAPH },
	{ S_GRAPH, "node", S_NODE },
	{ S_GRAPH, "initializer", S_TENSOR },
	{ S_NODE, "attribute", S_ATTR },
	{ S_ATTR, "t", S_TENSOR },
};

#define NRULES (sizeof strip_rules / sizeof strip_rules[0])

struct strip {
	const uint8_t *base;                   /* the file */
	uint32_t rule_field[NRULES], raw_data; /* field numbers, from the descriptors */
	int edits;                             /* payloads moved out, fields dropped */
};

static const ProtobufCMessageDescriptor *strip_descriptor(enum strip_kind k)
{
	switch (k) {
	case S_MODEL: return &onnx__model_proto__descriptor;
	case S_GRAPH: return &onnx__graph_proto__descriptor;
	case S_NODE: return &onnx__node_proto__descriptor;
	case S_ATTR: return &onnx__attribute_proto__descriptor;
	default: return &onnx__tensor_proto__descriptor;
	}
}

static void strip_init(struct strip *st, const uint8_t *base)
{
	memset(st, 0, sizeof *st);
	st->base = base;
	for (size_t i = 0; i < NRULES; i++)
		st->rule_field[i] =
		        protobuf_c_message_descriptor_get_field_by_name(
		                strip_descriptor(strip_rules[i].parent), strip_rules[i].field)
		                ->id;
	st->raw_data = protobuf_c_message_descriptor_get_field_by_name(
	                       &onnx__tensor_proto__descriptor, "raw_data")
	                       ->id;
	IR_ASSERT(!protobuf_c_message_descriptor_get_field(&onnx__tensor_proto__descriptor,
	                                                   FE_PAYLOAD_FIELD));
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	do {
		if (out)
			out[n] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		n++;
		v >>= 7;
	} while (v);
	return n;
}

static size_t put_u64(uint8_t *out, uint64_t v)
{
	for (int i = 0; out && i < 8; i++)
		out[i] = (uint8_t)(v >> (8 * i));
	return 8;
}

static enum strip_kind strip_child(const struct strip *st, enum strip_kind k, uint64_t num)
{
	for (size_t i = 0; i < NRULES; i++)
		if (strip_rules[i].parent == k && st->rule_field[i] == num)
			return strip_rules[i].child;
	return S_NONE;
}

#define OUT(n) (out ? out + (n) : NULL)

/* Message [p, p + len) of kind k with its large payloads moved out: the size,
 * and the bytes into out unless it is NULL. */
static size_t strip(struct strip *st, enum strip_kind k, const uint8_t *p, size_t len, uint8_t *out)
{
	const uint8_t *end = p + len, *q = p, *last_raw = NULL;
	struct fe_wire_field f;
	size_t n = 0;
	int r;
	while ((r = fe_wire_next(&q, end, &f)) > 0)
		if (k == S_TENSOR && f.num == st->raw_data && f.type == 2)
			last_raw = f.start;
	if (r < 0) {
		if (out)
			memcpy(out, p, len);
		return len;
	}
	for (q = p; fe_wire_next(&q, end, &f) > 0;) {
		enum strip_kind child = f.type == 2 ? strip_child(st, k, f.num) : S_NONE;
		size_t vlen = (size_t)(f.end - f.val);
		if (k == S_TENSOR &&
		    (f.num == FE_PAYLOAD_FIELD ||
		     (f.num == st->raw_data && f.type == 2 && f.start != last_raw))) {
			st->edits += !out; /* not the loader's, or overwritten by a later one */
			continue;
		}
		if (k == S_TENSOR && f.start == last_raw && vlen >= FE_PAYLOAD_MIN) {
			st->edits += !out;
			n += put_varint(OUT(n), (uint64_t)FE_PAYLOAD_FIELD << 3 | 2);
			n += put_varint(OUT(n), 16);
			n += put_u64(OUT(n), (uint64_t)(f.val - st->base));
			n += put_u64(OUT(n), vlen);
		} else if (child != S_NONE) {
			size_t clen = strip(st, child, f.val, vlen, NULL);
			n += put_varint(OUT(n), f.num << 3 | 2);
			n += put_varint(OUT(n), clen);
			if (out)
				strip(st, child, f.val, vlen, out + n);
			n += clen;
		} else {
			if (out)
				memcpy(out + n, f.start, (size_t)(f.end - f.start));
			n += (size_t)(f.end - f.start);
		}
	}
	return n;
}

#undef OUT

bool fe_payload(const struct fe *fe, const Onnx__TensorProto *t, int64_t *offset, size_t *len)
{
	const ProtobufCMessage *b = &t->base;
	if (!fe->src)
		return false;
	for (size_t i = b->n_unknown_fields; i-- > 0;) {
		/* protobuf-c keeps a length-delimited field with its length */
		const ProtobufCMessageUnknownField *u = &b->unknown_fields[i];
		const uint8_t *d = u->data;
		uint64_t off = 0, n = 0;
		if (u->tag != FE_PAYLOAD_FIELD ||
		    u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED || u->len != 17 ||
		    d[0] != 16)
			continue;
		for (int k = 8; k >= 1; k--) {
			off = off << 8 | d[k];
			n = n << 8 | d[8 + k];
		}
		*offset = (int64_t)off;
		*len = (size_t)n;
		return true;
	}
	return false;
}

bool fe_read_payload(struct fe *fe, const char *who, void *buf, int64_t offset, size_t len)
{
	if (fe->src->fd < 0 || !ir_read_at(fe->src->fd, buf, len, offset)) {
		ir_error(fe->ctx,
		         "%s: reading its raw_data from the model failed (did the file "
		         "change?)",
		         who);
		return false;
	}
	return true;
}

int fe_payload_inline(struct fe *fe, Onnx__TensorProto *t, struct fe_payload_undo *u)
{
	ProtobufCMessage *b = &t->base;
	int64_t at;
	size_t len, n = 0;
	uint8_t *data;
	if (!fe_payload(fe, t, &at, &len))
		return 0;
	data = ir_arena_alloc_big(&fe->m->arena, len ? len : 1);
	if (!fe_read_payload(fe, t->name ? t->name : "a tensor", data, at, len))
		return -1;
	*u = (struct fe_payload_undo){ t, t->raw_data, t->has_raw_data, b->n_unknown_fields,
		                       b->unknown_fields };
	b->unknown_fields = ir_arena_alloc(&fe->m->arena, sizeof *b->unknown_fields *
	                                                          (u->nunknown ? u->nunknown : 1));
	for (size_t i = 0; i < u->nunknown; i++) /* every field but the payload's */
		if (u->unknown[i].tag != FE_PAYLOAD_FIELD)
			b->unknown_fields[n++] = u->unknown[i];
	b->n_unknown_fields = n;
	t->raw_data = (ProtobufCBinaryData){ len, data };
	t->has_raw_data = true;
	return 1;
}

void fe_payload_restore(const struct fe_payload_undo *u)
{
	u->t->raw_data = u->raw;
	u->t->has_raw_data = u->has_raw;
	u->t->base.n_unknown_fields = u->nunknown;
	u->t->base.unknown_fields = u->unknown;
}

/* ------------------------------------------------------------------------ */
/* Loading the model                                                        */
/* ------------------------------------------------------------------------ */

static void source_close(void *ud)
{
	struct fe_source *src = ud;
	if (src->map)
		munmap(src->map, src->map_len);
	if (src->fd >= 0)
		close(src->fd);
	src->map = NULL;
	src->fd = -1;
}

Onnx__ModelProto *fe_load_model(struct fe *fe, const char *path)
{
	struct pb_alloc pa = { .ctx = fe->ctx };
	ProtobufCAllocator alloc = { .alloc = pb_alloc_fn,
		                     .free = pb_free_fn,
		                     .allocator_data = &pa };
	struct ir_arena *a = &fe->m->arena;
	struct fe_source *src = ir_arena_alloc(a, sizeof *src);
	const char *err = NULL;
	const uint8_t *file;
	uint8_t *read_buf = NULL, *skel = NULL;
	int64_t size;
	size_t len, skel_len;
	struct strip st;
	Onnx__ModelProto *mp;

	src->fd = -1;
	ir_arena_defer(a, source_close, src);
	fe->src = src;
	if ((src->fd = ir_open_regular(path, &err, &size)) < 0) {
		ir_error(fe->ctx, "cannot read the model: %s", err);
		return NULL;
	}
	if ((uint64_t)size >= SIZE_MAX / 2) {
		ir_error(fe->ctx, "cannot read the model: file too large");
		return NULL;
	}
	len = (size_t)size;
	/* mapped: the payloads' pages are never touched; read where a file
	 * cannot be mapped */
	src->map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, src->fd, 0) : MAP_FAILED;
	if (src->map == MAP_FAILED) {
		src->map = NULL;
		read_buf = ir_arena_alloc_big(a, len ? len : 1);
		if (!ir_read_at(src->fd, read_buf, len, 0)) {
			ir_error(fe->ctx, "cannot read the model: read error");
			return NULL;
		}
		file = read_buf;
	} else {
		src->map_len = len;
		file = src->map;
	}
	if (!nesting_ok(file, len)) {
		ir_error(fe->ctx, "not an ONNX model: messages nest more than %d deep",
		         FE_MAX_NESTING);
		return NULL;
	}
	strip_init(&st, file);
	skel_len = strip(&st, S_MODEL, file, len, NULL);
	if (st.edits) {
		skel = ir_arena_alloc_big(a, skel_len ? skel_len : 1);
		strip(&st, S_MODEL, file, len, skel);
	}
	mp = onnx__model_proto__unpack(&alloc, st.edits ? skel_len : len, st.edits ? skel : file);
	if (skel)
		ir_arena_release(a, skel);
	if (read_buf)
		ir_arena_release(a, read_buf);
	if (src->map)
		munmap(src->map, src->map_len);
	src->map = NULL;
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
	if (mp && fe->saved_node) { /* inline.c's inlined list is arena memory */
		mp->graph->node = fe->saved_node;
		mp->graph->n_node = fe->saved_n_node;
		fe->saved_node = NULL;
	}
	if (mp)
		onnx__model_proto__free_unpacked(mp, &alloc);
	if (fe->src)
		source_close(fe->src);
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
		ir_error(fe->ctx, "%s has element type %s (%d), which onnxc does not support", who,
		         ir_onnx_dtype_name(code), code);
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

/* The bytes n elements of dt take in an ONNX file: the sub-byte types
 * packed, the first element in the low bits of a byte. */
static int64_t file_bytes(enum ir_dtype dt, int64_t n)
{
	int per = 8 / ir_dtypes[dt].bits;
	return per > 1 ? (n + per - 1) / per : n * ir_dtype_size(dt);
}

uint8_t *fe_pack_narrow(struct ir_arena *a, enum ir_dtype dt, const uint8_t *data, int64_t n,
                        size_t *len)
{
	int bits = ir_dtypes[dt].bits, per = 8 / bits;
	uint8_t *p;
	*len = (size_t)file_bytes(dt, n);
	if (per <= 1) /* whole bytes: as they are */
		return (uint8_t *)data;
	p = ir_arena_alloc(a, *len ? *len : 1);
	memset(p, 0, *len);
	for (int64_t i = 0; i < n; i++)
		p[i / per] |= (uint8_t)((data[i] & ((1 << bits) - 1)) << (i % per * bits));
	return p;
}

/* Unpacks n sub-byte elements of dt in place (buf has n bytes, the packed
 * ones at its start), sign-extending the signed ones. */
static void unpack_narrow(enum ir_dtype dt, uint8_t *buf, int64_t n)
{
	int bits = ir_dtypes[dt].bits, per = 8 / bits;
	for (int64_t i = n - 1; i >= 0 && per > 1; i--) {
		int v = buf[i / per] >> (i % per * bits) & ((1 << bits) - 1);
		buf[i] = (uint8_t)ir_wrap_narrow_int(dt, v);
	}
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
	default:
		if (ir_dtypes[dt].narrow) { /* a byte each: packed ones unpacked later */
			n = file_bytes(dt, n);
			if (!count_ok(fe, who, "int32_data", t->n_int32_data, n))
				return false;
			for (int64_t i = 0; i < n; i++)
				((uint8_t *)buf)[i] = (uint8_t)t->int32_data[i];
			return true;
		}
		/* i8 i16 i32 u8 u16 bool travel in int32_data */
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
	int64_t n, at = 0;
	size_t bytes, fbytes, raw_len = t->raw_data.len;
	bool external = t->has_data_location &&
	                t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	bool in_file = !external && fe_payload(fe, t, &at, &raw_len); /* raw_data left there */
	bool raw = in_file || t->has_raw_data;
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
	if (!external && !raw &&
	    typed_count(t, ty.dtype) !=
	            (size_t)(ir_dtypes[ty.dtype].narrow ? file_bytes(ty.dtype, n) : n)) {
		decode_typed(fe, t, who, ty.dtype, n, NULL); /* reports the count */
		return NULL;
	}
	if (!external && raw && raw_len != (size_t)file_bytes(ty.dtype, n)) {
		ir_error(fe->ctx, "%s has %zu bytes of raw_data; its shape needs %lld", who,
		         raw_len, (long long)file_bytes(ty.dtype, n));
		return NULL;
	}
	buf = ir_arena_alloc_big(&fe->m->arena, bytes ? bytes : 1);
	fbytes = (size_t)file_bytes(ty.dtype, n);
	if (external) {
		ok = read_external(fe, t, who, buf, fbytes);
	} else if (in_file) {
		ok = fe_read_payload(fe, who, buf, at, fbytes);
	} else if (raw) {
		ok = true;
		if (fbytes)
			memcpy(buf, t->raw_data.data, fbytes);
	} else {
		ok = decode_typed(fe, t, who, ty.dtype, n, buf);
	}
	if (ok)
		unpack_narrow(ty.dtype, buf, n);
	if (!ok) {
		ir_arena_release(&fe->m->arena, buf);
		return NULL;
	}
	if (ty.dtype == IR_BOOL)
		for (size_t i = 0; i < bytes; i++)
			((uint8_t *)buf)[i] = ((uint8_t *)buf)[i] != 0;
	return ir_add_const(fe->m, name, &ty, buf);
}
