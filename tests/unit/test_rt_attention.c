/*
 * test_rt_attention.c - rt_linear_attention against the reference.
 *
 * Every update rule, with and without past_state, decay per head and per
 * key dimension, beta per head and shared, erase_gate per key dimension
 * and per head, GQA, MQA and one query head per kv head, one step and
 * several. The kernel runs on a context of 1 thread and one of 3 and must
 * agree bit for bit (items are independent); against the reference
 * evaluator (double) within FP32 rounding of a few steps. The state is
 * also updated in place (past_state as the state output), and descriptors
 * the kernel cannot run are refused.
 */
#include "onnxc_rt.h"
#include "refcheck.h"

struct la_case {
	const char *rule;
	int64_t batch, seq, hq, hkv, dk, dv;
	int64_t decay_width, beta_width, erase_width; /* 0: absent */
	bool past;
	float scale;
};

static void set_la(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct la_case *c = ud;
	ir_set_i(m, n, "q_num_heads", c->hq);
	ir_set_i(m, n, "kv_num_heads", c->hkv);
	ir_set_f(m, n, "scale", c->scale);
	ir_set_s(m, n, "update_rule", c->rule);
	ir_set_i(m, n, "past", c->past);
	ir_set_i(m, n, "erase", c->erase_width != 0);
}

static struct ref_tensor packed(int rank, const int64_t *dims, double lo, double hi, uint64_t *seed)
{
	struct ref_tensor r = { .type = { .dtype = IR_F32, .rank = rank } };
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= r.type.dims[i] = dims[i];
	r.data = malloc(sizeof(float) * (size_t)n + 1);
	rand_fill(IR_F32, r.data, n, lo, hi, seed);
	return r;
}

static void check_la(struct rt_ctx *one, struct rt_ctx *three, const struct la_case *c,
                     uint64_t *seed)
{
	struct rt_linattn_desc d = {
		RT_F32,   0,     0,     c->batch,       c->seq,        c->hq,
		c->hkv,   c->dk, c->dv, c->decay_width, c->beta_width, c->erase_width,
		c->scale, 0
	};
	int64_t bt = c->batch * c->seq;
	int64_t qd[3] = { c->batch, c->seq, c->hq * c->dk },
	        kd[3] = { c->batch, c->seq, c->hkv * c->dk };
	int64_t vd[3] = { c->batch, c->seq, c->hkv * c->dv };
	int64_t sd[4] = { c->batch, c->hkv, c->dk, c->dv };
	int64_t gd[3] = { c->batch, c->seq, c->decay_width },
	        bd[3] = { c->batch, c->seq, c->beta_width };
	int64_t ed[3] = { c->batch, c->seq, c->erase_width };
	struct ref_tensor in[7], out[2], past = { 0 }, decay = { 0 }, beta = { 0 }, erase = { 0 };
	int64_t ny = bt * c->hq * c->dv, ns = c->batch * c->hkv * c->dk * c->dv;
	float *y1 = malloc(sizeof(float) * (size_t)ny), *y3 = malloc(sizeof(float) * (size_t)ny);
	float *s1 = malloc(sizeof(float) * (size_t)ns), *s3 = malloc(sizeof(float) * (size_t)ns);
	char what[160];
	int nin = 3;
	d.gated = !strcmp(c->rule, "gated") || !strcmp(c->rule, "gated_delta");
	d.delta = !strcmp(c->rule, "delta") || !strcmp(c->rule, "gated_delta");
	in[0] = packed(3, qd, -1, 1, seed);
	in[1] = packed(3, kd, -0.5, 0.5, seed);
	in[2] = packed(3, vd, -1, 1, seed);
	if (c->past)
		in[nin++] = past = packed(4, sd, -1, 1, seed);
	if (c->decay_width)
		in[nin++] = decay = packed(3, gd, -1, 0, seed); /* log-space, so exp <= 1 */
	if (c->beta_width)
		in[nin++] = beta = packed(3, bd, 0, 1, seed);
	if (c->erase_width)
		in[nin++] = erase = packed(3, ed, 0, 1, seed);
	snprintf(what, sizeof what,
	         "%s b%lld t%lld hq%lld hkv%lld dk%lld dv%lld decay%lld beta%lld "
	         "erase%lld past%d",
	         c->rule, (long long)c->batch, (long long)c->seq, (long long)c->hq,
	         (long long)c->hkv, (long long)c->dk, (long long)c->dv, (long long)c->decay_width,
	         (long long)c->beta_width, (long long)c->erase_width, c->past);
	CHECK_EQ(rt_linear_attention(one, &d, in[0].data, in[1].data, in[2].data, past.data,
	                             decay.data, beta.data, erase.data, y1, s1),
	         RT_OK);
	CHECK_EQ(rt_linear_attention(three, &d, in[0].data, in[1].data, in[2].data, past.data,
	                             decay.data, beta.data, erase.data, y3, s3),
	         RT_OK);
	if (memcmp(y1, y3, sizeof(float) * (size_t)ny) ||
	    memcmp(s1, s3, sizeof(float) * (size_t)ns)) {
		fprintf(stderr, "%s: 1 and 3 threads differ\n", what);
		CHECK(!"thread-count independent");
	}
	if (!ref_eval(IR_OP_LINEAR_ATTENTION, set_la, (void *)c, in, nin, out, 2)) {
		fprintf(stderr, "%s\n", what);
		CHECK(!"reference evaluation");
	} else {
		double ey = rel_err(IR_F32, y1, out[0].data, ny, 1e-4, 1e-5);
		double es = rel_err(IR_F32, s1, out[1].data, ns, 1e-4, 1e-5);
		CHECK_EQ(ir_type_elems(&out[0].type), ny);
		CHECK_EQ(ir_type_elems(&out[1].type), ns);
		if (!(ey <= 1) || !(es <= 1)) {
			fprintf(stderr, "%s: error %g (output), %g (state)\n", what, ey, es);
			CHECK(!"matches the reference");
		}
		/* the state updated in place: past_state as the state output */
		if (c->past) {
			CHECK_EQ(rt_linear_attention(three, &d, in[0].data, in[1].data, in[2].data,
			                             past.data, decay.data, beta.data, erase.data,
			                             y3, past.data),
			         RT_OK);
			if (memcmp(y1, y3, sizeof(float) * (size_t)ny) ||
			    memcmp(s1, past.data, sizeof(float) * (size_t)ns)) {
				fprintf(stderr, "%s: in place differs\n", what);
				CHECK(!"in place");
			}
		}
		free(out[0].data);
		free(out[1].data);
	}
	for (int i = 0; i < nin; i++)
		free(in[i].data);
	free(y1);
	free(y3);
	free(s1);
	free(s3);
}

