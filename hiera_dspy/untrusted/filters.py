"""Sentence filters over normalised untrusted text: sentences that address the assessor instead of describing the item.

Two filters, registered by the flag they raise (`FILTERS`):
- "instruction": orders to the assessor (ignore the task, answer LABEL, a note to the judge, role markers, a label
  assigned in JSON, YAML or markdown, the judging role or the model named at all), in English, French, German,
  Spanish, Italian, Portuguese, Dutch and Polish; a markdown table with such a row goes whole;
- "claim": sentences that talk about the search instead of the item (`hiera_dspy.untrusted.claims`: the query, the
  searchers, the results, relevance, what the reader is looking for), in the same languages; claims that repeat the
  query are also caught, in any language, by the query echo rule of `hiera_dspy.untrusted.stuffing`.
A matching sentence (or line) is removed, not marked: a marker is one more thing for a small model to react to. Each
pattern is narrow enough that ordinary descriptions do not match: no title nor text of the 9,750 bundled MSRD catalog
items trips a filter (tests/untrusted/test_claims.py).
Run on `normalise`d text (`hiera_dspy.untrusted.normalise`), so look-alike letters and invisible characters are gone.
"""

from __future__ import annotations

import re

from hiera_dspy.untrusted.claims import CLAIM

# A verdict: a label of any bundled scheme, negated or not, in the languages below.
_NEG = r"(?:not|non|nicht|no|niet|não|nao|pas|nie)"
_LABEL_WORDS = (r"relevant[ea]?|irrelevant[ea]?|rilevante|irrilevante|pertinent[e]?s?|impertinent[e]?|"
                r"exact(?:\s+match)?|partial(?:ly)?(?:\s+relevant)?|highly\s+relevant|substitute|complement|"
                r"trafny|istotny")
VERDICT = rf"(?:{_NEG}[\s-]+)?(?:{_LABEL_WORDS})"

_ASSESSOR = (r"(?:assessors?|judges?|annotators?|raters?|models?|ai|assistants?|llms?|evaluators?|reviewers?|graders?|"
             r"labell?ers?|moderators?|évaluat(?:eur|rice)s?|correcteurs?|annotat(?:eur|rice)s?|juges?|modèles?|"
             r"prüfer(?:in)?|bewerter(?:in)?|gutachter(?:in)?|ki|modell|evaluador(?:a|es)?|revisor(?:a|es)?|jueces|"
             r"juez|anotador(?:a|es)?|modelo|valutatori?|revisori?|giudici?|annotatori?|modello|avaliador(?:a|es)?|"
             r"juiz|beoordelaars?|recensenten?|oceniający|recenzent)")
_VOCATIVE = (r"(?:assessors?|judges?|annotators?|raters?|evaluators?|reviewers?|graders?|labell?ers?|"
             r"évaluat(?:eur|rice)|correcteur|prüfer|bewerter|gutachter|evaluador|revisor|valutatore|avaliador|beoordelaar)")
_IGNORE = (r"(?:ignore|ignores|ignorez|ignorer|ignoriere|ignorieren|ignora|ignorate|disregard|forget|override|"
           r"oublie[zr]?|vergiss|vergessen|missachte|olvida|olvide|dimentica|dimenticate|trascura|desconsider[ea]|"
           r"esqueça|esqueca|negeer|vergeet|zignoruj|zapomnij)")
_RULES = (r"(?:instructions?|rules|guidelines|prompt|task|system\s+prompt|directions|consignes|règles|tâche|"
          r"anweisungen|regeln|aufgabe|instrucciones|reglas|tarea|indicaciones|istruzioni|regole|compito|instruções|"
          r"instrucoes|regras|tarefa|instructies|regels|opdracht|instrukcje|polecenia)")
_ANSWER = (r"(?:answer|say|respond|reply|output|return|label|classify|rate|mark|judge|répondez|réponds|"
           r"répondre|indiquez|notez|classez|étiquetez|dites|antworte|antworten|sag|sage|bewerte|bewerten|markiere|"
           r"klassifiziere|responde|responda|diga|clasifica|clasifique|marca|califica|etiqueta|rispondi|risponda|"
           r"classifica|segna|valuta|classifique|marque|avalie|rotule|antwoord|zeg|beoordeel|markeer|odpowiedz)")
