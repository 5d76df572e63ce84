"""Running a party from files: what ``ppdp federate init|run|ROLE|demo`` do, for a caller.

:func:`init_round_files` writes every party's folder of a round across machines from the
command line's text forms (``NAME=URL`` pairs, ``N,N,...`` counts); :func:`run_party_file`
runs the party a config file names, with the protocol's log in ``<workdir>/<party>.log``;
:func:`release_guarantee` reads the guarantee of a publisher's ``result.json`` back and
:func:`demo_summary` states a demo round with its guarantee on one line. The HTTP
deployment needs the ``server`` extra (``pip install 'ppdp[server]'``).

Examples
--------
>>> from ppdp.federated.files import run_party_file
>>> run = run_party_file("publisher/config.yaml")  # doctest: +SKIP
>>> run.outcome.ok  # doctest: +SKIP
True
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp.exceptions import ParameterError

__all__ = [
    "PartyRun",
    "demo_summary",
    "init_round_files",
    "release_guarantee",
    "run_party_file",
]


def _int_list(text: str, what: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ParameterError(f"{what} ({text!r}) must be integers separated by commas") from None


def init_round_files(
    output: str | os.PathLike[str],
    *,
    owners: Sequence[str],
    dealer: str,
    class_counts: str,
    data: Sequence[str] = (),
    epsilon: float = 1.0,
    delta: float = 1e-5,
    budget_epsilon: float | None = None,
    budget_delta: float | None = None,
    **options: Any,
) -> Any:
    """Write every party's config and keys for a round across machines under ``output``.

    ``owners`` and ``data`` hold ``NAME=URL[,NAME=URL...]`` and ``NAME=PATH`` texts,
    ``dealer`` a URL or ``none`` (pairwise masks), ``class_counts`` ``N,N,...``; the
    publisher ledger's budget defaults to the round's (ε, δ). The other options are
    :func:`ppdp.federated.http.init_round`'s. Returns its ``InitResult``.
    """
    from ppdp.federated.http import init_round, parse_named

    budget = None
    if budget_epsilon is not None or budget_delta is not None:
        budget = (
            epsilon if budget_epsilon is None else budget_epsilon,
            delta if budget_delta is None else budget_delta,
        )
    return init_round(
        output,
        owners=parse_named(list(owners), "--owners"),
        dealer=None if dealer.strip().lower() == "none" else dealer,
        class_counts=_int_list(class_counts, "--class-counts"),
        data=parse_named(list(data), "--data"),
        epsilon=epsilon,
        delta=delta,
        budget=budget,
        **options,
    )


@dataclass(frozen=True)
class PartyRun:
    """One party's round: its config and the outcome (``ok``, ``reason``, ``extra``)."""

    config: Any
    outcome: Any


def _log_to_file(path: Path, *, verbose: int) -> logging.Handler:
    """Send the protocol's log (refusals with their reasons, aborts) to ``path``.

    stderr keeps one line per outcome; with ``verbose`` the log goes to stderr as well.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log = logging.getLogger("ppdp.federated")
    log.setLevel(logging.INFO if verbose < 2 else logging.DEBUG)
    log.addHandler(handler)
    log.propagate = verbose > 0
    return handler


def run_party_file(
    config: str | os.PathLike[str],
    *,
    role: str | None = None,
    insecure_plain_http: bool = False,
    verbose: int = 0,
    warn: Callable[[str], None] | None = None,
) -> PartyRun:
    """Run the party that the config file ``config`` names, until its round ends.

    ``role``: the role the caller expects (``publisher``, ``owner``, ``dealer``); a config
    of another role is refused (None: the config's own). Plain HTTP on a non-loopback
    address is refused unless ``insecure_plain_http``; ``warn`` is called with the warning
    that is given then. The protocol's log goes to ``<workdir>/<party>.log`` (and to the
    ``ppdp.federated`` logger's parents with ``verbose``).
    """
    from ppdp.federated.http import check_plain_http_bind, load_config, run_party

    cfg = load_config(config)
    role = cfg.role if role is None else role
    if cfg.role != role:
        raise ParameterError(
            f"config {config}: role ({cfg.role!r}) does not match the command 'federate {role}'"
        )
    warning = check_plain_http_bind(
        cfg.host, tls=cfg.tls is not None, insecure_plain_http=insecure_plain_http
    )
    if warning is not None and warn is not None:
        warn(warning)
    handler = _log_to_file(cfg.workdir / f"{cfg.party}.log", verbose=verbose)
    try:
        outcome = run_party(cfg, insecure_plain_http=insecure_plain_http)
    finally:
        logging.getLogger("ppdp.federated").removeHandler(handler)
        handler.close()
    return PartyRun(cfg, outcome)


def release_guarantee(result_file: str | os.PathLike[str]) -> Any:
    """The :class:`~ppdp.budget.Guarantee` in a publisher's ``result.json`` (None if none)."""
    from ppdp.budget import Guarantee

    data = json.loads(Path(result_file).read_text(encoding="utf-8")).get("guarantee_dict")
    return None if data is None else Guarantee.from_dict(data)


def demo_summary(result: Any, *, verbose: int = 0) -> str:
    """A demo round's summary with its guarantee on one line (and in full with ``verbose``)."""
    from ppdp.budget import Guarantee

    text: str = result.summary()
    res = result.result or {}
    if res.get("guarantee_dict") is None:
        return text
    g = Guarantee.from_dict(res["guarantee_dict"])
    short = [f"  guarantee: {g.summary()}"] + ([f"    in full: {g}"] if verbose else [])
    lines: list[str] = []
    for line in text.split("\n"):
        lines.extend(short if line == f"  guarantee: {res.get('guarantee')}" else [line])
    return "\n".join(lines)
