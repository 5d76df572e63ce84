"""The Markov-quilt search for chains: tables of log max-influence and the pruned search.

Notation (ALGORITHMS B.5): node ``i`` in ``1..T``; quilt ``{X_{i-a}, X_{i+b}}`` (two-sided,
``card X_N = a+b-1``), ``{X_{i+b}}`` (right-only, ``i+b-1``), ``{X_{i-a}}`` (left-only,
``T-i+a``), trivial (``T``). Its influence is ``max over θ and valid ordered pairs
(s, t), s ≠ t, of  log D_b(s,t) + log U_a(s,t) + log R_i(s,t)`` (joint maximum, pitfall 6);
one-sided quilts drop the other factors. A table row holds one value per (θ, s, t),
flattened, with ``-inf`` for excluded entries (diagonal, impossible secrets).

The search (``docs/proofs/pufferfish-mqm.md``, "pruning"): every quilt has
``σ ≥ card/ε``, and a quilt's influence is at least that of either of its halves, so a
two-sided quilt is only evaluated when its lower bound ``card/(ε − max(e_L(a), e_R(b)))``
beats the best score found. Interior nodes share one quilt range: the left factor is
bounded for every ``i ≥ i₀`` by its value at ``i₀`` (the law of ``X_i`` is a mixture of the
rows of ``P^{i₀-1}``), so ``σ_{i₀}`` computed with that bound caps every node of
``[i₀, T − b₀]`` and only ``O(ℓ)`` end nodes are searched one by one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from ppdp.correlated.markov import MarkovChainClass

#: Two-sided candidates evaluated per vectorised block.
_CHUNK = 8192
#: Chains up to this length are searched node by node when the shared range fails.
EXPLICIT_LIMIT = 1024


class Tables(Protocol):
    """Log max-influence tables of a class Θ (exact or approximate)."""

    def down(self, n: int) -> NDArray[np.float64]:
        """Rows ``b = 1..n`` of ``log D_b``, shape ``(n, m)``."""
        ...

    def up(self, n: int) -> NDArray[np.float64]:
        """Rows ``a = 1..n`` of ``log U_a``, shape ``(n, m)``."""
        ...

    def node(self, i: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(log R_i, valid_i)`` for node ``i`` (valid: 0 or -inf per entry)."""
        ...

    def interior(self, i: int) -> NDArray[np.float64]:
        """An upper bound on ``log R_j`` valid for every node ``j ≥ i`` (all pairs valid)."""
        ...


_LOG_MARGIN = 1e-10


