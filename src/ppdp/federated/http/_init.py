"""``ppdp federate init``: lay out a real round, one self-contained folder per party.

:func:`init_round` writes, under ``DIR``:

- ``<party>/<party>.yaml`` for the publisher, the dealer (unless ``dealer="none"``) and
  every owner: the party's configuration, with every peer's URL and pinned public keys;
- ``<party>/<party>.key`` (Ed25519) and, for owners when there is a dealer,
  ``<party>/<party>.box`` (X25519): the party's private keys, mode 0600, in its own folder
  only, so that each folder can be copied to its machine and nowhere else;
- ``<party>/schema.yaml`` (publisher and owners): the declared schema, public;
- ``public-keys.json`` and ``session.json``: every party's role, URL, public keys and key
  fingerprint, and the round's public parameters (the same ``session`` as in every config).

The round's ``constant_blocks`` come from the schema (each one-hot block, as the demo and
the centralised publisher's ``remove_constant`` use them), ``n_features`` from the schema's
encoded layout. The global class counts are public inputs of the protocol (Mul-LDA-DP
assumes them published): the caller gives them, init never reads an owner's data.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from ppdp._io import atomic_path
from ppdp._validation import check_delta, check_epsilon, check_option
from ppdp.data import Schema
from ppdp.exceptions import ParameterError
from ppdp.federated.config import RoundConfig
from ppdp.federated.http._config import Timeouts
from ppdp.federated.http._demo import constant_blocks
from ppdp.federated.http._deploy import peer_entries
from ppdp.federated.http._sealed import encode_box_public_key, generate_box_key, save_box_key
from ppdp.ledger import (
    check_signer_id,
    encode_public_key,
    generate_key,
    key_fingerprint,
    save_private_key,
)

__all__ = ["InitResult", "init_round", "parse_named"]

_LOOPBACK_NAMES = {"localhost"}


@dataclass(frozen=True)
class InitResult:
    """What :func:`init_round` wrote: each party's folder and config, by party id."""

    folder: Path
    roles: Mapping[str, str]
    configs: Mapping[str, Path]
    session: Mapping[str, Any]
    notes: tuple[str, ...] = ()


