"""Configuration keys with named choices (PROTOCOL.md 6.1, protocol minor 1): the contact solver by name."""
import numpy as np
import pytest

import herd
from herd.client import Client, config_names, config_values, typed_config
from herd.errors import ServerError


def test_config_values_keep_names_and_floats():
    assert config_values({"solver": "admm", "kp": 60, "solver_tol": 1e-8}) == {"solver": "admm", "kp": 60.0,
                                                                              "solver_tol": 1e-8}
    assert config_values({"solver": b"pgs"}) == {"solver": "pgs"}
    spec = {"config": [{"key": "kp"}, {"key": "solver", "choices": ["a", "b", "c"]}]}
    assert config_names(spec, {"kp": 60.0, "solver": 2.0}) == {"solver": "c"}
    spec["config"] += [{"key": "n", "is_int": True}]
    assert typed_config(spec, {"kp": 60.0, "solver": 2.0, "n": 3.0, "other": 1.0}) == {
        "kp": 60.0, "solver": "c", "n": 3, "other": 1.0}


def test_hello_lists_the_solver_choices(server):
    with Client(server) as c:
        rep = c.hello()
        assert rep["protocol"] == 1 and rep["protocol_minor"] >= 1
        for spec in rep["envs"]:
            keys = {k["key"]: k for k in spec["config"]}
            solver = keys["solver"]
            assert solver["choices"][:2] == ["paper-bisection", "pgs"], spec["name"]
            assert solver["hi"] == len(solver["choices"]) - 1 and solver["is_int"]
            assert "choices" not in keys["sim_dt"]
            assert "solver_tol" in keys and "solver_max_iter" in keys


def test_hello_lists_the_actuator_choices(server):
    """The ANYmal tasks' actuator models by name: walk runs the ANYdrive network by default, stand the PD law;
    walk's yaw-rate commands are drawn in +-1.5 rad/s (legged_gym's range)."""
    with Client(server) as c:
        specs = {s["name"]: s for s in c.hello()["envs"]}
    for name, default in (("anymal_c-walk", "lstm"), ("anymal_c-stand", "pd")):
        keys = {k["key"]: k for k in specs[name]["config"]}
        act = keys["actuator"]
        assert act["choices"] == ["pd", "lstm", "dc"] and act["is_int"] and act["hi"] == 2, name
        assert act["choices"][int(act["default"])] == default, name
        for k, d in (("delay_min", 0), ("delay_max", 0), ("kp_scale_min", 1), ("kp_scale_max", 1),
                     ("kd_scale_min", 1), ("kd_scale_max", 1), ("motor_strength_min", 1), ("motor_strength_max", 1),
                     ("dc_saturation", 120), ("dc_effort_limit", 80), ("dc_velocity_limit", 7.5)):
            assert keys[k]["default"] == d, (name, k)
        prec = keys["net_precision"]
        assert prec["choices"] == ["float32", "float64"] and prec["choices"][int(prec["default"])] == "float32", name
    assert {k["key"]: k for k in specs["anymal_c-walk"]["config"]}["cmd_yaw_max"]["default"] == 1.5


def test_actuator_by_name(server):
    with herd.make_vec("anymal_c-walk", 2, address=server, seed=1, actuator="dc", delay_max=3) as v:
        assert v.config["actuator"] == "dc" and v.config["delay_max"] == 3
        assert v.config_names["actuator"] == "dc"
        v.reset()
        obs, *_ = v.step(np.zeros((2, 12), np.float32))
        assert np.all(np.isfinite(obs))
    with herd.make_vec("anymal_c-walk", 1, address=server) as v:
        assert v.config["actuator"] == "lstm" and v.config["cmd_yaw_max"] == 1.5
    with pytest.raises(ServerError) as e:
        herd.make_vec("anymal_c-walk", 1, address=server, actuator="servo")
    assert e.value.code == "BAD_CONFIG" and "unknown actuator 'servo'" in e.value.message
    with pytest.raises(ServerError) as e:
        herd.make_vec("anymal_c-walk", 1, address=server, delay_min=4, delay_max=2)
    assert e.value.code == "BAD_CONFIG" and "'delay_min'" in e.value.message and "'delay_max'" in e.value.message


def test_make_by_name(server):
    with herd.make_vec("paper-hang", 2, address=server, seed=1, solver="pgs", solver_tol=1e-7) as v:
        # typed as the spec says: the name for a key with choices, an int for an integer key
        assert v.config["solver"] == "pgs" and v.config["solver_tol"] == 1e-7
        assert v.config_names == {"solver": "pgs"}
        keys = {k["key"]: k for k in v.herd_spec["config"]}
        for name, value in v.config.items():
            if keys[name].get("choices"):
                assert isinstance(value, str), name
            elif keys[name]["is_int"]:
                assert type(value) is int, (name, value)
            else:
                assert type(value) is float, (name, value)
        assert type(v.config["solver_max_iter"]) is int
        v.reset()
        obs, *_ = v.step(np.zeros((2, 12), np.float32))
        assert np.all(np.isfinite(obs))
    # the name and its index make the same session
    with herd.make_vec("paper-drop", 1, address=server, seed=3, config={"solver": "pgs"}) as a, \
            herd.make_vec("paper-drop", 1, address=server, seed=3, config={"solver": 1}) as b, \
            herd.make_vec("paper-drop", 1, address=server, seed=3, config=a.config) as c:
        assert c.config == a.config           # the typed configuration makes the same session
        oa, _ = a.reset()
        ob, _ = b.reset()
        for _ in range(5):
            act = np.full((1, 12), 0.1, np.float32)
            oa = a.step(act)[0]
            ob = b.step(act)[0]
        np.testing.assert_array_equal(oa, ob)


def test_bad_names_are_bad_config(server):
    with pytest.raises(ServerError) as e:
        herd.make_vec("anymal_c-walk", 1, address=server, solver="lemke")
    assert e.value.code == "BAD_CONFIG"
    assert "unknown solver 'lemke'" in e.value.message and "paper-bisection" in e.value.message
    with pytest.raises(ServerError) as e:
        herd.make_vec("anymal_c-walk", 1, address=server, kp="stiff")
    assert e.value.code == "BAD_CONFIG" and "'kp' takes a number" in e.value.message
