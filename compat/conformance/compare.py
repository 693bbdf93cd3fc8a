"""Field-by-field comparison of two normalised transcripts of one case."""

from __future__ import annotations

from dataclasses import dataclass

MISSING = "<missing>"


@dataclass(frozen=True)
class Difference:
    case: str
    step: str  # the step's label ("Metadata v12"), or "transcript" for a different number of steps
    path: str  # dotted path inside the answer: "topics[0].partitions[1].error_code"
    kafka: object
    ours: object

    @property
    def where(self) -> str:
        return f"{self.case} :: {self.step} :: {self.path}"


def compare_transcripts(case: str, kafka: list[dict], ours: list[dict]) -> list[Difference]:
    differences: list[Difference] = []
    for index in range(max(len(kafka), len(ours))):
        theirs = kafka[index] if index < len(kafka) else None
        mine = ours[index] if index < len(ours) else None
        label = (theirs or mine)["label"]
        if theirs is None or mine is None or theirs["label"] != mine["label"]:
            differences.append(Difference(case, f"step {index + 1}", "label",
                                          theirs["label"] if theirs else MISSING, mine["label"] if mine else MISSING))
            if theirs is None or mine is None:
                continue
        differences += _diff(case, label, "", theirs["answer"], mine["answer"])
    return differences


def _diff(case: str, step: str, path: str, kafka, ours) -> list[Difference]:
    if isinstance(kafka, dict) and isinstance(ours, dict):
        found = []
        for key in list(kafka) + [k for k in ours if k not in kafka]:
            found += _diff(case, step, f"{path}.{key}" if path else key,
                           kafka.get(key, MISSING), ours.get(key, MISSING))
        return found
    if isinstance(kafka, list) and isinstance(ours, list):
        if len(kafka) != len(ours) and not (all(isinstance(x, (dict, list)) for x in kafka + ours)):
            return [Difference(case, step, path or "(answer)", kafka, ours)]
        found = []
        for index in range(max(len(kafka), len(ours))):
            found += _diff(case, step, f"{path}[{index}]",
                           kafka[index] if index < len(kafka) else MISSING,
                           ours[index] if index < len(ours) else MISSING)
        return found
    if kafka != ours or type(kafka) is not type(ours):
        return [Difference(case, step, path or "(answer)", kafka, ours)]
    return []
