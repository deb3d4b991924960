"""Continuous batching in the engine process: several generations on one model, one decode a step.

The engine process (``app.engine.engine_child``) loaded with ``parallel`` N > 1 keeps a
:class:`Scheduler`: one llama.cpp context with N sequences (``n_seq_max`` N, each sequence the
full context the user set: the context is ``n_ctx * N`` tokens, never divided), and a slot per
sequence. Each :meth:`Scheduler.step` builds one ``llama_batch`` with a sequence id per token:
the next token of every slot that generates, then chunks of the prompts being read with what is
left of ``n_batch`` (so one long prompt never stalls the other streams), and runs one
``llama_decode`` for all of them; in a step where a prompt ends, the prompts are decoded first and
their first tokens sampled and sent, then the generating rows with those first tokens among them
(a new request's first token does not wait for the others' step). A new generation joins at the
next step; a finished one frees its slot.

Per slot, as the single-sequence path (``app.engine.inprocess``) does it: the same sampler chain
(llama-cpp-python's own ``Llama._init_sampler``, so greedy output is the same), its own constraint
run (an llguidance matcher) or GBNF grammar, stop strings held back while they may begin, the
end-of-generation tokens, ``max_tokens`` and the end of the context, the deadline and cancel.
A slot's KV cache is kept when its generation ends: a new generation takes the free slot whose
cached tokens share the longest prefix with its prompt, and reads only the rest.

Speculative decoding (``app.engine.speculative``, the model's ``ngram_draft``): a slot whose
reply's tail is found earlier in its prompt or reply puts ``[its next token, d1..dK]`` into the
step's one decode, logits at each; after the decode its sampler samples those positions in turn
(:func:`~app.engine.speculative.verify`), the constraint consuming each accepted token before the
next is sampled, and the KV of the rejected drafts is removed from its sequence. The tokens a
verification yields are held and kept one at a time, each at its reader's pace, as a single
sampled token is; a generation that ends among them (a stop string, the budget, an end token)
leaves the surplus in the slot's KV, which ``cached`` names, so the next prompt may reuse it.

Images (``app.engine.vision``): a generation whose prompt holds images (``gen.media``, decoded
when the engine process prepared it) has them evaluated when it takes its slot, before it joins
the batch: the prompt's part after the KV prefix the slot keeps (never ending inside an image),
up to its last image, is decoded into the slot's own sequence, text by ``llama_decode`` and each
image by libmtmd's seq-aware helper (``Projector.eval_image``); the text after the last image is
read in the steps' batches as any prompt. The slot's ``cached`` ids hold the images' media ids,
so the next turn keeps the image's KV and encodes it no more.

Log probabilities (a generation's ``logprobs``, ``app.engine.logprobs``): each token a slot samples
has its entry read from the logits at its row of the decode (a verified draft's at its own), kept
with the token and sent with its piece (``("piece", rid, text, entries)``).

The reader's pace is kept as in the single path: a piece is sent, the next token is decoded
meanwhile, and it is kept only once the app asks for it (``ack``); a cancel drops it. Qt-free;
``llama_cpp`` is imported when a scheduler is made.
"""

from __future__ import annotations

import codecs
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.engine.backend import GenerationResult, portable
from app.engine.errors import EngineBusy, GenerationError, ModelLoadError
from app.engine.holdback import first_stop, partial_start
from app.engine.kvstore import common
from app.engine.logprobs import SCORE_ROWS, TokenLogprob, logprob_at
from app.engine.sampling import bias_of
from app.engine.speculative import DecodeCost, Speculation, verify

if TYPE_CHECKING:
    from app.engine.generation import Generation
    from app.engine.llm import LoadedModel

__all__ = ["DEFAULT_PARALLEL", "MAX_PARALLEL", "MAX_WAITING", "Scheduler", "SchedulerStats"]

#: slots of an engine process for ``serve --parallel`` when not given
DEFAULT_PARALLEL = 4
#: the most slots one engine process has: llama.cpp's limit of sequences in one context
#: (``LLAMA_MAX_SEQ``)
MAX_PARALLEL = 256
#: generations that may wait for a slot in the engine process (past it: ``EngineBusy``)
MAX_WAITING = 64


