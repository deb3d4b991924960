"""NAVER HyperCLOVA X SEED Think 14B calls: a message of the role ``assistant -> tool/function_call``.

The model's turn is a run of ChatML messages of the assistant (its model card; vLLM's
``hyperclovax_seed_think_14b`` tool and reasoning parsers): reasoning is the role
``assistant/think``, the answer the role ``assistant``, calls the role
``assistant -> tool/function_call``, whose body is one JSON list of calls::

    Let me check.<|im_end|>
    <|im_start|>assistant -> tool/function_call
    [{"name": "get_weather", "arguments": {"city": "Paris"}}]<|im_end|>

The generation prompt ends ``<|im_start|>assistant`` and the model finishes the role line: with
``/think\\n`` (it reasons), ``\\n`` (it answers) or `` -> tool/function_call\\n`` (it calls at
once). With thinking forced the prompt ends ``<|im_start|>assistant/think\\n`` (the reply starts
inside the reasoning), with thinking skipped ``<|im_start|>assistant\\n``. Read:

* reasoning: from ``/think\\n`` at the reply's start (or from the start of a reply to a prompt
  that ends with the reasoning role) up to ``<|im_end|>\\n<|im_start|>assistant\\n``, which ends
  it and opens the answer (both structure). A call message ends an unclosed reasoning block too
  (the shared machine's rule for a call opener in one): a reply cut inside that call stays
  reasoning (never run), and a call message the model follows with that closing string is
  reasoning (the model stops after a call; a later close says it was still thinking);
* a call: the role's header `` -> tool/function_call\\n`` (after text, the role switch
  ``<|im_end|>\\n<|im_start|>assistant -> tool/function_call\\n``; after an earlier call
  message's ``<|im_end|>``, the role's ``<|im_start|>assistant`` before the header), then the
  list, then ``<|im_end|>``, implied when the reply ended normally right after the list
  (llama.cpp ends generation at ``<|im_end|>``, so that is how a local reply ends). Each element
  has exactly ``name`` and one of ``arguments`` / ``parameters`` (vLLM reads both), an object or
  a JSON string holding one. A list cut by the token limit keeps its complete calls; the cut
  element is an incomplete call;
* everything else is text, byte for byte: a malformed list, anything after the list other than
  ``<|im_end|>``, a list never closed in a reply that ended normally, the ``\\n`` that ends the
  answer role's line after the generation prompt.

A JSON list is a call only after the header: a bare ``[...]`` is text (vLLM reads one only when
its reasoning parser has already cut the header away; here the header is always in the reply,
and reading every JSON list as a call would turn plain answers into calls). The header is read
wherever it stands, as vLLM reads it: at the reply's start (the role line the prompt left open),
after reasoning, after text. Not read: the model card's example of one object with an ``input``
key (neither NAVER's vLLM plugin nor vLLM reads it); ``<|stop|>`` / ``<|endofturn|>`` (the card's
end-of-generation tokens after ``<|im_end|>``) are text where a server leaves them in.

llama.cpp counts ``<|im_end|>`` as an end of generation, so a local reply would end with its
first message. ``message_end`` lets it go on: after that token the engine asks the model what
follows, and the reply goes on where the model begins its next message
(``\n<|im_start|>assistant``: an answer after reasoning, a call message after text or after a
call); anything else (``<|endofturn|>``, another role) ends it there, unshown.

A spent thinking budget closes the reasoning with the answer role's line and a blank line (the
shared default). The 32B generation writes GLM's wire (``glm``). The model card's template (vLLM
publishes it: ``force_reasoning`` / ``skip_reasoning``, a call message ending
``<|im_end|><|stop|>``) is detected by its rendered call; any template that renders past calls
as this role is.
"""

from __future__ import annotations

from functools import partial

from app.engine.formats.base import Format, RegionScanner, register
from app.engine.formats.json_list import JsonListFormat

__all__ = ["HYPERCLOVAX", "HyperClovaXFormat"]

END = "<|im_end|>"
ASSISTANT = END + "\n<|im_start|>assistant"  # a message ends, the assistant's next one starts
HEADER = " -> tool/function_call\n"  # the rest of the call role's line
SWITCH = ASSISTANT + HEADER  # a call message after text
CALL_ROLE = "<|im_start|>assistant" + HEADER  # a call message after a call message's <|im_end|>
THINK_OPEN = "/think\n"  # the rest of the reasoning role's line
THINK_CLOSE = ASSISTANT + "\n"  # the reasoning ends, the answer's message starts
THINKING_ROLE = "<|im_start|>assistant/think"
PARAMETERS = "parameters"


class HyperClovaXFormat(JsonListFormat):
    """The JSON list after the call role's header (any of the openers), ``parameters`` read for
    ``arguments``."""

    alt_args_key = PARAMETERS
    # llama.cpp ends generation at <|im_end|> (ChatML's end of generation): the reply goes on
    # while the model opens another of its messages after one (reasoning, answer, call).
    message_end = (END, "\n<|im_start|>assistant")

    # Both openers open the list (JsonListFormat takes its other openers for structure markers).
    def region_scanner(self, opener: str) -> RegionScanner:
        return self.list_scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        return self.read_list(body, at_end=at_end, truncated=truncated)

    def cut_call(self, opener, body, tools):
        return Format.cut_call(self, opener, body, tools)

    def opens_in_reasoning(self, prompt: str) -> bool:
        # The prompt opens the reasoning role itself (thinking forced): its line ends with "\n",
        # which the base's check (stripped prompt, opening tag) cannot see.
        return isinstance(prompt, str) and prompt.rstrip().endswith(THINKING_ROLE)

    def expects_orphan_close(self, template_source: str, prompt: str) -> bool:
        # The reasoning role is opened by the reply's "/think\n" or by a prompt that ends with it
        # (opens_in_reasoning); the same string that closes it ends any text message, so a reply
        # that opened no reasoning never closes one.
        return False

    def grammar_wire(self, ctx):
        # The call message as one JSON array right after the header, at the start of the reply,
        # with no reasoning message before it even where the prompt opened one: a reasoning
        # message ends with <|im_end|>, which ends generation in llama.cpp (and the grammar with
        # it), so a held reply could never reach its call through one. A call at the start of a
        # reply the prompt opened in the reasoning role is read as the call that ended it.
        from app.engine.grammar.wires import json_array

        return partial(json_array, open=HEADER, close=END, item=self.call_schema, lead="")


HYPERCLOVAX = register(
    HyperClovaXFormat(
        "hyperclovax",
        "HyperCLOVA X call role (NAVER HyperCLOVAX-SEED-Think-14B)",
        (HEADER, SWITCH, CALL_ROLE),
        close=END,
        reasoning=(THINK_OPEN, THINK_CLOSE),
        args_required=True,
    )
)
