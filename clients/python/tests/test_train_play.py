"""The legged_gym-style entry points against a real server: examples/train.py (each task, rsl_rl 1.0.2 and 2.3.3,
--resume, checkpoints rsl_rl's own OnPolicyRunner loads), examples/play.py (evaluation lines, TorchScript and
ONNX export giving the checkpoint's actions), examples/train_rough.py (packaging, --eval-only against its JSON)
and examples/train_walk.py --eval-only's figures (play.py's evaluation gives the same).

Each script runs as a subprocess (one process imports one rsl_rl) on the session's server with tiny sizes.
Skipped with the reason where torch or an rsl_rl version is missing.
"""
import csv
import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (apt-get install python3-torch)")

from conftest import ROOT  # noqa: E402

EX = os.path.join(ROOT, "examples")
sys.path.insert(0, EX)
import herd_tasks  # noqa: E402
import play  # noqa: E402

TINY = ["--quick", "--max_iterations", "1", "--num_envs", "16"]


def have_rsl_rl(version):
    """rsl_rl of that major version: the third-party copy beside the repository, or an installed one."""
    if os.path.isdir(os.path.join(herd_tasks.THIRD_PARTY[version], "rsl_rl")):
        return True
    code = ("import sys; sys.path.insert(0, %r); import herd_tasks; herd_tasks.import_rsl_rl(%d)" % (EX, version))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, env=_env()).returncode == 0


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "clients", "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def needs(version):
    return pytest.mark.skipif(not have_rsl_rl(version), reason="rsl_rl %d.x is neither installed nor in "
                              "../shared/third_party" % version)


def run(script, *args, ok=True):
    out = subprocess.run([sys.executable, os.path.join(EX, script)] + [str(a) for a in args], capture_output=True,
                         text=True, env=_env(), cwd=ROOT, timeout=300)
    if ok:
        assert out.returncode == 0, "%s %s failed:\n%s\n%s" % (script, args, out.stdout[-3000:], out.stderr[-3000:])
    return out


def json_lines(text, bench=None):
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            if bench is None or d.get("bench") == bench:
                out.append(d)
    return out


def only_run(logdir, task):
    runs = [d for d in glob.glob(os.path.join(logdir, task, "*")) if os.path.isdir(d)]
    assert len(runs) == 1, runs
    return runs[0]


def iterations(path):
    return sorted(int(os.path.basename(p)[6:-3]) for p in glob.glob(os.path.join(path, "model_*.pt")))


