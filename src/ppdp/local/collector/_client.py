"""The respondent-side client: perturb locally, then post signed batches.

Each value is perturbed **once, on the client, before anything is sent**; a batch that
fails in transit is re-sent byte for byte (the collector recognises an identical retry of
a client's last batch and does not count it twice), never re-perturbed: fresh noise on
the same value would let the collector average it away (ALGORITHMS C.7 (6)).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ppdp.exceptions import DataValidationError, ParameterError, ProtocolError
from ppdp.ledger import load_private_key
from ppdp.local.collector._aggregate import Aggregator
from ppdp.local.collector._config import CollectorConfig
from ppdp.local.collector._store import StoreTotals
from ppdp.local.collector._wire import (
    CLIENT_HEADER,
    SIGNATURE_HEADER,
    encode_batch,
    read_headers,
    sign_body,
)

__all__ = ["TOKEN_ENV", "CollectorClient", "fetch_totals"]

logger = logging.getLogger(__name__)

#: Environment variable holding the collector's operator token (for reading the totals).
TOKEN_ENV = "PPDP_COLLECTOR_TOKEN"


def _error_text(response: Any) -> str:
    try:
        return str(response.json().get("error", response.text))
    except ValueError:
        return response.text[:200]


def _check_spec(config: CollectorConfig, info: dict[str, Any], server: str) -> Aggregator:
    agg = Aggregator.from_config(config)
    if info.get("survey") != config.survey:
        raise ParameterError(
            f"survey ({config.survey!r}) differs from the server's ({info.get('survey')!r}) "
            f"at {server}"
        )
    if info.get("spec") != agg.spec:
        raise ParameterError(
            f"the randomizer in the config differs from the one the server at {server} "
            "collects with; fetch the server's config"
        )
    return agg


def fetch_totals(
    config: CollectorConfig,
    server: str,
    *,
    transport: Any = None,
    timeout: float = 30.0,
    token: str | None = None,
) -> tuple[Aggregator, StoreTotals]:
    """The server's running totals, after checking it uses ``config``'s randomizer.

    Reading the totals is authenticated: with the operator's bearer ``token`` (default:
    the ``PPDP_COLLECTOR_TOKEN`` environment variable), else as the config's ``client``
    (a signed read with its private key).
    """
    import httpx

    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None:
        headers = {"authorization": f"Bearer {token}"}
    elif config.client is not None:
        key = load_private_key(Path(config.client.key))
        headers = read_headers(config.client.id, key, "/v1/totals")
    else:
        raise ParameterError(
            f"reading the totals from {server} needs the operator token ({TOKEN_ENV}) or "
            'a client key in the config ({"client": {"id": ..., "key": ...}})'
        )
    with httpx.Client(base_url=server, transport=transport, timeout=timeout) as http:
        info = _get(http, "/v1/info", server)
        agg = _check_spec(config, info, server)
        data = _get(http, "/v1/totals", server, headers=headers)
    return agg, StoreTotals.from_dict(data, agg.layout)


def _get(http: Any, path: str, server: str, *, headers: Any = None) -> dict[str, Any]:
    import httpx

    try:
        r = http.get(path, headers=headers)
    except httpx.HTTPError as exc:
        raise ProtocolError(f"cannot reach the collector at {server}: {exc}") from None
    if r.status_code != 200:
        raise ProtocolError(f"GET {path} at {server} failed ({r.status_code}): {_error_text(r)}")
    out: dict[str, Any] = r.json()
    return out


class CollectorClient:
    """Send locally perturbed reports to a collector.

    Parameters
    ----------
    config : CollectorConfig
        Needs ``client`` (id and private key file) and the randomizer.
    server : str
        Base URL, e.g. ``http://127.0.0.1:8750``.
    transport : httpx transport, optional
        A custom transport (tests).
    http : httpx.Client, optional
        An open client to use instead (e.g. a FastAPI ``TestClient``); not closed here.
    retries : int, default 3
        Re-sends of the identical body after a transport error.
    """

    def __init__(
        self,
        config: CollectorConfig,
        server: str,
        *,
        transport: Any = None,
        retries: int = 3,
        timeout: float = 60.0,
        http: Any = None,
    ) -> None:
        import httpx

        ident = config.require_client()
        self.config = config
        self.client_id = ident.id
        self._key = load_private_key(Path(ident.key))
        self.server = server
        self.retries = retries
        self._owns_http = http is None
        self._http = http or httpx.Client(base_url=server, transport=transport, timeout=timeout)
        info = _get(self._http, "/v1/info", server)
        self.aggregator = _check_spec(config, info, server)
        self.max_batch = int(info.get("max_batch", config.max_batch))
        # collectors older than the body cap do not announce one: theirs was ~4 KB a report
        self.max_body = int(info.get("max_body", self.max_batch * 4096 + 4096))
        path = f"/v1/clients/{self.client_id}"
        state = _get(
            self._http, path, server, headers=read_headers(self.client_id, self._key, path)
        )
        self._seq = int(state["last_seq"])

    @property
    def randomizer(self) -> Any:
        return self.aggregator.randomizer

    def post(self, reports: Any) -> dict[str, Any]:
        """Sign and post one batch of already perturbed reports; return the reply."""
        body = encode_batch(
            survey=self.config.survey, client=self.client_id, seq=self._seq + 1, reports=reports
        )
        return self._post_body(body)

    def _post_body(self, body: bytes) -> dict[str, Any]:
        """Post the body of batch ``seq + 1`` (re-sent byte for byte on a transport error)."""
        import httpx

        self._seq += 1
        headers = {
            CLIENT_HEADER: self.client_id,
            SIGNATURE_HEADER: sign_body(body, self._key),
            "content-type": "application/json",
        }
        for attempt in range(self.retries + 1):
            try:
                r = self._http.post("/v1/batches", content=body, headers=headers)
                break
            except httpx.TransportError as exc:
                if attempt == self.retries:
                    raise ProtocolError(
                        f"batch {self._seq} could not be delivered to {self.server}: {exc}"
                    ) from None
                logger.warning("re-sending batch %d after %s", self._seq, exc)
                time.sleep(0.2 * (attempt + 1))
        if r.status_code != 200:
            err = DataValidationError if r.status_code == 422 else ProtocolError
            raise err(f"the collector refused batch {self._seq} ({r.status_code}): "
                      f"{_error_text(r)}")  # fmt: skip
        out: dict[str, Any] = r.json()
        return out

    def send(
        self,
        reports: Any,
        *,
        batch_size: int = 5_000,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Post already perturbed ``reports`` in batches; return the collector's count.

        A batch whose body would exceed the collector's cap (``max_body`` in
        ``/v1/info``) is halved until it fits; the reports themselves are never redrawn.
        """
        arr = np.asarray(reports)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ParameterError(f"batch_size ({batch_size!r}) must be an integer >= 1")
        size = min(batch_size, self.max_batch)
        count = 0
        start = 0
        while start < len(arr):
            chunk = arr[start : start + size]
            body = encode_batch(
                survey=self.config.survey, client=self.client_id, seq=self._seq + 1, reports=chunk
            )
            if len(body) > self.max_body and len(chunk) > 1:
                size = max(1, len(chunk) // 2)
                continue
            reply = self._post_body(body)
            count = int(reply["count"])
            start += len(chunk)
            if progress is not None:
                progress(start, len(arr))
        return count

    def report(self, values: Any, *, batch_size: int = 5_000, random_state: Any = None) -> int:
        """Perturb ``values`` here (once each), then send them; return the collector's count."""
        reports = self.randomizer.randomise(values, random_state=random_state)
        return self.send(reports, batch_size=batch_size)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> CollectorClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
