"""The Qwen2 shapes of bench/model-bench.ts in PyTorch (eager): forward+backward of the same loss on the same
tokens, and greedy batched decode with a KV cache; tokens per second, median of the timed steps.

    python3 torch_models.py '{"shape": {...}, "batch": 8, "seq": 128, "steps": 5,
                              "decodeBatch": 8, "promptLength": 32, "newTokens": 32,
                              "device": "cpu" | "cuda", "threads": 1, "dtype": "f32" | "bf16"}'

Prints one JSON line. "threads" sets torch's CPU threads (the caller tries 1 and all cores: two OpenMP
threads on two shared cores can collapse). "bf16" trains under torch.autocast (weights stay f32) and decodes
both under autocast and on a bf16 copy of the weights, reporting the faster ("decodeMode").
Attention is torch's scaled_dot_product_attention (causal), as an eager user would write it."""
import contextlib
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def sdpa(q, k, v, causal):
    """torch's fused attention where it exists (2.0+); the same math written out on older releases."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        t, s = scores.shape[-2], scores.shape[-1]
        scores = scores + torch.full((t, s), float("-inf"), device=q.device, dtype=scores.dtype).triu(1 + s - t)
    return scores.softmax(-1) @ v


def build(c, device):
    d, heads, kv, inter, vocab = c["hiddenSize"], c["numAttentionHeads"], c["numKeyValueHeads"], c["intermediateSize"], c["vocabSize"]
    hd = d // heads
    g = torch.Generator().manual_seed(0)

    def p(*s):
        return (torch.randn(*s, generator=g) * 0.02).to(device).requires_grad_()

    def ones(n):
        return torch.ones(n, device=device, requires_grad=True)

    layers = [dict(n1=ones(d), q=p(d, d), qb=p(d), k=p(kv * hd, d), kb=p(kv * hd), v=p(kv * hd, d), vb=p(kv * hd),
                   o=p(d, d), n2=ones(d), gate=p(inter, d), up=p(inter, d), down=p(d, inter)) for _ in range(c["numHiddenLayers"])]
    inv = 1.0 / (c["ropeTheta"] ** (torch.arange(0, hd, 2, device=device).float() / hd))
    return dict(embed=p(vocab, d), layers=layers, norm=ones(d), hd=hd, heads=heads, kv=kv, inv=inv, eps=c["rmsNormEps"])


def rms(x, w, eps):
    x32 = x.float()
    return (w * x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rope(x, pos, inv):
    hd = x.shape[-1]
    ang = pos[:, None].float() * inv[None]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    rot = torch.cat([-x[..., hd // 2:], x[..., : hd // 2]], -1)
    return (x * cos[None, :, None] + rot * sin[None, :, None]).to(x.dtype)


def forward(m, ids, cache=None, offset=0):
    b, t = ids.shape
    x = m["embed"][ids]
    pos = torch.arange(offset, offset + t, device=ids.device)
    rep = m["heads"] // m["kv"]
    for i, L in enumerate(m["layers"]):
        h = rms(x, L["n1"], m["eps"])
        q = rope(F.linear(h, L["q"], L["qb"]).view(b, t, m["heads"], m["hd"]), pos, m["inv"]).transpose(1, 2)
        k = rope(F.linear(h, L["k"], L["kb"]).view(b, t, m["kv"], m["hd"]), pos, m["inv"]).transpose(1, 2)
        v = F.linear(h, L["v"], L["vb"]).view(b, t, m["kv"], m["hd"]).transpose(1, 2)
        if cache is not None:
            if i in cache:
                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
            cache[i] = (k, v)
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        q, k, v = q.to(v.dtype), k.to(v.dtype), v
        a = sdpa(q, k, v, t > 1 and offset == 0)
        x = x + F.linear(a.transpose(1, 2).reshape(b, t, -1), L["o"])
        h2 = rms(x, L["n2"], m["eps"])
        x = x + F.linear(F.silu(F.linear(h2, L["gate"])) * F.linear(h2, L["up"]), L["down"])
    return F.linear(rms(x, m["norm"], m["eps"]), m["embed"])


def bf16_copy(m):
    """The model with its weights in bf16 (RoPE's inverse frequencies stay f32), for decoding without autocast."""
    half = lambda t: t.detach().to(torch.bfloat16)
    layers = [{name: half(w) for name, w in L.items()} for L in m["layers"]]
    return dict(m, embed=half(m["embed"]), norm=half(m["norm"]), layers=layers)


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def main():
    a = json.loads(sys.argv[1])
    device = a.get("device", "cpu")
    if device == "cpu":
        torch.set_num_threads(int(a.get("threads", 1)))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    c, b, t = a["shape"], a["batch"], a["seq"]
    m = build(c, device)
    ids = torch.tensor([(i * 7919) % c["vocabSize"] for i in range(b * t)], device=device).view(b, t)
    tgt = torch.tensor([(i * 104729 + 1) % c["vocabSize"] for i in range(b * t)], device=device)
    params = [m["embed"], m["norm"]] + [v for L in m["layers"] for v in L.values()]
    autocast = torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=a.get("dtype") == "bf16")

    def step():
        with autocast:
            logits = forward(m, ids)
            loss = F.cross_entropy(logits.view(b * t, -1).float(), tgt)
        loss.backward()
        for p in params:
            p.grad = None

    step()
    sync(device)
    times = []
    for _ in range(a["steps"]):
        start = time.perf_counter()
        step()
        sync(device)
        times.append(time.perf_counter() - start)
    train = b * t / statistics.median(times)
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else 0

    db, pl, new = a.get("decodeBatch", b), a.get("promptLength", min(t, 32)), a["newTokens"]
    dids = torch.tensor([(i * 7919) % c["vocabSize"] for i in range(db * pl)], device=device).view(db, pl)

    def decode(model, tokens, context):
        with torch.no_grad(), context:
            cache = {}
            logits = forward(model, dids, cache)
            offset = pl
            for _ in range(tokens):
                nxt = logits[:, -1].argmax(-1, keepdim=True)
                logits = forward(model, nxt, cache, offset)
                offset += 1
        sync(device)

    def decode_rate(model, context):
        decode(model, 2, context)
        start = time.perf_counter()
        decode(model, new, context)
        return db * new / (time.perf_counter() - start)

    # bf16 decodes both under autocast and on a bf16 copy of the weights (as a bf16 model generates,
    # without autocast's per-op casting), and reports the faster: the peer at its best.
    bf16 = a.get("dtype") == "bf16"
    modes = {"autocast" if bf16 else "f32": decode_rate(m, autocast)}
    if bf16:
        modes["bf16 weights"] = decode_rate(bf16_copy(m), contextlib.nullcontext())
    decode_mode = max(modes, key=modes.get)
    print(json.dumps({"train": train, "decode": modes[decode_mode], "decodeMode": decode_mode,
                      "threads": torch.get_num_threads(), "device": device, "dtype": a.get("dtype", "f32"),
                      "peakBytes": peak, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
