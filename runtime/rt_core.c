/*
 * rt_core.c - runtime contexts, the thread pool, model instances, weights.
 *
 * The thread pool is per context (per model instance): nthreads-1 workers
 * plus the calling thread. A parallel region publishes a job (function,
 * argument, iteration count, chunk size) under a generation counter; workers
 * and the caller take chunks with an atomic counter until none are left, and
 * the caller waits for the last chunk to finish. Workers spin briefly before
 * sleeping on a condition variable: long spins would steal cores from
 * OpenBLAS's own threads, which run in between our regions.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "onnxc_rt.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Status codes, dtypes                                                     */
/* ------------------------------------------------------------------------ */

const char *rt_status_message(int status)
{
	static const char *const msgs[RT_STATUS_COUNT] = {
		[RT_OK] = "success",
		[RT_ERR_ARGUMENT] = "invalid argument (a NULL model, input or output)",
		[RT_ERR_NO_MEMORY] = "out of memory",
		[RT_ERR_WEIGHTS_OPEN] = "the weights file cannot be opened or read",
		[RT_ERR_WEIGHTS_FORMAT] =
		        "the weights file is not an onnxc weights file or is truncated",
		[RT_ERR_WEIGHTS_MODEL] = "the weights file belongs to another model",
		[RT_ERR_INPUT_SIZE] = "an input or output buffer has the wrong size",
		[RT_ERR_INDEX] = "an index input is out of range",
		[RT_ERR_NO_DEVICE] = "no CUDA device or driver is available",
		[RT_ERR_DEVICE] = "a CUDA, cuBLAS or cuDNN call failed",
		[RT_ERR_THREADS] = "worker threads could not be started",
		[RT_ERR_BRANCH] = "a run-time If took a branch that cannot run with the shapes the "
		                  "model was compiled for",
	};
	if (status < 0 || status >= RT_STATUS_COUNT || !msgs[status])
		return "unknown status";
	return msgs[status];
}

int rt_dtype_size(int dtype)
{
	switch (dtype) {
	case RT_F64:
	case RT_I64:
	case RT_U64: return 8;
	case RT_F32:
	case RT_I32:
	case RT_U32: return 4;
	case RT_F16:
	case RT_BF16:
	case RT_I16:
	case RT_U16: return 2;
	case RT_I8:
	case RT_U8:
	case RT_BOOL: return 1;
	default: return 0;
	}
}

/* ------------------------------------------------------------------------ */
/* Thread pool                                                              */
/* ------------------------------------------------------------------------ */

/*
 * One parallel region. It lives on the caller's stack; workers find it
 * through ctx->job under the mutex and count themselves in refs, and the
 * caller unpublishes it and waits for refs to drop to zero before it
 * returns, so no worker ever touches a finished region's counters (a
 * worker late from one region must not take chunks of the next).
 */
struct job {
	rt_range_fn fn;
	void *arg;
	int64_t n, chunk;
	_Atomic int64_t next;      /* next chunk start */
	_Atomic int64_t remaining; /* iterations not yet finished */
	int refs;                  /* workers inside (under the mutex) */
};

struct rt_ctx {
	int nthreads;
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t wake;    /* a new region, or stop */
	pthread_cond_t done_cv; /* a worker left a region */
	struct job *job;        /* the region on offer, or NULL */
	_Atomic uint64_t generation;
	int stop;
};

/* Takes chunks of j until none are left. */
static void work(struct job *j)
{
	for (;;) {
		int64_t b = atomic_fetch_add(&j->next, j->chunk), e;
		if (b >= j->n)
			return;
		e = b + j->chunk < j->n ? b + j->chunk : j->n;
		j->fn(j->arg, b, e);
		atomic_fetch_sub(&j->remaining, e - b);
	}
}

