#!/usr/bin/python3
"""Evaluate, watch, record and export a trained herd policy, legged_gym-style (its play.py's role).

    PYTHONPATH=clients/python /usr/bin/python3 examples/play.py --task anymal_c-walk                      # newest run, last checkpoint
    PYTHONPATH=clients/python /usr/bin/python3 examples/play.py --task anymal_c-rough --load_run Nov27_16-20-00 --checkpoint 300
    PYTHONPATH=clients/python /usr/bin/python3 examples/play.py --policy examples/walk_policy.pt --view
    PYTHONPATH=clients/python /usr/bin/python3 examples/play.py --policy examples/rough_policy.pt --task anymal_c-rough --record out/rough.html
    PYTHONPATH=clients/python /usr/bin/python3 examples/play.py --task anymal_c-walk --export exported/ --episodes 0

The policy is a run's checkpoint (examples/train.py's logs/<experiment>/<run>/model_<iter>.pt: --load_run and
--checkpoint pick it with legged_gym's rules, -1 the newest / the last) or a file (--policy): an rsl_rl
checkpoint (1.0.2 or 2.x; rsl_rl is not needed to read it) or the examples' own format (walk_policy.pt).  It is
evaluated on the task configuration its run recorded (config.json beside the checkpoint, or the one the file
embeds), so that a policy stays evaluable on the physics it learned after a task's defaults change.

Evaluation (--episodes fresh worlds on held-out seeds, one full episode each, the policy mean, obs_noise 0):
  walk, rough   lin_vel_error (m/s), yaw_rate_error (rad/s): per episode the mean over its last 15 s of
                |v_xy,cmd - v_xy| and |yaw_rate_cmd - yaw_rate| (the command the policy acted on against the base
                velocity after the step, both read from the observation), then the mean over episodes;
                no_fall_fraction: the share of episodes that reach the time limit without a base-contact
                termination or a physics reset.
                walk prints one JSON line per policy, "bench": "walk_eval" (examples/train_walk.py's lines).
                rough freezes the curriculum (curriculum=0) on each --levels range (terrain_level_min/max) and
                prints, per range, one "bench": "rough_eval" line per terrain type (from the worlds' reported
                terrain_kind) and one with "terrain": "all".
  stand         success_rate (at the target height and upright at the end), "bench": "stand_eval"
                (examples/ppo_stand.py's evaluation).
The same evaluation of an untrained actor (freshly initialized, its mean action about 0: the robot holds its
default pose) is printed beside it with "policy": "untrained" (--no-untrained leaves it out).

--view serves a live 3-D view of the policy on 4 fresh worlds (herd.view; the URL is printed), --record HTML
writes a replay (HTML, and .mp4 / .gif / .png beside it where ffmpeg / Pillow allow), --export DIR writes the
actor (with its observation normalizer, if any) as TorchScript (DIR/policy.pt, legged_gym's
export_policy_as_jit) and ONNX (DIR/policy.onnx; input "obs" [batch, obs_dim], output "actions"), then checks
both against the checkpoint's actor on observations of a real rollout ("bench": "export", max_abs_diff).
"""
import argparse
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    import herd  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit("examples/play.py: the herd package is not importable: run with PYTHONPATH=clients/python")

import herd_tasks  # noqa: E402

TARGETS = {"anymal_c-walk": {"lin_vel_error": 0.25, "yaw_rate_error": 0.3, "no_fall_fraction": 0.95},
           "anymal_c-rough": {"lin_vel_error": 0.35, "no_fall_fraction": 0.90}}
# Keys whose defaults changed after files in the examples' own format (walk_policy.pt, the first stand policies) were
# trained, with the values they were trained on; used only for a key such a file does not record and the server's
# task lists (examples/train_walk.py and examples/ppo_stand.py: TRAINED_BEFORE).
TRAINED_BEFORE = {"anymal_c-walk": {"actuator": "pd", "cmd_yaw_max": 1.0, "joint_limits": 0.0},
                  "anymal_c-stand": {"actuator": "pd", "joint_limits": 0.0}}
UNTRAINED_INIT_STD = 0.5


# ---- loading ------------------------------------------------------------------------------------------

