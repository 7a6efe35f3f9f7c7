"""The SVG chart: server CPU µs per request, one bar per case, log scale."""

from __future__ import annotations

import math
from pathlib import Path

from lab import MIXED_CONNECTIONS
from measure import Case
from report import fmt_us, median

MODE_COLOURS = {"bare": "#4e79a7", "catch-panic": "#f28e2b", "naive": "#e15759", "faultline": "#59a14f"}
# Geometry, in pixels: the label column, the bars' full width, one bar and the gap below it,
# and where the first row starts (below the title and the legend).
LEFT, WIDTH, BAR_H, GAP, TOP = 110, 560, 16, 4, 56


def chart_rows(cases: list[Case], mixed_cpu: float | None) -> list[tuple]:
    """("group", heading) and ("bar", label, mode, µs) rows, grouped by route."""
    rows = []
    last_group = None
    for c in cases:
        if c.group != last_group:
            rows.append(("group", c.group))
            last_group = c.group
        label = c.path if c.group == "/small, /huge" else c.mode
        rows.append(("bar", label, c.mode, median([r["cpu_us"] for r in c.results])))
    if mixed_cpu is not None:
        rows.append(("group", f"mixed 70% /ok, 25% /handled, 5% /panic at {MIXED_CONNECTIONS} connections"))
        rows.append(("bar", "faultline", "faultline", mixed_cpu))
    return rows


def write_svg(path: Path, cases: list[Case], mixed_cpu: float | None) -> None:
    """A horizontal bar chart of server CPU µs per request, log scale, one bar per case,
    grouped by route under a heading of their own."""
    rows = chart_rows(cases, mixed_cpu)
    values = [r[3] for r in rows if r[0] == "bar" and r[3] > 0]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    height = TOP + sum(24 if r[0] == "group" else BAR_H + GAP for r in rows) + 36
    total_w = LEFT + WIDTH + 80

    def x(v):
        return LEFT + WIDTH * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{total_w}" height="{height}" fill="white"/>',
           '<text x="10" y="20" font-size="14" font-weight="bold">Server CPU µs per request '
           '(median of repetitions, log scale; shorter is cheaper)</text>']
    out += legend()
    axis_bottom = height - 28
    decade = lo
    while decade <= hi:
        gx = x(decade)
        out.append(f'<line x1="{gx:.1f}" y1="{TOP}" x2="{gx:.1f}" y2="{axis_bottom}" stroke="#ddd"/>'
                   f'<text x="{gx:.1f}" y="{axis_bottom + 14}" text-anchor="middle">{decade:g} µs</text>')
        decade *= 10
    y = TOP
    for r in rows:
        if r[0] == "group":
            y += 18
            out.append(f'<text x="10" y="{y}" font-weight="bold">{r[1]}</text>')
            y += 6
            continue
        _, label, mode, v = r
        out.append(f'<text x="{LEFT - 8}" y="{y + 12}" text-anchor="end">{label}</text>'
                   f'<rect x="{LEFT}" y="{y}" width="{max(x(v) - LEFT, 1):.1f}" height="{BAR_H}" '
                   f'fill="{MODE_COLOURS[mode]}"/>'
                   f'<text x="{x(v) + 4:.1f}" y="{y + 12}">{fmt_us(v)}</text>')
        y += BAR_H + GAP
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def legend() -> list[str]:
    """One coloured square per mode, in a row under the title."""
    out = []
    lx = LEFT
    for mode, colour in MODE_COLOURS.items():
        out.append(f'<rect x="{lx}" y="32" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{lx + 14}" y="41">{mode}</text>')
        lx += 110
    return out