static void *worker(void *p)
{
	struct rt_ctx *c = p;
	uint64_t seen = 0;
	for (;;) {
		struct job *j;
		/* a short spin catches back-to-back regions without a wakeup */
		for (int i = 0; i < 2000 && atomic_load(&c->generation) == seen; i++)
			__builtin_ia32_pause();
		pthread_mutex_lock(&c->mu);
		while (atomic_load(&c->generation) == seen && !c->stop)
			pthread_cond_wait(&c->wake, &c->mu);
		if (c->stop) {
			pthread_mutex_unlock(&c->mu);
			return NULL;
		}
		seen = atomic_load(&c->generation);
		if ((j = c->job))
			j->refs++;
		pthread_mutex_unlock(&c->mu);
		if (!j)
			continue;
		work(j);
		pthread_mutex_lock(&c->mu);
		if (--j->refs == 0)
			pthread_cond_signal(&c->done_cv);
		pthread_mutex_unlock(&c->mu);
	}
}

/* The CPUs this process may run on: its affinity (a launcher's binding -
 * mpirun binds each of two ranks to a core -, taskset, a container's
 * cpuset), else every online one. Twice the threads of the cores a process
 * is bound to halved the throughput of `mpirun -np 2 OUT/train`. */
static int online_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* OpenBLAS's own threads would compete with ours (see rt_gemm.c). */
void openblas_set_num_threads(int n);

/* Failure injection: the N-th allocation of the process fails under
 * ONNXC_FAIL_ALLOC=N. Its counter is the runtime's only process-wide state
 * and exists in debug builds only. */
static int fail_this_alloc(void)
{
#ifndef NDEBUG
	static atomic_long count;
	const char *env = getenv("ONNXC_FAIL_ALLOC");
	return env && *env && atomic_fetch_add(&count, 1) + 1 == atol(env);
#else
	return 0;
#endif
}

int rt_fail_alloc_supported(void)
{
#ifndef NDEBUG
	return 1;
#else
	return 0;
#endif
}

void *rt_calloc(size_t n, size_t size) { return fail_this_alloc() ? NULL : calloc(n, size); }

void *rt_alloc_aligned(size_t align, size_t size)
{
	void *p;
	if (fail_this_alloc() || posix_memalign(&p, align, size) != 0)
		return NULL;
	return p;
}

int rt_ctx_create(struct rt_ctx **out, int nthreads)
{
	struct rt_ctx *c;
	const char *env = getenv("ONNXC_THREADS");
	*out = NULL;
	if (env && atoi(env) > 0)
		nthreads = atoi(env);
	if (nthreads <= 0)
		nthreads = online_cpus();
	if (nthreads > 256)
		nthreads = 256;
	if (!(c = rt_calloc(1, sizeof *c)))
		return RT_ERR_NO_MEMORY;
	openblas_set_num_threads(1);
	c->nthreads = nthreads;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->wake, NULL);
	pthread_cond_init(&c->done_cv, NULL);
	if (nthreads > 1) {
		if (!(c->threads = rt_calloc((size_t)nthreads - 1, sizeof *c->threads))) {
			rt_ctx_destroy(c);
			return RT_ERR_NO_MEMORY;
		}
		for (int i = 0; i < nthreads - 1; i++)
			if (pthread_create(&c->threads[i], NULL, worker, c) != 0) {
				c->nthreads = i + 1;
				rt_ctx_destroy(c);
				return RT_ERR_THREADS;
			}
	}
	*out = c;
	return RT_OK;
}

void rt_ctx_destroy(struct rt_ctx *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	atomic_fetch_add(&c->generation, 1);
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; c->threads && i < c->nthreads - 1; i++)
		pthread_join(c->threads[i], NULL);
	free(c->threads);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->wake);
	pthread_cond_destroy(&c->done_cv);
	free(c);
}

int rt_ctx_threads(const struct rt_ctx *c) { return c->nthreads; }

int rt_trap(struct rt_ctx *ctx, const struct rt_trap_desc *d, void *y)
{
	(void)ctx, (void)d, (void)y;
	return RT_ERR_BRANCH;
}

