"""bench/viewer_fps.py in its short mode: one world, one short repeat per setting, and the JSON lines it
promises (the figures themselves come from its full run, not from a test)."""
import json
import os
import subprocess
import sys

import pytest

from browser import HAVE_BROWSER, WHY_NOT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(not HAVE_BROWSER, reason=WHY_NOT)


def test_the_viewer_bench_prints_a_line_per_setting():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "viewer_fps.py"), "--worlds", "1",
                          "--seconds", "3", "--repeats", "1", "--size", "480x320"],
                         capture_output=True, text=True, timeout=300, env=os.environ)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [(r["worlds"], r["shapes"]) for r in rows] == [(1, "meshes"), (1, "collision")]
    for r in rows:
        assert r["bench"] == "viewer_fps" and (r["width"], r["height"]) == (480, 320)
        assert r["frames_per_s"] > 0 and r["draws_per_s"] > 0 and r["draw_ms"] > 0
        assert abs(r["capacity_fps"] - 1000.0 / r["draw_ms"]) < 0.1 * r["capacity_fps"] + 0.1
    assert rows[0]["draw_ratio"] == 1.0 and rows[1]["draw_ratio"] > 0
