/*
 * test_ir.c - unit tests of the IR: dtypes, the module data structure,
 * inference, folding, the verifier, the printer and the parser.
 */
#include "testutil.h"

#include "passes/passes.h"

#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* dtypes                                                                   */
/* ------------------------------------------------------------------------ */

static void test_f16_roundtrip(void)
{
	/* every binary16 bit pattern survives f16 -> f32 -> f16 (NaNs stay NaN) */
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = ir_f16_to_f32((uint16_t)h);
		uint16_t back = ir_f32_to_f16(f);
		if (f != f)
			bad += !((back & 0x7c00) == 0x7c00 && (back & 0x3ff));
		else
			bad += back != h;
	}
	CHECK_EQ(bad, 0);
}

static void test_f16_rounding(void)
{
	CHECK_EQ(ir_f32_to_f16(65504.0f), 0x7bff); /* largest finite */
	CHECK_EQ(ir_f32_to_f16(65520.0f), 0x7c00); /* rounds to inf */
	CHECK_EQ(ir_f32_to_f16(65519.0f), 0x7bff);
	CHECK_EQ(ir_f32_to_f16(5.9604645e-8f), 0x0001);      /* smallest subnormal */
	CHECK_EQ(ir_f32_to_f16(2.98e-8f), 0x0000);           /* below half of it */
	CHECK_EQ(ir_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie to even (down) */
	CHECK_EQ(ir_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02); /* tie to even (up) */
	CHECK_EQ(ir_f32_to_f16(-0.0f), 0x8000);
	CHECK(ir_f16_to_f32(0x3555) > 0.333f && ir_f16_to_f32(0x3555) < 0.3334f);
}

static void test_bf16(void)
{
	CHECK_EQ(ir_f32_to_bf16(1.0f), 0x3f80);
	CHECK_EQ(ir_f32_to_bf16(1.00390625f), 0x3f80); /* tie to even */
	CHECK_EQ(ir_f32_to_bf16(1.01171875f), 0x3f82); /* tie to even (up) */
	CHECK(ir_bf16_to_f32(ir_f32_to_bf16(3.0f)) == 3.0f);
	CHECK(isnan(ir_bf16_to_f32(ir_f32_to_bf16(NAN))));
	CHECK(isinf(ir_bf16_to_f32(ir_f32_to_bf16(INFINITY))));
}

static void test_minifloats(void)
{
	static const enum ir_dtype mf[] = { IR_F8E4M3FN,   IR_F8E4M3FNUZ, IR_F8E5M2,
		                            IR_F8E5M2FNUZ, IR_F8E8M0,     IR_F4E2M1 };
	for (size_t k = 0; k < sizeof mf / sizeof mf[0]; k++) {
		enum ir_dtype t = mf[k];
		int codes = 1 << ir_dtypes[t].bits, bad = 0, nans = 0;
		bool incl;
		double lim = ir_minifloat_overflow(t, &incl), below = nextafter(lim, 0);
		/* every code but NaN is a distinct value that encodes back to it */
		for (int b = 0; b < codes; b++) {
			double v = ir_minifloat_decode(t, (uint8_t)b);
			if (v != v) {
				nans++;
				continue;
			}
			bad += ir_minifloat_encode(t, v, false) != b;
			bad += isfinite(v) && ir_minifloat_encode(t, v, true) != b; /* inf: max */
			bad += fabs(v) > ir_minifloat(t)->max && !isinf(v);
		}
		CHECK_EQ(bad, 0);
		/* FN: two NaNs; FNUZ: one; e5m2: 6; e8m0: 1; f4e2m1: none */
		CHECK_EQ(nans, t == IR_F8E4M3FN ? 2 : t == IR_F8E5M2 ? 6 : t == IR_F4E2M1 ? 0 : 1);
		/* the saturate=0 bound: where encoding stops giving a finite value */
		if (t != IR_F4E2M1) {
			double at = ir_minifloat_decode(t, ir_minifloat_encode(t, lim, false));
			CHECK(incl ? !isfinite(at) : isfinite(at));
			CHECK(isfinite(ir_minifloat_decode(t,
			                                   ir_minifloat_encode(t, below, false))) ||
			      t == IR_F8E8M0);
			CHECK(!isfinite(
			        ir_minifloat_decode(t, ir_minifloat_encode(t, 2 * lim, false))));
		}
		CHECK_EQ(ir_minifloat_decode(t, ir_minifloat_encode(t, 1e30, true)),
		         ir_minifloat(t)->max);
	}
	/* values from ONNX 1.22's node tests (test_cast_*) */
	CHECK_EQ(ir_minifloat_encode(IR_F8E4M3FN, 0.4789254665374756, true), 0x2f);
	CHECK_EQ(ir_minifloat_encode(IR_F8E4M3FN, INFINITY, true), 0x7e);
	CHECK_EQ(ir_minifloat_encode(IR_F8E4M3FN, -INFINITY, false), 0xff);
	CHECK_EQ(ir_minifloat_encode(IR_F8E4M3FNUZ, -1e-7, true), 0x00); /* no -0 */
	CHECK_EQ(ir_minifloat_encode(IR_F8E4M3FNUZ, 1e6, false), 0x80);
	CHECK_EQ(ir_minifloat_encode(IR_F8E5M2, INFINITY, true), 0x7b);
	CHECK_EQ(ir_minifloat_encode(IR_F8E5M2, -INFINITY, false), 0xfc);
	CHECK_EQ(ir_minifloat_encode(IR_F8E5M2, -1e-7, true), 0x80);
	CHECK_EQ(ir_minifloat_encode(IR_F4E2M1, 0.25, true), 0x0); /* tie to even */
	CHECK_EQ(ir_minifloat_encode(IR_F4E2M1, -3.5, true), 0xe); /* tie to even: -4 */
	CHECK_EQ(ir_minifloat_encode(IR_F4E2M1, NAN, true), 0x8);  /* as the reference */
	CHECK_EQ(ir_minifloat_encode(IR_F4E2M1, INFINITY, false), 0x7);
	CHECK_EQ(ir_minifloat_encode(IR_F8E8M0, 0, true), 0x00);     /* 2^-127 */
	CHECK_EQ(ir_minifloat_encode(IR_F8E8M0, 0.124, true), 0x7c); /* up: 2^-3 */
	CHECK_EQ(ir_minifloat_encode(IR_F8E8M0, 1.1, true), 0x80);
	CHECK_EQ(ir_minifloat_encode(IR_F8E8M0, 2, true), 0x80);
	CHECK_EQ(ir_minifloat_encode(IR_F8E8M0, -1, true), 0xff);
	CHECK(ir_minifloat_decode(IR_F8E8M0, 0) == 0x1p-127);
	/* the ties at the top: e4m3fn's max 448 is even, e4m3fnuz's 240 odd */
	CHECK_EQ(ir_minifloat_encode(IR_F8E4M3FN, 464, false), 0x7e);
	CHECK_EQ(ir_minifloat_encode(IR_F8E4M3FNUZ, 248, false), 0x80);
	CHECK_EQ(ir_minifloat_encode(IR_F8E4M3FNUZ, 247.9, false), 0x7f);
	/* the sub-byte integers wrap, as ONNX's reference casts */
	CHECK_EQ(ir_wrap_narrow_int(IR_I4, 8), -8);
	CHECK_EQ(ir_wrap_narrow_int(IR_I4, -9), 7);
	CHECK_EQ(ir_wrap_narrow_int(IR_U2, -3), 1);
	CHECK_EQ(ir_wrap_narrow_int(IR_I2, 2), -2);
	{
		uint8_t b[2];
		ir_store_f64(IR_I4, b, 0, -9.5); /* truncated, then wrapped */
		CHECK_EQ(ir_load_i64(IR_I4, b, 0), 7);
		ir_store_i64(IR_U4, b, 1, 17);
		CHECK_EQ(ir_load_f64(IR_U4, b, 1), 1.0);
	}
}

static void test_dtype_tables(void)
{
	for (int t = 1; t < IR_DTYPE_COUNT; t++) {
		const char *n = ir_dtype_name((enum ir_dtype)t);
		CHECK_EQ(ir_dtype_from_name(n, strlen(n)), t);
		CHECK_EQ(ir_dtype_from_onnx(ir_dtypes[t].onnx), t);
	}
	CHECK_EQ(ir_dtype_from_onnx(8), IR_DT_NONE); /* STRING */
	CHECK(!strcmp(ir_onnx_dtype_name(8), "STRING"));
	{
		int64_t v;
		unsigned char buf[8];
		ir_store_i64(IR_I64, buf, 0, INT64_MAX);
		v = ir_load_i64(IR_I64, buf, 0);
		CHECK(v == INT64_MAX);
		ir_store_f64(IR_I32, buf, 0, -3.9);
		CHECK_EQ(ir_load_i64(IR_I32, buf, 0), -3); /* truncation */
	}
}

static void test_broadcast(void)
{
	struct ir_type a = { IR_F32, 3, { 2, 1, 4 } }, b = { IR_F32, 2, { 3, 1 } }, o;
	CHECK(ir_broadcast(&a, &b, &o));
	CHECK_EQ(o.rank, 3);
	CHECK(o.dims[0] == 2 && o.dims[1] == 3 && o.dims[2] == 4);
	b.dims[1] = 5;
	CHECK(!ir_broadcast(&a, &b, &o));
	{
		struct ir_type big = { IR_F32, 3, { INT64_MAX / 2, 4, 1 } };
		CHECK_EQ(ir_type_elems(&big), -1);
	}
}

/* ------------------------------------------------------------------------ */
/* Module                                                                   */
/* ------------------------------------------------------------------------ */

static struct ir_type ty(enum ir_dtype dt, int rank, const int64_t *dims)
{
	struct ir_type t = { .dtype = dt, .rank = rank };
	if (rank)
		memcpy(t.dims, dims, sizeof *dims * (size_t)rank);
	return t;
}

/* ir_checksum is XXH64 with seed 0: the reference library's values (and the
 * spec's "Nobody inspects ..." example) for every path - tails of 1, 4 and
 * 8 bytes, 32-byte stripes. */
static void test_checksum(void)
{
	static const struct {
		size_t len;
		uint64_t h;
	} want[] = { { 0, 0xef46db3751d8e999ull },   { 1, 0x1f25c8d0bc1f4bb6ull },
		     { 5, 0xc7608efddb7051feull },   { 8, 0xdab99d95c6f90092ull },
		     { 9, 0x170bb6bf975b4c02ull },   { 31, 0xa2aa5f33cc4a6119ull },
		     { 32, 0x23c3c17ef790fd97ull },  { 33, 0x50a7cfc7ba588784ull },
		     { 100, 0xa61f8d4c170fe531ull }, { 300, 0x240004dbee0ba6dcull } };
	const char *s = "Nobody inspects the spammish repetition";
	unsigned char buf[300];
	for (int i = 0; i < 300; i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
		CHECK(ir_checksum(buf, want[k].len) == want[k].h);
	CHECK(ir_checksum(s, strlen(s)) == 0xfbcea83c8a378bf1ull);
	CHECK(ir_checksum("abc", 3) == 0x44bc2cf5ad770999ull);
}

static void test_module_basics(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_type t = ty(IR_F32, 2, (int64_t[]){ 2, 3 });
	struct ir_value *x, *y;
	struct ir_node *n;
	char err[256];

	ctx_collect(&ctx, &d);
	m = ir_module_new(&ctx, "t");
	x = ir_add_input(m, "x", &t);
	y = ir_add_input(m, "y", &t);
	CHECK(ir_find_value(m, "x") == x);
	CHECK(ir_find_value(m, "nope") == NULL);
	CHECK(!strcmp(ir_unique_name(m, "x"), "x.1"));
	n = ir_add_node(m, IR_OP_ADD, "add0", (struct ir_value *[]){ x, y }, 2,
	                (const char *[]){ "s" }, 1);
	CHECK(ir_infer_node(m, n, err, sizeof err));
	CHECK(ir_type_eq(&n->out[0]->type, &t));
	CHECK_EQ(x->nuses, 1);
	ir_add_output(m, n->out[0]);
	CHECK_EQ(ir_verify(m), 0);
	/* replace a use and check use lists follow */
	ir_set_input(m, n, 1, x);
	CHECK_EQ(x->nuses, 2);
	CHECK_EQ(y->nuses, 0);
	CHECK_EQ(ir_verify(m), 0);
	/* many values force the name table to grow */
	for (int i = 0; i < 1000; i++) {
		char name[32];
		snprintf(name, sizeof name, "c%d", i);
		ir_add_const(m, name, &t, NULL);
	}
	CHECK(ir_find_value(m, "c999") != NULL);
	CHECK_EQ(ir_verify(m), 0);
	CHECK_EQ(ctx.nerrors, 0);
	ir_module_free(m);
}

static void test_verify_catches(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_type t = ty(IR_F32, 1, (int64_t[]){ 4 });
	struct ir_value *x;
	struct ir_node *n;
	char err[256];

	ctx_collect(&ctx, &d);
	m = ir_module_new(&ctx, "t");
	x = ir_add_input(m, "x", &t);
	n = ir_add_node(m, IR_OP_RELU, "r", &x, 1, (const char *[]){ "r" }, 1);
	CHECK(ir_infer_node(m, n, err, sizeof err));
	ir_add_output(m, n->out[0]);
	CHECK_EQ(ir_verify(m), 0);
	/* a result whose declared type disagrees with inference */
	n->out[0]->type.dims[0] = 5;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "inference gives f32[4]");
	n->out[0]->type.dims[0] = 4;
	/* a stale use list */
	x->nuses = 0;
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "missing from its use list");
	x->nuses = 1;
	/* a constant whose bytes changed behind its checksum */
	{
		float v[4] = { 1, 2, 3, 4 };
		struct ir_value *c = ir_add_const(m, "c", &t, v);
		((float *)c->data)[0] = 9;
		d.len = 0;
		CHECK(ir_verify(m) > 0);
		CHECK_STR(d.text, "does not match its checksum");
	}
	ir_module_free(m);
}

