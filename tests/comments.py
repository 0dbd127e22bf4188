#!/usr/bin/env python3
"""Comments state what the code is and why: no issue numbers, dates, measurements or history in them.

Measurements (timings, instruction counts, rates, sizes that move with every commit) belong in the
generated documents under docs/, history in commit messages (DESIGN.md, "Numbers and bits").  This
checker reads the comments of every tracked source file (C, Python, Julia, JavaScript, shell, Makefile,
YAML, TOML, Dockerfile, Slurm scripts; string literals are not comments and are skipped) and prints one
line per comment line that looks like a lab notebook.  ALLOW lists the few hits that are not.

Usage: tests/comments.py [--self-test] [FILE...]
  no FILE: every file `git ls-files` lists, then the self-test; prints "ok - comments" or one line per hit
  (path:line: rule: comment), the self-test's line, then "N passed, M failed" (the line tests/run-all.sh
  counts); exits 1 on any hit or self-test failure.  FILE...: those files only (no self-test).
  --self-test: checks the extraction and every rule on built-in samples (each rule must fire on its
  sample, and nothing may fire on the clean samples or on string literals).
"""
import io
import os
import re
import subprocess
import sys
import tokenize

# The word the issue-number rule looks for, spelled apart so that this file's own test cases are not read as such.
ISSUE = "iss" + "ue"
MONTHS = r"(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|January|February|March|April|June|July|August" \
         r"|September|October|November|December)"
NUM = r"\d[\d,]*(?:\.\d+)?"

# (rule name, compiled pattern).  Patterns look at one comment line at a time.
RULES = [
    ("issue number", re.compile(r"\b(?:issue|issues|PR|pull request|bug|ticket)\s*#?\s*\d+\b|(?<![\w&#])#\d+\b"
                                r"|/(?:issues|pull)/\d+", re.I)),
    ("date", re.compile(r"\b20[0-9]{2}-[01][0-9](?:-[0-3][0-9])?\b"
                        r"|\b[0-3]?[0-9]\s+" + MONTHS + r"\b|\b" + MONTHS + r"\.?\s+(?:[0-3]?[0-9]|20[0-9]{2})\b"
                        r"|\b(?:today|yesterday|this week|last week)\b(?!'s)")),
    ("history", re.compile(r"(?:^[\s*#/]*|[.;:]\s+)Now\b(?! that)|\bthe issue(?:'s)?\b|\bonce did\b|\bbefore\s*/\s*after\b|\bwas\b[^.;:]{0,60}\bnow\b|\bno longer\b|\bused to\b"
                           r"|\bpreviously\b|\bformerly\b|\bold name\b|\bused for it before\b|\bused to be\b"
                           r"|\b(?:the|an?) (?:old|earlier|previous) (?:version|code|commit|tree|implementation)\b"
                           r"|\bthis (?:commit|change|patch)\b|\buntil (?:the|this) (?:commit|change)\b"
                           r"|\bwas (?:fixed|changed|renamed|moved|removed|replaced)\b", re.I)),
    ("commit hash", re.compile(r"\bcommit\s+[0-9a-f]{7,40}\b"
                               r"|\b(?:before|after|since|in|see|until)\s+(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b|\((?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\)")),
    ("instruction count", re.compile(NUM + r"\s*[kMG]?\s*(?:instructions|instr|Ir)\b", re.I)),
    ("timing", re.compile(NUM + r"\s*(?:µs|us|ns)\b(?!\w)|" + NUM + r"\s*[kM]?\s*(?:env\s+)?(?:steps|worlds|requests|solves)"
                          r"\s*/\s*s\b|\b" + NUM + r"\s*x\s+(?:faster|slower)\b|\bspeed-?up of\b|" + NUM +
                          r"\s*%\s+(?:faster|slower|of the time)\b|\bms\s+(?:per|a)\s+(?:step|call|request)\b(?=.*\bmeasured\b)",
                          re.I)),
    ("byte count", re.compile(r"\b\d{1,3}(?:,\d{3})+\s*(?:B|bytes)\b|\b\d{5,}\s*(?:B|bytes)\b"
                              r"|\bbytes\b.*\b\d{1,3}(?:,\d{3})+\b|\b(?:for|on) ANYmal(?: C)?,? \d")),
    ("before -> after", re.compile(r"(?<![\d.])\d+(?:[.,]\d+)?\s*[kM%]?\s*(?:->|→)\s*\d+(?:[.,]\d+)?(?![.\d])"
                                   r"|\(\s*[\d.,]+\s*[kM%]?\s*before\s*[,)]|\binterleaved, \d+ pairs\b")),
    ("measurement", re.compile(r"\bmeasured (?:on|with) (?:one|an?|the|this|our) [\w -]*(?:core|machine|VM|CPU|host)\b"
                               r"|\b(?:EPYC|Xeon|Ryzen|Core i\d)\b|\bbenchmark(?:ed)? (?:run|shows|gave)\b"
                               r"|\bthe wt-\w+ measurement\b", re.I)),
]

