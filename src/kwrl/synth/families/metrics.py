"""Derived metrics of a project: growth, margins, multiples, shares, with where their inputs live.

A `Metric` carries its value, the inputs it is computed from (each with the file that holds it)
and the read calls that reach those files, so every family that asks for a computation (answer,
memo, sheet, deck, mail) states the same number and the gold solution reads the same files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kwrl.synth.cast import Project
from kwrl.synth.families.base import (
    Call,
    cagr,
    change_word,
    fact_file,
    label_unit,
    number_form,
    number_slot,
    read_call,
    read_tab,
    table_file,
)
from kwrl.synth.world import World, mail_only_fact
from kwrl.tasks.models import SlotCheck


@dataclass
class Metric:
    key: str
    label: str
    value: float
    unit: str
    """'%' or 'x'."""
    inputs: list[tuple[str, float, str]]
    """(label, value, where) for each input; `where` is a path, 'mail' or 'computed'."""
    calls: list[Call]

    def slot(self, **kw: Any) -> SlotCheck:
        """The value in its slot line `<label>: <value>` (as `check`: two decimals)."""
        return SlotCheck(
            label=self.label, type="number", value=round(self.value, 6), rel_tol=0.005,
            abs_tol=0.05 if self.unit == "%" else 0.005, scale=0.01 if self.unit == "%" else None,
            decimals=2, **kw,
        )  # fmt: skip

    def input_slots(self, n: int | None = None, **kw: Any) -> list[SlotCheck]:
        """The inputs' slot lines `<input label>: <value>` (the first `n`)."""
        return [number_slot(label, v, label_unit(label), **kw) for label, v, _ in self.inputs[:n]]

    @property
    def form(self) -> str:
        return (
            "percentage, two decimals"
            if self.unit == "%"
            else "multiple, two decimals (e.g. 7.25x)"
        )

    def prompt_lines(self, n: int | None = None) -> list[tuple[str, str]]:
        """(label, form) of the metric's slot line and its inputs' (the first `n`)."""
        return [(self.label, self.form)] + [
            (label, number_form(label_unit(label))) for label, _, _ in self.inputs[:n]
        ]

    @property
    def text(self) -> str:
        return f"{self.value:.2f}{self.unit}" if self.unit == "x" else f"{self.value:.2f}%"


def _calls(*paths: str) -> list[Call]:
    seen: list[str] = []
    for p in paths:
        if p not in seen:
            seen.append(p)
    return [read_call(p) for p in seen]


def metrics(w: World, p: Project) -> list[Metric]:
    """The metrics a compute task may ask for in `w`'s domain, each with its inputs and the calls
    that read them."""
    per_domain = {"Investment Banking": _banking_metrics, "Law": _law_metrics}
    return per_domain.get(w.domain, _consulting_metrics)(w, p, table_file(w, p))


def _banking_metrics(w: World, p: Project, model: str) -> list[Metric]:
    t, f = p.table, p.facts
    first, last = t.periods[0], t.periods[-1]
    years = len(t.periods) - 1
    out: list[Metric] = []
    memo = fact_file(w, p, "offer_ev")
    assert memo
    for row in ("Revenue", "EBITDA"):
        a, b = t.get(row, first), t.get(row, last)
        out.append(
            Metric(
                f"{row.lower()}_cagr",
                f"{first}-{last} {row} CAGR",
                cagr(a, b, years),
                "%",
                [(f"{first} {row} ($m)", a, model), (f"{last} {row} ($m)", b, model)],
                _calls(model),
            )
        )
    ev, e24 = float(f["offer_ev"].value), t.get("EBITDA", t.periods[-2])
    out.append(
        Metric(
            "ev_ebitda_prev",
            f"offer EV / {t.periods[-2]} EBITDA multiple",
            ev / e24,
            "x",
            [
                ("Offer enterprise value ($m)", ev, memo),
                (f"{t.periods[-2]} EBITDA ($m)", e24, model),
            ],
            _calls(memo, model),
        )
    )
    nd, e25 = float(f["net_debt"].value), t.get("EBITDA", last)
    out.append(
        Metric(
            "leverage",
            f"net debt / {last} EBITDA leverage",
            nd / e25,
            "x",
            [("Net debt ($m)", nd, memo), (f"{last} EBITDA ($m)", e25, model)],
            _calls(memo, model),
        )
    )
    ni, rv = t.get("Net Income", last), t.get("Revenue", last)
    out.append(
        Metric(
            "ni_margin",
            f"{last} net income margin",
            ni / rv * 100,
            "%",
            [(f"{last} Net Income ($m)", ni, model), (f"{last} Revenue ($m)", rv, model)],
            _calls(model),
        )
    )
    return out


