"""Policy clients: one interface (`PolicyClient`) over vLLM-style completions, chat APIs and a local engine."""
