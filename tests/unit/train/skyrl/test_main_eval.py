"""`kwrl.train.skyrl.main_eval.scored`: what an evaluation through SkyRL measured, when some or all
of its trials have no score (the infrastructure failed them), which SkyRL's `avg_score` averages
as 0. The metrics are the shape SkyRL's eval logs with kwrl's generator (a lent H100's
`main_eval` whose sandboxes all refused to start, session 29)."""

from __future__ import annotations

from kwrl.train.skyrl.main_eval import NO_SCORE_EXIT, scored

ALL_SANDBOX = {
    "eval/all/avg_score": 0.0, "eval/all/pass_at_1": 0.0, "eval/all/kwrl/trials": 72.0,
    "eval/all/kwrl/retries": 144.0, "eval/all/kwrl/graded": 0.0, "eval/all/kwrl/trained": 72.0,
    "eval/all/kwrl/cause/sandbox": 72.0,
}  # fmt: skip


def test_no_trial_with_a_score_is_no_measurement_and_fails_the_run() -> None:
    text, rc = scored(ALL_SANDBOX)
    assert rc == NO_SCORE_EXIT
    assert "no trial of 72 has a score" in text and "sandbox 72" in text


def test_trials_without_a_score_are_left_out_of_kwrls_mean_and_named() -> None:
    m = {
        "eval/all/avg_score": 0.3961, "eval/all/kwrl/trials": 72.0, "eval/all/kwrl/graded": 70.0,
        "eval/all/kwrl/mean_reward": 0.4074, "eval/all/kwrl/cause/none": 67.0,
        "eval/all/kwrl/cause/max_tokens": 3.0, "eval/all/kwrl/cause/judge": 2.0,
    }  # fmt: skip
    text, rc = scored(m)
    assert rc == 0
    assert "mean reward 0.4074 over the 70 of 72 trials with a score" in text
    assert "2 without one" in text and "judge 2" in text and "0.3961 counts as 0" in text


def test_every_trial_scored_reads_as_skyrls_mean() -> None:
    m = {"eval/all/avg_score": 0.4074, "eval/all/kwrl/trials": 72.0, "eval/all/kwrl/graded": 72.0,
         "eval/all/kwrl/mean_reward": 0.4074, "eval/all/kwrl/cause/none": 72.0}  # fmt: skip
    text, rc = scored(m)
    assert rc == 0 and text == "mean reward 0.4074 over the 72 of 72 trials with a score"
