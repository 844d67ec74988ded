"""File writers, one per format, from neutral content (blocks, sheets, slides) to bytes.

Every writer returns bytes that depend only on its input: office zips are re-packed with fixed
member dates in a fixed order and fixed core properties, PDFs use reportlab's invariant mode,
mbox/ics/json carry the world's fixed dates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Block = tuple[str, object]
"""('h', str) heading | ('p', str) paragraph | ('table', list[list[str]]) first row is the header."""


@dataclass
class Sheet:
    name: str
    cells: dict[str, float | str] = field(default_factory=dict)
    """Plain values by A1 reference."""
    formulas: dict[str, tuple[str, float]] = field(default_factory=dict)
    """A1 -> (formula without '=', its value) written as formula plus cached value."""
    widths: dict[str, float] = field(default_factory=dict)


@dataclass
class Slide:
    title: str
    bullets: list[str] = field(default_factory=list)
    table: list[list[str]] | None = None
    chart: tuple[list[str], dict[str, list[float]]] | None = None
    """(categories, series name -> values): a clustered column chart."""
