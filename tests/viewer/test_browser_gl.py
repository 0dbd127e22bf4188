"""The WebGL that herd.screenshot's headless Chromium gets (tests/viewer/browser.py): by default ANGLE on the
system's EGL (Mesa's llvmpipe on a machine without a GPU), SwiftShader with HERD_CHROMIUM_GL=swiftshader, and
SwiftShader again, not a page without WebGL, where EGL cannot start (here: libglvnd told of no EGL vendor).

Run: tests/viewer/run.sh tests/viewer/test_browser_gl.py.
"""
import os

import pytest

from herd.screenshot import gl_flags

from browser import HAVE_BROWSER, WHY_NOT, Browser

pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason=WHY_NOT)
GLVND_EGL = "/usr/share/glvnd/egl_vendor.d"


def renderer(monkeypatch, **env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with Browser(320, 240) as b:         # chromedriver and Chromium inherit this environment
        b.goto("data:text/html,<p>gl</p>")
        return b.gl_renderer()


def test_default_is_angle_on_egl(monkeypatch):
    monkeypatch.delenv("HERD_CHROMIUM_GL", raising=False)
    r = renderer(monkeypatch)
    assert r, "no WebGL in the default browser"
    if os.path.isdir(GLVND_EGL):
        assert "SwiftShader" not in r, r


def test_swiftshader_when_asked(monkeypatch):
    assert "SwiftShader" in renderer(monkeypatch, HERD_CHROMIUM_GL="swiftshader")


@pytest.mark.skipif(not os.path.isdir(GLVND_EGL), reason="needs libglvnd's EGL (its vendor files choose the driver)")
def test_swiftshader_when_egl_cannot_start(monkeypatch, tmp_path):
    monkeypatch.delenv("HERD_CHROMIUM_GL", raising=False)
    r = renderer(monkeypatch, __EGL_VENDOR_LIBRARY_FILENAMES=str(tmp_path / "none.json"))
    assert r and "SwiftShader" in r, r


def test_gl_choice_is_checked(monkeypatch):
    monkeypatch.setenv("HERD_CHROMIUM_GL", "vulkan")
    with pytest.raises(ValueError, match="mesa, swiftshader"):
        gl_flags()
