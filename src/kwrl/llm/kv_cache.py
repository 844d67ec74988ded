"""KV-cache pieces of the in-process engine: a prefix store reused across turns, batch assembly,
and a decode path that reads the cache in place.

`PrefixStore` keeps the keys/values of finished requests (prompt + completion minus its last,
never-forwarded token), one tensor pair per layer shaped `[kv_heads, T, head_dim]`, in an LRU
bounded by bytes. An agent's next turn sends the previous prompt + the sampled tokens + a tool
result, so its prompt usually starts with a stored sequence: `lookup` finds the entry with the
longest common token prefix and the engine forwards only the rest. Keys are cached after RoPE,
so a prefix's keys are valid wherever that prefix sits at positions 0..T-1, whatever followed it.

Contract: entries belong to one set of weights. The engine calls `clear()` before any weight
change lands; nothing here knows about versions. Reuse is only sound for plain full-attention
layers (`reusable_layers`): a sliding-window layer keeps only a window, so its cache is not
the prefix's full KV.

Decode on CPU reads the cache in place: `growing_layer_cls()` appends into buffers of doubling
capacity instead of concatenating the whole cache every step, and `use_gqa_sdpa` lets torch's SDPA
read grouped key/value heads as they are instead of transformers repeating them per query head.

`assemble` left-pads rows of different lengths (each a list of per-layer `[H, T_i, D]` pairs)
into one `DynamicCache` `[B, H, W, D]` with the attention mask (0 on the pads) and each row's next
position, which is what the engine's decode loop continues from.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

KV = list[tuple["torch.Tensor", "torch.Tensor"]]
"""One row's cache: per layer (keys, values), each `[kv_heads, T, head_dim]`."""


