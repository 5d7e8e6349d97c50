"""Templates (Jinja2, package data under templates/) and highlighting (Pygments, on the server):
diffs unified or side by side, code and JSON."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer, DiffLexer, JsonLexer, PythonLexer

from bugforge.view import charts

HERE = Path(__file__).parent
FORMATTER = HtmlFormatter(cssclass="hl", nowrap=False)


def css() -> str:
    return FORMATTER.get_style_defs(".hl")


def diff(text: str) -> Markup:
    return Markup(highlight(text or "", DiffLexer(), FORMATTER)) if text else Markup('<p class="muted">(empty)</p>')


def code(text: str, lang: str = "bash") -> Markup:
    lexer = {"bash": BashLexer, "json": JsonLexer, "python": PythonLexer}.get(lang, BashLexer)()
    return Markup(highlight(text or "", lexer, FORMATTER))


def side_by_side(text: str) -> Markup:
    """A diff as a two-column table per file: old lines left, new lines right, changes paired up."""
    rows: list[str] = []
    old: list[str] = []
    new: list[str] = []

    def flush():
        for i in range(max(len(old), len(new))):
            a = old[i] if i < len(old) else None
            b = new[i] if i < len(new) else None
            rows.append(
                f'<tr><td class="{"del" if a is not None else "none"}">{escape(a or "")}</td>'
                f'<td class="{"add" if b is not None else "none"}">{escape(b or "")}</td></tr>'
            )
        old.clear()
        new.clear()

    in_hunk = False
    for line in (text or "").splitlines():
        if line.startswith("diff "):
            in_hunk = False
        if not in_hunk and line.startswith(("---", "+++", "diff ", "index ")):
            flush()
            if line.startswith("+++"):
                rows.append(f'<tr><th colspan="2">{escape(line[4:].removeprefix("b/"))}</th></tr>')
        elif line.startswith("@@"):
            in_hunk = True
            flush()
            rows.append(f'<tr><td colspan="2" class="hunk">{escape(line)}</td></tr>')
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            flush()
            rows.append(f"<tr><td>{escape(line[1:])}</td><td>{escape(line[1:])}</td></tr>")
    flush()
    return Markup(f'<table class="sbs">{"".join(rows)}</table>')


def rates(rows: list[tuple[str, int, int]]) -> list[tuple[str, float]]:
    """(label with counts, rate) for bars of (value, resolved, submitted) rows."""
    return [(f"{k} ({a}/{n})", a / n) for k, a, n in rows if n]


def url(route: str, **params) -> str:
    return route + ("?" + urlencode({k: v for k, v in params.items() if v not in (None, "")}) if params else "")


@lru_cache(maxsize=1)
def env() -> Environment:
    e = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    e.globals.update(
        url=url, diff=diff, code=code, side_by_side=side_by_side, rates=rates, bars=charts.bars, lines=charts.lines
    )
    e.filters["svg"] = lambda s: Markup(s)
    e.filters["pct"] = lambda a, n: f"{a / n:.0%}" if n else "-"
    return e


def page(template: str, **context) -> str:
    return env().get_template(template).render(**context)
