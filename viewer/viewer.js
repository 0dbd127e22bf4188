// herd viewer: draws up to 16 worlds of a herd session with three.js.
//
// Two sources feed the same page:
//  * live  (python3 -m herd.view): GET scene -> the `model` op's scene; GET events -> Server-Sent Events,
//          one JSON frame of poses per message; POST control {paused} pauses the source.
//  * replay (herd.record): window.HERD_REPLAY holds the scene and every frame (float32 arrays in base64).
// A frame: {step, worlds: [ids], body_pos [k*nbody*3], body_quat [k*nbody*4] (w x y z), contacts:
// {count [k], pos/normal [k*max*3], impulse [k*max]} or null, reward [k] or null, terms {name: [k]} or null}.
// With the contact diagnostics (protocol minor 6) contacts also has state [k*max] (0 open, 1 stick, 2 slip),
// friction [k*max*3] (friction impulse, world, N s) and body [k*max], and the frame diag: {fallback [k],
// limit [k*nbody]} (section "contact diagnostics" below).
// World frame: z up, metres.  window.herdViewer exposes the state to tests (tests/viewer/).
// The robot as it looks: the scene's visual meshes (one binary glTF whose nodes are named after the
// scene's bodies, each holding that body's triangles in its frame with normals and sRGB vertex colours;
// herd.meshes writes it) are fetched (live: GET the URL /scene names) or read from the replay
// (HERD_REPLAY.meshes, base64); "collision shapes" shows the primitives the physics uses instead.
// herdViewer.drawn (and <html data-herd-drawn>) turns true once the meshes are in place and a frame
// has been drawn: what a screenshot waits for.
// A cell terrain (scene.terrain.type "cells": anymal_c-rough's field, too large to send whole) is drawn as
// the 8 m tiles of herd.terrain around the followed robot: live, GET terrain?tx=&ty= gives a tile's samples
// (the server's `model` op with terrain_region); a replay holds the tiles its worlds visited
// (HERD_REPLAY.terrain_tiles).  The worlds are then drawn where they are on the field, not side by side.
import * as THREE from 'three';

const SPACING = 3.0;           // m between the worlds drawn side by side
const IMPULSE_SCALE = 0.5;     // m of arrow per N s of normal impulse
const ARROW_MIN = 0.04, ARROW_MAX = 0.6;

const $ = (id) => document.getElementById(id);
const errors = [];
window.addEventListener('error', (e) => errors.push(String(e.message)));
window.addEventListener('unhandledrejection', (e) => errors.push(String(e.reason)));

const api = { ready: false, drawn: false, drawnStep: null, frames: 0, draws: 0, errors, mode: null, meshes: null,
              timing: { start: performance.now() } };     // ms since navigation: start, meshes, drawn
window.herdViewer = api;

function b64bytes(s) {
  const bin = atob(s);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}
const b64floats = (s) => new Float32Array(b64bytes(s).buffer);

// ---- scene construction -----------------------------------------------------------------------------

const canvas = $('view');
// The renderer is made once the number of worlds is known: antialiasing (multisampling, costly in a
// software GL such as headless Chromium's) for up to 4 worlds; ?aa=1 or ?aa=0 decides.  The drawing buffer is
// not preserved between frames (a preserved one costs a copy of every frame): pictures are taken of the
// browser's composited page, never read back from the canvas.
let renderer = null;
function makeRenderer(nworlds) {
  const q = /[?&]aa=([01])/.exec(location.search);
  renderer = new THREE.WebGLRenderer({ canvas, antialias: q ? q[1] === '1' : nworlds <= 4 });
  renderer.setPixelRatio(1);
}

