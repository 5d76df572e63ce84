"""``ppdp publish METHOD``: release a private table (DP-PCA, DP-LDA, LDA-DP projections, baselines).

A thin layer over the publishers of :mod:`ppdp.publish`: build the publisher (its
parameters are validated before the data are read), check the budget, read the input,
``fit`` through the dataset's ledger (check, validate the data, spend, release), then write
the table and its guarantee atomically. Invalid input writes nothing and spends nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
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

METHODS = ("pca", "lda-synth", "lda-projection", "laplace", "exponential", "synth")
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


def build_publisher(
    method: str,
    *,
    epsilon: float,
    schema: Any,
    components: int | None,
    class_sizes: str,
    seed: int | None,
    delta: float | None = None,
    release: str | None = None,
    calibration: str | None = None,
    class_counts: str | None = None,
    allow_large_epsilon: bool = False,
    extra: dict[str, Any] | None = None,
) -> Any:
    """The publisher for ``method`` (parameters are validated when it is fitted).

    ``extra`` holds the method-specific options, keyed by the CLI flag; one given to a
    method that does not take it is refused in one line.
    """
    from ppdp.exceptions import ParameterError

    large = {"allow_large_epsilon": True} if allow_large_epsilon else {}
    takes = {
        "--mean-share": ("lda-projection", "mean_share"),
        "--projection-share": ("lda-projection", "projection_share"),
        "--ridge": ("lda-projection", "ridge"),
        "--keep-constant": ("lda-projection", "remove_constant"),
        "--count-share": ("lda-synth", "count_share"),
        "--no-clamp": ("pca", "clamp"),
        "--method": ("synth", "method"),
        "--bins": ("synth", "n_bins"),
    }
    options: dict[str, Any] = {}
    for flag, value in (extra or {}).items():
        owner, name = takes[flag]
        if value is None:
            continue
        if owner != method:
            raise ParameterError(f"{flag} ({value}) applies to {owner} only, not {method}")
        options[name] = value
    large = {**large, **options}

    if method == "lda-projection":
        from ppdp.publish.lda_projection import LDAProjectionPublisher

        if delta is None:
            raise ParameterError(
                "--delta (None) is required for lda-projection: a number in (0, 1), well below 1/n"
            )
        return LDAProjectionPublisher(
            epsilon,
            delta,
            schema,
            n_components=components,
            calibration=calibration or "gaussian",
            release=release or "noisy-projections",
            class_counts=_parse_counts(class_counts),
            random_state=seed,
            **large,
        )
    if method == "synth":
        from ppdp.publish.table_synth import TableSynthesizer

        if delta is not None:
            large = {**large, "delta": delta}
        return TableSynthesizer(epsilon, schema, random_state=seed, **large)
    for flag, value in (
        ("--delta", delta),
        ("--release", release),
        ("--calibration", calibration),
        ("--class-counts", class_counts),
    ):
        if value is not None:
            owners = "lda-projection and synth" if flag == "--delta" else "lda-projection"
            raise ParameterError(f"{flag} ({value}) applies to {owners} only, not {method}")

    if method == "pca":
        from ppdp.publish.pca import DPPCAPublisher

        if components is None:
            raise ParameterError("--components (None) is required for pca: choose k in advance")
        return DPPCAPublisher(epsilon, components, schema, random_state=seed, **large)
    if components is not None:
        raise ParameterError(
            f"--components ({components}) applies to pca and lda-projection only, not {method}"
        )
    if method == "lda-synth":
        from ppdp.publish.lda_synth import DPLDASynthesizer

        return DPLDASynthesizer(
            epsilon, schema, random_state=seed, class_sizes=class_sizes, **large
        )
    from ppdp.publish.baselines import ExponentialPublisher, LaplacePublisher

    cls = LaplacePublisher if method == "laplace" else ExponentialPublisher
    return cls(epsilon, schema, random_state=seed, **large)


#: A column with more than this share of its values clipped to the declared bounds warns.
CLIP_WARN_SHARE = 0.05


def encode_report(schema: Any, df: Any, *, on_invalid: str = "raise") -> Any:
    """The custodian's :class:`~ppdp.data.EncodeReport` of ``df`` (not logged, not released)."""
    from ppdp.data.encoding import encode

    return encode(schema, df, log=False, on_invalid=on_invalid)[2]  # type: ignore[arg-type]


