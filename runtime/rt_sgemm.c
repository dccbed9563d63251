/*
 * rt_sgemm.c - single-precision GEMM with our own AVX-512 and AVX2 kernels.
 *
 * Why not BLAS: Debian's OpenBLAS does not know recent CPUs (AMD Zen 5 runs
 * its Haswell kernel at half the speed of the AVX-512 one it has), and
 * BLAS packs both operands on every call, cannot be handed an im2col matrix
 * it has not seen (convolution) and cannot finish a block of C while it is
 * hot. So the float GEMMs of the runtime come here; OpenBLAS stays for f64
 * and for CPUs without AVX2.
 *
 * The structure is the usual one (Goto, BLIS, MLAS): C is computed in
 * micro-tiles of MR rows x NR columns held in vector registers, 14 x 32
 * (28 zmm accumulators) with AVX-512, 6 x 16 (12 ymm) with AVX2. A tile
 * runs over kc values of k: for each, NR values of B are loaded, and each
 * of the MR values of A is broadcast and multiply-added into its row.
 *
 *  - B is packed: a block of kc rows x nc columns (at most KC_MAX x NC_MAX,
 *    256 KB, so it stays in the 1 MB level-2 cache) is copied into panels
 *    of NR columns, each kc rows of NR contiguous floats, zero-padded past
 *    the last column. Packing absorbs a transposed B; convolution supplies
 *    its own packing callback that reads the image directly (implicit
 *    im2col). The block lives on the stack of the thread that packs it.
 *    A B that fits one block and is multiplied many times (attention's
 *    keys and values) can be packed once by the caller (rt_sgemm_pack,
 *    b_packed).
 *  - A is not packed: the kernel broadcasts straight from A, either from
 *    MR rows (A not transposed: the rows are read in step, and the MR x kc
 *    micro-panel stays in the level-1 cache while the tile walks along the
 *    B block) or from a row of MR contiguous values per k (A transposed,
 *    which is the packed layout already). Packing A would cost as much as
 *    the multiplication when N is small (ResNet's last stage has N = 49).
 *  - Loops: for each column block, for each k block, pack B, then for each
 *    group of up to MR rows, for each panel, one tile. In the last k block
 *    the tile's store fuses the epilogue (bias, residual and the cheap
 *    activations, struct rt_sgemm_ep) while C is in registers; after it,
 *    done() can finish the column block while it is in cache (for
 *    activations the kernels lack).
 *  - Edges: rows come in groups of at most MR, balanced (64 rows are
 *    13+13+13+13+12), each group size with its own compiled kernel; short
 *    panels use masked loads and stores of C, and a kernel with one vector
 *    per row when at most half the panel is used. The last 1..4 columns
 *    (n % 16 of them with AVX-512), which would each cost a whole vector,
 *    are dot products along k instead: n = 49 (ResNet's last stage) costs
 *    3 vectors and a dot product per row rather than 4 vectors.
 *  - A few rows of A times a transposed B (a classifier's matrix-vector
 *    product) are dot products too: packing B would cost more than the
 *    products.
 *  - Rows of A a multiple of 1 KB apart share level-1 cache sets; a
 *    micro-panel of them is copied to a better stride first.
 *
 * Threads: C is cut into a grid of tasks, row bands by column bands (in
 * whole vectors), one task per thread at most; each task packs the B
 * blocks of its own columns. Splitting the columns costs nothing (A is not
 * packed); splitting the rows makes every row band pack the same B again,
 * so a small cost model picks the grid (plan_grid). Every element of C is
 * the same chain of multiply-adds whatever the grid or the tile, since the
 * k blocks depend on k alone: results do not depend on the thread count.
 *
 * Many small GEMMs of one shape (attention heads, groups of a convolution)
 * run side by side on the threads instead (rt_sgemm_batch).
 *
 * Buffers: a task's packed B block and a few small tiles live on the
 * stack of the thread running it (about 0.3 MB with the sizes below), so
 * nothing is allocated; worker threads have the default 8 MB stacks, and
 * the thread that runs a model needs the same headroom.
 *
 * The kernels are compiled for their instruction sets with target
 * attributes (the library itself is built for plain x86-64) and chosen at
 * run time with __builtin_cpu_supports; ONNXC_GEMM=avx512|avx2|blas forces
 * a lower choice.
 */
#include "rt_sgemm.h"

#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

/* k rows of one packed B block: the A micro-panel (14 x 256 floats) and a
 * B panel (256 x 32) both fit in the level-1 cache. */
#define KC_MAX RT_SGEMM_KC
/* Columns of one packed B block: 256 x 256 floats, a quarter of the L2
 * cache (512 was no faster, and costs stack). */
#define NC_MAX RT_SGEMM_NC
#define MR_MAX 14
/* A task packs each of its k x cols B elements (cycles per element, rough)
 * and streams its A rows once per column block (cycles per element). */
#define PACK_COST  0.5
#define AREAD_COST 0.25
/* Rows of A up to which a transposed B is not packed but dotted with them. */
#define DOT_MAX_M 4
/* Multiply-adds per cycle and core (16-lane FMA, two pipes). */
#define MACS_PER_CYCLE 32
/* Fewer multiply-adds per task (about 4 us of one core) than this are not
 * worth a thread: waking one up can take longer. */
#define TASK_MIN_MACS (1 << 19)
/* Column bands are split up to SPLIT_MAX tasks per thread, of at least
 * SPLIT_MIN_VECS vectors. */
