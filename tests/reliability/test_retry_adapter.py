"""The retry layer wraps an adapter by composition (no class swapped under it), and its async path honours the same
retry predicate as its sync path (an LM that declares `retry_parse_errors = False` is never re-asked)."""

from __future__ import annotations

import asyncio
import copy

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError, LMServerError

from hiera_dspy.lm import retry
from hiera_dspy.lm.retry import RetryingAdapter, RetryPolicy, awith_retries, retrying_adapter

FAST = RetryPolicy(attempts=3, base_delay=0.0, max_delay=0.0)


class Scripted:
    """An adapter whose calls raise the scripted exceptions in turn, then answer."""

    def __init__(self, *faults: BaseException):
        self.faults, self.calls = list(faults), 0
        self.use_json_adapter_fallback = "read through the wrapper"

    def _next(self):
        self.calls += 1
        if self.faults:
            raise self.faults.pop(0)
        return [{"answer": "ok"}]

    def __call__(self, lm, lm_kwargs, signature, demos, inputs):
        return self._next()

    async def acall(self, lm, lm_kwargs, signature, demos, inputs):
        return self._next()


def parse_error() -> AdapterParseError:
    return AdapterParseError("ChatAdapter", dspy.Signature("q -> a"), "garbage")


class LocalLike:
    retry_parse_errors = False  # what make_lm sets on the embedded model


def call(adapter, lm, asynchronous: bool):
    args = dict(lm=lm, lm_kwargs={}, signature=None, demos=[], inputs={})
    return asyncio.run(adapter.acall(**args)) if asynchronous else adapter(**args)


def test_the_wrapped_adapter_keeps_its_class_and_answers_for_everything_else():
    inner = dspy.JSONAdapter()
    wrapped = retrying_adapter(inner, FAST)
    assert type(inner) is dspy.JSONAdapter and wrapped.adapter is inner  # composition: nothing swapped
    assert wrapped.use_json_adapter_fallback == inner.use_json_adapter_fallback
    assert wrapped.format is not None and retrying_adapter(wrapped) is wrapped  # idempotent
    assert copy.copy(wrapped).adapter is inner and copy.deepcopy(wrapped).retry_policy == FAST
    assert isinstance(retrying_adapter(None, FAST).adapter, dspy.ChatAdapter)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_parse_errors_are_retried_for_a_remote_lm(asynchronous):
    inner = Scripted(parse_error(), parse_error())
    wrapped = RetryingAdapter(inner, FAST)
    assert call(wrapped, object(), asynchronous) == [{"answer": "ok"}]
    assert inner.calls == 3 and wrapped.retries == 2


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_lm_that_declines_parse_retries_is_not_re_asked_on_either_path(asynchronous):
    """Before 208aae0 the async wrapper dropped `retry_on`: the local model was re-asked its same answer 3 times."""
    inner = Scripted(parse_error(), parse_error())
    wrapped = RetryingAdapter(inner, FAST)
    with pytest.raises(AdapterParseError):
        call(wrapped, LocalLike(), asynchronous)
    assert inner.calls == 1 and wrapped.retries == 0
    server_fault = Scripted(LMServerError("503"))  # a transport fault is still retried for that LM
    assert call(RetryingAdapter(server_fault, FAST), LocalLike(), asynchronous) == [{"answer": "ok"}]
    assert server_fault.calls == 2


def test_awith_retries_honours_retry_on():
    calls = []

    async def flaky(attempt):
        calls.append(attempt)
        raise LMServerError("503")

    with pytest.raises(LMServerError):
        asyncio.run(awith_retries(flaky, attempts=3, base_delay=0.0, retry_on=lambda exc: False))
    assert calls == [0]


def test_retrying_wraps_the_configured_adapter_for_this_block_only():
    inner = dspy.JSONAdapter()
    with dspy.context(adapter=inner), retry.retrying(FAST) as adapter:
        assert dspy.settings.adapter is adapter and adapter.adapter is inner
    assert dspy.settings.adapter is None
