"""herd.video and examples/record_rollout.py: frames to GIF (Pillow) and MP4 (ffmpeg, when installed)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from herd.video import write_video

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def frames(n=12, w=64, h=48):
    out = []
    for k in range(n):
        f = np.zeros((h, w, 3), np.uint8)
        f[:, : 4 * k + 4] = (200, 30, 30)          # a red bar that grows
        f[:, 4 * k + 4:] = (20, 20, 160)
        out.append(f)
    return out


def test_gif_holds_every_frame(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image
    path = write_video(frames(), str(tmp_path / "a.gif"), fps=25)
    im = Image.open(path)
    assert im.n_frames == 12 and im.size == (64, 48)
    im.seek(5)
    rgb = np.asarray(im.convert("RGB")).astype(int)
    assert (rgb[:, :20, 0] > 150).all() and (rgb[:, 30:, 2] > 120).all()   # bar of frame 5: 24 px


@pytest.mark.skipif(not shutil.which("ffmpeg"), reason="ffmpeg is not installed (apt install ffmpeg)")
def test_mp4_has_the_frames(tmp_path):
    path = write_video(frames(w=65, h=47), str(tmp_path / "a.mp4"), fps=30)     # odd sizes are padded
    assert path.endswith(".mp4")
    out = subprocess.check_output(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                   "stream=nb_read_frames,width,height", "-of", "csv=p=0", path], text=True)
    w, h, n = (int(x) for x in out.strip().split(","))
    assert (w, h, n) == (66, 48, 12)


@pytest.mark.skipif(not shutil.which("ffmpeg"), reason="ffmpeg is not installed (imageio runs it)")
def test_mp4_through_imageio_without_the_ffmpeg_command(tmp_path, monkeypatch):
    pytest.importorskip("imageio")
    import herd.video
    monkeypatch.setattr(herd.video, "have_ffmpeg", lambda: None)       # herd's own ffmpeg call is not used
    path = write_video(frames(w=65, h=47), str(tmp_path / "i.mp4"), fps=30)
    assert path.endswith(".mp4")
    out = subprocess.check_output(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                   "stream=nb_read_frames,width,height,codec_name", "-of", "csv=p=0", path], text=True)
    assert out.strip() == "h264,66,48,12"


def test_mp4_falls_back_to_gif_without_ffmpeg(tmp_path, monkeypatch):
    pytest.importorskip("PIL")
    import herd.video
    monkeypatch.setattr(herd.video, "have_ffmpeg", lambda: None)
    monkeypatch.setattr(herd.video, "_imageio", lambda: None)
    assert write_video(frames(), str(tmp_path / "b.mp4")) == str(tmp_path / "b.gif")
    with pytest.raises(RuntimeError, match="ffmpeg"):
        write_video(frames(), str(tmp_path / "c.mp4"), fallback=False)
    with pytest.raises(ValueError, match="same|uint8"):
        write_video([np.zeros((4, 4, 3), np.uint8), np.zeros((5, 4, 3), np.uint8)], str(tmp_path / "d.gif"))


def test_record_rollout_script(server, tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image
    out = tmp_path / "walk.gif"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python"))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "record_rollout.py"), "--address", server,
                        "--steps", "15", "--policy", "trot", "--size", "160x120", "--out", str(out)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    im = Image.open(out)
    assert im.n_frames == 16 and im.size == (160, 120)
    first = np.asarray(im.convert("RGB")).astype(int)
    im.seek(15)
    last = np.asarray(im.convert("RGB")).astype(int)
    orange = (first[..., 0] > 150) & (first[..., 1] < 140) & (first[..., 2] < 90)
    assert orange.sum() > 30, "the robot's base is drawn"
    assert np.abs(first - last).sum() > 0, "the robot moved"


def _probe(path):
    out = subprocess.check_output(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                   "stream=nb_read_frames,width,height,codec_name", "-of", "csv=p=0", path], text=True)
    return out.strip()


def _record(server, folder, steps):
    """A HerdEnv in rgb_array mode wrapped in herd.video.RecordVideo, every episode recorded, `steps` steps."""
    gym = pytest.importorskip("gymnasium")
    import herd
    import herd.video
    env = herd.video.RecordVideo(herd.HerdEnv("anymal_c-walk", render_mode="rgb_array", address=server, seed=0),
                                 str(folder), episode_trigger=lambda e: True, name_prefix="walk")
    assert isinstance(env, gym.wrappers.RecordVideo)
    assert env.frames_per_sec == 50                 # HerdEnv's render_fps: one frame per 0.02 s control step
    env.reset(seed=0)
    for _ in range(steps):
        env.step(np.zeros(env.action_space.shape, np.float32))
    env.close()
    return env


@pytest.mark.skipif(not shutil.which("ffmpeg"), reason="ffmpeg is not installed (apt install ffmpeg)")
def test_record_video_wrapper_writes_herd_episodes(server, tmp_path, monkeypatch):
    """gymnasium's RecordVideo on a HerdEnv: where moviepy is missing herd's writer makes the MP4 (the reset's
    frame and one per step, at the env's frame size); where it is installed gymnasium's own does."""
    import herd.video
    if herd.video.have_moviepy():
        env = _record(server, tmp_path / "moviepy", 12)
        assert env.writer == "moviepy"
        assert _probe(str(tmp_path / "moviepy" / "walk-episode-0.mp4")).endswith(",320,240,13")
    monkeypatch.setattr(herd.video, "have_moviepy", lambda: False)
    monkeypatch.setitem(sys.modules, "moviepy", None)     # no moviepy, installed or not
    env = _record(server, tmp_path / "herd", 12)
    assert env.writer == "herd"
    assert _probe(str(tmp_path / "herd" / "walk-episode-0.mp4")) == "h264,320,240,13"


@pytest.mark.skipif(not shutil.which("ffmpeg"), reason="ffmpeg is not installed (imageio runs it)")
def test_record_video_wrapper_through_imageio(server, tmp_path, monkeypatch):
    pytest.importorskip("imageio")
    import herd.video
    monkeypatch.setitem(sys.modules, "moviepy", None)
    monkeypatch.setattr(herd.video, "have_ffmpeg", lambda: None)       # imageio's ffmpeg, not herd's own call
    _record(server, tmp_path, 5)
    assert _probe(str(tmp_path / "walk-episode-0.mp4")) == "h264,320,240,6"
