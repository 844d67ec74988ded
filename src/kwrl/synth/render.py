"""From a planned world to files: which file holds which fact, and the bytes of every file.

`plan_files(world)` assigns every project's file paths (`Project.files`, role -> path) and returns
the world's files as lazy builders, so task planning needs no rendering. `FACT_HOME` says which
file role (or 'mail' / 'chat' / 'calendar') holds each scalar fact; the project table lives in the
roles of `TABLE_HOMES`. Stale versions and near-duplicates are deliberate distractors.
"""

from __future__ import annotations

from collections.abc import Callable

from kwrl.synth.cast import Project, fmt
from kwrl.synth.rng import Rng
from kwrl.synth.world import ROOT_DIR, World
from kwrl.synth.writers import Block, Sheet, Slide
from kwrl.synth.writers.comms import chat_state, ics_bytes, mbox_bytes
from kwrl.synth.writers.office import docx_bytes, pptx_bytes, xlsx_bytes
from kwrl.synth.writers.pdf import pdf_bytes

FACT_HOME: dict[str, dict[str, str]] = {
    "Investment Banking": {
        "offer_ev": "memo",
        "net_debt": "memo",
        "equity_value": "memo",
        "advisory_fee": "memo",
        "shares": "model",
        "ev_ebitda": "model",
        "price_per_share": "model",
        "break_fee": "mail",
        "bid_deadline": "calendar",
        "data_room": "chat",
    },
    "Law": {
        "budget": "billing",
        "blended_rate": "billing",
        "damages": "complaint",
        "settlement_offer": "mail",
        "hearing_date": "calendar",
        "filing_deadline": "advice",
        "case_number": "chat",
        "contract_value": "contract",
    },
    "Management Consulting": {
        "market_size": "market",
        "market_cagr": "market",
        "fee": "proposal",
        "savings_target": "proposal",
        "sites": "proposal",
        "steerco_date": "calendar",
        "budget_ceiling": "mail",
        "workshop_room": "chat",
    },
}
TABLE_HOMES = {
    "Investment Banking": ("model", "deck", "teaser"),
    "Law": ("billing", "update"),
    "Management Consulting": ("kpi", "steerco"),
}
"""Roles holding the project table; the first is the source of truth (a workbook)."""

Builder = Callable[[], bytes]


def col(i: int) -> str:
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i]


def table_rows(p: Project, *, scale: float = 1.0) -> list[list[str]]:
    t = p.table
    rows = [["", *t.periods]]
    for name, vals in t.rows.items():
        unit = t.units[name]
        rows.append(
            [
                f"{name} ({unit})",
                *[f"{v:,.0f}" if unit == "hours" else _n1(round(v * scale, 1)) for v in vals],
            ]
        )
    return rows


def _n1(v: float) -> str:
    return f"{v:,.1f}"


