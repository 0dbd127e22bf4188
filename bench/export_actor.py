#!/usr/bin/env python3
"""Writes a policy's actor as a plain-text MLP for `herd-bench stairs --mode policy` (bench_stairs_policy.c).

    PYTHONPATH=clients/python /usr/bin/python3 bench/export_actor.py examples/rough_policy.pt OUT.txt

The policy is loaded as examples/play.py loads it (an rsl_rl 1.0.2 / 2.x checkpoint, with its empirical
normalization if it has one, or an examples-format file).  The file holds, in text: the task and the task
configuration the policy was trained on (key=value, comma-separated), the observation normalizer
(mean, std, clip; the identity when the policy has none), each Linear layer (out x in weights, row-major, then the
biases), the activation between them, and a check: a fixed observation and the actor's output on it computed by
torch, which the C reader evaluates and compares before it uses the network.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import play  # noqa: E402  (examples/play.py: the one policy loader)

ACTIVATIONS = {"ELU": "elu", "ReLU": "relu", "Tanh": "tanh"}


def layers_of(module):
    import torch
    lin, acts = [], []
    for layer in module.actor:
        if isinstance(layer, torch.nn.Linear):
            lin.append(layer)
        elif type(layer).__name__ in ACTIVATIONS:
            acts.append(ACTIVATIONS[type(layer).__name__])
        else:
            raise ValueError("unsupported actor layer %s" % type(layer).__name__)
    if not lin or len(acts) != len(lin) - 1 or len(set(acts)) > 1:
        raise ValueError("the actor is not Linear layers with one activation between them")
    return lin, (acts[0] if acts else "elu")


def export(policy_path, out_path):
    import torch
    loaded = play.load_policy(policy_path)
    module = loaded.module
    lin, act = layers_of(module)
    n_in = lin[0].in_features
    norm = module.normalizer
    if hasattr(norm, "mean"):
        mean = norm.mean.detach().double().numpy().reshape(-1)
        std = norm.std.detach().double().numpy().reshape(-1)
        clip = float(norm.clip)
    else:
        mean, std, clip = np.zeros(n_in), np.ones(n_in), 0.0
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=n_in).astype(np.float32)
    with torch.no_grad():
        y = module(torch.as_tensor(x)[None]).numpy().reshape(-1)
    with open(out_path, "w") as f:
        f.write("herd-mlp 1\n%s %d %d %d\n" % (act, len(lin), n_in, lin[-1].out_features))
        cfg = ",".join("%s=%s" % (k, v) for k, v in sorted((loaded.config or {}).items()))
        f.write("task %s\nconfig %s\n" % (loaded.task or "-", cfg or "-"))
        f.write("norm %.17g\n" % clip)
        f.write(" ".join("%.9g" % v for v in mean) + "\n")
        f.write(" ".join("%.9g" % v for v in std) + "\n")
        for layer in lin:
            w = layer.weight.detach().numpy()
            b = layer.bias.detach().numpy()
            f.write("layer %d %d\n" % (layer.in_features, layer.out_features))
            f.write(" ".join("%.9g" % v for v in w.reshape(-1)) + "\n")
            f.write(" ".join("%.9g" % v for v in b) + "\n")
        f.write("check\n")
        f.write(" ".join("%.9g" % v for v in x) + "\n")
        f.write(" ".join("%.9g" % v for v in y) + "\n")
    return loaded


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    loaded = export(argv[0], argv[1])
    print("%s: task %s, hidden %s -> %s" % (argv[0], loaded.task, loaded.hidden, argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
