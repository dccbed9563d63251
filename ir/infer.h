/* infer.h - declarations of the inference functions named in ops.h. */
#ifndef ONNXC_INFER_H
#define ONNXC_INFER_H
#include "ir.h"
#define IR_OP(id, name, onnx, imin, imax, omin, omax, kind, amp, why, infer, fold, ex, grad, lo, \
              schema)                                                                            \
	bool ir_infer_##infer(const struct ir_node *, struct ir_type *, char *, size_t);
#include "ops.h"
#undef IR_OP
#endif
