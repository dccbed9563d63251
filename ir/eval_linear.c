/*
 * eval_linear.c - reference evaluators for matrix products: matmul and gemm,
 * and linear_attention's recurrence of outer products.
 *
 * Both reduce to one dot product per result element, which is computed in
 * double for floats (rounded once when stored) and in wrapping 64-bit
 * arithmetic for integers, as integer kernels do. An operand is addressed by
 * a start offset and a stride along the reduced dimension, so transposed and
 * broadcast operands need no copies.
 */
#include "eval.h"

#include <math.h>

/* A strided vector of K elements: element k of v is v[off + k * step]; d:
 * v's elements in double, for floats (NULL: read from v). */
struct vec {
	const struct ir_value *v;
	int64_t off, step;
	const double *d;
};

static double dot_f(struct vec a, struct vec b, int64_t K)
{
	double acc = 0;
	if (a.d && b.d) {
		for (int64_t k = 0; k < K; k++)
			acc += a.d[a.off + k * a.step] * b.d[b.off + k * b.step];
		return acc;
	}
	for (int64_t k = 0; k < K; k++)
		acc += getf(a.v, a.off + k * a.step) * getf(b.v, b.off + k * b.step);
	return acc;
}

static int64_t dot_i(struct vec a, struct vec b, int64_t K)
{
	uint64_t acc = 0;
	for (int64_t k = 0; k < K; k++)
		acc += (uint64_t)geti(a.v, a.off + k * a.step) *
		       (uint64_t)geti(b.v, b.off + k * b.step);
	return (int64_t)acc;
}

/* The type made of dims[from, from + rank) of t: the batch part of an operand. */
static struct ir_type sub_type(const struct ir_type *t, int from, int rank)
{
	struct ir_type r = { .dtype = t->dtype, .rank = rank > 0 ? rank : 0 };
	if (rank > 0)
		memcpy(r.dims, t->dims + from, sizeof(int64_t) * (size_t)rank);
	return r;
}

/*
 * numpy matmul: a rank-1 operand is a row (A) or a column (B) vector, and
 * the dimensions before the last two broadcast as a batch.
 */
bool eval_matmul(struct fold *f)
{
	const struct ir_type *a = &IN(0)->type, *b = &IN(1)->type, *o = &OUT(0)->type;
	int64_t K = a->dims[a->rank - 1];
	int64_t M = a->rank >= 2 ? a->dims[a->rank - 2] : 1,
	        N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
	int brank = o->rank - (a->rank >= 2) - (b->rank >= 2);
	struct ir_type bo = sub_type(o, 0, brank), ba = sub_type(a, 0, a->rank - 2),
	               bb = sub_type(b, 0, b->rank - 2);
	int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK], idx[IR_MAX_RANK] = { 0 };
	int64_t batch = ir_type_elems(&bo);
	eval_bcast_strides(&ba, &bo, sa);
	eval_bcast_strides(&bb, &bo, sb);
	const double *da, *db;
	if (ir_type_elems(o) == 0)
		return true;
	da = eval_doubles(f, IN(0));
	db = eval_doubles(f, IN(1));
	for (int64_t p = 0; p < batch; p++) {
		int64_t oa = eval_dot(idx, sa, brank) * M * K,
		        ob = eval_dot(idx, sb, brank) * K * N;
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				struct vec row = { IN(0), oa + i * K, 1, da },
				           col = { IN(1), ob + j, N, db };
				int64_t at = (p * M + i) * N + j;
				if (isf(o->dtype))
					putf(f, 0, at, dot_f(row, col, K));
				else
					puti(f, 0, at, dot_i(row, col, K));
			}
		eval_next(idx, bo.dims, brank);
	}
	if (da)
		eval_free(f, (void *)da);
	if (db)
		eval_free(f, (void *)db);
	return true;
}

/*
 * Y = alpha * A' B' + beta * C with A' = A or its transpose (likewise B') and
 * C broadcast to [M, N]. Integer gemm is exact when alpha and beta are 1 (the
 * only case exporters produce); other factors go through double.
 */
