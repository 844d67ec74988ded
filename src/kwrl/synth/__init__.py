"""Generator of open worlds and tasks: simulated companies in the three APEX domains.

Pipeline (one world): `world.plan_world(seed, index, domain)` builds the cast and facts (pure,
fast); `render.plan_files` assigns every file its path and a lazy builder (`writers/`: xlsx with
formulas and cached values, docx, pptx with tables and charts, pdf, mbox, ics, chat JSON);
`tasks.plan_tasks` picks task families (`families/`) that turn the same facts into prompts,
rubrics with machine checks, gold tool calls and gold answers, so every answer is derivable from
the files. `layout` writes the task-dirs or apex-hf layout; `generate` runs worlds in a process
pool, then the no-op control on every task written; `cli.synth` is `kwrl data synth`. Same seed
-> byte-identical output.
"""
