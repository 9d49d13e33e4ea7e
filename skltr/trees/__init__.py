"""skltr.trees."""
