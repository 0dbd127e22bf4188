"""A headless Chromium driven over the DevTools protocol, with the Python standard library only.

    with Browser(width=800, height=600) as b:
        b.goto("http://127.0.0.1:8765/")
        b.wait_for("window.herdViewer && window.herdViewer.ready")
        png = b.screenshot()                    # PNG bytes
        print(b.evaluate("herdViewer.info()"), b.console_errors)

The browser is Debian's chromium ($HERD_CHROMIUM overrides) with a fresh --user-data-dir; console_errors
collects console.error calls, uncaught exceptions and browser log entries of level "error" (failed loads).
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

CHROMIUM = os.environ.get("HERD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--hide-scrollbars", "--mute-audio"]


class _WebSocket:
    """A client WebSocket (RFC 6455) for one ws://host:port/path: text frames, masked, no extensions."""

    def __init__(self, url, timeout=30.0):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        head, self._buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError("websocket handshake refused: %r" % head[:200])

    def _read(self, n):
        while len(self._buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("websocket closed")
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def send(self, text):
        data = text.encode()
        n = len(data)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            if b1 & 0x80:
                mask = self._read(4)
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self._read(n)))
            else:
                payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if op in (0x9, 0xA):        # ping / pong: not sent by Chromium's DevTools server unasked
                continue
            msg += payload
            if b0 & 0x80:
                return msg.decode()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Browser:
    def __init__(self, width=800, height=600, timeout=60.0):
        self.profile = tempfile.mkdtemp(prefix="herd-chromium-")
        self.timeout = timeout
        self.proc = subprocess.Popen([CHROMIUM] + FLAGS + [
            "--user-data-dir=" + self.profile, "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
            "--window-size=%d,%d" % (width, height), "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start (%s)" % CHROMIUM)
            time.sleep(0.05)
        port = int(open(port_file).read().split("\n")[0])
        self.ws = _WebSocket("ws://127.0.0.1:%d%s" % (port, self._page_path(port)), timeout)
        self._id = 0
        self.events = []
        self.console_errors = []
        self.console = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def _page_path(self, port):
        deadline = time.monotonic() + self.timeout
        while True:
            with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=self.timeout) as r:
                raw = r.read()
            pages = [t for t in json.loads(raw) if t.get("type") == "page"]
            if pages:
                url = pages[0]["webSocketDebuggerUrl"]
                return url[url.index("/devtools/"):]
            if time.monotonic() > deadline:
                raise RuntimeError("chromium has no page target")
            time.sleep(0.05)

    def _event(self, m):
        method, p = m.get("method"), m.get("params", {})
        self.events.append(m)
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            self.console.append((p.get("type"), text))
            if p.get("type") in ("error", "assert"):
                self.console_errors.append("console.%s: %s" % (p["type"], text))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.console_errors.append("exception: %s %s" % (d.get("text"), d.get("exception", {}).get("description", "")))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.console_errors.append("log: %s %s" % (e.get("text"), e.get("url", "")))

    def call(self, method, **params):
        self._id += 1
        rid = self._id
        self.ws.send(json.dumps({"id": rid, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == rid:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self._event(m)

    def goto(self, url):
        self.call("Page.navigate", url=url)

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate %r: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait_for(self, expr, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            v = self.evaluate("!!(%s)" % expr)
            if v:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("page never satisfied %s; console errors: %s" % (expr, self.console_errors))
            time.sleep(0.05)

    def screenshot(self):
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def close(self):
        if getattr(self, "ws", None):
            self.ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
