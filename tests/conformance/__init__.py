"""Tests of the conformance lane's own logic (no server is built or started)."""
