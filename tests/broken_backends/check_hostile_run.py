#!/usr/bin/env python3
"""One conformance run of the hostile plugin (hostile_plugin.cpp): it must complete, give each
broken case its verdict, and leave well-formed reports that no backend text could forge.

usage: check_hostile_run.py TWINBIT PLUGIN WORKDIR [CASE_TIMEOUT]

CASE_TIMEOUT: seconds a case may run (default 3); the sanitizer builds pass a longer one, since a
legitimate case there has overrun 3 s.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

twinbit, plugin, work = sys.argv[1:4]
case_timeout = sys.argv[4] if len(sys.argv) > 4 else "3"
os.makedirs(work, exist_ok=True)
paths = {k: os.path.join(work, k) for k in ("report.json", "report.xml", "report.txt", "run.log")}
for p in paths.values():
    if os.path.exists(p):
        os.remove(p)

cmd = [twinbit, "conformance", "--plugin", plugin, "--sweep", "quick", "--cases", "0", "--seed", "1",
       "--case-timeout", case_timeout, "--json", paths["report.json"], "--junit", paths["report.xml"],
       "--log", paths["run.log"], "-q"]
with open(paths["report.txt"], "wb") as out:
    proc = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, timeout=100)

failures = []
def check(cond, what):
    if not cond:
        failures.append(what)

check(proc.returncode == 1, f"exit status {proc.returncode}, expected 1 (stderr: {proc.stderr[-2000:]!r})")

# (verdict, text the message must hold) per broken case; every other case must be equal, except
# the quantize_i8 ones (the short table has no quantize_i8 entry: unsupported, exact fallback).
expected = {
    "gemm_q8_f32_M1_N1_K32": ("crash", "killed by SIGSEGV"),
    "gemm_q8_f32_M1_N33_K100": ("timeout", f"time limit of {case_timeout} s"),
    "gemm_q8_f32_M1_N257_K96": ("error", "past the end of the output"),
    "gemm_q8_f32_M3_N1_K100": ("error", "wrote y[-1], before the start of the output"),
    "gemm_q8_f32_M3_N33_K96": ("error", "wrote past the end of y (hit the guard page"),
    "gemm_q8_f32_M3_N257_K32": ("error", "changed its input x (activations)"),
    "gemm_q8_f32_M33_N1_K96": ("error", "\\nresult: PASS\\n"),
    "gemm_q8_f32_M33_N33_K32": ("error", "supports() accepted the case, then gemm answered UNIMPLEMENTED"),
    "gemm_q8_f32_M33_N257_K100": ("error", "nondeterministic"),
    "gemm_q8_i8_M1_N1_K100": ("error", "past the end of its tb_error message buffer"),
    "gemm_q8_i8_M1_N33_K96": ("unsupported", "\\x1B[2J"),
    # Its rows are run alone too (M = 1, N 33, K 96): the suite asks supports() for that first.
    "batch_q8_i8_M9_N33_K96": ("unsupported", "\\x1B[2J"),
}

# JSON: parses, every case present with its verdict.
try:
    with open(paths["report.json"], encoding="utf-8") as f:
        report = json.load(f)
except Exception as e:  # noqa: BLE001 - any failure to parse is the finding
    print(f"FAIL: the JSON report does not parse: {e}")
    sys.exit(1)
cases = {c["name"]: c for c in report["cases"]}
# The plugin breaks by shape, so a case of the same shape on the subnormal inputs
# (NAME_subnormal) gets the same verdict as NAME.
for name in list(cases):
    base = name.removesuffix("_subnormal")
    if name != base and base in expected:
        expected[name] = expected[base]
check(len(cases) == report["totals"]["cases"] and len(cases) >= 40, f"{len(cases)} cases in the JSON")
for name, (verdict, text) in expected.items():
    c = cases.get(name)
    if c is None:
        failures.append(f"{name}: missing from the JSON report")
        continue
    check(c["verdict"] == verdict, f"{name}: verdict {c['verdict']}, expected {verdict} ({c['message']!r})")
    check(text in c["message"], f"{name}: message {c['message']!r} lacks {text!r}")
for name, c in cases.items():
    if name in expected:
        continue
    if "past 2^20 weights" in c["message"]:  # the model sweep's projections: declined
        check(c["verdict"] == "unsupported" and c["fallback"]["verdict"] == "equal",
              f"{name}: {c['verdict']} {c['message']!r}")
    elif name.startswith("quantize_i8_"):
        check(c["verdict"] == "unsupported" and "no quantize_i8 entry" in c["message"]
              and c["fallback"]["verdict"] == "equal", f"{name}: {c['verdict']} {c['message']!r}")
    else:
        check(c["verdict"] == "equal", f"{name}: {c['verdict']}, expected equal ({c['message']!r})")
fb = cases.get("gemm_q8_i8_M1_N33_K96", {}).get("fallback", {})
check(fb.get("verdict") == "equal", f"the declined case's fallback: {fb}")
check(report["totals"]["crash"] == 1 and report["totals"]["timeout"] == 1, f"totals {report['totals']}")
check(report["passed"] is False, "the JSON report says passed")
for field in ("device", "name", "features"):
    value = report["backend"][field] if field != "features" else ",".join(report["backend"]["features"])
    check(all(ch >= " " and ch != "\x7f" for ch in value), f"backend {field} holds control characters: {value!r}")
    check("\ufffd" in value or field != "device", f"invalid UTF-8 in the device not replaced: {value!r}")

# JUnit: well-formed XML, one testcase per case, crash/timeout/error as <error>.
try:
    root = ET.parse(paths["report.xml"]).getroot()
except ET.ParseError as e:
    print(f"FAIL: the JUnit report is not well-formed XML: {e}")
    sys.exit(1)
testcases = {t.get("name"): t for t in root.iter("testcase")}
check(len(testcases) == len(cases), f"{len(testcases)} JUnit testcases, {len(cases)} JSON cases")
for name, (verdict, _) in expected.items():
    t = testcases.get(name)
    kind = "skipped" if verdict == "unsupported" else "error"
    check(t is not None and t.find(kind) is not None, f"{name}: no <{kind}> in JUnit")
device = [p.get("value") for p in root.iter("property") if p.get("name") == "device"]
check(device and "\n" not in device[0], f"JUnit device property: {device!r}")

# Text: valid UTF-8, no control character but newlines, one verdict line per non-equal case,
# exactly one "result:" line (FAIL): nothing forged.
raw = open(paths["report.txt"], "rb").read()
try:
    text = raw.decode("utf-8")
except UnicodeDecodeError as e:
    failures.append(f"the text report is not UTF-8: {e}")
    text = raw.decode("utf-8", "replace")
check(not any(ch < " " and ch != "\n" for ch in text) and "\x7f" not in text,
      "the text report holds control characters")
lines = text.splitlines()
results = [l for l in lines if l.startswith("result:")]
ran = report["totals"]["ran_on_backend"]
check(results == [f"result: FAIL ({ran} of {len(cases)} cases ran on the backend)"], f"result lines {results}")
tags = ("DIFFER", "UNSUPPORTED", "XFAIL", "XPASS", "ERROR", "CRASH", "TIMEOUT")
body = lines[lines.index("") + 1: lines.index("", lines.index("") + 1)] if "" in lines else []
nonequal = sum(1 for c in cases.values() if c["verdict"] != "equal")
check(len(body) == nonequal and all(l.split(" ", 1)[0] in tags for l in body),
      f"{len(body)} case lines for {nonequal} non-equal cases: {body[:3]}")

# The live log: one line per case.
log = open(paths["run.log"], encoding="utf-8").read().splitlines()
check(len(log) == len(cases), f"{len(log)} log lines for {len(cases)} cases")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"ok: {len(cases)} cases, every broken one with its verdict; JSON, JUnit and text well-formed")
