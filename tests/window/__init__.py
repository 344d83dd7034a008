"""Tests of window/."""
