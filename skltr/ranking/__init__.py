"""skltr.ranking."""
