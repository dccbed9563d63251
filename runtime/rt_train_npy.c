/*
 * rt_train_npy.c - data sets for training: .npy files, opened, checked
 * against the model's inputs and cut into samples.
 *
 * The reader is deliberately small and strict, since it reads whatever a
 * user points --data at: versions 1, 2 and 3 of the format, little-endian,
 * C order, the header dict parsed as the literal numpy writes (the three
 * keys, any order, each once); anything else is refused with a message
 * naming the file. The data must fill the file exactly.
 *
 * It uses the trainer (rt_train.c: its message, the model, the range
 * checks of class labels) and the file helpers (rt_train_ckpt.c); the
 * trainer does not use it.
 */
#include "rt_train_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* .npy                                                                     */
/* ------------------------------------------------------------------------ */

static const struct {
	const char *descr; /* without the byte order */
	int dtype, size;
} npy_types[] = {
	{ "f4", 1, 4 },  { "u1", 2, 1 },  { "i1", 3, 1 },  { "u2", 4, 2 },
	{ "i2", 5, 2 },  { "i4", 6, 4 },  { "i8", 7, 8 },  { "b1", 9, 1 },
	{ "f2", 10, 2 }, { "f8", 11, 8 }, { "u4", 12, 4 }, { "u8", 13, 8 },
};

struct hparse {
	const char *p, *end;
	char *err;
	size_t err_size;
};

static void skip_ws(struct hparse *h)
{
	while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
		h->p++;
}

/* A quoted string into buf; 0 on failure. */
static int parse_str(struct hparse *h, char *buf, size_t size)
{
	skip_ws(h);
	if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
		return 0;
	char q = *h->p++;
	size_t n = 0;
	while (h->p < h->end && *h->p != q) {
		if (*h->p == '\\' || n + 1 >= size)
			return 0;
		buf[n++] = *h->p++;
	}
	if (h->p >= h->end)
		return 0;
	h->p++;
	buf[n] = 0;
	return 1;
}

static int parse_word(struct hparse *h, const char *w)
{
	size_t n = strlen(w);
	skip_ws(h);
	if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n))
		return 0;
	h->p += n;
	return 1;
}

static int parse_shape(struct hparse *h, struct rt_train_npy *a)
{
	if (!parse_word(h, "("))
		return 0;
	a->rank = 0;
	for (;;) {
		skip_ws(h);
		if (h->p < h->end && *h->p == ')') {
			h->p++;
			return 1;
		}
		if (h->p >= h->end || *h->p < '0' || *h->p > '9')
			return 0;
		int64_t v = 0;
		while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
			if (v > ((int64_t)1 << 50))
				return 0;
			v = v * 10 + (*h->p++ - '0');
		}
		if (a->rank >= 8)
			return 0;
		a->dims[a->rank++] = v;
		skip_ws(h);
		if (h->p < h->end && *h->p == ',')
			h->p++;
		else if (h->p >= h->end || *h->p != ')')
			return 0;
	}
}