// ---- render scale -----------------------------------------------------------------------------------------
// The canvas fills the window; its drawing buffer is the window's size times the render scale, and the browser
// stretches it over the window.  Without a GPU most of a frame's cost is per pixel, so by default the scale
// adapts: on some draws the page waits for the GL to finish (reading one pixel of the canvas; the GL runs in another
// process, so the time of the calls alone says little) and takes the time from the draw's start as the frame's
// cost; over batches of FRAME_BATCH such samples it lowers the scale while their median is slower than
// FRAME_SLOW and raises it again while it is faster than FRAME_FAST.  The wait keeps the page from preparing
// the next frame meanwhile, so every SETTLED_EVERY-th draw is sampled once the scale holds, every
// MOVING_EVERY-th while it moves (at the start, and after it changed).  The band leaves room in a frame of
// 30 frames/s (33 ms) for the browser's compositing and the page's own work.  ?scale=1 (or any value in (0, 1]) fixes the
// scale instead (full resolution: 1); ?scale=auto is the default.  herd.screenshot fixes it at 1.
const SCALE_MIN = 0.4, SCALE_UP = 1.12, FRAME_BATCH = 5, MOVING_EVERY = 2, SETTLED_EVERY = 6;
const FRAME_SLOW = 30, FRAME_FAST = 20, FRAME_TARGET = 22;      // ms: the band kept, the aim when slow
const rs = { scale: 1, fixed: null, samples: [], frameMs: null, changes: 0, delay: 0, n: 0, every: MOVING_EVERY,
             px: new Uint8Array(4) };
{
  const q = /[?&]scale=([^&#]*)/.exec(location.search);
  const v = q && q[1] !== 'auto' ? Number(q[1]) : NaN;
  if (v > 0) rs.fixed = rs.scale = Math.min(1, v);
}

// One frame's time (ms) measured; every FRAME_BATCH of them decide the scale.
function frameSample(ms) {
  if (rs.fixed !== null) return;
  rs.samples.push(ms);
  if (rs.samples.length < FRAME_BATCH) return;
  const s = rs.samples.sort((a, b) => a - b), med = s[s.length >> 1];
  rs.samples = [];
  rs.frameMs = med;
  let next = rs.scale;
  if (med > FRAME_SLOW) next = rs.scale * Math.max(0.7, Math.sqrt(FRAME_TARGET / med));   // cost ~ pixels
  else if (med < FRAME_FAST) next = rs.scale * SCALE_UP;
  next = Math.min(1, Math.max(SCALE_MIN, Math.round(next * 20) / 20));
  rs.every = next !== rs.scale ? MOVING_EVERY : SETTLED_EVERY;
  if (next !== rs.scale) { rs.scale = next; rs.changes++; dirty = true; }
}

api.setRenderScale = (v) => {        // a number in (0, 1]: fixed; null: adaptive
  rs.fixed = v === null || v === undefined ? null : Math.min(1, Math.max(0.05, Number(v)));
  if (rs.fixed !== null) rs.scale = rs.fixed;
  rs.samples = [];
  rs.every = MOVING_EVERY;
  dirty = true;
};
api.render = () => ({ scale: rs.scale, adaptive: rs.fixed === null, frameMs: rs.frameMs, changes: rs.changes,
                      width: canvas.width, height: canvas.height, band: [FRAME_FAST, FRAME_SLOW] });
// Test hook: every draw takes ms at least (a busy wait), as on a slower machine.
api.slowDraws = (ms) => { rs.delay = Math.max(0, Number(ms) || 0); };
const scene3 = new THREE.Scene();
scene3.background = new THREE.Color(0xdfe7ef);
const camera = new THREE.PerspectiveCamera(50, 1, 0.05, 200);
camera.up.set(0, 0, 1);
const hemi = new THREE.HemisphereLight(0xffffff, 0x8a8f94, 1.6);
scene3.add(hemi);
const sun = new THREE.DirectionalLight(0xffffff, 1.6);
sun.position.set(3, -4, 8);
scene3.add(sun);

function checkerTexture() {
  const c = document.createElement('canvas');
  c.width = c.height = 64;
  const g = c.getContext('2d');
  g.fillStyle = '#c9cbc6'; g.fillRect(0, 0, 64, 64);
  g.fillStyle = '#8e9396'; g.fillRect(0, 0, 32, 32); g.fillRect(32, 32, 32, 32);
  const t = new THREE.CanvasTexture(c);
  t.wrapS = t.wrapT = THREE.RepeatWrapping;
  t.magFilter = THREE.NearestFilter;
  t.colorSpace = THREE.SRGBColorSpace;
  return t;
}

function terrainMesh(terrain) {
  if (terrain && terrain.type === 'heightfield') {
    const mat = new THREE.MeshLambertMaterial({ map: checkerTexture() });
    const nx = terrain.nx, ny = terrain.ny;
    const h = Array.isArray(terrain.heights) ? terrain.heights.flat() : terrain.heights;
    const pos = new Float32Array(nx * ny * 3), uv = new Float32Array(nx * ny * 2);
    for (let j = 0; j < ny; j++) for (let i = 0; i < nx; i++) {
      const k = j * nx + i, x = terrain.x0 + i * terrain.dx, y = terrain.y0 + j * terrain.dy;
      pos.set([x, y, h[k]], 3 * k);
      uv.set([x, y], 2 * k);                 // one checker square per metre
    }
    const idx = [];
    for (let j = 0; j + 1 < ny; j++) for (let i = 0; i + 1 < nx; i++) {
      const a = j * nx + i;
      idx.push(a, a + 1, a + nx + 1, a, a + nx + 1, a + nx);
    }
    const g = new THREE.BufferGeometry();
    g.setAttribute('position', new THREE.BufferAttribute(pos, 3));
    g.setAttribute('uv', new THREE.BufferAttribute(uv, 2));
    g.setIndex(idx);
    g.computeVertexNormals();
    return new THREE.Mesh(g, mat);
  }
  // the plane: lit the same everywhere, so its two colours with the lights' effect folded in (three.js's
  // Lambert: albedo / pi x (hemisphere sky intensity + sun intensity x cos)) look the same as the lit
  // texture; the checker is computed per pixel (a texture's mipmaps cost far more in a software GL), fading
  // to the squares' mean where a pixel spans a square or more, as the texture's mipmaps did
  const size = 400;
  const up = new THREE.Vector3(0, 0, 1), toSun = sun.position.clone().normalize();
  const k = (hemi.intensity + sun.intensity * Math.max(0, up.dot(toSun))) / Math.PI;
  const m = new THREE.Mesh(new THREE.PlaneGeometry(size, size), checkerMaterial(k));
  m.position.z = terrain ? terrain.height : 0;
  m.renderOrder = 1;            // after the robots: their pixels are then not shaded twice
  return m;
}

// The plane's checker (0.5 m squares, as checkerTexture at one repeat per metre) lit by k, written as sRGB.
function checkerMaterial(k) {
  const lit = (rgb) => rgb.map((c) => Math.min(1, k * srgbToLinear(c / 255)));
  const out = (lin) => new THREE.Vector3(...lin.map((l) => (l <= 0.0031308 ? 12.92 * l : 1.055 * Math.pow(l, 1 / 2.4) - 0.055)));
  const a = lit([0xc9, 0xcb, 0xc6]), b = lit([0x8e, 0x93, 0x96]);
  return new THREE.ShaderMaterial({
    uniforms: { light: { value: out(a) }, dark: { value: out(b) }, mean: { value: out(a.map((v, i) => 0.5 * (v + b[i]))) } },
    vertexShader: `varying vec2 vXY;
      void main() { vec4 w = modelMatrix * vec4(position, 1.0); vXY = 2.0 * w.xy; gl_Position = projectionMatrix * viewMatrix * w; }`,
    fragmentShader: `uniform vec3 light, dark, mean; varying vec2 vXY;
      void main() {
        vec2 q = floor(vXY), w = fwidth(vXY);
        vec3 c = mod(q.x + q.y, 2.0) > 0.5 ? dark : light;
        gl_FragColor = vec4(mix(c, mean, clamp(2.0 * max(w.x, w.y) - 1.0, 0.0, 1.0)), 1.0);
      }`,
  });
}

// ---- cell terrain tiles (the rules of clients/python/herd/terrain.py) ----------------------------------

const TILE_M = 8.0;
const GROUND_A = [0.80, 0.80, 0.78], GROUND_B = [0.55, 0.57, 0.58], WALL = [0.62, 0.60, 0.56];
const srgbToLinear = (c) => (c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4));
const tileK = (t) => [Math.max(1, Math.round(TILE_M / t.dx)), Math.max(1, Math.round(TILE_M / t.dy))];
const tileOrigin = (t) => [Math.round(-t.x0 / t.dx), Math.round(-t.y0 / t.dy)];

// The tile holding the cell under (x, y), clamped to the grid.
function tileOf(t, x, y) {
  const [kx, ky] = tileK(t), [ox, oy] = tileOrigin(t);
  const ix = Math.min(Math.max(Math.floor((x - t.x0) / t.dx + 0.5), 0), t.nx - 1);
  const iy = Math.min(Math.max(Math.floor((y - t.y0) / t.dy + 0.5), 0), t.ny - 1);
  return [Math.floor((ix - ox) / kx), Math.floor((iy - oy) / ky)];
}

// The tiles of the 3 x 3 square around (x, y) that hold samples.
function tilesAround(t, x, y) {
  const [kx, ky] = tileK(t), [ox, oy] = tileOrigin(t);
  const lo = [Math.floor(-ox / kx), Math.floor(-oy / ky)];
  const hi = [Math.floor((t.nx - 1 - ox) / kx), Math.floor((t.ny - 1 - oy) / ky)];
  const [tx, ty] = tileOf(t, x, y), out = [];
  for (let j = ty - 1; j <= ty + 1; j++) for (let i = tx - 1; i <= tx + 1; i++)
    if (i >= lo[0] && i <= hi[0] && j >= lo[1] && j <= hi[1]) out.push([i, j]);
  return out;
}

// One tile's triangles: prism tops (equal heights along x merged), smooth cells as four triangles from their
// sample to their corners (on the bilinear surface: the mean of the four samples around), vertical walls on
// the +x and +y sides of each cell where the tops differ.
function tileGeometry(t) {
  const H = t.heights, S = t.smooth, nx = t.nx, ny = t.ny, dx = t.dx, dy = t.dy;
  const h = (j, i) => H[j * nx + i], sm = (j, i) => S[j * nx + i] !== 0;
  const cl = (v, n) => Math.min(Math.max(v, 0), n - 1);
  const C = (j, i) => 0.25 * (h(cl(j - 1, ny), cl(i - 1, nx)) + h(cl(j - 1, ny), cl(i, nx)) +
                              h(cl(j, ny), cl(i - 1, nx)) + h(cl(j, ny), cl(i, nx)));
  const xs = (i) => t.x0 + (t.ix + i) * dx, ys = (j) => t.y0 + (t.iy + j) * dy;
  const i0 = Math.max(t.sx - t.ix, 0), j0 = Math.max(t.sy - t.iy, 0);
  const i1 = Math.min(t.sx + t.kx - t.ix, nx), j1 = Math.min(t.sy + t.ky - t.iy, ny);
  const pos = [], nrm = [], col = [];
  let low = Infinity;
  const quad = (a, b, c, d, n, rgb) => {
    const e1 = [b[0] - a[0], b[1] - a[1], b[2] - a[2]], e2 = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
    const g = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
    if (g[0] * n[0] + g[1] * n[1] + g[2] * n[2] < 0) [b, d] = [d, b];      // front faces wind around n
    for (const p of [a, b, c, a, c, d]) { pos.push(p[0], p[1], p[2]); nrm.push(n[0], n[1], n[2]); col.push(...rgb); }
    low = Math.min(low, a[2], b[2], c[2], d[2]);
  };
  const tri = (a, b, c, rgb) => {       // counter-clockwise seen from above: its normal points up
    const e1 = [b[0] - a[0], b[1] - a[1], b[2] - a[2]], e2 = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
    const n = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
    const l = Math.hypot(n[0], n[1], n[2]) * Math.sign(n[2] || 1);
    if (n[2] < 0) [b, c] = [c, b];
    for (const p of [a, b, c]) { pos.push(p[0], p[1], p[2]); nrm.push(n[0] / l, n[1] / l, n[2] / l); col.push(...rgb); }
    low = Math.min(low, a[2], b[2], c[2]);
  };
  const lin = (c) => c.map(srgbToLinear);
  const A = lin(GROUND_A), B = lin(GROUND_B), Wc = lin(WALL);
  const band = (z) => (Math.floor(z / 0.05 + 1e-6) & 1 ? B : A);
  for (let j = j0; j < j1; j++) {
    const ya = ys(j) - dy / 2, yb = ys(j) + dy / 2;
    for (let i = i0; i < i1;) {
      if (sm(j, i)) {        // four triangles from the sample (the surface at the centre) to the corners
        const xa = xs(i) - dx / 2, xb = xs(i) + dx / 2;
        const ring = [[xa, ya, C(j, i)], [xb, ya, C(j, i + 1)], [xb, yb, C(j + 1, i + 1)], [xa, yb, C(j + 1, i)]];
        const m = [xs(i), ys(j), h(j, i)], rgb = (Math.floor(xs(i) * 2) + Math.floor(ys(j) * 2)) & 1 ? B : A;
        for (let q = 0; q < 4; q++) tri(m, ring[q], ring[(q + 1) % 4], rgb);
        i++;
        continue;
      }
      let e = i;
      while (e + 1 < i1 && !sm(j, e + 1) && h(j, e + 1) === h(j, i)) e++;
      const z = h(j, i), xa = xs(i) - dx / 2, xb = xs(e) + dx / 2;
      quad([xa, ya, z], [xb, ya, z], [xb, yb, z], [xa, yb, z], [0, 0, 1], band(z));
      i = e + 1;
    }
  }
  // walls: axis 0 between (j, i) and (j, i + 1) at x = xs(i) + dx / 2; axis 1 between (j, i) and (j + 1, i)
  const EPS = 1e-6;
  for (let axis = 0; axis < 2; axis++) {
    const ie = axis === 0 ? Math.min(i1, nx - 1) : i1, je = axis === 0 ? j1 : Math.min(j1, ny - 1);
    const outer = axis === 0 ? [i0, ie] : [j0, je], inner = axis === 0 ? [j0, je] : [i0, ie];
    for (let o = outer[0]; o < outer[1]; o++) {
      for (let k = inner[0]; k < inner[1];) {
        const [j, i] = axis === 0 ? [k, o] : [o, k], [jn, in_] = axis === 0 ? [j, i + 1] : [j + 1, i];
        const sa = sm(j, i), sb = sm(jn, in_);
        // the shared edge's two corners, low end first, and each cell's top there
        const c0 = axis === 0 ? [j, i + 1] : [j + 1, i], c1 = axis === 0 ? [j + 1, i + 1] : [j + 1, i + 1];
        const a0 = sa ? C(...c0) : h(j, i), a1 = sa ? C(...c1) : h(j, i);
        const b0 = sb ? C(...c0) : h(jn, in_), b1 = sb ? C(...c1) : h(jn, in_);
        if (Math.abs(a0 - b0) <= EPS && Math.abs(a1 - b1) <= EPS) { k++; continue; }
        let e = k;
        if (!sa && !sb) {      // prism-prism: merged along the edge while both heights stay
          const same = (q) => {
            const [jj, ii] = axis === 0 ? [q, o] : [o, q], [jm, im] = axis === 0 ? [jj, ii + 1] : [jj + 1, ii];
            return !sm(jj, ii) && !sm(jm, im) && h(jj, ii) === h(j, i) && h(jm, im) === h(jn, in_);
          };
          while (e + 1 < inner[1] && same(e + 1)) e++;
        }
        const s = Math.sign(a0 + a1 - b0 - b1);
        if (axis === 0) {
          const x = xs(i) + dx / 2, p0 = ys(k) - dy / 2, p1 = ys(e) + dy / 2;
          const e0 = sa ? a0 : h(j, i), e1 = sa ? a1 : h(j, i), f0 = sb ? b0 : h(jn, in_), f1 = sb ? b1 : h(jn, in_);
          quad([x, p0, e0], [x, p1, e1], [x, p1, f1], [x, p0, f0], [s, 0, 0], Wc);
        } else {
          const y = ys(j) + dy / 2, p0 = xs(k) - dx / 2, p1 = xs(e) + dx / 2;
          const e0 = sa ? a0 : h(j, i), e1 = sa ? a1 : h(j, i), f0 = sb ? b0 : h(jn, in_), f1 = sb ? b1 : h(jn, in_);
          quad([p0, y, e0], [p1, y, e1], [p1, y, f1], [p0, y, f0], [0, s, 0], Wc);
        }
        k = e + 1;
      }
    }
  }
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(new Float32Array(pos), 3));
  g.setAttribute('normal', new THREE.BufferAttribute(new Float32Array(nrm), 3));
  g.setAttribute('color', new THREE.BufferAttribute(new Float32Array(col), 3));
  g.computeBoundingSphere();
  return { geometry: g, low };
}

