/*
 * rtc_core.c - CUDA model instances: device memory, weights, staging,
 * the stream, the library handles, the PTX module and generated-kernel
 * launches, CUDA Graph capture and replay, profiling, errors.
 *
 * An instance owns, on the current device: the arena (the planned
 * intermediates), the weights (read and checked on the host exactly as the
 * CPU runtime does, through rt_weights_open, then uploaded), one device
 * block holding every graph input and output plus the index-error flag,
 * and one pinned host block laid out the same way, so a run is one host
 * copy and one H2D copy for all inputs, and one D2H copy for all outputs
 * and the flag together. Its stream is non-blocking (it never waits for
 * the legacy default stream, which other code in the process may use).
 *
 * NAME_create makes the plans (rtc_blas.c, rtc_dnn.c), which say how much
 * workspace they need; rtc_capture_begin allocates the largest request
 * (cudaMalloc is not allowed while a stream is being captured) and starts
 * capturing the stream in thread-local mode, so another thread's
 * unrelated CUDA calls cannot invalidate the capture; the steps run once
 * into the capture; rtc_capture_end instantiates the graph. A run then
 * copies the inputs in, launches the graph and copies the outputs out.
 * With ONNXC_CUDA_GRAPH=0 or ONNXC_PROFILE=1 the instance is "direct" and
 * the generated code calls its steps at every run; profiling records a
 * pair of CUDA events around each step and adds up their distances after
 * the run's final synchronization.
 *
 * The generated kernels come as PTX, loaded with the CUDA runtime's
 * library API (cudaLibraryLoadData; never the driver API: linking libcuda
 * makes binaries that fail to start where it is only a stub) and launched
 * with cudaLaunchKernel on their cudaKernel_t.
 *
 * Errors: rtc_check and rtc_fail keep a message per instance and map the
 * no-device and no-driver statuses to RT_ERR_NO_DEVICE, the rest to
 * RT_ERR_DEVICE. rtc_model_open builds the instance step by step and on
 * any failure hands it to rtc_model_close, which frees exactly what was
 * made, so nothing leaks on any path. Plans register destructors that run
 * at close. There is no global state.
 */
#include "rtc_internal.h"

#include <cublasLt.h>
#include <cudnn.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Device sub-buffers start on this boundary (cuBLASLt and cuDNN like 256). */
#define RTC_ALIGN 256
/* rtc_launch's block size, and resident blocks of that size per multiprocessor. */
#define RTC_THREADS       256
#define RTC_BLOCKS_PER_SM 8
/* rtc_grid never launches more than this many waves of resident blocks. */
#define RTC_WAVES 4
/* The most pointer arguments a generated kernel takes. */
#define RTC_MAX_ARGS 64
/* ONNXC_CUDA_WORKSPACE_MB when unset. */
#define RTC_DEFAULT_WORKSPACE_MB 256

struct rtc_fn {
	cudaKernel_t kernel;
};

struct rtc_closer {
	void (*fn)(void *);
	void *arg;
};

struct rtc_model {
	int device, sm_count;
	int verbose, direct, poison;
	size_t ws_limit;
	cudaStream_t stream;
	cublasLtHandle_t lt;
	cudnnHandle_t dnn;
	cudaLibrary_t lib; /* NULL: the model has no generated kernels */
	/* device memory */
	unsigned char *arena, *weights, *io;
	size_t arena_bytes, weights_bytes;
	struct rt_weights host_weights; /* while opening: read, not yet uploaded */
	/* inputs, then outputs, then the index flag, in io and in pinned */
	int ninputs, noutputs;
	size_t *io_off, *io_bytes; /* ninputs + noutputs entries */
	size_t in_end, out_begin, flag_off, io_total;
	unsigned char *pinned;
	int pending; /* a run was enqueued and not yet waited for */
	/* the graph */
	int capturing;
	cudaGraphExec_t exec;
	/* the shared workspace */
	size_t ws_need, ws_size;
	void *ws;
	/* plan destructors */
	struct rtc_closer *closers;
	int nclosers, cap_closers;
	/* ONNXC_PROFILE=1 */
	int profile, nsteps;
	const char *const *step_names;
	cudaEvent_t *events; /* 2 per step: begin, end */
	unsigned char *recorded;
	double *step_ms;
	int64_t runs;
	/* rtc_set_output_hook's, and the outputs' device addresses and sizes */
	rt_output_hook_fn hook;
	void *hook_ctx;
	void **hook_out;
	size_t *hook_bytes;
	char err[512];
};

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

