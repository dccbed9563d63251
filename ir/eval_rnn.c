/*
 * eval_rnn.c - the reference evaluator of lstm, gru and rnn: ONNX's
 * equations as written, one batch row, direction and step at a time, in
 * double.
 *
 * Gate k of hidden unit j reads row k * H + j of w and r. Per step t of
 * sequence b (t < sequence_lens[b]; a reverse direction visits the
 * sequence's own steps backwards, from its last):
 *   lstm  i = f(xWi + hRi + Pi c + Wbi + Rbi), f likewise (1 - i with
 *         input_forget), o = f(xWo + hRo + Po c' + ...) with the new cell
 *         c' = f c + i g(xWc + hRc + ...), and h' = o h(c')
 *   gru   z and r as lstm's i; h~ = g(xWh + (r h)Rh + Rbh + Wbh), or
 *         g(xWh + r (hRh + Rbh) + Wbh) with linear_before_reset; and
 *         h' = (1 - z) h~ + z h
 *   rnn   h' = f(xWi + hRi + Wbi + Rbi)
 * Each activation's argument is clipped to [-clip, clip] first when clip
 * is not 0 (ONNX Runtime's reading: the gates', not the cell's). y holds h'
 * at step t and zeros at the steps past the sequence's length; y_h (y_c)
 * the last h' (c'), the initial state for an empty sequence.
 */
#include "eval.h"

#include <math.h>

static double act(int a, double x, double al, double be)
{
	switch (a) {
	case IR_RNN_RELU: return x > 0 ? x : 0;
	case IR_RNN_TANH: return tanh(x);
	case IR_RNN_SIGMOID: return 1 / (1 + exp(-x));
	case IR_RNN_AFFINE: return al * x + be;
	case IR_RNN_LEAKY_RELU: return x >= 0 ? x : al * x;
	case IR_RNN_THRESHOLDED_RELU: return x > al ? x : 0;
	case IR_RNN_SCALED_TANH: return al * tanh(be * x);
	case IR_RNN_HARD_SIGMOID: return fmin(fmax(al * x + be, 0), 1);
	case IR_RNN_ELU: return x >= 0 ? x : al * (exp(x) - 1);
	case IR_RNN_SOFTSIGN: return x / (1 + fabs(x));
	case IR_RNN_SOFTPLUS: return log1p(exp(-fabs(x))) + fmax(x, 0);
	}
	ir_panic(__FILE__, __LINE__, "activation %d", a);
}

/* One node's operands and the direction being evaluated. */
struct rnn {
	struct fold *f;
	struct ir_rnn c;
	int op;
	int64_t T, B, I, H, G, d;
	double clip;
};

/* act number k of the direction, its argument clipped */
static double rnn_act(const struct rnn *r, int k, double x)
{
	if (r->clip > 0)
		x = fmin(fmax(x, -r->clip), r->clip);
	return act(r->c.act[r->d][k], x, r->c.alpha[r->d][k], r->c.beta[r->d][k]);
}

/* x_t W^T + Wb for gate k, unit j */
static double x_part(const struct rnn *r, int64_t t, int64_t b, int k, int64_t j)
{
	struct fold *f = r->f;
	int64_t row = r->d * r->G * r->H + k * r->H + j;
	double acc = getf(IN(3), r->d * 2 * r->G * r->H + k * r->H + j);
	for (int64_t i = 0; i < r->I; i++)
		acc += getf(IN(0), (t * r->B + b) * r->I + i) * getf(IN(1), row * r->I + i);
	return acc;
}

/* v R^T + Rb for gate k, unit j */
static double h_part(const struct rnn *r, const double *v, int k, int64_t j)
{
	struct fold *f = r->f;
	int64_t row = r->d * r->G * r->H + k * r->H + j;
	double acc = getf(IN(3), r->d * 2 * r->G * r->H + (r->G + k) * r->H + j);
	for (int64_t i = 0; i < r->H; i++)
		acc += v[i] * getf(IN(2), row * r->H + i);
	return acc;
}

