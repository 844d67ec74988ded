"""Tool-call parsers on recorded completions of each format, well-formed and malformed."""

from __future__ import annotations

import pytest

from kwrl.agent.parsers import build_parser, split_reasoning
from kwrl.llm.formats import FORMATS
from kwrl.llm.formats.base import coerce_value

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "excel_read_tab",
            "parameters": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "tab_index": {"type": "integer"},
                    "cell_range": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "pdfs_read_pdf_pages",
            "parameters": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "pages": {"type": "array", "items": {"type": "integer"}},
                    "strict": {"type": "boolean"},
                    "scale": {"type": "number"},
                },
            },
        },
    },
]

# Recorded from Qwen2.5-Coder-0.5B-Instruct (hermes format, two calls in one turn).
QWEN25_TWO_CALLS = (
    "I'll look at the budget first.\n"
    '<tool_call>\n{"name": "excel_read_tab", "arguments": {"file_path": "/filesystem/budget.xlsx", '
    '"tab_index": 0}}\n</tool_call>\n'
    '<tool_call>\n{"name": "filesystem_list_files", "arguments": {"path": "/filesystem"}}\n</tool_call>'
)


def test_hermes_parses_every_call_and_keeps_the_prose() -> None:
    r = build_parser("hermes").parse(QWEN25_TWO_CALLS, TOOLS)
    assert not r.malformed
    assert [c.name for c in r.tool_calls] == ["excel_read_tab", "filesystem_list_files"]
    assert r.tool_calls[0].arguments == {"file_path": "/filesystem/budget.xlsx", "tab_index": 0}
    assert [c.id for c in r.tool_calls] == ["call_0", "call_1"]
    assert r.content == "I'll look at the budget first."


def test_hermes_accepts_arguments_as_a_json_string() -> None:
    text = '<tool_call>{"name": "mail_list_mails", "arguments": "{\\"limit\\": 5}"}</tool_call>'
    r = build_parser("qwen").parse(text)
    assert r.tool_calls[0].arguments == {"limit": 5}
    assert r.content == ""


def test_hermes_reports_invalid_json_as_an_error_not_a_call() -> None:
    text = 'ok <tool_call>{"name": "excel_read_tab", "arguments": {"file_path": "/a.xlsx",}</tool_call>'
    r = build_parser("hermes").parse(text, TOOLS)
    assert r.tool_calls == []
    assert r.malformed and "invalid JSON" in r.errors[0]
    assert r.content == text  # not a call: the model's text stays as written


def test_hermes_reports_a_cut_off_block() -> None:
    text = 'Reading.\n<tool_call>\n{"name": "excel_read_tab", "argu'
    r = build_parser("hermes").parse(text, TOOLS)
    assert r.tool_calls == [] and r.malformed
    assert "without </tool_call>" in r.errors[0]
    assert r.content == text.strip()


def test_hermes_rejects_a_block_without_a_name() -> None:
    r = build_parser("hermes").parse('<tool_call>{"arguments": {}}</tool_call>')
    assert r.malformed and not r.tool_calls


def test_plain_answer_has_no_calls_and_no_errors() -> None:
    for name in ("hermes", "qwen3_xml", "glm4"):
        r = build_parser(name).parse("The total is 42,150 USD.\n")
        assert r.tool_calls == [] and not r.malformed
        assert r.content == "The total is 42,150 USD."


# Recorded from Qwen3-Coder-style output (qwen3_xml).
QWEN3_XML = (
    "Let me read pages 2 and 3.\n"
    "<tool_call>\n<function=pdfs_read_pdf_pages>\n"
    "<parameter=file_path>\n/filesystem/report.pdf\n</parameter>\n"
    "<parameter=pages>\n[2, 3]\n</parameter>\n"
    "<parameter=strict>\nfalse\n</parameter>\n"
    "<parameter=scale>\n1.5\n</parameter>\n"
    "</function>\n</tool_call>"
)


def test_qwen3_xml_types_values_by_schema() -> None:
    r = build_parser("qwen3_xml").parse(QWEN3_XML, TOOLS)
    assert not r.malformed
    (call,) = r.tool_calls
    assert call.name == "pdfs_read_pdf_pages"
    assert call.arguments == {
        "file_path": "/filesystem/report.pdf",
        "pages": [2, 3],
        "strict": False,
        "scale": 1.5,
    }
    assert r.content == "Let me read pages 2 and 3."


def test_qwen3_xml_keeps_multiline_strings_and_untyped_values_as_text() -> None:
    text = (
        "<tool_call><function=code_execution_code_exec><parameter=code>\n"
        "import pandas as pd\nprint(1)\n</parameter></function></tool_call>"
    )
    (call,) = build_parser("qwen3_xml").parse(text).tool_calls
    assert call.arguments == {"code": "import pandas as pd\nprint(1)"}