# (path regex, text regex): hits that are not notebook entries.  Keep this short; each entry says why.
ALLOW = [
    # this checker's own rules and samples
    (r"^tests/comments\.py$", r".*"),
    # the seed paper's published figure, which the bench prints next to its own
    (r"^bench/bench_contact1\.c$", r"The paper reports [\d.]+ µs per solve \(Xeon"),
    # a test's own work sizes and sleeps (parameters, not measurements)
    (r"^tests/test_pool\.c$", r"us of work per row|sleeping \d+ us"),
    # the server's documented defaults (a setting, not a measurement)
    (r"^server/srv_config\.h$", r"16 worlds, 250 us;"),
    # the rate a test expects from the counts it feeds in
    (r"^tests/test_metrics\.c$", r"2 s: 15,000 steps/s"),
]

EXT_C = (".c", ".h", ".js", ".css")
EXT_HASH = (".sh", ".yaml", ".yml", ".toml", ".sbatch", ".supp", ".dict", ".gitignore", ".dockerignore")
NAMES_HASH = ("Makefile", "Dockerfile")


def c_comments(text):
    """(line number, comment text) of each line of // and /* */ comments; strings and chars skipped."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch in "\"'" or (ch == "`" and True):
            q, i = ch, i + 1
            while i < n and text[i] != q:
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n":
                    line += 1
                    if q != "`":
                        break
                i += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j + 2
        else:
            i += 1
    return out


def hash_comments(text):
    """# comments of shell, Makefile, YAML...: a # at the line's start or after a blank, outside quotes."""
    out = []
    for no, ln in enumerate(text.split("\n"), 1):
        q = None
        for k, ch in enumerate(ln):
            if q:
                if ch == q:
                    q = None
                elif ch == "\\" and q == '"':
                    continue
            elif ch in "\"'":
                q = ch
            elif ch == "#" and (k == 0 or ln[k - 1] in " \t;"):
                out.append((no, ln[k + 1:]))
                break
    return out


def py_comments(text):
    """Python comments and docstrings (a string that is a statement of its own)."""
    out = []
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return hash_comments(text)
    prev = tokenize.NEWLINE
    for t in toks:
        if t.type == tokenize.COMMENT:
            out.append((t.start[0], t.string[1:]))
        elif t.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL):
            for k, part in enumerate(t.string.split("\n")):
                out.append((t.start[0] + k, part))
        if t.type not in (tokenize.COMMENT, tokenize.NL):
            prev = t.type
    return out


def jl_comments(text):
    """Julia: # and #= =# comments, and docstrings (a triple-quoted string opening a line)."""
    out, lines, k, block = [], text.split("\n"), 0, None
    while k < len(lines):
        ln = lines[k]
        if block:
            j = ln.find(block)
            out.append((k + 1, ln if j < 0 else ln[:j]))
            if j >= 0:
                block = None
            k += 1
            continue
        s = ln.strip()
        if s.startswith("#="):
            block = "=#"
            rest = s[2:]
            j = rest.find("=#")
            out.append((k + 1, rest if j < 0 else rest[:j]))
            if j >= 0:
                block = None
        elif s.startswith('"""'):
            rest = s[3:]
            j = rest.find('"""')
            out.append((k + 1, rest if j < 0 else rest[:j]))
            if j < 0:
                block = '"""'
        else:
            out.extend((k + 1, c) for _, c in hash_comments(ln))
        k += 1
    return out


def comments_of(path, text):
    base = os.path.basename(path)
    if path.endswith(EXT_C):
        return c_comments(text)
    if path.endswith(".py"):
        return py_comments(text)
    if path.endswith(".jl"):
        return jl_comments(text)
    if path.endswith(EXT_HASH) or base in NAMES_HASH or base.startswith("Makefile"):
        return hash_comments(text)
    if "." not in base and text.startswith("#!"):
        return hash_comments(text)
    return None


def check(path, text):
    """[(line, rule, comment text)] of the hits in one file."""
    found = comments_of(path, text)
    if found is None:
        return []
    hits = []
    for no, c in found:
        for name, rx in RULES:
            if rx.search(c) and not any(re.search(p, path) and re.search(t, c) for p, t in ALLOW):
                hits.append((no, name, c.strip()))
    return hits


