"""Speech: the audio routes, joining audio files, and text made fit to be spoken."""
