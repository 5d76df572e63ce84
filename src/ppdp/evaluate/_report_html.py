"""The HTML page of a :class:`~ppdp.evaluate.report.QualityReport` (figures as inline SVG).

One self-contained file: no script, no network, no external asset; the figures are inline
``<svg>`` elements that scale with the page (readable on a phone) and print.
"""

from __future__ import annotations

import io
import math
import re
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np

from ppdp.accounting.receipt import replace_one_equivalent
from ppdp.data.dates import day_text
from ppdp.evaluate._report_common import (
    BANNER,
    N_BINS,
    THRESHOLDS,
    VERDICTS,
    _two,
    import_matplotlib,
)

if TYPE_CHECKING:
    from ppdp.evaluate.report import QualityReport

_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.45;
margin:0 auto;padding:1rem;max-width:60rem;color:#1b1b1b;background:#fff}
h1{font-size:1.5rem;margin:.5rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc}
h3{font-size:1.05rem;margin:1.2rem 0 .3rem}
.banner{background:#fff4d6;border:1px solid #e0b800;padding:.6rem .8rem;border-radius:4px}
.verdict{font-size:1.15rem;padding:.6rem .8rem;border-radius:4px;margin:1rem 0}
.v-useful{background:#e3f5e1;border:1px solid #3c9a34}
.v-weak{background:#fff0dc;border:1px solid #d98b00}
.v-trivial{background:#fde2e2;border:1px solid #c62828}
.note{color:#555;font-size:.92rem}
.fig svg{width:100%;height:auto;max-width:36rem;display:block}
.fig.wide svg{max-width:100%}
.fig.small svg{max-width:24rem}
.heat{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,34rem),1fr));gap:1rem}
.heat .fig svg{max-width:100%}
td.basis,th.basis{text-align:left;font-size:.85rem}
td.v-useful,td.v-weak,td.v-trivial{text-align:left;white-space:nowrap}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(17rem,1fr));gap:1rem}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:.5rem 0;font-size:.92rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.5rem}
@media print{body{max-width:none;padding:0}.col{break-inside:avoid}h2{break-after:avoid}
.banner,.verdict{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
"""

_REAL = "#1f77b4"
_REL = "#d62728"


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(
        buf,
        format="svg",
        metadata={"Creator": None, "Date": None, "Format": None, "Type": None},
    )
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # Fixed pt sizes would overflow a phone; the CSS sizes the figure instead.
    text = re.sub(r'(<svg[^>]*?)\s(width|height)="[^"]*"', r"\1", text, count=1)
    text = re.sub(r'(<svg[^>]*?)\s(width|height)="[^"]*"', r"\1", text, count=1)
    return text


def _figure(
    width: float, height: float, margins: tuple[float, float, float, float] = (0.6, 0.2, 0.5, 0.15)
) -> Any:
    """A figure with fixed margins in inches (left, right, bottom, top).

    Fixed margins instead of a layout engine: measuring every tick label for a constrained
    layout took about half of the report's drawing time.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    left, right, bottom, top = margins
    fig.subplots_adjust(
        left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height
    )
    return fig


def _nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) within [lo, hi]."""
    span = hi - lo
    if not span > 0:
        return [lo]
    raw = span / target
    power = 10.0 ** np.floor(np.log10(raw))
    step = power * min((m for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw), default=10.0)
    first = np.ceil(lo / step - 1e-9) * step
    ticks = np.arange(first, hi + step * 1e-9, step)
    return [float(t) + 0.0 for t in np.round(ticks, 12)]  # + 0.0: no "-0" label


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a log-scale axis: the lower bound, then ``lower + 10^k`` up to the upper."""
    ticks = [lo]
    k = 0 if hi - lo >= 10 else -2
    while lo + 10.0**k < hi and len(ticks) < 12:
        ticks.append(lo + 10.0**k)
        k += 1
    if len(ticks) > 7:  # at most about six labelled decades
        ticks = [lo, *ticks[2::2]]
    return ticks


def _date_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a date axis (days since 1970-01-01): the first days of years (every 1, 2,
    5, 10... years) or of months (every 1, 2, 3 or 6 months), 2 to 5 of them; else the
    bounds."""
    first, last = np.datetime64(math.ceil(lo), "D"), np.datetime64(math.floor(hi), "D")
    for unit, steps in (("Y", (1, 2, 5, 10, 20, 50, 100, 200, 500)), ("M", (1, 2, 3, 6))):
        start = first.astype(f"datetime64[{unit}]")
        end = last.astype(f"datetime64[{unit}]")
        for step in steps:
            k0 = -(-start.astype(np.int64) // step) * step  # first multiple of step
            marks = np.arange(k0, end.astype(np.int64) + 1, step).astype(f"datetime64[{unit}]")
            days = marks.astype("datetime64[D]").astype(np.int64)
            days = days[(days >= lo) & (days <= hi)]
            if 2 <= days.size <= 5:
                return [float(d) for d in days]
    return [float(math.ceil(lo)), float(math.floor(hi))]


#: Most bars of a categorical column's chart: its commonest cells, then one "other" bar.
MAX_BARS = 20
#: Most features of the correlation maps, and columns of the Cramér's V maps.
MAX_HEAT_FEATURES = 30
MAX_HEAT_COLUMNS = 20


def _top_cells(col: dict[str, Any]) -> dict[str, Any]:
    """A categorical column with more than :data:`MAX_BARS` cells as its commonest cells
    (by the larger of the real and released share) and one "other" cell summing the rest."""
    p, q = np.asarray(col["p_original"]), np.asarray(col["p_release"])
    n = max(p.size, q.size)
    if col["type"] == "numeric" or n <= MAX_BARS:
        return col
    p, q = np.pad(p, (0, n - p.size)), np.pad(q, (0, n - q.size))
    top = np.sort(np.argsort(-np.maximum(p, q), kind="stable")[: MAX_BARS - 1])
    rest = np.setdiff1d(np.arange(n), top)
    cells = [col["cells"][k] if k < len(col["cells"]) else "" for k in top]
    return {
        **col,
        "p_original": np.r_[p[top], p[rest].sum()],
        "p_release": np.r_[q[top], q[rest].sum()],
        "cells": [*cells, f"other ({rest.size})"],
    }


def _marginal_svg(col: dict[str, Any]) -> str:
    """Real (bars) and released (red) shares of one column, drawn directly as SVG.

    Drawn by hand rather than with matplotlib: the eleven charts of an Adult report took
    about two seconds through matplotlib and take milliseconds this way.
    """
    col = _top_cells(col)
    p, q = np.asarray(col["p_original"]), np.asarray(col["p_release"])
    n = max(p.size, q.size)
    p = np.pad(p, (0, n - p.size))
    q = np.pad(q, (0, n - q.size))
    # A column with declared cuts (skewed brackets) gets one equal slot per bin, labelled
    # with its interval, like the categories; the value axis would squeeze the narrow bins.
    slots = col["type"] != "numeric" or "edges" in col
    rotated = slots and n > 4
    W, H = 500.0, 250.0 + (60.0 if rotated else 0.0)
    left, right, top, bottom = 52.0, 12.0, 12.0, (90.0 if rotated else 34.0)
    pw, ph = W - left - right, H - top - bottom
    ymax = max(float(max(p.max(initial=0), q.max(initial=0))) * 1.08, 1e-9)
    yticks = [t for t in _nice_ticks(0.0, ymax, 4) if t <= ymax]

    def y(v: float) -> float:
        return top + ph * (1.0 - v / ymax)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W:g} {H:g}" role="img" '
        f'aria-label="{escape(col["name"])}: real and released shares" '
        'font-family="system-ui, sans-serif" font-size="11">'
    ]
    for t in yticks:
        out.append(
            f'<line x1="{left:g}" x2="{left + pw:g}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
            'stroke="#e6e6e6"/>'
            f'<text x="{left - 5:g}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>'
        )
    if not slots:
        lo, hi = float(col["lower"]), float(col["upper"])
        log = "log_edges" in col  # a log-scale column: drawn on its log scale
        edges = np.asarray(col["log_edges"]) if log else np.linspace(lo, hi, n + 1)

        def x(v: float) -> float:
            if log:
                return left + pw * math.log1p(max(v - lo, 0.0)) / math.log1p(hi - lo)
            return left + pw * (v - lo) / (hi - lo)

        for k in range(n):
            if p[k] > 0:
                out.append(
                    f'<rect x="{x(edges[k]):.1f}" y="{y(p[k]):.1f}" '
                    f'width="{x(edges[k + 1]) - x(edges[k]):.1f}" height="{y(0) - y(p[k]):.1f}" '
                    f'fill="{_REAL}" fill-opacity="0.45"/>'
                )
        path = [f"M{x(edges[0]):.1f},{y(q[0]):.1f}"]
        for k in range(n):
            path.append(f"H{x(edges[k + 1]):.1f}")
            if k + 1 < n:
                path.append(f"V{y(q[k + 1]):.1f}")
        out.append(f'<path d="{" ".join(path)}" fill="none" stroke="{_REL}" stroke-width="1.8"/>')
        if col.get("date"):  # days since 1970-01-01, ticked at year or month starts
            ticks = _date_ticks(lo, hi)
        else:
            ticks = _log_ticks(lo, hi) if log else _nice_ticks(lo, hi)
        for t in ticks:
            label = day_text(t) if col.get("date") else f"{t:g}"
            out.append(
                f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{y(0):.1f}" y2="{y(0) + 4:.1f}" '
                'stroke="#333"/>'
                f'<text x="{x(t):.1f}" y="{y(0) + 16:.1f}" text-anchor="middle">{label}</text>'
            )
    else:
        slot = pw / n
        for k in range(n):
            x0 = left + slot * k
            for v, color, off in ((p[k], _REAL, 0.1), (q[k], _REL, 0.5)):
                if v > 0:
                    out.append(
                        f'<rect x="{x0 + slot * off:.1f}" y="{y(v):.1f}" '
                        f'width="{slot * 0.4:.1f}" height="{y(0) - y(v):.1f}" fill="{color}"/>'
                    )
            label = col["cells"][k] if k < len(col["cells"]) else ""
            label = escape(label if len(label) <= 14 else label[:13] + "…")
            cx, ty = x0 + slot / 2, y(0) + 14
            if rotated:
                out.append(
                    f'<text x="{cx:.1f}" y="{ty:.1f}" text-anchor="end" '
                    f'transform="rotate(-40 {cx:.1f} {ty:.1f})">{label}</text>'
                )
            else:
                out.append(f'<text x="{cx:.1f}" y="{ty:.1f}" text-anchor="middle">{label}</text>')
    out.append(
        f'<line x1="{left:g}" x2="{left + pw:g}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#333"/>'
        f'<line x1="{left:g}" x2="{left:g}" y1="{top:g}" y2="{y(0):.1f}" stroke="#333"/>'
        f'<text transform="translate(13 {top + ph / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">share of rows</text>'
    )
    lx = left + pw - 92
    out.append(
        f'<rect x="{lx:g}" y="{top + 2:g}" width="12" height="9" fill="{_REAL}" '
        'fill-opacity="0.6"/>'
        f'<text x="{lx + 17:g}" y="{top + 11:g}">real</text>'
        f'<rect x="{lx:g}" y="{top + 17:g}" width="12" height="9" fill="{_REL}"/>'
        f'<text x="{lx + 17:g}" y="{top + 26:g}">released</text></svg>'
    )
    return "".join(out)


def _most_associated(
    C0: Any, C1: Any, names: list[str], k: int, live: Any = None, groups: Any = None
) -> tuple[list[int], str]:
    """The ``k`` features (or columns) with the largest off-diagonal association in either
    table or the largest change, in their original order, and a sentence saying so when
    some were left out. Features of the same ``groups`` entry (two categories of one
    column, always associated) do not count for each other."""
    n = len(names)
    if n <= k:
        return list(range(n)), ""
    A = np.maximum(np.abs(C0), np.abs(C1))
    A = np.maximum(A, np.abs(C1 - C0))
    np.fill_diagonal(A, 0.0)
    if groups is not None:
        g = np.asarray(groups)
        A[g[:, None] == g[None, :]] = 0.0
    if live is not None:
        A[~np.asarray(live)] = 0.0
    keep = sorted(np.argsort(-A.max(axis=1), kind="stable")[:k].tolist())
    return keep, (
        f" Shown: the {k} of {n} with the strongest association (real or released) or the "
        "largest change; the JSON holds them all."
    )


def _feature_columns(r: QualityReport) -> list[str]:
    """The column of each encoded feature (``col=category`` belongs to ``col``)."""
    out, names = [], [c["name"] for c in r.columns]
    for f in r.feature_names:
        owner = next((n for n in names if f == n or f.startswith(n + "=")), f)
        out.append(owner)
    return out


def _heat_svg(C: Any, names: list[str], title: str, *, diff: bool, positive: bool = False) -> str:
    k = len(names)
    size = min(9.0, 2.5 + 0.16 * k) if not positive else min(6.0, 3.0 + 0.2 * k)
    fs = 8 if k <= 20 else 6 if k <= 45 else 4
    label = 0.3 + 0.075 * fs / 8 * 22 * (0.75 if fs < 8 else 1.0)  # 22 characters of labels
    fig = _figure(size + 1.0, size * 0.9 + 0.3, (label, 1.1, label, 0.35))
    ax = fig.add_subplot()
    lim = max(float(np.max(np.abs(C))), 1e-9) if diff else 1.0
    cmap, lo = ("Blues", 0.0) if positive and not diff else ("RdBu_r", -lim)
    mesh = ax.imshow(C, cmap=cmap, vmin=lo, vmax=lim, interpolation="nearest", extent=(0, k, k, 0))
    short = [n if len(n) <= 22 else n[:21] + "…" for n in names]
    ax.set_xticks(np.arange(k) + 0.5)
    ax.set_xticklabels(short, rotation=90, fontsize=fs)
    ax.set_yticks(np.arange(k) + 0.5)
    ax.set_yticklabels(short, fontsize=fs)
    ax.set_title(title, fontsize=10)
    cax = fig.add_axes((1 - 0.95 / fig.get_figwidth(), 0.25, 0.15 / fig.get_figwidth(), 0.5))
    fig.colorbar(mesh, cax=cax)
    cax.tick_params(labelsize=7)
    return _svg(fig)


def _corr_sentence(r: QualityReport) -> str:
    """The correlation map's headline: mean and largest change over the features that vary
    in both tables (an empty category's 0 against a real value is no finding), named."""
    text = f"Mean absolute difference {r.corr_mean_abs_diff:.3f}"
    big = r.corr_largest
    if big is not None:
        a, b = (escape(x) for x in big["features"])
        text += (
            f", largest {r.corr_max_abs_diff:.3f} ({a} × {b}: {big['original']:.2f} real, "
            f"{big['release']:.2f} released)"
        )
    text += "."
    empty = r.corr_empty
    if empty:
        shown = ", ".join(escape(e) for e in empty[:8]) + (" …" if len(empty) > 8 else "")
        text += (
            f" Left out of these figures: {len(empty)} feature(s) that one table holds in no "
            f"row or in every row ({shown}), whose correlation is undefined there."
        )
    return text


def _parts_html(r: QualityReport) -> str:
    """The verdict of each part of a table, and its numbers."""
    if not r.verdict_parts:
        return ""
    rows = "".join(
        f"<tr><td>{escape(p['part'])}</td><td class='{_verdict_class(p['verdict'])}'>"
        f"{escape(p['verdict'])}</td><td class='basis'>{escape(p['basis'])}</td></tr>"
        for p in r.verdict_parts
    )
    return (
        "<div class='scroll'><table class='parts'><tr><th>part</th><th>verdict</th>"
        f"<th class='basis'>numbers</th></tr>{rows}</table></div>"
    )


def _joint_svg(p: Any, q: Any, cells: list[list[str]], names: list[str]) -> str:
    """Real and released joint shares of a pair side by side, one colour scale."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    ka, kb = p.shape
    cell, gap, left, top = 12.0, 22.0, 64.0, 16.0
    W = left + 2 * kb * cell + gap + 8
    H = top + ka * cell + 70.0
    vmax = max(float(p.max(initial=0)), float(q.max(initial=0)), 1e-9)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W:g} {H:g}" role="img" '
        f'aria-label="{escape(names[0])} by {escape(names[1])}: real and released joint shares" '
        'font-family="system-ui, sans-serif" font-size="9">'
    ]
    for panel, (M, title) in enumerate(((p, "real"), (q, "released"))):
        x0 = left + panel * (kb * cell + gap)
        out.append(f'<text x="{x0:g}" y="{top - 5:g}" font-size="10">{title}</text>')
        for a in range(ka):
            for b in range(kb):
                shade = 1.0 - M[a, b] / vmax
                level = int(255 * shade)
                out.append(
                    f'<rect x="{x0 + b * cell:.1f}" y="{top + a * cell:.1f}" width="{cell:g}" '
                    f'height="{cell:g}" fill="rgb({level},{level},255)" stroke="#fff" '
                    'stroke-width="0.5"/>'
                )
        for b in range(kb):
            label = escape(_short(cells[1][b], 9))
            cx, ty = x0 + b * cell + cell / 2, top + ka * cell + 4
            out.append(
                f'<text x="{cx:.1f}" y="{ty:.1f}" text-anchor="end" '
                f'transform="rotate(-60 {cx:.1f} {ty:.1f})">{label}</text>'
            )
    for a in range(ka):
        out.append(
            f'<text x="{left - 3:g}" y="{top + a * cell + cell * 0.7:.1f}" text-anchor="end">'
            f"{escape(_short(cells[0][a], 12))}</text>"
        )
    out.append(
        f'<text x="{W / 2:.1f}" y="{H - 3:g}" text-anchor="middle" font-size="10">'
        f"{escape(_short(names[1], 30))} (across) by {escape(_short(names[0], 30))} (down)"
        "</text></svg>"
    )
    return "".join(out)


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _pairs_html(r: QualityReport) -> str:
    ps = r.pairs
    if not ps or not ps["n_pairs"]:
        return ""
    rows, figs = [], []
    for d in ps["worst"]:
        a, b = d["columns"]
        r0, r1 = d.get("r_original"), d.get("r_release")
        corr = f"{_two(r0)} → {_two(r1)}" if r0 is not None and r1 is not None else "–"
        rows.append(
            f"<tr><td>{escape(a)} × {escape(b)}</td><td>{d['tv']:.3f}</td>"
            f"<td>{d['tv_shuffled']:.3f}</td><td>{d['v_original']:.2f} → "
            f"{d['v_release']:.2f}</td><td>{corr}</td></tr>"
        )
        if "original" in d:
            figs.append(
                f"<div class='col'><h3>{escape(a)} × {escape(b)}</h3><p class='note'>TV "
                f"{d['tv']:.3f} (shuffled: {d['tv_shuffled']:.3f}).</p><div class='fig small'>"
                f"{_joint_svg(d['original'], d['release'], d['cells'], d['columns'])}</div></div>"
            )
    lost = [x for x in ps["strong"] if x["lost"]]
    strong = ""
    if ps["strong"]:
        items = "".join(
            f"<li>{escape(x['columns'][0])} × {escape(x['columns'][1])}: {escape(x['measure'])}"
            f" {_two(x['original'])} real, {_two(x['release'])} released</li>"
            for x in (lost or ps["strong"][:3])[:10]
        )
        head = (
            f"<strong>{len(lost)} of the {len(ps['strong'])} strong associations are lost</strong>"
            if lost
            else f"The {len(ps['strong'])} strong associations are kept; the least kept"
        )
        strong = f"<p>{head}:</p><ul>{items}</ul>"
    return f"""<h2>Pairs of columns</h2>
<p class="note">Every pair's joint distribution on coarse cells (at most {ps["cells_per_column"]}
per column: a numeric column's bins merged, a categorical column's commonest real codes and
"(other)"), counted on {ps["n_rows"][0]:,} original and {ps["n_rows"][1]:,} released rows.
Mean total-variation distance of the {ps["n_pairs"]:,} pairs: {ps["mean_tv"]:.3f}; of the real
columns shuffled independently (real marginals, no association) {ps["mean_tv_shuffled"]:.3f};
of the trivial release {ps["mean_tv_uniform"]:.3f}.{_dependent_text(ps)} Association:
bias-corrected Cramér's V (and Pearson's r for two numeric columns).</p>
{strong}
<h3>The {len(ps["worst"])} pairs that moved most</h3>
<div class='scroll'><table><tr><th>pair</th><th>TV</th><th>TV shuffled</th>
<th>Cramér's V real → released</th><th>Pearson's r</th></tr>{"".join(rows)}</table></div>
<div class='grid'>{"".join(figs)}</div>"""


def _dependent_text(ps: dict[str, Any]) -> str:
    """The pairs with a real dependence, against the shuffled and the resampled rows."""
    n = ps.get("n_dependent", 0)
    if not n:
        return ""
    return (
        f" On the {n:,} pair(s) whose real association reaches "
        f"{THRESHOLDS['dependence_floor']:g}: {ps['dependent_tv']:.3f}, shuffled "
        f"{ps['dependent_tv_shuffled']:.3f}, the real rows resampled at the release's size "
        f"(a perfect release) {ps['dependent_tv_resampled']:.3f}."
    )


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _verdict_class(verdict: str) -> str:
    return {VERDICTS[0]: "v-useful", VERDICTS[1]: "v-weak"}.get(verdict, "v-trivial")


def _bounding_html(r: QualityReport) -> str:
    """The share of rows the privacy unit's caps dropped (empty without a unit)."""
    b = r.bounding
    if not b:
        return ""
    rows = [
        (f"{cap} = {b[cap]}", b["by_cap"][cap])
        for cap in ("max_rows_per_group", "max_groups")
        if b.get(cap) is not None
    ]
    rows += [
        (f"max_rows = {b['max_rows']}", b["by_cap"]["max_rows"]),
        ("rows without an id", b["by_cap"]["missing_ids"]),
    ]
    about = "" if b.get("exact", True) else "about "
    method = f'<p class="note">Counted by {escape(b["method"])}.</p>' if "method" in b else ""
    if "note" in b:
        method += f'<p class="note">Note: {escape(b["note"])}.</p>'
    cells = "".join(
        f"<tr><td>{escape(name)}</td><td>{n:,}</td>"
        f"<td>{(n / b['rows'] if b['rows'] else 0.0):.1%}</td></tr>"
        for name, n in rows
    )
    return f"""<h2>Contribution bounding (custodian only)</h2>
<p class="note">The release protects each person of column <code>{escape(b["column"])}</code>
and read at most {b["max_rows"]} row(s) of each: {b["persons"]:,} person(s),
{about}{b["kept"]:,} of {b["rows"]:,} row(s) kept,
<strong>{about}{b["share_dropped"]:.1%} dropped</strong>
({b["persons_over_max_rows"]:,} person(s) above the cap). The dropped rows bias the release
towards persons with few rows; a larger cap keeps more and adds noise in proportion. These
counts are read from the private data: they are not released and not differentially
private.</p>{method}
<table><tr><th>cap</th><th>rows dropped</th><th>share</th></tr>{cells}</table>"""