def _torch():
    return herd_tasks.need_torch("examples/play.py", False)


class Loaded:
    """A checkpoint's actor: .module (torch: obs -> mean action, the normalizer included), .act(obs) (numpy),
    .task (None when the file does not say), .config (the task configuration it was trained on), .hidden,
    .meta (what the file or its run records), .path, .format ("rsl_rl" or "herd_ppo")."""

    def __init__(self, module, task, config, hidden, meta, path, fmt):
        self.module, self.task, self.config, self.hidden = module, task, config, hidden
        self.meta, self.path, self.format = meta, path, fmt

    def act(self, obs):
        torch = _torch()
        with torch.no_grad():
            return self.module(torch.as_tensor(np.asarray(obs, np.float32))).numpy()


def actor_from_state_dict(sd, prefix, activation="elu"):
    """nn.Sequential of Linear layers and `activation` between them, in the layout of rsl_rl's ActorCritic and
    herd_ppo's mlp (Linear at even indices), with the weights of sd's `prefix` keys."""
    torch = _torch()
    nn = torch.nn
    idx = sorted({int(k[len(prefix):].split(".")[0]) for k in sd if k.startswith(prefix)})
    if not idx or idx != list(range(0, 2 * len(idx), 2)):
        raise ValueError("no MLP under %r in the checkpoint (layers %s)" % (prefix, idx))
    acts = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh, "selu": nn.SELU, "lrelu": nn.LeakyReLU,
            "sigmoid": nn.Sigmoid}
    if activation not in acts:
        raise ValueError("activation %r is not supported (%s)" % (activation, ", ".join(acts)))
    layers = []
    for j, i in enumerate(idx):
        w = sd["%s%d.weight" % (prefix, i)]
        layers.append(nn.Linear(w.shape[1], w.shape[0]))
        if j < len(idx) - 1:
            layers.append(acts[activation]())
    seq = nn.Sequential(*layers)
    seq.load_state_dict({k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)})
    return seq.eval()


def _policy_module(actor, mean=None, std=None, clip=None):
    """obs -> actor((obs - mean) / std [clipped]) as one scriptable module (the identity normalizer when mean is
    None)."""
    torch = _torch()

    class Normalizer(torch.nn.Module):
        def __init__(self, m, s, c):
            super().__init__()
            self.register_buffer("mean", torch.as_tensor(m, dtype=torch.float32))
            self.register_buffer("std", torch.as_tensor(s, dtype=torch.float32))
            self.clip = float(c) if c is not None else 0.0

        def forward(self, x):
            y = (x - self.mean) / self.std
            if self.clip > 0:
                y = torch.clamp(y, -self.clip, self.clip)
            return y

    class Policy(torch.nn.Module):
        def __init__(self, a, n):
            super().__init__()
            self.normalizer = n
            self.actor = a

        def forward(self, obs):
            return self.actor(self.normalizer(obs))

    norm = torch.nn.Identity() if mean is None else Normalizer(mean, std, clip)
    return Policy(actor, norm).eval()


def run_config(path):
    """config.json of the run folder holding checkpoint `path`, or {}."""
    p = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return {}


# The keys of a run's summary.json (examples/train.py) that a packaged policy and an evaluation file keep.
SUMMARY_KEYS = ("task", "trainer", "iterations", "env_steps", "train_wall_s", "num_envs", "env_steps_per_s",
                "env_steps_per_s_server_only", "share_waiting_on_server", "share_policy_inference",
                "share_learning_update", "cpu_s_learner", "cpu_s_server", "machine_share", "config", "init_from")


def run_summary(run_dir):
    """The training figures of run folder run_dir (its summary.json, SUMMARY_KEYS), or {}."""
    p = os.path.join(run_dir, "summary.json")
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        summary = json.load(f)
    return {k: summary[k] for k in SUMMARY_KEYS if k in summary}


def training_of(path):
    """The training figures of the policy at path: its run folder's summary.json, or the ones a packaged file
    embeds (infos["herd"]["training"]); {} when neither exists."""
    s = run_summary(os.path.dirname(os.path.abspath(path)))
    if s:
        return s
    torch = _torch()
    ck = torch.load(path, map_location="cpu")
    return dict(((ck.get("infos") or {}).get("herd") or {}).get("training") or {}) if isinstance(ck, dict) else {}


