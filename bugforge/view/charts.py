"""Charts as inline SVG, drawn on the server: nothing for the browser to fetch. `bars` for counts and
rates, `lines` for curves over training steps."""

from __future__ import annotations

from html import escape

COLORS = ("#3b7dd8", "#e07b39", "#3fa66a", "#b0478f", "#8a6d3b", "#555")


def bars(items: list[tuple[str, float]], *, width: int = 420, fmt: str = "{:g}", total: float | None = None) -> str:
    """Horizontal bars, one per (label, value), longest value full width (or `total` when given: rates)."""
    if not items:
        return '<p class="muted">no data</p>'
    row, label_w, value_w = 20, 150, 70
    top = total or max(v for _, v in items) or 1
    inner = width - label_w - value_w
    parts = []
    for i, (label, value) in enumerate(items):
        y = i * row
        w = max(1.0, inner * value / top) if value else 0
        short = label if len(label) <= 24 else "…" + label[-23:]
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end"><title>{escape(label)}</title>{escape(short)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" fill="{COLORS[0]}" rx="2"/>'
            f'<text x="{label_w + w + 4:.1f}" y="{y + 14}">{escape(fmt.format(value))}</text>'
        )
    h = row * len(items)
    return (
        f'<svg class="chart" width="{width}" height="{h}" viewBox="0 0 {width} {h}" role="img">{"".join(parts)}</svg>'
    )


def _ticks(lo: float, hi: float) -> list[float]:
    if hi == lo:
        return [lo]
    return [lo + (hi - lo) * i / 4 for i in range(5)]


def _num(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 or v == int(v) else f"{v:.3g}"


def lines(series: dict[str, list[tuple[float, float]]], *, width: int = 460, height: int = 200) -> str:
    """One line per series over a shared x axis, with a legend; points are marked (short runs read)."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return '<p class="muted">no data</p>'
    left, right, top, bottom = 48, 10, 10, 36
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(0.0, min(p[1] for p in pts)), max(p[1] for p in pts)
    if y1 == y0:
        y1 = y0 + 1
    if x1 == x0:
        x1 = x0 + 1
    pw, ph = width - left - right, height - top - bottom
    sx = lambda x: left + pw * (x - x0) / (x1 - x0)
    sy = lambda y: top + ph * (1 - (y - y0) / (y1 - y0))
    out = [f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" class="axis"/>']
    for t in _ticks(y0, y1):
        out.append(
            f'<line x1="{left}" y1="{sy(t):.1f}" x2="{left + pw}" y2="{sy(t):.1f}" class="grid"/>'
            f'<text x="{left - 4}" y="{sy(t) + 4:.1f}" text-anchor="end">{_num(t)}</text>'
        )
    xticks = _ticks(x0, x1)
    if all(float(p[0]).is_integer() for p in pts) and x1 - x0 <= 4:
        xticks = [float(x) for x in range(int(x0), int(x1) + 1)]  # whole steps only
    for t in xticks:
        out.append(f'<text x="{sx(t):.1f}" y="{top + ph + 14}" text-anchor="middle">{_num(t)}</text>')
    for i, (name, s) in enumerate(series.items()):
        c = COLORS[i % len(COLORS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        if len(s) <= 60:
            out.extend(
                f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{c}"><title>{escape(name)} {x:g}: {y:g}</title></circle>'
                for x, y in s
            )
        lx = left + i * 150
        out.append(
            f'<rect x="{lx}" y="{height - 12}" width="10" height="10" fill="{c}"/>'
            f'<text x="{lx + 14}" y="{height - 3}">{escape(name)}</text>'
        )
    return f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">{"".join(out)}</svg>'
