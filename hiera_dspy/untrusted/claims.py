"""Sentences that talk about the search instead of the item: the "claim" filter's patterns (issue 24).

An item's description says what the item is, in the third person. A sentence that talks about the search itself (the
query, the searchers, the results, relevance, what the reader is looking for, what the title suggests) is written to
move a judge, whatever its wording; so the filter recognises the vocabulary of search talk rather than known claims:

- the search and its parts: "query", "search results", "search terms", "your search", "top result", "off-topic",
  "relevant to your search", and the same in French, German, Spanish, Italian, Portuguese, Dutch and Polish;
- searchers and the reader: "people searching for", "anyone who typed", "if you are looking for", "what you had in
  mind", "look no further", "stop scrolling", "you found it", "Searchers: ...", "vous cherchez", "wer ... sucht",
  "si buscas", "stai cercando", "você procura", "je zoekt", "szukasz";
- the listing itself: "despite what the title suggests", "this movie has nothing to do with", "the perfect match
  for".

A claim that names the query in other words is also caught, in any language, by the query-echo rule
(`hiera_dspy.untrusted.stuffing`): a free-text sentence that repeats the whole query goes. Plain story words stay:
"They search for a relic.", "looking for her missing brother", "fans of the original", "your head" (no sentence of
the 9,750 bundled MSRD catalog texts trips these patterns; tests/untrusted/test_claims.py checks it).
"""

from __future__ import annotations

import re

_SEARCHER = (r"(?:people|persons|users?|anyone|anybody|everyone|everybody|viewers?|searchers?|customers?|shoppers?|"
             r"visitors?|whoever|buyers?|audiences?|moviegoers?|movie-goers?|folks|those|fans|you|u)")
_SEARCHING = (r"(?:search(?:es|ed|ing)?|typ(?:e|es|ed|ing)|look(?:s|ed|ing)?\s+(?:for|up)|quer(?:y|ies|ied)|"
              r"googl\w*|hunt(?:s|ed|ing)?\s+for|shop(?:s|ped|ping)?\s+for|brows(?:e|es|ed|ing)\s+for|"
              r"(?:are|were|is)\s+in\s+the\s+market\s+for)")
_VOCATIVE = r"(?:searchers|shoppers|users|viewers|buyers|customers|folks|readers)"

ENGLISH = (
    rf"\b{_SEARCHER}\s+(?:who\s+|that\s+)?(?:are\s+|were\s+|have\s+|just\s+|might\s+be\s+)?{_SEARCHING}\b",
    r"\bquer(?:y|ies)\b|\bsearch\s+(?:results?|terms?|intent|engines?|bar|box|rankings?|page|phrase|request)s?\b",
    r"\b(?:your|my|the\s+user'?s)\s+(?:search|query|hunt|results?)\b",
    r"\boff[- ]topic\b|\bon[- ]topic\b",
    r"\b(?:popular|related|trending|top|recent|frequent|common|similar)\s+searches\b|\bsearch\s+tags?\b|(?-i:\bSEO\b)",
    (r"\b(?:ir)?relevan(?:t|ce|cy)\s+(?:to|for)\s+(?:you|your|anyone|people|searchers|users|the\s+(?:search|query|"
     r"user|request|searcher)|this\s+(?:search|query|request)|any\s+(?:search|query)|every\s+(?:search|query))\b"),
    (r"\bthis\s+(?:movie|film|title|item|product|listing|one|page|result|entry)\b[^.\n]{0,30}\b(?:has\s+nothing\s+to"
     r"\s+do\s+with|is\s+(?:entirely\s+|completely\s+|totally\s+)?(?:unrelated|irrelevant|relevant)\s+to|is\s+off[- ]"
     r"topic)"),
    r"^\W*(?:not\s+to\s+be\s+confused\s+with|unrelated\s+to|has\s+nothing\s+to\s+do\s+with)\b",
    (r"\b(?:perfect|exact|definitive|best|top|right|ideal|number\s+one|#\s?1|first)\s+(?:match|result|answer|pick|"
     r"hit)(?:es|s)?\s+(?:for|to)\b|\b(?:#\s?1|number\s+one|top|first)\s+(?:search\s+)?results?\b"),
    r"\b(?:ranked|rated|voted)\s+(?:#\s?1|number\s+one|first|top)\s+(?:by|among|for)\b",
    rf"\bexactly\s+what\s+{_SEARCHER}\b",
    rf"\b(?:what\s+)?{_SEARCHER}\s+(?:\w+\s+)?(?:had|have|has)\s+in\s+mind\b",
    (r"\b(?:if|when|whether)\s+you(?:'re|\s+are|'ve|\s+have|\s+were)?\s+(?:\w+\s+){0,2}?(?:search\w*|look\w*\s+for|"
     r"typ(?:ed|ing)|googl\w*|want(?:ed)?|after|hoping\s+for|craving|in\s+the\s+mood\s+for|came\s+for)\b"),
    r"\bwhat\s+you(?:'re|\s+are|\s+were)\s+(?:really\s+)?(?:looking|searching|after|hoping)\b",
    r"\byou(?:'re|\s+are|\s+were)\s+(?:really\s+)?after\b|\byou\s+came\s+(?:here\s+)?for\b",
    r"\b(?:wrong|right|correct|perfect)\s+(?:result|pick|search)\b",
    r"\bthe\s+(?:one|\w+)\s+you\s+(?:really\s+)?(?:want|wanted|meant|mean|are\s+after|had\s+in\s+mind)\b",
    r"\blook\s+no\s+further\b|\b(?:stop|keep)\s+(?:scrolling|searching|looking)\s*(?:[.!,:;]|$|here\b|now\b)|\bskip\s+(?:this|it)\b",
    r"\byou(?:'ve|\s+have)?\s+(?:just\s+)?found\s+(?:it|the\s+one|what)\b",
    (r"\bdespite\s+what\s+(?:the|its|this)\s+(?:title|name|listing|cover|poster)\b|\b(?:the|its)\s+(?:title|name)\s+"
     r"(?:suggests|implies|might\s+suggest|may\s+suggest)\b|\bcontrary\s+to\s+(?:the|its)\s+(?:title|name)\b"),
    rf"(?:^|[.!?]\s)\W*{_VOCATIVE}\s*[:,]",
)