def _law_metrics(w: World, p: Project, model: str) -> list[Metric]:
    t, f = p.table, p.facts
    first, last = t.periods[0], t.periods[-1]
    out: list[Metric] = []
    a, b = t.get("Fees billed", first), t.get("Fees billed", last)
    out.append(
        Metric(
            "fees_change",
            f"{first} to {last} {change_word((b / a - 1) * 100)[0]} in fees billed",
            change_word((b / a - 1) * 100)[1],
            "%",
            [(f"{first} fees billed ($k)", a, model), (f"{last} fees billed ($k)", b, model)],
            _calls(model),
        )
    )
    total, budget = sum(t.rows["Fees billed"]), float(f["budget"].value)
    out.append(
        Metric(
            "budget_used",
            "share of the approved fee budget already billed",
            total / budget * 100,
            "%",
            [
                ("Total fees billed ($k)", total, model),
                ("Approved fee budget ($k)", budget, model),
            ],
            [read_tab(model, 1)],  # the Law model's Summary tab
        )
    )
    complaint, contract = fact_file(w, p, "damages"), fact_file(w, p, "contract_value")
    assert complaint and contract
    dmg, acv = float(f["damages"].value), float(f["contract_value"].value)
    out.append(
        Metric(
            "damages_multiple",
            "damages claimed as a multiple of the annual contract value",
            dmg / acv,
            "x",
            [
                ("Damages claimed ($m)", dmg, complaint),
                ("Annual contract value ($m)", acv, contract),
            ],
            _calls(complaint, contract),
        )
    )
    so = float(f[mail_only_fact(w)].value)
    mail = next(m for m in w.mails if m.subject == f"{p.code}: latest from the other side")
    out.append(
        Metric(
            "settlement_pct",
            "settlement offer as a percentage of damages claimed",
            so / dmg * 100,
            "%",
            [("Settlement offer ($m)", so, "mail"), ("Damages claimed ($m)", dmg, complaint)],
            [Call("mail_read_mail", {"mail_id": mail.message_id}), read_call(complaint)],
        )
    )
    return out


def _consulting_metrics(w: World, p: Project, model: str) -> list[Metric]:
    t, f = p.table, p.facts
    first, last = t.periods[0], t.periods[-1]
    years = len(t.periods) - 1
    out: list[Metric] = []
    tot = [sum(t.rows[r][j] for r in t.rows) for j in range(len(t.periods))]
    out.append(
        Metric(
            "total_cagr",
            f"{first}-{last} total revenue CAGR (all regions)",
            cagr(tot[0], tot[-1], years),
            "%",
            [
                (f"{first} total revenue ($m)", tot[0], model),
                (f"{last} total revenue ($m)", tot[-1], model),
            ],
            _calls(model),
        )
    )
    market = fact_file(w, p, "market_size")
    prop = fact_file(w, p, "fee")
    assert market and prop
    ms = float(f["market_size"].value)
    out.append(
        Metric(
            "market_share",
            f"{last} market share (total revenue / addressable market)",
            tot[-1] / (ms * 1000) * 100,
            "%",
            [
                (f"{last} total revenue ($m)", tot[-1], model),
                ("Addressable market ($bn)", ms, market),
            ],
            _calls(model, market),
        )
    )
    fee, sav = float(f["fee"].value), float(f["savings_target"].value)
    out.append(
        Metric(
            "fee_pct",
            "engagement fee as a percentage of the cost savings target",
            fee / (sav * 1000) * 100,
            "%",
            [("Engagement fee ($k)", fee, prop), ("Cost savings target ($m)", sav, prop)],
            _calls(prop),
        )
    )
    region = max(t.rows, key=lambda r: t.rows[r][-1])
    out.append(
        Metric(
            "top_region_share",
            f"{region} share of {last} total revenue",
            t.rows[region][-1] / tot[-1] * 100,
            "%",
            [
                (f"{last} {region} revenue ($m)", t.rows[region][-1], model),
                (f"{last} total revenue ($m)", tot[-1], model),
            ],
            _calls(model),
        )
    )
    return out
