"""The collector's configuration file (YAML or JSON), shared by the server and its clients.

A ``.yaml``/``.yml`` file is read as YAML, a ``.json`` file as JSON; any other name by its
content (JSON when it starts with ``{``, YAML otherwise). The keys are the same either way::

    {
      "survey": "income-2026",                 # id bound into every signed batch
      "randomizer": {...},                     # the randomizer's to_dict(): public
      "histogram": {"bins_per_domain": 1000},  # additive noise only (optional)
      "store": "collector.sqlite",             # server: the running totals
      "clients": {"app-1": "<base64 Ed25519 public key>"},  # server: who may send
      "max_batch": 20000,                      # server: reports per batch at most
      "max_body_bytes": 4194304,               # server: body cap (default: from max_batch)
      "operator_token_sha256": "<64 hex>",     # server: SHA-256 of the operator's token
      "client": {"id": "app-1", "key": "app-1.key"}         # client: its private key file
    }

Relative paths are relative to the folder of the configuration file. The server needs
``store`` and ``clients``; ``ppdp local report`` needs ``client``; ``ppdp local estimate``
needs only ``randomizer`` (and ``histogram``). One file may hold all of it in a test; in
practice the server's file lists public keys only, and each respondent app holds its own
private key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppdp._validation import bounded
from ppdp.exceptions import ParameterError

__all__ = ["ClientIdentity", "CollectorConfig", "load_config_file"]

_KNOWN = {
    "survey",
    "randomizer",
    "histogram",
    "store",
    "clients",
    "max_batch",
    "max_body_bytes",
    "operator_token_sha256",
    "client",
}
_MIN_BODY = 1024
_MAX_BODY = 1 << 30
_MAX_ID = 128


def load_config_file(path: str | Path) -> Any:
    """The parsed content of a collector config file, YAML or JSON.

    ``.yaml``/``.yml`` is YAML and ``.json`` is JSON; another name is JSON when its first
    non-blank character is ``{`` and YAML otherwise. A missing file, a folder, or text that
    does not parse raises one line naming the file and the format.
    """
    p = Path(path)
    if p.is_dir():
        raise ParameterError(f"config file ({p}) is a folder; give a .yaml, .yml or .json file")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"config file ({p}) does not exist") from None
    except UnicodeDecodeError:
        raise ParameterError(f"config file ({p}) is not UTF-8 text (YAML or JSON)") from None
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        fmt = "YAML"
    elif suffix == ".json":
        fmt = "JSON"
    else:
        fmt = "JSON" if text.lstrip().startswith("{") else "YAML"
    import yaml

    from ppdp import _yaml

    try:
        return json.loads(text) if fmt == "JSON" else _yaml.load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ParameterError(f"config file ({p}) is not valid {fmt}: {_first_line(exc)}") from None
    except RecursionError:
        raise ParameterError(f"config file ({p}) is nested too deeply to be a config") from None


def _first_line(exc: Exception) -> str:
    """One line of a parser's error: YAML's problem and its line, or JSON's message."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem:
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return f"{problem}{where}"
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


def _check_id(name: str, value: Any) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= _MAX_ID or not value.isprintable():
        raise ParameterError(
            f"{name} ({bounded(value)}) must be a printable string of 1 to {_MAX_ID} characters"
        )
    return value


@dataclass(frozen=True)
class ClientIdentity:
    """A respondent-side client: its id and the path of its Ed25519 private key (PEM)."""

    id: str
    key: Path


@dataclass(frozen=True)
class CollectorConfig:
    """A parsed configuration; see the module docstring for the file format.

    Attributes
    ----------
    survey : str
        Bound into each signed batch: a batch for one survey is refused by another.
    randomizer : dict
        The randomizer's ``to_dict()``.
    histogram : dict or None
        ``{"bins_per_domain": int}`` for additive randomizers (optional; see
        :mod:`ppdp.local.collector._aggregate`).
    store : Path or None
        The SQLite file of running totals (server).
    clients : dict
        Client id -> base64 (or PEM) Ed25519 public key (server).
    max_batch : int
        Largest number of reports in one batch (server).
    max_body_bytes : int or None
        Largest request body in bytes (server); None: derived from ``max_batch`` and the
        randomizer, at most 4 MiB (:func:`ppdp.local.collector._app.default_max_body`).
    operator_token_sha256 : str or None
        SHA-256 (hex) of the operator's bearer token, which may read ``/v1/totals`` and
        any client's state (server); None: only signed reads by clients.
    client : ClientIdentity or None
        The sending client (``ppdp local report``).
    """

    survey: str
    randomizer: dict[str, Any]
    histogram: dict[str, Any] | None = None
    store: Path | None = None
    clients: dict[str, str] = field(default_factory=dict)
    max_batch: int = 20_000
    client: ClientIdentity | None = None
    max_body_bytes: int | None = None
    operator_token_sha256: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, base: Path | None = None) -> CollectorConfig:
        """Parse and check a configuration; relative paths are taken from ``base``."""
        if not isinstance(data, Mapping):
            raise ParameterError(
                f"the collector config must be a mapping of keys (a JSON object or YAML "
                f"mapping), not {type(data).__name__}"
            )
        unknown = set(data) - _KNOWN
        if unknown:
            raise ParameterError(
                f"the collector config has unknown keys ({', '.join(sorted(unknown))}); "
                f"allowed: {', '.join(sorted(_KNOWN))}"
            )
        base = base or Path.cwd()
        survey = _check_id("survey", data.get("survey"))
        randomizer = data.get("randomizer")
        if not isinstance(randomizer, Mapping):
            raise ParameterError(
                f"randomizer ({bounded(randomizer)}) must be an object: the randomizer's to_dict()"
            )
        histogram = data.get("histogram")
        if histogram is not None:
            if not isinstance(histogram, Mapping) or set(histogram) - {"bins_per_domain"}:
                raise ParameterError(
                    f"histogram ({bounded(histogram)}) must be an object with an optional "
                    "bins_per_domain"
                )
            histogram = dict(histogram)
        store = data.get("store")
        if store is not None:
            if not isinstance(store, str) or not store:
                raise ParameterError(f"store ({bounded(store)}) must be a file path")
            store = base / store
        clients_raw = data.get("clients", {})
        if not isinstance(clients_raw, Mapping):
            raise ParameterError("clients must be an object: client id -> public key")
        clients = {}
        for cid, key in clients_raw.items():
            _check_id("client id", cid)
            if not isinstance(key, str) or not key:
                raise ParameterError(
                    f"clients[{bounded(cid)}] must be a public key (base64 or PEM)"
                )
            clients[cid] = key
        max_batch = data.get("max_batch", 20_000)
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ParameterError(f"max_batch ({bounded(max_batch)}) must be an integer >= 1")
        max_body = data.get("max_body_bytes")
        if max_body is not None and (
            isinstance(max_body, bool)
            or not isinstance(max_body, int)
            or not _MIN_BODY <= max_body <= _MAX_BODY
        ):
            raise ParameterError(
                f"max_body_bytes ({bounded(max_body)}) must be an integer in "
                f"[{_MIN_BODY}, {_MAX_BODY}]"
            )
        token = data.get("operator_token_sha256")
        if token is not None and (
            not isinstance(token, str)
            or len(token) != 64
            or any(c not in "0123456789abcdef" for c in token.lower())
        ):
            raise ParameterError(
                "operator_token_sha256 must be the SHA-256 of the operator token in hex "
                "(64 characters; see generate_operator_token)"
            )
        client = data.get("client")
        ident = None
        if client is not None:
            if not isinstance(client, Mapping) or set(client) != {"id", "key"}:
                raise ParameterError(
                    f"client ({bounded(client)}) must be an object with exactly id and key"
                )
            key_path = client["key"]
            if not isinstance(key_path, str) or not key_path:
                raise ParameterError(f"client key ({bounded(key_path)}) must be a file path")
            ident = ClientIdentity(_check_id("client id", client["id"]), base / key_path)
        return cls(
            survey,
            dict(randomizer),
            histogram,
            store,
            clients,
            max_batch,
            ident,
            max_body,
            None if token is None else token.lower(),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> CollectorConfig:
        """Read a YAML or JSON configuration file (see :func:`load_config_file`)."""
        p = Path(path)
        return cls.from_dict(load_config_file(p), base=p.resolve().parent)

    def require_server(self) -> tuple[Path, dict[str, str]]:
        """The store path and client keys, or a clear error if this is no server config."""
        if self.store is None:
            raise ParameterError("the config has no store: the server needs a store path")
        if not self.clients:
            raise ParameterError(
                "the config has no clients: the server accepts signed batches only"
            )
        return self.store, self.clients

    def require_client(self) -> ClientIdentity:
        """The client identity, or a clear error if this is no client config."""
        if self.client is None:
            raise ParameterError(
                'the config has no client: add {"client": {"id": ..., "key": ...}}'
            )
        return self.client
