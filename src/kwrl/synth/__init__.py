"""Generator of open worlds and tasks: simulated companies in the three APEX domains.

`plan_world(seed, index, domain)` builds a world's cast and facts (pure, fast);
`write_world` renders them to office files, mail, calendar and chat; `plan_tasks` derives tasks
(prompt, rubric with machine checks, gold tool calls) from the same facts, so every answer is
derivable from the files. Same seed -> byte-identical output.
"""
