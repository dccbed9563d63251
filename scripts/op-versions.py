#!/usr/bin/python3
"""ONNX's operator versions, and onnxc's op tables checked against them.

Usage:
  scripts/op-versions.py --changelog docs/Changelog.md > tests/node/onnx-op-versions.txt
  scripts/op-versions.py --check build/onnxc [--versions tests/node/onnx-op-versions.txt]

The first form extracts, from ONNX's docs/Changelog.md, every version of
every default-domain operator up to MAX_OPSET (a version is numbered by the
opset that introduced it) and the opset that deprecated it, if any.

The second compares the versions `onnxc ops --markdown` lists for each ONNX
op it imports with that list: from the first version onnxc accepts, every
later ONNX version must be there (a version onnxc does not list would be
imported with an older version's semantics), the first must be no later than
the version in effect at opset 7 (from which every node imports), and a deprecated op must say
when it was removed (a deprecated version that a later version replaced,
as GroupNormalization-21 replaced 18, counts as a version). Exits 1 on any
difference.
"""

import argparse
import re
import subprocess
import sys

MAX_OPSET = 27
FULL_OPSET = 7  # frontend/fe.h's FE_FULL_OPSET
DEFAULT = "tests/node/onnx-op-versions.txt"


def from_changelog(path):
    versions, removed, domain = {}, {}, None
    for line in open(path, encoding="utf-8"):
        if line.startswith("## Version"):
            domain = "default" if "default ONNX operator set" in line else "other"
        m = re.match(r'### <a name="(\w+)-(\d+)"></a>\*\*\w+-\d+\*\*( \(deprecated\))?', line)
        if m and domain == "default" and int(m.group(2)) <= MAX_OPSET:
            if m.group(3):
                removed[m.group(1)] = int(m.group(2))
            else:
                versions.setdefault(m.group(1), []).append(int(m.group(2)))
    return versions, removed


def read_list(path):
    versions, removed = {}, {}
    for line in open(path, encoding="utf-8"):
        line = line.split("#")[0].split()
        if not line:
            continue
        versions[line[0]] = [int(v) for v in line[1:] if not v.startswith("-")]
        for v in line[1:]:
            if v.startswith("-"):
                removed[line[0]] = int(v[1:])
    return versions, removed


def onnxc_table(onnxc):
    out = subprocess.run([onnxc, "ops", "--markdown"], capture_output=True, text=True,
                         check=True).stdout
    table = {}
    for m in re.finditer(r"^\| (\w+) \| ([0-9, ]+)(?: \(removed in (\d+)\))? \| ", out, re.M):
        table[m.group(1)] = ([int(v) for v in m.group(2).split(",")],
                             int(m.group(3)) if m.group(3) else 0)
    return table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--changelog")
    ap.add_argument("--check")
    ap.add_argument("--versions", default=DEFAULT)
    a = ap.parse_args()
    if a.changelog:
        versions, removed = from_changelog(a.changelog)
        print("# Every version of every default-domain ONNX operator up to opset %d\n"
              "# (ONNX 1.22), from ONNX's docs/Changelog.md by scripts/op-versions.py:\n"
              "# op, then its versions; -N: deprecated from opset N." % MAX_OPSET)
        for op in sorted(versions):
            print(" ".join([op] + [str(v) for v in versions[op]] +
                           (["-%d" % removed[op]] if op in removed else [])))
        return 0
    versions, removed = read_list(a.versions)
    for op, r in list(removed.items()):
        # a deprecated version that a later one replaced (GroupNormalization
        # 18, by 21) is still a version, not the op's removal
        if any(v > r for v in versions.get(op, [])):
            versions[op] = sorted(versions[op] + [r])
            del removed[op]
    table = onnxc_table(a.check)
    bad = 0
    for op, (ours, rem) in sorted(table.items()):
        if op not in versions:
            print("%s: not an ONNX operator of the default domain" % op)
            bad += 1
            continue
        want = [v for v in versions[op] if v >= ours[0]]
        if ours != want:
            print("%s: onnxc implements versions %s, ONNX has %s from %d on" % (
                op, ours, want, ours[0]))
            bad += 1
        # from FULL_OPSET on, a node of any version of the op imports: the
        # first version onnxc lists is at most the one in effect there
        at_full = [v for v in versions[op] if v <= FULL_OPSET]
        if ours[0] > (at_full[-1] if at_full else versions[op][0]):
            print("%s: onnxc starts at version %d, but version %d is in effect at opset %d" % (
                op, ours[0], at_full[-1], FULL_OPSET))
            bad += 1
        if rem != removed.get(op, 0):
            print("%s: onnxc says removed in %d, ONNX %d" % (op, rem, removed.get(op, 0)))
            bad += 1
    print("%d ONNX ops checked against ONNX's versions: %d differ" % (len(table), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