/* Guards (docs/ir.md, Guards): a valid nested module, each violation the
 * verifier must catch, and the reference evaluator taking each branch. */
static struct ir_node *node1(struct ir_module *m, enum ir_op op, const char *name,
                             struct ir_value *const *in, int nin, struct ir_value *guard)
{
	char err[256];
	struct ir_node *n = ir_add_node(m, op, name, in, nin, (const char *[]){ name }, 1);
	if (guard)
		ir_set_guard(m, n, guard);
	CHECK(ir_infer_node(m, n, err, sizeof err));
	return n;
}

/* test_verify_guards' module evaluated with conditions k (then freed). */
static void eval_branches(struct ir_module *mm, int k)
{
	static const bool conds[3][2] = { { 1, 1 }, { 1, 0 }, { 0, 1 } };
	static const float want[3][2] = { { -0.0f, -2 }, { 0, 2 }, { 1, 2 } };
	const float xv[2] = { -1, 2 };
	char err[256];
	CHECK(ir_input_to_const(mm, ir_find_value(mm, "x"), xv));
	CHECK(ir_input_to_const(mm, ir_find_value(mm, "c1"), &conds[k][0]));
	CHECK(ir_input_to_const(mm, ir_find_value(mm, "c2"), &conds[k][1]));
	CHECK(ir_fold_all(mm, err, sizeof err) >= 0);
	CHECK(mm->outputs[0]->kind == IR_VAL_CONST && mm->outputs[0]->data);
	if (mm->outputs[0]->data)
		for (int i = 0; i < 2; i++)
			CHECK(((const float *)mm->outputs[0]->data)[i] == want[k][i]);
	ir_module_free(mm);
}

