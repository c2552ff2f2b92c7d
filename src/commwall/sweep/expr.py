"""A tiny, safe expression language over a record's columns (sweep constraints and filters).

>>> e = compile_expr("power_w < 500e3 and `cluster.nodes` in (64, 128) and fits_in_memory")
>>> e.names
('power_w', 'cluster.nodes', 'fits_in_memory')
>>> e.test({"power_w": 4.2e5, "cluster.nodes": 128, "fits_in_memory": True})
True
>>> evaluate("cluster.topology.oversubscription * 2", {"cluster.topology.oversubscription": 1.5})
3.0

What an expression may hold (parsed with Python's :mod:`ast`, then checked node by node against
this list; anything else is refused before anything is evaluated):

* numbers (``500e3``, ``4``), strings (``"ib"``), ``True``, ``False``, ``None``;
* column names: plain (``power_w``), dotted (``cluster.topology.oversubscription``: the whole
  chain is one column name, never attribute access) or backquoted (`` `any name` ``, for names
  that are not identifiers);
* comparisons ``< <= > >= == !=``, chained (``1 < x <= 4``), and ``in`` / ``not in`` with a
  tuple, list or string on the right;
* ``and``, ``or``, ``not``; arithmetic ``+ - * / **`` and unary ``-``/``+`` on numbers.

No calls, subscripts, attribute access, comprehensions, lambdas or names other than columns.

Semantics: Python's, except that an ordering comparison (``<``, ``<=``, ``>``, ``>=``) with a
missing value (``None``: a column the record lacks or a null) is false rather than an error, the
way SQL drops unknowns from a ``WHERE``; ``== None`` still tests for it. Arithmetic is on numbers
only, and ``**`` is computed in floating point (so ``10**10**10`` overflows instead of building
a billion-digit integer). Any problem — syntax, a refused construct, an unknown column, a type
mismatch, division by zero — raises :class:`ExprError` with one line naming the offending token.
"""

from __future__ import annotations

import ast
import difflib
import math
import operator
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Final

from commwall.errors import CommwallError

__all__ = ["Expr", "ExprError", "compile_expr", "evaluate"]

#: Longest expression accepted (characters): constraints are one line, not programs.
MAX_LENGTH: Final = 10_000
#: Prefix of the identifiers that stand for backquoted column names while parsing.
_BQ: Final = "__cw_col_"

_COMPARE: Final[dict[type[ast.cmpop], Callable[[Any, Any], Any]]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ORDERING: Final = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_ARITH: Final[dict[type[ast.operator], Callable[[Any, Any], Any]]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: lambda a, b: math.pow(float(a), float(b)),  # float: no huge-integer blow-up
}
_SYMBOL: Final = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.In: "in", ast.NotIn: "not in", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
    ast.Pow: "**",
}  # fmt: skip
_ALLOWED: Final = (
    "allowed: numbers, strings, True/False/None, column names (plain, dotted or `backquoted`), "
    "comparisons, in/not in, and/or/not, + - * / **"
)


class ExprError(CommwallError, ValueError):
    """An expression that cannot be parsed, is not allowed, or cannot be evaluated."""


