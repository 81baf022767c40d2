"""Mach-O: thin 32/64-bit files and fat (universal) files, read with struct and numpy.

A fat file gives one Image per architecture: each slice is broken down on its own (VM
sizes of slices are never added up), and in each Image the fat header and the other
slices are rows of their own, so that every file-size column still sums to the file.
Offsets inside a slice are relative to the slice; Regions hold absolute file offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icount.size.model import PADDING, Container, Image, Region, SymbolTable
from icount.size.source import NOT_BINARY, Blob, cstr

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

FAT_MAGIC, FAT_MAGIC_64 = 0xCAFEBABE, 0xCAFEBABF
MH_MAGIC, MH_MAGIC_64 = 0xFEEDFACE, 0xFEEDFACF
MAGICS = (MH_MAGIC, MH_MAGIC_64)
LC_SEGMENT, LC_SEGMENT_64, LC_SYMTAB, LC_DYSYMTAB = 0x1, 0x19, 0x2, 0xB
LC_DYLD_INFO, LC_DYLD_INFO_ONLY = 0x22, 0x80000022
LC_FUNCTION_STARTS = 0x26
# linkedit_data_command (dataoff, datasize) kinds and the row each becomes
_LINKEDIT_DATA = {
    0x1D: "code signature",
    0x1E: "other",  # LC_SEGMENT_SPLIT_INFO
    LC_FUNCTION_STARTS: "function starts",
    0x29: "data in code",
    0x2B: "other",  # LC_DYLIB_CODE_SIGN_DRS
    0x2E: "other",  # LC_LINKER_OPTIMIZATION_HINT
    0x36: "other",  # LC_ATOM_INFO
    0x80000033: "exports trie",
    0x80000034: "chained fixups",
}
ZEROFILL = (0x1, 0xC, 0x12)  # S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL
S_ATTR_INSTRUCTIONS = 0x80000000 | 0x400
N_STAB, N_TYPE, N_SECT, N_EXT, N_PEXT = 0xE0, 0x0E, 0x0E, 0x01, 0x10
# LLVM's rule: 0xcafebabe is a fat file only if byte 7 is below 43 (Java class files
# carry their major version there, 45 and up)
JAVA_MIN_MAJOR = 43
MAX_FAT_ARCHS = 64  # real fat files hold a handful; more is a corrupt header

_CPUS = {
    7: "i386",
    0x01000007: "x86_64",
    12: "arm",
    0x0100000C: "arm64",
    0x0200000C: "arm64_32",
    18: "ppc",
    0x01000012: "ppc64",
}
_KINDS = {
    1: "object file",
    2: "executable",
    6: "dynamic library",
    8: "bundle",
    9: "dylib stub",
    10: "dSYM companion",
    11: "kext bundle",
    7: "dynamic linker",
}


def is_fat(head: bytes) -> bool:
    if len(head) < 8:
        return False
    magic = int.from_bytes(head[:4], "big")
    if magic == FAT_MAGIC:
        return head[7] < JAVA_MIN_MAJOR
    return magic == FAT_MAGIC_64


def is_thin(head: bytes) -> bool:
    return len(head) >= 4 and (
        int.from_bytes(head[:4], "little") in MAGICS or int.from_bytes(head[:4], "big") in MAGICS
    )


def arch_name(cputype: int, subtype: int) -> str:
    sub = subtype & 0x00FFFFFF
    if cputype == 0x0100000C and sub == 2:
        return "arm64e"
    if cputype == 0x01000007 and sub == 8:
        return "x86_64h"
    return _CPUS.get(cputype, f"cpu{cputype & 0xFFFFFFFF:#x}")


def read_macho(blob: Blob, symbols: bool = True) -> list[Image]:
    """One Image per architecture; `symbols=False` leaves the symbol tables unread."""
    head = blob.read(0, min(8, blob.size), "header")
    if is_fat(head):
        return _read_fat(blob, symbols)
    return [_Thin(blob, 0, blob.size).image(symbols)]


def _read_fat(blob: Blob, symbols: bool) -> list[Image]:
    magic, count = blob.unpack(">II", 0, "fat header")
    wide = magic == FAT_MAGIC_64
    fmt, entry = (">iiQQII", 32) if wide else (">iiIII", 20)
    if count == 0:
        raise blob.fail("fat file lists no architectures")
    if count > MAX_FAT_ARCHS:
        raise blob.fail(
            f"fat header lists {count} architectures (more than {MAX_FAT_ARCHS}): corrupt"
        )
    blob.check(8, count * entry, f"fat header ({count} architectures)")
    slices = []
    for i in range(count):
        cputype, subtype, offset, size = blob.unpack(fmt, 8 + i * entry, f"fat_arch {i}")[:4]
        blob.check(offset, size, f"fat slice {i} ({arch_name(cputype, subtype)})")
        if size == 0 or offset < 8 + count * entry:
            raise blob.fail(
                f"fat slice {i}: offset {offset} size {size} is inside the fat header or empty"
            )
        slices.append((arch_name(cputype, subtype), offset, size))
    header = Region("[fat header]", 0, 8 + count * entry, 0)
    images: list[Image] = []
    seen: dict[str, int] = {}
    for i, (arch, offset, size) in enumerate(slices):
        image = _Thin(blob, offset, size).image(symbols)
        seen[arch] = seen.get(arch, 0) + 1
        image.arch = arch if seen[arch] == 1 else f"{arch}#{seen[arch]}"
        image.fat = True
        others = [
            Region("[other architectures]", o, s, 0) for j, (_, o, s) in enumerate(slices) if j != i
        ]
        image.sections += [header, *others]
        image.segments += [header, *others]
        images.append(image)
    return images


@dataclass
class _Segment:
    name: str
    vmaddr: int
    vmsize: int
    fileoff: int
    filesize: int
    sections: list[Region] = field(default_factory=list)


class _Thin:
    """One thin Mach-O image at [base, base+size) of the file."""

    def __init__(self, blob: Blob, base: int, size: int) -> None:
        self.blob, self.base, self.size = blob, base, size
        self.segments: list[_Segment] = []
        self.sections: list[Region] = []  # in section-ordinal order (n_sect - 1)
        self.linkedit: list[Region] = []
        self.relocs: list[Region] = []
        self.symtab: tuple[int, int, int, int] | None = None
        self.function_starts: tuple[int, int] | None = None  # dataoff, datasize
        self.arm32 = False

    def fail(self, message: str) -> Exception:
        where = f" (slice at offset {self.base})" if self.base else ""
        return self.blob.fail(message + where)

    def span(self, offset: int, length: int, what: str) -> None:
        """Check that [offset, offset+length) lies inside this slice."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise self.fail(
                f"{what}: offset {offset} + {length} bytes runs past the end ({self.size} bytes)"
            )

    def image(self, symbols: bool = True) -> Image:
        b = self.blob
        raw = b.read(self.base, 4, "Mach-O magic")
        end = "<" if int.from_bytes(raw, "little") in MAGICS else ">"
        magic = int.from_bytes(raw, "little" if end == "<" else "big")
        if magic not in MAGICS:
            raise b.fail(NOT_BINARY)
        wide = magic == MH_MAGIC_64
        self.wide, self.end = wide, end
        hsize = 32 if wide else 28
        self.span(0, hsize, "Mach-O header")
        _, cputype, subtype, filetype, ncmds, sizeofcmds, _flags = b.unpack(
            end + "IiiIIII", self.base, "Mach-O header"
        )
        self.span(hsize, sizeofcmds, f"load commands ({ncmds} commands)")
        if ncmds > sizeofcmds // 8:
            raise self.fail(f"{ncmds} load commands cannot fit in {sizeofcmds} bytes")
        p = hsize
        for i in range(ncmds):
            cmd, cmdsize = b.unpack(end + "II", self.base + p, f"load command {i}")
            if cmdsize < 8 or p + cmdsize > hsize + sizeofcmds:
                raise self.fail(f"load command {i} (cmd {cmd:#x}) has an invalid size {cmdsize}")
            self._command(cmd, p, cmdsize, i)
            p += cmdsize  # unknown commands are skipped by their size field
        header = Region("[Mach-O header + load commands]", self.base, hsize + sizeofcmds, 0)
        self.arm32 = cputype == 12  # Thumb: a function's start may carry bit 0
        image = self._assemble(header, arch_name(cputype, subtype), filetype)
        if symbols:
            image.symbols = self._symbols()
        return image

    def _command(self, cmd: int, p: int, cmdsize: int, i: int) -> None:
        b, end, at = self.blob, self.end, self.base + p
        if cmd in (LC_SEGMENT, LC_SEGMENT_64):
            self._segment(cmd == LC_SEGMENT_64, p, cmdsize, i)
        elif cmd == LC_SYMTAB:
            symoff, nsyms, stroff, strsize = b.unpack(end + "IIII", at + 8, "LC_SYMTAB")
            entsize = 16 if self.wide else 12
            self.span(symoff, nsyms * entsize, "symbol table")
            self.span(stroff, strsize, "string table")
            self.symtab = (symoff, nsyms, stroff, strsize)
            self._part("symbol table", symoff, nsyms * entsize)
            self._part("string table", stroff, strsize)
        elif cmd == LC_DYSYMTAB:
            f = b.unpack(end + "18I", at + 8, "LC_DYSYMTAB")
            self._part("indirect symbols", f[12], f[13] * 4)
            self._part("relocations", f[14], f[15] * 8)
            self._part("relocations", f[16], f[17] * 8)
            self._part("other", f[6], f[7] * 8)  # table of contents
            self._part("other", f[10], f[11] * 4)  # external references
        elif cmd in (LC_DYLD_INFO, LC_DYLD_INFO_ONLY):
            f = b.unpack(end + "10I", at + 8, "LC_DYLD_INFO")
            for k in range(0, 8, 2):
                self._part("dyld info", f[k], f[k + 1])
            self._part("exports trie", f[8], f[9])
        elif cmd in _LINKEDIT_DATA:
            dataoff, datasize = b.unpack(end + "II", at + 8, f"load command {i}")
            self._part(_LINKEDIT_DATA[cmd], dataoff, datasize)
            if cmd == LC_FUNCTION_STARTS:
                self.function_starts = (dataoff, datasize)

    def _part(self, what: str, offset: int, length: int) -> None:
        if length == 0:
            return
        self.span(offset, length, what)
        self.linkedit.append(Region(what, self.base + offset, length, 0))

    def _segment(self, wide: bool, p: int, cmdsize: int, i: int) -> None:
        b, end, at = self.blob, self.end, self.base + p
        seg_fmt, sect_fmt = (end + "16sQQQQiiII", 80) if wide else (end + "16sIIIIiiII", 68)
        seg_size = 72 if wide else 56
        if cmdsize < seg_size:
            raise self.fail(f"load command {i}: segment command of {cmdsize} bytes is too short")
        name_raw, vmaddr, vmsize, fileoff, filesize, _, _, nsects, _ = b.unpack(
            seg_fmt, at + 8, "segment"
        )
        name = cstr(name_raw)
        if seg_size + nsects * sect_fmt > cmdsize:
            raise self.fail(
                f"segment {name or '(unnamed)'}: {nsects} sections do not fit in its load command"
            )
        self.span(fileoff, filesize, f"segment {name or '(unnamed)'}")
        seg = _Segment(name, vmaddr, vmsize, fileoff, filesize)
        s_fmt = end + ("16s16sQQIIIIIIII" if wide else "16s16sIIIIIIIIII")
        for k in range(nsects):
            f = b.unpack(s_fmt, at + seg_size + k * sect_fmt, "section header")
            sect, segname, addr, size, offset, _align, reloff, nreloc, flags = f[:9]
            label = f"{cstr(segname)},{cstr(sect)}"
            zerofill = (flags & 0xFF) in ZEROFILL
            length = 0 if zerofill else size
            if length:
                self.span(offset, length, f"section {label}")
            region = Region(
                label,
                self.base + offset,
                length,
                size,
                executable=bool(flags & S_ATTR_INSTRUCTIONS),
                sym_addr=addr,
                sym_size=size,
            )
            seg.sections.append(region)
            self.sections.append(region)
            if nreloc:
                self.span(reloff, nreloc * 8, f"relocations of {label}")
                self.relocs.append(Region("[relocations]", self.base + reloff, nreloc * 8, 0))
        self.segments.append(seg)

    def _assemble(self, header: Region, arch: str, filetype: int) -> Image:
        linkedit_seg = next((s for s in self.segments if s.name == "__LINKEDIT"), None)
        # inside __LINKEDIT the parts are mapped; in object files they lie outside any segment
        for part in self.linkedit:
            if linkedit_seg is not None:
                part.label = f"__LINKEDIT: {part.label}"
                part.vm = part.length if self._inside(linkedit_seg, part) else 0
            else:
                part.label = f"[{part.label}]"
        mapped_seg = next(
            (s for s in self.segments if s.filesize and self._inside(s, header)), None
        )
        if mapped_seg is not None:
            header.vm = header.length
        containers = []
        for s in self.segments:
            used = sum(r.vm for r in s.sections)
            used += header.vm if s is mapped_seg else 0
            used += sum(p.vm for p in self.linkedit) if s is linkedit_seg else 0
            label = (
                "__LINKEDIT: remainder"
                if s is linkedit_seg
                else PADDING
                if s.sections
                else s.name or "[unnamed segment]"
            )
            containers.append(
                Container(label, self.base + s.fileoff, s.filesize, max(0, s.vmsize - used))
            )
        segments = [
            Region(s.name or "[unnamed segment]", self.base + s.fileoff, s.filesize, s.vmsize)
            for s in self.segments
        ]
        segments.append(Region(header.label, header.start, header.length, 0))
        segments += [Region(r.label, r.start, r.length, 0) for r in self.linkedit + self.relocs]
        image = Image(
            path=self.blob.name,
            arch=arch,
            fmt="Mach-O 64-bit" if self.wide else "Mach-O 32-bit",
            kind=_KINDS.get(filetype, f"file type {filetype}"),
            file_size=self.blob.size,
            vm_total=sum(s.vmsize for s in self.segments),
            sections=[*self.sections, header, *self.linkedit, *self.relocs],
            section_containers=containers,
            segments=segments,
        )
        return image

    def _inside(self, seg: _Segment, r: Region) -> bool:
        return (
            seg.fileoff <= r.start - self.base
            and r.start - self.base + r.length <= seg.fileoff + seg.filesize
        )

    def _symbols(self) -> SymbolTable | None:
        import numpy as np

        if self.symtab is None:
            return None
        symoff, nsyms, stroff, strsize = self.symtab
        e = self.end
        fields = [("strx", e + "u4"), ("type", "u1"), ("sect", "u1"), ("desc", e + "u2")]
        fields.append(("value", e + ("u8" if self.wide else "u4")))
        dtype = np.dtype(fields)
        syms = np.frombuffer(
            self.blob.data, dtype=dtype, count=nsyms, offset=self.base + symoff
        ).copy()
        strtab = self.blob.read(self.base + stroff, strsize, "string table")
        ntype = syms["type"].astype(np.int64)
        sect = syms["sect"].astype(np.int64)
        usable = ((ntype & N_STAB) == 0) & ((ntype & N_TYPE) == N_SECT)
        usable &= (sect >= 1) & (sect <= len(self.sections))
        rank = np.where(ntype & N_PEXT, 1, np.where(ntype & N_EXT, 0, 2)).astype(np.int64)
        addr = syms["value"].astype(np.uint64)
        return SymbolTable(
            source="LC_SYMTAB",
            region=np.where(usable, sect - 1, -1).astype(np.int64),
            addr=addr,
            size=np.zeros(nsyms, dtype=np.uint64),
            rank=rank,
            name_off=syms["strx"].astype(np.int64),
            strtab=strtab,
            sized=False,
            strip_underscore=True,
            missing=self._unnamed(addr[usable]),
        )

    def _unnamed(self, named: npt.NDArray[np.uint64]) -> str:
        """What a stripped image lacks: "names for K of N functions" where K of the N
        functions its linker listed (LC_FUNCTION_STARTS) start where no symbol does (strip
        -x removed their local symbols, strip the rest but what dyld needs); "" where each
        has a name, or where the image lists none (object files)."""
        import numpy as np

        starts = self._starts()
        if starts is None or not len(starts):
            return ""
        if self.arm32:  # a Thumb function's start and its symbol may differ in bit 0
            starts, named = starts & ~np.uint64(1), named & ~np.uint64(1)
        unnamed = int(np.count_nonzero(~np.isin(starts, named)))
        if not unnamed:
            return ""
        n = len(starts)
        return f"names for {unnamed} of {n} function{'s' if n != 1 else ''}"

    def _starts(self) -> npt.NDArray[np.uint64] | None:
        """The function starts' addresses: ULEB128 deltas from the address of the segment
        that maps the file's start (llvm-objdump's base), ended by a zero; None where there
        are none, or the data is not ULEB128 that fits 64 bits (nothing is claimed)."""
        import numpy as np

        base = next((s.vmaddr for s in self.segments if s.fileoff == 0 and s.filesize), None)
        if self.function_starts is None or base is None or not self.function_starts[1]:
            return None
        off, size = self.function_starts
        raw = np.frombuffer(self.blob.data, dtype=np.uint8, count=size, offset=self.base + off)
        ends = np.flatnonzero(raw < 0x80)
        if not len(ends):
            return None
        raw = raw[: ends[-1] + 1]
        first = np.concatenate(([0], ends[:-1] + 1))
        if int((ends - first).max()) > 8:  # 9 bytes of 7 bits: 63
            return None
        group = np.repeat(np.arange(len(ends)), ends - first + 1)
        shift = (np.arange(len(raw)) - first[group]) * 7
        bits = (raw & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
        deltas = np.add.reduceat(bits, first)
        zero = np.flatnonzero(deltas == 0)
        deltas = deltas[: zero[0]] if len(zero) else deltas
        return np.uint64(base) + np.cumsum(deltas, dtype=np.uint64)
