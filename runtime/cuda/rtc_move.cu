/*
 * rtc_move.cu - data movement on the GPU with rt_move.c's semantics:
 * strided copies (transpose, slice, expand, concat/split pieces) and tile,
 * gather, gather_elements, scatter_elements, pad and trilu.
 *
 * Everything is dtype-agnostic: an element is esize bytes, moved as one
 * 1, 2, 4, 8 or 16-byte load and store (bytewise for other sizes). Copies
 * are simplified on the host as rt_copy does (rtc_xfer_plan: size-1 dims
 * dropped, contiguous neighbours merged); a copy whose innermost run is
 * contiguous on both sides and aligned moves wider elements, and a
 * transpose (one dim contiguous in x, another in y, both at least 16 long)
 * goes through 32x32 tiles in shared memory so that reads and writes are
 * both coalesced. Everything else is a grid-stride loop over the output
 * with the flat index decoded by multiply-high division (rtc_index.h).
 *
 * Gathers check every index as they read it: an index out of range sets
 * the instance's device error flag (rtc_index_error; rtc_run_end reports
 * RT_ERR_INDEX) and writes zeros instead of reading out of bounds.
 */
#include "rtc_kern.cuh"

/* The element size a with_esize callback was given, as a constant. */
#define ES_OF(es) decltype(es)::value

/* Zeroes element di of y. */
template <int ES> __device__ __forceinline__ void zero_elem(char *y, int64_t di, int esize)
{
	if constexpr (ES > 0) {
		typedef typename elem_of<ES>::type E;
		E z;
		memset(&z, 0, sizeof z);
		((E *)y)[di] = z;
	} else {
		for (int b = 0; b < esize; b++)
			y[di * esize + b] = 0;
	}
}

/* The element size to move typed (0: bytewise): a power of two up to 16
 * that both pointers are aligned to. */
static int typed_esize(int es, const void *x, const void *y)
{
	bool pow2 = es == 1 || es == 2 || es == 4 || es == 8 || es == 16;
	return pow2 && ((uintptr_t)x | (uintptr_t)y) % (uintptr_t)es == 0 ? es : 0;
}

/* ------------------------------------------------------------------------ */
/* Strided copies and tile                                                  */
/* ------------------------------------------------------------------------ */

template <int ES, bool SMALL>
__global__ void xfer_elems(const __grid_constant__ struct rtc_xfer t, const char *x, char *y)
{
	RTC_GRID_LOOP(f, t.total)
	{
		int64_t so, dof;
		rtc_xfer_at(&t, SMALL, f, &so, &dof);
		move_elem<ES>(y, dof, x, so, t.esize);
	}
}

/* A transpose in tiles: loaded along A (contiguous in x), stored along B
 * (contiguous in y). Blocks of 256 threads: 32 lanes by 8 rows. */
template <int ES>
__global__ void xfer_tiles(const __grid_constant__ struct rtc_xfer t,
                           const __grid_constant__ struct rtc_tmap mp, const char *x, char *y)
{
	typedef typename elem_of<ES>::type E;
	__shared__ E tile[RTC_TILE][RTC_TILE + 1];
	const int tx = threadIdx.x % RTC_TILE, ty = threadIdx.x / RTC_TILE;
	const int rows = RTC_THREADS / RTC_TILE;
	for (int64_t k = blockIdx.x; k < mp.tiles; k += gridDim.x) {
		int64_t so, dof, a0, b0;
		rtc_xfer_tile(&t, &mp, k, &so, &dof, &a0, &b0);
		__syncthreads(); /* the previous tile's stores are done */
		for (int j = ty; j < RTC_TILE; j += rows) {
			int64_t a = a0 + tx, b = b0 + j;
			if (a < mp.na && b < mp.nb)
				tile[j][tx] = ((const E *)x)[so + a + b * mp.ss_b];
		}
		__syncthreads();
		for (int j = ty; j < RTC_TILE; j += rows) {
			int64_t a = a0 + j, b = b0 + tx;
			if (a < mp.na && b < mp.nb)
				((E *)y)[dof + b + a * mp.ds_a] = tile[tx][j];
		}
	}
}

