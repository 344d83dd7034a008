"""Tests of ai_task.evaluate: its paths, its questions, its wire."""
