/*
 * rt_index.h - the index arithmetic the CPU runtime (runtime/rt_*.c) and
 * the CUDA kernels (runtime/cuda/rtc_*.cu) share, one copy of it.
 *
 * A kernel's addressing is a handful of small pure functions of its
 * descriptor: which taps of a pooling window lie inside the input, where a
 * resize coordinate maps and with what weights, what a reduction's shape
 * is once size-1 dims are dropped and neighbours merged, how a strided
 * copy simplifies. Both runtimes call the functions in rt_index_pool.h,
 * rt_index_reduce.h, rt_index_move.h and rt_index_resize.h (named like the
 * CPU files they serve), so the CPU tests, which run everywhere, test the
 * arithmetic the GPU runs; what differs between the two is only how the
 * work is cut (the CPU by rows and blocks, the GPU by threads), and the
 * CUDA side's fast division (rtc_index.h).
 *
 * The headers are static inline functions in the subset of C that a C11
 * compiler and nvcc both accept. RT_HD marks what may run on the device
 * (__host__ __device__ under nvcc); RT_HOST what only plans on the host
 * (it uses the compilers' overflow builtins, or memset). Floating-point
 * expressions keep the order they had in each runtime, so results are bit
 * for bit what they were.
 *
 * These headers are internal: generated code includes only onnxc_rt.h.
 */
#ifndef ONNXC_RT_INDEX_H
#define ONNXC_RT_INDEX_H

#include "onnxc_rt.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define RT_HD static inline __host__ __device__
#else
#define RT_HD static inline
#endif
#define RT_HOST static inline /* plans: host code only */

RT_HD int64_t rt_min64(int64_t a, int64_t b) { return a < b ? a : b; }
RT_HD int64_t rt_max64(int64_t a, int64_t b) { return a > b ? a : b; }
RT_HD int64_t rt_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Element count of dims, -1 for a negative dim or an overflow. */
RT_HOST int64_t rt_count(const int64_t *dims, int rank)
{
	int64_t n = 1;
	for (int d = 0; d < rank; d++)
		if (dims[d] < 0 || __builtin_mul_overflow(n, dims[d], &n))
			return -1;
	return n;
}

/* Row-major strides of dims, in elements. */
RT_HD void rt_dense_strides(const int64_t *dims, int rank, int64_t *strides)
{
	int64_t s = 1;
	for (int d = rank - 1; d >= 0; d--) {
		strides[d] = s;
		s *= dims[d];
	}
}

#endif
