"""Record PyTorch CUDA memory snapshots of a few real training steps, as test fixtures.

Runs on a machine with an NVIDIA GPU and PyTorch (not part of `make test`). For each model it
records the caching allocator's history from before the model is built (so every block's
allocation is in the trace), runs a few training steps on random data, and writes:

  OUT/NAME.pickle      the snapshot (`torch.cuda.memory._snapshot()`), the format PyTorch's
                       memory viewer reads; Python frames trimmed to the top few per event so
                       that the fixture stays a few hundred KB
  OUT/NAME.stats.json  what the caching allocator itself reports: peak allocated and peak
                       reserved bytes, the GPU, PyTorch's version, the model and the steps

usage: python3 record_torch_snapshots.py OUT_DIR [--steps N] [--models cnn,transformer,resnet18,gpt]
"""

import argparse
import json
import os
import pickle

import torch
import torch.nn as nn

KEEP_FRAMES = 3


def small_cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10),
    )
    def batch(device):
        return (torch.randn(64, 3, 32, 32, device=device),
                torch.randint(0, 10, (64,), device=device))
    return model, batch, nn.CrossEntropyLoss(), "4-layer CNN, CIFAR-sized random images, batch 64, Adam"


class TinyTransformer(nn.Module):
    def __init__(self, vocab=1000, d=256, heads=4, layers=4, seq=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        return self.head(self.encoder(x))


def small_transformer():
    model = TinyTransformer()
    ce = nn.CrossEntropyLoss()
    def batch(device):
        tokens = torch.randint(0, 1000, (16, 128), device=device)
        return tokens, torch.randint(0, 1000, (16, 128), device=device)
    def loss(out, target):
        return ce(out.reshape(-1, out.shape[-1]), target.reshape(-1))
    return model, batch, loss, "4-layer transformer encoder (d=256, 4 heads, seq 128), batch 16, AdamW"


def resnet18():
    import torchvision

    model = torchvision.models.resnet18(weights=None, num_classes=100)
    def batch(device):
        return (torch.randn(32, 3, 224, 224, device=device),
                torch.randint(0, 100, (32,), device=device))
    return model, batch, nn.CrossEntropyLoss(), "torchvision ResNet-18 (random weights), 224x224 random images, batch 32, SGD"


class TinyGPT(nn.Module):
    """A decoder-only language model: causal self-attention blocks, as GPT-2 small but narrower."""

    def __init__(self, vocab=8000, d=512, heads=8, layers=6, seq=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, batch_first=True,
                                           norm_first=True, activation="gelu")
        # Nested tensors are off with norm_first anyway; saying so keeps PyTorch quiet.
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, tokens):
        n = tokens.shape[1]
        x = self.embed(tokens) + self.pos[:n]
        x = self.blocks(x, mask=self.mask[:n, :n], is_causal=True)
        return self.head(self.norm(x))


def small_gpt():
    model = TinyGPT()
    ce = nn.CrossEntropyLoss()
    def batch(device):
        tokens = torch.randint(0, 8000, (8, 257), device=device)
        return tokens[:, :-1], tokens[:, 1:]
    def loss(out, target):
        return ce(out.reshape(-1, out.shape[-1]), target.reshape(-1))
    return model, batch, loss, "6-layer GPT-style decoder (d=512, 8 heads, seq 256, vocab 8000), batch 8, AdamW"


MODELS = {
    "cnn": (small_cnn, torch.optim.Adam),
    "transformer": (small_transformer, torch.optim.AdamW),
    "resnet18": (resnet18, torch.optim.SGD),
    "gpt": (small_gpt, torch.optim.AdamW),
}


def trim_frames(snapshot):
    for trace in snapshot.get("device_traces", []):
        for event in trace:
            if "frames" in event:
                event["frames"] = event["frames"][:KEEP_FRAMES]
    for segment in snapshot.get("segments", []):
        for block in segment.get("blocks", []):
            if "frames" in block:
                block["frames"] = block["frames"][:KEEP_FRAMES]
    return snapshot


def record(name, steps, out_dir):
    factory, optimizer = MODELS[name]
    device = torch.device("cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
    model, batch, loss_fn, what = factory()
    model = model.to(device)
    opt = optimizer(model.parameters(), lr=1e-3)
    for _ in range(steps):
        x, y = batch(device)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    snapshot = trim_frames(torch.cuda.memory._snapshot())
    torch.cuda.memory._record_memory_history(enabled=None)
    stats = {
        "model": name,
        "what": what,
        "steps": steps,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
        "events": sum(len(t) for t in snapshot["device_traces"]),
    }
    with open(os.path.join(out_dir, name + ".pickle"), "wb") as f:
        pickle.dump(snapshot, f)
    with open(os.path.join(out_dir, name + ".stats.json"), "w") as f:
        json.dump(stats, f, indent=2)
        f.write("\n")
    print(json.dumps(stats))
    del model, opt
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--models", default="cnn,transformer", help="comma-separated: " + ",".join(MODELS))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.models.split(","):
        record(name, args.steps, args.out_dir)


if __name__ == "__main__":
    main()
