"""Whether a run's analysis draws its figures.

``rths run --no-plots`` and ``rths analyze --no-plots`` compute and write the same metrics.json and report.md
without the figures (PNG, the gait's stick-figure GIF): about 2 s less per run on a 2-core machine (the plotting
library's import and four figures), for batches of runs whose numbers are what is read.  The report and the
printed summary say that the figures were not drawn.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["enabled", "disabled", "plots_line", "not_drawn_lines", "NOT_DRAWN"]

NOT_DRAWN = "not drawn (--no-plots)"
_enabled = True


def enabled() -> bool:
    """True unless figures are switched off (:func:`disabled`)."""
    return _enabled


@contextlib.contextmanager
def disabled(off: bool = True) -> Iterator[None]:
    """Within the block, analyses draw no figures (when ``off``)."""
    global _enabled
    before = _enabled
    _enabled = before and not off
    try:
        yield
    finally:
        _enabled = before


def plots_line(plots: Sequence[Path], *extra: Path | None) -> str:
    """The summary's ``plots  :`` line."""
    names = [p.name for p in plots] + [p.name for p in extra if p is not None]
    return f"plots  : {', '.join(names) if names else NOT_DRAWN}"


def not_drawn_lines(plots: Sequence[Path]) -> list[str]:
    """The report's lines that say the figures were switched off (none when figures were drawn or are on)."""
    return [] if plots or _enabled else [f"Figures {NOT_DRAWN}.", ""]
