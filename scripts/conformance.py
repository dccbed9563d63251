#!/usr/bin/python3
"""Runs `onnxc check` over the ONNX backend node tests and reports.

Usage:
  scripts/conformance.py [--onnxc build/onnxc] [--data DIR] [--archive TAR.XZ]
                         [--jobs N] [--expect tests/node/expected.txt]
                         [--update-expect] [--markdown docs/conformance.md]
                         [--suite 1.12] [--only SUBSTRING]

DIR holds the node tests, DIR/node/<case>/: generated from Debian's ONNX 1.12
(tests/models/onnx_node_tests.py), or unpacked from --archive (ONNX 1.22's,
../shared/onnx-node-tests/) when DIR has not got them yet. A missing archive
skips the run (exit 77, which CTest reports as skipped) and says so.
Every case is checked with the suite's own tolerances
(rtol 1e-3, atol 1e-7) and classified:

  pass         compiled, ran, every output within tolerance
  fail         compiled and ran, but an output is outside the tolerance
  unsupported  refused at import with a diagnostic (an op, dtype, opset or
               dynamic shape onnxc does not support)
  error        anything else: a compile error after import, a run failure,
               a crash, a timeout

With --expect, the run fails (exit 1) when a case's class differs from the
one the file records: a case that should pass no longer does, or a case
listed as failing now passes (update the list with --update-expect). A
crash, a sanitizer's abort or a timeout (onnxc exiting other than 0 or 1)
fails the run whatever the file expects: every model, good or bad, must be
checked or refused with a diagnostic.
--markdown rewrites the suite's section of docs/conformance.md (the per-op
table of suite --suite), leaving the other suites' sections as they are.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tarfile
import time

SKIP = 77

UNSUPPORTED = ("not supported", "does not exist in opset", "must be a constant",
               "older than onnxc supports", "newer than onnxc supports",
               "imports no version of the default ONNX opset", "is not a tensor",
               "onnxc does not support", "must be a constant bool",
               "cannot be compiled for inference", "onnxc compiles static shapes",
               "the node is at opset")


def case_ops(model_path):
    """The op types of a test model (the ONNX python package parses it)."""
    import onnx
    try:
        m = onnx.load(model_path, load_external_data=False)
    except Exception:  # noqa: BLE001 - a model onnx cannot load has no ops to list
        return []
    return [n.op_type for n in m.graph.node]


def run_case(onnxc, case_dir, timeout):
    start = time.time()
    try:
        p = subprocess.run([onnxc, "check", case_dir, "--json"], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"class": "error", "reason": "timeout after %d s" % timeout, "crash": True}
    elapsed = time.time() - start
    out = p.stdout.strip().splitlines()
    try:
        res = json.loads(out[-1]) if out else None
    except json.JSONDecodeError:
        res = None
    if p.returncode not in (0, 1) or res is None:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"class": "error", "reason": "status %d: %s" % (p.returncode, tail[:200]),
                "seconds": elapsed, "crash": p.returncode not in (0, 1)}
    if res.get("passed"):
        return {"class": "pass", "seconds": elapsed, "compile_ms": res.get("compile_ms"),
                "frozen": res.get("frozen_inputs", 0)}
    err = res.get("error")
    if err:
        first = err.strip().splitlines()[0]
        reason = first.split("error: ", 1)[-1][:240]
        cls = "unsupported" if any(u in err for u in UNSUPPORTED) and res.get("compile_ms", 0) == 0 \
            else "error"
        return {"class": cls, "reason": reason, "seconds": elapsed}
    worst = max(res.get("outputs", []), key=lambda o: o.get("max_abs_err", 0), default={})
    return {"class": "fail", "seconds": elapsed,
            "reason": "output %s: max abs err %.3g, max rel err %.3g" % (
                worst.get("name", "?"), worst.get("max_abs_err", 0), worst.get("max_rel_err", 0))}


def read_expect(path):
    """{case: (class, comment)} from an expectations file."""
    exp = {}
    if not path or not os.path.exists(path):
        return exp
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            body, _, comment = line.partition("#")
            name, cls = body.split()[:2]
            exp[name] = (cls, comment.strip())
    return exp


def write_expect(path, results):
    """Rewrites the file; a case whose class is unchanged keeps its comment
    (a human-written reason survives regeneration), except an unsupported
    case's, which is onnxc's own diagnostic and is written as it reads now."""
    old = read_expect(path)
    with open(path, "w") as f:
        f.write("# Expected outcome of every ONNX backend node test under `onnxc check`\n"
                "# (scripts/conformance.py --update-expect rewrites this file, keeping the\n"
                "# comment of every case whose class did not change, but for the\n"
                "# diagnostic of an unsupported case, which it writes as it reads now).\n"
                "# case class  # reason; classes: pass fail unsupported error\n")
        for name in sorted(results):
            r = results[name]
            keep = name in old and old[name][0] == r["class"] and old[name][1] and \
                r["class"] != "unsupported"
            note = old[name][1] if keep else r.get("reason", "")
            f.write("%s %s%s\n" % (name, r["class"], "  # " + note if note else ""))


INTRO = """# ONNX backend node test conformance

