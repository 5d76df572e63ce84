"""DP-LDA synthetic data (Jiang et al. 2013): noisy class sums and second moment, then a sampler.

``fit`` releases, with one Laplace mechanism, the per-class sums ``S^(c) = Σ_{x∈C_c} x``
(``K × p``) and the pooled second moment ``Q = upper(Σ_all x xᵀ)`` of the encoded feature rows
(``[0, 1]`` numerics and one-hot dummies, the label block excluded). Everything afterwards is
post-processing of that release: the noisy class means ``μ̃_c = S̃^(c)/n_c``, the noisy
second moment ``M̃ = Q̃/n`` and a synthetic table generated from them alone by the greedy L1
sampler (:mod:`ppdp.publish._l1_sampler`). The privacy argument is in
``docs/proofs/dp-lda.md``; the algorithm in ``ALGORITHMS-publishing.md`` A.4.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp import noise
from ppdp._params import Rule, epsilon_rules
from ppdp._validation import check_int, check_option, check_real
from ppdp.budget import Guarantee, Neighbouring
from ppdp.data import Schema
from ppdp.data.stats import SufficientStats, float_sum_error_bound
from ppdp.exceptions import (
    DataValidationError,
    LowUtilityWarning,
    ParameterError,
    ParameterTypeError,
    SchemaError,
    user_stacklevel,
)
from ppdp.mechanisms import LaplaceMechanism
from ppdp.publish._base import Charge, Publisher, Release
from ppdp.publish._l1_sampler import SamplerLayout, greedy_l1_sample
from ppdp.random import PartitionStreams, RandomSource, RandomState, resolve_random_state

__all__ = ["DPLDASynthesizer", "lda_l1_sensitivity", "part_class_counts", "part_sizes"]

logger = logging.getLogger(__name__)
custodian = logging.getLogger("ppdp.custodian")

_MECHANISM = "DP-LDA synthesizer (Jiang et al. 2013)"
_CLASS_SIZES = ("public", "noisy")
#: L1 sensitivity of a class histogram under replace-one (one row changes class).
_COUNT_SENSITIVITY = 2.0
#: Synthetic rows per output part of a distributed fit: each part is generated on one
#: worker, in memory (about ``2¹⁶ · p · 8`` bytes of encoded rows), whatever ``n`` is; the
#: greedy sampler takes about 3 ms of CPU per row at p = 50, so a part is minutes of one core.
_ROWS_PER_PART = 1 << 16


def lda_l1_sensitivity(p1: int, p2: int) -> float:
    """Joint L1 sensitivity of the class sums and ``upper(Σ x xᵀ)`` under replace-one.

    ``2(p1 + p2) + p1(p1 + 1)/2 + 2·p1·p2 + p2(p2 + 1)`` for ``p1`` numeric columns in
    ``[0, 1]`` and ``p2`` one-hot blocks (ALGORITHMS-publishing A.4, the safe bound). The
    class sums move by at most ``‖x‖₁ + ‖x'‖₁ ≤ 2(p1 + p2)`` (a row moving to another class;
    within a class ``‖x − x'‖₁ ≤ p1 + 2p2`` is smaller); the second moment by at most the
    A.3 block-by-block bound. Any number of classes. The paper's categorical bound is too
    small when ``p2 ≥ 2``; see ``docs/proofs/dp-lda.md``.

    >>> lda_l1_sensitivity(5, 5)  # Adult's features
    115.0
    """
    p1 = check_int("p1", p1, minimum=0)
    p2 = check_int("p2", p2, minimum=0)
    return float(2 * (p1 + p2) + p1 * (p1 + 1) / 2 + 2 * p1 * p2 + p2 * (p2 + 1))


def _check_share(value: Any, _: Mapping[str, Any]) -> float:
    share = check_real("count_share", value)
    if not (0.0 < share < 1.0):
        raise ParameterError(f"count_share ({value!r}) must be in (0, 1)")
    return share


def _split(checked: Mapping[str, Any]) -> tuple[float, float]:
    """(ε of the class histogram, ε of the sums); 0 for the histogram when public."""
    eps = checked["epsilon"]
    if checked["class_sizes"] == "public":
        return 0.0, eps
    eps_counts = eps * checked["count_share"]
    eps_sums = eps - eps_counts
    # The two charges must not add up to more than ε in the accountant's arithmetic
    # (decimal sums of the shortest reprs, docs/proofs/ledger.md §5, with its half-ulp
    # caveat), so that spending exactly ε in two parts is always accepted.
    while Decimal(repr(eps_counts)) + Decimal(repr(eps_sums)) > Decimal(repr(eps)):
        eps_sums = math.nextafter(eps_sums, 0.0)
    return eps_counts, eps_sums


def _check_label_schema(schema: Any, checked: Mapping[str, Any]) -> Schema:
    if not isinstance(schema, Schema):
        raise ParameterTypeError(
            f"schema ({type(schema).__name__}) must be a ppdp.data.Schema; "
            "load one with Schema.from_file(path)"
        )
    if schema.label is None:
        raise SchemaError(
            "DPLDASynthesizer needs a schema with a label (its classes); "
            "this schema declares none: add a 'label' block ({name, classes}) to it, "
            "or draft one with `ppdp schema draft DATA --label COLUMN`"
        )
    if checked["class_sizes"] == "public" and schema.label.public_counts is None:
        raise ParameterError(
            f"class_sizes ('public') needs the label {schema.label.name!r} to declare "
            "public_counts (the true class sizes, if they are public knowledge); declare "
            "them in the schema, or use class_sizes='noisy' to spend part of epsilon on "
            "noisy class sizes"
        )
    return schema


@dataclass(frozen=True)
class LDASynthParams:
    """The validated parameters of :class:`DPLDASynthesizer` and its budget split (built
    once per ``fit``)."""

    allow_large_epsilon: bool
    epsilon: float
    class_sizes: str
    count_share: float
    eps_counts: float
    eps_sums: float
    schema: Schema


#: The DP-LDA synthesizer's constraint table, in the order the parameters are checked
#: (``eps_counts`` and ``eps_sums`` are derived from the fields before them).
LDA_SYNTH_CONSTRAINTS: tuple[Rule, ...] = (
    *epsilon_rules(),
    Rule("class_sizes", lambda v, _: check_option("class_sizes", v, _CLASS_SIZES)),
    Rule("count_share", _check_share),
    Rule("eps_counts", lambda _, c: _split(c)[0], attribute="count_share"),
    Rule("eps_sums", lambda _, c: _split(c)[1], attribute="count_share"),
    Rule("schema", _check_label_schema),
)


class DPLDASynthesizer(Publisher):
    """Labelled synthetic data from noisy class means and a noisy pooled second moment.

    ``fit`` spends ε once: one Laplace mechanism releases the per-class sums of the
    encoded features and the upper triangle of the pooled ``Σ x xᵀ`` (optionally after a
    noisy class histogram, see ``class_sizes``). The noisy means ``μ̃_c = S̃^(c)/n_c`` and
    ``M̃ = Q̃/n`` are kept, and :meth:`sample` draws labelled rows from them alone with the
    greedy L1 sampler of Jiang et al. (categoricals first, each one-hot block by trying every
    level, then numerics by the exact minimiser of their 1-D objective). ``fit`` also
    samples once, so ``release_.data`` is a synthetic table of ``n`` rows with the class
    sizes used.

    Guarantee: ε-differential privacy under replace-one neighbours (``n`` public), for the
    declared schema bounds (numerics clamped to their declared ``[lower, upper]``, categories
    declared). With ``class_sizes="public"`` the class sizes are the schema's declared
    ``public_counts`` and are not protected; with ``"noisy"`` they are released with noise
    and protected.

    Parameters
    ----------
    epsilon : float
        Total ε > 0 of one ``fit`` (at most 10 unless ``allow_large_epsilon``).
    schema : Schema
        Declared schema with a label of K ≥ 2 classes. Features: every column but the label
        (``p = p1 +`` the number of dummies).
    random_state : None, int, SeedSequence, Generator or RandomSource, optional
        ``None`` (default) uses the OS CSPRNG; anything else is reproducible, warns, and the
        ledger records the release as seeded.
    class_sizes : {"public", "noisy"}, default "noisy"
        The default is the protected choice, the same as the command line's
        ``--class-sizes``: ``"noisy"`` spends a share of ε so that the class sizes are
        covered by the guarantee, whereas ``"public"`` trusts the declared counts and
        releases them as they are (right only when the true sizes are public knowledge).
        ``"public"``: use the label's declared ``public_counts`` (they must be the true class
        sizes of the table; they are checked against it before anything is spent, and are
        released as they are). ``"noisy"``: spend ``count_share · ε`` on a Laplace class
        histogram (L1 sensitivity 2, dimension K), projected onto
        ``{v ≥ 0, Σ v = n}`` and rounded by largest remainder to non-negative integers
        summing to ``n``; the rest of ε goes to the sums.
    count_share : float, default 0.1
        Share of ε for the class histogram when ``class_sizes="noisy"``; in ``(0, 1)``.
    allow_large_epsilon : bool, default False
        Accept ε > 10.

    Attributes
    ----------
    release_ : Release
        ``data``: the synthetic table (schema columns and the label, rows in random order);
        ``encoded``: the same rows in the feature encoding (label block excluded), aligned
        with ``data``; ``statistics``: ``class_sums`` (K, p), ``class_means`` (K, p; NaN rows
        for classes of size 0), ``second_moment_sum`` (p, p, symmetrised ``Q̃``),
        ``second_moment`` (``M̃``), ``class_sizes`` (K,), and ``noisy_class_counts`` (K,) with
        ``class_sizes="noisy"``; ``guarantee``. After a distributed fit (see Notes)
        ``data`` is a lazy Dask DataFrame reading the ``output`` folder back and ``encoded``
        is None.

    Notes
    -----
    Sensitivity: :func:`lda_l1_sensitivity` (the worst case is a row moving to another
    class), plus twice the float-summation error bound per coordinate
    (:func:`ppdp.data.stats.float_sum_error_bound`), since the computed float sums can move
    by more than the real ones. The noise is :class:`~ppdp.mechanisms.LaplaceMechanism` on
    a power-of-two grid, so the usual numerical caveats of that mechanism apply. Sampling
    is post-processing: it costs nothing and can be repeated. At ε = 1 on Adult the noise
    scale is 115 per coordinate, so the class means carry errors of order ``115 / n_c``.

    Distributed input: ``fit`` also takes a Dask DataFrame or a Parquet dataset
    (``scheduler=``; ``output=``, a new folder, is required, because ``fit`` releases ``n``
    synthetic rows as it does in memory). One scan validates the table with the in-memory
    checks (``n ≥ 2``, declared ``public_counts`` against the whole table's class counts;
    errors carry whole-table counts and nothing is spent) and reduces the class counts,
    class sums and ``Σxxᵀ``; the noise is drawn in the driver in the in-memory order, so
    the same seed gives the same statistics. The synthetic rows, post-processing, are
    generated on the workers in parts of at most 2¹⁶ rows (the number of parts depends on
    ``n`` only; the class sizes are split over the parts in proportion), each part shuffled
    with its own stream of :class:`~ppdp.random.PartitionStreams`, and written to
    ``output``; memory stays bounded by one part per worker whatever ``n`` is. With one part
    (``n ≤ 2¹⁶``) the rows are the in-memory rows in another order; with several, each part
    runs the greedy sampler on its own towards the same targets. :meth:`sample` still works,
    in memory, from the released statistics.

    References
    ----------
    .. [JJWMCO13] X. Jiang, Z. Ji, S. Wang, N. Mohammed, S. Cheng, L. Ohno-Machado.
       Differential-private data publishing through component analysis. Transactions on
       Data Privacy 6(1):19-34, 2013.
    .. [DMNS06] C. Dwork, F. McSherry, K. Nissim, A. Smith. Calibrating noise to sensitivity
       in private data analysis. TCC 2006.

    Examples
    --------
    >>> from ppdp.datasets import load_adult
    >>> df, schema = load_adult()
    >>> synth = DPLDASynthesizer(1.0, schema, class_sizes="noisy")
    >>> synth.fit(df).release_.data.shape  # doctest: +SKIP
    (45222, 11)
    >>> synth.sample(1000).shape  # doctest: +SKIP
    (1000, 11)
    """

    supports_distributed: ClassVar[bool] = True
    row_level_output: ClassVar[bool] = True
    _params_type = LDASynthParams
    _constraints = LDA_SYNTH_CONSTRAINTS

    def __init__(
        self,
        epsilon: float,
        schema: Schema,
        *,
        random_state: RandomState = None,
        class_sizes: Literal["public", "noisy"] = "noisy",
        count_share: float = 0.1,
        allow_large_epsilon: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.schema = schema
        self.random_state = random_state
        self.class_sizes = class_sizes
        self.count_share = count_share
        self.allow_large_epsilon = allow_large_epsilon

    # -- parameters -----------------------------------------------------------------------

    def _params(self) -> LDASynthParams:
        params: LDASynthParams = super()._params()
        return params

    def _budget_split(self) -> tuple[float, float]:
        """(ε of the class histogram, ε of the sums); 0 for the histogram when public."""
        c = self._params()
        return c.eps_counts, c.eps_sums

    def _planned_charges(self, n_rows: int | None) -> list[Charge]:
        c = self._params()
        eps_counts, eps_sums, schema = c.eps_counts, c.eps_sums, c.schema
        assert schema.label is not None
        K = schema.label.n_classes
        s = lda_l1_sensitivity(schema.p1, schema.p2)
        p = schema.n_features
        dim = K * p + p * (p + 1) // 2
        sums = LaplaceMechanism(
            epsilon=eps_sums,
            sensitivity=s,
            dimension=dim,
            allow_large_epsilon=self.allow_large_epsilon,
        )
        charges = []
        if self.class_sizes == "noisy":
            counts = self._counts_mechanism(eps_counts, K)
            charges.append(
                Charge(counts.event, "DPLDASynthesizer.class_counts", counts.ledger_details())
            )
        event: Any = sums.budget
        if n_rows is not None and n_rows >= 2:
            # The exact mechanism of this fit (its rounding pad depends on the public n).
            exact = self._sums_mechanism(eps_sums, n_rows)
            event = exact.event
            details = exact.ledger_details()
            details["n"] = n_rows
        else:
            details = sums.ledger_details()
            details.pop("noise_scale")
            details.pop("granularity")
            details["float_rounding_pad"] = "2 * float_sum_error_bound(n) per coordinate"
        charges.append(Charge(event, "DPLDASynthesizer.sums", details))
        return charges

    def _counts_mechanism(self, eps_counts: float, K: int) -> LaplaceMechanism:
        return LaplaceMechanism(
            epsilon=eps_counts,
            sensitivity=_COUNT_SENSITIVITY,
            dimension=K,
            allow_large_epsilon=True,  # a share of an ε already checked
        )

    def _sums_mechanism(self, eps_sums: float, n: int) -> LaplaceMechanism:
        schema = self.schema
        assert schema.label is not None
        p = schema.n_features
        dim = schema.label.n_classes * p + p * (p + 1) // 2
        pad = 2.0 * float_sum_error_bound(n, max_term=1.0) * dim
        return LaplaceMechanism(
            epsilon=eps_sums,
            sensitivity=lda_l1_sensitivity(schema.p1, schema.p2) + pad,
            dimension=dim,
            allow_large_epsilon=True,
        )

    # -- data -----------------------------------------------------------------------------

    def _encode(
        self, df: pd.DataFrame, on_invalid: str = "raise"
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
        schema = self._params().schema
        assert schema.label is not None
        X, y = schema.encode(df, on_invalid=on_invalid)
        if y is None:  # pragma: no cover - the schema has a label, so encode returns codes
            raise DataValidationError("the data must have the label column")
        counts = np.bincount(y, minlength=schema.label.n_classes)
        self._check_table(X.shape[0], counts, on_invalid)
        return X, y

    def _check_table(self, n: int, class_counts: NDArray[np.int64], on_invalid: str) -> None:
        """The data checks on ``n`` and the true class counts (in memory and distributed)."""
        schema = self._params().schema
        assert schema.label is not None
        if n < 2:
            raise DataValidationError(f"data has {n} row(s); DPLDASynthesizer needs n >= 2")
        if self.class_sizes == "public":
            declared = schema.label.public_counts
            assert declared is not None
            if sum(declared) != n:
                raise DataValidationError(
                    f"the label's public_counts sum to {sum(declared)} but the data has "
                    f"{n} rows; public_counts must be this table's class sizes"
                )
            wrong = not np.array_equal(class_counts, declared)
            if wrong and on_invalid == "mask":
                # Total mode: the comparison would be a free oracle on the class sizes. The
                # declared sizes are used as given; only the custodian hears about it.
                custodian.warning(
                    "DPLDASynthesizer: the label's public_counts are not this table's class "
                    "sizes; they were used as declared (on_invalid='mask')"
                )
            elif wrong:
                raise DataValidationError(
                    "the label's public_counts are not this table's class sizes; declare "
                    "the true class sizes, or use class_sizes='noisy'"
                )
        _, eps_sums = self._budget_split()
        noise_sd = math.sqrt(2.0) * self._sums_mechanism(eps_sums, n).scale / n
        if noise_sd > 1.0:
            warnings.warn(
                f"n ({n}) is small for epsilon ({self.epsilon}): the noise on the pooled "
                f"second moment has standard deviation {noise_sd:.3g} per entry, whose true "
                "values lie in [0, 1]; the synthetic data will be mostly noise",
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
        assert y is not None and self.schema.label is not None
        schema = self.schema
        K = schema.label.n_classes
        n = X.shape[0]
        mech, statistics = self._noisy_statistics(
            n, np.bincount(y, minlength=K), _sums_vector(X, y, K), source
        )
        Z, codes = self._generate(int(self._targets[2].sum()), source, sweeps=1, progress=None)
        guarantee = self._guarantee(mech, self._budget_split()[0], n)
        return Release(
            data=schema.decode(Z, codes),
            encoded=Z,
            guarantee=guarantee,
            statistics=statistics,
        )

    def _noisy_statistics(
        self,
        n: int,
        class_counts: NDArray[np.int64],
        sums: NDArray[np.float64],
        source: RandomSource,
    ) -> tuple[LaplaceMechanism, dict[str, NDArray[np.float64]]]:
        """Add the noise to the exact statistics (in the driver); set the sampler's targets.

        The class histogram first (``"noisy"``), then the sums vector: one draw each, from
        ``source``, in this order whether the statistics came from memory or from a scan.
        """
        schema = self.schema
        assert schema.label is not None
        label = schema.label
        K = label.n_classes
        p = schema.n_features
        eps_counts, eps_sums = self._budget_split()
        statistics: dict[str, NDArray[np.float64]] = {}
        if self.class_sizes == "noisy":
            true_counts = np.asarray(class_counts).astype(np.float64)
            noisy_counts = np.asarray(
                self._counts_mechanism(eps_counts, K).randomise(true_counts, random_state=source)
            )
            sizes = sizes_from_noisy_counts(noisy_counts, n)
            statistics["noisy_class_counts"] = noisy_counts
        else:
            assert label.public_counts is not None
            sizes = np.asarray(label.public_counts, dtype=np.int64)
        mech = self._sums_mechanism(eps_sums, n)
        noisy = np.asarray(mech.randomise(sums, random_state=source))
        class_sums = noisy[: K * p].reshape(K, p)
        Q = np.zeros((p, p))
        Q[np.triu_indices(p)] = noisy[K * p :]
        Q = Q + np.triu(Q, 1).T
        with np.errstate(divide="ignore", invalid="ignore"):
            class_means = np.where(sizes[:, None] > 0, class_sums / sizes[:, None], np.nan)
        self._targets = (class_means, Q / n, sizes)
        statistics.update(
            class_sums=class_sums,
            class_means=class_means,
            second_moment_sum=Q,
            second_moment=Q / n,
            class_sizes=sizes.astype(np.float64),
        )
        return mech, statistics

    # -- distributed input ------------------------------------------------------------------

    def _distributed_include_label(self) -> bool:
        return False  # the features only; the label comes as class codes

    def _partition_statistics(
        self, X: NDArray[np.float64], y: NDArray[np.int64] | None
    ) -> SufficientStats:
        """Class counts, class sums and ``Σxxᵀ`` of one encoded partition."""
        assert self.schema.label is not None and y is not None
        return SufficientStats.compute(X, y, n_classes=self.schema.label.n_classes, n_threads=1)

    def _check_scan(self, scan: Any, on_invalid: str) -> None:
        """The in-memory checks (n >= 2, declared public counts, utility) on the whole table."""
        assert self.schema.label is not None
        K = self.schema.label.n_classes
        counts = np.zeros(K, dtype=np.int64) if scan.value is None else scan.value.class_counts
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
        """Noise on the reduced statistics in the driver; synthetic rows written part by part.

        The noisy statistics are drawn from ``source`` exactly as in memory. The ``n``
        synthetic rows are post-processing: they are cut into parts of at most
        ``_ROWS_PER_PART`` rows (a function of ``n`` alone), the class sizes are split over
        the parts in proportion (:func:`part_class_counts`), and each part is generated and
        shuffled on a worker from the released targets and ``stream(j)`` of
        :class:`~ppdp.random.PartitionStreams`, created after the statistics' noise.
        """
        from dask import delayed

        from ppdp.data.distributed import read_parquet_dataset, write_parquet_dataset

        n = scan.n_rows
        stats: SufficientStats = scan.value
        mech, statistics = self._noisy_statistics(n, stats.class_counts, _pack_sums(stats), source)
        streams = PartitionStreams(source)
        class_means, second_moment, sizes = self._targets
        per_part = part_class_counts(sizes, part_sizes(int(sizes.sum()), _ROWS_PER_PART))
        tasks = [
            delayed(_synthesize_part, pure=False)(
                class_means, second_moment, counts, self.schema, streams, j
            )
            for j, counts in enumerate(per_part)
        ]
        folder = write_parquet_dataset(tasks, output, scheduler=scheduler)
        return Release(
            data=read_parquet_dataset(folder),
            encoded=None,
            guarantee=self._guarantee(mech, self._budget_split()[0], n),
            statistics=statistics,
        )

    def _guarantee(self, mech: LaplaceMechanism, eps_counts: float, n: int) -> Guarantee:
        schema = self.schema
        assert schema.label is not None
        if self.class_sizes == "public":
            sizes_text = (
                "class sizes: the schema's declared public_counts, public and not protected"
            )
        else:
            sizes_text = (
                f"class sizes: released with noise (Laplace, L1 sensitivity 2, ε={eps_counts:g}),"
                " protected"
            )
        return Guarantee.pure(
            float(self.epsilon),
            relation=Neighbouring.REPLACE_ONE,
            mechanism=_MECHANISM,
            assumptions=(
                f"n = {n} public (replace-one neighbours)",
                sizes_text,
                "numeric columns clamped to their declared bounds; categories and classes "
                "declared in the schema",
                f"L1 sensitivity {lda_l1_sensitivity(schema.p1, schema.p2):g} of the class "
                f"sums and upper(Σxxᵀ) (p1={schema.p1}, p2={schema.p2}, safe categorical "
                "bound, cross-class worst case) plus the float-summation pad",
                "the synthetic rows are post-processing of the noisy statistics",
            ),
            details={
                "class_sizes": self.class_sizes,
                "epsilon_class_counts": eps_counts,
                "sums": mech.ledger_details(),
            },
        )

    # -- post-processing ------------------------------------------------------------------

    def _generate(
        self,
        n: int,
        source: RandomSource,
        *,
        sweeps: int,
        progress: Callable[[int, int], None] | None,
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        class_means, second_moment, sizes = self._targets
        total = int(sizes.sum())
        counts = sizes if n == total else _largest_remainder(sizes * (n / total), n)
        return _sample_rows(
            class_means,
            second_moment,
            counts,
            _sampler_layout(self.schema),
            source,
            sweeps=sweeps,
            progress=progress,
        )

    def sample_encoded(
        self,
        n: int | None = None,
        *,
        random_state: RandomState = None,
        sweeps: int = 1,
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Like :meth:`sample`, in the encoding: ``(Z, y)`` with ``Z`` of shape (n, p)."""
        self._check_fitted()
        total = int(self._targets[2].sum())
        n = total if n is None else check_int("n", n, minimum=1)
        sweeps = check_int("sweeps", sweeps, minimum=1)
        if progress is not None and not callable(progress):
            raise ParameterTypeError(f"progress ({progress!r}) must be callable or None")
        source = resolve_random_state(random_state)
        return self._generate(n, source, sweeps=sweeps, progress=progress)

    def sample(
        self,
        n: int | None = None,
        *,
        random_state: RandomState = None,
        sweeps: int = 1,
        progress: Callable[[int, int], None] | None = None,
    ) -> pd.DataFrame:
        """Generate labelled synthetic rows from the released noisy statistics alone.

        Post-processing: free, and can be repeated. Classes get ``n`` rows in the
        proportions of the class sizes used at ``fit`` (largest remainder); the greedy L1
        sampler is deterministic, so the randomness only shuffles the rows.

        Parameters
        ----------
        n : int, optional
            Number of rows (default: the class sizes used at ``fit``, ``n`` in all).
        random_state : None, int, SeedSequence, Generator or RandomSource, optional
            Source of the row shuffle. ``None`` uses the OS CSPRNG.
        sweeps : int, default 1
            Passes over each row's features (see :func:`ppdp.publish._l1_sampler.greedy_l1_sample`);
            2 brings the synthetic statistics closer to the targets at twice the cost.
        progress : callable(done, total), optional
            Called every 4096 rows and at the end (for a progress bar).

        Returns
        -------
        DataFrame
            Schema columns and the label, decoded: categories and classes valid, numerics
            inside their declared bounds.
        """
        Z, codes = self.sample_encoded(
            n, random_state=random_state, sweeps=sweeps, progress=progress
        )
        return self.schema.decode(Z, codes)

    def _draw_noisy_sums(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64],
        n_draws: int,
        source: RandomSource,
    ) -> NDArray[np.float64]:
        """``n_draws`` independent releases of the noisy sums vector (for the audit only).

        The same statistic and mechanism as ``fit`` (the audit's positive control draws from
        a :class:`ppdp.audit.ScaledNoise` source). Returns shape (n_draws, K·p + p(p+1)/2).
        """
        self._validate_params()
        _, eps_sums = self._budget_split()
        assert self.schema.label is not None
        value = _sums_vector(X, y, self.schema.label.n_classes)
        mech = self._sums_mechanism(eps_sums, X.shape[0])
        flat = mech._release(np.tile(value, n_draws), source)
        return flat.reshape(n_draws, value.size)