static int env_flag(const char *name)
{
	const char *v = getenv(name);
	return v && *v && *v != '0';
}

static void keep_message(struct rtc_model *m, const char *fmt, va_list ap)
{
	vsnprintf(m->err, sizeof m->err, fmt, ap);
	if (m->verbose)
		fprintf(stderr, "onnxc cuda: %s\n", m->err);
}

int rtc_fail(struct rtc_model *m, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	keep_message(m, fmt, ap);
	va_end(ap);
	return status;
}

/* The CUDA errors that mean there is no usable device or driver. */
static int no_device(cudaError_t e)
{
	return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
	       e == cudaErrorStubLibrary;
}

int rtc_check(struct rtc_model *m, cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return RT_OK;
	/* clear the thread's last error so that a later cudaGetLastError()
	 * check (after a <<<>>> launch) does not report this one again */
	(void)cudaGetLastError();
	return rtc_fail(m, no_device(e) ? RT_ERR_NO_DEVICE : RT_ERR_DEVICE, "%s: %s (%s)", what,
	                cudaGetErrorString(e), cudaGetErrorName(e));
}

const char *rtc_last_error(const struct rtc_model *m) { return m ? m->err : ""; }

/* ------------------------------------------------------------------------ */
/* Small accessors                                                          */
/* ------------------------------------------------------------------------ */

cudaStream_t rtc_stream(const struct rtc_model *m) { return m->stream; }
int rtc_sm_count(const struct rtc_model *m) { return m->sm_count; }
void *rtc_cublaslt(const struct rtc_model *m) { return m->lt; }
void *rtc_cudnn(const struct rtc_model *m) { return m->dnn; }
int *rtc_index_error(const struct rtc_model *m) { return (int *)(void *)(m->io + m->flag_off); }
unsigned char *rtc_arena(struct rtc_model *m) { return m->arena; }
const unsigned char *rtc_weights(struct rtc_model *m) { return m->weights; }
int rtc_direct(const struct rtc_model *m) { return m->direct; }

int rtc_guard(struct rtc_model *m, const void *p, int *value)
{
	unsigned char b = 0;
	int status;
	if ((status = rtc_check(m, cudaMemcpyAsync(&b, p, 1, cudaMemcpyDeviceToHost, m->stream),
	                        "cudaMemcpyAsync (guard)")) ||
	    (status = rtc_check(m, cudaStreamSynchronize(m->stream), "cudaStreamSynchronize")))
		return status;
	*value = b != 0;
	return RT_OK;
}
int rtc_trap(struct rtc_model *m, const struct rt_trap_desc *d, void *y)
{
	(void)m, (void)d, (void)y;
	return RT_ERR_BRANCH;
}
int rtc_dtype_size(int dtype) { return rt_dtype_size(dtype); }
size_t rtc_workspace_limit(const struct rtc_model *m) { return m->ws_limit; }
void *rtc_workspace(const struct rtc_model *m) { return m->ws; }

void *rtc_input(struct rtc_model *m, int i)
{
	return i >= 0 && i < m->ninputs ? m->io + m->io_off[i] : NULL;
}

void *rtc_output(struct rtc_model *m, int i)
{
	return i >= 0 && i < m->noutputs ? m->io + m->io_off[m->ninputs + i] : NULL;
}

void rtc_need_workspace(struct rtc_model *m, size_t bytes)
{
	if (bytes > m->ws_need)
		m->ws_need = bytes;
}

int rtc_on_close(struct rtc_model *m, void (*fn)(void *), void *arg)
{
	if (m->nclosers == m->cap_closers) {
		int cap = m->cap_closers ? 2 * m->cap_closers : 16;
		struct rtc_closer *c = realloc(m->closers, sizeof *c * (size_t)cap);
		if (!c) {
			fn(arg);
			return rtc_fail(m, RT_ERR_NO_MEMORY, "out of memory for a plan");
		}
		m->closers = c;
		m->cap_closers = cap;
	}
	m->closers[m->nclosers++] = (struct rtc_closer){ fn, arg };
	return RT_OK;
}

static size_t align_up(size_t x) { return (x + RTC_ALIGN - 1) / RTC_ALIGN * RTC_ALIGN; }

/* ------------------------------------------------------------------------ */
/* Launch geometry                                                          */
/* ------------------------------------------------------------------------ */

