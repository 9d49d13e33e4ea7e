"""skltr.datasets."""