const tileMaterial = new THREE.MeshLambertMaterial({ vertexColors: true });
const tiles = { terrain: null, map: new Map(), pending: new Set(), group: new THREE.Group(), center: null,
                fetch: null, far: null };
scene3.add(tiles.group);
api.terrainTiles = () => [...tiles.map.keys()];

// A fetched tile (JSON as herd.terrain.tile_json writes it) -> a mesh in the scene.
function addTile(key, d) {
  const t = Object.assign({}, d, { heights: b64floats(d.heights), smooth: b64bytes(d.smooth) });
  const { geometry, low } = tileGeometry(t);
  const m = new THREE.Mesh(geometry, tileMaterial);
  m.userData.low = low;
  tiles.group.add(m);
  tiles.map.set(key, m);
  if (tiles.far && Number.isFinite(low)) tiles.far.position.z = Math.min(tiles.far.position.z, low - 0.02);
  dirty = true;
}

// Keeps the tiles around (x, y) in the scene (fetching the missing ones) and drops the far ones.
function updateTiles(x, y) {
  const t = tiles.terrain;
  const c = tileOf(t, x, y), ck = c.join(',');
  if (ck === tiles.center) return;
  tiles.center = ck;
  const want = new Set(tilesAround(t, x, y).map((k) => k.join(',')));
  for (const [key, m] of tiles.map) {
    const [i, j] = key.split(',').map(Number);
    if (Math.abs(i - c[0]) > 2 || Math.abs(j - c[1]) > 2) { tiles.group.remove(m); m.geometry.dispose(); tiles.map.delete(key); }
  }
  for (const key of want) {
    if (tiles.map.has(key) || tiles.pending.has(key)) continue;
    tiles.pending.add(key);
    Promise.resolve(tiles.fetch(key)).then((d) => { if (d && tiles.pending.has(key)) addTile(key, d); })
      .catch((e) => errors.push(String(e))).finally(() => tiles.pending.delete(key));
  }
}

// Test hook: the terrain's height drawn under (x, y) (a ray down onto the tiles), null where none is drawn.
api.terrainHeight = (x, y) => {
  const rc = new THREE.Raycaster(new THREE.Vector3(x, y, 100), new THREE.Vector3(0, 0, -1));
  const hit = rc.intersectObjects(tiles.group.children, false)[0];
  return hit ? hit.point.z : null;
};
api.tilesPending = () => tiles.pending.size;
// Test hook: the canvas and the side panel show the current state (the panel brought up to date now): nothing
// waits to be drawn, and on a cell terrain the tiles around the camera's target (the followed robot) are
// fetched and drawn.
api.settled = () => {
  if (panel.shown !== st.frame) showPanels(true);      // the side panel too, without waiting for its turn
  if (dirty || tiles.pending.size) return false;
  if (!st.cells || !tiles.fetch) return true;
  return tiles.center === tileOf(tiles.terrain, st.target.x, st.target.y).join(',');
};

function primitive(g) {
  const s = g.size;
  let geo;
  switch (g.type) {
    case 'sphere': geo = new THREE.SphereGeometry(s[0], 20, 14); break;
    case 'box': geo = new THREE.BoxGeometry(2 * s[0], 2 * s[1], 2 * s[2]); break;
    case 'cylinder': geo = new THREE.CylinderGeometry(s[0], s[0], 2 * s[1], 20).rotateX(Math.PI / 2); break;
    case 'capsule': geo = new THREE.CapsuleGeometry(s[0], 2 * s[1], 6, 16).rotateX(Math.PI / 2); break;
    default: return null;
  }
  const c = g.rgba || [0.6, 0.6, 0.6, 1];
  const mat = new THREE.MeshLambertMaterial({ color: new THREE.Color().setRGB(c[0], c[1], c[2]),
                                              transparent: c[3] < 1, opacity: c[3] });
  const mesh = new THREE.Mesh(geo, mat);
  mesh.position.set(g.pos[0], g.pos[1], g.pos[2]);
  mesh.quaternion.set(g.quat[1], g.quat[2], g.quat[3], g.quat[0]);
  return mesh;
}

