"""``ppdp budget init|show LEDGER``: create a budget ledger; show its totals and spends."""

from __future__ import annotations

import argparse
import json

from ppdp.accounting import BudgetReport, budget_report, last_release_records
from ppdp.budget import PrivacyBudget


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``budget`` and its actions to the ``ppdp`` parser."""
    parser = subparsers.add_parser(
        "budget",
        help="show a dataset's privacy budget ledger",
        description="Inspect a privacy-budget ledger (verified before anything is read).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    actions = parser.add_subparsers(dest="budget_action", metavar="ACTION")
    actions.required = True
    show = actions.add_parser(
        "show",
        help="totals, what remains, and every spend",
        description="Verify the ledger, then print its dataset, relation, composition, total, "
        "spent, remaining, a table of spends with each one's event and the running composed "
        "(ε, δ), and how many more releases like the last one still fit (with -v, every fact "
        "recorded with each spend). Exit 1 if the ledger fails verification.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    show.add_argument("ledger", metavar="LEDGER", help="the budget ledger file")
    show.add_argument(
        "--checkpoint",
        metavar="FILE",
        default=None,
        help="a checkpoint kept elsewhere that the ledger must extend",
    )
    show.add_argument(
        "--anchor",
        metavar="ANCHOR",
        default=None,
        help="an anchor line printed by 'ppdp ledger anchor' (or a file holding it) that the "
        "ledger must extend",
    )
    show.add_argument("--json", action="store_true", help="print JSON instead of text")
    show.set_defaults(func=_show)
    init = actions.add_parser(
        "init",
        help="create a dataset's budget ledger",
        description="Create a privacy-budget ledger for one dataset, with its total budget and "
        "neighbouring relation pinned in the signed genesis entry (a signing key is written "
        "beside it as LEDGER.key, mode 0600). Refuses to touch an existing ledger, and to "
        "create one for a dataset id that has an anchor on record ('ppdp ledger anchor').",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    init.add_argument("ledger", metavar="LEDGER", help="the budget ledger file to create")
    init.add_argument("--dataset-id", required=True, help="the dataset's identifier")
    init.add_argument("--epsilon", type=float, required=True, help="total ε of the dataset")
    init.add_argument("--delta", type=float, default=0.0, help="total δ of the dataset")
    init.add_argument(
        "--relation",
        default="replace-one",
        choices=("replace-one", "add/remove"),
        help="neighbouring relation every release must be charged under",
    )
    init.add_argument(
        "--composition",
        default="basic",
        choices=("basic", "pld", "rdp"),
        help="how spends compose: basic adds ε and δ; pld (privacy loss distributions) and "
        "rdp (Rényi DP) compose the recorded events tightly (needs pip install "
        "'ppdp[tight]', and --delta > 0: the total is then an (ε, δ) target). Pinned for good",
    )
    init.add_argument(
        "--anchor",
        metavar="ANCHOR",
        default=None,
        help="an anchor of this dataset's ledger: if given, init refuses (the anchored "
        "ledger must be restored, not replaced); an anchor on record for the dataset id in "
        "the anchor registry refuses it too",
    )
    init.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ppdp.accounting import Accountant
    from ppdp.exceptions import ParameterError

    path = Path(args.ledger)
    if path.exists():
        raise ParameterError(f"ledger ({path}) already exists; a budget is never re-initialised")
    total = PrivacyBudget(args.epsilon, args.delta)
    with Accountant.open(
        path,
        dataset_id=args.dataset_id,
        total=total,
        relation=args.relation,
        anchor=args.anchor,
        composition=args.composition,
    ) as acct:
        how = "" if acct.composition == "basic" else f", {acct.composition} composition"
        print(
            f"created budget ledger {path} for dataset {acct.dataset_id!r}: total {acct.total}, "
            f"{acct.relation.value}{how}"
        )
    return 0


def _show(args: argparse.Namespace) -> int:
    report = budget_report(args.ledger, checkpoint=args.checkpoint, anchor=args.anchor)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(format_report(report, verbose=bool(args.verbose)))
    return 0


def _budget(b: PrivacyBudget) -> str:
    return f"ε={b.epsilon!r}, δ={b.delta!r}"


def _fact(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def format_report(report: BudgetReport, *, verbose: bool = False) -> str:
    """The text ``ppdp budget show`` prints (``verbose``: each spend's recorded facts too)."""
    v = report.verification
    lines = [
        f"ledger:    {report.path} (verified: {v.length} entries, head {v.head_hash[:16]}…)",
        f"dataset:   {report.dataset_id}",
        f"relation:  {report.relation.value} ({report.composition} composition)",
        f"total:     {_budget(report.total)}",
    ]
    if report.composition == "basic":
        lines += [f"spent:     {_budget(report.spent)}", f"remaining: {_budget(report.remaining)}"]
    else:  # a composed ε at the target δ: not a sum, so the headroom is not additive either
        lines += [
            f"spent:     ε={report.spent.epsilon:.6g} at δ={report.total.delta!r} "
            f"(every spend composed, {report.composition})",
            f"remaining: ε={report.remaining.epsilon:.6g} of headroom at δ="
            f"{report.total.delta!r} (whether a release fits is decided by composing it)",
        ]
    lines.append("")
    if not report.spends:
        lines.append("no spends yet")
        return "\n".join(lines)
    running = list(report.running) or [report.spent] * len(report.spends)
    # under PLD/RDP the columns are each event's own (ε, δ), not what it added to the total
    head = ("ε", "δ") if report.composition == "basic" else ("event ε", "event δ")
    rows = [("index", "time", "mechanism", *head, "seeded")]
    rows += [
        (
            str(s.index),
            s.time,
            s.mechanism,
            repr(s.epsilon),
            repr(s.delta),
            "yes" if s.seeded else "no",
        )
        for s in report.spends
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, r in enumerate(rows):
        cells = [r[0].rjust(widths[0])] + [
            c.ljust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if i > 0:
            spend = report.spends[i - 1]
            pad = " " * (widths[0] + 2)
            if verbose and spend.details:
                facts = spend.details
                lines.append(pad + "; ".join(f"{k}: {_fact(v)}" for k, v in facts.items()))
            if spend.event is not None:
                r = running[i - 1]
                lines.append(
                    f"{pad}event: {spend.event.describe()}; total so far "
                    f"({report.composition}): ε={r.epsilon:.6g}, δ={r.delta:.3g}"
                )
    lines.append(f"{len(report.spends)} spends")
    if report.could_still_release is not None:
        last = last_release_records(report.spends)
        count = report.could_still_release
        more = f"{count:,}" if count < 100_000 else "at least 100,000"
        what = (
            f"entry {last[0].index}: {last[0].mechanism}"
            if len(last) == 1
            else f"entries {last[0].index}-{last[-1].index}"
        )
        lines.append(
            f"what you could still release: {more} more like the last release ({what}) "
            f"under {report.composition} composition"
        )
    return "\n".join(lines)