#define SPLIT_MAX      4
#define SPLIT_MIN_VECS 4
/* GEMMs of a batch with more multiply-adds than this run one at a time. */
#define BATCH_BIG_MACS (1 << 22)

#define AVX512 __attribute__((target("avx512f")))
#define AVX2   __attribute__((target("avx2,fma")))
/* For helpers both sets inline (GCC's avx512f does not include fma). */
#define AVX2_ONLY __attribute__((target("avx2")))
#define INLINE    static inline __attribute__((always_inline))

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ------------------------------------------------------------------------ */
/* Micro-kernels                                                            */
/* ------------------------------------------------------------------------ */

/* One micro-tile: C[rows, nr] (+)= alpha * A[rows, kc] B-panel[kc, nr]. */
struct tile {
	const float *a; /* A(r, p) = a[r * lda + p], or a[p * lda + r] when k-major */
	int64_t lda;
	const float *b; /* the packed panel: kc rows of NR */
	float *c;
	int64_t ldc;
	int64_t kc;
	int nr;   /* valid columns */
	int beta; /* add to C */
	float alpha;
	const struct rt_sgemm_ep *ep; /* the last k block: fuse this epilogue (or NULL) */
	int64_t i, j;                 /* where the tile is in C (for ep's bias and residual) */
};

typedef void (*tile_fn)(const struct tile *t);

/*
 * The epilogues the kernels apply to their accumulators directly, the
 * common ones after a convolution or a MatMul: a bias per row, a
 * residual, ReLU or nothing. The others go through ep##ISA.
 */
static const struct rt_sgemm_ep plain_ep = { .act = RT_ACT_NONE };

static inline int reg_ep(const struct tile *t)
{
	const struct rt_sgemm_ep *e = t->ep;
	return (!e->bias || (e->bias_cs == 0 && e->bias_scale == 1)) &&
	       (e->act == RT_ACT_NONE || e->act == RT_ACT_RELU);
}

/*
 * The body of a kernel, for rows rows, nv vectors per row and A k-major
 * (km) or not, all constants where it is instantiated. ISA names the
 * operations (FMA##ISA: FMA512, ...; see ISA_FUNCS), V is the vector type,
 * W its lanes, NR the panel width and MASK_T the type of mask##ISA(n), the
 * lanes < n. The loops over rows and vectors have constant trip counts and
 * are unrolled, so the accumulators live in registers. C goes through
 * masked loads and stores. The store applies the common fused epilogues
 * (reg_ep) to the accumulators; the others go through a buffer to
 * ep##ISA, which is not worth a copy in every kernel.
 */
#define TILE_BODY(ISA, V, W, NR, MASK_T)                                                           \
	{                                                                                          \
		V acc[MR_MAX][2], bv[2];                                                           \
		const float *a = t->a, *b = t->b;                                                  \
		const int64_t astep = km ? t->lda : 1, rstep = km ? 1 : t->lda;                    \
		_Pragma("GCC unroll 16") for (int r = 0; r < rows; r++)                            \
		        _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++) acc[r][v] =           \
		                ZERO##ISA;                                                         \
		for (int64_t p = 0; p < t->kc; p++, a += astep, b += NR) {                         \
			_Pragma("GCC unroll 2") for (int v = 0; v < nv; v++) bv[v] =               \
			        LOAD##ISA(b + W * v);                                              \
			_Pragma("GCC unroll 16") for (int r = 0; r < rows; r++)                    \
			{                                                                          \
				const V av = BCAST##ISA(a[r * rstep]);                             \
				_Pragma("GCC unroll 2") for (int v = 0; v < nv; v++) acc[r][v] =   \
				        FMA##ISA(av, bv[v], acc[r][v]);                            \
			}                                                                          \
		}                                                                                  \
		if (t->ep && !reg_ep(t)) {                                                         \
			_Alignas(64) float tmp[MR_MAX * NR];                                       \
			_Pragma("GCC unroll 16") for (int r = 0; r < rows; r++)                    \
			        _Pragma("GCC unroll 2") for (int v = 0; v < nv; v++)               \
			                STORE##ISA(tmp + r * NR + W * v, acc[r][v]);               \
			ep##ISA(t, tmp, rows);                                                     \
			return;                                                                    \
		}                                                                                  \
		_Pragma("GCC unroll 16") for (int r = 0; r < rows; r++)                            \
		{                                                                                  \
			const struct rt_sgemm_ep *e = t->ep ? t->ep : &plain_ep;                   \
			const float *res = e->res ? e->res + (t->i + r) * e->res_ld + t->j : NULL; \
			float *c = t->c + r * t->ldc;                                              \
			_Pragma("GCC unroll 2") for (int v = 0; v < nv; v++)                       \
			{                                                                          \
				const MASK_T m = mask##ISA(t->nr - W * v);                         \
				V y = acc[r][v];                                                   \
				if (t->alpha != 1)                                                 \
					y = MUL##ISA(y, BCAST##ISA(t->alpha));                     \
				if (t->beta)                                                       \
					y = ADD##ISA(y, MLOAD##ISA(c + W * v, m));                 \
				if (e->bias)                                                       \
					y = ADD##ISA(                                              \
					        y, BCAST##ISA(e->bias[(t->i + r) * e->bias_rs]));  \
				if (res)                                                           \
					y = ADD##ISA(y, MLOAD##ISA(res + W * v, m));               \
				if (e->act == RT_ACT_RELU)                                         \
					y = MAX##ISA(ZERO##ISA, y);                                \
				MSTORE##ISA(c + W * v, m, y);                                      \
			}                                                                          \
		}                                                                                  \
	}