def model_sheets(p: Project, domain: str, *, scale: float = 1.0) -> list[Sheet]:
    """The project's workbook: an inputs tab and formula tabs reading it across tabs."""
    t = p.table
    inp = Sheet("Inputs", widths={"A": 34})
    inp.cells["A1"] = t.title
    for j, per in enumerate(t.periods):
        inp.cells[f"{col(j + 1)}1"] = per
    names = list(t.rows)
    for i, name in enumerate(names):
        r = i + 2
        inp.cells[f"A{r}"] = f"{name} ({t.units[name]})"
        for j, v in enumerate(t.rows[name]):
            inp.cells[f"{col(j + 1)}{r}"] = round(v * scale, 1)
    last = col(len(t.periods))
    out = [inp]
    if domain == "Investment Banking":
        f = p.facts
        base = len(names) + 3
        inp.cells[f"A{base}"] = "Net debt ($m)"
        inp.cells[f"B{base}"] = f["net_debt"].value
        inp.cells[f"A{base + 1}"] = "Diluted shares outstanding (m)"
        inp.cells[f"B{base + 1}"] = f["shares"].value
        inp.cells[f"A{base + 2}"] = "Offer enterprise value ($m)"
        inp.cells[f"B{base + 2}"] = f["offer_ev"].value
        an = Sheet("Analysis", widths={"A": 30})
        an.cells["A1"] = "Ratios (%)"
        rev = [round(v * scale, 1) for v in t.rows["Revenue"]]
        ebitda = [round(v * scale, 1) for v in t.rows["EBITDA"]]
        for j, per in enumerate(t.periods):
            c = col(j + 1)
            an.cells[f"{c}1"] = per
            an.formulas[f"{c}3"] = (f"Inputs!{c}3/Inputs!{c}2*100", ebitda[j] / rev[j] * 100)
            if j:
                pc = col(j)
                an.formulas[f"{c}2"] = (
                    f"(Inputs!{c}2/Inputs!{pc}2-1)*100",
                    (rev[j] / rev[j - 1] - 1) * 100,
                )
        an.cells["A2"] = "Revenue growth (%)"
        an.cells["A3"] = "EBITDA margin (%)"
        va = Sheet("Valuation", widths={"A": 34})
        va.cells["A1"] = "Valuation at offer"
        va.cells["B1"] = "Value"
        ev, nd, sh = (
            float(f["offer_ev"].value),
            float(f["net_debt"].value),
            float(f["shares"].value),
        )
        va.cells["A2"], va.formulas["B2"] = "Enterprise value ($m)", (f"Inputs!B{base + 2}", ev)
        va.cells["A3"], va.formulas["B3"] = "Net debt ($m)", (f"Inputs!B{base}", nd)
        va.cells["A4"], va.formulas["B4"] = "Equity value ($m)", ("B2-B3", ev - nd)
        va.cells["A5"], va.formulas["B5"] = (
            f"EV / {t.periods[-1]} EBITDA (x)",
            (f"B2/Inputs!{last}3", ev / ebitda[-1]),
        )
        va.cells["A6"], va.formulas["B6"] = (
            "Offer price per share ($)",
            (f"B4/Inputs!B{base + 1}", (ev - nd) / sh),
        )
        out += [an, va]
    elif domain == "Law":
        f = p.facts
        su = Sheet("Summary", widths={"A": 34})
        hours, fees = t.rows["Hours billed"], t.rows["Fees billed"]
        su.cells["A1"], su.cells["B1"] = "Matter billing summary", "Value"
        su.cells["A2"], su.formulas["B2"] = (
            "Total hours billed",
            (f"SUM(Inputs!B2:{last}2)", sum(hours)),
        )
        su.cells["A3"], su.formulas["B3"] = (
            "Total fees billed ($k)",
            (f"SUM(Inputs!B3:{last}3)", sum(fees)),
        )
        su.cells["A4"], su.formulas["B4"] = (
            "Total disbursements ($k)",
            (f"SUM(Inputs!B4:{last}4)", sum(t.rows["Disbursements"])),
        )
        su.cells["A5"], su.cells["B5"] = "Approved fee budget ($k)", f["budget"].value
        su.cells["A6"], su.formulas["B6"] = (
            "Budget remaining ($k)",
            ("B5-B3", float(f["budget"].value) - sum(fees)),
        )
        su.cells["A7"], su.cells["B7"] = "Blended hourly rate ($)", f["blended_rate"].value
        out.append(su)
    else:
        su = Sheet("Summary", widths={"A": 30})
        su.cells["A1"] = "Totals"
        n = len(names) + 1
        totals = [sum(round(t.rows[r][j] * scale, 1) for r in names) for j in range(len(t.periods))]
        su.cells["A2"], su.cells["A3"] = "Total revenue ($m)", "Total growth (%)"
        for j, per in enumerate(t.periods):
            c = col(j + 1)
            su.cells[f"{c}1"] = per
            su.formulas[f"{c}2"] = (f"SUM(Inputs!{c}2:{c}{n})", totals[j])
            if j:
                su.formulas[f"{c}3"] = (
                    f"({c}2/{col(j)}2-1)*100",
                    (totals[j] / totals[j - 1] - 1) * 100,
                )
        out.append(su)
    return out


def _facts_table(p: Project, keys: list[str]) -> list[list[str]]:
    return [["Item", "Value"]] + [[p.facts[k].label, p.facts[k].text] for k in keys]