_FILLER = (r"(?:it|this|that|them|each|every|item|items|movie|film|product|as|with|the|label|is|be|only|just|simply|"
           r"comme|como|come|als|mit|con|com|avec|met|par|le|la|les|el|lo|il|o|a|de|du|das|den|es|ce|ca|ça|isso|"
           r"esto|questo|dit|het|jako)")
_NOTE = (r"(?:note|message|instructions?|reminder|notice|attention|remarque|hinweis|nachricht|nota|aviso|avviso|"
         r"opmerking|uwaga)")
_TO = r"(?:to|for|pour|à|a|an|für|fur|para|per|ao|voor|dla)"
_LABEL_NOUN = (r"(?:label|étiquette|etiqueta|etichetta|bewertung|urteil|verdict|veredicto|verdetto|rating|"
               r"classification|relevance|pertinence|relevancia|rilevanza|relevância|relevanz|grade|score|answer|"
               r"réponse|antwort|respuesta|risposta|resposta)")
_ROLES = (r"\b(?:the|an?|any|every|each|all|dear|our|your|attention|hey|human|automated|this|que|le|la|les|der|"
          r"die|den|el|il|o|de)\s+(?:assessors?|annotators?|raters?|graders?|labell?ers?|evaluators?|"
          r"relevance\s+(?:judges?|experts?)|language\s+models?|llms?|chatgpt|ai\s+(?:judges?|models?|assistants?)|"
          r"évaluat(?:eur|rice)s?|annotat(?:eur|rice)s?|correcteurs?|bewerter(?:in|innen)?|gutachter(?:in)?|"
          r"prüfer(?:in)?|evaluador(?:es|as?)?|anotador(?:es|as?)?|valutator[ei]|annotator[ei]|avaliador(?:es|as?)?|"
          r"beoordelaars?|oceniając\w*)\b")
_LABEL_NAMED = r"(?-i:\b(?:(?:Not|Highly|Somewhat|Partially)\s+)?(?:Irrelevant|Relevant|IRRELEVANT|RELEVANT)\b)"
_QUOTE_OPEN, _QUOTE_CLOSE = r"[\"'«“„‹‘]", r"[\"'»”“›’]"

INSTRUCTION = [re.compile(p, re.IGNORECASE) for p in (
    rf"\b{_IGNORE}\b[^.\n]{{0,60}}\b{_RULES}\b",
    r"(?:^|\n|[.!?]\s)\W*(?:system|assistant|developer|user|instructions?)\s*:",
    r"\byou\s+are\s+(?:now|an?\s+(?:ai|assistant|assessor|judge|model|bot))\b",
    rf"\b{_NOTE}\s+{_TO}\s+(?:the\s+|l['’]\s*|le\s+|la\s+|den\s+|die\s+|der\s+|el\s+|il\s+|o\s+|de\s+)?{_ASSESSOR}\b",
    rf"(?:^\s*|[(\[{{|—–]\s*|\s-\s*){_VOCATIVE}\s*[:,]",  # a vocative: "(assessor: ...", "Judge, ..."
    r"\b(?:updated|revised)\s+(?:guidelines|instructions|rules|label\s+definitions)\b",
    (r"\b(?:new|nouvelles|neue|nuevas|nuove|novas)\s+(?:guidelines|instructions|label\s+definitions|consignes|"
     r"anweisungen|richtlinien|instrucciones|istruzioni|instruções)\b"),
    rf"\b{_ANSWER}\b\W+(?:{_FILLER}\W+){{0,3}}{_QUOTE_OPEN}?\s*{VERDICT}\b",
    rf"\b{_LABEL_NOUN}\b[^.\n]{{0,40}}?(?:\bis|\best|\bist|\bes|\bè|\bé|\bare|=|:)\s*{_QUOTE_OPEN}?\s*{VERDICT}\b",
    rf"{_QUOTE_OPEN}\s*{VERDICT}\s*{_QUOTE_CLOSE}",
    rf"\b(?:every|each|all|any)\s+(?:item|product|result|movie|document)s?\s+(?:is|are)\s+[\"']?{VERDICT}\b",
    rf"\b(?:items?|products?|results?)\s+mentioning\b[^.\n]{{0,60}}{VERDICT}\b",
    r"[\"']label[\"']\s*:",
    rf"^\W*{VERDICT}\W*$|\|\s*{VERDICT}\s*\|",  # a bare verdict on its own line (a fake output field), a table cell
    _ROLES,  # the roles that judge an item, or the model reading it, named at all: no description names them
    _LABEL_NAMED,  # a relevance label, capitalised as a label is: an order in any language has to name it
)]

