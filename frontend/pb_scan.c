/*
 * pb_scan.c - a few fields read straight from protobuf's wire format.
 *
 * onnxc run keys its cache on every byte a compile reads, external data
 * files included, and a cache hit must not import the model. Unpacking the
 * ModelProto with protobuf-c to learn which files its tensors name would
 * copy every initializer; walking the wire format reads only the tags and
 * skips the payloads. The walk follows the fields the schema declares as
 * messages (as load.c's nesting check does), iteratively and to a bounded
 * depth, so hostile nesting costs nothing. Malformed input makes it give up
 * (false): the caller then does without the shortcut, and the import, which
 * reads the same bytes, reports what is wrong.
 */
#include "cli.h"

#include <string.h>

#define PB_MAX_NESTING 100 /* load.c refuses models nested deeper */

static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
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

/* Reads one field at *p: its number and wire type, and for a
 * length-delimited field its bytes (body, n). false on malformed input
 * (groups included: ONNX has none). */
static bool pb_field(const uint8_t **p, const uint8_t *end, uint64_t *number, unsigned *wire,
                     const uint8_t **body, uint64_t *n)
{
	uint64_t tag, v;
	if (!pb_varint(p, end, &tag))
		return false;
	*number = tag >> 3;
	*wire = (unsigned)(tag & 7);
	switch (*wire) {
	case 0: return pb_varint(p, end, &v);
	case 1:
		if (end - *p < 8)
			return false;
		*p += 8;
		return true;
	case 5:
		if (end - *p < 4)
			return false;
		*p += 4;
		return true;
	case 2:
		if (!pb_varint(p, end, n) || *n > (uint64_t)(end - *p))
			return false;
		*body = *p;
		*p += *n;
		return true;
	default: return false;
	}
}

static uint32_t field_id(const ProtobufCMessageDescriptor *d, const char *name)
{
	const ProtobufCFieldDescriptor *fd =
	        protobuf_c_message_descriptor_get_field_by_name(d, name);
	IR_ASSERT(fd);
	return fd->id;
}

/* One external_data entry: calls fn with the value when the key is
 * "location". */
static bool location_entry(const uint8_t *p, const uint8_t *end, pb_location_fn fn, void *ud)
{
	const uint32_t key_id = field_id(&onnx__string_string_entry_proto__descriptor, "key"),
	               value_id = field_id(&onnx__string_string_entry_proto__descriptor, "value");
	const uint8_t *key = NULL, *value = NULL, *body = NULL;
	uint64_t key_n = 0, value_n = 0, number, n = 0;
	unsigned wire;
	while (p < end) {
		if (!pb_field(&p, end, &number, &wire, &body, &n))
			return false;
		if (wire == 2 && number == key_id) { /* the last one counts */
			key = body;
			key_n = n;
		} else if (wire == 2 && number == value_id) {
			value = body;
			value_n = n;
		}
	}
	if (key && key_n == 8 && !memcmp(key, "location", 8))
		fn(ud, value ? (const char *)value : "", (size_t)value_n);
	return true;
}

bool pb_external_locations(const void *buf, size_t len, pb_location_fn fn, void *ud)
{
	const uint32_t external_id = field_id(&onnx__tensor_proto__descriptor, "external_data");
	struct {
		const uint8_t *end;
		const ProtobufCMessageDescriptor *d;
	} stack[PB_MAX_NESTING];
	const uint8_t *p = buf;
	int sp = 0;
	stack[0].end = p + len;
	stack[0].d = &onnx__model_proto__descriptor;
	while (sp >= 0) {
		const ProtobufCFieldDescriptor *fd;
		const uint8_t *body = NULL;
		uint64_t number, n = 0;
		unsigned wire;
		if (p == stack[sp].end) {
			sp--;
			continue;
		}
		if (!pb_field(&p, stack[sp].end, &number, &wire, &body, &n))
			return false;
		if (wire != 2 || number > UINT32_MAX)
			continue;
		fd = protobuf_c_message_descriptor_get_field(stack[sp].d, (unsigned)number);
		if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (stack[sp].d == &onnx__tensor_proto__descriptor && number == external_id) {
			if (!location_entry(body, body + n, fn, ud))
				return false;
			continue;
		}
		if (sp + 1 == PB_MAX_NESTING)
			return false;
		sp++;
		stack[sp].end = body + n;
		stack[sp].d = fd->descriptor;
		p = body;
	}
	return true;
}

bool pb_tensor_name(const void *buf, size_t len, const char **name, size_t *n)
{
	const uint32_t name_id = field_id(&onnx__tensor_proto__descriptor, "name");
	const uint8_t *p = buf, *end = p + len, *body = NULL;
	uint64_t number, size = 0;
	unsigned wire;
	*name = NULL;
	*n = 0;
	while (p < end) {
		if (!pb_field(&p, end, &number, &wire, &body, &size))
			return false;
		if (wire == 2 && number == name_id) { /* the last one counts */
			*name = (const char *)body;
			*n = (size_t)size;
		}
	}
	return true;
}
