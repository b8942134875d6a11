"""Reading what the chart holds: documents and their attachments (text, HTML, PDF, OCR of
scanned pages) under one budget, and whether a document is about this patient.
"""

__all__ = ["attachments", "documents", "identity", "ocr", "pdf"]