def parse_named(items: Sequence[str], what: str) -> dict[str, str]:
    """``["a=x,b=y", "c=z"]`` -> ``{"a": "x", "b": "y", "c": "z"}`` (names unique)."""
    out: dict[str, str] = {}
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip() or not value.strip():
                raise ParameterError(f"{what} ({part!r}) must be NAME=VALUE")
            name = name.strip()
            if name in out:
                raise ParameterError(f"{what}: {name!r} is given twice")
            out[name] = value.strip()
    return out


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen_for(party: str, url: str) -> tuple[str, int, str]:
    """``(listen host, port, normalised url)`` from a party's public URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ParameterError(f"{party} URL ({url!r}) must be http://HOST:PORT or https://HOST:PORT")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ParameterError(f"{party} URL ({url!r}) must be http(s)://HOST:PORT with no path")
    try:
        port = parts.port
    except ValueError:
        raise ParameterError(f"{party} URL ({url!r}) has an invalid port") from None
    if port is None:
        raise ParameterError(f"{party} URL ({url!r}) must name its port (http(s)://HOST:PORT)")
    host = parts.hostname
    # a loopback URL listens there; another host listens on every interface (edit
    # listen.host to bind one address)
    listen = host if _is_loopback(host) else ("::" if ":" in host else "0.0.0.0")
    return listen, port, f"{parts.scheme}://{parts.netloc}"


def _write_yaml(path: Path, value: Mapping[str, Any]) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(dict(value), sort_keys=False), encoding="utf-8")


def _fresh_key_path(path: Path, force: bool) -> Path:
    if path.exists() and force:
        path.unlink()
    return path


def init_round(
    folder: str | os.PathLike[str],
    *,
    owners: Mapping[str, str],
    publisher: str,
    dealer: str | None,
    schema: str | os.PathLike[str] | Schema,
    class_counts: Sequence[int],
    epsilon: float = 1.0,
    delta: float = 1e-5,
    release: str = "direction",
    projection_share: float = 0.5,
    calibration: str = "gaussian",
    n_components: int | None = None,
    session_id: str | None = None,
    data: Mapping[str, str | os.PathLike[str]] | None = None,
    norm_bound: float | None = None,
    dataset_id: str = "federated",
    budget: tuple[float, float] | None = None,
    timeouts: Timeouts | None = None,
    force: bool = False,
) -> InitResult:
    """Write every party's config and keys for one round (see the module docstring).

    Parameters
    ----------
    folder : path
        Output folder; refused when it exists and is not empty, unless ``force``
        (then the files init writes are replaced, others are left alone).
    owners : mapping
        Owner id -> the URL the other parties reach it at (``http(s)://HOST:PORT``);
        their order fixes the mask pairs. At least two.
    publisher, dealer : str
        The publisher's URL; the dealer's URL, or ``None`` for pairwise X25519 masks.
    schema : path or Schema
        The declared schema (with a label): ``n_features``, the classes, the constant
        one-hot blocks and the owners' encoding come from it.
    class_counts : sequence of int
        The global count of each class, in the schema's class order (public).
    data : mapping, optional
        Owner id -> its data file (CSV with the schema's columns), as seen from the
        owner's machine; default ``data.csv`` in the owner's folder.
    budget : (epsilon, delta), optional
        The publisher's ledger total (default: the round's own).
    """
    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise ParameterError(f"output ({root}) exists and is not a folder")
    if root.is_dir() and any(root.iterdir()) and not force:
        raise ParameterError(f"output folder ({root}) is not empty; pass --force to overwrite")
    if isinstance(schema, Schema):
        schema_obj = schema
    else:
        if not Path(schema).is_file():
            raise ParameterError(f"schema file ({schema}) does not exist")
        schema_obj = Schema.from_file(schema)
    schema_obj.check_reviewed()  # the round's sensitivity rests on the declared bounds
    if schema_obj.label is None:
        raise ParameterError("schema declares no label; a Fisher-LDA round needs the classes")
    epsilon = check_epsilon("epsilon", epsilon)
    delta = check_delta("delta", delta, allow_zero=False)
    check_option("release", release, ("direction", "noisy-projections", "raw-projections"))
    if len(owners) < 2:
        raise ParameterError(f"owners ({len(owners)} given) must name at least 2 data owners")
    for name in owners:
        try:
            check_signer_id(name)
        except ParameterError as exc:
            raise ParameterError(f"owner name: {exc}") from None
    clash = {"publisher", "dealer"} & set(owners)
    if clash:
        raise ParameterError(f"owner names ({sorted(clash)}) must differ from publisher and dealer")
    unknown = set(data or {}) - set(owners)
    if unknown:
        raise ParameterError(f"data for {sorted(unknown)}: not among the owners {list(owners)}")
    urls: dict[str, str] = {"publisher": publisher}
    if dealer is not None:
        urls["dealer"] = dealer
    urls.update(owners)
    roles = {"publisher": "publisher", **({"dealer": "dealer"} if dealer else {})}
    roles.update({o: "owner" for o in owners})
    listen: dict[str, tuple[str, int]] = {}
    for p, u in urls.items():
        host, port, urls[p] = _listen_for(p, u)
        listen[p] = (host, port)
    seen: dict[str, str] = {}
    for p, u in urls.items():
        if u in seen:
            raise ParameterError(f"{p} and {seen[u]} have the same URL ({u})")
        seen[u] = p
    schemes = {urlsplit(u).scheme for u in urls.values()}
    if len(schemes) > 1:
        raise ParameterError("URLs mix http:// and https://: every party must use the same")
    tls = schemes == {"https"}
    classes = list(schema_obj.label.classes)
    if len(class_counts) != len(classes):
        raise ParameterError(
            f"class counts ({len(class_counts)} given) must be one per class of the "
            f"schema's label {classes}, in that order"
        )
    session = RoundConfig(
        session_id=session_id or f"round-{secrets.token_hex(6)}",
        publisher="publisher",
        owners=tuple(owners),
        dealer="dealer" if dealer is not None else None,
        epsilon=float(epsilon),
        delta=float(delta),
        n_features=int(schema_obj.layout(include_label=False).n_features),
        classes=tuple(range(len(classes))),
        class_counts=tuple(class_counts),
        calibration=calibration,
        release=release,
        projection_share=float(projection_share),
        n_components=n_components,
        constant_blocks=constant_blocks(schema_obj),
    ).to_dict()
    budget_section: dict[str, Any] = {"dataset_id": dataset_id}
    if budget is not None:
        budget_section.update(epsilon=float(budget[0]), delta=float(budget[1]))
    timeouts = timeouts or Timeouts()
    t = {k: getattr(timeouts, k) for k in Timeouts.__dataclass_fields__}

    # everything is checked: now write
    root.mkdir(parents=True, exist_ok=True)
    public: dict[str, str] = {}
    box_public: dict[str, str] = {}
    fingerprints: dict[str, str] = {}
    for p, role in roles.items():
        sub = root / p
        sub.mkdir(exist_ok=True)
        os.chmod(sub, 0o700)
        key = generate_key()
        save_private_key(key, _fresh_key_path(sub / f"{p}.key", force))
        public[p] = encode_public_key(key.public_key())
        fingerprints[p] = key_fingerprint(key.public_key())
        if role == "owner" and dealer is not None:
            box = generate_box_key()
            save_box_key(box, _fresh_key_path(sub / f"{p}.box", force))
            box_public[p] = encode_box_public_key(box.public_key())
        if role in ("publisher", "owner"):
            schema_obj.to_file(sub / "schema.yaml")
    configs: dict[str, Path] = {}
    for p, role in roles.items():
        peers = peer_entries(p, roles, urls, public, box_public)
        cfg: dict[str, Any] = {
            "party": p,
            "role": role,
            "listen": {"host": listen[p][0], "port": listen[p][1]},
            "key_file": f"{p}.key",
        }
        if p in box_public:
            cfg["box_key_file"] = f"{p}.box"
        cfg["peers"] = peers
        cfg["session"] = dict(session)
        if role == "publisher":
            cfg["schema"] = "schema.yaml"
            cfg["ledger"] = "ledger/publisher.ledger"
            cfg["budget"] = budget_section
        if role == "owner":
            path = (data or {}).get(p)
            cfg["data"] = {
                "file": os.path.abspath(Path(path).expanduser())
                if path is not None
                else "data.csv",
                "schema": "schema.yaml",
                "norm_bound": norm_bound,
            }
            cfg["replica"] = "replica.ledger"
        cfg["workdir"] = "."
        cfg["timeouts"] = t
        if tls:
            cfg["tls"] = {
                "certfile": f"tls/{p}.pem",
                "keyfile": f"tls/{p}.key",
                "ca_file": "tls/ca.pem",
                "require_client_cert": True,
            }
        configs[p] = root / p / f"{p}.yaml"
        _write_yaml(configs[p], cfg)
    keyset = {
        p: {
            "role": roles[p],
            "url": urls[p],
            "public_key": public[p],
            "fingerprint": fingerprints[p],
            **({"box_public_key": box_public[p]} if p in box_public else {}),
        }
        for p in roles
    }
    with atomic_path(root / "public-keys.json") as tmp:
        tmp.write_text(json.dumps(keyset, indent=2) + "\n", encoding="utf-8")
    with atomic_path(root / "session.json") as tmp:
        tmp.write_text(json.dumps(session, indent=2) + "\n", encoding="utf-8")
    notes = []
    if tls:
        notes.append(
            "https URLs: put each party's certificate, key and the CA under <party>/tls/ "
            "(tls/<party>.pem, tls/<party>.key, tls/ca.pem) before 'federate run'"
        )
    elif any(not _is_loopback(listen[p][0]) for p in roles):
        notes.append(
            "plain http:// outside loopback: 'federate run' refuses it unless "
            "--insecure-plain-http; use https:// URLs with your own certificates"
        )
    missing = [o for o in owners if o not in (data or {})]
    if missing:
        notes.append(
            f"no --data for {missing}: put the owner's CSV at <owner>/data.csv or edit data.file"
        )
    return InitResult(
        folder=root, roles=roles, configs=configs, session=session, notes=tuple(notes)
    )