#: one job's rows in a decode: (its sequence, the job, [(token, position, logits)], the row among
#: them whose logits are sampled, or None; the rows after it are its drafts)
_Segment = tuple[int, "_Job", list[tuple[int, int, bool]], int | None]


@dataclass
class SchedulerStats:
    """What the scheduler did since it was made: ``decode_calls`` (``llama_decode`` runs),
    ``busy_slots`` (the sequences they held, summed), ``max_seqs_in_batch`` (most sequences in
    one decode), ``batched_steps`` (decodes holding more than one sequence), ``tokens_decoded``;
    ``draft_tokens`` and ``draft_accepted``: drafted tokens verified and accepted (speculative
    decoding)."""

    decode_calls: int = 0
    busy_slots: int = 0
    max_seqs_in_batch: int = 0
    batched_steps: int = 0
    tokens_decoded: int = 0
    draft_tokens: int = 0
    draft_accepted: int = 0


@dataclass
class _Slot:
    seq: int
    cached: list[int] = field(default_factory=list)  # the tokens whose KV this sequence holds
    job: _Job | None = None


@dataclass
class _Job:
    rid: int
    gid: int
    gen: Generation
    start: float = field(default_factory=time.monotonic)
    slot: _Slot | None = None
    sampler: Any = None
    run: Any = None  # the constraint's run
    fed: int = 0  # prompt tokens in the slot's KV
    reused: int = 0  # prompt tokens whose KV the slot held when the job took it
    evaluated: int = 0  # prompt tokens decoded for this generation
    to_decode: int | None = None  # a kept token whose KV is not written yet
    #: sampled tokens not kept yet (each waits for the ack); all but the last have their KV written
    held: deque[int] = field(default_factory=deque)
    spec: Speculation | None = None  # speculative decoding (None: off)
    unacked: bool = False
    budget: int = 0
    tokens: list[int] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    pending: str = ""
    stopped: str | None = None  # the stop string that ended the text
    eog: int | None = None  # the end-of-generation token that ended it
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace"))
    first_at: float | None = None
    evaluated_at_first: int = 0
    deadline: float | None = None
    #: log probabilities (when asked): of the sampled tokens not kept yet, in order; of the kept
    #: ones; and how many of those went out with a piece
    noted: deque[Any] = field(default_factory=deque)
    logprobs: list[Any] = field(default_factory=list)
    logprobs_sent: int = 0
    #: the prompt's entries, when asked (``prompt_logprobs``): its rows are read with logits
    scored: list[Any] | None = None


