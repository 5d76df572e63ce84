"""What a party's process runs besides its config: the node and its hooks.

A leaf shared by the role adapter (:mod:`ppdp.federated.http._parties`, which builds the
parts) and the runner (:mod:`ppdp.federated.http._runner`, which serves them), so that
neither imports the other for the type.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ppdp.federated.http._node import PartyNode

__all__ = ["PartyParts"]


@dataclass
class PartyParts:
    """What :func:`~ppdp.federated.http.run_party` needs besides the config: built by the
    role adapter."""

    node: PartyNode
    finish: Callable[[PartyNode], Awaitable[dict[str, Any]]] | None = None
    close: Callable[[], None] | None = None
