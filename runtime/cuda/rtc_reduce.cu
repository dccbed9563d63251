/*
 * rtc_reduce.cu - reductions (ReduceSum ... ReduceLogSumExp), ArgMax/ArgMin
 * and CumSum/CumProd on the GPU, with rt_reduce.c's semantics.
 *
 * A reduction is first put in rt_reduce.c's canonical form (rtc_red_canon:
 * size-1 dims dropped, neighbours merged), then one of two kernels runs:
 *   rows  the innermost block is reduced: a group of threads per output (a
 *         thread for at most 16 elements, a warp up to 4096, else a block)
 *         strides through the output's elements and combines in a fixed
 *         tree;
 *   cols  the innermost block is kept: a block covers up to 32 adjacent
 *         outputs (neighbouring addresses), its other threads split the
 *         segments, and the partial results combine through shared memory.
 * Every kind is one of seven primitives plus rt_reduce.c's finish step
 * (rtc_red_finish): floats accumulate in FP32 (FP64 for FP64), integers in
 * wrapping 64-bit arithmetic, which makes their results exact whatever the
 * order; max and min propagate NaN. LogSumExp is a max pass, then a sum of
 * exp(x - max). An empty reduction writes the finished identity.
 *
 * ArgMax/ArgMin scan each lane in order on one thread, exactly the
 * reference's rule, when there are many lanes or short ones; long rows
 * take a group of threads that reduce (value, index) candidates by the
 * same rule in parallel (RTC_ARG_BETTER, with the NaN cases settled
 * first). CumSum and CumProd likewise runs a thread per lane, or a block per lane with
 * a chunked block scan; floats accumulate in FP64 as on the CPU, integers
 * wrap in 64 bits. x and y may be the same buffer.
 */
#include "rtc_kern.cuh"

/* ------------------------------------------------------------------------ */
/* Primitives                                                               */
/* ------------------------------------------------------------------------ */

/* The limits of a storage type, for max and min identities. */
template <class T> struct lim {
	__device__ __forceinline__ static T lo();
	__device__ __forceinline__ static T hi();
};
#define LIM(T, LO, HI)                                                       \
	template <> struct lim<T> {                                          \
		__device__ __forceinline__ static T lo() { return (T)(LO); } \
		__device__ __forceinline__ static T hi() { return (T)(HI); } \
	};
LIM(float, -INFINITY, INFINITY)
LIM(double, -INFINITY, INFINITY)
LIM(f16, -INFINITY, INFINITY)
LIM(bf16, -INFINITY, INFINITY)
LIM(int8_t, INT8_MIN, INT8_MAX)
LIM(uint8_t, 0, UINT8_MAX)
LIM(int16_t, INT16_MIN, INT16_MAX)
LIM(uint16_t, 0, UINT16_MAX)
LIM(int32_t, INT32_MIN, INT32_MAX)
LIM(uint32_t, 0, UINT32_MAX)
LIM(int64_t, INT64_MIN, INT64_MAX)
LIM(uint64_t, 0, UINT64_MAX)
#undef LIM

/* Primitive P's identity, per-element term and combining operator, over
 * elements T accumulated in A (rt_reduce.c's PRIM instances). */
template <int P, class T, class A> struct prim {
	__device__ __forceinline__ static A ident()
	{
		if (P == RT_PRIM_PROD)
			return (A)1;
		if (P == RT_PRIM_MAX)
			return (A)to_acc(lim<T>::lo());
		if (P == RT_PRIM_MIN)
			return (A)to_acc(lim<T>::hi());
		return (A)0;
	}
	__device__ __forceinline__ static A term(T x, A shift)
	{
		auto xv = to_acc(x);
		A v = (A)xv;
		switch (P) {
		case RT_PRIM_ABS:
			if constexpr (std::is_unsigned<decltype(xv)>::value)
				return v;
			else
				return xv < 0 ? (A)0 - v : v; /* the sign of x: A may be unsigned */
		case RT_PRIM_SQ: return v * v;
		case RT_PRIM_EXP:
			if constexpr (std::is_floating_point<A>::value)
				return rtc_exp(v - shift);
			return v;
		default: return v;
		}
	}
	__device__ __forceinline__ static A comb(A a, A b)
	{
		switch (P) {
		case RT_PRIM_PROD: return a * b;
		case RT_PRIM_MAX: return b > a || b != b ? b : a;
		case RT_PRIM_MIN: return b < a || b != b ? b : a;
		default: return a + b;
		}
	}
};

/* Primitive P's combining operator as a functor (group_reduce). */
template <int P> struct prim_op {
	template <class B> __device__ __forceinline__ B operator()(B a, B b) const
	{
		return prim<P, B, B>::comb(a, b);
	}
};

/* A primitive's result as rt_reduce.c's struct acc: floats in f, integers
 * in i and f. */
template <class T, class A> __device__ __forceinline__ void acc_split(A v, double *f, int64_t *i)
{
	if constexpr (std::is_floating_point<A>::value) {
		*f = (double)v;
		*i = 0;
	} else {
		*i = (int64_t)v;
		*f = (double)*i;
	}
}

