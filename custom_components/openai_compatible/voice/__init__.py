"""Speech: the audio routes, joining audio files, audio model families, and text made fit to be spoken."""
