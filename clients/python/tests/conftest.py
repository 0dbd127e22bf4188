"""Fixtures: real herd-server processes (herd.local.LocalServer: build/herd-server) on free loopback ports.

    server       a session-wide server on tcp://127.0.0.1:<free port>, 2 worker threads, logging at info level
                 (a failed test that used it gets the end of its log in its report)
    server2      a second one (multi-server tests), the same
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


_shared = {}     # fixture name -> the LocalServer of a session-wide fixture (its log goes into failure reports)


@pytest.fixture(scope="session")
def server():
    s = _tcp_server(log_level="info")
    _shared["server"] = s
    yield s.address
    _shared.pop("server")
    assert s.stop() == 0, "herd-server did not exit 0 on SIGTERM"


@pytest.fixture(scope="session")
def server2():
    s = _tcp_server(log_level="info")
    _shared["server2"] = s
    yield s.address
    _shared.pop("server2")
    s.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used a shared server gets the end of that server's log (info level: sessions made and
    closed, clients gone with requests cancelled, replies dropped) in its report: a failure that depends on what
    earlier tests left on the server can then be read from the report of the run that saw it."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and rep.when in ("setup", "call"):
        for name, s in _shared.items():
            if name in getattr(item, "fixturenames", ()):
                rep.sections.append(("herd-server log (%s, %s)" % (name, s.address), s.log_tail()))


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
