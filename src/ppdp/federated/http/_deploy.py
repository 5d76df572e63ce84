"""Lay out a deployment on one machine: keys, data parts and one config file per party.

Used by ``ppdp federate demo``, the benchmark and the tests; for a real deployment each
party writes its own config by hand (``docs/federated-deployment.md``) and only
exchanges *public* keys.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ppdp._io import atomic_path
from ppdp.data import Schema
from ppdp.exceptions import ParameterError
from ppdp.federated.http._config import Timeouts
from ppdp.federated.http._sealed import encode_box_public_key, generate_box_key, save_box_key
from ppdp.ledger import encode_public_key, generate_key, save_private_key

__all__ = ["Deployment", "free_ports", "prepare_deployment"]


@dataclass(frozen=True)
class Deployment:
    """Where everything of a prepared deployment lives."""

    workdir: Path
    configs: Mapping[str, Path]
    roles: Mapping[str, str]
    ledger: Path
    replicas: Mapping[str, Path]
    urls: Mapping[str, str]
    session: Mapping[str, Any] = field(default_factory=dict)

    @property
    def publisher(self) -> str:
        """The publisher's party id."""
        return next(p for p, r in self.roles.items() if r == "publisher")

    @property
    def owners(self) -> tuple[str, ...]:
        """Owner party ids, in order."""
        return tuple(p for p, r in self.roles.items() if r == "owner")


def peer_entries(
    party: str,
    roles: dict[str, str],
    urls: dict[str, str],
    public: dict[str, str],
    box_public: dict[str, str],
) -> list[dict[str, Any]]:
    """The ``peers`` section of ``party``'s config: every other party's id, role, URL and
    public key, and (for the dealer) each owner's box key."""
    peers = []
    for q, qrole in roles.items():
        if q == party:
            continue
        peer: dict[str, Any] = {"id": q, "role": qrole, "url": urls[q], "public_key": public[q]}
        if roles[party] == "dealer" and q in box_public:
            peer["box_public_key"] = box_public[q]
        peers.append(peer)
    return peers


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct TCP ports that were free a moment ago (the OS picks them)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _write_yaml(path: Path, value: Mapping[str, Any]) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(dict(value), sort_keys=False), encoding="utf-8")


def prepare_deployment(
    workdir: str | os.PathLike[str],
    *,
    parts: Sequence[pd.DataFrame],
    schema: Schema,
    session: Mapping[str, Any],
    host: str = "127.0.0.1",
    timeouts: Timeouts | None = None,
    seal_dealer_shares: bool = True,
    dealer: bool = True,
    norm_bound: float | None = None,
    owner_prefix: str = "owner",
    tls: bool = False,
) -> Deployment:
    """Write keys, owner data files and configs for a publisher, a dealer and owners.

    Parameters
    ----------
    workdir : path
        Created if needed. Gets ``keys/``, ``data/``, ``configs/``, ``ledger/`` and
        ``replicas/``; refuses to reuse a folder that already holds a ``ledger/``.
    parts : sequence of DataFrame
        One table per owner (``owner-1``, ``owner-2``, ...), with the schema's columns.
    schema : Schema
        The declared schema, written to ``data/schema.yaml`` for every owner.
    session : mapping
        The session parameters (``session_id`` required), copied into every config.
    seal_dealer_shares : bool
        Give each owner an X25519 key so the dealer seals its shares.
    dealer : bool
        Include a noise dealer (``False`` for ``dealer="none"`` sessions).
    owner_prefix : str
        Owners are ``<prefix>-1``, ``<prefix>-2``, ... (the session's ``owners`` must match).
    tls : bool
        Serve HTTPS with mutual TLS: a throw-away CA and one certificate per party under
        ``tls/`` (:func:`~ppdp.federated.http._tls.make_local_ca`).
    """
    root = Path(workdir)
    if not parts:
        raise ParameterError("parts (empty) must hold one table per owner")
    if (root / "ledger").exists():
        raise ParameterError(f"workdir ({root}) already holds a ledger/ folder; use a fresh folder")
    timeouts = timeouts or Timeouts()
    roles: dict[str, str] = {"publisher": "publisher"}
    if dealer:
        roles["dealer"] = "dealer"
    for j in range(len(parts)):
        roles[f"{owner_prefix}-{j + 1}"] = "owner"
    ports = dict(zip(roles, free_ports(len(roles), host), strict=True))
    scheme = "https" if tls else "http"
    urls = {p: f"{scheme}://{host}:{ports[p]}" for p in roles}
    if tls:
        from ppdp.federated.http._tls import make_local_ca

        make_local_ca(root / "tls", list(roles), host=host)
    keys_dir = root / "keys"
    public: dict[str, str] = {}
    box_public: dict[str, str] = {}
    for p in roles:
        key = generate_key()
        save_private_key(key, keys_dir / f"{p}.key")
        public[p] = encode_public_key(key.public_key())
        if seal_dealer_shares and dealer and roles[p] == "owner":
            box = generate_box_key()
            save_box_key(box, keys_dir / f"{p}.box")
            box_public[p] = encode_box_public_key(box.public_key())
    data_dir = root / "data"
    schema_path = schema.to_file(data_dir / "schema.yaml")
    configs: dict[str, Path] = {}
    replicas: dict[str, Path] = {}
    ledger = root / "ledger" / "publisher.ledger"
    t = {k: getattr(timeouts, k) for k in Timeouts.__dataclass_fields__}
    for j, part in enumerate(parts):
        with atomic_path(data_dir / f"{owner_prefix}-{j + 1}.csv") as tmp:
            part.to_csv(tmp, index=False)
    for p, role in roles.items():
        peers = peer_entries(p, roles, urls, public, box_public)
        cfg: dict[str, Any] = {
            "party": p,
            "role": role,
            "listen": {"host": host, "port": ports[p]},
            "key_file": f"../keys/{p}.key",
            "peers": peers,
            "session": dict(session),
            "workdir": "..",
            "timeouts": t,
        }
        if p in box_public:
            cfg["box_key_file"] = f"../keys/{p}.box"
        if tls:
            cfg["tls"] = {
                "certfile": f"../tls/{p}.pem",
                "keyfile": f"../tls/{p}.key",
                "ca_file": "../tls/ca.pem",
                "require_client_cert": True,
            }
        if role == "publisher":
            cfg["ledger"] = "../ledger/publisher.ledger"
            cfg["schema"] = f"../data/{schema_path.name}"  # names in result.json
        if role == "owner":
            cfg["data"] = {
                "file": f"../data/{p}.csv",
                "schema": f"../data/{schema_path.name}",
                "norm_bound": norm_bound,
            }
            cfg["replica"] = f"../replicas/{p}.ledger"
            replicas[p] = root / "replicas" / f"{p}.ledger"
        configs[p] = root / "configs" / f"{p}.yaml"
        _write_yaml(configs[p], cfg)
    return Deployment(
        workdir=root,
        configs=configs,
        roles=roles,
        ledger=ledger,
        replicas=replicas,
        urls=urls,
        session=dict(session),
    )
