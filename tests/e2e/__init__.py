"""End-to-end tests: a real `hass` process driven through its HTTP API."""
