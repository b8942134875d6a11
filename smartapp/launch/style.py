"""The EHR's SMART style (``smart_style_url``), made safe to put into our pages.

The style is JSON from the EHR (SMART App Launch: color_*, dim_*, font_family_*). Each value
becomes a CSS custom property only if it has the shape its kind allows, so a hostile or broken
style can change a colour but never inject CSS or markup. Fetch failures leave our own style.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

import httpx

# One font family: bare words, or words in matching quotes (no escapes, no CSS punctuation).
_FAMILY = r"""(?:[A-Za-z0-9 \-]+|"[A-Za-z0-9 \-]+"|'[A-Za-z0-9 \-]+')"""
SHAPES = {
    "color": re.compile(r"#[0-9A-Fa-f]{3,8}|rgba?\(\s*[\d.]+%?(\s*,\s*[\d.]+%?){2,3}\s*\)"),
    "dim": re.compile(r"\d{1,3}(\.\d{1,3})?(px|em|rem|%)"),
    "font_family": re.compile(rf"(?=.{{1,120}}$){_FAMILY}(?:\s*,\s*{_FAMILY})*"),
}
STYLE_KEYS = (
    "color_background",
    "color_error",
    "color_highlight",
    "color_modal_backdrop",
    "color_success",
    "color_text",
    "dim_border_radius",
    "dim_font_size",
    "dim_spacing_size",
    "font_family_body",
    "font_family_heading",
)


def safe_style(style: object) -> dict[str, str]:
    """The style's known properties whose values have a safe shape, as CSS variable names."""
    if not isinstance(style, dict):
        return {}
    safe = {}
    for key in STYLE_KEYS:
        value = style.get(key)
        kind = "font_family" if key.startswith("font_family") else key.split("_", 1)[0]
        # EHRs copy values out of their stylesheets, trailing ``;`` included.
        cleaned = value.strip().rstrip(";").rstrip() if isinstance(value, str) else ""
        if cleaned and SHAPES[kind].fullmatch(cleaned):
            safe[f"--smart-{key.replace('_', '-')}"] = cleaned
    return safe


async def fetch_style(http: httpx.AsyncClient, url: str | None) -> dict[str, str]:
    if not url or urlparse(url).scheme not in {"http", "https"}:
        return {}
    try:
        response = await http.get(url, timeout=3.0)
        response.raise_for_status()
        return safe_style(response.json())
    except (httpx.HTTPError, ValueError):
        return {}


@dataclass(slots=True)
class StyleCache:
    """Each style URL fetched once per process: EHRs serve one style for all launches."""

    http: httpx.AsyncClient
    _styles: dict[str, dict[str, str]] = field(default_factory=dict)

    async def get(self, url: str | None) -> dict[str, str]:
        if not url:
            return {}
        if url not in self._styles:
            self._styles[url] = await fetch_style(self.http, url)
        return self._styles[url]
