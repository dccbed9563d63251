/* clang-format off */
/*
 * ops.h - the op table. One row per IR op, and every layer's knowledge of an
 * op starts from its row: the enum, the text names, ONNX names, arity,
 * attribute schemas, mixed-precision classes and shape inference are
 * generated from these rows by the ir library, and each later layer expands
 * the rows again into its own table, keeping only its own column. The IR
 * itself knows no backend: the hook columns are bare tokens that the ir
 * library's expansions ignore, and a layer pastes them into its own names
 * (QBE's per-target columns in its ops.h are the model). So a row names a
 * hook for every layer or the build fails: a token the layer does not define
 * is an undeclared identifier where it expands the table (a link error for
 * infer, whose declarations infer.h generates from the rows). What a layer
 * does not do for an op is an explicit named entry, never a gap.
 *
 * Columns:
 *   id       enum suffix (IR_OP_<id>)
 *   name     text-form name
 *   onnx     the ONNX op this imports from and exports as
 *   in       min and max inputs (optional inputs are trailing; -1: variadic)
 *   out      min and max outputs
 *   kind     ELTWISE / REDUCE / MOVE / COMPUTE
 *   amp      mixed-precision class (docs/precision.md): ALLOW / INFER / DENY /
 *            CLEAR / SPECIAL
 *   why      why the op has its class, and any refinement of it by the
 *            node's attributes: amp_<why> in passes/amp_classify.c
 *   infer    shape/type inference: ir_infer_<infer> in ir/infer.c
 *   fold     reference evaluator: eval_<fold> in ir/fold.c (eltwise: the
 *            elementwise driver) or ir/eval_*.c
 *   export   ONNX writer: ex_op_<export> in frontend/export.c; refuse_<why>
 *            is an op ONNX cannot express, exporting it is an error
 *   grad     gradient rule: grad_<grad> in passes/grad_*.c; none: no rule,
 *            so differentiating through the op is an error naming the node
 *   lower    code generation: lower_<lower> in codegen/lower.c, or one of
 *            fused (elementwise: fused into generated kernels), view (an
 *            alias of its input), direct (cg_lower itself emits the step:
 *            copy) and rewritten (passes/batchnorm.c rewrites every such
 *            node before code generation)
 *   schema   attributes, all required in the IR: name:letter with letters
 *            i int, f float, s string, I ints, F floats, t dtype
 *
 * Attribute meanings are those of the ONNX op after normalization by the
 * importer (docs/ir.md); docs/ops.md, generated from this table by `onnxc
 * ops --markdown`, lists every op with its attributes. tests/unit/
 * test_optable.c walks every op and checks each layer's table against the row.
 */

