"""The cast of a world: the firm, its people, its clients and its projects.

A project is a deal (Investment Banking), a matter (Law) or an engagement (Management
Consulting). Every project carries one `Table` (metrics x periods) and named scalar `Fact`s; the
domain modules in `kwrl.synth.domains` fill them, the writers render them, and the task families
ask about them, so a figure in a deck is the figure in the model it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kwrl.synth.names import (
    CITIES,
    COMPANY_STEMS,
    COMPANY_SUFFIX,
    FIRM_SUFFIX,
    FIRST_NAMES,
    LAST_NAMES,
    SECTORS,
)
from kwrl.synth.rng import Rng


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    title: str
    email: str
    handle: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass(frozen=True)
class Company:
    name: str
    short: str
    sector: str
    city: str
    email_domain: str


@dataclass(frozen=True)
class Fact:
    """One named scalar: `value` is a float (money, days, %) or a string (a date, a law)."""

    key: str
    label: str
    value: float | str
    unit: str = ""
    """'$m', '$k', '$', '%', 'days', 'months', 'hours', 'x' or '' (text)."""

    @property
    def text(self) -> str:
        return fmt(self.value, self.unit)


@dataclass
class Table:
    """Metrics (rows) by periods (columns); `units[row]` as in `Fact.unit`."""

    title: str
    periods: list[str]
    rows: dict[str, list[float]]
    units: dict[str, str]

    def get(self, row: str, period: str) -> float:
        return self.rows[row][self.periods.index(period)]


@dataclass
class Clause:
    """A contract clause and the firm playbook's verdict on it."""

    number: str
    name: str
    text: str
    compliant: bool
    policy: str


@dataclass
class Project:
    code: str
    """Code name, e.g. 'Project Amber Falcon'."""
    kind: str
    """'deal' | 'matter' | 'engagement'."""
    client: Company
    counterparty: Company
    lead: Person
    team: list[Person]
    table: Table
    facts: dict[str, Fact]
    clauses: list[Clause] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    """role -> model-facing path ('/Deals/.../model.xlsx'), filled by the world builder."""
    channel: str = ""
    """Chat channel of the project team."""

    @property
    def short(self) -> str:
        return self.code.removeprefix("Project ")


def fmt(value: float | str, unit: str) -> str:
    """The canonical text of a figure, as the files print it and the gold answers quote it."""
    if isinstance(value, str):
        return value
    if unit == "$m":
        return f"${value:,.1f}m"
    if unit == "$bn":
        return f"${value:,.2f}bn"
    if unit == "$k":
        return f"${value:,.1f}k"
    if unit == "$":
        return f"${value:,.0f}"
    if unit == "%":
        return f"{value:.1f}%"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "$ps":
        return f"${value:,.2f}"
    if unit == "m":
        return f"{value:,.1f}m"
    if unit in ("days", "months", "hours"):
        return f"{value:,.0f} {unit}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def person(rng: Rng, title: str, email_domain: str, used: set[str]) -> Person:
    while True:
        first, last = rng.pick(FIRST_NAMES), rng.pick(LAST_NAMES)
        if f"{first} {last}" not in used:
            used.add(f"{first} {last}")
            break
    handle = f"{first}.{last}".lower()
    return Person(first, last, title, f"{handle}@{email_domain}", handle)


def company(rng: Rng, domain: str, used: set[str], *, firm: bool = False) -> Company:
    suffixes = FIRM_SUFFIX[domain] if firm else COMPANY_SUFFIX[domain]
    while True:
        stem = rng.pick(COMPANY_STEMS)
        if firm:
            name = f"{stem} {rng.pick(suffixes)}"
        else:
            word = rng.pick(("", "", rng.pick(SECTORS[domain]).split()[0]))
            name = " ".join(p for p in (stem, word, rng.pick(suffixes)) if p)
        if stem not in used:
            used.add(stem)
            break
    sector = rng.pick(SECTORS[domain])
    return Company(name, stem, sector, rng.pick(CITIES), f"{stem.lower()}.example.com")
