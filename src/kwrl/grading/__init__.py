"""The grader: snapshot diff, renderers, machine checks, LLM judge, scoring -> reward.json."""
