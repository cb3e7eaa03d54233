"""Model and Session (engine/sluice.h) over ctypes.

A model's calls and those of its sessions take the model's lock: sluice.h
allows one computing session per model at a time. Closed objects raise
SluiceError(SL_EINVAL) instead of reaching the library."""
import ctypes
import os
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import SluiceError, lib, check, text, SL_EINVAL, SL_ERANGE
from .completion import CompletionMixin


def _names(name_of):
    """{name: value} of an enum as the library spells it (values 0, 1, ... up to "?")."""
    table = {}
    while text(name_of(len(table))) != "?":
        table[text(name_of(len(table)))] = len(table)
    return table


MODES = _names(lib.sl_stream_mode_name)
IOS = _names(lib.sl_stream_io_name)


def _enum(table, value, what):
    if isinstance(value, str):
        if value not in table:
            raise SluiceError(SL_EINVAL, "%s: unknown value %r (one of %s)" % (what, value, ", ".join(table)))
        return table[value]
    return int(value)


def rss_bytes() -> Tuple[int, int]:
    """(VmRSS, VmHWM) of this process in bytes; (0, 0) without /proc."""
    cur = peak = 0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) * 1024
    except OSError:
        pass
    return cur, peak


class Model(CompletionMixin):
    """An open GGUF model. ``Model(path, n_ctx=512, mode="stream", mem_budget=2 << 20, ...)``;
    keywords are the fields of sl_model_params (mode and io also by name; ``threads`` is
    n_threads), and ``chat_format``: a chat template family by name (default: the model's).
    Completions and chat completions: CompletionMixin (sluice/completion.py)."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], chat_format: Optional[str] = None, **params: Any):
        self._h = None
        self._lock = threading.RLock()
        self._sessions = []
        self.model_path = os.fspath(path)
        self.chat_format = chat_format
        if "threads" in params:
            params["n_threads"] = params.pop("threads")
        p = _lib.ModelParams()
        check(lib.sl_model_params_init_sized(ctypes.byref(p), ctypes.sizeof(p)), lib.sl_last_error)
        for k, v in params.items():
            if k == "mode":
                v = _enum(MODES, v, "mode")
            elif k == "io":
                v = _enum(IOS, v, "io")
            elif k not in dict(p._fields_) or k == "struct_size":
                raise SluiceError(SL_EINVAL, "Model: unknown parameter %r" % k)
            if k == "mem_budget" and v < 0:
                raise SluiceError(SL_EINVAL, "Model: mem_budget is negative")
            setattr(p, k, v)
        h = ctypes.c_void_p()
        check(lib.sl_model_open(ctypes.byref(h), os.fsencode(path), ctypes.byref(p)), lib.sl_last_error)
        self._h = h

    def _handle(self):
        if self._h is None:
            raise SluiceError(SL_EINVAL, "model is closed")
        return self._h

    def close(self) -> None:
        with self._lock:
            for s in list(self._sessions):
                s.close()
            if self._h is not None:
                lib.sl_model_close(self._h)
                self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None) is not None:
            self.close()

    def info(self) -> Dict[str, Any]:
        """sl_model_info as a dict; mode/io by name."""
        with self._lock:
            mi = _lib.ModelInfo()
            check(lib.sl_model_get_info_sized(self._handle(), ctypes.byref(mi), ctypes.sizeof(mi)),
                  lambda: lib.sl_model_errmsg(self._h))
            d = {k: getattr(mi, k) for k, _ in mi._fields_}
            d["arch"], d["isa"] = text(mi.arch), text(mi.isa)
            d["mode"], d["io"] = text(lib.sl_stream_mode_name(mi.mode)), text(lib.sl_stream_io_name(mi.io))
            return d

    def tokenize(self, s: Union[str, bytes], add_bos: bool = True, parse_special: bool = False) -> List[int]:
        """Token ids of a str or bytes."""
        b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
        with self._lock:
            # a token a byte, else the bound: SPM byte fallback spells an invalid byte as U+FFFD's
            # three byte tokens
            for cap in (len(b) + 8, 3 * len(b) + 16):
                ids = (ctypes.c_int32 * cap)()
                n = lib.sl_model_tokenize(self._handle(), b, len(b), add_bos, parse_special, ids, cap)
                if n != SL_ERANGE:
                    break
            n = check(n, lambda: lib.sl_model_errmsg(self._h))
        return list(ids[:n])

    def token_bytes(self, tok: int) -> bytes:
        """The bytes a token stands for, as printed (not necessarily UTF-8 alone)."""
        buf = ctypes.create_string_buffer(1024)
        with self._lock:
            n = check(lib.sl_model_token_piece(self._handle(), tok, buf, len(buf)),
                      lambda: lib.sl_model_errmsg(self._h))
        return buf.raw[:n]

    def detokenize(self, ids: Sequence[int]) -> bytes:
        """Bytes of a token sequence (token pieces joined; decode as UTF-8 yourself)."""
        return b"".join(self.token_bytes(t) for t in ids)

    def is_eog(self, tok: int) -> bool:
        with self._lock:
            return bool(lib.sl_model_token_is_eog(self._handle(), tok))

    def meta(self, key: str) -> Optional[str]:
        """A string metadata value, or None."""
        with self._lock:
            v = lib.sl_model_meta_str(self._handle(), key.encode())
        return None if v is None else text(v)

    def session(self, prompt: Optional[Union[str, bytes, Sequence[int]]] = None, **sampling: Any) -> "Session":
        """A new Session; sampling keywords as Session.set_sampling; prompt fed if given."""
        with self._lock:
            s = Session(self)
            self._sessions.append(s)
        try:
            if sampling:
                s.set_sampling(**sampling)
            if prompt is not None:
                s.feed(prompt)
        except Exception:
            s.close()
            raise
        return s


class Session:
    """One conversation: KV cache, sampler, streaming detokenizer."""

    def __init__(self, model: Model):
        self.model = model
        self._lock = model._lock
        h = ctypes.c_void_p()
        check(lib.sl_session_create(ctypes.byref(h), model._handle()), lib.sl_last_error)
        self._h = h

    def _handle(self):
        if self._h is None:
            raise SluiceError(SL_EINVAL, "session is closed")
        return self._h

    def _err(self):
        return lib.sl_session_errmsg(self._h)

    def close(self):
        with self._lock:
            if self._h is not None:
                lib.sl_session_destroy(self._h)
                self._h = None
                if self in self.model._sessions:
                    self.model._sessions.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def set_sampling(self, **kw: Any) -> None:
        """temp (0 = greedy), top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed;
        the rest keep sl_sampling_init's defaults. Also reseeds."""
        sp = _lib.Sampling()
        check(lib.sl_sampling_init_sized(ctypes.byref(sp), ctypes.sizeof(sp)), lib.sl_last_error)
        for k, v in kw.items():
            if k not in dict(sp._fields_) or k == "struct_size":
                raise SluiceError(SL_EINVAL, "set_sampling: unknown parameter %r" % k)
            setattr(sp, k, v)
        with self._lock:
            check(lib.sl_session_set_sampling(self._handle(), ctypes.byref(sp)), self._err)

    def feed(self, prompt: Union[str, bytes, Sequence[int]], parse_special: bool = False) -> None:
        """Feed text (BOS as the model asks when empty) or a list of token ids."""
        with self._lock:
            h = self._handle()
            if isinstance(prompt, (str, bytes)):
                b = prompt.encode("utf-8") if isinstance(prompt, str) else prompt
                if b"\0" in b:
                    raise SluiceError(SL_EINVAL, "feed: text contains a NUL byte")
                check(lib.sl_session_feed_text(h, b, parse_special), self._err)
            else:
                ids = (ctypes.c_int32 * len(prompt))(*prompt)
                check(lib.sl_session_feed_tokens(h, ids, len(prompt)), self._err)

    def eval(self, ids: Sequence[int]) -> Any:
        """Feed ids and return the logits of every position (n x n_vocab; NumPy array if present)."""
        n_vocab = self.model.info()["n_vocab"]
        out = (ctypes.c_float * (len(ids) * n_vocab))()
        arr = (ctypes.c_int32 * len(ids))(*ids)
        with self._lock:
            check(lib.sl_session_eval(self._handle(), arr, len(ids), out), self._err)
        try:
            import numpy as np
            return np.ctypeslib.as_array(out).reshape(len(ids), n_vocab).copy()
        except ImportError:
            return [list(out[i * n_vocab:(i + 1) * n_vocab]) for i in range(len(ids))]

    def sample(self) -> int:
        tok = ctypes.c_int32()
        with self._lock:
            check(lib.sl_session_sample(self._handle(), ctypes.byref(tok)), self._err)
        return tok.value

    def accept(self, tok: int) -> None:
        with self._lock:
            check(lib.sl_session_accept(self._handle(), tok), self._err)

    def detok(self, tok: int) -> bytes:
        """Streaming detokenizer: bytes of tok given what came before (may be b"")."""
        buf = ctypes.create_string_buffer(2048)
        with self._lock:
            n = check(lib.sl_session_detok(self._handle(), tok, buf, len(buf)), self._err)
        return buf.raw[:n]

    @property
    def n_past(self) -> int:
        with self._lock:
            return lib.sl_session_n_past(self._handle())

    @property
    def n_ctx(self) -> int:
        with self._lock:
            return lib.sl_session_n_ctx(self._handle())

    def generate(self, n: int = -1, stop_at_eog: bool = True) -> Iterator[Tuple[int, bytes]]:
        """Iterator of (token, bytes) for up to n tokens (-1: until the end), the loop of
        `sluice run`: stops at an end-of-generation token (not fed) or a full context."""
        i = 0
        while n < 0 or i < n:
            with self._lock:
                if self.n_past >= self.n_ctx:
                    return
                tok = self.sample()
                if stop_at_eog and self.model.is_eog(tok):
                    return
                piece = self.detok(tok)
                self.accept(tok)
            yield tok, piece
            i += 1

    def reset(self) -> None:
        with self._lock:
            lib.sl_session_reset(self._handle())

    def stats(self) -> Dict[str, Any]:
        """sl_stats as a dict, plus tok_s, rss_bytes, peak_rss_bytes, mode, io."""
        st = _lib.Stats()
        with self._lock:
            check(lib.sl_session_get_stats_sized(self._handle(), ctypes.byref(st), ctypes.sizeof(st)),
                  self._err)
        d = {k: getattr(st, k) for k, _ in st._fields_}
        d["tok_s"] = st.n_decode * 1e3 / st.decode_ms if st.decode_ms > 0 else 0.0
        d["rss_bytes"], d["peak_rss_bytes"] = rss_bytes()
        info = self.model.info()
        d["mode"], d["io"] = info["mode"], info["io"]
        return d

    def reset_stats(self) -> None:
        with self._lock:
            lib.sl_session_reset_stats(self._handle())

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Save tokens, KV cache, logits and sampler state to path (atomic; sl_session_save)."""
        with self._lock:
            check(lib.sl_session_save(self._handle(), os.fsencode(path)), self._err)

    def load(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Restore what save wrote; another model's, KV type's or a damaged file raises
        SluiceError and leaves the session empty."""
        with self._lock:
            check(lib.sl_session_load(self._handle(), os.fsencode(path)), self._err)

    def load_prefix(self, path: Union[str, "os.PathLike[str]"], ids: Sequence[int]) -> int:
        """Restore the longest common prefix of path's tokens and ids; returns how many
        positions were restored (feed ids[n:] next)."""
        arr = (ctypes.c_int32 * len(ids))(*ids)
        n = ctypes.c_int32(0)
        with self._lock:
            check(lib.sl_session_load_prefix(self._handle(), os.fsencode(path), arr, len(ids),
                                             ctypes.byref(n)), self._err)
        return n.value

    def pressure_level(self, level: int) -> int:
        """Feed a memory-pressure level (0 none .. 3 critical; Android onTrimMemory mapped as in
        Session.trimMemory of the Java API) once the ladder is on; returns the steps taken."""
        with self._lock:
            return check(lib.sl_session_pressure_level(self._handle(), int(level)), self._err)