def package_checkpoint(ckpt, out_path):
    """A committable policy file from a run's checkpoint: the rsl_rl checkpoint without its optimizer state, with
    the run's record (config.json: task, task configuration, network sizes, rsl_rl version) and its training
    figures (summary.json) under infos["herd"], so that this script and rsl_rl's OnPolicyRunner.load(path,
    load_optimizer=False) read it alone.  Returns the run folder."""
    torch = _torch()
    ck = torch.load(ckpt, map_location="cpu")
    run_dir = os.path.dirname(os.path.abspath(ckpt))
    record = run_config(ckpt)
    if not record or "model_state_dict" not in ck:
        sys.exit("play: %s is not an rsl_rl checkpoint in a run folder of examples/train.py (config.json beside it)"
                 % ckpt)
    record = {k: v for k, v in record.items() if k != "command"}
    herd_record = dict(record, checkpoint=os.path.basename(ckpt))
    training = run_summary(run_dir)
    if training:
        herd_record["training"] = training
    out = {k: v for k, v in ck.items() if k != "optimizer_state_dict"}
    out["infos"] = dict(ck.get("infos") or {}, herd=herd_record)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    torch.save(out, out_path)
    return run_dir


def load_policy(path):
    """Loaded from an rsl_rl checkpoint (1.0.2 or 2.x: model_state_dict, with obs_norm_state_dict under
    empirical normalization) or an examples-format file (model, norm)."""
    torch = _torch()
    ck = torch.load(path, map_location="cpu")
    if not isinstance(ck, dict):
        raise ValueError("%s: not a policy checkpoint (a %s)" % (path, type(ck).__name__))
    if "model_state_dict" in ck:
        meta = dict(run_config(path))
        meta.update((ck.get("infos") or {}).get("herd") or {})      # a committed file embeds its run's record
        act_name = ((meta.get("runner") or {}).get("policy") or {}).get("activation", "elu")
        actor = actor_from_state_dict(ck["model_state_dict"], "actor.", act_name)
        mean = std = None
        if ck.get("obs_norm_state_dict"):                              # rsl_rl 2.x EmpiricalNormalization
            ns = ck["obs_norm_state_dict"]
            mean, std = ns["_mean"].reshape(-1), ns["_std"].reshape(-1) + 1e-2
        module = _policy_module(actor, mean, std)
        hidden = meta.get("hidden") or [l.out_features for l in actor if isinstance(l, torch.nn.Linear)][:-1]
        meta.setdefault("iter", ck.get("iter"))
        return Loaded(module, meta.get("task"), dict(meta.get("task_config") or {}), list(hidden), meta, path,
                      "rsl_rl")
    if "model" in ck and "norm" in ck:
        actor = actor_from_state_dict(ck["model"], "actor.", "elu")
        ns = ck["norm"]
        if ns.get("enabled", True):
            module = _policy_module(actor, np.asarray(ns["mean"], np.float32),
                                    np.sqrt(np.asarray(ns["var"]) + 1e-8).astype(np.float32), 5.0)
        else:
            module = _policy_module(actor)
        hidden = ck.get("hidden") or [l.out_features for l in actor if isinstance(l, torch.nn.Linear)][:-1]
        meta = {k: v for k, v in ck.items() if k not in ("model", "norm")}
        return Loaded(module, ck.get("task") or ck.get("env"), dict(ck.get("config") or {}), list(hidden), meta,
                      path, "herd_ppo")
    raise ValueError("%s: neither an rsl_rl checkpoint (model_state_dict) nor an examples policy file (model, norm)"
                     % path)


def untrained(obs_dim, act_dim, hidden, seed):
    """A freshly initialized actor (herd_ppo's initialization: the last layer's gain 0.01, so its mean action is
    about 0), seeded: examples/train_walk.py's untrained baseline."""
    torch = _torch()
    import herd_ppo
    torch.manual_seed(seed)
    m = herd_ppo.ActorCritic(obs_dim, act_dim, list(hidden), UNTRAINED_INIT_STD)
    return Loaded(_policy_module(m.actor.eval()), None, {}, list(hidden), {}, None, "untrained")