bool eval_gemm(struct fold *f)
{
	const struct ir_type *a = &IN(0)->type, *o = &OUT(0)->type;
	bool ta = ir_attr_i(f->n, "trans_a") != 0, tb = ir_attr_i(f->n, "trans_b") != 0;
	double alpha = ir_attr_f(f->n, "alpha"), beta = ir_attr_f(f->n, "beta");
	int64_t M = o->dims[0], N = o->dims[1], K = ta ? a->dims[0] : a->dims[1];
	int64_t cs[2] = { 0, 0 };
	const struct ir_value *c = f->n->nin > 2 ? IN(2) : NULL;
	const double *da = eval_doubles(f, IN(0)), *db = eval_doubles(f, IN(1));
	if (c)
		eval_bcast_strides(&c->type, o, cs);
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			struct vec row = { IN(0), ta ? i : i * K, ta ? M : 1, da };
			struct vec col = { IN(1), tb ? j * K : j, tb ? 1 : N, db };
			int64_t at = i * N + j, ci = i * cs[0] + j * cs[1];
			if (isf(o->dtype)) {
				putf(f, 0, at,
				     alpha * dot_f(row, col, K) + (c ? beta * getf(c, ci) : 0));
			} else {
				int64_t y = dot_i(row, col, K), z = c ? geti(c, ci) : 0;
				if (alpha == 1 && beta == 1)
					puti(f, 0, at, (int64_t)((uint64_t)y + (uint64_t)z));
				else
					putf(f, 0, at, alpha * (double)y + beta * (double)z);
			}
		}
	if (da)
		eval_free(f, (void *)da);
	if (db)
		eval_free(f, (void *)db);
	return true;
}

/*
 * linear_attention: ONNX's recurrence, one state S [dk, dv] per batch and kv
 * head, step by step over time: decay S by exp(decay), correct the value by
 * what S already holds for the (erase-gated) key (delta rules), add
 * key (x) value, then read every query head of the kv head's group,
 * scale * q^T S. In double (ONNX's reference works in FP32; the targets
 * accumulate in FP32 as it does).
 */
bool eval_linear_attention(struct fold *f)
{
	struct ir_linattn_inputs in = ir_linear_attention_inputs(f->n);
	const int64_t *qd = IN(0)->type.dims;
	int64_t hq = ir_attr_i(f->n, "q_num_heads"), hkv = ir_attr_i(f->n, "kv_num_heads");
	int64_t B = qd[0], T = qd[1], dk = qd[2] / hq, dv = IN(2)->type.dims[2] / hkv;
	int64_t group = hq / hkv;
	int64_t wd = in.decay >= 0 ? IN(in.decay)->type.dims[2] : 0;
	int64_t wb = in.beta >= 0 ? IN(in.beta)->type.dims[2] : 0;
	int64_t we = in.erase >= 0 ? IN(in.erase)->type.dims[2] : 0;
	double scale = ir_attr_f(f->n, "scale");
	double *s = eval_alloc(f, sizeof *s * (size_t)(dk * dv));
	double *u = eval_alloc(f, sizeof *u * (size_t)dv);
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < hkv; h++) {
			int64_t s0 = (b * hkv + h) * dk * dv;
			for (int64_t i = 0; i < dk * dv; i++)
				s[i] = in.past >= 0 ? getf(IN(in.past), s0 + i) : 0;
			for (int64_t t = 0; t < T; t++) {
				int64_t bt = b * T + t, k0 = bt * hkv * dk + h * dk;
				if (in.gated)
					for (int64_t d = 0; d < dk; d++) {
						int64_t at = bt * wd + (wd == hkv ? h : h * dk + d);
						double e = exp(getf(IN(in.decay), at));
						for (int64_t m = 0; m < dv; m++)
							s[d * dv + m] *= e;
					}
				for (int64_t m = 0; m < dv; m++)
					u[m] = getf(IN(2), bt * hkv * dv + h * dv + m);
				if (in.delta) {
					double beta =
					        getf(IN(in.beta), bt * wb + (wb == 1 ? 0 : h));
					for (int64_t m = 0; m < dv; m++) {
						double r = 0;
						for (int64_t d = 0; d < dk; d++) {
							double ke = getf(IN(1), k0 + d);
							if (in.erase >= 0)
								ke *= getf(
								        IN(in.erase),
								        bt * we +
								                (we == hkv
								                         ? h
								                         : h * dk +
								                                   d));
							r += s[d * dv + m] * ke;
						}
						u[m] = beta * (u[m] - r);
					}
				}
				for (int64_t d = 0; d < dk; d++)
					for (int64_t m = 0; m < dv; m++)
						s[d * dv + m] += getf(IN(1), k0 + d) * u[m];
				for (int64_t g = 0; g < group; g++) {
					int64_t qh = h * group + g, q0 = (bt * hq + qh) * dk;
					for (int64_t m = 0; m < dv; m++) {
						double acc = 0;
						for (int64_t d = 0; d < dk; d++)
							acc += getf(IN(0), q0 + d) * s[d * dv + m];
						putf(f, 0, (bt * hq + qh) * dv + m, scale * acc);
					}
				}
			}
			for (int64_t i = 0; i < dk * dv; i++)
				putf(f, 1, s0 + i, s[i]);
		}
	eval_free(f, u);
	eval_free(f, s);
	return true;
}

