"""``ppdp budget init|show LEDGER``: thin layers over :mod:`ppdp.accounting.files`."""

from __future__ import annotations

import argparse
import json

from ppdp.cli import _common as c

_SHOW = (
    "Verify the ledger, then print its dataset, relation, composition, total, spent, remaining, "
    "a table of spends with each one's event and the running composed (ε, δ), and how many more "
    "releases like the last one still fit (with -v, every fact recorded with each spend). Exit 1 "
    "if the ledger fails verification."
)
_INIT = (
    "Create a privacy-budget ledger for one dataset, with its total budget and neighbouring "
    "relation pinned in the signed genesis entry (a signing key is written beside it as "
    "LEDGER.key, mode 0600). Refuses to touch an existing ledger, and to create one for a "
    "dataset id that has an anchor on record ('ppdp ledger anchor')."
)
# fmt: off
_SHOW_FLAGS: tuple[c.Flag, ...] = (
    ("ledger", {"metavar": "LEDGER"}, "the budget ledger file"), c.CHECKPOINT,
    ("--anchor", {"metavar": "ANCHOR", "default": None},
     "an anchor line printed by 'ppdp ledger anchor' (or a file holding it) that the ledger "
     "must extend"),
    c.JSON,
)
_INIT_FLAGS: tuple[c.Flag, ...] = (
    ("ledger", {"metavar": "LEDGER"}, "the budget ledger file to create"),
    ("--dataset-id", {"required": True}, "the dataset's identifier"),
    ("--epsilon", {"type": float, "required": True}, "total ε of the dataset"),
    ("--delta", {"type": float, "default": 0.0}, "total δ of the dataset"),
    ("--relation", {"default": "replace-one", "choices": ("replace-one", "add/remove")},
     "neighbouring relation every release must be charged under"),
    ("--composition", {"default": "basic", "choices": ("basic", "pld", "rdp")},
     "how spends compose: basic adds ε and δ; pld (privacy loss distributions) and rdp (Rényi "
     "DP) compose the recorded events tightly (needs pip install 'ppdp[tight]', and --delta > "
     "0: the total is then an (ε, δ) target). Pinned for good"),
    ("--anchor", {"metavar": "ANCHOR", "default": None},
     "an anchor of this dataset's ledger: if given, init refuses (the anchored ledger must be "
     "restored, not replaced); an anchor on record for the dataset id in the anchor registry "
     "refuses it too"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``budget`` and its actions to the ``ppdp`` parser."""
    what = "Inspect a privacy-budget ledger (verified before anything is read)."
    short = "show a dataset's privacy budget ledger"
    actions = c.group(subparsers, "budget", short, what, "budget_action")
    short = "totals, what remains, and every spend"
    c.command(actions, "show", short, _SHOW, *_SHOW_FLAGS, func=_show)
    short = "create a dataset's budget ledger"
    c.command(actions, "init", short, _INIT, *_INIT_FLAGS, func=_init)


def _init(args: argparse.Namespace) -> int:
    from ppdp.accounting.files import init_budget_ledger

    keys = "dataset_id epsilon delta relation composition anchor"
    print(init_budget_ledger(args.ledger, **c.pick(args, keys)))
    return 0


def _show(args: argparse.Namespace) -> int:
    from ppdp.accounting import budget_report
    from ppdp.accounting.files import format_budget_report

    report = budget_report(args.ledger, checkpoint=args.checkpoint, anchor=args.anchor)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(format_budget_report(report, verbose=bool(args.verbose)))
    return 0
