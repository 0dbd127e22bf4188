#!/usr/bin/python3
"""Checks the Kubernetes manifests (deploy/k8s) for what an operator relies on, without a cluster.

    /usr/bin/python3 tests/deploy/k8s_test.py [--server build/herd-server]

The manifests are rendered with `kubectl kustomize deploy/k8s` when kubectl is on PATH, else kustomization.yaml's
resources, images and replicas are applied here.  Checks ("ok - ..." / "not ok - ...", then "N passed, M failed"):
  image          a pinned version equal to herd-server's, never :latest
  make-image     `make -n image` tags herd:<version> and herd:<git sha> and passes both (and the build time) to the
                 Dockerfile, whose OCI labels (version, revision, created) are those build arguments
  rollout        updateStrategy OnDelete (a pod's sessions die with it) and a PodDisruptionBudget selecting the pods
  selectors      Service, PDB and NetworkPolicy select the StatefulSet's pod labels; Service target ports exist
  threads        HERD_THREADS comes from the container's own CPU limit (Downward API); requests == limits
  metrics        HERD_METRICS port == the metrics containerPort == the scrape annotation; NetworkPolicy admits it
  grace          terminationGracePeriodSeconds covers the drain of one maximal request
  keys           kubectl kustomize makes the CURVE key Secrets (from keys made by --keygen); the server uses them
  memory         the memory limit holds HERD_MAX_WORLDS worlds at the per-world memory measured now on a real
                 herd-server (VmRSS growth of a 16,384-world session), plus the idle server and message buffers
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(ROOT, "deploy", "k8s")
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(("ok - " if cond else "not ok - ") + name + (": " + detail if detail else ""), flush=True)


def render(server):
    if shutil.which("kubectl"):
        # a copy with fresh CURVE keys: the kustomization makes its Secrets from keys/ (never committed)
        tmp = tempfile.mkdtemp(prefix="herd-k8s-")
        work = os.path.join(tmp, "k8s")
        shutil.copytree(K8S, work, ignore=shutil.ignore_patterns("keys"))
        subprocess.run([server, "--keygen", os.path.join(work, "keys")], check=True, capture_output=True, timeout=30)
        out = subprocess.run(["kubectl", "kustomize", work], capture_output=True, text=True, timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
        if out.returncode == 0:
            return list(yaml.safe_load_all(out.stdout)), "kubectl kustomize"
        print("kubectl kustomize failed (%s); rendering here" % out.stderr.strip()[:200])
    kust = yaml.safe_load(open(os.path.join(K8S, "kustomization.yaml")))
    docs = []
    for r in kust["resources"]:
        docs += [d for d in yaml.safe_load_all(open(os.path.join(K8S, r))) if d]
    for d in docs:
        if d["kind"] == "StatefulSet":
            for rep in kust.get("replicas", []):
                if rep["name"] == d["metadata"]["name"]:
                    d["spec"]["replicas"] = rep["count"]
            for c in d["spec"]["template"]["spec"]["containers"]:
                for im in kust.get("images", []):
                    name, _, tag = c["image"].partition(":")
                    if name == im["name"]:
                        c["image"] = "%s:%s" % (im.get("newName", name), im.get("newTag", tag))
    return docs, "kustomization.yaml applied by this test"


def quantity_bytes(q):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G)?", str(q))
    mult = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 1e3, "M": 1e6, "G": 1e9}
    return float(m.group(1)) * mult[m.group(2)]


def server_version():
    for dirpath, _, files in os.walk(os.path.join(ROOT, "server")):
        for f in files:
            if f.endswith(".h"):
                m = re.search(r'#define HERD_VERSION "([^"]+)"', open(os.path.join(dirpath, f)).read())
                if m:
                    return m.group(1)
    return None


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure_per_world(server, worlds=16384):
    """VmRSS growth of a real herd-server when a `worlds`-world anymal_c-walk session is made and stepped."""
    import numpy as np
    import herd
    from herd.local import LocalServer
    with LocalServer(threads=1, binary=server) as srv:
        with herd.Client(srv.address, timeout=60) as c:
            c.ping()
        idle = rss_kib(srv.proc.pid)
        with herd.make_vec("anymal_c-walk", worlds, address=srv.address, seed=0, timeout=120) as envs:
            envs.reset()
            envs.step(np.zeros((worlds, envs.act_dim), np.float32))
            time.sleep(0.2)
            loaded = rss_kib(srv.proc.pid)
    return idle * 1024, (loaded - idle) * 1024 / worlds


def make_image_dry_run(version):
    """The commands `make image` would run (make -n), and what they tag and pass."""
    sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                         timeout=30).stdout.strip()
    out = subprocess.run(["make", "-n", "--no-print-directory", "image", "IMAGE=herd"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60).stdout
    tags = set(re.findall(r"-t (\S+)", out))
    args = dict(re.findall(r"--build-arg (\w+)=(\S+)", out))
    docker = open(os.path.join(ROOT, "Dockerfile")).read()
    labels = dict(re.findall(r'org\.opencontainers\.image\.(\w+)="\$\{(\w+)\}"', docker))
    good = (bool(sha) and tags == {"herd:%s" % version, "herd:%s" % sha} and args.get("VERSION") == version
            and args.get("REVISION") == sha and "CREATED" in args
            and labels.get("version") == "VERSION" and labels.get("revision") == "REVISION"
            and labels.get("created") == "CREATED")
    return good, "tags %s, build args %s, OCI labels from %s" % (sorted(tags), sorted(args), labels)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, "build", "herd-server"))
    a = ap.parse_args()
    docs, how = render(a.server)
    print("# manifests rendered with " + how)
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    sts = by_kind["StatefulSet"][0]
    pod = sts["spec"]["template"]
    labels = pod["metadata"]["labels"]
    c = pod["spec"]["containers"][0]
    env = {e["name"]: e for e in c.get("env", [])}
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}

    version = server_version()
    check("image", c["image"].endswith(":" + str(version)) and not c["image"].endswith(":latest"),
          "%s, herd-server %s" % (c["image"], version))

    good, detail = make_image_dry_run(version)
    check("make-image", good, detail)

    check("rollout: OnDelete", sts["spec"].get("updateStrategy", {}).get("type") == "OnDelete")
    pdbs = by_kind.get("PodDisruptionBudget", [])
    check("rollout: PodDisruptionBudget", len(pdbs) == 1 and pdbs[0]["spec"]["selector"]["matchLabels"].items() <= labels.items()
          and ("maxUnavailable" in pdbs[0]["spec"] or "minAvailable" in pdbs[0]["spec"]))

    svc = by_kind["Service"][0]
    np_ = by_kind["NetworkPolicy"][0]
    check("selectors: Service", svc["spec"]["selector"].items() <= labels.items()
          and all(p["targetPort"] in ports for p in svc["spec"]["ports"]), str(svc["spec"]["ports"]))
    check("selectors: NetworkPolicy", np_["spec"]["podSelector"]["matchLabels"].items() <= labels.items())
    check("selectors: StatefulSet", sts["spec"]["selector"]["matchLabels"].items() <= labels.items())

    thr = env.get("HERD_THREADS", {}).get("valueFrom", {}).get("resourceFieldRef", {})
    res = c["resources"]
    check("threads: from the CPU limit", thr.get("resource") == "limits.cpu" and thr.get("containerName") == c["name"],
          str(thr))
    check("threads: Guaranteed QoS", res["requests"] == res["limits"], str(res))

    maddr = env.get("HERD_METRICS", {}).get("value", "")
    mport = int(maddr.rsplit(":", 1)[1]) if ":" in maddr else None
    ann = pod["metadata"].get("annotations", {})
    np_ports = [p["port"] for rule in np_["spec"]["ingress"] for p in rule.get("ports", [])]
    check("metrics: port", mport is not None and mport == ports.get("metrics") == int(ann.get("prometheus.io/port", -1)),
          "HERD_METRICS=%s, containerPort %s, annotation %s" % (maddr, ports.get("metrics"), ann.get("prometheus.io/port")))
    check("metrics: NetworkPolicy admits the scrape", mport in np_ports, str(np_ports))

    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    drain = env.get("HERD_DRAIN_TIMEOUT", {}).get("value")
    need = float(drain) + 5 if drain else 10
    check("grace", grace >= need, "terminationGracePeriodSeconds %s, drain deadline %s" % (grace, drain))

    secrets = {d["metadata"]["name"] for d in by_kind.get("Secret", [])}
    if how.startswith("kubectl"):
        check("keys: Secrets generated", {"herd-server-keys", "herd-client-keys"} <= secrets, str(sorted(secrets)))
    check("keys: the server runs with CURVE", "HERD_CURVE_SECRET_KEY_FILE" in env and "HERD_AUTHORIZED_KEYS" in env
          and "HERD_INSECURE" not in env)
    max_worlds = int(env["HERD_MAX_WORLDS"]["value"])
    limit = quantity_bytes(res["limits"]["memory"])
    try:
        idle, per_world = measure_per_world(a.server)
    except Exception as e:   # pragma: no cover - reported as a failure with its reason
        check("memory", False, "could not measure: %r" % e)
    else:
        buffers = 2 * 16 << 20          # a 16 MiB request and its reply in flight
        need = idle + max_worlds * per_world * 1.25 + buffers
        check("memory", limit >= need, "limit %.0f MiB >= %.0f MiB needed (idle %.1f MiB + %d worlds x %.0f B "
              "measured per world x 1.25 + %d MiB buffers)" % (limit / 2**20, need / 2**20, idle / 2**20, max_worlds,
                                                              per_world, buffers >> 20))
    print("%d passed, %d failed" % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
