"""``$where``: the JavaScript predicate of a query, for the subset of JavaScript it is written in.

mongod runs a ``$where`` string (or Code, whose scope gives global variables) as a function
with the document as ``this`` (and as ``obj``).  The simulator has no JavaScript engine; this
module reads the expressions such predicates are made of and evaluates them with JavaScript's
rules:

* a bare expression, or ``function() { return <expression>; }``;
* literals (numbers, strings, ``true``, ``false``, ``null``, ``undefined``), ``this`` and
  ``obj``, the Code's scope variables, member access (``this.a.b``, ``this["a"]``,
  ``this.tags[0]``, ``.length`` of strings and arrays), parentheses;
* ``!``, unary ``-`` and ``+``, ``* / % + -`` (``+`` joins strings), ``< <= > >=``,
  ``== != === !==``, ``&&`` and ``||`` (which give an operand, as in JavaScript);
* ``sleep(ms)``, which mongod's shell functions provide: the time is added to the command's
  JavaScript clock (:func:`js_clock`), and the dispatcher holds the reply back that long (or
  until the command's maxTimeMS), so only the connection that asked waits.

Anything else (statements, other functions, assignments) is refused when the filter compiles,
with mongod's JSInterpreterFailure (139), as a JavaScript error would be; so is a member of
``null`` or ``undefined`` while a document is tested.  Input: the ``$where`` value; output: a
predicate over documents.  BSON numbers read as JavaScript numbers (doubles); other BSON
values (ObjectId, dates, binaries) are objects: truthy, equal only to themselves.
"""

from __future__ import annotations

import contextvars
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from mongo_sansio.bson import Code, Decimal128
from mongo_sansio.testing.engine.errors import CommandError, bad_value

__all__ = ["JsClock", "compile_where", "js_clock"]


class _Undefined:
    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = _Undefined()
_Env = Mapping[str, Any]
_Node = Callable[[_Env], Any]


class JsClock:
    """The time the JavaScript of one command has slept, in milliseconds."""

    def __init__(self) -> None:
        self.slept_ms = 0.0


_CLOCK: contextvars.ContextVar[JsClock | None] = contextvars.ContextVar("js_clock", default=None)


@contextmanager
def js_clock() -> Iterator[JsClock]:
    """A clock for the commands run inside: ``sleep`` adds to it (outside one it adds nowhere)."""
    clock = JsClock()
    token = _CLOCK.set(clock)
    try:
        yield clock
    finally:
        _CLOCK.reset(token)


def _js_error(message: str) -> CommandError:
    return CommandError(139, "JSInterpreterFailure", message)


def compile_where(value: Any) -> Callable[[Any], bool]:
    """The predicate of ``{$where: value}``; CommandError for a bad type or unsupported code."""
    scope: Mapping[str, Any] = {}
    if isinstance(value, Code):
        source = str(value)
        scope = value.scope or {}
    elif isinstance(value, str):
        source = value
    else:
        raise bad_value("$where got bad type")
    node = _Parser(source).program()

    def predicate(document: Any) -> bool:
        env = {**scope, "this": document, "obj": document}
        return truthy(node(env))

    return predicate


# -- values ---------------------------------------------------------------------------------