// A binary glTF as herd.meshes writes it -> {node name: BufferGeometry}: POSITION float32, NORMAL int8
// normalized (KHR_mesh_quantization, 4-byte rows), COLOR_0 sRGB bytes (made linear here), indices.
function parseGLB(buf) {
  const dv = new DataView(buf);
  if (dv.getUint32(0, true) !== 0x46546c67) throw new Error('not a binary glTF file');
  const jlen = dv.getUint32(12, true);
  const doc = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 20, jlen)));
  const bin = 28 + jlen;
  const TYPES = { 5120: Int8Array, 5121: Uint8Array, 5123: Uint16Array, 5125: Uint32Array, 5126: Float32Array };
  const NC = { SCALAR: 1, VEC2: 2, VEC3: 3, VEC4: 4 };
  const read = (i) => {        // accessor i as a packed typed array of count * components
    const a = doc.accessors[i], v = doc.bufferViews[a.bufferView], T = TYPES[a.componentType], k = NC[a.type];
    const row = (v.byteStride || T.BYTES_PER_ELEMENT * k) / T.BYTES_PER_ELEMENT;
    const src = new T(buf, bin + (v.byteOffset || 0) + (a.byteOffset || 0), a.count * row);
    if (row === k) return { a, data: src, k };
    const out = new T(a.count * k);
    for (let j = 0; j < a.count; j++) for (let c = 0; c < k; c++) out[j * k + c] = src[j * row + c];
    return { a, data: out, k };
  };
  const lin = new Float32Array(256);
  for (let i = 0; i < 256; i++) { const c = i / 255; lin[i] = c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); }
  const out = {};
  for (const node of doc.nodes) {
    const prim = doc.meshes[node.mesh].primitives[0], at = prim.attributes, g = new THREE.BufferGeometry();
    g.setAttribute('position', new THREE.BufferAttribute(read(at.POSITION).data, 3));
    const n = read(at.NORMAL), nf = new Float32Array(n.data.length);
    for (let j = 0; j < nf.length; j++) nf[j] = Math.max(-1, n.data[j] / 127);
    g.setAttribute('normal', new THREE.BufferAttribute(nf, 3));
    if (at.COLOR_0 !== undefined) {
      const c = read(at.COLOR_0), cnt = c.a.count, cf = new Float32Array(cnt * 3);
      for (let j = 0; j < cnt; j++) for (let q = 0; q < 3; q++) cf[3 * j + q] = lin[c.data[j * c.k + q]];
      g.setAttribute('color', new THREE.BufferAttribute(cf, 3));
    }
    g.setIndex(new THREE.BufferAttribute(read(prim.indices).data, 1));
    g.computeBoundingSphere();
    out[node.name] = g;
  }
  return out;
}

let meshGeoms = null;                       // {body name: geometry} shared by every robot, or null

// ---- the robots' visual meshes, batched ---------------------------------------------------------------------
// A mesh per body and robot would be a draw call each (13 per robot), and in a software GL each draw call has
// a cost of its own, on top of its triangles' and pixels'.  So the bodies' meshes are merged into one geometry
// per robot whose vertices name their body, the bodies' poses of every robot in view go into a float texture
// (a row per robot, three texels per body: the rows of its 3 x 4 world transform), and one instanced draw
// call draws all those robots, each instance reading its row.  Robots smaller on the screen are drawn from
// coarser copies of the geometry (vertex clustering, clusterGeometry), each level in an instanced call of its
// own: LODS[i] holds the robots whose bounding sphere's radius in the drawing buffer is under px pixels, drawn
// from clusters of cell m (the level of the smallest px that holds it; cell 0: the meshes themselves).  A
// cluster is then at most about one pixel wide (the robot reaches about 0.8 m from its base: 0.8 m over 160 px
// is 5 mm a pixel, under a 2 cm cluster's half).  Robots off the screen are left out.  The collision shapes
// stay a mesh per primitive.
const LODS = [{ px: Infinity, cell: 0 }, { px: 160, cell: 0.02 }, { px: 70, cell: 0.04 }], MAX_ROBOTS = 16;
const batch = { levels: [], tex: null, data: null, nbody: 0, reach: null, counts: [] };
api.batch = () => ({ counts: batch.counts.slice(), triangles: batch.levels.map((m) => m.geometry.index.count / 3) });

// Vertex clustering: each vertex moved to the mean of the vertices in its cell of a grid of `cell` m
// (positions, normals and colours averaged), triangles left with fewer than three distinct corners dropped.
function clusterGeometry(g, cell) {
  const P = g.attributes.position.array, N = g.attributes.normal.array, C = g.attributes.color;
  const I = g.index.array, nv = P.length / 3, of = new Int32Array(nv), cells = new Map();
  const acc = [];
  for (let v = 0; v < nv; v++) {
    const key = Math.floor(P[3 * v] / cell) + ',' + Math.floor(P[3 * v + 1] / cell) + ',' + Math.floor(P[3 * v + 2] / cell);
    let c = cells.get(key);
    if (c === undefined) { c = acc.length; cells.set(key, c); acc.push(new Float64Array(10)); }
    const a = acc[c];
    for (let q = 0; q < 3; q++) { a[q] += P[3 * v + q]; a[3 + q] += N[3 * v + q]; if (C) a[6 + q] += C.array[3 * v + q]; }
    a[9]++;
    of[v] = c;
  }
  const pos = new Float32Array(3 * acc.length), nrm = new Float32Array(3 * acc.length), col = new Float32Array(3 * acc.length);
  acc.forEach((a, c) => {
    const l = Math.hypot(a[3], a[4], a[5]) || 1;
    for (let q = 0; q < 3; q++) { pos[3 * c + q] = a[q] / a[9]; nrm[3 * c + q] = a[3 + q] / l; col[3 * c + q] = a[6 + q] / a[9]; }
  });
  const idx = [];
  for (let t = 0; t < I.length; t += 3) {
    const a = of[I[t]], b = of[I[t + 1]], c = of[I[t + 2]];
    if (a !== b && b !== c && a !== c) idx.push(a, b, c);
  }
  const out = new THREE.BufferGeometry();
  out.setAttribute('position', new THREE.BufferAttribute(pos, 3));
  out.setAttribute('normal', new THREE.BufferAttribute(nrm, 3));
  if (C) out.setAttribute('color', new THREE.BufferAttribute(col, 3));
  out.setIndex(idx);
  return out;
}

// The bodies' geometries [[body index, geometry]] as one instanced geometry with a `body` attribute.
function mergeBodies(parts) {
  let nv = 0, ni = 0;
  for (const [, g] of parts) { nv += g.attributes.position.count; ni += g.index.count; }
  const pos = new Float32Array(3 * nv), nrm = new Float32Array(3 * nv), col = new Float32Array(3 * nv).fill(1);
  const body = new Float32Array(nv), idx = nv > 65535 ? new Uint32Array(ni) : new Uint16Array(ni);
  let v0 = 0, i0 = 0;
  for (const [b, g] of parts) {
    const n = g.attributes.position.count, I = g.index.array;
    pos.set(g.attributes.position.array, 3 * v0);
    nrm.set(g.attributes.normal.array, 3 * v0);
    if (g.attributes.color) col.set(g.attributes.color.array, 3 * v0);
    body.fill(b, v0, v0 + n);
    for (let i = 0; i < I.length; i++) idx[i0 + i] = I[i] + v0;
    v0 += n;
    i0 += I.length;
  }
  const out = new THREE.InstancedBufferGeometry();
  out.setAttribute('position', new THREE.BufferAttribute(pos, 3));
  out.setAttribute('normal', new THREE.BufferAttribute(nrm, 3));
  out.setAttribute('color', new THREE.BufferAttribute(col, 3));
  out.setAttribute('body', new THREE.BufferAttribute(body, 1));
  out.setIndex(new THREE.BufferAttribute(idx, 1));
  out.instanceCount = 0;
  return out;
}

// three.js's Lambert material with each vertex placed by its body's transform, read from the poses texture
// (row rowBase + the instance's number).
function batchMaterial(rowBase) {
  const m = new THREE.MeshLambertMaterial({ vertexColors: true });
  m.onBeforeCompile = (sh) => {
    sh.uniforms.bodyPoses = { value: batch.tex };
    sh.uniforms.rowBase = { value: rowBase };
    sh.vertexShader = sh.vertexShader
      .replace('#include <common>', '#include <common>\nuniform highp sampler2D bodyPoses;\nuniform int rowBase;\nattribute float body;')
      .replace('#include <beginnormal_vertex>', `
        int bx = 3 * int(body + 0.5), by = rowBase + gl_InstanceID;
        mat4 bodyM = transpose(mat4(texelFetch(bodyPoses, ivec2(bx, by), 0), texelFetch(bodyPoses, ivec2(bx + 1, by), 0),
                                    texelFetch(bodyPoses, ivec2(bx + 2, by), 0), vec4(0.0, 0.0, 0.0, 1.0)));
        vec3 objectNormal = mat3(bodyM) * normal;`)
      .replace('#include <begin_vertex>', 'vec3 transformed = (bodyM * vec4(position, 1.0)).xyz;');
  };
  m.customProgramCacheKey = () => 'herd-robot-batch';
  return m;
}