def eval_config(task, loaded, spec_keys, overrides):
    """The configuration to evaluate on: the keys an examples-format file predates (TRAINED_BEFORE) that the
    task lists, then what the checkpoint recorded, then the command line's overrides."""
    out = {}
    if loaded.format == "herd_ppo":
        out = {k: v for k, v in TRAINED_BEFORE.get(task, {}).items() if k in spec_keys and k not in loaded.config}
    out.update(loaded.config)
    out.update(overrides)
    return out


# ---- evaluation ---------------------------------------------------------------------------------------

def target_met(task, res):
    t = TARGETS.get(task, {})
    return bool(all((res[k] >= v) if k == "no_fall_fraction" else (res[k] <= v) for k, v in t.items()))


def _round(d):
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()}


def walk_line(res, policy):
    """examples/train_walk.py's JSON line."""
    out = {"bench": "walk_eval", "policy": policy}
    out.update(_round({k: res[k] for k in ("episodes", "lin_vel_error", "yaw_rate_error", "no_fall_fraction")}))
    out["target_met"] = target_met("anymal_c-walk", res)
    return out


def parse_levels(text):
    """"0-4" -> (0, 4); "7" -> (7, 7)."""
    a, _, b = str(text).partition("-")
    lo, hi = int(a), int(b or a)
    if not 0 <= lo <= hi:
        raise ValueError("bad level range %r" % text)
    return lo, hi


def rough_lines(ep, spec, levels, policy, task="anymal_c-rough"):
    """One "rough_eval" line per terrain type present, then the "all" line (with target_met)."""
    names = list(spec.get("terrain_kinds") or [])
    lines = []
    if (ep["kind"] >= 0).any():
        for k in sorted(set(ep["kind"].tolist())):
            m = ep["kind"] == k
            name = names[k] if 0 <= k < len(names) else "kind_%d" % k
            lines.append(_rough_line(herd_tasks.summarize(ep, m), policy, levels, name))
    res = herd_tasks.summarize(ep, np.ones(len(ep["ok"]), bool))
    line = _rough_line(res, policy, levels, "all")
    line["target_met"] = target_met(task, res)
    if (ep["level"] >= 0).any():
        line["mean_terrain_level"] = round(float(ep["level"][ep["level"] >= 0].mean()), 3)
    lines.append(line)
    return lines, res


def _rough_line(res, policy, levels, terrain):
    out = {"bench": "rough_eval", "policy": policy, "levels": levels, "terrain": terrain}
    out.update(_round({k: res[k] for k in ("episodes", "lin_vel_error", "yaw_rate_error", "no_fall_fraction")}))
    return out


def evaluate(loaded, task, address, episodes, seed, config, levels=("0-4",), log=print, window_s=15.0):
    """The task's evaluation of `loaded`; prints and returns its JSON lines (and the full figures)."""
    lines, full = [], {}
    if task == "anymal_c-stand":
        import ppo_stand

        class Shim:
            actor = loaded.module
        res = ppo_stand.evaluate(Shim, lambda x: x, address, episodes, seed, config)
        line = {"bench": "stand_eval", "policy": "trained" if loaded.format != "untrained" else "untrained"}
        line.update(_round({k: res[k] for k in ("episodes", "success_rate", "success_fallen", "success_not_fallen",
                                                 "upright_rate", "mean_abs_height_error")}))
        lines.append(line)
        full["all"] = res
    elif task == "anymal_c-rough":
        for lv in levels:
            lo, hi = parse_levels(lv)
            cfg = dict(config, curriculum=0, terrain_level_min=lo, terrain_level_max=hi)
            ep, spec = herd_tasks.tracking_episodes(loaded.act, task, address, episodes, seed, cfg, window_s)
            if (ep["level"] >= 0).any() and not ((ep["level"] >= lo) & (ep["level"] <= hi)).all():
                raise RuntimeError("the worlds' terrain levels %s leave the frozen range %s"
                                   % (sorted(set(ep["level"].tolist())), lv))
            if not (ep["kind"] >= 0).any():
                print("play: the server reports no per-world terrain_kind: only the all-types line", file=sys.stderr)
            ls, res = rough_lines(ep, spec, "%d-%d" % (lo, hi), _policy_name(loaded))
            lines += ls
            full[lv] = res
    else:
        ep, spec = herd_tasks.tracking_episodes(loaded.act, task, address, episodes, seed, config, window_s)
        res = herd_tasks.summarize(ep, np.ones(episodes, bool))
        lines.append(walk_line(res, _policy_name(loaded)))
        full["all"] = res
    for line in lines:
        log(json.dumps(line))
        sys.stdout.flush()
    return lines, full


