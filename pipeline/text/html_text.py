"""HTML note text to plain text, keeping the line structure the sentence splitter relies on."""

from __future__ import annotations

from html.parser import HTMLParser

_BLOCK_TAGS = frozenset(
    """
    address article aside blockquote dd div dl dt fieldset figcaption figure footer form h1 h2
    h3 h4 h5 h6 header hr li main nav ol p pre section table tbody thead tfoot tr ul
    """.split()
)
_SKIPPED_TAGS = frozenset({"script", "style", "head", "template", "noscript"})


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self.skipping += 1
        elif tag == "br":
            self.parts.append("\n")
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n- " if tag == "li" else "\n")
        elif tag in {"td", "th"}:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
        elif tag in {"td", "th"}:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(" ".join(data.split()) if data.strip() else " ")


def html_to_text(html: str) -> str:
    """Visible text of ``html``: block elements on their own lines, scripts and styles dropped."""
    collector = _TextCollector()
    collector.feed(html)
    collector.close()
    lines = [" ".join(line.split()) for line in "".join(collector.parts).split("\n")]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip() + "\n"
