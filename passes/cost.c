/*
 * cost.c - GPU profiles, per-node work, predicted times, least squares.
 *
 * The built-in profiles are the vendors' published peak figures (cited in
 * docs/precision.md); a kernel launch costs 2 us (the CUDA backend replays
 * a CUDA Graph, which keeps launches cheap) and a cast reads 4 and writes 2
 * bytes per element. They are analytical: a roofline per node. Measured
 * coefficients from a profile file override them per op type.
 */
#include "cost.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LAUNCH_US 2.0

/* name, source, fp32, fp16 (CUDA cores), TC fp16, TC bf16 (TFLOP/s), GB/s */
#define PROFILE(nm, src, f32, f16, tc16, tcbf16, bw)                                    \
	{                                                                               \
		.name = nm, .source = src, .fp32_tflops = f32, .fp16_tflops = f16,      \
		.tc_fp16_tflops = tc16, .tc_bf16_tflops = tcbf16, .mem_gbs = bw,        \
		.launch_us = LAUNCH_US, .cast_c_us = LAUNCH_US, .cast_r_ns = 6.0 / (bw) \
	}

static const struct gpu_profile builtins[] = {
	PROFILE("v100", "NVIDIA Tesla V100 (SXM2) datasheet", 15.7, 31.4, 125, 0, 900),
	PROFILE("t4", "NVIDIA T4 datasheet", 8.1, 16.2, 65, 0, 320),
	PROFILE("rtx2080ti", "NVIDIA Turing architecture whitepaper (RTX 2080 Ti)", 13.4, 26.9,
	        53.8, 0, 616),
	PROFILE("a100", "NVIDIA A100 (SXM4 80GB) datasheet", 19.5, 78, 312, 312, 2039),
	PROFILE("rtx4090", "NVIDIA Ada Lovelace architecture whitepaper (RTX 4090)", 82.6, 82.6,
	        165.2, 165.2, 1008),
	PROFILE("h100", "NVIDIA H100 (SXM5) datasheet", 67, 133.8, 989.5, 989.5, 3350),
	PROFILE("h200", "NVIDIA H200 (SXM) datasheet", 67, 133.8, 989.5, 989.5, 4800),
};

const struct gpu_profile *cost_builtin(const char *name)
{
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
		if (!strcmp(builtins[i].name, name))
			return &builtins[i];
	return NULL;
}

const char *cost_builtin_names(void) { return "v100, t4, rtx2080ti, a100, rtx4090, h100, h200"; }

/* ------------------------------------------------------------------------ */
/* Profile files                                                            */
/* ------------------------------------------------------------------------ */

