"""What crosses between roles: messages, handles, the typed clients' base, waiting."""
