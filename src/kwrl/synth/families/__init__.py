"""Task families: each turns one project of a planned world into a task draft.

A family is a function `(world, project, rng) -> TaskDraft | None` registered in `FAMILIES` with
its difficulty tier; `kwrl.synth.tasks.plan_tasks` picks families and projects for a world.
"""
