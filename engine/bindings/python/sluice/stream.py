"""The streamer alone (io/sluice_stream.h): acquire a unit, read its tensors
as memoryviews or NumPy arrays (when NumPy is installed), release it.

Tensor data of a streamed unit is valid only between acquire and release:
a Unit refuses to hand out views after release (copy an array to keep it).
Calls on one Stream come from one thread at a time (a lock enforces it)."""
import ctypes
import os
import threading

from . import _lib
from ._lib import SluiceError, lib, check, text, SL_EINVAL
from .engine import MODES, IOS, _enum

try:
    import numpy as _np
except ImportError:   # memoryviews only
    _np = None

_NP_TYPES = {0: "<f4", 1: "<f2"}   # ggml F32, F16; other types come as raw bytes (uint8)


class Tensor:
    """name, type (ggml type id), shape (outermost first, as NumPy orders it), nbytes."""

    def __init__(self, t, owner):
        self.name = text(t.name)
        self.type = t.type
        self.shape = tuple(int(t.ne[i]) for i in reversed(range(t.n_dims)))
        self.nbytes = int(t.nbytes)
        self._data = t.data
        self._owner = owner

    def buffer(self):
        """The bytes in place as a read-only memoryview (None if not resident)."""
        self._owner._alive()
        if not self._data:
            return None
        return memoryview((ctypes.c_char * self.nbytes).from_address(self._data)).toreadonly()

    def array(self):
        """A read-only NumPy view (F32/F16 shaped; other types flat uint8). Needs NumPy."""
        if _np is None:
            raise SluiceError(SL_EINVAL, "NumPy is not installed: use buffer()")
        b = self.buffer()
        if b is None:
            return None
        dt = _NP_TYPES.get(self.type)
        if dt is None:
            return _np.frombuffer(b, dtype=_np.uint8)
        return _np.frombuffer(b, dtype=dt).reshape(self.shape)


class _Always:
    def _alive(self):
        pass


