"""Tool-call formats by model family (Qt-free): registry, parsers, streaming, detection.

Public API::

    from app.engine.formats import FORMATS, detect, detect_template
    fmt = FORMATS["hermes"]                      # .name, .label, .detail
    fmt.opens_in_reasoning(prompt)
    oc = fmt.expects_orphan_close(template_source, prompt)  # False: plain replies stream at once
    reply = fmt.parse(text, tools, in_reasoning=False, truncated=False, orphan_close=oc)
    s = fmt.stream(tools, in_reasoning=False, orphan_close=oc)
    events = s.feed(delta) + s.finish(truncated=False)

How to add a family
-------------------
1. Write ``app/engine/formats/<family>.py`` with a :class:`~app.engine.formats.base.Format`
   subclass: ``name``, ``label``, ``detail``, ``openers`` (the markers that open a call),
   ``start_only`` (a call may open only at the start of the reply), ``reasoning`` (open/close
   tags or None), ``raw_values`` (arguments written as text), ``region_scanner(opener)`` (an
   incremental :class:`RegionScanner` that says where the call region ends; reuse
   ``JsonTagScanner`` / ``JsonScanner`` / ``find_marker``) and ``parse_region(...)`` (strict,
   never raises, returns ``([ParsedCall, ...], leftover)`` or ``None`` for "this is text").
   End the module with ``register(MyFormat())``.
2. Import it in the ``_FAMILIES`` line below.
3. Add ``tests/engine/formats/test_<family>.py``: a list of ``Case(text, expected Reply)`` fed to
   ``tests/engine/formats/harness.py`` (parse, every split, truncation, the cross-family matrix,
   marker leaks). Detection of the family's templates in ``families.json`` is then checked by
   ``test_detect.py`` automatically.
"""

from __future__ import annotations

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

# Family modules register themselves on import (order = detection and settings order).
from app.engine.formats import qwen_xml, hermes, llama3, mistral  # noqa: E402,F401,I001  # isort: skip
from app.engine.formats import glm, harmony, gemma4, pythonic  # noqa: E402,F401,I001  # isort: skip  (Formats II, group A)
from app.engine.formats import deepseek, kimi  # noqa: E402,F401,I001  # isort: skip  (Formats II, group B)

from app.engine.formats.detect import PROBE_CALL, PROBE_TOOLS, detect, detect_template  # noqa: E402

__all__ = [
    "FORMATS",
    "PROBE_CALL",
    "PROBE_TOOLS",
    "Format",
    "ParsedCall",
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
