"""LocalServer: start a herd-server child process for scripts, examples and tests.

    from herd.local import LocalServer
    with LocalServer(threads=2) as srv:                   # build/herd-server on a free loopback port
        env = herd.make_vec("anymal_c-stand", 1024, address=srv.address)

The binary is $HERD_SERVER_BIN, else build/herd-server of the repository this package sits in, else
``herd-server`` on PATH.  The server is stopped with SIGTERM (it drains and exits 0) on exit.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from .client import Client
from .errors import HerdError

__all__ = ["LocalServer", "find_server_binary", "free_port"]

_REPO_BIN = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "build", "herd-server"))


def find_server_binary():
    for cand in (os.environ.get("HERD_SERVER_BIN"), _REPO_BIN, shutil.which("herd-server")):
        if cand and os.path.exists(cand):
            return cand
    raise FileNotFoundError("herd-server not found: build it with `make` or set HERD_SERVER_BIN")


def free_port():
    """A tcp port free on 127.0.0.1 right now (another process may take it before you bind it)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class LocalServer:
    """A herd-server child process.  address: its endpoint (``bind`` or a free tcp loopback port, or
    an ipc path in a temporary directory with transport="ipc").  keys: a directory written by
    ``herd-server --keygen``: the server runs with CURVE (server.key, authorized_keys) and the readiness
    check connects with client.key; clients then need server_key=keys/server.pub and
    secret_key=keys/client.key."""

    def __init__(self, threads=0, bind=None, transport="tcp", binary=None, log_level="warn", extra=(),
                 startup_timeout=20.0, keys=None):
        self.binary = binary or find_server_binary()
        self._tmp = None
        if bind is None:
            if transport == "ipc":
                self._tmp = tempfile.mkdtemp(prefix="herd-")
                bind = "ipc://" + os.path.join(self._tmp, "herd.sock")
            else:
                bind = "tcp://127.0.0.1:%d" % free_port()
        self.address = bind
        args = [self.binary, "--bind", bind, "--log-level", log_level, "--stats-interval", "0"]
        if threads:
            args += ["--threads", str(int(threads))]
        ping_keys = {}
        if keys is not None:
            args += ["--curve-secret-key-file", os.path.join(keys, "server.key"),
                     "--authorized-keys", os.path.join(keys, "authorized_keys")]
            ping_keys = {"server_key": os.path.join(keys, "server.pub"),
                         "secret_key": os.path.join(keys, "client.key")}
        args += list(extra)
        self._log = tempfile.TemporaryFile()    # not a pipe: a chatty server must never block on it
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.monotonic() + startup_timeout
        while True:
            if self.proc.poll() is not None:
                self._log.seek(0)
                err = self._log.read().decode(errors="replace")
                self._cleanup()
                raise RuntimeError("herd-server exited with %s: %s" % (self.proc.returncode, err.strip()))
            try:
                with Client(bind, timeout=0.3, **ping_keys) as c:
                    c.ping()
                break
            except HerdError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("herd-server did not answer on %s" % bind)
                time.sleep(0.05)

    def stop(self, timeout=10.0):
        """SIGTERM, wait (kill after timeout); returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._cleanup()
        return self.proc.returncode

    def _cleanup(self):
        if not self._log.closed:
            self._log.close()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def log_tail(self, nbytes=8192):
        """The end of the server's log (its stderr, at most nbytes), e.g. for a failed test's report.  Read
        without moving the file offset the server writes at."""
        if self._log.closed:
            return ""
        fd = self._log.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - nbytes)
        text = os.pread(fd, size - start, start).decode(errors="replace")
        return text if start == 0 else text[text.find("\n") + 1:]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
