"""Sluice from Python: ctypes over libsluice.so (no compiled extension).

    import sluice
    with sluice.Model("stories260K.gguf", n_ctx=256) as m, m.session("Once upon a time", temp=0) as s:
        print(b"".join(piece for _, piece in s.generate(32)).decode())

The library is found through $SLUICE_LIB, then the source tree's build/libsluice.so, then the
system (ctypes.util.find_library("sluice")). Failures raise SluiceError(status, message)."""
from ._lib import SluiceError, lib as _cdll
from .engine import Model, Session, MODES, IOS, rss_bytes
from .stream import Stream, Unit, Tensor

__all__ = ["Model", "Session", "Stream", "Unit", "Tensor", "SluiceError", "MODES", "IOS", "version",
           "rss_bytes"]


def version():
    """The library's version at run time ("0.5.0")."""
    return _cdll.sl_version().decode()
