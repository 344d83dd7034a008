"""Tests of the config flow, the subentry flows and the options."""