def _guarantee_html(r: QualityReport) -> str:
    if r.guarantee is None:
        return (
            "<p><strong>No guarantee file was found</strong> beside the release "
            "(<code>RELEASE.guarantee.json</code>, written by <code>ppdp publish</code>): this "
            "report cannot say what the release promises. Keep the release with its "
            "guarantee file.</p>"
        )
    g = r.guarantee
    parts = [f"<p><strong>{escape(g.summary())}</strong></p>"]
    if g.is_private:
        eps = g.epsilon
        change = (
            "replacing any one person's record by another"
            if g.relation is not None and g.relation.value == "replace-one"
            else "adding or removing any one person's record"
        )
        words = (
            f"The release is differentially private: {change} changes the probability of "
            "any output by a factor of at most "
            f"e<sup>ε</sup>{f' ≈ {np.exp(eps):.3g}' if eps is not None and eps < 50 else ''}"
        )
        if g.delta:
            words += f", except with probability at most δ = {g.delta:g}"
        words += ". Smaller ε means stronger protection and more noise."
        also = replace_one_equivalent(g)
        if also:  # an add/remove ε is worth about twice a replace-one ε
            words += (
                " Replacing a record is removing it and adding another, so this add/remove "
                f"guarantee is {escape(also)} (group privacy of two): compare "
                "it with replace-one releases at that budget."
            )
        parts.append(f"<p>{words}</p>")
    else:
        parts.append("<p><strong>This release carries no privacy guarantee.</strong></p>")
    parts.append(f"<p class='note'>Full statement: {escape(str(g))}</p>")
    info = r.release_info
    if info:
        rows = []
        if "method" in info:
            rows.append(f"method: <code>{escape(str(info['method']))}</code>")
        if info.get("ledger"):
            idx = ", ".join(map(str, info.get("ledger_indices") or [])) or "none"
            ledger = escape(str(info["ledger"]))
            rows.append(f"charged in ledger <code>{ledger}</code>, entries {idx}")
        elif "ledger" in info:
            rows.append("no ledger was given: the spend is recorded nowhere")
        if info.get("seeded"):
            rows.append("<strong>seeded noise: reproducible, NOT fit for a real release</strong>")
        parts.append("<ul>" + "".join(f"<li>{x}</li>" for x in rows) + "</ul>")
    return "".join(parts)


