"""Format models: every expected_output has Archipelago's file-type label; unknown fields are errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kwrl.tasks.models import (
    EXPECTED_FILE_TYPES,
    EXPECTED_OUTPUTS,
    ArchipelagoMeta,
    GoldenResponse,
    expected_file_type_for,
)


def test_every_expected_output_has_a_label_with_its_extensions() -> None:
    assert set(EXPECTED_FILE_TYPES) == set(EXPECTED_OUTPUTS)
    assert ".xlsx" in EXPECTED_FILE_TYPES["edit_existing_sheet"]
    assert ".pptx" in EXPECTED_FILE_TYPES["make_new_slide_deck"]
    assert ".docx" in EXPECTED_FILE_TYPES["make_new_doc"]
    assert expected_file_type_for(None) is None


def test_unknown_fields_and_bad_slugs_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"extra_forbidden|Extra inputs"):
        GoldenResponse.model_validate({"golden_text_response": "a", "answer": "b"})
    base = {"task_id": "t", "task_name": "n", "world_id": "w"}
    for slug in ("a/b", "..", ""):
        with pytest.raises(ValidationError, match="single path component"):
            ArchipelagoMeta.model_validate({**base, "task_slug": slug})
