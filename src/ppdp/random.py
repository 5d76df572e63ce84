"""Where ppdp's random bits come from.

By default every sampler draws its bits from the operating system's CSPRNG
(``os.urandom``, i.e. ``getrandom(2)`` on Linux). A ``random_state`` (an int, a
``numpy.random.SeedSequence`` or ``Generator``) switches to a reproducible PCG64 stream
for experiments and tests; that stream is predictable, so resolving one issues an
:class:`~ppdp.exceptions.InsecureRandomnessWarning`.

Seeds and ledgers. Two releases of neighbouring tables made with the same seed draw the
same noise, so their difference cancels it exactly and reveals the record that differs.
A seeded release through an accountant (a ledger) is therefore refused unless the caller
passes ``allow_seeded=True`` (``--allow-seeded`` on the command line), which the ledger
records with the spend (:func:`refuse_seeded`).

Domain separation. The stream of an int seed ``s`` (or of a ``SeedSequence``) is derived
from ``SeedSequence(s)`` with a fixed ppdp-specific spawn key, so it is *not* the stream of
``numpy.random.default_rng(s)``: a user's own ``default_rng(s)`` in the same program does
not reproduce (and cannot be used to subtract) ppdp's noise. A ``Generator`` passed as
``random_state`` is the caller's own stream and is used as it is.

Samplers only ever ask a source for raw 64-bit words (:meth:`RandomSource.uint64`); the
transformation into noise lives in :mod:`ppdp.noise`.

Partitions. A distributed release draws row noise on the workers, partition by partition.
:class:`PartitionStreams` draws one 256-bit key from the release's source in the driver and
gives partition ``i`` the ChaCha20 keystream under ``HMAC-SHA256(key, i)``: the streams are
independent and secure when the source is, reproducible when the source is seeded, and
only the key (never the noise) travels to the workers.

Noise factor. A source may carry a ``noise_factor``: the samplers of :mod:`ppdp.noise`
multiply every Laplace, Gaussian (continuous and discrete) and gamma-norm scale they draw
from it by that factor (:func:`noise_factor`; uniform, exponential and Gumbel draws are
unchanged, but the exponential mechanism divides its scores by it, which scales its Gumbel
noise). Every source here has none (factor 1); only the audits build one
(:class:`ppdp.audit.ScaledNoise`, their positive controls), and a release through a
ledger refuses it (:func:`refuse_rescaled`). No release class has a parameter for it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import warnings
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ppdp.exceptions import (
    InsecureRandomnessWarning,
    ParameterError,
    ParameterTypeError,
    user_stacklevel,
)

__all__ = [
    "PartitionStreams",
    "RandomSource",
    "RandomState",
    "SecureRandom",
    "SeededRandom",
    "noise_factor",
    "refuse_rescaled",
    "refuse_seeded",
    "resolve_random_state",
]

# os.urandom is read in pieces of at most this many bytes, so one huge request does not
# hold a single giant temporary buffer twice.
_URANDOM_CHUNK = 1 << 24

_RANDOM_STATE_TYPES = "None, an int, a numpy SeedSequence or Generator, or a RandomSource"

#: The spawn key that separates ppdp's seeded noise streams from numpy's: an int seed ``s``
#: gives the stream of ``SeedSequence(s, spawn_key=NOISE_DOMAIN)``, never the one of
#: ``numpy.random.default_rng(s)`` (whose spawn key is empty; children made with
#: ``SeedSequence.spawn`` get small keys 0, 1, ..., never this 128-bit one).
NOISE_DOMAIN: tuple[int, ...] = (
    int.from_bytes(hashlib.sha256(b"ppdp.random.SeededRandom noise stream v1").digest()[:16]),
)


def noise_seed_sequence(seed: int | np.random.SeedSequence) -> np.random.SeedSequence:
    """The domain-separated :class:`~numpy.random.SeedSequence` of a noise seed."""
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(
            seed.entropy,
            spawn_key=(*seed.spawn_key, *NOISE_DOMAIN),
            pool_size=seed.pool_size,
        )
    return np.random.SeedSequence(seed, spawn_key=NOISE_DOMAIN)


@runtime_checkable
class RandomSource(Protocol):
    """A source of uniformly random 64-bit words."""

    @property
    def is_secure(self) -> bool:
        """True when the words come from a cryptographically secure generator."""
        ...

    def uint64(self, n: int) -> NDArray[np.uint64]:
        """Return ``n`` independent uniform 64-bit words."""
        ...


class SecureRandom:
    """Bits from the operating system's CSPRNG (``os.urandom``). The default."""

    is_secure = True

    def uint64(self, n: int) -> NDArray[np.uint64]:
        n = int(n)
        nbytes = 8 * n
        if nbytes <= _URANDOM_CHUNK:
            return np.frombuffer(os.urandom(nbytes), dtype=np.uint64).copy()
        out = np.empty(n, dtype=np.uint64)
        view = out.view(np.uint8)
        for start in range(0, nbytes, _URANDOM_CHUNK):
            stop = min(start + _URANDOM_CHUNK, nbytes)
            view[start:stop] = np.frombuffer(os.urandom(stop - start), dtype=np.uint8)
        return out

    def __repr__(self) -> str:
        return "SecureRandom()"


