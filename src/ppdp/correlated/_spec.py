"""The Pufferfish specification (S, Q, Θ) and the guarantee text it implies.

Privacy argument and definitions: ``docs/proofs/pufferfish-mqm.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ppdp.budget import Guarantee, Neighbouring
from ppdp.exceptions import ParameterError, ParameterTypeError

__all__ = ["MODEL_IN_THETA", "PufferfishSpec", "pufferfish_guarantee"]

#: The one assumption no Pufferfish release can drop (ALGORITHMS B.9 pitfall 1).
MODEL_IN_THETA = (
    "holds only if the true data-generating model is in Θ (a model estimated from the same "
    "private data is outside the theorem)"
)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ParameterTypeError(f"{name} ({value!r}) must be a string, not {type(value).__name__}")
    if not value.strip():
        raise ParameterError(f"{name} ({value!r}) must be a non-empty description")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class PufferfishSpec:
    """A Pufferfish framework ``(S, Q, Θ)`` in words, for guarantees and ledgers.

    Pufferfish privacy (Kifer & Machanavajjhala 2014): a mechanism ``M`` is ε-Pufferfish
    private in ``(S, Q, Θ)`` if for every ``θ ∈ Θ``, every secret pair ``(s_i, s_j) ∈ Q``
    with ``P(s_i | θ) > 0`` and ``P(s_j | θ) > 0`` and every output ``w``,
    ``e^-ε ≤ P(M(X) = w | s_i, θ) / P(M(X) = w | s_j, θ) ≤ e^ε``.

    Parameters
    ----------
    secrets : str
        The secrets S, e.g. ``"X_i = a for each node i and state a"``.
    secret_pairs : str
        The pairs Q that must stay indistinguishable, e.g. ``"(X_i = a, X_i = b), a ≠ b"``.
    theta : str
        The distribution class Θ (where the correlation lives), in words.
    notes : tuple of str, optional
        Further assumptions (how Θ was built, approximations).

    Examples
    --------
    >>> spec = PufferfishSpec(secrets="X_i = a", secret_pairs="(X_i = a, X_i = b), a ≠ b",
    ...                       theta="one Markov chain")
    >>> spec.guarantee_assumptions()[0]
    'secrets: X_i = a'
    """

    secrets: str
    secret_pairs: str
    theta: str
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _text("secrets", self.secrets)
        _text("secret_pairs", self.secret_pairs)
        _text("theta", self.theta)
        if isinstance(self.notes, str) or not isinstance(self.notes, tuple | list):
            raise ParameterTypeError(f"notes ({self.notes!r}) must be a tuple of strings")
        object.__setattr__(self, "notes", tuple(_text("notes", n) for n in self.notes))

    def guarantee_assumptions(self) -> tuple[str, ...]:
        """The assumption lines every guarantee under this spec must carry."""
        return (
            f"secrets: {self.secrets}",
            f"secret pairs: {self.secret_pairs}",
            f"Θ: {self.theta}",
            *self.notes,
            MODEL_IN_THETA,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (for ledgers and CLI output)."""
        return {
            "secrets": self.secrets,
            "secret_pairs": self.secret_pairs,
            "theta": self.theta,
            "notes": list(self.notes),
        }


def pufferfish_guarantee(
    epsilon: float,
    spec: PufferfishSpec,
    *,
    mechanism: str,
    extra: tuple[str, ...] = (),
    details: dict[str, Any] | None = None,
) -> Guarantee:
    """``Guarantee.pufferfish`` with the spec's assumptions (secrets, pairs, Θ, model in Θ).

    The relation is recorded as ``replace-one``: a secret pair changes the value of one
    node while the number of nodes stays public, the attribute-level analogue of bounded DP.
    """
    if not isinstance(spec, PufferfishSpec):
        raise ParameterTypeError(f"spec ({spec!r}) must be a PufferfishSpec")
    return Guarantee.pufferfish(
        epsilon,
        relation=Neighbouring.REPLACE_ONE,
        mechanism=mechanism,
        assumptions=(*spec.guarantee_assumptions(), *extra),
        details=details,
    )
