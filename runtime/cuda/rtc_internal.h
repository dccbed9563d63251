/*
 * rtc_internal.h - what the CUDA runtime's files share (not installed).
 *
 *   rtc_core.c     instances: device arena, weights, staging, stream, CUDA
 *                  Graph capture and replay, profiling, errors, the PTX
 *                  module and generated-kernel launches
 *   rtc_blas.c     GEMM plans on cuBLASLt
 *   rtc_dnn.c      convolution plans on cuDNN
 *   rtc_*.cu       the hand-written kernels (pooling, softmax, norms,
 *                  reductions, data movement, resize, conversions) and the
 *                  epilogue kernel GEMM and convolution fall back on
 *
 * Only the .cu files are compiled by nvcc; the .c files use the CUDA
 * runtime API (cudart) and the libraries' C APIs. Every entry point that
 * launches work enqueues it on rtc_stream(m) and never synchronizes, so a
 * step sequence can be captured into a CUDA Graph.
 */
#ifndef ONNXC_RTC_INTERNAL_H
#define ONNXC_RTC_INTERNAL_H

#include "onnxc_rt_cuda.h"

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The instance's stream; everything a step does goes on it. */
cudaStream_t rtc_stream(const struct rtc_model *m);
/* The device's multiprocessor count (for grid sizes). */
int rtc_sm_count(const struct rtc_model *m);

/*
 * Records a CUDA error: returns RT_OK for cudaSuccess, otherwise keeps
 * "WHAT: cudaGetErrorString(e)" as the instance's last error and returns
 * RT_ERR_NO_DEVICE for the no-device/no-driver errors, RT_ERR_DEVICE for
 * the rest. rtc_fail does the same for a library status already turned
 * into a message.
 */
int rtc_check(struct rtc_model *m, cudaError_t e, const char *what);
int rtc_fail(struct rtc_model *m, int status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* A device int the kernels set to 1 when an index is out of range
 * (Gather, GatherElements); rtc_run_end turns it into RT_ERR_INDEX and
 * clears it. */
int *rtc_index_error(const struct rtc_model *m);

/* Workspace: plans declare what they need before capture; afterwards
 * rtc_workspace returns the one device buffer of the largest request
 * (steps run one after another on one stream, so they share it).
 * rtc_workspace_limit is what a plan may ask for a library algorithm's
 * own scratch (ONNXC_CUDA_WORKSPACE_MB, default 256). */
void rtc_need_workspace(struct rtc_model *m, size_t bytes);
void *rtc_workspace(const struct rtc_model *m);
size_t rtc_workspace_limit(const struct rtc_model *m);

/* cuBLASLt and cuDNN handles of the instance (created at open). */
void *rtc_cublaslt(const struct rtc_model *m); /* cublasLtHandle_t */
void *rtc_cudnn(const struct rtc_model *m);    /* cudnnHandle_t */

/* Plans are freed with the instance: each plan registers its destructor
 * (run at close, last registered first). RT_ERR_NO_MEMORY when the entry
 * cannot be kept: then fn(arg) has already run, and arg is gone. */
int rtc_on_close(struct rtc_model *m, void (*fn)(void *), void *arg);

/* The epilogue GEMM and convolution apply after the library call where the
 * library cannot: y = act(y + bias[channel] + residual), over n elements of
 * y viewed as [outer, channels, inner], in y's dtype (rtc_epilogue.cu).
 * bias may be NULL (then channels and inner are ignored). */
int rtc_epilogue(struct rtc_model *m, const struct rt_epilogue *ep, int dtype, void *y,
                 const void *bias, int bias_dtype, const void *residual, int residual_dtype,
                 int64_t outer, int64_t channels, int64_t inner);

/* Element sizes and names of the runtime dtypes (RT_F32, RT_F16, ...). */
int rtc_dtype_size(int dtype);

#ifdef __cplusplus
}
#endif

#endif
