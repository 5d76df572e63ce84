"""The httpx client's retry rules, against a scripted transport (no network)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from ppdp.federated.http import DeliveryError, PeerClient, RejectedError
from ppdp.federated.http._client import DUPLICATE_HEADER

URL = "http://peer.invalid/messages"


def _script(*steps):
    """A transport answering each request with the next step (an exception or a response)."""
    calls = []

    def handler(request):
        calls.append(request)
        step = steps[min(len(calls), len(steps)) - 1]
        if isinstance(step, Exception):
            raise step
        return step

    return httpx.MockTransport(handler), calls


def _post(transport, retries=2):
    async def go():
        async with PeerClient(retries=retries, backoff=0.001, transport=transport) as c:
            resp = await c.post(URL, b"{}")
            return resp, c.stats

    return asyncio.run(go())


def _dup():
    return httpx.Response(409, json={"reason": "replay"}, headers={DUPLICATE_HEADER: "1"})


def test_connection_error_is_retried():
    t, calls = _script(httpx.ConnectError("refused"), httpx.Response(200, json={}))
    resp, stats = _post(t)
    assert resp.status_code == 200 and len(calls) == 2 and stats.retries == 1


def test_timeout_then_duplicate_counts_as_delivered():
    # the first attempt got through but its answer was lost: the copy is acknowledged
    t, calls = _script(httpx.ReadTimeout("slow"), _dup())
    resp, _ = _post(t)
    assert resp.status_code == 409 and len(calls) == 2


def test_duplicate_on_a_first_attempt_is_a_refusal():
    t, calls = _script(_dup())
    with pytest.raises(RejectedError, match="409"):
        _post(t)
    assert len(calls) == 1


def test_4xx_is_final_and_carries_the_reason():
    t, calls = _script(httpx.Response(422, json={"reason": "NaN in sums"}))
    with pytest.raises(RejectedError, match="NaN in sums") as info:
        _post(t)
    assert info.value.status == 422 and len(calls) == 1


def test_5xx_and_errors_give_up_after_the_retries():
    t, calls = _script(httpx.Response(503, text="busy"))
    with pytest.raises(DeliveryError, match="after 3 attempts"):
        _post(t, retries=2)
    assert len(calls) == 3
