"""Lazy import of scikit-learn (the ``learn`` extra) with an install hint."""

from __future__ import annotations

from typing import Any

from ppdp.exceptions import OptionalDependencyError

__all__ = ["import_sklearn"]


def import_sklearn() -> Any:
    """Import scikit-learn (the ``learn`` extra) or say how to install it."""
    try:
        import sklearn
        import sklearn.discriminant_analysis
        import sklearn.tree
    except ImportError as exc:
        raise OptionalDependencyError(
            "the classification metrics need scikit-learn, which is not installed: "
            "pip install 'ppdp[learn]'"
        ) from exc
    return sklearn
