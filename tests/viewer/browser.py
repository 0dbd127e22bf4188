"""The browser of the viewer tests: headless Chromium driven by Selenium through chromium-driver (Debian:
chromium, chromium-driver, python3-selenium), as herd.screenshot drives it.  HAVE_BROWSER is False, and the
tests skip with the reason, where one of them is missing."""
import os

from herd.screenshot import Browser, chromedriver_path, chromium_path

try:
    import selenium  # noqa: F401
    _SELENIUM = True
except ImportError:
    _SELENIUM = False

CHROMIUM = chromium_path()
HAVE_BROWSER = _SELENIUM and os.path.exists(CHROMIUM) and os.path.exists(chromedriver_path())
WHY_NOT = "needs chromium, chromium-driver and python3-selenium (deploy/install-deps.sh installs them)"

__all__ = ["Browser", "CHROMIUM", "HAVE_BROWSER", "WHY_NOT"]
