"""RocketMQ SQL92 filter expressions: parsed once, compiled into closures, partially evaluable for an index.

A consumer moving between RocketMQ and rockmq must see the same messages, quirks included, so the
rules below transcribe apache/rocketmq `filter/src/main/java/org/apache/rocketmq/filter/`
(parser/SelectorParser.jj, expression/ComparisonExpression.java, LogicExpression.java,
UnaryExpression.java, ConstantExpression.java, all from ActiveMQ's JMS selectors) and the broker's
`broker/filter/ExpressionMessageFilter.java`.

Syntax
- Keywords (AND OR NOT BETWEEN IN IS NULL TRUE FALSE CONTAINS STARTSWITH ENDSWITH) ignore case.
  Identifiers `[A-Za-z_$][A-Za-z0-9_$]*` name properties and keep their case; `TAGS` is the tag.
- Literals: 'text' ('' is a quote); integers `0 | [1-9][0-9]*[lL]?`, an Integer when they fit in
  32 bits, else a Long, an error past 64 bits; decimals `1.5 1. .5 2e3 1.5E-3` (Double; 0.0 and
  overflowing values are errors, as in ConstantExpression.createFloat); TRUE, FALSE, NULL.
  Comments `-- to end of line` (or of the expression, where RocketMQ wants a line break) and
  `/* ... */`.
- Precedence, loosest first: OR; AND; `=` `<>` `IS [NOT] NULL`; `>` `>=` `<` `<=` `[NOT] BETWEEN`
  `[NOT] IN` `[NOT] CONTAINS|STARTSWITH|ENDSWITH`; unary `+` `-` `NOT`. NOT binds tighter than any
  comparison: `NOT a = 'x'` is `(NOT a) = 'x'`, which never matches; write `NOT (a = 'x')`.
- IN lists and CONTAINS/STARTSWITH/ENDSWITH take string literals, IN a property on its left.
  `>`... take no string, boolean or NULL literal and no condition; `= NULL` is an error (IS NULL);
  BETWEEN with two literal bounds in the wrong order is an error.
- Stricter than RocketMQ, whose parser stops at the first token it cannot use and ignores the rest:
  anything after a complete expression is an error here. Length and nesting are bounded.

Evaluation: TRUE, FALSE or UNKNOWN (NULL); a message matches only on TRUE.
- A missing property is NULL. Comparisons with NULL are UNKNOWN, except: `IS [NOT] NULL`; an `=`
  whose NULL is on the right only is FALSE (`'v' = a` is FALSE for a missing `a`, so `'v' <> a` is
  TRUE while `a <> 'v'` is UNKNOWN); `a = b` with both missing is TRUE; CONTAINS/STARTSWITH/ENDSWITH
  and their NOT forms are FALSE on a missing or non-string value, or with an empty search string.
- NOT UNKNOWN is UNKNOWN. AND is FALSE if a side is FALSE, else UNKNOWN if one is, else TRUE; OR is
  the dual. Both go left to right and stop at the first FALSE (AND) or TRUE (OR).
- Property values are strings. Against a number literal the value is converted to the literal's
  type: Integer.parseInt for an Integer (a sign and decimal digits: "05" and "+5" equal 5, "5.0" and
  " 5" do not convert), Long.parseLong for a Long, Double.parseDouble for a Double (blanks around,
  exponent, NaN, Infinity, hex and f/d suffix accepted; NaN sorts above everything). `>` and friends
  between two properties convert both to Double. Against TRUE/FALSE a value counts as TRUE when it
  is "true" in any case, so `a = FALSE` holds for "no" too; `TRUE = a` fails (a ClassCastException in
  RocketMQ). Two strings compare only by `=`/`<>`; a number and a boolean are never equal.
- A failed conversion throws in RocketMQ and ExpressionMessageFilter.isMatchedByCommitLog then
  rejects the message, whatever other branch might hold. Evaluation being left to right,
  `a = 'x' OR n > 5` matches a = 'x' with n = 'abc', and `n > 5 OR a = 'x'` does not.
- A bare property used as a condition is a Boolean cast: UNKNOWN when missing, else FALSE (values
  are strings, never Booleans). `TRUE` alone matches everything, `FALSE` and `NULL` nothing.

Indexing: `SqlFilter.index_values(field)` finds the finite set of string values a property (or TAGS)
must take for the expression to be TRUE, from `field = 'v'`, `'v' = field`, `field IN (...)`, ANDs
with such a side and ORs made only of such branches; `bind(field, value)` gives the residual with the
value substituted and folded. Numeric equalities are not indexed: "5", "05" and "+5" all equal 5.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from rockmq.filter.tags import MAX_LENGTH, IllegalExpression, check_size

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "TAGS", "IllegalExpression", "SqlFilter", "compile_sql"]

MAX_DEPTH = 64  # nesting of parentheses, prefixes and chained comparisons: evaluation recurses this deep
TAGS = "TAGS"

Props = Mapping[str, str]
# A Java value: str, int, float, bool or None. Which one is told by its jtype, a tag mypy cannot
# follow, so values are typed Any and the jtype checks stand in for isinstance.
JValue: TypeAlias = Any
Eval = Callable[[Props, str | None], bool | None]

_NUMERIC = frozenset({"int", "long", "double"})
_INT32, _INT64 = (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)


class _EvalError(Exception):
    """A conversion RocketMQ would throw on: the whole expression then fails to match."""


# --- AST ------------------------------------------------------------------------------------------
# Nodes mirror RocketMQ's expression classes closely enough to apply its parse-time checks.


class _Node:
    __slots__ = ("depth",)
    depth: int


class _Prop(_Node):
    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        self.name, self.depth = name, 1


class _Const(_Node):
    """A literal; jtype is the Java class it stands for: str, int, long, double, bool or null."""

    __slots__ = ("value", "jtype")
    value: JValue
    jtype: str

    def __init__(self, value: JValue, jtype: str) -> None:
        self.value, self.jtype, self.depth = value, jtype, 1


class _Err(_Node):
    """A subexpression that always throws (found by constant folding)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.depth = 1