def common_prefix_len(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two id lists (binary search on C-speed slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # invariant: a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def kv_bytes(kv: KV) -> int:
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)


class PrefixStore:
    """LRU of token sequences -> their KV, bounded by `max_bytes` (0 stores nothing)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple[int, ...], tuple[list[int], KV, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def lookup(self, ids: list[int], min_tokens: int) -> tuple[KV, int] | None:
        """The entry sharing the longest prefix with `ids` and that length (at least `min_tokens`)."""
        best: tuple[tuple[int, ...], int] | None = None
        for key, (seq, _, _) in self._entries.items():
            if seq[0] != ids[0]:
                continue
            n = common_prefix_len(seq, ids)
            if n >= min_tokens and (best is None or n > best[1]):
                best = (key, n)
        if best is None:
            return None
        self._entries.move_to_end(best[0])
        return self._entries[best[0]][1], best[1]

    def put(self, ids: list[int], kv: KV) -> None:
        """Store `kv` (the caller's own tensors, not views into a batch) for the sequence `ids`.

        Entries that are prefixes of `ids` go: the new one answers every lookup they would.
        """
        size = kv_bytes(kv)
        if size > self.max_bytes or not ids:
            return
        key = tuple(ids)
        for k in [k for k, (seq, _, _) in self._entries.items() if len(seq) <= len(ids)]:
            seq = self._entries[k][0]
            if ids[: len(seq)] == seq:
                self._drop(k)
        self._entries[key] = (list(ids), kv, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[int, ...]) -> None:
        self.bytes -= self._entries.pop(key)[2]


def reusable_layers(config: Any) -> bool:
    """True when every layer of `DynamicCache(config=config)` is a plain full-attention layer."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    layers = DynamicCache(config=config).layers
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def row_kv(cache: Any, row: int, n: int, *, copy: bool = True) -> KV:
    """Row `row`'s last `n` cached positions (left padding: the valid ones) per layer.

    `copy=False` gives views into the batch tensors (they keep the whole batch alive).
    """
    out: KV = []
    for layer in cache.layers:
        k, v = layer.keys[row, :, -n:], layer.values[row, :, -n:]
        out.append((k.clone(), v.clone()) if copy else (k, v))
    return out


def cache_from(config: Any, kv_B: list[tuple[torch.Tensor, torch.Tensor]], *, growing: bool) -> Any:
    """A cache holding per-layer `[B, H, T, D]` tensors (copied into fresh buffers when `growing`,
    else adopted as they are: a `DynamicLayer` never writes into its tensors)."""
    cache = new_cache(config, growing=growing)
    for layer, (k, v) in zip(cache.layers, kv_B, strict=True):
        layer.lazy_initialization(k, v)
        if growing:
            layer.update(k, v)
        else:
            layer.keys, layer.values = k, v
    return cache


def assemble(
    config: Any, rows: list[KV], device: torch.device, *, growing: bool
) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """Left-pad rows into one cache; returns (cache, mask_B_W, next_pos_B_1).

    Pads hold zeros (masked, but finite: a NaN there would survive the mask).
    """
    import torch

    lens = [row[0][0].shape[1] for row in rows]
    width = max(lens)
    cap = 2 * width if growing else width
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, n in enumerate(lens):
        mask[i, width - n :] = 1
    cache = new_cache(config, growing=growing)
    for li, layer in enumerate(cache.layers):
        bufs = []
        for t in (rows[0][li][0], rows[0][li][1]):
            buf = t.new_empty((len(rows), t.shape[0], cap, t.shape[2]))
            for i, (row, n) in enumerate(zip(rows, lens, strict=True)):
                buf[i, :, : width - n] = 0
                buf[i, :, width - n : width] = row[li][len(bufs)]
            bufs.append(buf)
        layer.lazy_initialization(bufs[0], bufs[1])
        if growing:
            layer.adopt(bufs[0], bufs[1], width)
        else:
            layer.keys, layer.values = bufs
    next_pos = torch.tensor([[n] for n in lens], dtype=torch.long)
    return cache, mask.to(device), next_pos.to(device)


def _growing_layer_cls() -> type:
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        """A full-attention layer cache that appends in place into buffers of doubling capacity.

        `DynamicLayer` concatenates the whole cache on every decode step; this one copies only
        when the buffer is full, so a step costs one token's write. `keys` / `values` are views
        `[B, H, n, D]` of the buffers (what the attention reads).
        """

        def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
            super().lazy_initialization(key_states, value_states)
            self.n = 0
            self.kbuf = key_states.new_empty((*key_states.shape[:2], 0, key_states.shape[3]))
            self.vbuf = value_states.new_empty((*value_states.shape[:2], 0, value_states.shape[3]))

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n, q = self.n, key_states.shape[-2]
            if n + q > self.kbuf.shape[-2]:
                self.reserve(2 * (n + q))
            self.kbuf[:, :, n : n + q] = key_states
            self.vbuf[:, :, n : n + q] = value_states
            return self._set_len(n + q)

        def reserve(self, capacity: int) -> None:
            """Grow the buffers to hold `capacity` positions (never shrinks)."""
            if capacity <= self.kbuf.shape[-2]:
                return
            k, v = self.kbuf, self.vbuf
            self.kbuf = k.new_empty((*k.shape[:2], capacity, k.shape[3]))
            self.vbuf = v.new_empty((*v.shape[:2], capacity, v.shape[3]))
            self.kbuf[:, :, : self.n] = k[:, :, : self.n]
            self.vbuf[:, :, : self.n] = v[:, :, : self.n]
            self._set_len(self.n)

        def adopt(self, kbuf: torch.Tensor, vbuf: torch.Tensor, n: int) -> None:
            """Take `kbuf` / `vbuf` as the buffers, their first `n` positions filled."""
            self.kbuf, self.vbuf = kbuf, vbuf
            self._set_len(n)

        def _set_len(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
            self.n = n
            self.keys, self.values = self.kbuf[:, :, :n], self.vbuf[:, :, :n]
            return self.keys, self.values

        def batch_select_indices(self, indices: torch.Tensor) -> None:
            if self.is_initialized:
                self.kbuf, self.vbuf = self.kbuf[indices], self.vbuf[indices]
                self._set_len(self.n)

        def crop(self, max_length: int) -> None:
            if max_length < 0:
                max_length = self.n + max_length
            self._set_len(min(self.n, max_length))

    return GrowingLayer


_GROWING: list[type] = []


def growing_layer_cls() -> type:
    """The `GrowingLayer` class (built on first use: transformers is imported lazily)."""
    if not _GROWING:
        _GROWING.append(_growing_layer_cls())
    return _GROWING[0]


def new_cache(config: Any, *, growing: bool) -> Any:
    """An empty cache for `config`: in-place growing layers when `growing` (full attention only)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    if growing:
        cls = growing_layer_cls()
        cache.layers = [cls() for _ in cache.layers]
    return cache


GQA_SDPA = "kwrl_sdpa_gqa"


def _sdpa_gqa(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' SDPA attention, but grouped-query heads read the KV cache as it is.

    transformers repeats every key/value head for each of its query heads (a copy of the whole
    cache per layer and step) whenever there is a mask, which left-padded batches always have;
    torch's SDPA takes `enable_gqa` with a mask on CPU, with the same result.
    """
    from torch.nn.functional import scaled_dot_product_attention

    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=bool(query.shape[2] > 1 and attention_mask is None and causal),
        enable_gqa=key.shape[1] != query.shape[1],
    )
    return out.transpose(1, 2).contiguous(), None


def use_gqa_sdpa(model: Any) -> bool:
    """Switch a CPU model on transformers' SDPA to `_sdpa_gqa`; False when left as it was."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa":
        return False
    if (
        not hasattr(model, "set_attn_implementation")
        or next(model.parameters()).device.type != "cpu"
    ):
        return False
    AttentionInterface.register(GQA_SDPA, _sdpa_gqa)
    AttentionMaskInterface.register(GQA_SDPA, sdpa_mask)
    model.set_attn_implementation(GQA_SDPA)
    return model.config._attn_implementation == GQA_SDPA
