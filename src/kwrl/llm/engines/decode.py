"""One row's way through the in-process engine: prefill (with prefix reuse), sample, finish.

Prefix reuse: the keys/values of prefilled prompts and of finished requests stay in an LRU
bounded by bytes (`prefix_cache_mb`, `kwrl.llm.kv_cache.PrefixStore`). A prompt that shares a
stored sequence's first tokens (an agent's next turn: previous prompt + completion + tool result;
another trial's first turn: the same system prompt and tools) forwards only its other tokens on
top of a copy of that KV; rows without a hit are prefilled together, then all rows are
left-padded into one batch cache. Every weight change empties the store first (KV of old weights
is never reused); models with sliding-window layers never use it. Reused KV was computed in
another batch, so logprobs can differ from a cold prefill by float rounding (~1e-6 in fp32).

On CPU, decode steps read the KV cache in place: layers append into buffers of doubling capacity
(`kwrl.llm.kv_cache.growing_layer_cls`; transformers' `DynamicLayer` concatenates the whole cache
every step) and grouped-query attention reads the shared key/value heads without repeating them
(`use_gqa_sdpa`; transformers copies the cache per layer and step whenever a mask is present).

Sampling: `logprobs[i]` is the log-softmax of the temperature-scaled logits (raw logits for
greedy); top_p truncation is applied when sampling but not folded into the logprob, as a trainer
recomputes it. A request with a seed samples from its own generator, so it is reproducible for
the same weights and batch composition (padding can move logits by float rounding); the others
draw together on the device from the batch's generator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kwrl.llm.base import FinishReason
from kwrl.llm.engines.base import EngineOutput
from kwrl.llm.engines.core import GREEDY_T, EngineCore, Request

if TYPE_CHECKING:
    import torch

    from kwrl.llm.kv_cache import KV

MIN_REUSE = 32
"""Fewest stored tokens worth a row's own suffix forward instead of joining the batched prefill."""


