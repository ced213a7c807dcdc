"""Segmentation engines besides fusecli's own: real nvFuser, when it is importable."""