/* A run-time loop (docs/ir.md, Loops): m iterations of v, u <- (flip ? v/2
 * : v + u), v (carried values that swap), under a nested If whose guards
 * read the token; the iteration count comes out too. */
static const char loop_text[] =
        "onnxc-ir 1\nmodule \"loops\"\ninput %x : f32[2]\ninput %m : i64[]\n"
        "input %flip : bool[]\nconst %zero : i64[] = [0]\nconst %one : i64[] = [1]\n"
        "const %half : f32[] = [0.5]\n%go : bool[] = less(%zero, %m) @l\n"
        "%t : bool[] = loop(%go) @l\n%i : i64[] = carry(%zero) if %t @l\n"
        "%v : f32[2] = carry(%x) if %t @l\n%u : f32[2] = carry(%x) if %t @l\n"
        "%g : bool[] = and(%t, %flip) if %t @l/if\n"
        "%a : f32[2] = mul(%v, %half) if %g @l/if/then/a\n"
        "%nf : bool[] = not(%flip) if %t @l/if\n%ge : bool[] = and(%t, %nf) if %t @l/if\n"
        "%b : f32[2] = add(%v, %u) if %ge @l/if/else/b\n"
        "%p : f32[2] = phi(%flip, %a, %b) if %t @l/if\n"
        "%i1 : i64[] = add(%i, %one) if %t @l\n%c : bool[] = less(%i1, %m) if %t @l\n"
        "%n : i64[], %vf : f32[2], %uf : f32[2] = loop_end(%t, %c, %i, %v, %u, %i1, %p, %v) "
        "@l\noutput %vf\noutput %uf\noutput %n\n";

/* The loop module evaluated for m iterations (ir_fold_all peels them). */
static void eval_loop(int64_t m, bool flip)
{
	struct ir_ctx c;
	struct ir_module *mm;
	const float x[2] = { 1, 2 };
	double v[2] = { 1, 2 }, u[2] = { 1, 2 };
	char err[256];
	ir_ctx_init(&c);
	mm = ir_parse(&c, loop_text, sizeof loop_text - 1);
	CHECK(mm != NULL);
	if (!mm)
		return;
	CHECK(ir_input_to_const(mm, ir_find_value(mm, "x"), x));
	CHECK(ir_input_to_const(mm, ir_find_value(mm, "m"), &m));
	CHECK(ir_input_to_const(mm, ir_find_value(mm, "flip"), &flip));
	/* left: the nodes of the branches the iterations did not take */
	CHECK(ir_fold_all(mm, err, sizeof err) >= 0);
	CHECK_EQ(ir_verify(mm), 0);
	for (int64_t k = 0; k < m; k++)
		for (int e = 0; e < 2; e++) {
			double nv = flip ? v[e] * 0.5 : v[e] + u[e];
			u[e] = v[e];
			v[e] = nv;
		}
	for (int o = 0; o < 3; o++)
		CHECK(mm->outputs[o]->kind == IR_VAL_CONST && mm->outputs[o]->data);
	if (mm->outputs[2]->data) {
		const float *vf = mm->outputs[0]->data, *uf = mm->outputs[1]->data;
		for (int e = 0; e < 2; e++) {
			CHECK(vf[e] == (float)v[e]);
			CHECK(uf[e] == (float)u[e]);
		}
		CHECK_EQ(*(const int64_t *)mm->outputs[2]->data, m);
	}
	IR_FOR_EACH_NODE(mm, n)
	CHECK(n->op != IR_OP_LOOP && n->op != IR_OP_CARRY && n->op != IR_OP_LOOP_END);
	ir_module_free(mm);
}

static void test_verify_loops(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_node *a, *end, *bad;
	ctx_collect(&ctx, &d);
	m = ir_parse(&ctx, loop_text, sizeof loop_text - 1);
	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ(ir_verify(m), 0);
	/* print -> parse -> print */
	{
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		ir_print(m, f);
		fclose(f);
		CHECK(len == sizeof loop_text - 1 && !memcmp(text, loop_text, len));
		free(text);
	}
	end = ir_find_value(m, "vf")->def;
	/* a body node after its loop_end */
	a = ir_add_node(m, IR_OP_NEG, "late", (struct ir_value *[]){ ir_find_value(m, "v") }, 1,
	                (const char *[]){ "late" }, 1);
	CHECK(ir_infer_node(m, a, NULL, 0));
	ir_set_guard(m, a, ir_find_value(m, "t"));
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "node 'late' (neg): is in the body of loop 't' but comes after its "
	                  "loop_end");
	ir_move_before(m, a, end);
	CHECK_EQ(ir_verify(m), 0);
	ir_remove_node(m, a);
	/* the token read outside its body */
	bad = ir_add_node(m, IR_OP_NOT, "bad", (struct ir_value *[]){ ir_find_value(m, "t") }, 1,
	                  (const char *[]){ "nt" }, 1);
	CHECK(ir_infer_node(m, bad, NULL, 0));
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "its token 't' is read by node 'bad' (not), which is neither in its body "
	                  "nor its one loop_end");
	ir_remove_node(m, bad);
	/* a carried value under a guard other than its token */
	ir_set_guard(m, ir_find_value(m, "u")->def, ir_find_value(m, "go"));
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "a carried value must be guarded by its loop's token, not 'go'");
	ir_set_guard(m, ir_find_value(m, "u")->def, ir_find_value(m, "t"));
	/* a loop_end listing a value that is not a carried value */
	ir_set_input(m, end, 4, ir_find_value(m, "p"));
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "input 4 'p' is not a carried value of its loop");
	ir_set_input(m, end, 4, ir_find_value(m, "u"));
	CHECK_EQ(ir_verify(m), 0);
	ir_module_free(m);
	/* a loop without its loop_end */
	{
		static const char text[] = "onnxc-ir 1\nmodule \"t\"\ninput %c : bool[]\n"
		                           "input %x : f32[2]\n%t : bool[] = loop(%c) @l\n"
		                           "%y : f32[2] = neg(%x) if %t @l\noutput %x\n";
		d.len = 0;
		CHECK(ir_parse(&ctx, text, sizeof text - 1) == NULL);
		CHECK_STR(d.text, "node 'l' (loop): has no loop_end");
	}
	/* the reference evaluator runs it: none, one and several iterations */
	eval_loop(0, false);
	eval_loop(1, true);
	eval_loop(3, false);
	eval_loop(6, true);
}

