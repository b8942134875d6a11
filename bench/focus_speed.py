"""Reading one layer's attention rows by hook against eager ``output_attentions=True``.

The same Llama-shaped model (random weights, realistic width) and the same input: the hook reads
the query rows of a 32-token instruction at the end of the input from one layer and stops the
forward pass there; eager attention materialises every layer's full attention. Each variant runs
in a fresh process; peak memory is the growth over the call (RSS sampled every millisecond on the
CPU, max allocated on CUDA). Weights and input are identical; the hook variant runs the layers
before the one it reads with PyTorch's fused attention (``sdpa``), as production does, while
``output_attentions=True`` requires eager attention in every layer.

Run: ``python -m bench.focus_speed [--tokens 2048 8192] [--hidden 1024] [--device cuda]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

INSTRUCTION_TOKENS = 32


def _rss_bytes() -> int:
    with Path("/proc/self/statm").open() as statm:
        return int(statm.read().split()[1]) * 4096


class _PeakRss:
    """Samples the resident set while a call runs: the CPU has no allocator peak counter."""

    def __init__(self) -> None:
        self.peak = _rss_bytes()
        self._running = True
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while self._running:
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(0.001)

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._running = False
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())


def run_variant(variant: str, tokens: int, config: dict, device: str) -> dict:
    import torch
    from transformers import LlamaConfig, LlamaModel

    from pipeline.backends.attention import attention_rows_by_layer

    config = dict(config)
    query_rows = config.pop("query_rows", INSTRUCTION_TOKENS)
    all_layers = config.pop("all_layers", False)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model_config = LlamaConfig(
        **config,
        max_position_embeddings=max(tokens, 4096),
        attn_implementation="sdpa" if variant == "hook" else "eager",
    )
    with torch.device(device):
        model = LlamaModel(model_config).to(dtype=dtype).eval()
    ids = torch.randint(0, model_config.vocab_size, (1, tokens), device=device)
    rows = range(tokens - query_rows, tokens)
    last = model_config.num_hidden_layers - 1
    layers = list(range(last + 1)) if all_layers else [last]

    def once() -> None:
        with torch.no_grad():
            if variant == "hook":
                attention_rows_by_layer(model, ids, rows, layers)
            else:
                model(input_ids=ids, output_attentions=True)  # the baseline being measured

    once()  # warm-up: lazy initialisation is not what is measured
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        start = time.perf_counter()
        once()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        peak = torch.cuda.max_memory_allocated() - base
    else:
        base = _rss_bytes()
        with _PeakRss() as sampler:
            start = time.perf_counter()
            once()
            seconds = time.perf_counter() - start
        peak = sampler.peak - base
    return {"seconds": seconds, "peak_bytes": max(peak, 0)}


def llama_shape(args: argparse.Namespace) -> dict:
    """A Llama-shaped config (Llama's MLP ratio) from --hidden, --heads, --kv-heads, --layers."""
    return {
        "vocab_size": 32000,
        "hidden_size": args.hidden,
        "intermediate_size": int(args.hidden * 2.6875),
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.heads,
        "num_key_value_heads": args.kv_heads,
    }


def measure(variant: str, tokens: int, config: dict, device: str) -> dict:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.focus_speed",
            "--child",
            variant,
            str(tokens),
            json.dumps(config),
            device,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, variant, tokens, config, device = sys.argv
        print(json.dumps(run_variant(variant, int(tokens), json.loads(config), device)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[2048, 8192])
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    config = llama_shape(args)
    print(
        f"Attention rows by hook vs eager output_attentions=True ({args.device}; hidden "
        f"{args.hidden}, {args.heads} heads, {args.kv_heads} kv heads, {args.layers} layers; "
        f"{INSTRUCTION_TOKENS} query rows)"
    )
    print(
        f"{'tokens':>7} {'eager s':>9} {'hook s':>9} {'time ratio':>11} "
        f"{'eager MiB':>10} {'hook MiB':>9} {'memory ratio':>13}"
    )
    for tokens in args.tokens:
        eager = measure("eager", tokens, config, args.device)
        hook = measure("hook", tokens, config, args.device)
        print(
            f"{tokens:>7} {eager['seconds']:>9.3f} {hook['seconds']:>9.3f} "
            f"{eager['seconds'] / hook['seconds']:>10.1f}x "
            f"{eager['peak_bytes'] / 2**20:>10.0f} {hook['peak_bytes'] / 2**20:>9.0f} "
            f"{eager['peak_bytes'] / max(hook['peak_bytes'], 1):>12.1f}x"
        )


if __name__ == "__main__":
    main()
