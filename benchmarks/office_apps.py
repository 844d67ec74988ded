"""Office apps benchmark: read-tool cost of word, excel, powerpoint and pdfs on the real fixtures.

    .venv/bin/python benchmarks/office_apps.py [--rounds 20]

Each read tool is called through an in-memory fastmcp client on a copy of
tests/fixtures/office: once cold (first parse of the file), then `--rounds` times warm (the
parse and the rendered text are memoised on the file's stat). Figures are CPU milliseconds of
this process (client + server + tool), which a loaded machine inflates far less than wall time;
the last line is the same cost for a no-op tool, i.e. the MCP overhead every call pays.
Target: warm reads within a few ms of the no-op overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build
from kwrl.worlds.client import envelope_key, rewrap

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "office"
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("word", "read_document_content", {"file_path": "docx2python__test_file_with_comments.docx"}),
    ("word", "get_document_overview", {"file_path": "python-docx__tbl-having-tables.docx"}),
    ("excel", "read_tab", {"file_path": "openpyxl__complex-styles.xlsx", "tab_index": 0}),
    ("excel", "read_tab", {"file_path": "openpyxl__formulae.xlsx", "tab_index": 0}),
    ("excel", "list_tabs_in_spreadsheet", {"file_path": "openpyxl__book1.xlsx"}),
    ("powerpoint", "read_slides", {"file_path": "python-pptx__ph-populated-placeholders.pptx"}),
    (
        "powerpoint",
        "read_individualslide",
        {"file_path": "python-pptx__cht-charts.pptx", "slide_index": 0},
    ),
    ("pdfs", "read_pdf_pages", {"file_path": "pypdf__pdflatex-outline.pdf"}),
    ("pdfs", "search_pdf", {"file_path": "pdfplumber__senate-expenditures.pdf", "query": "total"}),
]
"""(app, tool, arguments with an envelope's fields flat: re-wrapped as the agent does)."""


async def _cpu_ms(client: Client, tool: str, args: dict[str, Any]) -> float:
    t = time.process_time()
    await client.call_tool(tool, args)
    return (time.process_time() - t) * 1000


async def main(rounds: int) -> None:
    roots = WorldRoots.of_dir(Path(tempfile.mkdtemp(prefix="kwrl-bench-office-")))
    roots.ensure()
    for kind in ("docx", "xlsx", "pptx", "pdf"):
        for f in (FIXTURES / kind).iterdir():
            shutil.copyfile(f, roots.filesystem / f.name)
    print(
        f"load average {os.getloadavg()[0]:.1f}; CPU ms per call (cold, warm median over {rounds})"
    )
    for app, tool, flat in CASES:
        async with Client(build(app, roots)) as client:
            schema = next(t.input_schema for t in await client.list_tools() if t.name == tool)
            args = rewrap(flat, envelope_key(schema))
            cold = await _cpu_ms(client, tool, args)
            warm = statistics.median([await _cpu_ms(client, tool, args) for _ in range(rounds)])
        print(
            f"{app:10s} {tool:26s} {flat['file_path'][:44]:46s} cold {cold:7.1f}  warm {warm:6.1f}"
        )
    noop = FastMCP("noop")

    @noop.tool
    def ping() -> str:
        return "pong"

    async with Client(noop) as client:
        base = statistics.median([await _cpu_ms(client, "ping", {}) for _ in range(rounds)])
    print(f"{'(no-op tool: MCP overhead)':84s}       warm {base:6.1f}")
    shutil.rmtree(roots.filesystem.parent, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    asyncio.run(main(parser.parse_args().rounds))
