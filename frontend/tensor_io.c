/*
 * tensor_io.c - tensors in files: ONNX TensorProto (.pb) and NumPy (.npy).
 *
 * Input files are untrusted like models: sizes are checked against the
 * header before anything is read, and a .pb goes through the same decoder
 * as initializers (fe_tensor_const), so every check made there applies.
 * Tensors load as constants of a module, which owns their data.
 */
#include "fe.h"

#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* ------------------------------------------------------------------------ */
/* .npy                                                                     */
/* ------------------------------------------------------------------------ */

static const struct {
	const char *descr;
	enum ir_dtype t;
} npy_types[] = {
	{ "f4", IR_F32 }, { "f8", IR_F64 }, { "f2", IR_F16 }, { "i1", IR_I8 },
	{ "i2", IR_I16 }, { "i4", IR_I32 }, { "i8", IR_I64 }, { "u1", IR_U8 },
	{ "u2", IR_U16 }, { "u4", IR_U32 }, { "u8", IR_U64 }, { "b1", IR_BOOL },
};

/* Finds 'key': in the header dict and returns what follows the colon. */
static const char *dict_value(const char *h, const char *key)
{
	char pat[32];
	const char *p;
	snprintf(pat, sizeof pat, "'%s'", key);
	if (!(p = strstr(h, pat)))
		return NULL;
	p += strlen(pat);
	while (*p == ' ' || *p == ':')
		p++;
	return p;
}

static bool parse_npy_header(const char *h, struct ir_type *t, const char **err)
{
	const char *d = dict_value(h, "descr"), *fo = dict_value(h, "fortran_order"),
	           *sh = dict_value(h, "shape");
	memset(t, 0, sizeof *t);
	if (!d || !fo || !sh || *d != '\'') {
		*err = "the header lacks descr, fortran_order or shape";
		return false;
	}
	if (d[1] == '>' && strncmp(d + 2, "i1", 2) && strncmp(d + 2, "u1", 2) &&
	    strncmp(d + 2, "b1", 2)) {
		*err = "big-endian data is not supported";
		return false;
	}
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
		if (!strncmp(d + 2, npy_types[i].descr, 2) && d[4] == '\'')
			t->dtype = npy_types[i].t;
	if (!t->dtype) {
		*err = "the element type is not supported";
		return false;
	}
	if (strncmp(fo, "False", 5)) {
		*err = "Fortran-ordered arrays are not supported";
		return false;
	}
	if (*sh++ != '(') {
		*err = "bad shape";
		return false;
	}
	for (;;) {
		char *e;
		long long v;
		while (*sh == ' ')
			sh++;
		if (*sh == ')')
			break;
		if (t->rank == IR_MAX_RANK) {
			*err = "rank too large";
			return false;
		}
		v = strtoll(sh, &e, 10);
		if (e == sh || v < 0) {
			*err = "bad shape";
			return false;
		}
		t->dims[t->rank++] = v;
		sh = e;
		while (*sh == ' ')
			sh++;
		if (*sh == ',')
			sh++;
	}
	if (ir_type_bytes(t) < 0) {
		*err = "the array's size in bytes overflows 64 bits";
		return false;
	}
	return true;
}

static struct ir_value *load_npy(struct ir_ctx *ctx, struct ir_module *m, const char *path,
                                 const char *name, const unsigned char *buf, size_t len)
{
	struct ir_type t;
	size_t hlen, off, bytes;
	char *h;
	const char *err = NULL;
	if (len < 10 || memcmp(buf, "\x93NUMPY", 6)) {
		ir_error(ctx, "%s: not a .npy file", path);
		return NULL;
	}
	if (buf[6] == 1) {
		hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
		off = 10;
	} else if ((buf[6] == 2 || buf[6] == 3) && len >= 12) {
		hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
		       (size_t)buf[11] << 24;
		off = 12;
	} else {
		ir_error(ctx, "%s: .npy version %d is not supported", path, buf[6]);
		return NULL;
	}
	if (hlen > len - off) {
		ir_error(ctx, "%s: truncated .npy header", path);
		return NULL;
	}
	h = ir_arena_strndup(&m->arena, (const char *)buf + off, hlen);
	if (!parse_npy_header(h, &t, &err)) {
		ir_error(ctx, "%s: %s", path, err);
		return NULL;
	}
	off += hlen;
	bytes = (size_t)ir_type_elems(&t) * (size_t)ir_dtype_size(t.dtype);
	if (len - off != bytes) {
		ir_error(ctx, "%s: %zu bytes of data for a %s array of %zu bytes", path, len - off,
		         ir_dtype_name(t.dtype), bytes);
		return NULL;
	}
	return ir_add_const(m, ir_unique_name(m, name), &t, buf + off);
}