def to_js(value: Any) -> Any:
    """A BSON value as JavaScript sees it: numbers as doubles, the rest as it is."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, Decimal128):
        return float(value.to_decimal())
    if isinstance(value, Decimal):
        return float(value)
    return value


def truthy(value: Any) -> bool:
    if value is None or value is UNDEFINED:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return not (value == 0 or math.isnan(value))
    if isinstance(value, str):
        return bool(value)
    return True


def to_number(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return value
    if value is None:
        return 0.0
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        try:
            return float(text)
        except ValueError:
            return math.nan
    return math.nan


def to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, list):
        return ",".join("" if v is None or v is UNDEFINED else to_string(to_js(v)) for v in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def _member(container: Any, name: Any) -> Any:
    if container is None or container is UNDEFINED:
        raise _js_error(f"TypeError: cannot read property '{to_string(name)}' of {to_string(container)}")
    if isinstance(container, Mapping):
        key = to_string(name)
        return to_js(container[key]) if key in container else UNDEFINED
    if isinstance(container, list | str):
        if name == "length":
            return float(len(container))
        index = to_number(name)
        if not math.isnan(index) and index.is_integer() and 0 <= index < len(container):
            return to_js(container[int(index)])
    return UNDEFINED


def _strict_equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return a is b  # null, undefined, and objects: identity


def _loose_equal(a: Any, b: Any) -> bool:
    nullish = (None, UNDEFINED)
    if a in nullish or b in nullish:
        return a in nullish and b in nullish
    primitive = (float, str, bool)
    if isinstance(a, primitive) and isinstance(b, primitive):
        if isinstance(a, str) and isinstance(b, str):
            return a == b
        return to_number(a) == to_number(b)
    return a is b


def _compare(op: str, a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        x: Any = a
        y: Any = b
    else:
        x, y = to_number(a), to_number(b)
        if math.isnan(x) or math.isnan(y):
            return False
    if op == "<":
        return bool(x < y)
    if op == "<=":
        return bool(x <= y)
    if op == ">":
        return bool(x > y)
    return bool(x >= y)


def _arithmetic(op: str, a: Any, b: Any) -> Any:
    if op == "+" and (isinstance(a, str) or isinstance(b, str) or not _primitive(a) or not _primitive(b)):
        return to_string(a) + to_string(b)
    x, y = to_number(a), to_number(b)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if op == "/":
        if y == 0:
            return math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y)
        return x / y
    if y == 0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
        return math.nan
    return math.fmod(x, y)


def _primitive(value: Any) -> bool:
    return value is None or value is UNDEFINED or isinstance(value, float | str | bool)


def _sleep(arguments: list[Any]) -> Any:
    milliseconds = to_number(arguments[0]) if arguments else math.nan
    clock = _CLOCK.get()
    if clock is not None and not math.isnan(milliseconds) and milliseconds > 0:
        clock.slept_ms += milliseconds
    return UNDEFINED


_FUNCTIONS: dict[str, Callable[[list[Any]], Any]] = {"sleep": _sleep}

# -- parsing --------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<name>[A-Za-z_$][\w$]*)
    | (?P<punct>===|!==|==|!=|<=|>=|&&|\|\||[<>!+\-*/%()\[\]{}.,;])
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_BINARY = [("||",), ("&&",), ("==", "!=", "===", "!=="), ("<", "<=", ">", ">="), ("+", "-"),
           ("*", "/", "%")]


def _tokens(source: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while True:
        while position < len(source) and source[position].isspace():
            position += 1
        if position >= len(source):
            return tokens
        found = _TOKEN.match(source, position)
        if found is None or found.end() == position:
            raise _js_error(f"SyntaxError: unexpected character {source[position]!r}")
        kind = found.lastgroup or ""
        tokens.append((kind, found.group(kind)))
        position = found.end()


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


class _Parser:
    """A recursive-descent parser of the supported subset; each method returns a node, a
    function of the environment (``this``, ``obj`` and the scope) to the value."""

    def __init__(self, source: str) -> None:
        self.tokens = _tokens(source)
        self.at = 0

    def _peek(self, text: str) -> bool:
        return self.at < len(self.tokens) and self.tokens[self.at][1] == text

    def _take(self, text: str) -> bool:
        if self._peek(text):
            self.at += 1
            return True
        return False

    def _expect(self, text: str) -> None:
        if not self._take(text):
            got = self.tokens[self.at][1] if self.at < len(self.tokens) else "end of input"
            raise _js_error(f"SyntaxError: expected {text!r}, got {got!r}")

    def program(self) -> _Node:
        if self._take("function"):
            if self.at < len(self.tokens) and self.tokens[self.at][0] == "name":
                self.at += 1  # a named function: the name does not matter
            self._expect("(")
            self._expect(")")
            self._expect("{")
            node = self._statement()
            self._expect("}")
        else:
            node = self._statement()
        self._take(";")
        if self.at != len(self.tokens):
            raise _js_error(f"SyntaxError: unsupported JavaScript at {self.tokens[self.at][1]!r}")
        return node

    def _statement(self) -> _Node:
        self._take("return")
        node = self._binary(0)
        self._take(";")
        return node

    def _binary(self, level: int) -> _Node:
        if level == len(_BINARY):
            return self._unary()
        left = self._binary(level + 1)
        while self.at < len(self.tokens) and self.tokens[self.at][1] in _BINARY[level]:
            op = self.tokens[self.at][1]
            self.at += 1
            left = _combine(op, left, self._binary(level + 1))
        return left

    def _unary(self) -> _Node:
        for op in ("!", "-", "+"):
            if self._take(op):
                operand = self._unary()
                if op == "!":
                    return lambda env: not truthy(operand(env))
                if op == "-":
                    return lambda env: -to_number(operand(env))
                return lambda env: to_number(operand(env))
        return self._postfix(self._primary())

    def _postfix(self, node: _Node) -> _Node:
        while True:
            if self._take("."):
                if self.at >= len(self.tokens) or self.tokens[self.at][0] != "name":
                    raise _js_error("SyntaxError: expected a property name after '.'")
                name = self.tokens[self.at][1]
                self.at += 1
                node = (lambda base, key: lambda env: _member(base(env), key))(node, name)
            elif self._take("["):
                index = self._binary(0)
                self._expect("]")
                node = (lambda base, key: lambda env: _member(base(env), key(env)))(node, index)
            else:
                return node

    def _primary(self) -> _Node:
        if self.at >= len(self.tokens):
            raise _js_error("SyntaxError: unexpected end of input")
        kind, text = self.tokens[self.at]
        self.at += 1
        if kind == "number":
            number = float(text)
            return lambda env: number
        if kind == "string":
            string = _unquote(text)
            return lambda env: string
        if text == "(":
            node = self._binary(0)
            self._expect(")")
            return node
        if kind != "name":
            raise _js_error(f"SyntaxError: unexpected {text!r}")
        constants = {"true": True, "false": False, "null": None, "undefined": UNDEFINED,
                     "NaN": math.nan, "Infinity": math.inf}
        if text in constants:
            constant = constants[text]
            return lambda env: constant
        if self._take("("):
            arguments = []
            while not self._take(")"):
                arguments.append(self._binary(0))
                if not self._peek(")"):
                    self._expect(",")
            function = _FUNCTIONS.get(text)
            if function is None:
                raise _js_error(f"ReferenceError: {text} is not defined")
            return lambda env: function([argument(env) for argument in arguments])

        def variable(env: _Env) -> Any:
            if text not in env:
                raise _js_error(f"ReferenceError: {text} is not defined")
            value = env[text]
            return value if text in ("this", "obj") else to_js(value)

        return variable


def _combine(op: str, left: _Node, right: _Node) -> _Node:
    if op == "||":
        return lambda env: (lambda a: a if truthy(a) else right(env))(left(env))
    if op == "&&":
        return lambda env: (lambda a: right(env) if truthy(a) else a)(left(env))
    if op == "===":
        return lambda env: _strict_equal(left(env), right(env))
    if op == "!==":
        return lambda env: not _strict_equal(left(env), right(env))
    if op == "==":
        return lambda env: _loose_equal(left(env), right(env))
    if op == "!=":
        return lambda env: not _loose_equal(left(env), right(env))
    if op in ("<", "<=", ">", ">="):
        return lambda env: _compare(op, left(env), right(env))
    return lambda env: _arithmetic(op, left(env), right(env))
