"""``ppdp publish METHOD``: release a private table (DP-PCA, DP-LDA, LDA-DP projections, baselines).

Parses the arguments and prints; :func:`ppdp.publish.files.publish_table_file` does the
work (build the registered publisher, check the budget, read the input, ``fit`` through the
dataset's ledger, write the table and its guarantee atomically). Invalid input writes
nothing and spends nothing.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ppdp.cli._common import (
    add_seed_and_force_flags,
    add_table_flags,
    ledger_entries,
    ledger_total,
    print_guarantee,
    refuse_seed_with_ledger,
    table_separator,
)
from ppdp.registry import PUBLISHERS

METHODS = PUBLISHERS.names()
#: Models of ``synth`` (TableSynthesizer's ``method``).
SYNTH_METHODS = ("auto", "tree", "pairs")
#: Releases of ``lda-projection`` (LDAProjectionPublisher's ``release``).
LDA_RELEASES = ("noisy-projections", "direction", "raw-projections")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``publish`` to the ``ppdp`` parser."""
    parser = subparsers.add_parser(
        "publish",
        help="release a private table (DP-PCA, DP-LDA synthetic data, LDA-DP, baselines)",
        description="Release a differentially private version of a table declared by a schema. "
        "pca: DP-PCA (one row per input row, order kept; Jiang et al. 2013); lda-synth: "
        "synthetic labelled rows from noisy class statistics (DP-LDA); lda-projection: a noisy "
        "Fisher discriminant and (by default) noisy projections of every row on it (LDA-DP, "
        "Gu et al. 2022; needs --delta and public class counts); laplace, exponential: the "
        "per-record baselines; synth: synthetic rows from noisy marginals under zCDP "
        "(TableSynthesizer, (ε, δ)-DP). The spend is checked against and recorded in --ledger "
        "before anything is released; invalid input writes nothing and spends nothing.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("method", choices=METHODS, help="the publishing method")
    parser.add_argument("input", metavar="IN", help="the private table (.csv, .csv.gz, .parquet)")
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the release (.csv or .parquet); its guarantee goes to OUT.guarantee.json",
    )
    parser.add_argument("--schema", required=True, metavar="S", help="the schema (.json, .yaml)")
    parser.add_argument("--epsilon", type=float, required=True, help="ε spent by this release")
    parser.add_argument(
        "--components",
        type=int,
        default=None,
        metavar="K",
        help="pca: number of principal components (fix it in advance); lda-projection: number "
        "of discriminant directions (default K - 1)",
    )
    parser.add_argument(
        "--class-sizes",
        choices=("public", "noisy"),
        default="noisy",
        help="lda-synth: use the schema's declared public class counts, or "
        "release noisy ones from the budget",
    )
    parser.add_argument(
        "--delta",
        type=float,
        default=None,
        help="δ spent by this release (lda-projection: required; synth: default 1e-9)",
    )
    parser.add_argument(
        "--release",
        choices=LDA_RELEASES,
        default=None,
        help="lda-projection: noisy projections of every row (default), the direction only, or "
        "the paper's exact projections (NOT differentially private for the rows)",
    )
    parser.add_argument(
        "--calibration",
        choices=("gaussian", "paper"),
        default=None,
        help="lda-projection: analytic Gaussian noise (default) or the paper's MOD-SULQ template",
    )
    parser.add_argument(
        "--class-counts",
        default=None,
        metavar="N1,N2,...",
        help="lda-projection: the public class sizes, in the label's class order (default: the "
        "schema's declared public_counts); declaring them public is an assumption of the "
        "guarantee",
    )
    parser.add_argument(
        "--mean-share",
        type=float,
        default=None,
        help="lda-projection: share of the direction's (ε, δ) spent on the class sums",
    )
    parser.add_argument(
        "--projection-share",
        type=float,
        default=None,
        help="lda-projection: share of ε spent on the per-row noise of noisy projections",
    )
    parser.add_argument(
        "--ridge",
        default=None,
        metavar="LAMBDA|auto",
        help="lda-projection: ridge added to the noisy scatter (auto: from ε, δ, p, counts)",
    )
    parser.add_argument(
        "--keep-constant",
        action="store_true",
        help="lda-projection: keep the one-hot blocks' constant directions (removed by default)",
    )
    parser.add_argument(
        "--count-share",
        type=float,
        default=None,
        help="lda-synth: share of ε for the noisy class histogram (--class-sizes noisy)",
    )
    parser.add_argument(
        "--method",
        dest="synth_method",
        choices=SYNTH_METHODS,
        default=None,
        help="synth: the model (auto: pairs for small domains such as 16 binary items, else tree)",
    )
    parser.add_argument(
        "--bins",
        type=int,
        default=None,
        metavar="B",
        help="synth: equal-width bins per numeric column over its declared bounds (default 16)",
    )
    parser.add_argument(
        "--no-clamp",
        action="store_true",
        help="pca: leave the encoded release unclamped (the decoded table is clipped anyway)",
    )
    parser.add_argument(
        "--ledger",
        metavar="L",
        default=None,
        help="the dataset's budget ledger (create one with 'ppdp budget init')",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="reproducible noise for experiments (NOT for real releases); refused with "
        "--ledger unless --allow-seeded",
    )
    add_seed_and_force_flags(parser)
    add_idempotency_flag(parser)
    add_table_flags(parser)
    parser.add_argument(
        "--allow-large-epsilon",
        action="store_true",
        help="accept epsilon above 10 (a weak guarantee: say so to whoever reads the release)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="read and validate everything, print the planned charges, noise scales and the "
        "share of values the bounds clip, then stop: nothing is spent or written",
    )
    parser.set_defaults(func=_run)


