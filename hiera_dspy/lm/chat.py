"""DSPy's ChatAdapter with the same prompts, formatted at a judgment's cost rather than a signature's.

DSPy's ChatAdapter rebuilds the system message on every call: each field's type note goes through pydantic (a
`TypeAdapter` built per field and per call), though a signature's system message never changes. And it formats every
input value through pydantic too (`serialize_for_json` builds a `TypeAdapter` for the value's type), though a plain
string formats as itself. Against a fast endpoint both together are a tenth of a judgment's CPU.

`ChatAdapter` here (the default adapter of hiera_dspy's retry layer, `hiera_dspy.lm.retry`) overrides two of the
adapter's documented formatting methods and returns exactly what DSPy's would:
- `format_system_message(signature)`: remembered per adapter class, signature and everything of the signature the
  message reads (instructions, each field's name, type, description and prefix); at most `SYSTEM_MESSAGES` of them;
- `format_user_message_content(...)`: when every input value given is a plain `str`, the fields are joined here (what
  `format_field_value` gives for a string is the string); any other value goes through DSPy's own method.
tests/lm/test_chat_adapter.py checks both against DSPy's ChatAdapter on the product's signatures and on other
values, so a DSPy upgrade that changes the format fails there.
"""

from __future__ import annotations

import threading
from typing import Any

from dspy.adapters.chat_adapter import ChatAdapter as DSPyChatAdapter

SYSTEM_MESSAGES = 512  # system messages remembered (a signature per step and label set: a run uses a handful)
_system: dict[tuple, str] = {}
_lock = threading.Lock()


def _signature_key(adapter, signature) -> tuple | None:
    """What a system message depends on, hashable; None when it is not (then it is formatted every time)."""
    try:
        fields = tuple((name, info.annotation, repr(info.json_schema_extra)) for name, info in signature.fields.items())
        key = (type(adapter), signature, signature.instructions, fields)
        hash(key)
        return key
    except TypeError:
        return None


class ChatAdapter(DSPyChatAdapter):
    """DSPy's ChatAdapter, its system message formatted once a signature and plain-string inputs joined directly."""

    def format_system_message(self, signature) -> str:
        """DSPy's system message of `signature`, formatted once and remembered (module doc)."""
        key = _signature_key(self, signature)
        if key is None:
            return super().format_system_message(signature)
        text = _system.get(key)
        if text is None:
            text = super().format_system_message(signature)
            with _lock:
                if len(_system) >= SYSTEM_MESSAGES:
                    _system.clear()
                _system[key] = text
        return text

    def format_user_message_content(self, signature, inputs: dict[str, Any], prefix: str = "", suffix: str = "",
                                    main_request: bool = False) -> str:
        """DSPy's user message of `inputs`; plain-string inputs joined here, any other value through DSPy."""
        fields = signature.input_fields
        if any(type(inputs[name]) is not str for name in fields if name in inputs):
            return super().format_user_message_content(signature, inputs, prefix, suffix, main_request)
        messages = [prefix] + [f"[[ ## {name} ## ]]\n{inputs[name]}" for name in fields if name in inputs]
        if main_request:
            requirements = self.user_message_output_requirements(signature)
            if requirements is not None:
                messages.append(requirements)
        messages.append(suffix)
        return "\n\n".join(messages).strip()
