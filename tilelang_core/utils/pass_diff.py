"""`pass_diff`: the IR before and after each pass of a chain, as a coloured terminal diff and/or a
self-contained HTML report (TileLang's `tilelang.utils.pass_diff`).

    pass_diff(func, tvm.tirx.transform.Simplify())                     # one pass, terminal
    pass_diff(func, [("Sync", tilelang.transform.ThreadSync("shared")), ...], mode="html",
              html_path="report.html")                                 # named chain, HTML

`passes` is one pass, or a list of passes or `(name, pass)` pairs; a pass is a TVM `Pass` (called
on an `IRModule`) or a callable taking and returning one. `func` is a `PrimFunc` (wrapped as the
module's "main") or an `IRModule`. Each step is a dict: `name`, `before_script`, `after_script`,
`diff_lines` (a unified diff with `context` lines around each change), `insertions`,
`deletions`, `changed`. `mode` is "terminal", "html" or "both".

The HTML report shows each pass as a section (collapsed when unchanged) with its hunks side by
side and the unchanged lines between them behind "Show N lines above/below" disclosures; a
toolbar expands or collapses every section and switches the dark/light theme.
"""
from __future__ import annotations

import difflib
import html
import re
from typing import Any

__all__ = ["pass_diff"]

_RED, _GREEN, _CYAN, _BOLD, _DIM, _RESET = "\033[91m", "\033[92m", "\033[96m", "\033[1m", "\033[2m", "\033[0m"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


# -- the diff -------------------------------------------------------------------------------------

def _to_mod(func_or_mod: Any) -> Any:
    import tvm

    return func_or_mod if isinstance(func_or_mod, tvm.IRModule) else tvm.IRModule({"main": func_or_mod})


def _compute_diff(before_lines: list[str], after_lines: list[str], context: int,
                  before_label: str = "before", after_label: str = "after") -> list[str]:
    """The unified diff of two line lists (no line terminators), `context` lines per hunk side."""
    return list(difflib.unified_diff(before_lines, after_lines, fromfile=before_label, tofile=after_label,
                                     lineterm="", n=context))


def _count_changes(diff_lines: list[str]) -> tuple[int, int]:
    """(insertions, deletions) of a unified diff; its `+++` / `---` file headers are not changes."""
    insertions = sum(1 for line in diff_lines if line.startswith("+") and not line.startswith("+++"))
    deletions = sum(1 for line in diff_lines if line.startswith("-") and not line.startswith("---"))
    return insertions, deletions


# -- terminal -------------------------------------------------------------------------------------

def _print_step_header(step_idx: int, total: int | str, name: str) -> None:
    bar = "=" * 60
    print(f"\n{_BOLD}{bar}\n  Pass {step_idx}/{total}: {name}\n{bar}{_RESET}")


def _print_colored_diff(diff_lines: list[str]) -> None:
    if not diff_lines:
        print(f"  {_DIM}(no changes){_RESET}")
        return
    for line in diff_lines:
        if line.startswith(("+++", "---")):
            color = _BOLD
        elif line.startswith("@@"):
            color = _CYAN
        elif line.startswith("+"):
            color = _GREEN
        elif line.startswith("-"):
            color = _RED
        else:
            color = ""
        print(f"{color}{line}{_RESET}" if color else line)


# -- rows for the HTML view -----------------------------------------------------------------------

