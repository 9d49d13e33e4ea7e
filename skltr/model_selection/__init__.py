"""skltr.model_selection."""
