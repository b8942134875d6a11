"""Loading a model once per process, whichever thread asks first.

Jobs run the pipeline in worker threads, several at a time. ``functools.lru_cache`` alone lets two
threads that ask together both load, and transformers' lazily imported module is not safe to
import from two threads at once (one of them sees ``cannot import name 'AutoModel'``): the first
caller loads while the others wait for its result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

T = TypeVar("T")


def loaded_once(load: Callable[[], T]) -> Callable[[], T]:
    cached = lru_cache(maxsize=1)(load)
    lock = threading.Lock()

    @wraps(load)
    def get() -> T:
        with lock:
            return cached()

    return get
