#!/usr/bin/python3
"""Tests of `onnxc export` (run by CTest, see tests/CMakeLists.txt).

Usage (Debian's /usr/bin/python3: it has onnx and numpy):
    check_export.py roundtrip ONNXC MODEL [ONNXC-ARGS...]
    check_export.py ort ONNXC ORT_RUN CASEDIR RTOL ATOL [ONNXC-ARGS...]
    check_export.py mixed ONNXC ORT_RUN CASEDIR MAX_REL_L2 [ONNXC-ARGS...]
    check_export.py half ONNXC ORT_RUN FILE.oir
    check_export.py small ONNXC ORT_RUN DIR CASES.txt
    check_export.py node ONNXC ORT_RUN NODE_DIR EXPECTED.txt [--opset N] [--all]
    check_export.py cases ONNXC
    check_export.py ifs ONNXC
    check_export.py opsets ONNXC ORT_RUN FORMS.oir OPSET...

roundtrip  exports MODEL and checks that
           - importing the exported file (`onnxc ir`) prints exactly the IR
             that was exported (the export's --dump-after=all, after its last
             pass), node names aside where the writer made repeated ones
             unique (NAME -> NAME.K);
           - the ONNX checker accepts the file with full_check (strict shape
             inference, which compares its types with the value_info the
             writer records for every intermediate);
           - the ModelProto is what the writer promises: the ir_version that
             goes with the opset (IR_VERSIONS), one default-domain opset,
             static shapes (but the NAME_dK dimension of an output whose
             shape a run-time If picks), raw_data initializers, unique node
             names;
           - exporting the exported model again gives the same model (node
             names aside).
ort        exports the ONNX backend test case in CASEDIR, runs the exported
           model under ONNX Runtime (scripts/ort_run.js) on the case's inputs
           and compares with its expected outputs: |y - ref| <= atol + rtol *
           |ref| (integers exactly, NaN matching NaN), as `onnxc check` does.
           Exit 77 (skipped) when node or onnxruntime-node is missing.
mixed      CASEDIR's model exported in mixed precision (ONNXC-ARGS give
           --precision mixed ...): `roundtrip`, at least one Cast, and, where
           ONNX Runtime is installed, every float output within relative L2
           error MAX_REL_L2 of the case's FP32 reference (zoo.mixed's bound).
half       a hand-written f16/bf16 model (FILE.oir): exported (at opsets 17
           and 13, both accepted by the checker) and read back unchanged,
           initializers FLOAT16 (10) / BFLOAT16 (16) with 2-byte raw_data
           holding the same bits, Cast targets as ONNX codes, and, where ONNX
           Runtime is installed, its outputs against numpy, bit for bit.
small      every golden case (tests/golden/cases.txt: each model with its
           arguments, mixed precision included) through `roundtrip`, and,
           where ONNX Runtime is installed, the original and the exported
           model run on the same random inputs must agree (for the
           mixed-precision cases: relative L2 error at most 1e-2). A case in
           REFUSED must get its diagnostic instead.
node       the ONNX backend node tests onnxc passes (tests/node/expected.txt)
           whose ops the importer normalizes (FORMS; --all: every one),
           exported with their inputs' shapes bound (and the inputs the
           import needs as constants frozen, as `onnxc check` does), run
           under ONNX Runtime against the cases' reference outputs (rtol
           1e-3, atol 1e-7). Where the export misses the reference, ONNX
           Runtime runs the original (with the same inputs frozen): if it
           cannot load it either, or computes the same as for the export,
           the deviation is ONNX Runtime's and is reported, not failed.
           Exit 77 (skipped) when node or onnxruntime-node is missing.
cases      error cases (each a diagnostic naming the node or value, exit
           status 1; bad usage exit status 2) and export forms that need an
           opset (allowzero) or a decomposition (Mish).
ifs        a model of two nested Ifs on run-time conditions exported as If
           nodes (`roundtrip`, the branches' ops, outputs and node names),
           both it and the export checked against numpy for every way the
           conditions go; a branch replaced by a trap is refused.
opsets     FORMS.oir (the op families whose form changes from opset 18)
           exported at each OPSET (18 to 25) and at 17 (without what 17
           cannot express): every node in the form its op's version there
           defines (check_forms: axes inputs, Mish, no num_outputs, ...),
           the ModelProto as `roundtrip` checks it, read back to the same IR,
           and, where ONNX Runtime is installed,
           its outputs against onnxc's own (`onnxc run` of FORMS.oir).
           Also a bf16 Conv (opset 22) and Resize's half_pixel_symmetric
           (19), read back and run. The onnx package's checker runs only
           at the opsets it knows (Debian's onnx 1.12: up to 17).

Exit status: 0 pass, 1 fail, 77 skipped.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

SKIP = 77


class Fail(Exception):
    pass


def run(cmd, expect=0, what=None):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if expect is not None and r.returncode != expect:
        raise Fail("%s exited with status %d (expected %d)\n  command: %s\n%s%s" % (
            what or os.path.basename(cmd[0]), r.returncode, expect, " ".join(cmd),
            r.stdout[-3000:], r.stderr[-3000:]))
    return r


# ---------------------------------------------------------------------------
# Round trip
# ---------------------------------------------------------------------------

NODE_LINE = re.compile(r'^(.* = [a-z_]+\(.*\)(?: \{.*\})?(?: if %\S+)?) @(.+)$')


def unquote(name):
    return name[1:-1] if name.startswith('"') else name


def same_node_name(na, nb):
    """nb is na, or na with the writer's .K suffix on one of its path parts
    (a loop's or If's name taken, the names under it follow); a node the
    reader made for a loop (its iteration number, its condition) is written
    in the loop's body and named there when read back."""
    pa, pb = na.split("/"), nb.split("/")
    if len(pb) == len(pa) + 2 and pb[-2] == "body":
        pb = pb[2:]  # a node the reader made for a loop, inside its body: LOOP/body/NAME.K
    return len(pa) == len(pb) and all(
        x == y or re.fullmatch(re.escape(x) + r"\.[0-9]+", y) for x, y in zip(pa, pb))


def compare_ir(expected, got, label):
    """Equal line by line; a node name may carry the writer's .K suffix."""
    e, g = expected.splitlines(), got.splitlines()
    problems = []
    if len(e) != len(g):
        problems.append("%d lines exported, %d read back" % (len(e), len(g)))
    for k, (a, b) in enumerate(zip(e, g)):
        if a == b:
            continue
        ma, mb = NODE_LINE.match(a), NODE_LINE.match(b)
        if ma and mb and ma.group(1) == mb.group(1):
            if same_node_name(unquote(ma.group(2)), unquote(mb.group(2))):
                continue
        problems.append("line %d:\n  exported:  %s\n  read back: %s" % (k + 1, a, b))
        if len(problems) > 10:
            break
    if problems:
        raise Fail("%s: the IR read back differs from the IR exported:\n%s" % (
            label, "\n".join(problems)))


def last_dump(stderr):
    """The IR after the last pass (--dump-after=all prints it after each)."""
    marker = "# after pass "
    if marker not in stderr:
        raise Fail("the export printed no IR after its passes:\n%s" % stderr[-2000:])
    text = stderr[stderr.rindex(marker):]
    return text[text.index("\n") + 1:]


# bytes per element by TensorProto.DataType (numpy has no bfloat16)
ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


# The ModelProto's ir_version for each opset export writes: that of the ONNX
# release that brought the opset (ONNX's docs/Versioning.md: 1.13 opset 18
# with IR 8, 1.14 opset 19 with IR 9, ..., 1.20 opset 25 with IR 13), never
# below the 8 export has always written.
IR_VERSIONS = {13: 8, 14: 8, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11,
               24: 12, 25: 13}
# the last opset the installed onnx package's checker knows
CHECKER_MAX_OPSET = onnx.defs.onnx_opset_version()