/* One step: h (and c) from their previous values; g is scratch of 4H. */
static void rnn_step(const struct rnn *r, int64_t t, int64_t b, double *h, double *c, double *g)
{
	struct fold *f = r->f;
	int64_t H = r->H;
	if (r->op == IR_OP_LSTM) { /* gates i o f c */
		int64_t p0 = r->d * 3 * H;
		bool coupled = ir_attr_i(f->n, "input_forget") != 0;
		for (int64_t j = 0; j < H; j++) {
			double gi = x_part(r, t, b, 0, j) + h_part(r, h, 0, j) +
			            getf(IN(7), p0 + j) * c[j];
			double gf = x_part(r, t, b, 2, j) + h_part(r, h, 2, j) +
			            getf(IN(7), p0 + 2 * H + j) * c[j];
			double gc = x_part(r, t, b, 3, j) + h_part(r, h, 3, j);
			double i = rnn_act(r, 0, gi);
			double fg = coupled ? 1 - i : rnn_act(r, 0, gf);
			g[j] = fg * c[j] + i * rnn_act(r, 1, gc);              /* c' */
			g[H + j] = x_part(r, t, b, 1, j) + h_part(r, h, 1, j); /* o's */
		}
		for (int64_t j = 0; j < H; j++) {
			double o = rnn_act(r, 0, g[H + j] + getf(IN(7), p0 + H + j) * g[j]);
			c[j] = g[j];
			g[2 * H + j] = o * rnn_act(r, 2, g[j]);
		}
		memcpy(h, g + 2 * H, sizeof *h * (size_t)H);
	} else if (r->op == IR_OP_GRU) { /* gates z r h */
		bool lbr = ir_attr_i(f->n, "linear_before_reset") != 0;
		for (int64_t j = 0; j < H; j++) {
			g[j] = rnn_act(r, 0, x_part(r, t, b, 0, j) + h_part(r, h, 0, j));
			g[H + j] = rnn_act(r, 0, x_part(r, t, b, 1, j) + h_part(r, h, 1, j));
			g[2 * H + j] = g[H + j] * h[j]; /* r h */
		}
		for (int64_t j = 0; j < H; j++) {
			double hh =
			        lbr ? g[H + j] * h_part(r, h, 2, j) : h_part(r, g + 2 * H, 2, j);
			hh = rnn_act(r, 1, x_part(r, t, b, 2, j) + hh);
			g[3 * H + j] = (1 - g[j]) * hh + g[j] * h[j];
		}
		memcpy(h, g + 3 * H, sizeof *h * (size_t)H);
	} else {
		for (int64_t j = 0; j < H; j++)
			g[j] = rnn_act(r, 0, x_part(r, t, b, 0, j) + h_part(r, h, 0, j));
		memcpy(h, g, sizeof *h * (size_t)H);
	}
}

bool eval_rnn(struct fold *f)
{
	struct rnn r = { .f = f, .op = f->n->op };
	const int64_t *xd = IN(0)->type.dims;
	double *h, *c, *g;
	char err[160];
	if (!ir_rnn_cell(f->n, &r.c, err, sizeof err))
		FAIL("%s", err);
	r.T = xd[0], r.B = xd[1], r.I = xd[2], r.H = IN(2)->type.dims[2], r.G = r.c.gates;
	r.clip = ir_attr_f(f->n, "clip");
	for (int64_t b = 0; b < r.B; b++)
		if (geti(IN(4), b) < 0 || geti(IN(4), b) > r.T)
			FAIL("sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
			     (long long)geti(IN(4), b), (long long)r.T);
	h = eval_alloc(f, sizeof *h * (size_t)r.H);
	c = eval_alloc(f, sizeof *c * (size_t)r.H);
	g = eval_alloc(f, sizeof *g * (size_t)(4 * r.H));
	for (r.d = 0; r.d < r.c.dirs; r.d++)
		for (int64_t b = 0; b < r.B; b++) {
			int64_t len = geti(IN(4), b), s0 = (r.d * r.B + b) * r.H;
			bool back = r.d == 1 || r.c.reverse;
			for (int64_t j = 0; j < r.H; j++) {
				h[j] = getf(IN(5), s0 + j);
				c[j] = r.op == IR_OP_LSTM ? getf(IN(6), s0 + j) : 0;
			}
			for (int64_t s = 0; s < len; s++) {
				int64_t t = back ? len - 1 - s : s;
				rnn_step(&r, t, b, h, c, g);
				for (int64_t j = 0; j < r.H; j++)
					putf(f, 0, ((t * r.c.dirs + r.d) * r.B + b) * r.H + j,
					     h[j]);
			}
			/* y's steps past len stay the driver's zeros */
			for (int64_t j = 0; j < r.H; j++) {
				putf(f, 1, s0 + j, h[j]);
				if (r.op == IR_OP_LSTM)
					putf(f, 2, s0 + j, c[j]);
			}
		}
	eval_free(f, g);
	eval_free(f, c);
	eval_free(f, h);
	return true;
}
