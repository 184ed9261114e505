"""A dependency-free SVG bar chart of the speedups per category."""
from __future__ import annotations

from html import escape


def speedup_svg(rows: list[dict], title: str) -> str:
    w, h, left, bottom, top = 760, 380, 70, 90, 50
    vmax = max([r["speedup"] for r in rows] + [1.5]) * 1.15
    plot_w, plot_h = w - left - 20, h - top - bottom
    bw = plot_w / max(len(rows), 1)
    y = lambda v: top + plot_h - v / vmax * plot_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="28" text-anchor="middle" font-size="16">{escape(title)}</text>']
    for t in range(0, int(vmax * 2) + 1):
        v = t / 2
        out.append(f'<line x1="{left}" x2="{w - 20}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">{v:.1f}x</text>')
    for i, r in enumerate(rows):
        x = left + i * bw + bw * 0.15
        color = "#2a9d4b" if r["speedup"] >= 1.0 else "#c0392b"
        out.append(f'<rect x="{x:.1f}" y="{y(r["speedup"]):.1f}" width="{bw * 0.7:.1f}" '
                   f'height="{y(0) - y(r["speedup"]):.1f}" fill="{color}"/>'
                   f'<text x="{x + bw * 0.35:.1f}" y="{y(r["speedup"]) - 5:.1f}" text-anchor="middle" '
                   f'font-size="12">{r["speedup"]:.2f}x</text>'
                   f'<text x="{x + bw * 0.35:.1f}" y="{h - bottom + 18}" text-anchor="middle" font-size="11">'
                   f'{escape(r["label"][:28])}</text>'
                   f'<text x="{x + bw * 0.35:.1f}" y="{h - bottom + 34}" text-anchor="middle" font-size="10" '
                   f'fill="#555">{r["baseline_tok_s"]:.1f} -> {r["spec_tok_s"]:.1f} tok/s</text>')
    out.append(f'<line x1="{left}" x2="{w - 20}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="#333" '
               f'stroke-dasharray="4 3"/>')
    out.append("</svg>")
    return "\n".join(out)