/*
 * The fused epilogue (struct rt_sgemm_ep) of a tile whose products are in
 * tmp (rows of NR): y = act(alpha * tmp (+ C) + bias + residual), in the
 * order rt_gemm's and rt_conv's own epilogues use; act##ISA applies e->act.
 */
#define EP_BODY(ISA, V, W, NR, MASK_T)                                                           \
	{                                                                                        \
		const struct rt_sgemm_ep *e = t->ep;                                             \
		for (int r = 0; r < rows; r++) {                                                 \
			float *c = t->c + r * t->ldc;                                            \
			const int64_t i = t->i + r;                                              \
			for (int v = 0; v * W < t->nr; v++) {                                    \
				const MASK_T m = mask##ISA(t->nr - W * v);                       \
				const int64_t j = t->j + W * v;                                  \
				V y = LOAD##ISA(tmp + r * NR + W * v);                           \
				if (t->alpha != 1)                                               \
					y = MUL##ISA(y, BCAST##ISA(t->alpha));                   \
				if (t->beta)                                                     \
					y = ADD##ISA(y, MLOAD##ISA(c + W * v, m));               \
				if (e->bias) {                                                   \
					const float *b =                                         \
					        e->bias + i * e->bias_rs + j * e->bias_cs;       \
					V bv = e->bias_cs ? MLOAD##ISA(b, m) : BCAST##ISA(*b);   \
					if (e->bias_scale != 1)                                  \
						bv = MUL##ISA(bv, BCAST##ISA(e->bias_scale));    \
					y = ADD##ISA(y, bv);                                     \
				}                                                                \
				if (e->res)                                                      \
					y = ADD##ISA(y,                                          \
					             MLOAD##ISA(e->res + i * e->res_ld + j, m)); \
				MSTORE##ISA(c + W * v, m, act##ISA(e, y));                       \
			}                                                                        \
		}                                                                                \
	}

/* The activations ep can fuse; MAX and MIN return their second operand for NaN, as ONNX keeps NaN. */
#define ACT_BODY(ISA, V)                                                                         \
	{                                                                                        \
		const V zero = BCAST##ISA(0.0f), one = BCAST##ISA(1.0f);                         \
		const V a = BCAST##ISA(e->alpha), b = BCAST##ISA(e->beta);                       \
		switch (e->act) {                                                                \
		case RT_ACT_RELU: return MAX##ISA(zero, y);                                      \
		case RT_ACT_LEAKY_RELU: return leaky##ISA(y, a);                                 \
		case RT_ACT_CLIP: return MIN##ISA(b, MAX##ISA(a, y));                            \
		case RT_ACT_HARD_SIGMOID:                                                        \
			return MIN##ISA(one, MAX##ISA(zero, ADD##ISA(b, MUL##ISA(y, a))));       \
		case RT_ACT_HARD_SWISH:                                                          \
			return MUL##ISA(                                                         \
			        MIN##ISA(one,                                                    \
			                 MAX##ISA(zero,                                          \
			                          ADD##ISA(BCAST##ISA(0.5f),                     \
			                                   MUL##ISA(y, BCAST##ISA(1.0f / 6))))), \
			        y);                                                              \
		default: return y;                                                               \
		}                                                                                \
	}

int rt_sgemm_fusable(int act)
{
	return act == RT_ACT_NONE || act == RT_ACT_RELU || act == RT_ACT_LEAKY_RELU ||
	       act == RT_ACT_CLIP || act == RT_ACT_HARD_SIGMOID || act == RT_ACT_HARD_SWISH;
}

/*
 * Dot products, for a few rows of A times a transposed B (a matrix-vector
 * product, such as a classifier's last layer), where packing B would cost
 * more than the products: the t->nr results of A row t->a (t->kc values,
 * contiguous) with the B rows t->b + j * ldb, then ep##ISA stores them.
 */
#define DOT_BODY(ISA, V, W, NR, MASK_T)                                                          \
	{                                                                                        \
		static const struct rt_sgemm_ep plain = { 0 };                                   \
		_Alignas(64) float tmp[NR];                                                      \
		struct tile u = *t;                                                              \
		for (int j = 0; j < t->nr; j++) {                                                \
			const float *a = t->a, *b = t->b + j * ldb;                              \
			V s0 = ZERO##ISA, s1 = ZERO##ISA;                                        \
			int64_t p = 0;                                                           \
			for (; p + 2 * W <= t->kc; p += 2 * W) {                                 \
				s0 = FMA##ISA(LOADU##ISA(a + p), LOADU##ISA(b + p), s0);         \
				s1 = FMA##ISA(LOADU##ISA(a + p + W), LOADU##ISA(b + p + W), s1); \
			}                                                                        \
			for (; p < t->kc; p += W) {                                              \
				const MASK_T m = mask##ISA((int)min64(t->kc - p, W));            \
				s0 = FMA##ISA(MLOAD##ISA(a + p, m), MLOAD##ISA(b + p, m), s0);   \
			}                                                                        \
			tmp[j] = REDUCE##ISA(ADD##ISA(s0, s1));                                  \
		}                                                                                \
		if (!u.ep)                                                                       \
			u.ep = &plain;                                                           \
		ep##ISA(&u, tmp, 1);                                                             \
	}

/*
 * The last few columns of C (n % W of them, at most a quarter vector),
 * which a tile would compute with a whole vector each: for rows rows of A
 * (row-major), dot products along k with those columns of B (cols rows of
 * lb, KC_MAX apart), four rows at a time (the last group repeats its last
 * row rather than read past A), then stored through ep##ISA.
 */
