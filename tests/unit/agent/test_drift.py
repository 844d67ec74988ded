"""TITO drift: zero for canonical turns, counted where a turn was tokenized non-canonically."""

from __future__ import annotations

from typing import Any

from kwrl.agent.drift import DriftReport, compare_tokens, measure_drift, summarize_drift
from kwrl.agent.tito import ChatTemplate, TitoState

MESSAGES = [{"role": "system", "content": "S"}, {"role": "user", "content": "What is 6 x 7?"}]


def test_compare_tokens_counts_mismatches_after_the_first_divergence() -> None:
    assert compare_tokens([1, 2, 3], [1, 2, 3]) == DriftReport(3, 3, 0, None)
    r = compare_tokens([1, 2, 9, 9, 5], [1, 2, 7, 5])
    assert r.first_divergence == 2 and r.n_mismatched == 2 and r.rate == 0.4
    assert compare_tokens([1, 2], [1, 2, 3]).first_divergence == 2


def test_a_non_canonical_sampled_tokenization_shows_as_drift(qwen_tokenizer: Any) -> None:
    tok = qwen_tokenizer
    end = tok.convert_tokens_to_ids("<|im_end|>")
    template = ChatTemplate(tok, [])
    canonical = TitoState.start(template, MESSAGES)
    ids = tok.encode("The answer is 42.", add_special_tokens=False)
    canonical.add_completion([*ids, end], [-0.1] * (len(ids) + 1))
    convo = [*MESSAGES, {"role": "assistant", "content": "The answer is 42."}]
    assert measure_drift(canonical, convo).rate == 0.0

    odd = TitoState.start(template, MESSAGES)
    # "answer" sampled in two pieces: same text, other tokens than a re-rendering gives.
    spelled = tok.encode("The ans", add_special_tokens=False)
    spelled += tok.encode("wer is 42.", add_special_tokens=False)
    assert tok.decode(spelled) == "The answer is 42." and spelled != ids
    odd.add_completion([*spelled, end], [-0.1] * (len(spelled) + 1))
    report = measure_drift(odd, convo)
    assert report.first_divergence is not None and report.first_divergence >= odd.prompt_len
    assert 0 < report.rate < 0.2


def test_summarize_drift_over_a_batch() -> None:
    reports = [DriftReport(10, 10, 0, None), {"rate": 0.5}]
    s = summarize_drift(reports)
    assert s == {"n": 2, "mean_rate": 0.25, "max_rate": 0.5, "frac_drifted": 0.5}
    assert summarize_drift([])["n"] == 0
