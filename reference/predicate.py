"""A small SQL-filter subset, so one delete predicate string can drive pylance and the reference alike.

Grammar (case-insensitive keywords)::

    expr    := or
    or      := and ("OR" and)*
    and     := not ("AND" not)*
    not     := "NOT" not | atom
    atom    := "(" expr ")" | column cmp literal | column "IN" "(" literal ("," literal)* ")"
             | column "IS" ["NOT"] "NULL"
    cmp     := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    literal := integer | float | 'string' | TRUE | FALSE

The result is a ``pyarrow.compute.Expression``. Anything else is a ValidationError naming the position.
"""

from __future__ import annotations

import re

import pyarrow.compute as pc

from .errors import ValidationError

_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*|`[^`]+`|\"[^\"]+\"))"
)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "true", "false"}
_COMPARE = {
    "=": pc.equal, "==": pc.equal, "!=": pc.not_equal, "<>": pc.not_equal,
    "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal,
}

Literal = int | float | str | bool


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while text[pos:].strip():
            match = _TOKEN.match(text, pos)
            if not match:
                raise ValidationError(f"cannot parse predicate {text!r} at position {pos}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind), match.start(kind)))
            pos = match.end()
        self.i = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok and tok[0] == "name" and tok[1].lower() == word:
            self.i += 1
            return True
        return False

    def expect(self, value: str) -> None:
        tok = self.peek()
        if not tok or tok[1] != value:
            where = tok[2] if tok else len(self.text)
            raise ValidationError(f"predicate {self.text!r}: expected {value!r} at position {where}")
        self.i += 1

    def parse(self) -> pc.Expression:
        expr = self.or_()
        if self.peek() is not None:
            raise ValidationError(f"predicate {self.text!r}: unexpected text at position {self.peek()[2]}")  # type: ignore[index]
        return expr

    def or_(self) -> pc.Expression:
        expr = self.and_()
        while self.keyword("or"):
            expr = expr | self.and_()
        return expr

    def and_(self) -> pc.Expression:
        expr = self.not_()
        while self.keyword("and"):
            expr = expr & self.not_()
        return expr

    def not_(self) -> pc.Expression:
        if self.keyword("not"):
            return ~self.not_()
        return self.atom()

    def atom(self) -> pc.Expression:
        tok = self.peek()
        if tok and tok[1] == "(":
            self.i += 1
            expr = self.or_()
            self.expect(")")
            return expr
        column = pc.field(self.column())
        if self.keyword("is"):
            negate = self.keyword("not")
            if not self.keyword("null"):
                raise ValidationError(f"predicate {self.text!r}: expected NULL after IS")
            return ~column.is_null() if negate else column.is_null()
        if self.keyword("in"):
            self.expect("(")
            values = [self.literal()]
            while self.peek() and self.peek()[1] == ",":  # type: ignore[index]
                self.i += 1
                values.append(self.literal())
            self.expect(")")
            return column.isin(values)
        tok = self.peek()
        if not tok or tok[0] != "op" or tok[1] not in _COMPARE:
            raise ValidationError(f"predicate {self.text!r}: expected a comparison after the column name")
        self.i += 1
        return _COMPARE[tok[1]](column, self.literal())

    def column(self) -> str:
        tok = self.peek()
        if not tok or tok[0] != "name" or tok[1].lower() in _KEYWORDS:
            where = tok[2] if tok else len(self.text)
            raise ValidationError(f"predicate {self.text!r}: expected a column name at position {where}")
        self.i += 1
        return tok[1].strip('`"')

    def literal(self) -> Literal:
        tok = self.peek()
        if tok is None:
            raise ValidationError(f"predicate {self.text!r}: expected a value at the end")
        self.i += 1
        kind, text, _ = tok
        if kind == "num":
            return float(text) if any(c in text for c in ".eE") else int(text)
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "name" and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ValidationError(f"predicate {self.text!r}: expected a value, found {text!r}")


def parse_predicate(text: str) -> pc.Expression:
    """Parse ``text`` (the SQL subset above) into an Arrow compute expression."""
    if not text.strip():
        raise ValidationError("an empty predicate deletes nothing; refusing it")
    return _Parser(text).parse()