void rtc_grid(int64_t n, int sm_count, int *blocks, int *threads)
{
	int64_t need, cap;
	*threads = RTC_THREADS;
	if (n <= 0) {
		*blocks = 0;
		return;
	}
	need = n / RTC_THREADS + (n % RTC_THREADS != 0);
	cap = (int64_t)(sm_count > 0 ? sm_count : 1) * RTC_BLOCKS_PER_SM * RTC_WAVES;
	*blocks = (int)(need < cap ? need : cap);
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                  */
/* ------------------------------------------------------------------------ */

/* Reads the ONNXC_* settings into the instance. */
static void read_settings(struct rtc_model *m)
{
	const char *ws = getenv("ONNXC_CUDA_WORKSPACE_MB");
	const char *graph = getenv("ONNXC_CUDA_GRAPH");
	long mb = ws && *ws ? atol(ws) : RTC_DEFAULT_WORKSPACE_MB;
	m->verbose = env_flag("ONNXC_VERBOSE");
	m->poison = env_flag("ONNXC_POISON_ARENA");
	m->ws_limit = (size_t)(mb > 0 ? mb : 0) << 20;
	m->direct = (graph && *graph == '0') || env_flag("ONNXC_PROFILE");
}

/* Reads and checks the weights on the host (before anything touches the
 * device, so a bad weights file is reported as one, and testably so on a
 * machine without a device); they stay open until upload_weights. */
static int read_weights(struct rtc_model *m, const struct rtc_model_info *info)
{
	int status = rt_weights_open(&m->host_weights, info->weights_path, info->embedded_weights,
	                             info->model_id, info->weights_bytes);
	if (status)
		return rtc_fail(m, status, "weights %s: %s",
		                info->weights_path ? info->weights_path : "(embedded)",
		                rt_status_message(status));
	return RT_OK;
}

/* Copies the checked weights to the device and lets the host copy go. */
static int upload_weights(struct rtc_model *m)
{
	const struct rt_weights *w = &m->host_weights;
	int status = RT_OK;
	m->weights_bytes = w->bytes;
	if (w->bytes && !(status = rtc_check(m, cudaMalloc((void **)&m->weights, w->bytes),
	                                     "cudaMalloc (weights)")))
		status = rtc_check(
		        m, cudaMemcpy(m->weights, w->data, w->bytes, cudaMemcpyHostToDevice),
		        "cudaMemcpy (weights)");
	rt_weights_close(&m->host_weights);
	return status;
}

/* The current device, its multiprocessor count, the stream. */
static int open_device(struct rtc_model *m)
{
	int count = 0, status;
	struct cudaDeviceProp prop;
	if ((status = rtc_check(m, cudaGetDeviceCount(&count), "cudaGetDeviceCount")))
		return status;
	if (count <= 0)
		return rtc_check(m, cudaErrorNoDevice, "cudaGetDeviceCount");
	if ((status = rtc_check(m, cudaGetDevice(&m->device), "cudaGetDevice")) ||
	    (status = rtc_check(m,
	                        cudaDeviceGetAttribute(&m->sm_count, cudaDevAttrMultiProcessorCount,
	                                               m->device),
	                        "cudaDeviceGetAttribute (multiprocessors)")) ||
	    (status = rtc_check(m, cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking),
	                        "cudaStreamCreateWithFlags")))
		return status;
	if (m->verbose && cudaGetDeviceProperties(&prop, m->device) == cudaSuccess)
		fprintf(stderr, "onnxc cuda: device %d: %s, %d multiprocessors, compute %d.%d\n",
		        m->device, prop.name, m->sm_count, prop.major, prop.minor);
	return RT_OK;
}

