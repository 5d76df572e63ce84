"""Keyword-only entry points behind ``ppdp local serve | report | estimate | keygen``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ppdp.exceptions import DataValidationError, ParameterError, ProtocolError
from ppdp.local.collector._aggregate import Aggregator, randomizer_from_dict
from ppdp.local.collector._config import CollectorConfig
from ppdp.local.collector._estimate import CollectorEstimate, estimate_totals
from ppdp.local.collector._journal import (
    ReportInterruptedError,
    ReportJournal,
    ReportResult,
    deliver,
    finished,
    interrupted,
    journal_meta,
)
from ppdp.local.collector._store import CollectorStore

__all__ = [
    "ReportInterruptedError",
    "ReportResult",
    "estimate",
    "generate_client_key",
    "generate_operator_token",
    "read_values",
    "report",
    "serve",
    "startup_lines",
    "value_column",
]

logger = logging.getLogger(__name__)


def _config(config: CollectorConfig | str | Path) -> CollectorConfig:
    return config if isinstance(config, CollectorConfig) else CollectorConfig.from_file(config)


def startup_lines(
    config: CollectorConfig, *, host: str, port: int, tls_cert: str | Path | None = None
) -> list[str]:
    """What ``ppdp local serve`` says on stderr when it starts: where it listens, what it
    accepts (survey, randomizer, the reports' guarantee, clients, batch size, store), whether
    TLS is on, and how to stop it."""
    from ppdp.local.collector._estimate import stated_guarantee

    store, clients = config.require_server()
    randomizer = randomizer_from_dict(config.randomizer)
    guarantee = stated_guarantee(randomizer, None)
    scheme = "http" if tls_cert is None else "https"
    where = f"[{host}]" if ":" in host else host
    spec = config.randomizer
    if spec.get("domain") is not None:
        lo, hi = spec["domain"]
        values = f"values in [{lo:.15g}, {hi:.15g}]"
    elif spec.get("categories"):
        values = f"values in {len(spec['categories'])} declared categories"
    elif isinstance(spec.get("regions"), list) and len(spec["regions"]) > 1:
        regions = spec["regions"]
        values = (
            f"values in [{regions[0]:.15g}, {regions[-1]:.15g}] over {len(regions) - 1} regions"
        )
    elif isinstance(spec.get("regions"), int):
        values = f"region numbers 0 to {spec['regions'] - 1}"
    else:
        values = "values in the declared domain"
    tls = (
        f"TLS on (certificate {tls_cert})"
        if tls_cert is not None
        else "TLS off: plain HTTP; for real use put a TLS proxy in front (on this machine) "
        "or give --tls-cert and --tls-key"
    )
    return [
        f"collector for survey {config.survey!r} listening on {scheme}://{where}:{port}",
        f"accepts {guarantee.mechanism} reports of {values}, signed by "
        f"{len(clients)} registered client(s), at most {config.max_batch:,} per batch; "
        f"running totals in {store}",
        f"each report's guarantee: {guarantee.summary()}",
        tls,
        "stop it with Ctrl+C (or SIGTERM): every acknowledged batch is already in the store",
    ]


def serve(
    *,
    config: CollectorConfig | str | Path,
    host: str = "127.0.0.1",
    port: int = 8750,
    log_level: str = "warning",
    tls_cert: str | Path | None = None,
    tls_key: str | Path | None = None,
    insecure_plain_http: bool = False,
    stream: TextIO | None = None,
) -> None:
    """Run the collector (blocking) with uvicorn until interrupted.

    Binds loopback by default. Any other address needs TLS (``tls_cert`` and ``tls_key``,
    PEM files) or ``insecure_plain_http=True``, which logs a warning: the batch signatures
    authenticate clients but do not hide the reports or the metadata in transit. Behind a
    TLS-terminating proxy on the same machine, keep the loopback default. Before it
    serves, it writes :func:`startup_lines` to ``stream`` (default: stderr), each
    prefixed ``ppdp local serve: ``. The server's limits (connections, header and body
    deadlines, bodies read at once) are :data:`~ppdp.local.collector._app.DEFAULT_LIMITS`.
    """
    import uvicorn

    from ppdp.local.collector._app import create_app
    from ppdp.local.collector._guard import check_plain_http_bind

    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ParameterError(f"port ({port!r}) must be an integer in 1..65535")
    if (tls_cert is None) != (tls_key is None):
        raise ParameterError("tls_cert and tls_key go together: give both PEM files or neither")
    for name, value in (("tls_cert", tls_cert), ("tls_key", tls_key)):
        if value is not None and not Path(value).is_file():
            raise FileNotFoundError(f"{name} ({value}) does not exist")
    warning = check_plain_http_bind(
        host, tls=tls_cert is not None, insecure_plain_http=insecure_plain_http
    )
    if warning is not None:
        logger.warning(warning)
    cfg = _config(config)
    app = create_app(cfg)
    tls: dict[str, Any] = {}
    if tls_cert is not None:
        tls = {"ssl_certfile": str(tls_cert), "ssl_keyfile": str(tls_key)}
    _check_port_free(host, port)  # before the start-up lines claim it is listening
    out = sys.stderr if stream is None else stream
    for line in startup_lines(cfg, host=host, port=port, tls_cert=tls_cert):
        out.write(f"ppdp local serve: {line}\n")
    out.flush()
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        **app.state.limits.uvicorn_options(),
        **tls,
    )


def _check_port_free(host: str, port: int) -> None:
    """Refuse, in one line, an address another process already listens on (uvicorn would
    print the start-up lines, then fail with a logged error)."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ParameterError(f"host ({host!r}) cannot be resolved: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ParameterError(
                    f"port ({port}) on {host} is already in use; stop the other process or "
                    "choose another port"
                ) from None
            raise ParameterError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def read_values(path: str | Path, *, column: str | None = None) -> np.ndarray:
    """The values of one column of a CSV file with a header line (the first by default),
    separated by what its header line shows (``,`` ``;`` tab ``|``)."""
    import pandas as pd

    from ppdp.data.draft import detect_separator

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"values file ({p}) does not exist")
    try:
        # A blank line is an empty value (refused below), not a line to skip: a one-column
        # file's missing answers would otherwise vanish without a word.
        df = pd.read_csv(p, skip_blank_lines=False, sep=detect_separator(p) or ",")
    except (ValueError, pd.errors.ParserError) as exc:
        raise DataValidationError(f"values file ({p}) is not a readable CSV: {exc}") from None
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise DataValidationError(f"values file ({p}) has no values (a header line, then rows)")
    name = df.columns[0] if column is None else column
    if name not in df.columns:
        raise DataValidationError(
            f"column ({name!r}) is not in {p}; columns: {', '.join(map(str, df.columns))}"
        )
    values = df[name]
    if values.isna().any():
        lines = _lines(np.flatnonzero(values.isna().to_numpy()))
        raise DataValidationError(
            f"column {name!r} of {p} has {int(values.isna().sum())} empty value(s) ({lines})"
        )
    if not pd.api.types.is_numeric_dtype(values.dtype):  # numbers mixed with text: say where
        numbers = pd.to_numeric(values, errors="coerce")
        text = np.flatnonzero(numbers.isna().to_numpy())
        if 0 < text.size < len(values):
            raise DataValidationError(
                f"column {name!r} of {p} has {text.size} value(s) that are not numbers among "
                f"numbers ({_lines(text)})"
            )
    return values.to_numpy()


