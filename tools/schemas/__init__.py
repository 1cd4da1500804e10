"""Schema entries for system tools, one module per category."""
