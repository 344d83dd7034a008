"""The context window: fitting each request into the model's window, and the message form it fits."""
