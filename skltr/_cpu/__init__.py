"""skltr._cpu."""
