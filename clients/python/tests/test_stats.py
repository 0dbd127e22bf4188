"""python3 -m herd.stats against a real server."""
import re

import numpy as np

import herd
from herd import stats


def test_once_prints_numbers_not_nan(server, capsys):
    with herd.make_vec("anymal_c-stand", 2, address=server, seed=1) as env:
        env.reset()
        env.step(np.zeros((2, 12), np.float32))
        assert stats.main([server, "--once"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert "nan" not in line, line
    req = float(re.search(r"([0-9.]+) req/s", line).group(1))
    err = float(re.search(r"([0-9.]+) err/s", line).group(1))
    assert req > 0 and err >= 0, line          # the mean since start: this test's requests at least


def test_rates_between_two_samples():
    prev = {"requests": 10, "errors": 1, "uptime_s": 5.0}
    st = {"requests": 30, "errors": 1, "uptime_s": 7.0}
    assert stats._rate(st, prev, 2.0, "requests") == 10.0
    assert stats._rate(st, None, 0, "requests") == 30 / 7.0
    assert stats._rate({"requests": 0, "uptime_s": 0.0}, None, 0, "requests") == 0.0