static void test_verify_guards(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_type t = ty(IR_F32, 1, (int64_t[]){ 2 }), b = ty(IR_BOOL, 0, NULL);
	struct ir_value *x, *c1, *c2, *g2, *nc1;
	struct ir_node *r, *z, *e, *phi, *phi2, *bad;

	ctx_collect(&ctx, &d);
	m = ir_module_new(&ctx, "t");
	x = ir_add_input(m, "x", &t);
	c1 = ir_add_input(m, "c1", &b);
	c2 = ir_add_input(m, "c2", &b);
	r = node1(m, IR_OP_RELU, "r", &x, 1, c1); /* then */
	g2 = node1(m, IR_OP_AND, "g2", (struct ir_value *[]){ c1, c2 }, 2, c1)->out[0];
	z = node1(m, IR_OP_NEG, "z", &r->out[0], 1, g2); /* nested */
	phi2 = node1(m, IR_OP_PHI, "p2", (struct ir_value *[]){ c2, z->out[0], r->out[0] }, 3, c1);
	nc1 = node1(m, IR_OP_NOT, "nc1", &c1, 1, NULL)->out[0];
	e = node1(m, IR_OP_ABS, "e", &x, 1, nc1); /* else */
	phi = node1(m, IR_OP_PHI, "p", (struct ir_value *[]){ c1, phi2->out[0], e->out[0] }, 3,
	            NULL);
	ir_add_output(m, phi->out[0]);
	CHECK_EQ(ir_verify(m), 0);
	/* the text form carries the guards and reads them back */
	{
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		struct ir_module *back;
		ir_print(m, f);
		fclose(f);
		CHECK_STR(text, "%z : f32[2] = neg(%r) if %g2 @z");
		back = ir_parse(&ctx, text, len);
		CHECK(back != NULL);
		if (back) {
			CHECK(ir_find_value(back, "z")->def->guard == ir_find_value(back, "g2"));
			ir_module_free(back);
		}
		free(text);
	}
	/* an unguarded node reading a guarded result */
	bad = node1(m, IR_OP_SIGMOID, "bad", &z->out[0], 1, NULL);
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "input 0 'z' is a result of a node guarded by 'g2', read under guard "
	                  "'(none)'");
	/* ... under a weaker guard (the outer one): still wrong */
	ir_set_guard(m, bad, c1);
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "read under guard 'c1', which does not imply it");
	/* ... under the other branch's guard */
	ir_set_guard(m, bad, nc1);
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "read under guard 'nc1'");
	/* under the same guard: fine */
	ir_set_guard(m, bad, g2);
	CHECK_EQ(ir_verify(m), 0);
	ir_remove_node(m, bad);
	/* a guard that is not a one-element bool */
	ir_set_guard(m, e, x);
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "guard 'x' is f32[2], not a bool of one element");
	ir_set_guard(m, e, nc1);
	/* a guard defined after the node */
	ir_move_before(m, nc1->def, phi);
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "guard 'nc1' is used before it is defined");
	ir_move_before(m, nc1->def, e);
	/* a stale guard use */
	e->guard_use_at = 7;
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "guard 'nc1' is missing from its use list");
	e->guard_use_at = 0;
	CHECK_EQ(ir_verify(m), 0);
	/* a graph output that is a guarded result */
	ir_add_output(m, e->out[0]);
	d.len = 0;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "graph output 'e' is a result of node 'e', guarded by 'nc1'");
	m->noutputs--;
	CHECK_EQ(ir_verify(m), 0);
	/* the reference evaluator takes each branch: x = [-1, 2], on the
	 * module printed and parsed back, and on ir_module_clone's copy (ids,
	 * names, guards kept; the original untouched by evaluating it) */
	for (int k = 0; k < 3; k++) {
		struct ir_ctx c;
		struct ir_module *mm;
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		ir_print(m, f);
		fclose(f);
		ir_ctx_init(&c);
		mm = ir_parse(&c, text, len);
		free(text);
		CHECK(mm != NULL);
		if (mm)
			eval_branches(mm, k);
	}
	for (int k = 0; k < 3; k++) {
		struct ir_module *mm = ir_module_clone(m);
		const struct ir_node *p = m->first, *q = mm->first;
		CHECK_EQ(mm->nvalues, m->nvalues);
		CHECK_EQ(mm->nnodes, m->nnodes);
		for (; p && q; p = p->next, q = q->next) {
			CHECK_EQ(p->id, q->id);
			CHECK_STR(p->name, q->name);
			CHECK(!p->guard == !q->guard);
			CHECK(!p->guard || p->guard->id == q->guard->id);
			for (int i = 0; i < p->nin; i++)
				CHECK(q->in[i] == mm->values[p->in[i]->id]);
		}
		CHECK(!p && !q);
		CHECK_EQ(ir_verify(mm), 0);
		eval_branches(mm, k);
		CHECK(m->outputs[0]->kind == IR_VAL_NODE && m->ninputs == 3);
		CHECK_EQ(ir_verify(m), 0);
	}
	ir_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Inference                                                                */
/* ------------------------------------------------------------------------ */

/* Builds a one-node module and runs inference; returns the result types. */
static bool infer1(enum ir_op op, const struct ir_type *in, int nin, int nout,
                   void (*set)(struct ir_module *, struct ir_node *), struct ir_type *out,
                   char *err, size_t errlen)
{
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_value *v[8];
	struct ir_node *n;
	bool ok;
	ir_ctx_init(&ctx);
	m = ir_module_new(&ctx, "t");
	for (int i = 0; i < nin; i++) {
		char name[16];
		snprintf(name, sizeof name, "i%d", i);
		v[i] = ir_add_input(m, name, &in[i]);
	}
	n = ir_add_node(m, op, "n", v, nin, NULL, nout);
	if (set)
		set(m, n);
	ok = ir_infer_node(m, n, err, errlen);
	for (int i = 0; ok && i < nout; i++)
		out[i] = n->out[i]->type;
	ir_module_free(m);
	return ok;
}