def clipping_lines(schema: Any, report: Any) -> list[str]:
    """One line per numeric column: declared bounds, values clipped, their share."""
    n = max(int(report.n_rows), 1)
    lines = [f"  {'column':<20} {'declared bounds':<28} {'clipped':>9} {'share':>7}"]
    for col in schema.numeric_columns:
        k = int(report.clipped.get(col.name, 0))
        bounds = f"[{col.lower:g}, {col.upper:g}]"
        lines.append(f"  {col.name:<20} {bounds:<28} {k:>9,} {k / n:>7.1%}")
    return lines


def warn_clipping(schema: Any, report: Any, say: Any) -> None:
    """One warning line per column with more than 5 % of its values clipped (custodian-side)."""
    n = int(report.n_rows)
    if n < 1:
        return
    for col in schema.numeric_columns:
        k = int(report.clipped.get(col.name, 0))
        if k / n > CLIP_WARN_SHARE:
            say(
                f"warning: column {col.name!r}: {k:,} of {n:,} values ({k / n:.1%}) lie outside "
                f"the declared bounds [{col.lower:g}, {col.upper:g}] and were clipped; widen "
                "the bounds in the schema if they are public knowledge"
            )


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


def _after(acct: Any, charges: list[Any]) -> Any:
    """What the accountant would have left once ``charges`` are spent (None: refused)."""
    if acct is None:
        return None
    from ppdp.accounting.events import Composed

    events = tuple(e for c in charges for e in c.events)
    return acct.remaining_after(events[0] if len(events) == 1 else Composed(events=events))


def _ridge(text: str | None) -> float | str | None:
    """``--ridge``: ``auto`` or a number."""
    from ppdp.exceptions import ParameterError

    if text is None or text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"--ridge ({text!r}) must be 'auto' or a number >= 0") from None


def _parse_counts(text: str | None) -> list[int] | None:
    """``"34014,11208"`` -> ``[34014, 11208]``; None stays None."""
    from ppdp.exceptions import ParameterError

    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ParameterError(
            f"--class-counts ({text!r}) must be comma-separated integers, one per class"
        ) from None


def _lda_table(publisher: Any) -> Any:
    """The table to write for lda-projection: the projections, or the direction(s)."""
    import pandas as pd

    release = publisher.release_
    if release.data is not None:
        return release.data
    W = release.statistics["directions"]
    table = pd.DataFrame(W, columns=[f"lda_{j + 1}" for j in range(W.shape[1])])
    table.insert(0, "feature", list(publisher.schema.feature_names))
    return table


TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet")


def write_table(df: Any, path: Path, *, name: str | None = None) -> None:
    """Write ``df`` to ``path`` as CSV (gzip if ``name`` ends in .gz) or Parquet.

    ``name`` is the final file name (``path`` may be a temporary file whose name says
    nothing about the format); default ``path.name``.
    """
    from ppdp.exceptions import OptionalDependencyError

    low = (name or path.name).lower()
    if low.endswith(".parquet"):
        try:
            df.to_parquet(path, index=False)
        except ImportError as exc:
            raise OptionalDependencyError(
                "writing Parquet needs pyarrow: pip install 'ppdp[dask]'"
            ) from exc
    else:
        df.to_csv(path, index=False, compression="gzip" if low.endswith(".gz") else None)


def sidecar_for(out: Path) -> Path:
    """Where a release's guarantee goes: ``OUT.guarantee.json``."""
    return out.with_name(out.name + ".guarantee.json")


