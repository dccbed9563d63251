/*
 * pb_scan.c - a few fields read straight from protobuf's wire format.
 *
 * onnxc run keys its cache on every byte a compile reads, external data
 * files included, and a cache hit must not import the model. Unpacking the
 * ModelProto with protobuf-c to learn which files its tensors name would
 * copy every initializer; walking the wire format reads only the tags and
 * skips the payloads. The walk is load.c's (fe_wire_walk, as its nesting
 * check uses): iterative and to a bounded depth, so hostile nesting costs
 * nothing. Malformed input makes it give up
 * (false): the caller then does without the shortcut, and the import, which
 * reads the same bytes, reports what is wrong.
 */
#include "cli.h"

#include <string.h>

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
	const uint8_t *key = NULL, *value = NULL;
	size_t key_n = 0, value_n = 0;
	struct fe_wire_field f;
	int r;
	while ((r = fe_wire_next(&p, end, &f)) > 0) {
		if (f.type == 2 && f.num == key_id) { /* the last one counts */
			key = f.val;
			key_n = (size_t)(f.end - f.val);
		} else if (f.type == 2 && f.num == value_id) {
			value = f.val;
			value_n = (size_t)(f.end - f.val);
		}
	}
	if (r < 0)
		return false;
	if (key && key_n == 8 && !memcmp(key, "location", 8))
		fn(ud, value ? (const char *)value : "", value_n);
	return true;
}

struct locations_walk {
	uint32_t external_id;
	pb_location_fn fn;
	void *ud;
};

static int location_field(void *ud, const ProtobufCMessageDescriptor *d,
                          const struct fe_wire_field *f)
{
	struct locations_walk *w = ud;
	if (d != &onnx__tensor_proto__descriptor || f->num != w->external_id)
		return 1;
	return location_entry(f->val, f->end, w->fn, w->ud) ? 0 : -1;
}

bool pb_external_locations(const void *buf, size_t len, pb_location_fn fn, void *ud)
{
	struct locations_walk w = { field_id(&onnx__tensor_proto__descriptor, "external_data"), fn,
		                    ud };
	return fe_wire_walk(buf, len, location_field, &w) == 1;
}

bool pb_tensor_name(const void *buf, size_t len, const char **name, size_t *n)
{
	const uint32_t name_id = field_id(&onnx__tensor_proto__descriptor, "name");
	const uint8_t *p = buf, *end = p + len;
	struct fe_wire_field f;
	int r;
	*name = NULL;
	*n = 0;
	while ((r = fe_wire_next(&p, end, &f)) > 0)
		if (f.type == 2 && f.num == name_id) { /* the last one counts */
			*name = (const char *)f.val;
			*n = (size_t)(f.end - f.val);
		}
	return r == 0;
}
