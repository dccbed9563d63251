/*
 * rt_attention.c - linear attention (ONNX LinearAttention-27): the
 * recurrence of a state matrix per batch and kv head.
 *
 * The work is one item per (batch, kv head): its state S [dk, dv] lives in
 * the state output itself (copied from past_state first, or zeroed), and
 * the item walks the sequence one step at a time in ONNX's order: decay S
 * by exp(decay), correct the value by what S already retrieves for the key
 * (delta rules), add key (x) value, then read S for every query head of the
 * kv head's group. Items are independent, so threads split them and the
 * results do not depend on the thread count.
 *
 * Every pass runs along rows of S (dv contiguous floats), so the inner
 * loops vectorize. The corrected value needs dv floats of scratch per
 * step: it is kept in the output row of the group's first query head,
 * which that head's read overwrites only after the write has used it, so
 * the kernel needs no workspace.
 *
 * Arithmetic is FP32, as ONNX's reference computes whatever the input type
 * (the CPU target stages half tensors to FP32 around the call).
 */
#include "onnxc_rt.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

struct linattn_job {
	const struct rt_linattn_desc *d;
	const float *q, *k, *v, *past, *decay, *beta, *erase;
	float *y, *state;
};

/* S *= exp(g) by rows: g holds one value per row (per key dimension) or
 * one for all (per head, g_step 0). */
static void decay_rows(float *s, int64_t dk, int64_t dv, const float *g, int64_t g_step)
{
	for (int64_t d = 0; d < dk; d++) {
		float e = expf(g[d * g_step]);
		for (int64_t m = 0; m < dv; m++)
			s[d * dv + m] *= e;
	}
}

/* u = beta * (v - S^T (erase * k)); erase NULL: the key itself. */
static void delta_value(const float *s, int64_t dk, int64_t dv, const float *k, const float *erase,
                        int64_t e_step, float beta, const float *v, float *u)
{
	for (int64_t m = 0; m < dv; m++)
		u[m] = 0;
	for (int64_t d = 0; d < dk; d++) {
		float ke = erase ? erase[d * e_step] * k[d] : k[d];
		for (int64_t m = 0; m < dv; m++)
			u[m] += s[d * dv + m] * ke;
	}
	for (int64_t m = 0; m < dv; m++)
		u[m] = beta * (v[m] - u[m]);
}

/* y = scale * q^T S */
static void read_state(const float *s, int64_t dk, int64_t dv, const float *q, float scale,
                       float *y)
{
	for (int64_t m = 0; m < dv; m++)
		y[m] = 0;
	for (int64_t d = 0; d < dk; d++)
		for (int64_t m = 0; m < dv; m++)
			y[m] += q[d] * s[d * dv + m];
	for (int64_t m = 0; m < dv; m++)
		y[m] *= scale;
}

static void linattn_items(void *arg, int64_t begin, int64_t end)
{
	const struct linattn_job *jb = arg;
	const struct rt_linattn_desc *d = jb->d;
	int64_t hkv = d->kv_heads, hq = d->q_heads, dk = d->dk, dv = d->dv, group = hq / hkv;
	bool decay_per_key = d->decay_width != hkv, erase_per_key = d->erase_width != hkv;
	for (int64_t it = begin; it < end; it++) {
		int64_t b = it / hkv, h = it % hkv;
		float *s = jb->state + it * dk * dv;
		if (!jb->past)
			memset(s, 0, sizeof *s * (size_t)(dk * dv));
		else if (jb->past != jb->state)
			memcpy(s, jb->past + it * dk * dv, sizeof *s * (size_t)(dk * dv));
		for (int64_t t = 0; t < d->seq; t++) {
			int64_t bt = b * d->seq + t;
			const float *k = jb->k + (bt * hkv + h) * dk,
			            *v = jb->v + (bt * hkv + h) * dv;
			const float *w = v;
			/* the group's first output row: the corrected value's scratch */
			float *u = jb->y + (bt * hq + h * group) * dv;
			if (d->gated)
				decay_rows(s, dk, dv,
				           jb->decay + bt * d->decay_width +
				                   (decay_per_key ? h * dk : h),
				           decay_per_key);
			if (d->delta) {
				const float *e = jb->erase ? jb->erase + bt * d->erase_width +
				                                     (erase_per_key ? h * dk : h)
				                           : NULL;
				float beta =
				        jb->beta[bt * d->beta_width + (d->beta_width == 1 ? 0 : h)];
				delta_value(s, dk, dv, k, e, erase_per_key, beta, v, u);
				w = u;
			}
			for (int64_t i = 0; i < dk; i++)
				for (int64_t m = 0; m < dv; m++)
					s[i * dv + m] += k[i] * w[m];
			for (int64_t g = 0; g < group; g++) {
				int64_t qh = h * group + g;
				read_state(s, dk, dv, jb->q + (bt * hq + qh) * dk, d->scale,
				           jb->y + (bt * hq + qh) * dv);
			}
		}
	}
}

int rt_linear_attention(struct rt_ctx *ctx, const struct rt_linattn_desc *d, const void *q,
                        const void *k, const void *v, const void *past, const void *decay,
                        const void *beta, const void *erase, void *y, void *state)
{
	struct linattn_job jb = { d, q, k, v, past, decay, beta, erase, y, state };
	int64_t hkv = d->kv_heads;
	if (d->dtype != RT_F32 || (d->ydtype && d->ydtype != RT_F32) ||
	    (d->sdtype && d->sdtype != RT_F32) || d->batch < 0 || d->seq < 0 || d->dk <= 0 ||
	    d->dv <= 0 || hkv <= 0 || d->q_heads <= 0 || d->q_heads % hkv || !q || !k || !v || !y ||
	    !state)
		return RT_ERR_ARGUMENT;
	if (d->gated && (!decay || (d->decay_width != hkv && d->decay_width != hkv * d->dk)))
		return RT_ERR_ARGUMENT;
	if (d->delta && (!beta || (d->beta_width != hkv && d->beta_width != 1)))
		return RT_ERR_ARGUMENT;
	if (erase && (!d->delta || (d->erase_width != hkv && d->erase_width != hkv * d->dk)))
		return RT_ERR_ARGUMENT;
	rt_parallel(ctx, d->batch * hkv, 1, linattn_items, &jb);
	return RT_OK;
}