static void conv_attrs(struct ir_module *m, struct ir_node *n)
{
	ir_set_ints(m, n, "strides", (int64_t[]){ 2, 2 }, 2);
	ir_set_ints(m, n, "pads", (int64_t[]){ 3, 3, 3, 3 }, 4);
	ir_set_ints(m, n, "dilations", (int64_t[]){ 1, 1 }, 2);
	ir_set_i(m, n, "group", 1);
}

static void conv_group3(struct ir_module *m, struct ir_node *n)
{
	conv_attrs(m, n);
	ir_set_i(m, n, "group", 3);
}

static void pool_ceil(struct ir_module *m, struct ir_node *n)
{
	ir_set_ints(m, n, "kernel", (int64_t[]){ 3, 3 }, 2);
	ir_set_ints(m, n, "strides", (int64_t[]){ 2, 2 }, 2);
	ir_set_ints(m, n, "pads", (int64_t[]){ 0, 0, 0, 0 }, 4);
	ir_set_ints(m, n, "dilations", (int64_t[]){ 1, 1 }, 2);
	ir_set_i(m, n, "ceil_mode", 1);
}

static void slice_rev(struct ir_module *m, struct ir_node *n)
{
	ir_set_ints(m, n, "starts", (int64_t[]){ 9 }, 1);
	ir_set_ints(m, n, "ends", (int64_t[]){ -1 }, 1);
	ir_set_ints(m, n, "steps", (int64_t[]){ -3 }, 1);
}

static void test_infer(void)
{
	struct ir_type out[2];
	char err[256];
	/* matmul: vector promotion and batch broadcasting */
	struct ir_type mm[2] = { ty(IR_F32, 3, (int64_t[]){ 5, 2, 3 }),
		                 ty(IR_F32, 1, (int64_t[]){ 3 }) };
	CHECK(infer1(IR_OP_MATMUL, mm, 2, 1, NULL, out, err, sizeof err));
	CHECK(out[0].rank == 2 && out[0].dims[0] == 5 && out[0].dims[1] == 2);
	mm[1] = ty(IR_F32, 3, (int64_t[]){ 1, 4, 7 });
	CHECK(!infer1(IR_OP_MATMUL, mm, 2, 1, NULL, out, err, sizeof err));
	CHECK_STR(err, "inner dimensions differ");
	/* conv: ResNet's first layer */
	struct ir_type cv[2] = { ty(IR_F32, 4, (int64_t[]){ 1, 3, 224, 224 }),
		                 ty(IR_F32, 4, (int64_t[]){ 64, 3, 7, 7 }) };
	CHECK(infer1(IR_OP_CONV, cv, 2, 1, conv_attrs, out, err, sizeof err));
	CHECK(out[0].dims[1] == 64 && out[0].dims[2] == 112 && out[0].dims[3] == 112);
	CHECK(!infer1(IR_OP_CONV, cv, 2, 1, conv_group3, out, err, sizeof err));
	CHECK_STR(err, "group 3 does not divide");
	/* max pool with ceil_mode: 6 -> 3 with k3 s2 (the last window starts inside) */
	struct ir_type pl = ty(IR_F32, 4, (int64_t[]){ 1, 1, 6, 6 });
	CHECK(infer1(IR_OP_MAX_POOL, &pl, 1, 1, pool_ceil, out, err, sizeof err));
	CHECK_EQ(out[0].dims[2], 3);
	/* reverse slice 9,6,3,0 */
	struct ir_type sl = ty(IR_F32, 1, (int64_t[]){ 10 });
	CHECK(infer1(IR_OP_SLICE, &sl, 1, 1, slice_rev, out, err, sizeof err));
	CHECK_EQ(out[0].dims[0], 4);
	/* where broadcasting three ways */
	struct ir_type wh[3] = { ty(IR_BOOL, 2, (int64_t[]){ 4, 1 }),
		                 ty(IR_F32, 1, (int64_t[]){ 5 }), ty(IR_F32, 0, NULL) };
	CHECK(infer1(IR_OP_WHERE, wh, 3, 1, NULL, out, err, sizeof err));
	CHECK(out[0].rank == 2 && out[0].dims[0] == 4 && out[0].dims[1] == 5);
	/* dtype checks */
	struct ir_type bad[2] = { ty(IR_F32, 1, (int64_t[]){ 2 }),
		                  ty(IR_I64, 1, (int64_t[]){ 2 }) };
	CHECK(!infer1(IR_OP_ADD, bad, 2, 1, NULL, out, err, sizeof err));
	CHECK_STR(err, "input 0 is f32 but input 1 is i64");
	CHECK(!infer1(IR_OP_EXP, &bad[1], 1, 1, NULL, out, err, sizeof err));
	CHECK_STR(err, "needs a float type");
}

/* ------------------------------------------------------------------------ */
/* Folding                                                                  */
/* ------------------------------------------------------------------------ */

struct fold_case {
	struct ir_ctx ctx;
	struct ir_module *m;
};

static struct ir_node *fold_node(struct fold_case *fc, enum ir_op op, struct ir_value **in, int nin,
                                 int nout)
{
	char err[256];
	struct ir_node *n = ir_add_node(fc->m, op, "n", in, nin, NULL, nout);
	(void)err;
	return n;
}

