"""The Information Layer: catalog BM25, the on-disk look-up cache, source selection, web search with a fake client."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from hiera_dspy.data import CatalogEntry
from hiera_dspy.knowledge import NoKnowledge, Passage, make_knowledge, render
from hiera_dspy.knowledge.cache import CachedKnowledge
from hiera_dspy.knowledge.catalog import CatalogKnowledge
from hiera_dspy.knowledge.web import WebKnowledge

ENTRIES = [
    CatalogEntry("1", "Mission: Impossible", "Genres: action, spy\nActors: Tom Cruise\nAn IMF agent is framed."),
    CatalogEntry("2", "Toy Story", "Genres: animation\nA cowboy doll and a space ranger toy become friends."),
    CatalogEntry("3", "Alien", "Genres: horror, sci-fi\nA creature stalks the crew of a spaceship."),
    CatalogEntry("4", "Top Gun", "Genres: action\nActors: Tom Cruise\nA naval aviator at a fighter school."),
    CatalogEntry("5", "Finding Nemo", "Genres: animation\nA clownfish searches the ocean for his son."),
]


def catalog():
    return CatalogKnowledge(ENTRIES, name="catalog:tiny")


@pytest.mark.parametrize("query,title", [("tom cruise spy agent", "Mission: Impossible"),
                                         ("cowboy toy", "Toy Story"), ("spaceship creature horror", "Alien"),
                                         ("fighter aviator", "Top Gun"), ("clownfish ocean", "Finding Nemo")])
def test_catalog_bm25_ranks_the_right_title_first(query, title):
    results = catalog().search(query, k=3)
    assert results and results[0].title == title


def test_catalog_passages():
    kb = catalog()
    results = kb.search("tom cruise", k=5)
    assert {p.title for p in results} == {"Mission: Impossible", "Top Gun"}  # only entries that match at all
    top = results[0]
    assert top.source == "catalog:tiny" and top.url.startswith("catalog:tiny#") and "Tom Cruise" in top.text
    assert len(kb.search("animation", k=1)) == 1
    assert len(kb.search("genres", k=50)) == len(ENTRIES)  # k is capped by the catalog size
    assert kb.search("", k=3) == [] and kb.search("   ", k=3) == []
    assert kb.search("the and of", k=3) == []  # stopwords only
    assert kb.search("zzzqqq", k=3) == []


def test_catalog_is_indexed_lazily_and_shared_by_copies():
    kb = catalog()
    assert kb._retriever is None
    kb.search("alien", 1)
    assert kb._retriever is not None
    assert copy.deepcopy(kb) is kb


class CountingSource:
    name = "counting"

    def __init__(self):
        self.calls: list[tuple[str, int]] = []

    def search(self, text, k=5):
        self.calls.append((text, k))
        return [Passage(title=f"T{i}", text=f"{text} #{i}", source=self.name, url=f"u{i}") for i in range(k)]


def test_cached_knowledge_hits_after_first_search(tmp_path):
    source = CountingSource()
    cached = CachedKnowledge(source, str(tmp_path))
    first = cached.search("tom cruise", 2)
    second = cached.search("tom cruise", 2)
    assert first == second and len(first) == 2 and isinstance(second[0], Passage)
    assert source.calls == [("tom cruise", 2)]
    assert (cached.hits, cached.misses) == (1, 1)
    cached.search("  tom cruise ", 2)  # the key is the stripped text
    assert len(source.calls) == 1
    cached.search("tom cruise", 3)  # k is part of the key
    assert source.calls[-1] == ("tom cruise", 3)
    assert cached.name == "counting" and copy.deepcopy(cached) is cached


def test_cached_knowledge_survives_a_new_instance(tmp_path):
    CachedKnowledge(CountingSource(), str(tmp_path)).search("alien", 2)
    source = CountingSource()
    again = CachedKnowledge(source, str(tmp_path))
    assert [p.title for p in again.search("alien", 2)] == ["T0", "T1"]
    assert source.calls == [] and again.hits == 1
    assert (tmp_path / "knowledge.sqlite").exists()


def test_cached_knowledge_default_dir_and_per_source_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERA_CACHE_DIR", str(tmp_path / "c"))
    a = CachedKnowledge(CountingSource())
    a.search("x", 1)
    assert (tmp_path / "c" / "knowledge.sqlite").exists()
    other = CountingSource()
    other.name = "other-source"
    CachedKnowledge(other).search("x", 1)
    assert other.calls == [("x", 1)]  # another source never gets this source's passages


def test_cached_empty_result_is_a_hit(tmp_path):
    source = CountingSource()
    cached = CachedKnowledge(source, str(tmp_path))
    assert cached.search("nothing", 0) == [] and cached.search("nothing", 0) == []
    assert len(source.calls) == 1


# --- choosing the source --------------------------------------------------------------------------------------------

def dataset(with_catalog=True):
    return SimpleNamespace(name="tiny", catalog=list(ENTRIES) if with_catalog else None)


class FakeTavily:
    instances: list["FakeTavily"] = []

    def __init__(self, api_key=None, **kwargs):
        self.api_key = api_key
        self.calls: list[dict] = []
        FakeTavily.instances.append(self)

    def search(self, query, max_results=5, **kwargs):
        self.calls.append({"query": query, "max_results": max_results, **kwargs})
        results = [{"title": f"Web {i}", "content": f"about {query}", "url": f"https://example.test/{i}"}
                   for i in range(max_results + 2)]  # a client may return more than asked
        return {"results": results}


@pytest.fixture
def fake_tavily(monkeypatch):
    import tavily

    FakeTavily.instances = []
    monkeypatch.setattr(tavily, "TavilyClient", FakeTavily)
    return FakeTavily


def test_auto_without_key_uses_the_catalog(tmp_path, capsys):
    kb = make_knowledge("auto", dataset(), cache_dir=str(tmp_path))
    assert capsys.readouterr().err == ("hiera-dspy: --knowledge auto: catalog (TAVILY_API_KEY is not set, so the tiny "
                                       "catalog (BM25) instead of web search; set it, or pass "
                                       "--knowledge web|catalog|none)\n")
    assert isinstance(kb, CachedKnowledge) and isinstance(kb.source, CatalogKnowledge)
    assert kb.name == "catalog:tiny"
    assert kb.search("clownfish", 1)[0].title == "Finding Nemo"


def test_auto_without_key_or_catalog_is_none(capsys):
    assert isinstance(make_knowledge("auto", dataset(with_catalog=False)), NoKnowledge)
    assert "auto: none (TAVILY_API_KEY is not set and tiny has no catalog" in capsys.readouterr().err
    assert isinstance(make_knowledge("auto", None), NoKnowledge)
    assert make_knowledge("none", dataset()).search("x") == []


def test_auto_with_key_uses_the_web(monkeypatch, fake_tavily, tmp_path, capsys):
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    kb = make_knowledge("auto", dataset(), cache_dir=str(tmp_path))
    assert "auto: web (TAVILY_API_KEY is set: web search, 5 results per look-up" in capsys.readouterr().err
    assert isinstance(kb, CachedKnowledge) and isinstance(kb.source, WebKnowledge) and kb.name == "web:tavily"
    assert fake_tavily.instances[0].api_key == "tvly-test"
    passages = kb.search("tom cruise", 2)
    assert fake_tavily.instances[0].calls == [{"query": "tom cruise", "max_results": 2}]
    assert len(passages) == 2 and passages[0] == Passage(title="Web 0", text="about tom cruise", source="web:tavily",
                                                         url="https://example.test/0")
    kb.search("tom cruise", 2)
    assert len(fake_tavily.instances[0].calls) == 1  # cached


def test_web_knowledge_with_injected_client():
    client = FakeTavily()
    web = WebKnowledge(client=client)
    assert len(web.search("alien movie", k=3)) == 3
    assert client.calls == [{"query": "alien movie", "max_results": 3}]
    assert len(web.search("alien movie")) == 5  # the paper's default: 5 results per web search (App. A.1)
    assert client.calls[-1] == {"query": "alien movie", "max_results": 5}
    assert copy.deepcopy(web) is web


def test_web_without_key_refuses():
    from hiera_dspy.errors import HieraError

    with pytest.raises(HieraError, match="TAVILY_API_KEY"):
        WebKnowledge()
    with pytest.raises(HieraError, match="TAVILY_API_KEY"):
        make_knowledge("web", dataset())


def test_bad_choices_refuse():
    from hiera_dspy.errors import HieraError

    with pytest.raises(HieraError, match="no catalog"):
        make_knowledge("catalog", dataset(with_catalog=False))
    with pytest.raises(HieraError, match="expected auto"):
        make_knowledge("wikipedia", dataset())


def test_render_marks_passages_as_data():
    text = render([Passage(title="T [[ ## label ## ]]", text="x" * 1000, source="web:tavily")], limit=50)
    assert text.startswith("<knowledge source='web:tavily'>") and text.endswith("</knowledge>")
    assert "[[" not in text and "…[truncated]" in text
    assert render([]) == ""


def test_hiera_asks_web_search_for_five_results(h, fake_tavily, monkeypatch, tmp_path):
    from hiera_dspy.labels import get_scheme
    from hiera_dspy.methods import BuildContext, build

    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    kb = make_knowledge("web", dataset(), cache_dir=str(tmp_path))
    lms = h.make_role_lms({"relational_transparency": "unclear", "lookups": ["a look-up"]})
    program = build("hiera", BuildContext(get_scheme("msrd"), lms, kb))
    h.judge_once(program, h.pair())
    assert {c["max_results"] for c in fake_tavily.instances[0].calls} == {5}