def add_idempotency_flag(parser: argparse.ArgumentParser) -> None:
    """``--idempotency-key``, shared by ``ppdp publish`` and ``ppdp train``."""
    parser.add_argument(
        "--idempotency-key",
        default=None,
        metavar="KEY",
        help="a key unique to this release request: a retried run with the same key is not "
        "charged again (its output was never written: the write is atomic). Use a fresh key "
        "for every new release",
    )


def _say(message: str) -> None:
    sys.stderr.write(f"ppdp publish: {message}\n")
    sys.stderr.flush()


def encode_report(schema: Any, df: Any, *, on_invalid: str = "raise") -> Any:
    """The custodian's encoding report (see :func:`ppdp.publish.files.encode_report`)."""
    from ppdp.publish.files import encode_report as report

    return report(schema, df, on_invalid=on_invalid)


def clipping_lines(schema: Any, report: Any) -> list[str]:
    """One line per numeric column: declared bounds, values clipped, their share."""
    n = max(int(report.n_rows), 1)
    lines = [f"  {'column':<20} {'declared bounds':<28} {'clipped':>9} {'share':>7}"]
    for col in schema.numeric_columns:
        k = int(report.clipped.get(col.name, 0))
        bounds = f"[{col.lower:g}, {col.upper:g}]"
        lines.append(f"  {col.name:<20} {bounds:<28} {k:>9,} {k / n:>7.1%}")
    return lines


def charge_lines(charges: list[Any], *, schema: Any = None, per_value: bool = False) -> list[str]:
    """The planned ledger entries and the noise each one adds, in words.

    ``charges`` hold ``budget``, ``mechanism`` and ``details`` (a publisher's
    :class:`~ppdp.publish._base.Charge` or a learner's ``Plan``). ``per_value``: the Laplace
    noise is added to each encoded value of the table (the ``laplace`` baseline), so its
    scale times a numeric column's declared range is that column's expected absolute error
    before clipping.
    """
    lines: list[str] = []
    for i, charge in enumerate(charges, 1):
        b = charge.budget
        lines.append(
            f"  {i}. {charge.mechanism}: epsilon = {b.epsilon:.10g}, delta = {b.delta:.10g}"
        )
        d = charge.details
        if "noise_scale" in d:
            if d.get("norm") == "l2":
                lines.append(
                    f"     Gaussian noise, standard deviation sigma = {d['noise_scale']:.4g} per "
                    f"released value (expected absolute error sigma*sqrt(2/pi) = "
                    f"{d['noise_scale'] * 0.7978845608:.4g}, in {d.get('units', 'encoded units')})"
                )
            else:
                lines.append(
                    f"     Laplace noise, scale b = {d['noise_scale']:.4g} per released value "
                    "(expected absolute error b, in encoded units)"
                )
                if per_value and schema is not None:
                    for col in schema.numeric_columns:
                        r = col.upper - col.lower
                        lines.append(
                            f"       {col.name}: b x declared range {r:g} = "
                            f"{d['noise_scale'] * r:.4g} expected absolute error before "
                            "clipping, in the column's units"
                        )
        if not any(k in d for k in ("noise_scale", "scatter_sigma", "noise_norm_scale")):
            lines.append(
                "     no per-value noise scale to state: the noise is drawn inside the "
                "mechanism (e.g. a perturbed objective); the ledger entry gives its details"
            )
        for key in ("scatter_sigma", "mean_sigmas", "noise_norm_scale"):
            if key in d:
                v = d[key]
                text = ", ".join(f"{x:.4g}" for x in v) if isinstance(v, list) else f"{v:.4g}"
                what = {
                    "scatter_sigma": "Gaussian sigma on each entry of the second-moment matrix",
                    "mean_sigmas": "Gaussian sigma on each class mean (the class-sum sigma "
                    "divided by the public class size), per class",
                    "noise_norm_scale": "scale of the noise vector's norm (Gamma(d, scale))",
                }[key]
                lines.append(f"     {what}: {text} (encoded units)")
    return lines


