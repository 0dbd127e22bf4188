"""The robot as it looks: visual meshes on herd's link frames, for the browser viewer and herd.render.

    from herd.meshes import load_visual
    vis = load_visual(scene)      # {body index: (P (T, 3, 3), N (T, 3, 3), C (T, 3, 3) corner colours)} or None

The meshes are one binary glTF file (viewer/assets/anymal_c.glb, written by `make viewer-meshes` from
ANYbotics' COLLADA visuals and the reference URDF's <visual> origins; BSD-3-Clause, attribution beside
it).  Each node of the file is named after one of herd's links and holds that link's visuals already
placed in its frame, as triangles with per-vertex normals and colours (the textures sampled at the
vertices), so a reader needs no texture and no transform.

`python3 -m herd.meshes REFERENCE_MESHES REFERENCE_URDF HERD_URDF OUT.glb` converts: it parses the COLLADA
files (triangles with positions, normals, texture coordinates; node matrices), places each visual by
composing the reference URDF's chain of fixed joints up to the moving link that carries it, re-expresses
it in herd's frame of that link (herd's links are parallel to the base at zero angles, the reference's
are rotated: the conversion checks that both models put every joint at the same place with the same axis
at zero angles, so a visual moves with herd's link exactly as with the reference's), decimates by vertex
clustering, and writes the glTF.
"""
import json
import math
import os
import struct
import sys
import xml.etree.ElementTree as ET

import numpy as np

__all__ = ["read_glb", "write_glb", "load_visual", "visual_path", "decimate", "convert"]

_NS = {"c": "http://www.collada.org/2005/11/COLLADASchema"}


# ---- glTF (binary) -----------------------------------------------------------------------------------

def write_glb(path, parts):
    """parts: [(node name, positions (V, 3) float, normals (V, 3) float, colours (V, 3) uint8, indices (T, 3))]
    -> one GLB: a node and a mesh per part, attributes POSITION, NORMAL, COLOR_0 (normalized unsigned
    bytes, padded to 4 per vertex), indices uint16 or uint32."""
    bin_ = bytearray()
    views, accessors, meshes, nodes = [], [], [], []

    def add(arr, target, ctype, atype, normalized=False, minmax=False):
        while len(bin_) % 4:
            bin_.append(0)
        data = np.ascontiguousarray(arr).tobytes()
        views.append({"buffer": 0, "byteOffset": len(bin_), "byteLength": len(data), "target": target})
        if arr.ndim == 2 and arr.dtype.itemsize * arr.shape[1] != {"VEC3": 3, "VEC4": 4}.get(atype, 1) * arr.dtype.itemsize:
            views[-1]["byteStride"] = arr.dtype.itemsize * arr.shape[1]
        bin_.extend(data)
        acc = {"bufferView": len(views) - 1, "componentType": ctype, "count": int(len(arr)), "type": atype}
        if normalized:
            acc["normalized"] = True
        if minmax:
            acc["min"] = [float(v) for v in arr.min(0)]
            acc["max"] = [float(v) for v in arr.max(0)]
        accessors.append(acc)
        return len(accessors) - 1

    for name, P, N, C, I in parts:
        P = np.asarray(P, "<f4")
        N = np.clip(np.rint(np.asarray(N) * 127), -127, 127).astype(np.int8)
        N = np.concatenate([N, np.zeros((len(N), 1), np.int8)], 1)     # 4-byte aligned rows
        C4 = np.concatenate([np.asarray(C, np.uint8), np.full((len(C), 1), 255, np.uint8)], 1)
        big = len(P) > 65535
        I = np.asarray(I, "<u4" if big else "<u2").reshape(-1)
        a = {"POSITION": add(P, 34962, 5126, "VEC3", minmax=True), "NORMAL": add(N, 34962, 5120, "VEC3", normalized=True),
             "COLOR_0": add(C4, 34962, 5121, "VEC4", normalized=True)}
        ind = add(I, 34963, 5125 if big else 5123, "SCALAR")
        meshes.append({"name": name, "primitives": [{"attributes": a, "indices": ind, "material": 0}]})
        nodes.append({"name": name, "mesh": len(meshes) - 1})
    doc = {"extensionsUsed": ["KHR_mesh_quantization"], "extensionsRequired": ["KHR_mesh_quantization"],
           "asset": {"version": "2.0", "generator": "herd.meshes",
                     "copyright": "ANYmal C visual meshes (c) 2020 ANYbotics AG, BSD-3-Clause: see LICENSE.anymal_c"},
           "scene": 0, "scenes": [{"nodes": list(range(len(nodes)))}], "nodes": nodes, "meshes": meshes,
           "materials": [{"name": "vertex colours", "pbrMetallicRoughness": {"baseColorFactor": [1, 1, 1, 1],
                                                                              "metallicFactor": 0, "roughnessFactor": 0.8}}],
           "accessors": accessors, "bufferViews": views, "buffers": [{"byteLength": len(bin_)}]}
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 4)
    while len(bin_) % 4:
        bin_.append(0)
    out = struct.pack("<4sII", b"glTF", 2, 12 + 8 + len(js) + 8 + len(bin_))
    out += struct.pack("<I4s", len(js), b"JSON") + js + struct.pack("<I4s", len(bin_), b"BIN\0") + bytes(bin_)
    with open(path, "wb") as f:
        f.write(out)
    return path