// Builds the batch for the scene's bodies (when the visual meshes are loaded).
function makeBatch(scene) {
  const parts = [];
  scene.bodies.forEach((b, i) => { if (meshGeoms && meshGeoms[b.name]) parts.push([i, meshGeoms[b.name]]); });
  if (!parts.length) return;
  const nb = scene.bodies.length;
  batch.nbody = nb;
  batch.data = new Float32Array(4 * 3 * nb * LODS.length * MAX_ROBOTS);
  batch.tex = new THREE.DataTexture(batch.data, 3 * nb, LODS.length * MAX_ROBOTS, THREE.RGBAFormat, THREE.FloatType);
  batch.tex.needsUpdate = true;
  // how far a body's mesh reaches from its body's origin
  batch.reach = new Float32Array(nb);
  for (const [b, g] of parts) {
    const P = g.attributes.position.array;
    for (let v = 0; v < P.length; v += 3) batch.reach[b] = Math.max(batch.reach[b], Math.hypot(P[v], P[v + 1], P[v + 2]));
  }
  const mesh = (geo, rowBase) => {
    const m = new THREE.Mesh(geo, batchMaterial(rowBase));
    m.frustumCulled = false;           // culled per robot in updateBatch
    m.visible = false;
    scene3.add(m);
    return m;
  };
  batch.levels = LODS.map((l, i) => mesh(mergeBodies(l.cell ? parts.map(([b, g]) => [b, clusterGeometry(g, l.cell)]) : parts),
                                        i * MAX_ROBOTS));
  batch.counts = LODS.map(() => 0);
}

const frustum = new THREE.Frustum(), projView = new THREE.Matrix4(), sphere = new THREE.Sphere();

// Before a draw: the robots in view, each into its level's instanced call, their bodies' poses into the
// texture.
function updateBatch() {
  if (!batch.levels.length) return;
  const counts = LODS.map(() => 0), nb = batch.nbody, D = batch.data;
  if (!st.collision && st.frame) {
    frustum.setFromProjectionMatrix(projView.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse));
    const pxPerRadian = canvas.height / (2 * Math.tan(THREE.MathUtils.degToRad(camera.fov) / 2));
    for (const r of st.robots) {
      if (!r.root.visible) continue;
      const c = r.bodies[0].position;
      let R = 0;
      for (let b = 0; b < nb; b++) R = Math.max(R, r.bodies[b].position.distanceTo(c) + batch.reach[b]);
      if (!frustum.intersectsSphere(sphere.set(c, R))) continue;
      const d = camera.position.distanceTo(c), px = d > R ? R / d * pxPerRadian : Infinity;
      let l = 0;
      while (l + 1 < LODS.length && px < LODS[l + 1].px) l++;
      let o = 4 * 3 * nb * (l * MAX_ROBOTS + counts[l]++);
      for (let b = 0; b < nb; b++, o += 12) {
        const { x, y, z, w } = r.bodies[b].quaternion, p = r.bodies[b].position;
        D[o] = 1 - 2 * (y * y + z * z); D[o + 1] = 2 * (x * y - z * w); D[o + 2] = 2 * (x * z + y * w); D[o + 3] = p.x;
        D[o + 4] = 2 * (x * y + z * w); D[o + 5] = 1 - 2 * (x * x + z * z); D[o + 6] = 2 * (y * z - x * w); D[o + 7] = p.y;
        D[o + 8] = 2 * (x * z - y * w); D[o + 9] = 2 * (y * z + x * w); D[o + 10] = 1 - 2 * (x * x + y * y); D[o + 11] = p.z;
      }
    }
    batch.tex.needsUpdate = true;
  }
  batch.levels.forEach((m, i) => { m.geometry.instanceCount = counts[i]; m.visible = counts[i] > 0; });
  batch.counts = counts;
}

// One robot: a group per body holding (hidden while the batched visual meshes are shown) its collision
// primitives, and a pool of contact arrows.
function makeRobot(scene, maxContacts) {
  const root = new THREE.Group();
  const bodies = scene.bodies.map(() => { const b = new THREE.Group(); root.add(b); return b; });
  const collision = [];
  for (const g of scene.geoms) {
    const m = primitive(g);
    if (m) { bodies[g.body].add(m); collision.push({ mesh: m, body: g.body }); }
  }
  const withMesh = new Set(scene.bodies.map((b, i) => (meshGeoms && meshGeoms[b.name] ? i : -1)));
  // a body without a visual mesh keeps its primitives in the visual view
  for (const c of collision) c.visualToo = !withMesh.has(c.body);
  const arrows = [];                   // drawn by the marks' batch (updateMarks), not in the scene
  for (let i = 0; i < maxContacts; i++) {
    const a = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 0.1, 0xe8262b, 0.05, 0.03);
    a.visible = false;
    arrows.push(a);
  }
  scene3.add(root);
  const robot = { root, bodies, arrows, collision, diag: makeDiagnostics(root, maxContacts, bodies.length) };
  showShapes(robot);
  return robot;
}

function showShapes(r) {
  dirty = true;
  for (const c of r.collision) c.mesh.visible = st.collision || c.visualToo;
}

// ---- state --------------------------------------------------------------------------------------------

const st = {
  scene: null, nbody: 0, maxContacts: 0, robots: [], worlds: [], frame: null, focus: 0,
  follow: true, showContacts: true, showAll: true, paused: false, collision: false,
  target: new THREE.Vector3(0, 0, 0.5), az: -2.2, el: 0.38, dist: 2.6,
};

function setup(scene, worlds, title) {
  makeRenderer(Math.min(worlds.length, 16));
  st.scene = scene;
  st.nbody = scene.bodies.length;
  st.maxContacts = scene.max_contacts || 0;
  st.worlds = worlds.slice(0, 16);
  st.robots = st.worlds.map(() => makeRobot(scene, st.maxContacts));
  makeBatch(scene);
  makeMarks(st.robots.length, st.maxContacts);
  st.cells = !!(scene.terrain && scene.terrain.type === 'cells');
  const ground = terrainMesh(st.cells ? { type: 'plane', height: scene.terrain.height } : scene.terrain);
  scene3.add(ground);
  if (st.cells) {       // the plane stays under the tiles: the ground beyond them
    tiles.terrain = scene.terrain;
    tiles.far = ground;
    ground.position.z = scene.terrain.height - 0.02;
  }
  const sel = $('focus');
  sel.innerHTML = '';
  st.worlds.forEach((w, j) => { const o = document.createElement('option'); o.value = j; o.textContent = w; sel.append(o); });
  $('title').textContent = title || 'herd';
}

function offset(j) {
  if (st.cells) return new THREE.Vector3(0, 0, 0);      // on a field: each world where it is
  const cols = Math.ceil(Math.sqrt(st.worlds.length));
  return new THREE.Vector3((j % cols) * SPACING, -Math.floor(j / cols) * SPACING, 0);
}

function basePosition(j) {
  const f = st.frame;
  if (!f) return null;
  const p = f.body_pos, o = offset(j), b = j * st.nbody * 3;
  return new THREE.Vector3(p[b] + o.x, p[b + 1] + o.y, p[b + 2] + o.z);
}

function applyFrame(f) {
  st.frame = f;
  dirty = true;
  const nb = st.nbody, mc = st.maxContacts;
  st.robots.forEach((r, j) => {
    const o = offset(j);
    r.root.visible = st.showAll || j === st.focus;
    for (let b = 0; b < nb; b++) {
      const p = 3 * (j * nb + b), q = 4 * (j * nb + b);
      r.bodies[b].position.set(f.body_pos[p] + o.x, f.body_pos[p + 1] + o.y, f.body_pos[p + 2] + o.z);
      r.bodies[b].quaternion.set(f.body_quat[q + 1], f.body_quat[q + 2], f.body_quat[q + 3], f.body_quat[q]);
    }
    const c = f.contacts, n = c ? c.count[j] : 0;
    r.arrows.forEach((a, i) => {
      a.visible = st.showContacts && i < n;
      if (!a.visible) return;
      const k = j * mc + i;
      a.position.set(c.pos[3 * k] + o.x, c.pos[3 * k + 1] + o.y, c.pos[3 * k + 2] + o.z);
      a.setDirection(new THREE.Vector3(c.normal[3 * k], c.normal[3 * k + 1], c.normal[3 * k + 2]));
      const len = Math.min(ARROW_MAX, Math.max(ARROW_MIN, IMPULSE_SCALE * c.impulse[k]));
      a.setLength(len, Math.min(0.05, 0.3 * len), Math.min(0.03, 0.2 * len));
    });
    applyDiagnostics(r, f, j, o);
  });
  showPanels();
}

// The side panel's tables follow the frames at most every PANEL_MS (their text changing every frame would
// cost the page a layout per frame, for numbers nobody reads at 50 a second); the last frame's values are
// shown PANEL_MS after it at the latest (now: at once).
const PANEL_MS = 200;
const panel = { at: -Infinity, timer: null, shown: null };
function showPanels(now = false) {
  const wait = PANEL_MS - (performance.now() - panel.at);
  if (wait > 0 && !now) {
    if (!panel.timer) panel.timer = setTimeout(() => { panel.timer = null; showPanels(); }, wait);
    return;
  }
  clearTimeout(panel.timer);
  panel.timer = null;
  panel.at = performance.now();
  panel.shown = st.frame;
  if (!st.frame) return;
  showTerms(st.frame);
  showContactPanel(st.frame);
}

