"""Thin click commands: parse, call one library function, report, return an exit code."""
