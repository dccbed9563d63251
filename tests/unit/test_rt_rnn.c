/*
 * test_rt_rnn.c - rt_rnn (LSTM, GRU, RNN) against the reference evaluator.
 *
 * Every cell, direction (forward, reverse, bidirectional) and activation,
 * clip, input_forget, linear_before_reset both ways, sequence_lens of
 * full, mixed and zero lengths, batches around the kernel's item of 16
 * rows, hidden and input sizes of 1, one step and none. The kernel runs
 * on a context of 1 thread and one of 3 and must agree bit for bit; it
 * must match the reference (double) within FP32 rounding of the steps.
 * Descriptors it cannot run and lengths out of range are refused.
 */
#include "onnxc_rt.h"
#include "refcheck.h"

struct rnn_case {
	enum ir_op op;
	int64_t seq, batch, input, hidden;
	const char *direction;
	int acts[6]; /* per direction (nact each); all 0 (Relu) means the defaults */
	float clip;
	int flag;    /* input_forget or linear_before_reset */
	int lengths; /* 0: full; 1: mixed, some 0 and some full */
};

static int nact_of(enum ir_op op) { return op == IR_OP_LSTM ? 3 : op == IR_OP_GRU ? 2 : 1; }
static int gates_of(enum ir_op op) { return op == IR_OP_LSTM ? 4 : op == IR_OP_GRU ? 3 : 1; }
static int dirs_of(const struct rnn_case *c)
{
	return strcmp(c->direction, "bidirectional") ? 1 : 2;
}

/* the case's activations with their parameters */
static void case_acts(const struct rnn_case *c, int *act, float *alpha, float *beta)
{
	static const int defaults[3][3] = { { IR_RNN_SIGMOID, IR_RNN_TANH, IR_RNN_TANH },
		                            { IR_RNN_SIGMOID, IR_RNN_TANH },
		                            { IR_RNN_TANH } };
	int nact = nact_of(c->op), n = nact * dirs_of(c);
	bool given = false;
	for (int k = 0; k < n; k++)
		given |= c->acts[k] != 0;
	for (int k = 0; k < n; k++) {
		act[k] = given ? c->acts[k] : defaults[3 - nact][k % nact];
		alpha[k] = ir_rnn_acts[act[k]].alpha ? 0.7f + 0.05f * (float)k : 0;
		beta[k] = ir_rnn_acts[act[k]].beta ? 0.3f - 0.05f * (float)k : 0;
	}
}

static void set_rnn(struct ir_module *m, struct ir_node *n, void *ud)
{
	const struct rnn_case *c = ud;
	int act[6], k = nact_of(c->op) * dirs_of(c);
	float alpha[6], beta[6];
	char list[160] = "";
	case_acts(c, act, alpha, beta);
	for (int i = 0; i < k; i++) {
		strcat(list, i ? "," : "");
		strcat(list, ir_rnn_acts[act[i]].name);
	}
	ir_set_s(m, n, "direction", c->direction);
	ir_set_s(m, n, "activations", list);
	ir_set_floats(m, n, "alphas", alpha, k);
	ir_set_floats(m, n, "betas", beta, k);
	ir_set_f(m, n, "clip", c->clip);
	if (c->op == IR_OP_LSTM)
		ir_set_i(m, n, "input_forget", c->flag);
	if (c->op == IR_OP_GRU)
		ir_set_i(m, n, "linear_before_reset", c->flag);
}

static struct ref_tensor tensor(enum ir_dtype t, int rank, const int64_t *dims, double lo,
                                double hi, uint64_t *seed)
{
	struct ref_tensor r = { .type = { .dtype = t, .rank = rank } };
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= r.type.dims[i] = dims[i];
	r.data = malloc(sizeof(float) * (size_t)n + 1);
	rand_fill(t, r.data, n, lo, hi, seed);
	return r;
}