/* Runs a planned copy. */
static int xfer_run(struct rtc_model *m, const struct rtc_xfer &t, const void *x, void *y,
                    const char *what)
{
	cudaStream_t s = rtc_stream(m);
	int sm = rtc_sm_count(m);
	const char *xs = (const char *)x;
	char *ys = (char *)y;
	if (t.total == 0)
		return RT_OK;
	if (t.tposed && typed_esize(t.esize, x, y)) {
		struct rtc_tmap mp = rtc_xfer_tmap(&t);
		int blocks = rtc_blocks(mp.tiles, 1, sm);
		with_esize(t.esize, [&](auto es) {
			if constexpr (ES_OF(es) > 0 && ES_OF(es) <= 8)
				xfer_tiles<ES_OF(es)><<<blocks, RTC_THREADS, 0, s>>>(t, mp, xs, ys);
		});
		return rtc_launched(m, what);
	}
	int blocks = rtc_blocks(t.total, RTC_THREADS, sm);
	with_esize(typed_esize(t.esize, x, y), [&](auto es) {
		if (t.small)
			xfer_elems<ES_OF(es), true><<<blocks, RTC_THREADS, 0, s>>>(t, xs, ys);
		else
			xfer_elems<ES_OF(es), false><<<blocks, RTC_THREADS, 0, s>>>(t, xs, ys);
	});
	return rtc_launched(m, what);
}

int rtc_copy(struct rtc_model *m, const struct rt_copy_desc *d, const void *x, void *y)
{
	struct rtc_xfer t;
	if (rtc_copy_plan(d, (uintptr_t)x, (uintptr_t)y, &t) != RT_OK)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_copy: bad descriptor");
	return xfer_run(m, t, x, y, "rtc_copy");
}

int rtc_tile(struct rtc_model *m, const struct rt_tile_desc *d, const void *x, void *y)
{
	struct rtc_xfer t;
	if (rtc_tile_plan(d, (uintptr_t)x, (uintptr_t)y, &t) != RT_OK)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_tile: bad descriptor");
	return xfer_run(m, t, x, y, "rtc_tile");
}

/* ------------------------------------------------------------------------ */
/* Gathers                                                                  */
/* ------------------------------------------------------------------------ */

template <int ES, class I>
__global__ void gather_kernel(const __grid_constant__ struct rtc_gather g, const char *x,
                              const I *idx, char *y, int *err)
{
	RTC_GRID_LOOP(f, g.total)
	{
		int64_t j, src = rtc_gather_at(&g, f, &j);
		int64_t k = rtc_norm_index((int64_t)idx[j], g.axis);
		if (k < 0) {
			*err = 1;
			zero_elem<ES>(y, f, g.esize);
			continue;
		}
		move_elem<ES>(y, f, x, src + k * g.inner, g.esize);
	}
}

/* Indices checked without a gather (an empty result still checks them). */
template <class I> __global__ void check_kernel(const I *idx, int64_t n, int64_t dim, int *err)
{
	RTC_GRID_LOOP(i, n)
	{
		if (rtc_norm_index((int64_t)idx[i], dim) < 0)
			*err = 1;
	}
}

static int check_indices(struct rtc_model *m, const void *idx, int index_dtype, int64_t n,
                         int64_t dim, const char *what)
{
	int blocks = rtc_blocks(n, RTC_THREADS, rtc_sm_count(m));
	cudaStream_t s = rtc_stream(m);
	if (index_dtype == RT_I32)
		check_kernel<<<blocks, RTC_THREADS, 0, s>>>((const int32_t *)idx, n, dim,
		                                            rtc_index_error(m));
	else
		check_kernel<<<blocks, RTC_THREADS, 0, s>>>((const int64_t *)idx, n, dim,
		                                            rtc_index_error(m));
	return rtc_launched(m, what);
}

