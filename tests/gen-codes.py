#!/usr/bin/env python3
"""Write docs/codes.md: every finding code vigil can emit, from the source.

usage: gen-codes.py [--check] [SRCDIR]
The codes are string literals in result_add() calls (and in the few wrappers and tables listed
in WRAPPERS and TABLES below) across src/. Each row says where the code comes from, the statuses
and actions it is written with, and what it means: the message it is written with. --check
compares with the committed docs/codes.md and exits 1 (saying so) when it is stale: the test
codes_table_is_current runs that, so the table cannot drift from the code.
A result_add() whose code is not a literal, a wrapper or a table named here makes the generator
fail, so a new kind of code must be listed before the table can be regenerated.
"""
import glob
import os
import re
import sys

# functions that pass one of their arguments on as result_add()'s code: file, name, the code's
# index, the message format's index (None: none)
WRAPPERS = [("src/checks/gpu.c", "problem", 3, 4), ("src/checks/kernel.c", "noise_more", 2, None)]
# result_add() calls whose code is not a literal: file, the code expression, and what to list
# instead (literal codes found by the regex in the file, or a table read by table())
DYNAMIC = {
    ("src/checks/gpu.c", "code"): "wrapper",
    ("src/checks/kernel.c", "code"): "wrapper",
    ("src/core/report.c", 'json_get_string(fj, "code")'): "copy",  # a report read back
    ("src/fabric/ibrun.c", "f->code"): "copy",  # a host's finding, prefixed with the host
    ("src/checks/infiniband.c", "d->name"): "ib_counters",
    ("src/checks/kernel_hw.c", "kmsg_kind_name(ev->kind)"): "kmsg_kinds",
    ("src/fabric/ibrun.c", "s->problem_code"): ("src/fabric/ibrun.c",
                                                r'strlcpy_v\(s->problem_code, "([a-z0-9_]+)"'),
    ("src/stress/gpu_stress.c", "code"): "gemm",
    ("src/stress/gpu_stress.c", 'outlier ? "gemm_outlier" : code'): "gemm",
    ("src/stress/net.c", "r->error_code"): ("src/stress/net.c",
                                           r'strcmp\(r->error_code, "([a-z0-9_]+)"\)'),
}
# what a code means where its message is built at run time (result_add(..., "%s", msg.buf)):
# said here, next to the generator that fails when a code is missing from this list
MEANINGS = {
    "cache": "vigil check --cached found no usable agent result (missing, unreadable, another "
             "host's or too old): the verdict is unknown",
    "edac_ce_rate": "a memory controller's corrected-error count rose faster than its threshold "
                    "since the last run: a DIMM is degrading",
    "edac_ue": "a memory controller counted an uncorrected memory error",
    "expected_count": "the node's expected GPU count could not be read from Slurm's files "
                      "(slurm.conf or gres.conf unreadable or not understood): a warning while GPUs "
                      "are in view, unknown when none are",
    "gpu": "the GPU's summary when it passed every check (name, bus id, driver, figures)",
    "gpu_off_bus": "the kernel log says the GPU fell off the bus (Xid 79 without the Xid line)",
    "health": "a GPU's health during vigil stress: temperatures, power and clocks seen, and no new "
              "ECC errors, remaps or Xid",
    "more": "the kernel log had more findings than are shown; the worst of the rest is named and "
            "sets the status",
    "nccl_error": "vigil stress net: the NCCL test ended with an error or a non-zero exit code",
    "no_hca": "vigil fabric burnin: a host has no RDMA device to test",
    "not_a_host_root": "--root names a directory that holds no host (no /proc, /sys or snapshot): "
                       "unknown, never healthy",
    "no_driver": "vigil stress / net: the CUDA helper found no usable driver and NVML says none is "
                 "loaded (the gpu check's words; CUDA's own says the driver is insufficient)",
    "old_driver": "vigil stress / net: the loaded NVIDIA driver is older than the helper's CUDA "
                  "runtime (both versions named)",
    "one_gpu": "vigil stress net: one GPU only, no pair to measure (skipped)",
    "oom": "the kernel's OOM killer ended a process (a training rank): restart the job",
    "oom_cgroup": "a cgroup's memory limit made the kernel kill a process: restart the job with "
                  "less memory per rank, or raise the limit",
    "pcie_downgrade": "the kernel log says a PCIe link trained below its capability (speed or width)",
    "run": "vigil stress gpu ran: what was measured, on which GPUs, for how long",
    "perftest_missing": "ib_write_bw (Debian package perftest) is not installed: no bandwidth measured",
    "step_failed": "vigil fabric burnin: the srun step of a pair's server or client could not run",
    "sxid": "an NVSwitch SXid in the kernel log; the action follows the SXid's policy",
    "summary": "a check's one-line summary when it found nothing wrong",
    "xid": "an Xid (GPU error) in the kernel log or reported by NVML; status and action follow "
           "the Xid's entry in the catalog (docs/kernel-log.md)",
    "unknown_nvrm": "an NVRM line in the kernel log that vigil does not know: investigate it",
}
STATUS = {"STATUS_SKIPPED": "skipped", "STATUS_OK": "ok", "STATUS_WARN": "warn",
          "STATUS_UNKNOWN": "unknown", "STATUS_FAIL": "fail"}


