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

pyelftools reads the unit headers, top DIEs, abbreviations and line program headers;
the DIEs and line table rows, which are most of the bytes, go through dwarf_scan's
loops (14 times faster than pyelftools' objects on an 8.9 MB Go server).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from icount.errors import ParseError
from icount.size import dwarf_scan
from icount.size.source import Blob

DW_OP_ADDR, DW_OP_ADDRX = 0x03, 0xA1


@dataclass
class Attribution:
    """Address ranges and variable addresses, each with its unit's and its file's label."""

    # [lo, hi), the unit's label, the unit's own file (its DW_AT_name)
    unit_ranges: list[tuple[int, int, str, str]] = field(default_factory=list)
    line_ranges: list[tuple[int, int, str]] = field(default_factory=list)  # [lo, hi), file
    variables: list[tuple[int, str, str]] = field(default_factory=list)  # addr, unit, file
    units: int = 0


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
        self.little = bool(info.config.little_endian)
        self.debug_info = info.debug_info_sec.stream.getvalue()
        self.debug_line = (
            info.debug_line_sec.stream.getvalue() if info.debug_line_sec is not None else b""
        )
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
        self._variables(cu, unit, own, file_names)

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
        for lo, hi, f in dwarf_scan.line_rows(self.debug_line, program, self.little):
            name = by_index[f] if 0 <= f < len(by_index) and by_index[f] else own
            self._add_line(lo, hi, name)
        return by_index

    def _add_line(self, lo: int, hi: int, name: str) -> None:
        ranges = self.out.line_ranges
        if ranges and ranges[-1][1] == lo and ranges[-1][2] == name:
            ranges[-1] = (ranges[-1][0], hi, name)  # rows of one file in a row: one range
        else:
            ranges.append((lo, hi, name))

    def _variables(self, cu: Any, unit: str, own: str, file_names: list[str]) -> None:
        for location, k in dwarf_scan.variables(self.debug_info, cu, self.little):
            addr = self._address(cu, location)
            if addr is not None:
                name = file_names[k] if 0 <= k < len(file_names) and file_names[k] else own
                self.out.variables.append((addr, unit, name))

    def _address(self, cu: Any, ops: bytes) -> int | None:
        """The address of a location that is one address, else None."""
        if not ops:
            return None
        if ops[0] == DW_OP_ADDR and len(ops) == 1 + cu["address_size"]:
            little = cu.dwarfinfo.config.little_endian
            return int.from_bytes(ops[1:], "little" if little else "big")
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
