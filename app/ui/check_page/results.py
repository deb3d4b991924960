"""The Check page's results: the matrix (one row per result, one column per category, each cell
coloured by its pass ratio), a cell's scenarios, a scenario's transcript and the forensics findings
that explain its category, export and the side-by-side comparison of two results."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

__all__ = ["ResultsView", "cell_colour", "findings_for", "row_label"]

SCENARIO_COLUMNS = ["Scenario", "Outcome", "Failure class", "Why"]
INK = "#111111"  # text on the coloured cells, readable in both themes


def cell_colour(ratio: float | None) -> QColor:
    """Red at 0, amber at one half, green at 1; grey where nothing ran."""
    if ratio is None:
        return QColor("#9e9e9e")
    red, amber, green = (0xD9, 0x53, 0x4F), (0xF0, 0xAD, 0x4E), (0x5C, 0xB8, 0x5C)
    a, b, t = (red, amber, ratio * 2) if ratio < 0.5 else (amber, green, (ratio - 0.5) * 2)
    return QColor(*(round(x + (y - x) * t) for x, y in zip(a, b, strict=True)))


#: The widest a row's name gets in the matrix; a longer one is elided in its middle (tooltip: all of it).
ROW_LABEL_PX = 240


def row_label(result: dict[str, Any]) -> str:
    """A result's row name: model file · stack (tool format)."""
    m, st = result.get("model") or {}, result.get("stack") or {}
    name = m.get("file_name") or m.get("name") or "?"
    fmt = m.get("tool_format")
    return f"{name} · {st.get('name', '?')}" + (f" ({fmt})" if fmt else "")


def findings_for(result: dict[str, Any], category: str) -> list[dict[str, Any]]:
    """The result's template findings that explain ``category`` (all of them for "all")."""
    return [
        f
        for f in result.get("forensics") or []
        if category == "all" or category in (f.get("categories") or [])
    ]


def _findings_html(findings: list[dict[str, Any]]) -> list[str]:
    if not findings:
        return ["<p><i>No template finding explains this cell.</i></p>"]
    out = ["<p><b>Template forensics behind this cell</b></p><ul>"]
    for f in findings:
        where = f" (line {f['line']})" if f.get("line") else ""
        out.append(
            f"<li><b>[{f['severity']}] {html.escape(f['id'])}</b>{where}: {html.escape(f['title'])}. "
            f"{html.escape(f['explanation'])}<br><i>Callisto:</i> {html.escape(f['callisto'])}</li>"
        )
    out.append("</ul>")
    return out


def _outcome_item(text: str, passed: bool) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setBackground(QBrush(cell_colour(1.0 if passed else 0.0)))
    item.setForeground(QBrush(QColor(INK)))
    return item


def _transcript_html(result: dict[str, Any], x: dict[str, Any]) -> list[str]:
    from app.check.runner import read_transcript

    transcript, intact = read_transcript(result, x) if result.get("_path") else (None, False)
    if transcript is None:
        return ["<p><i>The transcript file is missing.</i></p>"]
    parts = []
    if not intact:
        parts.append("<p><b>The transcript was edited: its sha256 no longer matches the result.</b></p>")
    parts.append(
        "<p><b>Transcript</b> (sha256 "
        + x["transcript_sha256"][:16]
        + "…)</p><pre>"
        + html.escape(json.dumps(transcript, ensure_ascii=False, indent=1)[:20000])
        + "</pre>"
    )
    return parts


