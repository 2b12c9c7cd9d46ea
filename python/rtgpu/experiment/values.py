"""Values in study files: ``"= expr"`` arithmetic over the point's
parameters, durations with units (``"100 us"``), sizes (``"2 MiB"``) and
bandwidths (``"6 GB/s"``, bytes per second), as in workload files."""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Mapping
from typing import Any, Callable, Union

from .. import _rtgpu

__all__ = ["Scalar", "StudyError", "evaluate", "resolve"]

Scalar = Union[int, float, str, bool]


class StudyError(ValueError):
    """A study file that cannot be run; the message names the file and key."""


# Generator values: a string "= expr" is an arithmetic expression over the
# point's parameters (+ - * / // % **, parentheses, numbers, names), and a
# string with a unit is a duration ("100 us"), a size ("2 MiB") or a
# bandwidth ("6 GB/s": bytes per second, as the workload file writes it).
_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|kB|KB|MB|GB)(/s)?\s*$")
_SIZE_UNITS = {
    "B": 1,
    "KiB": 1 << 10,
    "MiB": 1 << 20,
    "GiB": 1 << 30,
    "kB": 1000,
    "KB": 1000,
    "MB": 10**6,
    "GB": 10**9,
}


def evaluate(expr: str, params: Mapping[str, Scalar], where: str) -> int | float:
    """Evaluate an arithmetic expression over ``params`` safely."""

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in params:
                raise StudyError(
                    f"{where}: unknown name {node.id!r} in {expr!r}; parameters and axes: "
                    + ", ".join(sorted(params))
                )
            return params[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise StudyError(f"{where}: only arithmetic on numbers and names is allowed in {expr!r}")

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise StudyError(f"{where}: cannot parse expression {expr!r}") from None
    try:
        v = ev(tree)
    except (ZeroDivisionError, TypeError, OverflowError) as e:
        raise StudyError(f"{where}: {expr!r}: {e}") from None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise StudyError(f"{where}: {expr!r} is not a number")
    return v


def resolve(value: Any, params: Mapping[str, Scalar], where: str) -> Any:
    if isinstance(value, dict):
        return {k: resolve(v, params, f"{where} {k}") for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, params, where) for v in value]
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("="):
            return evaluate(s[1:].strip(), params, where)
        m = _SIZE.match(s)
        if m:
            return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])
        if s and s[0].isdigit():
            try:
                return _rtgpu.parse_duration(s)
            except ValueError as e:
                raise StudyError(
                    f"{where}: {e}; a size (B, KiB, MiB, GiB, kB, MB, GB) or a bandwidth "
                    '(the same per second, e.g. "6 GB/s") is accepted too'
                ) from None
    return value
