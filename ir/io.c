/*
 * io.c - reading input files safely.
 *
 * Model files, IR text and external data come from strangers. A path may
 * name a FIFO or a device, and a plain fopen() of a FIFO blocks forever, so
 * files are opened non-blocking, checked to be regular files, and only then
 * read.
 */
#include "ir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ir_open_regular(const char *path, const char **err, int64_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		*err = strerror(errno);
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		*err = "not a regular file";
		close(fd);
		return -1;
	}
	/* regular files never block; clear the flag so reads are ordinary */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (size)
		*size = (int64_t)st.st_size;
	return fd;
}

bool ir_read_at(int fd, void *buf, size_t n, int64_t offset)
{
	char *p = buf;
	while (n) {
		ssize_t got = pread(fd, p, n, (off_t)offset);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		p += got;
		n -= (size_t)got;
		offset += got;
	}
	return true;
}

void *ir_read_file(struct ir_ctx *ctx, const char *path, size_t *len, const char **err)
{
	int64_t size;
	int fd = ir_open_regular(path, err, &size);
	unsigned char *buf;
	if (fd < 0)
		return NULL;
	if ((uint64_t)size >= SIZE_MAX) {
		*err = "file too large";
		close(fd);
		return NULL;
	}
	/* not ir_malloc: callers report failure as a message, not an unwind */
	buf = ctx->alloc ? ctx->alloc(ctx->alloc_ud, NULL, (size_t)size + 1)
	                 : malloc((size_t)size + 1);
	if (!buf) {
		*err = "out of memory";
		close(fd);
		return NULL;
	}
	if (!ir_read_at(fd, buf, (size_t)size, 0)) {
		*err = "read error";
		ir_free(ctx, buf);
		close(fd);
		return NULL;
	}
	close(fd);
	buf[size] = 0;
	*len = (size_t)size;
	return buf;
}
