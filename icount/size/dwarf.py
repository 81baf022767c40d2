"""Which compile unit, and which source file, each address of a linked ELF file is from
(DWARF, read with pyelftools).

- Code: a compile unit's address ranges (`DW_AT_low_pc`/`DW_AT_high_pc` or
  `DW_AT_ranges` of its DIE: what `llvm-dwarfdump` prints for it); a source file's
  from the line table, each row covering the addresses up to the next row of its
  sequence. Addresses of a unit that its line table does not cover go to the unit's
  own file (its `DW_AT_name`).
- Data: variables whose location is one address (`DW_OP_addr`, `DW_OP_addrx`), to the
  unit that declares them, or to their `DW_AT_decl_file`; how many bytes each holds is
  the symbol table's business (views.by_debug).

Finding the variables walks the DIEs at pyelftools' ~50k a second: only subtrees that
can hold a variable with an address are entered (namespaces, functions, blocks), and
pyelftools skips the others' children without parsing them where a DIE has a
`DW_AT_sibling` (gcc writes them; clang does not).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from icount.errors import ParseError
from icount.inline.dwarf import _DESCEND as _CODE_SCOPES
from icount.size.source import Blob

DW_OP_ADDR, DW_OP_ADDRX = 0x03, 0xA1

# The scopes that can hold code also hold the variables with an address (globals in
# namespaces, static locals in functions and blocks): icount inline walks the same ones.
_DESCEND = _CODE_SCOPES | {"DW_TAG_module"}


@dataclass
class Attribution:
    """Address ranges and variable addresses, each with its unit's and its file's label."""

    # [lo, hi), the unit's label, the unit's own file (its DW_AT_name)
    unit_ranges: list[tuple[int, int, str, str]] = field(default_factory=list)
    line_ranges: list[tuple[int, int, str]] = field(default_factory=list)  # [lo, hi), file
    variables: list[tuple[int, str, str]] = field(default_factory=list)  # addr, unit, file
    units: int = 0
    dies: int = 0


def read(blob: Blob, files: bool) -> Attribution | None:
    """The attribution of an ELF file's DWARF; None when it has no `.debug_info`.
    `files`: also read the line tables (the `files` view needs them)."""
    from elftools.elf.elffile import ELFFile

    stream: Any = blob.data if not isinstance(blob.data, bytes) else io.BytesIO(blob.data)
    try:
        elf = ELFFile(stream)
        if elf.get_section_by_name(".debug_info") is None:
            return None
        info = elf.get_dwarf_info()
        return _Reader(info, files).run()
    except ParseError:
        raise
    except RecursionError:
        raise blob.fail("DWARF: DIEs nested too deeply") from None
    except Exception as e:  # pyelftools raises assorted errors on a corrupt section
        raise blob.fail(f"DWARF: cannot be read ({type(e).__name__}: {e})") from None
    finally:
        stream.seek(0)


def _text(value: Any) -> str:
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


class _Reader:
    def __init__(self, info: Any, files: bool) -> None:
        self.info, self.files = info, files
        self.out = Attribution()
        self.names: dict[str, set[str]] = {}  # unit name -> comp dirs (duplicates get one)

    def run(self) -> Attribution:
        units = []
        for cu in self.info.iter_CUs():
            top = cu.get_top_DIE()
            attrs = top.attributes
            name = _text(attrs["DW_AT_name"].value) if "DW_AT_name" in attrs else ""
            comp = top.attributes.get("DW_AT_comp_dir")
            units.append((cu, top, name or f"[unit at {cu.cu_offset:#x}]", comp))
            self.names.setdefault(name, set()).add(_text(comp.value) if comp else "")
        for cu, top, name, comp in units:
            label = name
            if len(self.names.get(name, ())) > 1 and comp is not None:
                label = f"{name} [{_text(comp.value)}]"  # two units of one name: tell apart
            self._unit(cu, top, label, name)
            self.out.units += 1
        return self.out

    def _unit(self, cu: Any, top: Any, unit: str, own: str) -> None:
        ranges = self._ranges(cu, top)
        self.out.unit_ranges += [(lo, hi, unit, own) for lo, hi in ranges if hi > lo]
        file_names = self._lines(cu, own) if self.files else []
        self._variables(cu, top, unit, own, file_names)

    def _ranges(self, cu: Any, top: Any) -> list[tuple[int, int]]:
        attrs = top.attributes
        low = attrs.get("DW_AT_low_pc")
        base = int(low.value) if low is not None else 0
        if "DW_AT_ranges" in attrs:
            lists = self.info.range_lists()
            if lists is None:
                return []
            out = []
            for entry in lists.get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu=cu):
                if hasattr(entry, "base_address"):
                    base = entry.base_address
                elif entry.is_absolute:
                    out.append((entry.begin_offset, entry.end_offset))
                else:
                    out.append((base + entry.begin_offset, base + entry.end_offset))
            return out
        high = attrs.get("DW_AT_high_pc")
        if low is None or high is None:
            return []
        # DWARF 4+: a constant high_pc is the length; an address form is the end
        if high.form.startswith("DW_FORM_addr"):
            return [(base, int(high.value))]
        return [(base, base + int(high.value))]

    def _lines(self, cu: Any, own: str) -> list[str]:
        """The unit's file names by index (as DW_AT_decl_file counts); line ranges added."""
        program = self.info.line_program_for_CU(cu)
        if program is None:
            return []
        version = program["version"]
        dirs = [_text(d) for d in program["include_directory"]]
        names = []
        for entry in program["file_entry"]:
            name = _text(entry.name)
            d = entry.dir_index
            # dir 0 is the compilation directory: names relative to it stay as they are
            if not name.startswith("/") and d > 0 and d - (version < 5) < len(dirs):
                name = f"{dirs[d - (version < 5)]}/{name}"
            names.append(name)
        # DWARF 4 counts files from 1 (0: none), DWARF 5 from 0
        by_index = names if version >= 5 else ["", *names]
        start: int | None = None
        current = ""
        for entry in program.get_entries():
            state = entry.state
            if state is None:
                continue
            if start is not None and state.address > start and current:
                self._add_line(start, state.address, current)
            if state.end_sequence:
                start, current = None, ""
                continue
            start = state.address
            f = state.file
            current = by_index[f] if 0 <= f < len(by_index) and by_index[f] else own
        return by_index

    def _add_line(self, lo: int, hi: int, name: str) -> None:
        ranges = self.out.line_ranges
        if ranges and ranges[-1][1] == lo and ranges[-1][2] == name:
            ranges[-1] = (ranges[-1][0], hi, name)  # rows of one file in a row: one range
        else:
            ranges.append((lo, hi, name))

    def _variables(self, cu: Any, top: Any, unit: str, own: str, file_names: list[str]) -> None:
        stack = [top]
        while stack:
            die = stack.pop()
            self.out.dies += 1
            if die.tag == "DW_TAG_variable":
                addr = self._address(cu, die)
                if addr is not None:
                    f = die.attributes.get("DW_AT_decl_file")
                    k = int(f.value) if f is not None else -1
                    name = file_names[k] if 0 <= k < len(file_names) and file_names[k] else own
                    self.out.variables.append((addr, unit, name))
            if die.has_children and (die is top or die.tag in _DESCEND):
                stack.extend(reversed(list(die.iter_children())))

    def _address(self, cu: Any, die: Any) -> int | None:
        loc = die.attributes.get("DW_AT_location")
        if loc is None or not isinstance(loc.value, list) or not loc.value:
            return None
        ops = loc.value
        if ops[0] == DW_OP_ADDR and len(ops) == 1 + cu["address_size"]:
            little = cu.dwarfinfo.config.little_endian
            return int.from_bytes(bytes(ops[1:]), "little" if little else "big")
        if ops[0] == DW_OP_ADDRX:
            index, shift = 0, 0
            for k, b in enumerate(ops[1:], 1):
                index |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    if k != len(ops) - 1:
                        return None  # more operations follow: not one address
                    return int(self.info.get_addr(cu, index))
        return None
