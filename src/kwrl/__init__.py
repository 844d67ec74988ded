"""kwrl: reinforcement learning for knowledge-work agents.

The package mirrors the data flow of docs/architecture.md: tasks and synth produce task dirs and
world seeds; worlds serve a world through MCP apps; sandbox runs one harbor trial's environment;
agent and llm drive the policy; grading scores a trial; rollout, train and eval sit on top.
"""

__version__ = "0.1.0"