static void test_linear_attention(void)
{
	static const struct la_case cases[] = {
		{ "linear", 2, 4, 4, 4, 8, 8, 0, 0, 0, false, 0.35f },
		{ "linear", 2, 1, 4, 4, 8, 8, 0, 0, 0, true, 0.35f },
		{ "gated", 2, 5, 4, 4, 8, 6, 32, 0, 0, false, 0.35f },
		{ "gated", 1, 5, 6, 2, 5, 7, 2, 0, 0, true, 1.0f },
		{ "delta", 2, 4, 4, 4, 8, 8, 0, 4, 0, false, 0.35f },
		{ "delta", 2, 6, 4, 2, 4, 3, 0, 1, 8, true, 0.5f },
		{ "delta", 1, 3, 2, 2, 4, 4, 0, 2, 2, false, 0.5f },
		{ "gated_delta", 2, 4, 8, 4, 8, 8, 32, 4, 0, false, 0.35f },
		{ "gated_delta", 2, 4, 8, 1, 8, 8, 8, 1, 0, true, 0.35f },
		{ "gated_delta", 3, 7, 6, 3, 16, 5, 3, 3, 48, true, 0.25f },
		{ "gated_delta", 2, 1, 4, 4, 8, 8, 32, 4, 4, true, -0.5f },
		{ "gated_delta", 1, 2, 1, 1, 1, 1, 1, 1, 1, true, 1.0f },
		{ "gated_delta", 2, 40, 4, 2, 32, 24, 64, 2, 64, true, 0.18f },
	};
	struct rt_ctx *one, *three;
	struct rt_linattn_desc bad = { RT_F32, 1, 0, 1, 1, 2, 1, 4, 4, 3, 0, 0, 0.5f, 0 };
	float x[64] = { 0 }, y[64], s[64];
	uint64_t seed = 29;
	CHECK_EQ(rt_ctx_create(&one, 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&three, 3), RT_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_la(one, three, &cases[i], &seed);
	/* a decay width that is neither kv_heads nor kv_heads * dk; no decay
	 * for a gated rule; a half type (the CPU stages them); q_heads not a
	 * multiple of kv_heads; an erase gate without a delta rule */
	CHECK_EQ(rt_linear_attention(one, &bad, x, x, x, NULL, x, NULL, NULL, y, s),
	         RT_ERR_ARGUMENT);
	bad.decay_width = 4;
	CHECK_EQ(rt_linear_attention(one, &bad, x, x, x, NULL, NULL, NULL, NULL, y, s),
	         RT_ERR_ARGUMENT);
	CHECK_EQ(rt_linear_attention(one, &bad, x, x, x, NULL, x, NULL, NULL, y, s), RT_OK);
	bad.dtype = RT_F16;
	CHECK_EQ(rt_linear_attention(one, &bad, x, x, x, NULL, x, NULL, NULL, y, s),
	         RT_ERR_ARGUMENT);
	bad.dtype = RT_F32;
	bad.q_heads = 3;
	bad.kv_heads = 2;
	CHECK_EQ(rt_linear_attention(one, &bad, x, x, x, NULL, x, NULL, NULL, y, s),
	         RT_ERR_ARGUMENT);
	bad.q_heads = 2;
	bad.kv_heads = 1;
	bad.erase_width = 4;
	CHECK_EQ(rt_linear_attention(one, &bad, x, x, x, NULL, x, NULL, x, y, s), RT_ERR_ARGUMENT);
	rt_ctx_destroy(one);
	rt_ctx_destroy(three);
}

TESTS(T(test_linear_attention))
