"""Attachments and images: loading what a task attaches, generating images and fetching them."""