#define LEFT_BODY(ISA, V, W, NR, MASK_T)                                                           \
	{                                                                                          \
		static const struct rt_sgemm_ep plain = { 0 };                                     \
		_Alignas(64) float tmp[MR_MAX * NR] = { 0 };                                       \
		struct tile u = *t;                                                                \
		for (int r0 = 0; r0 < rows; r0 += 4) {                                             \
			V acc[4][4], bv[4];                                                        \
			const float *a[4];                                                         \
			_Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                        \
			{                                                                          \
				a[r] = t->a + (r0 + r < rows ? r0 + r : rows - 1) * t->lda;        \
				_Pragma("GCC unroll 4") for (int c = 0; c < cols; c++) acc[r][c] = \
				        ZERO##ISA;                                                 \
			}                                                                          \
			for (int64_t p = 0; p < t->kc; p += W) {                                   \
				const MASK_T m = mask##ISA((int)min64(t->kc - p, W));              \
				_Pragma("GCC unroll 4") for (int c = 0; c < cols; c++) bv[c] =     \
				        MLOAD##ISA(lb + c * KC_MAX + p, m);                        \
				_Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                \
				{                                                                  \
					const V av = MLOAD##ISA(a[r] + p, m);                      \
					_Pragma("GCC unroll 4") for (int c = 0; c < cols; c++)     \
					        acc[r][c] = FMA##ISA(av, bv[c], acc[r][c]);        \
				}                                                                  \
			}                                                                          \
			for (int r = 0; r < 4 && r0 + r < rows; r++)                               \
				for (int c = 0; c < cols; c++)                                     \
					tmp[(r0 + r) * NR + c] = REDUCE##ISA(acc[r][c]);           \
		}                                                                                  \
		u.nr = cols;                                                                       \
		if (!u.ep)                                                                         \
			u.ep = &plain;                                                             \
		ep##ISA(&u, tmp, rows);                                                            \
	}

/* left##ISA for cols leftover columns, as a function of its own. */
#define LEFT_FN(ISA, TARGET, COLS)                                                             \
	static TARGET void left##ISA##_##COLS(const struct tile *t, int rows, const float *lb) \
	{                                                                                      \
		left##ISA(t, rows, lb, COLS);                                                  \
	}

/*
 * The functions of one kernel set, from the bodies above. Its operations
 * are the macros OP##ISA (LOAD512, FMA256, ...) and mask##ISA and
 * leaky##ISA. (The prototype at the end lets the invocation end with ";".)
 */
#define ISA_FUNCS(ISA, TARGET, V, W, NR, MASK_T)                                                   \
	INLINE TARGET V act##ISA(const struct rt_sgemm_ep *e, V y) { ACT_BODY(ISA, V); }           \
	static TARGET void ep##ISA(const struct tile *t, const float *tmp, int rows)               \
	{                                                                                          \
		EP_BODY(ISA, V, W, NR, MASK_T);                                                    \
	}                                                                                          \
	static TARGET void dot##ISA(const struct tile *t, int64_t ldb)                             \
	{                                                                                          \
		DOT_BODY(ISA, V, W, NR, MASK_T);                                                   \
	}                                                                                          \
	INLINE TARGET void tile##ISA(const struct tile *t, const int rows, const int nv,           \
	                             const int km)                                                 \
	{                                                                                          \
		TILE_BODY(ISA, V, W, NR, MASK_T);                                                  \
	}                                                                                          \
	INLINE TARGET void left##ISA(const struct tile *t, int rows, const float *lb,              \
	                             const int cols)                                               \
	{                                                                                          \
		LEFT_BODY(ISA, V, W, NR, MASK_T);                                                  \
	}                                                                                          \
	LEFT_FN(ISA, TARGET, 1)                                                                    \
	LEFT_FN(ISA, TARGET, 2)                                                                    \
	LEFT_FN(ISA, TARGET, 3)                                                                    \
	LEFT_FN(ISA, TARGET, 4)                                                                    \
	static TARGET void pack##ISA(const struct rt_sgemm *g, float *dst, int64_t k0, int64_t kc, \
	                             int64_t j0, int64_t nc)

/* AVX-512: 14 x 32. */
#define MR512 14
#define NR512 32

INLINE AVX512 __mmask16 mask512(int n)
{
	return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}
#define ZERO512            _mm512_setzero_ps()
#define LOAD512            _mm512_load_ps
#define LOADU512           _mm512_loadu_ps
#define STORE512           _mm512_store_ps
#define BCAST512           _mm512_set1_ps
#define FMA512             _mm512_fmadd_ps
#define MUL512             _mm512_mul_ps
#define ADD512             _mm512_add_ps
#define MAX512             _mm512_max_ps
#define MIN512             _mm512_min_ps
#define REDUCE512          _mm512_reduce_add_ps
#define MLOAD512(p, m)     _mm512_maskz_loadu_ps(m, p)
#define MSTORE512(p, m, y) _mm512_mask_storeu_ps(p, m, y)

INLINE AVX512 __m512 leaky512(__m512 y, __m512 a)
{
	return _mm512_mask_mul_ps(y, _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_LT_OQ), y, a);
}

ISA_FUNCS(512, AVX512, __m512, 16, NR512, __mmask16);

/* AVX2: 6 x 16. */
#define MR256 6
#define NR256 16