class ResultsView(QWidget):
    """The matrix above, a cell's scenarios and the detail (transcript, findings) below."""

    def __init__(self, categories: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.categories = categories
        self.results: list[dict[str, Any]] = []
        self._cell: tuple[int, str] | None = None
        self._rows_shown: list[dict[str, Any]] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Vertical)
        self.matrix = QTableWidget(0, len(categories) + 1)
        self.matrix.setObjectName("checkMatrix")
        self.matrix.setHorizontalHeaderLabels([*categories, "all"])
        self.matrix.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.matrix.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.matrix.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.matrix.horizontalHeader().setMinimumSectionSize(64)
        rows = (
            self.matrix.verticalHeader()
        )  # a long model name is cut in its middle (U20): "all" stays in view
        rows.setMaximumWidth(ROW_LABEL_PX)
        rows.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.matrix.cellClicked.connect(self.open_cell)
        split.addWidget(self.matrix)
        lower = QSplitter()
        self.scenario_table = QTableWidget(0, 4)
        self.scenario_table.setObjectName("checkScenarios")
        self.scenario_table.setHorizontalHeaderLabels(SCENARIO_COLUMNS)
        self.scenario_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.scenario_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.scenario_table.horizontalHeader().setStretchLastSection(True)
        self.scenario_table.cellClicked.connect(self.open_scenario)
        self.detail = QTextBrowser()
        self.detail.setObjectName("checkDetail")
        lower.addWidget(self.scenario_table)
        lower.addWidget(self.detail)
        lower.setSizes([420, 420])
        split.addWidget(lower)
        split.setSizes([180, 320])
        layout.addWidget(split)

    # -- the matrix ---------------------------------------------------------------------------------
    def add_result(self, result: dict[str, Any]) -> int:
        self.results.append(result)
        r = self.matrix.rowCount()
        self.matrix.insertRow(r)
        label = QTableWidgetItem(row_label(result))
        label.setToolTip(row_label(result))  # the whole name
        self.matrix.setVerticalHeaderItem(r, label)
        by_cat = result["summary"]["by_category"]
        for c, cat in enumerate([*self.categories, "all"]):
            if cat == "all":
                s = result["summary"]
                passed, total = s["passed"], s["total"]
            else:
                passed, total = (by_cat[cat]["passed"], by_cat[cat]["total"]) if cat in by_cat else (0, 0)
            ratio = passed / total if total else None
            item = QTableWidgetItem(f"{passed}/{total}" if total else "–")
            item.setBackground(QBrush(cell_colour(ratio)))
            item.setForeground(QBrush(QColor(INK)))
            item.setToolTip(
                f"{cat}: {passed} of {total} passed — click to see the scenarios"
                if total
                else f"{cat}: not run"
            )
            self.matrix.setItem(r, c, item)
        self.matrix.resizeRowsToContents()
        return r

    def cell_ratio(self, row: int, category: str) -> float | None:
        s = self.results[row]["summary"]
        if category == "all":
            return s["score"] if s["total"] else None
        c = s["by_category"].get(category)
        return None if not c else c["passed"] / c["total"]

    def selected_rows(self) -> list[int]:
        return sorted({i.row() for i in self.matrix.selectedIndexes()})

    def open_cell(self, row: int, col: int) -> None:
        """Show the scenarios of one cell (a category of one result, or every scenario of the row)."""
        cat = ([*self.categories, "all"])[col]
        result = self.results[row]
        rows = [x for x in result["results"] if cat == "all" or x["category"] == cat]
        self._cell = (row, cat)
        self._rows_shown = rows
        t = self.scenario_table
        t.setColumnCount(4)
        t.setHorizontalHeaderLabels(SCENARIO_COLUMNS)
        t.setRowCount(len(rows))
        for i, x in enumerate(rows):
            cells = [x["id"], x["outcome"], x["failure_class"] or "", x.get("message", "")]
            for j, text in enumerate(cells):
                t.setItem(
                    i, j, _outcome_item(text, x["outcome"] == "pass") if j == 1 else QTableWidgetItem(text)
                )
        t.resizeColumnsToContents()
        lines = [
            f"<h3>{row_label(result)} — {cat}</h3>",
            f"<p>{sum(x['outcome'] == 'pass' for x in rows)} of {len(rows)} passed. "
            "Click a scenario for its transcript.</p>",
        ]
        lines += _findings_html(findings_for(result, cat))
        self.detail.setHtml("\n".join(lines))
        if rows:
            failing = next((i for i, x in enumerate(rows) if x["outcome"] != "pass"), None)
            if failing is not None:
                t.selectRow(failing)

    def open_scenario(self, i: int, _col: int = 0) -> None:
        """Show one scenario's failure, its transcript (checked against its sha256) and the findings."""
        if self._cell is None or i >= len(self._rows_shown):
            return
        row, _cat = self._cell
        result = self.results[row]
        x = self._rows_shown[i]
        parts = [
            f"<h3>{html.escape(x['id'])}: {x['outcome']}"
            + (f" — {x['failure_class']}" if x["failure_class"] else "")
            + "</h3>"
        ]
        if x.get("message"):
            parts.append(f"<p>{html.escape(x['message'])}</p>")
        if x.get("detail"):
            parts.append(
                "<pre>" + html.escape(json.dumps(x["detail"], ensure_ascii=False, indent=1)[:4000]) + "</pre>"
            )
        parts += _findings_html(findings_for(result, x["category"]))
        parts += _transcript_html(result, x)
        self.detail.setHtml("\n".join(parts))

    # -- export and comparison ----------------------------------------------------------------------
    def export_result(self, row: int, path: str | Path) -> Path:
        """Copy a result file and its transcripts folder to ``path``."""
        result = self.results[row]
        src = Path(result["_path"])
        dest = Path(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = {k: v for k, v in result.items() if not k.startswith("_")}
        folder = dest.with_name(dest.stem + ".transcripts")
        src_folder = src.parent / result.get("transcripts_dir", src.stem + ".transcripts")
        if src_folder.is_dir():
            shutil.copytree(src_folder, folder, dirs_exist_ok=True)
        data["transcripts_dir"] = folder.name
        dest.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        return dest

    def compare(self, a: int, b: int) -> int:
        """Side by side, scenario by scenario; returns how many scenarios differ."""
        ra, rb = self.results[a], self.results[b]
        ma = {x["id"]: x for x in ra["results"]}
        mb = {x["id"]: x for x in rb["results"]}
        ids = [x["id"] for x in ra["results"]] + [i for i in mb if i not in ma]
        t = self.scenario_table
        t.setColumnCount(3)
        t.setHorizontalHeaderLabels(["Scenario", row_label(ra), row_label(rb)])
        t.setRowCount(len(ids))
        differ = 0
        for i, sid in enumerate(ids):
            first = QTableWidgetItem(sid)
            t.setItem(i, 0, first)
            outs = []
            for j, m in ((1, ma), (2, mb)):
                x = m.get(sid)
                if x is None:
                    t.setItem(i, j, QTableWidgetItem("—"))
                else:
                    text = x["outcome"] + (f" ({x['failure_class']})" if x["failure_class"] else "")
                    t.setItem(i, j, _outcome_item(text, x["outcome"] == "pass"))
                outs.append(None if x is None else x["outcome"])
            if outs[0] != outs[1]:
                differ += 1
                first.setText(f"≠ {sid}")
        t.resizeColumnsToContents()
        self._cell = None
        self.detail.setHtml(
            f"<h3>Comparison</h3><p>{differ} of {len(ids)} scenarios differ between "
            f"<b>{row_label(ra)}</b> ({ra['summary']['passed']}/{ra['summary']['total']}) and "
            f"<b>{row_label(rb)}</b> ({rb['summary']['passed']}/{rb['summary']['total']}).</p>"
        )
        return differ
