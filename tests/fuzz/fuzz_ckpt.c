/*
 * fuzz_ckpt.c - libFuzzer target: the training checkpoint reader
 * (rt_train_ckpt_read). The model id expected is the one the input's header
 * carries, so the fuzzer gets past that check to the sections. Unless the
 * top byte of the header's file size (offset 31; 0 in any real file) is set,
 * the input's size and FNV-1a checksum are fixed up first, so mutations
 * reach the sections instead of all failing the checksum.
 */
#include "fuzz.h"
#include "onnxc_train.h"
#include "rt_train_internal.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[256], err[512];
	struct rt_train_ckpt ck;
	void *buf = NULL;
	uint64_t id = 0;
	if (size >= 24)
		for (int i = 0; i < 8; i++)
			id |= (uint64_t)data[16 + i] << (8 * i);
	if (size >= 72 && data[31] == 0) {
		unsigned char *fixed = malloc(size);
		int ok;
		if (!fixed)
			return 0;
		memcpy(fixed, data, size);
		rt_train_put_u64(fixed + 24, size);
		rt_train_put_u64(fixed + size - 8,
		                 rt_train_fnv1a(RT_TRAIN_FNV_OFFSET, fixed, size - 8));
		ok = fuzz_write_file(path, sizeof path, "model.ckpt", fixed, size);
		free(fixed);
		if (!ok)
			return 0;
	} else if (!fuzz_write_file(path, sizeof path, "model.ckpt", data, size)) {
		return 0;
	}
	if (rt_train_ckpt_read(path, id, NULL, &ck, &buf, err, sizeof err) == RT_TRAIN_OK) {
		/* touch everything the reader says is there */
		volatile float sink = 0;
		for (int i = 0; i < ck.num_params; i++)
			for (int64_t j = 0; j < ck.params[i].elems; j++)
				sink += ck.params[i].data[j];
		for (int i = 0; i < ck.num_state; i++)
			for (int64_t j = 0; j < ck.state[i].elems; j++)
				sink += ck.state[i].data[j];
		(void)sink;
	}
	free(buf);
	return 0;
}
