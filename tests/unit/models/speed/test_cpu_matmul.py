"""`cpu_matmul`: Linear layers run by oneDNN (q2_metric.models.speed.cpu_matmul) compute what PyTorch's
own path computes, to float rounding, switch only inside the backends' calls, and leave every
decision and the signature as they are."""

import pytest
import torch

from q2_metric import Q2Config, Q2Scorer
from q2_metric.errors import Q2OptionError
from q2_metric.models.speed import cpu_matmul
from q2_metric.models.speed.cpu_matmul import OneDNNLinears, linear_kernels, prefers_onednn, uses_onednn

pytestmark = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="PyTorch built without oneDNN"
)
CPU = torch.device("cpu")


@pytest.mark.parametrize(
    "capability, vendor, expected",
    [
        ("AVX512", "AuthenticAMD", True),  # Zen 4/5: MKL runs its AVX2 code there
        ("AVX512", "HygonGenuine", True),
        ("AVX512", "GenuineIntel", False),  # MKL runs AVX-512 on Intel
        ("AVX2", "AuthenticAMD", False),  # MKL was measured faster on AVX2-only AMD
        ("DEFAULT", "AuthenticAMD", False),
        ("AVX512", "", False),  # vendor unknown: PyTorch's default
    ],
)
def test_auto_rule(capability, vendor, expected):
    assert prefers_onednn(capability, vendor) is expected


def test_when_onednn_is_used(monkeypatch):
    assert uses_onednn("onednn", CPU, torch.float32)
    assert not uses_onednn("blas", CPU, torch.float32)
    assert not uses_onednn("onednn", torch.device("cuda"), torch.float32)
    assert not uses_onednn("onednn", CPU, torch.bfloat16)  # PyTorch already uses oneDNN there
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(cpu_matmul, "cpu_vendor", lambda: "AuthenticAMD")
    assert uses_onednn("auto", CPU, torch.float32)
    monkeypatch.setattr(cpu_matmul, "cpu_vendor", lambda: "GenuineIntel")
    assert not uses_onednn("auto", CPU, torch.float32)
    with pytest.raises(ValueError, match="cpu_matmul must be one of"):
        uses_onednn("mkl", CPU, torch.float32)


def test_config_rejects_an_unknown_choice():
    with pytest.raises(
        Q2OptionError, match=r"Q2Config.cpu_matmul='mkl': allowed values are 'auto', 'blas' or 'onednn'\."
    ):
        Q2Config(cpu_matmul="mkl")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(48, 96)
        self.b = torch.nn.Linear(96, 32, bias=False)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def float64_forward(net: Net, x: torch.Tensor) -> torch.Tensor:
    """The same network computed in float64 by hand: the reference for both kernels."""
    h = torch.relu(x.double() @ net.a.weight.double().T + net.a.bias.double())
    return h @ net.b.weight.double().T


@pytest.mark.parametrize("shape", [(7, 48), (3, 5, 48), (2, 3, 4, 48)])
def test_same_values_as_pytorch_to_rounding(shape):
    torch.manual_seed(0)
    net = Net().eval()
    x = torch.randn(*shape)
    expected = float64_forward(net, x)
    with torch.inference_mode():
        default = net(x)
        with OneDNNLinears(net).active():
            fast = net(x)
            strided = net(torch.randn(48, *shape[:-1]).movedim(0, -1))  # a non-contiguous input
    assert fast.shape == default.shape and fast.dtype == torch.float32
    assert torch.allclose(fast.double(), expected, atol=1e-5)
    assert torch.allclose(default.double(), expected, atol=1e-5)
    assert strided.shape == default.shape


def test_switch_is_scoped_reentrant_and_undone_by_errors():
    net = Net().eval()
    linears = OneDNNLinears(net)
    assert len(linears.layers) == 2
    with linears.active():
        with linears.active():
            assert all("forward" in layer.__dict__ for layer in linears.layers)
        assert all("forward" in layer.__dict__ for layer in linears.layers)  # the outer block still holds
    assert not any("forward" in layer.__dict__ for layer in linears.layers)
    with pytest.raises(RuntimeError, match="boom"), linears.active():
        raise RuntimeError("boom")
    assert not any("forward" in layer.__dict__ for layer in linears.layers)
    for setting, switched in (("onednn", True), ("blas", False)):
        with linear_kernels(linears, setting, CPU):
            assert all(("forward" in layer.__dict__) is switched for layer in linears.layers)
    with linear_kernels(None, "onednn", CPU):  # a backend whose switch is detached (the bench's loop)
        assert not any("forward" in layer.__dict__ for layer in linears.layers)


def test_gradients_take_pytorchs_path():
    net = Net()
    x = torch.randn(4, 48, requires_grad=True)
    with OneDNNLinears(net).active():
        net(x).sum().backward()
    assert x.grad is not None and net.a.weight.grad is not None


def switched_during_calls(model: torch.nn.Module) -> list[bool]:
    """For every Linear call of `model`, whether it ran on the oneDNN switch."""
    seen: list[bool] = []
    for m in model.modules():
        if type(m) is torch.nn.Linear:
            m.register_forward_pre_hook(lambda mod, args: seen.append("forward" in mod.__dict__))
    return seen


@pytest.mark.slow  # seconds: tiny models end to end, several times
def test_backends_switch_inside_their_calls_only_and_decide_alike(tiny_config, rows):
    responses = [r["response"] for r in rows[:6]]
    knowledge = [r["knowledge"] for r in rows[:6]]
    results, seen = {}, {}
    for setting in ("blas", "onednn"):
        scorer = Q2Scorer(tiny_config.replace(cpu_matmul=setting)).load()
        seen[setting] = [switched_during_calls(m.model) for m in (scorer.qg, scorer.qa, scorer.nli)]
        results[setting] = scorer.score(responses, knowledge)
        for comp in (scorer.qg, scorer.qa, scorer.nli):
            assert not any("forward" in layer.__dict__ for layer in comp.linears.layers)
    assert all(calls and not any(calls) for calls in seen["blas"])
    assert all(calls and all(calls) for calls in seen["onednn"])
    a, b = results["blas"], results["onednn"]
    # the same questions, answers, NLI labels (the traces hold them all) and fallbacks, so the same scores
    assert [r.questions for r in a.responses] == [r.questions for r in b.responses]
    assert [r.fallback_label for r in a.responses] == [r.fallback_label for r in b.responses]
    assert a.scores == b.scores
    assert a.signature.to_dict() == b.signature.to_dict()  # a speed option: not in the signature


def test_command_line_flag():
    from q2_metric.cli import build_parser
    from q2_metric.cli.common import config_from_args

    parser = build_parser()
    assert config_from_args(parser.parse_args(["score", "in.csv", "-o", "o.csv"])).cpu_matmul == "auto"
    assert (
        config_from_args(
            parser.parse_args(["score", "in.csv", "-o", "o.csv", "--cpu-matmul", "blas"])
        ).cpu_matmul
        == "blas"
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["score", "in.csv", "-o", "o.csv", "--cpu-matmul", "mkl"])