def _lines(rows: np.ndarray) -> str:
    """``line 3`` / ``lines 3, 7, …``: file lines of data rows (the header is line 1)."""
    shown = ", ".join(str(int(i) + 2) for i in rows[:5]) + (", …" if rows.size > 5 else "")
    return f"line{'s' if rows.size > 1 else ''} {shown}"


def value_column(path: str | Path, *, column: str | None = None) -> str:
    """The name of the column :func:`read_values` reads (``column``, or the first one)."""
    if column is not None:
        return column
    import pandas as pd

    from ppdp.data.draft import detect_separator

    return str(pd.read_csv(path, nrows=0, sep=detect_separator(path) or ",").columns[0])


def report(
    *,
    config: CollectorConfig | str | Path,
    server: str,
    values: Any,
    batch_size: int = 5_000,
    random_state: Any = None,
    http: Any = None,
    journal: str | Path | None = None,
    column: str | None = None,
    state: str | Path | None = None,
    again: bool = False,
) -> ReportResult:
    """Perturb ``values`` on this machine with the survey's randomizer, then post them.

    Values are validated against the randomizer's declared domain before any noise is drawn
    or anything is sent. Each value is perturbed exactly once: the perturbed reports are
    written to ``journal`` (durably, in numbered batches) *before* the first is sent, and
    each batch is marked there when the collector acknowledges it. If the run stops (the
    collector died, the network failed), :class:`ReportInterruptedError` says how many
    reports were delivered and how many remain, and calling ``report`` again with the same
    ``journal`` and values sends exactly the remaining batches, byte for byte, never
    perturbing anything again; the collector counts each batch id once. A finished journal
    makes a rerun send nothing. ``journal=None`` keeps it in memory (nothing to resume).

    ``state`` is the client's report marker (:mod:`ppdp.local.collector._state`; ``None``:
    none kept): a run that would start a *new* report (no journal to resume) of a
    ``column`` of this survey that the marker has already recorded is refused with
    :class:`ParameterError` before anything is perturbed or sent, unless ``again=True``;
    reporting again composes the local guarantee (each report spends it again). A resumed
    or finished journal is the same report and is never refused.
    """
    from dataclasses import replace

    from ppdp.local.collector._client import CollectorClient
    from ppdp.local.collector._state import ReportState

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ParameterError(f"batch_size ({batch_size!r}) must be an integer >= 1")
    cfg = _config(config)
    ident = cfg.require_client()
    # Refuse values outside the declared domain before contacting the collector at all.
    declared = randomizer_from_dict(cfg.randomizer)
    check = getattr(declared, "check_values", None) or declared.region_of
    check(values)
    marker = None if state is None else ReportState(state, ident.id)
    n_values = len(np.asarray(values))
    meta = journal_meta(cfg, values)
    done = finished(journal, meta)  # a finished journal needs no collector: nothing to send
    if done is not None:
        if again:
            raise ParameterError(
                f"again (True) asks for a new report, but the journal ({journal}) is finished: "
                "it holds the earlier report of these values; give a new journal path "
                "(--journal) to perturb them afresh"
            )
        if marker is None:
            return done
        n = marker.record(cfg.survey, column, journal=Path(journal), values=n_values)  # type: ignore[arg-type]
        return replace(done, reports_of_column=n)
    resuming = journal is not None and Path(journal).exists()
    earlier = 0
    if marker is not None and not resuming:  # refused before the collector is contacted
        earlier = marker.check_new(cfg.survey, column, again=again)
    recorded: list[int] = []

    def on_journal(resumed: bool) -> None:
        if marker is not None:
            where = None if journal is None else Path(journal)
            recorded.append(marker.record(cfg.survey, column, journal=where, values=n_values))

    try:
        client = CollectorClient(cfg, server, http=http)
    except ProtocolError as exc:
        if journal is None or not Path(journal).exists():
            raise
        with ReportJournal.open(journal) as jr:  # say where a resumable run stands
            raise interrupted(jr, Path(journal), server, str(exc)) from None
    with client:
        result = deliver(
            client,
            values,
            journal=journal,
            batch_size=batch_size,
            random_state=random_state,
            server=server,
            meta=meta,
            on_journal=on_journal,
        )
    if not recorded:
        return result
    return replace(result, reports_of_column=recorded[0], again=earlier > 0 and not resuming)


