"""A slide deck for each day of book/schedule.toml, built with the website from the notebooks.

Each deck is one self-contained HTML file (``slides/<day>.html`` in the website; CSS, a few
lines of script for the arrow keys and the class roofline image inline), so it opens offline from
a USB stick as well as from the website: nothing is fetched from a CDN. Its slides: the title
with the workshop's settings (workshop.toml), the day's schedule, and for each block of the day
either the notebook (title and objectives, each section with its minutes and its prediction
prompts, the in-class exercise, the key points of its summary) or the block's own slide (the
class roofline, the breaks with the time to be back).

Usage without Sphinx: ``python book/_ext/slides.py OUTPUT_FOLDER``.
"""

from __future__ import annotations

import base64
import datetime
import html
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import workshop  # noqa: E402  (book/_ext/workshop.py)

from lab_utils import course  # noqa: E402

ROOFLINE_FILES = ("class_roofline.png", "class_roofline_sample.png")  # the room's, else the sample
# MyST's dollarmath: $$display$$, and $inline$ whose dollars touch no space (and no digit after)
MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?![\s$])([^$\n]+?)(?<![\s\\])\$(?!\d)", re.DOTALL)
TEX = {r"\times": "×", r"\cdot": "·", r"\approx": "≈", r"\leq": "≤", r"\geq": "≥", r"\le": "≤", r"\ge": "≥"}
TEX_FRACTION = re.compile(r"\\frac\{([^{}]*)\}\{([^{}]*)\}")
TEX_WORDS = re.compile(r"\\(?:text|mathrm|mathbf|operatorname)\{([^{}]*)\}")


def plain_tex(tex: str) -> str:
    """TeX as plain symbols, for a slide without MathJax: fractions as a / b, words as words."""
    tex = TEX_FRACTION.sub(r"(\1) / (\2)", TEX_WORDS.sub(r"\1", tex))
    for command, symbol in TEX.items():
        tex = tex.replace(command, symbol)
    return re.sub(r"\\[,;!]|\\(?=[a-zA-Z])|[{}]", lambda m: " " if m[0][1:] in ",;!" else "", tex).strip()


PREDICT = re.compile(r"^\*\*Predict[^\n]*(?:\n(?!\n)[^\n]*)*", re.MULTILINE)  # the paragraph

STYLE = """
body{margin:0;font:22px/1.45 system-ui,sans-serif;background:#fff;color:#1b1b1b}
section{box-sizing:border-box;min-height:100vh;padding:5vh 7vw;border-bottom:1px solid #ccc}
.js section{display:none;border:0}.js section.on{display:block}
h1{font-size:1.9em;margin:0 0 .5em}h2{font-size:1.45em;margin:0 0 .5em;color:#0b4f8a}
.kind{color:#666;font-size:.8em;text-transform:uppercase;letter-spacing:.08em}
img{max-width:100%;max-height:56vh}table{border-collapse:collapse}
td,th{padding:.15em .6em;text-align:left;border-bottom:1px solid #ddd}
code{background:#f3f3f3;padding:0 .2em}.math{background:none;font-family:serif;font-style:italic}
footer{position:fixed;bottom:1vh;right:2vw;color:#888;font-size:.7em}
@media print{.js section{display:block;page-break-after:always}footer{display:none}}
"""
SCRIPT = """
document.documentElement.className = "js";
const slides = [...document.querySelectorAll("section")];
let at = Math.max(0, Math.min(slides.length - 1, parseInt(location.hash.slice(1) || "1") - 1));
function show(i) {
  at = Math.max(0, Math.min(slides.length - 1, i));
  slides.forEach((s, j) => s.classList.toggle("on", j === at));
  document.querySelector("footer").textContent = (at + 1) + " / " + slides.length;
  history.replaceState(null, "", "#" + (at + 1));
}
document.addEventListener("keydown", (e) => {
  if (["ArrowRight", "PageDown", " "].includes(e.key)) show(at + 1);
  if (["ArrowLeft", "PageUp"].includes(e.key)) show(at - 1);
  if (e.key === "Home") show(0);
  if (e.key === "End") show(slides.length - 1);
});
document.addEventListener("click", (e) => {
  if (!e.target.closest("a")) show(at + (e.clientX > innerWidth / 3 ? 1 : -1));
});
show(at);
"""


def day_file(day: str) -> str:
    """The deck's file name: the day's name before any parenthesis, e.g. "half-day.html"."""
    return re.sub(r"[^a-z0-9]+", "-", day.split("(")[0].lower()).strip("-") + ".html"


def markdown(text: str, inline: bool = False) -> str:
    """HTML of notebook Markdown (``inline``: one line, no paragraph); inline math as plain
    symbols (no MathJax offline)."""
    from markdown_it import MarkdownIt

    spans = []

    def keep(match):
        tag = "pre" if match[1] is not None else "code"
        spans.append(f'<{tag} class="math">{html.escape(plain_tex(match[1] or match[2]))}</{tag}>')
        return f"MATHSPAN{len(spans) - 1}END"

    parser = MarkdownIt("commonmark").enable("table")
    rendered = (parser.renderInline if inline else parser.render)(MATH.sub(keep, text))
    return re.sub(r"MATHSPAN(\d+)END", lambda m: spans[int(m[1])], rendered)


def sections_of(path: Path) -> dict[str, str]:
    """Each ``## `` section of a notebook: its Markdown, the markdown cells from its heading on."""
    found, name = {}, None
    for cell in course.read_cells(path):
        if cell["cell_type"] != "markdown":
            continue
        for part in re.split(r"^(?=## )", cell["source"], flags=re.MULTILINE):
            if part.startswith("## "):
                name = part.splitlines()[0][3:].strip()
                found[name] = part
            elif name is not None:
                found[name] += "\n\n" + part
    return found


