"""Tests of structured/."""