def _ml_row(name: str, d: dict[str, Any] | None) -> str:
    if d is None:
        return ""
    auc = d["auc"]
    auc_s = "–" if auc is None or not np.isfinite(auc) else f"{auc:.3f}"
    return f"<tr><td>{name}</td><td>{d['accuracy']:.3f}</td><td>{auc_s}</td></tr>"


def _ml_html(ml: dict[str, Any], subject: str = "the release") -> str:
    maj = f"nothing (majority class: {escape(str(ml['majority']['class']))})"
    curves: list[tuple[str, dict[str, Any] | None, str, str]] = []
    if "models" in ml:  # a table: logistic regression and gradient-boosted trees
        rows = ""
        for (model, d), dash in zip(ml["models"].items(), ("-", "--"), strict=False):
            rows += _ml_row(f"{subject}, {escape(model)}", d["release"])
            curves.append((f"{subject}, {model}", d["release"].get("roc"), _REL, dash))
        for (model, d), dash in zip(ml["models"].items(), ("-", "--"), strict=False):
            rows += _ml_row(f"the real data, {escape(model)}", d["real"])
            curves.append((f"the real data, {model}", d["real"].get("roc"), _REAL, dash))
        intro = (
            f"<p>Predicting <code>{escape(ml['target'])}</code> with logistic regression and "
            "gradient-boosted trees (scikit-learn: <code>LogisticRegression</code> and "
            "<code>HistGradientBoostingClassifier</code>, default settings, fixed seed), "
            f"tested on {escape(ml['test'])}. The verdict rests on logistic regression.</p>"
        )
    elif "direction" in ml:  # an LDA projection release
        rows = _ml_row(
            "the released rows (cross-fitted on two halves, each with its row's label)",
            ml.get("released_rows"),
        )
        rows += _ml_row(
            "the released direction (exact projections of the original rows)", ml["direction"]
        )
        rows += _ml_row("the real data, every feature", ml["real"])
        if ml.get("released_rows") is not None:
            curves.append(("the released rows", ml["released_rows"].get("roc"), _REL, "-"))
        curves.append(("the released direction", ml["direction"].get("roc"), _REL, "--"))
        curves.append(("the real data", ml["real"].get("roc"), _REAL, "-"))
        intro = (
            f"<p>Predicting <code>{escape(ml['target'])}</code> with {escape(ml['model'])}, "
            f"tested on {escape(ml['test'])}.</p>"
        )
    else:  # a private model
        rows = _ml_row(subject, ml["release"]) + _ml_row("the real data", ml["real"])
        curves.append((subject, ml["release"].get("roc"), _REL, "-"))
        intro = (
            f"<p>Predicting <code>{escape(ml['target'])}</code> with {escape(ml['model'])}, "
            f"tested on {escape(ml['test'])}.</p>"
        )
    lift = ml["lift"]
    table = (
        "<div class='scroll'><table><tr><th>trained on</th><th>accuracy</th><th>AUC</th></tr>"
        + rows
        + _ml_row(maj, ml["majority"])
        + "</table></div>"
    )
    keeps = (
        f"<p>{subject[0].upper() + subject[1:]} {'keep' if subject.endswith('rows') else 'keeps'} "
        f"<strong>{lift:.0%}</strong> "
        "of the real data's AUC gain over chance (AUC − 0.5).</p>"
        if lift is not None
        else ""
    )
    drawn = [c for c in curves if c[1] is not None]
    roc = (
        "<h3>ROC curves</h3><p class='note'>True-positive against false-positive rate on the "
        "test rows as the decision threshold moves (positive: the second declared class); the "
        "diagonal is guessing. The area under a curve is its AUC.</p>"
        f"<div class='fig'>{_roc_svg(drawn)}</div>"
        if drawn
        else ""
    )
    return intro + table + keeps + roc


