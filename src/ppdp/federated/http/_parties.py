"""Build a party's node from its config with the roles of :mod:`ppdp.federated.roles`.

- **publisher**: opens (or creates) the publishing ledger with every party's key pinned
  (:func:`~ppdp.federated.roles.create_publishing_accountant`), builds the
  :class:`~ppdp.federated.roles.FederatedPublisher`, serves the ledger at ``GET /ledger/entries``
  and, when the round ends, writes ``<workdir>/result.json``;
- **owner**: reads its CSV, encodes it with the declared schema, divides every record by
  the declared norm bound (never the data's maximum), and builds the
  :class:`~ppdp.federated.roles.DataOwner` with its replica file; expects dealer shares
  sealed to its X25519 key when it has one;
- **dealer**: builds the :class:`~ppdp.federated.roles.NoiseDealer`; seals every share to
  its owner's X25519 public key when the config gives one, then waits (up to the round
  timeout) for the publisher's release or abort, which its exit status reports.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import numpy as np

from ppdp._io import atomic_path
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import ParameterError
from ppdp.federated.config import RoundConfig
from ppdp.federated.http._config import PartyConfig
from ppdp.federated.http._node import PartyNode
from ppdp.federated.http._parts import PartyParts
from ppdp.federated.http._sealed import load_box_key
from ppdp.federated.http._tls import client_context
from ppdp.federated.messages import Message, encode_array
from ppdp.federated.roles import (
    DataOwner,
    FederatedPublisher,
    NoiseDealer,
    create_publishing_accountant,
    must_abort,
)
from ppdp.ledger import Signer, load_private_key

__all__ = ["build_parts", "load_owner_data", "load_owner_records", "round_config"]

logger = logging.getLogger(__name__)


def round_config(config: PartyConfig) -> RoundConfig:
    """The session section as a :class:`~ppdp.federated.config.RoundConfig`."""
    try:
        return RoundConfig.from_dict(dict(config.session))
    except (ParameterError, TypeError) as exc:
        where = config.source or "<config>"
        raise ParameterError(f"config {where}: session: {exc}") from None


def load_owner_data(config: PartyConfig) -> tuple[np.ndarray, np.ndarray]:
    """Read, encode and scale an owner's records: ``(X / R, y)`` with ``‖x‖₂ ≤ 1``.

    ``R`` is the declared ``data.norm_bound``, or else the schema's own bound on an encoded
    row (``row_norm_bound``, or ``sqrt(p1 + p2)``): public, never read from the data.
    """
    if config.data is None:
        raise ParameterError(f"config {config.source}: an owner needs data")
    schema = Schema.from_file(config.data.schema)
    schema.check_reviewed()  # a draft's bounds are the data's own: refused before reading
    if schema.label is None:
        raise ParameterError(f"schema {config.data.schema} declares no label; LDA needs classes")
    from ppdp.data.draft import read_table

    df = read_table(config.data.file)  # one-line errors: encoding, separator
    X, y = schema.encode(df, include_label=False)
    bound = config.data.norm_bound or schema.max_row_l2_norm
    return X / float(bound), np.asarray(y)


def load_owner_records(config: PartyConfig) -> dict[str, Any]:
    """An owner's data as ``DataOwner`` takes it: ``X`` and ``y``, or its ``statistics``.

    A Parquet dataset (a folder, a glob or a ``.parquet`` file) is reduced partition by
    partition on a local Dask cluster (:func:`ppdp.federated.owner_data.load_owner_statistics`);
    only the reduced statistics are kept, so the round must release the direction only.
    """
    from ppdp.data.distributed import is_distributed

    if config.data is None or not is_distributed(config.data.file):
        X, y = load_owner_data(config)
        return {"X": X, "y": y}
    from ppdp.federated.owner_data import load_owner_statistics

    schema = Schema.from_file(config.data.schema)
    schema.check_reviewed()  # a draft's bounds are the data's own: refused before reading
    if schema.label is None:
        raise ParameterError(f"schema {config.data.schema} declares no label; LDA needs classes")
    stats = load_owner_statistics(config.data.file, schema, norm_bound=config.data.norm_bound)
    return {"statistics": stats}


def _signer(config: PartyConfig) -> Signer:
    return Signer(config.party, load_private_key(config.key_file))


def build_parts(config: PartyConfig) -> PartyParts:
    """The node (role, codec, abort policy) and the finish/close hooks of one party."""
    rc = round_config(config)
    signer = _signer(config)
    keys = config.known_keys()
    keys[config.party] = signer.public_key
    role: Any
    ledger = None
    closers: list[Any] = []
    finish = None
    if config.role == "publisher":
        if signer.id != rc.publisher:
            raise ParameterError(
                f"config {config.source}: party ({config.party!r}) is not the session's "
                f"publisher ({rc.publisher!r})"
            )
        names = release_names(config, rc)  # before the ledger: a bad schema spends nothing
        accountant = _publishing_accountant(config, signer, keys, rc)
        closers.append(accountant.close)
        role = FederatedPublisher(rc, signer=signer, keys=keys, accountant=accountant)
        ledger = accountant.ledger

        async def finish(node: PartyNode) -> dict[str, Any]:
            return _write_result(config, role, node, names)

    elif config.role == "owner":
        records = load_owner_records(config)
        role = DataOwner(rc, signer=signer, keys=keys, replica_path=config.replica, **records)
        closers.append(role.replica.close if hasattr(role.replica, "close") else (lambda: None))

        async def finish(node: PartyNode) -> dict[str, Any]:
            rep = role.replica_ledger
            node.ledger = rep
            return {
                "replica": None if config.replica is None else str(config.replica),
                "replica_length": len(role.replica),
            }

    else:
        role = NoiseDealer(rc, signer=signer, keys=keys)
    timeouts = config.timeouts
    if config.role == "dealer":
        # After dealing, the dealer hears nothing until the publisher's release or abort
        # (its exit status reports the round): allow it the whole round, not one phase.
        timeouts = dataclasses.replace(timeouts, phase=max(timeouts.phase, timeouts.round))
    node = PartyNode(
        party_id=config.party,
        role_name=config.role,
        session_id=config.session_id,
        role=role,
        validate=role.check,
        decode=Message.from_json,
        encode=lambda m: m.to_json().encode("utf-8"),
        peers={p.id: p for p in config.peers},
        timeouts=timeouts,
        box_key=load_box_key(config.box_key_file) if config.box_key_file else None,
        seal_to=("owner",) if config.role == "dealer" else (),
        ledger=ledger,
        must_abort=lambda exc, m: must_abort(exc, m, session_id=config.session_id),
        ssl_context=client_context(config.tls) if config.tls is not None else None,
        transport_key=signer,
    )

    def close() -> None:
        for c in closers:
            try:
                c()
            except Exception as exc:  # closing must not hide the outcome
                logger.warning("%s: closing failed: %s", config.party, exc)

    return PartyParts(node=node, finish=finish, close=close)


def _publishing_accountant(
    config: PartyConfig, signer: Signer, keys: dict[str, Any], rc: RoundConfig
) -> Any:
    from ppdp.accounting import Accountant

    path = config.ledger
    assert path is not None
    if path.exists():
        acct = Accountant.open_existing(path, key=signer)
        pinned = acct.ledger.signers
        missing = [p for p in keys if p not in pinned]
        if missing:
            acct.close()
            raise ParameterError(
                f"ledger ({path}) does not pin the keys of {missing}; start a new ledger"
            )
        return acct
    b = config.budget or {}
    total = PrivacyBudget(float(b.get("epsilon", rc.epsilon)), float(b.get("delta", rc.delta)))
    parties = {p: k for p, k in keys.items() if p != signer.id}
    return create_publishing_accountant(
        path,
        publisher=signer,
        parties=parties,
        dataset_id=str(b.get("dataset_id", "federated")),
        total=total,
    )


def release_names(config: PartyConfig, rc: RoundConfig) -> dict[str, Any]:
    """Feature and class names for ``result.json``, from the publisher's declared schema.

    Without a ``schema`` in the config: no feature names, the class codes as class names.
    """
    class_names = [str(c) for c in rc.classes]
    if config.schema is None:
        return {"feature_names": None, "class_names": class_names}
    schema = Schema.from_file(config.schema)
    names = list(schema.layout(include_label=False).feature_names)
    if len(names) != rc.n_features:
        raise ParameterError(
            f"config {config.source}: schema {config.schema} encodes {len(names)} features, "
            f"the session has n_features = {rc.n_features}"
        )
    if schema.label is not None and len(schema.label.classes) == len(rc.classes):
        class_names = [str(c) for c in schema.label.classes]
    return {"feature_names": names, "class_names": class_names}


def orient_directions(
    directions: np.ndarray, noisy_means: np.ndarray
) -> tuple[np.ndarray, list[bool]]:
    """Flip each direction so that the second class's noisy mean projects higher.

    Post-processing of released values only: the direction(s) and the noisy class means
    the publisher recorded in the ledger (never an owner's records). A direction on which
    both means project equally is kept as released.
    """
    W = np.asarray(directions, dtype=np.float64)
    W2 = W.reshape(W.shape[0], -1)
    mu = np.asarray(noisy_means, dtype=np.float64)
    score = (mu[1] - mu[0]) @ W2
    flipped = [bool(v < 0.0) for v in score]
    signs = np.where(np.asarray(flipped), -1.0, 1.0)
    return (W2 * signs).reshape(W.shape), flipped


def _write_result(
    config: PartyConfig,
    role: FederatedPublisher,
    node: PartyNode,
    names: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``<workdir>/result.json``: the release (or the abort) and where time went.

    The direction(s) (and projections) are oriented so that positive means the second
    declared class (:func:`orient_directions`); ``sign_convention.flipped`` says which
    columns differ in sign from the direction recorded in the ledger.
    """
    done = role.state == "done"
    directions = role.directions if done else None
    projections = role.projections if done else None
    flipped: list[bool] | None = None
    if directions is not None and role.noisy_means is not None:
        directions, flipped = orient_directions(directions, role.noisy_means)
        if projections is not None:
            signs = np.where(np.asarray(flipped), -1.0, 1.0)
            P = np.asarray(projections, dtype=np.float64)
            projections = P * (signs if P.ndim == 2 else signs[0])
    names = names or {"feature_names": None, "class_names": [str(c) for c in role.config.classes]}
    class_names = names["class_names"]
    result: dict[str, Any] = {
        "session_id": config.session_id,
        "state": role.state,
        "abort_reason": role.abort_reason,
        "release": role.config.release,
        "guarantee": str(role.guarantee) if done else None,
        "guarantee_dict": role.guarantee.to_dict() if done else None,
        "directions": None if directions is None else directions.tolist(),
        "direction_norm": None if directions is None else float(np.linalg.norm(directions)),
        "noisy_means": None if not done or role.noisy_means is None else role.noisy_means.tolist(),
        "projections": None if projections is None else projections.tolist(),
        "feature_names": names["feature_names"],
        "class_names": class_names,
        "sign_convention": (
            None
            if flipped is None
            else {
                "positive_class": class_names[1],
                "negative_class": class_names[0],
                "rule": "each direction is oriented so that the second declared class's noisy "
                "mean projects higher than the first's (post-processing of released values: "
                "the direction and the noisy class means in the ledger)",
                "flipped": flipped,
            }
        ),
        "ledger": str(config.ledger),
        "ledger_length": len(role.ledger),
        "role_timings": dict(role.timings),
        "stats": node.stats.to_dict(),
    }
    if directions is not None:
        result["directions_encoded"] = encode_array(directions)
    dest = config.workdir / "result.json"
    with atomic_path(dest) as tmp:
        tmp.write_text(json.dumps(result, allow_nan=False), encoding="utf-8")
    return {"result": str(dest), "ledger_length": result["ledger_length"]}
