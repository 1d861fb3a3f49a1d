"""Corrupted and crafted checkpoints: torch.load(weights_only=True) refuses
what the CPU refuses, and never hands out memory the file did not describe."""

import pytest

# Saves a 4-element tensor on `device`, rewrites the pickle with `patch`
# (bytes replaced in data.pkl) and loads it with weights_only=True.
CRAFT = '''
import io, zipfile
def crafted(device, patch=None, truncate=None, garbage=False):
    buf = io.BytesIO()
    torch.save(torch.arange(4.0).to(device), buf)
    data = buf.getvalue()
    if patch is not None:
        source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
        with zipfile.ZipFile(out, "w") as target:
            for info in source.infolist():
                payload = source.read(info.filename)
                if info.filename.endswith("data.pkl"):
                    assert patch[0] in payload, payload
                    payload = payload.replace(*patch)
                target.writestr(info, payload)
        data = out.getvalue()
    if truncate is not None:
        data = data[:truncate]
    if garbage:
        data = bytes(range(256)) * 8
    return torch.load(io.BytesIO(data), weights_only=True)
'''

CASES = {
    # size (4,) -> (64,): past the 4-element storage record
    "size_past_storage": "patch=(b'K\\x04\\x85', b'K@\\x85')",
    # storage offset 0 -> 3 with size 4: past the storage record
    "offset_past_storage": "patch=(b'QK\\x00K\\x04', b'QK\\x03K\\x04')",
    "truncated": "truncate=200",
    "garbage": "garbage=True",
    "intact": "",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_cpu(cases, name):
    cases.check(CRAFT + f"""
same_as_cpu(lambda d: crafted(d, {CASES[name]}))
""")


def test_size_past_storage_names_the_cause(cases):
    cases.check(CRAFT + """
raises(RuntimeError, lambda: crafted("accinte", patch=(b'K\\x04\\x85', b'K@\\x85')),
       match="not resizable")
""")


def test_unknown_device_index_in_checkpoint(cases):
    cases.check(CRAFT + """
raises(RuntimeError, lambda: crafted("accinte", patch=(b'accinte:0', b'accinte:9')))
""")