def estimate(
    *,
    config: CollectorConfig | str | Path,
    server: str | None = None,
    store: str | Path | None = None,
    method: str | None = None,
    bins: int = 50,
    harmonics: int | str = "auto",
    delta: float | None = None,
    output: str | Path | None = None,
    http_transport: Any = None,
) -> CollectorEstimate:
    """Reconstruct the distribution from a collector's totals (server or store file).

    Exactly one of ``server`` (a running collector's URL) and ``store`` (its SQLite file)
    is given; either must hold totals for ``config``'s randomizer. With ``output`` the table
    is written as CSV, with the guarantee in ``<stem>.json`` beside it.
    """
    from ppdp.local.collector._client import fetch_totals

    cfg = _config(config)
    if (server is None) == (store is None):
        raise ParameterError("give exactly one of server (URL) and store (file)")
    if server is not None:
        agg, totals = fetch_totals(cfg, server, transport=http_transport)
    else:
        agg = Aggregator.from_config(cfg)
        if not Path(store).exists():  # type: ignore[arg-type]
            raise FileNotFoundError(f"store ({store}) does not exist")
        with CollectorStore.open(
            store,  # type: ignore[arg-type]
            survey=cfg.survey,
            spec=agg.spec,
            layout=agg.layout,
            create=False,
        ) as st:
            totals = st.snapshot()
    result = estimate_totals(
        agg, totals, method=method, bins=bins, harmonics=harmonics, delta=delta
    )
    if output is not None:
        result.write(output)
    return result


def generate_client_key(path: str | Path) -> str:
    """Write a fresh Ed25519 private key to ``path`` (mode 0600, never overwriting) and
    return its public key in base64, the form the collector's ``clients`` lists."""
    from ppdp.ledger import encode_public_key, generate_key, save_private_key

    key = generate_key()
    save_private_key(key, path)
    return encode_public_key(key.public_key())


def generate_operator_token() -> tuple[str, str]:
    """A fresh operator token (256 bits, URL-safe base64) and its SHA-256 in hex.

    The token reads ``/v1/totals`` and any client's state (``Authorization: Bearer``;
    ``ppdp local estimate --server`` takes it from ``PPDP_COLLECTOR_TOKEN``); only its
    digest goes into the collector's config (``operator_token_sha256``), so a copy of the
    config does not grant reading.
    """
    import hashlib
    import secrets

    token = secrets.token_urlsafe(32)
    return token, hashlib.sha256(token.encode("utf-8")).hexdigest()