function showTerms(f) {
  const body = $('terms').tBodies[0];
  const rows = [];
  if (f.reward) rows.push(['reward', f.reward[st.focus]]);
  if (f.terms) for (const [k, v] of Object.entries(f.terms)) rows.push([k, v[st.focus]]);
  const names = rows.map((r) => r[0]).join('\n');
  if (names !== showTerms.names) {          // the rows are rebuilt only when the terms change
    showTerms.names = names;
    body.innerHTML = '';
    if (!rows.length) body.innerHTML = '<tr><td colspan="2">(no reward terms from this source)</td></tr>';
    for (const [k] of rows) {
      const tr = document.createElement('tr');
      tr.innerHTML = '<td></td><td></td>';
      tr.cells[0].textContent = k;
      body.append(tr);
    }
  }
  rows.forEach(([, v], i) => {
    const text = Number.isFinite(Number(v)) ? Number(v).toFixed(4) : '–';
    const cell = body.rows[i].cells[1];
    if (cell.textContent !== text) cell.textContent = text;
  });
}

// ---- contact diagnostics ------------------------------------------------------------------------------
// Each contact as a ring on the ground around its point, coloured by its state in the last physics step's
// answer (open, stick, slip: PROTOCOL.md 6.9); its friction impulse as a blue arrow along the ground beside the
// normal impulse's red one; each joint-limit impulse as a violet ball at the joint (the body's origin), its
// radius growing with the impulse; and a magenta diamond above the robot when its last step's contact answer
// came from the solver's fallback model.  The side panel lists the followed world's contacts.  Frames without
// the diagnostics (an older server) draw the normal impulses only.

const STATE_NAMES = ['open', 'stick', 'slip'];
const STATE_COLOURS = [0x19c8e6, 0x17b83a, 0xffb000];       // open cyan, stick green, slip amber (sRGB)
const FRICTION_COLOUR = 0x2050ff, LIMIT_COLOUR = 0x8a2be2, FALLBACK_COLOUR = 0xff00aa;
const RING_INNER = 0.035, RING_OUTER = 0.06;                 // m: around a foot's 0.03 m sphere
const LIMIT_SCALE = 0.5, LIMIT_MIN = 0.02, LIMIT_MAX = 0.08; // ball radius: m per N m s, bounds
const stateMaterials = STATE_COLOURS.map((c) => new THREE.MeshBasicMaterial({
  color: c, side: THREE.DoubleSide, polygonOffset: true, polygonOffsetFactor: -4, polygonOffsetUnits: -4 }));
const ringGeometry = new THREE.RingGeometry(RING_INNER, RING_OUTER, 28);
const limitMaterial = new THREE.MeshBasicMaterial({ color: LIMIT_COLOUR, depthTest: false });  // seen through the drives
const limitGeometry = new THREE.SphereGeometry(1, 14, 10);
const fallbackMaterial = new THREE.MeshBasicMaterial({ color: FALLBACK_COLOUR });
const fallbackGeometry = new THREE.OctahedronGeometry(0.07);
const zAxis = new THREE.Vector3(0, 0, 1);

function makeDiagnostics(root, maxContacts, nbody) {
  const d = { rings: [], friction: [], limits: [], fallback: new THREE.Mesh(fallbackGeometry, fallbackMaterial) };
  for (let i = 0; i < maxContacts; i++) {
    const ring = new THREE.Mesh(ringGeometry, stateMaterials[0]);       // drawn by the marks' batch
    const arrow = new THREE.ArrowHelper(zAxis, new THREE.Vector3(), 0.1, FRICTION_COLOUR, 0.04, 0.025);
    ring.visible = arrow.visible = false;
    d.rings.push(ring);
    d.friction.push(arrow);
  }
  for (let b = 0; b < nbody; b++) {
    const ball = new THREE.Mesh(limitGeometry, limitMaterial);
    ball.visible = false;
    ball.renderOrder = 10;           // after the robot, over it
    root.add(ball);
    d.limits.push(ball);
  }
  d.fallback.visible = false;
  root.add(d.fallback);
  return d;
}

// ---- the contact marks, batched ----------------------------------------------------------------------------
// Each robot's contact arrows and rings are objects of their own (their poses, colours and visibility set per
// frame below), but as a draw call each they would cost more than the robots: they are drawn instead by three
// calls for all robots, an instanced mesh of the arrows' cones and one of the rings (each instance in its
// object's colour), and one set of line segments for the arrows' shafts.  The joint-limit balls and fallback
// marks (rare) stay meshes in the scene.
const marks = { cones: null, rings: null, shafts: null };
const _p0 = new THREE.Vector3(), _p1 = new THREE.Vector3();

function makeMarks(nrobots, maxContacts) {
  const n = Math.max(1, nrobots * maxContacts);
  const inst = (geo, mat, count) => {
    const m = new THREE.InstancedMesh(geo, mat, count);
    m.setColorAt(0, new THREE.Color(1, 1, 1));        // the instance colours exist before the first draw
    m.count = 0;
    m.frustumCulled = false;
    scene3.add(m);
    return m;
  };
  // the ArrowHelper's cone: a five-sided cone of unit height and diameter, its tip at the origin's +y
  marks.cones = inst(new THREE.CylinderGeometry(0, 0.5, 1, 5, 1).translate(0, -0.5, 0), new THREE.MeshBasicMaterial(), 2 * n);
  const s = stateMaterials[0];
  marks.rings = inst(ringGeometry, new THREE.MeshBasicMaterial({ side: s.side, polygonOffset: true,
    polygonOffsetFactor: s.polygonOffsetFactor, polygonOffsetUnits: s.polygonOffsetUnits }), n);
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(new Float32Array(2 * 2 * n * 3), 3));
  g.setAttribute('color', new THREE.BufferAttribute(new Float32Array(2 * 2 * n * 3), 3));
  g.setDrawRange(0, 0);
  marks.shafts = new THREE.LineSegments(g, new THREE.LineBasicMaterial({ vertexColors: true }));
  marks.shafts.frustumCulled = false;
  scene3.add(marks.shafts);
}

// Before a draw: the visible arrows and rings of the shown robots into the batch.
function updateMarks() {
  if (!marks.cones) return;
  let nc = 0, nr = 0, ns = 0;
  const P = marks.shafts.geometry.attributes.position, C = marks.shafts.geometry.attributes.color;
  const arrow = (a) => {
    a.updateMatrixWorld(true);
    marks.cones.setMatrixAt(nc, a.cone.matrixWorld);
    marks.cones.setColorAt(nc++, a.cone.material.color);
    _p0.set(0, 0, 0).applyMatrix4(a.line.matrixWorld);
    _p1.set(0, 1, 0).applyMatrix4(a.line.matrixWorld);
    const c = a.line.material.color;
    P.setXYZ(2 * ns, _p0.x, _p0.y, _p0.z); P.setXYZ(2 * ns + 1, _p1.x, _p1.y, _p1.z);
    C.setXYZ(2 * ns, c.r, c.g, c.b); C.setXYZ(2 * ns + 1, c.r, c.g, c.b);
    ns++;
  };
  for (const r of st.robots) {
    if (!r.root.visible) continue;
    for (const a of r.arrows) if (a.visible) arrow(a);
    for (const a of r.diag.friction) if (a.visible) arrow(a);
    for (const ring of r.diag.rings) {
      if (!ring.visible) continue;
      ring.updateMatrix();
      marks.rings.setMatrixAt(nr, ring.matrix);
      marks.rings.setColorAt(nr++, ring.material.color);
    }
  }
  for (const m of [marks.cones, marks.rings]) m.instanceMatrix.needsUpdate = m.instanceColor.needsUpdate = true;
  marks.cones.count = nc;
  marks.rings.count = nr;
  marks.cones.visible = nc > 0;
  marks.rings.visible = nr > 0;
  P.needsUpdate = C.needsUpdate = true;
  marks.shafts.geometry.setDrawRange(0, 2 * ns);
  marks.shafts.visible = ns > 0;
}