_CTYPES = {5120: "i1", 5121: "u1", 5122: "<i2", 5123: "<u2", 5125: "<u4", 5126: "<f4"}
_NCOMP = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4}


def read_glb(path):
    """{node name: (positions (V, 3), normals (V, 3), colours (V, 3) float 0..1, indices (T, 3))} of a GLB
    written by write_glb (one primitive per mesh, node transforms not used)."""
    with open(path, "rb") as f:
        data = f.read()
    magic, version, _ = struct.unpack_from("<4sII", data, 0)
    if magic != b"glTF" or version != 2:
        raise ValueError("%s is not a binary glTF 2 file" % path)
    n, _ = struct.unpack_from("<I4s", data, 12)
    doc = json.loads(data[20:20 + n])
    m, _ = struct.unpack_from("<I4s", data, 20 + n)
    bin_ = data[28 + n:28 + n + m]

    def acc(i):
        a = doc["accessors"][i]
        v = doc["bufferViews"][a["bufferView"]]
        k = _NCOMP[a["type"]]
        dt = np.dtype(_CTYPES[a["componentType"]])
        row = v.get("byteStride", dt.itemsize * k) // dt.itemsize
        arr = np.frombuffer(bin_, dt, a["count"] * row, v.get("byteOffset", 0) + a.get("byteOffset", 0))
        arr = arr.reshape(a["count"], row)[:, :k] if k > 1 else arr
        if a.get("normalized"):
            arr = arr.astype(np.float64) / np.iinfo(arr.dtype).max
        return arr

    out = {}
    for node in doc["nodes"]:
        prim = doc["meshes"][node["mesh"]]["primitives"][0]
        at = prim["attributes"]
        C = acc(at["COLOR_0"])[:, :3] if "COLOR_0" in at else None
        out[node["name"]] = (acc(at["POSITION"]).astype(np.float64), acc(at["NORMAL"]).astype(np.float64), C,
                             acc(prim["indices"]).astype(np.int64).reshape(-1, 3))
    return out


def visual_path(scene):
    """The GLB of the scene's robot, or None: viewer/assets/<robot>.glb where every link of the file is a
    body of the scene (so a task on another model gets none)."""
    from .view import viewer_dir
    try:
        d = os.path.join(viewer_dir(), "assets")
    except FileNotFoundError:
        return None
    names = {b.get("name") for b in scene.get("bodies", []) if isinstance(b, dict)}
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if f.endswith(".glb") and os.path.splitext(f)[0] in (scene.get("model"), "anymal_c"):
            p = os.path.join(d, f)
            if set(read_glb(p)) <= names:
                return p
    return None


def load_visual(scene, cell=None):
    """{body index: (P (T, 3, 3), N (T, 3, 3), C (T, 3, 3))}: the visual triangles of each body of the
    scene in its frame, with corner normals and colours (0..1); None without a matching GLB.
    cell: decimate further with this cluster size (m) first."""
    path = visual_path(scene)
    if path is None:
        return None
    index = {b["name"]: i for i, b in enumerate(scene["bodies"])}
    out = {}
    for name, (P, N, C, I) in read_glb(path).items():
        if cell:
            P, N, C, I = decimate(P, N, C, I, cell)
        out[index[name]] = (P[I], N[I], C[I])
    return out