def calls(src, name):
    for m in re.finditer(r"(?<![\w>.])" + name + r"\s*\(", src):
        if re.match(r"\s*(static\s+)?[\w ]*\*?\s*$", src[src.rfind("\n", 0, m.start()) + 1:m.start()]) \
                and src[src.rfind("\n", 0, m.start()) + 1:m.start()].strip() not in ("", "return"):
            pass
        i = j = m.end()
        depth = 1
        while depth and j < len(src):
            c = src[j]
            if c == '"':
                j += 1
                while src[j] != '"':
                    j += 2 if src[j] == "\\" else 1
            elif c == "'":
                j += 1
                while src[j] != "'":
                    j += 2 if src[j] == "\\" else 1
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            j += 1
        yield src.count("\n", 0, m.start()) + 1, src[i:j - 1]


def split(args):
    out, cur, depth, j = [], "", 0, 0
    while j < len(args):
        c = args[j]
        if c == '"':
            k = j + 1
            while args[k] != '"':
                k += 2 if args[k] == "\\" else 1
            cur += args[j:k + 1]
            j = k + 1
            continue
        if c in "([{":
            depth += 1
        if c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        j += 1
    out.append(cur.strip())
    return out


def literal(expr):
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', expr)
    if parts and re.fullmatch(r'(\s*"(?:[^"\\]|\\.)*"\s*)+', expr):
        return "".join(parts)
    return None


def words(expr, table):
    """The names an expression like STATUS_WARN or 'x ? STATUS_FAIL : STATUS_WARN' can take."""
    found = [table.get(t, t) for t in re.findall(r"\b[A-Z][A-Z_]+\b", expr) if t in table or
             (table is None)]
    return found or ["(computed)"]


def meaning(fmt_args):
    if not fmt_args:
        return ""
    fmt = literal(fmt_args[0])
    if fmt is None:  # literals joined with a macro, or a ternary of two formats
        fmt = ""
        for tok in re.split(r'("(?:[^"\\]|\\.)*")', fmt_args[0]):
            if tok.startswith('"'):
                fmt += tok[1:-1]
            elif re.search(r"[?:]", tok):
                fmt += "; " if fmt else ""
            elif tok.strip():
                fmt += "…"
    if fmt == "%s" and len(fmt_args) > 1:
        return ""  # built at run time: MEANINGS says it
    fmt = re.sub(r"%[-#0 +]*[0-9*]*(?:\.[0-9*]+)?(?:hh|h|ll|l|z|j|t)?[diouxXeEfgGcsp]", "…", fmt)
    fmt = re.sub(r"…+", "…", fmt)
    return fmt.replace("%%", "%").replace("\\n", " ").replace("\\\"", '"').replace("|", "\\|")


def actions(expr):
    acts = re.findall(r"\bACTION_([A-Z_]+)\b", expr)
    return acts or ["(computed)"]


def statuses(expr):
    st = [STATUS[t] for t in re.findall(r"\bSTATUS_[A-Z]+\b", expr) if t in STATUS]
    return st or ["(computed)"]


def table(src_dir, which):
    """Rows from a table in code: (code, statuses, actions, meaning)."""
    if which == "ib_counters":
        s = open(os.path.join(src_dir, "src/checks/infiniband.c")).read()
        for m in re.finditer(r'\[IBC_\w+\]\s*=\s*\{\s*"(\w+)",\s*(true|false),\s*\d+,\s*'
                             r'ACTION_(\w+),\s*"([^"]*)"', s):
            yield m.group(1), ["fail" if m.group(2) == "true" else "warn"], [m.group(3)], \
                "an InfiniBand port counter rose past its threshold: " + m.group(4)
    elif which == "kmsg_kinds":
        s = open(os.path.join(src_dir, "src/logs/kmsg.h")).read()
        m = re.search(r"#define KMSG_KIND_LIST\(X\)(.*?)\n\n", s, re.S)
        for k in re.findall(r"X\((\w+)\)", m.group(1)):
            yield k, ["(by kind)"], ["(by kind)"], "a hardware-error line of this kind in the kernel log (docs/kernel-log.md)"
    elif which == "gemm":
        s = open(os.path.join(src_dir, "src/stress/gpu_stress.c")).read()
        if '"gemm_%s"' not in s:
            sys.exit("gen-codes: src/stress/gpu_stress.c no longer writes gemm_%s: update DYNAMIC")
        yield "gemm_DTYPE", ["skipped", "ok", "unknown", "fail", "warn"], ["NONE", "INVESTIGATE", "INSPECT_HARDWARE"], \
            "one GEMM type's result in vigil stress (DTYPE: the GEMM's name, e.g. bf16)"
        yield "gemm_outlier", ["warn"], ["INSPECT_HARDWARE"], "a GPU's GEMM rate is far below its peers'"