def test_qwen3_xml_without_function_tag_is_malformed() -> None:
    r = build_parser("qwen3_xml").parse("<tool_call><parameter=x>1</parameter></tool_call>")
    assert r.malformed and not r.tool_calls


def test_qwen3_xml_tolerates_a_missing_closing_parameter_tag() -> None:
    text = "<tool_call><function=excel_read_tab><parameter=tab_index>2</function></tool_call>"
    (call,) = build_parser("qwen3_xml").parse(text, TOOLS).tool_calls
    assert call.arguments == {"tab_index": 2}


# Recorded from GLM-4.7 (no newline after the name) and GLM-4.5 (newlines).
GLM47 = (
    "<tool_call>excel_read_tab<arg_key>file_path</arg_key><arg_value>/filesystem/q3.xlsx</arg_value>"
    "<arg_key>tab_index</arg_key><arg_value>1</arg_value></tool_call>"
)
GLM45 = (
    "Checking the calendar.\n<tool_call>calendar_list_events\n<arg_key>start</arg_key>\n"
    "<arg_value>2025-03-01</arg_value>\n</tool_call>"
)


def test_glm4_parses_both_layouts() -> None:
    (call,) = build_parser("glm47").parse(GLM47, TOOLS).tool_calls
    assert call.name == "excel_read_tab"
    assert call.arguments == {"file_path": "/filesystem/q3.xlsx", "tab_index": 1}
    r = build_parser("glm45").parse(GLM45, TOOLS)
    assert r.tool_calls[0].name == "calendar_list_events"
    assert r.tool_calls[0].arguments == {"start": "2025-03-01"}
    assert r.content == "Checking the calendar."


def test_glm4_unbalanced_pairs_and_missing_name_are_malformed() -> None:
    bad_pairs = "<tool_call>excel_read_tab<arg_key>file_path</arg_key></tool_call>"
    assert build_parser("glm4").parse(bad_pairs).malformed
    no_name = "<tool_call><arg_key>a</arg_key><arg_value>1</arg_value></tool_call>"
    assert build_parser("glm4").parse(no_name).malformed


def test_calls_inside_reasoning_are_not_run() -> None:
    text = '<think>maybe <tool_call>{"name": "a", "arguments": {}}</tool_call></think>Final: 7'
    r = build_parser("hermes").parse(text)
    assert r.tool_calls == [] and r.content == "Final: 7"
    assert r.reasoning is not None and "maybe" in r.reasoning


def test_split_reasoning_when_the_opening_tag_was_in_the_prompt() -> None:
    assert split_reasoning("plan</think>answer") == ("plan", "answer")
    assert split_reasoning("no reasoning") == (None, "no reasoning")


@pytest.mark.parametrize(
    ("raw", "schema", "expected"),
    [
        ("3", {"type": "integer"}, 3),
        ("3.0", {"type": "number"}, 3.0),
        ("x", {"type": "integer"}, "x"),
        ("null", {"anyOf": [{"type": "string"}, {"type": "null"}]}, None),
        ('{"a": 1}', {"type": "object"}, {"a": 1}),
        ("[1", {"type": "array"}, "[1"),
        ("TRUE", {"type": "boolean"}, True),
        ("42", None, "42"),
    ],
)
def test_coerce_value(raw: str, schema: object, expected: object) -> None:
    assert coerce_value(raw, schema) == expected


def test_unknown_parser_name_says_which_exist() -> None:
    with pytest.raises(ValueError, match="hermes"):
        build_parser("nope")
    assert {"hermes", "qwen3_xml", "glm4"} <= set(FORMATS)


# Sampled (greedy) from the packaged Qwen2.5-Coder-0.5B-Instruct with its own tool template,
# `excel_read_tab` offered; the turn ended on <|im_end|>, which the text omits.
QWEN25_CODER_SAMPLED = (
    '<tool_call>\n{"name": "excel_read_tab", "arguments": {"file_path": "/filesystem/budget.xlsx", '
    '"tab_index": 0}}\n</tool_call>'
)


def test_hermes_parses_a_turn_sampled_from_qwen25_coder() -> None:
    r = build_parser("hermes").parse(QWEN25_CODER_SAMPLED, TOOLS)
    assert not r.malformed and r.content == ""
    (call,) = r.tool_calls
    assert (call.name, call.arguments) == (
        "excel_read_tab",
        {"file_path": "/filesystem/budget.xlsx", "tab_index": 0},
    )
