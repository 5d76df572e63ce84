"""Planned charges in words: what a dry run of ``ppdp publish`` or ``ppdp train`` prints.

:func:`charge_lines` states each planned ledger entry and the noise it adds;
:func:`dry_run_lines` is the whole ``--dry-run`` summary (what would be charged, what the
ledger would have left, and the share of values the declared bounds clip).

Examples
--------
>>> from types import SimpleNamespace
>>> from ppdp.budget import PrivacyBudget
>>> from ppdp.accounting.plan import charge_lines
>>> charge = SimpleNamespace(budget=PrivacyBudget(1.0), mechanism="Laplace",
...                          details={"noise_scale": 2.0})
>>> charge_lines([charge])[0]
'  1. Laplace: epsilon = 1, delta = 0'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["charge_lines", "dry_run_lines", "group_mean_error", "group_mean_errors"]

#: Group sizes at which a group mean's error is stated (a group's size is private).
GROUP_SIZES = (100, 1_000, 10_000)


def _stated_sizes(count_sd: float) -> list[int]:
    """The group sizes a mean's error is stated at: those of :data:`GROUP_SIZES` where the
    first order holds (``rows ≥ 5 count_sd``), led by the smallest round size (1, 2, 3 or 5
    times a power of ten) where it holds when the first of them does not, so that a
    table whose groups hold a few hundred rows (a count noise of 45: 300 rows) reads its own
    size, not 1,000 rows only."""
    floor = 5 * count_sd
    sizes = [n for n in GROUP_SIZES if n >= floor]
    if floor <= GROUP_SIZES[0]:
        return sizes
    power = 10 ** math.floor(math.log10(floor))
    lead = next(m * power for m in (1, 2, 3, 5, 10) if m * power >= floor)
    return sorted({lead, *sizes})


#: Noise parameters a charge's details may state, and what each one is.
_OTHER_SCALES = {
    "scatter_sigma": "Gaussian sigma on each entry of the second-moment matrix",
    "mean_sigmas": "Gaussian sigma on each class mean (the class-sum sigma divided by the "
    "public class size), per class",
    "noise_norm_scale": "scale of the noise vector's norm (Gamma(d, scale))",
}


def _scale_lines(d: dict[str, Any], schema: Any, per_value: bool) -> list[str]:
    """The per-value noise of one charge (``noise_scale``), in words."""
    if d.get("norm") == "l2":
        lines = [
            f"     Gaussian noise, standard deviation sigma = {d['noise_scale']:.4g} per "
            f"released value (expected absolute error sigma*sqrt(2/pi) = "
            f"{d['noise_scale'] * 0.7978845608:.4g}, in {d.get('units', 'encoded units')})"
        ]
        if d.get("edge_tables"):  # TableSynthesizer's second round: its own sigma
            first = f"per cell of the {d['first_round_tables']} first-round tables"
            lines[0] = lines[0].replace("per released value", first)
            lines.append(
                f"     and sigma = {d['sigma_edge_tables']:.4g} per cell of the "
                f"{d['edge_tables']} edge tables (chosen by {d['edge_selections']} "
                f"exponential-mechanism selections at epsilon {d['epsilon_per_selection']:.4g})"
            )
            if d.get("pair_tables") in ("both", "unlabelled", "auto"):  # pair_tables
                lines[-1] += (
                    "; an edge table may be a pair table without the label, on compressed "
                    f"levels (pair_tables {d['pair_tables']})"
                )
                if d["pair_tables"] == "auto":
                    lines[-1] += (
                        f", where the table has at least {d['unlabelled_min_rows']} rows "
                        "(round 1's noisy count where n is private)"
                    )
        if d.get("quantile_histograms"):  # TableSynthesizer's private-quantile binning
            lines.append(
                f"     and sigma = {d['sigma_quantile_histograms']:.4g} per cell of the "
                f"{d['quantile_histograms']} histograms ({d['quantile_bins']}) that place "
                "the numeric columns' cut points (binning private-quantiles)"
            )
        if d.get("decode_histograms"):  # TableSynthesizer's decode="sub-bins"
            lines.append(
                f"     and sigma = {d['sigma_decode_histograms']:.4g} per cell of the "
                f"{d['decode_histograms']} histograms ({d['decode_bins']}) that values are "
                "drawn by within their bins (decode sub-bins)"
            )
        check = d.get("pair_check")
        if isinstance(check, dict):  # TableSynthesizer's pair check
            lines.append(
                f"     and {check['pairs']} pair-check round(s) ({check['rho_share']:.0%} of "
                f"rho): an exponential-mechanism choice at epsilon "
                f"{check['epsilon_per_selection']:.4g} of the off-tree pair the model misses "
                f"most, then its L1 residual with sigma = {check['sigma_residual']:.4g}"
            )
        if d.get("second_parent_tables"):  # TableSynthesizer's extra_parents
            lines.append(
                f"     and sigma = {d['sigma_second_parent']:.4g} per cell of up to "
                f"{d['second_parent_tables']} pair table(s) that give a column a second "
                "parent (measured only where the pair check's noisy residual shows the pair "
                "above the noise; the share of those not measured measures the edge tables "
                "again)"
            )
        persons = d.get("persons")
        if isinstance(persons, dict) and isinstance(persons.get("person_model"), dict):
            model = persons["person_model"]  # TableSynthesizer's synthetic persons
            lines.append(
                f"     and {persons['rho_share']:.0%} of rho for synthetic persons: sigma = "
                f"{model['noise_scale']:.4g} per cell of the {model['first_round_tables']} "
                "tables of a person table (one row per person), and sigma = "
                f"{persons['sigma_rows_per_person_histogram']:.4g} per cell of the "
                "rows-per-person histogram"
            )
        return lines
    if d.get("noise") == "discrete-laplace":
        # Integers (counts, or sums in fixed steps of a range): the scale in their units, and
        # in the column's own where the charge gives it (groupby's sums).
        b, units = d["noise_scale"], d.get("units", "units of the value")
        if "noise_scale_in_column_units" in d:
            b, units = d["noise_scale_in_column_units"], "the column's units"
        lines = [
            f"     discrete Laplace noise, scale b = {b:.4g} per released value, standard "
            f"deviation about {b * math.sqrt(2):.4g}, in {units}"
        ]
        return lines + (_mean_error_lines(d) if "mean_error" in d else [])
    if d.get("noise") == "exponential-mechanism":
        b = d["noise_scale"]
        # The largest expected error is at a bound: an exponential of mean b cut at 1.
        worst = b - 1.0 / math.expm1(1.0 / b) if b > 0.01 else b
        return [
            f"     exponential mechanism per record, utility -L1 distance (sensitivity "
            f"{d['sensitivity']:.4g}): each encoded value drawn from a Laplace density of "
            f"scale b = {b:.4g} around it, truncated to [0, 1] (expected absolute error at "
            f"most {worst:.4g}, in encoded units)"
        ]
    lines = [
        f"     Laplace noise, scale b = {d['noise_scale']:.4g} per released value "
        "(expected absolute error b, in encoded units)"
    ]
    if (per_value or d.get("noise_per_value")) and schema is not None:
        for col in schema.numeric_columns:
            r = col.upper - col.lower
            if col.scale == "log":
                # Encoded units are log1p(v - lower) / log1p(r): the error is a factor.
                e = d["noise_scale"] * math.log1p(r)
                lines.append(
                    f"       {col.name} (scale log): b x log1p(declared range {r:g}) = "
                    f"{e:.4g} expected absolute error of log1p(value - lower) before "
                    f"clipping, a factor of about {math.exp(e):.4g} on 1 + value - lower"
                )
                continue
            lines.append(
                f"       {col.name}: b x declared range {r:g} = {d['noise_scale'] * r:.4g} "
                "expected absolute error before clipping, in "
                + ("days (a date column)" if getattr(col, "date", False) else "the column's units")
            )
    return lines


def group_mean_error(
    *, sum_sd: float, count_sd: float, half_range: float, rows: float, offset: float | None = None
) -> float:
    """The expected error (root mean square) of a group's released mean over ``rows`` rows.

    The mean released is ``c + (S + Z_s) / (n + Z_n)``: a noisy centred sum over a noisy
    count, ``c`` the midpoint of the declared bounds. To first order in the noise,
    its error is ``(Z_s − (μ − c) Z_n) / n``, of standard deviation
    ``sqrt(sum_sd² + (μ − c)² count_sd²) / n``. The true mean ``μ`` is private, so the
    default ``offset = |μ − c|`` is its largest, ``half_range``: the error stated is at most
    the true one, to first order. Every input is public (the noise laws and the bounds).

    Parameters
    ----------
    sum_sd, count_sd : float
        Standard deviations of the noise of a group's sum (in the column's units) and of
        its count (in rows).
    half_range : float
        Half the column's declared range.
    rows : float
        The group's size (private: state the error for sizes the reader expects).
    offset : float, optional
        ``|μ − c|``, the distance of the true mean from the midpoint; default its largest,
        ``half_range``.

    Notes
    -----
    First order: meant for groups whose count noise is small beside ``rows`` (the dry
    run states it for ``rows ≥ 5 count_sd`` only); checked against a simulation of the
    release in ``tests/accounting/test_group_mean_error.py``. The release clamps the mean
    to the declared bounds, which only shrinks the error.
    """
    d = half_range if offset is None else offset
    return math.sqrt(sum_sd**2 + (d * count_sd) ** 2) / rows


def group_mean_errors(charges: Sequence[Any]) -> dict[str, list[tuple[int, float, float]]]:
    """Per column of a group-by's means, ``(rows, low, high)``: a group mean's expected
    error (:func:`group_mean_error`) over ``rows`` rows when the true mean is at the
    midpoint of the declared bounds (``low``) and at a bound (``high``, the most), at the
    sizes of :data:`GROUP_SIZES` where the first order holds (``rows ≥ 5 count_sd``), led
    by the smallest round size where it holds (:func:`_stated_sizes`); from the charges'
    ``mean_error`` details, public quantities only."""
    out: dict[str, list[tuple[int, float, float]]] = {}
    for charge in charges:
        e = charge.details.get("mean_error")
        if not isinstance(e, dict):
            continue
        sizes = _stated_sizes(e["count_sd"])
        terms = {k: e[k] for k in ("sum_sd", "count_sd", "half_range")}
        out[e["column"]] = [
            (n, group_mean_error(**terms, rows=n, offset=0.0), group_mean_error(**terms, rows=n))
            for n in sizes
        ]
    return out


def _mean_error_lines(d: dict[str, Any]) -> list[str]:
    """A group-by's mean of one column: its expected error by group size, in words."""
    ((column, errors),) = group_mean_errors([_Details(d)]).items()
    said = [f"{n:,} rows ±{lo:.3g} to ±{hi:.3g}" for n, lo, hi in errors]
    return [
        f"     the mean of {column} in a group (noisy sum over noisy count): expected error "
        "(one standard deviation, to first order, in the column's units) from the true mean "
        "at the midpoint of the bounds to the true mean at a bound, by the group's size "
        "(private: read it off what you expect):",
        "       " + "; ".join(said),
    ]