def load_with_rsl_rl(version, ckpts, task, server):
    """In a fresh interpreter with rsl_rl `version`: rsl_rl's own OnPolicyRunner (not examples' subclass) on the
    run's runner configuration loads each checkpoint; returns per checkpoint (its iteration, max |its inference
    policy - play.py's actor| on the env's observations)."""
    code = """
import copy, json, os, sys
sys.path.insert(0, %(ex)r)
import herd_tasks, play
herd_tasks.import_rsl_rl(%(v)d)
from rsl_rl.runners import OnPolicyRunner
cfg = json.load(open(os.path.join(os.path.dirname(%(cks)r[0]), "config.json")))
task = herd_tasks.TASKS[%(task)r]
env = herd_tasks.make_rsl_rl_env(%(v)d, task, 8, %(srv)r, 7, cfg["task_config"])
obs = env.get_observations()
obs = obs[0] if isinstance(obs, tuple) else obs
out = []
for ck in %(cks)r:
    runner = OnPolicyRunner(env, copy.deepcopy(cfg["runner"]), log_dir=None, device="cpu")  # 2.x pops keys
    runner.load(ck)
    a = runner.get_inference_policy()(obs).detach().numpy()
    b = play.load_policy(ck).act(obs.numpy())
    out.append((runner.current_learning_iteration, float(abs(a - b).max())))
print(json.dumps(out))
env.close()
""" % {"ex": EX, "v": version, "cks": list(ckpts), "task": task, "srv": server}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_run(run_dir, task, version, n_rows):
    with open(os.path.join(run_dir, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["task"] == task and cfg["rsl_rl"] == version
    assert ("runner" in cfg["runner"]) == (version == 1)           # 1.0.2's train_cfg layout, or 2.x's one dict
    with open(os.path.join(run_dir, "log.csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == n_rows
    for p in ("summary.json", "curve.png"):
        assert os.path.getsize(os.path.join(run_dir, p)) > 0
    return cfg, rows


@pytest.mark.parametrize("task,version", [
    ("anymal_c-walk", 2), ("anymal_c-rough", 1),
])
def test_train_resume_and_rsl_rl_loads(tmp_path, server, task, version):
    """train.py, then --resume: the resumed run continues from the saved iteration in the same folder (its
    log rows follow on), and rsl_rl's OnPolicyRunner loads the checkpoints (same actions as play.py's actor)."""
    if not have_rsl_rl(version):
        pytest.skip("rsl_rl %d.x is neither installed nor in ../shared/third_party" % version)
    logdir = str(tmp_path)
    out = run("train.py", "--task", task, "--rsl_rl", version, "--address", server, "--logdir", logdir, *TINY)
    line = json_lines(out.stdout, "train")[-1]
    assert line["task"] == task and line["iterations"] == 1 and line["env_steps"] == 16 * 24
    run_dir = only_run(logdir, task)
    check_run(run_dir, task, version, 1)
    first = iterations(run_dir)
    assert first, os.listdir(run_dir)

    out = run("train.py", "--task", task, "--rsl_rl", version, "--address", server, "--logdir", logdir, "--resume",
              "--max_iterations", "1", "--num_envs", "16", "--no-desync")
    assert "resumed from %s (iteration %d)" % (os.path.join(run_dir, "model_%d.pt" % first[-1]), first[-1]) \
        in out.stdout
    assert only_run(logdir, task) == run_dir                         # the same run folder
    cfg, rows = check_run(run_dir, task, version, 2)
    assert [int(r["iter"]) for r in rows] == [0, 1]                 # the resumed run's iteration follows on
    last = iterations(run_dir)[-1]
    assert last == first[-1] + 1 and iterations(run_dir)[:-1] == first  # a new checkpoint, none overwritten
    loads = load_with_rsl_rl(version, [os.path.join(run_dir, "model_%d.pt" % i) for i in (first[-1], last)], task,
                             server)
    assert [it for it, _ in loads] == [first[-1], last]
    assert all(diff < 1e-6 for _, diff in loads), loads
    # the resumed run trained on: its actor is not the one it resumed from
    a, b = (play.load_policy(os.path.join(run_dir, "model_%d.pt" % i)) for i in (first[-1], last))
    assert any(not torch.equal(p, q) for p, q in zip(a.module.state_dict().values(), b.module.state_dict().values()))
    # herd.record (herd.record --policy, the docs' pictures) reads the same checkpoint and acts as play.py's actor
    import herd.record
    pi, _cfg = herd.record.load_policy(os.path.join(run_dir, "model_%d.pt" % last))
    x = np.random.default_rng(0).normal(size=(5, 48 if task == "anymal_c-walk" else 235)).astype(np.float32)
    assert np.abs(pi(x) - b.act(x)).max() < 1e-6


@pytest.mark.parametrize("task,version", [
    ("anymal_c-walk", 1), ("anymal_c-stand", 1), ("anymal_c-stand", 2),
])
def test_train_quick(tmp_path, server, task, version):
    if not have_rsl_rl(version):
        pytest.skip("rsl_rl %d.x is neither installed nor in ../shared/third_party" % version)
    out = run("train.py", "--task", task, "--rsl_rl", version, "--address", server, "--logdir", tmp_path, *TINY)
    assert json_lines(out.stdout, "train")[-1]["iterations"] == 1
    run_dir = only_run(str(tmp_path), task)
    cfg, _ = check_run(run_dir, task, version, 1)
    loaded = play.load_policy(os.path.join(run_dir, "model_%d.pt" % iterations(run_dir)[-1]))
    assert loaded.task == task and loaded.config == cfg["task_config"]
    if task == "anymal_c-stand":       # play.py: the stand's evaluation lines on the run's newest checkpoint
        out = run("play.py", "--task", task, "--logdir", tmp_path, "--address", server, "--episodes", 4,
                  "--config", "episode_seconds=0.5")
        lines = json_lines(out.stdout, "stand_eval")
        assert [l["policy"] for l in lines] == ["trained", "untrained"] and lines[0]["episodes"] == 4


def test_play_package_keeps_the_training_figures(tmp_path, server):
    """play.py --package: the run's checkpoint without its optimizer state, its config.json and summary.json
    embedded; the packaged file acts as the checkpoint, and --json carries the training figures (wall clock,
    steps, time split), from the run folder or, for the packaged file alone, from what it embeds."""
    if not have_rsl_rl(2):
        pytest.skip("rsl_rl 2.x is neither installed nor in ../shared/third_party")
    logdir = str(tmp_path / "logs")
    run("train.py", "--task", "anymal_c-walk", "--address", server, "--logdir", logdir, *TINY)
    run_dir = only_run(logdir, "anymal_c-walk")
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    pkg, js = str(tmp_path / "walk_policy.pt"), str(tmp_path / "walk_eval.json")
    run("play.py", "--task", "anymal_c-walk", "--logdir", logdir, "--address", server, "--episodes", 4,
        "--config", "episode_seconds=0.5", "--package", pkg, "--json", js)
    ck = torch.load(pkg, map_location="cpu")
    assert "optimizer_state_dict" not in ck and "model_state_dict" in ck
    herd_rec = ck["infos"]["herd"]
    assert herd_rec["task"] == "anymal_c-walk" and herd_rec["training"]["iterations"] == summary["iterations"]
    with open(js) as f:
        doc = json.load(f)
    assert doc["policy_file"] == pkg and [l["policy"] for l in doc["lines"]] == ["trained", "untrained"]
    for k in ("iterations", "env_steps", "train_wall_s", "share_waiting_on_server", "share_learning_update"):
        assert doc["training"][k] == summary[k], k
    # the packaged file alone (no run folder beside it) still knows its training and acts as the checkpoint
    ref = play.load_policy(os.path.join(run_dir, "model_%d.pt" % iterations(run_dir)[-1]))
    alone = play.load_policy(pkg)
    x = np.random.default_rng(1).normal(size=(7, 48)).astype(np.float32)
    assert np.abs(alone.act(x) - ref.act(x)).max() == 0
    assert play.training_of(pkg)["train_wall_s"] == summary["train_wall_s"]
    assert alone.config == ref.config


def test_play_walk_policy_export_and_figures(tmp_path, server):
    """play.py on the committed walk policy: its evaluation lines (train_walk's format and figures), and the
    TorchScript and ONNX exports give the checkpoint's actions on a real rollout's observations."""
    out = run("play.py", "--policy", os.path.join(EX, "walk_policy.pt"), "--address", server, "--episodes", 6,
              "--config", "episode_seconds=1", "--export", tmp_path)
    lines = json_lines(out.stdout, "walk_eval")
    assert [l["policy"] for l in lines] == ["trained", "untrained"]
    assert set(lines[0]) == {"bench", "policy", "episodes", "lin_vel_error", "yaw_rate_error", "no_fall_fraction",
                             "target_met"}
    exp = json_lines(out.stdout, "export")[0]
    assert exp["torchscript_max_abs_diff"] <= 1e-5 and exp["max_action_abs"] > 0.1
    # independent of play.py's own check: reload both files here, act on fresh observations of the task
    import herd
    with herd.make_vec("anymal_c-walk", 32, address=server, seed=99, actuator="pd") as env:
        obs, _ = env.reset()
        for _ in range(20):
            obs = env.step(np.random.default_rng(0).uniform(-0.5, 0.5, (32, 12)).astype(np.float32))[0]
    ref = play.load_policy(os.path.join(EX, "walk_policy.pt")).act(obs)
    jit = torch.jit.load(os.path.join(tmp_path, "policy.pt"))
    with torch.no_grad():
        np.testing.assert_allclose(jit(torch.as_tensor(obs)).numpy(), ref, atol=1e-6)
    pytest.importorskip("onnx", reason="python3-onnx is not installed: the ONNX file is not checked")
    assert exp["onnx_max_abs_diff"] <= 1e-5
    np.testing.assert_allclose(play.onnx_run(os.path.join(tmp_path, "policy.onnx"), obs), ref, atol=1e-5)
    assert not np.allclose(play.onnx_run(os.path.join(tmp_path, "policy.onnx"), obs[::-1]), ref, atol=1e-3)


def test_play_walk_evaluation_is_train_walks(server):
    """play.py's walk evaluation gives examples/train_walk.py's figures for the committed policy (same episodes,
    seeds, configuration and untrained actor; episodes of 2 s)."""
    import train_walk
    import herd_ppo
    path = os.path.join(EX, "walk_policy.pt")
    with __import__("herd").make_vec("anymal_c-walk", 1, address=server, seed=0) as probe:
        od, ad, keys = probe.obs_dim, probe.act_dim, {k["key"] for k in probe.herd_spec["config"]}
    model, norm, ck = herd_ppo.load_policy(path, od, ad, train_walk.HIDDEN)
    config = herd_ppo.checkpoint_config(dict(ck.get("config") or {}), train_walk.TRAINED_BEFORE, keys, {})
    loaded = play.load_policy(path)
    assert play.eval_config("anymal_c-walk", loaded, keys, {}) == config
    config["episode_seconds"] = 2.0
    seed = 1 + 10**9
    for m, n, pl in ((model, norm, loaded),
                     (herd_ppo.ActorCritic(od, ad, train_walk.HIDDEN, 0.5), herd_ppo.RunningNorm(od, enabled=False),
                      None)):
        if pl is None:
            torch.manual_seed(1)
            m = herd_ppo.ActorCritic(od, ad, train_walk.HIDDEN, 0.5)
            pl = play.untrained(od, ad, train_walk.HIDDEN, 1)
        want = train_walk.eval_line(train_walk.evaluate(m, n, server, 8, seed, config, window_s=1.0), "x")
        got = play.evaluate(pl, "anymal_c-walk", server, 8, seed, config, log=lambda s: None, window_s=1.0)[0][0]
        assert {k: got[k] for k in want if k not in ("policy",)} == {k: want[k] for k in want if k != "policy"}


@needs(2)
def test_train_rough_package_and_eval_only(tmp_path, server):
    """train.py --quick on rough (rsl_rl 2.3.3); train_rough.py --from-run packages the run's checkpoint (an rsl_rl
    checkpoint without the optimizer, its record embedded) and evaluates it per level range into rough_eval.json;
    --eval-only reproduces those figures and fails on a file whose figures differ.  Episodes of 1 s (the
    figures' window is then the whole episode)."""
    out = run("train.py", "--task", "anymal_c-rough", "--address", server, "--logdir", tmp_path / "logs", *TINY)
    assert json_lines(out.stdout, "train")[-1]["iterations"] == 1
    run_dir = only_run(str(tmp_path / "logs"), "anymal_c-rough")
    cfg, rows = check_run(run_dir, "anymal_c-rough", 2, 1)
    assert 0 <= float(rows[0]["terrain_level"]) <= 9             # the curriculum's mean level is logged
    out_dir = tmp_path / "out"
    small = ["--episodes", 6, "--untrained-episodes", 3, "--levels", "0-1,8-9", "--address", server, "--out",
             out_dir, "--config", "episode_seconds=1"]
    out = run("train_rough.py", "--from-run", run_dir, *small)
    ck = torch.load(out_dir / "rough_policy.pt")
    assert "optimizer_state_dict" not in ck and ck["infos"]["herd"]["task"] == "anymal_c-rough"
    assert play.load_policy(str(out_dir / "rough_policy.pt")).config == ck["infos"]["herd"]["task_config"]
    with open(out_dir / "rough_eval.json") as f:
        doc = json.load(f)
    assert doc["train_wall_s"] > 0 and doc["mean_terrain_level"] is not None
    lines = doc["lines"]
    assert lines == json_lines(out.stdout, "rough_eval")
    import herd
    with herd.make_vec("anymal_c-rough", 1, address=server, seed=0) as probe:
        kinds = probe.herd_spec.get("terrain_kinds")       # a server that reports each world's terrain kind
    for pol, n in (("trained", 6), ("untrained", 3)):
        for lv in ("0-1", "8-9"):
            group = [l for l in lines if l["policy"] == pol and l["levels"] == lv]
            assert group[-1]["terrain"] == "all" and group[-1]["episodes"] == n
            per_type = group[:-1]
            assert bool(per_type) == bool(kinds)
            assert sum(l["episodes"] for l in per_type) == (n if kinds else 0)
            assert len({l["terrain"] for l in per_type}) == len(per_type)
            assert {l["terrain"] for l in per_type} <= set(kinds or [])
            for l in group:
                assert set(l) >= {"bench", "policy", "levels", "terrain", "lin_vel_error", "yaw_rate_error",
                                  "no_fall_fraction", "episodes"}
    # the untrained robot stands: no falls on the easiest levels
    assert [l for l in lines if l["policy"] == "untrained" and l["levels"] == "0-1"][-1]["no_fall_fraction"] == 1.0
    # --eval-only: the same figures; a changed figure in the file fails it
    out = run("train_rough.py", "--eval-only", *small)
    assert "figures match" in out.stdout
    doc["lines"][0]["lin_vel_error"] += 0.01
    with open(out_dir / "rough_eval.json", "w") as f:
        json.dump(doc, f)
    out = run("train_rough.py", "--eval-only", *small, ok=False)
    assert out.returncode == 1 and "differ" in out.stdout
    # --update rewrites the figures and keeps every key of the training's record, one it does not know included
    doc["stages"] = [{"task": "anymal_c-walk", "iterations": 7}]
    with open(out_dir / "rough_eval.json", "w") as f:
        json.dump(doc, f)
    out = run("train_rough.py", "--eval-only", "--update", *small)
    with open(out_dir / "rough_eval.json") as f:
        updated = json.load(f)
    assert updated["stages"] == doc["stages"] and updated.get("training") == doc.get("training")
    assert abs(updated["lines"][0]["lin_vel_error"] - (doc["lines"][0]["lin_vel_error"] - 0.01)) < 1e-9
    assert "figures match" in run("train_rough.py", "--eval-only", *small).stdout


def test_normalizers_load_and_export(tmp_path):
    """The observation normalizers a checkpoint may carry are part of the loaded and the exported policy: an
    examples-format file's running normalizer ((x - mean) / sqrt(var + 1e-8), clipped to +-5) and rsl_rl 2.x's
    empirical one ((x - mean) / (std + 0.01)); TorchScript and ONNX give the same actions."""
    import herd_ppo
    rng = np.random.default_rng(3)
    od, ad = 10, 4
    x = (rng.standard_normal((64, od)) * 3).astype(np.float32)
    torch.manual_seed(0)
    model = herd_ppo.ActorCritic(od, ad, [16, 8], 0.5)
    with torch.no_grad():
        model.actor[-1].weight.mul_(100.0)          # actions far from 0, so a missing normalizer shows
    norm = herd_ppo.RunningNorm(od)
    norm.update(rng.standard_normal((500, od)) * 0.5 + 2.0)
    herd_ppo.save_policy(str(tmp_path / "own.pt"), model, norm, hidden=[16, 8])
    with torch.no_grad():
        want_own = model.actor(norm(torch.as_tensor(x))).numpy()
    mean = torch.as_tensor(rng.standard_normal(od), dtype=torch.float32)
    std = torch.as_tensor(rng.uniform(0.5, 2.0, od), dtype=torch.float32)
    sd = {"actor." + k: v for k, v in model.actor.state_dict().items()}
    torch.save({"model_state_dict": sd, "iter": 5, "obs_norm_state_dict": {
        "_mean": mean[None], "_var": (std ** 2)[None], "_std": std[None], "count": torch.tensor(9)}},
        str(tmp_path / "rsl.pt"))
    with torch.no_grad():
        want_rsl = model.actor((torch.as_tensor(x) - mean) / (std + 0.01)).numpy()
    assert np.abs(want_own - want_rsl).max() > 0.1
    for name, want in (("own.pt", want_own), ("rsl.pt", want_rsl)):
        loaded = play.load_policy(str(tmp_path / name))
        np.testing.assert_allclose(loaded.act(x), want, rtol=1e-5, atol=1e-5)
        jit_path, onnx_path = play.export_policy(loaded, str(tmp_path / ("exp_" + name)), od)
        chk = play.check_export(loaded, jit_path, onnx_path, x)
        assert chk["torchscript_max_abs_diff"] <= 1e-5, chk
        if chk["onnx_max_abs_diff"] is not None:
            assert chk["onnx_max_abs_diff"] <= 1e-4 * max(1.0, chk["max_action_abs"]), chk


def test_bench_ppo_update_prints_its_json_line():
    """bench/ppo_update.py (the update's time per thread setting): one JSON line per setting with the walk
    rollout's sample count, positive times, and the 1-thread setting as the ratio's base."""
    if not have_rsl_rl(2):
        pytest.skip("rsl_rl 2.x is neither installed nor in ../shared/third_party")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ppo_update.py"), "--repeats", "1",
                          "--threads", "1", "--blas", "1"], capture_output=True, text=True, env=_env(), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = json_lines(out.stdout, "ppo_update")
    assert len(lines) == 1, out.stdout
    r = lines[0]
    assert r["torch_threads"] == 1 and r["blas_threads"] == 1 and r["samples"] == 2048 * 24
    assert r["repeats"] == 1 and 0 < r["min_s"] <= r["update_s"] <= r["max_s"] and r["update_cpu_s"] > 0
    assert r["ratio"] == 1.0
