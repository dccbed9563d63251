#!/usr/bin/python3
"""What the user's input can do to `onnxc train` and its program.

    user_input.py ONNXC

A model whose file path holds "*/", newlines and "#error", and whose tensor,
node and graph names hold quotes, backslashes, newlines, "*/" and the
trigraph "??/" (a backslash under -std=c11), compiles with `onnxc train`
(NAME_train.c is compiled by it: an unescaped name is a compile error, or
code) and the program trains on it. The generated C carries only the
model's file name, escaped. Class labels outside [0, classes) and token ids
outside the embedding's ONNX range [-rows, rows) are refused by the program
before any step, naming the file, the sample and the value.

Exit 77 when onnx or numpy is missing.
"""
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    print("onnx or numpy missing: skipped")
    sys.exit(77)

BATCH, FEATURES, CLASSES, VOCAB = 8, 4, 3, 5
X = 'x??/"*/\n#error x'  # features, float [B, 4]
TOK = 't??/'  # token ids, int64 [B], into an embedding of VOCAB rows
W = 'W??/";*/\n#error w\\'
EMB = 'emb\\"'
BIAS = 'b?'
OUT = 'out??/"\n*/'


def data_file(name):
    """rt_train_data_file_name's mapping (docs/training.md, Data)."""
    ok = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
    b = name.encode()
    return "".join(chr(c) if c in ok or (c == ord(".") and i > 0) else "_"
                   for i, c in enumerate(b)) + ".npy"


def make_model(path):
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Gather", [EMB, TOK], ["g"], name="gather*/\n#error node", axis=0),
        helper.make_node("Add", [X, "g"], ["h"], name="add"),
        helper.make_node("MatMul", ["h", W], ["mm"], name='mm"??/'),
        helper.make_node("Add", ["mm", BIAS], [OUT], name="bias"),
    ]
    graph = helper.make_graph(
        nodes, "graph*/\n#error graph",
        [helper.make_tensor_value_info(X, TensorProto.FLOAT, [BATCH, FEATURES]),
         helper.make_tensor_value_info(TOK, TensorProto.INT64, [BATCH])],
        [helper.make_tensor_value_info(OUT, TensorProto.FLOAT, [BATCH, CLASSES])],
        [numpy_helper.from_array(rng.standard_normal((FEATURES, CLASSES)).astype(np.float32), W),
         numpy_helper.from_array(rng.standard_normal((VOCAB, FEATURES)).astype(np.float32), EMB),
         numpy_helper.from_array(np.zeros(CLASSES, np.float32), BIAS)],
        doc_string="doc */\n#error doc")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              doc_string="*/\n#error model", producer_name="p*/\n#error")
    model.ir_version = 8
    onnx.checker.check_model(model)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)


def write_data(d, n=32, tokens=None, labels=None):
    rng = np.random.default_rng(1)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, data_file(X)), rng.standard_normal((n, FEATURES)).astype(np.float32))
    np.save(os.path.join(d, data_file(TOK)),
            rng.integers(0, VOCAB, n) if tokens is None else np.array(tokens, np.int64))
    np.save(os.path.join(d, "label.npy"),
            rng.integers(0, CLASSES, n) if labels is None else np.array(labels, np.int64))


def main():
    onnxc = sys.argv[1]
    work = tempfile.mkdtemp(prefix="onnxc_train_input_")
    failed = []

    def check(ok, what):
        print(("ok: " if ok else "FAIL: ") + what)
        if not ok:
            failed.append(what)

    try:
        # "*/", newlines and "#error" in the folders and the file name
        model = os.path.join(work, "x*", "\n#error folder\n", "m\n#error file ??= *.onnx")
        make_model(model)
        out = os.path.join(work, "out")
        r = subprocess.run([onnxc, "train", model, "-o", out, "--name", "net", "-q"],
                           capture_output=True, text=True)
        check(r.returncode == 0, "onnxc train compiles the hostile model (%s)"
              % r.stderr.strip()[-2000:])
        if r.returncode:
            return 1
        with open(os.path.join(out, "net_train.c"), encoding="latin-1") as f:
            src = f.read()
        check(work not in src, "NAME_train.c does not carry the model's path")
        check("#error" not in "".join(line for line in src.splitlines(True)
                                      if line.startswith("#")),
              "no line of NAME_train.c is an #error")
        write_data(os.path.join(work, "data"))
        r = subprocess.run([os.path.join(out, "train"), "--data", os.path.join(work, "data"),
                            "--steps", "3"], capture_output=True, text=True)
        check(r.returncode == 0, "the program trains on it (%s)" % r.stderr.strip())

        # class labels outside [0, 3) and token ids outside ONNX's [-5, 5):
        # refused before any step, naming the file, the sample and the value
        # (PyTorch raises "Target 7 is out of bounds" / "index out of range")
        def refused(what, want, tokens=None, labels=None):
            d = os.path.join(work, "bad")
            shutil.rmtree(d, ignore_errors=True)
            write_data(d, tokens=tokens, labels=labels)
            r = subprocess.run([os.path.join(out, "train"), "--data", d, "--steps", "3"],
                               capture_output=True, text=True)
            check(r.returncode == 1 and want in r.stderr,
                  "%s: exit %d, %r" % (what, r.returncode, r.stderr.strip()))

        rng = np.random.default_rng(2)
        good_labels = rng.integers(0, CLASSES, 32)
        good_tokens = rng.integers(0, VOCAB, 32)
        for sample, value in ((5, 7), (0, -1), (31, 1 << 40)):
            labels = good_labels.copy()
            labels[sample] = value
            refused("label %d" % value, "%s: sample %d: class label %d is not in [0, 3) "
                    "(data input 'label')" % (os.path.join(work, "bad", "label.npy"),
                                               sample, value), labels=labels)
        tok_file = os.path.join(work, "bad", data_file(TOK))
        for sample, value in ((2, 5), (7, -6)):
            tokens = good_tokens.copy()
            tokens[sample] = value
            # the node name's newline is printed as '?' (runtime messages escape controls)
            refused("token %d" % value, "%s: sample %d: node 'gather*/?#error node': index "
                    "%d is not in [-5, 5)" % (tok_file, sample, value), tokens=tokens)
        # ONNX Gather counts a negative index from the end: -5 is row 0
        tokens = good_tokens.copy()
        tokens[:4] = -5
        d = os.path.join(work, "neg")
        write_data(d, tokens=tokens)
        r = subprocess.run([os.path.join(out, "train"), "--data", d, "--steps", "3"],
                           capture_output=True, text=True)
        check(r.returncode == 0, "negative token ids in [-5, 0) train (%s)" % r.stderr.strip())
    finally:
        if not failed:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("scratch files kept in", work)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