static void test_fold(void)
{
	struct fold_case fc;
	char err[256];
	ir_ctx_init(&fc.ctx);
	fc.m = ir_module_new(&fc.ctx, "t");
	struct ir_module *m = fc.m;
	/* int64 arithmetic never passes through double */
	{
		int64_t a[2] = { INT64_MAX, 7 }, b[2] = { 0, -2 };
		struct ir_type t = ty(IR_I64, 1, (int64_t[]){ 2 });
		struct ir_value *in[2] = { ir_add_const(m, "a", &t, a),
			                   ir_add_const(m, "b", &t, b) };
		struct ir_node *n = fold_node(&fc, IR_OP_ADD, in, 2, 1);
		struct ir_value *r = n->out[0];
		CHECK(ir_infer_node(m, n, err, sizeof err));
		CHECK_EQ(ir_fold_node(m, n, 1 << 20, err, sizeof err), 1);
		CHECK(r->kind == IR_VAL_CONST);
		CHECK(((int64_t *)r->data)[0] == INT64_MAX);
		CHECK_EQ(((int64_t *)r->data)[1], 5);
	}
	/* integer division truncates toward zero; division by zero is an error */
	{
		int64_t a[2] = { -7, 7 }, b[2] = { 2, 0 };
		struct ir_type t = ty(IR_I64, 1, (int64_t[]){ 2 });
		struct ir_value *in[2] = { ir_add_const(m, "da", &t, a),
			                   ir_add_const(m, "db", &t, b) };
		struct ir_node *n = fold_node(&fc, IR_OP_DIV, in, 2, 1);
		CHECK(ir_infer_node(m, n, err, sizeof err));
		CHECK_EQ(ir_fold_node(m, n, 1 << 20, err, sizeof err), -1);
		CHECK_STR(err, "division by zero");
		ir_remove_node(m, n);
	}
	/* gather with a negative index, and one out of range */
	{
		float data[6] = { 0, 1, 2, 3, 4, 5 };
		int64_t idx[2] = { -1, 0 }, bad[1] = { 3 };
		struct ir_type td = ty(IR_F32, 2, (int64_t[]){ 3, 2 });
		struct ir_type ti = ty(IR_I64, 1, (int64_t[]){ 2 }),
		               tb = ty(IR_I64, 1, (int64_t[]){ 1 });
		struct ir_value *d = ir_add_const(m, "g", &td, data);
		struct ir_value *in[2] = { d, ir_add_const(m, "gi", &ti, idx) };
		struct ir_node *n = fold_node(&fc, IR_OP_GATHER, in, 2, 1);
		struct ir_value *r = n->out[0];
		ir_set_i(m, n, "axis", 0);
		CHECK(ir_infer_node(m, n, err, sizeof err));
		CHECK_EQ(ir_fold_node(m, n, 1 << 20, err, sizeof err), 1);
		CHECK(((float *)r->data)[0] == 4 && ((float *)r->data)[1] == 5 &&
		      ((float *)r->data)[2] == 0);
		in[1] = ir_add_const(m, "gb", &tb, bad);
		n = fold_node(&fc, IR_OP_GATHER, in, 2, 1);
		ir_set_i(m, n, "axis", 0);
		CHECK(ir_infer_node(m, n, err, sizeof err));
		CHECK_EQ(ir_fold_node(m, n, 1 << 20, err, sizeof err), -1);
		CHECK_STR(err, "index 3 is out of range");
		ir_remove_node(m, n);
	}
	/* transpose + slice with a negative step */
	{
		int32_t data[6] = { 0, 1, 2, 3, 4, 5 };
		struct ir_type t = ty(IR_I32, 2, (int64_t[]){ 2, 3 });
		struct ir_value *c = ir_add_const(m, "tc", &t, data);
		struct ir_node *n = fold_node(&fc, IR_OP_TRANSPOSE, &c, 1, 1);
		struct ir_value *r;
		ir_set_ints(m, n, "perm", (int64_t[]){ 1, 0 }, 2);
		CHECK(ir_infer_node(m, n, err, sizeof err));
		CHECK_EQ(ir_fold_node(m, n, 1 << 20, err, sizeof err), 1);
		r = n->out[0];
		CHECK(((int32_t *)r->data)[1] == 3 && ((int32_t *)r->data)[2] == 1);
		n = fold_node(&fc, IR_OP_SLICE, &r, 1, 1);
		ir_set_ints(m, n, "starts", (int64_t[]){ 2, 1 }, 2);
		ir_set_ints(m, n, "ends", (int64_t[]){ -1, 2 }, 2);
		ir_set_ints(m, n, "steps", (int64_t[]){ -2, 1 }, 2);
		CHECK(ir_infer_node(m, n, err, sizeof err));
		CHECK(n->out[0]->type.dims[0] == 2 && n->out[0]->type.dims[1] == 1);
		r = n->out[0];
		CHECK_EQ(ir_fold_node(m, n, 1 << 20, err, sizeof err), 1);
		CHECK(((int32_t *)r->data)[0] == 5 && ((int32_t *)r->data)[1] == 3);
	}
	/*
	 * dropout draws docs/ir.md#dropout's stream: which of 64 elements seed
	 * 12345 and salt 3 keep at ratio 0.25, bit i for element i, as
	 * tests/train/models.py computes it from the document; kept elements
	 * are scaled by 4/3, and an infinite one dropped is NaN (inf * 0)
	 */
	{
		const uint64_t kept = 0xd999b1b7d7dfee5full;
		float x[64];
		int64_t seed = 12345;
		int wrong = 0, inf_at = 0;
		while (kept >> inf_at & 1)
			inf_at++;
		for (int i = 0; i < 64; i++)
			x[i] = i == inf_at ? INFINITY : 1.5f;
		struct ir_type tx = ty(IR_F32, 2, (int64_t[]){ 8, 8 }), ts = ty(IR_I64, 0, NULL);
		struct ir_value *in[2] = { ir_add_const(m, "dx", &tx, x),
			                   ir_add_const(m, "dseed", &ts, &seed) };
		struct ir_node *n = fold_node(&fc, IR_OP_DROPOUT, in, 2, 1);
		struct ir_value *r = n->out[0];
		ir_set_f(m, n, "ratio", 0.25f);
		ir_set_i(m, n, "salt", 3);
		CHECK(ir_infer_node(m, n, err, sizeof err));
		CHECK_EQ(ir_fold_node(m, n, 1 << 20, err, sizeof err), 1);
		for (int i = 0; i < 64; i++) {
			float y = ((float *)r->data)[i];
			float want = (kept >> i & 1) ? 1.5f * (4.0f / 3.0f) : x[i] * 0.0f;
			wrong += !(y == want || (isnan(y) && isnan(want)));
		}
		CHECK_EQ(wrong, 0);
		CHECK(ir_dropout_threshold(0) == 0 && ir_dropout_threshold(1) == 1u << 24);
		CHECK(ir_dropout_scale(1) == 0 && ir_dropout_scale(0) == 1);
	}
	/* a result over the size limit is left as a node */
	{
		float one = 1;
		struct ir_type t = ty(IR_F32, 0, NULL);
		struct ir_value *c = ir_add_const(m, "one", &t, &one);
		struct ir_node *n = fold_node(&fc, IR_OP_EXPAND, &c, 1, 1);
		ir_set_ints(m, n, "shape", (int64_t[]){ 1000, 1000 }, 2);
		CHECK(ir_infer_node(m, n, err, sizeof err));
		CHECK_EQ(ir_fold_node(m, n, 1000, err, sizeof err), 0);
		CHECK(n->out[0]->kind == IR_VAL_NODE);
	}
	CHECK_EQ(ir_verify(m), 0);
	ir_module_free(m);
}

/* ------------------------------------------------------------------------ */
/* Text form                                                                */
/* ------------------------------------------------------------------------ */

static const char good_text[] =
        "onnxc-ir 1\n"
        "module \"tiny \\\"quoted\\\"\"\n"
        "input %x : f32[2,3]\n"
        "input %\"odd name\" : i64[]\n"
        "const %w : f32[3,4] = [0.1, -2, 3e+10, inf, -inf, nan, 1e-45, 0, -0, 1, 2, 3]\n"
        "const %big : f16[64] = weight 0x0123456789abcdef\n"
        "const %h : f16[2] = [0.1, 65504]\n"
        "%y : f32[2,4] = matmul(%x, %w) @\"/mm/MatMul\"\n"
        "%a : f32[2,2], %b : f32[2,2] = split(%y) {axis=1, split=[2,2]} @split_0\n"
        "%c : f32[2,2] = clip(%a) {min=-inf, max=6} @c\n"
        "%d : f16[2,2] = cast(%c) {to=f16} @d\n"
        "output %d\n"
        "output %b\n";

