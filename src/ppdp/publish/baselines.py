"""The baselines of Jiang et al. (2013): per-record Laplace (LAP) and per-record exponential (EXP).

Both release one row per input row, in order, decoded to the schema, on the same encoded
table as :class:`~ppdp.publish.pca.DPPCAPublisher` (label block included). Privacy
arguments: ``docs/proofs/publish-baselines.md``; algorithms: ALGORITHMS-publishing.md A.5.

A Parquet dataset or a Dask DataFrame is randomised partition by partition: partition ``i``
draws its rows' noise from ``PartitionStreams(source).stream(i)`` and is written, decoded, to
``output`` (``part-0000i.parquet``, row order kept) inside ``fit``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp import noise
from ppdp._params import Rule, epsilon_rules
from ppdp.accounting.events import Exponential, PrivacyEvent
from ppdp.budget import Guarantee, Neighbouring
from ppdp.data import Schema
from ppdp.data.schema import Layout
from ppdp.exceptions import DataValidationError
from ppdp.mechanisms import LaplaceMechanism
from ppdp.publish._base import Charge, Publisher, Release
from ppdp.publish._noise_limits import epsilon_that_clears
from ppdp.publish.pca import (
    _add_laplace,
    _check_schema,
    _encode_table,
    _postprocess,
)
from ppdp.random import PartitionStreams, RandomSource, RandomState, noise_factor

__all__ = ["ExponentialPublisher", "LaplacePublisher", "record_l1_sensitivity"]

_RELATION = Neighbouring.REPLACE_ONE


def record_l1_sensitivity(layout: Layout) -> float:
    """``p1 + 2·p2``: the largest L1 distance between two encoded rows.

    A numeric entry in ``[0, 1]`` moves at most 1; a one-hot block moves two dummies (one
    row may be scaled to a declared ``row_norm_bound``, which only shrinks this). It is
    smaller than the paper's ``p`` (the number of encoded columns) whenever a categorical
    variable has three or more levels.
    """
    return float(layout.p1 + 2 * layout.p2)


@dataclass(frozen=True)
class BaselineParams:
    """The validated parameters of the per-record baselines (built once per ``fit``)."""

    layout: Layout
    allow_large_epsilon: bool
    epsilon: float


#: The baselines' constraint table, in the order the parameters are checked.
BASELINE_CONSTRAINTS: tuple[Rule, ...] = (
    Rule("layout", lambda v, _: _check_schema(v), attribute="schema"),
    *epsilon_rules(),
)


class _RowPublisher(Publisher):
    """Shared parameters, checks and encoding of the per-record baselines."""

    _NAME = ""
    #: Whether the noise is added to each encoded value (its scale times a numeric
    #: column's declared range is then that column's error; the dry run says so).
    _NOISE_PER_VALUE = False
    #: The ledger details' ``noise`` (what the dry run describes), when not plain Laplace.
    _NOISE: str | None = None
    #: What swamping noise does to a numeric column (:meth:`low_utility_message`).
    _SWAMPED = "numeric values piled at their declared bounds"
    supports_distributed: ClassVar[bool] = True
    row_level_output: ClassVar[bool] = True
    _params_type = BaselineParams
    _constraints = BASELINE_CONSTRAINTS

    def __init__(
        self,
        epsilon: float,
        schema: Schema,
        *,
        random_state: RandomState = None,
        allow_large_epsilon: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.schema = schema
        self.random_state = random_state
        self.allow_large_epsilon = allow_large_epsilon

    def _params(self) -> BaselineParams:
        params: BaselineParams = super()._params()
        return params

    def _mechanism(self) -> LaplaceMechanism:
        raise NotImplementedError

    def _planned_charges(self, n_rows: int | None) -> list[Charge]:
        eps = self._params().epsilon
        mech = self._mechanism()
        details = {
            "query": "every encoded row, one release per record (parallel composition)",
            **mech.ledger_details(),
        }
        if self._NOISE_PER_VALUE:
            details["noise_per_value"] = True
        if self._NOISE is not None:
            details["noise"] = self._NOISE
        # The same mechanism on every (disjoint) row: parallel composition, one row's event.
        return [Charge(self._event(eps, mech), self._NAME, details)]

    def _event(self, eps: float, mech: LaplaceMechanism) -> PrivacyEvent:
        """The typed event of one row's release (rows are disjoint: it is the table's)."""
        return mech.event

    def low_utility_message(self) -> str | None:
        """Why the released rows would be mostly noise, or None; spends nothing.

        From public quantities only (ε and the schema's encoded widths), so ``ppdp publish``
        says it before the spend (``warning: LowUtilityWarning: ...``). Each encoded value,
        in ``[0, 1]``, gets noise of scale ``b`` (Laplace; truncated to ``[0, 1]`` for EXP),
        standard deviation ``√2·b`` before any truncation. When that is at least
        :data:`~ppdp.publish.pca.SWAMPED_NOISE_SD` (twice the range, DP-PCA's criterion)
        the noise dominates whatever the data are: numeric values pile at their bounds (or
        spread uniformly, EXP) and categories are drawn almost uniformly. The message names
        the smallest ε (3 significant digits, rounded up) below the criterion.
        """
        from ppdp.publish.pca import SWAMPED_NOISE_SD

        c = self._params()
        scale = self._mechanism().scale
        sd = math.sqrt(2.0) * scale
        if sd < SWAMPED_NOISE_SD:
            return None

        def too_noisy(eps: float) -> bool:
            trial = type(self)(eps, self.schema, allow_large_epsilon=True)
            return math.sqrt(2.0) * trial._mechanism().scale >= SWAMPED_NOISE_SD

        needed = epsilon_that_clears(float(c.epsilon) * sd / SWAMPED_NOISE_SD, too_noisy)
        return (
            f"{self._NAME} at epsilon {c.epsilon:g}: each encoded value, whose range is "
            f"[0, 1], gets noise of scale {scale:.3g} (standard deviation {sd:.3g}), so the "
            f"released rows will be mostly noise ({self._SWAMPED}, categories drawn almost "
            f"uniformly); it needs epsilon above {needed:g} "
            "(this per-record baseline is for comparisons, not for publishing rows)"
        )

    def _encode(
        self, df: pd.DataFrame, on_invalid: str = "raise"
    ) -> tuple[NDArray[np.float64], Any]:
        X, y = _encode_table(self.schema, df, on_invalid)
        if X.shape[0] < 1:
            raise DataValidationError("data has 0 rows; there is nothing to publish")
        return X, y

    def _noisy(self, X: NDArray[np.float64], source: RandomSource) -> NDArray[np.float64]:
        """The randomised encoded rows, before post-processing (the audit samples this)."""
        raise NotImplementedError

    def _assumptions(self, layout: Layout) -> tuple[str, ...]:
        raise NotImplementedError

    def _guarantee(self, eps: float, layout: Layout) -> Guarantee:
        return Guarantee.pure(
            eps,
            relation=_RELATION,
            mechanism=self._NAME,
            assumptions=self._assumptions(layout),
            details=self._mechanism().ledger_details(),
        )

    def _randomise(self, X: NDArray[np.float64], source: RandomSource) -> NDArray[np.float64]:
        """Noisy rows, post-processed (arg-max blocks, clamped numerics), still encoded."""
        layout = self._params().layout
        return _postprocess(self._noisy(X, source), self.schema, layout, clamp=True)

    def _release(
        self, X: NDArray[np.float64], y: Any, source: RandomSource, charges: list[Charge]
    ) -> Release:
        c = self._params()
        eps, layout = c.epsilon, c.layout
        encoded = self._randomise(X, source)
        return Release(
            data=self.schema.decode(encoded),
            encoded=encoded,
            guarantee=self._guarantee(eps, layout),
        )

    # -- distributed input ----------------------------------------------------------------

    def _check_scan(self, scan: Any, on_invalid: str) -> None:
        if scan.n_rows < 1:
            raise DataValidationError("data has 0 rows; there is nothing to publish")

    def _release_distributed(
        self,
        frame: Any,
        scan: Any,
        source: RandomSource,
        charges: list[Charge],
        *,
        scheduler: Any,
        output: str | os.PathLike[str],
    ) -> Release:
        """Each partition's rows randomised with its own stream, written to ``output``.

        Every row gets the law it gets in memory (one record's release is the same
        mechanism, with independent noise); partitions hold disjoint rows, so the table is
        still one parallel composition. The read-back frame is lazy over the written files,
        never over the raw data.
        """
        from dask import delayed

        from ppdp.data.distributed import (
            encoded_partitions,
            read_parquet_dataset,
            write_parquet_dataset,
        )

        c = self._params()
        eps, layout = c.epsilon, c.layout
        streams = PartitionStreams(source)
        parts = encoded_partitions(
            frame, self.schema, include_label=self._distributed_include_label(), scan=scan
        )
        shared = delayed((self, streams), traverse=False)
        rows = [
            delayed(_randomise_partition, pure=True)(shared, part, i)
            for i, part in enumerate(parts)
        ]
        write_parquet_dataset(rows, output, scheduler=scheduler)
        return Release(
            data=read_parquet_dataset(output),
            encoded=None,
            guarantee=self._guarantee(eps, layout),
        )


def _randomise_partition(
    shared: tuple[_RowPublisher, PartitionStreams], encoded: tuple[Any, Any], index: int
) -> pd.DataFrame:
    """Partition ``index``: its encoded rows randomised from stream ``index``, decoded."""
    publisher, streams = shared
    X = np.array(encoded[0], dtype=np.float64, order="C")
    np.clip(X, 0.0, 1.0, out=X)  # as _encode_table does in memory
    return publisher.schema.decode(publisher._randomise(X, streams.stream(index)))


class LaplacePublisher(_RowPublisher):
    """LAP baseline: every encoded entry plus Laplace noise, then arg-max and clamp (A.5).

    ``X̃ = X + Lap(b)`` entry by entry with ``b = (p1 + 2·p2)/ε`` (plus the grid allowance),
    the encoded table including the label block when the schema has one; then each
    categorical block is set to its arg-max dummy and numerics are clamped to ``[0, 1]``.

    Guarantee: ε-differential privacy, replace-one neighbours, ``n`` public. One record
    changes one encoded row by at most ``p1 + 2·p2`` in L1 (:func:`record_l1_sensitivity`;
    the paper's ``p`` is also valid but larger), so each row is an ε-DP Laplace release,
    and rows hold disjoint records (parallel composition). Decoding is post-processing.

    Parameters
    ----------
    epsilon : float
        ε > 0 (at most 10 unless ``allow_large_epsilon``).
    schema : Schema
        Declared bounds and categories.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (default) uses the OS CSPRNG; anything else is reproducible, for tests.
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Notes
    -----
    Numerical caveats: each row is released through
    :class:`~ppdp.mechanisms.LaplaceMechanism`'s own path (value snapped to a power-of-two
    grid Λ, grid Laplace noise, calibrated for ``p1 + 2p2 + p·Λ``), vectorised over rows.

    References
    ----------
    .. [JJW13] Jiang et al., Transactions on Data Privacy 6(1):19–34, 2013 (Theorem 3).
    .. [DMNS06] Dwork, McSherry, Nissim, Smith, TCC 2006.
    """

    _NAME = "LAP (per-record Laplace, Jiang et al. 2013)"
    _NOISE_PER_VALUE = True

    def _mechanism(self) -> LaplaceMechanism:
        c = self._params()
        eps, layout = c.epsilon, c.layout
        return LaplaceMechanism(
            epsilon=eps,
            sensitivity=record_l1_sensitivity(layout),
            dimension=layout.n_features,
            relation=_RELATION,
            allow_large_epsilon=c.allow_large_epsilon,
        )

    def _noisy(self, X: NDArray[np.float64], source: RandomSource) -> NDArray[np.float64]:
        return _add_laplace(self._mechanism(), X, source)

    def _assumptions(self, layout: Layout) -> tuple[str, ...]:
        return (
            "n (the number of rows) is public; neighbours replace one row",
            "numeric columns clipped to their declared public bounds, categories declared",
            f"row L1 sensitivity p1 + 2p2 = {record_l1_sensitivity(layout):g}; rows disjoint "
            "(parallel composition); arg-max and clamping are post-processing",
        )


class ExponentialPublisher(_RowPublisher):
    """EXP baseline, *our per-record reading* of the paper's EXP (A.5): truncated Laplace rows.

    Jiang et al. cite Blum–Ligett–Roth's exponential mechanism but do not say how it gave
    a table aligned row by row with the original. Our reading: for each record ``x``, the
    exponential mechanism over ``r ∈ [0, 1]^p`` with utility ``u(x, r) = −‖x − r‖₁``, whose
    sensitivity is ``Δu = p1 + 2·p2`` (``|u(x, r) − u(x′, r)| ≤ ‖x − x′‖₁``; the paper's
    ``p`` is also valid but larger). Its density ``∝ exp(−ε‖x − r‖₁/(2Δu))`` factorises:
    each coordinate is an independent Laplace of scale ``2Δu/ε`` centred at ``x_j`` and
    truncated to ``[0, 1]``. Then categorical blocks are set to their arg-max dummy.

    Guarantee: ε-differential privacy, replace-one neighbours, ``n`` public: the
    exponential mechanism on the continuous box (McSherry–Talwar: ``e^{ε/2}`` from the
    utility, ``e^{ε/2}`` from the normalising constant) per record; disjoint records
    compose in parallel; decoding is post-processing.

    Parameters
    ----------
    epsilon : float
        ε > 0 (at most 10 unless ``allow_large_epsilon``).
    schema : Schema
        Declared bounds and categories.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (default) uses the OS CSPRNG; anything else is reproducible, for tests.
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Notes
    -----
    Sampling, float-safe in the sense of ``docs/proofs/noise.md``: the centre is snapped to
    the power-of-two grid Λ of a Laplace scale ``b = 2(Δu + p·Λ)/ε`` (so the snapped rows
    differ by at most ``Δu + p·Λ``); a side is chosen with its exact truncated mass and the
    distance from the centre is an inverse-CDF truncated exponential
    ``−b·log(e^{−a/b} + V·(1 − e^{−a/b}))`` with ``V`` from :func:`ppdp.noise.uniform`; the
    result is snapped to Λ (post-processing), so the output is a grid point whatever the low
    bits of the data. Rounding moves a bin edge by at most about ``(3b + 1)·2⁻⁵³``, so each
    bin's probability is within a relative ``≈ 2⁻¹⁸`` of the ideal binned law (``b ≥ 1``;
    ``≈ 2⁻¹⁷`` at the smallest ``b``): the float sampler is ε′-DP with ε′ ≈ ε + 2p·2⁻¹⁸ per
    row (``docs/proofs/publish-baselines.md``).

    References
    ----------
    .. [JJW13] Jiang et al., Transactions on Data Privacy 6(1):19–34, 2013.
    .. [BLR08] A. Blum, K. Ligett, A. Roth. A learning theory approach to non-interactive
       database privacy. STOC 2008.
    .. [MT07] F. McSherry, K. Talwar. Mechanism design via differential privacy. FOCS 2007.
    """

    _NAME = "EXP (per-record reading of Jiang et al. 2013's EXP baseline)"
    # Its Laplace (at ε/2) is the sampler of the exponential mechanism, truncated to [0, 1].
    _NOISE = "exponential-mechanism"
    _SWAMPED = "numeric values spread almost uniformly over their declared bounds"

    def _mechanism(self) -> LaplaceMechanism:
        # Laplace at ε/2 with Δ = Δu and dimension p: scale b = 2(Δu + pΛ)/ε and grid Λ.
        c = self._params()
        eps, layout = c.epsilon, c.layout
        return LaplaceMechanism(
            epsilon=eps / 2.0,
            sensitivity=record_l1_sensitivity(layout),
            dimension=layout.n_features,
            relation=_RELATION,
            allow_large_epsilon=c.allow_large_epsilon,
        )

    def _event(self, eps: float, mech: LaplaceMechanism) -> PrivacyEvent:
        # One exponential mechanism per record at ε (the Laplace at ε/2 is only its sampler):
        # ε-bounded range, so RDP accounts it as ε²/8-zCDP (docs/proofs/composition.md).
        return Exponential(epsilon=eps)

    def _noisy(self, X: NDArray[np.float64], source: RandomSource) -> NDArray[np.float64]:
        mech = self._mechanism()
        return _truncated_laplace_unit(X, mech.scale, mech.granularity, source)

    def _assumptions(self, layout: Layout) -> tuple[str, ...]:
        du = record_l1_sensitivity(layout)
        return (
            "our reading of the paper's EXP baseline (ALGORITHMS-publishing.md A.5): the "
            "paper does not say how its EXP produced a row-aligned table",
            "n (the number of rows) is public; neighbours replace one row",
            "numeric columns clipped to their declared public bounds, categories declared",
            f"per record: exponential mechanism over [0,1]^p, u(x, r) = −‖x − r‖₁, "
            f"Δu = p1 + 2p2 = {du:g}; rows disjoint (parallel composition)",
            "centre snapped to the grid Λ (calibrated for Δu + p·Λ), output snapped to Λ",
        )


def _truncated_laplace_unit(
    centre: NDArray[np.float64], scale: float, granularity: float, source: RandomSource
) -> NDArray[np.float64]:
    """Independent Laplace(scale) variates centred at ``centre`` and truncated to ``[0, 1]``.

    ``centre`` must lie in ``[0, 1]``; it is snapped to the grid ``granularity`` first and
    the result is snapped to it too (see :class:`ExponentialPublisher`, Notes). Two words
    of ``source`` per entry.
    """
    c = np.asarray(noise.snap(centre, granularity, name="centre"), dtype=np.float64)
    scale *= noise_factor(source)  # a sampler on uniforms: as ppdp.noise's (1 but in audits)
    m = c.size
    u = np.asarray(noise.uniform(2 * m, random_state=source), dtype=np.float64)
    u_side, u_dist = u[:m].reshape(c.shape), u[m:].reshape(c.shape)
    left_len = c  # distance to 0 (exact: c is on the grid)
    right_len = 1.0 - c  # distance to 1 (exact)
    left_mass = -np.expm1(-left_len / scale)  # ∝ ∫ over the left part (common factor b)
    right_mass = -np.expm1(-right_len / scale)
    left = u_side * (left_mass + right_mass) < left_mass
    a = np.where(left, left_len, right_len)
    # Exp(scale) truncated to [0, a] by inverting its CDF (1 − e^{−t/b}) / (1 − e^{−a/b}):
    # t = −b·log(q + V(1 − q)) with q = e^{−a/b} and V = 1 − U in (0, 1] (exact). Both terms
    # are non-negative, so the argument has a small relative error everywhere, tail included
    # (the form −b·log1p(U·expm1(−a/b)) loses accuracy as U·(1 − q) nears 1).
    v = 1.0 - u_dist
    t = -scale * np.log(np.exp(-a / scale) + v * -np.expm1(-a / scale))
    t = np.minimum(t, a)
    r = np.where(left, c - t, c + t)
    out = np.asarray(noise.snap(r, granularity, name="sample"), dtype=np.float64)
    return np.clip(out, 0.0, 1.0, out=out)