Generated by `scripts/conformance.py --markdown docs/conformance.md --suite
VERSION`: every node test of an ONNX release run with `onnxc check --json` on
the CPU target with the suite's tolerances (rtol 1e-3, atol 1e-7). Classes:
*pass*; *fail* (ran, outputs out of tolerance); *unsupported* (refused at
import with a diagnostic); *error* (anything else). The reason for every case
that does not pass is in the suite's expectations file, which CI checks.
"""

SUITES = {
    "1.12": ("node tests of Debian's python3-onnx (ONNX 1.12, opsets 1-17)",
             "tests/node/expected.txt"),
    "1.22": ("node tests of ONNX 1.22 (opsets 1-27), from ../shared/onnx-node-tests",
             "tests/node/expected-1.22.txt"),
}


def write_markdown(path, results, ops, suite):
    """Replaces the suite's section of the file (kept between markers)."""
    import io
    buf = io.StringIO()
    write_table(buf, results, ops, suite)
    begin, end = "<!-- suite %s -->\n" % suite, "<!-- end suite %s -->\n" % suite
    text = open(path).read() if os.path.exists(path) else INTRO
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + begin + buf.getvalue() + end + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + begin + buf.getvalue() + end
    with open(path, "w") as f:
        f.write(text)


def write_table(f, results, ops, suite):
    per_op = collections.defaultdict(collections.Counter)
    for name, r in results.items():
        base = name[:-len("_expanded")] if name.endswith("_expanded") else None
        if len(ops[name]) == 1:
            key = ops[name][0]
        elif base and len(ops.get(base, [])) == 1:
            # a function op's test with the function body inlined
            key = ops[base][0] + " (expanded)"
        else:
            key = "(graph) " + ", ".join(sorted(set(ops[name]) - {"Constant"})[:3])
        per_op[key][r["class"]] += 1
    total = collections.Counter(r["class"] for r in results.values())
    what, expect = SUITES.get(suite, ("node tests of ONNX " + suite, "its expectations file"))
    f.write("## ONNX %s\n\nThe %s; reasons in %s.\n\n" % (suite, what, expect))
    frozen = sum(1 for r in results.values() if r["class"] == "pass" and r.get("frozen"))
    f.write("**Total: %d cases: %d pass, %d fail, %d unsupported, %d error.**\n\n" % (
        len(results), total["pass"], total["fail"], total["unsupported"], total["error"]))
    f.write("%d of the passing cases pass a graph input the model needs at compile time "
            "(a shape, a bound, the values a data-dependent shape follows from): `onnxc "
            "check` binds it to the test's data with `--const` (docs/cli.md).\n\n" % frozen)
    f.write("| op | cases | pass | fail | unsupported | error |\n|---|---|---|---|---|---|\n")
    for op in sorted(per_op):
        c = per_op[op]
        f.write("| %s | %d | %d | %d | %d | %d |\n" % (op, sum(c.values()), c["pass"], c["fail"],
                                                      c["unsupported"], c["error"]))
    f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--onnxc", default="build/onnxc")
    ap.add_argument("--data", default="build/tests/data/onnx")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--expect")
    ap.add_argument("--update-expect", action="store_true")
    ap.add_argument("--markdown")
    ap.add_argument("--suite", default="1.12")
    ap.add_argument("--archive")
    ap.add_argument("--only")
    args = ap.parse_args()

    root = os.path.join(args.data, "node")
    if args.archive and not os.path.isdir(root):
        if not os.path.exists(args.archive):
            print("skipped: the node tests' archive %s is not on this machine" % args.archive)
            return SKIP
        os.makedirs(args.data, exist_ok=True)
        part = args.data + ".part"
        with tarfile.open(args.archive) as t:
            t.extractall(part)
        os.rename(os.path.join(part, "node"), root)
        print("unpacked %s into %s" % (args.archive, args.data))
    cases = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if args.only:
        cases = [c for c in cases if args.only in c]
    start = time.time()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futs = {pool.submit(run_case, args.onnxc, os.path.join(root, c), args.timeout): c
                for c in cases}
        for fut in concurrent.futures.as_completed(futs):
            results[futs[fut]] = fut.result()
    ops = {c: case_ops(os.path.join(root, c, "model.onnx")) for c in cases}
    total = collections.Counter(r["class"] for r in results.values())
    print("%d cases in %.0f s: %d pass, %d fail, %d unsupported, %d error" % (
        len(cases), time.time() - start, total["pass"], total["fail"], total["unsupported"],
        total["error"]))
    if args.markdown:
        write_markdown(args.markdown, results, ops, args.suite)
    if args.update_expect and args.expect:
        write_expect(args.expect, results)
        return 0
    status = 0
    if args.expect:
        exp = read_expect(args.expect)
        for c in cases:
            want, got = exp.get(c, ("pass", ""))[0], results[c]["class"]
            if results[c].get("crash"):
                status = 1
                print("CRASH %s: %s" % (c, results[c]["reason"]))
            elif want != got:
                status = 1
                print("UNEXPECTED %s: expected %s, got %s%s" % (
                    c, want, got, " (" + results[c]["reason"] + ")" if results[c].get("reason") else ""))
    else:
        for c in cases:
            r = results[c]
            if r["class"] in ("fail", "error"):
                print("%s %s: %s" % (r["class"].upper(), c, r.get("reason", "")))
    return status


if __name__ == "__main__":
    sys.exit(main())