/* Lays out inputs, outputs and the flag; allocates them on both sides. */
static int open_io(struct rtc_model *m, const struct rtc_model_info *info)
{
	int n = info->ninputs + info->noutputs, status;
	size_t at = 0;
	m->ninputs = info->ninputs;
	m->noutputs = info->noutputs;
	if (n > 0 && (!(m->io_off = calloc((size_t)n, sizeof *m->io_off)) ||
	              !(m->io_bytes = calloc((size_t)n, sizeof *m->io_bytes))))
		return rtc_fail(m, RT_ERR_NO_MEMORY, "out of memory for the input/output table");
	for (int i = 0; i < n; i++) {
		m->io_bytes[i] =
		        i < m->ninputs ? info->input_bytes[i] : info->output_bytes[i - m->ninputs];
		if (i == m->ninputs) {
			m->in_end = at;
			at = align_up(at);
		}
		m->io_off[i] = at;
		at = align_up(at + m->io_bytes[i]);
	}
	if (m->noutputs == 0)
		m->in_end = at;
	m->out_begin = m->noutputs ? m->io_off[m->ninputs] : at;
	m->flag_off = at;
	m->io_total = at + sizeof(int);
	if ((status = rtc_check(m, cudaMalloc((void **)&m->io, m->io_total),
	                        "cudaMalloc (inputs and outputs)")) ||
	    (status = rtc_check(m, cudaMallocHost((void **)&m->pinned, m->io_total),
	                        "cudaMallocHost (staging)")))
		return status;
	memset(m->pinned, 0, m->io_total);
	return rtc_check(m, cudaMemset(m->io + m->flag_off, 0, sizeof(int)),
	                 "cudaMemset (index flag)");
}

static int open_libraries(struct rtc_model *m)
{
	cublasStatus_t bs = cublasLtCreate(&m->lt);
	cudnnStatus_t ds;
	if (bs != CUBLAS_STATUS_SUCCESS) {
		m->lt = NULL;
		return rtc_fail(
		        m, bs == CUBLAS_STATUS_NOT_INITIALIZED ? RT_ERR_NO_DEVICE : RT_ERR_DEVICE,
		        "cublasLtCreate: %s (%s)", cublasLtGetStatusString(bs),
		        cublasLtGetStatusName(bs));
	}
	ds = cudnnCreate(&m->dnn);
	if (ds != CUDNN_STATUS_SUCCESS) {
		m->dnn = NULL;
		return rtc_fail(
		        m, ds == CUDNN_STATUS_NOT_INITIALIZED ? RT_ERR_NO_DEVICE : RT_ERR_DEVICE,
		        "cudnnCreate: %s", cudnnGetErrorString(ds));
	}
	ds = cudnnSetStream(m->dnn, m->stream);
	if (ds != CUDNN_STATUS_SUCCESS)
		return rtc_fail(m, RT_ERR_DEVICE, "cudnnSetStream: %s", cudnnGetErrorString(ds));
	return RT_OK;
}

static int open_ptx(struct rtc_model *m, const char *ptx)
{
	if (!ptx || !*ptx)
		return RT_OK;
	return rtc_check(m, cudaLibraryLoadData(&m->lib, ptx, NULL, NULL, 0, NULL, NULL, 0),
	                 "cudaLibraryLoadData (the generated kernels' PTX)");
}

/* ONNXC_PROFILE=1: two events per step and the step totals. */
static int open_profile(struct rtc_model *m, const struct rtc_model_info *info)
{
	int n = info->nsteps;
	if (!env_flag("ONNXC_PROFILE") || n <= 0 || !info->step_names)
		return RT_OK;
	if (!(m->events = calloc(2 * (size_t)n, sizeof *m->events)) ||
	    !(m->recorded = calloc((size_t)n, 1)) ||
	    !(m->step_ms = calloc((size_t)n, sizeof *m->step_ms)))
		return rtc_fail(m, RT_ERR_NO_MEMORY, "out of memory for the profile");
	m->nsteps = n;
	m->step_names = info->step_names;
	for (int i = 0; i < 2 * n; i++) {
		int status = rtc_check(m, cudaEventCreate(&m->events[i]), "cudaEventCreate");
		if (status)
			return status;
	}
	m->profile = 1;
	return RT_OK;
}

static int info_ok(const struct rtc_model_info *info)
{
	return info && info->ninputs >= 0 && info->noutputs >= 0 &&
	       (info->ninputs == 0 || info->input_bytes) &&
	       (info->noutputs == 0 || info->output_bytes) && info->nsteps >= 0;
}