def check_proto(path, opset):
    m = onnx.load(path)
    if m.ir_version != IR_VERSIONS[opset]:
        raise Fail("ir_version is %d, not %d (opset %d)" % (m.ir_version, IR_VERSIONS[opset],
                                                          opset))
    if [(o.domain, o.version) for o in m.opset_import] != [("", opset)]:
        raise Fail("opset_import is %s" % m.opset_import)
    if m.producer_name != "onnxc":
        raise Fail("producer_name is %r" % m.producer_name)
    g = m.graph
    outputs = {vi.name for vi in g.output}
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        tt = vi.type.tensor_type
        # an output whose shape a run-time If picks has NAME_dK where the
        # branches' dimension K differs (docs/cli.md, export)
        if not tt.HasField("shape") or any(
                not d.HasField("dim_value") and not (
                    vi.name in outputs and d.dim_param == "%s_d%d" % (vi.name, k))
                for k, d in enumerate(tt.shape.dim)):
            raise Fail("value '%s' has no static shape" % vi.name)
    for t in g.initializer:
        size = ITEMSIZE[t.data_type]
        n = int(np.prod(t.dims, dtype=np.int64))
        if not t.HasField("raw_data") or len(t.raw_data) != n * size:
            raise Fail("initializer '%s' has %d bytes of raw_data for %d elements" % (
                t.name, len(t.raw_data), n))
        if t.data_location != onnx.TensorProto.DEFAULT or t.external_data:
            raise Fail("initializer '%s' uses external data" % t.name)
    names = [n.name for n in g.node]
    if len(set(names)) != len(names) or "" in names:
        raise Fail("node names are not unique and non-empty")
    return m


def unnamed(path):
    """The serialized model without node names (re-importing renames the
    copies it inserts for graph outputs after their outputs)."""
    m = onnx.load(path)
    for n in m.graph.node:
        n.name = ""
    return m.SerializeToString()


def roundtrip(onnxc, model, args, work, opset=17):
    """Exports model at opset (given to onnxc unless it is the default, 17)."""
    out = os.path.join(work, "exported.onnx")
    if opset != 17:
        args = args + ["--opset", str(opset)]
    r = run([onnxc, "export", model, "-o", out, "--verify", "--dump-after=all"] + args)
    exported = last_dump(r.stderr)
    back = run([onnxc, "ir", out, "--verify"]).stdout
    compare_ir(exported, back, os.path.basename(model))
    if opset <= CHECKER_MAX_OPSET:
        onnx.checker.check_model(out, full_check=True)
    nodes = len(check_proto(out, opset).graph.node)
    again = os.path.join(work, "again.onnx")
    run([onnxc, "export", out, "-o", again] + (["--opset", str(opset)] if opset != 17 else []))
    with open(out, "rb") as f1, open(again, "rb") as f2:
        same = f1.read() == f2.read()
    if not same and unnamed(out) != unnamed(again):
        raise Fail("exporting the exported model gives a different model")
    return out, nodes


def cmd_roundtrip(argv):
    onnxc, model, args = argv[0], argv[1], argv[2:]
    with tempfile.TemporaryDirectory() as work:
        _, nodes = roundtrip(onnxc, model, args, work)
    print("ok: %s exported (%d nodes), read back to the same IR, checker passed" % (
        model, nodes))


# ---------------------------------------------------------------------------
# ONNX Runtime
# ---------------------------------------------------------------------------

