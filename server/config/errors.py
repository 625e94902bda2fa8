"""Config problems carry file, line and key so an operator can jump straight to the mistake."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigIssue:
    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "key": self.key, "message": self.message}


class ConfigError(Exception):
    """One or more config issues, reported together."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))

    def to_json(self) -> list[dict]:
        return [i.to_json() for i in self.issues]
