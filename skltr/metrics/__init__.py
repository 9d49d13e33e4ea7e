"""skltr.metrics."""
