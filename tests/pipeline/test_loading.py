"""A model is loaded once per process, however many job threads ask for it at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from pipeline.backends.loading import loaded_once


def test_threads_asking_together_share_one_load() -> None:
    calls: list[int] = []
    start = threading.Barrier(4)

    def load() -> object:
        calls.append(1)
        time.sleep(0.05)  # long enough for every other thread to ask meanwhile
        return object()

    get = loaded_once(load)

    def ask(_: int) -> object:
        start.wait()
        return get()

    with ThreadPoolExecutor(max_workers=4) as pool:
        models = list(pool.map(ask, range(4)))
    assert len(calls) == 1
    assert all(model is models[0] for model in models)
