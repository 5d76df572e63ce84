"""mbi 2.0's own MST or AIM (Private-PGM) on one table of integer codes.

Called by ``benchmarks/synth/suite.py --peers`` inside its own venv
(``benchmarks/.peer-venv-mbi2``), not by hand::

    benchmarks/.peer-venv-mbi2/bin/python benchmarks/synth/peer_suite_mbi2.py \
        CODES.csv SIZES.json OUTDIR --method aim --epsilon 1 --seed 0 --aim-time 400

The PyPI wheel ``mbi==2.0.0`` ships the estimation library only; MST and AIM live in the
repository's ``mechanisms/`` folder (https://github.com/ryan112358/mbi). Those files are run
unmodified from a git-ignored copy; the newest one available here is commit ``361705d``
(2026-07-22, package version 1.3.0), written for the API just before 2.0.0, which renamed
``Domain.attrs`` to ``Domain.attributes`` and the ``potentials=`` argument of
``Estimator.estimate`` to ``warm_start=``. :func:`_shim_api` maps the two old names onto the
new ones (names only; nothing else of the mechanisms is changed). Each mechanism samples with
mbi 2.0's own ``MarkovRandomField.synthetic_data``, whose sampler conditions on the junction
tree's cliques and shuffles ranks within each parent group (the two fixes ``PEERS.md`` asks
for), so one sample is drawn. Mechanisms' defaults: MST as published (one third of ρ each
for 1-way marginals, tree selection, 2-way measurements; domain compression); AIM with
``max_model_size=80``, 16·d rounds, ``max_iters=1000`` and the workload of every 2-way
marginal (weight 1), as its script's defaults.

AIM stops starting rounds once the process has used ``--aim-time`` seconds of CPU time
(as ``peers_device.run_aim`` does for smartnoise's AIM in the suite): the round whose model
estimation would start after the limit has measured its marginal; the model is estimated
from the measurements taken so far (warm-started, ``max_iters`` iterations, as AIM's last
step) and ``status.txt`` says where it stopped (rounds, share of ρ spent; the release is DP
at the full (ε, δ) and spent less). Both are (ε, δ)-DP under add/remove neighbours
(``bounded=False``).

Writes ``OUTDIR/samples.csv``, ``OUTDIR/seconds.txt`` (fit + sample: wall and
process CPU seconds) and ``OUTDIR/status.txt``.

The venv (``benchmarks/.peer-venv-mbi2``, git-ignored; the mechanisms beside it)::

    python3 -m venv benchmarks/.peer-venv-mbi2
    benchmarks/.peer-venv-mbi2/bin/pip install mbi==2.0.0 pandas matplotlib
    git -C MBI_CLONE archive 361705d mechanisms | tar -x -C benchmarks/.peer-venv-mbi2

(``pandas`` and ``matplotlib`` are imported by the mechanisms' scripts, not by mbi.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd

MECHANISMS = Path(sys.prefix) / "mechanisms"


class _TimeUpError(Exception):
    """AIM's time limit passed before a round's model estimation."""


def _shim_api() -> None:
    """Give mbi 2.0 the two names the mechanisms' scripts still use (renamed in 2.0)."""
    import jax

    jax.config.update("jax_enable_compilation_cache", False)  # mbi's own advice
    from mbi import Domain, estimation

    Domain.attrs = property(lambda self: self.attributes)
    estimate = estimation.Estimator.estimate

    def estimate_compat(self, domain, loss_fn, *a, potentials=None, **k):
        if potentials is not None:
            k["warm_start"] = potentials
        return estimate(self, domain, loss_fn, *a, **k)

    estimation.Estimator.estimate = estimate_compat


def run_mst(data, eps: float, delta: float) -> tuple[dict, str]:
    import mst

    return mst.MST(data, eps, delta).to_dict(), "complete"


def run_aim(data, eps: float, delta: float, limit: float) -> tuple[dict, str]:
    import aim
    from mbi import estimation

    stop_at = time.process_time() + limit
    calls = {"estimate": 0}
    taken: dict = {}
    selections: list[float] = []

    class CappedMirrorDescent:
        def estimate(self, domain, measurements, *a, **k):
            calls["estimate"] += 1
            if calls["estimate"] > 1 and time.process_time() > stop_at:
                taken.update(measurements=list(measurements), warm=k.get("potentials"))
                raise _TimeUpError
            return estimation.MirrorDescent().estimate(domain, measurements, *a, **k)

    class CountedAIM(aim.AIM):
        def exponential_mechanism(self, qualities, epsilon, *a, **k):
            selections.append(float(epsilon))
            return super().exponential_mechanism(qualities, epsilon, *a, **k)

    aim.estimation = types.SimpleNamespace(MirrorDescent=CappedMirrorDescent)
    workload = [(cl, 1.0) for cl in itertools.combinations(data.domain.attributes, 2)]
    mech = CountedAIM(eps, delta)
    try:
        _, synth = mech.run(data, workload, num_synth_rows=data.records)
        # calls: the 1-way start, one per round, the final estimate
        return synth.to_dict(), f"complete ({calls['estimate'] - 2} rounds)"
    except _TimeUpError:
        ms = taken["measurements"]
        model = estimation.MirrorDescent().estimate(
            data.domain, ms, iters=mech.max_iters, potentials=taken["warm"]
        )
        used = sum(0.5 / m.stddev**2 for m in ms) + sum(e**2 / 8 for e in selections)
        status = (
            f"stopped at {limit:g} s: {calls['estimate'] - 1} rounds, "
            f"{100 * used / mech.rho:.0f} % of rho spent"
        )
        return model.synthetic_data(rows=data.records).to_dict(), status
    finally:
        aim.estimation = estimation


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("codes")
    p.add_argument("sizes")
    p.add_argument("out")
    p.add_argument("--method", choices=("mst", "aim"), default="mst")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=1e-9)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--aim-time", type=float, default=420.0, help="AIM: no round after this CPU time (s)"
    )
    a = p.parse_args()
    sys.path.insert(0, str(MECHANISMS))
    _shim_api()
    from mbi import Dataset, Domain

    sizes = json.loads(Path(a.sizes).read_text(encoding="utf-8"))
    train = pd.read_csv(a.codes)[list(sizes)]
    domain = Domain(list(sizes), list(sizes.values()))
    data = Dataset({c: train[c].to_numpy(np.int64) for c in sizes}, domain)
    np.random.seed(a.seed)  # noqa: NPY002 - the mechanisms draw from numpy's global generator
    t, c = time.perf_counter(), time.process_time()
    if a.method == "mst":
        cols, status = run_mst(data, a.epsilon, a.delta)
    else:
        cols, status = run_aim(data, a.epsilon, a.delta, a.aim_time)
    secs, cpu = time.perf_counter() - t, time.process_time() - c
    out = Path(a.out)
    pd.DataFrame({c: np.asarray(cols[c], np.int64) for c in sizes}).to_csv(
        out / "samples.csv", index=False
    )
    (out / "seconds.txt").write_text(f"{secs:.3f} {cpu:.3f}\n", encoding="utf-8")
    (out / "status.txt").write_text(status + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
