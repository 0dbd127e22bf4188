"""Disconnects: the server cancels the pending work of a connection that closed (no reply could reach it), and
only that connection's.

The server names a request's connection by its file descriptor (ZMQ_SRCFD), and the kernel hands a closed
connection's fd to the next connection accepted.  If the server read a closed connection's DISCONNECTED event
only after a request of the fd's next holder had become pending, it cancelled that request silently: its
client heard nothing and waited out its timeout.  That is how a `poses` read from a second client, made right
after a first client closed, went unanswered for 10 s in a loaded run of test_view.py.

The test makes the race certain instead of waiting for a busy machine to make it: the server's stderr is a pipe
the test stops reading, so the server's I/O thread blocks on its next log line, while ZeroMQ's own threads go
on closing and accepting connections.  Linux only (/proc).
"""
import os
import select
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import herd
from herd import HerdTimeoutError
from herd.local import find_server_binary, free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def socket_fds(pid):
    """{fd: 'socket:[inode]'} of process pid."""
    out = {}
    for name in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, name))
        except OSError:
            continue        # closed while listed
        if target.startswith("socket:"):
            out[int(name)] = target
    return out


def wait_for(cond, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("waited %g s for %s" % (timeout, what))
        time.sleep(0.005)


class GatedServer:
    """A herd-server at debug level whose stderr is a pipe read by a thread the test can hold: once held, the
    pipe is filled, and the server's I/O thread blocks on its next log line.  Its budget of a client's steps in
    flight is lifted: the tests queue 20 big steps, estimated at the solver's caps."""

    def __init__(self):
        self.address = "tcp://127.0.0.1:%d" % free_port()
        self.proc = subprocess.Popen(
            [find_server_binary(), "--bind", self.address, "--log-level", "debug", "--stats-interval", "0",
             "--threads", "2", "--client-max-inflight-seconds", "1e9"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._fd = self.proc.stderr.fileno()
        os.set_blocking(self._fd, False)        # our end only: the server's end stays blocking
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()           # held by the reader around each read
        self.log = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 20
        while True:
            try:
                with herd.Client(self.address, timeout=0.3) as c:
                    c.ping()
                return
            except herd.HerdError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("herd-server did not start: %s" % bytes(self.log).decode(errors="replace"))
                time.sleep(0.05)

    def _read(self):
        while True:
            self._flowing.wait()
            select.select([self._fd], [], [], 0.05)
            with self._lock:
                if not self._flowing.is_set():
                    continue
                try:
                    data = os.read(self._fd, 1 << 16)
                except BlockingIOError:
                    continue
            if not data:
                return
            self.log += data

    def hold(self):
        """Stops reading stderr and fills the pipe (through a write end of our own, non-blocking)."""
        self._flowing.clear()
        with self._lock:
            pass                                # the reader is not inside a read now, and will not start one
        w = os.open("/proc/self/fd/%d" % self._fd, os.O_WRONLY | os.O_NONBLOCK)
        try:
            for chunk in (4096, 1):             # then byte by byte: a write of 4096 needs that much room at once
                try:
                    while True:
                        os.write(w, b"#" * chunk)
                except BlockingIOError:
                    pass
        finally:
            os.close(w)

    def release(self):
        self._flowing.set()

    def stop(self):
        self.release()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        self.proc.stderr.close()


@pytest.fixture
def gated():
    s = GatedServer()
    yield s
    s.stop()


def test_a_closed_connections_disconnect_does_not_cancel_the_next_connection_on_its_fd(gated):
    pid = gated.proc.pid
    owner = herd.Client(gated.address, timeout=60)
    holder = herd.Client(gated.address, timeout=0.5)
    a = b = None
    try:
        made = owner.make("anymal_c-walk", 4096, seed=1)
        session, token = made["session"], made["token"]
        owner.reset(session)
        holder.ping()
        before_a = socket_fds(pid)
        a = herd.Client(gated.address, timeout=10)
        a.ping()                                 # a's connection is accepted and served; nothing of it pending
        a_fds = {fd: t for fd, t in socket_fds(pid).items() if before_a.get(fd) != t}
        assert len(a_fds) == 1, "expected one new server socket for the new client, got %r" % a_fds
        (fd_a, sock_a), = a_fds.items()

        # the server's I/O thread blocks on the log line of an error reply; a ping then goes unanswered
        gated.hold()
        holder.send(0, "no-such-op")
        with pytest.raises(HerdTimeoutError):
            holder.ping()

        a.close()                                # ZeroMQ's thread reports the disconnect and frees fd_a ...
        a = None
        wait_for(lambda: socket_fds(pid).get(fd_a) != sock_a, "the server to close the first client's socket")
        b = herd.Client(gated.address, timeout=20)
        b.use_token(session, token)
        rid = b.send(0, "step", session=session, actions=np.zeros((4096, 12), np.float32))
        # ... and gives it to the next connection, whose step waits behind the blocked I/O thread
        wait_for(lambda: socket_fds(pid).get(fd_a) not in (None, sock_a),
                 "the server to accept the second client on the first one's fd (%d)" % fd_a)
        time.sleep(0.3)                          # its handshake, and the step queued on the server's socket
        gated.release()
        try:
            rep = b.wait(rid)
        except HerdTimeoutError:                 # the bug: the step was cancelled with the first client's work
            pytest.fail("the second client's step got no reply; the server's log ends:\n"
                        + bytes(gated.log[-1500:]).decode(errors="replace").replace("#", ""))
        assert rep["obs"].shape == (4096, 48)
        assert b"of its requests cancelled" not in gated.log, bytes(gated.log[-2000:]).decode(errors="replace")
    finally:
        for c in (a, b, holder, owner):
            if c is not None:
                c.close()


def test_a_closed_connections_pending_steps_are_cancelled(gated):
    """The other side: steps still queued when their connection closes are cancelled (they would run for
    nobody), the server says so in its log, and it goes on serving the session's owner."""
    import re
    owner = herd.Client(gated.address, timeout=60)
    c = herd.Client(gated.address, timeout=60)
    try:
        made = owner.make("anymal_c-walk", 4096, seed=1)
        session, token = made["session"], made["token"]
        owner.reset(session)
        c.use_token(session, token)
        actions = np.zeros((4096, 12), np.float32)
        rids = [c.send(0, "step", session=session, actions=actions) for _ in range(20)]
        c.wait(rids[0])     # the server is at work on them: the other 19 were read before this reply was sent
        c.close()
        c = None
        wait_for(lambda: b"of its requests cancelled" in gated.log, "the server to log the cancelled steps")
        n = int(re.search(rb"a client disconnected: (\d+) of its requests cancelled", gated.log).group(1))
        assert 1 <= n <= 19
        assert owner.step(session, actions)["obs"].shape == (4096, 48)
    finally:
        for x in (c, owner):
            if x is not None:
                x.close()
