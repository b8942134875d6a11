"""Rendering the pages the source pane shows, within a process's means.

Rendering a PDF page or decoding a scan is the most memory one request can ask for, so each
process renders at most a few at once (the rest wait their turn) and keeps what it rendered, a
bounded number of pages, for the next request of the same page.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from pipeline.ingestion.attachments import page_image

# Renders at once per process: each is bounded by DISPLAY_MAX_PIXELS (about 16 MB of pixels).
CONCURRENT_RENDERS = 2
CACHED_PAGES = 64

PageKey = tuple[str, str, int]


class PageImages:
    """Page PNGs by (draft, document, page): rendered once, a few at a time."""

    def __init__(self, concurrent: int = CONCURRENT_RENDERS, cached: int = CACHED_PAGES) -> None:
        self._renders = asyncio.Semaphore(concurrent)
        self._cached: OrderedDict[PageKey, bytes | None] = OrderedDict()
        self._size = cached

    async def get(
        self, key: PageKey, data: bytes, content_type: str | None, number: int
    ) -> bytes | None:
        """The page's PNG (None: no such page, or one that cannot be shown)."""
        if key in self._cached:
            self._cached.move_to_end(key)
            return self._cached[key]
        async with self._renders:
            if key not in self._cached:
                image = await asyncio.to_thread(page_image, data, content_type, number)
                self._cached[key] = image
                while len(self._cached) > self._size:
                    self._cached.popitem(last=False)
            self._cached.move_to_end(key)
        return self._cached[key]

    def cached(self, key: PageKey) -> bool:
        return key in self._cached
