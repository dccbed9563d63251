/*
 * print.c - the IR text printer (format: docs/ir.md).
 *
 * The output is canonical: one spelling per module, so print -> parse ->
 * print is the identity and golden tests can compare text. Floats print in
 * the shortest form that reads back to the same bits; constants up to
 * IR_INLINE_MAX elements print inline, larger ones by checksum.
 */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool ir_ident_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '/' || c == '-';
}

static void print_quoted(const char *s, FILE *f)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* An identifier if it can be one, a quoted string otherwise. */
void ir_print_name(const char *s, FILE *f)
{
	bool plain = *s != 0;
	for (const char *p = s; *p && plain; p++)
		plain = ir_ident_char((unsigned char)*p);
	if (plain)
		fputs(s, f);
	else
		print_quoted(s, f);
}

void ir_format_float(float v, char *buf, size_t n)
{
	if (v != v) {
		snprintf(buf, n, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, n, v > 0 ? "inf" : "-inf");
		return;
	}
	for (int prec = 1; prec <= 9; prec++) {
		snprintf(buf, n, "%.*g", prec, (double)v);
		if (strtof(buf, NULL) == v)
			return;
	}
}

void ir_format_double(double v, char *buf, size_t n)
{
	if (v != v) {
		snprintf(buf, n, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, n, v > 0 ? "inf" : "-inf");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static void print_type(const struct ir_type *t, FILE *f)
{
	char buf[IR_TYPE_STR_MAX];
	fputs(ir_type_str(t, buf, sizeof buf), f);
}

static void print_value_ref(const struct ir_value *v, FILE *f)
{
	fputc('%', f);
	ir_print_name(v->name, f);
}

/* The shortest decimal that reads back (through float) to the same half. */
static void format_half(enum ir_dtype t, uint16_t bits, char *buf, size_t n)
{
	float v = t == IR_F16 ? ir_f16_to_f32(bits) : ir_bf16_to_f32(bits);
	if (v != v || isinf(v)) {
		ir_format_float(v, buf, n);
		return;
	}
	for (int prec = 1; prec <= 9; prec++) {
		float back;
		snprintf(buf, n, "%.*g", prec, (double)v);
		back = strtof(buf, NULL);
		if ((t == IR_F16 ? ir_f32_to_f16(back) : ir_f32_to_bf16(back)) == bits)
			return;
	}
}

static void print_element(enum ir_dtype t, const void *data, size_t i, FILE *f)
{
	char buf[48];
	switch (t) {
	case IR_F32:
		ir_format_float(((const float *)data)[i], buf, sizeof buf);
		fputs(buf, f);
		break;
	case IR_F16:
	case IR_BF16:
		format_half(t, ((const uint16_t *)data)[i], buf, sizeof buf);
		fputs(buf, f);
		break;
	case IR_F64:
		ir_format_double(((const double *)data)[i], buf, sizeof buf);
		fputs(buf, f);
		break;
	case IR_U64: fprintf(f, "%llu", (unsigned long long)((const uint64_t *)data)[i]); break;
	default:
		if (ir_minifloat(t)) { /* every minifloat value is an f32 */
			ir_format_float((float)ir_load_f64(t, data, i), buf, sizeof buf);
			fputs(buf, f);
			break;
		}
		fprintf(f, "%lld", (long long)ir_load_i64(t, data, i));
		break;
	}
}

static void print_const(const struct ir_value *v, FILE *f)
{
	int64_t n = ir_type_elems(&v->type);
	fputs("const ", f);
	print_value_ref(v, f);
	fputs(" : ", f);
	print_type(&v->type, f);
	if (v->data && n <= IR_INLINE_MAX) {
		fputs(" = [", f);
		for (int64_t i = 0; i < n; i++) {
			if (i)
				fputs(", ", f);
			print_element(v->type.dtype, v->data, (size_t)i, f);
		}
		fputs("]\n", f);
	} else {
		fprintf(f, " = weight 0x%016llx\n", (unsigned long long)v->checksum);
	}
}

static void print_attr(const struct ir_attr *a, FILE *f)
{
	char buf[48];
	fprintf(f, "%s=", a->name);
	switch (a->kind) {
	case IR_ATTR_INT: fprintf(f, "%lld", (long long)a->i); break;
	case IR_ATTR_FLOAT:
		ir_format_float(a->f, buf, sizeof buf);
		fputs(buf, f);
		break;
	case IR_ATTR_STRING: print_quoted(a->s, f); break;
	case IR_ATTR_DTYPE: fputs(ir_dtype_name(a->t), f); break;
	case IR_ATTR_INTS:
		fputc('[', f);
		for (int i = 0; i < a->n; i++)
			fprintf(f, "%s%lld", i ? "," : "", (long long)a->ints[i]);
		fputc(']', f);
		break;
	case IR_ATTR_FLOATS:
		fputc('[', f);
		for (int i = 0; i < a->n; i++) {
			ir_format_float(a->floats[i], buf, sizeof buf);
			fprintf(f, "%s%s", i ? "," : "", buf);
		}
		fputc(']', f);
		break;
	}
}

static void print_node(const struct ir_node *n, FILE *f)
{
	for (int i = 0; i < n->nout; i++) {
		if (i)
			fputs(", ", f);
		print_value_ref(n->out[i], f);
		fputs(" : ", f);
		print_type(&n->out[i]->type, f);
	}
	fprintf(f, " = %s(", ir_ops[n->op].name);
	for (int i = 0; i < n->nin; i++) {
		if (i)
			fputs(", ", f);
		print_value_ref(n->in[i], f);
	}
	fputc(')', f);
	if (n->nattrs) {
		fputs(" {", f);
		for (int i = 0; i < n->nattrs; i++) {
			if (i)
				fputs(", ", f);
			print_attr(&n->attrs[i], f);
		}
		fputc('}', f);
	}
	if (n->guard) {
		fputs(" if ", f);
		print_value_ref(n->guard, f);
	}
	fputs(" @", f);
	ir_print_name(n->name, f);
	fputc('\n', f);
}

void ir_print(const struct ir_module *m, FILE *f)
{
	fputs("onnxc-ir 1\nmodule ", f);
	print_quoted(m->name, f);
	fputc('\n', f);
	for (int i = 0; i < m->ninputs; i++) {
		fputs("input ", f);
		print_value_ref(m->inputs[i], f);
		fputs(" : ", f);
		print_type(&m->inputs[i]->type, f);
		fputc('\n', f);
	}
	for (int i = 0; i < m->nvalues; i++)
		if (m->values[i]->kind == IR_VAL_CONST)
			print_const(m->values[i], f);
	IR_FOR_EACH_NODE(m, n)
	print_node(n, f);
	for (int i = 0; i < m->noutputs; i++) {
		const struct ir_out_shape *sh = m->out_shapes[i];
		fputs("output ", f);
		print_value_ref(m->outputs[i], f);
		if (sh) { /* shape(%c ? then-type : else-type) */
			fputs(" shape(", f);
			print_value_ref(sh->cond, f);
			fputs(" ? ", f);
			print_type(&sh->then_type, f);
			fputs(" : ", f);
			print_type(&sh->else_type, f);
			fputc(')', f);
		}
		fputc('\n', f);
	}
}