@dataclass(frozen=True)
class Expr:
    """A checked expression, ready to evaluate on records (:func:`compile_expr`)."""

    text: str
    #: The columns it reads, in order of first use.
    names: tuple[str, ...]
    _tree: ast.expr = field(repr=False, compare=False)
    _columns: dict[str, str] = field(repr=False, compare=False)  # identifier -> column
    _source: str = field(repr=False, compare=False)  # text with backquotes replaced

    def __call__(self, record: Mapping[str, Any]) -> Any:
        """The expression's value on ``record`` (missing columns read as ``None``)."""
        try:
            return _Evaluator(self, record).eval(self._tree)
        except RecursionError:
            raise ExprError(f"{self.text!r}: too deeply nested") from None

    def test(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` satisfies the expression (its value's truth)."""
        return bool(self(record))


def compile_expr(text: str, columns: Iterable[str] | None = None) -> Expr:
    """Parse and check ``text``; with ``columns``, every name must be one of them.

    Raises :class:`ExprError` naming the offending token (and the allowed columns for an
    unknown name).
    """
    if not isinstance(text, str):
        raise ExprError(f"an expression must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters")
    source, quoted = _replace_backquotes(text)
    source = source.strip() or "None"
    try:
        with warnings.catch_warnings():  # "invalid decimal literal" and friends: ours to report
            warnings.simplefilter("ignore")
            tree = ast.parse(source, mode="eval").body
    except SyntaxError as e:
        where = f" at column {e.offset}" if e.offset else ""
        raise ExprError(f"{text!r}: syntax error{where}: {e.msg}") from None
    except (ValueError, RecursionError, MemoryError, OverflowError) as e:
        raise ExprError(f"{text!r}: cannot parse: {e}") from None
    known = None if columns is None else set(columns)
    checker = _Checker(text, source, quoted, known)
    try:
        checker.visit(tree)
    except RecursionError:
        raise ExprError(f"{text!r}: too deeply nested") from None
    return Expr(text, tuple(dict.fromkeys(checker.names)), tree, checker.identifiers, source)


def evaluate(text: str, record: Mapping[str, Any]) -> Any:
    """Compile ``text`` against ``record``'s columns and evaluate it on ``record``."""
    return compile_expr(text, record.keys())(record)


# ---- parsing ------------------------------------------------------------------------------


def _replace_backquotes(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with each `` `name` `` (outside string literals) replaced by an identifier."""
    out: list[str] = []
    quoted: dict[str, str] = {}
    i, n, quote = 0, len(text), ""
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and i + 1 < n:
                out.append(text[i : i + 2])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise ExprError(f"{text!r}: unterminated backquote at column {i + 1}")
            name = text[i + 1 : end]
            if not name:
                raise ExprError(f"{text!r}: empty backquoted name at column {i + 1}")
            ident = f"{_BQ}{len(quoted)}__"
            quoted[ident] = name
            out.append(f" {ident} ")
            i = end + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out), quoted


def _segment(source: str, node: ast.AST, quoted: Mapping[str, str]) -> str:
    """The text of ``node`` as the user wrote it (backquotes restored), at most 60 characters."""
    seg = ast.get_source_segment(source, node) or ""
    for ident, name in quoted.items():
        if ident.startswith(_BQ):
            seg = re.sub(rf"\s?{ident}\s?", f"`{name}`".replace("\\", "\\\\"), seg)  # unpad
    seg = seg.strip()
    return seg if len(seg) <= 60 else seg[:57].strip() + "..."


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` as the text ``"a.b.c"``; ``None`` if ``node`` is not a chain of names."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id.startswith(_BQ):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


class _Checker:
    """Walks the tree once: refuses anything outside the language, resolves column names."""

    def __init__(
        self, text: str, source: str, quoted: dict[str, str], known: set[str] | None
    ) -> None:
        self.text, self.source, self.quoted, self.known = text, source, quoted, known
        self.names: list[str] = []
        self.identifiers: dict[str, str] = {}

    def _token(self, node: ast.AST) -> str:
        return _segment(self.source, node, self.quoted) or type(node).__name__

    def _refuse(self, node: ast.AST, what: str) -> ExprError:
        return ExprError(f"{self.text!r}: {what} not allowed: {self._token(node)!r}; {_ALLOWED}")

    def _column(self, node: ast.expr, name: str) -> None:
        if self.known is not None and name not in self.known:
            close = difflib.get_close_matches(name, self.known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            allowed = ", ".join(sorted(self.known)) or "(none)"
            raise ExprError(f"{self.text!r}: unknown column {name!r}{hint}; allowed: {allowed}")
        key = node.id if isinstance(node, ast.Name) else ast.dump(node)
        self.identifiers[key] = name
        self.names.append(name)

    def visit(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant):
            if not (node.value is None or isinstance(node.value, bool | int | float | str)):
                raise self._refuse(node, f"a {type(node.value).__name__} literal")
        elif isinstance(node, ast.Name):
            if node.id.startswith(_BQ):
                if node.id not in self.quoted:
                    raise self._refuse(node, "the name")
                self._column(node, self.quoted[node.id])
            else:
                self._column(node, node.id)
        elif isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name is None:
                raise self._refuse(node, "attribute access")
            self._column(node, name)
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                self.visit(v)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.Not | ast.USub | ast.UAdd):
                raise self._refuse(node, "the operator")
            self.visit(node.operand)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _ARITH:
                raise self._refuse(node, "the operator")
            self.visit(node.left)
            self.visit(node.right)
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in _COMPARE and not isinstance(op, ast.In | ast.NotIn):
                    raise self._refuse(node, f"the comparison {type(op).__name__}")
            for v in (node.left, *node.comparators):
                self.visit(v)
        elif isinstance(node, ast.Tuple | ast.List):
            for v in node.elts:
                if isinstance(v, ast.Starred):
                    raise self._refuse(v, "unpacking")
                self.visit(v)
        else:
            raise self._refuse(node, _KIND.get(type(node), type(node).__name__))


_KIND: Final[dict[type[ast.AST], str]] = {
    ast.Call: "calls are",
    ast.Subscript: "subscripts are",
    ast.Lambda: "lambdas are",
    ast.NamedExpr: "assignment is",
    ast.IfExp: "conditional expressions are",
}


# ---- evaluation ---------------------------------------------------------------------------


def _number(x: Any) -> bool:
    return isinstance(x, Real)


class _Evaluator:
    def __init__(self, expr: Expr, record: Mapping[str, Any]) -> None:
        self.expr, self.record = expr, record

    def _error(self, node: ast.AST, why: str) -> ExprError:
        seg = _segment(self.expr._source, node, self.expr._columns)
        where = f" in {seg!r}" if seg else ""
        return ExprError(f"{self.expr.text!r}: {why}{where}")

    def eval(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name | ast.Attribute):
            key = node.id if isinstance(node, ast.Name) else ast.dump(node)
            return self.record.get(self.expr._columns[key])
        if isinstance(node, ast.BoolOp):
            value: Any = None
            for v in node.values:
                value = self.eval(v)
                if isinstance(node.op, ast.And) != bool(value):
                    return value  # and: first false; or: first true
            return value
        if isinstance(node, ast.UnaryOp):
            x = self.eval(node.operand)
            if isinstance(node.op, ast.Not):
                return not x
            if not _number(x):
                raise self._error(node, f"unary minus/plus of {type(x).__name__}")
            return -x if isinstance(node.op, ast.USub) else +x
        if isinstance(node, ast.BinOp):
            return self._arith(node, self.eval(node.left), self.eval(node.right))
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            for op, comp in zip(node.ops, node.comparators, strict=True):
                right = self.eval(comp)
                if not self._compare(node, op, left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Tuple | ast.List):
            return tuple(self.eval(v) for v in node.elts)
        raise self._error(node, f"{type(node).__name__} not allowed")  # checked earlier

    def _arith(self, node: ast.BinOp, a: Any, b: Any) -> Any:
        sym = _SYMBOL[type(node.op)]
        if not (_number(a) and _number(b)):
            raise self._error(node, f"{sym!r} needs numbers, got {_kind(a)} and {_kind(b)}")
        try:
            return _ARITH[type(node.op)](a, b)
        except (ArithmeticError, ValueError) as e:
            raise self._error(node, f"{sym!r} failed: {e}") from None

    def _compare(self, node: ast.Compare, op: ast.cmpop, a: Any, b: Any) -> bool:
        sym = _SYMBOL[type(op)]
        if isinstance(op, ast.In | ast.NotIn):
            if isinstance(b, str):
                if not isinstance(a, str):
                    raise self._error(node, f"{sym!r} a string needs a string, got {_kind(a)}")
                found = a in b
            elif isinstance(b, tuple):
                found = a in b
            else:
                raise self._error(node, f"{sym!r} needs a tuple, list or string, got {_kind(b)}")
            return found == isinstance(op, ast.In)
        if isinstance(op, _ORDERING):
            if a is None or b is None:
                return False  # unknown: not selected (like SQL)
            if not (_number(a) and _number(b)) and not (isinstance(a, str) and isinstance(b, str)):
                raise self._error(node, f"cannot order {_kind(a)} {sym} {_kind(b)}")
        try:
            return bool(_COMPARE[type(op)](a, b))
        except TypeError as e:
            raise self._error(node, f"cannot compare: {e}") from None


def _kind(x: Any) -> str:
    return f"{type(x).__name__} {x!r}" if len(repr(x)) <= 30 else type(x).__name__