INLINE AVX2 __m256i mask256(int n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define ZERO256            _mm256_setzero_ps()
#define LOAD256            _mm256_load_ps
#define LOADU256           _mm256_loadu_ps
#define STORE256           _mm256_store_ps
#define BCAST256           _mm256_set1_ps
#define FMA256             _mm256_fmadd_ps
#define MUL256             _mm256_mul_ps
#define ADD256             _mm256_add_ps
#define MAX256             _mm256_max_ps
#define MIN256             _mm256_min_ps
#define REDUCE256          hsum256
#define MLOAD256(p, m)     _mm256_maskload_ps(p, m)
#define MSTORE256(p, m, y) _mm256_maskstore_ps(p, m, y)

INLINE AVX2 __m256 leaky256(__m256 y, __m256 a)
{
	return _mm256_blendv_ps(y, _mm256_mul_ps(y, a),
	                        _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ));
}

INLINE AVX2 float hsum256(__m256 v)
{
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

ISA_FUNCS(256, AVX2, __m256, 8, NR256, __m256i);

/* One compiled kernel per row count, vector count and A layout. */
#define KERNEL(ISA, TARGET, ROWS, NV, KM)                                      \
	static TARGET void k##ISA##_##KM##_##NV##_##ROWS(const struct tile *t) \
	{                                                                      \
		tile##ISA(t, ROWS, NV, KM);                                    \
	}
#define KERNEL_REF(ISA, TARGET, ROWS, NV, KM) k##ISA##_##KM##_##NV##_##ROWS,

/* X(ISA, TARGET, rows, NV, KM) for rows = 1 .. 6 or 14, two at a time. */
#define ROWS_2(X, ISA, TARGET, NV, KM, R0, R1) X(ISA, TARGET, R0, NV, KM) X(ISA, TARGET, R1, NV, KM)
#define ROWS_6(X, ISA, TARGET, NV, KM)       \
	ROWS_2(X, ISA, TARGET, NV, KM, 1, 2) \
	ROWS_2(X, ISA, TARGET, NV, KM, 3, 4) \
	ROWS_2(X, ISA, TARGET, NV, KM, 5, 6)
#define ROWS_14(X, ISA, TARGET, NV, KM)        \
	ROWS_6(X, ISA, TARGET, NV, KM)         \
	ROWS_2(X, ISA, TARGET, NV, KM, 7, 8)   \
	ROWS_2(X, ISA, TARGET, NV, KM, 9, 10)  \
	ROWS_2(X, ISA, TARGET, NV, KM, 11, 12) \
	ROWS_2(X, ISA, TARGET, NV, KM, 13, 14)

/* Every kernel of ISA and its table, [k-major][NV - 1][rows - 1]. */
#define KERNELS(ISA, TARGET, ROWS)                           \
	ROWS(KERNEL, ISA, TARGET, 1, 0)                      \
	ROWS(KERNEL, ISA, TARGET, 2, 0)                      \
	ROWS(KERNEL, ISA, TARGET, 1, 1)                      \
	ROWS(KERNEL, ISA, TARGET, 2, 1)                      \
	static const tile_fn tiles##ISA[2][2][MR_MAX] = {    \
		{ { ROWS(KERNEL_REF, ISA, TARGET, 1, 0) },   \
		  { ROWS(KERNEL_REF, ISA, TARGET, 2, 0) } }, \
		{ { ROWS(KERNEL_REF, ISA, TARGET, 1, 1) },   \
		  { ROWS(KERNEL_REF, ISA, TARGET, 2, 1) } }, \
	}

KERNELS(512, AVX512, ROWS_14);
KERNELS(256, AVX2, ROWS_6);

/* ------------------------------------------------------------------------ */
/* Packing B                                                                */
/* ------------------------------------------------------------------------ */

/* Row p of a panel: columns [w, nr) are zeros. */
INLINE AVX2_ONLY void zero_tail(float *restrict dst, int64_t kc, int64_t w, const int nr)
{
	for (int64_t p = 0; w < nr && p < kc; p++)
		for (int64_t j = w; j < nr; j++)
			dst[p * nr + j] = 0;
}

/* A panel of w columns whose rows are contiguous: row p at src + p * rs. */
INLINE AVX2_ONLY void pack_rows(float *restrict dst, const float *restrict src, int64_t rs,
                                int64_t kc, int64_t w, const int nr)
{
	if (w == nr) {
		/* the usual case: a copy of constant size, which the compiler
		 * inlines as a few vector moves (a loop would become a call) */
		for (int64_t p = 0; p < kc; p++)
			memcpy(dst + p * nr, src + p * rs, sizeof(float) * (size_t)nr);
		return;
	}
	for (int64_t p = 0; p < kc; p++)
		for (int64_t j = 0; j < w; j++)
			dst[p * nr + j] = src[p * rs + j];
	zero_tail(dst, kc, w, nr);
}