static void test_text_roundtrip(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m, *m2;
	char *p1, *p2;
	ctx_collect(&ctx, &d);
	m = ir_parse(&ctx, good_text, sizeof good_text - 1);
	CHECK(m != NULL);
	if (!m) {
		fprintf(stderr, "%s", d.text);
		return;
	}
	p1 = print_to_string(m);
	m2 = ir_parse(&ctx, p1, strlen(p1));
	CHECK(m2 != NULL);
	p2 = m2 ? print_to_string(m2) : NULL;
	CHECK(p2 && !strcmp(p1, p2));
	CHECK_STR(p1,
	          "const %w : f32[3,4] = [0.1, -2, 3e+10, inf, -inf, nan, 1e-45, 0, -0, 1, 2, 3]");
	CHECK_STR(p1, "const %h : f16[2] = [0.1, 6.55e+04]");
	CHECK_STR(p1, "input %\"odd name\" : i64[]");
	CHECK_STR(p1, "module \"tiny \\\"quoted\\\"\"");
	free(p1);
	free(p2);
	ir_module_free(m);
	ir_module_free(m2);
}

/* An output of run-time shape (struct ir_out_shape): printed and parsed
 * back, kept through a clone, its condition a root for DCE and followed by
 * ir_replace_uses, and what the verifier refuses. */
static void test_out_shapes(void)
{
	static const char text[] = "onnxc-ir 1\nmodule \"m\"\n"
	                           "input %x : f32[2,3]\ninput %c : bool[]\n"
	                           "%n : bool[] = not(%c) @n\n"
	                           "%y : f32[6] = reshape(%x) {shape=[6]} @r\n"
	                           "output %y shape(%n ? f32[2,3] : f32[6])\n";
	struct diag_buf d;
	struct ir_ctx ctx;
	struct ir_module *m, *c;
	struct ir_out_shape *sh;
	char *p1, *p2;
	ctx_collect(&ctx, &d);
	m = ir_parse(&ctx, text, sizeof text - 1);
	CHECK(m != NULL);
	if (!m) {
		fprintf(stderr, "%s", d.text);
		return;
	}
	CHECK_EQ(ir_verify(m), 0);
	sh = m->out_shapes[0];
	CHECK(sh && sh->cond == ir_find_value(m, "n") && sh->then_type.rank == 2 &&
	      sh->else_type.dims[0] == 6);
	p1 = print_to_string(m);
	CHECK(!strcmp(p1, text));
	c = ir_module_clone(m);
	p2 = print_to_string(c);
	CHECK(!strcmp(p1, p2));
	CHECK(c->out_shapes[0]->cond == ir_find_value(c, "n"));
	ir_module_free(c);
	free(p2);
	/* %n has no reader but the output's shape: DCE keeps it */
	CHECK(pass_dce(m, NULL));
	CHECK(ir_find_value(m, "n") && ir_find_value(m, "n")->kind == IR_VAL_NODE);
	CHECK(ir_is_root(m, ir_find_value(m, "n")) && !ir_is_output(m, ir_find_value(m, "n")));
	ir_replace_uses(m, ir_find_value(m, "n"), ir_find_value(m, "c"));
	CHECK(m->out_shapes[0]->cond == ir_find_value(m, "c"));
	CHECK_EQ(ir_verify(m), 0);
	/* refused: a condition that is no bool scalar, a value that is not the
	 * larger count of elements flat, element types that differ */
	sh = m->out_shapes[0];
	sh->cond = ir_find_value(m, "x");
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "graph output 'y': its shape's condition is not a defined bool");
	sh->cond = ir_find_value(m, "c");
	sh->else_type.dims[0] = 7;
	CHECK(ir_verify(m) > 0);
	CHECK_STR(d.text, "graph output 'y' is f32[6], not the elements of f32[2,3] or f32[7]");
	sh->else_type.dims[0] = 6;
	sh->else_type.dtype = IR_F16;
	CHECK(ir_verify(m) > 0);
	sh->else_type.dtype = IR_F32;
	CHECK_EQ(ir_verify(m), 0);
	free(p1);
	ir_module_free(m);
}

static void test_parse_errors(void)
{
	static const struct {
		const char *text, *expect;
	} cases[] = {
		{ "", "expected 'onnxc-ir'" },
		{ "onnxc-ir 2\nmodule \"m\"\n", "version 2 is not supported" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2,-1]\n",
		  ":3:18: error: negative dimension" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f33[2]\n", "expected a dtype" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[1,1,1,1,1,1,1,1,1]\n",
		  "rank exceeds 8" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[4294967296,4294967296]\n",
		  "overflows 64 bits" },
		/* 2^62 elements count, their 2^64 bytes do not */
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[4611686018427387904]\n",
		  "the size in bytes overflows 64 bits" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2]\ninput %x : f32[2]\n",
		  "defined twice" },
		{ "onnxc-ir 1\nmodule \"m\"\n%y : f32[2] = relu(%x) @r\n", "undefined value '%x'" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2]\n%y : f32[3] = relu(%x) @r\n",
		  "declared f32[3] but relu gives f32[2]" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2]\n%y : f32[2] = frob(%x) @r\n",
		  "unknown op 'frob'" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2]\n%y : f32[2] = leaky_relu(%x) @r\n",
		  "needs attribute 'alpha'" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2]\n%y : f32[2] = relu(%x) {alpha=1} "
		  "@r\n",
		  "has no attribute 'alpha'" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2]\n%y : f32[2] = relu(%x, %x) @r\n",
		  "relu takes 1 to 1 operands, not 2" },
		{ "onnxc-ir 1\nmodule \"m\"\nconst %c : i8[1] = [300]\n", "300 does not fit i8" },
		{ "onnxc-ir 1\nmodule \"m\"\nconst %c : f32[2] = [1]\n",
		  "1 values for a constant of 2 elements" },
		{ "onnxc-ir 1\nmodule \"m\"\nconst %c : f32[1] = [1x]\n", "'1x' is not a number" },
		{ "onnxc-ir 1\nmodule \"m\"\nconst %c : f32[1] = weight 0x12\n", "16 hex digits" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %\"x\n", "unterminated string" },
		{ "onnxc-ir 1\nmodule \"m\"\noutput %nope\n", "undefined value '%nope'" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2]\ninput %c : bool[]\n"
		  "output %x shape(%c ? f32[2] f32[1])\n",
		  "expected ':'" },
		{ "onnxc-ir 1\nmodule \"m\x00\"\n", "NUL byte" },
		{ "onnxc-ir 1\nmodule \"m\"\ninput %x : f32[2]\n%y : f32[2] = leaky_relu(%x) "
		  "{alpha=1, alpha=2} @r\n",
		  "given twice" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct diag_buf d;
		struct ir_ctx ctx;
		struct ir_module *m;
		size_t len = strlen(cases[i].text);
		if (strstr(cases[i].expect, "NUL"))
			len = 22;
		ctx_collect(&ctx, &d);
		ctx.file = "t.oir";
		m = ir_parse(&ctx, cases[i].text, len);
		CHECK(m == NULL);
		CHECK(ctx.nerrors > 0);
		CHECK_STR(d.text, cases[i].expect);
		ir_module_free(m);
	}
}

