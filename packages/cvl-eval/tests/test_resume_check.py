"""`changed_fields`: what a rerun changed against a recorded config (generations, training runs)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from cvl_eval.runs.config_changes import changed_fields, config_defaults

values = st.one_of(st.integers(-3, 3), st.booleans(), st.text(max_size=2))
configs = st.recursive(
    st.dictionaries(st.sampled_from("abcd"), values, max_size=4),
    lambda inner: st.dictionaries(st.sampled_from("abcd"), inner, max_size=3),
    max_leaves=8,
)


def test_tuples_equal_their_recorded_lists_and_free_fields_are_ignored():
    recorded = {"hidden": [128, 128], "seed": 0, "device": "cpu"}
    assert (
        changed_fields(recorded, {"hidden": (128, 128), "seed": 0, "device": "cuda"}, ["device"])
        == {}
    )
    assert changed_fields(recorded, {"hidden": (64,), "seed": 0, "device": "cpu"}) == {
        "hidden": ([128, 128], [64])
    }


def test_a_field_recorded_before_it_existed_counts_at_its_default():
    defaults = {"frames": 500, "sac": {"lr": 3e-4, "policy_ema_tau": 0.0}}
    recorded = {"frames": 100, "sac": {"lr": 1e-3}}  # written before policy_ema_tau existed
    same = {"frames": 100, "sac": {"lr": 1e-3, "policy_ema_tau": 0.0}}
    assert changed_fields(recorded, same) != {}  # without the defaults: a difference
    assert changed_fields(recorded, same, defaults=defaults) == {}
    other = {"frames": 100, "sac": {"lr": 1e-3, "policy_ema_tau": 0.5}}
    (field,) = changed_fields(recorded, other, defaults=defaults)
    assert field == "sac"


def _merged(recorded, defaults):
    """Naive reference: a full current config, the recorded values over the defaults."""
    out = {**defaults, **recorded}
    for key in recorded.keys() & defaults.keys():
        if isinstance(recorded[key], dict) and isinstance(defaults[key], dict):
            out[key] = _merged(recorded[key], defaults[key])
    return out


@settings(max_examples=60, deadline=None)
@given(recorded=configs, defaults=configs)
def test_defaults_fill_only_what_the_record_lacks(recorded, defaults):
    """A current config that is the record plus the defaults it lacks is unchanged, and any
    recorded value the current config changes is still reported."""
    current = _merged(recorded, defaults)
    assert changed_fields(recorded, current, defaults=defaults) == {}
    for key, value in recorded.items():
        assert key in changed_fields(
            recorded, {**current, key: ["changed", value]}, defaults=defaults
        )


def test_config_defaults_are_the_fields_defaults_as_json():
    from cvl_eval.datagen.sac.config import SACDataConfig

    defaults = config_defaults(SACDataConfig)
    assert "env" not in defaults  # no default: always recorded
    assert defaults["frames"] == 500_000 and defaults["sac"]["hidden"] == [256, 256]
    assert defaults["sac"]["policy_ema_tau"] == 0.0