class SeededRandom:
    """A reproducible PCG64 stream. For experiments and tests only: it is predictable.

    Parameters
    ----------
    seed : int, SeedSequence or numpy Generator
        Seeds the stream through :func:`noise_seed_sequence` (domain-separated: not the
        stream of ``numpy.random.default_rng(seed)``); a Generator is used as it is (its
        state advances).
    """

    is_secure = False

    def __init__(self, seed: int | np.random.SeedSequence | np.random.Generator):
        if isinstance(seed, np.random.Generator):
            self._generator = seed
        else:
            self._generator = np.random.Generator(np.random.PCG64(noise_seed_sequence(seed)))
        self._seed_repr = repr(seed) if not isinstance(seed, np.random.Generator) else "Generator"

    def uint64(self, n: int) -> NDArray[np.uint64]:
        return self._generator.bit_generator.random_raw(int(n)).astype(np.uint64, copy=False)

    def spawn(self) -> SeededRandom:
        """An independent child stream (for parallel workers)."""
        child_seed = int(self._generator.integers(0, 2**63 - 1))
        return SeededRandom(child_seed)

    def __repr__(self) -> str:
        return f"SeededRandom({self._seed_repr})"


_PARTITION_DOMAIN = b"ppdp.random.PartitionStreams v1"


class PartitionStreams:
    """Independent random streams for the partitions of one distributed release.

    Parameters
    ----------
    source : RandomSource
        The release's source. One 256-bit key is drawn from it, here, in the driver.

    Notes
    -----
    Partition ``i`` reads the ChaCha20 keystream (zero nonce) under the key
    ``HMAC-SHA256(key, domain || i)``. ChaCha20 is a pseudorandom function of its key, and
    HMAC-SHA256 of the master key derives keys that are computationally independent, so
    the partitions' words are as good as independent uniform words to anyone without the
    key (RFC 8439; Bellare, Canetti, Krawczyk 1996). With a :class:`SeededRandom` source
    the key, and so every stream, is reproducible (and predictable: ``is_secure`` is
    False). The object pickles with its key, so create it in the driver and send it to the
    workers; never create one per partition from a seeded source (every partition would
    get the same key).

    Examples
    --------
    >>> from ppdp.random import PartitionStreams, SeededRandom
    >>> streams = PartitionStreams(SeededRandom(7))
    >>> a, b = streams.stream(0).uint64(2), streams.stream(1).uint64(2)
    >>> bool((a != b).all()), streams.is_secure
    (True, False)
    """

    def __init__(self, source: RandomSource) -> None:
        if not isinstance(source, RandomSource):
            raise ParameterTypeError(f"source ({source!r}) must be a ppdp RandomSource")
        self._key = source.uint64(4).tobytes()
        self.is_secure = bool(source.is_secure)
        self.noise_factor = noise_factor(source)  # the workers draw as the driver would

    def stream(self, index: int) -> RandomSource:
        """The stream of partition ``index`` (a fresh reader at its start each call)."""
        index = int(index)
        if index < 0:
            raise ParameterError(f"index ({index}) must be a non-negative partition number")
        message = _PARTITION_DOMAIN + index.to_bytes(8, "little")
        key = hmac.new(self._key, message, hashlib.sha256).digest()
        stream = _KeyedStream(key, is_secure=self.is_secure, label=index)
        stream.noise_factor = self.noise_factor
        return stream

    def __repr__(self) -> str:  # the key is never shown
        return f"PartitionStreams(is_secure={self.is_secure})"


