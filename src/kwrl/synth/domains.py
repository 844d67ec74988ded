"""Per-domain fact models: what a deal, a matter and an engagement hold.

Base figures are drawn on a 0.1 grid so every file prints them exactly; derived figures
(margins, multiples, growth, totals) are computed here once, in Python, and written both as
spreadsheet formulas and as the formulas' cached values, so a reader of any file finds the same
number. Each builder returns the project table, its facts and (Law) its contract clauses.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from kwrl.synth.cast import Clause, Fact, Table
from kwrl.synth.names import GOVERNING_LAWS
from kwrl.synth.rng import TODAY, Rng

IB_PERIODS = ["FY2021", "FY2022", "FY2023", "FY2024", "FY2025"]
LAW_PERIODS = ["Q1 2025", "Q2 2025", "Q3 2025", "Q4 2025"]
MC_PERIODS = ["FY2022", "FY2023", "FY2024", "FY2025"]
MC_REGIONS = ["North America", "Europe", "Asia Pacific", "Latin America"]
DATA_ROOMS = ("Datasite", "Intralinks", "Ansarada", "Firmex")


def day(offset: int) -> str:
    """ISO date `offset` days after the world's 'today'."""
    return (TODAY + timedelta(days=offset)).isoformat()


def r1(x: float) -> float:
    return round(x + 0.0, 1)


def ib_deal(rng: Rng) -> tuple[Table, dict[str, Fact]]:
    rev = [rng.money(80, 900, 0.1)]
    for _ in IB_PERIODS[1:]:
        rev.append(r1(rev[-1] * (1 + rng.uniform(0.03, 0.25))))
    margin = rng.uniform(0.12, 0.35)
    ebitda = [r1(r * (margin + rng.uniform(-0.02, 0.02))) for r in rev]
    ni = [r1(e * rng.uniform(0.35, 0.6)) for e in ebitda]
    capex = [r1(r * rng.uniform(0.03, 0.08)) for r in rev]
    table = Table(
        "Financial summary",
        IB_PERIODS,
        {"Revenue": rev, "EBITDA": ebitda, "Net Income": ni, "Capex": capex},
        {"Revenue": "$m", "EBITDA": "$m", "Net Income": "$m", "Capex": "$m"},
    )
    ev = float(round(ebitda[-1] * rng.uniform(7, 14)))
    net_debt = r1(ebitda[-1] * rng.uniform(0.5, 3.0))
    shares = rng.money(20, 200, 0.1)
    facts = [
        Fact("offer_ev", "Offer enterprise value", ev, "$m"),
        Fact("net_debt", "Net debt", net_debt, "$m"),
        Fact("shares", "Diluted shares outstanding", shares, "m"),
        Fact("equity_value", "Implied equity value", r1(ev - net_debt), "$m"),
        Fact("ev_ebitda", "EV / FY2025 EBITDA", round(ev / ebitda[-1], 2), "x"),
        Fact(
            "price_per_share",
            "Implied offer price per share",
            round((ev - net_debt) / shares, 2),
            "$ps",
        ),
        Fact("advisory_fee", "Success fee", rng.pick((0.75, 1.0, 1.25, 1.5)), "%"),
        Fact("break_fee", "Break fee", r1(ev * rng.uniform(0.01, 0.03)), "$m"),
        Fact("bid_deadline", "Final bid deadline", day(rng.randint(10, 40)), ""),
        Fact(
            "data_room",
            "Data room provider",
            rng.pick(DATA_ROOMS),
            "",
        ),
    ]
    return table, {f.key: f for f in facts}


@dataclass(frozen=True)
class Playbook:
    """The law firm's contract playbook: the thresholds every client contract is checked against."""

    min_cap: float
    min_notice: int
    max_payment: int
    laws: tuple[str, ...]
    max_noncompete: int
    max_renewal: int


def law_playbook(rng: Rng) -> Playbook:
    laws = tuple(sorted(rng.sample(GOVERNING_LAWS, 3)))
    return Playbook(
        min_cap=float(rng.pick((2, 3, 5, 10))),
        min_notice=rng.pick((30, 45, 60, 90)),
        max_payment=rng.pick((30, 45, 60)),
        laws=laws,
        max_noncompete=rng.pick((6, 12, 18)),
        max_renewal=rng.pick((12, 24, 36)),
    )