def self_test():
    bad = {
        "issue number": ["/* fixes " + ISSUE + " 12 */", "// see #12", "/* (" + ISSUE + " #7, item 4) */"],
        "date": ["/* measured 2026-11-23 */", "// 26 Nov: 3 % faster", "/* the harvest of Nov 26 */",
                 "// results of today"],
        "history": ["/* before/after: 1.2 vs 1.1 */", "/* this was slow, now it is fast */",
                    "/* the name used for it before was wrong */", "/* no longer needed */",
                    "/* old name, kept for existing callers */",
                    "/* was accepted and echoed.  Now TOO_LARGE, with the id */", "/* The issue's reproduction */"],
        "commit hash": ["/* since the first version (b9180d8) */", "// fixed in commit 9caceb1",
                        "/* a scheduler running 16 heavy worlds per turn (before 6c2b280) */"],
        "instruction count": ["/* 1.23 M instructions per step (callgrind) */", "// 12,345 Ir",
                              "/* callgrind, 64 worlds x 50 steps: 361k instructions per hand-off */"],
        "timing": ["/* 0.145 µs per solve */", "// 70.7k env steps/s per thread", "/* 1.8x faster */"],
        "byte count": ["/* the batch takes 60,544 B */", "/* 123456 bytes */",
                       "/* Bytes of memory a batch needs (for ANYmal C 61,824). */"],
        "measurement": ["/* measured on one AMD EPYC core shared with other jobs */"],
        "before -> after": ["/* 361k -> 229k per hand-off */", "/* 39.6 iterations (103.7 before) */"],
    }
    clean = ["/* contact force above which a foot is in contact (N) */", "// physics step 5 ms, 4 per env step",
             "/* returns 0, or -1 with err filled */", "/* up to 1 MiB of scratch */", "/* #include order */",
             "/* the March of the solver */", "/* HERD_BIND (0.0.0.0 -> 127.0.0.1) */",
             "/* the Chebyshev weight (1 before l_s, then the recurrence) */",
             "/* slip problems harvested from the four scenarios */", "/* Median of n doubles */",
             "/* for callgrind: each experiment's solves run inside its own function */",
             "/* baselines measured in the same run */"]
    fails = 0
    for rule, samples in bad.items():
        for s in samples:
            got = {h[1] for h in check("x.c", s + "\n")}
            if rule not in got:
                print(f"not ok - rule '{rule}' misses {s!r} (got {sorted(got)})")
                fails += 1
    for s in clean:
        got = check("x.c", s + "\n")
        if got:
            print(f"not ok - clean sample {s!r} flagged: {got}")
            fails += 1
    # comments found in each language, string literals skipped
    N = ISSUE + " 12"  # the flagged phrase, assembled so that this file carries none
    cases = [
        ("x.c", 'printf("' + ISSUE + ' 12: 3 us\\n"); /* ok */\nint a; // ' + ISSUE + ' 12\n', [2]),
        ("x.c", "char c = '\"'; /* a\n * " + ISSUE + " 12\n */\n", [2]),
        ("x.py", '"""Module doc, ' + N + '."""\nx = "' + N + '"  # fine\ny = 1  # ' + N + '\n', [1, 3]),
        ("x.sh", 'echo "# ' + N + '"\n# ' + N + '\nx=1 # ' + N + '\n', [2, 3]),
        ("Makefile", "CFLAGS = -O2  # " + N + "\nall: ; @echo '# " + N + "'\n", [1]),
        ("x.jl", '"""\nDoc, ' + N + '.\n"""\nf() = "' + N + '"  # ' + N + '\n#= ' + N + ' =#\n', [2, 4, 5]),
    ]
    for path, text, want in cases:
        got = sorted({h[0] for h in check(path, text)})
        if got != want:
            print(f"not ok - {path}: hits on lines {got}, want {want}")
            fails += 1
    print("ok - comments self-test" if not fails else "not ok - comments self-test")
    return 1 if fails else 0


def main(argv):
    if argv[1:2] == ["--self-test"]:
        f = self_test()
        print(f"{1 - f} passed, {f} failed")
        return f
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = argv[1:] or subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    nhits = 0
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        for no, rule, c in check(path, text):
            print(f"{path}:{no}: {rule}: {c}")
            nhits += 1
    print("ok - comments" if not nhits else f"not ok - comments: {nhits} notebook lines")
    f = (1 if nhits else 0) + (self_test() if not argv[1:] else 0)
    n = 1 if argv[1:] else 2
    print(f"{n - f} passed, {f} failed")
    return 1 if f else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
