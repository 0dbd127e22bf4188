"""deploy/install-deps.sh: the default run and --check (what `make run` calls) never need npm; --viewer installs
the viewer's three.js and, without npm or its registry, disables only the viewer with a message.

The script runs on a copy of the repository's deploy/ and viewer/ lock file with a PATH of fakes (dpkg-query
saying every package is installed, apt-get that fails, npm as each test needs), so nothing is installed."""
import os
import shutil
import stat
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TOOLS = ("sed", "grep", "id", "dirname", "cat", "mkdir", "env")


def write(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fake_repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    (repo / "viewer").mkdir()
    shutil.copy(os.path.join(ROOT, "deploy", "install-deps.sh"), repo / "deploy" / "install-deps.sh")
    shutil.copy(os.path.join(ROOT, "viewer", "package-lock.json"), repo / "viewer" / "package-lock.json")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for t in TOOLS:
        real = shutil.which(t)
        if real is None:
            pytest.skip("%s is not installed" % t)
        os.symlink(real, bin_dir / t)
    log = tmp_path / "calls.log"
    write(bin_dir / "dpkg-query", "#!/bin/sh\nprintf 'install ok installed'\n")
    write(bin_dir / "apt-get", "#!/bin/sh\necho \"apt-get $*\" >> %s\nexit 100\n" % log)
    return repo, bin_dir, log


def run(repo, bin_dir, *args):
    bash = shutil.which("bash")
    return subprocess.run([bash, str(repo / "deploy" / "install-deps.sh"), *args], capture_output=True, text=True,
                          env={"PATH": str(bin_dir), "HOME": str(repo)}, timeout=60)


def test_make_run_path_needs_no_npm(fake_repo):
    repo, bin_dir, log = fake_repo
    write(bin_dir / "npm", "#!/bin/sh\necho \"npm $*\" >> %s\nexit 1\n" % log)
    r = run(repo, bin_dir, "--check")
    assert r.returncode == 0, r.stdout + r.stderr          # no three.js, no registry: nothing is missing
    r = run(repo, bin_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not log.exists(), log.read_text()               # neither npm nor apt-get was run
    os.remove(bin_dir / "npm")
    assert run(repo, bin_dir, "--check").returncode == 0 and run(repo, bin_dir).returncode == 0


def test_viewer_without_registry_is_disabled_with_a_message(fake_repo):
    repo, bin_dir, log = fake_repo
    write(bin_dir / "npm", "#!/bin/sh\necho \"npm $*\" >> %s\necho 'npm ERR! network' >&2\nexit 1\n" % log)
    r = run(repo, bin_dir, "--viewer")
    assert r.returncode == 1
    assert "viewer disabled: npm ci failed" in r.stdout and "work without it" in r.stdout
    assert "npm ci" in log.read_text()


def test_viewer_without_npm_tries_debian_npm_then_says_so(fake_repo):
    repo, bin_dir, log = fake_repo
    r = run(repo, bin_dir, "--viewer")
    assert r.returncode == 1
    assert "viewer disabled: npm is not installed" in r.stdout
    assert "apt-get install" in log.read_text() and "npm" in log.read_text()


def test_viewer_installs_three(fake_repo):
    repo, bin_dir, log = fake_repo
    want = None
    with open(repo / "viewer" / "package-lock.json") as f:
        import json
        want = json.load(f)["packages"]["node_modules/three"]["version"]
    write(bin_dir / "npm", "#!/bin/sh\n[ \"$1\" = ci ] || exit 2\nmkdir -p node_modules/three\n"
                           "printf '{\\n  \"name\": \"three\",\\n  \"version\": \"%s\"\\n}\\n' > node_modules/three/package.json\n"
                           % want)
    r = run(repo, bin_dir, "--viewer")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "npm ci in viewer/" in r.stdout
    r = run(repo, bin_dir, "--viewer")
    assert r.returncode == 0 and "three.js is installed" in r.stdout
