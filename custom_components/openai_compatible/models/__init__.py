"""What is known about servers and their models: presets, reports, lessons."""
