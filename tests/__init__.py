"""Tests for the OpenAI Compatible integration."""
