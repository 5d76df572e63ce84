"""Multi-party Fisher-LDA publishing (Mul-LDA-DP): signed messages, roles, one round in-process.

The trust model, the protocol and the privacy argument are in ``docs/federated.md`` and
``docs/proofs/mul-lda-dp.md``.
"""

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

__all__ = [
    "ArraySpec",
    "Kind",
    "Message",
    "MessageFields",
    "MessageValidator",
    "OutOfOrderError",
    "ReplayError",
    "sign",
    "verify",
]
