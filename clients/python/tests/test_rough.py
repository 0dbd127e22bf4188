"""anymal_c-rough through the server and the vector env: the 235 observations (187 heights), the critic's 244 with
the terrain level last, the level range keys, and the same seed giving the same steps."""
import numpy as np

import herd

ROUGH = "anymal_c-rough"


def acts(n, k=0):
    rng = np.random.default_rng(3000 + k)
    return rng.uniform(-1, 1, size=(n, 12)).astype(np.float32)


def test_rough_session_steps_with_levels_in_range(server):
    n = 8
    kw = dict(address=server, seed=3, critic_obs=True, obs_noise=0, terrain_level_min=2, terrain_level_max=3,
              episode_seconds=0.2)
    with herd.make_vec(ROUGH, n, **kw) as env, herd.make_vec(ROUGH, n, **kw) as ref:
        f = {x["name"]: x for x in env.critic_obs_fields}
        assert env.critic_obs_dim == 244 and f["terrain_level"]["offset"] == 243
        obs, infos = env.reset()
        obs2, _ = ref.reset()
        assert obs.shape == (n, 235)
        np.testing.assert_array_equal(obs, obs2)
        np.testing.assert_array_equal(infos["critic_obs"][:, :235], obs)
        ended = 0
        for k in range(15):
            obs, rew, term, trunc, infos = env.step(acts(n, k))
            obs2, rew2, *_ = ref.step(acts(n, k))
            np.testing.assert_array_equal(obs, obs2)
            np.testing.assert_array_equal(rew, rew2)
            lv = infos["critic_obs"][:, 243]
            assert ((lv >= 2) & (lv <= 3)).all()
            ended += int((term | trunc).sum())
        assert ended > 0
