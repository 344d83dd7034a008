"""Tests of wire/."""
