"""Reading just enough of a GGUF file to tell whether it is whole.

llama.cpp would also refuse most broken files, but with a message about tensors that a user cannot act
on; this check names the file and says what is wrong before anything is mapped into memory.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

GGUF_MAGIC = b"GGUF"

# ggml type id -> (elements per block, bytes per block); from ggml.h / ggml.c type traits.
_TYPE_SIZES = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18), 21: (256, 110),
    22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8),
    29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66), 39: (32, 17),
}

# GGUF metadata value types
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class ModelFileError(Exception):
    """A model file that must not be loaded; the message says which file and why."""


@dataclass
class GGUFInfo:
    path: str
    version: int
    n_tensors: int
    metadata: dict = field(default_factory=dict)
    data_end: int = 0          # where the last tensor's data ends; the file must be at least this long
    file_size: int = 0


class _Reader:
    def __init__(self, f, size: int, path: str):
        self.f, self.size, self.path = f, size, path

    def read(self, n: int) -> bytes:
        b = self.f.read(n)
        if len(b) != n:
            raise ModelFileError(f"{self.path}: truncated GGUF header (file is {self.size:,} bytes)")
        return b

    def unpack(self, fmt: str):
        return struct.unpack("<" + fmt, self.read(struct.calcsize("<" + fmt)))[0]

    def need(self, n: int) -> None:
        if n > self.size - self.f.tell():
            raise ModelFileError(f"{self.path}: truncated GGUF header (file is {self.size:,} bytes)")

    def string(self) -> str:
        n = self.unpack("Q")
        self.need(n)
        return self.read(n).decode("utf-8", errors="replace")

    def value(self, vtype: int, keep: bool):
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            etype, n = self.unpack("I"), self.unpack("Q")
            # every item takes at least a few bytes: a count beyond what is left means a cut file
            self.need(n * (struct.calcsize("<" + _SCALARS[etype]) if etype in _SCALARS else 8))
            if etype in _SCALARS and not keep:
                self.f.seek(n * struct.calcsize("<" + _SCALARS[etype]), os.SEEK_CUR)
                return None
            items = [self.value(etype, keep) for _ in range(n)]
            return items if keep else None
        raise ModelFileError(f"{self.path}: corrupt GGUF header (unknown value type {vtype})")


def read_gguf(path: str, keep_keys: tuple[str, ...] = ()) -> GGUFInfo:
    """Parse the header and tensor table; raise ModelFileError if the file is not a whole GGUF file."""
    try:
        size = os.path.getsize(path)
        f = open(path, "rb")
    except OSError as e:
        raise ModelFileError(f"{path}: cannot open model file ({e.strerror})") from e
    with f:
        r = _Reader(f, size, path)
        if size < 24 or f.read(4) != GGUF_MAGIC:
            raise ModelFileError(f"{path}: not a GGUF model file (bad magic)")
        version = r.unpack("I")
        if version not in (2, 3):
            raise ModelFileError(f"{path}: unsupported GGUF version {version}")
        n_tensors, n_kv = r.unpack("Q"), r.unpack("Q")
        info = GGUFInfo(path=path, version=version, n_tensors=n_tensors, file_size=size)
        for _ in range(n_kv):
            key = r.string()
            vtype = r.unpack("I")
            keep = key in keep_keys or vtype != _ARRAY
            val = r.value(vtype, keep)
            if keep:
                info.metadata[key] = val
        alignment = int(info.metadata.get("general.alignment", 32))
        end = 0
        for _ in range(n_tensors):
            r.string()   # the tensor name
            n_dims = r.unpack("I")
            dims = [r.unpack("Q") for _ in range(n_dims)]
            ttype, offset = r.unpack("I"), r.unpack("Q")
            n_el = 1
            for d in dims:
                n_el *= d
            blk, bsize = _TYPE_SIZES.get(ttype, (1, 0))
            end = max(end, offset + (n_el // blk) * bsize)
        data_start = f.tell()
        data_start += (-data_start) % alignment
        info.data_end = data_start + end
        if size < info.data_end:
            raise ModelFileError(
                f"{path}: truncated model file: {size:,} bytes, but its tensors need {info.data_end:,}")
        return info