class _Details:
    """A charge of which only the details are known."""

    def __init__(self, details: dict[str, Any]) -> None:
        self.details = details


def charge_lines(
    charges: Sequence[Any], *, schema: Any = None, per_value: bool = False, plain: bool = False
) -> list[str]:
    """The planned ledger entries and the noise each one adds, in words.

    ``charges`` hold ``budget``, ``mechanism`` and ``details`` (a publisher's
    :class:`~ppdp.publish.Charge` or a learner's ``Plan``). ``per_value``, or a charge
    whose details say ``noise_per_value`` (the ``laplace`` baseline): the Laplace noise is
    added to each encoded value of the table, so its scale times a numeric column's
    declared range is that column's expected absolute error before clipping (for a
    ``scale="log"`` column, times ``log1p`` of the range: an error of ``log1p(value -
    lower)``, a factor on ``1 + value - lower``).

    ``plain``: each entry's ε and δ in :func:`ppdp.budget.plain_budget`'s words (``ε = 1
    and δ = 10⁻⁹``, as ``ppdp ui`` shows them) rather than the command line's
    ``epsilon = 1, delta = 1e-09``.
    """
    from ppdp.budget import plain_budget

    lines: list[str] = []
    for i, charge in enumerate(charges, 1):
        b, d = charge.budget, charge.details
        lines.append(
            f"  {i}. {charge.mechanism}: {plain_budget(b)}"
            if plain
            else f"  {i}. {charge.mechanism}: epsilon = {b.epsilon:.10g}, delta = {b.delta:.10g}"
        )
        if "noise_scale" in d:
            lines += _scale_lines(d, schema, per_value)
        if d.get("norm") == "utility":  # a selection: its output is a choice, not a value
            lines.append(
                "     a selection (exponential mechanism, utility sensitivity "
                f"{d.get('sensitivity', 1):g}): {d.get('query', 'one of public candidates')}"
            )
        elif not any(k in d for k in ("noise_scale", "scatter_sigma", "noise_norm_scale")):
            lines.append(
                "     no per-value noise scale to state: the noise is drawn inside the "
                "mechanism (e.g. a perturbed objective); the ledger entry gives its details"
            )
        for key, what in _OTHER_SCALES.items():
            if key in d:
                v = d[key]
                text = ", ".join(f"{x:.4g}" for x in v) if isinstance(v, list) else f"{v:.4g}"
                lines.append(f"     {what}: {text} (encoded units)")
    return lines