def law_matter(rng: Rng, pb: Playbook) -> tuple[Table, dict[str, Fact], list[Clause]]:
    hours = [float(rng.randint(120, 900)) for _ in LAW_PERIODS]
    rate = rng.randint(450, 950)
    fees = [r1(h * rate / 1000) for h in hours]
    disb = [rng.money(2, 40, 0.1) for _ in LAW_PERIODS]
    table = Table(
        "Matter billing",
        LAW_PERIODS,
        {"Hours billed": hours, "Fees billed": fees, "Disbursements": disb},
        {"Hours billed": "hours", "Fees billed": "$k", "Disbursements": "$k"},
    )
    budget = float(round(sum(fees) * rng.uniform(1.05, 1.4) / 10) * 10)
    facts = [
        Fact("budget", "Approved fee budget", budget, "$k"),
        Fact("blended_rate", "Blended hourly rate", float(rate), "$"),
        Fact("damages", "Damages claimed", rng.money(1, 60, 0.1), "$m"),
        Fact("settlement_offer", "Counterparty settlement offer", 0.0, "$m"),
        Fact("hearing_date", "Hearing date", day(rng.randint(8, 60)), ""),
        Fact("filing_deadline", "Filing deadline", day(rng.randint(3, 30)), ""),
        Fact(
            "case_number",
            "Court case number",
            f"{rng.randint(2025, 2026)}-CV-{rng.randint(1000, 9999)}",
            "",
        ),
        Fact("contract_value", "Annual contract value", rng.money(1, 25, 0.1), "$m"),
    ]
    d = {f.key: f for f in facts}
    d["settlement_offer"] = Fact(
        "settlement_offer",
        "Counterparty settlement offer",
        r1(float(d["damages"].value) * rng.uniform(0.2, 0.7)),
        "$m",
    )
    bad = set(rng.sample(range(6), rng.randint(1, 3)))
    cap = (
        pb.min_cap - rng.pick((0.5, 1.0, 1.5))
        if 0 in bad
        else pb.min_cap + rng.pick((0.0, 1.0, 2.5, 5.0))
    )
    notice = (
        pb.min_notice - rng.pick((10, 15, 20))
        if 1 in bad
        else pb.min_notice + rng.pick((0, 15, 30))
    )
    payment = (
        pb.max_payment + rng.pick((15, 30)) if 2 in bad else pb.max_payment - rng.pick((0, 15))
    )
    other_laws = [g for g in GOVERNING_LAWS if g not in pb.laws]
    law = rng.pick(other_laws) if 3 in bad else rng.pick(pb.laws)
    nc = pb.max_noncompete + rng.pick((6, 12)) if 4 in bad else pb.max_noncompete - rng.pick((0, 6))
    ren = pb.max_renewal + 12 if 5 in bad else pb.max_renewal - rng.pick((0, 12))
    clauses = [
        Clause(
            "8.2",
            "Limitation of Liability",
            f"Each party's aggregate liability under this Agreement shall not exceed ${cap:,.1f} million.",
            0 not in bad,
            f"Liability cap of at least ${pb.min_cap:,.1f} million",
        ),
        Clause(
            "12.1",
            "Termination for Convenience",
            f"Either party may terminate this Agreement on {notice} days' prior written notice.",
            1 not in bad,
            f"Termination notice of at least {pb.min_notice} days",
        ),
        Clause(
            "5.3",
            "Payment Terms",
            f"Invoices are payable within {payment} days of receipt.",
            2 not in bad,
            f"Payment within at most {pb.max_payment} days",
        ),
        Clause(
            "15.1",
            "Governing Law",
            f"This Agreement is governed by the laws of {law}.",
            3 not in bad,
            "Governing law one of " + ", ".join(pb.laws),
        ),
        Clause(
            "9.4",
            "Non-Compete",
            f"For {nc} months after termination, the Supplier shall not provide competing services to the Customer's competitors.",
            4 not in bad,
            f"Non-compete of at most {pb.max_noncompete} months",
        ),
        Clause(
            "12.4",
            "Renewal",
            f"This Agreement renews automatically for successive terms of {ren} months.",
            5 not in bad,
            f"Automatic renewal terms of at most {pb.max_renewal} months",
        ),
    ]
    return table, d, clauses


def mc_engagement(rng: Rng) -> tuple[Table, dict[str, Fact]]:
    rows: dict[str, list[float]] = {}
    for region in MC_REGIONS:
        v = [rng.money(20, 600, 0.1)]
        for _ in MC_PERIODS[1:]:
            v.append(r1(v[-1] * (1 + rng.uniform(-0.08, 0.2))))
        rows[region] = v
    table = Table("Revenue by region", MC_PERIODS, rows, dict.fromkeys(MC_REGIONS, "$m"))
    total_last = sum(v[-1] for v in rows.values())
    market = round(total_last / 1000 / rng.uniform(0.04, 0.25), 2)
    facts = [
        Fact("market_size", "Addressable market size (FY2025)", market, "$bn"),
        Fact("market_cagr", "Market CAGR 2025-2030", rng.money(2, 12, 0.1), "%"),
        Fact("fee", "Engagement fee", float(rng.randint(25, 180) * 10), "$k"),
        Fact("savings_target", "Cost savings target", rng.money(5, 90, 0.1), "$m"),
        Fact("sites", "Number of sites", float(rng.randint(40, 900)), ""),
        Fact("steerco_date", "Steering committee date", day(rng.randint(5, 30)), ""),
        Fact("budget_ceiling", "Client budget ceiling", float(rng.randint(30, 200) * 10), "$k"),
        Fact("workshop_room", "Workshop room", f"Room {rng.randint(2, 30)}{rng.pick('ABCD')}", ""),
    ]
    return table, {f.key: f for f in facts}