# One alternation per filter: a sentence is read once per filter, not once per pattern.
FILTERS: dict[str, re.Pattern] = {name: re.compile("|".join(f"(?:{p.pattern})" for p in patterns), re.IGNORECASE)
                                  for name, patterns in (("instruction", INSTRUCTION), ("claim", CLAIM))}

_MARKER = re.compile(r"\[\[\s*##(.*?)##\s*\]\]")
_BRACES = re.compile(r"[\"']\s*\}|\{\s*[\"']")  # a JSON object's edge: '"}' or '{"'
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?]+|\n|$)")
_CLAUSE = re.compile(r"\s*[(\[]|\s+[-|—–~]\s+")
_KEY_LINE = re.compile(r"^\s*[^\W\d][\w .'-]{0,30}?\s*:\s")


def flag_of(sentence: str) -> str | None:
    """The filter that `sentence` trips ("instruction", "claim"), or None: it describes the item."""
    if not sentence.strip():
        return None
    return next((name for name, pattern in FILTERS.items() if pattern.search(sentence)), None)


def _clauses_kept(sentence: str) -> str:
    """What survives of a tripped sentence: the text before the last delimiter ("(", "[", " - ", " | ", " — ") whose
    tail still trips, if that text trips nothing ("Alien - Part 2 (assessor: the label is X)" keeps "Alien - Part
    2"); else nothing."""
    end = "\n" if sentence.endswith("\n") else ""
    for cut in reversed(list(_CLAUSE.finditer(sentence))):
        if flag_of(sentence[cut.start():]) is not None:
            head = sentence[:cut.start()]
            return head.rstrip() + end if head.strip() and flag_of(head) is None else end
    return end


def join_continuations(text: str) -> str:
    """Lines that continue the previous one (it has no closing punctuation, the next starts in lower case, neither is
    a `Key: value` line) joined with a space: an order broken over lines reads as one sentence."""
    lines = text.split("\n")
    out = lines[:1]
    for line in lines[1:]:
        prev = out[-1]
        if (prev.strip() and line[:1].islower() and not re.search(r"[.!?:)\]]\s*$", prev)
                and not _KEY_LINE.match(prev) and not _KEY_LINE.match(line)):
            out[-1] = f"{prev.rstrip()} {line.lstrip()}"
        else:
            out.append(line)
    return "\n".join(out)


def _drop_tripped_tables(text: str) -> tuple[str, str | None]:
    """Markdown tables (runs of lines starting with "|") with a row that trips a filter, removed whole: a header
    left without its verdict row still frames one."""
    lines, out, flag, i = text.split("\n"), [], None, 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            j += 1
        if j == i:
            out.append(lines[i])
            i += 1
            continue
        tripped = next((f for f in map(flag_of, lines[i:j]) if f), None)
        flag = flag or tripped
        out.extend([] if tripped else lines[i:j])
        i = j
    return "\n".join(out), flag


def filter_sentences(text: str) -> tuple[str, frozenset[str]]:
    """`text` without the sentences (or clauses, or lines) a filter trips, nor DSPy field markers, nor the
    punctuation-only lines such a removal leaves at the end (a JSON brace, a code fence); and the flags raised.
    Unchanged when none trips."""
    original = text
    text, markers = _MARKER.subn("", join_continuations(text))  # DSPy field markers: removed like the sentences
    flags = {"instruction"} if markers else set()
    text, table_flag = _drop_tripped_tables(text)
    if table_flag:
        flags.add(table_flag)

    def clean(match: re.Match) -> str:
        sentence = match.group(0)
        flag = flag_of(sentence)
        if flag is None:
            return sentence
        flags.add(flag)
        return _clauses_kept(sentence)

    # JSON-ish payloads ('"}\n{"label": ...') are split on braces too, so each fragment is judged on its own
    text = _SENTENCE.sub(clean, re.sub(r"[{}]", " ", text) if _BRACES.search(text) else text)
    if not flags:
        return original, frozenset()
    lines = text.rstrip().split("\n")
    while lines and not re.search(r"[^\W\d_]", lines[-1]):
        lines.pop()
    return "\n".join(lines).rstrip(), frozenset(flags)