def _policy_name(loaded):
    return "untrained" if loaded.format == "untrained" else "trained"


# ---- view, record, export -----------------------------------------------------------------------------

def view_policy(loaded, task, address, config, seed, port, worlds=4):
    """--view: the policy mean live (in real time) on `worlds` fresh worlds of a session of its own."""
    import herd.view
    src = herd.view.EnvSource(task, worlds, address=address, policy=loaded.act, seed=seed, obs_noise=0.0,
                              **{k: v for k, v in config.items() if k != "obs_noise"})
    src.title = "%s · %s" % (task, os.path.basename(loaded.path or "untrained"))
    viewer = herd.view.Viewer(src, port=port).start()
    print("play: watch the policy at %s" % viewer.url, flush=True)
    return viewer, src


def record_policy(loaded, task, address, config, html, seed, seconds=10.0, worlds=4):
    """--record: a replay (HTML, plus MP4, GIF and a PNG still of mid-rollout where ffmpeg / Pillow allow)."""
    herd_tasks.record_replay(task, loaded.act, address, config, html, seed, seconds, worlds,
                             "%s, %s" % (task, os.path.basename(loaded.path or "untrained")), "play")


def export_policy(loaded, out_dir, obs_dim):
    """DIR/policy.pt (TorchScript) and DIR/policy.onnx (when onnx export works); returns their paths."""
    torch = _torch()
    os.makedirs(out_dir, exist_ok=True)
    jit_path = os.path.join(out_dir, "policy.pt")
    scripted = torch.jit.script(loaded.module)
    scripted.save(jit_path)
    onnx_path = os.path.join(out_dir, "policy.onnx")
    torch.onnx.export(loaded.module, torch.zeros(1, obs_dim), onnx_path, input_names=["obs"],
                      output_names=["actions"], dynamic_axes={"obs": {0: "batch"}, "actions": {0: "batch"}},
                      opset_version=11)
    return jit_path, onnx_path


