"""Tests of server_errors/."""
