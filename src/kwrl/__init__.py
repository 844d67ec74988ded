"""kwrl: reinforcement learning for knowledge-work agents.

The package mirrors the data flow of docs/architecture.md: tasks and synth produce task dirs and
world seeds; worlds serve a world through MCP apps; sandbox runs one harbor trial's environment;
agent and llm drive the policy; grading scores a trial; rollout, train and eval sit on top.
"""

import os

__version__ = "0.1.0"

# harbor and litellm reach the network at import unless told not to; kwrl never does.
os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
