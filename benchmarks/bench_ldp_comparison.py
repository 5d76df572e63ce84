"""Benchmark: our reference LDP frequency oracles vs the ``pure-ldp`` package (peer).

At matched ε (k = 30 categories, n = 20,000 respondents, a fixed skewed distribution), for
OUE, OLH and Hadamard response: the per-item variance of the frequency estimate times n
(over ``--trials`` runs) and the time per 1,000 reports (perturb + aggregate + estimate),
ours (``ppdp.experiments._ldp_oracles``, vectorised, coins from ``ppdp.noise``) against
pure-ldp's clients and servers (one report at a time, numpy's generator), with the ratio.
The characteristic-vector scheme (discrete normal, δ = 1e-6) is in the table too: it has
no pure-ldp counterpart. Note: our HR is the basic one (sets of size K/2, the C.6 formula);
pure-ldp switches to the general Hadamard response for ε > 1, whose variance is much lower
at large ε.

The peer lives in its own virtual environment, never a ppdp dependency:
``python -m venv benchmarks/.peer-venv/pure-ldp && benchmarks/.peer-venv/pure-ldp/bin/pip
install pure-ldp scikit-learn statsmodels "xxhash<3"`` (pure-ldp 1.2 imports scikit-learn
and statsmodels without declaring them, and its local hashing passes str to xxhash, which
xxhash ≥ 3 refuses). The
script does this when the folder is missing; if the install fails, it says so and skips
the peer.

Run: ``.venv/bin/python benchmarks/bench_ldp_comparison.py [--trials 10]``
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.experiments._ldp_oracles import ORACLES
from ppdp.local import CharacteristicVectorRandomizer
from ppdp.mechanisms import GaussianMechanism

warnings.simplefilter("ignore", InsecureRandomnessWarning)

PEER = Path(__file__).resolve().parent / ".peer-venv" / "pure-ldp"
PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer
from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
from pure_ldp.frequency_oracles.hadamard_response import (
    HadamardResponseClient, HadamardResponseServer)

args = json.loads(sys.argv[1])
k, eps_list, trials = args["k"], args["epsilons"], args["trials"]
values = np.load(args["values"])  # (trials, n), 0-based
out = []
for eps in eps_list:
    for name in ("OUE", "OLH", "HR"):
      try:
        errs, secs = [], 0.0
        for t in range(trials):
            np.random.seed(1000 + t)
            vals = values[t] + 1  # pure-ldp items are 1..d
            n = vals.size
            t0 = time.perf_counter()
            if name == "OUE":
                server, client = UEServer(eps, k, use_oue=True), UEClient(eps, k, use_oue=True)
            elif name == "OLH":
                server, client = LHServer(eps, k, use_olh=True), LHClient(eps, k, use_olh=True)
            else:
                server = HadamardResponseServer(eps, k)
                client = HadamardResponseClient(eps, k, server.get_hash_funcs())
            for v in vals:
                server.aggregate(client.privatise(int(v)))
            est = np.array([server.estimate(j + 1, suppress_warnings=True) for j in range(k)]) / n
            secs += time.perf_counter() - t0
            truth = np.bincount(values[t], minlength=k) / n
            errs.append(est - truth)
        errs = np.array(errs)
        out.append({"mechanism": name, "epsilon": eps,
                    "n_var": float(n * errs.var(axis=0, ddof=1).mean()),
                    "max_bias": float(np.abs(errs.mean(axis=0)).max()),
                    "ms_per_1000": 1000.0 * secs / (trials * n) * 1000.0})
      except Exception as exc:  # one failing peer oracle must not hide the others
        print(f"{name} at eps={eps}: {type(exc).__name__}: {exc}", file=sys.stderr)
print(json.dumps(out))
"""


def ensure_peer() -> Path | None:
    python = PEER / "bin" / "python"
    if not python.exists():
        print(f"creating the peer environment {PEER} (pip install pure-ldp) ...")
        try:
            subprocess.run([sys.executable, "-m", "venv", str(PEER)], check=True)
            pip = [
                str(PEER / "bin" / "pip"),
                "install",
                "-q",
                "pure-ldp",
                "scikit-learn",
                "statsmodels",
            ]
            subprocess.run(pip, check=True, timeout=600)
        except (subprocess.SubprocessError, OSError) as exc:
            print(f"pure-ldp could not be installed ({exc}); the peer is skipped")
            return None
    ok = subprocess.run([str(python), "-c", "import pure_ldp"], capture_output=True)
    if ok.returncode != 0:
        print("pure-ldp is not importable in the peer environment; the peer is skipped")
        return None
    return python


