#!/usr/bin/env python3
"""A fuzz seed from a GGUF file: its header and tensor table without the tensor data, and
without the tokenizer.* keys (the vocabulary is most of a small model's head and none of
what the model-description loader checks). Usage: gguf_head.py IN OUT"""
import struct
import sys

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(d, pos, t):
    if t in SCALAR:
        return pos + SCALAR[t]
    if t == 8:
        return pos + 8 + struct.unpack_from("<Q", d, pos)[0]
    et, n = struct.unpack_from("<IQ", d, pos)
    pos += 12
    if et in SCALAR:
        return pos + n * SCALAR[et]
    for _ in range(n):
        pos = skip_value(d, pos, et)
    return pos


def main(src, dst):
    d = open(src, "rb").read()
    magic, ver, n_t, n_kv = struct.unpack_from("<4sIQQ", d, 0)
    assert magic == b"GGUF" and ver >= 2, src
    pos, kvs = 24, []
    for _ in range(n_kv):
        beg = pos
        klen = struct.unpack_from("<Q", d, pos)[0]
        key = d[pos + 8:pos + 8 + klen]
        t = struct.unpack_from("<I", d, pos + 8 + klen)[0]
        pos = skip_value(d, pos + 12 + klen, t)
        if not key.startswith(b"tokenizer."):
            kvs.append(d[beg:pos])
    beg = pos
    for _ in range(n_t):
        nlen = struct.unpack_from("<Q", d, pos)[0]
        nd = struct.unpack_from("<I", d, pos + 8 + nlen)[0]
        pos += 8 + nlen + 4 + 8 * nd + 4 + 8
    out = struct.pack("<4sIQQ", magic, ver, n_t, len(kvs)) + b"".join(kvs) + d[beg:pos]
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
