"""Which callees the compiler inlined into which function, from DWARF (pyelftools).

Every `DW_TAG_inlined_subroutine` is one inlined copy of the function its
`DW_AT_abstract_origin` names, at the call site `DW_AT_call_file:DW_AT_call_line`.
Copies are charged to the concrete (out-of-line) function whose code holds them,
at any depth: with recursive inlining, `fib` holding `fib` holding `fib` counts two
copies of `fib` in `fib`. The concrete function is named by the ELF symbol at its
`DW_AT_low_pc`, so clones (`fib.part.0`) get the names callgrind shows; without a
symbol there it falls back to its DWARF name.

Only subtrees that can hold code are walked (namespaces, functions, lexical blocks):
types, variables and declarations are skipped, which is most of a C++ unit.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icount.errors import ParseError
from icount.inline.align import normalise_name

_DESCEND = frozenset(
    {
        "DW_TAG_compile_unit",
        "DW_TAG_partial_unit",
        "DW_TAG_namespace",
        "DW_TAG_subprogram",
        "DW_TAG_lexical_block",
        "DW_TAG_inlined_subroutine",
    }
)


_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept")


def match_key(name: str) -> str:
    """The part of a function name both callgrind and DWARF spell alike.

    Callgrind prints demangled C++ names with their parameters (`calc::mix(long)`);
    DWARF has the linkage name (the same, once demangled) only for functions with
    external linkage, and for the others just `DW_AT_name` under its namespaces
    (`calc::mix`). Matching drops the parameter list and what follows it.
    """
    key = name.strip()
    trimmed = True
    while trimmed:
        trimmed = False
        for q in _QUALIFIERS:
            if key.endswith(q):
                key, trimmed = key[: -len(q)].rstrip(), True
    if key.endswith(")"):
        depth = 0
        for i in range(len(key) - 1, -1, -1):
            if key[i] == ")":
                depth += 1
            elif key[i] == "(":
                depth -= 1
                if depth == 0:
                    return key[:i] if i > 0 else key  # "(below main)" stays whole
    return key


@dataclass
class InlineSites:
    """Inlined copies per (function, callee), both keyed by `match_key`."""

    copies: dict[str, Counter[str]] = field(default_factory=dict)
    lines: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # distinct call sites
    names: dict[str, str] = field(default_factory=dict)  # key -> the name first seen
    notes: list[str] = field(default_factory=list)

    def add(self, function: str, callee: str, site: str | None) -> None:
        fk, ck = match_key(function), match_key(callee)
        self.names.setdefault(fk, function)
        self.names.setdefault(ck, callee)
        self.copies.setdefault(fk, Counter())[ck] += 1
        if site:
            self.lines.setdefault((fk, ck), set()).add(site)

    def sites(self, function: str) -> Counter[str]:
        """Callee key -> copies inlined into `function`."""
        return self.copies.get(match_key(function), Counter())

    def holders(self, callee: str) -> dict[str, int]:
        """Function name -> copies of `callee` it holds."""
        ck = match_key(callee)
        return {self.names[fk]: c[ck] for fk, c in sorted(self.copies.items()) if c[ck]}

    def call_sites(self, function: str, callee_key: str) -> list[str]:
        return sorted(self.lines.get((match_key(function), callee_key), set()))

    def name(self, key: str) -> str:
        return self.names.get(key, key)


def read_inline_sites(path: str | Path, names_at: dict[int, str]) -> InlineSites:
    """Walk the DWARF of an ELF file. Files without DWARF (or not ELF) give a note."""
    from elftools.common.exceptions import ELFError, ELFParseError
    from elftools.elf.elffile import ELFFile

    out = InlineSites()
    try:
        with open(path, "rb") as stream:
            head = stream.read(4)
            if head != b"\x7fELF":
                out.notes.append(f"{path}: not ELF, no DWARF inline sites read")
                return out
            stream.seek(0)
            elf = ELFFile(stream)
            if not elf.has_dwarf_info():
                out.notes.append(f"{path}: no DWARF (build with -g to see inline sites)")
                return out
            _Walker(elf.get_dwarf_info(), names_at, out).run()
    except OSError as e:
        raise ParseError(f"cannot read: {e.strerror or e}", source=str(path)) from None
    except (ELFError, ELFParseError, KeyError, ValueError, IndexError, AssertionError) as e:
        # pyelftools signals corrupt DWARF with assorted exceptions
        raise ParseError(f"corrupt ELF or DWARF: {type(e).__name__}: {e}", source=str(path)) from e
    return out


class _Walker:
    def __init__(self, dwarf: Any, names_at: dict[int, str], out: InlineSites) -> None:
        self.dwarf = dwarf
        self.names_at = names_at
        self.out = out
        self.origin_names: dict[int, str] = {}
        self.line_files: dict[int, list[str]] = {}

    def run(self) -> None:
        for cu in self.dwarf.iter_CUs():
            self.cu = cu
            self._walk(cu.get_top_DIE(), None)

    def _walk(self, die: Any, function: str | None) -> None:
        # An explicit stack: recursive inlining nests deeply.
        stack = [(child, function) for child in die.iter_children()]
        stack.reverse()
        while stack:
            d, fn = stack.pop()
            tag = d.tag
            if tag not in _DESCEND:
                continue
            if tag == "DW_TAG_subprogram":
                if "DW_AT_low_pc" not in d.attributes and "DW_AT_ranges" not in d.attributes:
                    continue  # declaration or abstract instance: no code of its own
                fn = self._concrete_name(d)
            elif tag == "DW_TAG_inlined_subroutine" and fn is not None:
                self.out.add(fn, self._origin_name(d), self._call_site(d))
            if d.has_children:
                children = [(c, fn) for c in d.iter_children()]
                children.reverse()
                stack.extend(children)

    def _concrete_name(self, die: Any) -> str:
        low = die.attributes.get("DW_AT_low_pc")
        if low is not None:
            # pyelftools already resolves DWARF 5's DW_FORM_addrx indices (clang)
            name = self.names_at.get(int(low.value))
            if name is not None:
                return name
        return self._origin_name(die)

    def _origin_name(self, die: Any) -> str:
        """Linkage name (demangled) or name, following abstract origins/specifications."""
        key = die.offset
        cached = self.origin_names.get(key)
        if cached is not None:
            return cached
        d = die
        name = None
        for _ in range(8):  # origin chains are short; a cycle in a corrupt file is not
            attrs = d.attributes
            for attr in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"):
                if attr in attrs:
                    from icount.size.demangle import demangle

                    name = demangle(_text(attrs[attr].value))
                    break
            if name is None and "DW_AT_name" in attrs:
                name = _qualified(d, _text(attrs["DW_AT_name"].value))
            if name is not None:
                break
            ref = next(
                (a for a in ("DW_AT_abstract_origin", "DW_AT_specification") if a in attrs), None
            )
            if ref is None:
                break
            d = d.get_DIE_from_attribute(ref)
        result = normalise_name(name) if name else f"<DIE 0x{die.offset:x}>"
        self.origin_names[key] = result
        return result

    def _call_site(self, die: Any) -> str | None:
        attrs = die.attributes
        if "DW_AT_call_line" not in attrs:
            return None
        line = int(attrs["DW_AT_call_line"].value)
        files = self._files()
        index = int(attrs["DW_AT_call_file"].value) if "DW_AT_call_file" in attrs else -1
        file = files[index] if 0 <= index < len(files) else "?"
        return f"{file}:{line}"

    def _files(self) -> list[str]:
        cached = self.line_files.get(self.cu.cu_offset)
        if cached is None:
            cached = []
            lineprog = self.dwarf.line_program_for_CU(self.cu)
            if lineprog is not None:
                entries = lineprog["file_entry"]
                # DWARF 5 numbers files from 0; earlier versions from 1 (0: none).
                if lineprog.header["version"] < 5:
                    cached.append("?")
                cached += [Path(_text(e.name)).name for e in entries]
            self.line_files[self.cu.cu_offset] = cached
        return cached


_SCOPES = frozenset(
    {"DW_TAG_namespace", "DW_TAG_structure_type", "DW_TAG_class_type", "DW_TAG_union_type"}
)


def _qualified(die: Any, name: str) -> str:
    """`name` under its enclosing namespaces and classes: `calc::mix`."""
    parts = [name]
    parent = die.get_parent()
    for _ in range(32):
        if parent is None or parent.tag not in _SCOPES:
            break
        scope = parent.attributes.get("DW_AT_name")
        parts.append(_text(scope.value) if scope is not None else "(anonymous namespace)")
        parent = parent.get_parent()
    return "::".join(reversed(parts))


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