class Scheduler:
    """N slots on one llama.cpp context (see the module docstring).

    ``send(msg)`` sends the child protocol's messages (``piece``, ``progress``, ``end``);
    ``cancelled(gid)`` says whether generation ``gid`` is to stop."""

    def __init__(
        self,
        model: LoadedModel,
        n_slots: int,
        send: Callable[[tuple[Any, ...]], None],
        cancelled: Callable[[int], bool],
    ):
        if not 1 <= n_slots <= MAX_PARALLEL:
            raise ValueError(f"parallel must be 1 to {MAX_PARALLEL} (llama.cpp's limit), got {n_slots}")
        import llama_cpp
        from llama_cpp import _internals as internals

        self.model = model
        self.backend: Any = model.backend
        llm = self.backend.llm
        self.llm = llm
        self.send = send
        self.cancelled = cancelled
        self.n_slots = n_slots
        self.n_ctx = model.n_ctx  # per slot, as the user set it
        self.n_batch = min(512, self.n_ctx)  # as the single path's ``InProcessBackend.load``
        # the model's own settings (threads, flash attention, KV cache type), N sequences
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        if self.n_ctx * n_slots > 0xFFFFFFFF:  # llama.cpp's n_ctx is 32 bits: it would wrap round
            raise ModelLoadError(model.path, _no_context(model, n_slots, int(params.type_k)))
        params.n_ctx = self.n_ctx * n_slots
        params.n_seq_max = n_slots
        params.n_batch = self.n_batch
        params.n_ubatch = self.n_batch
        params.kv_unified = False  # each sequence its own n_ctx
        try:
            self._ctx = internals.LlamaContext(model=llm._model, params=params, verbose=False)
        except Exception as exc:  # noqa: BLE001 - llama.cpp says only "Failed to create llama_context"
            raise ModelLoadError(model.path, _no_context(model, n_slots, int(params.type_k))) from exc
        self._mem = llama_cpp.llama_get_memory(self._ctx.ctx)
        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        from app.engine.warmup import warm_up

        warm_up(self._ctx.ctx, llm._model.model)  # the first decode's cost now, not in a reply
        self._lib = llama_cpp
        self.slots = [_Slot(seq=i) for i in range(n_slots)]
        self.waiting: deque[_Job] = deque()
        self.jobs: dict[int, _Job] = {}  # gid -> admitted job
        self.stats = SchedulerStats()
        #: draftless n-gram drafting for every slot (the model's ``ngram_draft``)
        self.ngram_draft = bool(getattr(self.backend, "ngram_draft", False)) and bool(
            getattr(self.backend, "can_draft", False)
        )
        #: what one more token in a decode costs, learned from the steps that decode one slot's
        #: tokens alone
        self.decode_cost = DecodeCost()
        from app.engine.kvstore import SlotKV

        #: the conversations' KV states on disk (``app.engine.kvstore``: saved when a slot is left
        #: or the model closes, restored into whichever slot a prompt that continues one takes)
        self.kv = SlotKV.for_store(getattr(self.backend, "kv_store", None), streams=n_slots, n_ctx=self.n_ctx)

    # -- the child's requests -------------------------------------------------------------------

    def submit(self, rid: int, gid: int, gen: Generation) -> None:
        """Queue ``gen``; it joins at the next step that finds a free slot."""
        if len(self.waiting) >= MAX_WAITING:
            raise EngineBusy(len(self.waiting), 1)
        job = _Job(rid=rid, gid=gid, gen=gen)
        if gen.deadline_s is not None:
            job.deadline = job.start + max(0.0, gen.deadline_s)
        self.waiting.append(job)

    def ack(self, gid: int) -> None:
        job = self.jobs.get(gid)
        if job is not None:
            job.unacked = False

    @property
    def active(self) -> bool:
        return bool(self.jobs or self.waiting)

    def slot_states(self) -> list[dict[str, Any]]:
        """Each slot as llama-server's ``/slots`` shows it: ``id``, ``n_ctx``, ``speculative``
        (whether it drafts) and ``is_processing``; a busy one also its request's id (``id_task``),
        its prompt's tokens (``n_prompt_tokens``: ``..._processed`` read for it so far,
        ``..._cache`` reused from the slot's KV), its ``params`` (``n_predict`` and the sampler's
        values) and ``next_token`` (``n_decoded`` so far, ``n_remain`` of its budget)."""
        out: list[dict[str, Any]] = []
        for i, slot in enumerate(self.slots):
            job = slot.job
            state: dict[str, Any] = {
                "id": i,
                "n_ctx": self.n_ctx,
                "speculative": self.ngram_draft,  # (slots draft by n-gram lookup only)
                "is_processing": job is not None,
            }
            if job is not None:
                gen = job.gen
                state.update(
                    id_task=job.rid,
                    n_prompt_tokens=len(gen.prompt_tokens),
                    n_prompt_tokens_processed=job.evaluated,
                    n_prompt_tokens_cache=job.reused,
                    params={"n_predict": gen.max_tokens, **gen.sampling.to_dict()},
                    next_token=[
                        {
                            "has_next_token": True,
                            "n_remain": max(0, job.budget - len(job.tokens)),
                            "n_decoded": len(job.tokens),
                        }
                    ],
                )
            out.append(state)
        return out

    def runnable(self) -> bool:
        """Whether a step can do something now (else the child waits for a message)."""
        if self.waiting and any(s.job is None for s in self.slots):
            return True
        if any(self.cancelled(j.gid) for j in self.waiting):
            return True
        for job in self.jobs.values():
            if self.cancelled(job.gid) or not job.unacked or not job.held:
                return True
        return False

    def fail_all(self, exc: BaseException) -> None:
        """End every generation with ``exc`` (a step failed in a way no slot owns) and forget the
        slots' KV, which may be half written."""
        for job in list(self.jobs.values()):
            self._fail(job, exc)
        while self.waiting:
            self.send(("end", self.waiting.popleft().rid, False, exc))
        for slot in self.slots:
            self._lib.llama_memory_seq_rm(self._mem, slot.seq, -1, -1)
            slot.cached = []

    def reset(self) -> None:
        """Forget the KV of every free slot."""
        for slot in self.slots:
            if slot.job is None:
                self._lib.llama_memory_seq_rm(self._mem, slot.seq, -1, -1)
                slot.cached = []

    def close(self) -> None:
        """End every generation (cancelled; the waiting ones with an error) and free the context.
        Safe to call twice."""
        if self._batch is None:
            return
        for job in list(self.jobs.values()):
            self._end(job, "cancelled")
        while self.waiting:
            job = self.waiting.popleft()
            self.send(("end", job.rid, False, GenerationError("the model is closing")))
        if self.kv is not None:
            self.kv.close(self._ctx.ctx, self.slots)  # every slot's conversation, for the next start
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        self._ctx.close()

    # -- one step --------------------------------------------------------------------------------

    def step(self) -> None:
        """Admit, keep the sampled tokens the readers took, decode once for every slot that needs
        it, sample."""
        for job in [j for j in self.waiting if self.cancelled(j.gid)]:
            self.waiting.remove(job)
            self._finish_unstarted(job, "cancelled")
        self._admit()
        for job in list(self.jobs.values()):
            self._advance(job)
        self._decode()

    def _admit(self) -> None:
        while self.waiting:
            free = [s for s in self.slots if s.job is None]
            if not free:
                return
            job = self.waiting.popleft()
            if self.cancelled(job.gid):
                self._finish_unstarted(job, "cancelled")
                continue
            prompt = job.gen.prompt_tokens
            # the longest shared prefix; else an empty slot (leaving a conversation costs a save)
            slot = max(free, key=lambda s: (common(s.cached, prompt), not s.cached, -s.seq))
            try:
                self._start(job, slot)
            except Exception as exc:  # noqa: BLE001 - this slot fails alone
                self.send(("end", job.rid, False, portable(exc)))
                continue

    def _start(self, job: _Job, slot: _Slot) -> None:
        from llama_cpp import Llama

        gen = job.gen
        prompt = gen.prompt_tokens
        job.budget = min(gen.max_tokens, self.n_ctx - len(prompt))
        grammar = None
        if gen.grammar is not None:
            from llama_cpp import LlamaGrammar

            grammar = LlamaGrammar.from_string(gen.grammar, verbose=False)
        job.run = gen.constraint.start(job.budget) if gen.constraint is not None else None
        seed = gen.sampling.seed if gen.sampling.seed is not None else self.llm._seed
        shim = _SamplerShim(self.llm, int(seed))
        init_sampler: Any = Llama._init_sampler  # the one chain the single path builds
        processors = [p for p in (bias_of(gen), job.run) if p is not None]
        job.sampler = init_sampler(
            shim,
            logits_processor=processors or None,
            grammar=grammar,
            **gen.sampling.llama_kwargs(),
        )
        hint = gen.prediction_tokens
        job.spec = (
            Speculation.start(prompt, cost=self.decode_cost, ngram=self.ngram_draft, hint=hint)
            if self.ngram_draft or hint
            else None
        )
        if self.kv is not None and job.budget > 0:
            # save the conversation this slot leaves, restore the one this prompt continues
            slot.cached = self.kv.before_start(self._ctx.ctx, slot.seq, slot.cached, prompt)
        # the KV of the longest shared prefix stays; at least the last prompt token is decoded again
        keep = min(common(slot.cached, prompt), len(prompt) - 1)
        if gen.options.prompt_logprobs:  # every row's logits: nothing kept
            keep = 0
            job.scored = [TokenLogprob(prompt[0], self.backend.token_bytes(prompt[0]), None)]
        if gen.media is not None:
            keep = min(
                [keep] + [s.start for s in gen.media.segments if s.kind == "image" and s.start < keep < s.end]
            )
        self._lib.llama_memory_seq_rm(self._mem, slot.seq, keep, -1)
        slot.cached = slot.cached[:keep]
        job.reused = keep
        if gen.media is not None:
            keep = self._read_images(job, slot, keep)
        slot.job = job
        job.slot = slot
        job.fed = keep
        self.jobs[job.gid] = job
        if job.budget <= 0 and job.scored is None:  # (a prompt to score is read first)
            self._end(job, "length")

    def _read_images(self, job: _Job, slot: _Slot, keep: int) -> int:
        """Decode ``job``'s prompt with images from ``keep`` to the end of its last image into the
        slot's sequence (see the module docstring); the positions now in the KV. On a failure the
        slot's sequence is forgotten and the error raised (this job fails alone)."""
        media = job.gen.media
        job.gen.media = None
        try:
            images = [s for s in media.segments if s.kind == "image"]
            end = images[-1].end if images else 0
            if end <= keep:
                return keep
            projector = self.backend.vision_projector()
            batch = self._batch
            for seg in media.segments:
                if seg.end <= keep or seg.start >= end:
                    continue
                if seg.kind == "image":
                    projector.eval_image(seg, self._ctx.ctx, seg.start, seq_id=slot.seq, n_batch=self.n_batch)
                    self.backend.total_eval += seg.n_tokens
                    self.backend.decoded(-(-seg.n_tokens // self.n_batch))
                    job.evaluated += seg.n_tokens
                else:
                    lo = max(keep, seg.start)
                    for at in range(lo, seg.end, self.n_batch):
                        ids = seg.ids[at - seg.start : min(at + self.n_batch, seg.end) - seg.start]
                        for i, tok in enumerate(ids):
                            self._put(batch, i, tok, at + i, slot.seq, False)
                        batch.n_tokens = len(ids)
                        rc = self._lib.llama_decode(self._ctx.ctx, batch)
                        if rc != 0:
                            raise GenerationError(
                                f"llama.cpp failed while reading the prompt: llama_decode returned {rc}"
                            )
                        self.stats.decode_calls += 1
                        self.stats.busy_slots += 1
                        self.stats.tokens_decoded += len(ids)
                        self.backend.total_eval += len(ids)
                        self.backend.decoded()
                        job.evaluated += len(ids)
                slot.cached = list(job.gen.prompt_tokens[: seg.end])
            return end
        except BaseException:
            self._lib.llama_memory_seq_rm(self._mem, slot.seq, -1, -1)
            slot.cached = []
            raise
        finally:
            media.close()

    def _advance(self, job: _Job) -> None:
        """Before the decode: stop a job that is cancelled or out of time, keep its sampled token
        once its reader asked for it."""
        if self.cancelled(job.gid):
            self._end(job, "cancelled")
            return
        if not job.held:
            if job.to_decode is None and job.fed < len(job.gen.prompt_tokens):
                if job.deadline is not None and time.monotonic() >= job.deadline:
                    self._end(job, "deadline")
            return
        if job.unacked:
            return  # the reader has not taken the previous piece: the token waits
        tok = job.held.popleft()
        entry = job.noted.popleft() if job.noted else None
        if job.first_at is None:
            job.first_at = time.monotonic()
            job.evaluated_at_first = job.evaluated
        if self._is_eog(tok):
            job.eog = tok
            self._end(job, "stop")
            return
        # (the constraint consumed the token when it was sampled)
        job.tokens.append(tok)
        if entry is not None:
            job.logprobs.append(entry)
        if job.spec is not None:
            job.spec.kept(tok)
        piece = job.decoder.decode(self.backend.token_bytes(tok))
        stop = job.gen.stop
        if piece and not stop:
            self._emit(job, piece)
        elif piece:
            job.pending += piece
            found = first_stop(job.pending, stop)
            if found is not None:
                hit, job.stopped = found
                if hit:
                    self._emit(job, job.pending[:hit])
                job.pending = ""
                self._end(job, "stop", stop_hit=True)
                return
            cut = partial_start(job.pending, stop)
            out, job.pending = job.pending[:cut], job.pending[cut:]
            if out:
                self._emit(job, out)
        # the checks the single path makes before decoding the next token
        if job.deadline is not None and time.monotonic() >= job.deadline:
            self._end(job, "deadline")
        elif len(job.tokens) >= job.budget:
            self._end(job, "length")
        elif not job.held:
            job.to_decode = tok  # (an accepted draft's KV is written: only the last is decoded)

    def _decode(self) -> None:
        """One step's decode: every generating slot's next token (and its drafts), then the prompts
        being read with what is left of ``n_batch``. When a prompt ends in a step that also
        generates, the prompts are decoded first, alone, and their first tokens sampled and sent
        before the generating rows are decoded, with the new first tokens among them: a new
        request's first token does not wait for the others' step, and the step costs what one
        decode of both did (llama.cpp splits a batch with a KV stream per sequence into ubatches
        of an equal number of tokens per sequence, so the prompt was a ubatch of its own anyway)."""
        jobs = list(self.jobs.values())
        generating = sum(1 for j in jobs if j.to_decode is not None)
        writes, room = self._next_tokens(jobs, self.n_batch, generating)
        reads = self._prompt_chunks(jobs, room)
        if not (writes and any(at is not None for *_, at in reads)):
            self._run(writes + reads, read=bool(reads))
            return
        self._run(reads, read=True)
        started = [job for _seq, job, _rows, at in reads if at is not None]
        for job in started:
            if job.gid in self.jobs:  # not failed
                self._advance(job)  # its first token goes out now, and is written below
        joined = [job for job in started if job.gid in self.jobs and job.to_decode is not None]
        # the second decode holds the generating rows and the new first tokens: what the first
        # ``_next_tokens`` left is theirs (the prompts were read in a decode of their own)
        more, _room = self._next_tokens(joined, room, generating + len(joined))
        self._run(writes + more, read=False)

    def _next_tokens(self, jobs: list[_Job], room: int, sharing: int) -> tuple[list[_Segment], int]:
        """The rows of each job's kept token not written yet, and its drafts (``sharing``: the
        slots generating in this step, which share its cost); returns them and the room left."""
        segments: list[_Segment] = []
        # every generating slot's next token has a place; drafts share what is left
        spare = room - sum(1 for j in jobs if j.to_decode is not None)
        for job in jobs:
            if job.to_decode is not None and room > 0:
                slot = job.slot
                assert slot is not None
                drafts: list[int] = []
                if job.spec is not None and spare > 0:
                    drafts = job.spec.draft(min(spare, job.budget - len(job.tokens) - 1), sharing)
                    spare -= len(drafts)
                base = len(slot.cached)
                toks = [job.to_decode, *drafts]
                segments.append((slot.seq, job, [(t, base + k, True) for k, t in enumerate(toks)], 0))
                slot.cached.extend(toks)
                room -= len(toks)
                job.to_decode = None
        return segments, room

    def _prompt_chunks(self, jobs: list[_Job], room: int) -> list[_Segment]:
        """The prompts being read share ``room``, the shortest rest first: a short new prompt does
        not wait behind a long one. A segment whose prompt ends samples its last row."""
        segments: list[_Segment] = []
        for job in sorted(jobs, key=lambda j: len(j.gen.prompt_tokens) - j.fed):
            prompt = job.gen.prompt_tokens
            if job.fed >= len(prompt) or room <= 0 or job.slot is None:
                continue
            slot = job.slot
            take = min(room, len(prompt) - job.fed)
            if job.scored is not None:  # every row has logits: a few a step
                take = min(take, SCORE_ROWS)
            end = job.fed + take
            rows = [
                (prompt[i], i, i == len(prompt) - 1 or job.scored is not None) for i in range(job.fed, end)
            ]
            segments.append((slot.seq, job, rows, take - 1 if end == len(prompt) else None))
            slot.cached.extend(prompt[job.fed : end])
            job.fed = end
            job.evaluated += take
            room -= take
            if job.fed < len(prompt):
                job.gen.model.prompt_progress = (job.fed, len(prompt))
                self.send(("progress", job.rid, job.fed, len(prompt)))
        return segments

    def _run(self, segments: list[_Segment], *, read: bool) -> None:
        """One ``llama_decode`` of ``segments`` (``read``: prompt rows among them), then each job's
        sampling at its row. A failed decode fails the jobs it held and forgets their KV."""
        if not segments:
            return
        lib = self._lib
        batch = self._batch
        seqs = {seq for seq, *_ in segments}
        # the rows in the order of their sequences: llama.cpp cuts a batch for a KV cache with a
        # stream per sequence into ubatches of consecutive sequence ids, so slots 0-7 in order are one
        # ubatch (one graph, one pass over the weights), where 3, 0, 1, 2 would be two; and each
        # sequence's logits then come from one shape of computation, whichever order its jobs came in
        n = 0
        sampled: list[tuple[_Job, int, list[int]]] = []  # (job, its batch index, its drafts)
        scoring: list[tuple[_Job, int, list[tuple[int, int, bool]]]] = []  # (job, first index, rows)
        for seq, job, rows, at in sorted(segments, key=lambda s: s[0]):
            if at is not None:
                sampled.append((job, n + at, [tok for tok, _pos, _logits in rows[at + 1 :]]))
            if job.scored is not None:
                scoring.append((job, n, rows))
            for tok, pos, logits in rows:
                self._put(batch, n, tok, pos, seq, logits)
                n += 1
        batch.n_tokens = n
        t0 = time.perf_counter()
        rc = lib.llama_decode(self._ctx.ctx, batch)
        if len(seqs) == 1 and not read:  # one slot's next token (and drafts) alone
            self.decode_cost.record(n, time.perf_counter() - t0)
        self.stats.decode_calls += 1
        self.stats.busy_slots += len(seqs)
        self.stats.tokens_decoded += n
        self.stats.max_seqs_in_batch = max(self.stats.max_seqs_in_batch, len(seqs))
        if len(seqs) > 1:
            self.stats.batched_steps += 1
        self.backend.total_eval += n
        self.backend.decoded(1, len(seqs))
        if rc != 0:
            err = GenerationError(f"llama.cpp failed while generating: llama_decode returned {rc}")
            for job in {id(job): job for _seq, job, _rows, _at in segments}.values():
                if job.slot is not None and job.gid in self.jobs:
                    job.slot.cached = []
                    lib.llama_memory_seq_rm(self._mem, job.slot.seq, -1, -1)
                    self._fail(job, err)
            return
        for job, first, rows in scoring:
            try:
                self._score(job, first, rows)
            except Exception as exc:  # noqa: BLE001 - this slot fails alone
                self._fail(job, exc)
        for job, at, drafts in sampled:
            if job.gid not in self.jobs:
                continue  # failed above
            try:
                self._sample(job, at, drafts)
            except Exception as exc:  # noqa: BLE001 - this slot fails alone
                self._fail(job, exc)

    def _score(self, job: _Job, first: int, rows: list[tuple[int, int, bool]]) -> None:
        """The entries of the prompt tokens that ``rows`` (from batch index ``first``) predict."""
        assert job.scored is not None
        prompt, top = job.gen.prompt_tokens, job.gen.options.logprobs or 0
        for k, (_tok, pos, _logits) in enumerate(rows):
            if pos + 1 < len(prompt):
                nxt = prompt[pos + 1]
                job.scored.append(
                    logprob_at(
                        self._ctx.ctx, first + k, nxt, self.llm._n_vocab, top, self.backend.token_bytes
                    )
                )

    def _sample(self, job: _Job, at: int, drafts: list[int]) -> None:
        """Sample the job's next token at batch index ``at``, or verify its ``drafts`` (at
        ``at + 1 ..``): the tokens go to ``held``, the rejected drafts' KV is removed. Each
        sampled token but an end token is consumed by the constraint here, once."""
        if job.budget <= 0:  # a prompt read for its log probabilities alone
            self._end(job, "length")
            return
        sampled = len(job.tokens)
        top = job.gen.options.logprobs

        def pick(row: int) -> int:
            tok = int(job.sampler.sample(self._ctx, row))
            if top is not None:
                job.noted.append(
                    logprob_at(self._ctx.ctx, row, tok, self.llm._n_vocab, top, self.backend.token_bytes)
                )
            return tok

        def take(tok: int) -> bool:
            nonlocal sampled
            sampled += 1
            if self._is_eog(tok):
                return False
            if job.run is not None:
                job.run.consume(tok)
            return sampled < job.budget

        if not drafts:
            tok = pick(at)
            take(tok)
            job.held.append(tok)
            return
        out, accepted = verify(lambda i: pick(at + i), drafts, take)
        job.held.extend(out)
        assert job.spec is not None and job.slot is not None
        job.spec.verified(len(drafts), accepted)
        self.stats.draft_tokens += len(drafts)
        self.stats.draft_accepted += accepted
        if accepted < len(drafts):
            slot = job.slot
            keep = len(slot.cached) - (len(drafts) - accepted)
            self._lib.llama_memory_seq_rm(self._mem, slot.seq, keep, -1)
            del slot.cached[keep:]

    def _is_eog(self, tok: int) -> bool:
        return tok in self.model.eog_ids or self.backend.is_eog(tok)

    @staticmethod
    def _put(batch: Any, i: int, token: int, pos: int, seq: int, logits: bool) -> None:
        batch.token[i] = token
        batch.pos[i] = pos
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = seq
        batch.logits[i] = logits

    # -- ends ------------------------------------------------------------------------------------

    def _emit(self, job: _Job, piece: str) -> None:
        job.parts.append(piece)
        job.unacked = True
        if job.gen.options.logprobs is None:
            self.send(("piece", job.rid, piece))
            return
        # the log probabilities of the tokens kept since the last piece go with it
        self.send(("piece", job.rid, piece, job.logprobs[job.logprobs_sent :]))
        job.logprobs_sent = len(job.logprobs)

    def _release(self, job: _Job) -> None:
        self.jobs.pop(job.gid, None)
        if job.slot is not None:
            job.slot.job = None  # its KV (``cached``) stays for the next prompt that shares it
        job.to_decode = None  # a token kept but not written: the slot's KV ends before it
        if job.sampler is not None:
            job.sampler.close()
            job.sampler = None
        job.gen.model.prompt_progress = None

    def _fail(self, job: _Job, exc: BaseException) -> None:
        self._release(job)
        self.send(("end", job.rid, False, portable(exc)))

    def _finish_unstarted(self, job: _Job, finish: str) -> None:
        job.budget = 0
        self._end(job, finish, admitted=False)

    def _end(self, job: _Job, finish: str, *, stop_hit: bool = False, admitted: bool = True) -> None:
        if not stop_hit:
            tail = job.pending + job.decoder.decode(b"", final=True)
            job.pending = ""
            if tail:
                job.parts.append(tail)
                self.send(("piece", job.rid, tail))
        if admitted:
            self._release(job)
        end = time.monotonic()
        first = job.first_at
        gen_time = (end - first) if first is not None else None
        n = len(job.tokens)
        result = GenerationResult(
            text="".join(job.parts),
            finish_reason=finish,
            prompt_tokens=len(job.gen.prompt_tokens),
            prompt_tokens_evaluated=job.evaluated_at_first if first is not None else job.evaluated,
            generated_tokens=n,
            ttft_s=(first - job.start) if first is not None else None,
            tokens_per_s=(n / gen_time) if gen_time and n > 1 else None,
            elapsed_s=end - job.start,
            tokens=list(job.tokens),
            stop=job.stopped,
            eog=job.eog,
            draft_tokens=job.spec.drafted if job.spec is not None else 0,
            draft_accepted=job.spec.accepted if job.spec is not None else 0,
            logprobs=list(job.logprobs) if job.gen.options.logprobs is not None else None,
            prompt_logprobs=job.scored,
        )
        self.model.last_prompt_eval = result.prompt_tokens_evaluated
        backend = self.backend
        self.send(
            (
                "end",
                job.rid,
                True,
                (result, backend.total_eval, backend.decode_calls, backend.busy_slots_total),
            )
        )


class _SamplerShim:
    """What ``Llama._init_sampler`` reads of its ``Llama``: the same chain for a slot."""

    def __init__(self, llm: Any, seed: int):
        import numpy as np

        self._input_ids = np.array([], dtype=np.intc)
        self._n_vocab = llm._n_vocab
        self.last_n_tokens_size = llm.last_n_tokens_size
        self._seed = seed
        self._model = llm._model


def _no_context(model: LoadedModel, n_slots: int, type_k: int) -> str:
    """Why a context of ``n_slots`` slots of ``model.n_ctx`` tokens each could not be made, as
    far as one can tell: llama.cpp says only that it failed, and the usual cause is the memory of
    a KV cache that grows with both (``type_k``: its GGML type)."""
    from app.engine.inprocess import GGML_KV_TYPES
    from app.engine.models.estimate import describe_kv_cache

    n_ctx = int(model.n_ctx)
    text = f"llama.cpp could not make a context of {n_slots} slots of {n_ctx:,} tokens each"
    kv_type = next((name for name, t in GGML_KV_TYPES.items() if t == type_k), "f16")
    kv = describe_kv_cache(model.metadata.raw, model.metadata.architecture, n_ctx * n_slots, kv_type)
    if kv is not None:
        text += f" ({kv})"
    return (
        text
        + ": lower the parallel requests (serve --parallel, Server > Parallel requests) or the context length"
    )
