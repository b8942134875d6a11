"""The one Jinja environment over the ``templates`` package: prompts, pages and narratives.

Autoescaping is on for HTML and XML templates, so note text (untrusted) can never add markup.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2


def as_data(value: object) -> str:
    """Untrusted text for a prompt's <data> block: it cannot close the block or open a tag."""
    return str(value).replace("<", "‹").replace(">", "›")


# Characters that make markup in CommonMark: HTML, and the brackets of links and images, so
# that no note can put a remote image (a tracking pixel) or a ``javascript:`` link into a
# markdown draft wherever it is shown.
MARKDOWN_ESCAPED = "<>&[]"


def as_markdown_text(value: object) -> str:
    """Untrusted text for markdown: markup characters backslash-escaped, so that no markdown
    renderer turns note text into HTML, a link or an image (CommonMark shows them as written)."""
    text = str(value).replace("\\", "\\\\")
    for character in MARKDOWN_ESCAPED:
        text = text.replace(character, f"\\{character}")
    return text


# SNOMED CT's semantic tags ("Sepsis (disorder)"): a terminology's filing label, not words a
# clinician writes. Only a known tag at the end of a term is taken off.
SEMANTIC_TAG = re.compile(
    r"\s+\((?:disorder|finding|situation|procedure|regime/therapy|person|record artifact|"
    r"qualifier value|observable entity|substance|event|morphologic abnormality|body structure|"
    r"environment|physical object|social concept|assessment scale|product|medicinal product|"
    r"occupation|ethnic group|life style|navigational concept)\)$"
)


def plain_term(value: object) -> str:
    """A coded term as a clinician writes it: "Sepsis (disorder)" → "Sepsis"."""
    return SEMANTIC_TAG.sub("", str(value))


def analyte_name(name: str) -> str:
    """A LOINC long name cut to its component, the part before the bracketed property:
    "Leukocytes [#/volume] in Blood by Automated count" → "Leukocytes". Where no value is
    shown the property, system and method say nothing a reader needs."""
    return name.split(" [", 1)[0].strip() or name


def to_the_minute(value: object) -> str:
    """A moment as people read a signature's time: ``2026-12-02 14:05 UTC``."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "" if value is None else str(value)


@lru_cache(maxsize=1)
def template_environment() -> jinja2.Environment:
    root = resources.files("templates")
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        autoescape=jinja2.select_autoescape(
            ["html", "xml", "xhtml", "html.j2", "xml.j2", "xhtml.j2"], default_for_string=True
        ),
        undefined=jinja2.StrictUndefined,
        extensions=["jinja2.ext.do"],
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["data"] = as_data
    environment.filters["md"] = as_markdown_text
    environment.filters["minute"] = to_the_minute
    environment.filters["term"] = plain_term
    return environment


def render(template: str, **context: object) -> str:
    return template_environment().get_template(template).render(**context)


def macros(template: str) -> Any:
    """A template's macros, callable from Python (``macros("x.j2").name(...)``)."""
    return template_environment().get_template(template).module
