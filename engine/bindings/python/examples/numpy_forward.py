#!/usr/bin/env python3
"""Another runtime on the Sluice streamer: a NumPy forward pass of a Llama
model (F32/F16 weights, e.g. stories260K) whose weights come only from
sluice.Stream (layer units acquired one by one in stream mode, embedding rows
read on demand), compared with Sluice's own logits for the same tokens.

usage: numpy_forward.py MODEL.gguf [PROMPT]
Prints the deviation in units of the logits' standard deviation and PASS/FAIL
against the golden bound of F32 weights (max 0.004 sd, RMS 0.0005 sd;
tests/test_golden.c)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sluice  # noqa: E402

MAX_SD, RMS_SD = 0.004, 0.0005


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, n_rot, base):
    """Rotate pairs (2i, 2i+1) of each head by pos * base^(-2i/n_rot) (llama "norm" style)."""
    half = n_rot // 2
    theta = pos[:, None] * base ** (-2.0 * np.arange(half) / n_rot)   # [T, half]
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    out = x.copy()
    a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
    out[..., 0:n_rot:2] = a * c - b * s
    out[..., 1:n_rot:2] = a * s + b * c
    return out


def forward(st, ids):
    """Logits [len(ids), n_vocab] (float64) from weights served by the streamer st."""
    arch = st.meta("general.architecture")
    hp = lambda k: st.meta(arch + "." + k)   # noqa: E731
    n_layer, n_head = hp("block_count"), hp("attention.head_count")
    n_kv = hp("attention.head_count_kv") or n_head
    eps = hp("attention.layer_norm_rms_epsilon")
    base = hp("rope.freq_base") or 10000.0
    T = len(ids)
    x = np.stack([np.frombuffer(st.read_row("token_embd.weight", t), dtype="<f4") for t in ids]).astype(np.float64)
    d = x.shape[1]
    hd = d // n_head
    n_rot = hp("rope.dimension_count") or hd
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for layer in range(n_layer):
        with st.acquire(layer) as u:   # the unit is released (its slot refilled) after the block
            w = lambda n: u.find(n).array().astype(np.float64)   # noqa: E731
            h = rmsnorm(x, w("attn_norm.weight"), eps)
            q = rope((h @ w("attn_q.weight").T).reshape(T, n_head, hd), pos, n_rot, base)
            k = rope((h @ w("attn_k.weight").T).reshape(T, n_kv, hd), pos, n_rot, base)
            v = (h @ w("attn_v.weight").T).reshape(T, n_kv, hd)
            rep = n_head // n_kv
            k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
            att = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
            att = np.exp(att - att.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            o = np.einsum("hts,shd->thd", att, v).reshape(T, d)
            x = x + o @ w("attn_output.weight").T
            h = rmsnorm(x, w("ffn_norm.weight"), eps)
            g, up = h @ w("ffn_gate.weight").T, h @ w("ffn_up.weight").T
            x = x + (g / (1 + np.exp(-g)) * up) @ w("ffn_down.weight").T
    x = rmsnorm(x, st.global_tensor("output_norm.weight").array().astype(np.float64), eps)
    chunks = []
    for unit in range(n_layer, st.n_units):   # the lm head, in row chunks
        info = st.unit_info(unit)
        with st.acquire(unit) as u:
            t = next(iter(u.tensors.values()))
            wh = t.array().astype(np.float64)
            rows = info["row_end"] - info["row_begin"]
            if wh.shape[0] != rows:
                wh = wh[info["row_begin"]:info["row_end"]]
            chunks.append(x @ wh.T)
    return np.concatenate(chunks, axis=1)


def deviation(ref, got):
    """(max, RMS) of |got - ref| in units of ref's standard deviation."""
    sd = float(np.std(ref))
    diff = np.abs(np.asarray(got, dtype=np.float64) - ref)
    return float(diff.max()) / sd, float(np.sqrt(np.mean(diff * diff))) / sd


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    path = sys.argv[1]
    prompt = sys.argv[2] if len(sys.argv) > 2 else "Once upon a time, there was a little dog"
    with sluice.Model(path, n_ctx=256) as m:
        ids = m.tokenize(prompt)
        with m.session() as s:
            ref = s.eval(ids)
    with sluice.Stream(path, mode="stream", mem_budget=2 << 20) as st:
        logits = forward(st, ids)
        print("streamer: mode %s, %d units, %d bytes read" % (st.plan()["mode"], st.n_units, st.stats()["bytes_read"]))
    mx, rms = deviation(logits, ref)
    ok = mx <= MAX_SD and rms <= RMS_SD and (np.argmax(logits, 1) == np.argmax(ref, 1)).all()
    print("numpy vs sluice logits over %d positions: max %.5f sd (bound %.3f), RMS %.6f sd (bound %.4f): %s"
          % (len(ids), mx, MAX_SD, rms, RMS_SD, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
