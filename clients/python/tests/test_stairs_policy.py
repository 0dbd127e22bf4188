"""`herd-bench stairs --mode policy`: the committed rough policy's actor exported by bench/export_actor.py, run in the
rough task on its 21 cm stairs_down tiles.  The export's own check (torch's output on a fixed observation, which the C
network must reproduce) is exercised both ways: the file as written loads, a file with one weight changed is refused.
Skipped where torch is missing."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (apt-get install python3-torch)")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BENCH = os.path.join(ROOT, "build", "herd-bench")
POLICY = os.path.join(ROOT, "examples", "rough_policy.pt")


@pytest.fixture(scope="module")
def actor(tmp_path_factory):
    if not os.path.exists(BENCH):
        subprocess.check_call(["make", "-s", "-C", ROOT, "build/herd-bench"])
    out = str(tmp_path_factory.mktemp("actor") / "rough_actor.txt")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "clients", "python"))
    subprocess.check_call([sys.executable, os.path.join(ROOT, "bench", "export_actor.py"), POLICY, out], env=env,
                          cwd=ROOT)
    return out


def run(actor_path, *args):
    return subprocess.run([BENCH, "stairs", "--mode", "policy", "--policy", actor_path, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_export_format(actor):
    with open(actor) as f:
        head = [next(f) for _ in range(4)]
    assert head[0].strip() == "herd-mlp 1"
    act, layers, n_in, n_out = head[1].split()
    assert (act, int(n_in), int(n_out)) == ("elu", 235, 12) and int(layers) >= 2
    assert head[2].strip() == "task anymal_c-rough"
    assert "actuator=lstm" in head[3] and "obs_scales=legged_gym" in head[3]


def test_the_policy_walks_down_21cm_stairs(actor):
    p = run(actor, "--worlds", "40", "--seconds", "8")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["bench"] == "stairs" and r["mode"] == "policy" and r["task"] == "anymal_c-rough"
    assert abs(r["riser_m"] - 0.212) < 1e-9 and r["level"] == 9
    assert r["worlds_on_stairs_down"] == 10          # legged_gym's proportions: 5 of 20 columns
    assert r["physics_steps"] == 10 * 400 * 4        # every physics step of the observed worlds, 8 s at 50 Hz x 4
    assert r["episodes"] >= 10
    # the robots stand on treads and meet risers: contacts on tops, some on walls and edges
    assert r["contacts_per_step"]["top"] > 1.0
    assert r["contacts_per_step"]["wall"] + r["contacts_per_step"]["edge"] > 0
    # the trained policy goes down: within 8 s some robot has gone down 3 risers (64 cm)
    assert r["descents"] >= 1 and r["risers_down_max"] >= 3, r


def test_a_changed_weight_is_refused(actor, tmp_path):
    lines = open(actor).read().splitlines()
    i = next(k for k, l in enumerate(lines) if l.startswith("layer ")) + 1
    w = lines[i].split()
    w[0] = repr(float(w[0]) + 0.5)
    lines[i] = " ".join(w)
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    p = run(str(bad), "--worlds", "20", "--seconds", "0.1")
    assert p.returncode == 1 and "differs from torch" in p.stderr, p.stderr
