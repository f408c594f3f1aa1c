"""hiera_dspy.lm.chat.ChatAdapter formats exactly what DSPy's ChatAdapter formats: every signature of the product, with
string inputs (the fast path), other values (DSPy's path), demos, and a signature changed between calls."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Literal

import dspy
import pytest

import signatures
from hiera_dspy.lm import chat
from hiera_dspy.lm.chat import ChatAdapter


def product_signatures() -> list[type[dspy.Signature]]:
    found = {}
    for info in pkgutil.iter_modules(signatures.__path__):
        module = importlib.import_module(f"signatures.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, dspy.Signature) and value is not dspy.Signature:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


SIGNATURES = product_signatures()


def sample(signature, fields, text: str) -> dict:
    return {name: f"{text} {name}: Alien (1979), a crew meets\na creature. [[ ## x ## ]] {{}}" for name in fields}


def both(signature, demos, inputs) -> tuple[list[dict], list[dict]]:
    return (ChatAdapter().format(signature, demos, inputs), dspy.ChatAdapter().format(signature, demos, inputs))


def test_the_product_has_signatures_to_compare():
    assert len(SIGNATURES) >= 10


@pytest.mark.parametrize("signature", SIGNATURES, ids=lambda s: s.__name__)
def test_same_messages_as_dspy_for_every_product_signature(signature):
    inputs = sample(signature, signature.input_fields, "input")
    demo = {**sample(signature, signature.input_fields, "demo"), **sample(signature, signature.output_fields, "out")}
    ours, theirs = both(signature, [demo], inputs)
    assert ours == theirs
    assert both(signature, [], inputs)[0] == theirs[:1] + theirs[-1:]  # the remembered system message, again


class Mixed(dspy.Signature):
    """Judge the item."""

    query: str = dspy.InputField(desc="what was asked")
    passages: list[str] = dspy.InputField()
    meta: dict = dspy.InputField()
    count: int = dspy.InputField()
    label: Literal["Bad", "Good"] = dspy.OutputField()


@pytest.mark.parametrize("inputs", [
    {"query": "q", "passages": ["a", "b"], "meta": {"k": [1, 2]}, "count": 3},
    {"query": "q", "passages": "not a list", "meta": "{}", "count": "3"},  # every value a str: the fast path
    {"query": "q"},  # fields not given are left out
    {"query": "", "passages": [], "meta": {}, "count": 0},
])
def test_same_messages_for_other_values(inputs):
    ours, theirs = both(Mixed, [], inputs)
    assert ours == theirs


def test_a_string_subclass_goes_through_dspys_path():
    class Tagged(str):
        pass

    ours, theirs = both(Mixed, [], {"query": Tagged("q"), "passages": "p", "meta": "m", "count": "1"})
    assert ours == theirs


def test_a_changed_signature_gets_its_own_system_message():
    first = ChatAdapter().format_system_message(Mixed)
    other = Mixed.with_instructions("Judge the item strictly.")
    assert ChatAdapter().format_system_message(other) == dspy.ChatAdapter().format_system_message(other) != first
    relabelled = Mixed.with_updated_fields("label", type_=Literal["No", "Yes"])
    assert "No; Yes" in ChatAdapter().format_system_message(relabelled)
    assert ChatAdapter().format_system_message(Mixed) == first


def test_the_remembered_messages_are_bounded(monkeypatch):
    monkeypatch.setattr(chat, "SYSTEM_MESSAGES", 3)
    chat._system.clear()
    for i in range(10):
        ChatAdapter().format_system_message(Mixed.with_instructions(f"Judge the item, take {i}."))
    assert 1 <= len(chat._system) <= 3
