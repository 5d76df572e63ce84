"""``ppdp federate init|run|publisher|owner|dealer|demo``: thin layers over
:mod:`ppdp.federated.files`; exit status 3 when a round was aborted (nothing released)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ppdp.cli import _common as c

EXIT_ABORTED = 3
_RELEASES = ("direction", "noisy-projections", "raw-projections")
_DOCS = "See docs/federated-deployment.md."
# fmt: off
_PARTY: tuple[c.Flag, ...] = (
    ("--config", {"required": True, "metavar": "FILE"}, "YAML or JSON config"),
    ("--json", {"action": "store_true"}, "print the outcome as JSON"),
    ("--insecure-plain-http", {"action": "store_true"},
     "allow plain HTTP on a non-loopback listen.host (refused otherwise)"),
)
_ROUND_BUDGET: tuple[c.Flag, ...] = (
    ("--epsilon", {"type": float, "default": 1.0}, "total epsilon of the round"),
    ("--delta", {"type": float, "default": 1e-5}, "total delta of the round"),
)
_RELEASE_HELP = "what the round releases (raw projections are not DP)"
_DEMO: tuple[c.Flag, ...] = (
    ("--owners", {"type": int, "default": 3}, "number of data owners"),
    ("--workdir", {"default": "."}, "where the ledger, replicas, keys go"), *_ROUND_BUDGET,
    ("--dealer", {"choices": ("trusted", "none"), "default": "trusted"},
     "zero-sum noise from a trusted dealer, or pairwise X25519 masks"),
    ("--release", {"choices": _RELEASES, "default": "noisy-projections"}, _RELEASE_HELP),
    ("--timeout", {"type": float, "default": 120.0}, "seconds for the whole demo"),
    ("--tls", {"action": "store_true"}, "HTTPS with mutual TLS (throw-away local CA)"),
    ("--json", {"action": "store_true"}, "print the summary as JSON"),
)
_INIT: tuple[c.Flag, ...] = (
    ("--owners", {"required": True, "action": "append", "metavar": "NAME=URL[,NAME=URL...]"},
     "the data owners and their URLs (repeatable; the order fixes the mask pairs)"),
    ("--publisher", {"required": True, "metavar": "URL"}, "the publisher's URL"),
    ("--dealer", {"required": True, "metavar": "URL|none"},
     "the noise dealer's URL, or 'none' for pairwise X25519 masks"),
    ("--schema", {"required": True, "metavar": "FILE"}, "the declared schema"),
    ("--class-counts", {"required": True, "metavar": "N,N,..."},
     "global count of each class, in the schema's class order (public)"),
    ("--data", {"action": "append", "default": [], "metavar": "NAME=PATH"},
     "an owner's CSV on its machine (repeatable; default <owner>/data.csv)"),
    ("-o --output", {"required": True, "metavar": "DIR"}, "output folder"),
    ("--force", {"action": "store_true"}, "write into a non-empty folder"), *_ROUND_BUDGET,
    ("--release", {"choices": _RELEASES, "default": "direction"}, _RELEASE_HELP),
    ("--projection-share", {"type": float, "default": 0.5},
     "share of epsilon for the noisy projections"),
    ("--calibration", {"choices": ("gaussian", "paper"), "default": "gaussian"},
     "noise calibration"),
    ("--n-components", {"type": int, "default": None}, "at most this many directions"),
    ("--session-id", {"default": None}, "default: a fresh random one"),
    ("--norm-bound", {"type": float, "default": None},
     "bound on an encoded row's L2 norm (default: the schema's)"),
    ("--dataset-id", {"default": "federated"}, "the publisher ledger's dataset id"),
    ("--budget-epsilon", {"type": float, "default": None},
     "the publisher ledger's total epsilon (default: the round's)"),
    ("--budget-delta", {"type": float, "default": None},
     "the publisher ledger's total delta (default: the round's)"),
)
_ROLES = (
    ("publisher", "run the publisher: starts the round, keeps the ledger, releases"),
    ("owner", "run a data owner: sends noisy shares of its data, keeps a ledger replica"),
    ("dealer", "run the noise dealer: sends zero-sum noise shares to the owners"),
)
_TEXTS = {
    "federate": ("run a party of the multi-party LDA protocol over HTTP, or a local demo",
                 "Run one party of a Mul-LDA-DP round as its own process, or a whole round on "
                 "loopback ('demo'). Exit 0 when the round completed, 3 when it was aborted."),
    "init": ("write every party's config and keys for a round across machines",
             f"Write one folder per party (config and private keys) under OUT. {_DOCS}"),
    "run": ("run one party (publisher, dealer or owner) from its config",
            f"Run the party a config names (its role is read from the file). {_DOCS}"),
    "demo": ("run a whole round on loopback: publisher, dealer and owners as processes",
             f"Split Adult across OWNERS data owners and run one round on loopback. {_DOCS}"),
}
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``federate`` and its actions to the ``ppdp`` parser."""
    actions = c.group(subparsers, "federate", *_TEXTS["federate"], "federate_action")
    for role, text in _ROLES:
        what = f"{text[0].upper()}{text[1:]}. {_DOCS}"
        c.command(actions, role, text, what, *_PARTY, func=_party, federate_role=role)
    c.command(actions, "init", *_TEXTS["init"], *_INIT, func=_init)
    c.command(actions, "run", *_TEXTS["run"], *_PARTY, func=_party, federate_role=None)
    c.command(actions, "demo", *_TEXTS["demo"], *_DEMO, func=_demo)


def _init(args: argparse.Namespace) -> int:
    from ppdp.federated.files import init_round_files

    names = "owners publisher dealer schema class_counts epsilon delta release projection_share"
    names += " calibration n_components session_id data norm_bound dataset_id force"
    result = init_round_files(
        args.output, **c.pick(args, names), **c.pick(args, "budget_epsilon budget_delta")
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


def _party(args: argparse.Namespace) -> int:
    from ppdp.federated.files import run_party_file

    run = run_party_file(
        args.config,
        role=args.federate_role,
        insecure_plain_http=args.insecure_plain_http,
        verbose=args.verbose,
        warn=lambda warning: sys.stderr.write(f"ppdp: warning: {warning}\n"),
    )
    config, outcome = run.config, run.outcome
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
    from ppdp.federated.files import release_guarantee

    guarantee = release_guarantee(result_file)
    if guarantee is not None:
        c.print_guarantee(guarantee, verbose=verbose, full_in=result_file)


def _demo(args: argparse.Namespace) -> int:
    from ppdp.federated.files import demo_summary
    from ppdp.federated.http import run_demo

    result = run_demo(**c.pick(args, "owners workdir epsilon delta dealer release timeout tls"))
    json_text = json.dumps(result.to_dict(), indent=2) if args.json else None
    print(json_text or demo_summary(result, verbose=args.verbose))
    if not result.ok:
        sys.stderr.write(f"ppdp: federate demo: round aborted: {result.reason}\n")
        return EXIT_ABORTED
    return 0
