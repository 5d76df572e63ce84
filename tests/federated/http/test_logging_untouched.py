"""Serving a party in-process leaves the host application's logging handlers alone.

uvicorn's default ``log_config`` runs ``logging.config.dictConfig``, which shuts down every
logging handler of the process (attached or not). A party served inside a host application
must not do that: it closed pytest's own capture stream when a library had made a handler
on it (absl, imported by dp-accounting), and would close a host's log files. The broken
variant (uvicorn's default) is not run here, since it would close pytest's handlers too;
with it, ``closed`` below is True.
"""

from __future__ import annotations

import logging
import types

import pytest

pytest.importorskip("uvicorn")

from ppdp._http_guard import ServerLimits
from ppdp.federated.http import _runner


class _Recorder(logging.Handler):
    closed = False

    def close(self) -> None:
        self.closed = True
        super().close()

    def emit(self, record: logging.LogRecord) -> None:  # pragma: no cover - nothing logs
        pass


def test_a_party_server_config_closes_no_handler_of_the_host(monkeypatch):
    async def app(scope, receive, send):  # pragma: no cover - never served
        pass

    app.state = types.SimpleNamespace(limits=ServerLimits())  # what create_app sets
    monkeypatch.setattr(_runner, "create_app", lambda node: app)
    host = _Recorder()
    config = _runner.server_config(object())  # type: ignore[arg-type]
    assert config.log_config is None
    assert not host.closed
    assert logging.getLogger("uvicorn.error").level == logging.WARNING