def _max_log_ratio(
    num: NDArray[np.float64], den: NDArray[np.float64], axis: int
) -> NDArray[np.float64]:
    """``max log(num/den)`` along ``axis`` with 0/0 skipped and x/0 = +inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.log(num) - np.log(den)
    d = np.where(np.isnan(d), -np.inf, d)
    out = d.max(axis=axis)
    # Round up: the float log-ratios may sit a few ulps below the exact ones, and an
    # influence that is too small would under-noise. 1e-10 nats dwarfs that error.
    return np.where(np.isfinite(out) & (out > 0), out + _LOG_MARGIN, out)


class ExactTables:
    """Exact tables from matrix powers (ALGORITHMS B.5)."""

    def __init__(self, theta: MarkovChainClass) -> None:
        self.P = np.array(theta.matrices)
        self.q = theta.initial_laws
        self.n_theta, self.k = self.P.shape[0], self.P.shape[1]
        self.m = self.n_theta * self.k * self.k
        self._powers = [np.broadcast_to(np.eye(self.k), self.P.shape).copy()]
        self._down = np.empty((0, self.m))
        self._up = np.empty((0, self.m))
        self._offdiag = ~np.eye(self.k, dtype=bool)
        self._far: tuple[int, NDArray[np.float64]] | None = None

    def _ensure(self, n: int) -> None:
        while len(self._powers) <= n:
            self._powers.append(self._powers[-1] @ self.P)

    def power(self, e: int) -> NDArray[np.float64]:
        """``P^e`` for every θ, shape ``(|Θ|, k, k)``."""
        if e < len(self._powers) or e <= 4096:
            self._ensure(e)
            return self._powers[e]
        if self._far is not None and self._far[0] <= e and e - self._far[0] <= 4096:
            base_e, base = self._far
            out = base @ np.linalg.matrix_power(self.P, e - base_e) if e > base_e else base
        else:
            out = np.linalg.matrix_power(self.P, e)
        self._far = (e, out)
        return out

    def _extend(self, n: int) -> None:
        have = self._down.shape[0]
        if n <= have:
            return
        self._ensure(n)
        pw = np.stack(self._powers[have + 1 : n + 1])  # (n', Θ, k, k), rows b = have+1..n
        # D_b(s,t) = max_z P^b[s,z]/P^b[t,z];  U_a(s,t) = max_y P^a[y,s]/P^a[y,t]
        down = _max_log_ratio(pw[:, :, :, None, :], pw[:, :, None, :, :], axis=-1)
        up = _max_log_ratio(pw[:, :, :, :, None], pw[:, :, :, None, :], axis=2)
        down[:, :, ~self._offdiag] = -np.inf
        up[:, :, ~self._offdiag] = -np.inf
        self._down = np.concatenate([self._down, down.reshape(len(pw), self.m)])
        self._up = np.concatenate([self._up, up.reshape(len(pw), self.m)])

    def down(self, n: int) -> NDArray[np.float64]:
        self._extend(n)
        return self._down[:n]

    def up(self, n: int) -> NDArray[np.float64]:
        self._extend(n)
        return self._up[:n]

    def node(self, i: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        A = self.power(i - 1)
        lr = np.empty((self.n_theta, self.k, self.k))
        valid = np.empty((self.n_theta, self.k, self.k), dtype=bool)
        for j in range(self.n_theta):
            q = self.q[j]
            if q is None:
                if i == 1:  # any state is possible; no quilt of node 1 uses R
                    possible = np.ones(self.k, dtype=bool)
                    lr[j] = 0.0
                else:
                    possible = A[j].sum(axis=0) > 0
                    # sup over initial laws of P(X_i=t)/P(X_i=s) = max_y A[y,t]/A[y,s]
                    lr[j] = _max_log_ratio(A[j][:, None, :], A[j][:, :, None], axis=0)
            else:
                mass = q @ A[j]
                possible = mass > 0
                with np.errstate(divide="ignore"):
                    lm = np.log(mass)
                lr[j] = lm[None, :] - lm[:, None]
            valid[j] = possible[:, None] & possible[None, :]
        lr = np.where(valid, lr, -np.inf)
        v = np.where(valid, 0.0, -np.inf)
        return lr.reshape(self.m), v.reshape(self.m)

    def interior(self, i: int) -> NDArray[np.float64]:
        A = self.power(i - 1)
        lr = _max_log_ratio(A[:, :, None, :], A[:, :, :, None], axis=1)
        return lr.reshape(self.m)


class ApproxTables:
    """MQMApprox bounds (ALGORITHMS B.6): one entry, independent of θ, pairs and nodes."""

    m = 1

    def __init__(self, pi_min: float, gap: float) -> None:
        self.pi, self.g = pi_min, gap

    def _term(self, n: int) -> NDArray[np.float64]:
        t = np.arange(1, n + 1, dtype=np.float64)
        r = np.exp(-self.g * t)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.log((self.pi + r) / (self.pi - r))
        return np.where(r < self.pi, out, np.inf)

    def down(self, n: int) -> NDArray[np.float64]:
        return self._term(n)[:, None]

    def up(self, n: int) -> NDArray[np.float64]:
        return 2.0 * self._term(n)[:, None]

    def node(self, i: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return np.zeros(1), np.zeros(1)

    def interior(self, i: int) -> NDArray[np.float64]:
        return np.zeros(1)


@dataclass(frozen=True, slots=True)
class QuiltResult:
    """The outcome of the search: ``σ_max`` and where it was attained."""

    sigma: float
    node: int
    quilt: tuple[int, int]  # (a, b): a = 0 no left end, b = 0 no right end; (0, 0) trivial
    exact: bool  # False when a range limit made σ an upper bound of the optimum
    nodes_searched: int


def _score(card: NDArray[np.float64] | float, e: NDArray[np.float64] | float, eps: float):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(e) < eps, np.asarray(card) / (eps - np.asarray(e)), np.inf)


class _Search:
    def __init__(self, tables: Tables, T: int, eps: float, max_range: int) -> None:
        self.t, self.T, self.eps, self.R = tables, T, eps, max_range

    def node_sigma(
        self,
        i: int,
        cap: int,
        lr: NDArray[np.float64],
        v: NDArray[np.float64],
        *,
        one_sided: bool = True,
    ) -> tuple[float, tuple[int, int]]:
        """min σ over quilts of node ``i`` with ``card ≤ cap`` and ``a, b ≤ R``."""
        T, eps, R = self.T, self.eps, self.R
        best, arg = math.inf, (0, 0)
        if one_sided and cap >= T:
            best = T / eps
        nb = min(T - i, R, cap)
        na = min(i - 1, R, cap)
        e_r = (self.t.down(nb) + v).max(axis=1) if nb > 0 else np.empty(0)
        e_l = (self.t.up(na) + lr).max(axis=1) if na > 0 else np.empty(0)
        if one_sided:
            nr = min(nb, cap - i + 1)
            if nr > 0:
                s = _score(np.arange(i, i + nr, dtype=np.float64), e_r[:nr], eps)
                j = int(np.argmin(s))
                if s[j] < best:
                    best, arg = float(s[j]), (0, j + 1)
            nl = min(na, cap - (T - i))
            if nl > 0:
                s = _score(np.arange(T - i + 1, T - i + 1 + nl, dtype=np.float64), e_l[:nl], eps)
                j = int(np.argmin(s))
                if s[j] < best:
                    best, arg = float(s[j]), (j + 1, 0)
        fa = np.flatnonzero(e_l < eps) + 1
        fb = np.flatnonzero(e_r < eps) + 1
        if fa.size == 0 or fb.size == 0:
            return best, arg
        limit = cap if not math.isfinite(best) else min(cap, math.floor(eps * best))
        fa = fa[fa <= limit]
        fb = fb[fb <= limit]
        if fa.size == 0 or fb.size == 0:
            return best, arg
        A, B = np.meshgrid(fa, fb, indexing="ij")
        card = (A + B - 1).ravel()
        keep = card <= limit
        A, B, card = A.ravel()[keep], B.ravel()[keep], card[keep]
        lb = _score(card.astype(np.float64), np.maximum(e_l[A - 1], e_r[B - 1]), eps)
        order = np.argsort(lb, kind="stable")
        A, B, card, lb = A[order], B[order], card[order], lb[order]
        down, up = self.t.down(int(fb.max())), self.t.up(int(fa.max()))
        for start in range(0, lb.size, _CHUNK):
            if lb[start] >= best:
                break
            sl = slice(start, start + _CHUNK)
            e2 = (up[A[sl] - 1] + down[B[sl] - 1] + lr).max(axis=1)
            s = _score(card[sl].astype(np.float64), e2, eps)
            j = int(np.argmin(s))
            if s[j] < best:
                best, arg = float(s[j]), (int(A[sl][j]), int(B[sl][j]))
        return best, arg

    def explicit(self, i: int, threshold: float) -> tuple[float, tuple[int, int]]:
        """σ_i exactly, or any value ≤ ``threshold`` once σ_i ≤ threshold is certain."""
        lr, v = self.t.node(i)
        cap = min(self.T, max(1, math.floor(self.eps * threshold)))
        while True:
            s, q = self.node_sigma(i, cap, lr, v)
            if s <= threshold or cap >= self.T:
                return s, q
            nxt = self.T if not math.isfinite(s) else min(self.T, math.floor(self.eps * s))
            if nxt <= cap:  # no card in (cap, ε·s] can beat s
                return s, q
            cap = nxt


def search(tables: Tables, T: int, eps: float, *, max_range: int) -> QuiltResult:
    """``σ_max = max_i min_Q σ(Q)`` over nodes ``1..T`` (B.4 step 1-2)."""
    S = _Search(tables, T, eps, max_range)
    shared: tuple[int, float, int] | None = None  # (K, M0, b0)
    exact = True
    last: tuple[int, float, int] | None = None
    a0 = 0
    K = 1
    while 2 * K + 1 <= T and max_range >= K:
        lr = tables.interior(K + 1)
        m0, (a0, b0) = S.node_sigma(K + 1, K, lr, np.zeros_like(lr), one_sided=False)
        if m0 <= K / eps:
            shared = (K, m0, b0)
            break
        last = (K, m0, b0)
        K *= 2
    if shared is None and T > EXPLICIT_LIMIT:
        exact = False
        if last is not None and math.isfinite(last[1]) and last[1] < T / eps:
            shared = last
        else:
            return QuiltResult(T / eps, (T + 1) // 2, (0, 0), False, 1)
    if shared is None:
        nodes = list(range(1, T + 1))
        best, where = 0.0, (1, (0, 0))
    else:
        K, m0, b0 = shared
        nodes = list(range(1, K + 1)) + list(range(max(K + 1, T - b0 + 1), T + 1))
        best, where = m0, (K + 1, (a0, b0))
    for i in nodes:
        s, q = S.explicit(i, best)
        if s > best:
            best, where = s, (i, q)
    return QuiltResult(float(best), where[0], where[1], exact, len(nodes) + (shared is not None))