void rt_parallel(struct rt_ctx *c, int64_t n, int64_t grain, rt_range_fn fn, void *arg)
{
	struct job j = { .fn = fn, .arg = arg, .n = n };
	if (n <= 0)
		return;
	if (grain < 1)
		grain = 1;
	if (c->nthreads == 1 || n <= grain) {
		fn(arg, 0, n);
		return;
	}
	/* about four chunks per thread balances load without much overhead */
	j.chunk = (n + 4 * c->nthreads - 1) / (4 * c->nthreads);
	if (j.chunk < grain)
		j.chunk = grain;
	atomic_store(&j.next, 0);
	atomic_store(&j.remaining, n);
	pthread_mutex_lock(&c->mu);
	c->job = &j;
	atomic_fetch_add(&c->generation, 1);
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->mu);
	work(&j);
	/* workers still inside finish their chunks; then nobody may enter */
	for (int i = 0; i < 4000 && atomic_load(&j.remaining) > 0; i++)
		__builtin_ia32_pause();
	pthread_mutex_lock(&c->mu);
	c->job = NULL;
	while (j.refs > 0)
		pthread_cond_wait(&c->done_cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

struct launch {
	rt_kernel_fn fn;
	void *const *args;
};

static void launch_range(void *p, int64_t b, int64_t e)
{
	struct launch *l = p;
	l->fn(l->args, b, e);
}

void rt_launch(struct rt_ctx *c, rt_kernel_fn fn, void *const *args, int64_t outer, int64_t inner)
{
	struct launch l = { fn, args };
	/* chunks of at least ~16k elements: below that, threads cost more */
	int64_t grain = inner > 0 ? (16384 + inner - 1) / inner : 1;
	rt_parallel(c, outer, grain, launch_range, &l);
}

/* ------------------------------------------------------------------------ */
/* Model instances and weights                                              */
/* ------------------------------------------------------------------------ */

static uint64_t load_u64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static int check_header(const unsigned char *h, size_t file_bytes, uint64_t model_id,
                        size_t weights_bytes)
{
	if (file_bytes < RT_WEIGHTS_HEADER || memcmp(h, RT_WEIGHTS_MAGIC, 8) != 0 ||
	    load_u64(h + 8) != 1)
		return RT_ERR_WEIGHTS_FORMAT;
	if (load_u64(h + 16) != model_id || load_u64(h + 24) != weights_bytes)
		return RT_ERR_WEIGHTS_MODEL;
	if (file_bytes - RT_WEIGHTS_HEADER < weights_bytes)
		return RT_ERR_WEIGHTS_FORMAT;
	return RT_OK;
}

static int load_weights(struct rt_weights *w, const char *path, uint64_t model_id,
                        size_t weights_bytes)
{
	struct stat st;
	unsigned char header[RT_WEIGHTS_HEADER];
	int fd, status;
	void *map;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return RT_ERR_WEIGHTS_OPEN;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return RT_ERR_WEIGHTS_OPEN;
	}
	if ((size_t)st.st_size < RT_WEIGHTS_HEADER ||
	    pread(fd, header, RT_WEIGHTS_HEADER, 0) != RT_WEIGHTS_HEADER) {
		close(fd);
		return RT_ERR_WEIGHTS_FORMAT;
	}
	if ((status = check_header(header, (size_t)st.st_size, model_id, weights_bytes))) {
		close(fd);
		return status;
	}
	/* map read-only: weights are shared between instances by the page cache */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return RT_ERR_WEIGHTS_OPEN;
	w->map = map;
	w->map_bytes = (size_t)st.st_size;
	w->data = (const unsigned char *)map + RT_WEIGHTS_HEADER;
	w->bytes = weights_bytes;
	return RT_OK;
}

int rt_weights_open(struct rt_weights *w, const char *path, const void *embedded, uint64_t model_id,
                    size_t weights_bytes)
{
	int status;
	memset(w, 0, sizeof *w);
	if (path) {
		status = load_weights(w, path, model_id, weights_bytes);
	} else if (embedded) {
		status = check_header(embedded, RT_WEIGHTS_HEADER + weights_bytes, model_id,
		                      weights_bytes);
		w->data = (const unsigned char *)embedded + RT_WEIGHTS_HEADER;
		w->bytes = weights_bytes;
	} else {
		status = weights_bytes ? RT_ERR_WEIGHTS_OPEN : RT_OK;
	}
	if (status)
		rt_weights_close(w);
	return status;
}

void rt_weights_close(struct rt_weights *w)
{
	if (w->map)
		munmap(w->map, w->map_bytes);
	memset(w, 0, sizeof *w);
}

