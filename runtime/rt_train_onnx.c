/*
 * rt_train_onnx.c - exporting the trained model as ONNX without a protobuf
 * library.
 *
 * Protobuf parsers merge concatenated messages: repeated fields append and
 * embedded messages merge. `onnxc train` stores the original model with
 * the trained initializers removed (the template); the export is that
 * template followed by the encoding of
 *
 *   ModelProto { graph (7) { initializer (5): TensorProto {
 *       dims (1, varint, repeated), data_type (2) = 1, name (8),
 *       raw_data (9, little-endian float32) } ... } }
 *
 * which parses as the template whose graph holds the trained initializers.
 * The sizes are computed before anything is written, so the encoder streams
 * the weights straight from the trainer.
 */
#include "rt_train_internal.h"

#include <string.h>

enum { WIRE_VARINT = 0, WIRE_BYTES = 2 };

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(struct rt_train_out *o, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;
	while (v >= 0x80) {
		b[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (unsigned char)v;
	rt_train_out_write(o, b, n);
}

static void put_tag(struct rt_train_out *o, int field, int wire)
{
	put_varint(o, (uint64_t)field << 3 | (uint64_t)wire);
}

/* The encoded size of one TensorProto's fields. */
static uint64_t tensor_len(const struct rt_train_tensor *t)
{
	uint64_t n = 0, name = strlen(t->name), raw = 4 * (uint64_t)t->elems;
	for (int d = 0; d < t->rank; d++)
		n += 1 + varint_len((uint64_t)t->dims[d]);
	n += 1 + varint_len(1);           /* data_type */
	n += 1 + varint_len(name) + name; /* name */
	n += 1 + varint_len(raw) + raw;   /* raw_data */
	return n;
}

static void put_tensor(struct rt_train_out *o, const struct rt_train_tensor *t, const float *x)
{
	put_tag(o, 5, WIRE_BYTES); /* GraphProto.initializer */
	put_varint(o, tensor_len(t));
	for (int d = 0; d < t->rank; d++) {
		put_tag(o, 1, WIRE_VARINT);
		put_varint(o, (uint64_t)t->dims[d]);
	}
	put_tag(o, 2, WIRE_VARINT);
	put_varint(o, 1); /* FLOAT */
	size_t name = strlen(t->name);
	put_tag(o, 8, WIRE_BYTES);
	put_varint(o, name);
	rt_train_out_write(o, t->name, name);
	put_tag(o, 9, WIRE_BYTES);
	put_varint(o, 4 * (uint64_t)t->elems);
	rt_train_out_write_f32(o, x, t->elems);
}

int rt_train_export_onnx(struct rt_trainer *t, const char *path)
{
	const struct rt_train_model *m = rt_train_model_of(t);
	if (!m->onnx_template || !m->onnx_template_bytes)
		return rt_train_fail(t, RT_TRAIN_ERR_ARGUMENT,
		                     "%s: the model carries no ONNX template to export", path);
	uint64_t graph = 0;
	for (int i = 0; i < m->num_params + m->num_state; i++) {
		const struct rt_train_tensor *ts =
		        i < m->num_params ? &m->params[i] : &m->state[i - m->num_params];
		uint64_t n = tensor_len(ts);
		graph += 1 + varint_len(n) + n;
	}
	struct rt_train_out o;
	char err[1024];
	int rc = rt_train_out_open(&o, path, err, sizeof err);
	if (rc)
		return rt_train_fail(t, rc, "%s", err);
	rt_train_out_write(&o, m->onnx_template, m->onnx_template_bytes);
	put_tag(&o, 7, WIRE_BYTES); /* ModelProto.graph */
	put_varint(&o, graph);
	for (int i = 0; i < m->num_params; i++)
		put_tensor(&o, &m->params[i], rt_train_param(t, i));
	for (int i = 0; i < m->num_state; i++)
		put_tensor(&o, &m->state[i], rt_train_state(t, i));
	rc = rt_train_out_commit(&o, err, sizeof err);
	if (rc)
		return rt_train_fail(t, rc, "%s", err);
	return RT_TRAIN_OK;
}
