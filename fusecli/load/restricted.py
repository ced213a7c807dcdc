"""Running a definition function read from a data file, without letting it run anything else.

A YAML fusion holds its definition as the text nvFuser prints (``def f(fd : FusionDefinition)
-> None :`` and one ``fd.*`` call per line). The text is checked before it runs: it must be one
function of one parameter whose body only assigns the results of calls; calls, attribute reads
(no name starting with ``_``), names, constants, lists, tuples and unary minus are the only
expressions, and attributes are read only on the objects they name: ``fd.define_*``,
``fd.add_output``, ``fd.ops.<op>``, ``DataType.<member>``; those names are never rebound. No
imports, subscripts, lambdas, comprehensions, loops or dunder access, and no huge literals, so
the text can reach nothing but the ``fd`` it is given, ``DataType``, ``float`` and
``complex``. It then runs with those (and ``FusionDefinition``, for the annotation) as its only
globals and builtins.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Any

from fusecli.errors import InputError
from fusecli.frontend.definition import FusionDefinition
from fusecli.ir.dtype import DataType
from fusecli.load.failures import raise_user_error, user_line

_ALLOWED_BUILTINS = {"float": float, "complex": complex}

# Names a definition may read but never rebind: rebinding DataType to a string would make
# ``DataType.format`` a way into any object's attributes.
_FIXED_NAMES = frozenset({"DataType", "FusionDefinition", *_ALLOWED_BUILTINS})

# Literals past these sizes are refused: a definition needs neither (nvFuser prints none).
_MAX_STRING = 1_000
_MAX_INT = 2**64

# Expression and helper nodes a definition may contain; statements are checked separately.
_ALLOWED_NODES = (
    ast.Call, ast.Attribute, ast.Name, ast.Constant, ast.List, ast.Tuple, ast.keyword,
    ast.UnaryOp, ast.USub, ast.UAdd, ast.Load, ast.Store, ast.arguments, ast.arg,
)


class UnsafeDefinition(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def check_definition(tree: ast.Module) -> ast.FunctionDef:
    """The one function of ``tree``, if the text is a plain definition; else UnsafeDefinition."""
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    others = [node for node in tree.body if not isinstance(node, ast.FunctionDef)]
    if others:
        raise UnsafeDefinition(others[0].lineno, "only a `def` may appear at the top level")
    if len(functions) != 1:
        line = functions[1].lineno if functions else 1
        raise UnsafeDefinition(line, f"expected one definition function, found {len(functions)}")
    function = functions[0]
    arguments = function.args
    if (
        function.decorator_list
        or len(arguments.args) != 1
        or arguments.posonlyargs or arguments.kwonlyargs or arguments.vararg or arguments.kwarg
        or arguments.defaults
    ):
        raise UnsafeDefinition(
            function.lineno, "the definition must be `def name(fd : FusionDefinition) -> None :`"
        )
    roots = {arguments.args[0].arg, "DataType"}
    for annotation in (arguments.args[0].annotation, function.returns):
        if annotation is not None:
            _check_expression(annotation, roots)
    for index, statement in enumerate(function.body):
        if index == 0 and _is_docstring(statement):
            continue
        _check_statement(statement, roots)
    return function


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _check_statement(statement: ast.stmt, roots: set[str]) -> None:
    if isinstance(statement, ast.Pass):
        return
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        _check_expression(statement.value, roots)
        return
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if all(isinstance(name, ast.Name) for name in names):
            for name in names:
                _check_name(name)
                if name.id in roots | _FIXED_NAMES:
                    raise UnsafeDefinition(
                        statement.lineno, f"name {name.id!r} cannot be assigned to in a definition"
                    )
            _check_expression(statement.value, roots)
            return
    raise UnsafeDefinition(
        statement.lineno,
        f"{type(statement).__name__} statements are not allowed; a definition only assigns "
        "the results of fd calls",
    )


def _check_expression(expression: ast.expr, roots: set[str]) -> None:
    """Only allowed nodes; attributes only of ``fd`` and ``DataType`` (``fd.ops.add``).

    Attributes of anything else, such as a string constant's ``format``, could reach further.
    """
    for node in ast.walk(expression):
        if not isinstance(node, _ALLOWED_NODES):
            raise UnsafeDefinition(
                getattr(node, "lineno", expression.lineno),
                f"{type(node).__name__} is not allowed in a definition",
            )
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise UnsafeDefinition(node.lineno, f"attribute {node.attr!r} is not allowed")
            _check_attribute_path(node, roots)
        if isinstance(node, ast.Constant):
            _check_constant(node)
        if isinstance(node, ast.Name):
            _check_name(node)


def _attribute_path(node: ast.Attribute) -> list[str] | None:
    """``fd.ops.add`` -> ["fd", "ops", "add"]; None when the chain starts at no name."""
    path = [node.attr]
    root: ast.expr = node.value
    while isinstance(root, ast.Attribute):
        path.append(root.attr)
        root = root.value
    if not isinstance(root, ast.Name):
        return None
    path.append(root.id)
    return path[::-1]


def _check_attribute_path(node: ast.Attribute, roots: set[str]) -> None:
    """Attributes are read only on the objects they name: ``fd.<define_*, add_output, ops>``,
    ``fd.ops.<op>`` and ``DataType.<member>``, nothing deeper."""
    path = _attribute_path(node)
    if path is None or path[0] not in roots:
        raise UnsafeDefinition(
            node.lineno,
            f"attribute {node.attr!r}: only attributes of {' and '.join(sorted(roots))} "
            "are allowed",
        )
    root, *attrs = path
    if root == "DataType":
        allowed = len(attrs) == 1 and attrs[0] in DataType.__members__
    elif attrs[0] == "ops":
        allowed = len(attrs) == 1 or (len(attrs) == 2 and attrs[1] in _op_names())
    else:
        allowed = attrs[0] in _definition_calls() and len(attrs) == 1
    if not allowed:
        raise UnsafeDefinition(
            node.lineno, f"attribute {'.'.join(path)} is not allowed in a definition"
        )


@functools.cache
def _definition_calls() -> frozenset[str]:
    return frozenset(
        n for n in dir(FusionDefinition)
        if n.startswith(("define_", "add_")) and callable(getattr(FusionDefinition, n))
    )


@functools.cache
def _op_names() -> frozenset[str]:
    from fusecli.frontend.ops import Ops

    return frozenset(n for n in dir(Ops) if not n.startswith("_") and callable(getattr(Ops, n)))


def _check_constant(node: ast.Constant) -> None:
    value = node.value
    if isinstance(value, str | bytes) and len(value) > _MAX_STRING:
        raise UnsafeDefinition(node.lineno, f"a literal of {len(value)} characters is too long")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_INT:
        raise UnsafeDefinition(node.lineno, "an integer literal this large is not allowed")


def _check_name(node: ast.Name) -> None:
    if node.id.startswith("_"):
        raise UnsafeDefinition(node.lineno, f"name {node.id!r} is not allowed")


def run_definition(text: str, filename: str, where: Callable[[int | None], str]) -> Any:
    """Check ``text``, run its function on a new FusionDefinition, and return that definition.

    ``filename`` names the text in tracebacks; ``where(line)`` turns a line of the text into
    the place an error message names (the file and line the text came from).
    """
    try:
        tree = ast.parse(text, filename)
        function_node = check_definition(tree)
    except (RecursionError, MemoryError):
        raise InputError("definition: it nests too deeply to check", where(None)) from None
    except SyntaxError as exc:
        raise InputError(f"definition: syntax error: {exc.msg}", where(exc.lineno)) from None
    except UnsafeDefinition as exc:
        raise InputError(f"definition: {exc.message}", where(exc.line)) from None
    namespace: dict[str, Any] = {
        "__builtins__": dict(_ALLOWED_BUILTINS),
        "DataType": DataType,
        "FusionDefinition": FusionDefinition,
    }
    exec(compile(tree, filename, "exec"), namespace)
    function = namespace[function_node.name]
    fd = FusionDefinition()
    try:
        with fd:
            function(fd)
    except Exception as exc:
        raise_user_error(exc, where(user_line(exc, filename)), "the definition")
    return fd