static char *trim(char *s)
{
	char *e;
	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static bool parse_number(const char *s, double *v)
{
	char *e;
	*v = strtod(s, &e);
	return e != s && !*trim(e) && isfinite(*v);
}

bool cost_load_profile(struct ir_ctx *ctx, const char *name, struct gpu_profile *out)
{
	const struct gpu_profile *b = cost_builtin(name);
	FILE *f;
	char line[512];
	int lineno = 0;
	if (b) {
		*out = *b;
		return true;
	}
	if (!(f = fopen(name, "r"))) {
		ir_error(ctx, "--gpu %s is neither a built-in profile (%s) nor a readable file",
		         name, cost_builtin_names());
		return false;
	}
	memset(out, 0, sizeof *out);
	out->launch_us = LAUNCH_US;
	out->source = "profile file";
	snprintf(out->name, sizeof out->name, "%s", name);
	while (fgets(line, sizeof line, f)) {
		char *s = trim(line), *eq, *key, *val;
		double v;
		lineno++;
		if (!*s || *s == '#')
			continue;
		if (!(eq = strchr(s, '='))) {
			ir_error(ctx, "%s:%d: expected KEY = VALUE", name, lineno);
			goto fail;
		}
		*eq = 0;
		key = trim(s);
		val = trim(eq + 1);
		if (!strcmp(key, "name")) {
			snprintf(out->name, sizeof out->name, "%s", val);
		} else if (!strncmp(key, "model.", 6)) {
			struct cost_linear *c = NULL, tmp;
			enum ir_op op = ir_op_from_name(key + 6, strlen(key + 6));
			if (!strcmp(key + 6, "tensor_core"))
				c = &out->tensor_core;
			else if (op != IR_OP_COUNT)
				c = &out->ops[op];
			if (!c || sscanf(val, "%lf %lf %lf %lf", &tmp.c0, &tmp.c1, &tmp.c2,
			                 &tmp.sigma) != 4) {
				ir_error(ctx, "%s:%d: '%s' needs an op name and four coefficients",
				         name, lineno, key);
				goto fail;
			}
			*c = tmp;
			c->fitted = true;
		} else if (parse_number(val, &v) && v >= 0) {
			static const struct {
				const char *key;
				size_t off;
			} keys[] = {
				{ "fp32_tflops", offsetof(struct gpu_profile, fp32_tflops) },
				{ "fp16_tflops", offsetof(struct gpu_profile, fp16_tflops) },
				{ "tc_fp16_tflops", offsetof(struct gpu_profile, tc_fp16_tflops) },
				{ "tc_bf16_tflops", offsetof(struct gpu_profile, tc_bf16_tflops) },
				{ "mem_gbs", offsetof(struct gpu_profile, mem_gbs) },
				{ "launch_us", offsetof(struct gpu_profile, launch_us) },
				{ "cast_c_us", offsetof(struct gpu_profile, cast_c_us) },
				{ "cast_r_ns", offsetof(struct gpu_profile, cast_r_ns) },
			};
			size_t k = 0;
			while (k < sizeof keys / sizeof keys[0] && strcmp(keys[k].key, key))
				k++;
			if (k == sizeof keys / sizeof keys[0]) {
				ir_error(ctx, "%s:%d: unknown key '%s'", name, lineno, key);
				goto fail;
			}
			*(double *)((char *)out + keys[k].off) = v;
		} else {
			ir_error(ctx, "%s:%d: '%s' is not a non-negative number", name, lineno,
			         val);
			goto fail;
		}
	}
	fclose(f);
	if (!(out->fp32_tflops > 0 && out->fp16_tflops > 0 && out->tc_fp16_tflops > 0 &&
	      out->mem_gbs > 0)) {
		ir_error(ctx,
		         "%s: fp32_tflops, fp16_tflops, tc_fp16_tflops and mem_gbs are required "
		         "and must be positive",
		         name);
		return false;
	}
	if (!out->cast_c_us)
		out->cast_c_us = out->launch_us;
	if (!out->cast_r_ns)
		out->cast_r_ns = 6.0 / out->mem_gbs;
	return true;
fail:
	fclose(f);
	return false;
}

/* ------------------------------------------------------------------------ */
/* Work                                                                     */
/* ------------------------------------------------------------------------ */

static double elems(const struct ir_value *v) { return (double)ir_type_elems(&v->type); }

/* FLOPs per element of elementwise ops (transcendentals cost more). */
static double eltwise_flops(enum ir_op op)
{
	switch (op) {
	case IR_OP_EXP:
	case IR_OP_LOG:
	case IR_OP_ERF:
	case IR_OP_TANH:
	case IR_OP_SIGMOID:
	case IR_OP_POW:
	case IR_OP_SOFTPLUS:
	case IR_OP_ELU:
	case IR_OP_SELU:
	case IR_OP_CELU:
	case IR_OP_MISH:
	case IR_OP_SIN:
	case IR_OP_COS: return 10;
	default: return 1;
	}
}

static bool tc_dims(int64_t a, int64_t b, int64_t c)
{
	return a % 8 == 0 && b % 8 == 0 && c % 8 == 0;
}

void cost_work(const struct ir_node *n, struct cost_work *w)
{
	const struct ir_type *y = &n->out[0]->type;
	memset(w, 0, sizeof *w);
	for (int i = 0; i < n->nin + n->nout; i++) {
		const struct ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
		double e = elems(v);
		bool fl = ir_dtypes[v->type.dtype].is_float;
		int size = ir_dtype_size(v->type.dtype);
		w->bytes32 += e * (fl ? 4 : size);
		w->bytes16 += e * (fl ? 2 : size);
	}
	switch (n->op) {
	case IR_OP_MATMUL:
	case IR_OP_GEMM: {
		const struct ir_type *a = &n->in[0]->type;
		bool ta = n->op == IR_OP_GEMM && ir_attr_i(n, "trans_a");
		int64_t k = a->rank == 1 ? a->dims[0]
		            : ta         ? a->dims[a->rank - 2]
		                         : a->dims[a->rank - 1];
		int64_t cols = y->rank ? y->dims[y->rank - 1] : 1;
		int64_t rows = y->rank > 1 ? y->dims[y->rank - 2] : 1;
		w->flops = 2 * elems(n->out[0]) * (double)k;
		w->matmul_like = true;
		w->tensor_core = tc_dims(rows, cols, k);
		break;
	}
	case IR_OP_ATTENTION: {
		/* fused: its traffic is Q, K, V, the mask and Y (counted above),
		 * never the L x L scores; the two products over the scores a
		 * causal mask leaves, on Tensor Cores in half precision */
		const int64_t *q = n->in[0]->type.dims, *k = n->in[1]->type.dims;
		int64_t dv = n->in[2]->type.dims[3], off = ir_attr_i(n, "causal_offset");
		double scores = 0;
		if (ir_attr_i(n, "causal"))
			for (int64_t i = 0; i < q[2]; i++)
				scores += (double)(i + off + 1 < 0      ? 0
				                   : i + off + 1 > k[2] ? k[2]
				                                        : i + off + 1);
		else
			scores = (double)q[2] * (double)k[2];
		scores *= (double)q[0] * (double)q[1];
		w->flops = 2 * scores * (double)(q[3] + dv);
		if (n->nin == 4 &&
		    ir_dtypes[n->in[3]->type.dtype].is_float) /* the bias stays FP32 */
			w->bytes16 += 2 * elems(n->in[3]);
		w->matmul_like = true;
		w->tensor_core = tc_dims(q[2], k[2], q[3]) && dv % 8 == 0;
		break;
	}
	case IR_OP_CONV:
	case IR_OP_CONV_TRANSPOSE: {
		const struct ir_type *wt = &n->in[1]->type;
		double per = 1;
		int64_t g = ir_attr_i(n, "group");
		for (int i = 1; i < wt->rank; i++)
			per *= (double)wt->dims[i];
		w->flops = 2 * (n->op == IR_OP_CONV ? elems(n->out[0]) : elems(n->in[0])) * per;
		w->matmul_like = true;
		w->tensor_core = tc_dims(n->in[0]->type.dims[1] / g, y->dims[1] / g, 8);
		break;
	}
	default:
		switch (ir_ops[n->op].kind) {
		case IR_KIND_ELTWISE: w->flops = elems(n->out[0]) * eltwise_flops(n->op); break;
		case IR_KIND_MOVE: w->flops = 0; break;
		default: w->flops = 5 * elems(n->in[0]); break;
		}
	}
}

/* Microseconds for flops at tflops TFLOP/s, and for bytes at gbs GB/s. */
static double us_compute(double flops, double tflops)
{
	return tflops > 0 ? flops / (tflops * 1e6) : 0;
}
static double us_memory(double bytes, double gbs) { return bytes / (gbs * 1e3); }

double cost_time32(const struct gpu_profile *p, const struct ir_node *n)
{
	struct cost_work w;
	cost_work(n, &w);
	return p->launch_us +
	       fmax(us_compute(w.flops, p->fp32_tflops), us_memory(w.bytes32, p->mem_gbs));
}

/* The half-precision peak for n: Tensor Cores where the op and shapes
 * allow, CUDA cores otherwise; BF16 without BF16 hardware runs at FP32. */
static double half_peak(const struct gpu_profile *p, const struct cost_work *w, bool bf16)
{
	if (w->matmul_like && w->tensor_core)
		return bf16 ? (p->tc_bf16_tflops > 0 ? p->tc_bf16_tflops : p->fp32_tflops)
		            : p->tc_fp16_tflops;
	if (bf16 && p->tc_bf16_tflops <= 0)
		return p->fp32_tflops;
	return p->fp16_tflops;
}

double cost_time16(const struct gpu_profile *p, const struct ir_node *n, bool bf16)
{
	struct cost_work w;
	const struct cost_linear *c;
	double peak;
	cost_work(n, &w);
	peak = half_peak(p, &w, bf16);
	c = w.matmul_like && w.tensor_core && p->tensor_core.fitted ? &p->tensor_core
	                                                            : &p->ops[n->op];
	if (c->fitted)
		return fmax(0, c->c0 + c->c1 * us_compute(w.flops, peak) +
		                       c->c2 * us_memory(w.bytes16, p->mem_gbs) +
		                       c->sigma * cost_time32(p, n));
	return p->launch_us + fmax(us_compute(w.flops, peak), us_memory(w.bytes16, p->mem_gbs));
}

static int64_t up8(int64_t x) { return (x + 7) / 8 * 8; }

/* A copy kernel of in + out elements in half precision. */
static double copy_us(const struct gpu_profile *p, double in, double out)
{
	return p->launch_us + us_memory(2 * (in + out), p->mem_gbs);
}

bool cost_pad_plan(const struct gpu_profile *p, const struct ir_node *n, bool bf16,
                   struct cost_pad *pp)
{
	struct cost_work w;
	double grow, act_in = 0, act_out = 0, peak;
	bool b_const = n->nin > 1 && n->in[1]->kind == IR_VAL_CONST;
	memset(pp, 0, sizeof *pp);
	if (!b_const || n->out[0]->type.rank < 2)
		return false;
	if (n->op == IR_OP_MATMUL || n->op == IR_OP_GEMM) {
		const struct ir_type *a = &n->in[0]->type, *y = &n->out[0]->type;
		bool ta = n->op == IR_OP_GEMM && ir_attr_i(n, "trans_a");
		if (a->rank < 2 || n->in[1]->type.rank != 2)
			return false;
		pp->m = y->dims[y->rank - 2];
		pp->n = y->dims[y->rank - 1];
		pp->k = ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
		pp->m8 = up8(pp->m);
	} else if (n->op == IR_OP_CONV && ir_attr_i(n, "group") == 1) {
		pp->k = n->in[0]->type.dims[1];
		pp->n = n->out[0]->type.dims[1];
		pp->m = pp->m8 = 1;
	} else {
		return false;
	}
	pp->n8 = up8(pp->n);
	pp->k8 = up8(pp->k);
	if (pp->m8 == pp->m && pp->n8 == pp->n && pp->k8 == pp->k)
		return false;
	cost_work(n, &w);
	grow = (double)pp->m8 / (double)pp->m * (double)pp->n8 / (double)pp->n * (double)pp->k8 /
	       (double)pp->k;
	/* activations padded at run time: A (or x) when m or k grows, unless it
	 * is a constant; the output is sliced back when m or n grows */
	if ((pp->k8 > pp->k || pp->m8 > pp->m) && n->in[0]->kind != IR_VAL_CONST) {
		double e = elems(n->in[0]);
		act_in = e + e * (double)pp->k8 / (double)pp->k * (double)pp->m8 / (double)pp->m;
		pp->pad_us += copy_us(p, e, act_in - e);
	}
	if (pp->n8 > pp->n || pp->m8 > pp->m) {
		double e = elems(n->out[0]);
		act_out = e * (double)pp->n8 / (double)pp->n * (double)pp->m8 / (double)pp->m;
		pp->pad_us += copy_us(p, act_out, e);
	}
	w.tensor_core = true;
	peak = half_peak(p, &w, bf16);
	pp->t16 = p->launch_us +
	          fmax(us_compute(w.flops * grow, peak),
	               us_memory(w.bytes16 * fmax(grow, 1), p->mem_gbs)) +
	          pp->pad_us;
	return true;
}

double cost_cast(const struct gpu_profile *p, int64_t elements)
{
	return p->cast_c_us + p->cast_r_ns * (double)elements / 1000;
}

/* ------------------------------------------------------------------------ */
/* Least squares                                                            */
/* ------------------------------------------------------------------------ */

/*
 * Normal equations X'X w = X'y solved by Cholesky. The systems are tiny (a
 * handful of features) and well scaled by construction; a relative ridge of
 * 1e-12 keeps exactly collinear features from failing outright.
 */
bool cost_fit(const double *x, const double *y, int n, int k, double *w, double *rel_err)
{
	double a[16][16] = { { 0 } }, b[16] = { 0 }, l[16][16] = { { 0 } }, z[16];
	double tr = 0;
	if (k < 1 || k > 16 || n < k)
		return false;
	for (int s = 0; s < n; s++)
		for (int i = 0; i < k; i++) {
			b[i] += x[s * k + i] * y[s];
			for (int j = 0; j < k; j++)
				a[i][j] += x[s * k + i] * x[s * k + j];
		}
	for (int i = 0; i < k; i++)
		tr += a[i][i];
	for (int i = 0; i < k; i++)
		a[i][i] += 1e-12 * tr / k;
	for (int i = 0; i < k; i++)
		for (int j = 0; j <= i; j++) {
			double sum = a[i][j];
			for (int t = 0; t < j; t++)
				sum -= l[i][t] * l[j][t];
			if (i == j) {
				if (!(sum > 0))
					return false;
				l[i][i] = sqrt(sum);
			} else {
				l[i][j] = sum / l[j][j];
			}
		}
	for (int i = 0; i < k; i++) { /* L z = b */
		double sum = b[i];
		for (int t = 0; t < i; t++)
			sum -= l[i][t] * z[t];
		z[i] = sum / l[i][i];
	}
	for (int i = k - 1; i >= 0; i--) { /* L' w = z */
		double sum = z[i];
		for (int t = i + 1; t < k; t++)
			sum -= l[t][i] * w[t];
		w[i] = sum / l[i][i];
	}
	if (rel_err) {
		double e = 0;
		int m = 0;
		for (int s = 0; s < n; s++) {
			double pred = 0;
			for (int i = 0; i < k; i++)
				pred += x[s * k + i] * w[i];
			if (y[s] != 0) {
				e += fabs(pred - y[s]) / fabs(y[s]);
				m++;
			}
		}
		*rel_err = m ? e / m : 0;
	}
	return true;
}
