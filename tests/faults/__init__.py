"""The fault matrix: hostile and broken servers, driven at the HTTP level."""
