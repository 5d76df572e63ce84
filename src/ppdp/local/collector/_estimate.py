"""Estimate the distribution from the collector's running totals (pure post-processing).

The estimate reads only the totals and the count; it costs no privacy beyond each report's
own local guarantee, which it states (the randomizer's :meth:`guarantee`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ppdp._io import atomic_path
from ppdp.budget import Guarantee
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.local.collector._aggregate import Aggregator
from ppdp.local.collector._store import StoreTotals

if TYPE_CHECKING:  # pandas is imported where a table is built: the server never needs it
    import pandas as pd

__all__ = ["ADDITIVE_METHODS", "CHARACTERISTIC_METHODS", "CollectorEstimate", "estimate_totals"]

#: The δ at which a guarantee is stated when the randomizer has no pure ε.
DEFAULT_DELTA = 1e-6
#: Methods for additive randomizers (reconstruction from the report histogram).
ADDITIVE_METHODS = ("em", "em-fourier", "bayes", "fourier")
#: Methods for characteristic-vector randomizers (one-step estimators from the totals).
CHARACTERISTIC_METHODS = ("auto", "mean", "threshold")


@dataclass(frozen=True)
class CollectorEstimate:
    """A reconstructed distribution with the guarantee of the reports it came from.

    Attributes
    ----------
    table : DataFrame
        One row per bin or region: ``bin_low``, ``bin_high`` (numeric bins) or ``region``
        (categories, abstract regions), then ``probability`` and ``density``.
    guarantee : Guarantee
        The randomizer's local guarantee (each respondent's report).
    count : int
        Reports the estimate rests on.
    method : str
    iterations : int
    converged : bool
    """

    table: pd.DataFrame
    guarantee: Guarantee
    count: int
    method: str
    iterations: int
    converged: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "method": self.method,
            "iterations": self.iterations,
            "converged": self.converged,
            "guarantee": self.guarantee.to_dict(),
        }

    def write(self, output: str | Path) -> tuple[Path, Path]:
        """Write the table as CSV and, beside it, ``<stem>.json`` with the guarantee."""
        out = Path(output)
        if out.suffix.lower() == ".json":
            raise ParameterError(f"output ({out}) must not be a .json file (that is the sidecar)")
        side = out.with_suffix(".json")
        with atomic_path(out) as tmp:
            self.table.to_csv(tmp, index=False, float_format="%.10g")
        with atomic_path(side) as tmp:
            tmp.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n")
        return out, side


def _table(rec: Any) -> pd.DataFrame:
    import pandas as pd

    dens = np.asarray(rec.density, dtype=np.float64)
    probs = np.asarray(rec.probabilities, dtype=np.float64)
    if rec.edges is not None:
        e = np.asarray(rec.edges)
        return pd.DataFrame(
            {"bin_low": e[:-1], "bin_high": e[1:], "probability": probs, "density": dens}
        )
    labels = list(rec.categories) if rec.categories is not None else list(range(dens.size))
    return pd.DataFrame({"region": labels, "probability": probs, "density": dens})


def estimate_totals(
    aggregator: Aggregator,
    totals: StoreTotals,
    *,
    method: str | None = None,
    bins: int = 50,
    harmonics: int | str = "auto",
    max_iter: int = 1000,
    delta: float | None = None,
) -> CollectorEstimate:
    """Reconstruct the distribution from a collector's totals.

    Parameters
    ----------
    aggregator : Aggregator
        The collector's (from its config).
    totals : StoreTotals
        From :meth:`CollectorStore.snapshot` or ``GET /v1/totals``.
    method : str, optional
        Additive: ``"em"`` (default), ``"em-fourier"`` (EM started from the Fourier
        estimate), ``"bayes"``, ``"fourier"``. Characteristic vectors: ``"auto"`` (default;
        the mean estimator where the noise has a mean, else the threshold one), ``"mean"``,
        ``"threshold"``.
    bins : int, default 50
        Equal bins over the declared domain (additive).
    harmonics : int or "auto", default "auto"
        Fourier harmonics (``"fourier"``, ``"em-fourier"``); ``"auto"`` chooses them from n
        and the published noise law only (:func:`ppdp.local.reconstruction.auto_harmonics`).
    max_iter : int, default 1000
        Iteration cap of EM / Bayes.
    delta : float, optional
        The δ at which to state the guarantee (default: δ = 0 where a pure ε exists,
        else :data:`DEFAULT_DELTA` where that gives a finite ε).

    Raises
    ------
    DataValidationError
        No reports yet.
    ParameterError
        A method that does not apply to the randomizer.
    """
    if totals.count < 1:
        raise DataValidationError("the collector holds no reports yet; nothing to estimate")
    r = aggregator.randomizer
    guarantee = stated_guarantee(r, delta)
    if aggregator.edges is None:
        method = "auto" if method is None else method
        if method not in CHARACTERISTIC_METHODS:
            raise ParameterError(
                f"method ({method!r}) must be one of {', '.join(CHARACTERISTIC_METHODS)} for a "
                "characteristic-vector randomizer"
            )
        if method == "auto":
            method = "mean" if "sum" in aggregator.layout else "threshold"
        if method == "mean" and "sum" not in aggregator.layout:
            raise ParameterError(
                f"method ('mean') needs a noise law with a finite mean; {r.noise!r} has none: "
                "use 'threshold'"
            )
        key = "sum" if method == "mean" else "threshold"
        rec = r.estimate_from_totals(totals.totals[key], totals.count, estimator=method)
    else:
        method = "em" if method is None else method
        if method not in ADDITIVE_METHODS:
            raise ParameterError(
                f"method ({method!r}) must be one of {', '.join(ADDITIVE_METHODS)} for an "
                "additive randomizer"
            )
        rec = _additive(aggregator, totals, method, bins, harmonics, max_iter)
    return CollectorEstimate(
        _table(rec), guarantee, totals.count, rec.method or method, rec.iterations, rec.converged
    )


def _additive(
    aggregator: Aggregator,
    totals: StoreTotals,
    method: str,
    bins: int,
    harmonics: int | str,
    max_iter: int,
) -> Any:
    from ppdp.local.reconstruction import reconstruct_bayes, reconstruct_em, reconstruct_fourier

    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
        raise ParameterError(f"bins ({bins!r}) must be an integer >= 2")
    hist = totals.totals["hist"]
    r = aggregator.randomizer
    if method == "fourier":
        return reconstruct_fourier(aggregator.pseudo_reports(hist), r, harmonics, bins=bins)
    if method == "em-fourier":
        return reconstruct_em(
            aggregator.pseudo_reports(hist),
            r,
            bins,
            init="fourier",
            harmonics=harmonics,
            max_iter=max_iter,
        )
    exact = aggregator.report_histogram(hist, bins)
    data = aggregator.pseudo_reports(hist) if exact is None else exact
    if method == "bayes":
        return reconstruct_bayes(data, r, bins, max_iter=max_iter)
    return reconstruct_em(data, r, bins, max_iter=max_iter)


def stated_guarantee(randomizer: Any, delta: float | None) -> Guarantee:
    """The guarantee at ``delta``; by default the pure one, or at δ = 1e-6 when there is no
    pure ε but there is an (ε, 1e-6) one (Gaussian-type noise)."""
    if delta is not None:
        g: Guarantee = randomizer.guarantee(delta)
        return g
    g = randomizer.guarantee()
    if not g.is_private:
        at = randomizer.guarantee(DEFAULT_DELTA)
        if at.is_private:
            return at  # type: ignore[no-any-return]
    return g
