"""Errors and warnings raised by ppdp.

Every error derives from :class:`PPDPError`, so ``except ppdp.PPDPError`` catches anything
ppdp raises on purpose. Leaves also derive from the builtin a caller would expect
(``ValueError`` for a bad value, ``TypeError`` for a bad type), so existing ``except``
clauses keep working. Every warning derives from :class:`PPDPWarning`.
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "BudgetExceededError",
    "CalibrationError",
    "ConvergenceError",
    "ConvergenceWarning",
    "DataValidationError",
    "InsecureRandomnessWarning",
    "KeyInUseError",
    "LedgerIOError",
    "LedgerIntegrityError",
    "LowUtilityWarning",
    "MissingColumnsError",
    "NotDifferentiallyPrivateWarning",
    "NotFittedError",
    "OptionalDependencyError",
    "PPDPError",
    "PPDPWarning",
    "ParameterError",
    "ParameterTypeError",
    "PrivacyLeakWarning",
    "ProtocolError",
    "SchemaError",
    "UnsupportedEventError",
    "user_stacklevel",
]


class PPDPError(Exception):
    """Base class of every error ppdp raises on purpose."""


class ParameterError(PPDPError, ValueError):
    """A parameter has a value outside what is allowed (the message names it and the range)."""


class ParameterTypeError(PPDPError, TypeError):
    """A parameter has the wrong type (the message names it and the accepted types)."""


class SchemaError(PPDPError, ValueError):
    """A schema declaration is invalid, or data do not fit the declared schema."""


class DataValidationError(PPDPError, ValueError):
    """Input data are malformed (NaN, inf, wrong shape, undeclared category).

    The message names the column or parameter, never a private value.
    """


class MissingColumnsError(DataValidationError):
    """A table lacks columns its schema declares (``missing``: their names, in schema order).

    Raised from the header alone, before any row is read.
    """

    def __init__(self, message: str, missing: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.missing = missing


class BudgetExceededError(PPDPError, ValueError):
    """A spend would overrun the dataset's remaining privacy budget.

    Raised before any data is touched; nothing is recorded. ``remaining`` holds the
    budget that is still available (query it with ``Accountant.remaining``).
    """

    def __init__(self, message: str, *, remaining: object = None, requested: object = None):
        super().__init__(message)
        self.remaining = remaining
        self.requested = requested


class LedgerIntegrityError(PPDPError):
    """A ledger failed verification; ``index`` is the first bad entry (or None for the file)."""

    def __init__(self, message: str, *, index: int | None = None):
        super().__init__(message)
        self.index = index


class LedgerIOError(PPDPError, OSError):
    """The ledger file could not be read or written (disk full, read-only, I/O error).

    Not an integrity failure: nothing was changed, and no spend was recorded.
    """


class KeyInUseError(ParameterError):
    """Another run in progress holds this release's idempotency key; nothing was charged.

    The message names the holder (pid, host, since); retry once it has ended.
    """


class ProtocolError(PPDPError):
    """A multi-party protocol message or state transition was rejected."""


class NotFittedError(PPDPError, ValueError, AttributeError):
    """An estimator or publisher was used before ``fit``."""


class CalibrationError(PPDPError):
    """A noise calibration could not reach the requested privacy target."""


class ConvergenceError(PPDPError, RuntimeError):
    """A solver did not certify the accuracy a privacy proof assumes; nothing was released.

    Raised after the spend (the budget stays charged: charging without releasing is safe).
    The message carries public parameters only (tolerances, iteration limits), never the
    data-dependent residual or iteration count.
    """


class UnsupportedEventError(PPDPError, ValueError):
    """An accountant was asked to compose an event it cannot account for soundly."""


class OptionalDependencyError(PPDPError, ImportError):
    """An optional extra is needed for this feature; the message says which one to install."""


class PPDPWarning(UserWarning):
    """Base class of every warning ppdp issues."""


class PrivacyLeakWarning(PPDPWarning):
    """Something about the private data leaks outside the stated guarantee.

    Issued when bounds, norms or domains are read from the data itself, or when a
    parameter choice weakens the guarantee (for example ``delta >= 1/n``).
    """


class InsecureRandomnessWarning(PPDPWarning):
    """A seeded, reproducible random stream is in use: fine for experiments, not for releases."""


class NotDifferentiallyPrivateWarning(PPDPWarning):
    """A faithful-to-the-paper variant was chosen whose output is not differentially private."""


class ConvergenceWarning(PPDPWarning):
    """An iterative solver stopped before its tolerance; the guarantee may need it."""


class LowUtilityWarning(PPDPWarning):
    """The expected noise is likely to swamp the signal at these parameters."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first caller outside ppdp.

    Call it as the argument of :func:`warnings.warn`
    (``warnings.warn(w, stacklevel=user_stacklevel())``): a warning raised deep inside a
    ``fit`` then shows the user's ``fit`` line, not a line of ppdp, however many of ppdp's
    frames lie between (as pandas does).
    """
    frame = sys._getframe(1)  # the function that calls warnings.warn: stacklevel 1
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level
