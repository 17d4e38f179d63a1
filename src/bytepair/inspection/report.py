"""The HTML report of `bytepair inspect --html`: one self-contained file (no network: styles,
a few lines of script and the plots are inline, plots as data-URI images drawn by matplotlib)
with the summary tables, three plots (how often each merge fired on the sample, token lengths,
compression against the compared tokenizers) and the start of the sample with each token in
`<span data-id="ID">`, its id and bytes on hover. Needs `pip install 'bytepair[inspect]'`.
"""

from __future__ import annotations

import base64
import html
import io
import os
from typing import TYPE_CHECKING

import numpy as np

from .._atomic import write_atomic
from ..decoding import visible
from .figures import Inspection
from .show import PALETTE, require
from .summary import Table, length_histogram, n_tokens, tables

if TYPE_CHECKING:  # matplotlib loads only when a report is written
    from matplotlib.figure import Figure

#: Fonts that cover CJK, Thai and the other scripts of a sample, where the page's default would
#: draw boxes; the first installed one wins, per character.
_SANS = (
    'system-ui, "Noto Sans", "Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans SC", '
    '"PingFang SC", "Hiragino Sans", "Microsoft YaHei", "Noto Sans Thai", sans-serif'
)
_MONO = (
    'ui-monospace, "DejaVu Sans Mono", "Noto Sans Mono", "Noto Sans Mono CJK SC", '
    '"Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", monospace'
)
_CSS = """
body { font: 14px/1.45 SANS; margin: 24px auto; max-width: 1200px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; } caption { text-align: left; color: #666; }
td, th { border: 1px solid #ccc; padding: 2px 8px; } th { background: #f2f2f2; }
td.r { text-align: right; font-variant-numeric: tabular-nums; }
td.l { font-family: MONO; white-space: pre; }
.tables { display: flex; flex-wrap: wrap; gap: 0 32px; align-items: flex-start; }
.plots img { max-width: 100%; }
pre.sample { white-space: pre-wrap; overflow-wrap: anywhere; font: 14px/1.9 MONO;
  border: 1px solid #ccc; padding: 10px; }
pre.sample span { color: #000; border-radius: 2px; }
pre.sample span:hover { outline: 2px solid #333; }
pre.sample b { color: #b00020; }
#info { position: sticky; top: 0; padding: 4px 8px; font-family: MONO; min-height: 1.4em;
  color: #888; background: #fff; border: 1px dashed #ccc; }
#info.on { color: #222; background: #fffbe6; border: 1px solid #e0c060; }
""".replace("SANS", _SANS).replace("MONO", _MONO)
#: Before any hover, the panel says what it is for, in grey, instead of an empty yellow box.
_INFO_HINT = "hover over a token: its id and bytes show here"
_SCRIPT = """
document.querySelector("pre.sample").addEventListener("mouseover", (e) => {
  const t = e.target.closest("span[data-id]");
  if (t) {
    const info = document.getElementById("info");
    info.textContent = t.title;
    info.className = "on";
  }
});
"""


def write_report(ins: Inspection, path: str | os.PathLike[str], top: int = 10) -> None:
    """Writes the report to `path` atomically (a temp file beside it, then a rename)."""
    write_atomic(path, render(ins, tables(ins, top)))


def render(ins: Inspection, summary: list[Table]) -> str:
    """The report as one HTML string."""
    require("matplotlib", "bytepair inspect --html")
    e = html.escape
    title = f"bytepair inspect: {ins.name}"
    parts = [
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>",
        f"<style>{_CSS}{_palette_css()}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f"<p>vocabulary {n_tokens(ins):,} tokens; samples: "
        f"{e(', '.join(r.source for r in ins.compression[ins.name] if r.source != 'all'))}</p>",
        "<h2>Summary</h2><div class='tables'>",
        *(_table(t) for t in summary if t.rows),
        "</div><h2>Plots</h2><div class='plots'>",
        *_plots(ins),
        "</div><h2>The sample, token by token</h2>",
        f"<p>The first {len(ins.excerpt):,} tokens of the first sample "
        f"({_bytes(int(ins.token_lengths[ins.excerpt].sum()) if ins.excerpt else 0)}); "
        f"hover over a token for its id and bytes. Red: bytes that are not a whole character, "
        f"and unprintable characters.</p>",
        f"<div id='info'>{_INFO_HINT}</div>",
        f"<pre class='sample'>{_spans(ins)}</pre>",
        f"<script>{_SCRIPT}</script></body></html>\n",
    ]
    return "\n".join(parts)