/* An attention node's operands and attributes, for the evaluators below. */
struct att {
	const struct ir_value *q, *k, *v, *mask;
	int64_t B, Hq, Lq, dk, Hkv, Lk, dv, group, ms[4], causal, off;
	double scale, cap;
};

static void att_init(struct att *a, struct fold *f, const struct ir_value *mask)
{
	const int64_t *qd = IN(0)->type.dims, *kd = IN(1)->type.dims;
	*a = (struct att){ .q = IN(0),
		           .k = IN(1),
		           .v = IN(2),
		           .mask = mask,
		           .B = qd[0],
		           .Hq = qd[1],
		           .Lq = qd[2],
		           .dk = qd[3],
		           .Hkv = kd[1],
		           .Lk = kd[2],
		           .dv = IN(2)->type.dims[3],
		           .causal = ir_attr_i(f->n, "causal"),
		           .off = ir_attr_i(f->n, "causal_offset"),
		           .scale = ir_attr_f(f->n, "scale"),
		           .cap = ir_attr_f(f->n, "softcap") };
	a->group = a->Hq / a->Hkv;
	if (mask) {
		struct ir_type full = { .dtype = IR_F32,
			                .rank = 4,
			                .dims = { a->B, a->Hq, a->Lq, a->Lk } };
		eval_bcast_strides(&mask->type, &full, a->ms);
	}
}

/* The scores of query row i of head h in s (softcapped, masked), the tanh
 * of the softcap in t (when softcap > 0); returns their max. */
static double att_row(const struct att *a, int64_t b, int64_t h, int64_t i, double *s, double *t)
{
	int64_t q0 = ((b * a->Hq + h) * a->Lq + i) * a->dk, kv = b * a->Hkv + h / a->group;
	double mx = -INFINITY;
	for (int64_t j = 0; j < a->Lk; j++) {
		double x = 0;
		int64_t at = b * a->ms[0] + h * a->ms[1] + i * a->ms[2] + j * a->ms[3];
		for (int64_t c = 0; c < a->dk; c++)
			x += getf(a->q, q0 + c) * getf(a->k, (kv * a->Lk + j) * a->dk + c);
		x *= a->scale;
		if (a->cap > 0) {
			t[j] = tanh(x / a->cap);
			x = a->cap * t[j];
		}
		if (a->mask && a->mask->type.dtype == IR_BOOL)
			x = geti(a->mask, at) ? x : -INFINITY;
		else if (a->mask)
			x += getf(a->mask, at);
		if (a->causal && j > i + a->off)
			x = -INFINITY;
		s[j] = x;
		mx = fmax(mx, x);
	}
	return mx;
}

/*
 * attention: the scores of each query row in double, softcapped, biased or
 * masked and causally masked, then a softmax and the weighted sum of the
 * values. A row whose every score is -inf is a zero row with lse -inf
 * (ONNX's errata for Attention-23: not NaN).
 */
bool eval_attention(struct fold *f)
{
	struct att a;
	double *s, *t;
	att_init(&a, f, f->n->nin == 4 ? IN(3) : NULL);
	s = eval_alloc(f, sizeof *s * (size_t)(a.Lk ? a.Lk : 1));
	t = eval_alloc(f, sizeof *t * (size_t)(a.Lk ? a.Lk : 1));
	for (int64_t b = 0; b < a.B; b++)
		for (int64_t h = 0; h < a.Hq; h++)
			for (int64_t i = 0; i < a.Lq; i++) {
				int64_t kv = b * a.Hkv + h / a.group,
				        row = (b * a.Hq + h) * a.Lq + i;
				double mx = att_row(&a, b, h, i, s, t), sum = 0;
				if (mx == -INFINITY) {
					for (int64_t c = 0; c < a.dv; c++)
						putf(f, 0, row * a.dv + c, 0);
					if (f->n->nout == 2)
						putf(f, 1, row, -INFINITY);
					continue;
				}
				for (int64_t j = 0; j < a.Lk; j++)
					sum += s[j] = exp(s[j] - mx);
				for (int64_t c = 0; c < a.dv; c++) {
					double acc = 0;
					for (int64_t j = 0; j < a.Lk; j++)
						acc += s[j] * getf(a.v, (kv * a.Lk + j) * a.dv + c);
					putf(f, 0, row * a.dv + c, acc / sum);
				}
				if (f->n->nout == 2)
					putf(f, 1, row, mx + log(sum));
			}
	eval_free(f, t);
	eval_free(f, s);
	return true;
}