def _parse_diff_into_rows(diff_lines: list[str], before_lines: list[str],
                          after_lines: list[str]) -> tuple[list[dict], list[dict]]:
    """(visible rows, expand sections). A row is {"type": "hunk" | "context" | "del" | "add",
    "left", "right", "left_num", "right_num"}; a deletion followed by insertions pairs up on one
    row side by side ("change"). An expand section holds the unchanged lines a hunk leaves out:
    above each hunk (position "before", direction "up") and below the last (position "after",
    direction "down")."""
    rows: list[dict] = []
    sections: list[dict] = []
    hunk_idx = -1
    left_done = 0  # lines of `before` shown so far (1-based line number of the last one)
    right_done = 0
    pending_del: list[dict] = []

    def flush() -> None:
        rows.extend(pending_del)
        pending_del.clear()

    left = right = 0
    for line in diff_lines:
        if line.startswith(("---", "+++")) and hunk_idx < 0:
            continue
        match = _HUNK_HEADER.match(line)
        if match:
            flush()
            hunk_idx += 1
            left, right = int(match.group(1)), int(match.group(3))
            start_left = left if match.group(2) != "0" else left + 1
            start_right = right if match.group(4) != "0" else right + 1
            gap = [(n, m) for n, m in zip(range(left_done + 1, start_left), range(right_done + 1, start_right))]
            if gap:
                sections.append(_section(hunk_idx, "before", "up", gap, before_lines, after_lines))
            rows.append({"type": "hunk", "left": line, "right": "", "left_num": None, "right_num": None})
            left, right = start_left, start_right
            continue
        if line.startswith("-"):
            pending_del.append({"type": "del", "left": line[1:], "right": "", "left_num": left, "right_num": None})
            left += 1
        elif line.startswith("+"):
            if pending_del:  # pair with the first unpaired deletion
                row = pending_del.pop(0)
                rows.append({**row, "type": "change", "right": line[1:], "right_num": right})
            else:
                rows.append({"type": "add", "left": "", "right": line[1:], "left_num": None, "right_num": right})
            right += 1
        else:
            flush()
            text = line[1:] if line.startswith(" ") else line
            rows.append({"type": "context", "left": text, "right": text, "left_num": left, "right_num": right})
            left += 1
            right += 1
        left_done, right_done = left - 1, right - 1
    flush()
    if hunk_idx >= 0:
        tail = [(n, m) for n, m in zip(range(left_done + 1, len(before_lines) + 1),
                                        range(right_done + 1, len(after_lines) + 1))]
        if tail:
            sections.append(_section(hunk_idx, "after", "down", tail, before_lines, after_lines))
    return rows, sections


def _section(hunk_idx: int, position: str, direction: str, numbers: list, before: list, after: list) -> dict:
    lines = [{"left": before[n - 1], "right": after[m - 1], "left_num": n, "right_num": m} for n, m in numbers]
    return {"hunk_idx": hunk_idx, "position": position, "direction": direction, "count": len(lines), "lines": lines}


def _split_rows_by_hunk(visible_rows: list[dict]) -> list[list[dict]]:
    """The rows grouped per hunk, each group starting at its "hunk" header row."""
    groups: list[list[dict]] = []
    for row in visible_rows:
        if row["type"] == "hunk" or not groups:
            groups.append([])
        groups[-1].append(row)
    return groups


def _cell(num: Any) -> str:
    return "" if num is None else str(num)


def _rows_to_html_table(rows: list[dict]) -> str:
    out = ['<table class="diff-table">']
    for row in rows:
        kind = row["type"]
        if kind == "hunk":
            out.append(f'<tr class="hunk"><td colspan="4">{html.escape(row["left"])}</td></tr>')
            continue
        left_class = {"del": "del", "change": "del"}.get(kind, "ctx" if kind == "context" else "empty")
        right_class = {"add": "add", "change": "add"}.get(kind, "ctx" if kind == "context" else "empty")
        out.append(
            f'<tr><td class="num">{_cell(row["left_num"])}</td><td class="code {left_class}">'
            f'{html.escape(row["left"])}</td><td class="num">{_cell(row["right_num"])}</td>'
            f'<td class="code {right_class}">{html.escape(row["right"])}</td></tr>')
    out.append("</table>")
    return "".join(out)


def _render_expand_details(expand_sections: list[dict]) -> dict[int, tuple[str, str]]:
    """hunk index -> (HTML of the lines hidden above it, of those hidden below it); "" where
    there are none."""
    rendered: dict[int, list[str]] = {}
    for section in expand_sections:
        where = "above" if section["position"] == "before" else "below"
        rows = [{"type": "context", **line} for line in section["lines"]]
        block = (f'<details class="expand-details"><summary>Show {section["count"]} lines {where}</summary>'
                 f'{_rows_to_html_table(rows)}</details>')
        slot = rendered.setdefault(section["hunk_idx"], ["", ""])
        slot[0 if section["position"] == "before" else 1] += block
    return {k: (v[0], v[1]) for k, v in rendered.items()}


# -- the HTML report ------------------------------------------------------------------------------

_STYLE = """
:root { --bg: #1e1e2e; --fg: #cdd6f4; --muted: #6c7086; --border: #45475a; --add: #1a2e1a; --del: #2e1a1e;
        --hunk: #1e3a5f; }
body.light { --bg: #ffffff; --fg: #1f2328; --muted: #6e7781; --border: #d0d7de; --add: #e6ffec; --del: #ffebe9;
             --hunk: #ddf4ff; }
body { background: var(--bg); color: var(--fg); font-family: sans-serif; margin: 0; }
.toolbar { position: sticky; top: 0; display: flex; gap: 8px; align-items: center; padding: 8px 16px;
           background: var(--bg); border-bottom: 1px solid var(--border); }
.pass-section { margin: 12px 16px; border: 1px solid var(--border); border-radius: 6px; }
.pass-section > summary { padding: 8px; cursor: pointer; font-weight: bold; }
.stats { color: var(--muted); font-weight: normal; }
.diff-table { width: 100%; border-collapse: collapse; font-family: monospace; font-size: 12px; table-layout: fixed; }
.diff-table td { padding: 0 6px; white-space: pre-wrap; word-break: break-all; vertical-align: top; }
.diff-table td.num { width: 3em; color: var(--muted); text-align: right; }
.diff-table td.add { background: var(--add); } .diff-table td.del { background: var(--del); }
.diff-table tr.hunk td { background: var(--hunk); color: var(--muted); }
.expand-details summary { color: var(--muted); cursor: pointer; padding: 2px 8px; font-size: 12px; }
"""