OTHER_LANGUAGES = (
    # French
    (r"\b(?:vous\s+(?:re)?cherchez|tu\s+(?:re)?cherches|ce\s+que\s+vous\s+(?:cherchez|voulez)|votre\s+recherche|"
     r"ta\s+recherche|résultats?\s+de\s+(?:la\s+|votre\s+)?recherche|requêtes?|(?:gens|internautes|utilisateurs|"
     r"spectateurs|personnes)\s+qui\s+(?:re)?cherchent|quiconque\s+cherche)\b"),
    # German
    (r"\b(?:(?:Sie|du|ihr)\s+(?:\w+\s+)?(?:suchen|suchst|sucht)|suchen\s+Sie|suchst\s+du|wer\s+[^.,;\n]{0,60}\s+"
     r"sucht|Ihre\s+Suche|deine\s+Suche|Suchanfragen?|Suchbegriffe?|Suchergebnisse?|(?:Nutzer|Leute|Menschen)\s*,?"
     r"\s+die\s+[^.,;\n]{0,60}\s+suchen)\b"),
    # Spanish
    (r"\b(?:buscas|estás\s+buscando|busca\s+usted|lo\s+que\s+(?:buscas|quieres)|tu\s+búsqueda|resultados?\s+de\s+"
     r"(?:la\s+|tu\s+)?búsqueda|quien(?:es)?\s+busca(?:n)?|(?:gente|usuarios|personas)\s+que\s+busca(?:n)?)\b"),
    # Italian
    (r"\b(?:cerchi|stai\s+cercando|state\s+cercando|quello\s+che\s+cerchi|la\s+tua\s+ricerca|risultat[oi]\s+della"
     r"\s+ricerca|chi\s+cerca|(?:utenti|persone)\s+che\s+cercano)\b"),
    # Portuguese
    (r"\b(?:(?:você|voce|tu)\s+(?:\w+\s+)?(?:procura|procuras|pesquisa|busca|está\s+procurando)|o\s+que\s+(?:você\s+)?"
     r"procura|sua\s+pesquisa|sua\s+busca|resultados?\s+da\s+(?:pesquisa|busca)|quem\s+procura|(?:pessoas|usuários)"
     r"\s+que\s+procuram)\b"),
    # Dutch
    r"\b(?:(?:je|u|jij)\s+(?:\w+\s+)?zoek[t]?|zoek\s+je|zoekt\s+u|zoekopdracht(?:en)?|zoekresultat(?:en)?)\b",
    # Polish
    r"\b(?:szukasz|szukacie|wyszukiwani[ae]|wyniki\s+wyszukiwania|zapytani[ae])\b",
)

CLAIM = [re.compile(p, re.IGNORECASE) for p in ENGLISH + OTHER_LANGUAGES]
