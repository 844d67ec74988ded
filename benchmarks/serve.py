"""`kwrl serve` throughput: tokens/s at batch 1 (greedy) and batch B (sampling), over HTTP.

    .venv/bin/python benchmarks/serve.py [--model smollm2-135m] [--batch 8] [--max-tokens 64]
                                         [--rounds 2] [--threads N]

Starts `kwrl serve MODEL --port 0` as a subprocess (the real CLI), waits for its ready line, warms
up, then times `/v1/completions` with token-id prompts and `return_token_ids` (the TITO path):

- batch 1, greedy: one request at a time, `--rounds` requests;
- batch B, temperature 1.0: B concurrent requests (distinct seeds), `--rounds` times.

Throughput counts the completion tokens actually returned (a sample may stop early at EOS) over
wall time, prompt prefill included. DESIGN §9 measured SmolLM2-135M on an idle 2-core CPU at
~29 tok/s (batch 1 greedy) and ~100 tok/s (batch 8 sampling); a shared machine gets less.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import subprocess
import sys
import threading
import time

import httpx

PROMPT = (
    "<|im_start|>system\nYou are a helpful analyst.<|im_end|>\n<|im_start|>user\n"
    "Summarise the quarterly revenue trends for a mid-sized law firm in three sentences.<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def start_server(model: str, threads: int | None) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "kwrl.cli", "serve", model, "--port", "0"]
    if threads:
        cmd += ["--threads", str(threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or []], daemon=True).start()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            continue
        if line.startswith("kwrl-serve ready "):
            return proc, line.split()[-1]
    proc.kill()
    raise SystemExit("kwrl serve did not get ready")


async def one(http: httpx.AsyncClient, url: str, prompt: list[int], body: dict) -> int:
    r = await http.post(
        f"{url}/completions",
        json={"prompt": prompt, "logprobs": 0, "return_token_ids": True, **body},
    )
    r.raise_for_status()
    return len(r.json()["choices"][0]["token_ids"])


async def run(url: str, batch: int, max_tokens: int, rounds: int) -> None:
    async with httpx.AsyncClient(timeout=1800) as http:
        enc = await http.post(
            f"{url}/completions", json={"prompt": PROMPT, "max_tokens": 1, "return_token_ids": True}
        )
        prompt = enc.json()["choices"][0]["prompt_token_ids"]
        await one(http, url, prompt, {"max_tokens": 4, "temperature": 0})  # warm-up
        print(f"prompt: {len(prompt)} tokens; max_tokens {max_tokens}; rounds {rounds}")

        t0, n = time.perf_counter(), 0
        for _ in range(rounds):
            n += await one(http, url, prompt, {"max_tokens": max_tokens, "temperature": 0})
        dt = time.perf_counter() - t0
        print(f"batch 1  greedy     : {n:5d} tokens in {dt:7.2f} s = {n / dt:7.1f} tok/s")

        t0, n = time.perf_counter(), 0
        for r in range(rounds):
            body = {"max_tokens": max_tokens, "temperature": 1.0}
            counts = await asyncio.gather(
                *(one(http, url, prompt, {**body, "seed": r * batch + i}) for i in range(batch))
            )
            n += sum(counts)
        dt = time.perf_counter() - t0
        print(f"batch {batch:<2d} sampling   : {n:5d} tokens in {dt:7.2f} s = {n / dt:7.1f} tok/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch threads in the server")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"kwrl serve {args.model} on {os.cpu_count()} CPUs (load average {load:.1f})")
    t0 = time.perf_counter()
    proc, url = start_server(args.model, args.threads)
    print(f"ready in {time.perf_counter() - t0:.1f} s at {url}")
    try:
        asyncio.run(run(url, args.batch, args.max_tokens, args.rounds))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
