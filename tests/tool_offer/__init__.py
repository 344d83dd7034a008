"""Tests of the tools a turn offers."""