int rtc_model_open(struct rtc_model **out, const struct rtc_model_info *info)
{
	struct rtc_model *m;
	int status;
	if (!out)
		return RT_ERR_ARGUMENT;
	*out = NULL;
	if (!(m = calloc(1, sizeof *m)))
		return RT_ERR_NO_MEMORY;
	read_settings(m);
	if (info && info->direct) /* run-time Ifs: guards read back, no graph */
		m->direct = 1;
	if (!info_ok(info)) {
		status = rtc_fail(m, RT_ERR_ARGUMENT, "rtc_model_open: invalid model info");
		goto fail;
	}
	if ((status = read_weights(m, info)) || (status = open_device(m)))
		goto fail;
	m->arena_bytes = info->arena_bytes;
	if (m->arena_bytes && (status = rtc_check(m, cudaMalloc((void **)&m->arena, m->arena_bytes),
	                                          "cudaMalloc (arena)")))
		goto fail;
	if ((status = upload_weights(m)) || (status = open_io(m, info)) ||
	    (status = open_libraries(m)) || (status = open_ptx(m, info->ptx)) ||
	    (status = open_profile(m, info)))
		goto fail;
	if (m->verbose)
		fprintf(stderr,
		        "onnxc cuda: arena %zu bytes, weights %zu bytes, %d inputs, %d outputs, "
		        "%s\n",
		        m->arena_bytes, m->weights_bytes, m->ninputs, m->noutputs,
		        m->direct ? "direct runs (no CUDA Graph)" : "CUDA Graph replay");
	*out = m;
	return RT_OK;
fail:
	rtc_model_close(m);
	return status;
}

/* ------------------------------------------------------------------------ */
/* Closing                                                                  */
/* ------------------------------------------------------------------------ */

static void close_profile(struct rtc_model *m)
{
	if (m->profile && m->runs)
		rt_profile_print(m->runs, m->nsteps, m->step_names, m->step_ms);
	for (int i = 0; m->events && i < 2 * m->nsteps; i++)
		if (m->events[i])
			cudaEventDestroy(m->events[i]);
	free(m->events);
	free(m->recorded);
	free(m->step_ms);
}

void rtc_model_close(struct rtc_model *m)
{
	if (!m)
		return;
	if (m->capturing) {
		cudaGraph_t g = NULL;
		if (cudaStreamEndCapture(m->stream, &g) == cudaSuccess && g)
			cudaGraphDestroy(g);
	}
	if (m->stream)
		cudaStreamSynchronize(m->stream);
	close_profile(m);
	/* the plans first: they hold library descriptors and handles' work */
	for (int i = m->nclosers - 1; i >= 0; i--)
		m->closers[i].fn(m->closers[i].arg);
	free(m->closers);
	free(m->hook_out);
	free(m->hook_bytes);
	if (m->exec)
		cudaGraphExecDestroy(m->exec);
	if (m->lib)
		cudaLibraryUnload(m->lib);
	if (m->dnn)
		cudnnDestroy(m->dnn);
	if (m->lt)
		cublasLtDestroy(m->lt);
	if (m->stream)
		cudaStreamDestroy(m->stream);
	cudaFree(m->ws);
	cudaFree(m->io);
	cudaFree(m->arena);
	cudaFree(m->weights);
	if (m->pinned)
		cudaFreeHost(m->pinned);
	free(m->io_off);
	free(m->io_bytes);
	rt_weights_close(&m->host_weights);
	(void)cudaGetLastError();
	free(m);
}

/* ------------------------------------------------------------------------ */
/* Generated kernels                                                        */
/* ------------------------------------------------------------------------ */

int rtc_kernel(struct rtc_model *m, const char *name, struct rtc_fn **fn)
{
	struct rtc_fn *f;
	cudaKernel_t k;
	char what[256];
	int status;
	if (!fn || !name)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_kernel: NULL name or result");
	*fn = NULL;
	if (!m->lib)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_kernel %s: the model has no PTX", name);
	snprintf(what, sizeof what, "cudaLibraryGetKernel (%s)", name);
	if ((status = rtc_check(m, cudaLibraryGetKernel(&k, m->lib, name), what)))
		return status;
	if (!(f = calloc(1, sizeof *f)))
		return rtc_fail(m, RT_ERR_NO_MEMORY, "out of memory for kernel %s", name);
	f->kernel = k;
	if ((status = rtc_on_close(m, free, f)))
		return status;
	*fn = f;
	return RT_OK;
}

int rtc_launch(struct rtc_model *m, const struct rtc_fn *fn, void *const *args, int nargs,
               int64_t n)
{
	void *params[RTC_MAX_ARGS + 1];
	int blocks, threads;
	dim3 grid = { 1, 1, 1 }, block = { 1, 1, 1 };
	if (!fn || nargs < 0 || nargs > RTC_MAX_ARGS || (nargs && !args))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_launch: bad kernel or arguments (%d)",
		                nargs);
	if (n <= 0)
		return RT_OK;
	/* each parameter is passed by the address of its value */
	for (int i = 0; i < nargs; i++)
		params[i] = (void *)&args[i];
	params[nargs] = &n;
	rtc_grid(n, m->sm_count, &blocks, &threads);
	grid.x = (unsigned)blocks;
	block.x = (unsigned)threads;
	return rtc_check(
	        m, cudaLaunchKernel((const void *)fn->kernel, grid, block, params, 0, m->stream),
	        "cudaLaunchKernel (a generated kernel)");
}

