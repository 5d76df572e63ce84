"""LDA-DP (Gu, Zhang & Zhang 2022): publish a noisy Fisher discriminant and projections on it.

:class:`LDAProjectionPublisher` scales every encoded record by the schema's declared row-norm
bound (so ``‖x‖₂ ≤ 1``), releases the class sums and ``upper(Σxxᵀ)`` with Gaussian noise
(:mod:`ppdp.publish.fisher`), forms the noisy within-class scatter
``Σxxᵀ + E − Σ n_c μ̃_cμ̃_cᵀ``, adds a data-independent ridge and takes the Fisher
direction(s). The rows' projections on the direction are released with per-row Laplace
noise by default; the paper's exact projections are available behind a warning, because
they are not differentially private (ALGORITHMS-publishing B.5 item 1). The privacy argument
is ``docs/proofs/lda-dp.md``; the algorithm ALGORITHMS-publishing B.2.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp import noise
from ppdp._params import Rule, epsilon_rules
from ppdp._validation import (
    check_bool,
    check_delta,
    check_int,
    check_nonnegative,
    check_option,
    check_real,
)
from ppdp.budget import Guarantee, Neighbouring
from ppdp.data import CUSTODIAN_LOGGER, Schema
from ppdp.exceptions import (
    DataValidationError,
    LowUtilityWarning,
    NotDifferentiallyPrivateWarning,
    ParameterError,
    ParameterTypeError,
    SchemaError,
    user_stacklevel,
)
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism
from ppdp.publish._base import Charge, Publisher, Release
from ppdp.publish._noise_limits import epsilon_that_clears
from ppdp.publish.fisher import (
    CALIBRATIONS,
    ClassMoments,
    LDANoisePlan,
    class_moments,
    class_sum_mechanism,
    default_ridge,
    fisher_directions,
    from_upper,
    lda_noise_plan,
    noisy_scatter,
    second_moment_mechanism,
    upper,
)
from ppdp.random import PartitionStreams, RandomSource, RandomState

__all__ = ["RELEASES", "LDAProjectionPublisher", "projection_l1_sensitivity"]

custodian = logging.getLogger(CUSTODIAN_LOGGER)

RELEASES = ("direction", "noisy-projections", "raw-projections")
_NAME = "LDA-DP (Gu, Zhang & Zhang 2022)"
_RELATION = Neighbouring.REPLACE_ONE
_UNIT_ROUNDOFF = 2.0**-53
#: Records are divided by ``R·(1 + 2⁻³⁰)``: their computed norms then stay below 1.
_SCALE_SLACK = 1.0 + 2.0**-30
#: Per-row sensitivities are multiplied by this to cover unit columns of norm 1 + O(p·u).
_NORM_SLACK = 1.0 + 2.0**-20


def projection_l1_sensitivity(n_components: int) -> float:
    """L1 sensitivity ``2r`` of one row's ``r`` projections on unit-norm directions.

    ``Σ_j |w_jᵀ(x − x′)| ≤ Σ_j ‖w_j‖·‖x − x′‖ ≤ 2r`` for ``‖x‖, ‖x′‖ ≤ 1`` (replace-one;
    the directions are released first and are public when the rows are noised).

    >>> projection_l1_sensitivity(1)
    2.0
    """
    return 2.0 * check_int("n_components", n_components, minimum=1)


def _gamma(m: int) -> float:
    mu = m * _UNIT_ROUNDOFF
    return mu / (1.0 - mu)


def _split_epsilon(eps: float, share: float) -> tuple[float, float]:
    """(ε of the projections, ε of the direction), never adding up to more than ε."""
    e3 = eps * share
    e_dir = eps - e3
    while Decimal(repr(e3)) + Decimal(repr(e_dir)) > Decimal(repr(eps)):
        e_dir = math.nextafter(e_dir, 0.0)
    return e3, e_dir


def _add_noise(
    mech: GaussianMechanism | LaplaceMechanism,
    values: NDArray[np.float64],
    source: RandomSource,
) -> NDArray[np.float64]:
    """``snap(v, Λ) + noise`` on every entry through ``mech``'s own release path.

    ``values`` may hold many releases (a batch for the audit, or one row per record: the
    caller knows they are disjoint).
    """
    flat = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    return mech._release(flat, source).reshape(np.shape(values))


def _add_plain_gaussian(
    sigma: float, values: NDArray[np.float64], source: RandomSource
) -> NDArray[np.float64]:
    """``snap(v, Λ) + N(0, σ²)`` per entry on the grid of σ (the paper's template levels)."""
    lam = noise.granularity(sigma)
    flat = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    snapped = np.asarray(noise.snap(flat, lam), dtype=np.float64)
    drawn = noise.gaussian(sigma, flat.size, random_state=source, granularity=lam)
    return (snapped + np.asarray(drawn)).reshape(np.shape(values))


def noisy_statistics(
    plan: LDANoisePlan,
    class_sums: NDArray[np.float64],
    second_moment_upper: NDArray[np.float64],
    source: RandomSource,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The noisy class means ``(..., K, d)`` and noisy ``upper(Σxxᵀ)`` (batch dims allowed).

    ``"gaussian"``: the plan's two Gaussian mechanisms on the class sums and the upper
    triangle (then divided by the public counts); ``"paper"``: the template levels added to
    the means and the upper triangle directly.
    """
    counts = np.asarray(plan.details["class_counts"], dtype=np.float64)
    if plan.calibration == "gaussian":
        sums = _add_noise(class_sum_mechanism(plan), class_sums, source)
        q = _add_noise(second_moment_mechanism(plan), second_moment_upper, source)
        return sums / counts[:, None], q
    means = class_sums / counts[:, None]
    noisy_means = np.empty_like(means)
    for c, sigma in enumerate(plan.mean_sigmas):
        noisy_means[..., c, :] = _add_plain_gaussian(sigma, means[..., c, :], source)
    q = _add_plain_gaussian(plan.scatter_sigma, second_moment_upper, source)
    return noisy_means, q


def _project_partition(
    encoded: tuple[NDArray[np.float64], Any],
    index: int,
    streams: PartitionStreams | None,
    W: NDArray[np.float64],
    scale: float,
    mech: LaplaceMechanism | None,
) -> pd.DataFrame:
    """One partition's projections ``(x/R)ᵀW`` (plus its own Laplace noise), on a worker.

    Partition ``index`` reads only ``streams.stream(index)``; its rows' noise is drawn once,
    here (``mech`` None: the exact projections of ``release="raw-projections"``).
    """
    X = np.asarray(encoded[0], dtype=np.float64) / scale
    Y = X @ W
    if mech is not None:
        assert streams is not None
        Y = _add_noise(mech, Y, streams.stream(index))
    return pd.DataFrame(Y, columns=[f"lda_{j + 1}" for j in range(W.shape[1])])


def _check_label_schema(schema: Any) -> Schema:
    if not isinstance(schema, Schema):
        raise ParameterTypeError(
            f"schema ({type(schema).__name__}) must be a ppdp.data.Schema; "
            "load one with Schema.from_file(path)"
        )
    if schema.label is None:
        raise SchemaError(
            "LDAProjectionPublisher needs a schema with a label (its classes); "
            "this schema declares none"
        )
    return schema


def _check_delta_below_one(value: Any, _: Mapping[str, Any]) -> float:
    delta = check_delta("delta", value, allow_zero=False)
    if delta >= 1.0:
        raise ParameterError(f"delta ({value!r}) must be in (0, 1)")
    return delta


def _check_counts(declared: Any, checked: Mapping[str, Any]) -> tuple[int, ...]:
    schema = checked["schema"]
    K = schema.label.n_classes
    if declared is None:
        declared = schema.label.public_counts
        if declared is None:
            raise ParameterError(
                f"class_counts (None): the label {schema.label.name!r} declares no "
                "public_counts; LDA-DP treats the class sizes as public, so declare them "
                "in the schema or pass class_counts=[...] (an assumption of the guarantee)"
            )
    if isinstance(declared, (str, bytes)) or not isinstance(declared, (Sequence, np.ndarray)):
        raise ParameterTypeError(
            f"class_counts ({declared!r}) must be a sequence of {K} non-negative integers"
        )
    counts = tuple(check_int("class_counts", c, minimum=0) for c in declared)
    if len(counts) != K:
        raise ParameterError(
            f"class_counts ({list(counts)!r}) must give one size per class of "
            f"{schema.label.name!r} ({K} classes)"
        )
    if min(counts) < 1:
        raise ParameterError(
            f"class_counts ({list(counts)!r}) must all be >= 1: a class without rows has no mean"
        )
    return counts


def _check_components(value: Any, checked: Mapping[str, Any]) -> int:
    K, p = len(checked["counts"]), checked["p"]
    r_max = min(K - 1, p)
    if value is None:
        return r_max
    r = check_int("n_components", value, minimum=1)
    if r > r_max:
        raise ParameterError(
            f"n_components ({r}) must be an integer in 1..{r_max}: {K} classes give at "
            f"most K - 1 = {K - 1} discriminant directions (p = {p} features)"
        )
    return r


def _check_share(value: Any, _: Mapping[str, Any]) -> float:
    share = check_real("projection_share", value)
    if not (0.0 < share < 1.0):
        raise ParameterError(f"projection_share ({value!r}) must be in (0, 1)")
    return share


def _split(checked: Mapping[str, Any]) -> tuple[float, float]:
    """``(ε₃, ε_dir)``: the projections' share and the direction's."""
    if checked["release"] == "noisy-projections":
        return _split_epsilon(checked["eps"], checked["share"])
    return 0.0, checked["eps"]


def _plan(mean_share: Any, checked: Mapping[str, Any]) -> LDANoisePlan:
    return lda_noise_plan(
        epsilon=checked["e_dir"],
        delta=checked["delta"],
        n_features=checked["p"],
        class_counts=checked["counts"],
        calibration=checked["calibration"],
        mean_share=mean_share,
        allow_large_epsilon=True,  # a share of an ε already checked
    )


def _check_ridge(value: Any, checked: Mapping[str, Any]) -> float:
    if isinstance(value, str):
        if value != "auto":
            raise ParameterError(f"ridge ({value!r}) must be 'auto' or a number >= 0")
        return default_ridge(checked["plan"])
    if isinstance(value, bool):
        raise ParameterTypeError(f"ridge ({value!r}) must be 'auto' or a number >= 0")
    return check_nonnegative("ridge", value)


@dataclass(frozen=True)
class LDAProjectionParams:
    """The validated parameters of :class:`LDAProjectionPublisher`, the budget split and the
    noise plan (built once per ``fit``)."""

    schema: Schema
    allow_large_epsilon: bool
    eps: float
    delta: float
    release: str
    calibration: str
    counts: tuple[int, ...]
    p: int
    r: int
    share: float
    e3: float
    e_dir: float
    plan: LDANoisePlan
    remove_constant: bool
    ridge: float


#: LDA-DP's constraint table, in the order the parameters are checked (``p``, ``e3``
#: and ``e_dir`` are derived from the fields before them).
LDA_PROJECTION_CONSTRAINTS: tuple[Rule, ...] = (
    Rule("schema", lambda v, _: _check_label_schema(v)),
    *epsilon_rules("eps"),
    Rule("delta", _check_delta_below_one),
    Rule("release", lambda v, _: check_option("release", v, RELEASES)),
    Rule("calibration", lambda v, _: check_option("calibration", v, CALIBRATIONS)),
    Rule("counts", _check_counts, attribute="class_counts"),
    Rule("p", lambda v, _: v.n_features, attribute="schema"),
    Rule("r", _check_components, attribute="n_components"),
    Rule("share", _check_share, attribute="projection_share"),
    Rule("e3", lambda _, c: _split(c)[0], attribute="projection_share"),
    Rule("e_dir", lambda _, c: _split(c)[1], attribute="projection_share"),
    Rule("plan", _plan, attribute="mean_share"),
    Rule("remove_constant", lambda v, _: check_bool("remove_constant", v)),
    Rule("ridge", _check_ridge),
)


class LDAProjectionPublisher(Publisher):
    """Publish a noisy Fisher discriminant (LDA-DP) and, by default, noisy projections on it.

    ``fit(df)`` encodes the features (label excluded) with the schema and divides every row
    by the declared row-norm bound ``R = schema.max_row_l2_norm`` (``√(p1 + p2)``, or the
    schema's ``row_norm_bound``), so ``‖x‖₂ ≤ 1`` without looking at the data. It then
    releases, with the Gaussian mechanism, the class sums (``Δ₂ = 2``) and ``upper(Σxxᵀ)``
    (``Δ₂ = √2``); the rest is post-processing: ``μ̃_c = S̃_c/n_c``,
    ``S̃_w = Σxxᵀ + E − Σ n_c μ̃_cμ̃_cᵀ``, a ridge ``λI`` fixed from public quantities, and the
    Fisher direction ``∝ (S̃_w + λI)⁻¹(μ̃₁ − μ̃₂)`` (two classes) or the ``K − 1`` leading
    discriminant directions (``K > 2``), each of unit norm.

    Guarantee (``release`` ``"direction"`` or ``"noisy-projections"``): (ε, δ)-differential
    privacy under replace-one neighbours **within a class** (a record is replaced by one of
    the same class), with ``n`` and the class counts public (declared, never read from the
    data). Class membership of individual rows is not protected by that relation.

    Parameters
    ----------
    epsilon : float
        Total ε > 0 of one ``fit`` (at most 10 unless ``allow_large_epsilon``).
    delta : float
        δ in (0, 1), all of it for the direction (the per-row noise is pure ε). Should be
        well below ``1/n``.
    schema : Schema
        Declared schema with a label of K ≥ 2 classes.
    n_components : int, optional
        Number of discriminant directions ``r``, in ``1..min(K − 1, p)``; default ``K − 1``.
    calibration : {"gaussian", "paper"}, default "gaussian"
        ``"gaussian"``: analytic Gaussian mechanism on the sums (recommended). ``"paper"``:
        the MOD-SULQ-style template levels of ALGORITHMS-publishing B.3 (valid, noisier).
    release : {"noisy-projections", "direction", "raw-projections"}, default "noisy-projections"
        ``"direction"``: the direction(s) only. ``"noisy-projections"``: also every row's
        projections ``ŵᵀx`` plus ``Lap(2r/ε₃)`` with ``ε₃ = projection_share·ε`` (per-row L1
        sensitivity ``2r``; rows are disjoint). ``"raw-projections"``: the paper's release,
        the exact ``ŵᵀx`` of every row: warns :class:`NotDifferentiallyPrivateWarning`; the
        direction is still (ε, δ)-DP, but the rows are not protected at all.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (default) uses the OS CSPRNG; anything else is reproducible, warns, and the
        ledger records the release as seeded.
    class_counts : sequence of int, optional
        The public class sizes. Default: the label's declared ``public_counts``; if the schema
        declares none, pass them here (declaring them public is an assumption of the
        guarantee). Checked against the data before anything is spent.
    mean_share : float, default 0.5
        Share of the direction's (ε, δ) spent on the class sums (the rest on ``Σxxᵀ``).
    projection_share : float, default 0.5
        Share of ε spent on the per-row noise (``"noisy-projections"`` only).
    ridge : "auto" or float, default "auto"
        ``λ ≥ 0`` added to ``S̃_w``. ``"auto"``: :func:`ppdp.publish.fisher.default_ridge`,
        the expected size of the noise in ``S̃_w``, from ε, δ, ``p`` and the counts only.
    remove_constant : bool, default True
        Compute the directions orthogonal to each one-hot block's indicator vector: every
        encoded row has the same coordinate along it (its block sums to 1), so it cannot
        separate classes, while the noise in the singular scatter would dominate there.
        Decided from the schema alone (skipped when a ``row_norm_bound`` can rescale rows);
        post-processing.
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Attributes
    ----------
    release_ : Release
        ``data``: a DataFrame of the projections (columns ``lda_1..lda_r``, rows in input
        order; ``None`` for ``"direction"``); ``encoded``: the same as an array;
        ``statistics``: ``directions`` (p, r; in the scaled-record space), ``class_means``
        (K, p), ``second_moment_sum`` (p, p), ``scatter`` (p, p; ``S̃_w``), ``class_counts``
        (K,), ``ridge`` (1,), ``scale`` (1,; the divisor of the encoded rows) and
        ``projections`` when released; ``guarantee``. After a distributed fit (see Notes)
        ``data`` is a lazy Dask DataFrame reading the ``output`` folder back, ``encoded`` is
        None and ``statistics`` has no ``projections``.

    Post-processing (free): :meth:`transform` projects other rows on the direction(s);
    :meth:`decision_function` and :meth:`predict` apply the LDA rule built from the release
    and the public counts (a DP classifier that needs no per-row release).

    Warns
    -----
    NotDifferentiallyPrivateWarning
        ``release="raw-projections"``.
    LowUtilityWarning
        Before anything is spent, when the per-row Laplace noise on the projections
        (``"noisy-projections"``) has a scale at least the projection's range (2): the message
        names the ε at which it would not (:meth:`low_utility_message`); with the default
        ``projection_share`` that is every ε ≤ 2. Also when the noise on a class mean
        (``√p·σ_c``) reaches 1, the largest norm a mean of scaled records can have. Both are
        decided from public quantities only.
    PrivacyLeakWarning
        ``δ ≥ 1/n``.

    Raises
    ------
    ParameterError, ParameterTypeError, SchemaError
        Invalid parameters, no label, no public class counts; before anything is read.
    DataValidationError
        Invalid data, fewer than 2 rows, class counts that are not the data's; nothing is
        charged.
    BudgetExceededError
        The accountant cannot afford (ε, δ); the data are not read.

    Notes
    -----
    Composition: class sums ``(ε₁, δ₁)``, ``Σxxᵀ`` ``(ε₂, δ₂)``, per-row noise ``ε₃``
    (parallel over rows), basic composition to ``(ε₁ + ε₂ + ε₃, δ₁ + δ₂)``. Numerical caveats:
    the Gaussian and Laplace noise are on power-of-two grids with the sensitivities padded
    for the grid and for float summation (``docs/proofs/noise.md``); the per-row sensitivity
    is padded for the rounding of the dot products. The template calibration (``"paper"``)
    follows a proof that ignores floating point. ``S̃_w`` may be indefinite: its eigenvalues
    are floored (post-processing).

    Distributed input: ``fit`` also takes a Dask DataFrame or a Parquet dataset
    (``scheduler=``; ``output=``, a new folder, is required unless ``release="direction"``,
    and refused then). One scan runs the in-memory checks on the whole table (declared class
    counts against the table's, ``n ≥ 2``, the ``δ ≥ 1/n`` warning; errors carry whole-table
    counts and nothing is spent) and reduces the class sums and ``Σxxᵀ`` of the scaled
    records (:class:`ppdp.publish.fisher.ClassMoments`). Their noise is drawn in the driver in
    the in-memory order, so the same seed gives the same directions. The projections are
    computed partition by partition, partition ``i`` drawing its rows' Laplace noise from
    ``PartitionStreams(source).stream(i)`` (created after the statistics' noise), and
    written to ``output`` in row order inside ``fit``: the same seed and partitioning give
    the same rows; against memory they agree in distribution.

    References
    ----------
    .. [GZZ22] Z. Gu, K. Zhang, G. Zhang. Multiparty data publishing via blockchain and
       differential privacy. Security and Communication Networks, 2022, 5612794.
    .. [BW18] B. Balle, Y.-X. Wang. Improving the Gaussian mechanism for differential
       privacy: analytical calibration and optimal denoising. ICML 2018.
    .. [CSS13] K. Chaudhuri, A. D. Sarwate, K. Sinha. A near-optimal algorithm for
       differentially-private principal components. JMLR 14, 2013.

    Examples
    --------
    >>> from ppdp.datasets import load_adult
    >>> df, schema = load_adult()
    >>> counts = df["income"].value_counts().reindex(["<=50K", ">50K"]).tolist()
    >>> pub = LDAProjectionPublisher(1.0, 1e-6, schema, class_counts=counts)
    >>> pub.privacy_budget()
    PrivacyBudget(epsilon=1.0, delta=1e-06)
    >>> pub.fit(df).release_.data.shape  # doctest: +SKIP
    (45222, 1)
    """

    supports_distributed: ClassVar[bool] = True
    output_kind: ClassVar[str] = "projection"
    _params_type = LDAProjectionParams
    _constraints = LDA_PROJECTION_CONSTRAINTS

    def __init__(
        self,
        epsilon: float,
        delta: float,
        schema: Schema,
        *,
        n_components: int | None = None,
        calibration: str = "gaussian",
        release: str = "noisy-projections",
        random_state: RandomState = None,
        class_counts: Sequence[int] | None = None,
        mean_share: float = 0.5,
        projection_share: float = 0.5,
        ridge: float | str = "auto",
        remove_constant: bool = True,
        allow_large_epsilon: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.schema = schema
        self.n_components = n_components
        self.calibration = calibration
        self.release = release
        self.random_state = random_state
        self.class_counts = class_counts
        self.mean_share = mean_share
        self.projection_share = projection_share
        self.ridge = ridge
        self.remove_constant = remove_constant
        self.allow_large_epsilon = allow_large_epsilon

    # -- parameters -----------------------------------------------------------------------

    def _schema(self) -> Schema:
        return _check_label_schema(self.schema)

    def _counts(self) -> tuple[int, ...]:
        return self._params().counts

    def _params(self) -> LDAProjectionParams:
        params: LDAProjectionParams = super()._params()
        return params

    def _projection_mechanism(self, e3: float, r: int, p: int) -> LaplaceMechanism:
        rounding = 2.0 * r * _gamma(p)
        return LaplaceMechanism(
            epsilon=e3,
            sensitivity=(projection_l1_sensitivity(r) + rounding) * _NORM_SLACK,
            dimension=r,
            relation=_RELATION,
            allow_large_epsilon=True,
        )

    def _planned_charges(self, n_rows: int | None) -> list[Charge]:
        c = self._params()
        plan: LDANoisePlan = c.plan
        common = {
            "relation": _RELATION.value,
            "neighbours": "replace-one within a class; n and class counts public",
            "class_counts": list(c.counts),
            "n_features": c.p,
            "calibration": plan.calibration,
        }
        mean_details: dict[str, Any] = {
            **common,
            "query": "the K class sums of the scaled records (‖x‖₂ ≤ 1)",
            "sensitivity": plan.details["class_sum_sensitivity"],
            "norm": "l2",
            "mean_sigmas": list(plan.mean_sigmas),
        }
        scatter_details: dict[str, Any] = {
            **common,
            "query": "upper(Σxxᵀ) of the scaled records, diagonal included",
            "sensitivity": plan.details["second_moment_sensitivity"],
            "norm": "l2",
            "scatter_sigma": plan.scatter_sigma,
        }
        mean_event: Any = plan.mean_budget
        scatter_event: Any = plan.scatter_budget
        if plan.calibration == "gaussian":
            # Typed Gaussian events (σ, Δ, the grid): tight compositions use them.
            mean_mech, scatter_mech = class_sum_mechanism(plan), second_moment_mechanism(plan)
            mean_event, scatter_event = mean_mech.event, scatter_mech.event
            mean_details.update(mean_mech.ledger_details())
            scatter_details.update(scatter_mech.ledger_details())
            mean_details["relation"] = scatter_details["relation"] = _RELATION.value
        charges = [
            Charge(mean_event, f"{_NAME}: Gaussian on the class sums", mean_details),
            Charge(scatter_event, f"{_NAME}: Gaussian on Σxxᵀ", scatter_details),
        ]
        if c.release == "noisy-projections":
            mech = self._projection_mechanism(c.e3, c.r, c.p)
            charges.append(
                Charge(
                    mech.event,  # the same Laplace on disjoint rows: parallel composition
                    f"{_NAME}: Laplace on each row's projections",
                    {
                        "query": f"per row, its projections on the {c.r} released directions",
                        "sensitivity_formula": "2r per row (‖x‖₂ ≤ 1, unit directions), "
                        "padded for rounding; rows disjoint (parallel composition)",
                        "n_components": c.r,
                        **mech.ledger_details(),
                    },
                )
            )
        if n_rows is not None and c.release == "noisy-projections":
            message = self.low_utility_message()  # public quantities only, before the spend
            if message:
                warnings.warn(message, LowUtilityWarning, stacklevel=user_stacklevel())
        if n_rows is not None and c.release == "raw-projections":
            warnings.warn(
                "release='raw-projections' publishes the exact projection of every record on "
                "the direction: the direction is differentially private, the rows are NOT "
                "(ALGORITHMS-publishing B.5 item 1); use 'noisy-projections' or 'direction'",
                NotDifferentiallyPrivateWarning,
                stacklevel=user_stacklevel(),
            )
        return charges

    def low_utility_message(self) -> str | None:
        """Why the planned noisy projections would be mostly noise, or None; spends nothing.

        From public quantities only (the parameters and the schema), so it is said before the
        spend: :meth:`fit` warns it as a :class:`~ppdp.exceptions.LowUtilityWarning` and
        ``ppdp publish`` prints it as one line before reading the data. A scaled
        record has ``‖x‖₂ ≤ 1`` and each released direction is a unit vector, so each
        projection lies in ``[-1, 1]`` (range 2). The Laplace scale per projection is about
        ``sensitivity / ε₃`` (plus the rounding pad) with ``ε₃ = projection_share · ε``;
        the message names the smallest ε (rounded up to 3 significant digits) at which the
        scale falls below the range. None for the other releases, or when the scale is
        below the range.
        """
        c = self._params()
        if c.release != "noisy-projections":
            return None
        r, p = c.r, c.p
        mech = self._projection_mechanism(c.e3, r, p)
        value_range = 2.0
        if mech.scale < value_range:
            return None
        share = float(self.projection_share)

        def scale_at(eps: float) -> float:
            return self._projection_mechanism(_split_epsilon(eps, share)[0], r, p).scale

        needed = epsilon_that_clears(
            mech.sensitivity / (value_range * share), lambda eps: scale_at(eps) >= value_range
        )
        return (
            f"noisy projections at epsilon {self.epsilon}: the Laplace noise on each row's "
            f"projection has scale {mech.scale:.3g}, at least the projection's whole range "
            f"({value_range:g}, from -1 to 1), so the released rows will be mostly noise; "
            f"use epsilon above {needed:g} (projection_share {share:g}), or "
            "release='direction'"
        )

    def _constant(self) -> NDArray[np.float64] | None:
        """Indicator vectors of the one-hot blocks (label excluded), or None.

        Every encoded row has exactly one 1 per block, so its coordinate along the block's
        indicator is the same for every row, unless a declared ``row_norm_bound`` below the
        natural bound can rescale rows (then None).
        """
        schema = self._schema()
        if not self.remove_constant or not schema.categorical_columns:
            return None
        if schema.row_norm_bound is not None:
            layout = schema.layout()
            if schema.row_norm_bound < math.sqrt(layout.p1 + layout.p2):
                return None
        cols = []
        for col in schema.categorical_columns:
            block = schema.blocks[col.name]
            v = np.zeros(schema.n_features)
            v[block] = 1.0
            cols.append(v)
        return np.stack(cols, axis=1)

    # -- data -----------------------------------------------------------------------------

    @property
    def scale_(self) -> float:
        """The divisor of every encoded row, ``R·(1 + 2⁻³⁰)`` (declared, data-independent)."""
        return float(self._schema().max_row_l2_norm) * _SCALE_SLACK

    def _encode(
        self, df: pd.DataFrame, on_invalid: str = "raise"
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
        c = self._params()
        schema = self._schema()
        X, y = schema.encode(df, on_invalid=on_invalid)
        if y is None:  # pragma: no cover - the schema has a label, so encode returns codes
            raise DataValidationError("the data must have the label column")
        self._check_table(X.shape[0], np.bincount(y, minlength=len(c.counts)), on_invalid)
        return X / self.scale_, y

    def _check_table(self, n: int, data_counts: NDArray[np.int64], on_invalid: str) -> None:
        """The data checks on ``n`` and the table's class counts (in memory and distributed).

        ``data_counts`` are the true class sizes (custodian only): compared with the
        declared counts, never released.
        """
        c = self._params()
        if n < 2:
            raise DataValidationError(f"data has {n} row(s); LDA-DP needs n >= 2")
        counts = c.counts
        wrong = not np.array_equal(data_counts, counts)
        if sum(counts) == n and wrong and on_invalid == "mask":
            # Total mode: comparing the declared counts with the data would be a free
            # (binary-search) oracle on the class sizes; n itself is public.
            custodian.warning(
                "LDAProjectionPublisher: the declared class counts are not this table's class "
                "sizes; they were used as declared (on_invalid='mask')"
            )
        elif sum(counts) != n:
            raise DataValidationError(
                f"the declared class counts {list(counts)} sum to {sum(counts)} but the table "
                f"has {n} rows; declare the true, public class sizes"
            )
        elif wrong:
            raise DataValidationError(
                f"the declared class counts {list(counts)} sum to the table's {n} rows but "
                "split them differently from its labels; declare the true, public class sizes"
            )
        plan: LDANoisePlan = c.plan
        worst = max(plan.mean_sigmas) * math.sqrt(c.p)
        if worst >= 1.0:
            warnings.warn(
                f"the class sizes are small for epsilon ({self.epsilon}): the noise on a class "
                f"mean has norm about {worst:.3g}, while the mean of scaled records has norm "
                "at most 1; the direction will be mostly noise",
                LowUtilityWarning,
                stacklevel=user_stacklevel(),
            )

    # -- release --------------------------------------------------------------------------

    def _release(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64] | None,
        source: RandomSource,
        charges: list[Charge],
    ) -> Release:
        assert y is not None
        c = self._params()
        r, p = c.r, c.p
        statistics = self._directions(class_moments(X, y, len(c.counts)), source)
        W = statistics["directions"]
        Y: NDArray[np.float64] | None = None
        if c.release == "noisy-projections":
            mech = self._projection_mechanism(c.e3, r, p)
            Y = _add_noise(mech, X @ W, source)
            statistics["projections"] = Y
        elif c.release == "raw-projections":
            Y = X @ W
            statistics["projections"] = Y
        data = None
        if Y is not None:
            data = pd.DataFrame(Y, columns=[f"lda_{j + 1}" for j in range(r)])
        return Release(data=data, encoded=Y, guarantee=self._guarantee(c), statistics=statistics)

    def _directions(
        self, moments: ClassMoments, source: RandomSource
    ) -> dict[str, NDArray[np.float64]]:
        """The noise on the exact class sums and ``upper(Σxxᵀ)``, then the direction(s).

        One draw from ``source`` for each statistic, in this order, whether ``moments`` come
        from memory or from a distributed scan; the rest is post-processing.
        """
        c = self._params()
        plan: LDANoisePlan = c.plan
        counts = np.asarray(c.counts)
        p, r = c.p, c.r
        second = upper(moments.second_moment)
        means, q = noisy_statistics(plan, moments.class_sums, second, source)
        Q = from_upper(q, p)
        S = noisy_scatter(Q, means, c.counts)
        W = fisher_directions(
            means, c.counts, S, ridge=c.ridge, n_components=r, constant=self._constant()
        )
        return {
            "directions": W,
            "class_means": means,
            "second_moment_sum": Q,
            "scatter": S,
            "class_counts": counts.astype(np.float64),
            "ridge": np.array([c.ridge]),
            "scale": np.array([self.scale_]),
        }

    # -- distributed input ------------------------------------------------------------------

    @property
    def row_level_output(self) -> bool:  # type: ignore[override]
        """True unless ``release="direction"``: then a distributed fit writes no rows."""
        return check_option("release", self.release, RELEASES) != "direction"

    def _distributed_include_label(self) -> bool:
        return False  # the features only; the label comes as class codes

    def _partition_statistics(
        self, X: NDArray[np.float64], y: NDArray[np.int64] | None
    ) -> ClassMoments:
        """Class counts, class sums and ``Σxxᵀ`` of one partition's scaled records."""
        assert y is not None
        return class_moments(X / self.scale_, y, len(self._counts()))

    def _check_scan(self, scan: Any, on_invalid: str) -> None:
        """The in-memory checks (n >= 2, declared class counts, utility)."""
        K = len(self._counts())
        counts = np.zeros(K, dtype=np.int64) if scan.value is None else scan.value.counts
        self._check_table(scan.n_rows, counts, on_invalid)

    def _release_distributed(
        self,
        frame: Any,
        scan: Any,
        source: RandomSource,
        charges: list[Charge],
        *,
        scheduler: Any,
        output: Any,
    ) -> Release:
        """The direction(s) in the driver from the reduced statistics; rows partition-wise.

        The noise on the statistics is drawn from ``source`` exactly as in memory; only then
        is :class:`~ppdp.random.PartitionStreams` created from the same source, and
        partition ``i`` draws its rows' Laplace noise from ``stream(i)``. The projections
        are written once to ``output``, in row order, and read back lazily.
        """
        c = self._params()
        statistics = self._directions(scan.value, source)
        data = None
        if c.release != "direction":
            from dask import delayed

            from ppdp.data.distributed import (
                encoded_partitions,
                read_parquet_dataset,
                write_parquet_dataset,
            )

            noisy = c.release == "noisy-projections"
            mech = self._projection_mechanism(c.e3, c.r, c.p) if noisy else None
            streams = PartitionStreams(source) if noisy else None
            parts = encoded_partitions(frame, self.schema, include_label=False, scan=scan)
            rows = [
                delayed(_project_partition, pure=False)(
                    part,
                    i,
                    streams,
                    statistics["directions"],
                    self.scale_,
                    mech,
                )
                for i, part in enumerate(parts)
            ]
            data = read_parquet_dataset(write_parquet_dataset(rows, output, scheduler=scheduler))
        return Release(data=data, encoded=None, guarantee=self._guarantee(c), statistics=statistics)

    def _guarantee(self, c: LDAProjectionParams) -> Guarantee:
        plan: LDANoisePlan = c.plan
        e_dir = plan.mean_budget.epsilon + plan.scatter_budget.epsilon
        assumptions = [
            "neighbours replace one record by another of the same class; n and the class "
            f"counts {list(c.counts)} are public (declared, not protected)",
            "numeric columns clamped to their declared bounds, categories declared; every "
            f"encoded row divided by the declared bound {self.scale_:.6g} so ‖x‖₂ ≤ 1",
            f"class sums: Gaussian, L2 sensitivity 2, (ε₁, δ₁) = ({plan.mean_budget.epsilon:g}, "
            f"{plan.mean_budget.delta:g}); upper(Σxxᵀ): Gaussian, L2 sensitivity √2, "
            f"(ε₂, δ₂) = ({plan.scatter_budget.epsilon:g}, {plan.scatter_budget.delta:g}); "
            f"calibration {plan.calibration!r}",
            f"scatter Σxxᵀ − Σ n_c μ̃μ̃ᵀ, ridge λ = {c.ridge:.6g} (data-independent), "
            "eigenvalue floor and Fisher direction(s): post-processing",
        ]
        details = {
            "release": c.release,
            "n_components": c.r,
            "epsilon_direction": e_dir,
            "epsilon_projections": c.e3,
            "ridge": c.ridge,
            "scale": self.scale_,
            "plan": plan.details,
        }
        if c.release == "raw-projections":
            return Guarantee.none(
                "raw projections: the exact projection ŵᵀx of every record is released, so "
                "the rows are NOT protected (ALGORITHMS-publishing B.5 item 1); only the "
                f"direction alone is ({e_dir:g}, {c.delta:g})-DP",
                mechanism=_NAME,
                assumptions=tuple(assumptions),
                details=details,
            )
        if c.release == "noisy-projections":
            assumptions.append(
                f"projections: Laplace per entry, L1 sensitivity 2r = "
                f"{projection_l1_sensitivity(c.r):g} per row (padded for rounding), "
                f"ε₃ = {c.e3:g}, parallel composition over rows"
            )
        assumptions.append("basic composition of the parts")
        return Guarantee.approx(
            c.eps,
            c.delta,
            relation=_RELATION,
            mechanism=_NAME,
            assumptions=tuple(assumptions),
            details=details,
        )

    # -- post-processing ------------------------------------------------------------------

    @property
    def directions_(self) -> NDArray[np.float64]:
        """The released unit direction(s), shape (p, r), in the scaled-record space."""
        return self._check_fitted().statistics["directions"]

    def output_table(self) -> pd.DataFrame:
        """The table a file workflow writes: the released projections, or (``release=
        "direction"``) the direction(s), one row per feature."""
        release = self._check_fitted()
        if release.data is not None:
            return release.data
        W = release.statistics["directions"]
        table = pd.DataFrame(W, columns=[f"lda_{j + 1}" for j in range(W.shape[1])])
        table.insert(0, "feature", list(self.schema.feature_names))
        return table

    def guarantee_fields(self) -> dict[str, Any]:
        """The direction(s), the feature names and the row scale: what the report and the
        projection of new rows need from the guarantee file."""
        stats = self._check_fitted().statistics
        return {
            "directions": stats["directions"].tolist(),
            "features": list(self.schema.feature_names),
            "row_scale": float(stats["scale"][0]),
        }

    def transform(self, df: pd.DataFrame) -> NDArray[np.float64]:
        """Project a table on the released direction(s): ``(encode(df)/R)·W``.

        Free post-processing of the release for data that are **not** the protected table
        (a held-out test set, new records). Projecting the protected rows themselves and
        publishing the result is the paper's non-private release (``"raw-projections"``).

        Parameters
        ----------
        df : DataFrame
            The schema's feature columns (the label column may be present and is ignored).

        Returns
        -------
        ndarray of shape (n, r)
        """
        W = self.directions_
        schema = self._schema()
        X, _ = schema.without_label().encode(df)
        return (X / self.scale_) @ W

    def decision_function(self, df: pd.DataFrame) -> NDArray[np.float64]:
        """LDA class scores of new rows from the release alone: shape (n,) for two classes,
        (n, K) for K > 2, as scikit-learn's ``decision_function``.

        With two classes the score is ``s_1 − s_0``: positive means the second declared class
        (so ``roc_auc_score(y == classes[1], scores)`` works directly).

        On the projections ``z = Wᵀx``: class means ``m_c = Wᵀμ̃_c``, pooled covariance
        ``Σ = Wᵀ(S̃_w + λI)W/(n − K)`` (the regularised matrix the directions came from), and
        priors ``n_c/n`` from the public counts. The score of class ``c`` is
        ``zᵀΣ⁻¹m_c − ½m_cᵀΣ⁻¹m_c + ln(n_c/n)``. Post-processing of the release: the classifier
        is (ε, δ)-DP whatever the release mode, and it needs no per-row release.
        """
        st = self._check_fitted().statistics
        W = st["directions"]
        counts = st["class_counts"]
        n, K = float(counts.sum()), counts.size
        m = st["class_means"] @ W  # (K, r)
        p = W.shape[0]
        cov = W.T @ (st["scatter"] + float(st["ridge"][0]) * np.eye(p)) @ W / max(n - K, 1.0)
        vals, vecs = np.linalg.eigh(0.5 * (cov + cov.T))
        vals = np.maximum(vals, 1e-12 * max(1.0, float(np.max(np.abs(vals)))))
        prec = (vecs / vals) @ vecs.T
        z = self.transform(df)
        scores = self._class_scores(z, prec, m, counts / n)
        return scores[:, 1] - scores[:, 0] if K == 2 else scores

    @staticmethod
    def _class_scores(
        z: NDArray[np.float64],
        prec: NDArray[np.float64],
        m: NDArray[np.float64],
        priors: NDArray[np.float64],
    ) -> NDArray[np.float64]:
        return z @ prec @ m.T - 0.5 * np.einsum("ci,ij,cj->c", m, prec, m) + np.log(priors)

    def predict(self, df: pd.DataFrame) -> NDArray[Any]:
        """The class of each row by the LDA rule of :meth:`decision_function` (schema's classes)."""
        schema = self._schema()
        assert schema.label is not None
        scores = self.decision_function(df)
        codes = (scores > 0).astype(int) if scores.ndim == 1 else np.argmax(scores, axis=1)
        return np.asarray(schema.label.classes, dtype=object)[codes]
