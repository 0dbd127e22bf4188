"""The terrain curriculum's state (protocol minor 5): the spec's terrain_kinds, infos["terrain_level"] and
infos["terrain_kind"] after every reset and step of a rough session (zero copy, subsets, reset_mask, several
servers), the same levels as the critic observation's terrain_level, and flat tasks without them."""
import numpy as np
import zmq

import herd

ROUGH = "anymal_c-rough"
KINDS = ["slope_up", "slope_down", "rough_slope", "stairs_up", "stairs_down", "obstacles"]
LEVEL = 243                     # the critic observation's terrain_level (PROTOCOL.md 6.1)


def acts(n, k=0, ad=12):
    rng = np.random.default_rng(3000 + k)
    return rng.uniform(-1, 1, size=(n, ad)).astype(np.float32)


def test_spec_lists_the_kinds(server):
    with herd.Client(server, timeout=10) as c:
        h = c.hello()
        assert h["protocol_minor"] >= 5
        specs = {s["name"]: s for s in h["envs"]}
        assert specs[ROUGH]["terrain_kinds"] == KINDS
        assert "terrain_kinds" not in specs["anymal_c-walk"]
        s = c.make(ROUGH, 2, seed=1)
        assert s["spec"]["terrain_kinds"] == KINDS
        r = c.reset(s["session"])
        assert r["info"]["terrain_level"].dtype == np.int32 and r["info"]["terrain_kind"].shape == (2,)
        c.close_session(s["session"])


def test_infos_after_reset_and_step_are_the_worlds_tiles(server):
    n = 40
    with herd.make_vec(ROUGH, n, address=server, seed=7, critic_obs=True, episode_seconds=1.0) as env:
        assert env.terrain_kinds == KINDS
        obs, infos = env.reset()
        level, kind = infos["terrain_level"], infos["terrain_kind"]
        assert level.shape == (n,) and level.dtype == np.int32 and kind.dtype == np.int32
        assert infos["_terrain_level"].all() and infos["_terrain_kind"].all()
        np.testing.assert_array_equal(level, infos["critic_obs"][:, LEVEL])
        assert level.min() >= 0 and level.max() <= 5, "first levels are drawn from 0-5"
        first_kind = kind.copy()
        # a world's kind is its column's: 20 columns of n / 20 worlds, one kind per column
        for col in range(20):
            assert len(set(kind[col * 2:col * 2 + 2])) == 1
        assert set(kind) <= set(range(len(KINDS))) and len(set(kind)) == len(KINDS)
        moved = 0
        for k in range(56):
            obs, rew, term, trunc, infos = env.step(acts(n, k))
            np.testing.assert_array_equal(infos["terrain_kind"], first_kind)
            # after an autoreset the new episode's level, as the critic observation states it
            np.testing.assert_array_equal(infos["terrain_level"], infos["critic_obs"][:, LEVEL])
            if "autoreset" in infos:
                moved += int((infos["terrain_level"][infos["autoreset"]] != level[infos["autoreset"]]).sum())
            level = np.array(infos["terrain_level"])
        assert moved > 0, "levels moved at the resets"

        # a reset of some worlds: the others keep their last tile, the masks are the reset worlds
        mask = np.zeros(n, bool)
        mask[[3, 30]] = True
        obs, infos = env.reset(options={"reset_mask": mask})
        np.testing.assert_array_equal(infos["_terrain_level"], mask)
        np.testing.assert_array_equal(infos["_terrain_kind"], mask)
        np.testing.assert_array_equal(infos["terrain_level"][~mask], level[~mask])
        np.testing.assert_array_equal(infos["terrain_level"][mask], infos["critic_obs"][mask, LEVEL])
        np.testing.assert_array_equal(infos["terrain_kind"], first_kind)

        # a subset step (EnvPool's send / recv): rows follow env_id
        ids = np.array([33, 0, 17])
        env.send(acts(3), ids)
        obs, rew, term, trunc, infos = env.recv()
        np.testing.assert_array_equal(infos["env_id"], ids)
        np.testing.assert_array_equal(infos["terrain_kind"], first_kind[ids])
        np.testing.assert_array_equal(infos["terrain_level"], infos["critic_obs"][:, LEVEL])


def test_infos_are_zero_copy(server):
    def root(a):
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a
    with herd.make_vec(ROUGH, 64, address=server, seed=1) as env:
        for obs, infos in (env.reset(), (lambda r: (r[0], r[4]))(env.step(acts(64)))):
            for key in ("terrain_level", "terrain_kind"):
                a = infos[key]
                assert not a.flags.owndata and a.flags.aligned
                assert isinstance(root(a), memoryview) and isinstance(root(a).obj, zmq.Frame)
                assert root(a).obj is root(obs).obj


def test_two_servers_gather_the_rows(server, server2):
    n = 40
    with herd.make_vec(ROUGH, n, address=[server, server2], seed=2, critic_obs=True) as env:
        obs, infos = env.reset()
        assert infos["terrain_level"].shape == (n,)
        np.testing.assert_array_equal(infos["terrain_level"], infos["critic_obs"][:, LEVEL])
        infos = env.step(acts(n))[4]
        np.testing.assert_array_equal(infos["terrain_level"], infos["critic_obs"][:, LEVEL])
        assert infos["terrain_kind"].shape == (n,) and infos["terrain_kind"].min() >= 0


def test_flat_tasks_have_none(server):
    with herd.make_vec("anymal_c-walk", 4, address=server, seed=1) as env:
        assert env.terrain_kinds == []
        _, infos = env.reset()
        assert "terrain_level" not in infos and "terrain_kind" not in infos
        infos = env.step(acts(4))[4]
        assert "terrain_level" not in infos and "_terrain_kind" not in infos
