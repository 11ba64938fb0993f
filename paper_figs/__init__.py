"""paper_figs package."""
