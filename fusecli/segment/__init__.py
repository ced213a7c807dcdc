"""The segmenter: schedulers with reasons, rule profiles, and nvFuser's segmentation algorithm."""
