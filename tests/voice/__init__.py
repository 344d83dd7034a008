"""Tests of voice/."""
