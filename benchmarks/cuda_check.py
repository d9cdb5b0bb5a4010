"""CUDA correctness of the Transformer: CPU/CUDA parity, cached decoding, beam search, bf16/fp16 steps,
head masks (Michel et al.) and attention rollout on CUDA tensors.

python benchmarks/cuda_check.py        (needs a CUDA device; prints one JSON line)
"""

from __future__ import annotations

import json

import torch
import torch.nn.functional as F

from attnkit.analysis.rollout import rollout
from attnkit.data.vocab import BOS, EOS
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy
from attnkit.models.losses import label_smoothed_nll
from attnkit.models.transformer import HeadMask, Transformer


def main() -> None:
    torch.manual_seed(0)
    V = 500
    model = Transformer(src_vocab_size=V, tgt_vocab_size=V, d_model=256, n_heads=4, d_ff=1024, encoder_layers=3, decoder_layers=3, dropout=0.0).eval()
    src = torch.randint(4, V, (16, 20))
    src_keep = torch.arange(20)[None] < torch.randint(5, 21, (16,))[:, None]
    src = src.masked_fill(~src_keep, 0)
    tgt_in = torch.cat([torch.full((16, 1), 2), torch.randint(4, V, (16, 14))], 1)
    out: dict = {"check": "cuda", "device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    with torch.inference_mode():
        cpu_logits = model(src, src_keep, tgt_in)
        cpu_beam = beam_search(model, src, src_keep, beam=4, max_len_b=10, bos=BOS, eos=EOS)
        gates = HeadMask(encoder=torch.ones(3, 4), decoder_self=torch.ones(3, 4), cross=torch.ones(3, 4))
        gates.cross[1, 2] = gates.encoder[0, 0] = 0.0
        cpu_masked = model(src, src_keep, tgt_in, head_mask=gates)
        cpu_layers = [w[0] for w in model.attentions(src[:1], src_keep[:1], tgt_in[:1]).encoder]  # (H, S, S) per layer
    gpu = model.cuda()
    s, k, t = src.cuda(), src_keep.cuda(), tgt_in.cuda()
    with torch.inference_mode():
        gpu_logits = gpu(s, k, t)
        out["logits_max_abs_diff_cpu_cuda"] = (gpu_logits.cpu() - cpu_logits).abs().max().item()
        full = F.log_softmax(gpu_logits, -1)
        state = gpu.init_state(gpu.encode(s, k), k)
        worst = 0.0
        for i in range(t.size(1)):
            logits, state, _ = gpu.step(t[:, i : i + 1], state)
            worst = max(worst, (F.log_softmax(logits.float(), -1) - full[:, i]).abs().max().item())
        out["cached_vs_full_max_abs_diff"] = worst
        gpu_beam = beam_search(gpu, s, k, beam=4, max_len_b=10, bos=BOS, eos=EOS)
        out["beam_tokens_equal_cpu_cuda"] = sum(a[0].tokens == b[0].tokens for a, b in zip(cpu_beam, gpu_beam)) / len(cpu_beam)
        g1 = greedy(gpu, s, k, max_len_b=10, bos=BOS, eos=EOS)
        b1 = beam_search(gpu, s, k, beam=1, max_len_b=10, bos=BOS, eos=EOS)
        out["beam1_equals_greedy"] = all(a.tokens == b[0].tokens for a, b in zip(g1, b1))
        cuda_gates = HeadMask(*(m.cuda() for m in (gates.encoder, gates.decoder_self, gates.cross)))
        out["head_mask_max_abs_diff_cpu_cuda"] = (gpu(s, k, t, head_mask=cuda_gates).cpu() - cpu_masked).abs().max().item()
        out["head_mask_changes_logits"] = (cpu_masked - cpu_logits).abs().max().item() > 1e-3
        layers = [w[0] for w in gpu.attentions(s[:1], k[:1], t[:1]).encoder]  # (H, S, S) per layer, on CUDA
        out["rollout_max_abs_diff_cpu_cuda"] = (rollout(layers).cpu() - rollout(cpu_layers)).abs().max().item()
    gpu.train()
    for precision, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        opt = torch.optim.Adam(gpu.parameters(), lr=1e-4)
        scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
        losses = []
        for _ in range(5):
            with torch.autocast("cuda", dtype=dtype):
                logits = gpu(s, k, t)
            loss, _ = label_smoothed_nll(logits.flatten(0, 1), torch.roll(t, -1, 1).flatten(), epsilon=0.1)
            scaler.scale(loss / k.sum()).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            losses.append(round(loss.item() / k.sum().item(), 4))
        out[f"{precision}_losses"] = losses
    print(json.dumps(out))


if __name__ == "__main__":
    main()
