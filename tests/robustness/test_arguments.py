"""Bad device indexes, generators of another device, forged streams: each a
clear exception at the call, of the type the CPU (or CUDA) raises."""

import pytest

# CUDA raises "invalid device ordinal" for these; torch.device wraps indexes
# above 127 into negative DeviceIndex values (-128, -24, -56), which accinte
# once took for "the current device".
BAD_ORDINALS = {
    "string_128": "torch.ones(1, device='accinte:128')",
    "string_1000": "torch.ones(1, device='accinte:1000')",
    "device_200": "torch.ones(1, device=torch.device('accinte', 200))",
    "beyond_count": "torch.ones(1, device='accinte:5')",
    "to_128": "torch.ones(1).to('accinte:128')",
    "empty_strided_200": "torch.empty_strided((2,), (1,), device=torch.device('accinte', 200))",
    "generator_128": "torch.Generator('accinte:128')",
    "stream_200": "torch.accinte.Stream(device=torch.device('accinte', 200))",
    "set_device_200": "torch.accinte.set_device(torch.device('accinte', 200))",
}

# Negative indexes other than -1 ("the current device") name no device.
NEGATIVE_INDEXES = {
    "get_device_properties": "torch.accinte.get_device_properties(-2)",
    "get_device_name": "torch.accinte.get_device_name(-2)",
    "memory_stats": "torch.accinte.memory_stats(-5)",
    "memory_allocated": "torch.accinte.memory_allocated(-2)",
    "memory_reserved": "torch.accinte.memory_reserved(-3)",
    "reset_peak_memory_stats": "torch.accinte.reset_peak_memory_stats(-2)",
    "synchronize": "torch.accinte.synchronize(-3)",
    "current_stream": "torch.accinte.current_stream(-4)",
    "default_stream": "torch.accinte.default_stream(-4)",
    "Stream": "torch.accinte.Stream(device=-2)",
    "get_rng_state": "torch.accinte.get_rng_state(-9)",
    "set_rng_state": "torch.accinte.set_rng_state(torch.accinte.get_rng_state(), -2)",
    "set_device": "torch.accinte.set_device(-2)",
    "device_context": "torch.accinte.device(-7).__enter__()",
    "mem_get_info": "torch.accinte.mem_get_info(-2)",
}


@pytest.mark.parametrize("name", sorted(BAD_ORDINALS))
def test_bad_ordinal(cases, name):
    cases.check(f"""
        raises(RuntimeError, lambda: {BAD_ORDINALS[name]}, match="(?i)invalid accinte device index")
        assert torch.accinte.current_device() == 0
    """)


@pytest.mark.parametrize("name", sorted(NEGATIVE_INDEXES))
def test_negative_index(cases, name):
    cases.check(f"""
        raises(RuntimeError, lambda: {NEGATIVE_INDEXES[name]}, match="(?i)invalid accinte device index")
        assert torch.accinte.current_device() == 0
    """)


def test_minus_one_is_the_current_device(cases):
    cases.check("""
        torch.accinte.set_device(1)
        assert torch.accinte.get_device_properties(-1).name == torch.accinte.get_device_properties(1).name
        assert torch.accinte.current_stream(-1).device_index == 1
        torch.accinte.synchronize(-1)
        torch.accinte.set_device(-1)   # selects nothing, as torch.cuda.set_device(-1)
        assert torch.accinte.current_device() == 1
    """)


GENERATOR_MISMATCH = {
    # The CPU kernel's check_generator message, as with a CUDA generator.
    "randn_on_cpu": ("torch.randn(3, generator=torch.Generator('accinte'))", "cpu", "accinte"),
    "rand_on_cpu": ("torch.rand(3, generator=torch.Generator('accinte'))", "cpu", "accinte"),
    "multinomial_on_cpu": ("torch.multinomial(torch.ones(4), 2, "
                           "generator=torch.Generator('accinte'))", "cpu", "accinte"),
    "normal__on_cpu": ("torch.empty(3).normal_(generator=torch.Generator('accinte'))",
                       "cpu", "accinte"),
    "randperm_on_cpu": ("torch.randperm(5, generator=torch.Generator('accinte'))",
                        "cpu", "accinte"),
    "randn_on_accinte": ("torch.randn(3, device='accinte', generator=torch.Generator())",
                         "accinte", "cpu"),
    "multinomial_on_accinte": ("torch.multinomial(torch.ones(4, device='accinte'), 2, "
                               "generator=torch.Generator())", "accinte", "cpu"),
    "bernoulli__on_accinte": ("torch.empty(3, device='accinte').bernoulli_("
                              "generator=torch.Generator())", "accinte", "cpu"),
}


@pytest.mark.parametrize("name", sorted(GENERATOR_MISMATCH))
def test_generator_of_another_device(cases, name):
    call, wanted, found = GENERATOR_MISMATCH[name]
    cases.check(f"""
        raises(RuntimeError, lambda: {call},
               match="Expected a '{wanted}' device type for generator but found '{found}'")
    """)


def test_forged_stream_is_refused_without_switching_device(cases):
    # torch.cuda refuses a stream it never created; the current device and
    # stream stay what they were.
    cases.check("""
        torch.accinte.set_device(0)
        before = torch.accinte.current_stream()
        privateuse1 = int(torch._C._autograd.DeviceType.PrivateUse1)
        forged = torch.Stream(stream_id=123456789, device_index=1, device_type=privateuse1)
        raises(RuntimeError, lambda: torch.accinte.set_stream(forged), match="stream id")
        assert torch.accinte.current_device() == 0
        assert torch.accinte.current_stream() == before
        def enter():
            with torch.accinte.stream(forged):
                pass
        raises(RuntimeError, enter, match="stream id")
        assert torch.accinte.current_device() == 0
        bad_device = torch.Stream(stream_id=0, device_index=100, device_type=privateuse1)
        raises(RuntimeError, lambda: torch.accinte.set_stream(bad_device))
        assert torch.accinte.current_device() == 0
    """)
