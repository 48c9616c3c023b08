"""Core: settings, errors, events, atomic files, and the engine (the only Docker client)."""