class _Unary(_Node):
    __slots__ = ("operand",)
    operand: _Node

    def __init__(self, operand: _Node) -> None:
        self.operand, self.depth = operand, operand.depth + 1


class _Neg(_Unary):
    __slots__ = ()


class _Not(_Unary):
    __slots__ = ()


class _Cast(_Unary):
    """A property used as a condition (UnaryExpression.createBooleanCast)."""

    __slots__ = ()


class _Junction(_Node):
    __slots__ = ("items",)
    items: tuple[_Node, ...]

    def __init__(self, items: tuple[_Node, ...]) -> None:
        self.items, self.depth = items, 1 + max(i.depth for i in items)

    @classmethod
    def of(cls, items: list[_Node]) -> _Node:
        """Flattened: RocketMQ's left-nested binary AND/OR evaluate exactly like one n-ary list."""
        flat: list[_Node] = []
        for item in items:
            flat.extend(item.items if type(item) is cls else (item,))
        return flat[0] if len(flat) == 1 else cls(tuple(flat))


class _And(_Junction):
    __slots__ = ()


class _Or(_Junction):
    __slots__ = ()


class _Eq(_Node):
    __slots__ = ("left", "right")
    left: _Node
    right: _Node

    def __init__(self, left: _Node, right: _Node) -> None:
        self.left, self.right, self.depth = left, right, 1 + max(left.depth, right.depth)


class _Cmp(_Node):
    __slots__ = ("op", "left", "right")
    op: str
    left: _Node
    right: _Node

    def __init__(self, op: str, left: _Node, right: _Node) -> None:
        self.op, self.left, self.right, self.depth = op, left, right, 1 + max(left.depth, right.depth)


class _In(_Node):
    __slots__ = ("operand", "values", "negated")
    operand: _Node
    values: tuple[str, ...]
    negated: bool

    def __init__(self, operand: _Node, values: tuple[str, ...], negated: bool) -> None:
        self.operand, self.values, self.negated, self.depth = operand, values, negated, operand.depth + 1


class _Match(_Node):
    """CONTAINS / STARTSWITH / ENDSWITH."""

    __slots__ = ("kind", "operand", "search", "negated")
    kind: str
    operand: _Node
    search: str
    negated: bool

    def __init__(self, kind: str, operand: _Node, search: str, negated: bool) -> None:
        self.kind, self.operand, self.search, self.negated = kind, operand, search, negated
        self.depth = operand.depth + 1


TRUE, FALSE, NULL, ERR = _Const(True, "bool"), _Const(False, "bool"), _Const(None, "null"), _Err()
_CONDITIONS = (_Eq, _Cmp, _Not, _Cast, _Junction, _In, _Match, _Err)


def _is_condition(n: _Node) -> bool:
    """A RocketMQ BooleanExpression: TRUE/FALSE/NULL literals and everything yielding a Boolean."""
    return isinstance(n, _CONDITIONS) or (type(n) is _Const and n.jtype in ("bool", "null"))


# --- Tokens ---------------------------------------------------------------------------------------

_KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH",
                       "ENDSWITH"})
_MATCH_KINDS = ("CONTAINS", "STARTSWITH", "ENDSWITH")
_ID = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_DECIMAL = re.compile(r"0|[1-9][0-9]*[lL]?")
_FLOAT = re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+")
_NUMBER_TAIL = re.compile(r"[A-Za-z0-9_$.]*")
_OPERATORS = ("<>", "<=", ">=", "=", "<", ">", "(", ")", ",", "+", "-")
_MIN_DOUBLE = 4.9e-324  # Double.MIN_VALUE: createFloat rejects anything below, 0.0 included

Token = tuple[str, Any, int, str]  # kind (ID KW STR NUM OP EOF), value (a str, or a _Const for STR and NUM), column, text


def _error(message: str, column: int) -> IllegalExpression:
    return IllegalExpression(f"{message} at column {column}")


def _number(text: str, column: int) -> _Const:
    if _DECIMAL.fullmatch(text):
        value = int(text.rstrip("lL"))
        if value > _INT64[1]:
            raise _error(f"integer literal {text} is out of range", column)
        return _Const(value, "int" if value <= _INT32[1] else "long")
    number = float(text)
    if math.isinf(number) or number < _MIN_DOUBLE:
        raise _error(f"decimal literal {text} is out of range (RocketMQ takes 4.9E-324 to 1.8E308)", column)
    return _Const(number, "double")


