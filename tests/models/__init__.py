"""Tests of what is known about servers and their models."""