/* ------------------------------------------------------------------------ */
/* Capture                                                                  */
/* ------------------------------------------------------------------------ */

/* Allocates the workspace the plans asked for (outside any capture). */
static int ensure_workspace(struct rtc_model *m)
{
	int status;
	if (m->ws_need <= m->ws_size)
		return RT_OK;
	if (m->capturing)
		return rtc_fail(m, RT_ERR_ARGUMENT,
		                "a plan asked for workspace after rtc_capture_begin");
	cudaFree(m->ws);
	m->ws = NULL;
	m->ws_size = 0;
	if ((status = rtc_check(m, cudaMalloc(&m->ws, m->ws_need), "cudaMalloc (workspace)")))
		return status;
	m->ws_size = m->ws_need;
	if (m->verbose)
		fprintf(stderr, "onnxc cuda: workspace %zu bytes\n", m->ws_size);
	return RT_OK;
}

int rtc_capture_begin(struct rtc_model *m)
{
	int status;
	if (!m)
		return RT_ERR_ARGUMENT;
	if ((status = ensure_workspace(m)) || m->direct)
		return status;
	if (m->capturing)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_capture_begin: already capturing");
	if ((status = rtc_check(m, cudaSetDevice(m->device), "cudaSetDevice")) ||
	    (status = rtc_check(m,
	                        cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal),
	                        "cudaStreamBeginCapture")))
		return status;
	m->capturing = 1;
	return RT_OK;
}

