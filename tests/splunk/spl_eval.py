"""Just enough of Splunk's search-time field pipeline to check the add-on's props.conf against events.

``extract`` does what KV_MODE=json does (dotted paths, ``{}`` for arrays, arrays are multivalue);
``apply_props`` runs the FIELDALIAS-* then the EVAL-* settings of a stanza, every EVAL against the
same aliased fields (Splunk computes them in parallel, so one cannot read another). ``evaluate``
parses the eval subset the add-on uses: literals, 'field' and bare field names, ``.`` concatenation,
``==``/``!=``, AND/OR, and the functions in FUNCTIONS. Anything else raises, so props.conf cannot
drift into syntax this checker does not understand.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Dict, List, Mapping, Optional

Value = Any  # None, str or list of str (multivalue)
_TOKEN = re.compile(r"""\s*(?:("(?:[^"\\]|\\.)*")|('[^']*')|(==|!=|[().,])|([A-Za-z_][A-Za-z0-9_]*))""")


def extract(
    doc: Mapping[str, Any], prefix: str = "", out: Optional[Dict[str, Value]] = None
) -> Dict[str, Value]:
    out = {} if out is None else out
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            extract(value, name + ".", out)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    extract(item, name + "{}.", out)
                else:
                    out.setdefault(name + "{}", []).append(_text(item))
        else:
            out[name] = _text(value)
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _spath(raw: Value, path: Value) -> Value:
    node: Any = json.loads(raw)
    for part in str(path).split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return json.dumps(node) if isinstance(node, (dict, list)) else _text(node)


def _mvfind(values: Value, regex: Value) -> Value:
    items = values if isinstance(values, list) else [] if values is None else [values]
    return next((str(i) for i, v in enumerate(items) if re.search(str(regex), v)), None)


FUNCTIONS: Dict[str, Callable[..., Value]] = {
    "null": lambda: None,
    "true": lambda: True,
    "isnotnull": lambda v: v is not None,
    "isnull": lambda v: v is None,
    "coalesce": lambda *vs: next((v for v in vs if v is not None), None),
    "mvfind": _mvfind,
    "spath": _spath,
    "json_keys": lambda v: None if v is None else json.dumps(list(json.loads(v))),
    "json_array_to_mv": lambda v: None if v is None else [_text(x) for x in json.loads(v)],
}
_LAZY = {"if", "case"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: List[tuple] = []
        pos = 0
        while pos < len(text.rstrip()):
            match = _TOKEN.match(text, pos)
            if not match or match.end() == pos:
                raise SyntaxError(f"cannot read {text[pos:]!r}")
            self.tokens.append(match.groups())
            pos = match.end()
        self.i = 0

    def peek(self) -> Optional[str]:
        if self.i >= len(self.tokens):
            return None
        return next(t for t in self.tokens[self.i] if t is not None)

    def take(self, expected: Optional[str] = None) -> tuple:
        token = self.tokens[self.i]
        if expected is not None and token[2] != expected and token[3] != expected:
            raise SyntaxError(f"expected {expected!r}, got {self.peek()!r}")
        self.i += 1
        return token

    def parse(self) -> Callable[[Mapping[str, Value]], Value]:
        node = self.or_()
        if self.peek() is not None:
            raise SyntaxError(f"unexpected {self.peek()!r}")
        return node

    def or_(self) -> Callable:
        left = self.and_()
        while self.peek() == "OR":
            self.take()
            a, b = left, self.and_()
            left = lambda f, a=a, b=b: bool(a(f)) or bool(b(f))  # noqa: E731
        return left

    def and_(self) -> Callable:
        left = self.cmp()
        while self.peek() == "AND":
            self.take()
            a, b = left, self.cmp()
            left = lambda f, a=a, b=b: bool(a(f)) and bool(b(f))  # noqa: E731
        return left

    def cmp(self) -> Callable:
        left = self.concat()
        if self.peek() in ("==", "!="):
            op = self.take()[2]
            a, b = left, self.concat()
            return lambda f: (a(f) is not None and a(f) == b(f)) == (op == "==")
        return left

    def concat(self) -> Callable:
        parts = [self.primary()]
        while self.peek() == ".":
            self.take()
            parts.append(self.primary())
        if len(parts) == 1:
            return parts[0]
        return lambda f: None if any(p(f) is None for p in parts) else "".join(str(p(f)) for p in parts)

    def primary(self) -> Callable:
        string, field, punct, name = self.take()
        if string is not None:
            text = json.loads(string)
            return lambda f: text
        if field is not None:
            return lambda f: f.get(field[1:-1])
        if punct == "(":
            inner = self.or_()
            self.take(")")
            return inner
        if name is None:
            raise SyntaxError(f"unexpected {punct!r}")
        if self.peek() != "(":
            return lambda f: f.get(name)
        self.take("(")
        args: List[Callable] = []
        while self.peek() != ")":
            args.append(self.or_())
            if self.peek() == ",":
                self.take()
        self.take(")")
        return self.call(name, args)

    @staticmethod
    def call(name: str, args: List[Callable]) -> Callable:
        if name == "if":
            return lambda f: args[1](f) if args[0](f) else args[2](f)
        if name == "case":
            pairs = list(zip(args[::2], args[1::2]))
            return lambda f: next((v(f) for c, v in pairs if c(f)), None)
        if name not in FUNCTIONS:
            raise SyntaxError(f"function {name}() is not modelled")
        fn = FUNCTIONS[name]
        return lambda f: fn(*(a(f) for a in args))


def evaluate(expression: str, fields: Mapping[str, Value]) -> Value:
    return _Parser(expression).parse()(fields)


def aliases(setting: str) -> List[tuple]:
    words = setting.split()
    if len(words) % 3 or any(w.upper() != "AS" for w in words[1::3]):
        raise SyntaxError(f"FIELDALIAS must be '<field> AS <name> ...', got {setting!r}")
    return list(zip(words[0::3], words[2::3]))


def apply_props(stanza: Mapping[str, str], raw: str) -> Dict[str, Value]:
    fields: Dict[str, Value] = {**extract(json.loads(raw)), "_raw": raw}
    for key in sorted(k for k in stanza if k.startswith("FIELDALIAS-")):
        for source, target in aliases(stanza[key]):
            if fields.get(source) is not None:
                fields[target] = fields[source]
    computed = {
        key[len("EVAL-") :]: evaluate(stanza[key], fields) for key in stanza if key.startswith("EVAL-")
    }
    fields.update(computed)
    return {k: v for k, v in fields.items() if v is not None}