int rtc_gather(struct rtc_model *m, const struct rt_gather_desc *d, const void *x,
               const void *indices, void *y)
{
	struct rtc_gather g;
	if (rtc_gather_plan(d, (uintptr_t)x, (uintptr_t)y, &g) != RT_OK || (d->nidx && !indices))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_gather: bad descriptor");
	if (g.total == 0)
		return d->nidx ? check_indices(m, indices, d->index_dtype, d->nidx, d->axis,
		                               "rtc_gather")
		               : RT_OK;
	if (!x || !y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_gather: NULL tensor");
	int blocks = rtc_blocks(g.total, RTC_THREADS, rtc_sm_count(m));
	cudaStream_t s = rtc_stream(m);
	int *err = rtc_index_error(m);
	with_esize(typed_esize(g.esize, x, y), [&](auto es) {
		if (g.index_dtype == RT_I32)
			gather_kernel<ES_OF(es)><<<blocks, RTC_THREADS, 0, s>>>(
			        g, (const char *)x, (const int32_t *)indices, (char *)y, err);
		else
			gather_kernel<ES_OF(es)><<<blocks, RTC_THREADS, 0, s>>>(
			        g, (const char *)x, (const int64_t *)indices, (char *)y, err);
	});
	return rtc_launched(m, "rtc_gather");
}

template <int ES, class I>
__global__ void gel_kernel(const __grid_constant__ struct rtc_gel g, const char *x, const I *idx,
                           char *y, int *err)
{
	RTC_GRID_LOOP(f, g.total)
	{
		int64_t k = rtc_norm_index((int64_t)idx[f], g.axis_n);
		if (k < 0) {
			*err = 1;
			zero_elem<ES>(y, f, g.esize);
			continue;
		}
		move_elem<ES>(y, f, x, rtc_gel_base(&g, f) + k * g.axis_stride, g.esize);
	}
}

int rtc_gather_elements(struct rtc_model *m, const struct rt_gather_elements_desc *d, const void *x,
                        const void *indices, void *y)
{
	struct rtc_gel g;
	int status = rtc_gel_plan(d, &g);
	if (status == RT_ERR_INDEX)
		return rtc_fail(
		        m, RT_ERR_INDEX,
		        "rtc_gather_elements: indices larger than the data outside the axis");
	if (status != RT_OK || (g.total && !indices))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_gather_elements: bad descriptor");
	if (g.total == 0)
		return RT_OK;
	if (!x || !y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_gather_elements: NULL tensor");
	int blocks = rtc_blocks(g.total, RTC_THREADS, rtc_sm_count(m));
	cudaStream_t s = rtc_stream(m);
	int *err = rtc_index_error(m);
	with_esize(typed_esize(g.esize, x, y), [&](auto es) {
		if (g.index_dtype == RT_I32)
			gel_kernel<ES_OF(es)><<<blocks, RTC_THREADS, 0, s>>>(
			        g, (const char *)x, (const int32_t *)indices, (char *)y, err);
		else
			gel_kernel<ES_OF(es)><<<blocks, RTC_THREADS, 0, s>>>(
			        g, (const char *)x, (const int64_t *)indices, (char *)y, err);
	});
	return rtc_launched(m, "rtc_gather_elements");
}

/* ------------------------------------------------------------------------ */
/* ScatterElements                                                          */
/* ------------------------------------------------------------------------ */

/*
 * The data is copied to y, then one thread per update stores it (the
 * order among duplicates is undefined, as in ONNX) or combines it
 * atomically: a native atomicAdd where the type has one, otherwise a
 * compare-and-swap loop on the element (1- and 2-byte elements: on the
 * aligned 32-bit word around them). Values combine as rt_move.c does:
 * halves in FP32 rounded after each update, integers wrapping, max and
 * min letting NaN through; only the order of the updates differs, so
 * float sums may round differently from the CPU's.
 */
template <class T> __device__ __forceinline__ T scel_combine(int red, T a, T b)
{
	if constexpr (std::is_integral<T>::value) {
		typedef typename std::make_unsigned<T>::type U;
		typedef unsigned long long W;
		switch (red) {
		case RT_SCATTER_ADD: return (T)(U)((W)(U)a + (W)(U)b);
		case RT_SCATTER_MUL: return (T)(U)((W)(U)a * (W)(U)b);
		case RT_SCATTER_MAX: return b > a ? b : a;
		case RT_SCATTER_MIN: return b < a ? b : a;
		default: return b;
		}
	} else {
		auto x = to_acc(a), y = to_acc(b);
		switch (red) {
		case RT_SCATTER_ADD: x = x + y; break;
		case RT_SCATTER_MUL: x = x * y; break;
		case RT_SCATTER_MAX: x = y > x || y != y ? y : x; break;
		case RT_SCATTER_MIN: x = y < x || y != y ? y : x; break;
		default: x = y; break;
		}
		return to_store<T>(x);
	}
}

/* *p = combine(*p, v) atomically, by compare-and-swap. */
template <class T> __device__ void scel_cas(T *p, T v, int red)
{
	if constexpr (sizeof(T) == 8 || sizeof(T) == 4) {
		typedef typename std::conditional<sizeof(T) == 8, unsigned long long,
		                                  unsigned>::type W;
		W *w = (W *)p, old = *w, seen, nw;
		do {
			T a, r;
			seen = old;
			memcpy(&a, &seen, sizeof a);
			r = scel_combine(red, a, v);
			memcpy(&nw, &r, sizeof nw);
			old = atomicCAS(w, seen, nw);
		} while (old != seen);
	} else {
		unsigned *w = (unsigned *)((uintptr_t)p & ~(uintptr_t)3);
		unsigned shift = (unsigned)((uintptr_t)p & 3) * 8,
		         mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
		unsigned old = *w, seen, bits;
		do {
			T a, r;
			seen = old;
			bits = seen >> shift;
			memcpy(&a, &bits, sizeof a); /* little-endian: the low bytes */
			r = scel_combine(red, a, v);
			bits = 0;
			memcpy(&bits, &r, sizeof r);
			old = atomicCAS(w, seen, (seen & ~mask) | (bits << shift));
		} while (old != seen);
	}
}

/* The types atomicAdd takes (FP16 from sm_70, BF16 from sm_80). */
template <class T> constexpr bool scel_native_add()
{
	return std::is_floating_point<T>::value || std::is_same<T, f16>::value ||
	       std::is_same<T, bf16>::value || sizeof(T) == 4 || sizeof(T) == 8;
}

template <class T> __device__ __forceinline__ void scel_add(T *p, T v)
{
	if constexpr (sizeof(T) == 8 && std::is_integral<T>::value)
		atomicAdd((unsigned long long *)p, (unsigned long long)v);
	else if constexpr (std::is_same<T, int32_t>::value)
		atomicAdd((int *)p, (int)v);
	else if constexpr (std::is_same<T, uint32_t>::value)
		atomicAdd((unsigned *)p, (unsigned)v);
	else
		atomicAdd(p, v);
}

template <class T, class I>
__global__ void scel_kernel(const __grid_constant__ struct rtc_gel g, const I *idx, const T *u,
                            T *y, int red, int *err)
{
	RTC_GRID_LOOP(f, g.total)
	{
		int64_t k = rtc_norm_index((int64_t)idx[f], g.axis_n);
		if (k < 0) {
			*err = 1;
			continue;
		}
		T *p = y + rtc_gel_base(&g, f) + k * g.axis_stride;
		if (red == RT_SCATTER_NONE) {
			*p = u[f];
			continue;
		}
		if constexpr (scel_native_add<T>()) {
			if (red == RT_SCATTER_ADD) {
				scel_add(p, u[f]);
				continue;
			}
		}
		scel_cas(p, u[f], red);
	}
}

template <class T>
static void scel_launch(const struct rtc_gel &g, int blocks, cudaStream_t s, const void *idx,
                        const void *u, void *y, int red, int *err)
{
	if (g.index_dtype == RT_I32)
		scel_kernel<T><<<blocks, RTC_THREADS, 0, s>>>(g, (const int32_t *)idx, (const T *)u,
		                                              (T *)y, red, err);
	else
		scel_kernel<T><<<blocks, RTC_THREADS, 0, s>>>(g, (const int64_t *)idx, (const T *)u,
		                                              (T *)y, red, err);
}

int rtc_scatter_elements(struct rtc_model *m, const struct rt_scatter_elements_desc *d,
                         const void *x, const void *indices, const void *updates, void *y)
{
	struct rtc_gel g;
	int status = rtc_scel_plan(d, &g);
	if (status == RT_ERR_INDEX)
		return rtc_fail(
		        m, RT_ERR_INDEX,
		        "rtc_scatter_elements: indices larger than the data outside the axis");
	if (status != RT_OK || (g.total && (!indices || !updates)))
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_scatter_elements: bad descriptor");
	int64_t nx = rt_count(d->data_dims, d->rank);
	if (nx == 0)
		return g.total ? check_indices(m, indices, d->index_dtype, g.total, g.axis_n,
		                               "rtc_scatter_elements")
		               : RT_OK;
	if (!x || !y)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_scatter_elements: NULL tensor");
	cudaStream_t s = rtc_stream(m);
	if (x != y &&
	    (status = rtc_check(
	             m, cudaMemcpyAsync(y, x, (size_t)(nx * g.esize), cudaMemcpyDeviceToDevice, s),
	             "rtc_scatter_elements (copy)")))
		return status;
	if (g.total == 0)
		return RT_OK;
	int blocks = rtc_blocks(g.total, RTC_THREADS, rtc_sm_count(m)), red = d->reduction;
	int *err = rtc_index_error(m);
	switch (d->dtype) {
	case RT_F32: scel_launch<float>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_F64: scel_launch<double>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_F16: scel_launch<f16>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_BF16: scel_launch<bf16>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_I8: scel_launch<int8_t>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_I16: scel_launch<int16_t>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_I32: scel_launch<int32_t>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_I64: scel_launch<int64_t>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_U16: scel_launch<uint16_t>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_U32: scel_launch<uint32_t>(g, blocks, s, indices, updates, y, red, err); break;
	case RT_U64: scel_launch<uint64_t>(g, blocks, s, indices, updates, y, red, err); break;
	default: /* bool (no reduction) and u8 */
		scel_launch<uint8_t>(g, blocks, s, indices, updates, y, red, err);
		break;
	}
	return rtc_launched(m, "rtc_scatter_elements");
}

/* ------------------------------------------------------------------------ */
/* Pad                                                                      */
/* ------------------------------------------------------------------------ */

template <int ES>
__global__ void pad_kernel(const __grid_constant__ struct rtc_pad p, const char *x, char *y)
{
	RTC_GRID_LOOP(f, p.total)
	{
		int64_t s = rtc_pad_at(&p, f);
		if (s >= 0) {
			move_elem<ES>(y, f, x, s, p.esize);
		} else if constexpr (ES > 0) {
			typedef typename elem_of<ES>::type E;
			E v;
			memcpy(&v, p.value, ES);
			((E *)y)[f] = v;
		} else {
			for (int b = 0; b < p.esize; b++)
				y[f * p.esize + b] = p.value[b];
		}
	}
}

int rtc_pad(struct rtc_model *m, const struct rt_pad_desc *d, const void *x, void *y)
{
	struct rtc_pad p;
	if (rtc_pad_plan(d, (uintptr_t)x, (uintptr_t)y, &p) != RT_OK)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_pad: bad descriptor");
	if (p.total == 0)
		return RT_OK;
	int blocks = rtc_blocks(p.total, RTC_THREADS, rtc_sm_count(m));
	cudaStream_t s = rtc_stream(m);
	with_esize(typed_esize(p.esize, x, y), [&](auto es) {
		if constexpr (ES_OF(es) <= 8)
			pad_kernel<ES_OF(es)>
			        <<<blocks, RTC_THREADS, 0, s>>>(p, (const char *)x, (char *)y);
	});
	return rtc_launched(m, "rtc_pad");
}

/* ------------------------------------------------------------------------ */
/* Trilu                                                                    */
/* ------------------------------------------------------------------------ */

template <int ES>
__global__ void trilu_kernel(const __grid_constant__ struct rtc_trilu t, const char *x, char *y)
{
	RTC_GRID_LOOP(f, t.total)
	{
		if (rtc_trilu_keep(&t, f))
			move_elem<ES>(y, f, x, f, t.esize);
		else
			zero_elem<ES>(y, f, t.esize);
	}
}

int rtc_trilu(struct rtc_model *m, const struct rt_trilu_desc *d, const void *x, void *y)
{
	struct rtc_trilu t;
	if (rtc_trilu_plan(d, (uintptr_t)x, (uintptr_t)y, &t) != RT_OK)
		return rtc_fail(m, RT_ERR_ARGUMENT, "rtc_trilu: bad descriptor");
	if (t.total == 0)
		return RT_OK;
	int blocks = rtc_blocks(t.total, RTC_THREADS, rtc_sm_count(m));
	cudaStream_t s = rtc_stream(m);
	with_esize(typed_esize(t.esize, x, y), [&](auto es) {
		trilu_kernel<ES_OF(es)>
		        <<<blocks, RTC_THREADS, 0, s>>>(t, (const char *)x, (char *)y);
	});
	return rtc_launched(m, "rtc_trilu");
}