def slide(kind: str, title: str, body: str = "") -> str:
    """One slide; ``title`` is one line of Markdown."""
    heading = markdown(title, inline=True)
    return f'<section><div class="kind">{html.escape(kind)}</div><h2>{heading}</h2>{body}</section>'


def notebook_slides(plan: course.NotebookPlan) -> list[str]:
    header = course.read_header(plan.path)
    sections = sections_of(plan.path)
    objectives = "".join(f"<li>{markdown(o, inline=True)}</li>" for o in header.objectives)
    slides = [
        f'<section><div class="kind">notebook · {plan.minutes} min in class</div>'
        f"<h1>{markdown(header.title, inline=True)}</h1>{markdown(header.promise)}"
        f"<h3>Learning objectives</h3><ul>{objectives}</ul></section>"
    ]
    for name, minutes in plan.sections:
        prompts = PREDICT.findall(sections.get(name, ""))
        body = "".join(markdown(p) for p in prompts) or "<p>Read and run together; no prediction here.</p>"
        late = " · skip if late" if name in plan.skip_if_late else ""
        slides.append(slide(f"{header.title[:2]} · {minutes} min{late} · predict, then run", name, body))
    if plan.exercise:
        slides.append(
            slide(
                f"{header.title[:2]} · in class · {plan.exercise.minutes} min",
                f"Exercise {plan.exercise.number}",
                markdown(plan.exercise.question),
            )
        )
    summary = sections.get("Summary", "")
    summary = re.split(r"^\*\*(?:Further reading|Next)", summary, flags=re.MULTILINE)[0]
    summary = summary.split("\n", 1)[1] if "\n" in summary else ""
    slides.append(slide(f"{header.title[:2]} · key points", header.title.split(":")[0], markdown(summary)))
    return slides


def roofline_slide(static: Path) -> str:
    path = next(static / name for name in ROOFLINE_FILES if (static / name).is_file())
    data = base64.b64encode(path.read_bytes()).decode()
    note = (
        "every machine of this room, measured (the bench files of Before you come)"
        if path.name == ROOFLINE_FILES[0]
        else "a sample room of 25 (synthetic files, not measurements): copy the room's figure to "
        "book/_static/class_roofline.png and rebuild"
    )
    body = (
        f'<img src="data:image/png;base64,{data}" alt="The class roofline: {html.escape(note)}">'
        f"<p>{html.escape(note.capitalize())}. Find your machine. Generating one token of a "
        "language model does about one FLOP per byte: which roof limits it on your machine, and on "
        "a T4? Write your answer in the notes document.</p>"
    )
    return slide("opens notebook 02", "The class roofline", body)


def deck(day: str, items: list[str], root: Path) -> str:
    """The HTML of one day's deck."""
    settings = workshop.read(root)
    plans, blocks, _ = course.read_plans(root / "book" / "schedule.toml", root / "notebooks")
    start = datetime.datetime.strptime(settings["start"], "%H:%M")
    rows = course.day_minutes(items, plans, blocks)
    clock = lambda minute: f"{start + datetime.timedelta(minutes=minute):%H:%M}"  # noqa: E731

    def name(item):
        return course.read_header(plans[item].path).title if item in plans else item

    facts = [
        ("When", "dates"),
        ("Website", "website_url"),
        ("Notes and predictions", "notes_document"),
        ("Bench files", "shared_folder"),
        ("Contact", "contact"),
        ("Code of conduct", "code_of_conduct"),
    ]
    title = (
        f"<section><div class='kind'>{html.escape(day)}</div><h1>CPU vs GPU for AI</h1><table>"
        + "".join(
            f"<tr><th>{label}</th><td>{html.escape(workshop.value(settings, key))}</td></tr>"
            for label, key in facts
        )
        + "</table><p>Sticky notes: green on the lid when done or fine, pink when stuck.</p></section>"
    )
    agenda = "".join(
        f"<tr><td>{clock(s)}</td><td>{html.escape(name(i))}</td><td>{m} min</td></tr>" for i, s, m in rows
    )
    slides = [title, slide("the day", "Schedule", f"<table>{agenda}</table>")]
    for item, begin, minutes in rows:
        if item in plans:
            slides += notebook_slides(plans[item])
        elif item == "class roofline on the projector":
            slides.append(roofline_slide(root / "book" / "_static"))
        elif item in ("break", "short break", "lunch"):
            slides.append(slide(item, f"{item.capitalize()}: back at {clock(begin + minutes)}"))
        else:
            slides.append(
                slide(f"{minutes} min", item.capitalize(), "<p>See the instructor guide's script.</p>")
            )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(day)}: CPU vs GPU for AI</title>"
        f'<meta name="viewport" content="width=device-width"><style>{STYLE}</style></head><body>'
        + "".join(slides)
        + f"<footer></footer><script>{SCRIPT}</script></body></html>"
    )


def write_decks(root: Path, folder: Path) -> list[Path]:
    """Write every day's deck into ``folder``; the paths written."""
    _, _, days = course.read_plans(root / "book" / "schedule.toml", root / "notebooks")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for day, items in days.items():
        path = folder / day_file(day)
        path.write_text(deck(day, items, root), encoding="utf-8")
        written.append(path)
    return written


def build_finished(app, exception) -> None:
    """Sphinx ``build-finished``: the decks into the website's ``slides/`` folder."""
    if exception is None and app.builder.format == "html":
        write_decks(Path(app.srcdir), Path(app.outdir) / "slides")


def setup(app) -> dict:
    app.connect("build-finished", build_finished)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    for written in write_decks(HERE.parents[1], Path(sys.argv[1])):
        print(written)
