"""Rust's v0 symbol mangling (`_R...`, RFC 2603), demangled like rustc-demangle's `{:#}`.

Rust's standard library ships with v0 names even where user crates still use the
legacy scheme, so both appear in one binary. The grammar is a small recursive one;
backreferences only point backwards and recursion is capped, so a hostile name
cannot loop. Crate disambiguators (`[1a2b...]`) are left out, as the legacy
demangler leaves out the `::h...` hash. Anything unexpected raises `ValueError`
and the caller shows the name unchanged.
"""

from __future__ import annotations

_BASIC = {
    "a": "i8",
    "b": "bool",
    "c": "char",
    "d": "f64",
    "e": "str",
    "f": "f32",
    "h": "u8",
    "i": "isize",
    "j": "usize",
    "l": "i32",
    "m": "u32",
    "n": "i128",
    "o": "u128",
    "s": "i16",
    "t": "u16",
    "u": "()",
    "v": "...",
    "x": "i64",
    "y": "u64",
    "z": "!",
    "p": "_",
}
_SIGNED = set("alnsxi")
_UNSIGNED = set("hmotyj")
MAX_DEPTH = 200
MAX_STEPS = 1 << 15  # the most any name of librustc_driver (139k symbols) takes is 2503
MAX_OUTPUT = 1 << 16  # characters of one path, type or constant


def demangle_v0(name: str) -> str:
    if not name.startswith("_R"):
        raise ValueError("not a v0 name")
    inner = name[2:].split(".", 1)[0]  # vendor suffixes (.llvm.NNN) are not part of it
    p = _Parser(inner, budget=[MAX_STEPS])
    if _digit(p.peek()):  # encoding version, only 0 exists
        raise ValueError("unsupported encoding version")
    out = p.path(in_value=True)
    return out


def _digit(c: str) -> bool:
    # not str.isdigit: '²' and '٣' pass it, and would decode as digits 130 and 1587
    return "0" <= c <= "9"


