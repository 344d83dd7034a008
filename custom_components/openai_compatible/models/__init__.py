"""What is known about servers and their models: listings, presets, families, reports, lessons."""
