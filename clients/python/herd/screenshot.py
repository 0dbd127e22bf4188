"""Pictures of the viewer page from a machine without a display: headless Chromium driven by Selenium
(Debian: chromium, chromium-driver, python3-selenium).

    python3 -m herd.screenshot http://127.0.0.1:8765/ live.png           # a live page (python3 -m herd.view)
    python3 -m herd.screenshot walk.html still.png --at 5                 # a replay (herd.record), 5 s in

(`python3 -m herd.view ... --screenshot PNG` and `python3 -m herd.record ... --screenshot PNG` call the same.)
The picture is taken once the page says it is fully drawn (herdViewer.drawn: the robot's meshes loaded
and a frame rendered; with --at, the frame of that time drawn), at full resolution (the page's adaptive
render scale fixed at 1); the page's Server-Sent Events stream never holds it up, because the driver waits
for the DOM, not for the page's load to end.

Browser is also what tests/viewer/ drive the page with.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

__all__ = ["Browser", "screenshot", "full_resolution", "chromium_path", "chromedriver_path", "gl_flags", "main"]

FLAGS = ["--headless=new", "--no-sandbox", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio", "--disable-dev-shm-usage"]

# WebGL without a GPU.  "mesa": ANGLE on the system's EGL, which on a machine without a GPU is Mesa's llvmpipe
# (multithreaded, several times faster than SwiftShader on the viewer's page); Chromium's blocklist refuses a
# software GL driver unless told not to, and where EGL cannot start (no Mesa) Chromium falls back to
# SwiftShader, which --enable-unsafe-swiftshader allows for WebGL.  "swiftshader": Chromium's own software
# GL only.  HERD_CHROMIUM_GL chooses; "mesa" by default.
GL_FLAGS = {
    "mesa": ["--use-gl=angle", "--use-angle=gl-egl", "--ignore-gpu-blocklist", "--enable-unsafe-swiftshader"],
    "swiftshader": ["--disable-gpu", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
}


def gl_flags(gl=None):
    gl = gl or os.environ.get("HERD_CHROMIUM_GL") or "mesa"
    if gl not in GL_FLAGS:
        raise ValueError("HERD_CHROMIUM_GL / gl: one of %s, not %r" % (", ".join(sorted(GL_FLAGS)), gl))
    return GL_FLAGS[gl]


def chromium_path():
    return os.environ.get("HERD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def chromedriver_path():
    return os.environ.get("HERD_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"


class Browser:
    """Headless Chromium with a width x height viewport and a fresh profile.  evaluate(expr) returns a JS
    expression's value; wait_for(expr) polls it; console_errors lists console.error calls, uncaught
    exceptions and failed loads the browser logged (level SEVERE), plus the page's own error list.
    gl: the software WebGL, "mesa" or "swiftshader" (gl_flags; default $HERD_CHROMIUM_GL, else "mesa")."""

    def __init__(self, width=800, height=600, timeout=60.0, gl=None):
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
        except ImportError as e:      # pragma: no cover - depends on the installation
            raise RuntimeError("pictures of the page need Selenium (apt install python3-selenium chromium-driver)") from e
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="herd-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium_path()
        for f in FLAGS + gl_flags(gl) + ["--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height)]:
            opts.add_argument(f)
        opts.page_load_strategy = "eager"        # the DOM, not the end of loading: an SSE stream never ends
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            self.driver = webdriver.Chrome(service=Service(chromedriver_path()), options=opts)
        except Exception:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise
        self.driver.set_script_timeout(timeout)
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self._errors = []

    def goto(self, url):
        self.driver.get(url)

    def evaluate(self, expr):
        """The value of JavaScript source `expr` (statements allowed: the last one's value, as eval gives)."""
        return self.driver.execute_script("return window.eval(arguments[0]);", expr)

    def wait_for(self, expr, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.evaluate("!!(%s)" % expr):
                    return
            except Exception as e:          # the page is still navigating
                last = e
            else:
                last = None
            if time.monotonic() > deadline:
                raise TimeoutError("page never satisfied %s; console errors: %s%s"
                                   % (expr, self.console_errors, "; last error: %s" % last if last else ""))
            time.sleep(0.05)

    def gl_renderer(self):
        """The WebGL renderer the page gets (e.g. "ANGLE (Mesa/X.org, llvmpipe ...)"), or None without WebGL."""
        return self.evaluate("(() => { const gl = document.createElement('canvas').getContext('webgl2');"
                             " if (!gl) return null; const e = gl.getExtension('WEBGL_debug_renderer_info');"
                             " return gl.getParameter(e ? e.UNMASKED_RENDERER_WEBGL : gl.RENDERER); })()")

    def next_frames(self, n=2):
        """Returns after n more animation frames of the page (what was drawn is then on screen)."""
        self.driver.execute_async_script(
            "const done = arguments[0]; let k = %d; const f = () => (--k > 0 ? requestAnimationFrame(f) : done());"
            "requestAnimationFrame(f);" % n)

    @property
    def console_errors(self):
        for e in self.driver.get_log("browser"):
            if e.get("level") == "SEVERE":
                self._errors.append("%s: %s" % (e.get("source", "log"), e.get("message")))
        try:
            page = self.evaluate("window.herdViewer ? herdViewer.errors : []") or []
        except Exception:
            page = []
        return self._errors + ["page: %s" % m for m in page if not any(m in x for x in self._errors)]

    def clear_errors(self):
        """Forgets the errors logged so far (those of a page left behind)."""
        self.driver.get_log("browser")
        self._errors = []

    def screenshot(self):
        return self.driver.get_screenshot_as_png()

    def close(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def full_resolution(b, timeout=60.0):
    """Fixes the page's render scale at 1 (its drawing buffer as large as the canvas on the page, not the
    adaptive scale it keeps while frames are slow) and returns once a frame has been drawn so; pages written
    before the render scale existed are left as they are."""
    if b.evaluate("typeof herdViewer.setRenderScale === 'function'"):
        b.evaluate("herdViewer.setRenderScale(1)")
        b.wait_for("(i => i.renderWidth === i.width && i.renderHeight === i.height)(herdViewer.info())"
                   " && herdViewer.settled()", timeout)


def _url(page):
    if "://" in page:
        return page
    return "file://" + os.path.abspath(page)


def screenshot(page, out, width=960, height=600, at=None, at_step=None, wait=0.0, timeout=120.0, browser=None):
    """Writes a PNG of the viewer page (a URL, or a replay's HTML file) once it is fully drawn.

    at: a replay's time (s): the page is paused at the frame of that time.  at_step: a live page's step to
    reach first.  wait: further seconds to wait (an attached session's page).  Returns the seconds from
    opening the page to the fully drawn frame (the picture is taken then)."""
    own = browser is None
    b = browser or Browser(width, height, timeout)
    try:
        if not own:                     # a page left open before: its errors are not this page's
            b.goto("about:blank")
            b.clear_errors()
        t0 = time.monotonic()
        b.goto(_url(page))
        b.wait_for("window.herdViewer && herdViewer.drawn", timeout)
        full_resolution(b, timeout)
        if at is not None and b.evaluate("herdViewer.mode") == "replay":
            i = b.evaluate("(herdViewer.setPaused(true), Math.max(0, Math.min(herdViewer.replay.nframes - 1, "
                           "Math.round(%r / herdViewer.replay.dt))))" % float(at))
            b.evaluate("herdViewer.replay.seek(%d)" % i)
            b.wait_for("herdViewer.drawnStep === %d" % i, timeout)
        if at_step is not None:
            b.wait_for("herdViewer.drawnStep !== null && herdViewer.drawnStep >= %d" % at_step, timeout)
        if wait > 0:
            time.sleep(wait)
        b.next_frames(2)
        took = time.monotonic() - t0
        errors = b.console_errors
        if errors:
            raise RuntimeError("the page logged errors: %s" % errors)
        png = b.screenshot()
        with open(out, "wb") as f:
            f.write(png)
        return took
    finally:
        if own:
            b.close()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m herd.screenshot", description=__doc__.split("\n\n")[0])
    ap.add_argument("page", help="the viewer's URL, or a replay's HTML file")
    ap.add_argument("out", help="the PNG to write")
    ap.add_argument("--at", type=float, help="a replay's time (s) to show")
    ap.add_argument("--size", default="960x600", help="WxH pixels")
    a = ap.parse_args(argv)
    w, h = (int(x) for x in a.size.lower().split("x"))
    t = screenshot(a.page, a.out, w, h, at=a.at)
    print("herd.screenshot: %s (%dx%d, fully drawn %.2f s after the page was opened)" % (a.out, w, h, t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