class Unit:
    """An acquired unit: ``tensors`` by full name, ``find(suffix)``; release() or use ``with``."""

    def __init__(self, stream, unit, view):
        self.stream, self.unit = stream, unit
        self._held = True
        self.tensors = {}
        for i in range(view.n_tensors):
            t = Tensor(view.tensors[i], self)
            self.tensors[t.name] = t

    def _alive(self):
        if not self._held:
            raise SluiceError(SL_EINVAL, "unit %d was released: its tensor data is gone" % self.unit)

    def find(self, suffix):
        """Tensor by full name or suffix ("attn_q.weight"); KeyError if absent."""
        self._alive()
        if suffix in self.tensors:
            return self.tensors[suffix]
        for name, t in self.tensors.items():
            if name.endswith("." + suffix):
                return t
        raise KeyError(suffix)

    def release(self):
        if self._held:
            self._held = False
            self.stream._release(self.unit)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class Stream:
    """``Stream(path, mode="stream", io="pread", mem_budget=2 << 20, depth=3, ...)``: keywords
    are sl_stream_config's fields (mode and io also by name; no read hook from Python)."""

    def __init__(self, path, **config):
        self._h = None
        self._lock = threading.RLock()
        c = _lib.StreamConfig()
        check(lib.sl_stream_config_init_sized(ctypes.byref(c), ctypes.sizeof(c)), lib.sl_last_error)
        for k, v in config.items():
            if k == "mode":
                v = _enum(MODES, v, "mode")
            elif k == "io":
                v = _enum(IOS, v, "io")
            elif k not in dict(c._fields_) or k in ("struct_size", "read_hook", "read_hook_ctx"):
                raise SluiceError(SL_EINVAL, "Stream: unknown parameter %r" % k)
            if k in ("mem_budget", "reserve_bytes") and v < 0:
                raise SluiceError(SL_EINVAL, "Stream: %s is negative" % k)
            setattr(c, k, v)
        h = ctypes.c_void_p()
        check(lib.sl_stream_open(ctypes.byref(h), os.fsencode(path), ctypes.byref(c)), lib.sl_stream_open_errmsg)
        self._h = h
        self._units = {}

    def _handle(self):
        if self._h is None:
            raise SluiceError(SL_EINVAL, "stream is closed")
        return self._h

    def _err(self):
        return lib.sl_stream_errmsg(self._h)

    def close(self):
        with self._lock:
            for u in list(self._units.values()):
                u._held = False
            self._units.clear()
            if self._h is not None:
                lib.sl_stream_close(self._h)
                self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None) is not None:
            self.close()

    @property
    def n_units(self):
        with self._lock:
            return lib.sl_stream_n_units(self._handle())

    def notice(self):
        with self._lock:
            return text(lib.sl_stream_notice(self._handle()))

    def plan(self):
        """The planner's decision (sl_stream_plan) as a dict; mode/io by name."""
        with self._lock:
            p = lib.sl_stream_get_plan(self._handle()).contents
            d = {k: getattr(p, k) for k, _ in p._fields_}
        d["mode"], d["io"] = text(lib.sl_stream_mode_name(p.mode)), text(lib.sl_stream_io_name(p.io))
        return d

    def unit_info(self, unit):
        u = _lib.StreamUnit()
        with self._lock:
            check(lib.sl_stream_unit_info_sized(self._handle(), unit, ctypes.byref(u), ctypes.sizeof(u)),
                  self._err)
        d = {k: getattr(u, k) for k, _ in u._fields_}
        d["kind"] = "layer" if u.kind == 0 else "head"
        return d

    def acquire(self, unit):
        """Blocks until the unit is in RAM; a Unit (use ``with``, or release())."""
        v = _lib.StreamView()
        with self._lock:
            check(lib.sl_stream_acquire_sized(self._handle(), unit, ctypes.byref(v), ctypes.sizeof(v)),
                  self._err)
            u = Unit(self, unit, v)
            self._units[unit] = u
        return u

    def _release(self, unit):
        with self._lock:
            self._units.pop(unit, None)
            check(lib.sl_stream_release(self._handle(), unit), self._err)

    def prefetch(self, unit):
        with self._lock:
            check(lib.sl_stream_prefetch(self._handle(), unit), self._err)

    def global_tensor(self, name):
        """A non-layer tensor (output_norm.weight, ...), valid until close; None if absent."""
        with self._lock:
            t = lib.sl_stream_global(self._handle(), name.encode())
            return Tensor(t.contents, _Always()) if t else None

    def read_row(self, name, row):
        """One row of a non-layer matrix (token_embd) as bytes (NumPy: np.frombuffer)."""
        t = self.global_tensor(name)
        if t is None:
            raise SluiceError(_lib.SL_ENOENT, "read_row: no tensor %r" % name)
        rows = 1
        for d in t.shape[:-1]:
            rows *= d
        n = t.nbytes // max(rows, 1)
        buf = ctypes.create_string_buffer(n)
        with self._lock:
            check(lib.sl_stream_read_row(self._handle(), name.encode(), row, buf, n), self._err)
        return buf.raw

    def meta(self, key):
        """A scalar GGUF metadata value (int, float, bool or str) through the streamer's
        reader (gguf/gguf.h); None if absent; arrays are not read here (SluiceError)."""
        with self._lock:
            g = lib.sl_stream_gguf(self._handle())
            i = lib.sl_gguf_find_key(g, key.encode())
            if i < 0:
                return None
            vt = text(lib.sl_gguf_vtype_name(lib.sl_gguf_kv_type(g, i)))
            v = lib.sl_gguf_kv_value(g, i)
            if vt == "bool":
                return bool(lib.sl_gguf_value_u64(v))
            if vt.startswith("u"):
                return int(lib.sl_gguf_value_u64(v))
            if vt.startswith("i"):
                return int(lib.sl_gguf_value_i64(v))
            if vt.startswith("f"):
                return float(lib.sl_gguf_value_f64(v))
            if vt == "string":
                n = ctypes.c_uint64()
                p = lib.sl_gguf_value_str(v, ctypes.byref(n))
                return text(ctypes.string_at(p, n.value))
            raise SluiceError(SL_EINVAL, "meta: %s is a %s, not a scalar" % (key, vt))

    def stats(self):
        st = _lib.StreamStats()
        with self._lock:
            check(lib.sl_stream_get_stats_sized(self._handle(), ctypes.byref(st), ctypes.sizeof(st)), self._err)
        return {k: getattr(st, k) for k, _ in st._fields_}

    def reset_stats(self):
        with self._lock:
            lib.sl_stream_reset_stats(self._handle())
