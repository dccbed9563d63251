/*
 * rt_train_internal.h - what the training runtime's files share and do not
 * publish: the atomic file writer (rt_train_ckpt.c), the RNG
 * (rt_train_rng.c), the .npy reader (rt_train_npy.c) and the trainer's
 * insides (rt_train.c).
 *
 * The files use each other one way only, each the ones below it:
 *   rt_train_main.c   the program: everything below
 *   rt_train_onnx.c   the ONNX export: the trainer, the file writer
 *   rt_train_npy.c    data sets: the trainer, the file helpers
 *   rt_train.c        the trainer: the RNG, checkpoints
 *   rt_train_rng.c    nothing
 *   rt_train_ckpt.c   nothing but libc (the compiler builds it in too)
 */
#ifndef ONNXC_RT_TRAIN_INTERNAL_H
#define ONNXC_RT_TRAIN_INTERNAL_H

#include "onnxc_train.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * Every file the training runtime opens goes through here: opens path with
 * flags (O_RDONLY, or O_WRONLY with O_CREAT and O_TRUNC or O_APPEND) if and
 * only if it is a regular file. O_NONBLOCK keeps the open from waiting on a
 * FIFO (for a reader or a writer that never comes); fstat then refuses
 * FIFOs, devices and folders, and the descriptor is made blocking again
 * (regular files never block) and close-on-exec. Returns the descriptor,
 * and with size the file's size; or -1 after "PATH: cannot open: why" or
 * -2 after "PATH: not a regular file" in err.
 */
int rt_train_open_regular(const char *path, int flags, int64_t *size, char *err, size_t err_size);
/* The same as a stdio stream (binary; appending unless flags is O_RDONLY).
 * NULL on failure; with how, -1 (errno says why) or -2 as above. */
FILE *rt_train_fopen_regular(const char *path, int flags, int64_t *size, int *how, char *err,
                             size_t err_size);

/* An output file written to PATH.tmp.PID, then fsynced and renamed over
 * PATH, the folder fsynced: readers see the old file or the whole new one. */
struct rt_train_out {
	int fd;
	char *path, *tmp;
	unsigned char *buf;
	size_t used;
	uint64_t hash; /* FNV-1a 64 of everything written */
	uint64_t bytes;
	int err_no; /* the first write error */
};
int rt_train_out_open(struct rt_train_out *o, const char *path, char *err, size_t err_size);
void rt_train_out_write(struct rt_train_out *o, const void *p, size_t n);
/* n floats, little-endian whatever the host. */
void rt_train_out_write_f32(struct rt_train_out *o, const float *x, int64_t n);
/* vsnprintf into err when err is not NULL (the readers' and the trainer's
 * messages), with control characters from names and paths made '?'. */
void rt_train_set_err(char *err, size_t err_size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void rt_train_vset_err(char *err, size_t err_size, const char *fmt, va_list ap);
/* Flushes, fsyncs, renames; frees o either way. */
int rt_train_out_commit(struct rt_train_out *o, char *err, size_t err_size);
/* Removes the temporary file and frees o. */
void rt_train_out_abort(struct rt_train_out *o);

#define RT_TRAIN_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t rt_train_fnv1a(uint64_t h, const void *p, size_t n);

/* xoshiro256**, seeded through splitmix64. */
void rt_train_rng_seed(uint64_t s[4], uint64_t seed);
uint64_t rt_train_rng_next(uint64_t s[4]);
/* Uniform in [0, n) without modulo bias. */
uint64_t rt_train_rng_below(uint64_t s[4], uint64_t n);
/* The dropout seed of the step that follows `steps` steps: SplitMix64's
 * output `steps` of a stream keyed by the seed (apart from the data
 * order's), so it depends on nothing else and resumes exactly. */
uint64_t rt_train_dropout_seed(uint64_t seed, uint64_t steps);
/* Fisher-Yates: perm = a shuffled 0..n-1. */
void rt_train_shuffle(uint64_t s[4], int64_t *perm, int64_t n);

/* A .npy array read whole. */
struct rt_train_npy {
	int dtype; /* ONNX code */
	int rank;
	int64_t dims[8];
	int64_t elems;
	void *data; /* malloc'd */
};
/* Reads path; on failure a status and a message naming the file. */
int rt_train_npy_read(const char *path, struct rt_train_npy *a, char *err, size_t err_size);
/* The size of an ONNX dtype .npy supports (0: none). */
int rt_train_npy_itemsize(int dtype);
/* Parses a header dict (the text after the length field). */
int rt_train_npy_parse_header(const char *h, size_t len, struct rt_train_npy *a, char *err,
                              size_t err_size);

/* The first of n values of data input r->data (int32 or int64) outside r:
 * its position, its value in *v; -1 when all are in range. */
int64_t rt_train_range_find(const struct rt_train_model *m, const struct rt_train_range *r,
                            const void *values, int64_t n, int64_t *v);
/* Where value v, found at position at of values of elems per sample, is
 * and why it is wrong: "sample 4: class label 7 is not in [0, 3)"
 * (", element E" after the sample when a sample has several). */
void rt_train_range_say(const struct rt_train_range *r, int64_t at, int64_t elems, int64_t v,
                        char *buf, size_t size);

/* An opened data set: one array per data input, in the model's dtypes. */
struct rt_train_data {
	int num;
	int64_t samples;
	void **arrays;
	size_t *sample_bytes;
};

/* printf into the trainer's message; returns status. */
int rt_train_fail(struct rt_trainer *t, int status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
const struct rt_train_model *rt_train_model_of(const struct rt_trainer *t);
/* The samples one step takes over all ranks: model->batch times the ranks. */
int64_t rt_train_global_batch(const struct rt_trainer *t);

/* Little-endian stores and loads. */
static inline void rt_train_put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline void rt_train_put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t rt_train_get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}
static inline uint64_t rt_train_get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#endif