/* dst row i (of 8, ds apart) = column i of the 8 x 8 block at src (rows ss apart). */
INLINE AVX2_ONLY void transpose8(float *dst, int64_t ds, const float *src, int64_t ss)
{
	__m256 r[8], t[8];
	for (int i = 0; i < 8; i++)
		r[i] = _mm256_loadu_ps(src + i * ss);
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
	}
	for (int i = 0; i < 8; i += 4) {
		r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
		r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
		r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
		r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
	}
	for (int i = 0; i < 4; i++) {
		_mm256_storeu_ps(dst + i * ds, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
		_mm256_storeu_ps(dst + (i + 4) * ds, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
	}
}

/*
 * A panel of a transposed B: column j's kc values are contiguous at
 * src + j * cs. Whole panels go through 8 x 8 register transposes, the
 * rest element by element.
 */
INLINE AVX2_ONLY void pack_cols(float *restrict dst, const float *restrict src, int64_t cs,
                                int64_t kc, int64_t w, const int nr)
{
	int64_t p0 = 0;
	for (; w == nr && p0 + 8 <= kc; p0 += 8)
		for (int j = 0; j < nr; j += 8)
			transpose8(dst + p0 * nr + j, nr, src + j * cs + p0, cs);
	for (int64_t j = 0; j < w; j++)
		for (int64_t p = p0; p < kc; p++)
			dst[p * nr + j] = src[j * cs + p];
	zero_tail(dst, kc, w, nr);
}

/* The packing of a strided B (rt_sgemm_pack_fn), for panels nr wide. */
INLINE AVX2_ONLY void pack_plain(const struct rt_sgemm *g, float *dst, int64_t k0, int64_t kc,
                                 int64_t j0, int64_t nc, const int nr)
{
	for (int64_t q = 0; q < nc; q += nr, dst += kc * nr) {
		const float *src = g->b + k0 * g->b_rs + (j0 + q) * g->b_cs;
		int64_t w = min64(nr, nc - q);
		if (g->b_cs == 1)
			pack_rows(dst, src, g->b_rs, kc, w, nr);
		else
			pack_cols(dst, src, g->b_cs, kc, w, nr);
	}
}

static AVX512 void pack512(const struct rt_sgemm *g, float *dst, int64_t k0, int64_t kc, int64_t j0,
                           int64_t nc)
{
	pack_plain(g, dst, k0, kc, j0, nc, NR512);
}

static AVX2 void pack256(const struct rt_sgemm *g, float *dst, int64_t k0, int64_t kc, int64_t j0,
                         int64_t nc)
{
	pack_plain(g, dst, k0, kc, j0, nc, NR256);
}

/* ------------------------------------------------------------------------ */
/* Kernel sets                                                              */
/* ------------------------------------------------------------------------ */

typedef void (*left_fn)(const struct tile *t, int rows, const float *lb);

struct kset {
	int mr, nr;
	const tile_fn (*tiles)[2][MR_MAX]; /* [k-major][vectors - 1][rows - 1] */
	rt_sgemm_pack_fn pack;
	void (*dot)(const struct tile *t, int64_t ldb);
	left_fn left[4]; /* [columns - 1] */
};

/* The kernel set of ISA, from the functions ISA_FUNCS and KERNELS made. */
#define KSET(ISA)                                                                  \
	{                                                                          \
		MR##ISA, NR##ISA, tiles##ISA, pack##ISA, dot##ISA,                 \
		{                                                                  \
			left##ISA##_1, left##ISA##_2, left##ISA##_3, left##ISA##_4 \
		}                                                                  \
	}

static const struct kset ksets[] = {
	[RT_SGEMM_AVX2] = KSET(256),
	[RT_SGEMM_AVX512] = KSET(512),
};

/* ONNXC_GEMM's choice, if any: a kernel set no better than the CPU's. */
static int env_isa(int best)
{
	static const char *const names[] = {
		[RT_SGEMM_BLAS] = "blas", [RT_SGEMM_AVX2] = "avx2", [RT_SGEMM_AVX512] = "avx512"
	};
	const char *e = getenv("ONNXC_GEMM");
	for (int i = 0; e && i < best; i++)
		if (!strcmp(e, names[i]))
			return i;
	return best;
}

int rt_sgemm_isa(void)
{
	int best = RT_SGEMM_BLAS;
	if (__builtin_cpu_supports("avx512f"))
		best = RT_SGEMM_AVX512;
	else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		best = RT_SGEMM_AVX2;
	return env_isa(best);
}

int rt_sgemm_nr(int isa) { return isa == RT_SGEMM_AVX512 ? NR512 : NR256; }

int64_t rt_sgemm_packed_floats(int isa, int64_t k, int64_t n)
{
	return k * cdiv(n, rt_sgemm_nr(isa)) * rt_sgemm_nr(isa);
}

void rt_sgemm_pack(const struct rt_sgemm *g, float *dst)
{
	if (g->k > KC_MAX || g->n > NC_MAX || g->pack_b)
		abort(); /* a caller's bug */
	ksets[g->isa == RT_SGEMM_AVX512 ? RT_SGEMM_AVX512 : RT_SGEMM_AVX2].pack(g, dst, 0, g->k, 0,
	                                                                        g->n);
}

/* ------------------------------------------------------------------------ */
/* Blocks and tasks                                                         */
/* ------------------------------------------------------------------------ */

struct plan {
	const struct rt_sgemm *g;
	const struct kset *ks;
	int64_t kc;     /* k rows per block (the last may be shorter) */
	int64_t tm, tn; /* the task grid: row bands x column bands */
};

/*
 * How many of the last columns of the block ending at column end go to the
 * leftover dot products: n % W when the block ends C, A is row-major and
 * they fill at most a quarter of a vector; else 0.
 */
static int leftover(const struct plan *pl, int64_t end)
{
	const struct rt_sgemm *g = pl->g;
	const int vec = pl->ks->nr / 2, left = (int)(g->n % vec);
	return end == g->n && g->a_cs == 1 && left <= vec / 4 ? left : 0;
}

/* The leftover columns (the last left of the nc packed in buf) as rows of lb. */
static void copy_leftover(const float *buf, int64_t nc, int64_t kc, int nr, int left, float *lb)
{
	const float *src = buf + (nc - left) / nr * kc * nr + (nc - left) % nr;
	for (int c = 0; c < left; c++)
		for (int64_t p = 0; p < kc; p++)
			lb[c * KC_MAX + p] = src[p * nr + c];
}

/*
 * Rows of A a multiple of 256 floats apart fall into the same few sets of
 * the level-1 cache, more of them than it has ways, so a micro-panel of
 * them does not stay there while its tiles run (11% slower at n = 49).
 * Such a micro-panel is copied to rows A_STRIDE apart first, a stride that
 * spreads them over the sets.
 */
#define A_STRIDE (KC_MAX + 16)

static int copy_a(const struct rt_sgemm *g) { return g->a_cs == 1 && g->a_rs % 256 == 0; }

static void copy_rows(float *restrict dst, const float *restrict a, int64_t lda, int rows,
                      int64_t kc)
{
	for (int r = 0; r < rows; r++)
		memcpy(dst + r * A_STRIDE, a + r * lda, (size_t)kc * sizeof *a);
}

/* Rows [i0, i1) x the packed block buf (columns [jb, jb + nc), k rows [pc, pc + kc)). */
static void block_tiles(const struct plan *pl, const float *buf, int64_t i0, int64_t i1, int64_t jb,
                        int64_t nc, int64_t pc, int64_t kc)
{
	_Alignas(64) float lb[4 * KC_MAX], ab[MR_MAX * A_STRIDE];
	const struct rt_sgemm *g = pl->g;
	const int nr = pl->ks->nr, km = g->a_cs != 1, left = leftover(pl, jb + nc);
	const int64_t len = i1 - i0, groups = cdiv(len, pl->ks->mr), main = nc - left;
	struct tile t = { .lda = km ? g->a_cs : g->a_rs,
		          .ldc = g->ldc,
		          .kc = kc,
		          .beta = pc > 0 || g->beta,
		          .alpha = g->alpha,
		          .ep = g->fuse && pc + kc >= g->k ? &g->ep : NULL };
	if (left)
		copy_leftover(buf, nc, kc, nr, left, lb);
	for (int64_t q = 0, i = i0; q < groups; q++) {
		int rows = (int)(len / groups + (q < len % groups));
		t.a = g->a + i * g->a_rs + pc * g->a_cs;
		t.i = i;
		if (copy_a(g)) {
			copy_rows(ab, t.a, g->a_rs, rows, kc);
			t.a = ab;
			t.lda = A_STRIDE;
		}
		for (int64_t jp = 0; jp < main; jp += nr) {
			t.nr = (int)min64(nr, main - jp);
			t.b = buf + jp * kc;
			t.c = g->c + i * g->ldc + jb + jp;
			t.j = jb + jp;
			pl->ks->tiles[km][t.nr > nr / 2][rows - 1](&t);
		}
		if (left) {
			t.c = g->c + i * g->ldc + jb + main;
			t.j = jb + main;
			pl->ks->left[left - 1](&t, rows, lb);
		}
		i += rows;
	}
}

/* Rows [i0, i1) x columns [j0, j1) as dot products (use_dots). */
static void dot_rect(const struct plan *pl, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
	const struct rt_sgemm *g = pl->g;
	const int nr = pl->ks->nr;
	for (int64_t jb = j0; jb < j1; jb += nr)
		for (int64_t i = i0; i < i1; i++) {
			struct tile t = { .a = g->a + i * g->a_rs,
				          .b = g->b + jb * g->b_cs,
				          .c = g->c + i * g->ldc + jb,
				          .kc = g->k,
				          .nr = (int)min64(nr, j1 - jb),
				          .beta = g->beta,
				          .alpha = g->alpha,
				          .ep = g->fuse ? &g->ep : NULL,
				          .i = i,
				          .j = jb };
			pl->ks->dot(&t, g->b_cs);
		}
}

/* A few rows of A (contiguous) times a transposed B: dot products. */
static int use_dots(const struct rt_sgemm *g)
{
	return !g->pack_b && !g->b_packed && g->b_cs != 1 && g->a_cs == 1 && g->m <= DOT_MAX_M;
}

/* Task ti of the grid: its column blocks, each packed and multiplied k block by k block. */
static void run_task(const struct plan *pl, int64_t ti)
{
	_Alignas(64) float buf[KC_MAX * NC_MAX];
	const struct rt_sgemm *g = pl->g;
	const int nr = pl->ks->nr, vec = nr / 2;
	const int64_t r = ti / pl->tn, q = ti % pl->tn, vecs = cdiv(g->n, vec);
	/* rows evenly, columns in whole vectors evenly */
	const int64_t i0 = g->m * r / pl->tm, i1 = g->m * (r + 1) / pl->tm;
	const int64_t j0 = vecs * q / pl->tn * vec, j1 = min64(g->n, vecs * (q + 1) / pl->tn * vec);
	rt_sgemm_pack_fn pack = g->pack_b ? g->pack_b : pl->ks->pack;
	int64_t nb, nc;
	if (i0 >= i1 || j0 >= j1)
		return;
	if (use_dots(g)) {
		dot_rect(pl, i0, i1, j0, j1);
		if (g->done)
			g->done(g, i0, i1, j0, j1);
		return;
	}
	/* equal column blocks of whole panels */
	nb = cdiv(j1 - j0, NC_MAX);
	nc = cdiv(cdiv(j1 - j0, nb), nr) * nr;
	for (int64_t jb = j0; jb < j1; jb += nc) {
		int64_t w = min64(nc, j1 - jb);
		if (g->k == 0) /* no products: the kernels just store (beta, ep) */
			block_tiles(pl, buf, i0, i1, jb, w, 0, 0);
		for (int64_t pc = 0; pc < g->k; pc += pl->kc) {
			int64_t kc = min64(pl->kc, g->k - pc);
			if (g->b_packed) { /* one block: k <= KC_MAX, one task, n <= NC_MAX */
				block_tiles(pl, g->b_packed, i0, i1, jb, w, pc, kc);
				continue;
			}
			pack(g, buf, pc, kc, jb, w);
			block_tiles(pl, buf, i0, i1, jb, w, pc, kc);
		}
		if (g->done)
			g->done(g, i0, i1, jb, jb + w);
	}
}

static void tasks_range(void *arg, int64_t b, int64_t e)
{
	for (int64_t t = b; t < e; t++)
		run_task(arg, t);
}

/*
 * The task grid for up to threads tasks: the split into row bands and
 * column bands whose biggest task is cheapest, counting its multiply-adds
 * (in whole vectors: a vector's unused lanes cost in full), the packing of
 * its B columns and the reads of its A rows; among equals, the fewest
 * tasks. Returns the task count.
 */
static int64_t plan_grid(struct plan *pl, int threads)
{
	const struct rt_sgemm *g = pl->g;
	const int64_t vec = pl->ks->nr / 2, vecs = cdiv(g->n, vec);
	int64_t most = g->m * g->n * g->k / TASK_MIN_MACS;
	double best = -1;
	if (most < threads)
		threads = most > 1 ? (int)most : 1;
	pl->tm = pl->tn = 1;
	for (int64_t tn = 1; tn <= threads && tn <= vecs; tn++)
		for (int64_t tm = 1; tm * tn <= threads && tm <= g->m; tm++) {
			double rows = (double)cdiv(g->m, tm), cols = (double)(cdiv(vecs, tn) * vec);
			double k = (double)g->k, blocks = (double)cdiv((int64_t)cols, NC_MAX);
			double cost = rows * cols * k / MACS_PER_CYCLE + PACK_COST * k * cols +
			              AREAD_COST * rows * k * blocks;
			if (best < 0 || cost < best * 0.999) {
				best = cost;
				pl->tm = tm;
				pl->tn = tn;
			}
		}
	/* Column bands of a few vectors cost nothing more (A is not packed),
	 * and more tasks than threads let the others take over the work of a
	 * thread that is late to start (a worker waking up), as they take
	 * tasks from a shared counter. */
	while (threads > 1 && pl->tn < SPLIT_MAX * threads &&
	       vecs / (2 * pl->tn) >= SPLIT_MIN_VECS &&
	       g->m / pl->tm * g->n / (2 * pl->tn) * g->k >= TASK_MIN_MACS)
		pl->tn *= 2;
	return pl->tm * pl->tn;
}

static int64_t plan_init(struct plan *pl, const struct rt_sgemm *g, int threads)
{
	int64_t nk = cdiv(g->k, KC_MAX);
	pl->g = g;
	pl->ks = &ksets[g->isa == RT_SGEMM_AVX512 ? RT_SGEMM_AVX512 : RT_SGEMM_AVX2];
	/* equal k blocks, a function of k alone (results must not depend on the grid) */
	pl->kc = nk > 0 ? cdiv(g->k, nk) : 1;
	if (g->b_packed) {
		if (g->k > KC_MAX || g->n > NC_MAX)
			abort(); /* a caller's bug: rt_sgemm_pack cannot have packed it */
		pl->tm = pl->tn = 1;
		return 1;
	}
	return plan_grid(pl, threads);
}

void rt_sgemm(struct rt_ctx *ctx, const struct rt_sgemm *g)
{
	struct plan pl;
	int64_t tasks;
	if (g->m <= 0 || g->n <= 0)
		return;
	tasks = plan_init(&pl, g, rt_ctx_threads(ctx));
	if (tasks == 1)
		run_task(&pl, 0);
	else
		rt_parallel(ctx, tasks, 1, tasks_range, &pl);
}

void rt_sgemm_serial(const struct rt_sgemm *g)
{
	struct plan pl;
	if (g->m <= 0 || g->n <= 0)
		return;
	plan_init(&pl, g, 1);
	run_task(&pl, 0);
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                  */
/* ------------------------------------------------------------------------ */

struct batch {
	rt_sgemm_item_fn item;
	void *arg;
};

static void batch_range(void *arg, int64_t b, int64_t e)
{
	const struct batch *bt = arg;
	for (int64_t i = b; i < e; i++) {
		struct rt_sgemm g;
		bt->item(bt->arg, i, &g);
		g.item = i;
		rt_sgemm_serial(&g);
	}
}

void rt_sgemm_batch(struct rt_ctx *ctx, int64_t count, rt_sgemm_item_fn item, void *arg)
{
	struct batch bt = { item, arg };
	struct rt_sgemm g;
	int64_t macs;
	if (count <= 0)
		return;
	item(arg, 0, &g);
	macs = g.m * g.n * (g.k + 1);
	if (count == 1 || (macs >= BATCH_BIG_MACS && count < 2 * rt_ctx_threads(ctx))) {
		for (int64_t i = 0; i < count; i++) {
			item(arg, i, &g);
			g.item = i;
			rt_sgemm(ctx, &g);
		}
		return;
	}
	rt_parallel(ctx, count, cdiv(TASK_MIN_MACS, macs + 1), batch_range, &bt);
}
