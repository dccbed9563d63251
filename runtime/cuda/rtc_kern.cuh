/*
 * rtc_kern.cuh - what the hand-written kernels (runtime/cuda/rtc_*.cu)
 * share: storage types and their conversions (FP16 and BF16 computed in
 * FP32, rounding to nearest even on store), warp and block reductions,
 * grid-stride loops, element types for data movement, and the host-side
 * dispatch from runtime dtype codes to kernel template instances.
 *
 * The index arithmetic is not here but in rtc_index*.h over the runtime's
 * shared rt_index*.h, which the host unit test checks against the CPU
 * runtime.
 */
#ifndef ONNXC_RTC_KERN_CUH
#define ONNXC_RTC_KERN_CUH

#include "rtc_index.h"
#include "rtc_index_move.h"
#include "rtc_index_pool.h"
#include "rtc_index_reduce.h"
#include "rtc_index_resize.h"
#include "rtc_internal.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

typedef __half f16;
typedef __nv_bfloat16 bf16;

/* ------------------------------------------------------------------------ */
/* Conversions                                                              */
/* ------------------------------------------------------------------------ */

/* The type a storage type computes in: FP32, FP64 for FP64. */
template <class T> struct acc_of {
	typedef float type;
};
template <> struct acc_of<double> {
	typedef double type;
};

/* A stored value in its compute type (integers and FP32/FP64 as they are). */
template <class T> __device__ __forceinline__ T to_acc(T v) { return v; }
__device__ __forceinline__ float to_acc(f16 v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(bf16 v) { return __bfloat162float(v); }

/* A computed value stored as Y: halves round from FP32 to nearest even
 * (FP64 values through FP32, as the CPU target's staging does). */
template <class Y> struct store_as {
	template <class A> __device__ __forceinline__ static Y from(A v) { return (Y)v; }
};
template <> struct store_as<f16> {
	template <class A> __device__ __forceinline__ static f16 from(A v)
	{
		return __float2half_rn((float)v);
	}
};
template <> struct store_as<bf16> {
	template <class A> __device__ __forceinline__ static bf16 from(A v)
	{
		return __float2bfloat16_rn((float)v);
	}
};

template <class Y, class A> __device__ __forceinline__ Y to_store(A v)
{
	return store_as<Y>::from(v);
}

/* exp and log in the compute type, full precision. */
__device__ __forceinline__ float rtc_exp(float v) { return expf(v); }
__device__ __forceinline__ double rtc_exp(double v) { return exp(v); }
__device__ __forceinline__ float rtc_log(float v) { return logf(v); }
__device__ __forceinline__ double rtc_log(double v) { return log(v); }

/* ------------------------------------------------------------------------ */
/* Reductions within a group of threads                                     */
/* ------------------------------------------------------------------------ */

struct op_add {
	template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};
/* The maximum with NaN ignored (softmax's rule; -inf for none). */
struct op_fmax {
	template <class A> __device__ __forceinline__ A operator()(A a, A b) const
	{
		return b > a || a != a ? b : a;
	}
};

/*
 * Combines v over a group of G threads (1, a warp, or the whole block of
 * G threads) in a fixed order; every thread of the group gets the result.
 * Block groups synchronize: every thread of the block must call it.
 */
template <int G, class A, class Op> __device__ __forceinline__ A group_reduce(A v, Op op)
{
	if constexpr (G > 1) {
		for (int o = 16; o > 0; o /= 2)
			v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
	}
	if constexpr (G > 32) {
		__shared__ A part[G / 32];
		__syncthreads(); /* earlier readers of part are done */
		if (threadIdx.x % 32 == 0)
			part[threadIdx.x / 32] = v;
		__syncthreads();
		v = part[0];
		for (int i = 1; i < G / 32; i++)
			v = op(v, part[i]);
	}
	return v;
}

/* Grid-stride loop over [0, n). */
#define RTC_GRID_LOOP(i, n)                                                                \
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)(n); \
	     i += (int64_t)gridDim.x * blockDim.x)

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */
/* ------------------------------------------------------------------------ */

/* An element of ES bytes moved as one load and one store (0: bytewise). */
template <int ES> struct elem_of {
	typedef unsigned char type;
};
template <> struct elem_of<1> {
	typedef uint8_t type;
};
template <> struct elem_of<2> {
	typedef uint16_t type;
};
template <> struct elem_of<4> {
	typedef uint32_t type;
};
template <> struct elem_of<8> {
	typedef unsigned long long type;
};
template <> struct elem_of<16> {
	typedef uint4 type;
};

/* Moves element si of x to element di of y (esize bytes each; ES 0: any
 * size, bytewise). */
template <int ES>
__device__ __forceinline__ void move_elem(char *y, int64_t di, const char *x, int64_t si, int esize)
{
	if (ES > 0) {
		typedef typename elem_of<ES>::type E;
		((E *)y)[di] = ((const E *)x)[si];
	} else {
		for (int b = 0; b < esize; b++)
			y[di * esize + b] = x[si * esize + b];
	}
}

/* Runs fn(ES constant) for element size es: 1, 2, 4, 8, 16, or 0 for the rest. */
template <class Fn> static void with_esize(int es, Fn &&fn)
{
	switch (es) {
	case 1: fn(std::integral_constant<int, 1>()); break;
	case 2: fn(std::integral_constant<int, 2>()); break;
	case 4: fn(std::integral_constant<int, 4>()); break;
	case 8: fn(std::integral_constant<int, 8>()); break;
	case 16: fn(std::integral_constant<int, 16>()); break;
	default: fn(std::integral_constant<int, 0>()); break;
	}
}

/* ------------------------------------------------------------------------ */
/* Host-side dispatch                                                       */
/* ------------------------------------------------------------------------ */

/*
 * Runs fn(T(), Y()) for the storage types of a float step reading dtype
 * and writing ydtype (rtc_out_dtype): FP32/FP16/BF16 among themselves,
 * FP64 to FP64. Returns false for any other pair.
 */
template <class T, class Fn> static bool with_half_out(int y, Fn &&fn)
{
	switch (y) {
	case RT_F32: fn(T(), float()); return true;
	case RT_F16: fn(T(), f16()); return true;
	case RT_BF16: fn(T(), bf16()); return true;
	default: return false;
	}
}

template <class Fn> static bool with_float(int dtype, int ydtype, Fn &&fn)
{
	int y = rtc_out_dtype(dtype, ydtype);
	switch (y ? dtype : 0) {
	case RT_F32: return with_half_out<float>(y, fn);
	case RT_F16: return with_half_out<f16>(y, fn);
	case RT_BF16: return with_half_out<bf16>(y, fn);
	case RT_F64: fn(double(), double()); return true;
	default: return false;
	}
}

/* Records the launch's status (errors are reported asynchronously too,
 * by the stream, at the next synchronization). */
static inline int rtc_launched(struct rtc_model *m, const char *what)
{
	return rtc_check(m, cudaGetLastError(), what);
}

#endif
