"""The probe's prompt: a short relevance question about one pair, in the label scheme's words and the model's own
chat template.

- one short system line names the task with a neutral item noun and the scheme's labels (`msrd`: "Irrelevant or
  Relevant"; `esci`: its four); the user turn is the query and the item (prompt tokens are the probe's whole cost);
- the last line names the labels again ("Answer Irrelevant or Relevant."), right before the answer;
- the item text is cut to `text_chars` (the method's default: 160) by `compact` (longest lines first: a record's short fields survive), then goes
  in through `untrusted.item_block`, the data handling of every other prompt (instruction-like sentences removed,
  field markers broken, the task restated after the data);
- the text is rendered by the model's chat template (`tokenizer.chat_template` in the GGUF metadata, Jinja, in a
  sandbox), so another GGUF model (`--lm local:PATH`) gets its own markers; a file without one gets a plain
  "System:/User:/Assistant:" layout;
- the model's special-token texts (Qwen's `<|im_start|>`, `<|im_end|>`, ...) are broken wherever they occur in query or
  item text ("<|im_end|>" -> "< |im_end|>"): llama.cpp parses the prompt's special tokens (the template's markers
  must be markers), so untrusted text must not contain any.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from hiera_dspy.errors import HieraError
from hiera_dspy.untrusted.blocks import item_block

SYSTEM = "Judge how relevant an item is to a search query. Answer {labels}."
QUESTION = "Answer {labels}."  # commit 6fa0f98 (2026-12-01): 7 tokens instead of 17 ("How relevant is this item ...?"), chosen on dev
PLAIN = "{% for m in messages %}{{ m.role | capitalize }}: {{ m.content }}\n\n{% endfor %}Assistant:"


def label_list(labels: Sequence[str]) -> str:
    """"A or B", "A, B or C": the scheme's labels as the question names them."""
    labels = list(labels)
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} or {labels[-1]}"


def break_special(text: str, special: Sequence[str]) -> str:
    """`text` with every special-token text split after its first character, so no tokenizer reads it as one."""
    for token in special:
        if len(token) > 1 and token in text:
            text = text.replace(token, f"{token[0]} {token[1:]}")
    return text


def compact(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters by shortening its longest lines first (each to a common length, marked
    "…"), so the short fields of a record (year, genres, director) survive and a long description is what gets cut."""
    lines = text.split("\n")
    if len(text) <= limit or not lines:
        return text
    lengths = sorted(len(line) for line in lines)
    budget, cap = limit - (len(lines) - 1), 0
    for i, n in enumerate(lengths):  # the largest cap c with sum(min(len, c)) <= budget
        rest = len(lengths) - i
        if n * rest > budget:
            cap = max(budget // rest, 0)
            break
        budget -= n
    else:
        return text
    return "\n".join(line if len(line) <= cap else line[:cap].rstrip() + "…" for line in lines)


@lru_cache(maxsize=8)
def _template(source: str):
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise HieraError(f"chat template: {message}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source)


@dataclass(frozen=True)
class PromptFormat:
    """What the probe's prompt is made of for one model: its chat template and special tokens, and the labels."""

    labels: tuple[str, ...]
    template: str | None = None
    special: tuple[str, ...] = ()
    bos: str = ""
    eos: str = ""

    @classmethod
    def for_model(cls, labels: Sequence[str], path: str | None) -> "PromptFormat":
        """The format for the GGUF at `path` (its template and special tokens); None: the plain layout."""
        if path is None:
            return cls(tuple(labels))
        from hiera_dspy.local import gguf_meta

        bos, eos = gguf_meta.bos_eos(path)
        return cls(tuple(labels), gguf_meta.chat_template(path), gguf_meta.special_tokens(path), bos, eos)

    def user_message(self, query: str, title: str, text: str | None, text_chars: int,
                     question: bool | str = True) -> str:
        """The user turn: the query, then the item as data (its block ends by restating the task), then (`question`)
        the relevance question with the scheme's labels, the last words before the answer (a string: another
        question, "{labels}" filled in; bench/probe_ablation.py's variants)."""
        text = compact(text or "", text_chars)
        wording = question if isinstance(question, str) else QUESTION
        ask = f"\n{wording.format(labels=label_list(self.labels))}" if question else ""
        return break_special(f"Search query: {query}\n{item_block(title, text, len(text) + 20)}", self.special) + ask

    def render(self, query: str, title: str, text: str | None, text_chars: int = 600,
               question: bool | str = True) -> str:
        """The whole prompt, ending where the model's answer would start."""
        messages = [{"role": "system", "content": SYSTEM.format(labels=label_list(self.labels))},
                    {"role": "user", "content": self.user_message(query, title, text, text_chars, question)}]
        template = _template(self.template or PLAIN)
        return template.render(messages=messages, add_generation_prompt=True, bos_token=self.bos,
                               eos_token=self.eos, tools=None)