def _palette_css() -> str:
    return "".join(f"pre.sample .c{k} {{ background: {c}; }}\n" for k, c in enumerate(PALETTE))


def _table(table: Table) -> str:
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td class='{a}'>{e(v)}</td>" for v, a in zip(row, table.align, strict=True))
        + "</tr>"
        for row in table.rows
    )
    caption = f"<caption>{e(table.note)}</caption>" if table.note else ""
    return f"<div><h3>{e(table.title)}</h3><table>{caption}<tr>{head}</tr>{body}</table></div>"


def _spans(ins: Inspection) -> str:
    """Each token of the excerpt as `<span data-id>`; escapes in <b>, newlines as ↵ + a break."""
    out = []
    for n, token_id in enumerate(ins.excerpt):
        raw = ins.tok.id_to_token(token_id)
        inner = "".join(
            f"<b>{html.escape(p)}</b>" if esc else html.escape(p).replace("\n", "↵\n")
            for p, esc in visible(raw)
        )
        hover = f"id {token_id} · {_bytes(len(raw))} · {raw.hex(' ')}"
        out.append(
            f"<span data-id='{token_id}' class='c{n % len(PALETTE)}' title='{hover}'>{inner}</span>"
        )
    return "".join(out)


def _bytes(n: int) -> str:
    """`1 byte`, `2 bytes`."""
    return f"{n:,} byte{'s' * (n != 1)}"


def _image(fig: Figure, fmt: str) -> str:
    """A matplotlib figure as an <img> with a data URI (PNG for dense plots, else SVG); the same
    inspection gives the same bytes (no date, fixed SVG ids)."""
    from matplotlib import rc_context

    buf = io.BytesIO()
    meta = {"Date": None} if fmt == "svg" else {}
    with rc_context({"svg.hashsalt": "bytepair"}):
        fig.savefig(buf, format=fmt, bbox_inches="tight", dpi=110, metadata=meta)
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return f"<img alt='' src='data:{mime};base64,{base64.b64encode(buf.getvalue()).decode()}'>"


def _plots(ins: Inspection) -> list[str]:
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    fig = Figure(figsize=(11, 3.6))
    ax = fig.subplots()
    index = np.arange(len(ins.applications))
    made = ins.applications > 0
    kept = ins.counts[ins.merge_ids]
    ax.scatter(index[made], ins.applications[made], s=2, alpha=0.5, label="times applied")
    ax.scatter(index[kept > 0], kept[kept > 0], s=2, alpha=0.5, label="token kept in the output")
    ax.set(xlabel="merge index", ylabel="count on the sample")
    if made.any():  # a log scale of nothing fails
        ax.set_yscale("log")
    ax.set_title(
        f"Merge frequency by merge index ({np.count_nonzero(~made):,} merges never applied)"
    )
    ax.legend(markerscale=5)
    images = [_image(fig, "png")]

    labels, in_vocab, in_sample = length_histogram(ins)
    fig = Figure(figsize=(11, 3.2))
    left, right = fig.subplots(1, 2)
    left.bar(labels, in_vocab, color="#4c72b0")
    left.set(title="Token lengths in the vocabulary", xlabel="bytes", ylabel="tokens")
    right.bar(labels, in_sample / max(in_sample.sum(), 1), color="#dd8452")
    right.set(title="Token lengths on the sample", xlabel="bytes", ylabel="share of tokens")
    images.append(_image(fig, "svg"))
    images.append(_image(_compression_figure(ins), "svg"))
    return images


def _compression_figure(ins: Inspection) -> Figure:
    from matplotlib.figure import Figure

    names = list(ins.compression)
    sources = [r.source for r in ins.compression[ins.name]]
    fig = Figure(figsize=(11, 0.6 + 0.35 * len(names) * len(sources) + 1.2))
    left, right = fig.subplots(1, 2)
    height = 0.8 / len(names)
    for k, name in enumerate(names):
        rows = ins.compression[name]
        y = np.arange(len(rows)) + k * height
        left.barh(y, [r.bytes_per_token for r in rows], height, label=name)
        right.barh(y, [r.tokens_per_word for r in rows], height, label=name)
    for ax, what in ((left, "bytes per token (higher is better)"), (right, "tokens per word")):
        ax.set_yticks(
            np.arange(len(sources)) + 0.4 - height / 2, [os.path.basename(s) for s in sources]
        )
        ax.invert_yaxis()
        ax.set_xlabel(what)
    # below the plots, not on them: inside, it covered the bars of the last tokenizer
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=len(names))
    fig.suptitle("Compression against the compared tokenizers")
    return fig
