"""Tests of the benchmarks' pure parts and home."""
