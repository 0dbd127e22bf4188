"""The package installs with pip, offline (setuptools from the system, no build isolation), as a regular and
as an editable install, and then imports without any PYTHONPATH or sys.path help."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

PYROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

for mod in ("venv", "pip", "setuptools"):
    if importlib.util.find_spec(mod) is None:
        pytest.skip("%s is not installed (apt-get install python3-venv python3-pip python3-setuptools)" % mod,
                    allow_module_level=True)

CHECK = ("import herd, herd.adapters, herd.local, herd.registration, herd.env; "
         "print(herd.__version__, herd.__file__)")


def run(args, cwd):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONDONTWRITEBYTECODE="1", PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, "%s\n%s\n%s" % (" ".join(args), out.stdout[-2000:], out.stderr[-2000:])
    return out.stdout


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory):
    d = tmp_path_factory.mktemp("venv")
    # the system's pip serves the venv (--system-site-packages): no copy of pip to install, no network
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(d / "v")],
                   check=True, timeout=120)
    return str(d / "v" / "bin" / "python")


def test_regular_install(venv_python, tmp_path):
    # build from a copy of the package, so that the build leaves nothing (herd.egg-info) in the source tree
    src = tmp_path / "src"
    shutil.copytree(PYROOT, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build"))
    run([venv_python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", str(src)], tmp_path)
    try:
        out = run([venv_python, "-c", CHECK], tmp_path)
        version, path = out.split()
        assert version == "0.1.0"
        assert "site-packages" in path and not path.startswith(PYROOT) and not path.startswith(str(src))
        meta = run([venv_python, "-m", "pip", "show", "herd"], tmp_path)
        assert "Requires: msgpack, numpy, pyzmq" in meta and "Apache-2.0" in meta
    finally:
        run([venv_python, "-m", "pip", "uninstall", "-q", "-y", "herd"], tmp_path)


def test_editable_install(venv_python, tmp_path):
    # the README's offline command: dependencies from the system's packages (the venv sees them), no index
    run([venv_python, "-m", "pip", "install", "-q", "--no-build-isolation", "-e", PYROOT], tmp_path)
    try:
        out = run([venv_python, "-c", CHECK], tmp_path)
        assert out.split()[1] == os.path.join(PYROOT, "herd", "__init__.py")
    finally:
        run([venv_python, "-m", "pip", "uninstall", "-q", "-y", "herd"], tmp_path)