def _sampler_layout(schema: Schema) -> SamplerLayout:
    return SamplerLayout(
        n_features=schema.n_features,
        numeric=tuple(schema.blocks[c.name].start for c in schema.numeric_columns),
        blocks=tuple(
            (schema.blocks[c.name].start, schema.blocks[c.name].stop)
            for c in schema.categorical_columns
        ),
    )


def _sample_rows(
    class_means: NDArray[np.float64],
    second_moment: NDArray[np.float64],
    counts: NDArray[np.int64],
    layout: SamplerLayout,
    source: RandomSource,
    *,
    sweeps: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The greedy L1 sampler's rows for ``counts``, shuffled with ``source``."""
    Z, codes = greedy_l1_sample(
        class_means, second_moment, counts, layout, sweeps=sweeps, progress=progress
    )
    n = codes.size
    if n > 1:
        order = np.argsort(noise.uniform(n, random_state=source), kind="stable")
        Z, codes = Z[order], codes[order]
    return Z, codes


def _quiet(done: int, total: int) -> None:
    """No progress bar for one part among many (a worker may not own a terminal)."""


def _synthesize_part(
    class_means: NDArray[np.float64],
    second_moment: NDArray[np.float64],
    counts: NDArray[np.int64],
    schema: Schema,
    streams: PartitionStreams,
    index: int,
) -> pd.DataFrame:
    """One part of a distributed fit's synthetic table, on a worker (post-processing).

    Generated from the released targets and this part's class counts alone; its shuffle
    reads ``streams.stream(index)``.
    """
    Z, codes = _sample_rows(
        class_means,
        second_moment,
        counts,
        _sampler_layout(schema),
        streams.stream(index),
        sweeps=1,
        progress=_quiet,
    )
    return schema.decode(Z, codes)


def part_sizes(n: int, rows_per_part: int = _ROWS_PER_PART) -> NDArray[np.int64]:
    """``n`` rows cut into ``⌈n / rows_per_part⌉`` parts of near-equal size (at least one part).

    >>> part_sizes(10, 4).tolist()
    [4, 3, 3]
    """
    n = check_int("n", n, minimum=0)
    rows_per_part = check_int("rows_per_part", rows_per_part, minimum=1)
    k = max(1, -(-n // rows_per_part))
    sizes = np.full(k, n // k, dtype=np.int64)
    sizes[: n % k] += 1
    return sizes


def part_class_counts(
    class_sizes: NDArray[np.int64], sizes: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Split the class sizes over parts of the given sizes, in proportion (exact integers).

    Part ``j`` gets, from what is left of each class, its share ``left_c · m_j / left``
    rounded by largest remainder (ties to the lower class), so every row of the result sums
    to ``sizes[j]``, every column to ``class_sizes[c]``, and no entry is negative.
    Requires ``sum(sizes) == sum(class_sizes)``. Post-processing of public quantities.

    >>> part_class_counts(np.array([5, 3]), np.array([4, 4])).tolist()
    [[3, 1], [2, 2]]
    """
    left = np.asarray(class_sizes, dtype=np.int64).copy()
    out = np.zeros((len(sizes), left.size), dtype=np.int64)
    for j, m in enumerate(np.asarray(sizes, dtype=np.int64)):
        total = int(left.sum())
        if total == 0:
            break
        share = [int(c) * int(m) for c in left]
        base = np.array([s // total for s in share], dtype=np.int64)
        rem = np.array([s % total for s in share], dtype=np.int64)
        short = int(m) - int(base.sum())  # 0 <= short < K, and short classes have rem > 0
        base[np.argsort(-rem, kind="stable")[:short]] += 1
        out[j] = base
        left -= base
    return out


def _sums_vector(X: NDArray[np.float64], y: NDArray[np.int64], K: int) -> NDArray[np.float64]:
    """The released query: the K class sums, then upper(Σ x xᵀ) row by row."""
    return _pack_sums(SufficientStats.compute(X, y, n_classes=K))


def _pack_sums(stats: SufficientStats) -> NDArray[np.float64]:
    """The K class sums, then upper(Σ x xᵀ) row by row, from (merged) statistics."""
    assert stats.class_sum_x is not None
    iu = np.triu_indices(stats.n_features)
    return np.concatenate((stats.class_sum_x.reshape(-1), stats.sum_xx[iu]))


def sizes_from_noisy_counts(noisy: NDArray[np.float64], n: int) -> NDArray[np.int64]:
    """Non-negative integers summing to ``n`` from a noisy class histogram (post-processing).

    The Euclidean projection onto ``{v ≥ 0, Σ v = n}`` (subtract one constant, floor at 0),
    then largest-remainder rounding (ties to the lower class index).

    >>> sizes_from_noisy_counts(np.array([60.4, 41.3, -2.0]), 100).tolist()
    [60, 40, 0]
    """
    v = np.asarray(noisy, dtype=np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - n
    k = np.arange(1, v.size + 1)
    rho = int(np.nonzero(u - css / k > 0)[0][-1])
    theta = css[rho] / (rho + 1)
    return _largest_remainder(np.maximum(v - theta, 0.0), n)


def _largest_remainder(v: NDArray[np.float64], n: int) -> NDArray[np.int64]:
    base = np.floor(v).astype(np.int64)
    frac = v - base
    short = n - int(base.sum())
    if short > 0:
        base[np.argsort(-frac, kind="stable")[:short]] += 1
    elif short < 0:  # float rounding put the floors above n: take from the smallest parts
        order = [i for i in np.argsort(frac, kind="stable") if base[i] > 0]
        base[order[:-short]] -= 1
    return base
