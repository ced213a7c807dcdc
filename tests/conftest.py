"""Test-session settings. ``HYPOTHESIS_PROFILE=ci`` (what ``.ci/run`` sets) makes the property
tests draw the same examples on every run, so CI's verdict is the code's, not the draw's; a
developer's run without it draws new examples each time, and what they find becomes a test."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