def _roc_svg(curves: list[tuple[str, Any, str, str]]) -> str:
    fig = _figure(4.6, 3.6, (0.6, 0.2, 0.5, 0.15))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], color="#999", lw=1, ls=":", label="chance")
    for name, roc, color, dash in curves:
        ax.plot(roc["fpr"], roc["tpr"], color=color, ls=dash, lw=1.6, label=name)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("false-positive rate", fontsize=8)
    ax.set_ylabel("true-positive rate", fontsize=8)
    ax.legend(frameon=False, fontsize=7, loc="lower right")
    ax.tick_params(labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def _columns_html(r: QualityReport) -> str:
    head = (
        "<div class='scroll'><table><tr><th>column</th><th>TV distance</th>"
        "<th>TV of uniform</th><th>released at lower bound</th>"
        "<th>released at upper bound</th><th>real at bounds</th></tr>"
    )
    rows = []
    for c in r.columns:
        if c["type"] == "numeric":
            b = (
                f"<td>{_pct(c['release_at_lower'])}</td><td>{_pct(c['release_at_upper'])}</td>"
                f"<td>{_pct(c['original_at_lower'])} / {_pct(c['original_at_upper'])}</td>"
            )
        else:
            b = "<td>–</td><td>–</td><td>–</td>"
        rows.append(
            f"<tr><td>{escape(c['name'])}</td><td>{c['tv']:.3f}</td>"
            f"<td>{c['tv_uniform']:.3f}</td>{b}</tr>"
        )
    figs = []
    for c in r.columns:
        extra = ""
        if c["type"] == "numeric":
            text = day_text if c.get("date") else (lambda v: f"{v:g}")
            extra = (
                f" Declared bounds [{text(c['lower'])}, {text(c['upper'])}]; released values at "
                "the lower "
                f"bound {_pct(c['release_at_lower'])}, at the upper {_pct(c['release_at_upper'])}"
                f" (real: {_pct(c['original_at_lower'])}, {_pct(c['original_at_upper'])})."
            )
        elif c.get("release_undeclared"):
            extra = f" Undeclared values in the release: {_pct(c['release_undeclared'])}."
        figs.append(
            f"<div class='col'><h3>{escape(c['name'])}</h3><p class='note'>TV distance "
            f"{c['tv']:.3f}.{escape(extra)}</p><div class='fig'>{_marginal_svg(c)}</div></div>"
        )
    return head + "".join(rows) + "</table></div><div class='grid'>" + "".join(figs) + "</div>"


def render(r: QualityReport) -> str:
    """The report as one HTML document."""
    import matplotlib

    import_matplotlib()
    t = THRESHOLDS
    if r.kind == "model":
        return _page(r, _model_body(r))
    if r.kind == "groupby":
        return _page(r, _groups_body(r))
    if r.kind == "lda-projection":
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ppdp-report"}):
            return _page(r, _lda_body(r))
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ppdp-report"}):
        columns = _columns_html(r)
        shown, heat_note = _most_associated(
            r.corr_original,
            r.corr_release,
            r.feature_names,
            MAX_HEAT_FEATURES,
            r.corr_live,
            _feature_columns(r),
        )
        names = [r.feature_names[i] for i in shown]
        sub = np.ix_(shown, shown)
        heat = (
            "<div class='heat'>"
            + "".join(
                f"<div class='fig wide'>{_heat_svg(C[sub], names, title, diff=diff)}</div>"
                for C, title, diff in (
                    (r.corr_original, "real", False),
                    (r.corr_release, "released", False),
                    (r.corr_release - r.corr_original, "released − real", True),
                )
            )
            + "</div>"
        )
        cshown, cramer_note = _most_associated(
            r.cramers_original, r.cramers_release, r.categorical_names, MAX_HEAT_COLUMNS
        )
        cats = [r.categorical_names[i] for i in cshown]
        csub = np.ix_(cshown, cshown)
        cramer = (
            "<div class='heat'>"
            + "".join(
                f"<div class='fig'>{_heat_svg(C[csub], cats, title, diff=diff, positive=True)}"
                "</div>"
                for C, title, diff in (
                    (r.cramers_original, "real", False),
                    (r.cramers_release, "released", False),
                    (r.cramers_release - r.cramers_original, "released − real", True),
                )
            )
            + "</div>"
            if len(cats) > 1
            else "<p class='note'>Fewer than two categorical columns: no Cramér's V map.</p>"
        )
        cv_diff = np.abs(r.cramers_release - r.cramers_original)
        cv_max = float(cv_diff.max()) if cv_diff.size else 0.0
    notes = "".join(f"<li>{escape(n)}</li>" for n in r.notes)
    ml = (
        _ml_html(r.ml)
        if r.ml is not None
        else "<p>No target was given (<code>--target COL</code>): no classifier was trained.</p>"
    )
    body = f"""
{_head(r, "a release")}
{_parts_html(r)}
<p class="note">Original: {r.n_original:,} rows. Release: {r.n_release:,} rows.</p>
{f"<ul class='note'>{notes}</ul>" if notes else ""}
<h2>Guarantee</h2>
{_guarantee_html(r)}
{_bounding_html(r)}
<h2>Machine-learning utility</h2>
{ml}
<h2>Columns</h2>
<p class="note">Real (blue) and released (red) shares of rows per declared category, or per
one of {N_BINS} equal bins over a numeric column's declared bounds (on its log scale for a
column declared <code>scale: log</code>, drawn on that scale), or of the intervals between
its declared cut points (released values outside the bounds are counted in the end bins). The
total-variation (TV) distance is half the sum of the absolute differences of the shares: 0 for
the same distribution, 1 for disjoint ones.
"TV of uniform" is the distance of the trivial release that draws values uniformly within
the declared bounds. Compare the released share exactly at a bound with the real one: a
released share well above it is the mark of noise that was clipped (a synthetic table keeps
each bound's real share: rates at 1, zeros, top-coded values).</p>
{columns}
{_pairs_html(r)}
<h2>Pairwise association</h2>
<h3>Correlation</h3>
<p class="note">Pearson correlation of the encoded columns (numeric columns scaled to [0, 1]
by their bounds, one indicator per category), in the real data, in the release, and the
difference. {_corr_sentence(r)}{heat_note}</p>
{heat}
<h3>Cramér's V of the categorical columns</h3>
<p class="note">The strength of association of every pair of categorical columns (the label
included): 0 for independent columns, 1 when one determines the other, in the real data, in
the release, and the difference (largest absolute difference {cv_max:.3f}). Values outside
the declared categories are left out.{cramer_note}</p>
{cramer}
{_how(t)}
</ul>
"""
    return _page(r, body)


def _head(r: QualityReport, what: str) -> str:
    basis = (
        "The worst of the verdicts of its parts, below."
        if r.verdict_parts and r.verdict in VERDICTS
        else f"{r.verdict_basis}."
    )
    return f"""<h1>Quality report of {what}</h1>
<p class="banner"><strong>For the custodian only.</strong> {escape(BANNER)}</p>
<p class="verdict {_verdict_class(r.verdict)}"><strong>Verdict: {escape(r.verdict)}.</strong>
<span class="note">{escape(basis)}</span></p>"""


def _model_body(r: QualityReport) -> str:
    notes = "".join(f"<li>{escape(n)}</li>" for n in r.notes)
    return f"""
{_head(r, "a private model")}
{f"<ul class='note'>{notes}</ul>" if notes else ""}
<h2>Guarantee</h2>
{_guarantee_html(r)}
<h2>Machine-learning utility</h2>
{_ml_html(r.ml or {}, "the private model")}
{_how(THRESHOLDS)}
<li>For a model, the private model itself takes the place of the classifier trained on the
release.</li>
</ul>
"""


def _number(x: float | None) -> str:
    return "–" if x is None else f"{x:.3g}"


def _statistics_html(g: dict[str, Any]) -> str:
    """Each released statistic's errors against the true values, and its intervals'
    coverage ("about" where the true values are one draw of the bounding)."""
    rows = []
    for e in g["statistics"]:
        about = "" if e["exact"] else "about "
        if e["coverage"] is None:
            cover = "no interval"
        else:
            cover = f"{about}{e['coverage']:.0%} of {e['interval_groups']:,}"
        rows.append(
            f"<tr><td>{escape(e['statistic'])}</td><td>{e['groups']:,}</td>"
            f"<td>{about}{_number(e['median_abs_error'])}</td>"
            f"<td>{about}{_number(e['max_abs_error'])}</td>"
            f"<td>{_number(e['trivial_median_abs_error'])}</td><td>{cover}</td></tr>"
        )
    level = f"{g['interval']:g} " if g.get("interval") is not None else ""
    return (
        "<div class='scroll'><table><tr><th>statistic</th><th>groups compared</th>"
        "<th>median |error|</th><th>largest |error|</th><th>trivial median |error|</th>"
        f"<th>{level}interval covers the true value</th></tr>{''.join(rows)}</table></div>"
    )


def _keys_html(g: dict[str, Any]) -> str:
    """Keys in the data and released: counts only (an unreleased key is never named)."""
    k = g["keys"]
    about = "" if k["exact"] else "about "
    if k["mode"] != "private":
        return (
            f"<p>Declared keys: the release holds {k['released']:,} of the {k['declared']:,} "
            f"declared group(s) (groups below a <code>min_count</code> are left out); "
            f"{k['in_data']:,} of them hold rows of the original.</p>"
        )
    return f"""<p>Private keys (counts only: a key that was not released is never named
here). The original holds {k["in_data"]:,} distinct key(s), {k["in_data_declared"]:,} of them
declared; {k["in_data_not_released"]:,} of them were not released. The release holds
{k["released"]:,} key(s): {k["released_declared"]:,} declared (always released) and
{k["released_from_data"]:,} selected from the data. The rows the release read hold
{about}{k["in_bounded_rows"]:,} distinct key(s); the released keys hold {about}
{k["rows_in_released_keys"]:.1%} of those rows.</p>"""


def _groups_body(r: QualityReport) -> str:
    g = r.groups or {}
    notes = "".join(f"<li>{escape(n)}</li>" for n in r.notes)
    by = ", ".join(g.get("by", [])) or "the whole table"
    return f"""
{_head(r, "a group-by release")}
{_parts_html(r)}
<p class="note">Original: {r.n_original:,} rows. Release: {r.n_release:,} group(s) of
({escape(by)}).</p>
{f"<ul class='note'>{notes}</ul>" if notes else ""}
<h2>Guarantee</h2>
{_guarantee_html(r)}
{_bounding_html(r)}
<h2>Statistics</h2>
<p class="note">Each released statistic against its true value on the rows the release read
(after its contribution bounding): the release's own post-processing of the exact counts and
sums, without noise ({escape(g.get("truth", ""))}). Over the released groups with both
values: the median and largest absolute error, the median absolute error of the trivial
release (the same count in every group; the statistics of values uniform within the declared
bounds), and the share of groups whose stated interval covers the true value (near its
nominal level when the intervals are right).</p>
{_statistics_html(g)}
<h2>Keys</h2>
{_keys_html(g)}
<h2>How the verdict is made</h2>
<ul class="note">
<li>Per statistic, from its median absolute error over the groups: <strong>no better than the
trivial baseline</strong> when it is ≥ {THRESHOLDS["trivial_tv_share"]:g} × the trivial
release's; <strong>useful</strong> when it is ≤ {THRESHOLDS["group_useful_error"]:g} × the
trivial release's; <strong>weak</strong> in between. The release's verdict is the worst of its
statistics'.</li>
</ul>
"""


def _projection_svg(h: dict[str, Any]) -> str:
    edges = np.asarray(h["edges"])
    fig = _figure(5.0, 2.8, (0.6, 0.15, 0.5, 0.1))
    ax = fig.add_subplot()
    width = edges[1] - edges[0]
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
    for c, name in enumerate(h["classes"]):
        color = palette[c % len(palette)]
        ax.bar(
            edges[:-1],
            h["exact"][c],
            width=width,
            align="edge",
            color=color,
            alpha=0.35,
            label=f"{name}: exact",
        )
        if h["released"] is not None:
            q = np.asarray(h["released"][c])
            ax.step(
                edges,
                np.append(q, q[-1]),
                where="post",
                color=color,
                lw=1.6,
                label=f"{name}: released",
            )
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel("projection on the first released direction", fontsize=8)
    ax.set_ylabel("share of the class's rows", fontsize=8)
    ax.legend(frameon=False, fontsize=7)
    ax.tick_params(labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def _lda_body(r: QualityReport) -> str:
    lda = r.lda or {}
    ml = r.ml or {}
    notes = "".join(f"<li>{escape(n)}</li>" for n in r.notes)
    h = lda.get("histogram")
    rows = (
        ""
        if h is None or h["released"] is None
        else (
            " Solid lines: the released (noisy) projections of the same rows; where they spread "
            "far beyond the exact ones, the noise swamps the signal."
        )
    )
    fig = (
        "<h2>Projections</h2><p class='note'>Shaded: the exact projections of the original rows "
        f"on the first released direction, per class.{rows} The range shown holds 99 % of the "
        "values; the rest are counted in the end bins.</p>"
        f"<div class='fig'>{_projection_svg(h)}</div>"
        if h is not None
        else ""
    )
    dlift = ml.get("direction_lift")
    direction = (
        f"<p>The released direction keeps <strong>{dlift:.0%}</strong> of the real data's AUC "
        "gain over chance.</p>"
        if dlift is not None and ml.get("released_rows") is not None
        else ""
    )
    return f"""
{_head(r, "an LDA projection release")}
<p class="note">Release: {escape(str(lda.get("release")))}, {lda.get("n_components")}
direction(s) over {lda.get("n_features")} encoded features. Original: {r.n_original:,} rows.</p>
{f"<ul class='note'>{notes}</ul>" if notes else ""}
<h2>Guarantee</h2>
{_guarantee_html(r)}
<h2>Machine-learning utility</h2>
{_ml_html(ml, ml.get("subject", "the release"))}
{direction}
{fig}
{_how(THRESHOLDS)}
<li>For an LDA projection release, the released rows take the place of the release:
logistic regression on their projections, each with its original row's label, trained on one
random half of the released rows and tested on the other, and the other way round (what a
recipient who knew some labels could predict of the others). Without released rows the
released direction does: logistic regression on the exact projections of the original rows,
tested on the held-out rows.</li>
</ul>
"""


def _how(t: dict[str, float]) -> str:
    return f"""<h2>How the verdict is made</h2>
<ul class="note">
<li>With a target: logistic regression is trained on the release and on the real rows and
tested on the same held-out real rows. The <em>lift</em> is (AUC<sub>release</sub> − 0.5) /
(AUC<sub>real</sub> − 0.5). <strong>Useful</strong>: lift ≥ {t["useful_lift"]:g} and accuracy
at least the majority class's. <strong>No better than the trivial baseline</strong>: lift &lt;
{t["trivial_lift"]:g}, or lift &lt; {t["low_accuracy_lift"]:g} with an accuracy more than
{t["trivial_accuracy_gap"]:g} below the majority class's. <strong>Weak</strong>: in
between.</li>
<li>A table's verdict is the worst of the verdicts of its parts (the table under the
verdict): the target's (above, with a target), the marginals', the pairs' and the
associations'.</li>
<li>Marginals: <strong>useful</strong> when the mean TV distance of the columns is ≤
{t["useful_tv"]:g}; <strong>no better than the trivial baseline</strong> when it is ≥
{t["trivial_tv_share"]:g} × the mean TV of the uniform release; <strong>weak</strong> in
between.</li>
<li>Pairs: <strong>no better than the trivial baseline</strong> when the mean TV of the pairs
is ≥ {t["trivial_tv_share"]:g} × the uniform release's; <strong>weak</strong> when it is ≥
{t["shuffled_tv_share"]:g} × that of the real columns shuffled independently (compared only
when some real pair's association reaches {t["dependence_floor"]:g}), or when, on the pairs
whose real association reaches it, the release keeps less than {t["kept_dependence"]:g} of
the real dependence (the shuffled columns keep 0, the real rows resampled at the release's
size 1); <strong>useful</strong> otherwise.</li>
<li>Associations: a pair is strong when its real association (Pearson's |r| for two numeric
columns, else bias-corrected Cramér's V) is ≥ {t["strong_association"]:g}, and lost when the
release keeps less than {t["kept_association"]:g} of it. <strong>No better than the trivial
baseline</strong> when every strong pair is lost; <strong>weak</strong> when one is;
<strong>useful</strong> otherwise.</li>"""


def _page(r: QualityReport, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>ppdp quality report: {escape(r.verdict)}</title><style>{_CSS}</style>"
        f"</head><body>{body}</body></html>\n"
    )