// Robot r (world j of frame f, drawn at offset o): its rings, friction arrows, limit balls and fallback mark.
function applyDiagnostics(r, f, j, o) {
  const c = f.contacts, g = f.diag, d = r.diag, mc = st.maxContacts, nb = st.nbody;
  const on = st.showContacts && c && c.state, n = on ? c.count[j] : 0;
  const v = new THREE.Vector3();
  d.rings.forEach((ring, i) => {
    const arrow = d.friction[i];
    ring.visible = arrow.visible = false;
    if (i >= n) return;
    const k = j * mc + i;
    const p = new THREE.Vector3(c.pos[3 * k] + o.x, c.pos[3 * k + 1] + o.y, c.pos[3 * k + 2] + o.z);
    const nrm = new THREE.Vector3(c.normal[3 * k], c.normal[3 * k + 1], c.normal[3 * k + 2]);
    if (nrm.lengthSq() < 0.5) nrm.copy(zAxis);
    ring.material = stateMaterials[c.state[k]] || stateMaterials[0];
    ring.quaternion.setFromUnitVectors(zAxis, nrm);
    ring.position.copy(p).addScaledVector(nrm, 0.002);
    ring.visible = true;
    if (!(c.impulse[k] > 0)) r.arrows[i].visible = false;   // an open contact has no normal impulse to show
    v.set(c.friction[3 * k], c.friction[3 * k + 1], c.friction[3 * k + 2]);
    const m = v.length();
    if (m > 1e-6) {
      const len = Math.min(ARROW_MAX, Math.max(ARROW_MIN, IMPULSE_SCALE * m));
      arrow.position.copy(p).addScaledVector(nrm, 0.01);
      arrow.setDirection(v.divideScalar(m));
      arrow.setLength(len, Math.min(0.04, 0.3 * len), Math.min(0.025, 0.2 * len));
      arrow.visible = true;
    }
  });
  d.limits.forEach((ball, b) => {
    const l = on && g && g.limit ? Math.abs(g.limit[j * nb + b]) : 0;
    ball.visible = l > 1e-6;
    if (!ball.visible) return;
    ball.position.copy(r.bodies[b].position);
    ball.scale.setScalar(Math.min(LIMIT_MAX, Math.max(LIMIT_MIN, LIMIT_SCALE * l)));
  });
  d.fallback.visible = !!(on && g && g.fallback && g.fallback[j]);
  if (d.fallback.visible) d.fallback.position.copy(r.bodies[0].position).add(new THREE.Vector3(0, 0, 0.45));
}

// The followed world's contacts in the side panel: body, state (in its colour), normal and friction impulse
// (N s); then its joint-limit impulses and whether its last step's contact answer came from the fallback.
function showContactPanel(f) {
  const box = $('contactpanel');
  if (!box) return;
  const c = f.contacts, g = f.diag, j = st.focus, mc = st.maxContacts, nb = st.nbody;
  box.hidden = !(c && c.state);
  if (box.hidden) return;
  const names = st.scene.bodies.map((b) => b.name);
  const rows = [];
  for (let i = 0; i < c.count[j]; i++) {
    const k = j * mc + i, s = c.state[k];
    const ft = Math.hypot(c.friction[3 * k], c.friction[3 * k + 1], c.friction[3 * k + 2]);
    rows.push([names[c.body[k]] || '?', STATE_NAMES[s] || '?', '#' + STATE_COLOURS[s].toString(16).padStart(6, '0'),
               c.impulse[k].toFixed(4), ft.toFixed(4)]);
  }
  const limits = [];
  if (g && g.limit) for (let b = 1; b < nb; b++) {
    const l = g.limit[j * nb + b];
    if (Math.abs(l) > 1e-6) limits.push(names[b] + ' ' + l.toFixed(4));
  }
  const fb = g && g.fallback ? !!g.fallback[j] : false;
  const key = JSON.stringify([rows, limits, fb]);
  if (key === showContactPanel.key) return;            // rebuilt only when a value shown changes
  showContactPanel.key = key;
  const body = $('contacts-table').tBodies[0];
  body.innerHTML = '';
  for (const [name, state, colour, ln, lt] of rows) {
    const tr = document.createElement('tr');
    tr.innerHTML = '<td></td><td></td><td></td><td></td>';
    tr.cells[0].textContent = name;
    tr.cells[1].textContent = state;
    tr.cells[1].style.color = colour;
    tr.cells[1].className = 'state-' + state;
    tr.cells[2].textContent = ln;
    tr.cells[3].textContent = lt;
    body.append(tr);
  }
  if (!rows.length) body.innerHTML = '<tr><td colspan="4">(no contact)</td></tr>';
  $('limits').textContent = limits.length ? 'joint limits: ' + limits.join(', ') : 'joint limits: none active';
  $('fallback').textContent = 'contact answer: ' + (fb ? 'fallback model' : 'the solver\'s own');
  $('fallback').className = fb ? 'fallback-on' : '';
}

// Test hook: the contact diagnostics of world j (default the followed one) in the current frame, as drawn.
api.contacts = (j = st.focus) => {
  const f = st.frame, c = f && f.contacts, mc = st.maxContacts, out = [];
  if (!c) return out;
  for (let i = 0; i < c.count[j]; i++) {
    const k = j * mc + i;
    out.push({ pos: [c.pos[3 * k], c.pos[3 * k + 1], c.pos[3 * k + 2]], impulse: c.impulse[k],
               state: c.state ? c.state[k] : null, ring: st.robots[j].diag.rings[i].visible,
               colour: c.state ? STATE_COLOURS[c.state[k]] : null });
  }
  return out;
};
api.fallbackShown = (j = st.focus) => st.robots[j].diag.fallback.visible;

// ---- camera and drawing ---------------------------------------------------------------------------------

// The drawing buffer's size: the canvas's on the page times the render scale.
const bufferSize = () => [Math.max(1, Math.round(canvas.clientWidth * rs.scale)),
                          Math.max(1, Math.round(canvas.clientHeight * rs.scale))];

function resize() {
  const [w, h] = bufferSize();
  if (canvas.width !== w || canvas.height !== h) {
    renderer.setSize(w, h, false);
    camera.aspect = canvas.clientWidth / Math.max(1, canvas.clientHeight);
    camera.updateProjectionMatrix();
  }
}

function placeCamera() {
  if (st.follow) {
    const b = basePosition(st.focus);
    if (b) st.target.copy(b);
  }
  const ce = Math.cos(st.el);
  camera.position.set(st.target.x + st.dist * ce * Math.cos(st.az), st.target.y + st.dist * ce * Math.sin(st.az),
                      st.target.z + st.dist * Math.sin(st.el));
  camera.lookAt(st.target);
  camera.updateMatrixWorld();
  if (st.cells && tiles.fetch) updateTiles(st.target.x, st.target.y);
}

// Something to draw since the last draw: a new frame, the camera moved, a toggle, a new size.
let dirty = true;
const touch = () => { dirty = true; };

function drawIfNeeded() {
  const [w, h] = bufferSize();
  if (dirty || canvas.width !== w || canvas.height !== h) draw(true);
}

// sample: may be one of the draws whose cost the adaptive render scale measures
function draw(sample = false) {
  const t0 = performance.now();
  dirty = false;
  api.draws++;
  resize();
  placeCamera();
  updateBatch();
  updateMarks();
  renderer.render(scene3, camera);
  if (rs.delay > 0) while (performance.now() - t0 < rs.delay);
  if (sample && rs.fixed === null && ++rs.n % rs.every === 0) {
    const gl = renderer.getContext();
    gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, rs.px);
    frameSample(performance.now() - t0);
  }
  if (st.frame) api.drawnStep = st.frame.step;
  // on a cell terrain, drawn once the tiles around the followed robot are in place too
  const tilesIn = !st.cells || !tiles.fetch || (tiles.center !== null && tiles.pending.size === 0);
  if (st.frame && !api.drawn && tilesIn) {
    api.drawn = true;
    api.timing.drawn = performance.now();
    document.documentElement.dataset.herdDrawn = '1';
  }
}

// Test hook: where the focused world's base is, in the world and on the canvas (pixels of the page, origin top
// left; width and height are the canvas's on the page, renderWidth and renderHeight its drawing buffer's).
api.info = () => {
  const b = basePosition(st.focus);
  const out = { step: st.frame ? st.frame.step : null, focus: st.focus, world: st.worlds[st.focus],
                follow: st.follow, paused: st.paused, frames: api.frames,
                width: canvas.clientWidth, height: canvas.clientHeight, renderWidth: canvas.width,
                renderHeight: canvas.height, renderScale: rs.scale,
                // the shown frame was made after its source paused (a live source; a replay's frames never are)
                framePaused: !!(st.frame && st.frame.paused),
                camera: { position: camera.position.toArray(), target: st.target.toArray(), fov: camera.fov,
                          aspect: camera.aspect, up: camera.up.toArray() } };
  if (b) {
    out.base = b.toArray();
    const p = b.clone().project(camera);
    out.pixel = [(p.x + 1) / 2 * canvas.clientWidth, (1 - p.y) / 2 * canvas.clientHeight];
  }
  return out;
};
// Test hook: the mean wall time (ms) of n synchronous draws of the current frame (the GPU finished each),
// to tell the page's drawing cost from the rate at which the browser gives it animation frames.
api.drawCost = (n = 20) => {
  const gl = renderer.getContext(), px = new Uint8Array(4);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) { draw(); gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px); }
  return (performance.now() - t0) / n;
};
api.setFollow = (on) => { $('follow').checked = on; st.follow = on; touch(); };
// Test hook: the orbit camera's target [x, y, z], distance (m), azimuth and elevation (rad); those given.
api.setView = ({ target, dist, az, el }) => {
  if (target) st.target.set(target[0], target[1], target[2]);
  if (dist !== undefined) st.dist = dist;
  if (az !== undefined) st.az = az;
  if (el !== undefined) st.el = el;
  touch();
};