static void check_rnn(struct rt_ctx *one, struct rt_ctx *three, const struct rnn_case *c,
                      uint64_t *seed)
{
	int64_t T = c->seq, B = c->batch, I = c->input, H = c->hidden, D = dirs_of(c);
	int64_t G = gates_of(c->op);
	bool lstm = c->op == IR_OP_LSTM;
	int nin = lstm ? 8 : 6, nout = lstm ? 3 : 2, act[6];
	float alpha[6], beta[6];
	struct rt_rnn_desc d = { .dtype = RT_F32,
		                 .cell = lstm                 ? RT_RNN_LSTM
		                         : c->op == IR_OP_GRU ? RT_RNN_GRU
		                                              : RT_RNN_RNN,
		                 .dirs = (int)D,
		                 .reverse = !strcmp(c->direction, "reverse"),
		                 .seq = T,
		                 .batch = B,
		                 .input = I,
		                 .hidden = H,
		                 .clip = c->clip,
		                 .input_forget = lstm && c->flag,
		                 .linear_before_reset = c->op == IR_OP_GRU && c->flag };
	const int64_t dims[8][3] = { { T, B, I },      { D, G * H, I }, { D, G * H, H },
		                     { D, 2 * G * H }, { B },           { D, B, H },
		                     { D, B, H },      { D, 3 * H } };
	const int ranks[8] = { 3, 3, 3, 2, 1, 3, 3, 2 };
	struct ref_tensor in[8], out[3];
	int64_t n[3] = { T * D * B * H, D * B * H, D * B * H };
	float *r1[3], *r3[3];
	size_t wsb = rt_rnn_workspace(&d);
	void *ws = malloc(wsb + 64);
	char what[200];
	double scale = 1 / sqrt((double)(H + I));
	case_acts(c, act, alpha, beta);
	for (int k = 0; k < D * nact_of(c->op); k++) {
		d.act[k / nact_of(c->op)][k % nact_of(c->op)] = act[k];
		d.alpha[k / nact_of(c->op)][k % nact_of(c->op)] = alpha[k];
		d.beta[k / nact_of(c->op)][k % nact_of(c->op)] = beta[k];
	}
	for (int i = 0; i < nin; i++) {
		double lim = i == 1 || i == 2 ? 2 * scale : 0.5;
		in[i] = tensor(i == 4 ? IR_I32 : IR_F32, ranks[i], dims[i], -lim, lim, seed);
	}
	for (int64_t b = 0; b < B; b++) /* mixed: 0, full, and between */
		((int32_t *)in[4].data)[b] = (int32_t)(!c->lengths  ? T
		                                       : b % 3 == 0 ? 0
		                                       : b % 3 == 1 ? T
		                                                    : (b * 7) % (T + 1));
	for (int k = 0; k < 3; k++) {
		r1[k] = malloc(sizeof(float) * (size_t)n[k] + 1);
		r3[k] = malloc(sizeof(float) * (size_t)n[k] + 1);
	}
	snprintf(what, sizeof what,
	         "%s t%lld b%lld i%lld h%lld %s acts %d,%d,%d clip %g flag %d lengths %d",
	         ir_ops[c->op].name, (long long)T, (long long)B, (long long)I, (long long)H,
	         c->direction, act[0], act[1], act[2], (double)c->clip, c->flag, c->lengths);
	CHECK_EQ(rt_rnn(one, &d, in[0].data, in[1].data, in[2].data, in[3].data, in[4].data,
	                in[5].data, lstm ? in[6].data : NULL, lstm ? in[7].data : NULL, r1[0],
	                r1[1], lstm ? r1[2] : NULL, ws),
	         RT_OK);
	CHECK_EQ(rt_rnn(three, &d, in[0].data, in[1].data, in[2].data, in[3].data, in[4].data,
	                in[5].data, lstm ? in[6].data : NULL, lstm ? in[7].data : NULL, r3[0],
	                r3[1], lstm ? r3[2] : NULL, ws),
	         RT_OK);
	for (int k = 0; k < nout; k++)
		if (memcmp(r1[k], r3[k], sizeof(float) * (size_t)n[k])) {
			fprintf(stderr, "%s: 1 and 3 threads differ (output %d)\n", what, k);
			CHECK(!"thread-count independent");
		}
	if (!ref_eval(c->op, set_rnn, (void *)c, in, nin, out, nout)) {
		fprintf(stderr, "%s\n", what);
		CHECK(!"reference evaluation");
	} else {
		for (int k = 0; k < nout; k++) {
			double e = rel_err(IR_F32, r1[k], out[k].data, n[k], 2e-4, 2e-5);
			CHECK_EQ(ir_type_elems(&out[k].type), n[k]);
			if (!(e <= 1)) {
				fprintf(stderr, "%s: error %g (output %d)\n", what, e, k);
				CHECK(!"matches the reference");
			}
			free(out[k].data);
		}
	}
	for (int i = 0; i < nin; i++)
		free(in[i].data);
	for (int k = 0; k < 3; k++) {
		free(r1[k]);
		free(r3[k]);
	}
	free(ws);
}

