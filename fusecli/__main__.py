"""``python -m fusecli``: the same as the ``fusecli`` command."""

from fusecli.cli.main import main

main()
