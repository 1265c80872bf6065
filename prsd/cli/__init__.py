"""prsctl: the user's command line."""