/* Every allocation failure during parsing unwinds cleanly and leaks nothing. */
static void test_parse_oom(void)
{
	int succeeded_at = -1;
	for (long k = 1; k < 100000; k++) {
		struct diag_buf d;
		struct ir_ctx ctx;
		struct fail_alloc fa;
		struct ir_module *m;
		ctx_collect(&ctx, &d);
		ctx_fail_alloc(&ctx, &fa, k);
		m = ir_parse(&ctx, good_text, sizeof good_text - 1);
		if (m) {
			CHECK(!fa.failed);
			ir_module_free(m);
			CHECK_EQ(fa.live, 0);
			succeeded_at = (int)k;
			break;
		}
		CHECK(fa.failed);
		CHECK_STR(d.text, "out of memory");
		CHECK_EQ(fa.live, 0);
	}
	CHECK(succeeded_at > 1);
}

/* Past the import nothing catches an allocation failure: the command
 * reports it and exits 1 (it used to abort, which is a crash). */
static void test_oom_exits(void)
{
	pid_t pid = fork();
	int status = 0;
	if (pid == 0) {
		struct diag_buf d;
		struct ir_ctx ctx;
		struct fail_alloc fa;
		ctx_collect(&ctx, &d);
		ctx_fail_alloc(&ctx, &fa, 1);
		ctx.file = "model.onnx";
		ir_malloc(&ctx, 64);
		_exit(d.text[0] && strstr(d.text, "out of memory") ? 3 : 4); /* not reached */
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

/* Diagnostics never pass on what a terminal acts on: a node name from a
 * model with a newline, CR, ESC, a C1 control (as UTF-8 and as a lone
 * byte), DEL and a broken sequence comes out escaped; UTF-8 text passes. */
static void test_diag_escapes(void)
{
	struct diag_buf d;
	struct ir_ctx ctx;
	char buf[16];
	ctx_collect(&ctx, &d);
	ctx.file = "m.onnx";
	ir_node_error(
	        &ctx,
	        "a\nm.onnx: error: forged\r\x1b[2J\xc2\x9b\x9b\x7f\xe2\x82 \xc3\xa9\xe2\x82\xac",
	        "Relu", "bad");
	CHECK_STR(d.text, "m.onnx: error: node 'a\\nm.onnx: error: forged\\r\\x1b[2J\\xc2\\x9b\\x9b"
	                  "\\x7f\\xe2\\x82 \xc3\xa9\xe2\x82\xac' (Relu): bad");
	CHECK(!strchr(d.text, '\r') && !strchr(d.text, 0x1b));
	CHECK(strchr(d.text, '\n') == strrchr(d.text, '\n')); /* the one that ends the line */
	/* cut to fit, never in the middle of an escape */
	CHECK(strcmp(ir_escape("abcdef\n", buf, 8), "abcdef") == 0);
	CHECK(strcmp(ir_escape("ab\x01", buf, 8), "ab\\x01") == 0);
}

/*
 * Large blocks: ir_add_const adopts data that is one of the arena's large
 * blocks and copies anything else, however many blocks there are and in
 * whatever order they were released (the set that answers it in O(1)
 * shifts entries back on removal; a wrong shift loses one).
 */
static void test_arena_big_blocks(void)
{
	enum { N = 20000 };
	struct ir_ctx ctx;
	struct ir_module *m;
	struct ir_type t = { .dtype = IR_F32, .rank = 1, .dims = { 4096 } };
	static void *big[N];
	static float outside[4096];
	int kept = 0, adopted = 0;
	ir_ctx_init(&ctx);
	m = ir_module_new(&ctx, "t");
	for (int i = 0; i < N; i++)
		big[i] = ir_arena_alloc_big(&m->arena, sizeof outside);
	for (int i = 0; i < N; i++) /* release two in three, scattered */
		if ((i * 7919) % 3) {
			ir_arena_release(&m->arena, big[i]);
			big[i] = NULL;
		}
	for (int i = 0; i < N; i++) {
		char name[32];
		struct ir_value *v;
		if (!big[i])
			continue;
		kept++;
		snprintf(name, sizeof name, "c%d", i);
		v = ir_add_const(m, name, &t, big[i]);
		adopted += v->data == big[i];
	}
	CHECK_EQ(adopted, kept);
	CHECK(ir_add_const(m, "outside", &t, outside)->data != (void *)outside);
	ir_module_free(m);
}

/*
 * Map scopes: keys added after a mark go at ir_map_pop, whatever the
 * growth in between, and every other key stays findable with its value
 * (a wrong back-shift in the deletion loses a key of a probe run).
 */
static void test_map_scopes(void)
{
	enum { OUTER = 3000, INNER = 3000 };
	struct ir_ctx ctx;
	struct ir_arena a;
	struct ir_map mp;
	static char names[OUTER + 2 * INNER][16];
	int mark;
	ir_ctx_init(&ctx);
	ir_arena_init(&a, &ctx);
	ir_map_init(&mp, &a);
	for (int i = 0; i < OUTER + 2 * INNER; i++)
		snprintf(names[i], sizeof names[i], "v%d", i);
	for (int i = 0; i < OUTER; i++)
		ir_map_put(&mp, names[i], names[i]);
	for (int round = 0; round < 2; round++) {
		int base = OUTER + round * INNER;
		mark = ir_map_mark(&mp);
		for (int i = 0; i < INNER; i++) /* grows the table several times */
			ir_map_put(&mp, names[base + i], names[base + i]);
		ir_map_put(&mp, names[3], names[4]); /* rebinding is not adding */
		CHECK_EQ(mp.n, OUTER + INNER);
		ir_map_pop(&mp, mark);
		CHECK_EQ(mp.n, OUTER);
		for (int i = 0; i < INNER; i++)
			CHECK(!ir_map_get(&mp, names[base + i]));
		for (int i = 0; i < OUTER; i++) {
			void **v = ir_map_get(&mp, names[i]);
			CHECK(v && *v == (i == 3 ? names[4] : names[i]));
		}
		ir_map_put(&mp, names[3], names[3]);
	}
	/* nested marks pop in order */
	mark = ir_map_mark(&mp);
	ir_map_put(&mp, names[OUTER], names[OUTER]);
	{
		int inner = ir_map_mark(&mp);
		ir_map_put(&mp, names[OUTER + 1], names[OUTER + 1]);
		ir_map_pop(&mp, inner);
	}
	CHECK(ir_map_get(&mp, names[OUTER]) && !ir_map_get(&mp, names[OUTER + 1]));
	ir_map_pop(&mp, mark);
	CHECK(!ir_map_get(&mp, names[OUTER]) && mp.n == OUTER);
	ir_arena_free(&a);
}

TESTS(T(test_checksum) T(test_f16_roundtrip) T(test_f16_rounding) T(test_bf16) T(test_dtype_tables)
              T(test_minifloats) T(test_broadcast) T(test_module_basics) T(test_verify_catches)
                      T(test_verify_guards) T(test_verify_loops) T(test_infer) T(test_fold)
                              T(test_text_roundtrip) T(test_out_shapes) T(test_parse_errors)
                                      T(test_parse_oom) T(test_oom_exits) T(test_diag_escapes)
                                              T(test_arena_big_blocks) T(test_map_scopes))