int rtc_capture_end(struct rtc_model *m)
{
	cudaGraph_t g = NULL;
	int status;
	if (!m)
		return RT_ERR_ARGUMENT;
	if (m->direct)
		return ensure_workspace(m);
	if (!m->capturing)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_capture_end without rtc_capture_begin");
	m->capturing = 0;
	if ((status = rtc_check(m, cudaStreamEndCapture(m->stream, &g), "cudaStreamEndCapture")))
		return status;
	status = rtc_check(m, cudaGraphInstantiate(&m->exec, g, 0),
	                   "cudaGraphInstantiate (ONNXC_CUDA_GRAPH=0 runs without a graph)");
	cudaGraphDestroy(g);
	if (status) {
		m->exec = NULL;
		return status;
	}
	/* the first replay need not upload the graph */
	return rtc_check(m, cudaGraphUpload(m->exec, m->stream), "cudaGraphUpload");
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

void rtc_step_begin(struct rtc_model *m, int s)
{
	if (m->profile && s >= 0 && s < m->nsteps)
		cudaEventRecord(m->events[2 * s], m->stream);
}

void rtc_step_end(struct rtc_model *m, int s)
{
	if (m->profile && s >= 0 && s < m->nsteps &&
	    cudaEventRecord(m->events[2 * s + 1], m->stream) == cudaSuccess)
		m->recorded[s] = 1;
}

/* Adds this run's step times (after the run's synchronization). */
static void profile_run(struct rtc_model *m)
{
	for (int s = 0; m->profile && s < m->nsteps; s++) {
		float ms;
		if (!m->recorded[s])
			continue;
		if (cudaEventElapsedTime(&ms, m->events[2 * s], m->events[2 * s + 1]) ==
		    cudaSuccess)
			m->step_ms[s] += ms;
		m->recorded[s] = 0;
	}
	(void)cudaGetLastError();
}

/* Waits for work a failed run left on the stream. */
static int settle(struct rtc_model *m)
{
	if (!m->pending)
		return RT_OK;
	m->pending = 0;
	return rtc_check(m, cudaStreamSynchronize(m->stream), "cudaStreamSynchronize");
}

int rtc_run_begin(struct rtc_model *m, const void *const inputs[])
{
	int status;
	if (!m || (m->ninputs && !inputs))
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_run_begin: NULL inputs")
		         : RT_ERR_ARGUMENT;
	for (int i = 0; i < m->ninputs; i++)
		if (!inputs[i] && m->io_bytes[i])
			return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_run_begin: input %d is NULL", i);
	if ((status = rtc_check(m, cudaSetDevice(m->device), "cudaSetDevice")) ||
	    (status = settle(m)))
		return status;
	for (int i = 0; i < m->ninputs; i++)
		if (m->io_bytes[i])
			memcpy(m->pinned + m->io_off[i], inputs[i], m->io_bytes[i]);
	m->pending = 1;
	if (m->in_end && (status = rtc_check(m,
	                                     cudaMemcpyAsync(m->io, m->pinned, m->in_end,
	                                                     cudaMemcpyHostToDevice, m->stream),
	                                     "cudaMemcpyAsync (inputs)")))
		return status;
	if (m->poison && m->arena_bytes)
		/* all-ones bytes are NaN in every float type */
		return rtc_check(m, cudaMemsetAsync(m->arena, 0xff, m->arena_bytes, m->stream),
		                 "cudaMemsetAsync (arena poison)");
	return RT_OK;
}

int rtc_run_graph(struct rtc_model *m)
{
	if (!m)
		return RT_ERR_ARGUMENT;
	if (!m->exec)
		return m->direct ? RT_OK
		                 : rtc_fail(m, RT_ERR_ARGUMENT, "rtc_run_graph: no graph captured");
	return rtc_check(m, cudaGraphLaunch(m->exec, m->stream), "cudaGraphLaunch");
}

int rtc_set_output_hook(struct rtc_model *m, rt_output_hook_fn fn, void *ctx)
{
	if (!m)
		return RT_ERR_ARGUMENT;
	if (fn && !m->hook_out) {
		void **out = calloc((size_t)m->noutputs + 1, sizeof *out);
		size_t *bytes = calloc((size_t)m->noutputs + 1, sizeof *bytes);
		if (!out || !bytes) {
			free(out);
			free(bytes);
			return rtc_fail(m, RT_ERR_NO_MEMORY, "out of memory (output hook)");
		}
		for (int i = 0; i < m->noutputs; i++) {
			out[i] = m->io + m->io_off[m->ninputs + i];
			bytes[i] = m->io_bytes[m->ninputs + i];
		}
		m->hook_out = out;
		m->hook_bytes = bytes;
	}
	m->hook = fn;
	m->hook_ctx = ctx;
	return RT_OK;
}

int rtc_run_end(struct rtc_model *m, void *const outputs[])
{
	int status, flag;
	if (!m || (m->noutputs && !outputs))
		return m ? rtc_fail(m, RT_ERR_ARGUMENT, "rtc_run_end: NULL outputs")
		         : RT_ERR_ARGUMENT;
	for (int i = 0; i < m->noutputs; i++)
		if (!outputs[i] && m->io_bytes[m->ninputs + i])
			return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_run_end: output %d is NULL", i);
	if (m->hook &&
	    (status = m->hook(m->hook_ctx, m->hook_out, m->hook_bytes, m->noutputs, m->stream))) {
		m->pending = 1; /* what the hook enqueued: settled by the next run */
		return rtc_fail(m, status, "the output hook failed (status %d)", status);
	}
	/* the outputs and the flag behind them in one copy */
	status = rtc_check(m,
	                   cudaMemcpyAsync(m->pinned + m->out_begin, m->io + m->out_begin,
	                                   m->io_total - m->out_begin, cudaMemcpyDeviceToHost,
	                                   m->stream),
	                   "cudaMemcpyAsync (outputs)");
	m->pending = 0;
	if ((status = status ? status
	                     : rtc_check(m, cudaStreamSynchronize(m->stream),
	                                 "cudaStreamSynchronize (the run)")))
		return status;
	profile_run(m);
	memcpy(&flag, m->pinned + m->flag_off, sizeof flag);
	if (flag) {
		m->pending = 1;
		if ((status = rtc_check(
		             m, cudaMemsetAsync(m->io + m->flag_off, 0, sizeof(int), m->stream),
		             "cudaMemsetAsync (index flag)")))
			return status;
		return rtc_fail(m, RT_ERR_INDEX,
		                "an index input (Gather, GatherElements) is out of range");
	}
	for (int i = 0; i < m->noutputs; i++) {
		size_t at = m->io_off[m->ninputs + i], bytes = m->io_bytes[m->ninputs + i];
		if (bytes)
			memcpy(outputs[i], m->pinned + at, bytes);
	}
	m->runs++;
	return RT_OK;
}
