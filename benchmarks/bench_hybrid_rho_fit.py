"""Benchmark: fitting the hybrid SVM's frequencies ρ on public Adult rows (D = 100).

Li et al. (2014) fit ρ (eq. 6) by L-BFGS in MATLAB and report minutes. ppdp's
``fit_frequencies`` minimises the mean squared error between the kernel of the cos/sin map
training uses and the RBF kernel over all pairs of public rows, with an analytic gradient.

Tables, all in one run (variants interleaved, medians; the machine may be shared):

1. **One evaluation** (loss and gradient) per public-row count n: the previous formula (the
   n × n residual ``R = (CCᵀ + SSᵀ)/D - K`` with its n × n temporaries, then ``R @ S``,
   ``R @ C``; kept here only, as the baseline) against ``kernel_fit_loss`` (from n = 5D the
   Gram form: one ``K @ W`` product and 2D × 2D matrices, no n × n array besides K), on one
   and two BLAS threads, and the peak memory each allocates beyond its inputs (tracemalloc).
2. **Accuracy**: relative difference of loss and gradient, previous formula against the new,
   at the start and at a fitted ρ (where the Gram form's loss is a difference of large terms).
3. **Whole fits** from the same start with the same L-BFGS settings (``max_iter`` 300): the
   previous formula against ``fit_frequencies``, both on one BLAS thread (as the library
   runs its fits); seconds, iterations, final loss.
   L-BFGS can take a different path after rounding differences, so the final losses are
   compared, not the iterates.
4. Optional (``--fd-iters`` > 0): the analytic gradient against scipy's finite differences
   at 200 rows, seconds per L-BFGS iteration.

Data: public rows of Adult (seeded), encoded by its schema (d = 33). γ = 0.5.
Results: ``benchmarks/hybrid_rho_fit.md``.

Run: ``.venv/bin/python benchmarks/bench_hybrid_rho_fit.py [--eval-sizes ...] [--fit-sizes ...]``
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import minimize
from threadpoolctl import threadpool_limits

from ppdp.datasets import load_adult
from ppdp.learn.rff import draw_frequencies, fit_frequencies, kernel_fit_loss, rbf_kernel

Loss = Callable[..., Any]


def public_rows(n: int, seed: int = 0) -> np.ndarray:
    df, schema = load_adult()
    X, _ = schema.encode(df)
    idx = np.random.default_rng(seed).choice(len(X), size=n, replace=False)
    return X[idx]


def previous_loss(
    rho_flat: np.ndarray,
    X: np.ndarray,
    K: np.ndarray,
    n_components: int,
    *,
    with_gradient: bool = True,
) -> tuple[float, np.ndarray] | float:
    """The library's formula before the Gram form (the baseline): n × n residual and temporaries."""
    n, d = X.shape
    rho = rho_flat.reshape(n_components, d)
    proj = X @ rho.T
    c = np.cos(proj)
    s = np.sin(proj)
    scale = 1.0 / n_components
    resid = (c @ c.T + s @ s.T) * scale - K
    norm = 1.0 / (n * n)
    loss = float(np.einsum("ij,ij->", resid, resid)) * norm
    if not with_gradient:
        return loss
    dproj = (c * (resid @ s) - s * (resid @ c)) * (4.0 * scale * norm)
    return loss, (dproj.T @ X).reshape(-1)


def previous_fit(
    X: np.ndarray, D: int, gamma: float, rho0: np.ndarray, max_iter: int, tol: float = 1e-9
) -> tuple[float, int, float]:
    """The previous fit: same L-BFGS settings as ``fit_frequencies``, one BLAS thread."""
    with threadpool_limits(limits=1, user_api="blas"):
        K = rbf_kernel(X, X, gamma)
        initial = previous_loss(rho0.reshape(-1), X, K, D, with_gradient=False)
        res = minimize(
            previous_loss,
            rho0.reshape(-1),
            args=(X, K, D),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": tol, "gtol": tol * 1e-3},
        )
    final = float(res.fun)
    assert isinstance(initial, float)
    return (final if final <= initial else initial), int(res.nit), initial


