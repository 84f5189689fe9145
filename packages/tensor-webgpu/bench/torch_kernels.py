"""The kernel benchmark's shapes in PyTorch, as the peer of this package's WGSL kernels: matrix products
and attention forward/backward, median milliseconds and TFLOP/s.

    python3 torch_kernels.py '{"device": "cuda" | "cpu", "threads": 1, "repeats": 20,
                               "matmul": [{"label": "4096^3", "m": 4096, "n": 4096, "k": 4096,
                                           "transA": false, "transB": false}],
                               "matmulModes": ["f32", "tf32", "bf16", "f16"],
                               "attention": [{"label": "...", "batch": 1, "seqLen": 512, "numHeads": 14,
                                              "numKvHeads": 2, "headDim": 64}]}'

Prints one JSON line: {"matmul": [{label, mode, ms, tflops}], "attention": [{label, pass, dtype, ms,
tflops}]}. Modes: f32 with TF32 off (the exact peer of f32 WGSL), f32 with TF32 on, bf16 and f16
operands; attention runs in f32, and on CUDA in bf16 too (the peer of attention on halves). On CUDA
the timing uses CUDA events around `repeats` back-to-back calls after a warm-up; operands rotate among
several copies so that repeated calls do not run out of the L2 cache. FLOPs count as the WGSL benchmark
counts them: 2mnk per product; causal attention 2·b·h·T²·d forward and 3.5x that for forward+backward."""
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
        scores = scores + torch.full((t, s), float("-inf"), device=q.device).triu(1 + s - t)
    return scores.softmax(-1) @ v

DTYPES = {"f32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def timer(device, fn, repeats):
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
        samples = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(repeats):
                fn()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end) / repeats)
        return statistics.median(samples)
    samples = []
    for _ in range(max(3, repeats // 4)):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def matmul_case(c, mode, device, repeats):
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    dtype = DTYPES[mode]
    m, n, k = c["m"], c["n"], c["k"]
    copies = 4
    a_shape = (k, m) if c.get("transA") else (m, k)
    b_shape = (n, k) if c.get("transB") else (k, n)
    As = [torch.randn(*a_shape, device=device, dtype=dtype) for _ in range(copies)]
    Bs = [torch.randn(*b_shape, device=device, dtype=dtype) for _ in range(copies)]
    state = {"i": 0}

    def run():
        i = state["i"] = (state["i"] + 1) % copies
        a, b = As[i], Bs[i]
        return (a.t() if c.get("transA") else a) @ (b.t() if c.get("transB") else b)

    ms = timer(device, run, repeats)
    return {"label": c["label"], "mode": mode, "ms": ms, "tflops": 2 * m * n * k / (ms * 1e9)}


def attention_cases(c, device, repeats, dtype=torch.float32):
    b, t, h, kv, d = c["batch"], c["seqLen"], c["numHeads"], c["numKvHeads"], c["headDim"]
    q = torch.randn(b, h, t, d, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn(b, kv, t, d, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(b, kv, t, d, device=device, dtype=dtype, requires_grad=True)
    dout = torch.randn(b, h, t, d, device=device, dtype=dtype)
    rep = h // kv

    def fwd():
        return sdpa(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), True)

    def fwd_bwd():
        out = fwd()
        out.backward(dout)
        q.grad = k.grad = v.grad = None

    flops = 2 * b * h * t * t * d
    name = "bf16" if dtype == torch.bfloat16 else "f32"
    results = []
    with torch.no_grad():
        ms = timer(device, fwd, repeats)
    results.append({"label": c["label"], "pass": "fwd", "dtype": name, "ms": ms, "tflops": flops / (ms * 1e9)})
    ms = timer(device, fwd_bwd, repeats)
    results.append(
        {"label": c["label"], "pass": "fwd+bwd", "dtype": name, "ms": ms, "tflops": 3.5 * flops / (ms * 1e9)}
    )
    return results


def main():
    a = json.loads(sys.argv[1])
    device = a.get("device", "cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        torch.set_num_threads(int(a.get("threads", 1)))
    torch.backends.cudnn.allow_tf32 = False
    repeats = int(a.get("repeats", 20))
    out = {"device": device, "torch": torch.__version__, "threads": torch.get_num_threads(), "matmul": [], "attention": []}
    if device == "cuda":
        out["gpu"] = torch.cuda.get_device_name()
    modes = a.get("matmulModes", ["f32", "tf32", "bf16"] if device == "cuda" else ["f32"])
    for c in a.get("matmul", []):
        for mode in modes:
            out["matmul"].append(matmul_case(c, mode, device, repeats))
    torch.backends.cuda.matmul.allow_tf32 = False
    for c in a.get("attention", []):
        out["attention"].extend(attention_cases(c, device, repeats))
        # The peer of attention on halves (mixed-precision training): SDPA in bf16, flash kernels on CUDA.
        if device == "cuda":
            out["attention"].extend(attention_cases(c, device, repeats, torch.bfloat16))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
