/*
 * fuzz.h - shared by the fuzz targets (tests/fuzz/fuzz_*.c): a quiet
 * diagnostic sink and a per-process scratch file the readers that take a
 * path read the input from.
 */
#ifndef ONNXC_FUZZ_H
#define ONNXC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fuzz_quiet(void *ud, const char *line)
{
	(void)ud;
	(void)line;
}

/* Writes data to a file named NAME in a private folder of this process
 * (/tmp/onnxc-fuzz-PID/NAME: external data a model names resolves in there,
 * never next to anything real); the path is in path. false on I/O errors.
 * The PID is zero-padded: the path's length, which diagnostics and arena
 * use follow, is the same in every run, so a fixed-seed run is repeatable. */
static inline int fuzz_write_file(char *path, size_t cap, const char *name, const uint8_t *data,
                                  size_t size)
{
	FILE *f;
	snprintf(path, cap, "/tmp/onnxc-fuzz-%010ld", (long)getpid());
	mkdir(path, 0700);
	snprintf(path, cap, "/tmp/onnxc-fuzz-%010ld/%s", (long)getpid(), name);
	f = fopen(path, "wb");
	if (!f)
		return 0;
	if (size && fwrite(data, 1, size, f) != size) {
		fclose(f);
		return 0;
	}
	return fclose(f) == 0;
}

#endif