def plan_files(w: World) -> dict[str, Builder]:
    """Model-facing path ('/Deals/...') -> builder of its bytes; also fills `Project.files`."""
    files: dict[str, Builder] = {}
    author = w.firm.name
    rng = Rng("files", w.seed, w.index)
    root = ROOT_DIR[w.domain]
    per_domain = {"Investment Banking": _banking_files, "Law": _law_files}

    def add(path: str, b: Builder) -> str:
        files[path] = b
        return path

    for i, p in enumerate(w.projects):
        base = f"/{root}/{p.short}"
        tbl = table_rows(p)

        def deck_slides(p: Project = p, tbl: list[list[str]] = tbl) -> list[Slide]:
            first = next(iter(p.table.rows))
            return [
                Slide(
                    "Overview",
                    [
                        f"Client: {p.client.name} ({p.client.sector}, {p.client.city})",
                        f"Lead: {p.lead.name}",
                    ],
                ),
                Slide(p.table.title, table=tbl),
                Slide(f"{first} by period", chart=(p.table.periods, {first: p.table.rows[first]})),
            ]

        per_domain.get(w.domain, _consulting_files)(w, p, i, base, add, deck_slides, author)
        _note_files(p, base, add, rng, author)
    _firm_files(w, add, rng, author)
    return files


_Add = Callable[[str, Builder], str]
_Slides = Callable[[], list[Slide]]


def _banking_files(
    w: World, p: Project, i: int, base: str, add: _Add, slides: _Slides, author: str
) -> None:
    """An investment bank's deal files: model (and an archived v1), IC memo, pitch book and its
    draft, information memorandum, NDA."""
    c = p.client.name
    d = w.domain
    tbl = table_rows(p)
    deck_slides = slides
    p.files["model"] = add(
        f"{base}/Model/{c} - Operating Model.xlsx",
        lambda p=p: xlsx_bytes(model_sheets(p, d), f"{p.code} model", author),
    )
    if i % 2 == 0:
        p.files["model_old"] = add(
            f"{base}/Model/Archive/{c} - Operating Model (v1 OLD).xlsx",
            lambda p=p: xlsx_bytes(model_sheets(p, d, scale=0.96), f"{p.code} model v1", author),
        )
    memo = [
        ("h", "Transaction overview"),
        (
            "p",
            f"{p.code} is the proposed acquisition of {c}, a {p.client.sector.lower()} business based in {p.client.city}, by {p.counterparty.name}. {w.firm.name} acts as financial adviser.",
        ),
        (
            "table",
            _facts_table(p, ["offer_ev", "net_debt", "equity_value", "advisory_fee"]),
        ),
        ("h", "Recommendation"),
        ("p", f"The deal team recommends proceeding to final bids. Lead: {p.lead.name}."),
    ]
    p.files["memo"] = add(
        f"{base}/{p.short} - IC Memo.docx",
        lambda p=p, memo=memo: docx_bytes(f"{p.code} - Investment Committee Memo", memo, author),
    )
    p.files["deck"] = add(
        f"{base}/{p.short} - Pitch Book.pptx",
        lambda p=p, s=deck_slides: pptx_bytes(f"{p.code} - Pitch Book", s(), author),
    )
    p.files["deck_dup"] = add(
        f"{base}/Drafts/{p.short} - Pitch Book (draft).pptx",
        lambda p=p, s=deck_slides: pptx_bytes(f"{p.code} - Pitch Book (draft)", s()[:2], author),
    )
    teaser = [
        (
            "p",
            f"{c} is a leading {p.client.sector.lower()} company headquartered in {p.client.city}.",
        ),
        ("h", "Historical financials"),
        ("table", tbl),
    ]
    p.files["teaser"] = add(
        f"{base}/{p.short} - Information Memorandum.pdf",
        lambda p=p, b=teaser: pdf_bytes(
            f"{p.client.name} - Confidential Information Memorandum", b, author
        ),
    )
    p.files["nda"] = add(
        f"{base}/Legal/{p.short} - NDA.docx",
        lambda p=p: docx_bytes(
            f"Non-Disclosure Agreement - {p.client.name}",
            [
                (
                    "p",
                    f"This agreement is made between {p.client.name} and {p.counterparty.name}. Confidential Information shall be kept confidential for 24 months.",
                )
            ],
            author,
        ),
    )


