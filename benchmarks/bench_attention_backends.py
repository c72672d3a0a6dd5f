"""Training speed per attention kernel and precision, over batches of many lengths.

    python -m benchmarks.bench_attention_backends           # a GPU: a MiniLM-shaped BERT
    python -m benchmarks.bench_attention_backends --tiny    # anywhere: a tiny BERT, three steps

Why bf16 fine-tuning ran slower than fp32 on an H200 (`benchmarks.gpu_check`): a BERT of MiniLM's
shape with random weights trains on batches of 32 whose lengths are drawn from RTE's range, as
batches padded to their longest are; each configuration makes two passes over the same batches, so
the first meets every length for the first time and the second meets them again. Each
configuration runs in a fresh process (no kernel meets a length another configuration warmed;
forked from a server that imported torch once), and
its row names the attention operators its last step ran (PyTorch's pick shows as
``aten::_scaled_dot_product_cudnn_attention``, ``..._flash_attention``, ``..._efficient_attention``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import time
from contextlib import nullcontext

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile
from transformers import BertConfig, BertForSequenceClassification

from benchmarks.common import TINY_BERT_SHAPE, synchronise
from harness.model.finetune import TRAINING_ATTENTION

MINILM_SHAPE = {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536}
BATCH = 32
SHORTEST, LONGEST = 40, 128  # RTE's pairs, tokenised and cut at 128
RAGGED = 8  # a batch grouped by length: rows up to this many tokens shorter than its longest
# What the fork server imports: this module's heavy imports (the module itself runs again in each
# worker, as multiprocessing runs a main module, in a fraction of a second once these are loaded).
PRELOADED = ["benchmarks.common", "torch.profiler"]  # common imports torch, transformers and the harness
NOT_CUDNN = [backend.name for backend in TRAINING_ATTENTION]  # names: a fresh process is sent them


def batches(steps: int, multiple: int, device: torch.device) -> list[tuple[torch.Tensor, ...]]:
    """``steps`` batches of input ids, attention mask and labels, padded to a multiple of ``multiple``."""
    lengths, rows = random.Random(0), random.Random(1)
    generator = torch.Generator().manual_seed(0)
    made = []
    for _ in range(steps):
        longest = lengths.randint(SHORTEST, LONGEST)
        padded = -(-longest // multiple) * multiple
        ids = torch.randint(1000, 30000, (BATCH, padded), generator=generator)
        mask = torch.zeros(BATCH, padded, dtype=torch.long)
        for row in range(BATCH):
            mask[row, : longest - rows.randint(0, RAGGED)] = 1
        labels = torch.randint(0, 2, (BATCH,), generator=generator)
        made.append((ids.to(device), mask.to(device), labels.to(device)))
    return made


def passes(
    shape: dict[str, int], steps: int, multiple: int, precision: str, attention: str, allowed: list[str] | None
) -> tuple[float, float, list[str]]:
    """Training examples per second of two passes over the batches, and the attention operators of
    one more step; ``allowed`` names the `SDPBackend` kernels SDPA may pick (None: PyTorch's choice)."""
    backends = [getattr(SDPBackend, name) for name in allowed] if allowed is not None else None
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = batches(steps, multiple, device)
    torch.manual_seed(0)
    config = BertConfig(**shape)
    config._attn_implementation = attention
    model = BertForSequenceClassification(config).to(device).train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=5e-5)

    def step(ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor) -> None:
        with (
            sdpa_kernel(backends) if backends else nullcontext(),
            torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"),
        ):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)

    rates = []
    for _ in range(2):
        synchronise()
        start = time.perf_counter()
        for batch in data:
            step(*batch)
        synchronise()
        rates.append(BATCH * len(data) / (time.perf_counter() - start))
    with profile(activities=[ProfilerActivity.CPU]) as profiled:
        step(*data[-1])
    operators = sorted({event.key for event in profiled.key_averages() if is_attention_operator(event.key)})
    return rates[0], rates[1], operators


def is_attention_operator(name: str) -> bool:
    """Whether ``name`` is one of the attention kernels' operators (forward or backward)."""
    return name.startswith("aten::") and "attention" in name and "backward" not in name


def fresh_processes() -> multiprocessing.context.BaseContext:
    """Processes that have run no kernel: forked from a server that imported torch and transformers
    once (and initialised no GPU), so a configuration's process starts in a fraction of a second
    instead of importing them again; spawned where there is no fork server."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    server = multiprocessing.get_context("forkserver")
    server.set_forkserver_preload(PRELOADED)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a tiny BERT and three steps (its test, a CPU)")
    parser.add_argument("--steps", type=int, default=60, help="batches a pass, each of its own length")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    shape, steps = (TINY_BERT_SHAPE, 3) if args.tiny else (MINILM_SHAPE, args.steps)
    print(f"{torch.__version__}, {torch.cuda.get_device_name(0) if device.type == 'cuda' else 'CPU'}")
    rows = [
        ("fp32, SDPA (PyTorch's choice of kernel)", "fp32", "sdpa", None, 1),
        ("bf16, SDPA (PyTorch's choice of kernel)", "bf16", "sdpa", None, 1),
        ("bf16, SDPA without cuDNN (the harness's training)", "bf16", "sdpa", NOT_CUDNN, 1),
        ("bf16, SDPA, lengths padded to a multiple of 8", "bf16", "sdpa", None, 8),
        ("bf16, transformers' eager attention", "bf16", "eager", None, 1),
        ("fp32, transformers' eager attention", "fp32", "eager", None, 1),
    ]
    if device.type == "cuda":
        rows.append(("bf16, SDPA, cuDNN alone", "bf16", "sdpa", ["CUDNN_ATTENTION"], 1))
    rows.append(("fp32, SDPA, again (the spread between processes)", "fp32", "sdpa", None, 1))
    fresh = fresh_processes()
    for name, precision, attention, backends, multiple in rows:
        with fresh.Pool(1) as pool:
            first, second, operators = pool.apply(passes, (shape, steps, multiple, precision, attention, backends))
        shown = ", ".join(operator.removeprefix("aten::") for operator in operators) or "none"
        print(f"{name:52s} first pass {first:8.1f} ex/s, second {second:8.1f} ex/s; {shown}", flush=True)


if __name__ == "__main__":
    main()