_SCRIPT = """
function setAll(open) { document.querySelectorAll('details.pass-section').forEach(d => d.open = open); }
function toggleTheme() {
  const light = document.body.classList.toggle('light');
  document.getElementById('theme-btn').textContent = light ? 'Dark' : 'Light';
}
"""


def _section_html(index: int, step: dict) -> str:
    before = step["before_script"].splitlines()
    after = step["after_script"].splitlines()
    rows, sections = _parse_diff_into_rows(step["diff_lines"], before, after)
    details = _render_expand_details(sections)
    body = []
    for k, hunk_rows in enumerate(_split_rows_by_hunk(rows)):
        above, below = details.get(k, ("", ""))
        body.append(above + _rows_to_html_table(hunk_rows) + below)
    if not rows:
        body.append('<p class="stats">(no changes)</p>')
    stats = (f"+{step['insertions']} / -{step['deletions']}" if step["changed"] else "no changes")
    opened = " open" if step["changed"] else ""
    return (f'<details class="pass-section"{opened}><summary>{index}. {html.escape(step["name"])} '
            f'<span class="stats">({stats})</span></summary>{"".join(body)}</details>')


def _generate_html(steps: list[dict], path: str) -> str:
    """Write the report of `steps` (pass_diff's step dicts) to `path`; returns `path`."""
    changed = sum(1 for s in steps if s["changed"])
    sections = "".join(_section_html(i + 1, step) for i, step in enumerate(steps))
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Pass Diff Report</title>'
        f"<style>{_STYLE}</style></head><body>"
        '<div class="toolbar"><strong>Pass Diff Report</strong>'
        f'<span class="stats">{len(steps)} passes, {changed} changed</span>'
        '<button onclick="setAll(true)">Expand All</button><button onclick="setAll(false)">Collapse All</button>'
        '<button id="theme-btn" onclick="toggleTheme()">Light</button></div>'
        f"{sections}<script>{_SCRIPT}</script></body></html>\n")
    with open(path, "w", encoding="utf-8") as out:
        out.write(page)
    return path


# -- the API --------------------------------------------------------------------------------------

def _pass_name(p: Any) -> str:
    info = getattr(p, "info", None)
    name = getattr(info, "name", None)
    return str(name) if name else getattr(p, "__name__", type(p).__name__)


def _named_passes(passes: Any) -> list[tuple[str, Any]]:
    items = passes if isinstance(passes, (list, tuple)) else [passes]
    named = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            named.append(item)
        elif callable(item):
            named.append((_pass_name(item), item))
        else:
            raise TypeError(f"pass_diff: expected a pass, a callable or a (name, pass) pair, got "
                            f"{type(item).__name__} {item!r}")
    return named


def pass_diff(func_or_mod: Any, passes: Any, mode: str = "terminal", html_path: str | None = None,
              context: int = 3) -> list[dict]:
    """Run `passes` in order on `func_or_mod` and report each one's change (see the module)."""
    if mode not in ("terminal", "html", "both"):
        raise ValueError(f"pass_diff: mode must be 'terminal', 'html' or 'both', got {mode!r}")
    if mode != "terminal" and not html_path:
        html_path = "pass_diff_report.html"
    mod = _to_mod(func_or_mod)
    named = _named_passes(passes)
    steps = []
    for index, (name, fn) in enumerate(named, start=1):
        before = mod.script()
        mod = fn(mod)
        after = mod.script()
        diff = _compute_diff(before.splitlines(), after.splitlines(), context)
        insertions, deletions = _count_changes(diff)
        steps.append({"name": name, "before_script": before, "after_script": after, "diff_lines": diff,
                      "insertions": insertions, "deletions": deletions, "changed": bool(insertions or deletions)})
        if mode in ("terminal", "both"):
            _print_step_header(index, len(named), name)
            _print_colored_diff(diff)
    if mode in ("html", "both"):
        _generate_html(steps, html_path)
        print(f"[pass_diff] HTML report: {html_path}")
    return steps
