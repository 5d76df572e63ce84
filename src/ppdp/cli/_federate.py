"""``ppdp federate init|run|publisher|owner|dealer`` and ``ppdp federate demo``.

Each party of a Mul-LDA-DP round runs as its own process, serving HTTP (FastAPI and
uvicorn) and sending signed messages to its peers (httpx). Exit status: 0 when the round
completed, 3 when it was aborted (one line on stderr says why; nothing was released), 2
on a usage or configuration error. The protocol's log (every refused message with its
reason, aborts, timeouts) goes to ``<workdir>/<party>.log``; ``-v`` copies it to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ppdp.exceptions import ParameterError

if TYPE_CHECKING:
    from ppdp.federated.http import DemoResult

EXIT_ABORTED = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``federate`` and its actions to the ``ppdp`` parser."""
    parser = subparsers.add_parser(
        "federate",
        help="run a party of the multi-party LDA protocol over HTTP, or a local demo",
        description="Run one party (publisher, owner or dealer) of a Mul-LDA-DP round as "
        "its own process, or start a whole round on loopback with 'demo'. Exit 0 when the "
        "round completed, 3 when it was aborted (nothing released), 2 on a usage error.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    actions = parser.add_subparsers(dest="federate_action", metavar="ACTION")
    actions.required = True
    for role, text in (
        ("publisher", "run the publisher: starts the round, keeps the ledger, releases"),
        ("owner", "run a data owner: sends noisy shares of its data, keeps a ledger replica"),
        ("dealer", "run the noise dealer: sends zero-sum noise shares to the owners"),
    ):
        p = actions.add_parser(
            role,
            help=text,
            description=text[0].upper() + text[1:] + ". The configuration file is "
            "described in docs/federated-deployment.md.",
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        p.add_argument("--config", required=True, metavar="FILE", help="YAML or JSON config")
        p.add_argument("--json", action="store_true", help="print the outcome as JSON")
        p.add_argument(
            "--insecure-plain-http",
            action="store_true",
            help="allow plain HTTP on a non-loopback listen.host (refused otherwise)",
        )
        p.set_defaults(func=_party, federate_role=role)
    _register_init_run(actions)
    demo = actions.add_parser(
        "demo",
        help="run a whole round on loopback: publisher, dealer and owners as processes",
        description="Split Adult across OWNERS data owners, start the publisher, the "
        "dealer and the owners as separate processes on free loopback ports, run one round, "
        "print the result and leave the publisher's ledger and each owner's replica under "
        "WORKDIR (plain HTTP on loopback unless --tls; see docs/federated-deployment.md).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    demo.add_argument("--owners", type=int, default=3, help="number of data owners")
    demo.add_argument("--workdir", default=".", help="where the ledger, replicas, keys go")
    demo.add_argument("--epsilon", type=float, default=1.0, help="total epsilon of the round")
    demo.add_argument("--delta", type=float, default=1e-5, help="total delta of the round")
    demo.add_argument(
        "--dealer",
        choices=("trusted", "none"),
        default="trusted",
        help="zero-sum noise from a trusted dealer, or from pairwise X25519 masks",
    )
    demo.add_argument(
        "--release",
        choices=("direction", "noisy-projections", "raw-projections"),
        default="noisy-projections",
        help="what the round releases (raw projections are not DP)",
    )
    demo.add_argument("--timeout", type=float, default=120.0, help="seconds for the whole demo")
    demo.add_argument(
        "--tls",
        action="store_true",
        help="HTTPS with mutual TLS (throw-away local CA) instead of plain HTTP",
    )
    demo.add_argument("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(func=_demo)


def _register_init_run(actions: argparse._SubParsersAction) -> None:
    init = actions.add_parser(
        "init",
        help="write every party's config and keys for a round across machines",
        description="Write, under OUT, one folder per party (publisher, dealer, each owner) "
        "with its config and its private keys (mode 0600), to be copied to that party's "
        "machine and started there with 'ppdp federate run --config'; plus public-keys.json "
        "and session.json (public). n_features, the classes and the constant one-hot blocks "
        "come from the schema. See docs/federated-deployment.md.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    init.add_argument(
        "--owners",
        required=True,
        action="append",
        metavar="NAME=URL[,NAME=URL...]",
        help="the data owners and the URL each is reached at (repeatable); the order fixes "
        "the mask pairs",
    )
    init.add_argument("--publisher", required=True, metavar="URL", help="the publisher's URL")
    init.add_argument(
        "--dealer",
        required=True,
        metavar="URL|none",
        help="the noise dealer's URL, or 'none' for pairwise X25519 masks (no dealer)",
    )
    init.add_argument("--schema", required=True, metavar="FILE", help="the declared schema")
    init.add_argument(
        "--class-counts",
        required=True,
        metavar="N,N,...",
        help="global count of each class in the schema's class order (public: the protocol "
        "publishes them)",
    )
    init.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="an owner's data file (CSV) on its machine (repeatable; default "
        "<owner>/data.csv; editable afterwards as data.file)",
    )
    init.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder")
    init.add_argument("--force", action="store_true", help="write into a non-empty folder")
    init.add_argument("--epsilon", type=float, default=1.0, help="total epsilon of the round")
    init.add_argument("--delta", type=float, default=1e-5, help="total delta of the round")
    init.add_argument(
        "--release",
        choices=("direction", "noisy-projections", "raw-projections"),
        default="direction",
        help="what the round releases (raw projections are not DP)",
    )
    init.add_argument(
        "--projection-share",
        type=float,
        default=0.5,
        help="share of epsilon for the noisy projections",
    )
    init.add_argument(
        "--calibration", choices=("gaussian", "paper"), default="gaussian", help="noise calibration"
    )
    init.add_argument("--n-components", type=int, default=None, help="at most this many directions")
    init.add_argument("--session-id", default=None, help="default: a fresh random one")
    init.add_argument(
        "--norm-bound",
        type=float,
        default=None,
        help="declared bound on an encoded row's L2 norm (default: the schema's)",
    )
    init.add_argument("--dataset-id", default="federated", help="the publisher ledger's dataset id")
    init.add_argument(
        "--budget-epsilon",
        type=float,
        default=None,
        help="the publisher ledger's total epsilon (default: the round's)",
    )
    init.add_argument(
        "--budget-delta",
        type=float,
        default=None,
        help="the publisher ledger's total delta (default: the round's)",
    )
    init.set_defaults(func=_init)
    run = actions.add_parser(
        "run",
        help="run one party (publisher, dealer or owner) from its config",
        description="Run the party a config names (its role is read from the file), e.g. "
        "a folder written by 'ppdp federate init'. Exit 0 when the round completed, 3 when "
        "it was aborted, 2 on a usage error.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    run.add_argument("--config", required=True, metavar="FILE", help="YAML or JSON config")
    run.add_argument("--json", action="store_true", help="print the outcome as JSON")
    run.add_argument(
        "--insecure-plain-http",
        action="store_true",
        help="allow plain HTTP on a non-loopback listen.host (refused otherwise)",
    )
    run.set_defaults(func=_party, federate_role=None)


def _int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ParameterError(f"{what} ({text!r}) must be integers separated by commas") from None
    return values


def _init(args: argparse.Namespace) -> int:
    from ppdp.federated.http import init_round, parse_named

    dealer = None if args.dealer.strip().lower() == "none" else args.dealer
    budget = None
    if args.budget_epsilon is not None or args.budget_delta is not None:
        budget = (
            args.epsilon if args.budget_epsilon is None else args.budget_epsilon,
            args.delta if args.budget_delta is None else args.budget_delta,
        )
    result = init_round(
        args.output,
        owners=parse_named(args.owners, "--owners"),
        publisher=args.publisher,
        dealer=dealer,
        schema=args.schema,
        class_counts=_int_list(args.class_counts, "--class-counts"),
        epsilon=args.epsilon,
        delta=args.delta,
        release=args.release,
        projection_share=args.projection_share,
        calibration=args.calibration,
        n_components=args.n_components,
        session_id=args.session_id,
        data=parse_named(args.data, "--data"),
        norm_bound=args.norm_bound,
        dataset_id=args.dataset_id,
        budget=budget,
        force=args.force,
    )
    print(
        f"round {result.session['session_id']}: {len(result.roles)} parties under {result.folder}"
    )
    for party, path in result.configs.items():
        print(f"  {party} ({result.roles[party]}): ppdp federate run --config {path}")
    print("copy each party's folder to its machine only (it holds that party's private keys)")
    for note in result.notes:
        sys.stderr.write(f"ppdp: note: {note}\n")
    return 0


def _log_to_file(path: Path, *, verbose: int) -> logging.Handler:
    """Send the protocol's log (refusals with their reasons, aborts) to ``path``.

    stderr keeps one line per outcome; with ``-v`` the log goes to stderr as well.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log = logging.getLogger("ppdp.federated")
    log.setLevel(logging.INFO if verbose < 2 else logging.DEBUG)
    log.addHandler(handler)
    log.propagate = verbose > 0
    return handler


def _party(args: argparse.Namespace) -> int:
    from ppdp.federated.http import check_plain_http_bind, load_config, run_party

    config = load_config(args.config)
    if args.federate_role is None:  # 'federate run': the role the config names
        args.federate_role = config.role
    if config.role != args.federate_role:
        raise ParameterError(
            f"config {args.config}: role ({config.role!r}) does not match the command "
            f"'federate {args.federate_role}'"
        )
    insecure = args.insecure_plain_http
    warning = check_plain_http_bind(
        config.host, tls=config.tls is not None, insecure_plain_http=insecure
    )
    if warning is not None:
        sys.stderr.write(f"ppdp: warning: {warning}\n")
    handler = _log_to_file(config.workdir / f"{config.party}.log", verbose=args.verbose)
    try:
        outcome = run_party(config, insecure_plain_http=insecure)
    finally:
        logging.getLogger("ppdp.federated").removeHandler(handler)
        handler.close()
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    if not outcome.ok:
        sys.stderr.write(
            f"ppdp: federate {config.role} {config.party}: round {config.session_id} "
            f"aborted: {outcome.reason}\n"
        )
        return EXIT_ABORTED
    if not args.json:
        print(f"{config.party}: round {config.session_id} done")
        result_file = outcome.extra.get("result")  # the publisher's release
        if result_file is not None:
            _print_release_guarantee(Path(result_file), verbose=args.verbose)
    return 0


def _print_release_guarantee(result_file: Path, *, verbose: int) -> None:
    """The publisher's release guarantee, read back from its ``result.json``."""
    from ppdp.budget import Guarantee
    from ppdp.cli._common import print_guarantee

    data = json.loads(result_file.read_text(encoding="utf-8")).get("guarantee_dict")
    if data is not None:
        print_guarantee(Guarantee.from_dict(data), verbose=verbose, full_in=result_file)


def _with_short_guarantee(result: DemoResult, *, verbose: int) -> str:
    """The demo's summary with its guarantee on one line (and in full with ``-v``)."""
    from ppdp.budget import Guarantee

    text = result.summary()
    res = result.result or {}
    if res.get("guarantee_dict") is None:
        return text
    g = Guarantee.from_dict(res["guarantee_dict"])
    short = [f"  guarantee: {g.summary()}"] + ([f"    in full: {g}"] if verbose else [])
    lines: list[str] = []
    for line in text.split("\n"):
        lines.extend(short if line == f"  guarantee: {res.get('guarantee')}" else [line])
    return "\n".join(lines)


def _demo(args: argparse.Namespace) -> int:
    from ppdp.federated.http import run_demo

    result = run_demo(
        owners=args.owners,
        workdir=args.workdir,
        epsilon=args.epsilon,
        delta=args.delta,
        dealer=args.dealer,
        release=args.release,
        timeout=args.timeout,
        tls=args.tls,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(_with_short_guarantee(result, verbose=args.verbose))
    if not result.ok:
        sys.stderr.write(f"ppdp: federate demo: round aborted: {result.reason}\n")
        return EXIT_ABORTED
    return 0
