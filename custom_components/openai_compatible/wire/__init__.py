"""The wire: the connection, server-sent events, typed readers, and the one round trip with a dialect per wire API."""
