"""The wire APIs: the one round trip, a dialect per wire API, and what the dialects share."""
