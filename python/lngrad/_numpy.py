"""The NumPy backend of lngrad._core: float64, float32 and float16 arrays."""

import numpy as np

from . import _core

_NAMES = {np.dtype(np.float64): "float64", np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}
_SUPPORTED = "float64, float32 or float16"


class NumpyBackend:
    @staticmethod
    def dtype_name(function, name, dtype):
        """The library's name for a NumPy dtype (either byte order), or TypeError."""
        found = _NAMES.get(np.dtype(dtype).newbyteorder("="))
        if found is None:
            raise TypeError(f"{function}: {name}: expected dtype {_SUPPORTED}, given {np.dtype(dtype)}")
        return found

    def input(self, function, name, obj):
        """An array the library can read in place: array-likes are converted,
        and a non-C-contiguous, unaligned or byte-swapped array is copied."""
        if isinstance(obj, np.ma.MaskedArray):  # converting would silently drop the mask
            raise TypeError(f"{function}: {name}: expected an unmasked array, given a numpy.ma.MaskedArray")
        a = obj if isinstance(obj, np.ndarray) else np.asarray(obj)
        self.dtype_name(function, name, a.dtype)
        return np.require(a, a.dtype.newbyteorder("="), ("C_CONTIGUOUS", "ALIGNED"))

    def output(self, function, name, obj):
        """An out= array is written in place, so it is never copied: refuse what cannot be."""
        if not isinstance(obj, np.ndarray) or isinstance(obj, np.ma.MaskedArray):
            raise TypeError(f"{function}: {name}: expected a numpy.ndarray, given {type(obj).__name__}")
        self.dtype_name(function, name, obj.dtype)
        flaws = [flaw for ok, flaw in ((obj.flags.c_contiguous, "not C-contiguous"),
                                       (obj.flags.aligned, "unaligned"),
                                       (obj.flags.writeable, "read-only"),
                                       (obj.dtype.isnative, "byte-swapped")) if not ok]
        if flaws:
            _core.fail(function, name, "a C-contiguous, aligned, writable array in native byte order",
                       "one that is " + ", ".join(flaws))
        return obj

    @staticmethod
    def written(a):
        """NumPy arrays carry no version to bump."""

    @staticmethod
    def empty(shape, dtype):
        # Start on a 64-byte cache line (np.empty gives 16 bytes): the
        # library's rows that start on one run fastest.
        dt = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        raw = np.empty(nbytes + 64, np.uint8)
        start = -raw.ctypes.data % 64
        return raw[start:start + nbytes].view(dt).reshape(shape)

    @staticmethod
    def view(a):
        return (a.ctypes.data, _NAMES[a.dtype], a.shape)

    @staticmethod
    def dtype(a):
        return _NAMES[a.dtype.newbyteorder("=")]

    @staticmethod
    def shape(a):
        return a.shape


BACKEND = NumpyBackend()
