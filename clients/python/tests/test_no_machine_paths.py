"""No file of the repository names a path of the machine it was written on: a home directory, the root of a
shared work area, or the absolute path of this checkout.  Such a path works on one machine only (a test or
script that depends on it fails elsewhere) and tells strangers about the machine.  Paths of the system
(/usr/..., /etc/..., /tmp/..., /dev/...) are fine: they are the same on every machine."""
import os
import re
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SELF = os.path.relpath(os.path.abspath(__file__), ROOT)
SKIP_DIRS = {".git", "build", "node_modules", "__pycache__"}

# Written in pieces so that this file does not match itself.
_W, _H, _R, _U = "work", "home", "root", "Users"
GENERIC = [
    r"(?<![\w.~$-])/" + _W + r"/",                 # a shared work area at the root
    r"(?<![\w.~$-])/" + _H + r"/[A-Za-z_][\w.-]*/",  # someone's home directory
    r"(?<![\w.~$-])/" + _R + r"/",                 # root's home directory
    r"(?<![\w.~$-])/" + _U + r"/[A-Za-z_][\w.-]*/",  # a macOS home directory
    r"[A-Za-z]:\\" + _U + r"\\",                   # a Windows home directory
]


def machine_patterns():
    """The generic patterns and this machine's own: the checkout's path, its parent's, and $HOME."""
    pats = list(GENERIC)
    for p in (ROOT, os.path.dirname(ROOT), os.path.expanduser("~")):
        if p and p.count("/") >= 2:                # not "/" or a top-level directory such as /tmp
            pats.append(re.escape(p.rstrip("/") + "/"))
    return re.compile("|".join(pats))


def tracked_files():
    """The repository's files (git ls-files where git works, else a walk that skips build output)."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, check=True, timeout=60)
        files = [f for f in out.stdout.decode("utf-8", "replace").split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.SubprocessError):
        pass
    files = []
    for d, dirs, names in os.walk(ROOT):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        files.extend(os.path.relpath(os.path.join(d, n), ROOT) for n in names)
    return files


def test_patterns_catch_machine_paths_and_spare_system_ones():
    rx = machine_patterns()
    for bad in ("/" + _W + "/main/x.py", "cd /" + _H + "/alice/src", "/" + _R + "/.cache/x",
                "/" + _U + "/bob/herd", "C:\\" + _U + "\\carol\\herd", ROOT + "/clients"):
        assert rx.search(bad), bad
    for good in ("/usr/bin/python3", "/etc/herd/keys", "/tmp/herd-ppo", "../shared/third_party", "~/.cache",
                 "$HOME/.npmrc", "homework/", "tests/" + _W + "/x", "a/" + _R + "/b", "/dev/null",
                 "https://github.com/" + _U + "/x"):
        assert not rx.search(good), good


def test_no_file_names_a_machine_path():
    rx = machine_patterns()
    hits = []
    for rel in tracked_files():
        if rel == SELF or any(part in SKIP_DIRS for part in rel.split("/")):
            continue
        path = os.path.join(ROOT, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue                               # listed by git, absent in this checkout
        if b"\0" in data[:8192]:
            continue                               # binary (images, videos)
        text = data.decode("utf-8", "replace")
        for n, line in enumerate(text.splitlines(), 1):
            m = rx.search(line)
            if m:
                hits.append("%s:%d: %s" % (rel, n, line.strip()[:160]))
    assert not hits, "absolute paths of a machine in the tree:\n" + "\n".join(hits[:50])