def ours(values: np.ndarray, k: int, eps: float, name: str) -> tuple[float, float, float]:
    est_fn = ORACLES[name][0]
    errs, secs = [], 0.0
    for t, vals in enumerate(values):
        t0 = time.perf_counter()
        est = est_fn(vals, k, eps, random_state=1000 + t)
        secs += time.perf_counter() - t0
        errs.append(est - np.bincount(vals, minlength=k) / vals.size)
    e = np.array(errs)
    n = values.shape[1]
    return (
        float(n * e.var(axis=0, ddof=1).mean()),
        float(np.abs(e.mean(axis=0)).max()),
        (1e6 * secs / values.size),
    )


def cv_gaussian(values: np.ndarray, k: int, eps: float) -> tuple[float, float, float, float]:
    sigma = GaussianMechanism(epsilon=eps, delta=1e-6, sensitivity=math.sqrt(2.0),
                              allow_large_epsilon=True).sigma  # fmt: skip
    r = CharacteristicVectorRandomizer(regions=k, noise="discrete-normal", sigma=sigma)
    errs, secs = [], 0.0
    for t, vals in enumerate(values):
        t0 = time.perf_counter()
        rec = r.estimate(r.randomise(vals, random_state=2000 + t))
        secs += time.perf_counter() - t0
        errs.append(
            np.asarray(rec.details["unbiased"]) - np.bincount(vals, minlength=k) / vals.size
        )
    e = np.array(errs)
    n = values.shape[1]
    return (float(n * e.var(axis=0, ddof=1).mean()), float(np.abs(e.mean(axis=0)).max()),
            1e6 * secs / values.size, float(r.guarantee(1e-6).epsilon))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--k", type=int, default=30)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    args = parser.parse_args()
    k = args.k
    probs = np.exp(-np.arange(k) / 8.0)
    probs /= probs.sum()
    rng = np.random.default_rng(0)
    values = rng.choice(k, size=(args.trials, args.n), p=probs)
    peer_rows: dict[tuple[str, float], dict] = {}
    python = ensure_peer()
    if python is not None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "values.npy"
            np.save(path, values)
            spec = {"k": k, "epsilons": args.epsilons, "trials": args.trials, "values": str(path)}
            run = subprocess.run([str(python), "-c", PEER_SCRIPT, json.dumps(spec)],
                                 capture_output=True, text=True)  # fmt: skip
            if run.stderr.strip():
                print("pure-ldp reported:", run.stderr.strip()[-300:])
            if run.returncode != 0:
                print("the pure-ldp run failed; the peer is skipped")
            else:
                for row in json.loads(run.stdout):
                    peer_rows[(row["mechanism"], row["epsilon"])] = row
    print(f"LDP frequency oracles: k = {k}, n = {args.n:,}, {args.trials} runs per cell")
    print(f"{'ε':>4} {'mechanism':<12} {'n·Var ours':>10} {'n·Var peer':>10} {'formula':>8} "
          f"{'ms/1k ours':>10} {'ms/1k peer':>10} {'speed-up':>8}")  # fmt: skip
    for eps in args.epsilons:
        for name in ("OUE", "OLH", "HR"):
            var, _, ms = ours(values, k, eps, name)
            peer = peer_rows.get((name, eps))
            pv = f"{peer['n_var']:.3f}" if peer else "skipped"
            pm = f"{peer['ms_per_1000']:.2f}" if peer else "—"
            sp = f"{peer['ms_per_1000'] / ms:.0f}×" if peer else "—"
            print(f"{eps:>4g} {name:<12} {var:>10.3f} {pv:>10} {ORACLES[name][1](eps):>8.3f} "
                  f"{ms:>10.2f} {pm:>10} {sp:>8}")  # fmt: skip
        var, _, ms, exact = cv_gaussian(values, k, eps)
        print(f"{eps:>4g} {'CV-gaussian':<12} {var:>10.3f} {'(none)':>10} {'σ²':>8} "
              f"{ms:>10.2f} {'—':>10} {'—':>8}   exact ε = {exact:.3f} at δ = 1e-6")  # fmt: skip


if __name__ == "__main__":
    main()
