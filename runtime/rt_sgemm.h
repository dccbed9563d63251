/*
 * rt_sgemm.h - the runtime's own single-precision GEMM (rt_sgemm.c), for
 * rt_gemm.c and rt_conv.c. Internal: not part of the onnxc_rt.h contract.
 *
 *   C = alpha * A B         (beta = 0)
 *   C = C + alpha * A B     (beta = 1)
 *
 * with A(i, p) = a[i * a_rs + p * a_cs] (one of the two strides is 1, so a
 * transposed A is just other strides), B either a strided matrix like A or
 * produced by a packing callback (convolution packs its im2col matrix
 * straight from the image), and C row-major with leading dimension ldc.
 * The last store of each micro-tile can add a bias and a residual and
 * apply an activation (ep, when fuse); after the last multiply-add into a block of C,
 * done() is called on it while it is still in cache (for what ep cannot
 * do).
 *
 * The kernel set is picked at run time: AVX-512 where the CPU has it,
 * else AVX2+FMA, else none (RT_SGEMM_BLAS: the callers use OpenBLAS). The
 * environment variable ONNXC_GEMM=avx512|avx2|blas asks for a lower one
 * (tests and benchmarks; a set the CPU lacks is never used).
 */
#ifndef ONNXC_RT_SGEMM_H
#define ONNXC_RT_SGEMM_H

#include "onnxc_rt.h"

enum rt_sgemm_isa { RT_SGEMM_BLAS, RT_SGEMM_AVX2, RT_SGEMM_AVX512 };

/* The kernel set to use (CPU and ONNXC_GEMM). */
int rt_sgemm_isa(void);
/* The width of isa's B panels: packing callbacks write panels this wide. */
int rt_sgemm_nr(int isa);

struct rt_sgemm;

/*
 * Writes rows [k0, k0 + kc) and columns [j0, j0 + nc) of B as panels of
 * nr = rt_sgemm_nr(g->isa) columns: panel q (columns j0 + q * nr ...) is
 * kc rows of nr floats at dst + q * kc * nr; columns past nc are zeros.
 */
typedef void (*rt_sgemm_pack_fn)(const struct rt_sgemm *g, float *dst, int64_t k0, int64_t kc,
                                 int64_t j0, int64_t nc);
/* Rows [i0, i1) x columns [j0, j1) of C are final. */
typedef void (*rt_sgemm_done_fn)(const struct rt_sgemm *g, int64_t i0, int64_t i1, int64_t j0,
                                 int64_t j1);

/*
 * An epilogue fused into the last store of each micro-tile of C, while it
 * is in registers:
 *   C(i, j) = act(C(i, j) + bias_scale * bias[i * bias_rs + j * bias_cs]
 *                 + res[i * res_ld + j])
 * (bias and res may be NULL). act is one rt_sgemm_fusable() accepts.
 */
struct rt_sgemm_ep {
	const float *bias;
	int64_t bias_rs, bias_cs;
	float bias_scale;
	const float *res;
	int64_t res_ld;
	int act;
	float alpha, beta; /* the activation's, as in struct rt_epilogue */
};

/* Can act be fused (the cheap ones: none, ReLU, LeakyReLU, Clip, HardSigmoid, HardSwish)? */
int rt_sgemm_fusable(int act);

struct rt_sgemm {
	int isa; /* RT_SGEMM_AVX2 or RT_SGEMM_AVX512 */
	int64_t m, n, k;
	const float *a;
	int64_t a_rs, a_cs;
	const float *b; /* when pack_b is NULL */
	int64_t b_rs, b_cs;
	rt_sgemm_pack_fn pack_b;
	const void *pack_arg;
	/* B already packed by rt_sgemm_pack (k <= RT_SGEMM_KC, n <= RT_SGEMM_NC):
	 * no packing, one task (when b and pack_b are unused) */
	const float *b_packed;
	float *c;
	int64_t ldc;
	float alpha;
	int beta; /* 0 or 1 */
	int fuse; /* apply ep */
	struct rt_sgemm_ep ep;
	rt_sgemm_done_fn done; /* or NULL */
	void *done_arg;
	int64_t item; /* set by rt_sgemm_batch: which item this is */
};

/*
 * The largest k and n whose B is one packed block, and the floats
 * rt_sgemm_pack writes for it: B packed once and multiplied many times
 * (attention's keys and values, read by every query block) skips the
 * packing of each multiplication.
 */
#define RT_SGEMM_KC 256
#define RT_SGEMM_NC 256
int64_t rt_sgemm_packed_floats(int isa, int64_t k, int64_t n);
/* Packs all of g's B (strided: b, b_rs, b_cs) into dst for g->b_packed
 * (64-byte aligned: the kernels load it aligned). */
void rt_sgemm_pack(const struct rt_sgemm *g, float *dst);

/* One GEMM across the context's threads. */
void rt_sgemm(struct rt_ctx *ctx, const struct rt_sgemm *g);
/* One GEMM on the calling thread (for callers inside rt_parallel). */
void rt_sgemm_serial(const struct rt_sgemm *g);

/*
 * count GEMMs of one shape: item(arg, i, g) fills GEMM i. Small ones run
 * across the threads side by side, big ones one after the other, each
 * across the threads. Every result is the same either way.
 */
typedef void (*rt_sgemm_item_fn)(void *arg, int64_t i, struct rt_sgemm *g);
void rt_sgemm_batch(struct rt_ctx *ctx, int64_t count, rt_sgemm_item_fn item, void *arg);

#endif