// ---- controls -------------------------------------------------------------------------------------------

let source = null;   // {setPaused(bool)}
let pausedAt = -1e9;  // when the page last asked to pause or play (frames sent before that do not undo it)

function setPaused(p) {
  pausedAt = performance.now();
  st.paused = p;
  $('play').textContent = p ? 'play' : 'pause';
  if (source) source.setPaused(p);
}
api.setPaused = setPaused;

$('play').onclick = () => setPaused(!st.paused);
window.addEventListener('keydown', (e) => { if (e.code === 'Space') { e.preventDefault(); setPaused(!st.paused); } });
$('focus').onchange = (e) => { st.focus = Number(e.target.value); if (st.frame) applyFrame(st.frame); };
$('follow').onchange = (e) => { st.follow = e.target.checked; touch(); };
$('contacts').onchange = (e) => { st.showContacts = e.target.checked; if (st.frame) applyFrame(st.frame); };
$('collision').onchange = (e) => { st.collision = e.target.checked; st.robots.forEach(showShapes); };
api.setCollision = (on) => { $('collision').checked = on; st.collision = on; st.robots.forEach(showShapes); };
$('showall').onchange = (e) => { st.showAll = e.target.checked; if (st.frame) applyFrame(st.frame); };

let drag = null;
canvas.addEventListener('pointerdown', (e) => { drag = [e.clientX, e.clientY]; canvas.setPointerCapture(e.pointerId); });
canvas.addEventListener('pointerup', () => { drag = null; });
canvas.addEventListener('pointermove', (e) => {
  if (!drag) return;
  st.az -= 0.008 * (e.clientX - drag[0]);
  st.el = Math.min(1.45, Math.max(-0.2, st.el + 0.008 * (e.clientY - drag[1])));
  drag = [e.clientX, e.clientY];
  touch();
});
canvas.addEventListener('wheel', (e) => { e.preventDefault(); st.dist = Math.min(60, Math.max(0.4, st.dist * Math.exp(0.001 * e.deltaY))); touch(); },
                        { passive: false });

// ---- sources --------------------------------------------------------------------------------------------

function loadMeshes(buf) {
  meshGeoms = buf ? parseGLB(buf) : null;
  api.timing.meshes = performance.now();
  api.meshes = meshGeoms ? Object.keys(meshGeoms) : [];
  $('collision').disabled = !meshGeoms;
  if (!meshGeoms) { $('collision').checked = true; st.collision = true; }
}

function startReplay(R) {
  api.mode = 'replay';
  $('mode').textContent = 'replay';
  loadMeshes(R.meshes ? b64bytes(R.meshes).buffer : null);
  setup(R.scene, R.worlds, R.title);
  tiles.fetch = (key) => (R.terrain_tiles || {})[key] || null;
  const k = R.worlds.length, nb = R.scene.bodies.length, mc = R.scene.max_contacts || 0, F = R.nframes;
  const pos = b64floats(R.body_pos), quat = b64floats(R.body_quat);
  const cc = R.contacts ? b64floats(R.contacts.count) : null;
  const cp = R.contacts ? b64floats(R.contacts.pos) : null;
  const cn = R.contacts ? b64floats(R.contacts.normal) : null;
  const ci = R.contacts ? b64floats(R.contacts.impulse) : null;
  const cs = R.contacts && R.contacts.state ? b64floats(R.contacts.state) : null;     // the diagnostics, when kept
  const cf = cs ? b64floats(R.contacts.friction) : null, cb = cs ? b64floats(R.contacts.body) : null;
  const dfb = R.diag ? b64floats(R.diag.fallback) : null, dl = R.diag ? b64floats(R.diag.limit) : null;
  const rew = R.reward ? b64floats(R.reward) : null;
  const terms = R.terms ? Object.fromEntries(Object.entries(R.terms).map(([n, s]) => [n, b64floats(s)])) : null;
  const frameAt = (i) => ({
    step: i,
    body_pos: pos.subarray(i * k * nb * 3, (i + 1) * k * nb * 3),
    body_quat: quat.subarray(i * k * nb * 4, (i + 1) * k * nb * 4),
    contacts: cc ? { count: cc.subarray(i * k, (i + 1) * k), pos: cp.subarray(i * k * mc * 3, (i + 1) * k * mc * 3),
                     normal: cn.subarray(i * k * mc * 3, (i + 1) * k * mc * 3), impulse: ci.subarray(i * k * mc, (i + 1) * k * mc),
                     ...(cs ? { state: cs.subarray(i * k * mc, (i + 1) * k * mc), body: cb.subarray(i * k * mc, (i + 1) * k * mc),
                                friction: cf.subarray(i * k * mc * 3, (i + 1) * k * mc * 3) } : {}) }
                 : null,
    diag: dfb ? { fallback: dfb.subarray(i * k, (i + 1) * k), limit: dl.subarray(i * k * nb, (i + 1) * k * nb) } : null,
    reward: rew ? rew.subarray(i * k, (i + 1) * k) : null,
    terms: terms ? Object.fromEntries(Object.entries(terms).map(([n, a]) => [n, a.subarray(i * k, (i + 1) * k)])) : null,
  });
  $('replaybar').hidden = false;
  const scrub = $('scrub');
  scrub.max = F - 1;
  let t = 0, last = performance.now(), shown = -1;
  source = { setPaused() { last = performance.now(); } };
  scrub.oninput = () => { t = Number(scrub.value) * R.dt; };
  api.replay = { nframes: F, dt: R.dt, seek: (i) => { t = i * R.dt; } };
  function tick(now) {
    if (!st.paused) t += (now - last) / 1000;
    last = now;
    if (t >= F * R.dt) t = R.loop === false ? (F - 1) * R.dt : 0;
    const i = Math.min(F - 1, Math.floor(t / R.dt));
    if (i !== shown) { applyFrame(frameAt(i)); api.frames++; shown = i; scrub.value = i; }
    $('time').textContent = (i * R.dt).toFixed(2) + ' s';
    $('status').textContent = 'frame ' + i + ' / ' + F;
    drawIfNeeded();
    requestAnimationFrame(tick);
  }
  api.ready = true;
  requestAnimationFrame(tick);
}

async function startLive() {
  api.mode = 'live';
  $('mode').textContent = 'live';
  const info = await (await fetch('scene')).json();
  loadMeshes(info.meshes ? await (await fetch(info.meshes)).arrayBuffer() : null);
  setup(info.scene, info.worlds, info.title);
  tiles.fetch = async (key) => {
    const [i, j] = key.split(',');
    const r = await fetch('terrain?tx=' + i + '&ty=' + j);
    if (!r.ok) throw new Error('terrain tile ' + key + ': ' + r.status + ' ' + (await r.text()));
    return r.json();
  };
  setPausedRemote(info.paused);
  source = {
    setPaused(p) {
      fetch('control', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ paused: p }) });
    },
  };
  const arrivals = [];          // arrival times of the frames of the last second
  let statusAt = -Infinity;
  const es = new EventSource('events');
  // frames are applied at the next animation frame, the newest only: a page drawing slower than frames
  // arrive does not pose the robots of frames nobody sees
  let pending = null;
  es.onmessage = (e) => {
    const f = JSON.parse(e.data);
    pending = f;
    api.frames++;
    const now = performance.now();
    arrivals.push(now);
    while (arrivals[0] < now - 1000) arrivals.shift();
    if (now - statusAt >= PANEL_MS) {        // as the side panel: not a layout per frame
      statusAt = now;
      $('status').textContent = (f.step === null ? 'frame ' + api.frames : 'step ' + f.step) + ' · ' +
                                arrivals.length + ' frames/s' + (f.paused ? ' · paused' : '');
    }
    if (f.paused !== st.paused && now - pausedAt > 500) setPausedRemote(f.paused);
    api.ready = true;
  };
  es.onerror = () => { $('status').textContent = 'disconnected (retrying)'; };
  function tick() {
    if (pending) { applyFrame(pending); pending = null; }
    drawIfNeeded();
    requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}

function setPausedRemote(p) {
  st.paused = !!p;
  $('play').textContent = st.paused ? 'play' : 'pause';
}

if (window.HERD_REPLAY) startReplay(window.HERD_REPLAY);
else startLive().catch((e) => { errors.push(String(e)); $('status').textContent = 'error: ' + e; });