class _KeyedStream:
    """The ChaCha20 keystream under one key, read 64 bits at a time (one partition's)."""

    def __init__(self, key: bytes, *, is_secure: bool, label: int) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

        self._encryptor = Cipher(algorithms.ChaCha20(key, bytes(16)), mode=None).encryptor()
        self.is_secure = is_secure
        self.noise_factor = 1.0
        self._label = label

    def uint64(self, n: int) -> NDArray[np.uint64]:
        n = int(n)
        words = self._encryptor.update(bytes(8 * n))
        return np.frombuffer(words, dtype=np.uint64).copy()

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a partition's stream is not picklable; pickle its PartitionStreams")

    def __repr__(self) -> str:
        return f"PartitionStream({self._label}, is_secure={self.is_secure})"


#: What ``random_state`` parameters accept throughout ppdp.
RandomState: TypeAlias = (
    int | np.integer | np.random.SeedSequence | np.random.Generator | RandomSource | None
)


def resolve_random_state(random_state: RandomState = None) -> RandomSource:
    """Turn a ``random_state`` parameter into a :class:`RandomSource`.

    ``None`` gives :class:`SecureRandom`. An int, ``SeedSequence`` or ``Generator`` gives a
    :class:`SeededRandom` and issues an :class:`InsecureRandomnessWarning`. A source is
    returned unchanged (a seeded one was already warned about when it was resolved).
    """
    if random_state is None:
        return SecureRandom()
    if isinstance(random_state, SecureRandom | SeededRandom):
        return random_state
    if isinstance(random_state, bool):
        raise ParameterTypeError(f"random_state ({random_state!r}) must be {_RANDOM_STATE_TYPES}")
    if isinstance(random_state, int | np.integer) and int(random_state) < 0:
        raise ParameterError(f"random_state ({int(random_state)}) must be a non-negative int seed")
    if isinstance(random_state, int | np.integer | np.random.SeedSequence | np.random.Generator):
        warnings.warn(
            "random_state makes the noise reproducible and predictable: use it for experiments "
            "and tests, never for a real release (leave random_state=None for OS entropy)",
            InsecureRandomnessWarning,
            stacklevel=user_stacklevel(),
        )
        seed = int(random_state) if isinstance(random_state, np.integer) else random_state
        return SeededRandom(seed)
    if isinstance(random_state, RandomSource):
        return random_state
    raise ParameterTypeError(f"random_state ({random_state!r}) must be {_RANDOM_STATE_TYPES}")


def noise_factor(source: object) -> float:
    """The factor on every noise scale drawn from ``source``: 1 but for an audit's source.

    Read by the samplers of :mod:`ppdp.noise`; only :class:`ppdp.audit.ScaledNoise` (and
    the partition streams of one, :class:`PartitionStreams`) returns another value.
    """
    return float(getattr(source, "noise_factor", 1.0))


def refuse_rescaled(source: RandomSource, *, value: object = None) -> None:
    """Refuse, with a ledger, a source whose noise factor is not 1 (an audit's).

    Call it, when an accountant is given, before the data are read: a release drawing
    rescaled noise is not DP at the ε it would be charged, and ``allow_seeded`` does not
    let it through.

    Raises
    ------
    ParameterError
        ``noise_factor(source) != 1``.
    """
    factor = noise_factor(source)
    if factor != 1.0:
        raise ParameterError(
            f"random_state ({(source if value is None else value)!r}) draws {factor:g} × "
            "the noise (an audit's source) and is refused with a ledger: the release would "
            "not be DP at its charged ε; leave random_state unset for a real release"
        )


def refuse_seeded(
    seeded: bool, *, allow_seeded: bool, param: str = "random_state", value: object = None
) -> None:
    """Refuse a seeded release through a ledger unless ``allow_seeded`` is True.

    Call it, when an accountant is given, before the data are read. Reusing a seed on two
    neighbouring tables draws the same noise twice, so the difference of the two releases
    cancels it exactly; a ledger that accepted such releases silently would account for a
    protection that is not there. ``allow_seeded=True`` (for experiments and tests) lets the
    release through, and the accountant records it with the spend.

    Raises
    ------
    ParameterTypeError
        ``allow_seeded`` is not a bool.
    ParameterError
        ``seeded`` and not ``allow_seeded``.
    """
    if not isinstance(allow_seeded, bool):
        raise ParameterTypeError(f"allow_seeded ({allow_seeded!r}) must be True or False")
    if seeded and not allow_seeded:
        shown = "" if value is None else f" ({value!r})"
        raise ParameterError(
            f"{param}{shown} with a ledger is refused: the same seed on neighbouring tables "
            "cancels the noise exactly; leave it unset for a real release (OS entropy), or pass "
            "allow_seeded=True for an experiment (the ledger records it)"
        )
