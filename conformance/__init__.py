"""The conformance lane: the integration against real OpenAI-compatible servers."""