class _Parser:
    def __init__(
        self, s: str, pos: int = 0, depth: int = 0, bound: int = 0, budget: list[int] | None = None
    ) -> None:
        self.s, self.pos, self.depth, self.bound = s, pos, depth, bound
        # steps left, shared with the parsers that follow backreferences
        self.budget = budget if budget is not None else [MAX_STEPS]

    def peek(self) -> str:
        return self.s[self.pos] if self.pos < len(self.s) else ""

    def next(self) -> str:
        if self.pos >= len(self.s):
            raise ValueError("unexpected end")
        c = self.s[self.pos]
        self.pos += 1
        return c

    def eat(self, c: str) -> bool:
        if self.peek() == c:
            self.pos += 1
            return True
        return False

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError("too deep")
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise ValueError("too much work (backreferences nested too often)")

    @staticmethod
    def capped(text: str) -> str:
        if len(text) > MAX_OUTPUT:
            raise ValueError("demangled name too long")
        return text

    def base62(self) -> int:
        if self.eat("_"):
            return 0
        value = 0
        while True:
            c = self.next()
            if c == "_":
                return value + 1
            if _digit(c):
                d = ord(c) - 48
            elif "a" <= c <= "z":
                d = ord(c) - 87
            elif "A" <= c <= "Z":
                d = ord(c) - 29
            else:
                raise ValueError("bad base-62 digit")
            value = value * 62 + d
            if value > 1 << 64:
                raise ValueError("number too large")

    def opt_base62(self, tag: str) -> int:
        return self.base62() + 1 if self.eat(tag) else 0

    def decimal(self) -> int:
        """ "0", or digits not starting with 0 (so "00" is two numbers)."""
        start = self.pos
        if self.eat("0"):
            return 0
        while _digit(self.peek()):
            self.pos += 1
        if start == self.pos:
            raise ValueError("bad decimal")
        return int(self.s[start : self.pos])

    def ident(self) -> tuple[int, str]:
        dis = self.opt_base62("s")
        return dis, self.undisambiguated()

    def undisambiguated(self) -> str:
        puny = self.eat("u")
        n = self.decimal()
        self.eat("_")
        if self.pos + n > len(self.s):
            raise ValueError("identifier runs past the end")
        text = self.s[self.pos : self.pos + n]
        self.pos += n
        return f"punycode{{{text}}}" if puny else text

    def backref(self) -> _Parser:
        start = self.pos - 1
        target = self.base62()
        if target >= start:
            raise ValueError("backref does not point backwards")
        return _Parser(self.s, target, self.depth + 1, self.bound, self.budget)

    def path(self, in_value: bool) -> str:
        self.enter()
        try:
            return self.capped(self._path(in_value))
        finally:
            self.depth -= 1

    def _path(self, in_value: bool) -> str:
        tag = self.next()
        if tag == "C":
            return self.ident()[1]
        if tag == "M":
            self.opt_base62("s")
            self.path(False)  # the impl's own path is not shown
            return f"<{self.type()}>"
        if tag == "X":
            self.opt_base62("s")
            self.path(False)
            ty = self.type()
            return f"<{ty} as {self.path(False)}>"
        if tag == "Y":
            ty = self.type()
            return f"<{ty} as {self.path(False)}>"
        if tag == "N":
            ns = self.next()
            prefix = self.path(in_value)
            dis, name = self.ident()
            if ns.isupper():
                kind = {"C": "closure", "S": "shim"}.get(ns, ns)
                return f"{prefix}::{{{kind}{':' + name if name else ''}#{dis}}}"
            if not ns.islower():
                raise ValueError("bad namespace")
            return f"{prefix}::{name}" if name else prefix
        if tag == "I":
            prefix = self.path(in_value)
            args = []
            while not self.eat("E"):
                args.append(self.generic_arg())
            return f"{prefix}{'::' if in_value else ''}<{', '.join(args)}>"
        if tag == "B":
            return self.backref().path(in_value)
        raise ValueError(f"bad path tag {tag!r}")

    def generic_arg(self) -> str:
        if self.eat("L"):
            return self.lifetime(self.base62())
        if self.eat("K"):
            return self.const()
        return self.type()

    def lifetime(self, index: int) -> str:
        if index == 0:
            return "'_"
        depth = self.bound - index
        if depth < 0:
            raise ValueError("unbound lifetime")
        return "'" + (chr(ord("a") + depth) if depth < 26 else f"_{depth}")

    def binder(self) -> tuple[str, int]:
        """`for<'a, 'b> ` and how many lifetimes it binds."""
        if not self.eat("G"):
            return "", 0
        n = self.base62() + 1
        names = [self.lifetime_name(self.bound + k) for k in range(n)]
        return f"for<{', '.join(names)}> ", n

    @staticmethod
    def lifetime_name(depth: int) -> str:
        return "'" + (chr(ord("a") + depth) if depth < 26 else f"_{depth}")

    def type(self) -> str:
        self.enter()
        try:
            return self.capped(self._type())
        finally:
            self.depth -= 1

    def _type(self) -> str:
        c = self.peek()
        if c in _BASIC:
            self.pos += 1
            return _BASIC[c]
        if c in "CMXYNI":
            return self.path(False)
        self.pos += 1
        if c == "B":
            return self.backref().type()
        if c in "RQ":
            lt = ""
            if self.eat("L"):
                index = self.base62()
                lt = self.lifetime(index) + " " if index else ""
            return ("&" if c == "R" else "&mut ") + lt + self.type()
        if c == "P":
            return "*const " + self.type()
        if c == "O":
            return "*mut " + self.type()
        if c == "A":
            ty = self.type()
            return f"[{ty}; {self.const()}]"
        if c == "S":
            return f"[{self.type()}]"
        if c == "T":
            items = []
            while not self.eat("E"):
                items.append(self.type())
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if c == "F":
            return self.fn_sig()
        if c == "D":
            return self.dyn()
        raise ValueError(f"bad type tag {c!r}")

    def fn_sig(self) -> str:
        binder, n = self.binder()
        self.bound += n
        try:
            unsafe = "unsafe " if self.eat("U") else ""
            abi = ""
            if self.eat("K"):
                abi_name = "C" if self.eat("C") else self.undisambiguated().replace("_", "-")
                abi = f'extern "{abi_name}" '
            args = []
            while not self.eat("E"):
                args.append(self.type())
            ret = self.type()
        finally:
            self.bound -= n
        tail = "" if ret == "()" else f" -> {ret}"
        return f"{binder}{unsafe}{abi}fn({', '.join(args)}){tail}"

    def dyn(self) -> str:
        binder, n = self.binder()
        self.bound += n
        try:
            traits = []
            while not self.eat("E"):
                trait = self.path(False)
                bindings = []
                while self.eat("p"):
                    name = self.undisambiguated()
                    bindings.append(f"{name} = {self.type()}")
                if bindings:
                    trait = (
                        (trait[:-1] + ", " if trait.endswith(">") else trait + "<")
                        + ", ".join(bindings)
                        + ">"
                    )
                traits.append(trait)
        finally:
            self.bound -= n
        if not self.eat("L"):
            raise ValueError("dyn without lifetime")
        index = self.base62()
        lt = f" + {self.lifetime(index)}" if index else ""
        return f"dyn {binder}{' + '.join(traits)}{lt}"

    def const(self) -> str:
        self.enter()
        try:
            return self.capped(self._const())
        finally:
            self.depth -= 1

    def _const(self) -> str:
        if self.eat("B"):
            return self.backref().const()
        if self.eat("p"):
            return "_"
        ty = self.next()
        neg = self.eat("n")
        start = self.pos
        while self.peek() and self.peek() in "0123456789abcdef":
            self.pos += 1
        digits = self.s[start : self.pos]
        if not self.eat("_"):
            raise ValueError("unsupported constant")
        value = int(digits, 16) if digits else 0
        if ty in _SIGNED or ty in _UNSIGNED:
            return f"{'-' if neg else ''}{value}"
        if ty == "b" and value in (0, 1):
            return "true" if value else "false"
        if ty == "c" and value < 0x110000:
            return repr(chr(value))
        raise ValueError("unsupported constant type")
