"""Tool-call formats by model family (Qt-free): registry, parsers, streaming, detection.

Public API::

    from app.engine.formats import FORMATS, detect, detect_template
    fmt = FORMATS["hermes"]                      # .name, .label, .detail
    fmt.opens_in_reasoning(prompt)
    oc = fmt.expects_orphan_close(template_source, prompt)  # False: plain replies stream at once
    ar = fmt.closes_in_prompt(prompt)           # True: the prompt closed the reasoning block
    reply = fmt.parse(text, tools, in_reasoning=False, truncated=False, orphan_close=oc, after_reasoning=ar)
    s = fmt.stream(tools, in_reasoning=False, orphan_close=oc, after_reasoning=ar)
    events = s.feed(delta) + s.finish(truncated=False)
    s = PlainStream.for_prompt(prompt)          # no tool format: reasoning split, calls never read
    reply = Reply(); shown = reply.take(event)   # a reply filled from events (True: show the event)

How to add a family
-------------------
Adding a family touches three places: its module, its cases file and the list below.

1. Write ``app/engine/formats/<family>.py``: a :class:`~app.engine.formats.base.Format` subclass
   with everything the family knows: ``name``, ``label`` (``detail`` comes from ``example_call``),
   its markers as module constants, ``openers`` (the markers that open a call), ``start_only``
   (a call may open only at the start of the reply; ``anywhere`` lists openers that still open one anywhere),
   ``reasoning`` (open/close tags or None), ``raw_values`` (arguments written as text),
   ``region_scanner(opener)`` (an incremental :class:`RegionScanner` that says where the call
   region ends; reuse the shared ones: ``sections.JsonTagScanner``, ``jsonscan.JsonScanner``,
   ``sections.SkipValuesScanner``, ``sections.SectionScanner``, ``sections.JsonCallSection``,
   ``pycalls.PyListScanner``, ``json_list.JsonListScanner``; a wire several families write has
   a base class that takes the family's markers, such as ``json_list.JsonListFormat``,
   ``sections.JsonSectionFormat`` and ``name_line.NameLineFormat``, and the readers of tag parameters are in ``xml_params``; a
   helper two families share goes in such a shared module, never in a family module),
   ``parse_region(...)`` (strict, never raises, returns ``([ParsedCall, ...], leftover)`` or
   ``None`` for "this is text") and ``example_call(name, arguments)`` (the call as the model
   writes it: tool guidance and the fuzz suite use it). End the module with
   ``register(MyFormat())``. A family that differs from another only in data (its markers,
   label, reasoning tags) writes no class: it is an instance of the shared one, built with its
   data (``register(JsonTagFormat("longcat", LABEL, (OPEN,), close=CLOSE))``, see
   :class:`~app.engine.formats.base.Format`).
2. Add its module name to :data:`FAMILY_MODULES` below, where it should be tried: that order is
   the detection order and the order of the settings choices.
3. Add ``tests/engine/formats/cases/<family>.py`` with ``FAMILY`` (the registry name) and
   ``CASES`` (a list of ``Case(text, expected reply)``, in named groups). The test suite walks
   the registry: every family is run through the case harness (parse, every split, truncation
   at every position, the cross-family rejection matrix), the hypothesis fuzz suite (with
   ``example_call`` as its writer, or the cases file's ``fuzz`` hooks) and detection of the
   templates in ``tests/fixtures/chat_templates/families.json``.
"""

from __future__ import annotations

import importlib

from app.engine.formats import events
from app.engine.formats.base import (
    FORMATS,
    Format,
    ParsedCall,
    Reply,
    Stream,
    ToolCall,
    fold_events,
    register,
    tool_format_choices,
)
from app.engine.formats.plain import PlainStream

#: The family modules, in order: importing one registers its families, so this order is the
#: detection order and the settings order.
FAMILY_MODULES: tuple[str, ...] = (
    "ernie45",
    "mirothinker",
    "hermes",
    # after Hermes' families: it reads their tagged calls too (Qwen3.5's strays), and a template
    # that renders Hermes' calls is theirs
    "qwen_xml",
    "llama3",
    "llama4",
    "mistral",
    "glm",
    "harmony",
    "gemma4",
    "pythonic",
    "deepseek",
    "kimi",
    "minimax",
    "seed_oss",
    "command_r",
    "command_r_plus",
    "functionary_v31",
    "functionary_v32",
    "firefunction",
    "phi4_mini",
    "lfm2",
    "apertus",
    "jamba",
    "hunyuan_a13b",
    "apriel",
    "nemotron_v2",
    "gigachat",
    "minicpm5",
    "hunyuan",
    "solar",
    "granite",
    "xlam",
    "internlm",
    "longcat",
    "granite_20b_fc",
    "minimax_m1",
    "olmo3",
    "functiongemma",
    "step3",
    "k2_horizon",
    "hunyuan_v4",
    "minimax_m3",
    "iquest_coder_v2",
    "inkling",
    "muse_glimmer",
    "gigachat_gcml",
    "dots",
    "step_deepresearch",
    "openpangu",
    "step_audio2",
    "solar_open2",
    "plamo3",
    "cwm",
    "hyperclovax",
    "minicpm3",
    "glm4",
    "rwkv",
)

for _module in FAMILY_MODULES:
    importlib.import_module(f"{__name__}.{_module}")
del _module

from app.engine.formats.detect import PROBE_CALL, PROBE_TOOLS, detect, detect_template  # noqa: E402

__all__ = [
    "FAMILY_MODULES",
    "FORMATS",
    "PROBE_CALL",
    "PROBE_TOOLS",
    "Format",
    "ParsedCall",
    "PlainStream",
    "Reply",
    "Stream",
    "ToolCall",
    "detect",
    "detect_template",
    "events",
    "fold_events",
    "register",
    "tool_format_choices",
]
