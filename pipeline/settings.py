"""The pipeline's knobs: a plain model handed down by whoever runs the pipeline.

The pipeline reads no environment. The one settings object that does is
``smartapp.core.settings.Settings`` (``PROVENOTE_*``), read once at start-up; it carries these
fields too, so the app, the worker and the CLI pass that object down as they are.
"""

from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pipeline.evidence.mapped import EPISODE_WINDOW_H

# AgenticSum's threshold, for a model nobody has calibrated.
DEFAULT_AURA_TAU = 0.35
# An "active" order written longer ago than this before admission is confirmed, not continued.
RENEWAL_WINDOW = timedelta(days=365)


class SchemaLimits(BaseModel):
    """Upper bounds in the model's answer schemas (characters, items)."""

    model_config = ConfigDict(frozen=True)

    # A long, complicated stay runs to a few dozen sentences; 120 is a runaway.
    course_sentences: int = Field(120, ge=1)
    # A clinical sentence rarely passes 300 characters; 1,000 allows a long list of drugs.
    sentence_chars: int = Field(1000, ge=8)
    citations_per_sentence: int = Field(12, ge=1)
    # A fixed sentence may become a few (a split list), or none (deleted).
    sentences_per_fix: int = Field(6, ge=1)
    entailment_spans: int = Field(12, ge=1)
    span_chars: int = Field(300, ge=4)
    # Per page chunk of at most ~4,000 characters (``note_chunks.CHUNK_CHARS``).
    extraction_items: int = Field(150, ge=1)
    item_chars: int = Field(300, ge=4)
    quote_chars: int = Field(1500, ge=8)


class PipelineSettings(BaseModel):
    max_attachment_bytes: int = Field(20 * 1024 * 1024, gt=0)
    max_pdf_pages: int = Field(200, gt=0)
    # A page with fewer letters and digits than this has no usable text layer and is OCR'd.
    min_text_chars: int = Field(20, ge=0)
    tesseract_cmd: str = "tesseract"
    ocr_language: str = "eng"
    ocr_dpi: int = Field(300, ge=72, le=600)
    ocr_timeout_s: float = Field(120.0, gt=0)
    # A page image is never rendered larger than this; a huge page is rendered at a lower DPI.
    ocr_max_pixels_per_page: int = Field(25_000_000, gt=0)
    # OCR work per document and per job (one evidence build); what is skipped is reported.
    ocr_max_pages_per_document: int = Field(50, ge=0)
    ocr_max_seconds_per_document: float = Field(300.0, gt=0)
    ocr_max_pages_per_job: int = Field(200, ge=0)
    ocr_max_seconds_per_job: float = Field(900.0, gt=0)
    max_agent_steps: int = Field(12, ge=3)
    # An encounter with a procedure or a reason, or an emergency visit, ending this long before
    # admission joins the episode.
    episode_window_h: float = Field(EPISODE_WINDOW_H, ge=0)
    # An order still "active" but last written longer ago than this before admission, and named
    # in no note of the stay, is listed to confirm rather than as continued (pipeline/reconcile).
    medication_renewal_window_days: int = Field(RENEWAL_WINDOW.days, ge=1)
    # A folder whose JSON files replace the shipped clinical tables of the same name
    # (pipeline/clinical/tables/: social findings, acute events, drug classes, reference ranges).
    tables_dir: Path | None = None
    # Share of a note's hospital-course sentences FOCUS keeps in the evidence-only summary.
    focus_ratio: float = Field(0.5, gt=0, le=1)
    # The agentic loop: AURA below tau flags a sentence; a mean AURA change below epsilon stops;
    # at most max_iterations passes. AURA is read from the drafting model's attention, so tau
    # belongs to the model: None takes the model's calibrated tau where it has one
    # (bench/aura_calibration.py), else DEFAULT_AURA_TAU.
    aura_tau: float | None = Field(None, ge=0, le=1)
    aura_epsilon: float = Field(0.01, ge=0)
    max_iterations: int = Field(3, ge=1, le=10)
    # The trained claim verifier judges every model sentence; with this, the drafting model also
    # judges each one (span-level, AgenticSum's annotation). None: a model served
    # OpenAI-compatibly does (a large model's judgement adds spans), a local one does not
    # (SmolLM2 called every sentence it was shown supported).
    model_entailment: bool | None = None
    # Model calls for independent sentences (entailment, fixes) in flight at once.
    model_concurrency: int = Field(4, ge=1, le=64)
    # The model's extraction stops after this many seconds, keeps what it has, and the draft
    # names the notes it did not read (None: no limit).
    extraction_budget_s: float | None = Field(600.0, gt=0)
    # Bounds in the model's answer schemas. The defaults are for real models; tests of tiny random
    # models set small ones (a random model writes until a bound stops it).
    answer_limits: SchemaLimits = Field(default_factory=SchemaLimits)
