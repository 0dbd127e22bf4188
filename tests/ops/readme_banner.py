#!/usr/bin/python3
"""The README's sample banner against the banner a real herd-server printed.

    tests/ops/readme_banner.py README.md SERVER_LOG

README.md shows, in the fenced block that follows the line `$ make run`, what the server prints when it starts.
Every line of the server's banner must be there, in order, and nothing else; values that depend on the machine or
on how the server was started are compared by shape only: the endpoint, the worker count and where it came from,
and the memory ceiling (a share of the machine's RAM).  The README may cut the envs line short with ", ...".
Prints "ok" or the differences; exit 0 when they agree, 1 when not, 2 on a missing block or banner.
"""
import re
import sys

SHAPES = [
    (re.compile(r"^(  endpoint   )\S+$"), r"\1<endpoint>"),
    (re.compile(r"^(  threads    )\d+( workers \+ 1 I/O thread)( \(.*\))?$"), r"\1<n>\2 (<source>)"),
    (re.compile(r"(memory )\d+( MiB)"), r"\1<n>\2"),
]


def readme_banner(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "$ make run":
            block = []
            for nxt in lines[i + 1:]:
                if nxt.startswith("```"):
                    return block
                block.append(nxt)
    return None


def server_banner(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("herd-server ") and "(protocol " in line:
            out = [line]
            for nxt in lines[i + 1:]:
                if not nxt.startswith("  "):
                    break
                out.append(nxt)
            return out
    return None


def shape(line):
    for pat, rep in SHAPES:
        line = pat.sub(rep, line)
    return line


def compare(readme, printed):
    """The differences (empty when they agree)."""
    diffs = []
    if len(readme) != len(printed):
        diffs.append("the README shows %d lines, the server printed %d" % (len(readme), len(printed)))
    for k in range(max(len(readme), len(printed))):
        a = shape(readme[k]) if k < len(readme) else "(nothing)"
        b = shape(printed[k]) if k < len(printed) else "(nothing)"
        if a.endswith(", ...") and a.startswith("  envs ") and b.startswith(a[:-len(", ...")] + ", "):
            continue
        if a != b:
            diffs.append("line %d: README %r, server %r" % (k + 1, readme[k] if k < len(readme) else "",
                                                          printed[k] if k < len(printed) else ""))
    return diffs


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        readme = readme_banner(f.read())
    with open(argv[2], encoding="utf-8", errors="replace") as f:
        printed = server_banner(f.read())
    if readme is None or printed is None:
        print("no %s" % ("`$ make run` block in " + argv[1] if readme is None else "banner in " + argv[2]))
        return 2
    diffs = compare(readme, printed)
    for d in diffs:
        print(d)
    if not diffs:
        print("ok: the README's banner is the server's (%d lines)" % len(printed))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