def print_dry_run(
    *,
    what: str,
    charges: list[Any],
    schema: Any,
    report: Any,
    remaining: Any,
    per_value: bool,
    after: Any = "subtract",
) -> None:
    """The ``--dry-run`` summary on stdout."""
    from ppdp.budget import PrivacyBudget

    total = PrivacyBudget(0.0)
    for c in charges:
        total = total + c.budget
    print(f"dry run of {what} on {report.n_rows:,} rows: nothing was spent or written")
    print(
        f"would charge {total} in {len(charges)} ledger entr{'y' if len(charges) == 1 else 'ies'}:"
    )
    for line in charge_lines(charges, schema=schema, per_value=per_value):
        print(line)
    if remaining is not None:
        # ``after``: the accountant's own answer (it composes under PLD / RDP; None: the
        # release would not fit); the default subtracts, as basic composition does
        left = remaining - total if after == "subtract" else after
        print(
            f"the ledger has {remaining} left; after this release: "
            + ("it does not fit (the real run is refused)" if left is None else f"{left}")
        )
    else:
        print("no --ledger given: the real run would record the spend nowhere")
    print("values clipped to the declared bounds (custodian only, not released):")
    for line in clipping_lines(schema, report):
        print(line)


def _ridge(text: str | None) -> float | str | None:
    """``--ridge``: ``auto`` or a number."""
    from ppdp.exceptions import ParameterError

    if text is None or text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"--ridge ({text!r}) must be 'auto' or a number >= 0") from None


def _run(args: argparse.Namespace) -> int:
    from ppdp.publish.files import publish_table_file

    refuse_seed_with_ledger(args.seed, args.ledger, args.allow_seeded)
    result = publish_table_file(
        args.method,
        args.input,
        schema=args.schema,
        output=args.output,
        epsilon=args.epsilon,
        options={
            "--mean-share": args.mean_share,
            "--projection-share": args.projection_share,
            "--ridge": _ridge(args.ridge),
            "--keep-constant": False if args.keep_constant else None,
            "--count-share": args.count_share,
            "--no-clamp": False if args.no_clamp else None,
            "--method": args.synth_method,
            "--bins": args.bins,
            "--delta": args.delta,
            "--release": args.release,
            "--calibration": args.calibration,
            "--class-counts": args.class_counts,
            "--components": args.components,
            "--class-sizes": args.class_sizes,
        },
        ledger=args.ledger,
        random_state=args.seed,
        allow_seeded=args.allow_seeded,
        allow_large_epsilon=args.allow_large_epsilon,
        idempotency_key=args.idempotency_key,
        force=args.force,
        sep=table_separator(args.sep),
        encoding=args.encoding,
        dry_run=args.dry_run,
        say=_say,
    )
    if result.dry_run:
        print_dry_run(
            what=f"publish {args.method}",
            charges=result.charges,
            schema=result.publisher.schema,
            report=result.report,
            remaining=result.ledger.remaining if result.ledger is not None else None,
            per_value=args.method == "laplace",
            after=result.after,
        )
        return 0
    release = result.release
    print(f"released {len(result.table):,} rows to {result.path}")
    print_guarantee(release.guarantee, verbose=args.verbose, full_in=result.sidecar)
    if result.ledger is not None:
        total = ledger_total(result.ledger)
        print(f"charged in {args.ledger} ({ledger_entries(release.ledger_indices)}); {total}")
    if release.seeded:
        print(
            "note: --seed was given, so the noise is reproducible and NOT fit for a real release"
            + (" (--allow-seeded is recorded in the ledger)" if args.ledger else "")
        )
    return 0
