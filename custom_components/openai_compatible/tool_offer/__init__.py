"""Which tools a request offers the model: a chosen subset, on demand, a cap."""
