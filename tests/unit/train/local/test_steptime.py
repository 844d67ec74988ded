"""An RL step's time split: harbor's phase timestamps, the wall-clock split, the GPU busy poller."""

from __future__ import annotations

from kwrl.rollout.trial import phase_seconds
from kwrl.train.local.steptime import GpuBusy, step_times


def test_phase_seconds_read_harbors_timestamps_and_skip_untimed_phases() -> None:
    result = {
        "environment_setup": {
            "started_at": "2026-12-06T01:25:56.665346Z",
            "finished_at": "2026-12-06T01:25:56.729832Z",
        },
        "agent_execution": {
            "started_at": "2026-12-06T01:25:57Z",
            "finished_at": "2026-12-06T01:26:09.5Z",
        },
        "verifier": None,  # a trial that ended before grading
        "agent_setup": {"started_at": "2026-12-06T01:25:56.8Z", "finished_at": None},
    }
    got = phase_seconds(result)
    assert set(got) == {"environment_setup", "agent_execution"}
    assert abs(got["environment_setup"] - 0.064486) < 1e-9 and got["agent_execution"] == 12.5
    assert phase_seconds(None) == {}


def test_a_steps_trials_per_hour_count_its_learner_and_weight_push() -> None:
    t = step_times(sample_s=20.0, learner_s=3.5, push_s=0.5, graded=60)
    assert t["step_s"] == 24.0 and t["graded"] == 60
    assert t["graded_trials_per_hour"] == 9000.0
    assert step_times(0.0, 0.0, 0.0, 0)["graded_trials_per_hour"] is None


def test_without_a_gpu_the_busy_share_is_none_not_an_error() -> None:
    busy = GpuBusy("cpu")
    mark = busy.mark()
    assert not busy.active and busy.mean(mark) is None
    busy.close()