int rt_model_open(struct rt_model *m, size_t arena_bytes, const char *path, const void *embedded,
                  uint64_t model_id, size_t weights_bytes)
{
	int status;
	const char *poison = getenv("ONNXC_POISON_ARENA");
	struct rt_weights w;
	memset(m, 0, sizeof *m);
	if ((status = rt_weights_open(&w, path, embedded, model_id, weights_bytes)))
		goto fail;
	m->weights = w.data;
	m->weights_bytes = w.bytes;
	m->map = w.map;
	m->map_bytes = w.map_bytes;
	m->arena_bytes = arena_bytes;
	if (arena_bytes && !(m->arena = rt_alloc_aligned(64, arena_bytes))) {
		status = RT_ERR_NO_MEMORY;
		goto fail;
	}
	m->poison_arena = poison && *poison && *poison != '0';
	if ((status = rt_ctx_create(&m->ctx, 0)))
		goto fail;
	return RT_OK;
fail:
	rt_model_close(m);
	return status;
}

double rt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void rt_model_steps(struct rt_model *m, int nsteps, const char *const *names)
{
	const char *p = getenv("ONNXC_PROFILE");
	if (!p || !*p || *p == '0' || nsteps <= 0)
		return;
	if (!(m->step_ms = calloc((size_t)nsteps, sizeof *m->step_ms)))
		return; /* profiling is best effort */
	m->profile = 1;
	m->nsteps = nsteps;
	m->step_names = names;
}

void rt_profile_step(struct rt_model *m, int s, double t0) { m->step_ms[s] += rt_now_ms() - t0; }

double rt_step_begin(const struct rt_model *m) { return m->profile ? rt_now_ms() : 0; }

void rt_step_end(struct rt_model *m, int s, double t0)
{
	if (m->profile)
		rt_profile_step(m, s, t0);
}

struct step_time {
	double ms;
	int step;
};

static int by_time(const void *a, const void *b)
{
	double x = ((const struct step_time *)a)->ms, y = ((const struct step_time *)b)->ms;
	return x < y ? 1 : x > y ? -1 : 0;
}

void rt_profile_print(int64_t runs, int nsteps, const char *const *names, const double *step_ms)
{
	struct step_time *t;
	double total = 0;
	if (runs <= 0 || nsteps <= 0 || !(t = malloc(sizeof *t * (size_t)nsteps)))
		return;
	for (int i = 0; i < nsteps; i++) {
		t[i] = (struct step_time){ step_ms[i], i };
		total += step_ms[i];
	}
	qsort(t, (size_t)nsteps, sizeof *t, by_time);
	fprintf(stderr, "onnxc profile: %lld runs, %.3f ms per run\n", (long long)runs,
	        total / (double)runs);
	for (int i = 0; i < nsteps; i++)
		fprintf(stderr, "%8.3f ms %5.1f%%  step %d: %s\n", t[i].ms / (double)runs,
		        total > 0 ? 100 * t[i].ms / total : 0, t[i].step, names[t[i].step]);
	free(t);
}

static void profile_report(const struct rt_model *m)
{
	rt_profile_print(m->runs, m->nsteps, m->step_names, m->step_ms);
}

void rt_model_close(struct rt_model *m)
{
	if (m->profile)
		profile_report(m);
	free(m->step_ms);
	rt_ctx_destroy(m->ctx);
	free(m->arena);
	if (m->map)
		munmap(m->map, m->map_bytes);
	free(m->heap_weights);
	memset(m, 0, sizeof *m);
}

const char *rt_default_weights(const char *file, char *buf, size_t n)
{
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		char *slash;
		exe[len] = 0;
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, n, "%s/%s", exe, file);
			if (access(buf, R_OK) == 0)
				return buf;
		}
	}
	snprintf(buf, n, "%s", file);
	return buf;
}

void rt_model_begin_run(struct rt_model *m)
{
	m->runs++;
	if (m->poison_arena) {
		float nan = NAN;
		for (size_t i = 0; i + 4 <= m->arena_bytes; i += 4)
			memcpy(m->arena + i, &nan, 4);
	}
}
