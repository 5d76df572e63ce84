"""The parameters of one Mul-LDA-DP round, shared by every party (``RoundConfig``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ppdp._validation import check_delta, check_epsilon, check_int, check_option, check_real
from ppdp.budget import PrivacyBudget
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.federated.calibration import FederatedPlan, federated_noise_plan
from ppdp.federated.messages import check_party_id, check_session_id
from ppdp.publish.fisher import LDANoisePlan, default_ridge, split_budget

__all__ = ["DEALERS", "RELEASES", "RoundConfig"]

RELEASES = ("direction", "noisy-projections", "raw-projections")
DEALERS = ("trusted", "none")


@dataclass(frozen=True, kw_only=True)
class RoundConfig:
    """Everything the parties of a round agree on before it starts (public).

    The publisher sends it in ``round-start``; every owner and the dealer compare it with
    their own copy, field by field, and refuse a round that differs (a publisher cannot
    quietly lower the noise).

    Parameters
    ----------
    session_id : str
    publisher : str
    owners : tuple of str
        At least two; their order fixes the pairs of the zero-sum masks.
    dealer : str or None
        The dealer's party id (``dealer="trusted"``), or None (pairwise masks).
    epsilon, delta : float
        The round's whole budget (spent by the publisher before any share is requested).
    n_features : int
    classes : tuple of int or str
        Public class labels, in the order of ``class_counts``.
    class_counts : tuple of int
        Public global class sizes.
    calibration : {"gaussian", "paper"}
        Noise template (:func:`ppdp.publish.fisher.lda_noise_plan`).
    joint_view : bool
        Calibrate for the publisher's joint view (default) or the paper's split.
    mask_scale : float or None
        ``Var(e_j)/σ²``; None for the default of :func:`federated_noise_plan`.
    mean_share : float
        Share of the means+scatter budget spent on the means.
    release : {"direction", "noisy-projections", "raw-projections"}
    projection_share : float
        With ``"noisy-projections"``: share of ``epsilon`` spent on the per-row Laplace
        noise of the projections (the rest, and all of δ, goes to the means and scatter);
        0.5 as in :class:`~ppdp.publish.LDAProjectionPublisher`.
    n_components : int or None
    ridge : float or None
        Data-independent ridge; None for :func:`ppdp.publish.fisher.default_ridge`.
    constant_blocks : tuple of tuple of int, optional
        Column indices of each one-hot block (from the public schema): the directions are
        computed orthogonal to each block's indicator vector, as the centralised publisher's
        ``remove_constant`` does (post-processing).
    """

    session_id: str
    publisher: str
    owners: tuple[str, ...]
    dealer: str | None
    epsilon: float
    delta: float
    n_features: int
    classes: tuple[int | str, ...]
    class_counts: tuple[int, ...]
    calibration: str = "gaussian"
    joint_view: bool = True
    mask_scale: float | None = None
    mean_share: float = 0.5
    release: str = "direction"
    projection_share: float = 0.5
    n_components: int | None = None
    ridge: float | None = None
    constant_blocks: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self) -> None:
        check_session_id(self.session_id)
        check_party_id(self.publisher, "publisher")
        if isinstance(self.owners, str) or not isinstance(self.owners, tuple | list):
            raise ParameterTypeError(f"owners ({self.owners!r}) must be a tuple of party ids")
        owners = tuple(check_party_id(o, "owner") for o in self.owners)
        object.__setattr__(self, "owners", owners)
        if len(owners) < 2:
            raise ParameterError(f"owners ({list(owners)!r}) must name at least 2 data owners")
        if self.dealer is not None:
            check_party_id(self.dealer, "dealer")
        ids = [self.publisher, *owners] + ([self.dealer] if self.dealer else [])
        if len(set(ids)) != len(ids):
            raise ParameterError(f"party ids ({ids!r}) must be distinct")
        object.__setattr__(self, "epsilon", check_epsilon("epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_delta("delta", self.delta, allow_zero=False))
        object.__setattr__(self, "n_features", check_int("n_features", self.n_features, minimum=1))
        classes = tuple(self.classes)
        if not all(type(c) in (int, str) for c in classes) or len(set(classes)) != len(classes):
            raise ParameterError(f"classes ({list(classes)!r}) must be distinct ints or strs")
        counts = tuple(check_int("class_counts", c, minimum=1) for c in self.class_counts)
        if len(classes) != len(counts) or len(counts) < 2:
            raise ParameterError(
                f"classes ({list(classes)!r}) and class_counts ({list(counts)!r}) must have the "
                "same length, at least 2"
            )
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "class_counts", counts)
        check_option("calibration", self.calibration, ("gaussian", "paper"))
        if not isinstance(self.joint_view, bool):
            raise ParameterTypeError(f"joint_view ({self.joint_view!r}) must be True or False")
        check_option("release", self.release, RELEASES)
        share = check_real("projection_share", self.projection_share)
        if not 0.0 < share < 1.0:
            raise ParameterError(f"projection_share ({share!r}) must be in (0, 1)")
        if self.n_components is not None:
            r = check_int("n_components", self.n_components, minimum=1)
            r_max = min(len(counts) - 1, self.n_features)
            if r > r_max:
                raise ParameterError(
                    f"n_components ({r}) must be an integer in 1..{r_max}: {len(counts)} classes "
                    f"give at most K - 1 discriminant directions (d = {self.n_features})"
                )
        if self.ridge is not None:
            r = check_real("ridge", self.ridge)
            if not (math.isfinite(r) and r >= 0):
                raise ParameterError(f"ridge ({r!r}) must be a finite number >= 0")
        if self.mask_scale is not None:
            check_real("mask_scale", self.mask_scale)
        if self.constant_blocks is not None:
            blocks = tuple(
                tuple(check_int("constant_blocks", i, minimum=0) for i in b)
                for b in self.constant_blocks
            )
            if any(not b or max(b) >= self.n_features for b in blocks):
                raise ParameterError(
                    f"constant_blocks ({self.constant_blocks!r}) must be non-empty lists of "
                    f"column indices below n_features ({self.n_features})"
                )
            object.__setattr__(self, "constant_blocks", blocks)

    # -- derived ------------------------------------------------------------------------

    @property
    def dealer_mode(self) -> str:
        """``"trusted"`` or ``"none"``."""
        return "none" if self.dealer is None else "trusted"

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def budget(self) -> PrivacyBudget:
        """The whole round's budget (one spend before any share is requested)."""
        return PrivacyBudget(self.epsilon, self.delta)

    def budgets(self) -> tuple[PrivacyBudget, PrivacyBudget | None]:
        """(means + scatter budget, projections budget or None)."""
        if self.release != "noisy-projections":
            return self.budget, None
        proj, stats = split_budget(self.epsilon, self.delta, self.projection_share)
        # the projections' Laplace noise is pure ε; their δ share goes back to the statistics
        return PrivacyBudget(stats.epsilon, self.delta), PrivacyBudget(proj.epsilon, 0.0)

    def plan(self) -> FederatedPlan:
        """The noise plan every party derives from this config (warns for the paper split)."""
        stats, _ = self.budgets()
        return federated_noise_plan(
            epsilon=stats.epsilon,
            delta=stats.delta,
            n_features=self.n_features,
            class_counts=self.class_counts,
            n_owners=len(self.owners),
            calibration=self.calibration,
            joint_view=self.joint_view,
            mask_scale=self.mask_scale,
            mean_share=self.mean_share,
            allow_large_epsilon=True,
        )

    def ridge_for(self, plan: LDANoisePlan) -> float:
        """The ridge: the configured one or the plan's data-independent default."""
        return default_ridge(plan) if self.ridge is None else float(self.ridge)

    def constant(self) -> Any:
        """The ``(d, k)`` indicator matrix of the one-hot blocks, or None."""
        if not self.constant_blocks:
            return None
        import numpy as np

        out = np.zeros((self.n_features, len(self.constant_blocks)))
        for j, block in enumerate(self.constant_blocks):
            out[list(block), j] = 1.0
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (sent in ``round-start``, pinned in the ledger)."""
        return {
            "session_id": self.session_id,
            "publisher": self.publisher,
            "owners": list(self.owners),
            "dealer": self.dealer,
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "n_features": self.n_features,
            "classes": list(self.classes),
            "class_counts": list(self.class_counts),
            "calibration": self.calibration,
            "joint_view": self.joint_view,
            "mask_scale": None if self.mask_scale is None else float(self.mask_scale),
            "mean_share": float(self.mean_share),
            "release": self.release,
            "projection_share": float(self.projection_share),
            "n_components": self.n_components,
            "ridge": None if self.ridge is None else float(self.ridge),
            "constant_blocks": (
                None if self.constant_blocks is None else [list(b) for b in self.constant_blocks]
            ),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoundConfig:
        """Inverse of :meth:`to_dict` (validated)."""
        if not isinstance(data, dict):
            raise ParameterTypeError(f"config ({data!r}) must be a dict")
        allowed = set(cls.__dataclass_fields__)
        extra = set(data) - allowed
        if extra:
            raise ParameterError(f"config has unknown fields {sorted(extra)}")
        values = dict(data)
        for key in ("owners", "classes", "class_counts"):
            if key in values and isinstance(values[key], list):
                values[key] = tuple(values[key])
        if isinstance(values.get("constant_blocks"), list):
            values["constant_blocks"] = tuple(tuple(b) for b in values["constant_blocks"])
        return cls(**values)
