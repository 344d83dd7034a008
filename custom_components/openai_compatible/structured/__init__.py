"""Structured answers: the ways to ask for a structure, schemas made strict or checked, JSON read from answers."""