/*
 * attention_grad: the gradient of attention in double, from the scores
 * recomputed here (the y and lse inputs are the forward's, which the
 * targets' kernels use; the reference does not need them): with P the
 * probabilities and dP = dy . V^T, dS = P * (dP - rowsum(P * dP)), through
 * the softcap's 1 - tanh^2, then dq = scale dS K, dk = scale dS^T q (summed
 * over each group of query heads), dv = P^T dy.
 */
bool eval_attention_grad(struct fold *f)
{
	struct att a;
	const struct ir_value *dy = IN(5);
	double *s, *t, *dp, *dq, *dk, *dv;
	int64_t nk, nv;
	att_init(&a, f, f->n->nin == 7 ? IN(6) : NULL);
	nk = a.B * a.Hkv * a.Lk * a.dk, nv = a.B * a.Hkv * a.Lk * a.dv;
	s = eval_alloc(f, sizeof *s * (size_t)(a.Lk ? a.Lk : 1));
	t = eval_alloc(f, sizeof *t * (size_t)(a.Lk ? a.Lk : 1));
	dp = eval_alloc(f, sizeof *dp * (size_t)(a.Lk ? a.Lk : 1));
	dq = eval_alloc(f, sizeof *dq * (size_t)a.dk);
	dk = eval_alloc(f, sizeof *dk * (size_t)(nk ? nk : 1));
	dv = eval_alloc(f, sizeof *dv * (size_t)(nv ? nv : 1));
	memset(dk, 0, sizeof *dk * (size_t)nk);
	memset(dv, 0, sizeof *dv * (size_t)nv);
	for (int64_t b = 0; b < a.B; b++)
		for (int64_t h = 0; h < a.Hq; h++)
			for (int64_t i = 0; i < a.Lq; i++) {
				int64_t kv = b * a.Hkv + h / a.group,
				        row = (b * a.Hq + h) * a.Lq + i;
				int64_t q0 = row * a.dk;
				double mx = att_row(&a, b, h, i, s, t), sum = 0, d = 0;
				memset(dq, 0, sizeof *dq * (size_t)a.dk);
				if (mx != -INFINITY) {
					for (int64_t j = 0; j < a.Lk; j++)
						sum += s[j] = exp(s[j] - mx);
					for (int64_t j = 0; j < a.Lk; j++) {
						double x = 0;
						s[j] /= sum;
						for (int64_t c = 0; c < a.dv; c++)
							x += getf(dy, row * a.dv + c) *
							     getf(a.v, (kv * a.Lk + j) * a.dv + c);
						dp[j] = x;
						d += s[j] * x;
					}
					for (int64_t j = 0; j < a.Lk; j++) {
						double ds = s[j] * (dp[j] - d);
						if (a.cap > 0)
							ds *= 1 - t[j] * t[j];
						ds *= a.scale;
						for (int64_t c = 0; c < a.dk; c++) {
							dq[c] += ds *
							         getf(a.k,
							              (kv * a.Lk + j) * a.dk + c);
							dk[(kv * a.Lk + j) * a.dk + c] +=
							        ds * getf(a.q, q0 + c);
						}
						for (int64_t c = 0; c < a.dv; c++)
							dv[(kv * a.Lk + j) * a.dv + c] +=
							        s[j] * getf(dy, row * a.dv + c);
					}
				}
				for (int64_t c = 0; c < a.dk; c++)
					putf(f, 0, q0 + c, dq[c]);
			}
	for (int64_t e = 0; e < nk; e++)
		putf(f, 1, e, dk[e]);
	for (int64_t e = 0; e < nv; e++)
		putf(f, 2, e, dv[e]);
	eval_free(f, dv);
	eval_free(f, dk);
	eval_free(f, dq);
	eval_free(f, dp);
	eval_free(f, t);
	eval_free(f, s);
	return true;
}
