"""The forward passes' kernel choice: no cuDNN attention on a GPU in half precision."""

import pytest
import torch

from q2_metric.models.speed.kernels import attention_kernels, model_kernels

CUDA = torch.device("cuda")


def enabled() -> dict:
    b = torch.backends.cuda
    return {
        "flash": b.flash_sdp_enabled(),
        "efficient": b.mem_efficient_sdp_enabled(),
        "math": b.math_sdp_enabled(),
        "cudnn": b.cudnn_sdp_enabled(),
    }


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_on_a_gpu_leaves_out_cudnn_attention_and_restores(dtype):
    before = enabled()
    with attention_kernels(CUDA, dtype):  # only sets PyTorch's flags: runs without a GPU
        inside = enabled()
    assert inside == {**before, "cudnn": False}
    assert enabled() == before


@pytest.mark.parametrize(("device", "dtype"), [(CUDA, torch.float32), (torch.device("cpu"), torch.bfloat16)])
def test_float32_and_the_cpu_keep_pytorch_s_choice(device, dtype):
    before = enabled()
    with model_kernels(None, "auto", device, torch.nn.Linear(2, 2, dtype=dtype)):
        assert enabled() == before


def test_the_user_s_disabled_kernels_stay_disabled():
    torch.backends.cuda.enable_flash_sdp(False)
    try:
        with attention_kernels(CUDA, torch.bfloat16):
            assert not torch.backends.cuda.flash_sdp_enabled()
            assert not torch.backends.cuda.cudnn_sdp_enabled()
    finally:
        torch.backends.cuda.enable_flash_sdp(True)