def dry_run_lines(
    *,
    what: str,
    charges: Sequence[Any],
    schema: Any,
    report: Any,
    remaining: Any,
    per_value: bool,
    after: Any = "subtract",
    plain: bool = False,
) -> list[str]:
    """The ``--dry-run`` summary of ``what`` (``"publish pca"``), one line per item.

    ``remaining``: what the ledger has left (None: no ledger). ``after``: the accountant's
    own answer to what it would have left (it composes under PLD / RDP; None: the release
    would not fit); the default subtracts, as basic composition does. ``plain``: every ε
    and δ in :func:`ppdp.budget.plain_budget`'s words (``δ = 10⁻⁶``, as ``ppdp ui`` shows
    them) rather than the command line's ``δ=1e-06``.
    """
    from ppdp.budget import PrivacyBudget, plain_budget, remaining_text
    from ppdp.data.schema_files import clipping_lines

    def left_text(left: PrivacyBudget, of: PrivacyBudget) -> str:
        return plain_budget(left, of) if plain else remaining_text(left, of)

    total = PrivacyBudget(0.0)
    for c in charges:
        total = total + c.budget
    entries = f"entr{'y' if len(charges) == 1 else 'ies'}"
    lines = [
        f"dry run of {what} on {report.n_rows:,} rows: nothing was spent or written",
        f"would charge {plain_budget(total) if plain else total} in {len(charges)} ledger "
        f"{entries}:",
        *charge_lines(charges, schema=schema, per_value=per_value, plain=plain),
    ]
    unit = getattr(schema, "privacy_unit", None)
    if unit is not None and getattr(unit, "is_auto", False):
        lines.append(
            f"max_rows: auto: the noise above is planned for max_rows = {unit.max_rows} (the "
            "most it can be); the release draws max_rows first and calibrates to it"
        )
    if remaining is not None:
        left = remaining - total if after == "subtract" else after
        # Float residue of split shares (2e-17) is shown as 0; the accountant decides.
        of = remaining + total
        lines.append(
            f"the ledger has {left_text(remaining, of)} left; after this release: "
            + ("it does not fit (the real run is refused)" if left is None else left_text(left, of))
        )
    else:
        lines.append("no --ledger given: the real run would record the spend nowhere")
    lines.append("values clipped to the declared bounds (custodian only, not released):")
    return lines + clipping_lines(schema, report)