# ---- decimation --------------------------------------------------------------------------------------

def decimate(P, N, C, I, cell):
    """Vertex clustering: vertices in one cube of side `cell` merge (mean position); a merged vertex keeps
    one normal per direction class (the 26 neighbours of the cube's centre and 0: creases stay sharp) and
    the mean colour of its members; triangles that collapse are dropped, duplicates kept once.  Inputs
    indexed (P (V, 3), N (V, 3), C (V, 3), I (T, 3)); returns the same, smaller."""
    P, N, C, I = (np.asarray(x) for x in (P, N, C, I))
    q = np.floor(P / cell).astype(np.int64)
    _, cid = np.unique(q, axis=0, return_inverse=True)
    cid = cid.ravel()
    nb = np.rint(N * 1.2).astype(np.int64) + 1          # direction class 0..26
    key = cid * 27 + nb[:, 0] * 9 + nb[:, 1] * 3 + nb[:, 2]
    ukey, vid = np.unique(key, return_inverse=True)
    vid = vid.ravel()
    nc = cid.max() + 1
    cnt = np.bincount(cid, minlength=nc).astype(np.float64)
    cpos = np.stack([np.bincount(cid, P[:, k], nc) for k in range(3)], 1) / cnt[:, None]
    nv = len(ukey)
    vcnt = np.bincount(vid, minlength=nv).astype(np.float64)
    Pn = cpos[ukey // 27]
    Nn = np.stack([np.bincount(vid, N[:, k], nv) for k in range(3)], 1)
    Nn /= np.maximum(np.linalg.norm(Nn, axis=1, keepdims=True), 1e-12)
    Cn = np.stack([np.bincount(vid, C[:, k].astype(np.float64), nv) for k in range(3)], 1) / vcnt[:, None]
    T = vid[I]
    TC = cid[I]
    ok = (TC[:, 0] != TC[:, 1]) & (TC[:, 1] != TC[:, 2]) & (TC[:, 0] != TC[:, 2])
    T = T[ok]
    _, first = np.unique(np.sort(cid[T], axis=1), axis=0, return_index=True)
    T = T[np.sort(first)]
    used, T = np.unique(T, return_inverse=True)
    T = T.reshape(-1, 3)
    return Pn[used], Nn[used], Cn[used].astype(C.dtype) if C.dtype == np.uint8 else Cn[used], T


# ---- COLLADA and URDF --------------------------------------------------------------------------------

def _floats(text):
    return np.array(text.split(), dtype=np.float64)


def _dae_colour_source(root, material_id, folder):
    """A material's diffuse: ('rgb', (3,)) or ('image', uint8 (H, W, 3))."""
    mat = root.find(".//c:library_materials/c:material[@id='%s']" % material_id, _NS)
    eff_id = mat.find("c:instance_effect", _NS).get("url").lstrip("#")
    eff = root.find(".//c:library_effects/c:effect[@id='%s']" % eff_id, _NS)
    diff = eff.find(".//c:diffuse", _NS)
    if diff is not None and diff.find("c:color", _NS) is not None:
        return "rgb", _floats(diff.find("c:color", _NS).text)[:3]
    if diff is not None and diff.find("c:texture", _NS) is not None:
        from PIL import Image
        images = root.findall(".//c:library_images/c:image", _NS)
        for im in images:
            f = os.path.join(folder, os.path.basename(im.find("c:init_from", _NS).text))
            if os.path.exists(f):
                # one colour per vertex: the texture averaged over 1/64 of its width first, so that a vertex
                # does not take the colour of a single printed line or seam
                im = Image.open(f).convert("RGB")
                small = im.resize((max(1, im.width // 64), max(1, im.height // 64)), Image.BOX)
                return "image", np.asarray(small.resize(im.size, Image.BILINEAR))
    return "rgb", np.array([0.6, 0.6, 0.6])


def _srgb_u8(linear_or_srgb):
    return np.clip(np.rint(np.asarray(linear_or_srgb) * 255), 0, 255).astype(np.uint8)


def read_dae(path):
    """Triangles of a COLLADA file in its root frame: positions (V, 3), normals (V, 3), colours (V, 3)
    uint8 (sRGB: the texture sampled at each corner, or the material colour), indices (T, 3)."""
    root = ET.parse(path).getroot()
    folder = os.path.dirname(path)
    unit = root.find("c:asset/c:unit", _NS)
    scale = float(unit.get("meter")) if unit is not None else 1.0
    geoms = {}
    for g in root.findall(".//c:library_geometries/c:geometry", _NS):
        mesh = g.find("c:mesh", _NS)
        src = {}
        for s in mesh.findall("c:source", _NS):
            acc = s.find(".//c:accessor", _NS)
            src[s.get("id")] = _floats(s.find("c:float_array", _NS).text).reshape(-1, int(acc.get("stride")))
        verts = {v.get("id"): v.find("c:input[@semantic='POSITION']", _NS).get("source").lstrip("#")
                 for v in mesh.findall("c:vertices", _NS)}
        geoms[g.get("id")] = (mesh, src, verts)
    Ps, Ns, Cs = [], [], []
    for inst in root.findall(".//c:visual_scene//c:instance_geometry", _NS):
        node = None
        for n in root.iter("{%s}node" % _NS["c"]):
            if inst in list(n):
                node = n
        M = np.eye(4)
        if node is not None and node.find("c:matrix", _NS) is not None:
            M = _floats(node.find("c:matrix", _NS).text).reshape(4, 4)
        binds = {b.get("symbol"): b.get("target").lstrip("#") for b in inst.findall(".//c:instance_material", _NS)}
        mesh, src, verts = geoms[inst.get("url").lstrip("#")]
        for tri in mesh.findall("c:triangles", _NS):
            inputs = {i.get("semantic"): (int(i.get("offset")), i.get("source").lstrip("#"))
                      for i in tri.findall("c:input", _NS)}
            stride = max(o for o, _ in inputs.values()) + 1
            p = np.array(tri.find("c:p", _NS).text.split(), dtype=np.int64).reshape(-1, stride)
            o, s = inputs["VERTEX"]
            pos = src[verts[s]][p[:, o], :3]
            nrm = src[inputs["NORMAL"][1]][p[:, inputs["NORMAL"][0]], :3] if "NORMAL" in inputs else None
            kind, colour = _dae_colour_source(root, binds.get(tri.get("material"), tri.get("material")), folder)
            if kind == "image" and "TEXCOORD" in inputs:
                uv = src[inputs["TEXCOORD"][1]][p[:, inputs["TEXCOORD"][0]], :2]
                h, w = colour.shape[:2]
                x = np.clip((np.mod(uv[:, 0], 1.0) * w).astype(int), 0, w - 1)
                y = np.clip(((1 - np.mod(uv[:, 1], 1.0)) * h).astype(int), 0, h - 1)
                col = colour[y, x]
            elif kind == "image":
                col = np.broadcast_to(colour.reshape(-1, 3).mean(0).astype(np.uint8), (len(p), 3))
            else:
                col = np.broadcast_to(_srgb_u8(colour), (len(p), 3))
            pos = (pos * scale) @ M[:3, :3].T + M[:3, 3] * scale
            if nrm is None:
                t = pos.reshape(-1, 3, 3)
                fn = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
                nrm = np.repeat(fn, 3, 0)
            nrm = nrm @ np.linalg.inv(M[:3, :3]).T
            nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
            Ps.append(pos)
            Ns.append(nrm)
            Cs.append(np.asarray(col, np.uint8))
    P, N, C = np.concatenate(Ps), np.concatenate(Ns), np.concatenate(Cs)
    return P, N, C, np.arange(len(P)).reshape(-1, 3)


def _rpy(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _origin(el):
    T = np.eye(4)
    o = el.find("origin") if el is not None else None
    if o is not None:
        T[:3, :3] = _rpy([float(v) for v in o.get("rpy", "0 0 0").split()])
        T[:3, 3] = [float(v) for v in o.get("xyz", "0 0 0").split()]
    return T


def urdf_tree(path):
    """A URDF's links at zero joint angles: {link: (pose in the root (4, 4), moving link that carries it,
    its parent joint's axis in the root or None, that joint's type)}."""
    root = ET.parse(path).getroot()
    joints = {j.find("child").get("link"): j for j in root.findall("joint")}
    out = {}

    def visit(link):
        if link in out:
            return out[link]
        j = joints.get(link)
        if j is None:
            out[link] = (np.eye(4), link, None, None)
            return out[link]
        T0, mover, _, _ = visit(j.find("parent").get("link"))
        T = T0 @ _origin(j)
        axis = None
        if j.get("type") != "fixed":
            a = j.find("axis")
            axis = T[:3, :3] @ np.array([float(v) for v in (a.get("xyz") if a is not None else "1 0 0").split()])
            mover = link
        out[link] = (T, mover, axis, j.get("type"))
        return out[link]

    for link in root.findall("link"):
        visit(link.get("name"))
    return root, out, joints


def convert(mesh_dir, ref_urdf, herd_urdf, out, cell=0.01, min_tris=400):
    """Writes OUT.glb: for every moving link of herd's model, the reference's visuals it carries, in its
    frame, decimated (cell: cluster size in m; meshes of fewer than min_tris triangles are kept as they
    are).  Raises ValueError if a joint of the two models differs in place or axis at zero angles."""
    ref_root, ref, ref_joints = urdf_tree(ref_urdf)
    _, herd, herd_joints = urdf_tree(herd_urdf)
    for link, (T, mover, axis, _) in ref.items():
        if axis is None:
            continue
        j = ref_joints[link].get("name")
        hj = next((hl for hl, el in herd_joints.items() if el.get("name") == j), None)
        if hj is None:
            raise ValueError("joint %s of the reference is not in herd's model" % j)
        Th, _, ah, _ = herd[hj]
        if not (np.allclose(Th[:3, 3], T[:3, 3], atol=1e-6) and np.allclose(ah, axis, atol=1e-6)):
            raise ValueError("joint %s: reference at %s axis %s, herd at %s axis %s" % (j, T[:3, 3], axis, Th[:3, 3], ah))
    herd_movers = {m for _, m, _, _ in herd.values()}
    cache, parts = {}, {}
    for link in ref_root.findall("link"):
        name = link.get("name")
        T, mover, _, _ = ref[name]
        # the moving reference link is the child of a revolute joint of the same name in herd: its herd link
        hmover = mover if mover in herd_movers else next(
            hl for hl, el in herd_joints.items() if el.get("name") == ref_joints[mover].get("name"))
        Tm = herd[hmover][0]
        for vis in link.findall("visual"):
            m = vis.find("geometry/mesh")
            if m is None:
                continue
            f = os.path.basename(m.get("filename"))
            if f not in cache:
                cache[f] = read_dae(os.path.join(mesh_dir, f))
                cache[f] = decimate(*cache[f], cell if len(cache[f][3]) >= min_tris else 1e-5)
            P, N, C, I = cache[f]
            A = np.linalg.inv(Tm) @ T @ _origin(vis)
            parts.setdefault(hmover, []).append((P @ A[:3, :3].T + A[:3, 3], N @ A[:3, :3].T, C, I))
    glb = []
    for name in sorted(parts, key=lambda n: (n != "base", n)):
        ps = parts[name]
        offs = np.cumsum([0] + [len(p[0]) for p in ps])[:-1]
        P, N, C = (np.concatenate([p[k] for p in ps]) for k in range(3))
        I = np.concatenate([p[3] + o for p, o in zip(ps, offs)])
        glb.append((name, P, N, C, I))
    write_glb(out, glb)
    return {x[0]: len(x[4]) for x in glb}


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: python3 -m herd.meshes REFERENCE_MESH_DIR REFERENCE_URDF HERD_URDF OUT.glb")
    counts = convert(*sys.argv[1:])
    print("%s: %d triangles (%s)" % (sys.argv[4], sum(counts.values()),
                                     ", ".join("%s %d" % kv for kv in counts.items())))