def _tokenize(src: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in " \t\n\r\f":
            i += 1
            continue
        col = i + 1
        if src.startswith("--", i):  # to end of line; RocketMQ also wants the line break
            ends = [e for e in (src.find("\n", i), src.find("\r", i)) if e >= 0]
            i = min(ends) if ends else n
            continue
        if src.startswith("/*", i):
            end = src.find("*/", i + 2)
            if end < 0:
                raise _error("unterminated comment", col)
            i = end + 2
            continue
        if c == "'":
            parts, j = [], i + 1
            while True:
                k = src.find("'", j)
                if k < 0:
                    raise _error("unterminated string literal", col)
                parts.append(src[j:k])
                if src.startswith("''", k):
                    parts.append("'")
                    j = k + 2
                    continue
                j = k + 1
                break
            tokens.append(("STR", _Const("".join(parts), "str"), col, src[i:j]))
            i = j
            continue
        m = _ID.match(src, i)
        if m:
            word = m.group()
            upper = word.upper()
            tokens.append(("KW", upper, col, word) if upper in _KEYWORDS else ("ID", word, col, word))
            i = m.end()
            continue
        if "0" <= c <= "9" or (c == "." and i + 1 < n and "0" <= src[i + 1] <= "9"):
            d, f = _DECIMAL.match(src, i), _FLOAT.match(src, i)
            end = max(d.end() if d else i, f.end() if f else i)  # the longest match, as JavaCC does
            tail = m.group() if (m := _NUMBER_TAIL.match(src, end)) else ""  # it matches, maybe nothing
            if tail and tail.upper() not in _KEYWORDS:
                raise _error(f"malformed number '{src[i:end]}{tail}'", col)
            tokens.append(("NUM", _number(src[i:end], col), col, src[i:end]))
            i = end
            continue
        if src.startswith(("!=", "=="), i):  # never valid: a hint beats "unexpected '='"
            raise _error(f"unknown operator '{src[i:i + 2]}' (use = or <>)", col)
        for op in _OPERATORS:
            if src.startswith(op, i):
                tokens.append(("OP", op, col, op))
                i += len(op)
                break
        else:
            raise _error(f"unexpected character {c!r}", col)
    tokens.append(("EOF", None, n + 1, ""))
    return tokens


# --- Parser ---------------------------------------------------------------------------------------
# Recursive descent over SelectorParser.jj's grammar, with ComparisonExpression's parse-time checks.


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens, self.pos, self.nesting = tokens, 0, 0

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def take(self) -> Token:
        tok = self.peek()
        self.pos += 1
        return tok

    @staticmethod
    def is_kw(tok: Token, *words: str) -> bool:
        return tok[0] == "KW" and tok[1] in words

    @staticmethod
    def is_op(tok: Token, *ops: str) -> bool:
        return tok[0] == "OP" and tok[1] in ops

    @staticmethod
    def unexpected(tok: Token, expected: str) -> IllegalExpression:
        what = "unexpected end of expression" if tok[0] == "EOF" else f"unexpected '{tok[3]}'"
        return IllegalExpression(f"{what} at column {tok[2]}; expected {expected}")

    def expect_kw(self, word: str) -> None:
        if not self.is_kw(self.peek(), word):
            raise self.unexpected(self.peek(), word)
        self.pos += 1

    def expect_op(self, op: str, expected: str) -> None:
        if not self.is_op(self.peek(), op):
            raise self.unexpected(self.peek(), expected)
        self.pos += 1

    def node(self, n: _Node, col: int) -> _Node:
        if n.depth > MAX_DEPTH:
            raise _error(f"expression nested more than {MAX_DEPTH} levels deep", col)
        return n

    def enter(self, col: int) -> None:
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise _error(f"expression nested more than {MAX_DEPTH} levels deep", col)

    def condition(self, n: _Node, col: int) -> _Node:
        """SelectorParser.asBooleanExpression."""
        if _is_condition(n):
            return n
        if type(n) is _Prop:
            return _Cast(n)
        raise _error(f"{_render(n)} is not a condition", col)

    def parse(self) -> _Node:
        col = self.peek()[2]
        n = self.condition(self.or_expr(), col)
        if self.peek()[0] != "EOF":
            raise self.unexpected(self.peek(), "AND, OR or the end of the expression")
        return n

    def or_expr(self) -> _Node:
        return self.junction(_Or, "OR", self.and_expr)

    def and_expr(self) -> _Node:
        return self.junction(_And, "AND", self.equality)

    def junction(self, cls: type[_Junction], word: str, operand: Callable[[], _Node]) -> _Node:
        col = self.peek()[2]
        first = operand()
        if not self.is_kw(self.peek(), word):
            return first
        items = [self.condition(first, col)]
        while self.is_kw(self.peek(), word):
            self.pos += 1
            col = self.peek()[2]
            items.append(self.condition(operand(), col))
        return self.node(cls.of(items), col)

    def equality(self) -> _Node:
        left = self.comparison()
        while True:
            tok = self.peek()
            if self.is_op(tok, "=", "<>"):
                self.pos += 1
                eq = self.node(self.equal(left, self.comparison(), tok), tok[2])
                left = eq if tok[1] == "=" else self.node(_Not(eq), tok[2])
            elif self.is_kw(tok, "IS"):
                self.pos += 1
                negated = self.is_kw(self.peek(), "NOT")
                if negated:
                    self.pos += 1
                if not self.is_kw(self.peek(), "NULL"):
                    raise self.unexpected(self.peek(), "NULL after IS NOT" if negated else "NULL or NOT NULL after IS")
                self.pos += 1
                left = self.node(_Eq(left, NULL), tok[2])  # createIsNull skips createEqual's checks
                if negated:
                    left = self.node(_Not(left), tok[2])
            else:
                return left

    def equal(self, left: _Node, right: _Node, tok: Token) -> _Node:
        """ComparisonExpression.createEqual: checkEqualOperand and checkEqualOperandCompatability."""
        for side in (left, right):
            if type(side) is _Const and side.jtype == "null":
                raise _error(f"NULL cannot be compared with '{tok[1]}' (use IS NULL)", tok[2])
        if type(left) is _Const and type(right) is _Const and left.jtype == "bool" and right.jtype != "bool":
            raise _error(f"{_render(left)} cannot be compared with {_render(right)}", tok[2])
        return _Eq(left, right)

    def orderable(self, n: _Node, op: str, col: int) -> None:
        """ComparisonExpression.checkLessThanOperand: only numbers, properties and negations."""
        if (type(n) is _Const and n.jtype not in _NUMERIC) or (type(n) is not _Const and _is_condition(n)):
            raise _error(f"{_render(n)} cannot be compared with '{op}'", col)

    def compare(self, op: str, left: _Node, right: _Node, col: int) -> _Node:
        self.orderable(left, op, col)
        self.orderable(right, op, col)
        return self.node(_Cmp(op, left, right), col)

    def comparison(self) -> _Node:
        left = self.unary()
        while True:
            tok = self.peek()
            col = tok[2]
            negated = self.is_kw(tok, "NOT")
            if negated:
                nxt = self.peek(1)
                if not self.is_kw(nxt, "BETWEEN", "IN", *_MATCH_KINDS):
                    raise self.unexpected(nxt, "BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT")
                self.pos += 1
                tok = self.peek()
            if not negated and self.is_op(tok, ">", ">=", "<", "<="):
                self.pos += 1
                left = self.compare(tok[1], left, self.unary(), col)
            elif self.is_kw(tok, *_MATCH_KINDS):
                self.pos += 1
                left = self.node(_Match(tok[1], left, self.string(), negated), col)
            elif self.is_kw(tok, "BETWEEN"):
                self.pos += 1
                left = self.between(left, negated, col)
            elif self.is_kw(tok, "IN"):
                self.pos += 1
                if type(left) is not _Prop:
                    raise _error(f"IN needs a property on its left, not {_render(left)}", col)
                self.expect_op("(", "'(' after IN")
                values = [self.string()]
                while self.is_op(self.peek(), ","):
                    self.pos += 1
                    values.append(self.string())
                self.expect_op(")", "',' or ')' in the IN list")
                left = self.node(_In(left, tuple(dict.fromkeys(values)), negated), col)
            else:
                return left

    def between(self, value: _Node, negated: bool, col: int) -> _Node:
        low = self.unary()
        self.expect_kw("AND")
        high = self.unary()
        if negated:  # createNotBetween: no bound checks beyond the comparisons' own
            return self.node(_Or((self.compare("<", value, low, col), self.compare(">", value, high, col))), col)
        if type(low) is _Const and type(high) is _Const:  # createBetween checks literal bounds only
            if low.value is None or high.value is None:
                raise _error("BETWEEN bounds cannot be NULL", col)
            if low.jtype in _NUMERIC and high.jtype in _NUMERIC and _num_cmp(high.value, high.jtype, low.value, low.jtype) < 0:
                raise _error(f"BETWEEN bounds out of order: {_render(low)} is greater than {_render(high)}", col)
        return self.node(_And((self.compare(">=", value, low, col), self.compare("<=", value, high, col))), col)

    def string(self) -> str:
        tok = self.take()
        if tok[0] != "STR":
            raise self.unexpected(tok, "a string literal")
        text: str = tok[1].value
        return text

    def unary(self) -> _Node:
        tok = self.peek()
        if self.is_op(tok, "+", "-") or self.is_kw(tok, "NOT"):
            self.pos += 1
            self.enter(tok[2])
            col = self.peek()[2]
            operand = self.unary()
            self.nesting -= 1
            if tok[1] == "+":
                return operand
            return self.node(_Neg(operand) if tok[1] == "-" else _Not(self.condition(operand, col)), tok[2])
        return self.primary()

    def primary(self) -> _Node:
        tok = self.take()
        kind, value = tok[0], tok[1]
        if kind in ("STR", "NUM"):
            literal: _Const = value
            return literal
        if kind == "ID":
            return _Prop(value)
        if kind == "KW" and value in ("TRUE", "FALSE", "NULL"):
            return {"TRUE": TRUE, "FALSE": FALSE, "NULL": NULL}[value]
        if self.is_op(tok, "("):
            self.enter(tok[2])
            n = self.or_expr()
            self.expect_op(")", "')'")
            self.nesting -= 1
            return n
        raise self.unexpected(tok, "a property, a literal or '('")


# --- Java value semantics -------------------------------------------------------------------------

_JAVA_BLANKS = "".join(map(chr, range(33)))  # String.trim, which Double.parseDouble applies
_JAVA_DOUBLE = re.compile(
    r"([+-]?)(?:(NaN)|(Infinity)|(?:((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+))[fFdD]?)"
).fullmatch


def _parse_int(s: str, bounds: tuple[int, int]) -> int:
    """Integer.parseInt / Long.parseLong: an optional sign then decimal digits, in range."""
    if s.isdecimal() or (s[:1] in ("+", "-") and s[1:].isdecimal()):
        try:
            n = int(s)
        except ValueError:  # over int()'s 4300 digits: out of range, bar absurd runs of leading zeros
            raise _EvalError from None
        if bounds[0] <= n <= bounds[1]:
            return n
    raise _EvalError


def _parse_int32(s: str) -> int:
    return _parse_int(s, _INT32)


def _parse_int64(s: str) -> int:
    return _parse_int(s, _INT64)


def _parse_double(s: str) -> float:
    """Double.parseDouble. float() agrees on finite ASCII numbers without '_'; the rest is checked
    against Java's grammar (no inf, nan, '_' or Unicode digits; NaN, Infinity, hex, f/d suffix)."""
    try:
        x = float(s)
    except ValueError:
        pass
    else:
        if x - x == 0.0 and s.isascii() and "_" not in s:  # x - x is NaN for inf and nan
            return x
    m = _JAVA_DOUBLE(s.strip(_JAVA_BLANKS))
    if m is None:
        raise _EvalError
    sign, nan, inf, dec, hexa = m.groups()
    if nan:
        return math.nan
    if inf:
        return -math.inf if sign == "-" else math.inf
    try:
        value = float(dec) if dec else float.fromhex(hexa)
    except OverflowError:
        value = math.inf
    return -value if sign == "-" else value


_CONVERT: dict[str | None, Callable[[str], JValue]] = {"int": _parse_int32, "long": _parse_int64, "double": _parse_double}


def _java_boolean(s: str) -> bool:
    """Boolean.valueOf: "true" in any case, anything else is false."""
    return len(s) == 4 and s.isascii() and s.lower() == "true"


def _dcmp(a: float, b: float) -> int:
    """Double.compareTo: NaN equals itself and sorts above everything; -0.0 sorts below 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    an, bn = a != a, b != b
    if an or bn:
        return an - bn
    sa, sb = math.copysign(1.0, a), math.copysign(1.0, b)
    return (sa > sb) - (sa < sb)


def _num_cmp(a: JValue, at: str | None, b: JValue, bt: str | None) -> int:
    if at == "double" or bt == "double":
        return _dcmp(float(a), float(b))
    order: int = (a > b) - (a < b)
    return order


def _jcompare(lv: JValue, lt: str | None, rv: JValue, rt: str | None) -> int:
    """ComparisonExpression.__compare for two non-null values of different classes."""
    if lt == "bool":
        if rt == "str":
            raise _EvalError  # it casts the Boolean to String: a ClassCastException
        return -1
    if lt == "str":
        if rt == "bool":
            b = _java_boolean(lv)
            order: int = (b > rv) - (b < rv)
            return order
        return _num_cmp(_CONVERT[rt](lv), rt, rv, rt)
    if rt == "str":
        return _num_cmp(lv, lt, _CONVERT[lt](rv), lt)
    if rt == "bool":
        return -1
    return _num_cmp(lv, lt, rv, rt)


def _java_equal(lv: JValue, lt: str | None, rv: JValue, rt: str | None) -> bool | None:
    """doCreateEqual's evaluate, with jtypes for the non-null values."""
    if lv is None or rv is None:
        if lv is None and rv is None:
            return True
        return None if lv is None else False
    if lt == rt:
        return _dcmp(lv, rv) == 0 if lt == "double" else lv == rv
    return _jcompare(lv, lt, rv, rt) == 0


def _java_order(lv: JValue, lt: str | None, rv: JValue, rt: str | None) -> int:
    """ComparisonExpression.evaluate for > >= < <= on two non-null values."""
    if lt == "str" and rt == "str":
        return _dcmp(_parse_double(lv), _parse_double(rv))
    if lt == rt:
        return _dcmp(lv, rv) if lt == "double" else (lv > rv) - (lv < rv)
    return _jcompare(lv, lt, rv, rt)


def _jtype(v: JValue, hint: str | None) -> str | None:
    """The Java class of a runtime value; Python ints come only from literals, whose jtype is the hint."""
    c = v.__class__
    if c is str:
        return "str"
    if c is bool:
        return "bool"
    if c is float:
        return "double"
    return hint


_ORDER_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
_MATCHERS: dict[str, Callable[[str, str], bool]] = {
    "CONTAINS": lambda v, s: s in v, "STARTSWITH": str.startswith, "ENDSWITH": str.endswith}


# --- Folding and partial evaluation ---------------------------------------------------------------


def _kinds(n: _Node) -> frozenset[str]:
    """The jtypes a folded node's non-null values can have."""
    if isinstance(n, _Prop):
        return frozenset({"str"})
    if isinstance(n, _Const):
        return frozenset() if n.jtype == "null" else frozenset({n.jtype})
    if isinstance(n, _Neg):
        return _kinds(n.operand) & _NUMERIC
    if isinstance(n, _Err):
        return frozenset()
    return frozenset({"bool"})


def _may_raise(n: _Node) -> bool:
    """Whether evaluating the (folded) node can throw; conservative."""
    if isinstance(n, _Prop) or isinstance(n, _Const):
        return False
    if isinstance(n, _Err):
        return True
    if isinstance(n, _Unary) or isinstance(n, _In):
        return _may_raise(n.operand)
    if isinstance(n, _Match):
        return bool(n.search) and _may_raise(n.operand)
    if isinstance(n, _Junction):
        return any(_may_raise(i) for i in n.items)
    assert isinstance(n, _Eq | _Cmp)
    if _may_raise(n.left) or _may_raise(n.right):
        return True
    lk, rk = _kinds(n.left), _kinds(n.right)
    if "str" in lk and rk & _NUMERIC:
        return True  # the string may not parse
    if "str" in rk and lk & (_NUMERIC | {"bool"}):
        return True  # ditto, or a Boolean cast to String
    return isinstance(n, _Cmp) and "str" in lk and "str" in rk  # both parsed as Double


def _const(compute: Callable[[], bool | None]) -> _Node:
    try:
        v = compute()
    except _EvalError:
        return ERR
    return NULL if v is None else (TRUE if v else FALSE)


def _fold(n: _Node, bind: tuple[str, str] | None) -> _Node:
    """Constant-fold, optionally with property bind[0] known to be bind[1], keeping RocketMQ's
    evaluation order: a side that might throw is never dropped in front of a short-circuit."""
    if isinstance(n, _Prop):
        return _Const(bind[1], "str") if bind is not None and n.name == bind[0] else n
    if isinstance(n, _Const) or isinstance(n, _Err):
        return n
    if isinstance(n, _And) or isinstance(n, _Or):
        return _fold_junction(n, bind)
    if isinstance(n, _Eq) or isinstance(n, _Cmp):
        lhs, rhs = _fold(n.left, bind), _fold(n.right, bind)
        if type(lhs) is _Err:
            return lhs
        if isinstance(n, _Cmp) and type(lhs) is _Const and lhs.value is None:
            return NULL  # a NULL left side answers before the right one is evaluated
        if type(lhs) is _Const and type(rhs) is _Const:
            if isinstance(n, _Eq):
                return _const(lambda: _java_equal(lhs.value, lhs.jtype, rhs.value, rhs.jtype))
            if rhs.value is None:
                return NULL
            op = _ORDER_OPS[n.op]
            return _const(lambda: op(_java_order(lhs.value, lhs.jtype, rhs.value, rhs.jtype), 0))
        if type(rhs) is _Err and isinstance(n, _Eq):
            return rhs  # both sides are always evaluated
        return _Eq(lhs, rhs) if isinstance(n, _Eq) else _Cmp(n.op, lhs, rhs)
    if isinstance(n, _Match) and not n.search:
        return FALSE  # an empty search string answers FALSE before the operand is evaluated
    assert isinstance(n, _Unary | _In | _Match)
    x = _fold(n.operand, bind)
    if type(x) is _Err:
        return x
    if type(x) is _Const:
        v = x.value
        if isinstance(n, _Neg):
            return _Const(-v, x.jtype) if x.jtype in _NUMERIC else NULL
        if isinstance(n, _Not):
            return NULL if v is None else (FALSE if v else TRUE)
        if isinstance(n, _Cast):
            return NULL if v is None else (x if x.jtype == "bool" else FALSE)
        if isinstance(n, _In):
            if v.__class__ is not str:
                return NULL
            return TRUE if (v in n.values) != n.negated else FALSE
        if isinstance(n, _Match):
            if v.__class__ is not str:
                return FALSE
            return TRUE if _MATCHERS[n.kind](v, n.search) != n.negated else FALSE
    if isinstance(n, _Neg) and not _may_raise(x):
        return NULL  # a negated property or condition is never a number
    if isinstance(n, _In):
        return _In(x, n.values, n.negated)
    if isinstance(n, _Match):
        return _Match(n.kind, x, n.search, n.negated)
    return type(n)(x)


def _fold_junction(n: _Junction, bind: tuple[str, str] | None) -> _Node:
    """Drop neutral items, cut after the first item that ends evaluation (FALSE for AND, TRUE for
    OR, or one that always throws), and collapse to that item when nothing before it can throw."""
    stop = type(n) is _Or  # the deciding value: FALSE ends an AND, TRUE an OR
    out: list[_Node] = []
    for item in n.items:
        x = _fold(item, bind)
        for y in (x.items if type(x) is type(n) else (x,)):
            if type(y) is _Const:
                if y.value is (not stop) or (y.value is None and any(o is NULL for o in out)):
                    continue  # neutral, or a second UNKNOWN
                y = NULL if y.value is None else y
            out.append(y)
            if type(y) is _Err or (type(y) is _Const and y.value is stop):
                break
        else:
            continue
        break  # evaluation never gets past the item just appended
    if out and type(out[-1]) is _Const and out[-1].value is stop and not any(_may_raise(i) for i in out[:-1]):
        return TRUE if stop else FALSE
    if not out:
        return FALSE if stop else TRUE
    return out[0] if len(out) == 1 else type(n)(tuple(out))


def _candidates(n: _Node, field: str) -> frozenset[str] | None:
    """Values of `field` outside which the node cannot be TRUE; None when there is no finite set."""
    if isinstance(n, _Eq):
        for a, b in ((n.left, n.right), (n.right, n.left)):
            if type(a) is _Prop and a.name == field and type(b) is _Const and b.jtype == "str":
                return frozenset((b.value,))
        return None
    if isinstance(n, _In):
        if not n.negated and type(n.operand) is _Prop and n.operand.name == field:
            return frozenset(n.values)
        return None
    if isinstance(n, _Const):
        return None if n.value is True else frozenset()
    if isinstance(n, _Err):
        return frozenset()
    if isinstance(n, _And):
        found: frozenset[str] | None = None
        for item in n.items:
            c = _candidates(item, field)
            if c is not None:
                found = c if found is None else found & c
        return found
    if isinstance(n, _Or):
        union: set[str] = set()
        for item in n.items:
            c = _candidates(item, field)
            if c is None:
                return None
            union |= c
        return frozenset(union)
    return None


def _names(n: _Node) -> set[str]:
    """The property names a node reads."""
    if type(n) is _Prop:
        return {n.name}
    children = n.items if isinstance(n, _Junction) else [getattr(n, a) for a in ("left", "right", "operand") if hasattr(n, a)]
    return set().union(*map(_names, children))


# --- Compilation to closures ----------------------------------------------------------------------


def _getter(name: str) -> Callable[[Props, str | None], str | None]:
    if name == TAGS:
        return lambda props, tag: tag
    return lambda props, tag: props.get(name)


def _value(n: _Node, fast: bool) -> tuple[Callable[[Props, str | None], JValue], str | None]:
    """A closure giving an operand's value, and the jtype of the ints it may give."""
    if isinstance(n, _Prop):
        return _getter(n.name), None
    if isinstance(n, _Const):
        v = n.value
        return (lambda props, tag: v), n.jtype
    if isinstance(n, _Neg):
        inner, hint = _value(n.operand, fast)

        def negate(props: Props, tag: str | None) -> JValue:
            v = inner(props, tag)
            return None if v is None or v.__class__ is bool or v.__class__ is str else -v

        return negate, hint
    return _compile(n, fast), None


def _compile(n: _Node, fast: bool = True) -> Eval:
    """A closure returning True, False or None (UNKNOWN), raising _EvalError where RocketMQ throws."""
    if fast:
        f = _compile_fast(n)
        if f is not None:
            return f
    if isinstance(n, _Const):
        v = n.value
        return lambda props, tag: v
    if isinstance(n, _Err):
        def fail(props: Props, tag: str | None) -> bool | None:
            raise _EvalError
        return fail
    if isinstance(n, _And) or isinstance(n, _Or):
        return _compile_junction(isinstance(n, _And), [_compile(i, fast) for i in n.items])
    if isinstance(n, _Not):
        inner = _compile(n.operand, fast)

        def negation(props: Props, tag: str | None) -> bool | None:
            v = inner(props, tag)
            return None if v is None else not v

        return negation
    if isinstance(n, _Cast):
        get, _ = _value(n.operand, fast)

        def cast(props: Props, tag: str | None) -> bool | None:
            v = get(props, tag)
            return None if v is None else (v if v.__class__ is bool else False)

        return cast
    if isinstance(n, _Eq):
        (lf, lh), (rf, rh) = _value(n.left, fast), _value(n.right, fast)

        def equal(props: Props, tag: str | None) -> bool | None:
            lv, rv = lf(props, tag), rf(props, tag)
            return _java_equal(lv, _jtype(lv, lh), rv, _jtype(rv, rh))

        return equal
    if isinstance(n, _Cmp):
        (lf, lh), (rf, rh) = _value(n.left, fast), _value(n.right, fast)
        op = _ORDER_OPS[n.op]

        def order(props: Props, tag: str | None) -> bool | None:
            lv = lf(props, tag)
            if lv is None:
                return None
            rv = rf(props, tag)
            if rv is None:
                return None
            return op(_java_order(lv, _jtype(lv, lh), rv, _jtype(rv, rh)), 0)

        return order
    if isinstance(n, _In):
        get, _ = _value(n.operand, fast)
        values, negated = frozenset(n.values), n.negated

        def member(props: Props, tag: str | None) -> bool | None:
            v = get(props, tag)
            if v is None or v.__class__ is not str:
                return None
            return (v in values) is not negated

        return member
    if isinstance(n, _Match):
        get, _ = _value(n.operand, fast)
        test, search, negated = _MATCHERS[n.kind], n.search, n.negated

        def match(props: Props, tag: str | None) -> bool | None:
            v = get(props, tag)
            if v.__class__ is not str:
                return False
            return test(v, search) is not negated

        return match
    raise AssertionError(f"not a condition: {type(n).__name__}")


def _compile_junction(is_and: bool, fs: list[Eval]) -> Eval:
    stop = not is_and  # the value that decides: FALSE for AND, TRUE for OR
    if len(fs) == 2:
        a, b = fs

        def pair(props: Props, tag: str | None) -> bool | None:
            x = a(props, tag)
            if x is stop:
                return stop
            y = b(props, tag)
            if y is stop:
                return stop
            return None if x is None or y is None else not stop

        return pair

    def chain(props: Props, tag: str | None) -> bool | None:
        unknown = False
        for f in fs:
            v = f(props, tag)
            if v is stop:
                return stop
            if v is None:
                unknown = True
        return None if unknown else not stop

    return chain


def _compile_fast(n: _Node) -> Eval | None:
    """Specialised closures for the common shapes on a plain property (TAGS takes the generic path)."""
    if isinstance(n, _Not):
        x = n.operand
        if type(x) is _Eq and type(x.left) is _Prop and x.left.name != TAGS and type(x.right) is _Const:
            name, c = x.left.name, x.right.value
            if x.right.jtype == "null":
                return lambda props, tag: props.get(name) is not None
            if x.right.jtype == "str":
                def differs(props: Props, tag: str | None) -> bool | None:
                    v = props.get(name)
                    return None if v is None else v != c
                return differs
        return None
    if isinstance(n, _In):
        x = n.operand
        if type(x) is not _Prop or x.name == TAGS:
            return None
        name, values, negated = x.name, frozenset(n.values), n.negated

        def member(props: Props, tag: str | None) -> bool | None:
            v = props.get(name)
            return None if v is None else (v in values) is not negated

        return member
    if isinstance(n, _Match):
        x = n.operand
        if type(x) is not _Prop or x.name == TAGS:
            return None
        name, test, search, negated = x.name, _MATCHERS[n.kind], n.search, n.negated

        def match(props: Props, tag: str | None) -> bool | None:
            v = props.get(name)
            return False if v.__class__ is not str else test(v, search) is not negated

        return match
    if isinstance(n, _Eq):
        return _fast_equal(n.left, n.right)
    if isinstance(n, _Cmp):
        return _fast_order(n.op, n.left, n.right)
    return None


def _fast_equal(left: _Node, right: _Node) -> Eval | None:
    if type(left) is _Prop and type(right) is _Prop and TAGS not in (left.name, right.name):
        a, b = left.name, right.name

        def same(props: Props, tag: str | None) -> bool | None:
            x, y = props.get(a), props.get(b)
            if x is None:
                return True if y is None else None
            return False if y is None else x == y

        return same
    if type(left) is _Prop and type(right) is _Const:
        prop, const, missing = left, right, None  # a NULL left side is UNKNOWN
    elif type(right) is _Prop and type(left) is _Const and left.jtype != "null":
        prop, const, missing = right, left, False  # a NULL right side only is FALSE
    else:
        return None
    if prop.name == TAGS:
        return None
    name, c, jt = prop.name, const.value, const.jtype
    if jt == "str":
        def text(props: Props, tag: str | None) -> bool | None:
            v = props.get(name)
            return missing if v is None else v == c
        return text
    if jt == "null":  # `a IS NULL`
        return lambda props, tag: props.get(name) is None
    if jt == "bool":
        if const is left:
            def clash(props: Props, tag: str | None) -> bool | None:
                if props.get(name) is None:
                    return False
                raise _EvalError  # Boolean cast to String
            return clash

        def boolean(props: Props, tag: str | None) -> bool | None:
            v = props.get(name)
            return None if v is None else _java_boolean(v) is c
        return boolean
    if jt == "double" and not (math.isfinite(c) and c != 0):
        return None  # literals are finite and non-zero; anything else takes the generic path
    conv: Callable[[str], float] = _CONVERT[jt]
    number: float = c
    if jt == "double":
        def decimal(props: Props, tag: str | None) -> bool | None:
            v = props.get(name)
            return missing if v is None else number == conv(v)
        return decimal

    def integer(props: Props, tag: str | None) -> bool | None:
        v = props.get(name)
        if v is None:
            return missing
        if v.isdecimal() and len(v) < 10:  # the common case, always in range
            return int(v) == number
        return number == conv(v)

    return integer


def _fast_order(op: str, left: _Node, right: _Node) -> Eval | None:
    if type(left) is _Prop and type(right) is _Const and right.jtype in _NUMERIC:
        name, c, jt = left.name, right.value, right.jtype
    elif type(right) is _Prop and type(left) is _Const and left.jtype in _NUMERIC:
        name, c, jt, op = right.name, left.value, left.jtype, _FLIP[op]
    else:
        return None
    if name == TAGS or (jt == "double" and math.isnan(c)):
        return None
    test = _ORDER_OPS[op]
    if jt != "double":
        conv = _CONVERT[jt]

        def integer(props: Props, tag: str | None) -> bool | None:
            v = props.get(name)
            if v is None:
                return None
            if v.isdecimal() and len(v) < 10:  # the common case, always in range
                return test(int(v), c)
            return test(conv(v), c)

        return integer
    nan_answer = op in (">", ">=")  # Double.compareTo puts NaN above everything

    def double(props: Props, tag: str | None) -> bool | None:
        v = props.get(name)
        if v is None:
            return None
        x = _parse_double(v)
        if x != x:
            return nan_answer
        if x == c == 0:  # -0.0 < 0.0 for compareTo
            return test(_dcmp(x, c), 0)
        return test(x, c)

    return double


def _always(props: Props, tag: str | None = None) -> bool:
    return True


def _never(props: Props, tag: str | None = None) -> bool:
    return False


def _cost(n: _Node) -> int:
    """A rough cost over selectivity: equalities (cheap and selective) before the rest, string tests
    before integer parsing before decimal parsing."""
    if isinstance(n, _Prop) or isinstance(n, _Const) or isinstance(n, _Err):
        return 0
    if isinstance(n, _Junction):
        return 2 + sum(map(_cost, n.items))
    if isinstance(n, _Eq) or isinstance(n, _Cmp):
        kinds = _kinds(n.left) | _kinds(n.right)
        cost = (1 if isinstance(n, _Eq) else 3) + 2 * bool(kinds & {"int", "long"}) + 4 * ("double" in kinds)
        if isinstance(n, _Cmp) and "str" in kinds and not kinds & _NUMERIC:
            cost += 8  # two properties parsed as Double
        return cost + _cost(n.left) + _cost(n.right)
    assert isinstance(n, _Unary | _In | _Match)
    return 3 + _cost(n.operand)


def _top(n: _Node, fast: bool) -> Callable[[Props, str | None], bool]:
    """The match predicate: TRUE only, any evaluation error means no match (never raises)."""
    if n is TRUE:
        return _always
    if type(n) is _Const or type(n) is _Err:
        return _never
    if type(n) is _And:
        # TRUE needs every item TRUE, whatever the others give or throw: any order will do, so the
        # cheap items go first and the first one that is not TRUE ends it
        fs = [_compile(i, fast) for i in sorted(n.items, key=_cost)]
        if len(fs) == 2:
            a, b = fs

            def both(props: Props, tag: str | None = None) -> bool:
                try:
                    return a(props, tag) is True and b(props, tag) is True
                except Exception:
                    return False

            return both
        if len(fs) == 3:
            a, b, c = fs

            def all3(props: Props, tag: str | None = None) -> bool:
                try:
                    return a(props, tag) is True and b(props, tag) is True and c(props, tag) is True
                except Exception:
                    return False

            return all3

        def every(props: Props, tag: str | None = None) -> bool:
            try:
                for f in fs:
                    if f(props, tag) is not True:
                        return False
                return True
            except Exception:
                return False

        return every
    if type(n) is _Or:  # TRUE on the first TRUE item, unless an earlier one throws
        fs = [_compile(i, fast) for i in n.items]

        def some(props: Props, tag: str | None = None) -> bool:
            try:
                for f in fs:
                    if f(props, tag) is True:
                        return True
                return False
            except Exception:
                return False

        return some

    ev = _compile(n, fast)

    def matches(props: Props, tag: str | None = None) -> bool:
        try:
            return ev(props, tag) is True
        except Exception:
            return False

    return matches


# --- Rendering ------------------------------------------------------------------------------------


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _render(n: _Node) -> str:
    if isinstance(n, _Prop):
        return n.name
    if isinstance(n, _Const):
        v, jt = n.value, n.jtype
        if jt == "str":
            return _quote(v)
        if jt in ("bool", "null"):
            return {True: "TRUE", False: "FALSE", None: "NULL"}[v]
        return repr(v)
    if isinstance(n, _Err):
        return "<conversion error>"
    if isinstance(n, _Neg):
        return "-" + _operand(n.operand)
    if isinstance(n, _Cast):
        return _render(n.operand)
    if isinstance(n, _Not):
        x = n.operand
        if type(x) is _Eq and x.right is NULL:
            return f"{_operand(x.left)} IS NOT NULL"
        if type(x) is _Eq:
            return f"{_operand(x.left)} <> {_operand(x.right)}"
        return "NOT " + _operand(x)
    if isinstance(n, _And):
        return " AND ".join(f"({_render(i)})" if type(i) is _Or else _render(i) for i in n.items)
    if isinstance(n, _Or):
        return " OR ".join(_render(i) for i in n.items)
    if isinstance(n, _Eq):
        if n.right is NULL:
            return f"{_operand(n.left)} IS NULL"
        return f"{_operand(n.left)} = {_operand(n.right)}"
    if isinstance(n, _Cmp):
        return f"{_operand(n.left)} {n.op} {_operand(n.right)}"
    assert isinstance(n, _In | _Match)
    neg = "NOT " if n.negated else ""
    if isinstance(n, _In):
        return f"{_operand(n.operand)} {neg}IN ({', '.join(map(_quote, n.values))})"
    return f"{_operand(n.operand)} {neg}{n.kind} {_quote(n.search)}"


def _operand(n: _Node) -> str:
    if type(n) in (_Prop, _Cast, _Const):
        return _render(n)
    return f"({_render(n)})"


# --- Public API -----------------------------------------------------------------------------------


class SqlFilter:
    """A compiled SQL92 filter. `f(props, tag)` is True when the message matches; it never raises.

    `always_true` marks a filter that needs no evaluation (an index residual that folded to TRUE).
    """

    __slots__ = ("expression", "_node", "matches", "always_true")

    def __init__(self, expression: str, node: _Node, fast: bool = True) -> None:
        self.expression = expression
        self._node = node
        self.matches: Callable[[Props, str | None], bool] = _top(node, fast)
        self.always_true = node is TRUE

    def __call__(self, props: Props, tag: str | None = None) -> bool:
        return self.matches(props, tag)

    def __str__(self) -> str:
        """The folded expression, e.g. a residual's remaining conditions."""
        return _render(self._node)

    def __repr__(self) -> str:
        return f"SqlFilter({self.expression!r})"

    @property
    def never_true(self) -> bool:
        """No message can match, as far as index_values sees (`FALSE`, `a = 'x' AND a = 'y'`)."""
        return any(_candidates(self._node, name) == frozenset() for name in _names(self._node) | {""})

    def index_values(self, field: str) -> frozenset[str] | None:
        """The values property `field` (or TAGS) must have for a match, or None if unbounded."""
        return _candidates(self._node, field)

    def bind(self, field: str, value: str) -> SqlFilter:
        """The residual filter for messages whose `field` is `value`: substituted and folded."""
        node = _fold(self._node, (field, value))
        return SqlFilter(_render(node), node)

    def index_keys(self, field: str) -> dict[str, SqlFilter] | None:
        """{value: residual} covering every way to match, or None when `field` is not bounded."""
        values = self.index_values(field)
        if values is None:
            return None
        return {v: self.bind(field, v) for v in sorted(values)}


def compile_sql(expression: str) -> SqlFilter:
    """Parse and compile an SQL92 filter expression; IllegalExpression says what is wrong and where."""
    return _compile_sql(expression, True)


def _compile_sql(expression: str, fast: bool) -> SqlFilter:
    """fast=False skips the specialised closures: the tests check both paths agree."""
    check_size(expression, tags=False)
    tokens = _tokenize(expression)
    if tokens[0][0] == "EOF":
        raise IllegalExpression("empty expression")
    return SqlFilter(expression, _fold(_Parser(tokens).parse(), None), fast)
