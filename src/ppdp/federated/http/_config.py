"""Party configuration files for the HTTP deployment (YAML or JSON).

One file per party. Relative paths are read relative to the file's folder. The layout::

    party: owner-1                 # this party's id (pinned in the publisher's ledger)
    role: owner                    # publisher | owner | dealer
    listen: {host: 127.0.0.1, port: 8101}
    key_file: keys/owner-1.key     # own Ed25519 private key (PEM, mode 0600)
    box_key_file: keys/owner-1.box # optional own X25519 key: dealer shares arrive sealed
    peers:                         # every other party
      - {id: publisher, role: publisher, url: "http://127.0.0.1:8100",
         public_key: "<base64 Ed25519>"}            # or public_key_file: FILE
    session: {session_id: round-1, epsilon: 1.0, delta: 1.0e-5, ...}  # the RoundConfig
    data: {file: parts/owner-1.csv, schema: adult.schema.yaml, norm_bound: null}  # owners
    ledger: ledger/publisher.ledger    # publisher: the publishing ledger (created if absent)
    budget: {dataset_id: adult, epsilon: 10.0, delta: 1.0e-4}  # publisher: ledger's total
    schema: adult.schema.yaml          # publisher, optional: names in result.json
    replica: replicas/owner-1.ledger   # owners: the local replica
    workdir: .                         # where result files go
    timeouts: {request: 5.0, retries: 3, startup: 60.0, phase: 30.0, round: 120.0}
    tls: {certfile: tls/owner-1.pem, keyfile: tls/owner-1.key, ca_file: tls/ca.pem,
          require_client_cert: true}   # optional: HTTPS, mutual TLS (peer URLs https://)

Nothing in the file is secret except the key files it points to.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

from ppdp._validation import bounded
from ppdp.exceptions import ParameterError
from ppdp.federated.http._tls import TLSConfig
from ppdp.ledger import check_signer_id, decode_public_key, load_public_key

__all__ = [
    "ROLES",
    "DataConfig",
    "PartyConfig",
    "PeerConfig",
    "Timeouts",
    "load_config",
]

Role = Literal["publisher", "owner", "dealer"]
ROLES: tuple[str, ...] = ("publisher", "owner", "dealer")

_TOP_KEYS = {
    "party",
    "role",
    "listen",
    "key_file",
    "box_key_file",
    "peers",
    "session",
    "data",
    "ledger",
    "replica",
    "workdir",
    "timeouts",
    "budget",
    "tls",
    "schema",
}


@dataclass(frozen=True)
class PeerConfig:
    """Another party: its id, role, base URL and pinned public keys."""

    id: str
    role: str
    url: str
    public_key: Ed25519PublicKey
    box_public_key: X25519PublicKey | None = None


@dataclass(frozen=True)
class DataConfig:
    """An owner's data: a CSV file, its declared schema, the declared norm bound.

    ``norm_bound`` is the declared bound ``R`` on an encoded row's L2 norm; records are
    divided by it so that ``||x||_2 <= 1``. ``None`` uses the schema's own bound
    (``row_norm_bound`` or ``sqrt(p1 + p2)``), which is data-independent.
    """

    file: Path
    schema: Path
    norm_bound: float | None = None


@dataclass(frozen=True)
class Timeouts:
    """Seconds: one HTTP request, start-up wait for peers, one phase, the whole round."""

    request: float = 5.0
    retries: int = 3
    startup: float = 60.0
    phase: float = 30.0
    round: float = 120.0
    linger: float = 1.0


@dataclass(frozen=True)
class PartyConfig:
    """Everything one party process needs (see the module docstring for the file layout)."""

    party: str
    role: str
    host: str
    port: int
    key_file: Path
    peers: tuple[PeerConfig, ...]
    session: Mapping[str, Any]
    workdir: Path
    timeouts: Timeouts = field(default_factory=Timeouts)
    box_key_file: Path | None = None
    data: DataConfig | None = None
    ledger: Path | None = None
    replica: Path | None = None
    budget: Mapping[str, Any] | None = None
    tls: TLSConfig | None = None
    source: Path | None = None
    schema: Path | None = None

    @property
    def session_id(self) -> str:
        """The session id every message must carry."""
        return str(self.session["session_id"])

    @property
    def url(self) -> str:
        """This party's own base URL."""
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    def peer(self, party_id: str) -> PeerConfig:
        """The peer with id ``party_id``."""
        for p in self.peers:
            if p.id == party_id:
                return p
        raise ParameterError(
            f"peer ({bounded(party_id)}) is not in the configuration of {self.party!r}"
        )

    def peers_with_role(self, role: str) -> tuple[PeerConfig, ...]:
        """Peers of one role, in file order."""
        return tuple(p for p in self.peers if p.role == role)

    def known_keys(self) -> dict[str, Ed25519PublicKey]:
        """Party id -> pinned Ed25519 public key (peers; the caller adds its own)."""
        return {p.id: p.public_key for p in self.peers}


