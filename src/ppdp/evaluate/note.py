"""A release note for the recipients of a release: :func:`release_note`.

The note says in plain words what was released, by which method, under which guarantee (ε,
δ, the neighbouring relation and the unit protected), and the accuracy to expect, computed
from public quantities and the noise law alone: the noise scales the release's guarantee
file states (set by ε, δ and the declared bounds before any data was read), the number of
rows where it is public, and the schema. It reads **no private data**: only the release's
``.guarantee.json`` (and, for its size, the released table itself, which is public), so it
may be shared with the release. The custodian's quality report (``ppdp report``), which
compares the release with the private table, stays with the custodian.

Examples
--------
>>> from ppdp.evaluate import release_note
>>> note = release_note("synth.csv")  # doctest: +SKIP
>>> note.write("synth.note.md")  # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ppdp.budget import Guarantee, GuaranteeKind, Neighbouring
from ppdp.exceptions import ParameterError, ParameterTypeError

__all__ = ["ReleaseNote", "release_note"]

PathLike = str | os.PathLike[str]

#: The two-sided 95 % quantile of the standard normal and of the Laplace law (in scales).
_Z95 = 1.959964
_LAPLACE95 = math.log(20.0)

NO_PRIVATE_DATA = (
    "This note was written from the release's guarantee file and the released table alone "
    "(and the public schema where given): it reads no private data, is not itself a release "
    "and costs no privacy budget. It may be shared with the release."
)

#: Publishers that release one row per private row (their n is public: replace-one).
_ROW_ALIGNED = ("pca", "laplace", "exponential")

#: What each publisher releases, in plain words.
_WHAT = {
    "synth": "a synthetic table: rows drawn from a model fitted to noisy counts of the "
    "private table's columns and of chosen pairs of columns",
    "lda-synth": "a synthetic table: rows drawn per class from a Gaussian model fitted to the "
    "noisy class sizes, class sums and second moments of the private table",
    "pca": "a table of the same number of rows as the private one, reconstructed from a "
    "noisy principal-component projection of each row (DP-PCA)",
    "laplace": "a table of the same number of rows as the private one, each row with Laplace "
    "noise added to its encoded values (the LAP baseline)",
    "exponential": "a table of the same number of rows as the private one, each row replaced "
    "by a draw of the exponential mechanism around it (the EXP baseline)",
    "groupby": "counts and means per declared group, each with noise",
    "lda-projection": "a linear discriminant direction and, unless only the direction was "
    "released, each row's noisy projection on it (LDA-DP)",
}


@dataclass
class ReleaseNote:
    """A release note: a title and sections of plain text; render with :meth:`to_markdown` or
    :meth:`to_html`, write with :meth:`write`."""

    title: str
    sections: list[tuple[str, list[str]]] = field(default_factory=list)
    accuracy: list[dict[str, Any]] = field(default_factory=list)

    def to_markdown(self) -> str:
        """The note as Markdown."""
        out = [f"# {self.title}", ""]
        for head, paras in self.sections:
            out += [f"## {head}", ""]
            for p in paras:
                out += [p, ""]
            if head == "Accuracy to expect" and self.accuracy:
                out += ["| quantity | noise | ± at 95 % |", "|---|---|---|"]
                out += [f"| {a['quantity']} | {a['noise']} | {a['ci95']} |" for a in self.accuracy]
                out.append("")
        return "\n".join(out)

    def to_html(self) -> str:
        """The note as one self-contained HTML page (no script, nothing loaded)."""
        body = [f"<h1>{escape(self.title)}</h1>"]
        for head, paras in self.sections:
            body.append(f"<h2>{escape(head)}</h2>")
            body += [f"<p>{escape(p).replace('**', '')}</p>" for p in paras]
            if head == "Accuracy to expect" and self.accuracy:
                rows = "".join(
                    f"<tr><td>{escape(a['quantity'])}</td><td>{escape(a['noise'])}</td>"
                    f"<td>{escape(a['ci95'])}</td></tr>"
                    for a in self.accuracy
                )
                body.append(
                    "<table><tr><th>quantity</th><th>noise</th><th>± at 95 %</th></tr>"
                    f"{rows}</table>"
                )
        css = (
            "body{font-family:system-ui,sans-serif;max-width:46rem;margin:0 auto;padding:1rem;"
            "line-height:1.45}table{border-collapse:collapse}th,td{border:1px solid #ccc;"
            "padding:.25rem .5rem;text-align:left}"
        )
        return (
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(self.title)}</title><style>{css}</style></head><body>"
            + "".join(body)
            + "</body></html>\n"
        )

    def _repr_html_(self) -> str:
        return self.to_html()

    def write(self, path: PathLike, *, force: bool = False) -> Path:
        """Write the note to ``path`` (``.md`` or ``.html``/``.htm``), atomically; an
        existing file only with ``force``."""
        from ppdp._io import atomic_paths

        path = Path(path)
        text = _render_for(path, self)
        if path.exists() and not force:
            raise ParameterError(
                f"output ({str(path)!r}) exists: give --force (force=True) to replace it"
            )
        with atomic_paths(path) as (tmp,):
            tmp.write_text(text, encoding="utf-8")
        return path


def check_note_output(output: PathLike, release: PathLike, *, force: bool = False) -> None:
    """Refuse a note path that is not ``.md``/``.html``/``.htm``, that is the release or its
    guarantee file, or that exists (without ``force``): before anything is read."""
    from ppdp._io import check_output

    release = Path(os.fspath(release))
    side = release.with_name(release.name + ".guarantee.json")
    check_output(
        output,
        suffixes=(".md", ".html", ".htm"),
        inputs=[("release", release), ("release's guarantee file", side)],
        force=force,
    )


def _render_for(path: Path, note: ReleaseNote) -> str:
    suffix = path.suffix.lower()
    if suffix == ".md":
        return note.to_markdown()
    if suffix in (".html", ".htm"):
        return note.to_html()
    raise ParameterError(f"output ({str(path)!r}) must end in .md, .html or .htm")


# ---------------------------------------------------------------------------- words
def _number(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1e4 else f"{x:,.0f}"


def _guarantee_words(g: Guarantee, unit: str) -> list[str]:
    if not g.is_private:
        reason = "; ".join(g.assumptions) or "none stated"
        return [f"**This release carries no privacy guarantee** ({reason})."]
    change = (
        f"replacing any one {unit} by another (the number of {unit}s is public)"
        if g.relation is Neighbouring.REPLACE_ONE
        else f"adding or removing any one {unit}"
    )
    paras = [f"**{g.summary()}**."]
    if g.kind is GuaranteeKind.ZCDP:
        paras.append(
            f"The release is ρ-zero-concentrated differentially private with ρ = {g.rho:g}: "
            f"{change} changes the distribution of the release by at most that amount (a "
            "Rényi divergence of at most ρα at every order α)."
        )
        return paras
    eps = g.epsilon if g.epsilon is not None else float("nan")
    factor = f" ≈ {math.exp(eps):.3g}" if eps < 50 else ""
    text = (
        f"In plain words: {change} changes the probability of any result a recipient could "
        f"see by a factor of at most e^ε{factor} (ε = {eps:g})"
    )
    if g.delta:
        text += f", except with a probability of at most δ = {g.delta:g}"
    text += (
        ". So whatever a recipient learns from the release, they would have learnt nearly as "
        f"much had any one {unit} not been in the data. Smaller ε is stronger protection and "
        "more noise."
    )
    paras.append(text)
    if g.kind is GuaranteeKind.LOCAL:
        paras.append("The guarantee is local: each respondent's answer was randomised alone.")
    if g.assumptions:
        paras.append("The guarantee rests on: " + "; ".join(g.assumptions) + ".")
    return paras


# ---------------------------------------------------------------------------- accuracy
def _laplace(quantity: str, scale: float, per: str = "") -> dict[str, Any]:
    return {
        "quantity": quantity,
        "noise": f"Laplace, scale {_number(scale)}{per} (standard deviation "
        f"{_number(math.sqrt(2) * scale)})",
        "ci95": f"± {_number(_LAPLACE95 * scale)}",
    }


def _gauss(quantity: str, sigma: float) -> dict[str, Any]:
    return {
        "quantity": quantity,
        "noise": f"Gaussian, standard deviation {_number(sigma)}",
        "ci95": f"± {_number(_Z95 * sigma)}",
    }


Rows = list[dict[str, Any]]


def _acc_synth(d: dict[str, Any], n: int | None) -> tuple[Rows, list[str]]:
    rows = [_gauss("each cell count of a column's table (first round)", d["noise_scale"])]
    if d.get("sigma_edge_tables"):
        rows.append(_gauss("each cell count of a pair's table", d["sigma_edge_tables"]))
    if n:
        share = f"each cell's share of the {n:,} rows (first round)"
        rows.append(_gauss(share, d["noise_scale"] / n))
    words = [
        "The synthetic rows are drawn from a model fitted to these noisy counts: a share of "
        "rows in the release is as accurate as the noisy counts it comes from, at best; a "
        "share that depends on columns the model did not join may be further off."
    ]
    if d.get("edges"):
        kept = ", ".join(f"{a} × {b}" for a, b in d["edges"])
        words.append(f"The pairs of columns whose joint counts were measured: {kept}.")
    return rows, words


def _acc_groupby(d: dict[str, Any]) -> tuple[Rows, list[str]]:
    scale = d.get("count_sensitivity", 2) / d["epsilon_count"]
    rows = [_laplace("each group's count (discrete)", scale)]
    words = []
    e_mean = d.get("epsilon_per_mean")
    if d.get("mean_errors"):
        rows += _mean_error_rows(d["mean_errors"])
        words.append(
            "Each mean is a noisy sum over a noisy count: its expected error (one standard "
            "deviation, to first order, in the column's units) follows from both noises and "
            "the declared bounds, from the true mean at the midpoint of the bounds to the true "
            "mean at a bound, by the group's size (private: read it at the sizes you expect). "
            "The mean_<column>_sd column of the release gives each group's."
        )
    elif e_mean:  # a guarantee file written before the means' errors were stated
        words.append(
            "Each mean is a noisy sum over a noisy count. The sum of a column has discrete "
            f"Laplace noise of scale (its declared range)/{e_mean:.3g}, so a mean over m rows "
            f"has noise of scale range/({e_mean:.3g} × m), besides its count's: the "
            "mean_<column>_sd column of the release gives each group's."
        )
        for m in (10, 100, 1000):
            what = f"a mean over {m:,} rows, as a share of its column's range"
            rows.append(_laplace(what, 1 / (e_mean * m)))
    words.append(
        f"There are {d.get('groups', '?')} declared groups, empty ones included: a group with "
        "a small or negative noisy count says little."
    )
    return rows, words


def _mean_error_rows(terms: list[dict[str, Any]]) -> Rows:
    """A row per column of the means and group size: the mean's expected error
    (:func:`ppdp.accounting.plan.group_mean_errors`, the dry run's figures)."""
    from ppdp.accounting.plan import group_mean_errors

    charges = [SimpleNamespace(details={"mean_error": e}) for e in terms]
    k = _LAPLACE95 / math.sqrt(2)  # the 95 % quantile of Laplace noise, in its sd
    rows = []
    for column, errors in group_mean_errors(charges).items():
        for n, low, high in errors:
            rows.append(
                {
                    "quantity": f"the mean of {column} in a group of {n:,} rows",
                    "noise": "noisy sum over noisy count: expected error (one standard "
                    f"deviation) {_number(low)} to {_number(high)}",
                    "ci95": f"{_number(k * low)} to ± {_number(k * high)} (about: "
                    f"{k:.3g} standard deviations, as for Laplace noise)",
                }
            )
    return rows


def _acc_per_record(method: str, d: dict[str, Any]) -> tuple[Rows, list[str]]:
    scale = d["noise_scale"]
    mech = "Laplace noise" if method == "laplace" else "the exponential mechanism's draw"
    rows = [_laplace("each released value, as a share of its column's range", scale)]
    words = [
        f"Every row is released separately with {mech} on its values scaled to [0, 1] (scale "
        f"{_number(scale)} of the range), then clamped to the declared bounds and categories: "
        "at this scale a single released value says little about its row; averages over many "
        "rows are less noisy but biased by the clamping."
    ]
    return rows, words


def _acc_pca(d: dict[str, Any], n: int | None) -> tuple[Rows, list[str]]:
    s1, s2 = d["stage1"]["noise_scale"], d["stage2"]["noise_scale"]
    rows = [_laplace("each entry of the sums Σx and Σxxᵀ (encoded values)", s1)]
    if n:
        rows.append(_laplace("each entry of the covariance estimate (per row)", s1 / n))
    rows.append(_laplace("each row's projection on each component", s2))
    words = [
        f"The {d.get('n_components', '?')} components come from the noisy covariance; each row "
        "is then projected, given Laplace noise and reconstructed."
    ]
    return rows, words


def _acc_lda_synth(d: dict[str, Any]) -> tuple[Rows, list[str]]:
    what = "each class sum and second-moment entry (encoded values)"
    rows = [_laplace(what, d["sums"]["noise_scale"])]
    if d.get("epsilon_class_counts"):
        rows.append(_laplace("each class size", 2 / d["epsilon_class_counts"]))
    return rows, []


def _acc_lda_projection(d: dict[str, Any]) -> tuple[Rows, list[str]]:
    plan = d["plan"]
    rows = [
        _gauss("each class sum entry (rows scaled to norm ≤ 1)", plan["class_sum_sigma"]),
        _gauss("each scatter entry", plan["scatter_sigma"]),
    ]
    if d.get("release") == "noisy-projections" and d.get("epsilon_projections"):
        scale = 2 * d.get("n_components", 1) / d["epsilon_projections"]
        rows.append(_laplace("each row's projection (which lies in [−1, 1])", scale))
    return rows, []


def _accuracy(method: str, g: Guarantee, n: int | None) -> tuple[Rows, list[str]]:
    """Rows of the accuracy table and sentences, from the noise law the sidecar states."""
    d = g.details
    if method == "synth" and "noise_scale" in d:
        return _acc_synth(d, n)
    if method == "groupby" and "epsilon_count" in d:
        return _acc_groupby(d)
    if method in ("laplace", "exponential") and "noise_scale" in d:
        return _acc_per_record(method, d)
    if method == "pca" and "stage1" in d:
        return _acc_pca(d, n)
    if method == "lda-synth" and "sums" in d:
        return _acc_lda_synth(d)
    if method == "lda-projection" and "plan" in d:
        return _acc_lda_projection(d)
    return [], [
        "This release's guarantee file states no noise law this note can read; see its details."
    ]


# ---------------------------------------------------------------------------- entry point
def release_note(
    release: PathLike | dict[str, Any],
    *,
    schema: Any = None,
    rows: int | None = None,
) -> ReleaseNote:
    """A note for the recipients of ``release``, from public quantities only.

    Parameters
    ----------
    release : path or dict
        A released file or folder (its ``RELEASE.guarantee.json`` beside it is read, and the
        table itself for its number of rows), or the content of a guarantee file.
    schema : Schema or path, optional
        The public schema the release was made with: its columns are listed.
    rows : int, optional
        The number of released rows, when ``release`` is a guarantee file's content.

    Returns
    -------
    ReleaseNote

    Raises
    ------
    ParameterError
        The release has no guarantee file, or it is not readable.
    """
    name, side = _sidecar_of(release)
    if rows is None and not isinstance(release, dict):
        rows = _released_rows(Path(os.fspath(release)), side)
    from ppdp.evaluate.report import _guarantee

    g, _ = _guarantee(side)
    assert g is not None
    method = str(side.get("method", "unknown"))
    unit = str(side.get("unit") or g.details.get("unit") or "record (row)")
    what = _WHAT.get(method, f"a release of the method {method!r}")
    released = [f"**{name}**: {what}."]
    if rows is not None:
        released.append(f"It holds {rows:,} rows.")
    if schema is not None:
        released.append(_schema_words(schema))
    if side.get("seeded"):
        released.append(
            "**Its noise was seeded (reproducible): it is an experiment, not fit for a real "
            "release.**"
        )
    n_public = _public_n(g)
    if n_public is None and method in _ROW_ALIGNED and rows:
        n_public = rows  # one released row per private row, and n public (replace-one)
    acc_rows, acc_words = _accuracy(method, g, n_public)
    intro = (
        "Computed from the noise law and public quantities only (the noise scales the "
        "guarantee file states, set by ε, δ and the declared bounds before the data was read"
        + (f", and the public number of private rows, {n_public:,}" if n_public else "")
        + "). Intervals hold for each quantity on its own, at 95 %."
    )
    method_words = [f"Method: {g.mechanism or method} (ppdp publish {method})."]
    note = ReleaseNote(
        title=f"Release note: {name}",
        sections=[
            ("What was released", released),
            ("Method", method_words),
            ("Privacy guarantee", _guarantee_words(g, unit.split(" (")[0])),
            ("Accuracy to expect", [intro, *acc_words]),
            ("How this note was made", [NO_PRIVATE_DATA]),
        ],
        accuracy=acc_rows,
    )
    return note


def _sidecar_of(release: PathLike | dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if isinstance(release, dict):
        if not isinstance(release.get("guarantee"), dict):
            raise ParameterError("release (a dict) must be a guarantee file's content")
        return "the release", release
    if not isinstance(release, str | os.PathLike):
        raise ParameterTypeError(
            f"release ({type(release).__name__}) must be a path or a guarantee file's content"
        )
    from ppdp.evaluate.files import read_sidecar

    path = Path(os.fspath(release))
    side_path, side = read_sidecar(path)
    if side is None:
        raise ParameterError(
            f"release ({str(path)!r}) has no guarantee file ({side_path}): the note is written "
            "from it; restore it"
        )
    return path.name, side


def _released_rows(path: Path, side: dict[str, Any]) -> int | None:
    if side.get("rows") is not None:
        return int(side["rows"])
    if not path.is_file():
        return None
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(path).metadata.num_rows)
        except Exception:
            return None
    with path.open("rb") as fh:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    return max(lines - 1, 0)


def _public_n(g: Guarantee) -> int | None:
    """The number of private rows when the guarantee states it as public."""
    import re

    for a in g.assumptions:
        m = re.search(r"\bn = ([0-9][0-9,]*) public", a)
        if m:
            return int(m.group(1).replace(",", ""))
    plan = g.details.get("plan")
    if isinstance(plan, dict) and isinstance(plan.get("n"), int):
        return int(plan["n"])
    return None


def _schema_words(schema: Any) -> str:
    from ppdp.data import Schema

    if not isinstance(schema, Schema):
        schema = Schema.from_file(schema)
    names = list(schema.column_names)
    shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    return f"Its columns, declared in the public schema: {shown}."
