"""The robot's visual meshes (herd.meshes, viewer/assets/anymal_c.glb) and herd.render drawing them, without
a browser: the file's links are herd's, the meshes sit where herd's model puts the links they belong to
(the feet at the collision spheres, the hips at their joints), glTF writing and reading agree, decimation
keeps the shape, and the CPU renderer draws the visual geometry (the shells' red at the base)."""
import colorsys
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import herd.render
from herd.meshes import decimate, read_glb, write_glb

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GLB = os.path.join(ROOT, "viewer", "assets", "anymal_c.glb")
URDF = os.path.join(ROOT, "envs", "models", "anymal_c.urdf")


def herd_links():
    """herd's moving links (base and the children of revolute joints) and their collision spheres."""
    root = ET.parse(URDF).getroot()
    movers = ["base"] + [j.find("child").get("link") for j in root.findall("joint") if j.get("type") == "revolute"]
    return movers


def test_glb_links_are_herds_and_the_licence_travels_with_it():
    meshes = read_glb(GLB)
    assert sorted(meshes) == sorted(herd_links())
    assert os.path.exists(os.path.join(os.path.dirname(GLB), "LICENSE.anymal_c"))
    assert "ANYbotics" in open(os.path.join(os.path.dirname(GLB), "LICENSE.anymal_c")).read()
    total = sum(len(m[3]) for m in meshes.values())
    assert 5000 < total < 30000                      # decimated, yet more than the primitives
    assert os.path.getsize(GLB) < 600 * 1024


def test_meshes_sit_on_herds_link_frames():
    """In each SHANK frame the lowest point of the foot mesh is the collision foot sphere's bottom (herd:
    FOOT frame at (+-0.08795, +-0.01305, -0.33797), sphere r 0.03 centred 0.0225 above it); each HIP's mesh
    holds the HAA drive output at its origin and reaches the HFE joint at (+-0.0599, +-0.08381, 0)."""
    meshes = read_glb(GLB)
    for leg, (sx, sy) in {"LF": (1, 1), "RF": (1, -1), "LH": (-1, 1), "RH": (-1, -1)}.items():
        P = meshes[leg + "_SHANK"][0]
        low = P[np.argmin(P[:, 2])]
        assert abs(low[2] - (-0.33797 + 0.0225 - 0.03)) < 0.006, (leg, low)
        assert np.hypot(low[0] - 0.08795 * sx, low[1] - 0.01305 * sy) < 0.03, (leg, low)
        H = meshes[leg + "_HIP"][0]
        assert np.min(np.linalg.norm(H - [0.0599 * sx, 0.08381 * sy, 0.0], axis=1)) < 0.06, leg
        # the hip lies on the leg's side of the base and ahead of (front) or behind (hind) its joint
        assert np.median(H[:, 1]) * sy > 0 and np.median(H[:, 0]) * sx > 0, leg
    B = meshes["base"][0]
    assert B[:, 0].max() > 0.45 and B[:, 0].min() < -0.45          # the faces at +-0.4145 and beyond


def test_glb_round_trip_and_decimation(tmp_path):
    # a sphere of radius 0.1 as an indexed mesh
    u, v = np.meshgrid(np.linspace(0, np.pi, 40), np.linspace(0, 2 * np.pi, 80), indexing="ij")
    N = np.stack([np.sin(u) * np.cos(v), np.sin(u) * np.sin(v), np.cos(u)], -1).reshape(-1, 3)
    P = 0.1 * N
    idx = np.arange(40 * 80).reshape(40, 80)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    I = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    C = np.tile(np.array([[200, 30, 20]], np.uint8), (len(P), 1))
    P2, N2, C2, I2 = decimate(P, N, C, I, 0.02)
    assert len(I2) < len(I) / 4
    assert np.allclose(np.linalg.norm(P2, axis=1), 0.1, atol=0.02)     # still on the sphere
    assert np.all(np.einsum("ij,ij->i", N2, P2 / np.linalg.norm(P2, axis=1, keepdims=True)) > 0.8)
    assert np.all(C2 == [200, 30, 20])
    write_glb(str(tmp_path / "s.glb"), [("ball", P2, N2, C2, I2)])
    back = read_glb(str(tmp_path / "s.glb"))["ball"]
    assert np.allclose(back[0], P2, atol=1e-6)
    assert np.allclose(back[1], N2, atol=0.01)          # normals as signed bytes
    assert np.allclose(back[2] * 255, C2, atol=0.5)
    assert np.array_equal(back[3], I2)


def scene_of_urdf():
    """A scene dict like the `model` op's for anymal_c (bodies named as herd's links; the collision
    primitives left out: bodies with meshes draw those instead)."""
    return {"bodies": [{"name": n} for n in ["base"] + [f"{l}_{p}" for l in ("LF", "RF", "LH", "RH")
                                                          for p in ("HIP", "THIGH", "SHANK")]],
            "geoms": [{"body": 0, "type": "box", "size": [0.29, 0.07, 0.09], "pos": [0, 0, 0], "quat": [1, 0, 0, 0],
                       "rgba": [0.2, 0.3, 0.8, 1]}],
            "terrain": {"type": "plane", "height": 0.0}}


@pytest.mark.parametrize("visual", [True, False])
def test_renderer_draws_the_visual_geometry(visual):
    """At zero joint angles 0.6 m up, seen from the right rear: the base's right side is the shells' red
    with meshes (the shells reach 0.159 m to the side), the box's blue without (0.07 m)."""
    scene = scene_of_urdf()
    r = herd.render.Renderer(scene, 320, 240, visual=visual)
    assert r.visual == visual
    nb = len(scene["bodies"])
    pos = np.zeros((nb, 3))
    pos[:, 2] = 0.6                     # every link frame at zero angles: parallel to the base ...
    root = ET.parse(URDF).getroot()
    joints = {j.find("child").get("link"): j for j in root.findall("joint")}
    names = [b["name"] for b in scene["bodies"]]
    for i, n in enumerate(names[1:], 1):  # ... at its joint (placements add up: no rotation)
        j = joints[n]
        pos[i] = pos[names.index(j.find("parent").get("link"))] + [float(x) for x in j.find("origin").get("xyz").split()]
    quat = np.tile([1.0, 0, 0, 0], (nb, 1))
    img = r.render(pos, quat)
    (x, y), _ = r.project(pos[0] + [0, -0.14 if visual else -0.07, 0], pos[0])
    px = img[int(y) - 2:int(y) + 3, int(x) - 2:int(x) + 3].reshape(-1, 3) / 255.0
    hue = np.median([colorsys.rgb_to_hsv(*p)[0] for p in px]) * 360
    sat = np.median([colorsys.rgb_to_hsv(*p)[1] for p in px])
    if visual:
        assert (hue < 20 or hue > 340) and sat > 0.4, (hue, sat)
    else:
        assert 200 < hue < 250 and sat > 0.4, (hue, sat)
    assert len(r._P) > (3000 if visual else 0)
