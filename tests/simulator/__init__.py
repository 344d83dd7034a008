"""Tests of the OpenAI-compatible simulator."""