/*    id                  name                  onnx                     in     out    kind     amp      why            infer             fold              export             grad              lower             schema */
/* elementwise, one input */
IR_OP(NEG,                "neg",                "Neg",                   1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         signed,           eltwise,          plain,             unary,            fused,            "")
IR_OP(ABS,                "abs",                "Abs",                   1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         numeric,          eltwise,          plain,             unary,            fused,            "")
IR_OP(SIGN,               "sign",               "Sign",                  1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         numeric,          eltwise,          plain,             zero,             fused,            "")
IR_OP(RELU,               "relu",               "Relu",                  1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         signed,           eltwise,          plain,             unary,            fused,            "")
IR_OP(FLOOR,              "floor",              "Floor",                 1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         float,            eltwise,          plain,             zero,             fused,            "")
IR_OP(CEIL,               "ceil",               "Ceil",                  1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         float,            eltwise,          plain,             zero,             fused,            "")
IR_OP(ROUND,              "round",              "Round",                 1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         float,            eltwise,          plain,             zero,             fused,            "")
IR_OP(SQRT,               "sqrt",               "Sqrt",                  1, 1,  1, 1,  ELTWISE, INFER,   sqrt,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(RECIPROCAL,         "reciprocal",         "Reciprocal",            1, 1,  1, 1,  ELTWISE, INFER,   reciprocal,    float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(EXP,                "exp",                "Exp",                   1, 1,  1, 1,  ELTWISE, DENY,    exp,           float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(LOG,                "log",                "Log",                   1, 1,  1, 1,  ELTWISE, DENY,    log,           float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(ERF,                "erf",                "Erf",                   1, 1,  1, 1,  ELTWISE, INFER,   bounded,       float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(TANH,               "tanh",               "Tanh",                  1, 1,  1, 1,  ELTWISE, INFER,   bounded,       float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(SIGMOID,            "sigmoid",            "Sigmoid",               1, 1,  1, 1,  ELTWISE, INFER,   bounded,       float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(SIN,                "sin",                "Sin",                   1, 1,  1, 1,  ELTWISE, INFER,   bounded,       float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(COS,                "cos",                "Cos",                   1, 1,  1, 1,  ELTWISE, INFER,   bounded,       float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(TAN,                "tan",                "Tan",                   1, 1,  1, 1,  ELTWISE, DENY,    wide,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(ASIN,               "asin",               "Asin",                  1, 1,  1, 1,  ELTWISE, DENY,    wide,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(ACOS,               "acos",               "Acos",                  1, 1,  1, 1,  ELTWISE, DENY,    wide,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(ATAN,               "atan",               "Atan",                  1, 1,  1, 1,  ELTWISE, INFER,   bounded,       float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(SINH,               "sinh",               "Sinh",                  1, 1,  1, 1,  ELTWISE, DENY,    wide,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(COSH,               "cosh",               "Cosh",                  1, 1,  1, 1,  ELTWISE, DENY,    wide,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(ASINH,              "asinh",              "Asinh",                 1, 1,  1, 1,  ELTWISE, DENY,    wide,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(ACOSH,              "acosh",              "Acosh",                 1, 1,  1, 1,  ELTWISE, DENY,    wide,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(ATANH,              "atanh",              "Atanh",                 1, 1,  1, 1,  ELTWISE, DENY,    wide,          float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(SOFTPLUS,           "softplus",           "Softplus",              1, 1,  1, 1,  ELTWISE, INFER,   act_tf,        float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(SOFTSIGN,           "softsign",           "Softsign",              1, 1,  1, 1,  ELTWISE, INFER,   bounded,       float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(MISH,               "mish",               "Mish",                  1, 1,  1, 1,  ELTWISE, INFER,   act,           float,            eltwise,          mish,              unary,            fused,            "")
IR_OP(HARD_SWISH,         "hard_swish",         "HardSwish",             1, 1,  1, 1,  ELTWISE, INFER,   piecewise,     float,            eltwise,          plain,             unary,            fused,            "")
IR_OP(LEAKY_RELU,         "leaky_relu",         "LeakyRelu",             1, 1,  1, 1,  ELTWISE, INFER,   act_tf,        float,            eltwise,          plain,             unary,            fused,            "alpha:f")
IR_OP(ELU,                "elu",                "Elu",                   1, 1,  1, 1,  ELTWISE, INFER,   act_tf,        float,            eltwise,          plain,             unary,            fused,            "alpha:f")
IR_OP(CELU,               "celu",               "Celu",                  1, 1,  1, 1,  ELTWISE, INFER,   act,           float,            eltwise,          plain,             unary,            fused,            "alpha:f")
IR_OP(SELU,               "selu",               "Selu",                  1, 1,  1, 1,  ELTWISE, INFER,   act_tf,        float,            eltwise,          plain,             unary,            fused,            "alpha:f gamma:f")
IR_OP(THRESHOLDED_RELU,   "thresholded_relu",   "ThresholdedRelu",       1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         float,            eltwise,          plain,             unary,            fused,            "alpha:f")
IR_OP(HARD_SIGMOID,       "hard_sigmoid",       "HardSigmoid",           1, 1,  1, 1,  ELTWISE, INFER,   bounded,       float,            eltwise,          plain,             unary,            fused,            "alpha:f beta:f")
IR_OP(SHRINK,             "shrink",             "Shrink",                1, 1,  1, 1,  ELTWISE, CLEAR,   cheap,         numeric,          eltwise,          plain,             unary,            fused,            "bias:f lambd:f")
IR_OP(CLIP,               "clip",               "Clip",                  1, 1,  1, 1,  ELTWISE, CLEAR,   clamps,        numeric,          eltwise,          clip,              unary,            fused,            "min:f max:f")
IR_OP(NOT,                "not",                "Not",                   1, 1,  1, 1,  ELTWISE, CLEAR,   compares,      bool,             eltwise,          plain,             none,             fused,            "")
IR_OP(BIT_NOT,            "bit_not",            "BitwiseNot",            1, 1,  1, 1,  ELTWISE, CLEAR,   bits,          bitwise,          eltwise,          plain,             none,             fused,            "")
IR_OP(ISNAN,              "isnan",              "IsNaN",                 1, 1,  1, 1,  ELTWISE, CLEAR,   compares,      isnan,            eltwise,          plain,             none,             fused,            "")
IR_OP(ISINF,              "isinf",              "IsInf",                 1, 1,  1, 1,  ELTWISE, CLEAR,   compares,      isnan,            eltwise,          plain,             none,             fused,            "detect_negative:i detect_positive:i")
IR_OP(CAST,               "cast",               "Cast",                  1, 1,  1, 1,  ELTWISE, SPECIAL, cast,          cast,             eltwise,          plain,             cast,             fused,            "to:t")
IR_OP(COPY,               "copy",               "Identity",              1, 1,  1, 1,  MOVE,    CLEAR,   moves,         any,              eltwise,          plain,             copy,             direct,           "")
/* elementwise, broadcasting */
IR_OP(ADD,                "add",                "Add",                   2, 2,  1, 1,  ELTWISE, INFER,   one_rounding,  arith,            eltwise,          plain,             binary,           fused,            "")
IR_OP(SUB,                "sub",                "Sub",                   2, 2,  1, 1,  ELTWISE, INFER,   one_rounding,  arith,            eltwise,          plain,             binary,           fused,            "")
IR_OP(MUL,                "mul",                "Mul",                   2, 2,  1, 1,  ELTWISE, INFER,   one_rounding,  arith,            eltwise,          plain,             binary,           fused,            "")
IR_OP(DIV,                "div",                "Div",                   2, 2,  1, 1,  ELTWISE, INFER,   one_rounding,  arith,            eltwise,          plain,             binary,           fused,            "")
IR_OP(POW,                "pow",                "Pow",                   2, 2,  1, 1,  ELTWISE, DENY,    pow,           pow,              eltwise,          plain,             binary,           fused,            "")
IR_OP(MIN,                "min",                "Min",                   2, 2,  1, 1,  ELTWISE, CLEAR,   cheap,         arith,            eltwise,          plain,             binary,           fused,            "")
IR_OP(MAX,                "max",                "Max",                   2, 2,  1, 1,  ELTWISE, CLEAR,   cheap,         arith,            eltwise,          plain,             binary,           fused,            "")
IR_OP(MOD,                "mod",                "Mod",                   2, 2,  1, 1,  ELTWISE, DENY,    mod,           arith,            eltwise,          plain,             none,             fused,            "fmod:i")
IR_OP(PRELU,              "prelu",              "PRelu",                 2, 2,  1, 1,  ELTWISE, INFER,   act,           prelu,            eltwise,          plain,             binary,           fused,            "")
IR_OP(EQUAL,              "equal",              "Equal",                 2, 2,  1, 1,  ELTWISE, CLEAR,   compares,      compare,          eltwise,          plain,             none,             fused,            "")
IR_OP(LESS,               "less",               "Less",                  2, 2,  1, 1,  ELTWISE, CLEAR,   compares,      compare,          eltwise,          plain,             none,             fused,            "")
IR_OP(LESS_EQUAL,         "less_equal",         "LessOrEqual",           2, 2,  1, 1,  ELTWISE, CLEAR,   compares,      compare,          eltwise,          plain,             none,             fused,            "")
IR_OP(GREATER,            "greater",            "Greater",               2, 2,  1, 1,  ELTWISE, CLEAR,   compares,      compare,          eltwise,          plain,             none,             fused,            "")
IR_OP(GREATER_EQUAL,      "greater_equal",      "GreaterOrEqual",        2, 2,  1, 1,  ELTWISE, CLEAR,   compares,      compare,          eltwise,          plain,             none,             fused,            "")
IR_OP(AND,                "and",                "And",                   2, 2,  1, 1,  ELTWISE, CLEAR,   compares,      logic,            eltwise,          plain,             none,             fused,            "")
IR_OP(OR,                 "or",                 "Or",                    2, 2,  1, 1,  ELTWISE, CLEAR,   compares,      logic,            eltwise,          plain,             none,             fused,            "")
IR_OP(XOR,                "xor",                "Xor",                   2, 2,  1, 1,  ELTWISE, CLEAR,   compares,      logic,            eltwise,          plain,             none,             fused,            "")
IR_OP(BIT_AND,            "bit_and",            "BitwiseAnd",            2, 2,  1, 1,  ELTWISE, CLEAR,   bits,          bitwise,          eltwise,          plain,             none,             fused,            "")
IR_OP(BIT_OR,             "bit_or",             "BitwiseOr",             2, 2,  1, 1,  ELTWISE, CLEAR,   bits,          bitwise,          eltwise,          plain,             none,             fused,            "")
IR_OP(BIT_XOR,            "bit_xor",            "BitwiseXor",            2, 2,  1, 1,  ELTWISE, CLEAR,   bits,          bitwise,          eltwise,          plain,             none,             fused,            "")
IR_OP(BIT_SHIFT,          "bit_shift",          "BitShift",              2, 2,  1, 1,  ELTWISE, CLEAR,   bits,          bitwise,          eltwise,          bit_shift,         none,             fused,            "left:i")
IR_OP(WHERE,              "where",              "Where",                 3, 3,  1, 1,  ELTWISE, CLEAR,   moves,         where,            eltwise,          plain,             where,            fused,            "")
/* the merge of a run-time If (docs/ir.md, Guards): cond (bool, one element,
 * rank at most the operands'), then, else of one type; the result is then
 * where cond holds, else else. The operand not chosen may be unspecified
 * (the result of a node whose guard is false) */
IR_OP(PHI,                "phi",                "If",                    3, 3,  1, 1,  ELTWISE, CLEAR,   moves,         phi,              eltwise,          if,                phi,              fused,            "")
/* a branch of a run-time If that cannot run with the compiled shapes (it
 * failed to import): a result of type dtype[shape] for the phi, never
 * written; running it (its guard holds) fails the run with RT_ERR_BRANCH,
 * and message says why the branch cannot run */
IR_OP(TRAP,               "trap",               "If",                    0, 0,  1, 1,  COMPUTE, CLEAR,   moves,         trap,             trap,             refuse_trap,       none,             trap,             "dtype:t shape:I message:s")
/* a Loop run at run time (docs/ir.md, Loops). loop(cond) starts it: its
 * result is the loop's token, a bool true while an iteration runs (cond
 * before the first, then what each iteration computes), and the body's nodes
 * are guarded by it (or by guards nested in it) and lie between it and its
 * loop_end. carry(init), guarded by the token, is a loop-carried value: init
 * in the first iteration, then the value the previous one gave it.
 * loop_end(token, cond, carried..., next...) ends each iteration: each
 * carried value takes its next value and the loop runs again while cond (a
 * bool of one element computed in the body) holds; its results are the
 * carried values after the last iteration (their inits when none ran) */
IR_OP(LOOP,               "loop",               "Loop",                  1, 1,  1, 1,  MOVE,    DENY,    loop,          loop,             loop,             loop,              none,             loop,             "")
IR_OP(CARRY,              "carry",              "Loop",                  1, 1,  1, 1,  MOVE,    DENY,    loop,          any,              loop,             loop_part,         none,             carry,            "")
IR_OP(LOOP_END,           "loop_end",           "Loop",                  4, -1, 1, -1, MOVE,    DENY,    loop,          loop_end,         loop,             loop_part,         none,             loop_end,         "")
/* dropout in training: x, seed (i64 scalar); the mask is drawn from the
 * seed, the salt and the element's index (docs/ir.md#dropout) */
IR_OP(DROPOUT,            "dropout",            "Dropout",               2, 2,  1, 1,  ELTWISE, CLEAR,   dropout,       dropout,          eltwise,          refuse_dropout,    again,            fused,            "ratio:f salt:i")
/* linear algebra and convolution */
IR_OP(MATMUL,             "matmul",             "MatMul",                2, 2,  1, 1,  COMPUTE, ALLOW,   tensor_cores,  matmul,           matmul,           plain,             matmul,           matmul,           "")
IR_OP(GEMM,               "gemm",               "Gemm",                  2, 3,  1, 1,  COMPUTE, ALLOW,   tensor_cores,  gemm,             gemm,             plain,             gemm,             gemm,             "alpha:f beta:f trans_a:i trans_b:i")
IR_OP(CONV,               "conv",               "Conv",                  2, 3,  1, 1,  COMPUTE, ALLOW,   tensor_cores,  conv,             conv,             conv,              conv,             conv,             "strides:I pads:I dilations:I group:i")
IR_OP(CONV_TRANSPOSE,     "conv_transpose",     "ConvTranspose",         2, 3,  1, 1,  COMPUTE, ALLOW,   tensor_cores,  conv_transpose,   conv,             conv,              conv_transpose,   conv_transpose,   "strides:I pads:I dilations:I group:i output_padding:I")
/* recurrences: ONNX's packed [B, T, heads * dim] inputs; past_state,
 * decay, beta and erase_gate follow q, k, v in that order where present
 * (past, update_rule and erase say which: ir_linear_attention_inputs) */
IR_OP(LINEAR_ATTENTION,   "linear_attention",   "LinearAttention",       3, 7,  2, 2,  COMPUTE, DENY,    recurrent,     linear_attention, linear_attention, plain,             none,             linear_attention, "q_num_heads:i kv_num_heads:i scale:f update_rule:s past:i erase:i")
/* recurrent networks (ONNX LSTM, GRU and RNN in layout 0, every optional
 * input present: the importer fills ONNX's defaults): x [T, B, I], w
 * [D, G*H, I], r [D, G*H, H], b [D, 2*G*H], sequence_lens i32 [B],
 * initial_h [D, B, H], and for lstm initial_c [D, B, H] and p [D, 3*H];
 * y [T, D, B, H], y_h [D, B, H] and lstm's y_c [D, B, H]. G is 4, 3, 1;
 * D 2 for direction bidirectional. activations: ONNX's names, comma
 * separated, each direction's in turn; alphas and betas one per activation
 * (ir_rnn_cell); clip 0: none */
IR_OP(LSTM,               "lstm",               "LSTM",                  8, 8,  3, 3,  COMPUTE, DENY,    recurrent,     rnn,              rnn,              rnn,               none,             rnn,              "direction:s activations:s alphas:F betas:F clip:f input_forget:i")
IR_OP(GRU,                "gru",                "GRU",                   6, 6,  2, 2,  COMPUTE, DENY,    recurrent,     rnn,              rnn,              rnn,               none,             rnn,              "direction:s activations:s alphas:F betas:F clip:f linear_before_reset:i")
IR_OP(RNN,                "rnn",                "RNN",                   6, 6,  2, 2,  COMPUTE, DENY,    recurrent,     rnn,              rnn,              rnn,               none,             rnn,              "direction:s activations:s alphas:F betas:F clip:f")
/* fused scaled dot-product attention (ONNX Attention-23's semantics):
 * q [B, Hq, Lq, dk], k [B, Hkv, Lk, dk], v [B, Hkv, Lk, dv] and an
 * optional mask (bool, true = attend) or bias (q's type or f32)
 * broadcastable to [B, Hq, Lq, Lk]; y [B, Hq, Lq, dv] and an optional f32
 * log-sum-exp [B, Hq, Lq]. causal: query i sees key j <= i + causal_offset;
 * softcap 0: none (ir_infer_attention) */
IR_OP(ATTENTION,          "attention",          "Attention",             3, 4,  1, 2,  COMPUTE, ALLOW,   attention,     attention,        attention,        attention,         attention,        attention,        "scale:f causal:i causal_offset:i softcap:f")
/* its backward (training steps only): q, k, v, the forward's y and lse, dy
 * and the forward's mask when it had one; dq, dk, dv (GQA: dk and dv sum
 * over each group of query heads) */
IR_OP(ATTENTION_GRAD,     "attention_grad",     "AttentionGrad",         6, 7,  3, 3,  COMPUTE, ALLOW,   attention_grad, attention_grad,  attention_grad,   refuse_backward,   none,             attention_grad,   "scale:f causal:i causal_offset:i softcap:f")
/* normalization */
IR_OP(BATCH_NORM,         "batch_norm",         "BatchNormalization",    5, 5,  1, 1,  COMPUTE, INFER,   batch_norm,    batch_norm,       batch_norm,       plain,             batch_norm,       rewritten,        "epsilon:f")
IR_OP(LAYER_NORM,         "layer_norm",         "LayerNormalization",    2, 3,  1, 3,  COMPUTE, INFER,   layer_norm,    layer_norm,       layer_norm,       plain,             layer_norm,       layer_norm,       "axis:i epsilon:f")
IR_OP(INSTANCE_NORM,      "instance_norm",      "InstanceNormalization", 3, 3,  1, 1,  COMPUTE, INFER,   instance_norm, instance_norm,    instance_norm,    plain,             instance_norm,    instance_norm,    "epsilon:f")
IR_OP(LRN,                "lrn",                "LRN",                   1, 1,  1, 1,  COMPUTE, DENY,    lrn,           lrn,              lrn,              plain,             lrn,              lrn,              "size:i alpha:f beta:f bias:f")
IR_OP(SOFTMAX,            "softmax",            "Softmax",               1, 1,  1, 1,  COMPUTE, INFER,   softmax,       axis_op,          softmax,          plain,             softmax,          softmax,          "axis:i")
IR_OP(LOG_SOFTMAX,        "log_softmax",        "LogSoftmax",            1, 1,  1, 1,  COMPUTE, INFER,   softmax,       axis_op,          softmax,          plain,             softmax,          softmax,          "axis:i")
IR_OP(HARDMAX,            "hardmax",            "Hardmax",               1, 1,  1, 1,  COMPUTE, CLEAR,   moves,         axis_op,          softmax,          plain,             zero,             softmax,          "axis:i")
/* pooling */
IR_OP(MAX_POOL,           "max_pool",           "MaxPool",               1, 1,  1, 2,  COMPUTE, CLEAR,   moves,         pool,             pool,             plain,             max_pool,         pool,             "kernel:I strides:I pads:I dilations:I ceil_mode:i storage_order:i")
IR_OP(AVG_POOL,           "avg_pool",           "AveragePool",           1, 1,  1, 1,  COMPUTE, INFER,   avg_pool,      pool,             pool,             window_pool,       avg_pool,         pool,             "kernel:I strides:I pads:I dilations:I ceil_mode:i count_include_pad:i")
IR_OP(LP_POOL,            "lp_pool",            "LpPool",                1, 1,  1, 1,  COMPUTE, DENY,    powers,        pool,             pool,             window_pool,       none,             pool,             "kernel:I strides:I pads:I dilations:I ceil_mode:i p:i")
IR_OP(GLOBAL_AVG_POOL,    "global_avg_pool",    "GlobalAveragePool",     1, 1,  1, 1,  COMPUTE, INFER,   accumulates,   global_pool,      global_pool,      plain,             global_pool,      pool,             "")
IR_OP(GLOBAL_MAX_POOL,    "global_max_pool",    "GlobalMaxPool",         1, 1,  1, 1,  COMPUTE, CLEAR,   moves,         global_pool,      global_pool,      plain,             global_pool,      pool,             "")
IR_OP(GLOBAL_LP_POOL,     "global_lp_pool",     "GlobalLpPool",          1, 1,  1, 1,  COMPUTE, DENY,    powers,        global_pool,      global_pool,      plain,             none,             pool,             "p:i")
/* reductions (axes sorted, non-negative, non-empty) */
IR_OP(REDUCE_SUM,         "reduce_sum",         "ReduceSum",             1, 1,  1, 1,  REDUCE,  DENY,    reduces,       reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_MEAN,        "reduce_mean",        "ReduceMean",            1, 1,  1, 1,  REDUCE,  DENY,    reduces,       reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_MAX,         "reduce_max",         "ReduceMax",             1, 1,  1, 1,  REDUCE,  CLEAR,   moves,         reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_MIN,         "reduce_min",         "ReduceMin",             1, 1,  1, 1,  REDUCE,  CLEAR,   moves,         reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_PROD,        "reduce_prod",        "ReduceProd",            1, 1,  1, 1,  REDUCE,  INFER,   prod,          reduce,           reduce,           reduce,            none,             reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_L1,          "reduce_l1",          "ReduceL1",              1, 1,  1, 1,  REDUCE,  DENY,    reduces,       reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_L2,          "reduce_l2",          "ReduceL2",              1, 1,  1, 1,  REDUCE,  DENY,    reduces,       reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_SUM_SQUARE,  "reduce_sum_square",  "ReduceSumSquare",       1, 1,  1, 1,  REDUCE,  DENY,    reduces,       reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_LOG_SUM,     "reduce_log_sum",     "ReduceLogSum",          1, 1,  1, 1,  REDUCE,  DENY,    reduces,       reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(REDUCE_LOG_SUM_EXP, "reduce_log_sum_exp", "ReduceLogSumExp",       1, 1,  1, 1,  REDUCE,  DENY,    reduces,       reduce,           reduce,           reduce,            reduce,           reduce,           "axes:I keepdims:i")
IR_OP(ARGMAX,             "argmax",             "ArgMax",                1, 1,  1, 1,  REDUCE,  CLEAR,   moves,         arg,              arg,              plain,             none,             arg,              "axis:i keepdims:i select_last_index:i")
IR_OP(ARGMIN,             "argmin",             "ArgMin",                1, 1,  1, 1,  REDUCE,  CLEAR,   moves,         arg,              arg,              plain,             none,             arg,              "axis:i keepdims:i select_last_index:i")
/* the k largest (or smallest) of each lane along axis, sorted, ties to the
 * lower index: values and int64 indices */
IR_OP(TOPK,               "topk",               "TopK",                  1, 1,  2, 2,  MOVE,    CLEAR,   moves,         topk,             topk,             topk,              topk,             topk,             "axis:i k:i largest:i")
IR_OP(CUMSUM,             "cumsum",             "CumSum",                1, 1,  1, 1,  COMPUTE, DENY,    reduces,       axis_op,          cumsum,           cumsum,            cumsum,           cumsum,           "axis:i exclusive:i reverse:i")
IR_OP(CUMPROD,            "cumprod",            "CumProd",               1, 1,  1, 1,  COMPUTE, INFER,   prod,          axis_op,          cumsum,           cumsum,            cumprod,          cumsum,           "axis:i exclusive:i reverse:i")
/* data movement (shape-valued operands are attributes, fully resolved) */
IR_OP(RESHAPE,            "reshape",            "Reshape",               1, 1,  1, 1,  MOVE,    CLEAR,   moves,         reshape,          reshape,          reshape,           reshape,          view,             "shape:I")
/* the same bytes as another element type of the same size */
IR_OP(BITCAST,            "bitcast",            "BitCast",               1, 1,  1, 1,  MOVE,    DENY,    reinterprets,  bitcast,          reshape,          plain,             none,             view,             "to:t")
IR_OP(TRANSPOSE,          "transpose",          "Transpose",             1, 1,  1, 1,  MOVE,    CLEAR,   moves,         transpose,        transpose,        plain,             transpose,        transpose,        "perm:I")
IR_OP(CONCAT,             "concat",             "Concat",                1, -1, 1, 1,  MOVE,    CLEAR,   moves,         concat,           concat,           plain,             concat,           concat_split,     "axis:i")
IR_OP(SPLIT,              "split",              "Split",                 1, 1,  1, -1, MOVE,    CLEAR,   moves,         split,            split,            split,             split,            concat_split,     "axis:i split:I")
IR_OP(SLICE,              "slice",              "Slice",                 1, 1,  1, 1,  MOVE,    CLEAR,   moves,         slice,            slice,            slice,             slice,            slice,            "starts:I ends:I steps:I")
IR_OP(GATHER,             "gather",             "Gather",                2, 2,  1, 1,  MOVE,    CLEAR,   moves,         gather,           gather,           plain,             gather,           gather,           "axis:i")
IR_OP(GATHER_ELEMENTS,    "gather_elements",    "GatherElements",        2, 2,  1, 1,  MOVE,    CLEAR,   moves,         gather_elements,  gather_elements,  plain,             gather_elements,  gather_elements,  "axis:i")
IR_OP(SCATTER_ELEMENTS,   "scatter_elements",   "ScatterElements",       3, 3,  1, 1,  MOVE,    CLEAR,   scatter,       scatter_elements, scatter_elements, scatter_elements,  scatter_elements, scatter_elements, "axis:i reduction:s")
IR_OP(EXPAND,             "expand",             "Expand",                1, 1,  1, 1,  MOVE,    CLEAR,   moves,         expand,           expand,           expand,            expand,           expand,           "shape:I")
IR_OP(TILE,               "tile",               "Tile",                  1, 1,  1, 1,  MOVE,    CLEAR,   moves,         tile,             tile,             tile,              tile,             tile,             "repeats:I")
IR_OP(PAD,                "pad",                "Pad",                   1, 1,  1, 1,  MOVE,    CLEAR,   moves,         pad,              pad,              pad,               pad,              pad,              "pads:I mode:s value:f")
IR_OP(DEPTH_TO_SPACE,     "depth_to_space",     "DepthToSpace",          1, 1,  1, 1,  MOVE,    CLEAR,   moves,         depth_to_space,   depth_space,      plain,             depth_space,      depth_space,      "blocksize:i mode:s")
IR_OP(SPACE_TO_DEPTH,     "space_to_depth",     "SpaceToDepth",          1, 1,  1, 1,  MOVE,    CLEAR,   moves,         space_to_depth,   depth_space,      plain,             depth_space,      depth_space,      "blocksize:i")
IR_OP(TRILU,              "trilu",              "Trilu",                 1, 1,  1, 1,  MOVE,    CLEAR,   moves,         any,              trilu,            trilu,             again,            trilu,            "upper:i k:i")
IR_OP(RESIZE,             "resize",             "Resize",                1, 1,  1, 1,  COMPUTE, INFER,   resize,        resize,           resize,           resize,            separable,        resize,           "mode:s coord:s nearest:s cubic_a:f exclude_outside:i extrapolation:f scales:F sizes:I roi:F")
/* clang-format on */
