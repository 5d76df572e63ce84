"""Privacy budgets, neighbouring relations and the guarantee every release states.

A :class:`PrivacyBudget` is a frozen ``(epsilon, delta)`` pair: what a release costs, or
what a dataset may still spend. A :class:`Guarantee` is what a release *promises*: the
kind of guarantee, its parameters, the neighbouring relation it holds for, and the
assumptions it rests on. Guarantees print for a person in two forms, one line
(:meth:`Guarantee.summary`, what the terminal shows) and the full statement (``str``, what
release files and ``-v`` show), and serialise for the ledger (``to_dict`` / ``from_dict``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ppdp._validation import check_delta, check_nonnegative
from ppdp.exceptions import ParameterError

__all__ = [
    "Guarantee",
    "GuaranteeKind",
    "Neighbouring",
    "PrivacyBudget",
    "budget_number",
    "mechanism_label",
    "plain_budget",
    "plain_number",
    "remaining_number",
    "remaining_text",
]


class Neighbouring(StrEnum):
    """Which datasets count as neighbours.

    ``ADD_REMOVE`` (unbounded): one record added or removed; the size ``n`` is private.
    ``REPLACE_ONE`` (bounded): one record replaced; ``n`` is public. The sources ppdp
    implements prove their results for replace-one.
    """

    ADD_REMOVE = "add/remove"
    REPLACE_ONE = "replace-one"

    @classmethod
    def parse(cls, value: Neighbouring | str) -> Neighbouring:
        """Accept an enum member or its text (``"add/remove"``, ``"replace-one"``)."""
        if isinstance(value, Neighbouring):
            return value
        aliases = {
            "add/remove": cls.ADD_REMOVE,
            "add-remove": cls.ADD_REMOVE,
            "add_remove": cls.ADD_REMOVE,
            "unbounded": cls.ADD_REMOVE,
            "replace-one": cls.REPLACE_ONE,
            "replace_one": cls.REPLACE_ONE,
            "replace": cls.REPLACE_ONE,
            "bounded": cls.REPLACE_ONE,
        }
        key = str(value).strip().lower()
        if key not in aliases:
            raise ParameterError(f"relation ({value!r}) must be one of 'add/remove', 'replace-one'")
        return aliases[key]


def budget_number(value: float) -> str:
    """An ε or δ for people: 10 significant digits (``16.999999998994998`` reads ``17``,
    ``1e-09`` stays ``1e-09``), as the CLI prints every budget."""
    return f"{value:.10g}"


#: A remaining ε or δ within this share of the budget it is left of is shown as 0: it is
#: the residue of float shares (an ε split across steps whose shares sum a few units in
#: the last place under it, ``0.2 - 0.19999999999999998 = 2e-17``), not a budget to use.
RESIDUE_SHARE = 1e-12


def remaining_number(value: float, of: float) -> str:
    """A remaining ε or δ for people: :func:`budget_number`, or ``0`` within ``1e-12 × of``
    of zero, where ``of`` is the budget it is left of (the ledger's total, or what was left
    before a release).

    Display only: the accountant keeps and compares the exact value (docs/proofs/
    ledger.md §5). The bound is relative, so a small declared δ (``1e-14``) still prints.

    Examples
    --------
    >>> remaining_number(0.2 - 0.19999999999999998, of=0.2)
    '0'
    >>> remaining_number(1e-14, of=1e-14)
    '1e-14'
    """
    if abs(value) <= RESIDUE_SHARE * abs(of):
        return "0"
    return budget_number(value)


def remaining_text(left: PrivacyBudget, of: PrivacyBudget) -> str:
    """``str(left)`` for a remaining budget ``left`` of ``of``, each part by
    :func:`remaining_number` (``ε=0, δ=1e-05``, never ``ε=2e-17``)."""
    eps = f"ε={remaining_number(left.epsilon, of.epsilon)}"
    if left.is_pure:
        return eps
    return f"{eps}, δ={remaining_number(left.delta, of.delta)}"


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def plain_number(value: str | float) -> str:
    """An ε or δ for a lay reader, without scientific notation: ``1e-06`` reads ``10⁻⁶``,
    ``2.5e-09`` reads ``2.5 × 10⁻⁹`` (the words of ``ppdp ui``'s screens).

    ``value``: a number, or :func:`budget_number`'s (or :func:`remaining_number`'s) text of
    one.

    Examples
    --------
    >>> plain_number(1e-06), plain_number(9.99e-07), plain_number(0.5)
    ('10⁻⁶', '9.99 × 10⁻⁷', '0.5')
    """
    text = value if isinstance(value, str) else budget_number(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"{mantissa} × {power}"


def plain_budget(budget: Any, of: Any = None) -> str:
    """``ε = 1 and δ = 10⁻⁶`` for a :class:`PrivacyBudget` (``ε = 1`` when δ is 0), by
    :func:`plain_number`.

    ``of``: the budget ``budget`` is what is left of; a residue within 10⁻¹² of it reads 0
    (:func:`remaining_number`). Anything but a budget is shown as ``str`` shows it.

    Examples
    --------
    >>> plain_budget(PrivacyBudget(1.0, 1e-6))
    'ε = 1 and δ = 10⁻⁶'
    """
    if not (hasattr(budget, "epsilon") and hasattr(budget, "delta")):
        return str(budget)

    def part(name: str) -> str:
        value = getattr(budget, name)
        if of is None:
            return plain_number(budget_number(value))
        return plain_number(remaining_number(value, getattr(of, name)))

    if budget.delta == 0:
        return f"ε = {part('epsilon')}"
    return f"ε = {part('epsilon')} and δ = {part('delta')}"


@dataclass(frozen=True, slots=True)
class PrivacyBudget:
    """An ``(epsilon, delta)`` privacy budget, frozen and validated.

    Parameters
    ----------
    epsilon : float
        Finite and ``>= 0``.
    delta : float, default 0.0
        In ``[0, 1)``.

    Budgets add (basic composition) and subtract, and are compared component-wise:
    ``a <= b`` means ``a`` fits inside ``b`` (a partial order, not a total one).

    Examples
    --------
    >>> PrivacyBudget(1.0) + PrivacyBudget(0.5, 1e-6)
    PrivacyBudget(epsilon=1.5, delta=1e-06)
    >>> PrivacyBudget(0.5) <= PrivacyBudget(1.0, 1e-6)
    True
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_nonnegative("epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_delta("delta", self.delta))

    @property
    def is_pure(self) -> bool:
        """True when ``delta == 0``."""
        return self.delta == 0.0

    @property
    def is_zero(self) -> bool:
        """True for the empty budget."""
        return self.epsilon == 0.0 and self.delta == 0.0

    def __add__(self, other: PrivacyBudget) -> PrivacyBudget:
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return PrivacyBudget(
            self.epsilon + other.epsilon, min(self.delta + other.delta, _BELOW_ONE)
        )

    def __sub__(self, other: PrivacyBudget) -> PrivacyBudget:
        """Remaining budget; components that would go below zero by rounding are floored at 0."""
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return PrivacyBudget(
            max(self.epsilon - other.epsilon, 0.0), max(self.delta - other.delta, 0.0)
        )

    def __le__(self, other: PrivacyBudget) -> bool:
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return self.epsilon <= other.epsilon and self.delta <= other.delta

    def __ge__(self, other: PrivacyBudget) -> bool:
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return other <= self

    def __lt__(self, other: PrivacyBudget) -> bool:
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return self <= other and self != other

    def __gt__(self, other: PrivacyBudget) -> bool:
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return other < self

    def __str__(self) -> str:
        if self.is_pure:
            return f"ε={budget_number(self.epsilon)}"
        return f"ε={budget_number(self.epsilon)}, δ={budget_number(self.delta)}"

    def to_dict(self) -> dict[str, float]:
        """JSON-safe form."""
        return {"epsilon": self.epsilon, "delta": self.delta}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyBudget:
        """Inverse of :meth:`to_dict`."""
        return cls(float(data["epsilon"]), float(data.get("delta", 0.0)))


_BELOW_ONE = math.nextafter(1.0, 0.0)


class GuaranteeKind(StrEnum):
    """The kinds of guarantee a release can state."""

    PURE = "pure"
    APPROX = "approx"
    ZCDP = "zCDP"
    PUFFERFISH = "Pufferfish"
    LOCAL = "local"
    NONE = "none"


_KIND_TEXT = {
    GuaranteeKind.PURE: "ε-differential privacy",
    GuaranteeKind.APPROX: "(ε, δ)-differential privacy",
    GuaranteeKind.ZCDP: "ρ-zero-concentrated differential privacy",
    GuaranteeKind.PUFFERFISH: "ε-Pufferfish privacy",
    GuaranteeKind.LOCAL: "local differential privacy",
    GuaranteeKind.NONE: "no formal privacy guarantee",
}

#: The short names :meth:`Guarantee.summary` uses.
_KIND_SHORT = {
    GuaranteeKind.PURE: "ε-DP",
    GuaranteeKind.APPROX: "(ε, δ)-DP",
    GuaranteeKind.ZCDP: "ρ-zCDP",
    GuaranteeKind.PUFFERFISH: "ε-Pufferfish",
    GuaranteeKind.LOCAL: "local differential privacy",
    GuaranteeKind.NONE: "no privacy guarantee",
}
#: A mechanism name up to this length is shown whole in a summary.
_LABEL_WHOLE = 56
#: A longer name is cut to its part before " (", or before ":" if that is still longer.
_HEAD_MAX = 50
#: A reason for kind ``none`` is cut at a word to about this length in a summary.
_REASON_MAX = 56
#: A source citation inside a mechanism name: "Jiang et al. 2013", "Rubinstein et al.",
#: "Gu, Zhang & Zhang 2022", "Song, Wang & Chaudhuri 2017", or a key such as "CMS11".
_CITATION = re.compile(
    r"(?:\b[A-Z][\w'-]+ et al\.(?: (?:19|20)\d\d)?"
    r"|\b[A-Z][\w'-]+(?:(?:, | & | and )[A-Z][\w'-]+)* (?:19|20)\d\d\b"
    r"|\b[A-Z]{2,5}\d\d\b)"
)


def mechanism_label(mechanism: str) -> str:
    """A short name for a mechanism, for one-line summaries.

    A name of at most 56 characters is kept whole. A longer one is cut before its first
    parenthesis (before its first colon if that still leaves more than 50 characters), and
    the first source citation it contains (``Jiang et al. 2013``, ``Rubinstein et al.``,
    ``CMS11``) is added in parentheses; a name written as a call keeps its first argument.

    Examples
    --------
    >>> mechanism_label("DP-PCA (Jiang et al. 2013)")
    'DP-PCA (Jiang et al. 2013)'
    >>> mechanism_label("EXP (per-record reading of Jiang et al. 2013's EXP baseline)")
    'EXP (Jiang et al. 2013)'
    >>> mechanism_label(
    ...     "PrivateLogisticRegression: objective perturbation (CMS11 Alg. 2) with a "
    ...     "certified residual step"
    ... )
    'PrivateLogisticRegression: objective perturbation (CMS11)'
    >>> mechanism_label("characteristic-vector(gaussian, k=40, γ=0.5, sigma=0.125, spike=0)")
    'characteristic-vector(gaussian, …)'
    """
    text = " ".join(str(mechanism).split())
    if len(text) <= _LABEL_WHOLE:
        return text
    call = re.match(r"([^\s(:]+)\(([^,)]*)([,)])", text)
    if call is not None:  # "additive(gaussian, scale=..., ...)" -> "additive(gaussian, …)"
        return f"{call.group(1)}({call.group(2)}{', …)' if call.group(3) == ',' else ')'}"
    head = text.split(" (", 1)[0].strip()
    if len(head) > _HEAD_MAX:
        head = head.split(":", 1)[0].strip()
    if len(head) > _HEAD_MAX:
        head = head[: _HEAD_MAX - 1].rsplit(" ", 1)[0] + "…"
    found = _CITATION.search(text)
    if found is None or found.group(0) in head:
        return head
    return f"{head} ({found.group(0)})"


def _short_reason(reason: str) -> str:
    """The first clause of a reason (before ``:``, ``;`` or `` (``), cut at a word."""
    text = re.split(r":|;| \(", " ".join(reason.split()), maxsplit=1)[0].strip()
    if len(text) <= _REASON_MAX:
        return text
    cut = text[: _REASON_MAX - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",") + "…"


@dataclass(frozen=True, slots=True)
class Guarantee:
    """What a release promises.

    Parameters
    ----------
    kind : GuaranteeKind
        ``pure`` (ε-DP), ``approx`` ((ε, δ)-DP), ``zCDP`` (ρ-zCDP), ``Pufferfish``,
        ``local`` (local DP, per respondent) or ``none``.
    epsilon, delta, rho : float or None
        The parameters that apply to the kind.
    relation : Neighbouring or None
        The neighbouring relation the guarantee holds for (None for kind ``none``).
    mechanism : str
        Name of the mechanism or pipeline that made the release.
    assumptions : tuple of str
        What the guarantee rests on: declared bounds, norms, public counts, the trust
        model, "true model in Θ" for Pufferfish, idealised numerics, and so on.
    details : dict
        JSON-safe extra facts (sensitivity, noise scale, legacy metrics for ``none``).

    Use the constructors :meth:`pure`, :meth:`approx`, :meth:`zcdp`, :meth:`pufferfish`,
    :meth:`local` and :meth:`none` rather than the raw fields.

    Examples
    --------
    >>> g = Guarantee.pure(1.0, relation="replace-one", mechanism="Laplace",
    ...                    assumptions=("L1 sensitivity 1",))
    >>> print(g)  # doctest: +NORMALIZE_WHITESPACE
    ε-differential privacy with ε=1, neighbouring: replace-one
    (mechanism: Laplace; assumes: L1 sensitivity 1)
    >>> g.summary()
    'ε-DP, ε = 1, replace-one — Laplace'
    >>> Guarantee.from_dict(g.to_dict()) == g
    True
    """

    kind: GuaranteeKind
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    relation: Neighbouring | None = None
    mechanism: str = ""
    assumptions: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", GuaranteeKind(self.kind))
        if self.relation is not None:
            object.__setattr__(self, "relation", Neighbouring.parse(self.relation))
        object.__setattr__(self, "assumptions", tuple(str(a) for a in self.assumptions))
        kind = self.kind
        needs_eps = kind in (GuaranteeKind.PURE, GuaranteeKind.APPROX, GuaranteeKind.PUFFERFISH)
        if needs_eps and self.epsilon is None:
            raise ParameterError(f"epsilon (None) is required for a {kind.value} guarantee")
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", check_nonnegative("epsilon", self.epsilon))
        if self.delta is not None:
            object.__setattr__(self, "delta", check_delta("delta", self.delta))
        if kind is GuaranteeKind.APPROX and self.delta is None:
            raise ParameterError("delta (None) is required for an approx guarantee")
        if kind is GuaranteeKind.ZCDP:
            if self.rho is None:
                raise ParameterError("rho (None) is required for a zCDP guarantee")
            object.__setattr__(self, "rho", check_nonnegative("rho", self.rho))
        if (
            kind is not GuaranteeKind.NONE
            and kind is not GuaranteeKind.LOCAL
            and self.relation is None
        ):
            raise ParameterError(f"relation (None) is required for a {kind.value} guarantee")

    # -- constructors -------------------------------------------------------------------

    @classmethod
    def pure(
        cls,
        epsilon: float,
        *,
        relation: Neighbouring | str,
        mechanism: str = "",
        assumptions: tuple[str, ...] | list[str] = (),
        details: dict[str, Any] | None = None,
    ) -> Guarantee:
        """ε-differential privacy."""
        return cls(
            GuaranteeKind.PURE,
            epsilon,
            0.0,
            None,
            Neighbouring.parse(relation),
            mechanism,
            tuple(assumptions),
            dict(details or {}),
        )

    @classmethod
    def approx(
        cls,
        epsilon: float,
        delta: float,
        *,
        relation: Neighbouring | str,
        mechanism: str = "",
        assumptions: tuple[str, ...] | list[str] = (),
        details: dict[str, Any] | None = None,
    ) -> Guarantee:
        """(ε, δ)-differential privacy (pure when ``delta == 0``)."""
        kind = GuaranteeKind.PURE if delta == 0 else GuaranteeKind.APPROX
        return cls(
            kind,
            epsilon,
            delta,
            None,
            Neighbouring.parse(relation),
            mechanism,
            tuple(assumptions),
            dict(details or {}),
        )

    @classmethod
    def zcdp(
        cls,
        rho: float,
        *,
        relation: Neighbouring | str,
        mechanism: str = "",
        assumptions: tuple[str, ...] | list[str] = (),
        details: dict[str, Any] | None = None,
    ) -> Guarantee:
        """ρ-zero-concentrated differential privacy."""
        return cls(
            GuaranteeKind.ZCDP,
            None,
            None,
            rho,
            Neighbouring.parse(relation),
            mechanism,
            tuple(assumptions),
            dict(details or {}),
        )

    @classmethod
    def pufferfish(
        cls,
        epsilon: float,
        *,
        relation: Neighbouring | str = Neighbouring.REPLACE_ONE,
        mechanism: str = "",
        assumptions: tuple[str, ...] | list[str] = (),
        details: dict[str, Any] | None = None,
    ) -> Guarantee:
        """ε-Pufferfish privacy; the assumptions must name the secrets and the class Θ."""
        return cls(
            GuaranteeKind.PUFFERFISH,
            epsilon,
            0.0,
            None,
            Neighbouring.parse(relation),
            mechanism,
            tuple(assumptions),
            dict(details or {}),
        )

    @classmethod
    def local(
        cls,
        epsilon: float,
        delta: float = 0.0,
        *,
        mechanism: str = "",
        assumptions: tuple[str, ...] | list[str] = (),
        details: dict[str, Any] | None = None,
    ) -> Guarantee:
        """(ε, δ)-local differential privacy: any two inputs of one respondent."""
        return cls(
            GuaranteeKind.LOCAL,
            epsilon,
            delta,
            None,
            None,
            mechanism,
            tuple(assumptions),
            dict(details or {}),
        )

    @classmethod
    def none(
        cls,
        reason: str,
        *,
        mechanism: str = "",
        assumptions: tuple[str, ...] | list[str] = (),
        details: dict[str, Any] | None = None,
    ) -> Guarantee:
        """No formal guarantee; ``reason`` says why (kept as the first assumption)."""
        return cls(
            GuaranteeKind.NONE,
            None,
            None,
            None,
            None,
            mechanism,
            (reason, *assumptions),
            dict(details or {}),
        )

    # -- views --------------------------------------------------------------------------

    @property
    def budget(self) -> PrivacyBudget | None:
        """The (ε, δ) this guarantee charges under basic composition, if it has one."""
        if self.kind in (
            GuaranteeKind.PURE,
            GuaranteeKind.APPROX,
            GuaranteeKind.PUFFERFISH,
            GuaranteeKind.LOCAL,
        ):
            return PrivacyBudget(self.epsilon or 0.0, self.delta or 0.0)
        return None

    @property
    def is_private(self) -> bool:
        """False only for kind ``none``."""
        return self.kind is not GuaranteeKind.NONE

    def __str__(self) -> str:
        kind = self.kind
        text = _KIND_TEXT[kind]
        if kind is GuaranteeKind.PURE or kind is GuaranteeKind.PUFFERFISH:
            text += f" with ε={self.epsilon:g}"
        elif kind is GuaranteeKind.APPROX:
            text += f" with ε={self.epsilon:g}, δ={self.delta:g}"
        elif kind is GuaranteeKind.ZCDP:
            text += f" with ρ={self.rho:g}"
        elif kind is GuaranteeKind.LOCAL:
            text += f" with ε={self.epsilon:g}" if self.epsilon is not None else ""
            text += f", δ={self.delta:g}" if self.delta else ""
        if self.relation is not None:
            text += f", neighbouring: {self.relation.value}{self._unit_text()}"
        extras = []
        if self.mechanism:
            extras.append(f"mechanism: {self.mechanism}")
        if self.assumptions:
            label = "reason" if kind is GuaranteeKind.NONE else "assumes"
            extras.append(f"{label}: " + "; ".join(self.assumptions))
        if extras:
            text += " (" + "; ".join(extras) + ")"
        return text

    def _unit_text(self) -> str:
        """`` per person (pid, ≤ 5 rows each)`` when the release declares a privacy unit
        (``details["privacy_unit"]``, written by the publishers that honour one), else ``""``.
        """
        unit = self.details.get("privacy_unit") if isinstance(self.details, dict) else None
        if not isinstance(unit, dict) or "column" not in unit:
            return ""
        text = f" per person ({unit['column']}, ≤ {unit.get('max_rows')} rows each"
        if unit.get("max_groups") is not None:
            text += f", ≤ {unit['max_groups']} group(s)"
        if unit.get("max_rows_per_group") is not None:
            text += f", ≤ {unit['max_rows_per_group']} row(s) per group"
        if isinstance(unit.get("max_rows_chosen_under_dp"), dict):
            text += f", max_rows chosen under DP: {unit.get('max_rows')}"
        return text + ")"

    def summary(self) -> str:
        """One line: the kind, ε and δ (where nonzero), the relation and the mechanism.

        What the terminal shows for a release; ``str(g)`` is the full statement with every
        assumption (release files, ``-v``). The mechanism is shortened by
        :func:`mechanism_label`; a guarantee of kind ``none`` gives the first clause of its
        reason instead of parameters.

        Examples
        --------
        >>> Guarantee.approx(1, 1e-6, relation="add/remove", mechanism="LDA-DP").summary()
        '(ε, δ)-DP, ε = 1, δ = 1e-06, add/remove — LDA-DP'
        >>> Guarantee.local(2.0, mechanism="additive(laplace, scale=0.5)").summary()
        'ε-local differential privacy, ε = 2, per respondent — additive(laplace, scale=0.5)'
        >>> Guarantee.none("raw projections: every row exact", mechanism="LDA-DP").summary()
        'no privacy guarantee: raw projections — LDA-DP'
        """
        kind = self.kind
        parts: list[str] = []
        if kind is GuaranteeKind.NONE:
            head = _KIND_SHORT[kind]
            reason = _short_reason(self.assumptions[0]) if self.assumptions else ""
            parts.append(f"{head}: {reason}" if reason else head)
        else:
            parts.append(self._short_kind())
            if kind is GuaranteeKind.ZCDP:
                parts.append(f"ρ = {self.rho:g}")
            if self.epsilon is not None:
                parts.append(f"ε = {self.epsilon:g}")
            if self.delta:
                parts.append(f"δ = {self.delta:g}")
        if self.relation is not None:
            parts.append(self.relation.value + self._unit_text())
        elif kind is GuaranteeKind.LOCAL:
            parts.append("per respondent")
        text = ", ".join(parts)
        label = mechanism_label(self.mechanism) if self.mechanism else ""
        return f"{text} — {label}" if label else text

    def _repr_html_(self) -> str:
        """A notebook's view: the summary line, then the full statement."""
        from html import escape

        return (
            f"<p><strong>{escape(self.summary())}</strong></p>"
            f"<p style='font-size:90%'>{escape(str(self))}</p>"
        )

    def _short_kind(self) -> str:
        kind = self.kind
        if kind is GuaranteeKind.LOCAL and self.epsilon is not None:
            return ("(ε, δ)-" if self.delta else "ε-") + _KIND_SHORT[kind]
        if kind is GuaranteeKind.PUFFERFISH and self.delta:
            return "(ε, δ)-Pufferfish"
        return _KIND_SHORT[kind]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form for the ledger and for release files."""
        return {
            "kind": self.kind.value,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho": self.rho,
            "relation": None if self.relation is None else self.relation.value,
            "mechanism": self.mechanism,
            "assumptions": list(self.assumptions),
            "details": dict(self.details),
            "statement": str(self),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Guarantee:
        """Inverse of :meth:`to_dict` (the ``statement`` text is regenerated, not read)."""
        return cls(
            kind=GuaranteeKind(data["kind"]),
            epsilon=data.get("epsilon"),
            delta=data.get("delta"),
            rho=data.get("rho"),
            relation=None if data.get("relation") is None else Neighbouring.parse(data["relation"]),
            mechanism=data.get("mechanism", ""),
            assumptions=tuple(data.get("assumptions", ())),
            details=dict(data.get("details", {})),
        )
