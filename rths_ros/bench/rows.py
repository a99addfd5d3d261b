"""Rows of the ``rths bench`` summary: one measured number per target, its verdict, and the tables.

A row is a plain dict (it goes into bench.json as it is)::

    {"id": "run.whole", "group": "run", "what": "...", "measured": 7.2, "unit": "s", "display": "7.20 s",
     "target": "<= 8 s", "op": "<=", "limit": 8.0, "met": True, "command": "rths run contact_1d --out DIR",
     "detail": "...", "reason": None, "shortened": False, "comparable": True}

``measured`` is a number, or None with ``reason`` saying why it was not measured.  ``met`` is
:func:`verdict` of measured against (op, limit): True/False, or None when there is no target, nothing was
measured, or the workload was shortened (``--quick``) so that an absolute target does not apply
(``comparable`` False; a ratio to real time stays comparable).
"""
from __future__ import annotations

import math

OPS = ("<=", ">=", "==")


def verdict(measured: float | None, op: str | None, limit: float | None) -> bool | None:
    """Whether ``measured op limit`` holds; None without a target or a measurement."""
    if op is None or limit is None or measured is None:
        return None
    if not isinstance(measured, (int, float)) or math.isnan(measured):
        return None
    if op == "<=":
        return bool(measured <= limit)
    if op == ">=":
        return bool(measured >= limit)
    if op == "==":
        return bool(measured == limit)
    raise ValueError(f"op: {op!r} is not allowed; expected one of {', '.join(OPS)}")


def _fmt(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}× real time" if value < 100 else f"{value:.0f}× real time"
    if unit == "Hz":
        return f"{value:.0f} Hz"
    if unit == "s":
        return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"
    if unit == "":
        return f"{value:g}"
    return f"{value:.3g} {unit}"


def target_text(op: str | None, limit: float | None, unit: str) -> str:
    if op is None or limit is None:
        return "–"
    sym = {"<=": "≤", ">=": "≥", "==": "="}[op]
    if unit == "x":
        return f"{sym} {limit:g}× real time"
    return f"{sym} {limit:g}{' ' + unit if unit else ''}"


def row(rid: str, what: str, measured: float | None, unit: str, *, op: str | None = None,
        limit: float | None = None, command: str = "", detail: str = "", reason: str | None = None,
        shortened: bool = False, comparable: bool = True, target: str | None = None,
        display: str | None = None) -> dict:
    """One summary row.  ``shortened``: the workload was cut (``--quick``), which the row shows; with
    ``comparable=False`` as well (an absolute wall time of a smaller workload) there is no verdict."""
    if measured is not None and (not isinstance(measured, (int, float)) or math.isnan(float(measured))):
        reason, measured = reason or f"no number ({measured!r})", None
    if measured is None and not reason:
        reason = "not measured"
    met = verdict(measured, op, limit)
    if shortened and not comparable:
        met = None
    return {"id": rid, "group": rid.split(".")[0], "what": what,
            "measured": None if measured is None else float(measured), "unit": unit,
            "display": display if (display and measured is not None) else
            (_fmt(float(measured), unit) if measured is not None else f"not measured: {reason}"),
            "target": target or target_text(op, limit, unit), "op": op, "limit": limit, "met": met,
            "command": command, "detail": detail, "reason": None if measured is not None else reason,
            "shortened": bool(shortened), "comparable": bool(comparable)}


def not_measured(rid: str, what: str, unit: str, reason: str, *, op: str | None = None,
                 limit: float | None = None, command: str = "", target: str | None = None) -> dict:
    return row(rid, what, None, unit, op=op, limit=limit, command=command, reason=reason, target=target)


def met_text(r: dict) -> str:
    if r["met"] is True:
        return "yes"
    if r["met"] is False:
        return "no"
    if r["measured"] is None:
        return "–"
    if r["shortened"] and not r["comparable"] and r["op"] is not None:
        return "– (shortened)"
    return "– (no target)"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_rows(rows: list[dict]) -> str:
    lines = ["| what | measured | target | met | command | notes |", "|---|---|---|---|---|---|"]
    for r in rows:
        what = r["what"] + (" (shortened)" if r["shortened"] else "")
        lines.append(f"| {_cell(what)} | {_cell(r['display'])} | {_cell(r['target'])} | {met_text(r)} | "
                     f"`{_cell(r['command'])}` | {_cell(r['detail'])} |" if r["command"] else
                     f"| {_cell(what)} | {_cell(r['display'])} | {_cell(r['target'])} | {met_text(r)} | – | "
                     f"{_cell(r['detail'])} |")
    return "\n".join(lines)


def text_rows(rows: list[dict]) -> str:
    """The rows for the terminal: what, measured, target, met; the command and notes indented below."""
    w = max((len(r["what"]) + (12 if r["shortened"] else 0) for r in rows), default=10)
    out = []
    for r in rows:
        what = r["what"] + (" (shortened)" if r["shortened"] else "")
        out.append(f"{what:<{w}}  {r['display']:<28}  target {r['target']:<22}  met {met_text(r)}")
        if r["command"]:
            out.append(f"{'':<{w}}  $ {r['command']}")
        if r["detail"]:
            out.append(f"{'':<{w}}  {r['detail']}")
    return "\n".join(out)


def counts(rows: list[dict]) -> dict:
    return {"rows": len(rows), "met": sum(r["met"] is True for r in rows),
            "not_met": sum(r["met"] is False for r in rows),
            "not_measured": sum(r["measured"] is None for r in rows),
            "no_verdict": sum(r["met"] is None and r["measured"] is not None for r in rows)}