static void test_rnn(void)
{
	enum {
		S = IR_RNN_SIGMOID,
		TH = IR_RNN_TANH,
		R = IR_RNN_RELU,
		AF = IR_RNN_AFFINE,
		LR = IR_RNN_LEAKY_RELU,
		TR = IR_RNN_THRESHOLDED_RELU,
		ST = IR_RNN_SCALED_TANH,
		HS = IR_RNN_HARD_SIGMOID,
		E = IR_RNN_ELU,
		SS = IR_RNN_SOFTSIGN,
		SP = IR_RNN_SOFTPLUS
	};
	static const struct rnn_case cases[] = {
		{ IR_OP_LSTM, 5, 3, 4, 6, "forward", { 0 }, 0, 0, 0 },
		{ IR_OP_LSTM, 5, 3, 4, 6, "reverse", { 0 }, 0, 0, 1 },
		{ IR_OP_LSTM, 6, 17, 5, 8, "bidirectional", { 0 }, 0, 0, 1 },
		{ IR_OP_LSTM, 4, 2, 3, 5, "forward", { 0 }, 0, 1, 0 },
		{ IR_OP_LSTM, 4, 2, 3, 5, "bidirectional", { HS, SS, E, S, ST, SP }, 0.8f, 0, 1 },
		{ IR_OP_LSTM, 1, 1, 1, 1, "forward", { 0 }, 0, 0, 0 },
		{ IR_OP_LSTM, 0, 2, 3, 4, "bidirectional", { 0 }, 0, 0, 0 },
		{ IR_OP_LSTM, 7, 33, 40, 37, "bidirectional", { 0 }, 3.0f, 0, 1 },
		{ IR_OP_GRU, 5, 3, 4, 6, "forward", { 0 }, 0, 0, 0 },
		{ IR_OP_GRU, 5, 3, 4, 6, "forward", { 0 }, 0, 1, 1 },
		{ IR_OP_GRU, 6, 17, 5, 8, "bidirectional", { 0 }, 0, 1, 1 },
		{ IR_OP_GRU, 6, 18, 5, 8, "reverse", { 0 }, 0, 0, 1 },
		{ IR_OP_GRU, 4, 2, 3, 5, "bidirectional", { HS, LR, S, TR }, 0.5f, 0, 0 },
		{ IR_OP_GRU, 3, 2, 1, 1, "reverse", { AF, SS }, 0, 1, 0 },
		{ IR_OP_GRU, 7, 20, 33, 40, "bidirectional", { 0 }, 0, 0, 1 },
		{ IR_OP_RNN, 5, 3, 4, 6, "forward", { 0 }, 0, 0, 0 },
		{ IR_OP_RNN, 5, 3, 4, 6, "reverse", { R }, 0, 0, 1 },
		{ IR_OP_RNN, 6, 17, 5, 8, "bidirectional", { LR, E }, 0, 0, 1 },
		{ IR_OP_RNN, 4, 2, 3, 5, "bidirectional", { ST, SP }, 0.3f, 0, 0 },
		{ IR_OP_RNN, 4, 2, 3, 5, "forward", { AF }, 0, 0, 0 },
		{ IR_OP_RNN, 4, 2, 3, 5, "forward", { TR }, 0, 0, 1 },
		{ IR_OP_RNN, 1, 1, 1, 1, "reverse", { 0 }, 0, 0, 0 },
	};
	struct rt_ctx *one, *three;
	struct rt_rnn_desc bad = { .dtype = RT_F32,
		                   .cell = RT_RNN_RNN,
		                   .dirs = 1,
		                   .seq = 2,
		                   .batch = 2,
		                   .input = 2,
		                   .hidden = 2 };
	float x[64] = { 0 }, y[64], ws[256];
	int32_t lens[2] = { 2, 3 };
	uint64_t seed = 31;
	CHECK_EQ(rt_ctx_create(&one, 1), RT_OK);
	CHECK_EQ(rt_ctx_create(&three, 3), RT_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_rnn(one, three, &cases[i], &seed);
	/* a length past seq; then a half type, an unknown activation, a
	 * reverse second direction, an LSTM without its cell state */
	CHECK(rt_rnn_workspace(&bad) <= sizeof ws);
	CHECK_EQ(rt_rnn(one, &bad, x, x, x, x, lens, x, NULL, NULL, y, y + 8, NULL, ws),
	         RT_ERR_INDEX);
	lens[1] = 2;
	CHECK_EQ(rt_rnn(one, &bad, x, x, x, x, lens, x, NULL, NULL, y, y + 8, NULL, ws), RT_OK);
	bad.dtype = RT_F16;
	CHECK_EQ(rt_rnn(one, &bad, x, x, x, x, lens, x, NULL, NULL, y, y + 8, NULL, ws),
	         RT_ERR_ARGUMENT);
	bad.dtype = RT_F32;
	bad.act[0][0] = RT_RNN_ACT_COUNT;
	CHECK_EQ(rt_rnn(one, &bad, x, x, x, x, lens, x, NULL, NULL, y, y + 8, NULL, ws),
	         RT_ERR_ARGUMENT);
	bad.act[0][0] = RT_RNN_TANH;
	bad.dirs = 2;
	bad.reverse = 1;
	CHECK_EQ(rt_rnn(one, &bad, x, x, x, x, lens, x, NULL, NULL, y, y + 8, NULL, ws),
	         RT_ERR_ARGUMENT);
	bad.dirs = 1;
	bad.cell = RT_RNN_LSTM;
	CHECK_EQ(rt_rnn(one, &bad, x, x, x, x, lens, x, NULL, NULL, y, y + 8, NULL, ws),
	         RT_ERR_ARGUMENT);
	rt_ctx_destroy(one);
	rt_ctx_destroy(three);
}

TESTS(T(test_rnn))
