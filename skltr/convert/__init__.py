"""skltr.convert."""
