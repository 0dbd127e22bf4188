"""Fixtures: real herd-server processes (herd.local.LocalServer: build/herd-server) on free loopback ports.

    server       a session-wide server on tcp://127.0.0.1:<free port>, 2 worker threads
    server2      a second one (multi-server tests)
    ipc_server   one on an ipc:// path
    dead_address a tcp endpoint where nothing listens
    start_server a factory for servers with extra options (stopped at the end of the test)

herd must be importable: run-py-tests.sh sets PYTHONPATH, `pip install -e clients/python` installs it, and
pytest's `pythonpath` setting in clients/python/pyproject.toml covers a plain `pytest clients/python/tests`.
"""
import os
import subprocess

import pytest

import herd.local
from herd.local import LocalServer, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
TESTDATA = os.path.join(ROOT, "protocol", "testdata")

__all__ = ["TESTDATA", "free_port", "local_server"]


def local_server(threads=2, **kw):
    """A LocalServer with 2 worker threads (the binary is built first if it is missing)."""
    try:
        herd.local.find_server_binary()
    except FileNotFoundError:
        subprocess.check_call(["make", "-s", "-C", ROOT, "build/herd-server"])
    return LocalServer(threads=threads, **kw)


def _tcp_server(**kw):
    for _ in range(5):
        try:
            return local_server(**kw)
        except RuntimeError:
            continue   # port taken in between: try another
    raise RuntimeError("could not start herd-server")


@pytest.fixture(scope="session")
def server():
    s = _tcp_server()
    yield s.address
    assert s.stop() == 0, "herd-server did not exit 0 on SIGTERM"


@pytest.fixture(scope="session")
def server2():
    s = _tcp_server()
    yield s.address
    s.stop()


@pytest.fixture(scope="session")
def ipc_server():
    s = local_server(transport="ipc")
    yield s.address
    s.stop()


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
