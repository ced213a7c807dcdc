"""The executors' names, importable without torch (the CLI lists them in ``--help``).

``fusecli.runtime.executor`` registers one executor under each name but ``auto``, which picks
one; a test checks that the two agree.
"""

EXECUTOR_NAMES = ("auto", "aten", "cupy")