def ort_available(ort_run):
    node = shutil.which("node")
    if not node:
        return None, "node (Node.js) is not installed"
    r = subprocess.run([node, ort_run, "--check"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, "onnxruntime-node cannot be loaded: " + r.stderr.strip()
    return node, r.stdout.strip()


def ort_batch(node, ort_run, jobs, work):
    """Runs each (model, {input name: array}) in one ort_run.js process;
    returns per job the outputs in graph order, or the error message."""
    import json
    spec = []
    work = tempfile.mkdtemp(prefix="ort_", dir=work)
    for j, (model, feeds) in enumerate(jobs):
        d = os.path.join(work, str(j))
        os.makedirs(d)
        inputs = []
        for k, (name, a) in enumerate(feeds.items()):
            path = os.path.join(d, "input_%d.npy" % k)
            np.save(path, a)
            inputs.append([name, path])
        spec.append({"model": model, "inputs": inputs, "output_dir": os.path.join(d, "out")})
    with open(os.path.join(work, "jobs.json"), "w") as f:
        json.dump(spec, f)
    r = run([node, ort_run, "--batch", os.path.join(work, "jobs.json")], expect=None)
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if len(lines) != len(jobs):
        raise Fail("ort_run.js --batch ran %d of %d models:\n%s" % (len(lines), len(jobs),
                                                                     r.stderr[-2000:]))
    return [line["error"] if "error" in line else
            [np.load(o["file"]) for o in line["outputs"]] for line in lines]


def ort_outputs(node, ort_run, model, feeds, work):
    """Runs one model on {input name: array}; the outputs in graph order."""
    res = ort_batch(node, ort_run, [(model, feeds)], work)[0]
    if isinstance(res, str):
        raise Fail(res)
    return res


def mismatches(y, ref, rtol, atol):
    """Elements outside |y - ref| <= atol + rtol * |ref|, and the worst error."""
    if y.shape != ref.shape or y.dtype != ref.dtype:
        raise Fail("output is %s %s, the reference %s %s" % (y.dtype, y.shape, ref.dtype,
                                                             ref.shape))
    if y.dtype.kind not in "fc":
        return int(np.count_nonzero(y != ref)), 0.0
    a, b = y.astype(np.float64), ref.astype(np.float64)
    nan = np.isnan(a) | np.isnan(b)
    with np.errstate(invalid="ignore"):
        err = np.where(a == b, 0.0, np.abs(a - b))
    bad = np.where(nan, np.isnan(a) != np.isnan(b), ~(err <= atol + rtol * np.abs(b)))
    worst = float(np.max(np.where(nan, 0, err), initial=0.0))
    return int(np.count_nonzero(bad)), worst


def load_set(case, prefix):
    d = os.path.join(case, "test_data_set_0")
    out = []
    k = 0
    while os.path.exists(os.path.join(d, "%s_%d.pb" % (prefix, k))):
        t = onnx.load_tensor(os.path.join(d, "%s_%d.pb" % (prefix, k)))
        out.append((t.name, numpy_helper.to_array(t)))
        k += 1
    return out


def rel_l2(y, ref):
    a, b = y.astype(np.float64), ref.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def ort_vs_reference(node, ort_run, model, case, work, judge):
    """Runs model under ONNX Runtime on the case's inputs; judge(y, ref)
    returns (failed, text) per output. Raises Fail when one fails."""
    graph = onnx.load(model, load_external_data=False).graph
    inputs = load_set(case, "input")
    names = [i.name for i in graph.input]
    if len(inputs) != len(names):
        raise Fail("the case has %d inputs, the exported model %d" % (len(inputs), len(names)))
    outs = ort_outputs(node, ort_run, model, {n: a for n, (_, a) in zip(names, inputs)}, work)
    refs = load_set(case, "output")
    if len(refs) != len(outs):
        raise Fail("%d outputs, %d references" % (len(outs), len(refs)))
    failed = False
    for k, ((_, ref), y) in enumerate(zip(refs, outs)):
        bad, text = judge(y, ref)
        print("output %d %s: %s" % (k, graph.output[k].name, text))
        failed |= bad
    if failed:
        raise Fail("ONNX Runtime's outputs of the exported model differ from the reference")


def cmd_ort(argv):
    onnxc, ort_run, case = argv[0], argv[1], argv[2]
    rtol, atol, args = float(argv[3]), float(argv[4]), argv[5:]
    node, why = ort_available(ort_run)
    if not node:
        print("SKIP: %s (the CI machines install only Debian packages; "
              "scripts/bench-cpu installs onnxruntime-node from npm)" % why)
        return SKIP

    def judge(y, ref):
        bad, worst = mismatches(y, ref, rtol, atol)
        return bad > 0, "max abs err %.3g%s" % (worst, " - %d MISMATCHES" % bad if bad else "")

    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "exported.onnx")
        run([onnxc, "export", os.path.join(case, "model.onnx"), "-o", model] + args)
        ort_vs_reference(node, ort_run, model, case, work, judge)
    print("ok: %s exported and run by ONNX Runtime (%s) matches its reference" % (case, why))
    return 0


def cmd_mixed(argv):
    onnxc, ort_run, case, bound, args = argv[0], argv[1], argv[2], float(argv[3]), argv[4:]
    node, why = ort_available(ort_run)

    def judge(y, ref):
        if y.dtype.kind != "f":
            bad = mismatches(y, ref, 0, 0)[0]
            return bad > 0, "%d mismatches" % bad
        err = rel_l2(y, ref)
        return not err <= bound, "relative L2 error %.3g (bound %g)" % (err, bound)

    with tempfile.TemporaryDirectory() as work:
        model, nodes = roundtrip(onnxc, os.path.join(case, "model.onnx"), args, work)
        g = onnx.load(model, load_external_data=False).graph
        halves = sum(t.data_type in (10, 16) for t in g.initializer)
        casts = sum(n.op_type == "Cast" for n in g.node)
        print("exported in mixed precision (%d nodes, %d Casts, %d half initializers), read "
              "back to the same IR, checker passed" % (nodes, casts, halves))
        if not casts:
            raise Fail("the mixed-precision export has no Cast")
        if not node:
            print("note: ONNX Runtime not run: %s" % why)
        else:
            ort_vs_reference(node, ort_run, model, case, work, judge)
            print("ONNX Runtime's outputs are within the mixed-precision bound")
            ort_vs_onnxc_mixed(node, ort_run, onnxc, model, case, args, work)
    return 0


# ONNX Runtime and onnxc compute the same mixed-precision graph: the same
# tensors are half and rounded at the same places, but each accumulates in
# its own order and onnxc's GEMM epilogues round once where the graph says
# twice. Their rounding errors are independent draws of the same size, so
# the two differ by about sqrt(2) times what each differs from FP32 (a
# badly conditioned model amplifies both alike); a wrong or misplaced cast
# shows as far more. The bound: 1.5 times the larger of their errors
# against the FP32 reference.
SAME_GRAPH_FACTOR = 1.5


def ort_vs_onnxc_mixed(node, ort_run, onnxc, model, case, args, work):
    graph = onnx.load(model, load_external_data=False).graph
    inputs = load_set(case, "input")
    names = [i.name for i in graph.input]
    outs = ort_outputs(node, ort_run, model, {n: a for n, (_, a) in zip(names, inputs)}, work)
    out_dir = os.path.join(work, "onnxc_mixed")
    cmd = [onnxc, "run", os.path.join(case, "model.onnx"), "--repeat", "1", "--output-dir",
           out_dir, "--cache-dir", os.path.join(work, "cache")]
    for k, n in enumerate(names):
        cmd += ["--input", "%s=%s" % (n, os.path.join(case, "test_data_set_0",
                                                     "input_%d.pb" % k))]
    run(cmd + [a for a in args if not a.startswith("--shape")])
    failed = False
    refs = load_set(case, "output")
    for k, y in enumerate(outs):
        mine = np.load(os.path.join(out_dir, graph.output[k].name + ".npy"))
        if y.dtype.kind != "f":
            bad = mismatches(y, mine, 0, 0)[0]
            text, wrong = "%d mismatches" % bad, bad > 0
        else:
            ref = refs[k][1]
            bound = SAME_GRAPH_FACTOR * max(rel_l2(y, ref), rel_l2(mine, ref))
            err = rel_l2(y, mine)
            text = "relative L2 difference %.3g (bound %.3g)" % (err, bound)
            wrong = not err <= bound
        print("output %d %s: ONNX Runtime vs onnxc, both mixed: %s" % (k, graph.output[k].name,
                                                                        text))
        failed |= wrong
    if failed:
        raise Fail("ONNX Runtime's outputs of the exported mixed model differ from onnxc's")


# ---------------------------------------------------------------------------
# Half precision
# ---------------------------------------------------------------------------

def bf16_bits(x):
    """float32 -> bfloat16 bit patterns, round to nearest even (as ir/dtype.c)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_to_f32(bits):
    return (np.asarray(bits, np.uint32) << 16).view(np.float32)


def half_reference(x, scale, bias_bits):
    y = (x.astype(np.float16) * scale).astype(np.float16)
    c = np.clip(y, np.float16(-1), np.float16(6))
    p = np.pad(c, ((0, 0), (1, 1)), constant_values=np.float16(0.5))
    y16 = p[:, 5::-2].reshape(3, 2).astype(np.float32)
    yb = np.concatenate([bf16_to_f32(bf16_bits(x)), bf16_to_f32(bias_bits).reshape(1, 4)])
    return [y16, yb]


def cmd_half(argv):
    onnxc, ort_run, oir = argv
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "half.onnx")
        run([onnxc, "export", oir, "-o", out, "--verify"])
        compare_ir(run([onnxc, "ir", oir]).stdout, run([onnxc, "ir", out, "--verify"]).stdout,
                   oir)
        onnx.checker.check_model(out, full_check=True)
        m = check_proto(out, 17)
        inits = {t.name: t for t in m.graph.initializer}
        expect = {  # name: (ONNX data type, raw bytes)
            "scale": (10, np.array([0.5, -1.25, 2, 0.099975586], np.float16).tobytes()),
            "bias": (16, bf16_bits([0.125, 3, -0.5, 1.5]).tobytes()),
            "c.min": (10, np.float16(-1).tobytes()),
            "c.max": (10, np.float16(6).tobytes()),
            "p.value": (10, np.float16(0.5).tobytes()),
        }
        for name, (dt, raw) in expect.items():
            t = inits.get(name)
            if t is None:
                raise Fail("no initializer '%s' (have %s)" % (name, sorted(inits)))
            if t.data_type != dt or t.raw_data != raw:
                raise Fail("initializer '%s' is type %d, bytes %s; expected %d, %s" % (
                    name, t.data_type, t.raw_data.hex(), dt, raw.hex()))
        out13 = os.path.join(work, "half13.onnx")
        run([onnxc, "export", oir, "-o", out13, "--opset", "13"])
        onnx.checker.check_model(out13, full_check=True)
        check_proto(out13, 13)
        casts = [onnx.helper.get_attribute_value(n.attribute[0]) for n in m.graph.node
                 if n.op_type == "Cast"]
        if casts != [10, 1, 16, 1]:
            raise Fail("Cast targets are %s, expected [10, 1, 16, 1]" % casts)
        node, why = ort_available(ort_run)
        if not node:
            print("note: ONNX Runtime not run: %s" % why)
        else:
            x = np.array([[1.5, -3, 0.3, 7], [2.25, 100, -0.7, 0.001]], np.float32)
            outs = ort_outputs(node, ort_run, out, {"x": x}, work)
            scale = np.frombuffer(expect["scale"][1], np.float16)
            refs = half_reference(x, scale, np.frombuffer(expect["bias"][1], np.uint16))
            for k, (y, ref) in enumerate(zip(outs, refs)):
                bad, worst = mismatches(y, ref, 0, 0)
                if bad:
                    raise Fail("ONNX Runtime output %d differs from numpy by up to %g:\n"
                               "%s\n%s" % (k, worst, y, ref))
            print("ONNX Runtime's outputs are numpy's, bit for bit")
    print("ok: %s exported with f16/bf16 initializers and Casts, read back unchanged" % oir)


# ---------------------------------------------------------------------------
# The golden models
# ---------------------------------------------------------------------------

def random_inputs(graph, rng):
    inits = {t.name for t in graph.initializer}
    feeds = {}
    for vi in graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dt = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tt.elem_type]
        shape = [d.dim_value for d in tt.shape.dim]
        if np.issubdtype(dt, np.floating):
            feeds[vi.name] = rng.standard_normal(shape).astype(dt)
        elif dt == np.bool_:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(dt)
        else:
            feeds[vi.name] = rng.integers(0, 3, shape).astype(dt)
    return feeds


# Golden cases that cannot be exported, and the diagnostic they must get.
REFUSED = {
    "amp_first_conv.bf16": "node 'Conv_0' (conv): cannot export: ONNX Conv at opset 17 "
                           "does not take bf16 for its input 0",
    # CumProd exists from opset 26, past the writer's last (25)
    "cumprod_forms": "cannot export: CumProd exists from opset 26, after the last opset onnxc "
                     "export writes (25)",
    # BitCast too
    "bitcast_forms": "node 'BitCast_0' (bitcast): cannot export: BitCast exists from opset 26, "
                     "after the last opset onnxc export writes (25)",
    # a saturate=0 Cast to float8 imports as a Cast and a Where choosing the
    # infinities, and ONNX's Where takes no float8 at any opset (Where-16's
    # types are IR 4's): the IR cannot be written back
    "storage_types": "node 'Cast_1' (where): cannot export: ONNX Where at opset 17 does not "
                     "take f8e5m2",
    # LinearAttention from 27
    "linear_attention_forms": "node 'LinearAttention_0' (linear_attention): cannot export: "
                              "LinearAttention exists from opset 27, after the last opset "
                              "onnxc export writes (25)",
}
# Golden cases whose ops exist only from a later opset than the default 17
EXPORT_OPSET = {"bitwise_forms": 18, "attention_forms": 24}


def cmd_small(argv):
    onnxc, ort_run, d, cases_txt = argv
    node, why = ort_available(ort_run)
    cases = []  # (label, model name, onnxc arguments)
    with open(cases_txt) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                parts = line.rstrip("\n").split("|")
                # --codegen is onnxc ir's alone (export runs those passes)
                args = [a for a in (parts[1].split() if len(parts) > 1 else [])
                        if a != "--codegen"]
                cases.append((parts[2] if len(parts) > 2 and parts[2] else parts[0],
                              parts[0], args))
    jobs, notes = [], {}
    with tempfile.TemporaryDirectory() as work:
        for name, model_name, args in cases:
            model = os.path.join(d, model_name + ".onnx")
            os.makedirs(os.path.join(work, name))
            if name in REFUSED:
                r = run([onnxc, "export", model, "-o", os.path.join(work, "x.onnx")] + args,
                        expect=1)
                if REFUSED[name] not in r.stderr:
                    raise Fail("%s: expected '%s', got:\n%s" % (name, REFUSED[name], r.stderr))
                notes[name] = "refused as it must be: " + REFUSED[name]
                print("ok: %s %s" % (name, notes[name]))
                continue
            try:
                out, nodes = roundtrip(onnxc, model, args, os.path.join(work, name),
                                       EXPORT_OPSET.get(name, 17))
            except (Fail, onnx.checker.ValidationError,
                    onnx.shape_inference.InferenceError) as e:
                raise Fail("%s: %s" % (name, e))
            print("ok: %s (%d nodes) exported, read back to the same IR, checker passed" % (
                name, nodes))
            graph = onnx.load(out, load_external_data=False).graph
            if any(v.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
                   for v in list(graph.input) + list(graph.output)):
                notes[name] = "not run (ONNX Runtime's Node.js binding has no bfloat16)"
                continue
            # inputs seeded by the model's name: a new small model leaves the others' alone
            feeds = random_inputs(graph, np.random.default_rng(zlib.crc32(name.encode())))
            if sum(a.size for a in feeds.values()) > 1 << 20:
                notes[name] = "not run under ONNX Runtime (inputs too large for a quick test)"
                continue
            mode = " ".join(args)
            jobs += [(name, out, feeds, mode), (name, model, feeds, mode)]
        if not node:
            print("note: ONNX Runtime not run: %s" % why)
            return 0
        results = ort_batch(node, ort_run, [(m, f) for _, m, f, _ in jobs], work)
    for k in range(0, len(jobs), 2):
        name, got, want = jobs[k][0], results[k], results[k + 1]
        if isinstance(got, str):
            raise Fail("%s: ONNX Runtime cannot run the exported model: %s" % (name, got))
        if isinstance(want, str):  # some hand-made models are too loose for ORT
            notes[name] = "the export runs; ONNX Runtime rejects the original: " + want[-160:]
            continue
        mixed = "mixed" in jobs[k][3]
        for i, (y, ref) in enumerate(zip(got, want)):
            if mixed:  # half precision inside: the FP32 function within rounding
                rel = rel_l2(y, ref)
                if not rel <= 1e-2:
                    raise Fail("%s: output %d of the exported mixed-precision model is %g "
                               "(relative L2) from the original's under ONNX Runtime" % (
                                   name, i, rel))
                continue
            bad, worst = mismatches(y, ref, 1e-6, 1e-6)
            if bad:
                raise Fail("%s: output %d of the exported model differs from the original's "
                           "under ONNX Runtime by up to %g" % (name, i, worst))
        notes[name] = ("within half-precision rounding (relative L2 <= 1e-2) of the FP32 "
                       "original" if mixed else "same outputs as the original") + \
            " under ONNX Runtime"
    for name, _, _ in cases:
        print("%s: %s" % (name, notes[name]))
    return 0


# ---------------------------------------------------------------------------
# The ONNX backend node tests
# ---------------------------------------------------------------------------

# an input the import needs as a constant: a shape or bound ("must be a
# constant"), or the values a data-dependent shape follows from
CONST_NEEDED = re.compile(r"input \d+ (?:\([^)]*\) )?'([^']*)'"
                          r"(?: must be a constant|, which are computed at run time)")


def export_node_case(onnxc, case, out, opset_args=()):
    """Exports CASE/model.onnx with its inputs' shapes bound, freezing the
    inputs the import needs as constants (as `onnxc check` does: those it
    names, or all of them when it names a value computed from them).
    Returns the inputs still fed ({name: array}, or the export's error
    message) and the model to compare with under ONNX Runtime."""
    inputs = load_set(case, "input")
    names = {n for n, _ in inputs}
    frozen = set()
    while True:
        args = []
        for k, (name, a) in enumerate(inputs):
            if name in frozen:
                path = os.path.join(case, "test_data_set_0", "input_%d.pb" % k)
                args += ["--const", "%s=%s" % (name, path)]
            else:
                args += ["--shape", "%s=%s" % (name, "x".join(str(d) for d in a.shape))]
        r = run([onnxc, "export", os.path.join(case, "model.onnx"), "-o", out] + args +
                list(opset_args), expect=None)
        if r.returncode == 0:
            feeds = {n: a for n, a in inputs if n not in frozen}
            return feeds, frozen_original(case, frozen, out)
        wanted = set(CONST_NEEDED.findall(r.stderr))
        wanted = wanted & names if wanted <= names else names
        if not wanted or wanted <= frozen:
            return r.stderr.strip() or "exit status %d" % r.returncode, None
        frozen |= wanted


def frozen_original(case, frozen, out):
    """The case's model with the frozen inputs as initializers: what ONNX
    Runtime should compute the same for as for the export (it does not
    always compute the same as with those values fed at run time)."""
    model = os.path.join(case, "model.onnx")
    if not frozen:
        return model
    m = onnx.load(model)
    for k, (name, a) in enumerate(load_set(case, "input")):
        if name in frozen:
            m.graph.initializer.append(numpy_helper.from_array(a, name))
    keep = [vi for vi in m.graph.input if vi.name not in frozen]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    path = out[:-len(".onnx")] + ".original.onnx"
    onnx.save(m, path)
    return path


def node_verdict(exported, original, refs):
    """(why the exported model fails, or None; a note on an excused
    deviation, or None). exported and original are ONNX Runtime's outputs
    or error messages (original None: not run). ONNX Runtime's own
    deviations from the reference (it cannot load the original either, or
    computes the same outputs for both) are excused."""
    def check(res):
        if isinstance(res, str):
            return res[-300:]
        for k, ((_, ref), y) in enumerate(zip(refs, res)):
            try:
                bad, worst = mismatches(y, ref, 1e-3, 1e-7)
            except Fail as e:
                return "output %d: %s" % (k, e)
            if bad:
                return "output %d: %d elements differ (max abs err %g)" % (k, bad, worst)
        return None
    why = check(exported)
    if why is None:
        return None, None
    if original is None or check(original) is None:
        return why, None
    if isinstance(original, str) and isinstance(exported, str):
        return None, "ONNX Runtime cannot run the original either: " + original[-200:]
    if isinstance(original, list) and isinstance(exported, list) and all(
            mismatches(y, o, 0, 0)[0] == 0 for y, o in zip(exported, original)):
        return None, "ONNX Runtime computes the same for the original (%s)" % why
    return why, None


# The ONNX ops the importer normalizes, so that the writer has to undo it:
# shape operands made attributes, auto_pad resolved, ops renamed or
# rewritten, and those whose form the writer picks by opset (the Reduce*
# ops' axes, ScatterElements' reduction). The node tests of these (not
# _expanded) are what `node` runs unless given --all (every passing case:
# about 4 times as long).
FORMS = {"Resize", "Upsample", "Slice", "Pad", "Clip", "Split", "Reshape", "Flatten",
         "Squeeze", "Unsqueeze", "ReduceSum", "Expand", "Tile", "Trilu", "CumSum", "Cast",
         "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "ReduceMean",
         "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
         "ReduceLogSum", "ReduceLogSumExp", "ScatterElements"}


# What the writer refuses by design (a node test onnxc passes but cannot
# write back): a run-time If's guarded branches (docs/ir.md, Guards).
NODE_REFUSALS = ("the merge of an If whose condition is known only at run time",)


def node_cases(d, expected, everything):
    """The cases onnxc passes (tests/node/expected.txt), those with FORMS ops
    unless everything."""
    cases = []
    with open(expected) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2 or parts[1] != "pass":
                continue
            if not everything:
                g = onnx.load(os.path.join(d, parts[0], "model.onnx")).graph
                if parts[0].endswith("_expanded") or not {n.op_type for n in g.node} & FORMS:
                    continue
            cases.append(parts[0])
    return cases


def cmd_node(argv):
    from concurrent.futures import ThreadPoolExecutor
    everything = "--all" in argv
    argv = [a for a in argv if a != "--all"]
    opset_args = argv[4:6] if argv[4:5] == ["--opset"] else []
    onnxc, ort_run, d, expected = argv[:4]
    node, why = ort_available(ort_run)
    if not node:
        print("SKIP: %s" % why)
        return SKIP
    cases = node_cases(d, expected, everything)
    failed, excused = [], []
    with tempfile.TemporaryDirectory() as work, ThreadPoolExecutor(os.cpu_count()) as pool:
        exports = pool.map(lambda c: export_node_case(onnxc, os.path.join(d, c),
                                                      os.path.join(work, c + ".onnx"),
                                                      opset_args), cases)
        jobs = []
        for c, (feeds, original) in zip(cases, exports):
            if isinstance(feeds, str):
                refusal = [r for r in NODE_REFUSALS if r in feeds]
                if refusal:  # the writer refuses it, as docs/cli.md says
                    excused.append((c, "refused by the writer: " + refusal[0]))
                else:
                    failed.append((c, "the export failed: " + feeds.splitlines()[0]))
                continue
            jobs.append((c, feeds, original))
        results = ort_batch(node, ort_run, [(os.path.join(work, c + ".onnx"), f)
                                            for c, f, _ in jobs], work)
        refs = [load_set(os.path.join(d, c), "output") for c, _, _ in jobs]
        # the original only where the export does not match the reference
        again = [j for j, res in enumerate(results) if node_verdict(res, None, refs[j])[0]]
        originals = dict(zip(again, ort_batch(node, ort_run, [(jobs[j][2], jobs[j][1])
                                                              for j in again], work)))
    for j, (c, _, _) in enumerate(jobs):
        bad, note = node_verdict(results[j], originals.get(j), refs[j])
        if bad:
            failed.append((c, bad))
        elif note:
            excused.append((c, note))
    for c, msg in excused:
        print("excused: %s: %s" % (c, msg))
    for c, msg in failed:
        print("FAILED: %s: %s" % (c, msg))
    print("%d node tests (%s onnxc passes) exported%s and run by ONNX Runtime: %d match "
          "the reference, %d differ as ONNX Runtime does on the original, %d failed" % (
              len(cases), "all" if everything else "the normalized forms",
              " at opset " + opset_args[1] if opset_args else "",
              len(cases) - len(excused) - len(failed), len(excused), len(failed)))
    return 1 if failed else 0


# ---------------------------------------------------------------------------
# Error cases and special forms
# ---------------------------------------------------------------------------

HEAD = 'onnxc-ir 1\nmodule "m"\n'

# bodies of the cases with forms that need an opset
SCATTER_MAX = ("input %x : f32[3,2]\nconst %i : i64[1,2] = [2, 0]\n"
               "const %u : f32[1,2] = [7, -7]\n"
               "%y : f32[3,2] = scatter_elements(%x, %i, %u) {axis=0, reduction=\"max\"} @sc\n"
               "output %y\n")
RESIZE_SYMMETRIC = (
    "input %x : f32[1,1,3,4]\n%y : f32[1,1,5,7] = resize(%x) {mode=\"linear\", "
    "coord=\"half_pixel_symmetric\", nearest=\"round_prefer_floor\", cubic_a=-0.75, "
    "exclude_outside=0, extrapolation=0, scales=[], sizes=[1,1,5,7], roi=[]} @rs\noutput %y\n")
BF16_CONV = ("input %x : bf16[1,2,5,5]\ninput %w : bf16[3,2,3,3]\n"
             "%y : bf16[1,3,3,3] = conv(%x, %w) {strides=[1,1], pads=[0,0,0,0], "
             "dilations=[1,1], group=1} @conv\noutput %y\n")

CASES = [
    # (name, IR text body, extra args, exit status, what stderr must contain)
    ("weight without data",
     "input %x : f32[20]\nconst %w : f32[20] = weight 0x0123456789abcdef\n"
     "%y : f32[20] = add(%x, %w) @add\noutput %y\n", [], 1,
     "constant 'w' has no data"),
    ("LayerNormalization before opset 17",
     "input %x : f32[2,4]\nconst %g : f32[4] = [1, 2, 3, 4]\n"
     "%y : f32[2,4] = layer_norm(%x, %g) {axis=1, epsilon=1e-05} @ln\noutput %y\n",
     ["--opset", "16"], 1,
     "node 'ln' (layer_norm): cannot export: LayerNormalization exists from opset 17"),
    ("HardSwish and Trilu at opset 13, both reported",
     "input %x : f32[3,3]\n%y : f32[3,3] = hard_swish(%x) @hs\n"
     "%z : f32[3,3] = trilu(%y) {upper=1, k=1} @tri\noutput %z\n",
     ["--opset", "13"], 1, "node 'tri' (trilu): cannot export: Trilu exists from opset 14"),
    ("a 0 in Reshape's shape at opset 13",
     "input %x : f32[0,3]\n%y : f32[3,0] = reshape(%x) {shape=[3,0]} @rs\noutput %y\n",
     ["--opset", "13"], 1, "node 'rs' (reshape): cannot export: the result has a dimension"),
    ("an integer Clip bound that is no integer",
     "input %x : i32[4]\n%y : i32[4] = clip(%x) {min=0.5, max=inf} @clip\noutput %y\n", [], 1,
     "node 'clip' (clip): cannot export: min 0.5 is not a value of type i32"),
    ("a bf16 Conv (ONNX takes bf16 for Conv from opset 22)",
     "input %x : bf16[1,2,5,5]\ninput %w : bf16[3,2,3,3]\n"
     "%y : bf16[1,3,3,3] = conv(%x, %w) {strides=[1,1], pads=[0,0,0,0], dilations=[1,1], "
     "group=1} @conv\noutput %y\n", [], 1,
     "node 'conv' (conv): cannot export: ONNX Conv at opset 17 does not take bf16 for its "
     "input 0 (it takes f32, f16, f64)"),
    ("an integer Relu at opset 13 (from 14)",
     "input %x : i32[4]\n%y : i32[4] = relu(%x) @r\noutput %y\n", ["--opset", "13"], 1,
     "node 'r' (relu): cannot export: ONNX Relu at opset 13 does not take i32"),
    ("opset 12", "input %x : f32[2]\n%y : f32[2] = relu(%x) @r\noutput %y\n",
     ["--opset", "12"], 2, "--opset takes 13 to 25"),
    ("opset 26", "input %x : f32[2]\n%y : f32[2] = relu(%x) @r\noutput %y\n",
     ["--opset", "26"], 2, "--opset takes 13 to 25"),
    ("ScatterElements max at opset 17 (from 18)", SCATTER_MAX, [], 1,
     "node 'sc' (scatter_elements): cannot export: ONNX ScatterElements takes reduction "
     "'max' from opset 18; the export targets opset 17 (use --opset 18 or later)"),
    ("ScatterElements add at opset 15 (from 16)", SCATTER_MAX.replace('"max"', '"add"'),
     ["--opset", "15"], 1, "ONNX ScatterElements takes reduction 'add' from opset 16; the "
     "export targets opset 15"),
    ("Resize's half_pixel_symmetric at opset 18 (from 19)", RESIZE_SYMMETRIC,
     ["--opset", "18"], 1, "node 'rs' (resize): cannot export: ONNX Resize takes "
     "coordinate_transformation_mode 'half_pixel_symmetric' from opset 19"),
    ("a bf16 Conv at opset 21 (from 22)", BF16_CONV, ["--opset", "21"], 1,
     "node 'conv' (conv): cannot export: ONNX Conv at opset 21 does not take bf16 for its "
     "input 0 (it takes f32, f16, f64)"),
    ("no -o", "input %x : f32[2]\n%y : f32[2] = relu(%x) @r\noutput %y\n",
     ["NO-OUTPUT"], 2, "no output file"),
    ("an unwritable output", "input %x : f32[2]\n%y : f32[2] = relu(%x) @r\noutput %y\n",
     ["-o", "/nonexistent-dir/x.onnx"], 1, "cannot write /nonexistent-dir/x.onnx"),
]


def export_case(onnxc, work, name, body, args):
    path = os.path.join(work, re.sub(r"\W+", "_", name) + ".oir")
    with open(path, "w") as f:
        f.write(HEAD + body)
    if "NO-OUTPUT" in args:
        return run([onnxc, "export", path], expect=None), None
    out = os.path.join(work, "out.onnx")
    if "-o" not in args:
        args = args + ["-o", out]
    return run([onnxc, "export", path] + args, expect=None), out


def cmd_cases(argv):
    onnxc = argv[0]
    with tempfile.TemporaryDirectory() as work:
        for name, body, args, status, text in CASES:
            r, _ = export_case(onnxc, work, name, body, args)
            if r.returncode != status or text not in r.stderr:
                raise Fail("%s: exit status %d, expected %d with '%s' in:\n%s" % (
                    name, r.returncode, status, text, r.stderr))
            print("ok: %s -> exit %d: %s" % (name, status, r.stderr.strip().splitlines()[0]))
        both = export_case(onnxc, work, "hs", CASES[2][1], ["--opset", "13"])[0].stderr
        if "node 'hs' (hard_swish)" not in both:
            raise Fail("the first of two unexportable nodes was not reported:\n" + both)
        # forms that depend on the opset or need a decomposition
        r, out = export_case(onnxc, work, "zero dims at opset 14", CASES[3][1],
                             ["--opset", "14"])
        if r.returncode != 0:
            raise Fail("Reshape to a 0 dimension at opset 14 failed:\n" + r.stderr)
        rs = onnx.load(out).graph.node[0]
        if rs.op_type != "Reshape" or [(a.name, a.i) for a in rs.attribute] != [("allowzero", 1)]:
            raise Fail("Reshape at opset 14 has attributes %s" % rs.attribute)
        onnx.checker.check_model(out, full_check=True)
        r, out = export_case(onnxc, work, "mish",
                             "input %x : f32[5]\n%y : f32[5] = mish(%x) @act\noutput %y\n", [])
        if r.returncode != 0:
            raise Fail("Mish failed:\n" + r.stderr)
        g = onnx.load(out).graph
        ops = [(n.op_type, n.name) for n in g.node]
        if ops != [("Softplus", "act/softplus"), ("Tanh", "act/tanh"), ("Mul", "act")]:
            raise Fail("Mish became %s" % ops)
        onnx.checker.check_model(out, full_check=True)
        r, out = export_case(onnxc, work, "int relu 14", "input %x : i32[4]\n"
                             "%y : i32[4] = relu(%x) @r\noutput %y\n", ["--opset", "14"])
        if r.returncode != 0:
            raise Fail("an integer Relu at opset 14 failed:\n" + r.stderr)
        onnx.checker.check_model(out, full_check=True)
        print("ok: Reshape to a 0 dimension uses allowzero at opset 14; Mish becomes "
              "x * tanh(softplus(x)); an integer Relu is fine at opset 14")


# ---------------------------------------------------------------------------
# Opsets 18 and later: the forms that change
# ---------------------------------------------------------------------------

IR_NODE = re.compile(r"^(%\S+ : [^=]+(?:, %\S+ : [^=]+)*) = ([a-z_0-9]+)\((.*?)\)(?: \{(.*)\})? "
                     r"@(\S+)$")


def ir_nodes(text):
    """The node lines of IR text: (results, op, {attribute: text}, name)."""
    nodes = []
    for line in text.splitlines():
        m = IR_NODE.match(line)
        if not m:
            continue
        results = [r.split(" : ")[0][1:] for r in re.split(r", (?=%)", m.group(1))]
        attrs = dict(re.findall(r'(\w+)=(\[[^\]]*\]|"[^"]*"|[^,]+)', m.group(4) or ""))
        nodes.append((results, m.group(2), attrs, unquote(m.group(5))))
    return nodes


def without_nodes(text, drop):
    """IR text without the nodes for which drop(op, name) holds and the
    outputs they define (the nodes must be leaves: nothing else may use
    their results)."""
    dropped = set()
    for results, op, _, name in ir_nodes(text):
        if drop(op, name):
            dropped |= set(results)
    keep = []
    for line in text.splitlines():
        m = IR_NODE.match(line)
        if m and drop(m.group(2), unquote(m.group(5))):
            continue
        if line.startswith("output %") and line[8:].strip() in dropped:
            continue
        keep.append(line)
    return "\n".join(keep) + "\n"


def ints(text):
    return [int(v) for v in text.strip("[]").split(",") if v.strip()]


def check_forms(path, ir_text, opset):
    """Each node of the exported model in the form its ONNX op's version at
    opset defines (written out here from ONNX's Changelog, independently of
    the writer's tables). Returns the number of IR nodes checked."""
    g = onnx.load(path).graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    by_name = {n.name: n for n in g.node}
    problems = []

    def attrs(n):
        return {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}

    def want(cond, name, what):
        if not cond:
            problems.append("node '%s': %s" % (name, what))

    def init(n, k):
        """Input k of n as a list, if it is an initializer."""
        return inits[n.input[k]].tolist() if len(n.input) > k and n.input[k] in inits else None

    nodes = ir_nodes(ir_text)
    for results, op, a, name in nodes:
        if op == "mish":
            if opset >= 18:
                n = by_name.get(name)
                want(n is not None and n.op_type == "Mish" and len(n.input) == 1, name,
                     "not one Mish node at opset %d" % opset)
            else:
                ops = [by_name[name + s].op_type if name + s in by_name else None
                       for s in ("/softplus", "/tanh", "")]
                want(ops == ["Softplus", "Tanh", "Mul"], name, "Mish became %s" % ops)
            continue
        n = by_name.get(name)
        if n is None:
            problems.append("no node '%s' (%s)" % (name, op))
            continue
        na = attrs(n)
        if op.startswith("reduce_"):
            axes = ints(a["axes"])
            if op == "reduce_sum" or opset >= 18:
                want(len(n.input) == 2 and init(n, 1) == axes and "axes" not in na, name,
                     "axes %s are not the int64 input at opset %d: inputs %s, attributes %s" %
                     (axes, opset, list(n.input), na))
            else:
                want(len(n.input) == 1 and na.get("axes") == axes, name,
                     "axes %s are not the attribute at opset %d: %s" % (axes, opset, na))
            want(na.get("keepdims") == int(a["keepdims"]) and
                 "noop_with_empty_axes" not in na, name, "attributes %s" % na)
        elif op == "split":
            want(len(n.input) == 2 and init(n, 1) == ints(a["split"]) and set(na) == {"axis"},
                 name, "inputs %s, attributes %s (the split input, no num_outputs)" % (
                     list(n.input), na))
        elif op == "pad":
            want(init(n, 1) == ints(a["pads"]) and len(n.input) <= 3 and
                 na == {"mode": a["mode"].strip('"').encode()}, name,
                 "inputs %s, attributes %s (pads for every axis, no axes input)" % (
                     list(n.input), na))
        elif op == "resize":
            scales = a["scales"] != "[]"
            want(len(n.input) == (3 if scales else 4) and n.input[1] == "" and
                 init(n, 2 if scales else 3) is not None, name, "inputs %s" % list(n.input))
            want(not {"antialias", "axes", "keep_aspect_ratio_policy"} & set(na) and
                 na.get("coordinate_transformation_mode") == a["coord"].strip('"').encode(),
                 name, "attributes %s" % na)
        elif op == "scatter_elements":
            want(na.get("reduction", b"none") == a["reduction"].strip('"').encode() and
                 na.get("axis") == int(a["axis"]), name, "attributes %s" % na)
    if problems:
        raise Fail("%s at opset %d:\n  %s" % (os.path.basename(path), opset,
                                              "\n  ".join(problems)))
    return len(nodes)


def read_back(onnxc, oir, out, opset, work):
    """The exported file (out: oir exported at opset) read back to the IR
    the export wrote. Returns a note on it."""
    exported = last_dump(run([onnxc, "export", oir, "-o", os.path.join(work, "again.onnx"),
                              "--opset", str(opset), "--dump-after=all"]).stderr)
    r = run([onnxc, "ir", out, "--verify"], expect=None)
    if r.returncode:
        raise Fail("%s exported at opset %d does not read back:\n%s" % (
            os.path.basename(oir), opset, r.stderr))
    compare_ir(exported, r.stdout, "%s at opset %d" % (os.path.basename(oir), opset))
    return "read back to the same IR"


def ort_vs_onnxc(node, ort_run, onnxc, oir, models, work, rng):
    """Each of models ((opset, file): exports of oir) under ONNX Runtime
    against onnxc's run of oir on the same random inputs: |y - ref| <= 1e-6
    + 1e-5 |ref|. Returns the number of outputs compared per model."""
    work = tempfile.mkdtemp(prefix="ort_vs_onnxc_", dir=work)
    g = onnx.load(models[0][1]).graph
    feeds = random_inputs(g, rng)
    ref_dir = os.path.join(work, "onnxc_out")
    cmd = [onnxc, "run", oir, "--repeat", "1", "--output-dir", ref_dir,
           "--cache-dir", os.path.join(work, "cache")]
    for k, (name, a) in enumerate(feeds.items()):
        path = os.path.join(work, "in_%d.npy" % k)
        np.save(path, a)
        cmd += ["--input", "%s=%s" % (name, path)]
    run(cmd)
    refs = [np.load(os.path.join(ref_dir, o.name.replace("/", "_") + ".npy")) for o in g.output]
    results = ort_batch(node, ort_run, [(m, feeds) for _, m in models], work)
    for (opset, _), res in zip(models, results):
        if isinstance(res, str):
            raise Fail("ONNX Runtime cannot run %s exported at opset %d: %s" % (
                os.path.basename(oir), opset, res[-600:]))
        for o, y, ref in zip(g.output, res, refs):
            bad, worst = mismatches(y, ref, 1e-5, 1e-6)
            if bad:
                raise Fail("%s at opset %d: ONNX Runtime's output '%s' differs from onnxc's "
                           "by up to %g (%d elements)" % (os.path.basename(oir), opset, o.name,
                                                          worst, bad))
    return len(g.output)


def cmd_opsets(argv):
    onnxc, ort_run, forms, opsets = argv[0], argv[1], argv[2], [int(v) for v in argv[3:]]
    node, why = ort_available(ort_run)
    rng = np.random.default_rng(18)
    with open(forms) as f:
        forms_text = f.read()
    with tempfile.TemporaryDirectory() as work:
        # the same model at opset 17 but for what 17 cannot express (max, min),
        # read back but for Mish (its definition reads back as three nodes)
        old, old_part = os.path.join(work, "forms17.oir"), os.path.join(work, "part17.oir")
        with open(old, "w") as f:
            f.write(without_nodes(forms_text, lambda _, name: name in ("scatter_max",
                                                                        "scatter_min")))
        with open(old_part, "w") as f:
            f.write(without_nodes(forms_text, lambda op, name: op == "mish" or name in (
                "scatter_max", "scatter_min")))
        out = os.path.join(work, "forms17.onnx")
        run([onnxc, "export", old, "-o", out, "--verify"])
        onnx.checker.check_model(out, full_check=True)
        check_proto(out, 17)
        with open(old) as f:
            n = check_forms(out, f.read(), 17)
        d = os.path.join(work, "17")
        os.makedirs(d)
        roundtrip(onnxc, old_part, [], d, 17)
        print("ok: opset 17: %d nodes in their opset-17 forms (Reduce* axes as attributes, "
              "Mish as its definition), checker passed, read back to the same IR" % n)
        models = []
        for opset in opsets:
            d = os.path.join(work, str(opset))
            os.makedirs(d)
            out = os.path.join(d, "forms.onnx")
            run([onnxc, "export", forms, "-o", out, "--verify", "--opset", str(opset)])
            check_proto(out, opset)
            if opset <= CHECKER_MAX_OPSET:
                onnx.checker.check_model(out, full_check=True)
            n = check_forms(out, forms_text, opset)
            note = read_back(onnxc, forms, out, opset, d)
            print("ok: opset %d: ir_version %d, %d nodes in the forms of opset %d, %s" % (
                opset, IR_VERSIONS[opset], n, opset, note))
            models.append((opset, out))
        # Resize's half_pixel_symmetric (from 19) and a bf16 Conv (from 22)
        extra = {}
        for name, body, since in (("half_pixel_symmetric", RESIZE_SYMMETRIC, 19),
                                  ("bf16_conv", BF16_CONV, 22)):
            oir = os.path.join(work, name + ".oir")
            with open(oir, "w") as f:
                f.write(HEAD + body)
            extra[name] = (oir, [])
            for opset in [o for o in opsets if o >= since]:
                d = os.path.join(work, "%s.%d" % (name, opset))
                os.makedirs(d)
                out, _ = roundtrip(onnxc, oir, [], d, opset)
                check_forms(out, HEAD + body, opset)
                kept = os.path.join(work, "%s.%d.onnx" % (name, opset))
                shutil.copy(out, kept)
                extra[name][1].append((opset, kept))
            print("ok: %s exported at opsets %s, read back to the same IR" % (
                name, [o for o, _ in extra[name][1]]))
        if not node:
            print("note: ONNX Runtime not run: %s" % why)
            return 0
        k = ort_vs_onnxc(node, ort_run, onnxc, forms, models, work, rng)
        print("ok: ONNX Runtime (%s) runs forms.oir exported at opsets %s: its %d outputs "
              "are onnxc's" % (why, opsets, k))
        # (ONNX Runtime has no bf16 Conv on the CPU)
        oir, exported = extra["half_pixel_symmetric"]
        if exported:
            ort_vs_onnxc(node, ort_run, onnxc, oir, exported, work, rng)
            print("ok: ONNX Runtime runs half_pixel_symmetric at opsets %s as onnxc does" % (
                [o for o, _ in exported]))
    return 0


# ---------------------------------------------------------------------------
# If on a run-time condition, rebuilt from guards and phis
# ---------------------------------------------------------------------------

def if_model():
    """outer If(c1), two outputs: then = Relu, an inner If(c2) (Neg | Mul) and
    the Relu's result; else = Sigmoid + Add and the outer input x as it is."""
    from onnx import TensorProto, helper
    F = TensorProto.FLOAT
    vi = lambda n: helper.make_tensor_value_info(n, F, [2, 3])
    inner = helper.make_node(
        "If", ["c2"], ["z"], name="inner",
        then_branch=helper.make_graph([helper.make_node("Neg", ["r"], ["z1"], name="neg")],
                                      "t2", [], [vi("z1")]),
        else_branch=helper.make_graph([helper.make_node("Mul", ["r", "x"], ["z2"], name="mul")],
                                      "e2", [], [vi("z2")]))
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"), inner],
                               "then", [], [vi("z"), vi("r")])
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
                                helper.make_node("Add", ["s", "x"], ["e"], name="add")],
                               "else", [], [vi("e"), vi("x")])
    g = helper.make_graph(
        [helper.make_node("If", ["c1"], ["y0", "y1"], name="outer", then_branch=then_g,
                          else_branch=else_g)],
        "ifs", [vi("x"), helper.make_tensor_value_info("c1", TensorProto.BOOL, []),
                helper.make_tensor_value_info("c2", TensorProto.BOOL, [])],
        [vi("y0"), vi("y1")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def if_reference(x, c1, c2):
    r = np.maximum(x, 0)
    if c1:
        return (-r if c2 else r * x), r
    return 1 / (1 + np.exp(-x)) + x, x


def write_if_case(d, model_path):
    os.makedirs(d)
    shutil.copy(model_path, os.path.join(d, "model.onnx"))
    rng = np.random.default_rng(3)
    for k, (c1, c2) in enumerate([(1, 1), (1, 0), (0, 1), (0, 0)]):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        s = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(s)
        ins = [("x", x), ("c1", np.array(bool(c1))), ("c2", np.array(bool(c2)))]
        outs = zip(["y0", "y1"], if_reference(x.astype(np.float64), c1, c2))
        for j, (n, a) in enumerate(ins):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(s, "input_%d.pb" % j))
        for j, (n, a) in enumerate(outs):
            onnx.save_tensor(numpy_helper.from_array(a.astype(np.float32), n),
                             os.path.join(s, "output_%d.pb" % j))


def branch_ops(g):
    """{If name: ([then ops], [else ops], [then outputs], [else outputs])}."""
    found = {}
    for n in g.node:
        if n.op_type == "If":
            a = {x.name: x.g for x in n.attribute}
            t, e = a["then_branch"], a["else_branch"]
            found[n.name] = ([m.op_type for m in t.node], [m.op_type for m in e.node],
                             [o.name for o in t.output], [o.name for o in e.output])
            for b in (t, e):
                found.update(branch_ops(b))
    return found


IF_TRAP = ("input %x : f32[2]\ninput %c : bool[]\n%n : bool[] = not(%c) @br\n"
           "%a : f32[2] = relu(%x) if %c @br/then/r\n"
           "%t : f32[2] = trap() {dtype=f32, shape=[2], message=\"too short\"} if %n @br/else/t\n"
           "%y : f32[2] = phi(%c, %a, %t) @br\noutput %y\n")


def cmd_ifs(argv):
    """Ifs on run-time conditions exported as If nodes: the IR read back is the
    IR exported, the checker accepts the file, the If's branches are the
    model's, and the export computes what the model does for every way the
    two conditions go; a branch replaced by a trap is refused."""
    onnxc = argv[0]
    with tempfile.TemporaryDirectory() as work:
        src = os.path.join(work, "ifs.onnx")
        onnx.save(if_model(), src)
        out, _ = roundtrip(onnxc, src, [], work)
        g = onnx.load(out).graph
        got = ([n.op_type for n in g.node], branch_ops(g))
        # the else branch returns the outer x through an Identity: ONNX
        # Runtime refuses a branch output that is an outer value as it is
        want = (["If"], {"outer": (["Relu", "If"], ["Sigmoid", "Add", "Identity"], ["z", "r"],
                                   ["e", "y1.else"]),
                         "inner": (["Neg"], ["Mul"], ["z1"], ["z2"])})
        if got != want:
            raise Fail("the exported Ifs are %s, expected %s" % (got, want))
        names = [m.name for m in g.node[0].attribute[0].g.node]
        if names != ["relu", "inner"]:
            raise Fail("the then branch's nodes are named %s, not as in the model" % names)
        for label, model in (("the model", src), ("the export", out)):
            case = os.path.join(work, "case." + label.split()[1])
            write_if_case(case, model)
            r = run([onnxc, "check", case], expect=None)
            if r.returncode != 0:
                raise Fail("%s misses numpy's outputs:\n%s%s" % (label, r.stdout, r.stderr))
        r, _ = export_case(onnxc, work, "trap", IF_TRAP, [])
        if r.returncode != 1 or "node 'br/else/t' (trap): cannot export: the branch was not " \
                "imported" not in r.stderr:
            raise Fail("a trap branch: exit %d:\n%s" % (r.returncode, r.stderr))
    print("ok: two nested Ifs on run-time conditions exported as If nodes, read back to the "
          "same IR, checker passed; every way the conditions go computes numpy's outputs; "
          "a trap branch is refused")


def main():
    modes = {"roundtrip": cmd_roundtrip, "ort": cmd_ort, "mixed": cmd_mixed, "half": cmd_half,
             "small": cmd_small, "node": cmd_node, "cases": cmd_cases, "opsets": cmd_opsets,
             "ifs": cmd_ifs}
    if len(sys.argv) < 3 or sys.argv[1] not in modes:
        sys.stderr.write(__doc__)
        return 2
    try:
        return modes[sys.argv[1]](sys.argv[2:]) or 0
    except Fail as e:
        print("FAIL: %s" % e)
        return 1
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        print("FAIL: the ONNX checker rejects the exported model: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
