"""Where ppdp's mechanisms register under their command-line and file names.

One table per kind: :data:`PUBLISHERS` (``ppdp publish METHOD``), :data:`LEARNERS`
(``ppdp train LEARNER``; model files name the class) and :data:`RANDOMIZERS` (the
``"type"`` of a local randomizer's ``to_dict``). The command line's choices, model-file
loading and :func:`ppdp.local.randomizer_from_dict` read these tables instead of string
if-chains, so adding a mechanism means writing its class and adding one line here.

An entry names its class as ``"module:Class"`` and is imported only when used, so
reading the names (``ppdp --help``) imports no mechanism; a name read from a file is only
ever looked up here, never imported as given.

Examples
--------
>>> from ppdp.registry import LEARNERS, PUBLISHERS
>>> PUBLISHERS.names()[:2]
('pca', 'lda-synth')
>>> LEARNERS.load("logreg").__name__
'PrivateLogisticRegression'
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["LEARNERS", "PUBLISHERS", "RANDOMIZERS", "Entry", "Registry"]


@dataclass(frozen=True)
class Entry:
    """One registered mechanism.

    Attributes
    ----------
    name : str
        Its command-line / file name (``"pca"``, ``"logreg"``, ``"additive"``).
    target : str
        ``"module:Class"``.
    flags : mapping
        Command-line flags the mechanism takes -> its constructor parameter (publishers).
    required : mapping
        Flags it cannot do without -> what to give, said when one is missing.
    """

    name: str
    target: str
    flags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    required: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def class_name(self) -> str:
        """The class's name (what a model file stores)."""
        return self.target.partition(":")[2]

    @property
    def module(self) -> str:
        """The module that defines the class."""
        return self.target.partition(":")[0]

    def load(self) -> type:
        """The class itself (imports its module)."""
        return getattr(importlib.import_module(self.module), self.class_name)  # type: ignore[no-any-return]


class Registry:
    """Names -> mechanism classes of one kind, in registration order."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def register(
        self,
        name: str,
        target: str,
        *,
        flags: Mapping[str, str] | None = None,
        required: Mapping[str, str] | None = None,
    ) -> Entry:
        """Add ``name`` -> ``"module:Class"``; a name registered twice is refused."""
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        entry = Entry(
            name,
            target,
            MappingProxyType(dict(flags or {})),
            MappingProxyType(dict(required or {})),
        )
        self._entries[name] = entry
        return entry

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)

    def entries(self) -> tuple[Entry, ...]:
        """The registered entries, in registration order."""
        return tuple(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def entry(self, name: str) -> Entry:
        """The entry of ``name``; an unknown name is refused in one line naming the choices."""
        from ppdp._validation import check_option

        return self._entries[check_option(self.kind, name, self.names())]

    def load(self, name: str) -> type:
        """The class registered as ``name``."""
        return self.entry(name).load()

    def owners(self, flag: str) -> tuple[str, ...]:
        """The names whose mechanism takes ``flag``."""
        return tuple(e.name for e in self._entries.values() if flag in e.flags)


#: ``ppdp publish METHOD``: table publishers, with the method-specific flags each takes.
PUBLISHERS = Registry("method")
PUBLISHERS.register(
    "pca",
    "ppdp.publish.pca:DPPCAPublisher",
    flags={"--components": "n_components", "--no-clamp": "clamp"},
    required={"--components": "choose k in advance"},
)
PUBLISHERS.register(
    "lda-synth",
    "ppdp.publish.lda_synth:DPLDASynthesizer",
    flags={"--class-sizes": "class_sizes", "--count-share": "count_share"},
)
PUBLISHERS.register(
    "lda-projection",
    "ppdp.publish.lda_projection:LDAProjectionPublisher",
    flags={
        "--delta": "delta",
        "--components": "n_components",
        "--release": "release",
        "--calibration": "calibration",
        "--class-counts": "class_counts",
        "--mean-share": "mean_share",
        "--projection-share": "projection_share",
        "--ridge": "ridge",
        "--keep-constant": "remove_constant",
    },
    required={"--delta": "a number in (0, 1), well below 1/n"},
)
PUBLISHERS.register("laplace", "ppdp.publish.baselines:LaplacePublisher")
PUBLISHERS.register("exponential", "ppdp.publish.baselines:ExponentialPublisher")
PUBLISHERS.register(
    "synth",
    "ppdp.publish.table_synth:TableSynthesizer",
    flags={"--delta": "delta", "--method": "method", "--bins": "n_bins"},
)

#: ``ppdp train LEARNER``: private classifiers (a model file stores the class name).
LEARNERS = Registry("learner")
LEARNERS.register("logreg", "ppdp.learn.linear:PrivateLogisticRegression")
LEARNERS.register("svm", "ppdp.learn.linear:PrivateLinearSVM")
LEARNERS.register("rbf-svm", "ppdp.learn.rbf_svm:PrivateRBFSVM")
LEARNERS.register("hybrid-svm", "ppdp.learn.rbf_svm:HybridRBFSVM")

#: Local randomizers, by the ``"type"`` their ``to_dict`` writes.
RANDOMIZERS = Registry("randomizer type")
RANDOMIZERS.register("additive", "ppdp.local.additive:AdditiveRandomizer")
RANDOMIZERS.register(
    "characteristic-vector", "ppdp.local.characteristic:CharacteristicVectorRandomizer"
)