int rt_train_npy_parse_header(const char *text, size_t len, struct rt_train_npy *a, char *err,
                              size_t err_size)
{
	struct hparse h = { text, text + len, err, err_size };
	int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0, itemsize = 0;
	char key[32], descr[16];
	if (!parse_word(&h, "{"))
		goto bad;
	for (;;) {
		skip_ws(&h);
		if (h.p < h.end && *h.p == '}')
			break;
		if (!parse_str(&h, key, sizeof key) || !parse_word(&h, ":"))
			goto bad;
		if (!strcmp(key, "descr") && !have_descr) {
			have_descr = 1;
			if (!parse_str(&h, descr, sizeof descr))
				goto bad;
			size_t n = strlen(descr);
			int found = 0;
			for (size_t i = 0; n == 3 && i < sizeof npy_types / sizeof npy_types[0];
			     i++)
				if (!strcmp(descr + 1, npy_types[i].descr)) {
					found = 1;
					a->dtype = npy_types[i].dtype;
					itemsize = npy_types[i].size;
				}
			if (!found) {
				rt_train_set_err(err, err_size, "dtype '%s' is not supported",
				                 descr);
				return RT_TRAIN_ERR_DATA;
			}
			if (descr[0] == '>' && itemsize > 1) {
				rt_train_set_err(err, err_size,
				                 "big-endian data ('%s') is not supported", descr);
				return RT_TRAIN_ERR_DATA;
			}
			if (descr[0] != '<' && descr[0] != '|' && descr[0] != '=' &&
			    !(descr[0] == '>' && itemsize == 1))
				goto bad;
		} else if (!strcmp(key, "fortran_order") && !have_order) {
			have_order = 1;
			if (parse_word(&h, "True"))
				fortran = 1;
			else if (!parse_word(&h, "False"))
				goto bad;
		} else if (!strcmp(key, "shape") && !have_shape) {
			have_shape = 1;
			if (!parse_shape(&h, a))
				goto bad;
		} else {
			goto bad;
		}
		skip_ws(&h);
		if (h.p < h.end && *h.p == ',')
			h.p++;
		else if (h.p >= h.end || *h.p != '}')
			goto bad;
	}
	h.p++;
	skip_ws(&h);
	if (h.p != h.end || !have_descr || !have_order || !have_shape)
		goto bad;
	if (fortran) {
		rt_train_set_err(err, err_size,
		                 "fortran_order arrays are not supported (save in C order)");
		return RT_TRAIN_ERR_DATA;
	}
	a->elems = 1;
	for (int i = 0; i < a->rank; i++) {
		if (a->dims[i] && a->elems > ((int64_t)1 << 56) / a->dims[i]) {
			rt_train_set_err(err, err_size, "the shape is too large");
			return RT_TRAIN_ERR_DATA;
		}
		a->elems *= a->dims[i];
	}
	return RT_TRAIN_OK;
bad:
	rt_train_set_err(err, err_size, "malformed .npy header");
	return RT_TRAIN_ERR_DATA;
}

int rt_train_npy_read(const char *path, struct rt_train_npy *a, char *err, size_t err_size)
{
	memset(a, 0, sizeof *a);
	int64_t fsize;
	int how;
	FILE *f = rt_train_fopen_regular(path, O_RDONLY, &fsize, &how, err, err_size);
	if (!f) /* missing or not a file: the data set is wrong, not the system */
		return how == -2 || errno == ENOENT ? RT_TRAIN_ERR_DATA : RT_TRAIN_ERR_IO;
	unsigned char pre[12];
	char *text = NULL, msg[200];
	int rc = RT_TRAIN_ERR_DATA;
	if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
		rt_train_set_err(err, err_size, "%s: not a .npy file", path);
		goto out;
	}
	int major = pre[6];
	uint64_t hlen, start;
	if (major == 1) {
		hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
		start = 10;
	} else if (major == 2 || major == 3) {
		if (fread(pre + 10, 1, 2, f) != 2) {
			rt_train_set_err(err, err_size, "%s: truncated .npy header", path);
			goto out;
		}
		hlen = rt_train_get_u32(pre + 8);
		start = 12;
	} else {
		rt_train_set_err(err, err_size, "%s: .npy format version %d is not supported", path,
		                 major);
		goto out;
	}
	if (hlen > (1u << 20) || start + hlen > (uint64_t)fsize) {
		rt_train_set_err(err, err_size, "%s: truncated or malformed .npy header", path);
		goto out;
	}
	if (!(text = malloc(hlen + 1))) {
		rc = RT_TRAIN_ERR_NO_MEMORY;
		rt_train_set_err(err, err_size, "%s: out of memory", path);
		goto out;
	}
	if (fread(text, 1, hlen, f) != hlen) {
		rt_train_set_err(err, err_size, "%s: truncated .npy header", path);
		goto out;
	}
	text[hlen] = 0;
	if (memchr(text, 0, hlen)) {
		rt_train_set_err(err, err_size, "%s: malformed .npy header", path);
		goto out;
	}
	rc = rt_train_npy_parse_header(text, hlen, a, msg, sizeof msg);
	if (rc) {
		rt_train_set_err(err, err_size, "%s: %s", path, msg);
		goto out;
	}
	rc = RT_TRAIN_ERR_DATA;
	uint64_t bytes = (uint64_t)a->elems * (uint64_t)rt_train_npy_itemsize(a->dtype);
	uint64_t have = (uint64_t)fsize - start - hlen;
	if (bytes != have) {
		rt_train_set_err(err, err_size,
		                 "%s: the header's shape needs %llu data bytes; the file has %llu",
		                 path, (unsigned long long)bytes, (unsigned long long)have);
		goto out;
	}
	if (!(a->data = malloc(bytes ? bytes : 1))) {
		rc = RT_TRAIN_ERR_NO_MEMORY;
		rt_train_set_err(err, err_size, "%s: out of memory (%llu bytes)", path,
		                 (unsigned long long)bytes);
		goto out;
	}
	if (fread(a->data, 1, bytes, f) != bytes) {
		rc = RT_TRAIN_ERR_IO;
		rt_train_set_err(err, err_size, "%s: read error", path);
		free(a->data);
		a->data = NULL;
		goto out;
	}
	rc = RT_TRAIN_OK;
