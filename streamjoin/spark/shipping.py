"""User code on Spark's Python workers: pickled once on the driver, by a pickler of our own.

Code that is not part of an installed distribution (the user's app module, its value types) is
pickled by value, so the workers need not be able to import it; installed packages are imported
there as usual.

A class pickled by value carries its `__dict__`, and msgspec keeps what it learned about a
dataclass there (`__msgspec_cache__`, set once a serde has been built for the class): a C object
that cannot be pickled, and only a cache, which the worker builds again on first use. Spark's
own pickler would copy it and fail, so the user's code is pickled here, leaving that attribute
out of every class copied by value, and Spark ships only the bytes. Pickling here also turns a
joiner that cannot be pickled (one that holds a lock, a socket, a client) into one clear error
before any Spark job starts.
"""

from __future__ import annotations

import importlib.metadata
import io
import logging
import pickle
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
from pyspark import cloudpickle

from streamjoin.errors import ConfigurationError

__all__ = ("BatchFunction", "ShippedBatchFunction", "ship")

logger = logging.getLogger(__name__)

BatchFunction = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
"""What `mapInArrow` runs on the workers."""

_OWN = __name__.partition(".")[0]

_CACHES = ("__msgspec_cache__",)
"""Class attributes that are caches of a library, rebuilt where they are missing."""


@contextmanager
def _caches_set_aside(cls: type) -> Iterator[None]:
    """`cls` without its cache attributes for the moment it is copied, then as it was."""
    aside = {name: vars(cls)[name] for name in _CACHES if name in vars(cls)}
    for name in aside:
        delattr(cls, name)
    try:
        yield
    finally:
        for name, value in aside.items():
            setattr(cls, name, value)


class _Pickler(cloudpickle.CloudPickler):
    """cloudpickle, copying classes by value without the caches of `_CACHES`."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, type) and any(name in vars(obj) for name in _CACHES):
            with _caches_set_aside(obj):
                return super().reducer_override(obj)  # type: ignore[no-untyped-call]
        return super().reducer_override(obj)  # type: ignore[no-untyped-call]


def _installed_top_levels() -> set[str]:
    return set(importlib.metadata.packages_distributions())


def _pickle_by_value(objects: Iterable[Any]) -> None:
    """Register the modules of `objects` that the workers may not import (the user's) to be
    pickled by value; classes and functions of `__main__` are by value anyway."""
    installed = _installed_top_levels()
    for obj in objects:
        module_name = getattr(obj, "__module__", None)
        module = sys.modules.get(module_name or "")
        if module is None or module_name == "__main__":
            continue
        top = module.__name__.partition(".")[0]
        if top in installed or top in sys.stdlib_module_names or top in ("builtins", _OWN):
            continue
        logger.debug("shipping module %s to Spark workers by value", module.__name__)
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)  # type: ignore[no-untyped-call]
    pickler.dump(obj)  # type: ignore[no-untyped-call]
    return buffer.getvalue()


class ShippedBatchFunction:
    """A batch function as the bytes `ship` pickled; what Spark pickles and sends is these
    bytes, loaded again in each Python worker task."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        function: BatchFunction = pickle.loads(self.payload)
        return function(batches)


def ship(function: BatchFunction, what: str, uses: Iterable[Any]) -> ShippedBatchFunction:
    """`function` pickled for `mapInArrow`, with the user's modules among those of `uses` (the
    joiner, the value types) copied by value. Raises ConfigurationError naming `what` when it
    cannot be pickled."""
    _pickle_by_value(uses)
    try:
        payload = _dumps(function)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
        raise ConfigurationError(
            f"{what} cannot be sent to Spark's Python workers: {exc} (what runs there must "
            "be picklable: create clients and locks inside the joiner, not around it)"
        ) from None
    return ShippedBatchFunction(payload)
