"""The drivers: each command's work as a library function, between ``cli/`` and the stages.

``pipeline`` (``fusecli run`` on one fusion: execute, compare), ``corpus`` (runs of many
fusions: jobs, shards, failure clusters), ``explain`` (``explain-segmentation``), ``bench`` and
``codegen_check`` (``fusecli codegen --check``). They call the stages and return plain data that
``report/`` renders; nothing in a stage imports them.
"""
