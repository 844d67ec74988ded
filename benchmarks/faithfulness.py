"""Faithfulness benchmark: false-negative and false-positive rates of the machine grader, per task
family, on honest and gamed deliverables written as a careful judge would grade them.

    .venv/bin/python benchmarks/faithfulness.py [--seeds 11 12] [--per-family 1] \
        [--cases tests/fixtures/faithfulness] [--trials 0] [--work DIR] [--misses]

Each case (tests/fixtures/faithfulness/README.md: the format) is filled from a generated task of
its family, applied to the task's world and graded by the verifier's own entry point with no
judge (`kwrl.eval.faithfulness`). Without `--seeds`, the tasks are seed 4's Law world (every
family once; more per family from seeds 11 and 12); with it, `kwrl data synth` of 3 worlds x 20
tasks per seed, the first `--per-family` tasks of each family. It prints, per family, the honest
criteria and the false negatives among them (honest criteria not passing), the gamed criteria
and the false positives (gamed criteria passing), their rates, and the undecided verdicts.
`--cases DIR` runs another set in the same format (a held-out set). `--trials N` also runs N
cases, spread over the families, through real trials (`kwrl trial run`, the oracle agent running
the case as the task's solve.sh) and prints how many criteria's verdicts agree with the
in-process ones. Targets (issue 45): FN <= 3% and FP <= 3% overall, no family above 10%.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kwrl.eval import faithfulness as F

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "faithfulness"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="*", default=None, help="kwrl data synth seeds")
    ap.add_argument("--per-family", type=int, default=1, help="tasks per family")
    ap.add_argument("--cases", type=Path, default=FIXTURES, help="dir of <family>.yaml case files")
    ap.add_argument("--trials", type=int, default=0, help="cases run through real trials too")
    ap.add_argument("--work", type=Path, default=None, help="scratch dir (default: a temp dir)")
    ap.add_argument("--misses", action="store_true", help="print every false verdict")
    args = ap.parse_args()
    cases = F.load_cases(args.cases)
    with tempfile.TemporaryDirectory(prefix="kwrl-faith-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        if args.seeds:
            tasks = F.synth(work / "data", args.seeds, args.per_family)
        else:
            tasks = F.default_tasks(work / "data", args.per_family)
        t1 = time.perf_counter()
        outcomes = F.run(tasks, cases, work / "run")
        t2 = time.perf_counter()
        r = F.rates(outcomes)
        missing = sorted(set(cases) - {F.family_of(t) for t in tasks})
        print(
            f"{len(tasks)} tasks, {len(outcomes)} case runs; data {t1 - t0:.1f} s, grading {t2 - t1:.1f} s"
        )
        if missing:
            print(f"families without a task: {', '.join(missing)}")
        print(F.table(r))
        if args.misses:
            for fam, x in sorted(r.items()):
                for m in x.misses if fam != "total" else []:
                    print(f"  {fam}: {m}")
        tot = r.get("total", F.Rates())
        worst = max((max(x.fn_rate, x.fp_rate), f) for f, x in r.items() if f != "total")
        ok = tot.fn_rate <= 0.03 and tot.fp_rate <= 0.03 and worst[0] <= 0.10
        print(
            f"FN {100 * tot.fn_rate:.1f}% FP {100 * tot.fp_rate:.1f}%; worst family {worst[1]} "
            f"{100 * worst[0]:.1f}%: targets {'met' if ok else 'NOT met'}"
        )
        if args.trials:
            agree, total, failed = trial_control(
                tasks, cases, outcomes, args.trials, work / "trials"
            )
            print(
                f"trials: {agree}/{total} criteria verdicts agree with in-process; {failed} trials failed"
            )
    return 0


def trial_control(
    tasks: list, cases: dict[str, list[F.Case]], outcomes: list[F.Outcome], n: int, work: Path
) -> tuple[int, int, int]:
    """`n` cases spread over families and kinds through real trials; (agreeing verdicts, compared
    verdicts, trials without grades)."""
    by_key = {(o.task, o.case): o for o in outcomes}
    ran = [t for t in tasks if cases.get(F.family_of(t))]
    picks = []
    for j in range(min(n, 10 * len(ran))):
        t = ran[(j * 5) % len(ran)]
        # only the cases graded in-process on this task (a case may be for other domains only)
        fam_cases = [c for c in cases[F.family_of(t)] if (t.slug, c.id) in by_key]
        if fam_cases:
            picks.append((t, fam_cases[(j * 7 + 3) % len(fam_cases)]))
    agree = total = failed = 0
    for t, case, verdicts, err in F.run_trials(picks, work):
        o = by_key.get((t.slug, case.id))
        if verdicts is None or o is None:
            failed += 1
            print(f"  trial {t.slug} {case.id}: no grades: {err[-300:]}")
            continue
        same = sum(verdicts.get(k) == v for k, v in o.verdicts.items())
        print(f"  trial {t.slug} {case.id} ({case.kind}): {same}/{len(o.verdicts)} verdicts agree")
        for k, v in o.verdicts.items():
            total += 1
            agree += verdicts.get(k) == v
            if verdicts.get(k) != v:
                print(f"  {t.slug} {case.id} c{k}: in-process {v}, trial {verdicts.get(k)}")
    return agree, total, failed


if __name__ == "__main__":
    raise SystemExit(main())
