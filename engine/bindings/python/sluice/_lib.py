"""libsluice.so through ctypes: loading, the C structs, prototypes, errors.

Only the public headers' API (engine/sluice.h, io/sluice_stream.h); versioned
structs go through the ``_sized`` entry points with this module's own struct
sizes (README "Library": ABI contract). No compiled extension."""
import ctypes
import ctypes.util
import glob
import os
import subprocess

_c = ctypes
c_int, c_int32, c_uint32, c_uint64, c_int64 = _c.c_int, _c.c_int32, _c.c_uint32, _c.c_uint64, _c.c_int64
c_size_t, c_float, c_double, c_bool, c_char_p, c_void_p = (_c.c_size_t, _c.c_float, _c.c_double,
                                                          _c.c_bool, _c.c_char_p, _c.c_void_p)

SL_EINVAL, SL_ENOENT, SL_ERANGE, SL_ECTX = -22, -2, -34, -1007


class SluiceError(Exception):
    """A Sluice failure: ``status`` (negative SL_E*, gguf/base/sl_status.h) and Sluice's message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _in(folder: str) -> "str | None":
    """libsluice.so.N (the SONAME) or libsluice.so in folder, or None."""
    names = sorted(glob.glob(os.path.join(folder, "libsluice.so.[0-9]*")), key=len) + \
        [os.path.join(folder, "libsluice.so")]
    return next((n for n in names if os.path.exists(n)), None)


def _pkg_config_libdir() -> "str | None":
    """The `make install` prefix's lib folder, as pkg-config knows it (sluice.pc)."""
    try:
        r = subprocess.run(["pkg-config", "--variable=libdir", "sluice"], capture_output=True, text=True,
                           timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def _find() -> "list[str]":
    """Where libsluice is looked for, in order: $SLUICE_LIB; the copy bundled in the wheel; the
    source tree's build/ (running from a checkout); the `make install` prefix (pkg-config);
    the dynamic loader's own search (ld.so.conf, LD_LIBRARY_PATH)."""
    env = os.environ.get("SLUICE_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    tries = [_in(here), _in(os.path.join(here, "..", "..", "..", "..", "build"))]
    libdir = _pkg_config_libdir()
    if libdir:
        tries.append(_in(libdir))
    tries += [ctypes.util.find_library("sluice"), "libsluice.so.0"]
    return [t for t in tries if t]


def _load() -> ctypes.CDLL:
    errors = []
    for path in _find():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("sluice: cannot load libsluice (set SLUICE_LIB, `make install` it where pkg-config "
                      "finds sluice.pc, or install a wheel that bundles it): " + "; ".join(errors))


lib = _load()


class ModelParams(_c.Structure):
    _fields_ = [("struct_size", c_size_t), ("n_threads", c_int), ("n_ctx", c_int32),
                ("n_batch", c_int32), ("mode", c_int), ("io", c_int), ("mem_budget", c_uint64),
                ("max_pinned", c_int32), ("mlock", c_bool)]


class ModelInfo(_c.Structure):
    _fields_ = [("arch", c_char_p), ("n_layer", c_int32), ("n_embd", c_int32), ("n_ff", c_int32),
                ("n_head", c_int32), ("n_head_kv", c_int32), ("head_dim", c_int32), ("n_rot", c_int32),
                ("n_vocab", c_int32), ("n_ctx_train", c_int32), ("n_ctx", c_int32),
                ("rope_base", c_float), ("rms_eps", c_float), ("rope_neox", c_bool),
                ("tied_output", c_bool), ("bos_id", c_int32), ("eos_id", c_int32), ("add_bos", c_bool),
                ("model_bytes", c_uint64), ("mode", c_int), ("io", c_int), ("isa", c_char_p),
                ("n_threads", c_int)]


class Sampling(_c.Structure):
    _fields_ = [("struct_size", c_size_t), ("temp", c_float), ("top_k", c_int32), ("top_p", c_float),
                ("min_p", c_float), ("repeat_penalty", c_float), ("repeat_last_n", c_int32),
                ("seed", c_uint64)]


class Stats(_c.Structure):
    _fields_ = [("n_prompt", c_int64), ("prompt_ms", c_double), ("n_decode", c_int64),
                ("decode_ms", c_double), ("ttft_ms", c_double), ("sample_ms", c_double),
                ("stall_ms", c_double), ("bytes_read", c_uint64), ("compute_ms", c_double)]


READ_HOOK = _c.CFUNCTYPE(c_int64, c_void_p, c_int, c_void_p, c_size_t, c_uint64)


class StreamConfig(_c.Structure):
    _fields_ = [("struct_size", c_size_t), ("io", c_int), ("mode", c_int), ("mem_budget", c_uint64),
                ("reserve_bytes", c_uint64), ("depth", c_int), ("req_bytes", c_uint32),
                ("queue_depth", c_int), ("n_io_threads", c_int), ("mlock", c_bool),
                ("no_direct", c_bool), ("max_pinned", c_int32), ("read_hook", READ_HOOK),
                ("read_hook_ctx", c_void_p)]


class StreamTensor(_c.Structure):
    _fields_ = [("name", c_char_p), ("type", c_uint32), ("n_dims", c_uint32), ("ne", c_uint64 * 4),
                ("data", c_void_p), ("nbytes", c_uint64)]


class StreamUnit(_c.Structure):
    _fields_ = [("kind", c_int), ("layer", c_int32), ("row_begin", c_uint64), ("row_end", c_uint64),
                ("bytes", c_uint64), ("pinned", c_bool)]


class StreamView(_c.Structure):
    _fields_ = [("unit", c_int32), ("n_tensors", c_uint32), ("tensors", _c.POINTER(StreamTensor))]


class StreamStats(_c.Structure):
    _fields_ = [("bytes_read", c_uint64), ("n_reads", c_uint64), ("n_retries", c_uint64),
                ("stall_ms", c_double), ("io_busy_ms", c_double), ("acquires", c_uint64)]


class StreamPlan(_c.Structure):
    _fields_ = [("mode", c_int), ("io", c_int), ("budget", c_uint64), ("model_bytes", c_uint64),
                ("globals_bytes", c_uint64), ("embd_bytes", c_uint64), ("head_bytes", c_uint64),
                ("reserve_bytes", c_uint64), ("slot_bytes", c_uint64), ("n_slots", c_int32),
                ("n_units", c_int32), ("n_layers", c_int32), ("n_head_chunks", c_int32),
                ("n_pinned", c_int32), ("embd_pinned", c_bool), ("head_pinned", c_bool),
                ("pinned_bytes", c_uint64), ("streamed_bytes_per_token", c_uint64),
                ("peak_bytes", c_uint64), ("meta_bytes", c_uint64), ("mem_available", c_uint64),
                ("margin_bytes", c_uint64), ("depth", c_int32), ("align", c_uint32), ("direct", c_bool),
                ("fits", c_bool)]


P = _c.POINTER
_protos = {
    "sl_version": (c_char_p, []),
    "sl_strerror": (c_char_p, [c_int]),
    "sl_last_error": (c_char_p, []),
    "sl_model_params_init_sized": (c_int, [P(ModelParams), c_size_t]),
    "sl_model_open": (c_int, [P(c_void_p), c_char_p, P(ModelParams)]),
    "sl_model_close": (None, [c_void_p]),
    "sl_model_errmsg": (c_char_p, [c_void_p]),
    "sl_model_get_info_sized": (c_int, [c_void_p, P(ModelInfo), c_size_t]),
    "sl_model_tokenize": (c_int, [c_void_p, c_char_p, c_size_t, c_bool, c_bool, P(c_int32), c_int]),
    "sl_model_token_is_eog": (c_bool, [c_void_p, c_int32]),
    "sl_model_token_piece": (c_int, [c_void_p, c_int32, c_char_p, c_size_t]),
    "sl_model_token_text": (c_int, [c_void_p, c_int32, c_char_p, c_size_t]),
    "sl_model_meta_str": (c_char_p, [c_void_p, c_char_p]),
    "sl_sampling_init_sized": (c_int, [P(Sampling), c_size_t]),
    "sl_session_create": (c_int, [P(c_void_p), c_void_p]),
    "sl_session_destroy": (None, [c_void_p]),
    "sl_session_errmsg": (c_char_p, [c_void_p]),
    "sl_session_set_sampling": (c_int, [c_void_p, P(Sampling)]),
    "sl_session_reset": (None, [c_void_p]),
    "sl_session_feed_tokens": (c_int, [c_void_p, P(c_int32), c_int]),
    "sl_session_feed_text": (c_int, [c_void_p, c_char_p, c_bool]),
    "sl_session_eval": (c_int, [c_void_p, P(c_int32), c_int, P(c_float)]),
    "sl_session_logits": (P(c_float), [c_void_p]),
    "sl_session_step": (c_int, [c_void_p, P(c_int32)]),
    "sl_session_sample": (c_int, [c_void_p, P(c_int32)]),
    "sl_session_accept": (c_int, [c_void_p, c_int32]),
    "sl_session_n_past": (c_int32, [c_void_p]),
    "sl_session_n_ctx": (c_int32, [c_void_p]),
    "sl_session_detok": (c_int, [c_void_p, c_int32, c_char_p, c_size_t]),
    "sl_session_logprobs": (c_int, [c_void_p, c_int32, c_int32, P(c_int32), P(c_float), P(c_float)]),
    "sl_model_chat_template": (c_char_p, [c_void_p]),
    "sl_model_chat_render": (c_int64, [c_void_p, c_char_p, P(c_char_p), P(c_char_p), c_size_t, c_bool,
                                       c_char_p, c_size_t]),
    "sl_model_chat_tokenize": (c_int, [c_void_p, c_char_p, P(c_char_p), P(c_char_p), c_size_t, c_bool, c_bool,
                                       P(c_int32), c_int]),
    "sl_session_get_stats_sized": (c_int, [c_void_p, P(Stats), c_size_t]),
    "sl_session_reset_stats": (None, [c_void_p]),
    "sl_session_save": (c_int, [c_void_p, c_char_p]),
    "sl_session_load": (c_int, [c_void_p, c_char_p]),
    "sl_session_load_prefix": (c_int, [c_void_p, c_char_p, P(c_int32), c_int, P(c_int32)]),
    "sl_session_pressure_level": (c_int, [c_void_p, c_int]),
    "sl_stream_mode_name": (c_char_p, [c_int]),
    "sl_stream_io_name": (c_char_p, [c_int]),
    "sl_stream_mode_parse": (c_int, [c_char_p, P(c_int)]),
    "sl_stream_io_parse": (c_int, [c_char_p, P(c_int)]),
    "sl_stream_config_init_sized": (c_int, [P(StreamConfig), c_size_t]),
    "sl_stream_open": (c_int, [P(c_void_p), c_char_p, P(StreamConfig)]),
    "sl_stream_close": (None, [c_void_p]),
    "sl_stream_errmsg": (c_char_p, [c_void_p]),
    "sl_stream_open_errmsg": (c_char_p, []),
    "sl_stream_notice": (c_char_p, [c_void_p]),
    "sl_stream_get_plan": (P(StreamPlan), [c_void_p]),
    "sl_stream_n_units": (c_int32, [c_void_p]),
    "sl_stream_unit_info_sized": (c_int, [c_void_p, c_int32, P(StreamUnit), c_size_t]),
    "sl_stream_acquire_sized": (c_int, [c_void_p, c_int32, P(StreamView), c_size_t]),
    "sl_stream_release": (c_int, [c_void_p, c_int32]),
    "sl_stream_prefetch": (c_int, [c_void_p, c_int32]),
    "sl_stream_global": (P(StreamTensor), [c_void_p, c_char_p]),
    "sl_stream_read_row": (c_int, [c_void_p, c_char_p, c_uint64, c_void_p, c_size_t]),
    "sl_stream_get_stats_sized": (c_int, [c_void_p, P(StreamStats), c_size_t]),
    "sl_stream_reset_stats": (None, [c_void_p]),
    "sl_stream_gguf": (c_void_p, [c_void_p]),
    "sl_gguf_find_key": (c_int64, [c_void_p, c_char_p]),
    "sl_gguf_kv_type": (c_uint32, [c_void_p, c_int64]),
    "sl_gguf_vtype_name": (c_char_p, [c_uint32]),
    "sl_gguf_kv_value": (c_void_p, [c_void_p, c_int64]),
    "sl_gguf_value_u64": (c_uint64, [c_void_p]),
    "sl_gguf_value_i64": (c_int64, [c_void_p]),
    "sl_gguf_value_f64": (c_double, [c_void_p]),
    "sl_gguf_value_str": (_c.POINTER(_c.c_char), [c_void_p, P(c_uint64)]),
}
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args


def text(b):
    """A C string from the library as str (bytes that are not UTF-8 replaced)."""
    return b.decode("utf-8", "replace") if b else ""


def check(rc, msg):
    """rc < 0: raise SluiceError with msg (a C string or a callable giving one)."""
    if rc < 0:
        m = msg() if callable(msg) else msg
        raise SluiceError(rc, text(m) or text(lib.sl_strerror(rc)))
    return rc