/* Stores a finished value as dtype ydt (rt_reduce.c's store). */
__device__ __forceinline__ void store_out(void *y, int ydt, int64_t at, double f, int64_t i)
{
	switch (ydt) {
	case RT_F32: ((float *)y)[at] = (float)f; break;
	case RT_F16: ((f16 *)y)[at] = __float2half_rn((float)f); break;
	case RT_BF16: ((bf16 *)y)[at] = __float2bfloat16_rn((float)f); break;
	case RT_F64: ((double *)y)[at] = f; break;
	case RT_I32: ((int32_t *)y)[at] = (int32_t)i; break;
	case RT_I64: ((int64_t *)y)[at] = i; break;
	case RT_U8: ((uint8_t *)y)[at] = (uint8_t)i; break;
	case RT_I8: ((int8_t *)y)[at] = (int8_t)i; break;
	}
}

/* What the kernels need besides the canonical form. */
struct red_args {
	int kind, prim, ydt, is_float;
};

template <class T, class A>
__device__ __forceinline__ void finish_store(const struct red_args &a, const struct rtc_red &r, A v,
                                             A shift, void *y, int64_t k)
{
	double f;
	int64_t i;
	acc_split<T>(v, &f, &i);
	rt_red_finish(a.kind, a.is_float, r.c.nred, (double)shift, &f, &i);
	store_out(y, a.ydt, k, f, i);
}

/* LogSumExp's shift from the group's maximum. */
template <class A> __device__ __forceinline__ A lse_shift(A max)
{
	return (A)rt_red_lse_shift((double)max);
}

/* ------------------------------------------------------------------------ */
/* The rows form                                                            */
/* ------------------------------------------------------------------------ */

/* Primitive P over the elements lane, lane + G, ... of the output at base. */
template <int P, int G, class T, class A>
__device__ __forceinline__ A rows_pass(const struct rtc_red &r, const T *x, int64_t base, int lane,
                                       A shift)
{
	A acc = prim<P, T, A>::ident();
	for (int64_t e = lane; e < r.c.nred; e += G)
		acc = prim<P, T, A>::comb(
		        acc, prim<P, T, A>::term(x[base + rtc_red_elem(&r, e)], shift));
	return group_reduce<G>(acc, prim_op<P>());
}

template <int P, int G, class T, class A>
__device__ __forceinline__ void rows_output(const struct red_args &a, const struct rtc_red &r,
                                            const T *x, void *y, int64_t k, int lane)
{
	int64_t base = rtc_red_base(&r, k);
	A shift = 0, v;
	if (P == RT_PRIM_EXP)
		shift = lse_shift(rows_pass<RT_PRIM_MAX, G, T, A>(r, x, base, lane, shift));
	v = rows_pass<P, G, T, A>(r, x, base, lane, shift);
	if (lane == 0)
		finish_store<T>(a, r, v, shift, y, k);
}

template <int G, class T, class A>
__global__ void reduce_rows(const __grid_constant__ struct rtc_rows p,
                            const __grid_constant__ struct rtc_red r,
                            const __grid_constant__ struct red_args a, const T *x, void *y)
{
	const int lane = threadIdx.x % G;
	for (int64_t k = rtc_rows_first(&p, blockIdx.x, threadIdx.x); k < r.c.nout;
	     k += rtc_rows_step(&p)) {
		switch (a.prim) {
		case RT_PRIM_SUM: rows_output<RT_PRIM_SUM, G, T, A>(a, r, x, y, k, lane); break;
		case RT_PRIM_ABS: rows_output<RT_PRIM_ABS, G, T, A>(a, r, x, y, k, lane); break;
		case RT_PRIM_SQ: rows_output<RT_PRIM_SQ, G, T, A>(a, r, x, y, k, lane); break;
		case RT_PRIM_EXP: rows_output<RT_PRIM_EXP, G, T, A>(a, r, x, y, k, lane); break;
		case RT_PRIM_PROD: rows_output<RT_PRIM_PROD, G, T, A>(a, r, x, y, k, lane); break;
		case RT_PRIM_MAX: rows_output<RT_PRIM_MAX, G, T, A>(a, r, x, y, k, lane); break;
		case RT_PRIM_MIN: rows_output<RT_PRIM_MIN, G, T, A>(a, r, x, y, k, lane); break;
		}
	}
}

/* ------------------------------------------------------------------------ */
/* The cols form                                                            */
/* ------------------------------------------------------------------------ */

#define COLS_THREADS 256

/* Combines the ty segment lanes of each of the tx columns (every thread of
 * the block calls it; each gets its column's result). */
template <int P, class T, class A> __device__ __forceinline__ A cols_combine(A v, int tx)
{
	__shared__ A part[COLS_THREADS];
	const int cx = threadIdx.x % tx, ty = COLS_THREADS / tx;
	__syncthreads();
	part[threadIdx.x] = v;
	__syncthreads();
	v = part[cx];
	for (int s = 1; s < ty; s++)
		v = prim<P, T, A>::comb(v, part[s * tx + cx]);
	return v;
}

template <int P, class T, class A>
__device__ __forceinline__ A cols_pass(const struct rtc_red &r, const T *x, int64_t base, bool live,
                                       int tx, A shift)
{
	A acc = prim<P, T, A>::ident();
	for (int64_t j = threadIdx.x / tx; live && j < r.c.nseg; j += COLS_THREADS / tx)
		acc = prim<P, T, A>::comb(
		        acc, prim<P, T, A>::term(x[base + rtc_red_elem(&r, j)], shift));
	return cols_combine<P, T, A>(acc, tx);
}

