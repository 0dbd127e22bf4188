"""The viewer's three.js: installed by npm on first use, and a clear "viewer disabled" message where it cannot be
(no npm, no registry).  A fake npm on PATH stands in for the registry, so this runs offline."""
import os
import shutil
import stat

import pytest

from herd import view

REPO_VIEWER = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "viewer"))


@pytest.fixture
def viewer_copy(tmp_path, monkeypatch):
    """A copy of the viewer's page and lock file without node_modules, as $HERD_VIEWER_DIR, and an empty PATH
    directory for the test's fake npm."""
    d = tmp_path / "viewer"
    d.mkdir()
    for name in ("index.html", "viewer.js", "viewer.css", "package.json", "package-lock.json"):
        shutil.copy(os.path.join(REPO_VIEWER, name), d / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("HERD_VIEWER_DIR", str(d))
    monkeypatch.setenv("PATH", str(bin_dir))
    return d, bin_dir


def fake_npm(bin_dir, script):
    p = bin_dir / "npm"
    p.write_text("#!/bin/sh\n" + script)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)


def test_first_use_installs_three(viewer_copy, capfd):
    d, bin_dir = viewer_copy
    fake_npm(bin_dir, '[ "$1" = ci ] || exit 2\n/bin/mkdir -p node_modules/three/build\n'
                      'echo "export {}" > node_modules/three/build/three.module.min.js\n')
    p = view.three_path()
    assert p == str(d / "node_modules" / "three" / "build" / "three.module.min.js") and os.path.exists(p)
    assert "installing the viewer's three.js" in capfd.readouterr().err
    assert view.three_path() == p                    # then found, nothing run


def test_no_registry_disables_the_viewer_with_a_message(viewer_copy):
    d, bin_dir = viewer_copy
    fake_npm(bin_dir, 'echo "npm ERR! network request to https://registry.npmjs.org/three failed" >&2\nexit 1\n')
    with pytest.raises(FileNotFoundError) as e:
        view.three_path()
    msg = str(e.value)
    assert msg.startswith("the viewer is disabled") and "network request" in msg and "make viewer-deps" in msg
    assert "work without it" in msg


def test_no_npm_disables_the_viewer_with_a_message(viewer_copy):
    with pytest.raises(FileNotFoundError, match="the viewer is disabled: .*npm is not on PATH"):
        view.three_path()
    with pytest.raises(FileNotFoundError, match="the viewer is disabled: three.js is not installed\\."):
        view.three_path(install=False)
