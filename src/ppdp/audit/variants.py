"""Audit-only variants of the release classes: the same estimator with its noise rescaled.

A release class (a publisher or a private learner) draws every noise scale times
``self._noise_factor()``, which its base class fixes to 1 and which no release class
overrides: nothing passed to ``__init__`` or ``fit`` changes it. The audits' positive
controls need the *same* release with less noise, still claiming ε; they are built here,
outside the release path, as subclasses that only override :meth:`_noise_factor`:

>>> from ppdp.audit import half_noise
>>> from ppdp.publish import LaplacePublisher
>>> HalfLaplace = half_noise(LaplacePublisher)
>>> HalfLaplace.__name__
'HalfNoiseLaplacePublisher'
>>> HalfLaplace.audit_noise_factor
0.5

The noise factor multiplies the scale exactly where the release class applies it, so a
variant with the same ``random_state`` consumes the same uniforms as the release class.
A variant is not differentially private at its claim: its ``fit`` refuses an accountant,
before anything is validated or read, so a broken variant is never charged to a ledger.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, TypeVar

from ppdp._validation import check_positive
from ppdp.audit.builtin import CONTROL_NOISE_MULTIPLIER
from ppdp.exceptions import ParameterError, ParameterTypeError

__all__ = ["half_noise", "is_noise_variant", "noise_variant"]

T = TypeVar("T", bound=type)

#: The hook every release class inherits, returning 1.
_HOOK = "_noise_factor"


def noise_variant(cls: T, factor: float) -> T:
    """The audit-only subclass of ``cls`` whose every noise scale is multiplied by ``factor``.

    Parameters
    ----------
    cls : type
        A release class: a :class:`ppdp.publish.Publisher` or a private learner (a class
        with the ``_noise_factor`` hook). Not itself a variant.
    factor : float
        A finite number > 0; ``0.5`` is the positive control (half the noise).

    Returns
    -------
    type
        A subclass of ``cls`` (the same for equal arguments) with the same parameters,
        named ``f"NoiseFactor{factor}{cls.__name__}"`` (``HalfNoise…`` for 0.5). Its
        ``fit`` refuses an accountant: it is not DP at the ε it claims.

    Raises
    ------
    ParameterTypeError
        ``cls`` is not a release class, or is already a variant.
    ParameterError
        ``factor`` is not a finite number > 0.
    """
    if not isinstance(cls, type) or not callable(getattr(cls, _HOOK, None)):
        raise ParameterTypeError(
            f"cls ({cls!r}) must be a release class with a {_HOOK}() hook (a ppdp publisher "
            "or private learner)"
        )
    if is_noise_variant(cls):
        raise ParameterTypeError(
            f"cls ({cls.__name__}) is already an audit variant (noise factor "
            f"{cls.audit_noise_factor!r}); pass its release class {cls.__mro__[1].__name__}"
        )
    return _variant(cls, check_positive("factor", factor))  # type: ignore[no-any-return]


def half_noise(cls: T) -> T:
    """The positive control of ``cls``: :func:`noise_variant` with ``CONTROL_NOISE_MULTIPLIER``.

    Parameters
    ----------
    cls : type
        A release class (a publisher or a private learner).

    Returns
    -------
    type
        The subclass of ``cls`` drawing half the noise while claiming the same ε.
    """
    return noise_variant(cls, CONTROL_NOISE_MULTIPLIER)


def is_noise_variant(cls: type) -> bool:
    """True for a class built by :func:`noise_variant` (or a subclass of one)."""
    return isinstance(cls, type) and "audit_noise_factor" in {
        k for c in cls.__mro__ for k in vars(c)
    }


@functools.cache
def _variant(cls: type, factor: float) -> type:
    label = "HalfNoise" if factor == CONTROL_NOISE_MULTIPLIER else f"NoiseFactor{factor:g}"
    name = f"{label}{cls.__name__}"
    release_fit = cls.fit  # type: ignore[attr-defined]
    signature = inspect.signature(release_fit)

    def _noise_factor(self: Any) -> float:
        return factor

    def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            accountant = signature.bind(self, *args, **kwargs).arguments.get("accountant")
        except TypeError:
            accountant = None  # the release class's fit raises its own error
        if accountant is not None:
            # A broken variant is never charged to a ledger.
            raise ParameterError(
                f"accountant ({type(accountant).__name__}) must be None: {name} is an "
                f"audit-only variant (noise factor {factor:g}), not DP at its claimed ε"
            )
        return release_fit(self, *args, **kwargs)

    release_run = cls.run  # type: ignore[attr-defined]

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        options = inspect.signature(release_run).bind(self, *args, **kwargs).arguments
        accountant = getattr(options.get("options"), "accountant", None)
        if accountant is not None:
            # ``fit`` runs through ``run``: the same refusal, whichever is called.
            raise ParameterError(
                f"accountant ({type(accountant).__name__}) must be None: {name} is an "
                f"audit-only variant (noise factor {factor:g}), not DP at its claimed ε"
            )
        return release_run(self, *args, **kwargs)

    fit.__doc__ = release_fit.__doc__
    fit.__signature__ = signature  # type: ignore[attr-defined]
    run.__doc__ = release_run.__doc__
    namespace = {
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": (
            f"Audit-only variant of :class:`{cls.__module__}.{cls.__name__}` drawing "
            f"{factor:g} × its noise while claiming the same ε; ``fit`` refuses an accountant."
        ),
        "audit_noise_factor": factor,
        _HOOK: _noise_factor,
        "fit": fit,
        "run": run,
    }
    return type(name, (cls,), namespace)
