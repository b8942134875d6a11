"""Where a fact comes from: a source reference (resource, element path, and for text the document,
page, character span and quote, checked where it is made), the documents and their pages, and
the identity check of a document against the patient."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.evidence.base import StrictModel


class SourceRef(StrictModel):
    """Where a statement comes from: a resource element, and for text the exact span and quote."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    resource: str
    version: str | None = None
    path: str
    document: str | None = None
    page: int | None = None
    start: int | None = None
    end: int | None = None
    quote: str | None = None

    @model_validator(mode="after")
    def _text_span_is_whole(self) -> SourceRef:
        span = (self.document, self.page, self.start, self.end, self.quote)
        if any(part is not None for part in span) and any(part is None for part in span):
            raise ValueError("a text SourceRef needs document, page, start, end and quote together")
        if self.start is not None and self.end is not None and not 0 <= self.start < self.end:
            raise ValueError("a text span needs 0 <= start < end")
        return self

    @property
    def is_text(self) -> bool:
        return self.quote is not None


class WordBox(StrictModel):
    """Where OCR found one word: its characters in the page's text and its rectangle on the
    page image, in fractions of the image's width and height, so the review page can mark a
    quoted span on the scan at any size."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    left: float
    top: float
    width: float
    height: float


class Page(StrictModel):
    number: int = Field(ge=1)
    text: str
    has_text: bool
    ocr_applied: bool = False
    ocr_confidence: float | None = None
    error: str | None = None
    words: list[WordBox] = Field(default_factory=list)


IdentityVerdict = Literal["match", "mismatch", "unverified"]
IdentifierKind = Literal["name", "birth_date", "identifier", "sex"]


class FoundIdentifier(BaseModel):
    """An identifier a document states, where, and whether it agrees with the chart."""

    kind: IdentifierKind
    text: str
    # Dates of birth: each reading of the date (dd/mm and mm/dd where both are dates), ISO.
    values: list[str]
    page: int
    start: int
    end: int
    agrees: bool | None = None


class IdentityCheck(BaseModel):
    verdict: IdentityVerdict
    reason: str
    found: list[FoundIdentifier] = Field(default_factory=list)


class SourceDocument(StrictModel):
    """One note or report; the same note presented by several resources is one document."""

    id: str
    sources: list[SourceRef]
    title: str | None = None
    date: datetime | None = None
    encounter: str | None = None
    content_type: str
    pages: list[Page] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    # Whose document this is (``pipeline.ingestion.identity``); a mismatch is never evidence.
    identity: IdentityCheck | None = None

    @property
    def other_patient(self) -> bool:
        return self.identity is not None and self.identity.verdict == "mismatch"

    def page(self, number: int) -> Page:
        for page in self.pages:
            if page.number == number:
                return page
        raise KeyError(f"{self.id} has no page {number}")