bool fe_save_npy(const char *path, const struct ir_type *t, const void *data)
{
	const char *descr = NULL;
	char header[256];
	int n;
	FILE *f;
	size_t bytes = (size_t)ir_type_elems(t) * (size_t)ir_dtype_size(t->dtype);
	bool ok;
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
		if (npy_types[i].t == t->dtype)
			descr = npy_types[i].descr;
	if (!descr) /* bfloat16, the storage types: raw elements as in memory */
		descr = ir_dtype_size(t->dtype) == 2 ? "V2" : "V1";
	n = snprintf(header, sizeof header, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
	             strcmp(descr, "i1") && strcmp(descr, "u1") && strcmp(descr, "b1") &&
	                             descr[0] != 'V'
	                     ? '<'
	                     : '|',
	             descr);
	for (int i = 0; i < t->rank; i++)
		n += snprintf(header + n, sizeof header - (size_t)n, "%lld%s",
		              (long long)t->dims[i], t->rank == 1 || i + 1 < t->rank ? "," : "");
	n += snprintf(header + n, sizeof header - (size_t)n, "), }");
	while ((n + 11) % 64)
		header[n++] = ' ';
	header[n++] = '\n';
	if (!(f = fopen(path, "wb")))
		return false;
	ok = fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8;
	ok &= fputc(n & 0xff, f) != EOF && fputc(n >> 8, f) != EOF;
	ok &= fwrite(header, 1, (size_t)n, f) == (size_t)n;
	ok &= fwrite(data, 1, bytes, f) == bytes;
	ok &= fclose(f) == 0;
	return ok;
}

/* ------------------------------------------------------------------------ */
/* .pb                                                                      */
/* ------------------------------------------------------------------------ */

/* The unpacked TensorProto is left in *tp for the caller to free (also
 * when an allocation unwinds). */
static struct ir_value *load_pb(struct ir_ctx *ctx, struct ir_module *m, const char *path,
                                const char *name, const unsigned char *buf, size_t len,
                                Onnx__TensorProto *volatile *tp)
{
	struct fe fe = { .ctx = ctx, .m = m, .max_const_bytes = (int64_t)4 << 30 };
	Onnx__TensorProto *t;
	char *who = ir_arena_printf(&m->arena, "tensor file %s", path);
	t = *tp = onnx__tensor_proto__unpack(NULL, len, buf);
	if (!t) {
		ir_error(ctx, "%s: not an ONNX TensorProto", path);
		return NULL;
	}
	fe.dir = ".";
	if (t->has_data_location &&
	    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		ir_error(ctx, "%s: tensors with external data are not supported here", path);
		return NULL;
	}
	return fe_tensor_const(&fe, t, ir_unique_name(m, name), who);
}

struct ir_value *fe_load_tensor(struct ir_ctx *ctx, struct ir_module *m, const char *path,
                                const char *name)
{
	const char *err;
	size_t len;
	unsigned char *volatile buf;
	Onnx__TensorProto *volatile t = NULL;
	struct ir_value *v;
	jmp_buf jb, *outer = ctx->oom;
	if (!(buf = ir_read_file(ctx, path, &len, &err))) {
		ir_error(ctx, "cannot read %s: %s", path, err);
		return NULL;
	}
	/* the file's bytes and the TensorProto are not the module's: an
	 * allocation that unwinds frees them on its way out */
	if (setjmp(jb)) {
		ctx->oom = outer;
		if (t)
			onnx__tensor_proto__free_unpacked(t, NULL);
		ir_free(ctx, buf);
		if (outer) /* on to the caller's unwind (reported already) */
			longjmp(*outer, 1);
		exit(EXIT_FAILURE);
	}
	ctx->oom = &jb;
	if (ends_with(path, ".npy") || (len >= 6 && !memcmp(buf, "\x93NUMPY", 6)))
		v = load_npy(ctx, m, path, name, buf, len);
	else
		v = load_pb(ctx, m, path, name, buf, len, &t);
	ctx->oom = outer;
	if (t)
		onnx__tensor_proto__free_unpacked(t, NULL);
	ir_free(ctx, buf);
	return v;
}
