"""Writes throughputs.json: OUR made-up throughputs (not Gavel's) for the
names of Gavel's 26 job templates, at scale factors 1 (all) and 2/4/8
(the distributed ones), on v100/p100/k80. Deterministic."""
import json

models = ([f"ResNet-18 (batch size {b})" for b in (16, 32, 64, 128, 256)] +
          [f"ResNet-50 (batch size {b})" for b in (16, 32, 64, 128)] +
          [f"Transformer (batch size {b})" for b in (16, 32, 64, 128, 256)] +
          [f"LM (batch size {b})" for b in (5, 10, 20, 40, 80)] +
          [f"Recommendation (batch size {b})" for b in (512, 1024, 2048, 4096, 8192)] +
          ["A3C", "CycleGAN"])
distributed = set(models[:19])
speed = {"v100": 1.0, "p100": 0.55, "k80": 0.2}
out = {}
for wt, f in speed.items():
    out[wt] = {}
    for i, m in enumerate(models):
        for sf in (1, 2, 4, 8):
            if sf > 1 and m not in distributed:
                continue
            base = 2.0 + (i * 7919 % 97) / 10.0
            out[wt][f"('{m}', {sf})"] = {"null": round(base * f * sf * 0.9 ** (sf - 1), 6)}
json.dump(out, open("throughputs.json", "w"), indent=1, sort_keys=True)
