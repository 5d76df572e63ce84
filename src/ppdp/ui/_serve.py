"""Starting the app: a socket bound before the URL is printed, then uvicorn on it."""

from __future__ import annotations

import socket
import webbrowser
from collections.abc import Callable
from pathlib import Path

from ppdp.exceptions import ParameterError
from ppdp.ui._security import Secrets, is_loopback

__all__ = ["bind", "serve"]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one, chosen by the system).

    A port in use is refused in one line naming it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ParameterError(f"--port ({port}) cannot be used on {host}: {exc.strerror}") from None
    sock.listen(64)
    return sock


def serve(
    *,
    workdir: str | Path,
    host: str = "127.0.0.1",
    port: int = 0,
    open_browser: bool = True,
    allow_remote: bool = False,
    say: Callable[[str], None] | None = None,
) -> None:
    """Serve the app until interrupted.

    Parameters
    ----------
    workdir : path
        Where run folders are made.
    host : str, default "127.0.0.1"
        The address to bind: a loopback address unless ``allow_remote`` (anyone who can
        reach it and holds the token could then run releases).
    port : int, default 0
        The port (0: a free one).
    open_browser : bool, default True
        Open the URL in the default browser (``--no-browser``: only print it).
    say : callable, optional
        Called with the link line and a reminder to keep it private (the command line
        prints them); None says nothing (the library never prints).
    """
    import uvicorn

    from ppdp.ui._app import create_app

    if not is_loopback(host) and not allow_remote:
        raise ParameterError(
            f"--host ({host!r}) is not a loopback address: the app would be reachable from "
            "other machines; add --allow-remote to accept that"
        )
    sock = bind(host, port)
    port = sock.getsockname()[1]
    keys = Secrets()
    shown = f"[{host}]" if ":" in host else host
    hosts = ("127.0.0.1", "localhost", "::1") if is_loopback(host) else (host,)
    app = create_app(workdir=workdir, secrets_=keys, port=port, allowed_hosts=hosts)
    url = f"http://{shown}:{port}/?token={keys.token}"
    if say is not None:
        say(f"ppdp ui: serving on {url}")
        say("ppdp ui: keep this link to yourself (it opens the app); Ctrl-C stops it")
    if open_browser:
        webbrowser.open(url)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
