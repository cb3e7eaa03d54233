#!/usr/bin/env python3
"""Independent GGUF dump (struct only) used to pick the values that
tests/test_gguf.c checks. Usage: gguf_facts.py FILE..."""
import struct, sys

BLK = {0:(1,4),1:(1,2),2:(32,18),3:(32,20),6:(32,22),7:(32,24),8:(32,34),9:(32,36),
       10:(256,84),11:(256,110),12:(256,144),13:(256,176),14:(256,210),15:(256,292),30:(1,2)}
SC = {0:'<B',1:'<b',2:'<H',3:'<h',4:'<I',5:'<i',6:'<f',7:'<?',10:'<Q',11:'<q',12:'<d'}

def dump(path):
    d = open(path, 'rb').read()
    pos = 0
    def rd(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, d, pos); pos += struct.calcsize(fmt); return v[0]
    def rs():
        n = rd('<Q'); nonlocal pos
        s = d[pos:pos+n]; pos += n; return s.decode('utf-8', 'replace')
    def val(t):
        if t in SC: return rd(SC[t])
        if t == 8: return rs()
        et = rd('<I'); n = rd('<Q')
        return ('arr', et, n, [val(et) for _ in range(n)])
    assert d[:4] == b'GGUF'
    pos = 4
    ver = rd('<I'); nt = rd('<Q'); nkv = rd('<Q')
    print(path, 'version', ver, 'n_tensors', nt, 'n_kv', nkv, 'size', len(d))
    kv = {}
    for i in range(nkv):
        k = rs(); t = rd('<I'); v = val(t); kv[k] = v
        if isinstance(v, tuple): print(' kv', i, k, 'arr', v[1], v[2], repr(v[3][:3]))
        else: print(' kv', i, k, t, repr(v)[:80])
    al = kv.get('general.alignment', 32)
    ts = []
    for i in range(nt):
        name = rs(); nd = rd('<I'); ne = [rd('<Q') for _ in range(nd)]; ty = rd('<I'); off = rd('<Q')
        ts.append((name, ne, ty, off))
    data = (pos + al - 1) // al * al
    print(' data_offset', data, 'alignment', al)
    layers = {}; total = 0
    for name, ne, ty, off in ts:
        b, s = BLK[ty]; n = 1
        for x in ne[1:]: n *= x
        nb = ne[0] // b * s * n; total += nb
        L = int(name.split('.')[1]) if name.startswith('blk.') else -1
        e = layers.setdefault(L, [1 << 64, 0, 0, 0])
        e[0] = min(e[0], data + off); e[1] = max(e[1], data + off + nb); e[2] += nb; e[3] += 1
        print(' t', name, ne, ty, 'off', off, 'file_off', data + off, 'nbytes', nb)
    for L in sorted(layers):
        print(' layer', L, 'begin', layers[L][0], 'end', layers[L][1], 'bytes', layers[L][2], 'n', layers[L][3])
    print(' total', total)

for p in sys.argv[1:]: dump(p)
