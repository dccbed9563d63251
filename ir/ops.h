/* clang-format off */
/*
 * ops.h - the op table. One row per IR op; everything else (the enum, the
 * text names, ONNX names, arity, attribute schemas, mixed-precision classes,
 * shape inference) is generated from these rows, so nothing is kept in sync
 * by hand. Per-backend tables (folding, kernels) are arrays indexed by the
 * enum, checked for completeness where they must be complete.
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
 *   schema   attributes, all required in the IR: name:letter with letters
 *            i int, f float, s string, I ints, F floats, t dtype
 *   infer    shape/type inference (ir/infer.c)
 *
 * Attribute meanings are those of the ONNX op after normalization by the
 * importer; docs/ir.md lists every op with its attributes.
 */

/*     id                 name                  onnx                   in      out    kind     amp      schema                                  infer */
/* elementwise, one input */
IR_OP(NEG,               "neg",                "Neg",                 1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_signed)
IR_OP(ABS,               "abs",                "Abs",                 1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_numeric)
IR_OP(SIGN,              "sign",               "Sign",                1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_numeric)
IR_OP(RELU,              "relu",               "Relu",                1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_signed)
IR_OP(FLOOR,             "floor",              "Floor",               1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_float)
IR_OP(CEIL,              "ceil",               "Ceil",                1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_float)
IR_OP(ROUND,             "round",              "Round",               1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_float)
IR_OP(SQRT,              "sqrt",               "Sqrt",                1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(RECIPROCAL,        "reciprocal",         "Reciprocal",          1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(EXP,               "exp",                "Exp",                 1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(LOG,               "log",                "Log",                 1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(ERF,               "erf",                "Erf",                 1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(TANH,              "tanh",               "Tanh",                1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(SIGMOID,           "sigmoid",            "Sigmoid",             1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(SIN,               "sin",                "Sin",                 1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(COS,               "cos",                "Cos",                 1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(TAN,               "tan",                "Tan",                 1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(ASIN,              "asin",               "Asin",                1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(ACOS,              "acos",               "Acos",                1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(ATAN,              "atan",               "Atan",                1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(SINH,              "sinh",               "Sinh",                1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(COSH,              "cosh",               "Cosh",                1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(ASINH,             "asinh",              "Asinh",               1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(ACOSH,             "acosh",              "Acosh",               1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(ATANH,             "atanh",              "Atanh",               1, 1,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_float)
IR_OP(SOFTPLUS,          "softplus",           "Softplus",            1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(SOFTSIGN,          "softsign",           "Softsign",            1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(MISH,              "mish",               "Mish",                1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(HARD_SWISH,        "hard_swish",         "HardSwish",           1, 1,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_float)
IR_OP(LEAKY_RELU,        "leaky_relu",         "LeakyRelu",           1, 1,  1, 1, ELTWISE, INFER,   "alpha:f",                              ir_infer_float)
IR_OP(ELU,               "elu",                "Elu",                 1, 1,  1, 1, ELTWISE, INFER,   "alpha:f",                              ir_infer_float)
IR_OP(CELU,              "celu",               "Celu",                1, 1,  1, 1, ELTWISE, INFER,   "alpha:f",                              ir_infer_float)
IR_OP(SELU,              "selu",               "Selu",                1, 1,  1, 1, ELTWISE, INFER,   "alpha:f gamma:f",                      ir_infer_float)
IR_OP(THRESHOLDED_RELU,  "thresholded_relu",   "ThresholdedRelu",     1, 1,  1, 1, ELTWISE, CLEAR,   "alpha:f",                              ir_infer_float)
IR_OP(HARD_SIGMOID,      "hard_sigmoid",       "HardSigmoid",         1, 1,  1, 1, ELTWISE, INFER,   "alpha:f beta:f",                       ir_infer_float)
IR_OP(SHRINK,            "shrink",             "Shrink",              1, 1,  1, 1, ELTWISE, CLEAR,   "bias:f lambd:f",                       ir_infer_numeric)
IR_OP(CLIP,              "clip",               "Clip",                1, 1,  1, 1, ELTWISE, CLEAR,   "min:f max:f",                          ir_infer_numeric)
IR_OP(NOT,               "not",                "Not",                 1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_bool)
IR_OP(ISNAN,             "isnan",              "IsNaN",               1, 1,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_isnan)
IR_OP(ISINF,             "isinf",              "IsInf",               1, 1,  1, 1, ELTWISE, CLEAR,   "detect_negative:i detect_positive:i",  ir_infer_isnan)
IR_OP(CAST,              "cast",               "Cast",                1, 1,  1, 1, ELTWISE, SPECIAL, "to:t",                                 ir_infer_cast)
IR_OP(COPY,              "copy",               "Identity",            1, 1,  1, 1, MOVE,    CLEAR,   "",                                     ir_infer_any)
/* elementwise, broadcasting */
IR_OP(ADD,               "add",                "Add",                 2, 2,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_arith)
IR_OP(SUB,               "sub",                "Sub",                 2, 2,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_arith)
IR_OP(MUL,               "mul",                "Mul",                 2, 2,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_arith)
IR_OP(DIV,               "div",                "Div",                 2, 2,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_arith)
IR_OP(POW,               "pow",                "Pow",                 2, 2,  1, 1, ELTWISE, DENY,    "",                                     ir_infer_pow)
IR_OP(MIN,               "min",                "Min",                 2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_arith)
IR_OP(MAX,               "max",                "Max",                 2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_arith)
IR_OP(MOD,               "mod",                "Mod",                 2, 2,  1, 1, ELTWISE, DENY,    "fmod:i",                               ir_infer_arith)
IR_OP(PRELU,             "prelu",              "PRelu",               2, 2,  1, 1, ELTWISE, INFER,   "",                                     ir_infer_prelu)
IR_OP(EQUAL,             "equal",              "Equal",               2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_compare)
IR_OP(LESS,              "less",               "Less",                2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_compare)
IR_OP(LESS_EQUAL,        "less_equal",         "LessOrEqual",         2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_compare)
IR_OP(GREATER,           "greater",            "Greater",             2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_compare)
IR_OP(GREATER_EQUAL,     "greater_equal",      "GreaterOrEqual",      2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_compare)
IR_OP(AND,               "and",                "And",                 2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_logic)
IR_OP(OR,                "or",                 "Or",                  2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_logic)
IR_OP(XOR,               "xor",                "Xor",                 2, 2,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_logic)
IR_OP(WHERE,             "where",              "Where",               3, 3,  1, 1, ELTWISE, CLEAR,   "",                                     ir_infer_where)
/* dropout in training: x, seed (i64 scalar); the mask is drawn from the
 * seed, the salt and the element's index (docs/ir.md#dropout) */
IR_OP(DROPOUT,           "dropout",            "Dropout",             2, 2,  1, 1, ELTWISE, CLEAR,   "ratio:f salt:i",                       ir_infer_dropout)
/* linear algebra and convolution */
IR_OP(MATMUL,            "matmul",             "MatMul",              2, 2,  1, 1, COMPUTE, ALLOW,   "",                                     ir_infer_matmul)
IR_OP(GEMM,              "gemm",               "Gemm",                2, 3,  1, 1, COMPUTE, ALLOW,   "alpha:f beta:f trans_a:i trans_b:i",   ir_infer_gemm)
IR_OP(CONV,              "conv",               "Conv",                2, 3,  1, 1, COMPUTE, ALLOW,   "strides:I pads:I dilations:I group:i", ir_infer_conv)
IR_OP(CONV_TRANSPOSE,    "conv_transpose",     "ConvTranspose",       2, 3,  1, 1, COMPUTE, ALLOW,   "strides:I pads:I dilations:I group:i output_padding:I", ir_infer_conv_transpose)
/* normalization */
IR_OP(BATCH_NORM,        "batch_norm",         "BatchNormalization",  5, 5,  1, 1, COMPUTE, INFER,   "epsilon:f",                            ir_infer_batch_norm)
IR_OP(LAYER_NORM,        "layer_norm",         "LayerNormalization",  2, 3,  1, 3, COMPUTE, INFER,   "axis:i epsilon:f",                     ir_infer_layer_norm)
IR_OP(INSTANCE_NORM,     "instance_norm",      "InstanceNormalization", 3, 3, 1, 1, COMPUTE, INFER,  "epsilon:f",                            ir_infer_instance_norm)
IR_OP(LRN,               "lrn",                "LRN",                 1, 1,  1, 1, COMPUTE, DENY,    "size:i alpha:f beta:f bias:f",         ir_infer_lrn)
IR_OP(SOFTMAX,           "softmax",            "Softmax",             1, 1,  1, 1, COMPUTE, INFER,   "axis:i",                               ir_infer_axis_op)
IR_OP(LOG_SOFTMAX,       "log_softmax",        "LogSoftmax",          1, 1,  1, 1, COMPUTE, INFER,   "axis:i",                               ir_infer_axis_op)
IR_OP(HARDMAX,           "hardmax",            "Hardmax",             1, 1,  1, 1, COMPUTE, CLEAR,   "axis:i",                               ir_infer_axis_op)
/* pooling */
IR_OP(MAX_POOL,          "max_pool",           "MaxPool",             1, 1,  1, 2, COMPUTE, CLEAR,   "kernel:I strides:I pads:I dilations:I ceil_mode:i storage_order:i", ir_infer_pool)
IR_OP(AVG_POOL,          "avg_pool",           "AveragePool",         1, 1,  1, 1, COMPUTE, INFER,   "kernel:I strides:I pads:I ceil_mode:i count_include_pad:i", ir_infer_pool)
IR_OP(LP_POOL,           "lp_pool",            "LpPool",              1, 1,  1, 1, COMPUTE, DENY,    "kernel:I strides:I pads:I p:i",        ir_infer_pool)
IR_OP(GLOBAL_AVG_POOL,   "global_avg_pool",    "GlobalAveragePool",   1, 1,  1, 1, COMPUTE, INFER,   "",                                     ir_infer_global_pool)
IR_OP(GLOBAL_MAX_POOL,   "global_max_pool",    "GlobalMaxPool",       1, 1,  1, 1, COMPUTE, CLEAR,   "",                                     ir_infer_global_pool)
IR_OP(GLOBAL_LP_POOL,    "global_lp_pool",     "GlobalLpPool",        1, 1,  1, 1, COMPUTE, DENY,    "p:i",                                  ir_infer_global_pool)
/* reductions (axes sorted, non-negative, non-empty) */
IR_OP(REDUCE_SUM,        "reduce_sum",         "ReduceSum",           1, 1,  1, 1, REDUCE,  DENY,    "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_MEAN,       "reduce_mean",        "ReduceMean",          1, 1,  1, 1, REDUCE,  DENY,    "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_MAX,        "reduce_max",         "ReduceMax",           1, 1,  1, 1, REDUCE,  CLEAR,   "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_MIN,        "reduce_min",         "ReduceMin",           1, 1,  1, 1, REDUCE,  CLEAR,   "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_PROD,       "reduce_prod",        "ReduceProd",          1, 1,  1, 1, REDUCE,  INFER,   "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_L1,         "reduce_l1",          "ReduceL1",            1, 1,  1, 1, REDUCE,  DENY,    "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_L2,         "reduce_l2",          "ReduceL2",            1, 1,  1, 1, REDUCE,  DENY,    "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_SUM_SQUARE, "reduce_sum_square",  "ReduceSumSquare",     1, 1,  1, 1, REDUCE,  DENY,    "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_LOG_SUM,    "reduce_log_sum",     "ReduceLogSum",        1, 1,  1, 1, REDUCE,  DENY,    "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(REDUCE_LOG_SUM_EXP, "reduce_log_sum_exp", "ReduceLogSumExp",    1, 1,  1, 1, REDUCE,  DENY,    "axes:I keepdims:i",                    ir_infer_reduce)
IR_OP(ARGMAX,            "argmax",             "ArgMax",              1, 1,  1, 1, REDUCE,  CLEAR,   "axis:i keepdims:i select_last_index:i", ir_infer_arg)
IR_OP(ARGMIN,            "argmin",             "ArgMin",              1, 1,  1, 1, REDUCE,  CLEAR,   "axis:i keepdims:i select_last_index:i", ir_infer_arg)
IR_OP(CUMSUM,            "cumsum",             "CumSum",              1, 1,  1, 1, COMPUTE, DENY,    "axis:i exclusive:i reverse:i",         ir_infer_axis_op)
/* data movement (shape-valued operands are attributes, fully resolved) */
IR_OP(RESHAPE,           "reshape",            "Reshape",             1, 1,  1, 1, MOVE,    CLEAR,   "shape:I",                              ir_infer_reshape)
IR_OP(TRANSPOSE,         "transpose",          "Transpose",           1, 1,  1, 1, MOVE,    CLEAR,   "perm:I",                               ir_infer_transpose)
IR_OP(CONCAT,            "concat",             "Concat",              1, -1, 1, 1, MOVE,    CLEAR,   "axis:i",                               ir_infer_concat)
IR_OP(SPLIT,             "split",              "Split",               1, 1,  1, -1, MOVE,   CLEAR,   "axis:i split:I",                       ir_infer_split)
IR_OP(SLICE,             "slice",              "Slice",               1, 1,  1, 1, MOVE,    CLEAR,   "starts:I ends:I steps:I",              ir_infer_slice)
IR_OP(GATHER,            "gather",             "Gather",              2, 2,  1, 1, MOVE,    CLEAR,   "axis:i",                               ir_infer_gather)
IR_OP(GATHER_ELEMENTS,   "gather_elements",    "GatherElements",      2, 2,  1, 1, MOVE,    CLEAR,   "axis:i",                               ir_infer_gather_elements)
IR_OP(SCATTER_ELEMENTS,  "scatter_elements",   "ScatterElements",     3, 3,  1, 1, MOVE,    CLEAR,   "axis:i reduction:s",                   ir_infer_scatter_elements)
IR_OP(EXPAND,            "expand",             "Expand",              1, 1,  1, 1, MOVE,    CLEAR,   "shape:I",                              ir_infer_expand)
IR_OP(TILE,              "tile",               "Tile",                1, 1,  1, 1, MOVE,    CLEAR,   "repeats:I",                            ir_infer_tile)
IR_OP(PAD,               "pad",                "Pad",                 1, 1,  1, 1, MOVE,    CLEAR,   "pads:I mode:s value:f",                ir_infer_pad)
IR_OP(DEPTH_TO_SPACE,    "depth_to_space",     "DepthToSpace",        1, 1,  1, 1, MOVE,    CLEAR,   "blocksize:i mode:s",                   ir_infer_depth_to_space)
IR_OP(SPACE_TO_DEPTH,    "space_to_depth",     "SpaceToDepth",        1, 1,  1, 1, MOVE,    CLEAR,   "blocksize:i",                          ir_infer_space_to_depth)
IR_OP(TRILU,             "trilu",              "Trilu",               1, 1,  1, 1, MOVE,    CLEAR,   "upper:i k:i",                          ir_infer_any)
IR_OP(RESIZE,            "resize",             "Resize",              1, 1,  1, 1, COMPUTE, INFER,   "mode:s coord:s nearest:s cubic_a:f exclude_outside:i extrapolation:f scales:F sizes:I roi:F", ir_infer_resize)
/* clang-format on */
