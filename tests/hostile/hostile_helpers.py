"""Helpers of the hostile-input suite: drive an ASGI app with a body we control and count
what the app pulled of it; serve an app with uvicorn on loopback; raw-socket posts.

(A module, not a conftest: conftest names collide across test folders under
--doctest-modules.)
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

CHUNK = 64 * 1024


@dataclass
class AsgiReply:
    """What an ASGI app answered, and how much of the request body it pulled."""

    status: int
    headers: dict[str, str]
    body: bytes
    bytes_pulled: int
    receive_calls: int
    pulled_all: bool
    extra: dict[str, object] = field(default_factory=dict)

    def json(self) -> object:
        return json.loads(self.body)

    @property
    def error(self) -> str:
        data = self.json()
        assert isinstance(data, dict)
        return str(data.get("error", data.get("reason", "")))


def body_chunks(total: int, *, fill: bytes = b"x", chunk: int = CHUNK) -> Iterator[bytes]:
    """``total`` bytes in ``chunk``-sized pieces, made on demand (never all in memory)."""
    block = (fill * (chunk // len(fill) + 1))[:chunk]
    sent = 0
    while sent < total:
        n = min(chunk, total - sent)
        yield block[:n]
        sent += n


def asgi_request(
    app,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    chunks: Iterator[bytes] | bytes = b"",
    query: bytes = b"",
) -> AsgiReply:
    """Send one request to ``app`` in process; the body arrives chunk by chunk as the app
    asks for it, so ``bytes_pulled`` is exactly what the app read."""
    if isinstance(chunks, bytes):
        chunks = iter([chunks])
    state = {"pulled": 0, "calls": 0, "done": False}
    it = iter(chunks)
    nxt: list[bytes | None] = [next(it, None)]

    async def receive():
        state["calls"] += 1
        cur = nxt[0]
        if cur is None:
            state["done"] = True
            return {"type": "http.request", "body": b"", "more_body": False}
        nxt[0] = next(it, None)
        state["pulled"] += len(cur)
        if nxt[0] is None:
            state["done"] = True
        return {"type": "http.request", "body": cur, "more_body": nxt[0] is not None}

    out: dict[str, object] = {"status": None, "headers": {}, "body": b""}

    async def send(message):
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
            out["headers"] = {k.decode().lower(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            out["body"] = out["body"] + message.get("body", b"")  # type: ignore[operator]

    raw_headers = [
        (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": raw_headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    asyncio.run(app(scope, receive, send))
    return AsgiReply(
        status=int(out["status"]),  # type: ignore[arg-type]
        headers=out["headers"],  # type: ignore[arg-type]
        body=out["body"],  # type: ignore[arg-type]
        bytes_pulled=state["pulled"],
        receive_calls=state["calls"],
        pulled_all=state["done"],
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on at ``host`` now (the system's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class Uvicorn:
    """An ASGI app served by uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, app, **options) -> None:
        import uvicorn

        self.port = free_port()
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="error", access_log=False,
            lifespan="off", **options,
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def __enter__(self) -> Uvicorn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class RawReply:
    """What a raw-socket post got back: the status line (or nothing) and bytes sent."""

    status: int | None
    sent: int
    error: str | None
    text: str


def raw_post(
    port: int,
    path: str,
    headers: dict[str, str],
    total: int,
    *,
    chunked: bool,
    chunk: int = CHUNK,
    timeout: float = 10.0,
) -> RawReply:
    """POST ``total`` bytes over a plain socket (chunked or with Content-Length), stopping
    when the server answers or closes; the server's answer is read either way."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}")
    sent, error = 0, None
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        sock.setblocking(False)
        block = b"x" * chunk
        while sent < total:
            if _readable(sock):
                break  # the server answered before the body was complete
            n = min(chunk, total - sent)
            piece = block[:n]
            frame = b"%x\r\n%s\r\n" % (n, piece) if chunked else piece
            _send_all(sock, frame, timeout)
            sent += n
        else:
            if chunked:
                _send_all(sock, b"0\r\n\r\n", timeout)
    except OSError as exc:  # reset or broken pipe: the server closed on us
        error = type(exc).__name__
    text = _read_reply(sock, timeout)
    sock.close()
    status = None
    if text.startswith("HTTP/1.1 "):
        status = int(text.split(" ", 2)[1])
    return RawReply(status, sent, error, text)


def _readable(sock: socket.socket) -> bool:
    import select

    r, _, _ = select.select([sock], [], [], 0)
    return bool(r)


def _send_all(sock: socket.socket, data: bytes, timeout: float) -> None:
    import select

    view = memoryview(data)
    deadline = time.monotonic() + timeout
    while view:
        _, w, _ = select.select([], [sock], [], 0.05)
        if _readable(sock):
            raise ConnectionAbortedError("the server answered")
        if not w:
            if time.monotonic() > deadline:
                raise TimeoutError("send stalled")
            continue
        n = sock.send(view)
        view = view[n:]


def _read_reply(sock: socket.socket, timeout: float) -> str:
    import select

    sock.setblocking(False)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([sock], [], [], 0.1)
        if not r:
            if data and b"\r\n\r\n" in data:
                break
            continue
        try:
            piece = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            break
        if not piece:
            break
        data += piece
    return data.decode("latin-1", "replace")
