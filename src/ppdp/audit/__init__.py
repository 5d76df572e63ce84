"""Black-box privacy audits (RELIABILITY.md B3) and the built-in audits of the basic mechanisms.

:func:`audit` takes samplers of a mechanism on two neighbouring datasets and returns an
:class:`AuditResult` with a lower bound on ε that a correct mechanism exceeds with
probability at most α = 1e-6. :func:`audit_mechanism` and :func:`audit_with_control` run
it on ppdp's Laplace, Gaussian and exponential mechanisms and on their half-noise positive
controls. Later mechanisms plug in their own samplers; see ``docs/audit.md``.
:func:`noise_variant` and :func:`half_noise` build the audit-only variants of the release
classes (the same publisher or learner with rescaled noise, refusing an accountant), from
:class:`ScaledNoise`, a random source whose every noise scale is multiplied by a factor.
"""

from ppdp.audit._harness import AuditResult, Sampler, audit, clopper_pearson, epsilon_lower_bound
from ppdp.audit.builtin import (
    CONTROL_NOISE_MULTIPLIER,
    MECHANISMS,
    ControlledAudit,
    audit_mechanism,
    audit_with_control,
    default_draws,
)
from ppdp.audit.variants import ScaledNoise, half_noise, is_noise_variant, noise_variant

__all__ = [
    "CONTROL_NOISE_MULTIPLIER",
    "MECHANISMS",
    "AuditResult",
    "ControlledAudit",
    "Sampler",
    "ScaledNoise",
    "audit",
    "audit_mechanism",
    "audit_with_control",
    "clopper_pearson",
    "default_draws",
    "epsilon_lower_bound",
    "half_noise",
    "is_noise_variant",
    "noise_variant",
]
