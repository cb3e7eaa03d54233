"""Sluice from Python: ctypes over libsluice.so (no compiled extension).

    import sluice
    with sluice.Model("stories260K.gguf", n_ctx=256) as llm:
        print(llm("Once upon a time", max_tokens=32, temperature=0)["choices"][0]["text"])

Model has llama-cpp-python's verbs (``__call__`` / create_completion, create_chat_completion,
tokenize, detokenize; sluice/completion.py) beside the low-level Session (feed, sample,
accept, detok) and the weight streamer's Stream. Installed with ``pip install
engine/bindings/python``. The library is found through $SLUICE_LIB, then the copy bundled in
the wheel, the source tree's build/, the `make install` prefix (pkg-config), and the dynamic
loader's search. Failures raise SluiceError(status, message)."""
from ._lib import SluiceError, lib as _cdll
from .engine import Model, Session, MODES, IOS, rss_bytes
from .stream import Stream, Unit, Tensor

__all__ = ["Model", "Session", "Stream", "Unit", "Tensor", "SluiceError", "MODES", "IOS", "version",
           "rss_bytes"]


def version() -> str:
    """The library's version at run time ("0.5.0")."""
    return _cdll.sl_version().decode()
