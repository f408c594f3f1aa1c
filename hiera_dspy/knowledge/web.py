"""Web search through Tavily (`TAVILY_API_KEY` from the environment; never stored)."""

from __future__ import annotations

import os

from hiera_dspy.errors import HieraError
from hiera_dspy.knowledge import Passage
from hiera_dspy.secrets import remember_key


class WebKnowledge:
    """Web search through Tavily (needs TAVILY_API_KEY), as in the paper's setup."""
    name = "web:tavily"
    default_k = 5  # the paper's setting (App. A.1): web search returns 5 results per query

    def __deepcopy__(self, memo):  # shared by every copy an optimizer makes of a program
        return self

    def __init__(self, client=None):
        if client is None:
            key = os.environ.get("TAVILY_API_KEY")
            if not key:
                raise HieraError("--knowledge web needs TAVILY_API_KEY in the environment (or use catalog/none)")
            from tavily import TavilyClient

            remember_key(key)  # redacted from every error we store or print, like an LM's key
            client = TavilyClient(api_key=key)
        self._client = client

    def search(self, text: str, k: int | None = None) -> list[Passage]:
        """The top `k` web results as passages (title, content, URL)."""
        k = self.default_k if k is None else k
        response = self._client.search(query=text, max_results=k)
        return [Passage(title=r.get("title", ""), text=r.get("content", ""), source=self.name, url=r.get("url", ""))
                for r in response.get("results", [])[:k]]
