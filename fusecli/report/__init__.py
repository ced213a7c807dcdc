"""Rendering results: rich views for people, JSON for programs. Only report/ and cli/ print."""