def collect(src_dir):
    rows = {}

    def add(code, where, st, act, mean):
        r = rows.setdefault(code, {"where": set(), "status": set(), "action": set(), "meaning": []})
        r["where"].add(where)
        r["status"].update(st)
        r["action"].update(act)
        if mean and mean.strip("… ") and mean not in r["meaning"]:
            r["meaning"].append(mean)

    wrapped = {(f, n): (i, m) for f, n, i, m in WRAPPERS}
    for path in sorted(glob.glob(os.path.join(src_dir, "src/**/*.c"), recursive=True)):
        rel = os.path.relpath(path, src_dir)
        src = open(path, encoding="utf-8").read()
        names = [("result_add", (3, 5))] + [(n, i) for (f, n), i in wrapped.items() if f == rel]
        for name, (idx, fmt) in names:
            for line, a in calls(src, name):
                p = split(a)
                if len(p) <= idx or p[0].startswith(("struct ", "const ")):
                    continue  # the declaration or definition
                lit = literal(p[idx])
                tern = re.fullmatch(r'.*\?\s*"(\w+)"\s*:\s*"(\w+)"', p[idx])
                st_expr, act_expr = (p[1], p[2])
                if lit is not None or tern:
                    for code in ([lit] if lit is not None else [tern.group(1), tern.group(2)]):
                        add(code, "%s:%d" % (rel, line), statuses(st_expr), actions(act_expr),
                            meaning(p[fmt:] if fmt else []))
                    continue
                how = DYNAMIC.get((rel, p[idx]))
                if how is None:
                    sys.exit("gen-codes: %s:%d: the code '%s' is neither a literal nor listed in "
                             "DYNAMIC" % (rel, line, p[idx]))
                if how in ("wrapper", "copy"):
                    continue
                if isinstance(how, tuple):
                    s = open(os.path.join(src_dir, how[0])).read()
                    for code in re.findall(how[1], s):
                        add(code, "%s:%d" % (rel, line), statuses(st_expr), actions(act_expr),
                            meaning(p[fmt:]))
                    continue
                for code, st, act, mean in table(src_dir, how):
                    add(code, "%s:%d" % (rel, line), st, act, mean)
    return rows


ORDER = ["fail", "unknown", "warn", "ok", "skipped", "(computed)", "(by kind)"]


def render(rows):
    out = ["# Finding codes",
           "",
           "<!-- generated by tests/gen-codes.py from the source; do not edit: run",
           "     python3 tests/gen-codes.py > docs/codes.md (the test codes_table_is_current checks it) -->",
           "",
           "Every `code` a finding in `vigil check --json` (and `stress`, `net`, the agent's report)",
           "can carry. **Status** and **action** are those the code is written with (`(computed)`:",
           "chosen at run time, e.g. from the configuration). **Meaning** is the message the finding",
           "is written with (`…` stands for a value filled in at run time). The actions are explained",
           "in vigil-check(1); the JSON around the codes is described by docs/schema/check.json.",
           "",
           "| code | status | action | meaning | where |",
           "|---|---|---|---|---|"]
    missing = [c for c in rows if not rows[c]["meaning"] and c not in MEANINGS]
    if missing:
        sys.exit("gen-codes: no meaning for %s: add them to MEANINGS" % ", ".join(sorted(missing)))
    for code in sorted(rows):
        r = rows[code]
        if code in MEANINGS:
            r["meaning"] = [MEANINGS[code]] + r["meaning"]
        st = sorted(r["status"], key=lambda s: ORDER.index(s) if s in ORDER else 99)
        mean = "; ".join(m for m in r["meaning"][:3]) + (" …" if len(r["meaning"]) > 3 else "")
        where = ", ".join(sorted({w.split(":")[0] for w in r["where"]}))
        out.append("| `%s` | %s | %s | %s | %s |" % (code or "(empty)", ", ".join(st),
                                                     ", ".join(sorted(r["action"])), mean, where))
    out.append("")
    out.append("%d codes." % len(rows))
    return "\n".join(out) + "\n"


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    src_dir = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    text = render(collect(src_dir))
    if "--check" in sys.argv:
        path = os.path.join(src_dir, "docs/codes.md")
        have = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if have != text:
            print("docs/codes.md is not current: run python3 tests/gen-codes.py > docs/codes.md")
            return 1
        print("docs/codes.md is current (%d codes)" % text.count("\n| `"))
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
