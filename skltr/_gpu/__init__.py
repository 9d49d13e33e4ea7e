"""skltr._gpu."""
