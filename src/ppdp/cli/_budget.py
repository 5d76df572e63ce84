"""``ppdp budget init|show LEDGER``: thin layers over :mod:`ppdp.accounting.files`."""

from __future__ import annotations

import argparse
import json

from ppdp.cli import _common as c

_SHOW = (
    "Verify the ledger, then print its totals, what remains, every spend with the running "
    "composed (ε, δ), and how many more releases like the last one fit. Exit 1 if the ledger "
    "fails verification."
)
_INIT = (
    "Create a dataset's privacy-budget ledger, its total budget and neighbouring relation pinned "
    "in the signed genesis entry (key written as LEDGER.key, mode 0600); never over an existing "
    "ledger or an anchored dataset id."
)
# fmt: off
_SHOW_FLAGS: tuple[c.Flag, ...] = (
    ("ledger", {"metavar": "LEDGER"}, "the budget ledger file"), c.CHECKPOINT,
    ("--anchor", {"metavar": "ANCHOR", "default": None},
     "an anchor line from 'ppdp ledger anchor' (or its file) that the ledger must extend"),
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
     "how spends compose, pinned for good: basic adds ε and δ; pld and rdp are tight (need "
     "ppdp[tight] and --delta > 0)"),
    ("--anchor", {"metavar": "ANCHOR", "default": None},
     "an anchor of this dataset's ledger: init then refuses (restore that ledger instead)"),
    ("--allow-large-epsilon", {"action": "store_true"},
     "accept a total epsilon above 10 (a weak guarantee: tell whoever reads the releases)"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``budget`` and its actions to the ``ppdp`` parser."""
    short = "create or show a dataset's privacy-budget ledger"
    actions = c.group(subparsers, "budget", short, None, "budget_action")
    short = "totals, what remains, and every spend"
    c.command(actions, "show", short, _SHOW, *_SHOW_FLAGS, func=_show)
    short = "create a dataset's budget ledger"
    c.command(actions, "init", short, _INIT, *_INIT_FLAGS, func=_init)


def _init(args: argparse.Namespace) -> int:
    from ppdp.accounting.files import init_budget_ledger

    keys = "dataset_id epsilon delta relation composition anchor allow_large_epsilon"
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