def _law_files(
    w: World, p: Project, i: int, base: str, add: _Add, slides: _Slides, author: str
) -> None:
    """A law firm's matter files: billing, the executed contract and its draft, the statement of
    claim, the case update deck, the advice memo."""
    c = p.client.name
    d = w.domain
    deck_slides = slides
    p.files["billing"] = add(
        f"{base}/Billing/{p.short} - Billing.xlsx",
        lambda p=p: xlsx_bytes(model_sheets(p, d), f"{p.code} billing", author),
    )
    clauses: list[Block] = [
        (
            "p",
            f"This Master Services Agreement is made between {c} (the Customer) and {p.counterparty.name} (the Supplier). The annual contract value is {p.facts['contract_value'].text}.",
        )
    ]
    for cl in sorted(p.clauses, key=lambda x: float(x.number)):
        clauses += [("h", f"{cl.number} {cl.name}"), ("p", cl.text)]
    p.files["contract"] = add(
        f"{base}/Contracts/{c} - {p.counterparty.short} MSA (executed).docx",
        lambda p=p, b=clauses: docx_bytes(
            f"Master Services Agreement - {p.client.name}", b, author
        ),
    )
    draft = [(k, v.replace("days", "days (TBC)") if isinstance(v, str) else v) for k, v in clauses]
    p.files["contract_draft"] = add(
        f"{base}/Contracts/Drafts/{c} - {p.counterparty.short} MSA (draft v1).docx",
        lambda p=p, b=draft: docx_bytes(
            f"DRAFT Master Services Agreement - {p.client.name}", b, author
        ),
    )
    dmg = float(p.facts["damages"].value)
    parts = [round(dmg * 0.5, 1), round(dmg * 0.3, 1)]
    parts.append(round(dmg - sum(parts), 1))
    complaint = [
        (
            "p",
            f"{c} (Claimant) v. {p.counterparty.name} (Respondent). The Claimant seeks damages for breach of the Master Services Agreement.",
        ),
        (
            "table",
            [
                ["Head of loss", "Amount"],
                ["Lost profits", fmt(parts[0], "$m")],
                ["Remediation costs", fmt(parts[1], "$m")],
                ["Consequential losses", fmt(parts[2], "$m")],
                ["Total damages claimed", p.facts["damages"].text],
            ],
        ),
    ]
    p.files["complaint"] = add(
        f"{base}/Pleadings/{p.short} - Statement of Claim.pdf",
        lambda p=p, b=complaint: pdf_bytes(f"Statement of Claim - {p.client.name}", b, author),
    )
    p.files["update"] = add(
        f"{base}/{p.short} - Case Update.pptx",
        lambda p=p, s=deck_slides: pptx_bytes(f"{p.code} - Case Update", s(), author),
    )
    advice: list[Block] = [
        ("h", "Summary"),
        (
            "p",
            f"We act for {c} against {p.counterparty.name}. The next filing deadline is {p.facts['filing_deadline'].text}.",
        ),
        ("p", "Our view is that the claim has reasonable prospects."),
    ]
    p.files["advice"] = add(
        f"{base}/{p.short} - Advice Memo.docx",
        lambda p=p, b=advice: docx_bytes(f"{p.code} - Advice Memo", b, author),
    )


def _consulting_files(
    w: World, p: Project, i: int, base: str, add: _Add, slides: _Slides, author: str
) -> None:
    """A consultancy's engagement files: KPI data (and an old extract), market report, steering
    committee deck, proposal, interview notes."""
    c = p.client.name
    d = w.domain
    deck_slides = slides
    p.files["kpi"] = add(
        f"{base}/Data/{c} - KPI Data.xlsx",
        lambda p=p: xlsx_bytes(model_sheets(p, d), f"{p.code} KPIs", author),
    )
    if i % 2 == 0:
        p.files["kpi_old"] = add(
            f"{base}/Data/Old/{c} - KPI Data (old extract).xlsx",
            lambda p=p: xlsx_bytes(model_sheets(p, d, scale=1.03), f"{p.code} KPIs old", author),
        )
    market = [
        ("p", f"This report sizes the {p.client.sector.lower()} market for {c}."),
        ("table", _facts_table(p, ["market_size", "market_cagr"])),
    ]
    p.files["market"] = add(
        f"{base}/Research/{p.short} - Market Report.pdf",
        lambda p=p, b=market: pdf_bytes(f"{p.client.sector} Market Report", b, author),
    )
    p.files["steerco"] = add(
        f"{base}/{p.short} - Steering Committee.pptx",
        lambda p=p, s=deck_slides: pptx_bytes(f"{p.code} - Steering Committee", s(), author),
    )
    prop = [
        ("h", "Scope"),
        (
            "p",
            f"{w.firm.name} will support {c} on an operating model review across {p.facts['sites'].text} sites.",
        ),
        ("table", _facts_table(p, ["fee", "savings_target", "sites"])),
    ]
    p.files["proposal"] = add(
        f"{base}/{p.short} - Proposal.docx",
        lambda p=p, b=prop: docx_bytes(f"{p.code} - Proposal", b, author),
    )
    p.files["interviews"] = add(
        f"{base}/{p.short} - Interview Notes.docx",
        lambda p=p: docx_bytes(
            f"{p.code} - Interview Notes",
            [
                (
                    "p",
                    f"Interviews with {p.client.name} leadership on {p.client.sector.lower()} priorities.",
                )
            ],
            author,
        ),
    )