def _fail(where: str, what: str) -> ParameterError:
    return ParameterError(f"config {where}: {what}")


def _read_mapping(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _fail(str(path), "is not UTF-8 text (YAML or JSON)") from None
    if path.suffix.lower() == ".json":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail(str(path), f"not valid JSON ({exc})") from None
    else:
        import yaml

        from ppdp import _yaml

        try:
            value = _yaml.load(text)
        except yaml.YAMLError as exc:
            raise _fail(str(path), f"not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(value, dict):
        raise _fail(str(path), "must be a mapping at the top level")
    return value


def _path(base: Path, value: object, where: str, name: str) -> Path:
    if not isinstance(value, str | os.PathLike) or not str(value):
        raise _fail(where, f"{name} ({bounded(value)}) must be a file path")
    p = Path(value)
    return p if p.is_absolute() else base / p


def _number(
    where: str, name: str, value: object, *, integer: bool = False, zero: bool = False
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(where, f"{name} ({bounded(value)}) must be a number")
    low_ok = value >= 0 if zero else value > 0
    if not math.isfinite(value) or not low_ok or (integer and value != int(value)):
        kind = "an integer" if integer else "a finite number"
        kind += " >= 0" if zero else " > 0"
        raise _fail(where, f"{name} ({bounded(value)}) must be {kind}")
    return value


def _peer(base: Path, raw: object, where: str) -> PeerConfig:
    if not isinstance(raw, dict):
        raise _fail(where, f"each peer ({bounded(raw)}) must be a mapping")
    unknown = set(raw) - {"id", "role", "url", "public_key", "public_key_file", "box_public_key"}
    if unknown:
        raise _fail(where, f"peer keys {sorted(unknown)} are not recognised")
    try:
        pid = check_signer_id(raw.get("id"))
    except (ParameterError, TypeError) as exc:
        raise _fail(where, f"peer id: {exc}") from None
    role = raw.get("role")
    if role not in ROLES:
        raise _fail(
            where, f"peer {bounded(pid)} role ({bounded(role)}) must be one of {list(ROLES)}"
        )
    url = raw.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise _fail(
            where, f"peer {bounded(pid)} url ({bounded(url)}) must start with http:// or https://"
        )
    if "public_key" in raw:
        try:
            key = decode_public_key(raw["public_key"])
        except (ParameterError, ValueError) as exc:
            raise _fail(where, f"peer {bounded(pid)} public_key: {exc}") from None
    elif "public_key_file" in raw:
        key = load_public_key(_path(base, raw["public_key_file"], where, "public_key_file"))
    else:
        raise _fail(where, f"peer {bounded(pid)} needs public_key or public_key_file")
    box: X25519PublicKey | None = None
    if raw.get("box_public_key") is not None:
        from ppdp.federated.http._sealed import decode_box_public_key

        box = decode_box_public_key(raw["box_public_key"])
    return PeerConfig(pid, role, url.rstrip("/"), key, box)


def load_config(path: str | os.PathLike[str]) -> PartyConfig:
    """Read and check a party configuration file (YAML, or JSON by its ``.json`` suffix).

    Raises
    ------
    FileNotFoundError
        The file (or a key file it names) does not exist.
    ParameterError
        A field is missing or malformed; the message names the file and the field.
    """
    src = Path(path)
    if not src.is_file():
        raise FileNotFoundError(f"config file {src} does not exist")
    where = str(src)
    raw = _read_mapping(src)
    return config_from_dict(raw, base=src.parent, where=where, source=src)


def config_from_dict(
    raw: Mapping[str, Any], *, base: Path, where: str = "<dict>", source: Path | None = None
) -> PartyConfig:
    """Build a :class:`PartyConfig` from a parsed mapping (paths relative to ``base``)."""
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise _fail(
            where, f"keys {sorted(unknown)} are not recognised; allowed: {sorted(_TOP_KEYS)}"
        )
    for required in ("party", "role", "listen", "key_file", "peers", "session"):
        if required not in raw:
            raise _fail(where, f"{required} is missing")
    try:
        party = check_signer_id(raw["party"])
    except (ParameterError, TypeError) as exc:
        raise _fail(where, f"party: {exc}") from None
    role = raw["role"]
    if role not in ROLES:
        raise _fail(where, f"role ({bounded(role)}) must be one of {list(ROLES)}")
    listen = raw["listen"]
    if not isinstance(listen, dict) or set(listen) - {"host", "port"}:
        raise _fail(where, f"listen ({bounded(listen)}) must be a mapping with host and port")
    host = listen.get("host", "127.0.0.1")
    if not isinstance(host, str) or not host:
        raise _fail(where, f"listen.host ({bounded(host)}) must be a host name or address")
    port = listen.get("port")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise _fail(where, f"listen.port ({bounded(port)}) must be an integer in [1, 65535]")
    key_file = _path(base, raw["key_file"], where, "key_file")
    box_key_file = (
        _path(base, raw["box_key_file"], where, "box_key_file")
        if raw.get("box_key_file") is not None
        else None
    )
    peers_raw = raw["peers"]
    if not isinstance(peers_raw, list) or not peers_raw:
        raise _fail(where, "peers must be a non-empty list")
    peers = tuple(_peer(base, p, where) for p in peers_raw)
    ids = [p.id for p in peers]
    if len(set(ids)) != len(ids) or party in ids:
        raise _fail(
            where, f"peer ids ({ids}) must be unique and differ from party {bounded(party)}"
        )
    roles = [p.role for p in peers] + [role]
    if roles.count("publisher") != 1:
        raise _fail(where, "exactly one party (this one or a peer) must be the publisher")
    session = raw["session"]
    if not isinstance(session, dict) or not isinstance(session.get("session_id"), str):
        raise _fail(where, "session must be a mapping with a string session_id")
    session = dict(session)
    # the round's parties default to the ones this file names
    everyone = {**{p.id: p.role for p in peers}, party: role}
    session.setdefault("publisher", next(p for p, r in everyone.items() if r == "publisher"))
    session.setdefault("owners", sorted(p for p, r in everyone.items() if r == "owner"))
    session.setdefault("dealer", next((p for p, r in everyone.items() if r == "dealer"), None))
    timeouts = Timeouts()
    if raw.get("timeouts") is not None:
        t = raw["timeouts"]
        allowed = set(Timeouts.__dataclass_fields__)
        if not isinstance(t, dict) or set(t) - allowed:
            raise _fail(
                where,
                f"timeouts ({bounded(t)}) must be a mapping with keys among {sorted(allowed)}",
            )
        values = {
            k: (
                int(_number(where, f"timeouts.{k}", v, integer=True, zero=True))
                if k == "retries"
                else float(_number(where, f"timeouts.{k}", v, zero=k == "linger"))
            )
            for k, v in t.items()
        }
        timeouts = Timeouts(**{**timeouts.__dict__, **values})
    data = None
    if raw.get("data") is not None:
        d = raw["data"]
        if not isinstance(d, dict) or set(d) - {"file", "schema", "norm_bound"}:
            raise _fail(
                where, f"data ({bounded(d)}) must be a mapping with file, schema, norm_bound"
            )
        nb = d.get("norm_bound")
        data = DataConfig(
            _path(base, d.get("file"), where, "data.file"),
            _path(base, d.get("schema"), where, "data.schema"),
            None if nb is None else float(_number(where, "data.norm_bound", nb)),
        )
    if role == "owner" and data is None:
        raise _fail(where, "an owner needs data: {file: ..., schema: ...}")
    ledger = _path(base, raw["ledger"], where, "ledger") if raw.get("ledger") else None
    replica = _path(base, raw["replica"], where, "replica") if raw.get("replica") else None
    if role == "publisher" and ledger is None:
        raise _fail(where, "the publisher needs ledger: FILE")
    workdir = _path(base, raw.get("workdir", "."), where, "workdir")
    budget = raw.get("budget")
    if budget is not None:
        if not isinstance(budget, dict) or set(budget) - {"dataset_id", "epsilon", "delta"}:
            raise _fail(
                where,
                f"budget ({bounded(budget)}) must be a mapping: dataset_id, epsilon, delta",
            )
        for k in ("epsilon", "delta"):
            if k in budget:
                _number(where, f"budget.{k}", budget[k])
    tls = None
    if raw.get("tls") is not None:
        t = raw["tls"]
        keys = {"certfile", "keyfile", "ca_file", "require_client_cert"}
        if (
            not isinstance(t, dict)
            or set(t) - keys
            or not {"certfile", "keyfile", "ca_file"} <= set(t)
        ):
            raise _fail(
                where,
                f"tls ({bounded(t)}) must be a mapping: certfile, keyfile, "
                "ca_file[, require_client_cert]",
            )
        req = t.get("require_client_cert", True)
        if not isinstance(req, bool):
            raise _fail(where, f"tls.require_client_cert ({bounded(req)}) must be true or false")
        tls = TLSConfig(
            _path(base, t["certfile"], where, "tls.certfile"),
            _path(base, t["keyfile"], where, "tls.keyfile"),
            _path(base, t["ca_file"], where, "tls.ca_file"),
            req,
        )
    schema = _path(base, raw["schema"], where, "schema") if raw.get("schema") else None
    return PartyConfig(
        party=party,
        role=role,
        host=host,
        port=port,
        key_file=key_file,
        peers=peers,
        session=session,
        workdir=workdir,
        timeouts=timeouts,
        box_key_file=box_key_file,
        data=data,
        ledger=ledger,
        replica=replica,
        budget=budget,
        tls=tls,
        source=source,
        schema=schema,
    )