def _run(args: argparse.Namespace) -> int:
    import re
    import warnings

    from ppdp._io import atomic_paths, check_output, ledger_files, write_error
    from ppdp.accounting import Accountant, check_charges
    from ppdp.accounting._charge import refuse_released_retry
    from ppdp.data import Schema
    from ppdp.data.draft import read_table
    from ppdp.exceptions import InsecureRandomnessWarning, LowUtilityWarning

    out = Path(args.output)
    side = sidecar_for(out)
    # Every output check before anything is read or spent (DESIGN.md contract 6).
    check_output(
        out,
        suffixes=TABLE_SUFFIXES,
        sidecars=[("--output's guarantee file", side)],
        inputs=[("data", args.input), ("schema", args.schema), *ledger_files(args.ledger)],
        force=args.force,
    )
    refuse_seed_with_ledger(args.seed, args.ledger, args.allow_seeded)
    schema = Schema.from_file(args.schema)
    publisher = build_publisher(
        args.method,
        epsilon=args.epsilon,
        schema=schema,
        components=args.components,
        class_sizes=args.class_sizes,
        seed=args.seed,
        delta=args.delta,
        release=args.release,
        calibration=args.calibration,
        class_counts=args.class_counts,
        allow_large_epsilon=args.allow_large_epsilon,
        extra={
            "--mean-share": args.mean_share,
            "--projection-share": args.projection_share,
            "--ridge": _ridge(args.ridge),
            "--keep-constant": False if args.keep_constant else None,
            "--count-share": args.count_share,
            "--no-clamp": False if args.no_clamp else None,
            "--method": args.synth_method,
            "--bins": args.bins,
        },
    )
    cost = publisher.privacy_budget()  # validates every parameter before the data are read
    low = getattr(publisher, "low_utility_message", None)
    message = low() if low is not None else None
    if message:  # said before anything is spent, from public quantities
        _say(f"warning: LowUtilityWarning: {message}")
    acct = Accountant.open_existing(args.ledger) if args.ledger else None
    try:
        refuse_released_retry(acct, args.idempotency_key, out)
        if acct is not None:
            check_charges(
                acct,
                publisher._validate_params(),
                mechanism=type(publisher).__name__,
                idempotency_key=args.idempotency_key,
            )
        else:
            _say(f"warning: no --ledger given; the spend of {cost} is not recorded anywhere")
        _say(f"reading {args.input}")
        df = read_table(
            args.input,
            columns=schema.column_names,
            sep=table_separator(args.sep),
            encoding=args.encoding,
        )
        on_invalid = acct.on_invalid if acct is not None else "raise"
        if args.dry_run:
            _say(f"{len(df):,} rows; checking the data (dry run: nothing is spent)")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InsecureRandomnessWarning)
                if message:  # already said above as one line
                    warnings.filterwarnings("ignore", re.escape(message), LowUtilityWarning)
                charges = publisher._validate_params(len(df))
                publisher._encode(df, on_invalid=on_invalid)  # the checks fit runs
            report = encode_report(schema, df, on_invalid=on_invalid)
            warn_clipping(schema, report, _say)
            print_dry_run(
                what=f"publish {args.method}",
                charges=charges,
                schema=schema,
                report=report,
                remaining=acct.remaining if acct is not None else None,
                per_value=args.method == "laplace",
                after=_after(acct, charges),
            )
            return 0
        warn_clipping(schema, encode_report(schema, df, on_invalid=on_invalid), _say)
        _say(f"{len(df):,} rows; checking the data and releasing ({args.method}, {cost})")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureRandomnessWarning)
            if message:  # already said above as one line
                warnings.filterwarnings("ignore", re.escape(message), LowUtilityWarning)
            publisher.fit(
                df,
                accountant=acct,
                allow_seeded=args.allow_seeded,
                idempotency_key=args.idempotency_key,
            )
        total = ledger_total(acct) if acct is not None else ""
    finally:
        if acct is not None:
            acct.close()
    release = publisher.release_
    table = _lda_table(publisher) if args.method == "lda-projection" else release.data
    if table is None:  # pragma: no cover - every table publisher releases data
        raise RuntimeError(f"{args.method} released no table")
    sidecar = json.dumps(
        {
            "method": args.method,
            "guarantee": release.guarantee.to_dict(),
            "ledger": args.ledger,
            "ledger_indices": list(release.ledger_indices),
            "seeded": release.seeded,
            **(
                {
                    "directions": release.statistics["directions"].tolist(),
                    "features": list(publisher.schema.feature_names),
                    "row_scale": float(release.statistics["scale"][0]),
                }
                if args.method == "lda-projection"
                else {}
            ),
        },
        indent=2,
        ensure_ascii=False,
        allow_nan=False,
    )
    _say(f"writing {out}")
    try:
        with atomic_paths(side, out) as (tmp_side, tmp_out):
            tmp_side.write_text(sidecar, encoding="utf-8")
            write_table(table, tmp_out, name=out.name)
    except OSError as exc:
        raise write_error(exc, out, charged=_charged(args.ledger, release, cost)) from exc
    print(f"released {len(table):,} rows to {out}")
    print_guarantee(release.guarantee, verbose=args.verbose, full_in=side)
    if args.ledger:
        print(f"charged in {args.ledger} ({ledger_entries(release.ledger_indices)}); {total}")
    if release.seeded:
        print(
            "note: --seed was given, so the noise is reproducible and NOT fit for a real release"
            + (" (--allow-seeded is recorded in the ledger)" if args.ledger else "")
        )
    return 0


def _charged(ledger: str | None, release: Any, cost: Any) -> str:
    if ledger is None:
        return f"{cost}, recorded nowhere: no --ledger"
    return f"{cost} in {ledger}, entries {', '.join(map(str, release.ledger_indices))}"
