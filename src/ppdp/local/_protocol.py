"""What every local randomizer offers, and rebuilding one from its description."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from numpy.typing import ArrayLike, NDArray

from ppdp.accounting.events import EpsilonDelta, LocalRandomizer, PrivacyEvent
from ppdp.budget import Guarantee
from ppdp.exceptions import ParameterError, UnsupportedEventError
from ppdp.random import RandomState

__all__ = ["Randomizer", "randomizer_from_dict"]


@runtime_checkable
class Randomizer(Protocol):
    """A respondent-side randomizer: perturbs values and states its local-DP guarantee."""

    def randomise(self, values: ArrayLike, random_state: RandomState = None) -> NDArray[Any]:
        """Perturb each value (one report per value)."""
        ...

    def guarantee(self, delta: float | None = None) -> Guarantee:
        """The formal local-DP guarantee at ``delta`` (None: δ = 0)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (``type`` names the class)."""
        ...


def randomizer_from_dict(data: dict[str, Any]) -> Randomizer:
    """Rebuild a randomizer from ``to_dict`` output, dispatching on ``data["type"]``.

    Examples
    --------
    >>> from ppdp.local import AdditiveRandomizer
    >>> r = AdditiveRandomizer(noise="laplace", scale=1.0, domain=(0.0, 1.0))
    >>> randomizer_from_dict(r.to_dict()) == r
    True
    """
    from ppdp.registry import RANDOMIZERS

    kind = data.get("type") if isinstance(data, dict) else None
    if kind not in RANDOMIZERS:
        raise ParameterError(
            f"randomizer type ({kind!r}) must be "
            + " or ".join(repr(n) for n in RANDOMIZERS.names())
        )
    return RANDOMIZERS.load(kind).from_dict(data)  # type: ignore[attr-defined,no-any-return]


def guarantee_events(randomizer: Randomizer, delta: float | None) -> tuple[PrivacyEvent, ...]:
    """The accounting event of one report of ``randomizer``, from its guarantee at ``delta``.

    ε-local DP (δ = 0) is a :class:`~ppdp.accounting.events.LocalRandomizer`; an (ε, δ) one
    an :class:`~ppdp.accounting.events.EpsilonDelta`. Raises
    :class:`~ppdp.exceptions.UnsupportedEventError` when there is no formal ε at ``delta``.
    """
    g = randomizer.guarantee(delta)
    if g.epsilon is None or not g.is_private:
        raise UnsupportedEventError(
            f"{type(randomizer).__name__} has no formal ε at delta={delta!r}: nothing to account"
        )
    if g.delta:
        return (EpsilonDelta(epsilon=g.epsilon, delta=g.delta),)
    return (LocalRandomizer(epsilon=g.epsilon, randomizer=type(randomizer).__name__),)
