"""The config flow's steps, the subentry flows and the entry's options."""
