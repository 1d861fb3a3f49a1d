"""Each device test next to its CPU twin, and a file's figures.

`instantiate_device_type_tests` names a test `{name}{params}_{device}{_dtype...}`
in a class `{Generic}{DEVICE}`, so `TestFooACCINTE::test_bar_accinte_float32`
has the twin `TestFooCPU::test_bar_cpu_float32`. A device test and its twin are
*paired* when both ran (neither skipped) and no disabled-tests entry names the
device test; entries are *documented* and set aside. A device test whose twin
did not run (`except_for="cpu"`, `@onlyPRIVATEUSE1`, `@onlyCUDA` with
--bypass-device-restrictions) is unpaired; its failures are listed apart. A pair agrees when both
pass or both fail (a failure common to both devices is the test's or the tree's,
not the backend's). A crash counts as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .execute import FileRun

# Outcomes of a test that behaved as written: it passed, or failed where its
# own decorators (expectedFailure...) say it fails.
GOOD = ("passed", "xfailed")
BAD = ("failed", "xpassed", "crashed")


def device_class_suffixes(device: str) -> tuple[str, ...]:
    """Class-name suffixes of the backend's instantiated classes: the device's
    name once PrivateUse1TestBase.setUpClass ran, the key's before."""
    return (device.upper(), "PRIVATEUSE1")


def twin(test_id: str, device: str) -> str | None:
    """The CPU twin's id of a device test id, None if the id is not a device test's."""
    cls, _, name = test_id.partition("::")
    for suffix in device_class_suffixes(device):
        if cls.endswith(suffix):
            break
    else:
        return None
    words = name.split("_")
    for i in range(len(words) - 1, 0, -1):
        if words[i] == device:
            words[i] = "cpu"
            return f"{cls[:-len(suffix)]}CPU::{'_'.join(words)}"
    return None


@dataclass
class Disagreement:
    test_id: str
    twin_id: str
    device_outcome: str
    cpu_outcome: str
    message: str   # the failing side's message


@dataclass
class FileSummary:
    """A file's figures, from its FileRun."""
    file: str
    device_tests: int = 0
    paired: int = 0
    both_pass: int = 0
    both_fail: int = 0
    device_only: list[Disagreement] = field(default_factory=list)
    cpu_only: list[Disagreement] = field(default_factory=list)
    documented: dict[str, str] = field(default_factory=dict)  # test id -> entry key
    fixed_documented: list[str] = field(default_factory=list)  # xfail entries now passing
    crashed: dict[str, str] = field(default_factory=dict)
    agreeing: set[str] = field(default_factory=set)  # device test ids of agreeing pairs
    passing_unpaired: set[str] = field(default_factory=set)  # unpaired, and not failing
    unpaired: int = 0   # device tests without a twin that ran, or skipped
    unpaired_failures: list[Disagreement] = field(default_factory=list)  # of those, failing
    elapsed: float = 0.0
    status: str = "ok"

    @property
    def agree(self) -> int:
        return self.both_pass + self.both_fail

    @property
    def settled(self) -> set[str]:
        """Device tests that ran and neither disagree nor fail without a twin."""
        return self.agreeing | self.passing_unpaired

    @property
    def agreement(self) -> float | None:
        return 100.0 * self.agree / self.paired if self.paired else None


def _outcomes(run: FileRun) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, message), crashes included."""
    result = {tid: (rec["outcome"], rec.get("message", "")) for tid, rec in run.results.items()}
    result.update({tid: ("crashed", how) for tid, how in run.crashed.items()})
    return result


def _status(run: FileRun) -> str:
    if run.timed_out_at is not None:
        if not run.collected:
            return "out of time before its tests were collected"
        where = f" in {run.timed_out_at}" if run.timed_out_at else ""
        return f"out of time{where}, {len(run.not_run)} not run"
    if run.error:
        return run.error.splitlines()[0]
    return "ok"


def summarise(run: FileRun, device: str) -> FileSummary:
    """Pairs the device tests of a file with their CPU twins and counts."""
    summary = FileSummary(run.file, elapsed=run.elapsed, status=_status(run),
                          crashed=dict(run.crashed))
    outcomes = _outcomes(run)
    for test_id, (outcome, message) in sorted(outcomes.items()):
        twin_id = twin(test_id, device)
        if twin_id is None:
            continue
        summary.device_tests += 1
        entry = run.results.get(test_id, {}).get("entry")
        if entry is not None:
            summary.documented[test_id] = entry
            if outcome == "xpassed":
                summary.fixed_documented.append(test_id)
            continue
        cpu = outcomes.get(twin_id)
        if cpu is None or outcome == "skipped" or cpu[0] == "skipped":
            summary.unpaired += 1
            if outcome in BAD:  # nothing to compare with, but a failure all the same
                summary.unpaired_failures.append(Disagreement(
                    test_id, twin_id, outcome, cpu[0] if cpu else "not run", message))
            elif outcome in GOOD:
                summary.passing_unpaired.add(test_id)
            continue
        summary.paired += 1
        device_bad, cpu_bad = outcome in BAD, cpu[0] in BAD
        if device_bad == cpu_bad:
            summary.agreeing.add(test_id)
        if device_bad and cpu_bad:
            summary.both_fail += 1
        elif device_bad:
            summary.device_only.append(Disagreement(test_id, twin_id, outcome, cpu[0], message))
        elif cpu_bad:
            summary.cpu_only.append(Disagreement(test_id, twin_id, outcome, cpu[0], cpu[1]))
        else:
            summary.both_pass += 1
    if summary.status == "ok" and summary.paired and summary.both_fail == summary.paired:
        # Nothing was compared: the file does not work with this torch at all.
        summary.status = f"all {summary.paired} pairs fail on both devices"
    return summary