template <int P, class T, class A>
__device__ __forceinline__ void cols_output(const struct red_args &a, const struct rtc_red &r,
                                            const T *x, void *y, int64_t k, bool live, int tx)
{
	int64_t base = live ? rtc_red_base(&r, k) : 0;
	A shift = 0, v;
	if (P == RT_PRIM_EXP)
		shift = lse_shift(cols_pass<RT_PRIM_MAX, T, A>(r, x, base, live, tx, shift));
	v = cols_pass<P, T, A>(r, x, base, live, tx, shift);
	if (live && threadIdx.x < tx)
		finish_store<T>(a, r, v, shift, y, k);
}

/* Tasks: (kept index, tile of tx columns), block-strided. */
template <class T, class A>
__global__ void reduce_cols(const __grid_constant__ struct rtc_red r,
                            const __grid_constant__ struct red_args a, int tx, const T *x, void *y)
{
	const int64_t ntile = rt_ceil_div(r.c.inner, tx), tasks = r.c.nout / r.c.inner * ntile;
	for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
		int64_t c = t % ntile * tx + threadIdx.x % tx, k = t / ntile * r.c.inner + c;
		bool live = c < r.c.inner;
		switch (a.prim) {
		case RT_PRIM_SUM: cols_output<RT_PRIM_SUM, T, A>(a, r, x, y, k, live, tx); break;
		case RT_PRIM_ABS: cols_output<RT_PRIM_ABS, T, A>(a, r, x, y, k, live, tx); break;
		case RT_PRIM_SQ: cols_output<RT_PRIM_SQ, T, A>(a, r, x, y, k, live, tx); break;
		case RT_PRIM_EXP: cols_output<RT_PRIM_EXP, T, A>(a, r, x, y, k, live, tx); break;
		case RT_PRIM_PROD: cols_output<RT_PRIM_PROD, T, A>(a, r, x, y, k, live, tx); break;
		case RT_PRIM_MAX: cols_output<RT_PRIM_MAX, T, A>(a, r, x, y, k, live, tx); break;
		case RT_PRIM_MIN: cols_output<RT_PRIM_MIN, T, A>(a, r, x, y, k, live, tx); break;
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Entry                                                                    */
/* ------------------------------------------------------------------------ */

template <class T, class A>
static void reduce_launch(struct rtc_model *m, const struct rtc_red &r, const struct red_args &a,
                          const void *x, void *y)
{
	cudaStream_t s = rtc_stream(m);
	int sm = rtc_sm_count(m);
	if (!r.c.rows) {
		int tx = rtc_red_cols_tx(r.c.inner);
		int64_t tasks = r.c.nout / r.c.inner * rt_ceil_div(r.c.inner, tx);
		reduce_cols<T, A><<<rtc_blocks(tasks, 1, sm), COLS_THREADS, 0, s>>>(
		        r, a, tx, (const T *)x, y);
		return;
	}
	struct rtc_rows p = rtc_rows_group(r.c.nout, rtc_red_group(r.c.nred), sm);
	if (p.group == 1)
		reduce_rows<1, T, A><<<p.blocks, p.threads, 0, s>>>(p, r, a, (const T *)x, y);
	else if (p.group == 32)
		reduce_rows<32, T, A><<<p.blocks, p.threads, 0, s>>>(p, r, a, (const T *)x, y);
	else
		reduce_rows<RTC_ROW_BLOCK, T, A>
		        <<<p.blocks, p.threads, 0, s>>>(p, r, a, (const T *)x, y);
}

/* Integers: wrapping sums and products in uint64, max/min in int64, the
 * exponentials of LogSumExp in double. */
template <class T>
static void reduce_int(struct rtc_model *m, const struct rtc_red &r, const struct red_args &a,
                       const void *x, void *y)
{
	if (a.prim == RT_PRIM_MAX || a.prim == RT_PRIM_MIN)
		reduce_launch<T, int64_t>(m, r, a, x, y);
	else if (a.prim == RT_PRIM_EXP)
		reduce_launch<T, double>(m, r, a, x, y);
	else
		reduce_launch<T, uint64_t>(m, r, a, x, y);
}

/* Fills n elements of esize bytes with value (one element's bytes). */
template <int ES> __global__ void fill_kernel(char *y, int64_t n, uint64_t value)
{
	typedef typename elem_of<ES>::type E;
	E v;
	memcpy(&v, &value, ES);
	RTC_GRID_LOOP(i, n) { ((E *)y)[i] = v; }
}

/* An empty reduction's outputs: the finished identity (reduce_empty). */
static int reduce_empty(struct rtc_model *m, const struct red_args &a, int64_t nout, void *y)
{
	double f = a.prim == RT_PRIM_PROD ? 1 : 0;
	int64_t i = a.prim == RT_PRIM_PROD ? 1 : 0;
	uint64_t bits = 0;
	int es = rtc_dtype_size(a.ydt);
	if (a.is_float && a.prim == RT_PRIM_MAX)
		f = -INFINITY;
	if (a.is_float && a.prim == RT_PRIM_MIN)
		f = INFINITY;
	rt_red_finish(a.kind, a.is_float, 0, 0, &f, &i);
	switch (a.ydt) {
	case RT_F32: {
		float v = (float)f;
		memcpy(&bits, &v, 4);
		break;
	}
	case RT_F16: {
		f16 v = __float2half_rn((float)f);
		memcpy(&bits, &v, 2);
		break;
	}
	case RT_BF16: {
		bf16 v = __float2bfloat16_rn((float)f);
		memcpy(&bits, &v, 2);
		break;
	}
	case RT_F64: memcpy(&bits, &f, 8); break;
	default: memcpy(&bits, &i, (size_t)es); break; /* little-endian low bytes */
	}
	int blocks = rtc_blocks(nout, RTC_THREADS, rtc_sm_count(m));
	cudaStream_t s = rtc_stream(m);
	switch (es) {
	case 1: fill_kernel<1><<<blocks, RTC_THREADS, 0, s>>>((char *)y, nout, bits); break;
	case 2: fill_kernel<2><<<blocks, RTC_THREADS, 0, s>>>((char *)y, nout, bits); break;
	case 4: fill_kernel<4><<<blocks, RTC_THREADS, 0, s>>>((char *)y, nout, bits); break;
	default: fill_kernel<8><<<blocks, RTC_THREADS, 0, s>>>((char *)y, nout, bits); break;
	}
	return rtc_launched(m, "rtc_reduce");
}

/* Whether dtype reduces with primitive p (rt_reduce.c's prims_of, and the
 * halves). */
static bool reduce_dtype_ok(int dtype, int p)
{
	switch (dtype) {
	case RT_F32:
	case RT_F16:
	case RT_BF16:
	case RT_F64:
	case RT_I32:
	case RT_I64: return true;
	case RT_U8:
	case RT_I8: return p == RT_PRIM_MAX || p == RT_PRIM_MIN;
	default: return false;
	}
}

int rtc_reduce(struct rtc_model *m, const struct rt_reduce_desc *d, const void *x, void *y)
{
	struct rtc_red r;
	struct red_args a;
	int p = rt_red_prim_of(d->kind);
	bool ok = d->rank >= 0 && d->rank <= 8 && d->kind >= RT_REDUCE_SUM &&
	          d->kind <= RT_REDUCE_LOG_SUM_EXP && reduce_dtype_ok(d->dtype, p) &&
	          rtc_out_dtype(d->dtype, d->ydtype);
	for (int i = 0; ok && i < d->rank; i++)
		ok = d->dims[i] >= 0;
	if (!ok)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_reduce: unsupported descriptor");
	a.kind = d->kind;
	a.prim = p;
	a.ydt = rtc_out_dtype(d->dtype, d->ydtype);
	a.is_float = rtc_is_float(d->dtype);
	if (!rtc_red_canon(d, &r)) {
		if (r.c.nout == 0)
			return RT_OK;
		return y ? reduce_empty(m, a, r.c.nout, y)
		         : rtc_fail(m, RT_ERR_ARGUMENT, "rtc_reduce: NULL tensor");
	}
	if (!x || !y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_reduce: NULL tensor");
	switch (d->dtype) {
	case RT_F32: reduce_launch<float, float>(m, r, a, x, y); break;
	case RT_F16: reduce_launch<f16, float>(m, r, a, x, y); break;
	case RT_BF16: reduce_launch<bf16, float>(m, r, a, x, y); break;
	case RT_F64: reduce_launch<double, double>(m, r, a, x, y); break;
	case RT_I32: reduce_int<int32_t>(m, r, a, x, y); break;
	case RT_I64: reduce_int<int64_t>(m, r, a, x, y); break;
	case RT_U8: reduce_launch<uint8_t, int64_t>(m, r, a, x, y); break;
	case RT_I8: reduce_launch<int8_t, int64_t>(m, r, a, x, y); break;
	}
	return rtc_launched(m, "rtc_reduce");
}

/* ------------------------------------------------------------------------ */
/* ArgMax / ArgMin                                                          */
/* ------------------------------------------------------------------------ */

struct arg_args {
	int is_min, last;
};

/* The reference's sequential scan of one lane. */
template <class T>
__global__ void arg_lanes(const __grid_constant__ struct rtc_lanes l,
                          const __grid_constant__ struct arg_args g, const T *x, int64_t *y)
{
	RTC_GRID_LOOP(lane, l.lanes)
	{
		const T *xl = x + rtc_lane_base(&l, lane);
		auto best = to_acc(xl[0]);
		int64_t at = 0;
		for (int64_t a = 1; a < l.axis; a++) {
			auto v = to_acc(xl[a * l.inner]);
			bool better = g.last ? (g.is_min ? !(v > best) : !(v < best))
			                     : (g.is_min ? v < best : v > best);
			if (better) {
				best = v;
				at = a;
			}
		}
		y[lane] = at;
	}
}

/* The type values compare in (shuffles need 32 bits or more). */
template <class T> struct arg_val {
	typedef T type;
};
template <> struct arg_val<f16> {
	typedef float type;
};
template <> struct arg_val<bf16> {
	typedef float type;
};
template <> struct arg_val<int8_t> {
	typedef int type;
};
template <> struct arg_val<uint8_t> {
	typedef int type;
};
template <> struct arg_val<int16_t> {
	typedef int type;
};
template <> struct arg_val<uint16_t> {
	typedef int type;
};

/* The best (value, index) candidate of a group by RTC_ARG_BETTER. */
template <int G, class V>
__device__ __forceinline__ int64_t arg_reduce(const struct arg_args &g, V v, int64_t i)
{
	for (int o = 16; o > 0; o /= 2) {
		V ov = __shfl_xor_sync(0xffffffffu, v, o);
		int64_t oi = __shfl_xor_sync(0xffffffffu, i, o);
		if (oi >= 0 && RTC_ARG_BETTER(g.is_min, g.last, ov, oi, v, i)) {
			v = ov;
			i = oi;
		}
	}
	if constexpr (G > 32) {
		__shared__ V pv[G / 32];
		__shared__ int64_t pi[G / 32];
		__syncthreads();
		if (threadIdx.x % 32 == 0) {
			pv[threadIdx.x / 32] = v;
			pi[threadIdx.x / 32] = i;
		}
		__syncthreads();
		v = pv[0];
		i = pi[0];
		for (int w = 1; w < G / 32; w++)
			if (pi[w] >= 0 && RTC_ARG_BETTER(g.is_min, g.last, pv[w], pi[w], v, i)) {
				v = pv[w];
				i = pi[w];
			}
	}
	return i;
}

/* Long rows (inner 1): a group per row; NaN cases as in RTC_ARG_BETTER's
 * comment. */
template <int G, class T>
__global__ void arg_rows(const __grid_constant__ struct rtc_rows p, int64_t rows, int64_t n,
                         const __grid_constant__ struct arg_args g, const T *x, int64_t *y)
{
	typedef typename arg_val<T>::type V;
	const int lane = threadIdx.x % G;
	for (int64_t r = rtc_rows_first(&p, blockIdx.x, threadIdx.x); r < rows;
	     r += rtc_rows_step(&p)) {
		const T *xr = x + r * n;
		int64_t from = 0, bi = -1, res;
		V first = (V)to_acc(xr[0]), bv = first;
		if (g.last) { /* after the last NaN */
			int64_t nan = -1;
			for (int64_t i = lane; i < n; i += G)
				if ((V)to_acc(xr[i]) != (V)to_acc(xr[i]))
					nan = i;
			from = group_reduce<G>(nan, prim_op<RT_PRIM_MAX>()) + 1;
		}
		for (int64_t i = from + lane; i < n; i += G) {
			V v = (V)to_acc(xr[i]);
			if (v == v && RTC_ARG_BETTER(g.is_min, g.last, v, i, bv, bi)) {
				bv = v;
				bi = i;
			}
		}
		res = arg_reduce<G>(g, bv, bi);
		if (g.last && from == n)
			res = n - 1; /* the last element is a NaN */
		if (!g.last && first != first)
			res = 0; /* a NaN in first place is never replaced */
		if (lane == 0)
			y[r] = res;
	}
}

template <class T>
static void arg_launch(struct rtc_model *m, const struct rt_arg_desc *d, const void *x, int64_t *y)
{
	struct arg_args g = { d->is_min != 0, d->select_last != 0 };
	cudaStream_t s = rtc_stream(m);
	int sm = rtc_sm_count(m);
	int64_t lanes = d->outer * d->inner;
	if (d->inner > 1 || rtc_axis_serial(lanes, d->axis, sm)) {
		struct rtc_lanes l = rtc_lanes_of(d->outer, d->axis, d->inner);
		arg_lanes<T><<<rtc_blocks(lanes, RTC_THREADS, sm), RTC_THREADS, 0, s>>>(
		        l, g, (const T *)x, y);
		return;
	}
	struct rtc_rows p = rtc_rows_plan(d->outer, d->axis, sm);
	if (p.group == 32)
		arg_rows<32, T>
		        <<<p.blocks, p.threads, 0, s>>>(p, d->outer, d->axis, g, (const T *)x, y);
	else
		arg_rows<RTC_ROW_BLOCK, T>
		        <<<p.blocks, p.threads, 0, s>>>(p, d->outer, d->axis, g, (const T *)x, y);
}

int rtc_arg(struct rtc_model *m, const struct rt_arg_desc *d, const void *x, int64_t *y)
{
	bool ok = d->outer >= 0 && d->axis >= 0 && d->inner >= 0;
	int64_t lanes = d->outer * d->inner;
	if (ok && lanes == 0)
		return RT_OK;
	if (ok && (!y || (d->axis && !x)))
		ok = false;
	if (ok && d->axis == 0) /* no extreme: the reference answers 0 */
		return rtc_check(m, cudaMemsetAsync(y, 0, sizeof *y * (size_t)lanes, rtc_stream(m)),
		                 "rtc_arg");
	switch (ok ? d->dtype : 0) {
	case RT_F32: arg_launch<float>(m, d, x, y); break;
	case RT_F16: arg_launch<f16>(m, d, x, y); break;
	case RT_BF16: arg_launch<bf16>(m, d, x, y); break;
	case RT_F64: arg_launch<double>(m, d, x, y); break;
	case RT_I8: arg_launch<int8_t>(m, d, x, y); break;
	case RT_U8: arg_launch<uint8_t>(m, d, x, y); break;
	case RT_I16: arg_launch<int16_t>(m, d, x, y); break;
	case RT_U16: arg_launch<uint16_t>(m, d, x, y); break;
	case RT_I32: arg_launch<int32_t>(m, d, x, y); break;
	case RT_U32: arg_launch<uint32_t>(m, d, x, y); break;
	case RT_I64: arg_launch<int64_t>(m, d, x, y); break;
	case RT_U64: arg_launch<uint64_t>(m, d, x, y); break;
	default: return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_arg: unsupported descriptor");
	}
	return rtc_launched(m, "rtc_arg");
}

/* ------------------------------------------------------------------------ */
/* CumSum, CumProd                                                          */
/* ------------------------------------------------------------------------ */

/* Floats accumulate in double, integers in wrapping uint64. */
template <class T> struct cum_acc {
	typedef typename std::conditional<std::is_integral<T>::value, uint64_t, double>::type type;
};

/* The scan's operation: the running sum (CumSum) or product (CumProd). */
struct cum_add {
	template <class A> static __device__ __forceinline__ A id() { return A(0); }
	template <class A> static __device__ __forceinline__ A op(A a, A b) { return a + b; }
};
struct cum_mul {
	template <class A> static __device__ __forceinline__ A id() { return A(1); }
	template <class A> static __device__ __forceinline__ A op(A a, A b) { return a * b; }
};

struct cum_args {
	int exclusive, reverse;
};

/* One lane per thread, in order (rt_reduce.c's CUMSCAN). */
template <class Op, class T, class Y>
__global__ void cum_lanes(const __grid_constant__ struct rtc_lanes l,
                          const __grid_constant__ struct cum_args c, const T *x, Y *y)
{
	typedef typename cum_acc<T>::type A;
	RTC_GRID_LOOP(lane, l.lanes)
	{
		int64_t base = rtc_lane_base(&l, lane);
		A acc = Op::template id<A>();
		for (int64_t p = 0; p < l.axis; p++) {
			int64_t at = base + rtc_scan_pos(l.axis, c.reverse, p) * l.inner;
			A next = Op::op(acc, (A)to_acc(x[at]));
			y[at] = to_store<Y>(c.exclusive ? acc : next);
			acc = next;
		}
	}
}

#define CUM_THREADS 256
#define CUM_ITEMS   4

/* The exclusive scan of v over the block, in a fixed order; *total gets the
 * whole block's. */
template <class Op, class A> __device__ __forceinline__ A block_scan(A v, A *total)
{
	__shared__ A warp_sum[CUM_THREADS / 32];
	const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
	A pre = Op::template id<A>(), excl;
	for (int o = 1; o < 32; o *= 2) {
		A n = __shfl_up_sync(0xffffffffu, v, o);
		if (lane >= o)
			v = Op::op(n, v);
	}
	excl = __shfl_up_sync(0xffffffffu, v, 1);
	if (lane == 0)
		excl = Op::template id<A>();
	__syncthreads(); /* earlier readers of warp_sum are done */
	if (lane == 31)
		warp_sum[w] = v;
	__syncthreads();
	*total = Op::template id<A>();
	for (int i = 0; i < CUM_THREADS / 32; i++) {
		if (i < w)
			pre = Op::op(pre, warp_sum[i]);
		*total = Op::op(*total, warp_sum[i]);
	}
	return Op::op(pre, excl);
}

/* Long lanes: a block per lane scans chunks of CUM_THREADS * CUM_ITEMS
 * elements, carrying the running value between chunks. */
template <class Op, class T, class Y>
__global__ void cum_blocks(const __grid_constant__ struct rtc_lanes l,
                           const __grid_constant__ struct cum_args c, const T *x, Y *y)
{
	typedef typename cum_acc<T>::type A;
	const int64_t chunk = CUM_THREADS * CUM_ITEMS;
	for (int64_t lane = blockIdx.x; lane < l.lanes; lane += gridDim.x) {
		int64_t base = rtc_lane_base(&l, lane);
		A carry = Op::template id<A>();
		for (int64_t c0 = 0; c0 < l.axis; c0 += chunk) {
			A v[CUM_ITEMS], part = Op::template id<A>(), total;
			int64_t p0 = c0 + threadIdx.x * CUM_ITEMS;
			for (int k = 0; k < CUM_ITEMS; k++) {
				int64_t p = p0 + k, a = rtc_scan_pos(l.axis, c.reverse, p);
				v[k] = p < l.axis ? (A)to_acc(x[base + a * l.inner])
				                  : Op::template id<A>();
				part = Op::op(part, v[k]);
			}
			/* before this thread's items */
			A run = Op::op(carry, block_scan<Op>(part, &total));
			for (int k = 0; k < CUM_ITEMS; k++) {
				int64_t p = p0 + k, a = rtc_scan_pos(l.axis, c.reverse, p);
				A next = Op::op(run, v[k]);
				if (p < l.axis)
					y[base + a * l.inner] =
					        to_store<Y>(c.exclusive ? run : next);
				run = next;
			}
			carry = Op::op(carry, total);
		}
	}
}

template <class Op, class T, class Y>
static void cum_launch_op(struct rtc_model *m, const struct rt_cumsum_desc *d, const void *x,
                          void *y)
{
	struct rtc_lanes l = rtc_lanes_of(d->outer, d->axis, d->inner);
	struct cum_args c = { d->exclusive != 0, d->reverse != 0 };
	cudaStream_t s = rtc_stream(m);
	int sm = rtc_sm_count(m);
	if (rtc_axis_serial(l.lanes, d->axis, sm))
		cum_lanes<Op, T, Y><<<rtc_blocks(l.lanes, RTC_THREADS, sm), RTC_THREADS, 0, s>>>(
		        l, c, (const T *)x, (Y *)y);
	else
		cum_blocks<Op, T, Y><<<rtc_blocks(l.lanes, 1, sm), CUM_THREADS, 0, s>>>(
		        l, c, (const T *)x, (Y *)y);
}

template <class T, class Y>
static void cum_launch(struct rtc_model *m, const struct rt_cumsum_desc *d, const void *x, void *y)
{
	if (d->prod)
		cum_launch_op<cum_mul, T, Y>(m, d, x, y);
	else
		cum_launch_op<cum_add, T, Y>(m, d, x, y);
}

int rtc_cumsum(struct rtc_model *m, const struct rt_cumsum_desc *d, const void *x, void *y)
{
	bool ok = d->outer >= 0 && d->axis >= 0 && d->inner >= 0 &&
	          rtc_out_dtype(d->dtype, d->ydtype);
	if (ok && (d->axis == 0 || d->outer == 0 || d->inner == 0))
		return RT_OK;
	if (ok && (!x || !y))
		ok = false;
	if (ok) {
		switch (d->dtype) {
		case RT_I32: cum_launch<int32_t, int32_t>(m, d, x, y); break;
		case RT_I64: cum_launch<int64_t, int64_t>(m, d, x, y); break;
		default:
			ok = with_float(d->dtype, d->ydtype, [&](auto t, auto u) {
				cum_launch<decltype(t), decltype(u)>(m, d, x, y);
			});
		}
	}
	if (!ok)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_cumsum: unsupported descriptor");
	return rtc_launched(m, "rtc_cumsum");
}

/* ------------------------------------------------------------------------ */
/* TopK                                                                     */
/* ------------------------------------------------------------------------ */

/* The keys of rtc_index_reduce.h by storage type: halves through FP32. */
template <class T> struct topk_key {
	static const int bits = 8 * (int)sizeof(T);
	__device__ __forceinline__ static uint64_t of(T v)
	{
		if constexpr (std::is_signed<T>::value)
			return rtc_topk_key_signed((int64_t)v, bits);
		else
			return (uint64_t)v;
	}
};
#define TOPK_KEY_FLOAT(T)                                                                         \
	template <> struct topk_key<T> {                                                          \
		static const int bits = 32;                                                       \
		__device__ __forceinline__ static uint64_t of(T v) { return rtc_topk_key_f32(to_acc(v)); } \
	};
TOPK_KEY_FLOAT(float)
TOPK_KEY_FLOAT(f16)
TOPK_KEY_FLOAT(bf16)
#undef TOPK_KEY_FLOAT
template <> struct topk_key<double> {
	static const int bits = 64;
	__device__ __forceinline__ static uint64_t of(double v) { return rtc_topk_key_f64(v); }
};

template <class T> __device__ __forceinline__ uint64_t topk_rank(T v, int smallest)
{
	return rtc_topk_rank(topk_key<T>::of(v), topk_key<T>::bits, smallest);
}

/* Is position i of the lane at x (elements st apart) better than j? */
template <class T>
__device__ __forceinline__ bool topk_better(const T *x, int64_t st, int small, int64_t i, int64_t j)
{
	uint64_t a = topk_rank(x[i * st], small), b = topk_rank(x[j * st], small);
	return a > b || (a == b && i < j);
}

/* Sifts h[p] down a heap of n positions (st apart) rooted at its worst. */
template <class T>
__device__ void topk_sift(const T *x, int64_t st, int small, int64_t *h, int64_t n, int64_t p)
{
	for (int64_t c; (c = 2 * p + 1) < n; p = c) {
		if (c + 1 < n && topk_better(x, st, small, h[c * st], h[(c + 1) * st]))
			c++;
		if (!topk_better(x, st, small, h[p * st], h[c * st]))
			return;
		int64_t t = h[p * st];
		h[p * st] = h[c * st];
		h[c * st] = t;
	}
}

/* Many or short lanes: a thread per lane, rt_reduce.c's heap of the k best
 * positions kept in the lane's own indices output, then sorted in place. */
template <class T>
__global__ void topk_lanes(const __grid_constant__ struct rtc_lanes l, int64_t k, int small,
                           const T *x, T *y, int64_t *yi)
{
	const int64_t st = l.inner, n = l.axis;
	RTC_GRID_LOOP(lane, l.lanes)
	{
		int64_t xb, yb;
		rtc_topk_bases(&l, k, lane, &xb, &yb);
		const T *xl = x + xb;
		int64_t *h = yi + yb;
		for (int64_t j = 0; j < k; j++)
			h[j * st] = j;
		for (int64_t p = k / 2; p-- > 0;)
			topk_sift(xl, st, small, h, k, p);
		for (int64_t j = k; j < n; j++)
			if (topk_better(xl, st, small, j, h[0])) {
				h[0] = j;
				topk_sift(xl, st, small, h, k, 0);
			}
		for (int64_t e = k - 1; e > 0; e--) {
			int64_t t = h[0];
			h[0] = h[e * st];
			h[e * st] = t;
			topk_sift(xl, st, small, h, e, 0);
		}
		for (int64_t j = 0; j < k; j++)
			y[yb + j * st] = xl[h[j * st] * st];
	}
}

/* Long lanes: a block (CUM_THREADS) per lane - radix select of the k-th
 * best rank, compaction of the k best positions in order, a bitonic sort
 * of them (rtc_index_reduce.h), the values gathered. */
template <class T>
__global__ void topk_blocks(const __grid_constant__ struct rtc_lanes l, int64_t k, int small,
                            const T *x, T *y, int64_t *yi)
{
	__shared__ unsigned long long hist[256];
	__shared__ uint64_t s_prefix;
	__shared__ int64_t s_need;
	const int64_t st = l.inner, n = l.axis;
	const int tid = threadIdx.x, nt = blockDim.x;
	int64_t n2 = 1;
	while (n2 < k)
		n2 *= 2;
	for (int64_t lane = blockIdx.x; lane < l.lanes; lane += gridDim.x) {
		int64_t xb, yb, need = k, taken = 0, eq_seen = 0;
		uint64_t prefix = 0, mask = 0;
		rtc_topk_bases(&l, k, lane, &xb, &yb);
		const T *xl = x + xb;
		int64_t *h = yi + yb;
		for (int shift = topk_key<T>::bits - 8; shift >= 0; shift -= 8) {
			for (int b = tid; b < 256; b += nt)
				hist[b] = 0;
			__syncthreads();
			for (int64_t p = tid; p < n; p += nt) {
				uint64_t r = topk_rank(xl[p * st], small);
				if ((r & mask) == prefix)
					atomicAdd(&hist[(r >> shift) & 255], 1ull);
			}
			__syncthreads();
			if (tid == 0) {
				int b = rtc_topk_bucket(hist, &need);
				s_prefix = prefix | (uint64_t)b << shift;
				s_need = need;
			}
			__syncthreads();
			prefix = s_prefix;
			need = s_need;
			mask |= 255ull << shift;
		}
		/* prefix is the k-th best rank: take every rank above it and the
		 * first `need` equal to it, in position order */
		for (int64_t c0 = 0; c0 < n && taken < k; c0 += nt) {
			int64_t p = c0 + tid;
			uint64_t r = p < n ? topk_rank(xl[p * st], small) : 0;
			int eq = p < n && r == prefix, eq_total, take_total;
			int eq_before = block_scan<cum_add>(eq, &eq_total);
			int take = (p < n && r > prefix) || (eq && eq_seen + eq_before < need);
			int slot = block_scan<cum_add>(take, &take_total);
			if (take)
				h[(taken + slot) * st] = p;
			taken += take_total;
			eq_seen += eq_total;
		}
		__syncthreads();
		for (int64_t size = 2; size <= n2; size *= 2)
			for (int64_t j = size / 2; j > 0; j /= 2) {
				for (int64_t t = tid; t < n2 / 2; t += nt) {
					int64_t a, b;
					rtc_bitonic_pair(t, size, j, &a, &b);
					if (b < k) {
						int64_t ia = h[a * st], ib = h[b * st];
						if (topk_better(xl, st, small, ib, ia)) {
							h[a * st] = ib;
							h[b * st] = ia;
						}
					}
				}
				__syncthreads();
			}
		for (int64_t q = tid; q < k; q += nt)
			y[yb + q * st] = xl[h[q * st] * st];
		__syncthreads(); /* before the next lane reuses hist */
	}
}

template <class T>
static void topk_launch(struct rtc_model *m, const struct rt_topk_desc *d, const void *x,
                        void *values, int64_t *indices)
{
	struct rtc_lanes l = rtc_lanes_of(d->outer, d->axis, d->inner);
	cudaStream_t s = rtc_stream(m);
	int sm = rtc_sm_count(m), small = d->smallest != 0;
	if (rtc_axis_serial(l.lanes, d->axis, sm))
		topk_lanes<T><<<rtc_blocks(l.lanes, RTC_THREADS, sm), RTC_THREADS, 0, s>>>(
		        l, d->k, small, (const T *)x, (T *)values, indices);
	else
		topk_blocks<T><<<rtc_blocks(l.lanes, 1, sm), CUM_THREADS, 0, s>>>(
		        l, d->k, small, (const T *)x, (T *)values, indices);
}

int rtc_topk(struct rtc_model *m, const struct rt_topk_desc *d, const void *x, void *values,
             int64_t *indices)
{
	bool ok = d->outer >= 0 && d->axis >= 0 && d->inner >= 0 && d->k >= 0 && d->k <= d->axis;
	if (ok && (d->outer == 0 || d->inner == 0 || d->k == 0))
		return RT_OK;
	if (ok && (!x || !values || !indices))
		ok = false;
	switch (ok ? d->dtype : 0) {
	case RT_F32: topk_launch<float>(m, d, x, values, indices); break;
	case RT_F16: topk_launch<f16>(m, d, x, values, indices); break;
	case RT_BF16: topk_launch<bf16>(m, d, x, values, indices); break;
	case RT_F64: topk_launch<double>(m, d, x, values, indices); break;
	case RT_I8: topk_launch<int8_t>(m, d, x, values, indices); break;
	case RT_U8: topk_launch<uint8_t>(m, d, x, values, indices); break;
	case RT_I16: topk_launch<int16_t>(m, d, x, values, indices); break;
	case RT_U16: topk_launch<uint16_t>(m, d, x, values, indices); break;
	case RT_I32: topk_launch<int32_t>(m, d, x, values, indices); break;
	case RT_U32: topk_launch<uint32_t>(m, d, x, values, indices); break;
	case RT_I64: topk_launch<int64_t>(m, d, x, values, indices); break;
	case RT_U64: topk_launch<uint64_t>(m, d, x, values, indices); break;
	default: return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_topk: unsupported descriptor");
	}
	return rtc_launched(m, "rtc_topk");
}