def onnx_run(path, x):
    """Evaluates an ONNX graph of the operators an exported MLP policy uses on x (numpy), with numpy: an
    evaluator independent of torch (onnx's own reference evaluator needs onnx >= 1.13; Debian 12 has 1.12).
    The graph is checked with onnx.checker first; an operator outside the set raises."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    onnx.checker.check_model(model)
    g = model.graph
    vals = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    vals[g.input[0].name] = np.asarray(x, np.float32)

    def attr(node, name, default):
        for a in node.attribute:
            if a.name == name:
                return onnx.helper.get_attribute_value(a)
        return default
    for node in g.node:
        i = [vals[n] if n else None for n in node.input]
        op = node.op_type
        if op == "Gemm":
            a = i[0].T if attr(node, "transA", 0) else i[0]
            b = i[1].T if attr(node, "transB", 0) else i[1]
            y = attr(node, "alpha", 1.0) * (a @ b)
            if len(i) > 2 and i[2] is not None:
                y = y + attr(node, "beta", 1.0) * i[2]
        elif op == "MatMul":
            y = i[0] @ i[1]
        elif op == "Add":
            y = i[0] + i[1]
        elif op == "Sub":
            y = i[0] - i[1]
        elif op == "Mul":
            y = i[0] * i[1]
        elif op == "Div":
            y = i[0] / i[1]
        elif op == "Elu":
            al = attr(node, "alpha", 1.0)
            y = np.where(i[0] > 0, i[0], al * np.expm1(np.minimum(i[0], 0)))
        elif op == "Relu":
            y = np.maximum(i[0], 0)
        elif op == "Tanh":
            y = np.tanh(i[0])
        elif op == "Identity":
            y = i[0]
        elif op == "Clip":
            lo = i[1] if len(i) > 1 and i[1] is not None else attr(node, "min", -np.inf)
            hi = i[2] if len(i) > 2 and i[2] is not None else attr(node, "max", np.inf)
            y = np.clip(i[0], lo, hi)
        elif op == "Constant":
            y = numpy_helper.to_array(attr(node, "value", None))
        else:
            raise NotImplementedError("onnx_run: operator %s" % op)
        vals[node.output[0]] = np.asarray(y, np.float32)
    return vals[g.output[0].name]


def rollout_observations(loaded, task, address, config, seed, worlds=64, steps=50):
    """Observations of a real rollout of the policy (worlds x steps rows, every 10th step kept)."""
    out = []
    with herd.make_vec(task, worlds, address=address, seed=seed, autoreset_mode="SAME_STEP", **config) as env:
        obs, _ = env.reset()
        for t in range(steps):
            if t % 10 == 0:
                out.append(np.array(obs))
            obs = env.step(loaded.act(obs))[0]
    return np.concatenate(out)


def check_export(loaded, jit_path, onnx_path, obs):
    """Max |difference| of the exported policies' actions from the checkpoint's actor on obs."""
    torch = _torch()
    ref = loaded.act(obs)
    jit = torch.jit.load(jit_path)
    with torch.no_grad():
        a_jit = jit(torch.as_tensor(obs)).numpy()
    out = {"bench": "export", "observations": int(obs.shape[0]),
           "torchscript_max_abs_diff": float(np.abs(a_jit - ref).max())}
    try:
        out["onnx_max_abs_diff"] = float(np.abs(onnx_run(onnx_path, obs) - ref).max())
    except ImportError:
        out["onnx_max_abs_diff"] = None
        out["onnx_unchecked"] = "python3-onnx is not installed"
    out["max_action_abs"] = float(np.abs(ref).max())
    return out


# ---- command line -------------------------------------------------------------------------------------

def resolve_checkpoint(opt):
    if opt.policy:
        return opt.policy
    root = os.path.join(opt.logdir, opt.experiment_name or opt.task or "anymal_c-walk")
    return herd_tasks.find_checkpoint(herd_tasks.find_run(root, opt.load_run), opt.checkpoint)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default=None, choices=sorted(herd_tasks.TASKS),
                    help="default: the one the checkpoint records, else anymal_c-walk")
    ap.add_argument("--policy", default=None, help="a checkpoint file (instead of --load_run / --checkpoint)")
    ap.add_argument("--logdir", default=os.path.join(REPO, "logs"), help="root of the experiments' run folders")
    ap.add_argument("--experiment_name", default=None, help="default: the task name")
    ap.add_argument("--load_run", default="-1", help="run folder (-1: the newest)")
    ap.add_argument("--checkpoint", type=int, default=-1, help="iteration (-1: the last saved)")
    ap.add_argument("--episodes", type=int, default=1000, help="held-out evaluation episodes (0: no evaluation)")
    ap.add_argument("--levels", default="0-4,5-9", help="rough: the frozen terrain level ranges, comma-separated")
    ap.add_argument("--seed", type=int, default=1, help="evaluation worlds use seeds from seed + 10**9")
    ap.add_argument("--config", action="append", metavar="KEY=VALUE", help="task configuration override")
    ap.add_argument("--no-untrained", action="store_true", help="do not evaluate the untrained actor beside it")
    ap.add_argument("--json", default=None,
                    help="also write the evaluation (lines and full figures) and the run's training figures (its "
                         "summary.json: wall time, steps, time split) to this file")
    ap.add_argument("--package", metavar="FILE",
                    help="write the checkpoint as a committable policy file (no optimizer state; the run's config.json "
                         "and summary.json embedded), and play that file")
    ap.add_argument("--view", action="store_true", help="serve a live 3-D view of the policy (herd.view)")
    ap.add_argument("--view-port", type=int, default=8765, help="HTTP port of --view (loopback; 0: any free one)")
    ap.add_argument("--view-seconds", type=float, default=0, help="--view: stop after this many seconds (0: Ctrl-C)")
    ap.add_argument("--record", metavar="HTML", help="write a replay of the policy (4 worlds, 10 s)")
    ap.add_argument("--export", metavar="DIR", help="write DIR/policy.pt (TorchScript) and DIR/policy.onnx")
    ap.add_argument("--address", default=None, help="herd server(s), comma-separated (default: start one)")
    ap.add_argument("--server-threads", type=int, default=0, help="threads of the started server (0: all cores)")
    return ap.parse_args(argv)


def main(argv=None):
    opt = parse_args(argv)
    torch = _torch()
    torch.set_num_threads(1)
    path = resolve_checkpoint(opt)
    if opt.package:
        package_checkpoint(path, opt.package)
        print("play: %s -> %s" % (path_name(path), path_name(opt.package)), flush=True)
        path = opt.package
    loaded = load_policy(path)
    task = opt.task or loaded.task or "anymal_c-walk"
    if loaded.task and opt.task and loaded.task != opt.task:
        sys.exit("play: %s was trained on %s, not %s" % (path, loaded.task, opt.task))
    return herd_tasks.with_server(opt.address, opt.server_threads,
                                  lambda address, cpu: play(opt, loaded, task, address))


def play(opt, loaded, task, address):
    t0 = time.perf_counter()
    eval_seed = opt.seed + 10**9          # training uses seeds seed + world index (< 10**9)
    with herd.make_vec(task, 1, address=address, seed=0) as probe:
        od, ad = probe.obs_dim, probe.act_dim
        keys = {k["key"] for k in probe.herd_spec["config"]}
    config = eval_config(task, loaded, keys, herd_tasks.parse_config(opt.config))
    print("play: %s (%s, %s) on %s with %s" % (path_name(loaded.path), loaded.format,
                                               "iteration %s" % loaded.meta.get("iter", loaded.meta.get("iterations")),
                                               task, config or "the task's defaults"), flush=True)
    watch = view_policy(loaded, task, address, config, eval_seed + 777, opt.view_port) if opt.view else None
    result = {"task": task, "policy_file": path_name(loaded.path), "config": config}
    training = training_of(loaded.path)
    if training:
        result["training"] = training
    if opt.export:
        jit_path, onnx_path = export_policy(loaded, opt.export, od)
        obs = rollout_observations(loaded, task, address, config, eval_seed + 555)
        chk = check_export(loaded, jit_path, onnx_path, obs)
        chk.update(torchscript=jit_path, onnx=onnx_path)
        print(json.dumps(chk), flush=True)
        result["export"] = chk
    if opt.episodes > 0:
        levels = [s for s in opt.levels.split(",") if s]
        lines, full = evaluate(loaded, task, address, opt.episodes, eval_seed, config, levels)
        result.update(lines=lines, trained=full)
        if not opt.no_untrained:
            base = untrained(od, ad, loaded.hidden, opt.seed)
            lines0, full0 = evaluate(base, task, address, opt.episodes, eval_seed, config, levels)
            result["lines"] = lines + lines0
            result["untrained"] = full0
    if opt.record:
        record_policy(loaded, task, address, config, opt.record, eval_seed + 12345)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    if opt.json:
        with open(opt.json, "w") as f:
            json.dump(result, f, indent=1)
    if watch is not None:
        print("play: the policy walks on at %s (Ctrl-C stops)" % watch[0].url, flush=True)
        try:
            threading.Event().wait(opt.view_seconds or None)
        except KeyboardInterrupt:
            pass
        watch[0].stop()
        watch[1].close()
    if "export" in result:
        e = result["export"]
        if not (e["torchscript_max_abs_diff"] <= 1e-5 and (e["onnx_max_abs_diff"] is None
                                                            or e["onnx_max_abs_diff"] <= 1e-5)):
            print("play: the exported policy differs from the checkpoint's actor", file=sys.stderr)
            return 1
    return 0


def path_name(path):
    if not path:
        return "untrained"
    p = os.path.abspath(path)
    return os.path.relpath(p, REPO) if p.startswith(REPO + os.sep) else p


if __name__ == "__main__":
    sys.exit(main())
