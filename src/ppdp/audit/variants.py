"""Audit-only variants of the release classes: the same estimator with its noise rescaled.

No release class (a publisher or a private learner) has a noise factor, a parameter or a
method for one: every noise it draws comes from its random source, through the samplers
of :mod:`ppdp.noise`, which multiply each noise scale by the source's
:func:`~ppdp.random.noise_factor` (1 for every source but the one built here). The audits'
positive controls need the *same* release with less noise, still claiming ε; they are
built here, outside the release path, as a rescaled source (:class:`ScaledNoise`) and as
subclasses whose run draws from one:

>>> from ppdp.audit import half_noise
>>> from ppdp.publish import LaplacePublisher
>>> HalfLaplace = half_noise(LaplacePublisher)
>>> HalfLaplace.__name__
'HalfNoiseLaplacePublisher'
>>> HalfLaplace.audit_noise_factor
0.5

The factor multiplies each scale where the sampler meets the source, so a variant with the
same ``random_state`` consumes the same uniforms as the release class. A variant is not
differentially private at its claim: its ``run`` (which ``fit`` calls) refuses an
accountant before anything is validated or read, and the release run refuses a rescaled
source with an accountant however it was passed (:func:`ppdp.random.refuse_rescaled`), so a
broken variant is never charged to a ledger.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from ppdp._validation import check_positive
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.random import RandomState, noise_factor, resolve_random_state

__all__ = ["ScaledNoise", "half_noise", "is_noise_variant", "noise_variant"]

T = TypeVar("T", bound=type)

#: The positive control: the same mechanism with half its noise, still claiming ε.
CONTROL_NOISE_MULTIPLIER = 0.5


class ScaledNoise:
    """A random source whose every noise scale is multiplied by ``factor`` (audits only).

    The words are those of ``random_state``'s source, unchanged; the samplers of
    :mod:`ppdp.noise` (and the partition streams made from this source) read
    :attr:`noise_factor`. Not DP at the calibrated ε: a release through a ledger refuses it.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomSource
        The words' source (resolved by :func:`ppdp.random.resolve_random_state`).
    factor : float
        A finite number > 0 (times the source's own factor).
    """

    def __init__(self, random_state: RandomState, factor: float) -> None:
        self._source = resolve_random_state(random_state)
        self.noise_factor = check_positive("factor", factor) * noise_factor(self._source)
        self.is_secure = bool(self._source.is_secure)

    def uint64(self, n: int) -> NDArray[np.uint64]:
        return self._source.uint64(n)

    def __repr__(self) -> str:
        return f"ScaledNoise({self._source!r}, {self.noise_factor:g})"


def noise_variant(cls: T, factor: float) -> T:
    """The audit-only subclass of ``cls`` whose every noise scale is multiplied by ``factor``.

    Parameters
    ----------
    cls : type
        A release class: a :class:`ppdp.publish.Publisher` or a private learner (a class
        with ``run`` and a ``random_state`` parameter). Not itself a variant.
    factor : float
        A finite number > 0; ``0.5`` is the positive control (half the noise).

    Returns
    -------
    type
        A subclass of ``cls`` (the same for equal arguments) with the same parameters,
        named ``f"NoiseFactor{factor}{cls.__name__}"`` (``HalfNoise…`` for 0.5), whose run
        draws from ``ScaledNoise(random_state, factor)``. Its ``fit`` refuses an
        accountant: it is not DP at the ε it claims.

    Raises
    ------
    ParameterTypeError
        ``cls`` is not a release class, or is already a variant.
    ParameterError
        ``factor`` is not a finite number > 0.
    """
    if not _is_release_class(cls):
        raise ParameterTypeError(
            f"cls ({cls!r}) must be a release class with run() and a random_state parameter "
            "(a ppdp publisher or private learner)"
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


def _is_release_class(cls: object) -> bool:
    if not isinstance(cls, type) or not callable(getattr(cls, "run", None)):
        return False
    return "random_state" in inspect.signature(cls.__init__).parameters


@functools.cache
def _variant(cls: type, factor: float) -> type:
    label = "HalfNoise" if factor == CONTROL_NOISE_MULTIPLIER else f"NoiseFactor{factor:g}"
    name = f"{label}{cls.__name__}"
    release_run = cls.run  # type: ignore[attr-defined]

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        options = inspect.signature(release_run).bind(self, *args, **kwargs).arguments
        accountant = getattr(options.get("options"), "accountant", None)
        if accountant is not None:  # ``fit`` runs through ``run``: never charged to a ledger
            raise ParameterError(
                f"accountant ({type(accountant).__name__}) must be None: {name} is an "
                f"audit-only variant (noise factor {factor:g}), not DP at its claimed ε"
            )
        random_state = self.random_state
        self.random_state = ScaledNoise(random_state, factor)  # this run's source only
        try:
            return release_run(self, *args, **kwargs)
        finally:
            self.random_state = random_state

    run.__doc__ = release_run.__doc__
    namespace = {
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": (
            f"Audit-only variant of :class:`{cls.__module__}.{cls.__name__}` drawing "
            f"{factor:g} × its noise while claiming the same ε; ``fit`` refuses an accountant."
        ),
        "audit_noise_factor": factor,
        "run": run,
    }
    return type(name, (cls,), namespace)
