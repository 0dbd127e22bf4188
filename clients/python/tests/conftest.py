"""Fixtures: real herd-server processes (build/herd-server) on free loopback ports / ipc paths.

    server       a session-wide server on tcp://127.0.0.1:<free port>, 2 worker threads
    server2      a second one (multi-server tests)
    ipc_server   one on an ipc:// path
    dead_address a tcp endpoint where nothing listens
    start_server a factory for servers with extra options (stopped at the end of the test)
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.dirname(HERE)
ROOT = os.path.abspath(os.path.join(PYROOT, "..", ".."))
sys.path.insert(0, PYROOT)

import herd  # noqa: E402

SERVER_BIN = os.environ.get("HERD_SERVER_BIN", os.path.join(ROOT, "build", "herd-server"))
TESTDATA = os.path.join(ROOT, "protocol", "testdata")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """A herd-server child process."""

    def __init__(self, endpoint, threads=2, extra=()):
        if not os.path.exists(SERVER_BIN):
            subprocess.check_call(["make", "-s", "-C", ROOT, "build/herd-server"])
        self.endpoint = endpoint
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([SERVER_BIN, "--bind", endpoint, "--threads", str(threads),
                                      "--log-level", "warn", "--stats-interval", "0"] + list(extra),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError("herd-server exited (%s): %s" % (self.proc.returncode,
                                                                    self.log.read().decode(errors="replace")))
            try:
                with herd.Client(endpoint, timeout=0.3) as c:
                    c.ping()
                break
            except herd.HerdError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("herd-server did not answer on %s" % endpoint)
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def _tcp_server(**kw):
    for _ in range(5):
        try:
            return Server("tcp://127.0.0.1:%d" % free_port(), **kw)
        except RuntimeError:
            continue   # port taken in between: try another
    raise RuntimeError("could not start herd-server")


@pytest.fixture(scope="session")
def server():
    s = _tcp_server()
    yield s.endpoint
    assert s.stop() == 0, "herd-server did not exit 0 on SIGTERM"


@pytest.fixture(scope="session")
def server2():
    s = _tcp_server()
    yield s.endpoint
    s.stop()


@pytest.fixture(scope="session")
def ipc_server():
    d = tempfile.mkdtemp(prefix="herd-pytest-")
    s = Server("ipc://" + os.path.join(d, "herd.sock"))
    yield s.endpoint
    s.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def start_server():
    started = []

    def start(**kw):
        s = _tcp_server(**kw)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


@pytest.fixture
def dead_address():
    return "tcp://127.0.0.1:%d" % free_port()
