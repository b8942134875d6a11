"""Reading what the chart holds: documents and their attachments (text, HTML, PDF, OCR of
scanned pages) under one budget, and whether a document is about this patient.

``__all__`` names the modules other rooms and packages may import; the rest are this room's own.
"""

__all__ = [
    "attachments",
    "documents",
    "identity",
    "ocr",
    "pdf",
]
