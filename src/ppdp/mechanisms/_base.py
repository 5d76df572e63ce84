"""What every mechanism shares: the protocol and the additive grid release path.

The grid arithmetic (snap, effective sensitivity, scale checks, the noise step) is public
in :mod:`ppdp.mechanisms.grid`, which other packages use too.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.mechanisms.grid import NoiseLaw, as_query_value, check_dimension, snap_and_add_noise
from ppdp.random import RandomSource, RandomState, resolve_random_state

__all__ = ["Mechanism"]


@runtime_checkable
class Mechanism(Protocol):
    """The contract every ppdp mechanism meets (later issues compose these).

    A mechanism knows what it costs from its parameters alone (``budget``), states what it
    promises (``guarantee``), releases (``randomise``) and describes itself for the ledger
    (``event``, ``ledger_details``), so that ``acct.spend(m.event, mechanism=m.name)``
    can be recorded *before* ``m.randomise(...)`` is called.
    """

    @property
    def name(self) -> str:
        """Short mechanism name for ledgers and guarantees."""
        ...

    @property
    def budget(self) -> PrivacyBudget:
        """What one call of :meth:`randomise` costs."""
        ...

    @property
    def guarantee(self) -> Guarantee:
        """What one call of :meth:`randomise` promises."""
        ...

    def randomise(self, value: Any, random_state: RandomState = None) -> Any:
        """Release ``value`` privately."""
        ...

    def ledger_details(self) -> dict[str, Any]:
        """JSON-safe facts about the event (sensitivity, noise scale, relation, ...)."""
        ...

    @property
    def event(self) -> Any:
        """The typed accounting event (:mod:`ppdp.accounting.events`) of one release."""
        ...

    def privacy_events(self) -> tuple[Any, ...]:
        """The events one release charges, from the parameters alone."""
        ...


class AdditiveGridMechanism:
    """The release path shared by the additive mechanisms (Laplace, Gaussian).

    ``randomise`` snaps the value to the grid Λ and adds noise drawn on the same grid, so
    the release is an exact float sum. A subclass is a frozen dataclass with ``dimension``,
    ``_granularity`` and ``_scale`` fields and names its noise law in ``noise_law``.
    """

    __slots__ = ()

    dimension: int
    _granularity: float
    _scale: float
    #: The noise law of :func:`~ppdp.mechanisms.grid.snap_and_add_noise`.
    noise_law: ClassVar[NoiseLaw]

    @property
    def granularity(self) -> float:
        """Λ, the power-of-two grid of the value and the noise."""
        return self._granularity

    def bias(self, value: ArrayLike | None = None) -> float:
        """Bias of the noise: 0 (the grid rounding of the value shifts it by ≤ Λ/2)."""
        return 0.0

    def randomise(
        self, value: ArrayLike, random_state: RandomState = None
    ) -> float | NDArray[np.float64]:
        """Release ``value`` (a scalar or an array answering one query) with noise.

        Parameters
        ----------
        value : float or array_like of float
            The true query answer; finite, at most ``dimension`` coordinates. For an array,
            ``sensitivity`` bounds the change of the whole array in the mechanism's norm
            (L1 for Laplace, L2 for Gaussian); every coordinate gets independent noise.
        random_state : None, int, SeedSequence, Generator or RandomSource, optional
            ``None`` (the default) uses the OS CSPRNG; anything else is for tests only.

        Returns
        -------
        float or ndarray of float64
            A float for a scalar, else an array of the same shape; on the grid.

        Raises
        ------
        DataValidationError
            If ``value`` is not numeric or holds NaN or inf (the value is never printed).
        ParameterError
            If ``value`` has more than ``dimension`` coordinates.
        """
        arr, scalar = as_query_value(value)
        check_dimension(arr.size, self.dimension)
        source = resolve_random_state(random_state)
        out = self._release(arr.reshape(-1), source)
        return float(out[0]) if scalar else out.reshape(arr.shape)

    def _sample(self, value: float, n: int, source: RandomSource) -> NDArray[np.float64]:
        """``n`` scalar releases of ``value`` (for the audit: its rescaled source halves the
        noise, :class:`ppdp.audit.ScaledNoise`)."""
        arr, _ = as_query_value(value)
        return self._release(np.full(n, float(arr)), source)

    def _release(self, flat: NDArray[np.float64], source: RandomSource) -> NDArray[np.float64]:
        return snap_and_add_noise(
            flat,
            granularity=self._granularity,
            scale=self._scale,
            source=source,
            law=self.noise_law,
        )