def peak_mib(fn: Callable[[], object]) -> float:
    """Peak memory allocated while ``fn`` runs, beyond what was live before (MiB)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


def eval_table(full: np.ndarray, sizes: list[int], D: int, gamma: float, repeats: int) -> None:
    print(f"\n1. one evaluation (loss + gradient), D = {D}: median ms of {repeats}, interleaved")
    header = (
        f"{'n':>6} {'route':>8} {'prev 1thr':>10} {'new 1thr':>10} {'new 2thr':>10} "
        f"{'prev/new(1)':>11} {'prev MiB':>9} {'new MiB':>8}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        X = full[:n]
        K = rbf_kernel(X, X, gamma)
        k_sq = float(np.vdot(K, K))
        r = draw_frequencies(D, X.shape[1], gamma, 1).reshape(-1)
        variants: dict[str, tuple[Loss, int, dict[str, float]]] = {
            "prev1": (previous_loss, 1, {}),
            "new1": (kernel_fit_loss, 1, {"k_sq": k_sq}),
            "new2": (kernel_fit_loss, 2, {"k_sq": k_sq}),
        }
        times: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(repeats):
            for key, (fn, threads, kw) in variants.items():
                with threadpool_limits(limits=threads, user_api="blas"):
                    t = time.perf_counter()
                    fn(r, X, K, D, **kw)
                    times[key].append(time.perf_counter() - t)
        med = {k: 1e3 * float(np.median(v)) for k, v in times.items()}
        with threadpool_limits(limits=1, user_api="blas"):
            mem_prev = peak_mib(lambda r=r, X=X, K=K: previous_loss(r, X, K, D))
            mem_new = peak_mib(lambda r=r, X=X, K=K, k=k_sq: kernel_fit_loss(r, X, K, D, k_sq=k))
        route = "Gram" if n >= max(5 * D, 1000) else "residual"
        print(
            f"{n:>6} {route:>8} {med['prev1']:>10.2f} {med['new1']:>10.2f} {med['new2']:>10.2f} "
            f"{med['prev1'] / med['new1']:>11.2f} {mem_prev:>9.1f} {mem_new:>8.1f}",
            flush=True,
        )
    print(
        f"    (K itself, not counted above: n² × 8 bytes = {sizes[-1] ** 2 * 8 / 2**20:.0f} MiB "
        f"at n = {sizes[-1]})"
    )


def rel_diff(a: np.ndarray | float, b: np.ndarray | float) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / np.linalg.norm(a))


def fit_table(
    full: np.ndarray, sizes: list[int], D: int, gamma: float, repeats: int, max_iter: int
) -> None:
    print(
        f"\n2-3. whole fits, D = {D}, max_iter = {max_iter}, same start: median seconds of "
        f"{repeats}, interleaved; accuracy of the new loss and gradient against the previous"
    )
    header = (
        f"{'n':>6} {'prev s':>8} {'new s':>8} {'ratio':>6} {'it prev':>7} {'it new':>6} "
        f"{'loss0':>10} {'loss prev':>10} {'loss new':>10} {'Δloss rel':>9} "
        f"{'start: Δf':>9} {'Δg':>8} {'fitted: Δf':>10} {'Δg':>8}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        X = full[:n]
        rho0 = draw_frequencies(D, X.shape[1], gamma, 1)
        t_prev, t_new = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            prev_final, prev_it, loss0 = previous_fit(X, D, gamma, rho0, max_iter)
            t_prev.append(time.perf_counter() - t)
            t = time.perf_counter()
            fit = fit_frequencies(X, n_components=D, gamma=gamma, rho0=rho0, max_iter=max_iter)
            t_new.append(time.perf_counter() - t)
        K = rbf_kernel(X, X, gamma)
        acc = []
        for rho in (rho0, fit.rho):
            lp, gp = previous_loss(rho.reshape(-1), X, K, D)
            ln, gn = kernel_fit_loss(rho.reshape(-1), X, K, D)
            acc += [rel_diff(lp, ln), rel_diff(gp, gn)]
        tp, tn = float(np.median(t_prev)), float(np.median(t_new))
        print(
            f"{n:>6} {tp:>8.2f} {tn:>8.2f} {tp / tn:>6.2f} {prev_it:>7} {fit.n_iter:>6} "
            f"{loss0:>10.4e} {prev_final:>10.4e} {fit.loss:>10.4e} "
            f"{(fit.loss - prev_final) / prev_final:>+9.1e} "
            f"{acc[0]:>9.1e} {acc[1]:>8.1e} {acc[2]:>10.1e} {acc[3]:>8.1e}",
            flush=True,
        )


def fd_table(full: np.ndarray, D: int, gamma: float, fd_iters: int, max_iter: int) -> None:
    X = full[:200]
    rho0 = draw_frequencies(D, X.shape[1], gamma, 1)
    print(f"\n4. analytic against finite-difference gradients, n = 200, D = {D}, d = {X.shape[1]}")
    header = f"{'method':<18} {'iters':>5} {'evals':>6} {'seconds':>9} {'s/iter':>9} {'loss':>10}"
    print(header)
    print("-" * len(header))
    per_iter = {}
    for method, iters in (("analytic", max_iter), ("finite-difference", fd_iters)):
        t = time.perf_counter()
        fit = fit_frequencies(
            X, n_components=D, gamma=gamma, rho0=rho0, max_iter=iters, gradient=method
        )
        wall = time.perf_counter() - t
        per_iter[method] = wall / max(fit.n_iter, 1)
        print(
            f"{method:<18} {fit.n_iter:>5} {fit.n_evaluations:>6} {wall:>9.3f} "
            f"{per_iter[method]:>9.4f} {fit.loss:>10.3e}"
        )
    ratio = per_iter["finite-difference"] / per_iter["analytic"]
    print(f"    finite differences cost {ratio:,.0f}x more per iteration")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eval-sizes", type=int, nargs="+", default=[200, 500, 1000, 2000, 5000])
    ap.add_argument("--fit-sizes", type=int, nargs="+", default=[200, 500, 1000, 2000])
    ap.add_argument("--n-components", type=int, default=100)
    ap.add_argument("--gamma", type=float, default=0.5)
    ap.add_argument("--max-iter", type=int, default=300, help="L-BFGS iterations of a fit")
    ap.add_argument("--eval-repeats", type=int, default=5)
    ap.add_argument("--fit-repeats", type=int, default=3)
    ap.add_argument("--fd-iters", type=int, default=0, help="finite-difference iterations")
    args = ap.parse_args()
    D = args.n_components
    full = public_rows(max(args.eval_sizes + args.fit_sizes + [200]))
    print(f"rho fit: public Adult rows (d = {full.shape[1]}), D = {D}, gamma = {args.gamma}")
    eval_table(full, args.eval_sizes, D, args.gamma, args.eval_repeats)
    fit_table(full, args.fit_sizes, D, args.gamma, args.fit_repeats, args.max_iter)
    if args.fd_iters > 0:
        fd_table(full, D, args.gamma, args.fd_iters, args.max_iter)


if __name__ == "__main__":
    main()