out:
	free(text);
	fclose(f);
	return rc;
}

int rt_train_npy_itemsize(int dtype)
{
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
		if (npy_types[i].dtype == dtype)
			return npy_types[i].size;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Data sets                                                                */
/* ------------------------------------------------------------------------ */

size_t rt_train_data_file_name(const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < n && i + 1 < size; i++) {
		char c = name[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		         (c >= '0' && c <= '9') || c == '_' || c == '-' || (c == '.' && i > 0);
		buf[i] = ok ? c : '_';
	}
	if (size)
		buf[n < size - 1 ? n : size - 1] = 0;
	if (n < size)
		snprintf(buf + n, size - n, ".npy");
	return n + 4;
}

static const char *dtype_name(int dtype)
{
	switch (dtype) {
	case 1: return "float32";
	case 2: return "uint8";
	case 3: return "int8";
	case 4: return "uint16";
	case 5: return "int16";
	case 6: return "int32";
	case 7: return "int64";
	case 9: return "bool";
	case 10: return "float16";
	case 11: return "float64";
	case 12: return "uint32";
	case 13: return "uint64";
	default: return "unknown";
	}
}

/* Converts a (in place or into a new buffer) to dtype; 0 if it cannot. */
static int convert(struct rt_train_npy *a, int dtype, const char *path, char *err, size_t n)
{
	if (a->dtype == dtype)
		return 1;
	int64_t e = a->elems;
	if (a->dtype == 11 && dtype == 1) { /* float64 -> float32, in place */
		const double *s = a->data;
		float *d = a->data;
		for (int64_t i = 0; i < e; i++)
			d[i] = (float)s[i];
	} else if (a->dtype == 7 && dtype == 6) { /* int64 -> int32 */
		const int64_t *s = a->data;
		int32_t *d = a->data;
		for (int64_t i = 0; i < e; i++) {
			if (s[i] < INT32_MIN || s[i] > INT32_MAX) {
				rt_train_set_err(
				        err, n,
				        "%s: element %lld (%lld) does not fit the input's int32",
				        path, (long long)i, (long long)s[i]);
				return 0;
			}
			d[i] = (int32_t)s[i];
		}
	} else if (a->dtype == 6 && dtype == 7) { /* int32 -> int64: grows */
		int64_t *d = malloc(8 * (size_t)(e ? e : 1));
		if (!d) {
			rt_train_set_err(err, n, "%s: out of memory", path);
			return 0;
		}
		const int32_t *s = a->data;
		for (int64_t i = 0; i < e; i++)
			d[i] = s[i];
		free(a->data);
		a->data = d;
	} else {
		rt_train_set_err(
		        err, n,
		        "%s: dtype %s, the input is %s (convertible: float64 to float32, int32 "
		        "and int64 to each other)",
		        path, dtype_name(a->dtype), dtype_name(dtype));
		return 0;
	}
	a->dtype = dtype;
	return 1;
}

void rt_train_data_close(struct rt_train_data *d)
{
	if (!d)
		return;
	for (int i = 0; d->arrays && i < d->num; i++)
		free(d->arrays[i]);
	free(d->arrays);
	free(d->sample_bytes);
	free(d);
}

int64_t rt_train_data_samples(const struct rt_train_data *d) { return d ? d->samples : 0; }

int rt_train_data_open(struct rt_trainer *t, const char *dir, struct rt_train_data **out)
{
	*out = NULL;
	const struct rt_train_model *m = rt_train_model_of(t);
	struct rt_train_data *d = calloc(1, sizeof *d);
	char msg[600];
	char *path = NULL;
	int rc = RT_TRAIN_ERR_NO_MEMORY;
	if (!d || !(d->arrays = calloc((size_t)m->num_data + 1, sizeof *d->arrays)) ||
	    !(d->sample_bytes = calloc((size_t)m->num_data + 1, sizeof *d->sample_bytes)) ||
	    !(path = malloc(strlen(dir) + 1100)))
		goto fail_mem;
	d->num = m->num_data;
	d->samples = -1;
	const char *first = NULL;
	for (int i = 0; i < m->num_data; i++) {
		const struct rt_train_tensor *in = &m->data[i];
		char fname[1024];
		rt_train_data_file_name(in->name, fname, sizeof fname);
		snprintf(path, strlen(dir) + 1100, "%s/%s", dir, fname);
		struct rt_train_npy a;
		rc = rt_train_npy_read(path, &a, msg, sizeof msg);
		if (rc) {
			rt_train_fail(t, rc, "%s (data input '%s')", msg, in->name);
			goto fail;
		}
		rc = RT_TRAIN_ERR_DATA;
		int ok = a.rank == in->rank + 1;
		for (int k = 0; ok && k < in->rank; k++)
			ok = a.dims[k + 1] == in->dims[k];
		if (!ok) {
			char want[200], got[200];
			size_t w = (size_t)snprintf(want, sizeof want, "(N");
			for (int k = 0; k < in->rank && w < sizeof want; k++)
				w += (size_t)snprintf(want + w, sizeof want - w, ", %lld",
				                      (long long)in->dims[k]);
			size_t g = (size_t)snprintf(got, sizeof got, "(");
			for (int k = 0; k < a.rank && g < sizeof got; k++)
				g += (size_t)snprintf(got + g, sizeof got - g,
				                      k ? ", %lld" : "%lld", (long long)a.dims[k]);
			rt_train_fail(t, rc,
			              "%s: shape %s); data input '%s' needs %s), N samples first",
			              path, got, in->name, want);
			free(a.data);
			goto fail;
		}
		if (!convert(&a, in->dtype, path, msg, sizeof msg)) {
			rt_train_fail(t, rc, "%s", msg);
			free(a.data);
			goto fail;
		}
		d->arrays[i] = a.data;
		d->sample_bytes[i] = (size_t)in->elems * (size_t)rt_train_npy_itemsize(in->dtype);
		/* class labels and indices: every sample checked once, here */
		for (int k = 0; k < m->num_ranges; k++) {
			const struct rt_train_range *r = &m->ranges[k];
			int64_t v, at;
			if (r->data != i ||
			    (at = rt_train_range_find(m, r, a.data, a.elems, &v)) < 0)
				continue;
			rt_train_range_say(r, at, in->elems, v, msg, sizeof msg);
			rt_train_fail(t, rc, "%s: %s (data input '%s')", path, msg, in->name);
			goto fail;
		}
		if (d->samples >= 0 && a.dims[0] != d->samples) {
			rt_train_fail(t, rc, "%s: %lld samples, but %s has %lld", path,
			              (long long)a.dims[0], first, (long long)d->samples);
			goto fail;
		}
		if (d->samples < 0)
			first = m->data[i].name;
		d->samples = a.dims[0];
	}
	if (d->samples < rt_train_global_batch(t)) {
		int64_t gb = rt_train_global_batch(t);
		char ranks[64] = "";
		if (gb != m->batch)
			snprintf(ranks, sizeof ranks, " (%lld ranks of %lld)",
			         (long long)(gb / m->batch), (long long)m->batch);
		rt_train_fail(t, RT_TRAIN_ERR_DATA,
		              "%s: %lld samples, fewer than one batch of %lld%s", dir,
		              (long long)(d->samples < 0 ? 0 : d->samples), (long long)gb, ranks);
		goto fail;
	}
	free(path);
	*out = d;
	return RT_TRAIN_OK;
fail_mem:
	rc = rt_train_fail(t, RT_TRAIN_ERR_NO_MEMORY, "%s: out of memory", dir);
fail:
	free(path);
	rt_train_data_close(d);
	return rc;
}
