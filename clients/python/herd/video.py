"""Frames (uint8 H x W x 3 arrays) to a video file: MP4 through Debian's ffmpeg, else through imageio
(python3-imageio, with whatever ffmpeg it finds: its own from imageio-ffmpeg, or the system's); GIF
through Pillow, else imageio.  gymnasium.wrappers.RecordVideo needs moviepy; this writer does not, and
herd.video.RecordVideo is gymnasium's wrapper that uses it where moviepy is missing.

    from herd.video import write_video
    path = write_video(frames, "rollout.mp4", fps=30)    # falls back to rollout.gif without an MP4 encoder

    env = herd.video.RecordVideo(herd.HerdEnv("anymal_c-walk", render_mode="rgb_array"), "videos")

None of these tools is a dependency of herd: ffmpeg (``apt install ffmpeg``) is looked up on PATH, imageio
and Pillow (``python3-imageio``, ``python3-pil``) imported when needed; a missing one is reported with what
to install.
"""
import os
import shutil
import subprocess

import numpy as np

__all__ = ["write_video", "have_ffmpeg", "RecordVideo", "have_moviepy"]


def have_ffmpeg():
    """The ffmpeg executable on PATH, or None."""
    return shutil.which("ffmpeg")


def _imageio():
    """The imageio module, or None."""
    try:
        import imageio
    except ImportError:
        return None
    return imageio


def _write_mp4_imageio(frames, path, fps, iio):
    """H.264 through imageio's ffmpeg plugin; False when imageio has no ffmpeg to run."""
    h, w = frames[0].shape[:2]
    ph, pw = h + h % 2, w + w % 2
    try:
        wr = iio.get_writer(path, format="FFMPEG", mode="I", fps=fps, codec="libx264", pixelformat="yuv420p",
                            macro_block_size=1)
    except Exception:                   # noqa: BLE001 - no ffmpeg for imageio (its error types vary by version)
        return False
    with wr:
        for f in frames:
            if (ph, pw) != (h, w):
                f = np.pad(f, ((0, ph - h), (0, pw - w), (0, 0)), mode="edge")
            wr.append_data(f)
    return True


def _as_frames(frames):
    out = [np.ascontiguousarray(f, dtype=np.uint8) for f in frames]
    if not out:
        raise ValueError("no frames to write")
    h, w = out[0].shape[:2]
    for f in out:
        if f.shape != (h, w, 3):
            raise ValueError("frames must all be uint8 (%d, %d, 3), got %s" % (h, w, f.shape))
    return out


def _write_mp4(frames, path, fps, ffmpeg):
    h, w = frames[0].shape[:2]
    # H.264 in yuv420p needs even sizes: pad by one pixel if needed
    cmd = [ffmpeg, "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "%dx%d" % (w, h),
           "-r", str(fps), "-i", "-", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-c:v", "libx264",
           "-pix_fmt", "yuv420p", "-crf", "23", "-movflags", "+faststart", path]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for f in frames:
            p.stdin.write(f.tobytes())
        p.stdin.close()
    except BrokenPipeError:
        pass
    err = p.stderr.read().decode(errors="replace")
    if p.wait() != 0:
        raise RuntimeError("ffmpeg failed writing %s: %s" % (path, err.strip()))


def _write_gif(frames, path, fps):
    try:
        from PIL import Image
    except ImportError as e:      # pragma: no cover - depends on the installation
        iio = _imageio()
        if iio is None:
            raise RuntimeError("writing a GIF needs Pillow or imageio (apt install python3-pil)") from e
        iio.mimsave(path, frames, format="GIF", duration=max(0.02, 1.0 / fps))
        return
    imgs = [Image.fromarray(f) for f in frames]
    # one palette for the whole clip (from a few frames): no flicker, small files
    sample = Image.fromarray(np.concatenate([frames[i] for i in np.linspace(0, len(frames) - 1, 4).astype(int)]))
    pal = sample.quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    q = [im.quantize(palette=pal, dither=Image.Dither.NONE) for im in imgs]
    q[0].save(path, save_all=True, append_images=q[1:], duration=max(20, int(round(1000 / fps))), loop=0,
              optimize=False, disposal=1)


def write_video(frames, path, fps=30, fallback=True):
    """Writes frames to path: ``.mp4`` with ffmpeg (H.264; without it, imageio's), ``.gif`` with Pillow.
    With fallback (default), an MP4 asked for where no encoder is found becomes a GIF beside it (same
    name, .gif).  Returns the path written."""
    frames = _as_frames(frames)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".mp4":
        ffmpeg = have_ffmpeg()
        if ffmpeg:
            _write_mp4(frames, path, fps, ffmpeg)
            return path
        iio = _imageio()
        if iio is not None and _write_mp4_imageio(frames, path, fps, iio):
            return path
        if not fallback:
            raise RuntimeError("writing an MP4 needs ffmpeg (apt install ffmpeg)")
        path = os.path.splitext(path)[0] + ".gif"
        ext = ".gif"
    if ext == ".gif":
        _write_gif(frames, path, fps)
        return path
    raise ValueError("unknown video type %r (use .mp4 or .gif)" % (ext,))


def have_moviepy():
    """True when moviepy (gymnasium's video writer) can be imported."""
    try:
        import moviepy  # noqa: F401
    except ImportError:
        return False
    return True


def _record_video_class():
    """gymnasium.wrappers.RecordVideo with herd's writer where moviepy is missing (built on first use: gymnasium
    is not a dependency of herd)."""
    import gc

    import gymnasium
    from gymnasium.wrappers import RecordVideo as GymRecordVideo

    class RecordVideo(GymRecordVideo):
        """gymnasium.wrappers.RecordVideo (same arguments, same triggers and file names: VIDEO_FOLDER/
        NAME_PREFIX-episode-K.mp4 or -step-K.mp4) that writes its clips with moviepy where it is installed, as
        gymnasium does, and otherwise with herd.video.write_video (ffmpeg, else imageio; an MP4 without either
        becomes a GIF beside it).  .writer says which: "moviepy" or "herd"."""

        def __init__(self, env, video_folder, **kwargs):
            try:
                super().__init__(env, video_folder, **kwargs)
                self.writer = "moviepy"
            except gymnasium.error.DependencyNotInstalled:
                # gymnasium tests for moviepy once the wrapper is set up; anything else missing is a real error
                if have_moviepy() or not hasattr(self, "recorded_frames") or not hasattr(self, "frames_per_sec"):
                    raise
                self.writer = "herd"

        def stop_recording(self):
            if self.writer == "moviepy":
                return super().stop_recording()
            assert self.recording, "stop_recording was called, but no recording was started"
            if self.recorded_frames:
                path = os.path.join(self.video_folder, "%s.mp4" % self._video_name)
                write_video(self.recorded_frames, path, fps=self.frames_per_sec)
            self.recorded_frames = []
            self.recording = False
            self._video_name = None
            if self.gc_trigger and self.gc_trigger(self.episode_id):
                gc.collect()

    return RecordVideo


def __getattr__(name):
    if name == "RecordVideo":
        cls = _record_video_class()
        globals()["RecordVideo"] = cls
        return cls
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
