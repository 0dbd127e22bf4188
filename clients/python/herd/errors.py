"""Exceptions of the herd client.

Every exception the client raises for a failed request is a ``HerdError`` carrying

* ``code``: the protocol's error code (PROTOCOL.md section 5), e.g. ``"BAD_SHAPE"``, ``"NON_FINITE"``,
  ``"UNKNOWN_SESSION"``; or a client-side code: ``"TIMEOUT"``, ``"TRANSPORT"``, ``"BAD_REPLY"``;
* ``message``: the server's (or client's) explanation, naming the offending field and value;
* ``address``: the endpoint of the server concerned (``None`` when it is not about one server).

``ServerError`` is an error reply sent by a server; ``HerdTimeoutError`` (also a ``TimeoutError``)
means a server did not answer within the client's timeout; ``TransportError`` is a ZeroMQ failure and
``BadReplyError`` a reply that does not follow the protocol.
"""

__all__ = ["HerdError", "ServerError", "HerdTimeoutError", "TransportError", "BadReplyError", "SERVER_CODES"]

# The codes a version-1 server sends (PROTOCOL.md section 5).  An unknown code is kept as it is.
SERVER_CODES = (
    "BAD_MESSAGE", "TOO_LARGE", "BAD_VERSION", "UNKNOWN_OP", "MISSING_FIELD", "BAD_FIELD", "UNKNOWN_ENV",
    "BAD_CONFIG", "UNKNOWN_SESSION", "BAD_SHAPE", "BAD_DTYPE", "NON_FINITE", "BAD_WORLD_IDS", "LIMIT",
    "EPISODE_ENDED", "SHUTTING_DOWN", "INTERNAL",
)


class HerdError(Exception):
    """A failed herd request: .code (protocol error code), .message, .address (server endpoint or None)."""

    def __init__(self, code, message, address=None):
        self.code = code
        self.message = message
        self.address = address
        where = " (%s)" % address if address else ""
        super().__init__("%s: %s%s" % (code, message, where))


class ServerError(HerdError):
    """An error reply {code, message} from a server.  .op is the operation of the failed request."""

    def __init__(self, code, message, address=None, op=None):
        self.op = op
        super().__init__(code, message, address)


class HerdTimeoutError(HerdError, TimeoutError):
    """No reply within the timeout.  .address names the server(s) that did not answer."""

    def __init__(self, message, address=None):
        super().__init__("TIMEOUT", message, address)


class TransportError(HerdError):
    """A ZeroMQ failure (bad endpoint, closed socket, ...)."""

    def __init__(self, message, address=None):
        super().__init__("TRANSPORT", message, address)


class BadReplyError(HerdError):
    """A reply that does not follow protocol/PROTOCOL.md."""

    def __init__(self, message, address=None):
        super().__init__("BAD_REPLY", message, address)
