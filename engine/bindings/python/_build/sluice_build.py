"""PEP 517 build backend of the Python package: writes the wheel with zipfile, so a
fresh virtual environment installs it with no index (none of setuptools or wheel is
needed). The version is the library's (gguf/base/sl_api.h), the one source of it.
A wheel with libsluice bundled is tagged for this platform, one without is py3-none-any."""
import base64
import hashlib
import io
import os
import re
import sysconfig
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # engine/bindings/python
TREE = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
NAME = "sluice"


def _version():
    hdr = os.path.join(TREE, "gguf", "base", "sl_api.h")
    if os.path.exists(hdr):
        with open(hdr) as f:
            src = f.read()
        parts = [re.search(r"#define SLUICE_VERSION_%s\s+(\d+)" % k, src).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
        return ".".join(parts)
    with open(os.path.join(HERE, "PKG-INFO")) as f:   # an unpacked sdist
        return re.search(r"^Version: (\S+)", f.read(), re.M).group(1)


def _bundled_lib():
    """The libsluice.so.N to put in the wheel, or None."""
    want = os.environ.get("SLUICE_BUNDLE_LIB")
    if want is not None:
        return os.path.realpath(want) if want else None
    lib = os.path.join(TREE, "build", "libsluice.so.%s" % _version().split(".")[0])
    return os.path.realpath(lib) if os.path.exists(lib) else None


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: Sluice from Python: llama-cpp-python's "
            "verbs and the weight streamer over libsluice (ctypes)\nRequires-Python: >=3.8\n" % (NAME, _version()))


def _sources():
    """(path in the archive, path on disk) of the package's files."""
    pkg = os.path.join(HERE, NAME)
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py") or f == "py.typed":
            yield "%s/%s" % (NAME, f), os.path.join(pkg, f)


def _tag(bundled):
    if not bundled:
        return "py3-none-any"
    return "py3-none-" + re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _entry(arc):
    """A reproducible archive entry, rw-r--r--."""
    zi = zipfile.ZipInfo(arc, (1980, 1, 1, 0, 0, 0))
    zi.external_attr = 0o644 << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    return zi


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = "%s-%s.dist-info" % (NAME, _version())
    os.makedirs(os.path.join(metadata_directory, d), exist_ok=True)
    with open(os.path.join(metadata_directory, d, "METADATA"), "w") as f:
        f.write(_metadata())
    return d


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    ver, lib = _version(), _bundled_lib()
    tag = _tag(lib)
    name = "%s-%s-%s.whl" % (NAME, ver, tag)
    dist = "%s-%s.dist-info" % (NAME, ver)
    files = [(arc, open(p, "rb").read()) for arc, p in _sources()]
    if lib:
        files.append(("%s/libsluice.so.%s" % (NAME, ver.split(".")[0]), open(lib, "rb").read()))
    files.append((dist + "/METADATA", _metadata().encode()))
    files.append((dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: sluice_build\nRoot-Is-Purelib: %s\nTag: %s\n"
                                    % ("false" if lib else "true", tag)).encode()))
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(_entry(arc), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
        record.append(dist + "/RECORD,,")
        z.writestr(_entry(dist + "/RECORD"), "\n".join(record) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for arc, p in list(_sources()) + [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
                                          ("_build/sluice_build.py", os.path.abspath(__file__))]:
            t.add(p, "%s/%s" % (base, arc))
        info = _metadata().encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(info)
        t.addfile(ti, io.BytesIO(info))
    return name