def _note_files(p: Project, base: str, add: _Add, rng: Rng, author: str) -> None:
    """A project's team notes (docx) and call notes (markdown), dated in February 2026."""
    notes = rng.sample(range(1, 29), 4)
    add(
        f"{base}/Notes/2026-02-{notes[0]:02d} team notes.docx",
        lambda p=p: docx_bytes(
            f"{p.code} team notes",
            [
                ("p", f"Attendees: {', '.join(x.name for x in p.team)}."),
                ("p", f"Action items for {p.code}: circulate materials."),
            ],
            author,
        ),
    )
    for k, nd in enumerate(notes[1:]):
        text = f"# {p.code} call notes ({nd} Feb 2026)\n\nAttendees: {', '.join(x.name for x in p.team[: 2 + k % 2])}\n\n- Workstream {k + 1}: materials in progress.\n- Next check-in with {p.client.name} to be scheduled.\n"
        add(f"{base}/Notes/2026-02-{nd:02d} call notes.md", lambda text=text: text.encode())


def _firm_files(w: World, add: _Add, rng: Rng, author: str) -> None:
    """Firm-wide files: portfolio tracker, staff directory, office guide (and a law firm's
    contract playbook)."""
    d = w.domain
    projects_tbl = [["Code", "Client", "Lead", "Status"]] + [
        [p.code, p.client.name, p.lead.name, rng.pick(("Active", "Active", "On hold"))]
        for p in w.projects
    ]
    add(
        "/Firm/Portfolio Tracker.xlsx",
        lambda: xlsx_bytes(
            [
                Sheet(
                    "Tracker",
                    {
                        f"{col(j)}{i + 1}": v
                        for i, row in enumerate(projects_tbl)
                        for j, v in enumerate(row)
                    },
                )
            ],
            "Portfolio tracker",
            author,
        ),
    )
    add(
        "/Firm/Staff Directory.docx",
        lambda: docx_bytes(
            "Staff Directory",
            [
                (
                    "table",
                    [["Name", "Title", "Email"]] + [[x.name, x.title, x.email] for x in w.people],
                )
            ],
            author,
        ),
    )
    add(
        "/Firm/Office Guide.pdf",
        lambda: pdf_bytes(
            "Office Guide", [("p", f"Welcome to {w.firm.name} in {w.firm.city}.")], author
        ),
    )
    if d == "Law" and w.playbook is not None:
        pb = w.playbook
        rules = [
            ["Clause", "Firm position"],
            ["Limitation of Liability", f"Liability cap of at least ${pb.min_cap:,.1f} million"],
            ["Termination for Convenience", f"Notice of at least {pb.min_notice} days"],
            ["Payment Terms", f"Payment within at most {pb.max_payment} days"],
            ["Governing Law", "One of: " + ", ".join(pb.laws)],
            ["Non-Compete", f"At most {pb.max_noncompete} months"],
            ["Renewal", f"Automatic renewal terms of at most {pb.max_renewal} months"],
        ]
        add(
            "/Firm/Contract Playbook.pdf",
            lambda: pdf_bytes(
                "Contract Playbook",
                [
                    (
                        "p",
                        "Every client contract must meet the positions below. Deviations need partner sign-off.",
                    ),
                    ("table", rules),
                ],
                author,
            ),
        )


def apps_files(w: World) -> dict[str, bytes]:
    """Paths under .apps_data/ -> bytes."""
    out = {
        "mail/inbox.mbox": mbox_bytes(w.mails),
        "calendar/calendar.ics": ics_bytes(w.events, f"{w.me.name}"),
    }
    for name, data in chat_state(w).items():
        out[f"chat/{name}"] = data
    return out
