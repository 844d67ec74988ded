"""Tool-call formats: one module per format that both renders calls into text and parses them out.

Every format kwrl speaks wraps a call in `<tool_call>...</tool_call>`; `blocks` splits sampled
text into calls, errors and content with one contract for all of them (see its docstring).
`hermes` is the JSON format (Qwen2.5, SmolLM2) that the agent, the engine's chat path and
`kwrl serve` share; the XML formats the agent parses (`qwen3_xml`, `glm4`) live in
`kwrl.agent.parsers`, on the same block contract.
"""
