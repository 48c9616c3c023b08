"""Core: settings, errors, events and atomic files, which every layer uses."""
