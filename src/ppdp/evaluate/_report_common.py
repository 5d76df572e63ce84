"""What the quality report and its parts share: verdicts, thresholds, bins and column reads.

A leaf below :mod:`ppdp.evaluate.report` (which re-exports the public names), the pairs
(:mod:`ppdp.evaluate.pairs`) and the HTML page (:mod:`ppdp.evaluate._report_html`), so
that those import it rather than the report module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.data.columns import NumericColumn
from ppdp.data.dates import date_form, parse_dates
from ppdp.exceptions import DataValidationError, OptionalDependencyError

__all__ = [
    "BANNER",
    "N_BINS",
    "THRESHOLDS",
    "VERDICTS",
    "histogram_edges",
    "import_matplotlib",
]


#: The three verdicts, best first.
VERDICTS: tuple[str, ...] = ("useful", "weak", "no better than the trivial baseline")
#: Where the verdicts change (stated in every report). The verdict of a table is the worst of
#: the verdicts of its parts (each part's own line is in :attr:`QualityReport.verdict_parts`):
#:
#: *Marginals* (1-way), from the mean total-variation distance (TV) of the columns' marginals:
#: "useful": mean TV <= ``useful_tv``; "no better than the trivial baseline": mean TV >=
#: ``trivial_tv_share`` x the mean TV of the trivial release (values drawn uniformly within
#: the declared bounds and categories); "weak" otherwise.
#:
#: *Pairs* (2-way), from the mean TV of every pair's joint distribution on coarse cells
#: (:mod:`ppdp.evaluate.pairs`): "no better than the trivial baseline" when it is >=
#: ``trivial_tv_share`` x the trivial release's; "weak" when it is >= ``shuffled_tv_share`` x
#: that of the *shuffled baseline* (the original with each column shuffled on its own: the
#: real marginals, no association), a comparison made only when some real pair's
#: association reaches ``dependence_floor``; "weak" too when, over the pairs whose real
#: association reaches ``dependence_floor``, the release keeps less than ``kept_dependence``
#: of the real dependence: ``(TV shuffled - TV release) / (TV shuffled - TV resampled)``,
#: where *resampled* is the real rows drawn whole at the release's size (what a perfect
#: release of that size scores; a fully shuffled release keeps about 0); "useful" otherwise.
#:
#: *Associations*: a pair whose real association (Pearson's |r| for two numeric columns,
#: else bias-corrected Cramér's V) is >= ``strong_association`` is *lost* when the release
#: keeps less than ``kept_association`` of it. "no better than the trivial baseline" when
#: every such pair is lost; "weak" when one is; "useful" otherwise (and when there is none).
#:
#: *The target* (with ``target=``): ``lift`` is the share of the real data's AUC gain over
#: chance that the release keeps: ``(AUC_release - 0.5) / (AUC_real - 0.5)``.
#: "useful": lift >= ``useful_lift`` and accuracy >= the majority class's;
#: "no better than the trivial baseline": lift < ``trivial_lift``, or lift <
#: ``low_accuracy_lift`` with an accuracy more than ``trivial_accuracy_gap`` below the majority
#: class's; "weak" otherwise. When the real data's own AUC is within ``chance_auc_z`` standard
#: errors of 0.5 (the target is not predictable), this part is not judged.
#:
#: A model or an LDA projection release is judged on its target alone.
#:
#: *A group-by release* (:mod:`ppdp.evaluate.group_report`), per released statistic, from
#: the median absolute error over the groups against the true values: "no better than the
#: trivial baseline" when it is >= ``trivial_tv_share`` x the trivial release's (the same
#: count in every group; the statistics of values uniform within the declared bounds);
#: "useful" when it is <= ``group_useful_error`` x the trivial release's; "weak" otherwise.
#: The release's verdict is the worst of its statistics'.
THRESHOLDS: dict[str, float] = {
    "useful_lift": 0.75,
    "trivial_lift": 0.25,
    "trivial_accuracy_gap": 0.05,
    "low_accuracy_lift": 0.5,
    "chance_auc_z": 2.0,
    "useful_tv": 0.10,
    "trivial_tv_share": 0.80,
    "shuffled_tv_share": 1.0,
    "dependence_floor": 0.20,
    "kept_dependence": 0.50,
    "strong_association": 0.30,
    "kept_association": 0.50,
    "group_useful_error": 0.25,
}

#: Bins of a numeric column's histogram (equal widths over the declared bounds) when the
#: column declares no ``cuts``; a column with cuts has one bin per interval between them.
N_BINS = 20
BANNER = (
    "This report compares the release with the private data it came from. It is for the "
    "data custodian only: it is not itself differentially private and must not be shared "
    "with the release. Making it costs no privacy budget."
)


def import_matplotlib() -> Any:
    """Import matplotlib (the ``plots`` extra) or say how to install it."""
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:
        raise OptionalDependencyError(
            "the quality report's figures need matplotlib, which is not installed: "
            "pip install 'ppdp[plots]'"
        ) from exc
    return matplotlib


# ---------------------------------------------------------------------------- columns
def _numeric(name: str, col: NumericColumn, s: pd.Series) -> NDArray[np.float64]:
    if col.date:  # days since 1970-01-01, as the encoding reads them
        days, not_dates = parse_dates(s, col.date_format)
        if not_dates.any():
            first = s[not_dates].iloc[0]
            raise DataValidationError(
                f"column {col.name!r} of the {name} is declared a date column (date: true) but "
                f"holds {first!r}; dates are written {date_form(col.date_format)}"
            )
        return days
    v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(v) & s.notna().to_numpy()
    if bad.any():
        first = s[bad].iloc[0]
        raise DataValidationError(
            f"column {col.name!r} of the {name} is declared numeric but holds {first!r}"
        )
    return v


def _codes(values: Any, cells: Sequence[str]) -> NDArray[np.intp]:
    """Each value's position among ``cells`` (as text), -1 for a value not among them."""
    return pd.Index(list(cells)).get_indexer(pd.Series(values).astype(str))  # type: ignore[no-any-return]


def histogram_edges(col: NumericColumn) -> NDArray[np.float64]:
    """The bin edges of a numeric column's histogram in the report.

    ``[lower, *cuts, upper]`` (one bin per interval) when the column declares public cut
    points, else ``N_BINS`` equal widths over the declared bounds (on the column's scale:
    for a ``scale="log"`` column, equal widths of ``log1p(v - lower)``). As in
    :func:`numpy.histogram`, a value equal to an interior edge falls in the bin above it
    and the upper bound in the last bin (the synthesizer bins cut columns the same way).

    Parameters
    ----------
    col : NumericColumn
        The declared column.

    Returns
    -------
    ndarray of float
        Increasing edges, from ``col.lower`` to ``col.upper``.
    """
    if col.cuts is not None:
        return np.array([col.lower, *col.cuts, col.upper], dtype=np.float64)
    if col.scale == "linear":
        return np.linspace(col.lower, col.upper, N_BINS + 1)
    edges = col.from_unit(np.linspace(0.0, 1.0, N_BINS + 1))
    edges[0], edges[-1] = col.lower, col.upper
    return np.maximum.accumulate(edges)


def _two(x: float) -> str:
    """Two decimals, without a "-0.00"."""
    return f"{round(x, 2) + 0.0:.2f}"
