"""Fast passes over DWARF bytes that pyelftools makes objects of.

pyelftools parses every DIE into an object with every attribute decoded (~20k DIEs a
second here) and every line table row into a deep-copied state (~30k rows a second):
on an 8.9 MB Go server, 6.6 s for the compile-unit view and 15 s for the files view,
where llvm-dwarfdump prints the whole of both in 0.6 s. These two loops read only what
the views need, straight from the section bytes: the DIEs' abbreviations tell each
attribute's form, and forms tell their sizes, so every attribute but a variable's
location and file is skipped by its length; the line program's opcodes are run for the
address and file registers alone. pyelftools still reads the headers (units, abbreviation
tables, line program headers), which are a small part.

Both raise ValueError on bytes that do not parse (the caller makes it a ParseError),
and never read past the unit or program they were given.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

# form -> fixed size in bytes; "a": address size, "o": offset size (4 or 8), "u": ULEB128,
# "s": SLEB128, "z": NUL-terminated, "b1"/"b2"/"b4"/"bu": a length then that many bytes
_FORMS: dict[str, Any] = {
    "DW_FORM_addr": "a",
    "DW_FORM_block2": "b2",
    "DW_FORM_block4": "b4",
    "DW_FORM_data2": 2,
    "DW_FORM_data4": 4,
    "DW_FORM_data8": 8,
    "DW_FORM_string": "z",
    "DW_FORM_block": "bu",
    "DW_FORM_block1": "b1",
    "DW_FORM_data1": 1,
    "DW_FORM_flag": 1,
    "DW_FORM_sdata": "s",
    "DW_FORM_strp": "o",
    "DW_FORM_udata": "u",
    "DW_FORM_ref_addr": "r",
    "DW_FORM_ref1": 1,
    "DW_FORM_ref2": 2,
    "DW_FORM_ref4": 4,
    "DW_FORM_ref8": 8,
    "DW_FORM_ref_udata": "u",
    "DW_FORM_indirect": "i",
    "DW_FORM_sec_offset": "o",
    "DW_FORM_exprloc": "bu",
    "DW_FORM_flag_present": 0,
    "DW_FORM_strx": "u",
    "DW_FORM_addrx": "u",
    "DW_FORM_ref_sup4": 4,
    "DW_FORM_strp_sup": "o",
    "DW_FORM_data16": 16,
    "DW_FORM_line_strp": "o",
    "DW_FORM_ref_sig8": 8,
    "DW_FORM_implicit_const": 0,
    "DW_FORM_loclistx": "u",
    "DW_FORM_rnglistx": "u",
    "DW_FORM_ref_sup8": 8,
    "DW_FORM_strx1": 1,
    "DW_FORM_strx2": 2,
    "DW_FORM_strx3": 3,
    "DW_FORM_strx4": 4,
    "DW_FORM_addrx1": 1,
    "DW_FORM_addrx2": 2,
    "DW_FORM_addrx3": 3,
    "DW_FORM_addrx4": 4,
    "DW_FORM_GNU_addr_index": "u",
    "DW_FORM_GNU_str_index": "u",
    "DW_FORM_GNU_ref_alt": "o",
    "DW_FORM_GNU_strp_alt": "o",
}
# DW_FORM_indirect names its form by number
_FORM_NAMES = {
    0x01: "DW_FORM_addr", 0x03: "DW_FORM_block2", 0x04: "DW_FORM_block4",
    0x05: "DW_FORM_data2", 0x06: "DW_FORM_data4", 0x07: "DW_FORM_data8",
    0x08: "DW_FORM_string", 0x09: "DW_FORM_block", 0x0A: "DW_FORM_block1",
    0x0B: "DW_FORM_data1", 0x0C: "DW_FORM_flag", 0x0D: "DW_FORM_sdata",
    0x0E: "DW_FORM_strp", 0x0F: "DW_FORM_udata", 0x10: "DW_FORM_ref_addr",
    0x11: "DW_FORM_ref1", 0x12: "DW_FORM_ref2", 0x13: "DW_FORM_ref4",
    0x14: "DW_FORM_ref8", 0x15: "DW_FORM_ref_udata", 0x17: "DW_FORM_sec_offset",
    0x18: "DW_FORM_exprloc", 0x19: "DW_FORM_flag_present",
}  # fmt: skip
_INT_FORMS = ("DW_FORM_data1", "DW_FORM_data2", "DW_FORM_data4", "DW_FORM_data8")


def _uleb(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ValueError("LEB128 number longer than 10 bytes")


def _sleb(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (result - (1 << shift) if b & 0x40 else result), pos
        if shift > 70:
            raise ValueError("LEB128 number longer than 10 bytes")


class _Plan:
    """One abbreviation: whether it is a variable, and its attributes' forms; for a
    variable, which attributes to keep (location, file)."""

    __slots__ = ("specs", "variable")

    def __init__(self, decl: Any) -> None:
        self.variable = decl["tag"] == "DW_TAG_variable"
        self.specs: list[tuple[str, str, int | None]] = []
        for spec in decl["attr_spec"]:
            if spec.form not in _FORMS:
                raise ValueError(f"unknown attribute form {spec.form}")
            self.specs.append((spec.name, spec.form, getattr(spec, "value", None)))


def variables(data: bytes, cu: Any, little: bool) -> Iterator[tuple[bytes, int]]:
    """(location expression, DW_AT_decl_file or -1) of every variable of `cu` whose
    location is an expression (not a location list), scanning `data` (.debug_info)."""
    order: Literal["little", "big"] = "little" if little else "big"
    table = cu.get_abbrev_table()
    plans: dict[int, _Plan] = {}
    addr_size, offset_size = cu["address_size"], 8 if cu.dwarf_format() == 64 else 4
    ref_addr = addr_size if cu["version"] == 2 else offset_size
    sizes = {"a": addr_size, "o": offset_size, "r": ref_addr}
    pos, end = cu.cu_die_offset, cu.cu_offset + cu.size
    if end > len(data):
        raise ValueError("compile unit runs past .debug_info")
    while pos < end:
        code, pos = _uleb(data, pos)
        if code == 0:
            continue  # the end of some DIE's children
        plan = plans.get(code)
        if plan is None:
            plan = plans[code] = _Plan(table.get_abbrev(code).decl)
        location: bytes | None = None
        decl_file = -1
        for name, form, implicit in plan.specs:
            while form == "DW_FORM_indirect":
                number, pos = _uleb(data, pos)
                form = _FORM_NAMES.get(number, "")
                if not form:
                    raise ValueError(f"indirect form {number:#x}")
            kind = _FORMS[form]
            start = pos
            if isinstance(kind, int):
                pos += kind
            elif kind in sizes:
                pos += sizes[kind]
            elif kind == "u":
                _, pos = _uleb(data, pos)
            elif kind == "s":
                _, pos = _sleb(data, pos)
            elif kind == "z":
                pos = data.index(b"\0", pos, end) + 1
            else:  # a block: its length, then its bytes
                if kind == "bu":
                    n, start = _uleb(data, pos)
                else:
                    width = int(kind[1:])
                    n = int.from_bytes(data[pos : pos + width], order)
                    start = pos + width
                pos = start + n
            if plan.variable:
                if name == "DW_AT_location" and kind in ("bu", "b1", "b2", "b4"):
                    location = data[start:pos]
                elif name == "DW_AT_decl_file":
                    if form == "DW_FORM_implicit_const":
                        decl_file = int(implicit or 0)
                    elif form == "DW_FORM_udata":
                        decl_file = _uleb(data, start)[0]
                    elif form in _INT_FORMS:
                        decl_file = int.from_bytes(data[start:pos], order)
        if pos > end:
            raise ValueError("DIE runs past its compile unit")
        if location is not None:
            yield location, decl_file


def line_rows(data: bytes, program: Any, little: bool) -> Iterator[tuple[int, int, int]]:
    """[lo, hi) -> file index of each row of `program`'s sequences: a row covers the
    addresses up to the next row of its sequence."""
    h = program.header
    if h.get("maximum_operations_per_instruction", 1) != 1:
        raise ValueError("VLIW line table (more than one operation per instruction)")
    base, line_range = h["opcode_base"], h["line_range"]
    step = h["minimum_instruction_length"]
    if line_range == 0:
        raise ValueError("line table with a line range of 0")
    lengths = list(h["standard_opcode_lengths"])
    order: Literal["little", "big"] = "little" if little else "big"
    pos, end = program.program_start_offset, program.program_end_offset
    if end > len(data):
        raise ValueError("line program runs past .debug_line")
    address, file = 0, 1
    row: tuple[int, int] | None = None  # the last row of this sequence: address, file

    while pos < end:
        op = data[pos]
        pos += 1
        if op >= base:  # special opcode: advance, then a row
            address += ((op - base) // line_range) * step
        elif op == 0:  # extended
            n, pos = _uleb(data, pos)
            sub = data[pos]
            if sub == 1:  # end_sequence: the last row ends here
                if row is not None and address > row[0]:
                    yield row[0], address, row[1]
                address, file, row = 0, 1, None
            elif sub == 2:  # set_address
                address = int.from_bytes(data[pos + 1 : pos + n], order)
            pos += n
            continue
        elif op == 1:  # copy: a row
            pass
        elif op == 2:  # advance_pc
            n, pos = _uleb(data, pos)
            address += n * step
            continue
        elif op == 3:  # advance_line
            _, pos = _sleb(data, pos)
            continue
        elif op == 4:  # set_file
            file, pos = _uleb(data, pos)
            continue
        elif op == 8:  # const_add_pc
            address += ((255 - base) // line_range) * step
            continue
        elif op == 9:  # fixed_advance_pc
            address += int.from_bytes(data[pos : pos + 2], order)
            pos += 2
            continue
        else:  # other standard opcodes: skip their ULEB128 operands
            for _ in range(lengths[op - 1] if op - 1 < len(lengths) else 0):
                _, pos = _uleb(data, pos)
            continue
        if row is not None and address > row[0]:
            yield row[0], address, row[1]
        row = (address, file)
