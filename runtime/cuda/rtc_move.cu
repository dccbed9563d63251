/*
 * rtc_move.cu - data movement on the GPU with rt_move.c's semantics:
 * strided copies (transpose, slice, expand, concat/split pieces) and tile,
 * gather, gather_elements, pad and trilu.
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
