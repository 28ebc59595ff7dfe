"""The one device rule (`q2_metric.models.devices.device_problem`), and the four places that ask it: the
options path, `Q2Config`, the model checks and model loading each refuse the same values."""

from __future__ import annotations

import re

import pytest

from q2_metric.config import Q2Config
from q2_metric.errors import DeviceNotAvailable, Q2OptionError
from q2_metric.models.devices import device_problem

SPELLINGS = "use 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device"


@pytest.mark.parametrize("value", ["gpu", "cuda:", "cuda:x", "cuda:0:1", "CPU", "", 0, None])
def test_malformed_devices_are_refused_by_every_place(value):
    from q2_metric.models.checks import check_device
    from q2_metric.models.loading import resolve_device
    from q2_metric.options import normalize_device

    assert device_problem(value) == device_problem(value, hardware=False) == SPELLINGS
    with pytest.raises(Q2OptionError, match=re.escape(f"Invalid Q² option device={value!r}: {SPELLINGS}.")):
        normalize_device(value)
    with pytest.raises(
        Q2OptionError, match=re.escape(f"Invalid Q² option Q2Config.device={value!r}: {SPELLINGS}.")
    ):
        Q2Config(device=value)
    if isinstance(value, str):
        with pytest.raises(DeviceNotAvailable, match=re.escape(f"cannot be used: {SPELLINGS}")):
            check_device(value)
        with pytest.raises(DeviceNotAvailable, match=re.escape(f"cannot be used: {SPELLINGS}")):
            resolve_device(value)


def test_well_formed_devices_and_the_hardware_question():
    import torch

    from q2_metric.models.checks import check_device
    from q2_metric.models.loading import resolve_device
    from q2_metric.options import normalize_device

    for value in ("auto", "cpu", "cuda", "cuda:0", "cuda:12"):
        assert device_problem(value, hardware=False) is None
        assert Q2Config(device=value).device == value  # the configuration takes the form only
    assert normalize_device(torch.device("cpu")) == "cpu"
    assert resolve_device("cpu") == torch.device("cpu") and check_device("cpu") is None
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    beyond = f"cuda:{count}"  # one past the last GPU (cuda:0 on a machine without one)
    expected = f"torch sees {count} CUDA device(s) here; use 'auto' or 'cpu'"
    assert device_problem(beyond) == expected
    with pytest.raises(Q2OptionError, match=re.escape(f"Invalid Q² option --device='{beyond}': {expected}")):
        normalize_device(beyond, "--device")
    with pytest.raises(
        DeviceNotAvailable, match=re.escape(f"The device '{beyond}' was asked for but torch sees ")
    ):
        check_device(beyond)
    with pytest.raises(
        DeviceNotAvailable, match=re.escape(f"The device '{beyond}' cannot be used: {expected}")
    ):
        resolve_device(beyond)
    assert resolve_device("auto") == torch.device("cuda" if count else "cpu")
