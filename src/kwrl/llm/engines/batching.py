"""The in-process engine's worker thread: batches, continuous admission, the decode loop.

The worker collects requests for `batch_wait_ms`, left-pads them into one batch, prefills, then
decodes step by step with a KV cache, each row under its own sampling parameters and seed. Rows
that finish are dropped from the cache and answered at once, so a batch costs what its live rows
cost.

Continuous batching (`continuous`, on by default): requests that arrive while a batch decodes join
it after the next decode step, up to `max_batch_size` rows: their prompts are prefilled (with
prefix reuse) and the batch cache is rebuilt, left-padded, around old and new rows. A decode step
on CPU costs about the same for 2 rows as for 8 (it is bound by reading the weights), so an agent
workload, whose next turns arrive one by one while other trials decode, runs fuller batches. A
weight update that waits for the batch (`update_weights`) stops admissions, so the batch drains.
`continuous=False` keeps static batches: a request that arrives mid-batch waits for the next one.

A staged update (`stage_weights`) lands between two decode steps; the live rows are then
re-prefilled under the new weights (their old KV cache is dropped, not reused), so each token's
logprob is the new model's and each output records every token's version.
"""

from __future__ import annotations

import queue
import time
from typing import TYPE_CHECKING, Any

from kwrl.errors import PolicyError
from kwrl.llm.engines.core import GREEDY_T, Request
from kwrl.llm.engines.decode import Decoding
from kwrl.llm.engines.weights import Weights

if TYPE_CHECKING:
    import torch


class Batching(Decoding, Weights):
    """The worker loop over `Decoding` and `Weights` (see the module doc)."""

    def _run(self) -> None:
        import torch

        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            deadline = time.monotonic() + self.batch_wait_s
            while len(batch) < self.max_batch_size:
                try:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            live = [r for r in batch if r.future.set_running_or_notify_cancel()]
            if not live:
                continue
            while self._updates_waiting:  # a weight update waiting for the lock goes first
                time.sleep(0.001)
            self._inflight = list(live)
            try:
                with self._lock, torch.inference_mode():
                    self._generate_batch(live)
            except Exception as e:  # the batch fails as a whole; each caller sees why
                err = e if isinstance(e, PolicyError) else PolicyError(f"engine {self.name}: {e!r}")
                for r in self._inflight:  # rows that joined mid-batch too
                    if not r.future.done():
                        r.future.set_exception(err)
            self._inflight = []
            if self._staged is not None:  # staged while the batch ended: land it now
                with self._lock:
                    self._apply_staged()
            stop = stop or self._stop_seen

    def _generate_batch(self, reqs: list[Request]) -> None:
        for r in reqs:
            self._start(r)
        active = [r for r in reqs if r.finish is None]
        for r in reqs:
            if r.finish is not None:
                self._deliver(r)
        self.stats["batches"] += 1
        if active:
            self._decode(active)

    def _admit(self, n_live: int) -> list[Request]:
        """Queued requests that join the running batch now (none when static, when a weight
        update waits for the batch, or once close() was seen)."""
        if not self.continuous or self._updates_waiting or self._stop_seen:
            return []
        new: list[Request] = []
        while n_live + len(new) < self.max_batch_size:
            try:
                r = self._queue.get_nowait()
            except queue.Empty:
                break
            if r is None:
                self._stop_seen = True
                break
            if not r.future.set_running_or_notify_cancel():
                continue
            self._inflight.append(r)
            self._start(r)
            if r.finish is not None:
                self._deliver(r)
            else:
                new.append(r)
        return new

    def _join(
        self, rows: list[Request], logits_B_V: torch.Tensor, cache: Any, mask: torch.Tensor,
        new: list[Request],
    ) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:  # fmt: skip
        """Prefill `new` and rebuild the batch around the running `rows` and them: (logits_B_V,
        cache, mask_B_W, next_pos_B_1) of `rows + new`, in that order."""
        import torch

        from kwrl.llm.kv_cache import assemble, row_kv

        lens = mask.sum(-1).tolist()  # left padding: each row's valid positions are its last
        kv_rows = [row_kv(cache, i, n, copy=False) for i, n in enumerate(lens)]
        new_logits, new_kv = self._row_states(new)
        cache, mask, next_pos = assemble(
            self.model.config, kv_rows + new_kv, self.device, growing=self._growing
        )
        self.stats["joins"] += len(new)
        return torch.cat([logits_B_V, torch.stack(new_logits)]), cache, mask, next_pos

    def _decode(self, rows: list[Request]) -> None:
        import torch

        dev = self.device

        def temperatures(rows: list[Request]) -> torch.Tensor:
            return torch.tensor(
                [r.params.temperature if r.params.temperature > GREEDY_T else 1.0 for r in rows],
                device=dev,
            )

        temps = temperatures(rows)
        seed = int(torch.randint(0, 1 << 62, (1,), generator=self._seed_rng))
        batch_gen = torch.Generator(device=dev).manual_seed(seed)
        logits_B_V, cache, mask, next_pos = self._prefill(rows)
        while True:
            self.stats["largest_batch"] = max(self.stats["largest_batch"], len(rows))
            logp = torch.log_softmax(logits_B_V.float() / temps[:, None], dim=-1)
            picked, picked_lp = self._sample_rows(rows, logp, batch_gen)
            for r, tok, lp in zip(rows, picked, picked_lp, strict=True):
                r.token_ids.append(tok)
                r.logprobs.append(lp)
                r.versions.append(self.weight_version)
                self._check_finish(r)
            keep = [i for i, r in enumerate(rows) if r.finish is None]
            if len(keep) < len(rows):
                done = [i for i, r in enumerate(rows) if r.finish is not None]
                self._store_finished(rows, done, cache, mask)  # before the caller's next turn
                for i in done:
                    self._deliver(rows[i])
            if not keep:
                return
            tok_col = torch.tensor([[picked[i]] for i in keep], device=dev)
            if len(keep) < len(rows):
                sel = torch.tensor(keep, device=dev)
                cache.batch_select_indices(sel)
                mask, next_pos, temps = mask[sel], next_pos[sel], temps[sel]
                rows = [rows[i] for i in keep]
            if self._staged is not None and self._apply_staged():
                # New weights: the old KV cache is theirs no more; recompute it over the prefix.
                self.stats["mid_batch_updates"] += 1
                logits_B_V, cache, mask, next_pos = self._prefill(rows)
                continue
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
            out = self.model(
                input_ids=tok_col,
                attention_mask=mask,
                position_ids=next_pos,
                past_key_values=cache,
                use_cache=True,
            )
            self.stats["decode_steps"] += 1
            self.stats["decode_rows"] += len(rows)
            logits_B_V = out.logits[:, -1, :]
            next_pos = next_pos + 1
            new = self._admit(len(rows))
            if new:  # the cache holds every row's tokens so far: a clean point to join
                logits_B_V, cache, mask, next_pos = self._join(rows, logits_B_V, cache, mask, new)
                rows = rows + new
                temps = temperatures(rows)
