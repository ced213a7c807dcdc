"""Turning an exception raised by a user's code (a script, a YAML definition) into one line.

The line is the innermost frame of the user's own file: where a definition error happened in
*their* code, not in fusecli's.
"""

from __future__ import annotations

import traceback
from typing import NoReturn

from fusecli.errors import FusecliError, InputError
from fusecli.ir.builder import DefinitionError


def user_line(exc: BaseException, filename: str) -> int | None:
    """The line of the innermost traceback frame whose code is from ``filename``."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    if line is None and isinstance(exc, SyntaxError) and exc.filename == filename:
        line = exc.lineno
    return line


def user_error(exc: Exception, where: str, culprit: str = "the script") -> FusecliError:
    """The error to raise for ``exc``, raised at ``where`` by ``culprit``'s code.

    fusecli's own errors (the reference evaluating an execute call, say) are returned as they
    are, given ``where`` if they name no place. Definition errors and TypeErrors (bad arguments
    to ``fd.ops``) say what was wrong in their own words; anything else is named as what the
    code raised.
    """
    if isinstance(exc, FusecliError):
        if exc.where is None:
            exc.where = where
        return exc
    if isinstance(exc, DefinitionError | TypeError):
        return InputError(str(exc), where)
    return InputError(f"{culprit} raised {type(exc).__name__}: {exc}", where)


def raise_user_error(exc: Exception, where: str, culprit: str = "the script") -> NoReturn:
    error = user_error(exc, where, culprit)
    if error is exc:
        raise error
    raise error from exc
