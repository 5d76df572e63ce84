"""What the collector keeps of a batch: the aggregates the estimators need, nothing else.

*Characteristic-vector randomizers* (Wu's scheme, k regions): a report is k integers in
lattice units (``z/γ``). The collector keeps, per coordinate j, the running **sum** of
the reports (Wu's one-step "mean" estimator; only where the noise law has a mean) and the
running **count of reports at or above the randomizer's threshold** (the consistent
"threshold" estimator of ALGORITHMS C.5, the only one for inverse-square noise). Both are
exactly :meth:`CharacteristicVectorRandomizer.totals` of the batch.

*Additive randomizers* (w = x + y, one real per report): the collector keeps a **fine
histogram of the reports**: bins of width Δ = D/B (D the domain width, B =
``bins_per_domain``, default 1,000) on a grid anchored at the domain's lower end and
extended by the noise's reach (uniform: its exact half-width; Gaussian: 10σ; Laplace:
40 scales), plus an underflow and an overflow count. That grid nests the report bins of
:func:`ppdp.local.reconstruction.report_edges` for every value-bin count that divides B
(50, 100, 200, ...), so binned EM and Bayes get *exactly* the report histogram they would
compute from the reports themselves (other bin counts read pseudo-reports, below). The
Fourier estimator (and EM started from it) reads one pseudo-report per count at its fine
bin's midpoint: the empirical characteristic function at harmonic i is scaled by
sinc(i/B) (a relative bias of (π·i/B)²/6 ≈ 2.4e-4 at i = 12, B = 1,000) and gains a
rounding noise of standard deviation ≤ 2π·i/(B·√(12n)), about 2 % of its own sampling
standard deviation 1/√(2n) at i = 12.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ppdp.exceptions import DataValidationError, ParameterError

__all__ = ["Aggregator", "randomizer_from_dict"]

_DEFAULT_BINS = 1_000
_MAX_BINS = 1_000_000
_SUM_LIMIT = 2**62


def randomizer_from_dict(data: Mapping[str, Any]) -> Any:
    """Rebuild an additive or characteristic-vector randomizer from its ``to_dict()``."""
    from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer

    errors = []
    for cls in (CharacteristicVectorRandomizer, AdditiveRandomizer):
        try:
            return cls.from_dict(dict(data))
        except (KeyError, TypeError, ValueError) as exc:
            errors.append(f"{cls.__name__}: {exc}")
    raise ParameterError(
        "randomizer is neither an additive nor a characteristic-vector randomizer's "
        "to_dict() (" + "; ".join(errors) + ")"
    )


def _is_characteristic(randomizer: Any) -> bool:
    from ppdp.local import CharacteristicVectorRandomizer

    return isinstance(randomizer, CharacteristicVectorRandomizer)


@dataclass(frozen=True)
class Aggregator:
    """Turns a validated batch into running-total increments (see the module docstring).

    Attributes
    ----------
    randomizer : randomizer
        The survey's randomizer (public).
    spec : dict
        JSON of everything that fixes the meaning of the totals (the randomizer's
        ``to_dict()`` and the histogram); a store is bound to one spec.
    layout : dict
        Name -> (length, "int" | "float") of the running totals.
    edges : ndarray or None
        Histogram edges for additive randomizers.
    """

    randomizer: Any
    spec: dict[str, Any]
    layout: dict[str, tuple[int, str]]
    edges: NDArray[np.float64] | None = None
    threshold: int | None = None

    @classmethod
    def from_config(cls, config: Any) -> Aggregator:
        """The aggregator of a :class:`CollectorConfig`."""
        return cls.create(randomizer_from_dict(config.randomizer), histogram=config.histogram)

    @classmethod
    def create(cls, randomizer: Any, *, histogram: Mapping[str, Any] | None = None) -> Aggregator:
        """The aggregator for ``randomizer`` (``histogram`` for additive randomizers only)."""
        rdict = randomizer.to_dict()
        if _is_characteristic(randomizer):
            if histogram is not None:
                raise ParameterError(
                    "histogram is only for additive randomizers; a characteristic-vector "
                    "randomizer keeps per-region totals"
                )
            k = int(randomizer.k)
            layout = {"threshold": (k, "int")}
            if randomizer.law.has_mean:
                layout = {"sum": (k, "int"), **layout}
            return cls(randomizer, {"randomizer": rdict}, layout, None, randomizer.threshold())
        per_domain, below, above = _histogram(randomizer, histogram or {})
        spec = {
            "randomizer": rdict,
            "histogram": {"bins_per_domain": per_domain, "below": below, "above": above},
        }
        lo, hi = randomizer.domain
        step = (hi - lo) / per_domain
        edges = lo + step * np.arange(-below, per_domain + above + 1, dtype=np.float64)
        edges[below + per_domain] = hi
        return cls(randomizer, spec, {"hist": (edges.size + 1, "int")}, edges)

    @property
    def kind(self) -> str:
        return "histogram" if self.edges is not None else "characteristic"

    def parse(self, reports: Any) -> NDArray[Any]:
        """The reports as a numeric array of the right shape, checked against the randomizer:
        lattice, shape and support for characteristic vectors (``check_report``); finite
        reals, inside the noise's support where it is bounded, for additive noise."""
        if self.edges is None:
            arr = self.randomizer.check_report(reports)
            if arr.shape[0] == 0:
                raise DataValidationError("reports must not be empty")
            return arr
        try:
            arr = np.asarray(reports, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataValidationError("reports must be real numbers (one per respondent)") from None
        if arr.ndim != 1 or arr.shape[0] == 0:
            raise DataValidationError(f"reports must have shape (n,) with n >= 1, got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise DataValidationError("reports contain NaN or infinity")
        check = getattr(self.randomizer, "check_report", None)
        if check is not None:
            check(arr)
        else:
            lo, hi = self.randomizer.domain
            s_lo, s_hi = self.randomizer.noise_support()
            bad = int(np.count_nonzero((arr < lo + s_lo) | (arr > hi + s_hi)))
            if bad:
                raise DataValidationError(
                    f"reports: {bad} of {arr.size} lie outside [{lo + s_lo:g}, {hi + s_hi:g}], "
                    "impossible under the declared domain and noise"
                )
        return arr

    def aggregate(self, reports: Any) -> dict[str, NDArray[np.int64]]:
        """Validate a batch and reduce it to its increments of the running totals."""
        arr = self.parse(reports)
        if self.edges is None:
            out = {"threshold": (arr >= self.threshold).sum(axis=0, dtype=np.int64)}
            if "sum" in self.layout:
                if int(np.abs(arr).max()) >= _SUM_LIMIT // arr.shape[0]:
                    raise DataValidationError(
                        "the batch's coordinate sums would overflow 64-bit integers "
                        "(reports this large have probability below 2**-50; send fewer per batch)"
                    )
                out["sum"] = arr.sum(axis=0, dtype=np.int64)
            return out
        return {"hist": _bin_counts(arr, self.edges)}

    def pseudo_reports(self, hist: NDArray[np.int64]) -> NDArray[np.float64]:
        """Additive only: one value per counted report at its fine bin's midpoint (the
        outer edges for the under/overflow), the input of the Fourier estimator."""
        assert self.edges is not None
        e = self.edges
        points = np.concatenate(([e[0]], (e[:-1] + e[1:]) / 2.0, [e[-1]]))
        return np.repeat(points, np.asarray(hist, dtype=np.int64))

    def report_histogram(self, hist: NDArray[np.int64], bins: int) -> Any:
        """Additive only: the exact :class:`~ppdp.local.reconstruction.ReportHistogram` of
        ``bins`` value bins, or None when its report bins do not nest in the fine grid
        (``bins`` not dividing ``bins_per_domain``, or a capped report-bin count)."""
        from ppdp.local.reconstruction import ReportHistogram, report_edges, value_edges

        assert self.edges is not None
        r = self.randomizer
        target = report_edges(r, value_edges(r, bins))
        fine = self.edges
        step = fine[1] - fine[0]
        finite = target[np.isfinite(target)]
        if finite[0] < fine[0] - 1e-9 * step or finite[-1] > fine[-1] + 1e-9 * step:
            return None
        nearest = np.rint((finite - fine[0]) / step)
        if np.max(np.abs(finite - (fine[0] + nearest * step))) > 1e-6 * step:
            return None
        mids = np.concatenate(([-np.inf], (fine[:-1] + fine[1:]) / 2.0, [np.inf]))
        idx = np.searchsorted(target, mids, side="right") - 1
        idx = np.clip(idx, 0, target.size - 2)
        counts = np.bincount(idx, weights=hist, minlength=target.size - 1)
        return ReportHistogram(target, np.rint(counts).astype(np.int64))


def _bin_counts(z: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.int64]:
    bins = edges.size - 1
    idx = np.searchsorted(edges, z, side="right")  # 0: below low; bins+1: at/above high
    idx[z == edges[-1]] = bins  # the last bin is closed
    return np.bincount(idx, minlength=bins + 2).astype(np.int64)


def _histogram(randomizer: Any, hist: Mapping[str, Any]) -> tuple[int, int, int]:
    """(B, bins below the domain, bins above it) of the fine report histogram."""
    unknown = set(hist) - {"bins_per_domain"}
    if unknown:
        raise ParameterError(
            f"histogram has unknown keys ({', '.join(sorted(unknown))}); allowed: bins_per_domain"
        )
    per = hist.get("bins_per_domain", _DEFAULT_BINS)
    if isinstance(per, bool) or not isinstance(per, int) or not 2 <= per <= _MAX_BINS:
        raise ParameterError(
            f"histogram bins_per_domain ({per!r}) must be an integer in [2, {_MAX_BINS}]"
        )
    lo, hi = (float(v) for v in randomizer.domain)
    noise, scale = str(randomizer.noise), float(randomizer.scale)
    reach = {"uniform": scale / 2.0, "gaussian": 10.0 * scale}.get(noise, 40.0 * scale)
    step = (hi - lo) / per
    pad = math.ceil(reach / step - 1e-9)
    if per + 2 * pad > _MAX_BINS:
        raise ParameterError(
            f"histogram bins_per_domain ({per}) gives {per + 2 * pad} bins for noise of scale "
            f"{scale:g} on a domain of width {hi - lo:g}; at most {_MAX_BINS}: lower it"
        )
    return per, pad, pad
