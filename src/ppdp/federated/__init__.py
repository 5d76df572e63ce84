"""Multi-party Fisher-LDA publishing (Mul-LDA-DP): signed messages, roles, one round in-process.

Owners hold horizontal parts of a labelled dataset; a publisher computes the Fisher direction
from masked, noisy partial statistics whose masks cancel exactly in the sum, so the aggregate
carries the centralised LDA-DP noise, calibrated so that the publisher's *joint* view of all
messages is (ε, δ)-DP. The trust model and the protocol are in ``docs/federated.md``, the
privacy argument in ``docs/proofs/mul-lda-dp.md``.

Examples
--------
>>> import numpy as np
>>> from ppdp.federated import simulate_round
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(300, 4)); X /= np.linalg.norm(X, axis=1, keepdims=True)
>>> y = (X[:, 1] > 0).astype(int)
>>> parts = [(X[i::3], y[i::3]) for i in range(3)]
>>> res = simulate_round(parts, epsilon=1.0, delta=1e-5, dealer="none", random_state=0)
>>> res.state, res.guarantee.is_private
('done', True)

The publisher role is :class:`FederatedPublisher` (``Publisher`` is its deprecated name,
kept as an alias that warns; :class:`ppdp.publish.Publisher` is the unrelated base of the
table publishers).
"""

import warnings
from typing import Any

from ppdp.exceptions import user_stacklevel
from ppdp.federated.calibration import (
    DEFAULT_MASK_SCALE,
    FederatedPlan,
    coalition_factor,
    federated_noise_plan,
    joint_view_factor,
)
from ppdp.federated.config import RoundConfig
from ppdp.federated.messages import (
    ArraySpec,
    Kind,
    Message,
    MessageFields,
    MessageValidator,
    OutOfOrderError,
    ReplayError,
    sign,
    verify,
)
from ppdp.federated.roles import (
    DataOwner,
    FederatedPublisher,
    NoiseDealer,
    create_publishing_accountant,
    must_abort,
)
from ppdp.federated.simulate import FederatedResult, Network, build_round, simulate_round

__all__ = [
    "DEFAULT_MASK_SCALE",
    "ArraySpec",
    "DataOwner",
    "FederatedPlan",
    "FederatedPublisher",
    "FederatedResult",
    "Kind",
    "Message",
    "MessageFields",
    "MessageValidator",
    "Network",
    "NoiseDealer",
    "OutOfOrderError",
    "ReplayError",
    "RoundConfig",
    "build_round",
    "coalition_factor",
    "create_publishing_accountant",
    "federated_noise_plan",
    "joint_view_factor",
    "must_abort",
    "sign",
    "simulate_round",
    "verify",
]


def __getattr__(name: str) -> Any:
    """``Publisher``: the deprecated name of :class:`FederatedPublisher` (warns)."""
    if name == "Publisher":
        warnings.warn(
            "ppdp.federated.Publisher is deprecated: use ppdp.federated.FederatedPublisher "
            "(ppdp.publish.Publisher is the base of the table publishers)",
            DeprecationWarning,
            stacklevel=user_stacklevel(),
        )
        return FederatedPublisher
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
