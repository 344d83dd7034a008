"""Benchmarks; run them as scripts, never as part of the test suite."""
