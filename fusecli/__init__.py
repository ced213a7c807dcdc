"""fusecli: a command-line fusion debugger for nvFuser-style fusion definitions."""

__version__ = "0.1.0"
