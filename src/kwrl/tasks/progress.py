"""A rich progress bar for long data jobs, or a no-op when output is not wanted (tests, --quiet).

`progress_bar(enabled, label, total)` yields `advance(n)`; the bar goes to stderr so stdout stays
machine-readable (`kwrl data stats --json`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(
    enabled: bool, label: str, total: int | None = None
) -> Iterator[Callable[[int], None]]:
    if not enabled:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as p:
        task = p.add_task(label, total=total)
        yield lambda n: p.advance(task, n)
