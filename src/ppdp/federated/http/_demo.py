"""``ppdp federate demo``: a whole round on loopback, each party its own process.

Adult is split across the owners, each part written as CSV beside the shipped schema;
:func:`~ppdp.federated.http._deploy.prepare_deployment` writes keys and configs;
the parties run as ``python -m ppdp federate ROLE --config FILE`` processes; the
publisher's ``result.json`` and every party's outcome are read back.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._validation import check_delta, check_epsilon, check_int, check_option, check_positive
from ppdp.data import Schema
from ppdp.exceptions import ParameterError
from ppdp.federated.http._config import Timeouts
from ppdp.federated.http._deploy import Deployment, prepare_deployment
from ppdp.federated.http._procs import start_parties, wait_parties

__all__ = ["DemoResult", "run_demo", "session_for", "split_table"]

#: Seed of the demo's partition of the rows among the owners (not privacy noise).
SPLIT_SEED = 20220


def split_table(df: pd.DataFrame, n_parts: int, *, seed: int = SPLIT_SEED) -> list[pd.DataFrame]:
    """Shuffle the rows (a fixed permutation) and cut them into ``n_parts`` near-equal parts."""
    order = np.random.default_rng(seed).permutation(len(df))
    return [df.iloc[idx].reset_index(drop=True) for idx in np.array_split(order, n_parts)]


def session_for(
    parts: list[pd.DataFrame],
    schema: Schema,
    *,
    session_id: str,
    epsilon: float,
    delta: float,
    dealer: str,
    release: str,
    calibration: str = "gaussian",
    owner_prefix: str = "owner",
) -> dict[str, Any]:
    """The round's public parameters (a ``RoundConfig`` as a dict) for these parts.

    The global class counts are computed from the parts and *treated as public* (the
    protocol needs them; Mul-LDA-DP assumes they are published, ALGORITHMS-publishing
    B.5 item 7).
    """
    if schema.label is None:
        raise ParameterError("schema (no label) must declare the class label for LDA")
    classes = list(schema.label.classes)
    counts = [0] * len(classes)
    for part in parts:
        _, y = schema.encode(part, include_label=False)
        assert y is not None
        for c, k in zip(*np.unique(y, return_counts=True), strict=True):
            counts[int(c)] += int(k)
    owners = [f"{owner_prefix}-{j + 1}" for j in range(len(parts))]
    from ppdp.federated.config import RoundConfig

    config = RoundConfig(
        session_id=session_id,
        publisher="publisher",
        owners=tuple(owners),
        dealer="dealer" if dealer == "trusted" else None,
        epsilon=float(epsilon),
        delta=float(delta),
        n_features=int(schema.layout(include_label=False).n_features),
        classes=tuple(range(len(classes))),
        class_counts=tuple(counts),
        calibration=calibration,
        release=release,
        constant_blocks=constant_blocks(schema),
    )
    return config.to_dict()  # every field explicit: the parties compare them one by one


def constant_blocks(schema: Schema) -> tuple[tuple[int, ...], ...] | None:
    """Column indices of each one-hot block (label excluded), as the centralised
    publisher's ``remove_constant`` uses them; None when a declared row-norm bound below
    ``sqrt(p1 + p2)`` can rescale rows (the blocks' sums are then not constant).
    """
    if not schema.categorical_columns:
        return None
    layout = schema.layout()
    if schema.row_norm_bound is not None and schema.row_norm_bound < math.sqrt(
        layout.p1 + layout.p2
    ):
        return None
    return tuple(
        tuple(range(schema.blocks[c.name].start, schema.blocks[c.name].stop))
        for c in schema.categorical_columns
    )


@dataclass(frozen=True)
class DemoResult:
    """What a demo round produced (see :meth:`summary`)."""

    workdir: Path
    deployment: Deployment
    exit_codes: dict[str, int]
    outcomes: dict[str, dict[str, Any]]
    result: dict[str, Any] | None
    seconds: float
    accuracy: float | None = None
    direction_accuracy: float | None = None
    majority: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every party finished its round."""
        return all(c == 0 for c in self.exit_codes.values()) and self.result is not None

    @property
    def reason(self) -> str:
        """Why the round did not complete (the first abort reason found)."""
        for p, o in self.outcomes.items():
            if o.get("state") != "done" and o.get("reason"):
                return f"{p}: {o['reason']}"
        bad = {p: c for p, c in self.exit_codes.items() if c != 0}
        return f"exit codes {bad}" if bad else ""

    @property
    def round_seconds(self) -> float | None:
        """Publisher's round time: from starting the round to its end (start-up excluded)."""
        o = self.outcomes.get(self.deployment.publisher, {}).get("stats", {})
        if o.get("started_at") is None or o.get("finished_at") is None:
            return None
        return float(o["finished_at"] - o["started_at"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary."""
        res = self.result or {}
        return {
            "ok": self.ok,
            "reason": None if self.ok else self.reason,
            "workdir": str(self.workdir),
            "session_id": self.deployment.session.get("session_id"),
            "owners": len(self.deployment.owners),
            "guarantee": res.get("guarantee"),
            "direction_norm": res.get("direction_norm"),
            "accuracy": self.accuracy,
            "direction_accuracy": self.direction_accuracy,
            "majority_rate": self.majority,
            "seconds_total": self.seconds,
            "seconds_round": self.round_seconds,
            "ledger": str(self.deployment.ledger),
            "replicas": {p: str(r) for p, r in self.deployment.replicas.items()},
            "exit_codes": self.exit_codes,
            "notes": self.notes,
        }

    def summary(self) -> str:
        """Human-readable lines for the CLI."""
        d = self.to_dict()
        lines = [
            f"Mul-LDA-DP round {d['session_id']} with {d['owners']} owners "
            f"({'completed' if self.ok else 'ABORTED: ' + self.reason})",
        ]
        if self.result is not None:
            lines.append(f"  guarantee: {d['guarantee']}")
            if d["direction_norm"] is not None:
                lines.append(f"  direction norm: {d['direction_norm']:.6g}")
        if self.accuracy is not None:
            kind = "raw" if self.deployment.session.get("release") == "raw-projections" else "noisy"
            lines.append(
                f"  accuracy of a logistic regression on the released {kind} projections: "
                f"{self.accuracy:.4f} (majority class {self.majority:.4f})"
            )
            hidden = self.majority is not None and self.accuracy <= self.majority + 0.005
            if kind == "noisy" and hidden:
                lines.append(
                    "  (each row's projection carries noise of its own, which at this ε "
                    "hides the classes: the direction release (--release direction) gives the "
                    "discriminant alone; or raise epsilon)"
                )
        if self.direction_accuracy is not None:
            lines.append(
                f"  accuracy of the released direction (records projected on it, owners' "
                f"side, not released): {self.direction_accuracy:.4f}"
            )
        rs = self.round_seconds
        lines.append(
            f"  time: {self.seconds:.2f} s in all"
            + (f", {rs:.3f} s for the round after start-up" if rs is not None else "")
        )
        if Path(d["ledger"]).exists():  # an aborted round may not have written them
            lines.append(f"  publisher's ledger: {d['ledger']}")
        for p, r in d["replicas"].items():
            if Path(r).exists():
                lines.append(f"  {p}'s replica: {r}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def _accuracy(X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Test accuracy of a logistic regression on a 70/30 split, and the majority rate."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    clf = LogisticRegression().fit(X_tr, y_tr)
    majority = float(np.mean(y_te == np.bincount(y_tr).argmax()))
    return float(clf.score(X_te, y_te)), majority


def _evaluate(
    result: dict[str, Any], parts: list[pd.DataFrame], schema: Schema
) -> dict[str, float]:
    """Accuracy on the released noisy projections, and of the released direction.

    The second figure projects the (non-released) records on the DP direction, as each
    owner may do on its own rows (post-processing); it shows what the direction is worth
    apart from the projections' per-row noise. Evaluation only: nothing is released.
    """
    Xs, ys = [], []
    for part in parts:  # the publisher concatenates the owners' rows in owner order
        X, y = schema.encode(part, include_label=False)
        Xs.append(X / schema.max_row_l2_norm)
        ys.append(np.asarray(y))
    X, y = np.vstack(Xs), np.concatenate(ys)
    out: dict[str, float] = {}
    proj = result.get("projections")
    if proj is not None:
        P = np.asarray(proj, dtype=float).reshape(len(proj), -1)
        if len(P) == len(y):
            out["projections"], out["majority"] = _accuracy(P, y)
    W = result.get("directions")
    if W is not None:
        out["direction"], out["majority"] = _accuracy(X @ np.asarray(W, dtype=float), y)
    return out


def run_demo(
    *,
    owners: int = 3,
    workdir: str | os.PathLike[str] = ".",
    epsilon: float = 1.0,
    delta: float = 1e-5,
    dealer: str = "trusted",
    release: str = "noisy-projections",
    calibration: str = "gaussian",
    timeout: float = 120.0,
    data: tuple[pd.DataFrame, Schema] | None = None,
    timeouts: Timeouts | None = None,
    session_id: str | None = None,
    tls: bool = False,
) -> DemoResult:
    """Run one Mul-LDA-DP round on loopback with every party in its own process.

    Parameters
    ----------
    owners : int
        Number of data owners (at least 2); Adult is split evenly among them.
    workdir : path
        Where the keys, configs, data parts, the publisher's ledger (``ledger/``) and
        the owners' replicas (``replicas/``) are written. Must not hold a ``ledger/``.
    epsilon, delta : float
        The round's whole budget.
    dealer : {"trusted", "none"}
    release : {"direction", "noisy-projections", "raw-projections"}
    calibration : {"gaussian", "paper"}
    timeout : float
        Seconds for the whole demo; parties still running then are killed.
    data : (DataFrame, Schema), optional
        Another labelled table and its declared schema instead of Adult.
    timeouts : Timeouts, optional
        The parties' timeouts (default: short ones suited to loopback).
    session_id : str, optional
        Default: a fresh random one.
    tls : bool
        Serve HTTPS with mutual TLS (a throw-away local CA under ``WORKDIR/tls``) instead
        of plain HTTP on loopback.

    Returns
    -------
    DemoResult
    """
    owners = check_int("owners", owners, minimum=2)
    epsilon = check_epsilon("epsilon", epsilon)
    delta = check_delta("delta", delta, allow_zero=False)
    check_option("dealer", dealer, ("trusted", "none"))
    check_option("release", release, ("direction", "noisy-projections", "raw-projections"))
    timeout = check_positive("timeout", timeout)
    if Path(workdir).exists() and not Path(workdir).is_dir():
        raise ParameterError(f"workdir ({os.fspath(workdir)}) is a file, not a folder")
    if data is None:
        from ppdp.datasets import load_adult

        data = load_adult()
    df, schema = data
    if owners > len(df):
        raise ParameterError(f"owners ({owners}) must not exceed the number of rows ({len(df)})")
    if session_id is None:
        from ppdp.federated.messages import new_session_id

        session_id = f"demo-{new_session_id()[:12]}"
    t0 = time.perf_counter()
    parts = split_table(df, owners)
    session = session_for(
        parts,
        schema,
        session_id=session_id,
        epsilon=epsilon,
        delta=delta,
        dealer=dealer,
        release=release,
        calibration=calibration,
    )
    root = Path(workdir).resolve()  # the parties run with the workdir as their cwd
    dep = prepare_deployment(
        root,
        parts=parts,
        schema=schema,
        session=session,
        timeouts=timeouts
        or Timeouts(
            request=5.0,
            retries=3,
            startup=max(30.0, timeout / 2),
            phase=20.0,
            round=timeout,
            linger=0.5,
        ),
        dealer=dealer == "trusted",
        tls=tls,
    )
    procs = start_parties(dep)
    codes = wait_parties(procs, timeout=timeout)
    seconds = time.perf_counter() - t0
    timed_out = seconds >= timeout
    outcomes: dict[str, dict[str, Any]] = {}
    for p in dep.roles:
        f = root / f"{p}.outcome.json"
        if f.is_file():
            outcomes[p] = json.loads(f.read_text(encoding="utf-8"))
        else:
            reason = procs[p].last_line() or f"exit {codes[p]}"
            if timed_out and codes[p] < 0:  # killed by wait_parties
                reason = f"stopped at the demo's timeout ({timeout:g} s; give it more time)"
            outcomes[p] = {"state": "crashed", "reason": reason}
    result = None
    rf = root / "result.json"
    if rf.is_file() and codes.get(dep.publisher) == 0:
        result = json.loads(rf.read_text(encoding="utf-8"))
    scores: dict[str, float] = {}
    notes: list[str] = [
        "global class counts were computed from the parts and are treated as public "
        "(the protocol needs them)"
    ]
    if result is not None:
        try:
            scores = _evaluate(result, parts, schema)
        except ImportError:  # scikit-learn is the ``learn`` extra
            notes.append("accuracies skipped: pip install 'ppdp[learn]' for scikit-learn")
        if release == "raw-projections":
            notes.append("raw projections are not differentially private")
        norm = result.get("direction_norm")
        if norm is not None and not math.isfinite(norm):
            notes.append("direction norm is not finite")
    return DemoResult(
        workdir=root,
        deployment=dep,
        exit_codes=codes,
        outcomes=outcomes,
        result=result,
        seconds=seconds,
        accuracy=scores.get("projections"),
        direction_accuracy=scores.get("direction"),
        majority=scores.get("majority"),
        notes=notes,
    )
