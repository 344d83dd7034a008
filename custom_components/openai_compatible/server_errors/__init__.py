"""What a server's failure means: its answer read into our errors, by route."""