class Decoding(EngineCore):
    """Prefill, sampling and finishing of the engine's rows (see the module doc)."""

    def _start(self, r: Request) -> None:
        """Set a request's token limit and generator (finished at once when there is no room)."""
        import torch

        room = self.max_context - len(r.prompt_ids)
        r.limit = min(r.params.max_tokens, max(room, 0))
        r.limit_is_context = room < r.params.max_tokens
        # A seeded request samples alone from its own generator (reproducible whatever the
        # batch); the others sample together on the device from the batch's generator.
        r.generator = (
            torch.Generator().manual_seed(r.params.seed) if r.params.seed is not None else None
        )
        if r.limit <= 0:
            r.finish = FinishReason.CONTEXT if r.limit_is_context else FinishReason.LENGTH

    def _deliver(self, r: Request) -> None:
        """Answer a finished request (its caller goes on while the batch decodes the others)."""
        self.stats["requests"] += 1
        self.stats["completion_tokens"] += len(r.token_ids)
        r.future.set_result(
            EngineOutput(
                token_ids=r.token_ids,
                logprobs=r.logprobs,
                text=r.text if r.text is not None else self._decode_text(r.token_ids),
                finish_reason=r.finish or FinishReason.LENGTH,
                prompt_tokens=len(r.prompt_ids),
                weight_version=r.versions[0] if r.versions else self.weight_version,
                token_versions=r.versions,
            )
        )

    def _prefill(self, rows: list[Request]) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        """Forward every row's prompt + tokens so far into a KV cache: (logits_B_V, cache,
        mask_B_W, next_pos_B_1). Rows that start with a stored prefix forward only the rest."""
        import torch

        from kwrl.llm.kv_cache import assemble, row_kv

        seqs = [r.prompt_ids + r.token_ids for r in rows]
        hits = self._prefix_hits(seqs)
        if all(h is None for h in hits):
            out = self._forward_padded(seqs)
            self._store_prompts(
                seqs, [row_kv(out[1], i, len(s), copy=False) for i, s in enumerate(seqs)]
            )
            return out
        logits, kv_rows = self._row_states(rows, hits)
        cache, mask, next_pos = assemble(
            self.model.config, kv_rows, self.device, growing=self._growing
        )
        return torch.stack(logits), cache, mask, next_pos

    def _row_states(
        self, rows: list[Request], hits: list[tuple[Any, int] | None] | None = None
    ) -> tuple[list[torch.Tensor], list[KV]]:
        """Forward every row's prompt + tokens so far: per row, the next token's logits and the
        KV of those positions. Rows without a stored prefix (`hits`, looked up when None) are
        prefilled together, padded."""
        from kwrl.llm.kv_cache import row_kv

        seqs = [r.prompt_ids + r.token_ids for r in rows]
        if hits is None:
            hits = self._prefix_hits(seqs)
        miss = [i for i, h in enumerate(hits) if h is None]
        kv_rows: list[KV] = [[] for _ in rows]
        logits: list[torch.Tensor] = [None] * len(rows)  # type: ignore[list-item]
        if miss:
            lg, cache, _, _ = self._forward_padded([seqs[i] for i in miss])
            for j, i in enumerate(miss):
                kv_rows[i] = row_kv(cache, j, len(seqs[i]), copy=False)
                logits[i] = lg[j]
        for i, hit in enumerate(hits):
            if hit is not None:
                logits[i], kv_rows[i] = self._forward_suffix(seqs[i], *hit)
        self._store_prompts(seqs, kv_rows)
        return logits, kv_rows

    def _store_prompts(self, seqs: list[list[int]], kv_rows: list[KV]) -> None:
        """Keep copies of freshly prefilled rows' KV: a request that arrives before these finish
        (another trial's first turn: the same system prompt and tools) reuses it. A row's entry
        gives way to its full sequence when it finishes (`_store_finished`)."""
        if not self._prefix.max_bytes or self._prefix_version != self.weight_version:
            return
        for seq, kv in zip(seqs, kv_rows, strict=True):
            if len(seq) > MIN_REUSE:
                self._prefix.put(seq, [(k.clone(), v.clone()) for k, v in kv])

    def _prefix_hits(self, seqs: list[list[int]]) -> list[tuple[Any, int] | None]:
        """Per row, the stored KV to reuse and how many tokens of it (None: prefill cold)."""
        if self._prefix_version != self.weight_version:  # belt and braces: clear() ran already
            self._prefix.clear()
            self._prefix_version = self.weight_version
        if not self._prefix.max_bytes:
            return [None] * len(seqs)
        hits: list[tuple[Any, int] | None] = []
        for seq in seqs:
            hit = self._prefix.lookup(seq, MIN_REUSE) if len(seq) > MIN_REUSE else None
            # Forward at least the last token: its logits sample the next one.
            hits.append(None if hit is None else (hit[0], min(hit[1], len(seq) - 1)))
        return hits

    def _forward_padded(
        self, seqs: list[list[int]]
    ) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        """Left-pad `seqs` into one batch and forward it into a fresh KV cache."""
        import torch

        from kwrl.llm.kv_cache import new_cache

        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, seq in enumerate(seqs):
            ids[i, width - len(seq) :] = torch.tensor(seq)
            mask[i, width - len(seq) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = new_cache(self.model.config, growing=self._growing)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=pos,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.stats["prefill_tokens"] += sum(len(s) for s in seqs)
        return out.logits[:, -1, :], cache, mask, pos[:, -1:] + 1

    def _forward_suffix(self, seq: list[int], kv: Any, n: int) -> tuple[torch.Tensor, Any]:
        """Forward `seq[n:]` on top of the stored KV of `seq[:n]`: (logits_V, the row's KV)."""
        import torch

        from kwrl.llm.kv_cache import cache_from

        prefix = [(k[None, :, :n], v[None, :, :n]) for k, v in kv]
        cache = cache_from(self.model.config, prefix, growing=self._growing)
        ids = torch.tensor([seq[n:]], device=self.device)
        out = self.model(
            input_ids=ids,
            attention_mask=torch.ones((1, len(seq)), dtype=torch.long, device=self.device),
            position_ids=torch.arange(n, len(seq), device=self.device)[None],
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.stats["prefill_tokens"] += len(seq) - n
        self.stats["prefix_hits"] += 1
        self.stats["prefix_reused_tokens"] += n
        return out.logits[0, -1, :], [(layer.keys[0], layer.values[0]) for layer in cache.layers]

    def _store_finished(self, rows: list[Request], idx: list[int], cache: Any, mask: Any) -> None:
        """Keep the KV of rows `idx` (prompt + tokens but the last, never forwarded) for reuse."""
        from kwrl.llm.kv_cache import row_kv

        if not self._prefix.max_bytes or self._prefix_version != self.weight_version:
            return
        lens = mask[idx].sum(-1).tolist()
        for i, n in zip(idx, lens, strict=True):
            r = rows[i]
            ids = r.prompt_ids + r.token_ids[:-1]
            if n == len(ids):
                self._prefix.put(ids, row_kv(cache, i, n))

    def _sample_rows(
        self, rows: list[Request], logp_B_V: torch.Tensor, batch_gen: torch.Generator
    ) -> tuple[list[int], list[float]]:
        """One token per row and its logprob, with one device->host copy for the whole batch.

        Greedy rows take the argmax; unseeded sampling rows draw together on the device (top_p
        per row) from `batch_gen`; seeded rows draw one by one from their own generators.
        """
        import torch

        dev = logp_B_V.device
        picked = torch.argmax(logp_B_V, dim=-1)
        batched = [
            i for i, r in enumerate(rows) if r.params.temperature > GREEDY_T and r.generator is None
        ]
        if batched:
            sel = torch.tensor(batched, device=dev)
            probs = logp_B_V.index_select(0, sel).exp()
            top_p = torch.tensor([rows[i].params.top_p for i in batched], device=dev)
            if bool((top_p < 1.0).any()):
                sorted_p, order = torch.sort(probs, dim=-1, descending=True)
                drop = sorted_p.cumsum(-1) - sorted_p > top_p[:, None]
                probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p.masked_fill(drop, 0))
            drawn = torch.multinomial(probs, 1, generator=batch_gen).squeeze(-1)
            picked = picked.index_copy(0, sel, drawn)
        for i, r in enumerate(rows):
            if r.params.temperature > GREEDY_T and r.generator is not None:
                picked[i] = self._sample(r, logp_B_V[i])
        lps = logp_B_V.gather(-1, picked[:, None]).squeeze(-1)
        return [int(t) for t in picked.tolist()], [float(x) for x in lps.tolist()]

    def _sample(self, r: Request, logp_V: torch.Tensor) -> int:
        import torch

        if r.params.temperature <= GREEDY_T:
            return int(torch.argmax(logp_V))
        probs = logp_V.exp().cpu()
        if r.params.top_p < 1.0:
            sorted_p, order = torch.sort(probs, descending=True)
            drop = sorted_p.cumsum(0) - sorted_p > r.params.top_p
            sorted_p[drop] = 0.0
            probs = torch.zeros_like(probs).scatter_(0, order, sorted_p)
        return int(torch.multinomial(probs, 1, generator=r.generator))

    def _check_finish(self, r: Request) -> None:
        if r.abandoned:
            r.finish = FinishReason.LENGTH
        elif r.token_ids[-1] in self.eos_ids:
            r.finish = FinishReason.STOP
        elif r.params.stop:
            text = self._decode_text(r.token_ids)
            hits = [i for s in r.params.stop if (i := text.find(s)) >= 0]
            if hits:
                r.finish = FinishReason.STOP
                r.text = text[: min(hits)]
                return
        if r.finish is None and len(r.token_ids) >= r.limit:
            r.finish = FinishReason.CONTEXT if r.limit_is_context else FinishReason.LENGTH

    def _decode_text(self, token_ids: list[int]) -> str:
        return str(self.tokenizer.decode(token_ids, skip_special_tokens=True))
