"""The connection: HTTP with bounded reads, server-sent events, typed readers, and the shapes and types of a request."""
