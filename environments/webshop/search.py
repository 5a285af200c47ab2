"""BM25 search over a catalogue with `bm25s` (WebShop used Lucene BM25 through pyserini).

Each product is indexed as WebShop indexed it: title, description, first feature line and the
option text ("color: red, blue, and size: small"), lower case. Lucene's English stop words are
removed and Lucene's BM25 weighting is used with pyserini's defaults (k1=0.9, b=0.4). Deliberate
differences: no Porter stemming, and ties are broken by catalogue order so results are
deterministic. The index is built once per catalogue per process.
"""

from __future__ import annotations

from functools import lru_cache

import bm25s
import numpy as np

from agentbench_af.environments.webshop.catalogue import Catalogue
from agentbench_af.environments.webshop.records import Product

SEARCH_RETURN_N = 50  # WebShop's number of results per search


def document_text(p: Product) -> str:
    option_texts = [f"{name}: {', '.join(values)}" for name, values in p.options.items()]
    first_bullet = p.bullet_points[0] if p.bullet_points else ""
    return " ".join([p.name, p.description, first_bullet, ", and ".join(option_texts)]).lower()


class SearchEngine:
    """Top-`k` asins for a query (only products sharing a term with it, best first)."""

    def __init__(self, catalogue: Catalogue, k1: float = 0.9, b: float = 0.4) -> None:
        self.asins = [p.asin for p in catalogue.products]
        corpus = [document_text(p) for p in catalogue.products]
        tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
        self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
        self._bm25.index(tokens, show_progress=False)
        self._cached = lru_cache(maxsize=4096)(self._search)

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> tuple[str, ...]:
        return self._cached(" ".join(query.lower().split()), k)

    def _search(self, query: str, k: int) -> tuple[str, ...]:
        words = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        if not words:
            return ()
        scores = np.asarray(self._bm25.get_scores(words))  # (N,)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            kth = np.partition(scores[hits], -k)[-k]
            hits = hits[scores[hits] >= kth]
        order = np.lexsort((hits, -scores[hits]))[:k]  # best score first, then catalogue order
        return tuple(self.asins[i] for i in hits[order])


@lru_cache(maxsize=8)
def engine_for(catalogue: Catalogue) -> SearchEngine:
    """The search engine of `catalogue`, built once per process."""
    return SearchEngine(catalogue)
