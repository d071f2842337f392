"""Step 2: examples.jsonl from step 1's candidates and the labels of the manual read.

    python 2_build.py [--candidates candidates.json] [--out ../examples.jsonl]

F: the candidates read as underspecified (all kept); T_all: those read as specified (the
others were dropped on reading, ../README.md step 3); FORCE: specified ones kept for variety;
the rest of the specified sample is seeded, so the output is the same on every run."""

import argparse
import json
import random
from pathlib import Path

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--candidates", default="candidates.json")
ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "examples.jsonl")
args = ap.parse_args()
with open(args.candidates, encoding="utf-8") as f:
    c = json.load(f)
F = [
    20, 29, 49, 56, 76, 90, 95, 118, 141, 144, 175, 182, 185, 192, 193, 198, 245, 250, 263, 269, 279, 282,
    307, 352, 363
]
T_all = [
    0, 2, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 24, 25, 26, 27, 30, 31, 32, 33, 34,
    35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 50, 51, 52, 53, 54, 55, 57, 58, 59, 60, 61, 62,
    63, 64, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 91,
    92, 93, 94, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114,
    115, 116, 117, 119, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 135, 136, 137, 138,
    139, 142, 143, 145, 146, 147, 148, 149, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163,
    164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 176, 177, 178, 179, 180, 181, 183, 184, 186, 187,
    188, 189, 190, 191, 194, 195, 196, 197, 199, 200, 201, 202, 203, 205, 206, 207, 208, 209, 211, 212, 213,
    214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 228, 229, 230, 231, 232, 233, 235, 236,
    237, 238, 239, 240, 241, 242, 243, 244, 246, 248, 249, 251, 253, 254, 255, 256, 257, 258, 259, 260, 262,
    264, 265, 266, 267, 268, 270, 271, 272, 273, 274, 275, 276, 277, 278, 280, 281, 283, 284, 285, 286, 287,
    288, 290, 291, 292, 293, 295, 296, 297, 299, 300, 301, 303, 304, 305, 306, 308, 309, 310, 311, 312, 313,
    314, 315, 316, 318, 319, 320, 321, 322, 323, 324, 326, 327, 328, 329, 330, 332, 333, 334, 335, 336, 338,
    339, 340, 341, 342, 343, 344, 345, 346, 347, 349, 350, 351, 353, 354, 355, 356, 359, 360, 361, 362, 364,
    365
]
T_all = [i for i in T_all if i not in (151, 187)]
assert not set(F) & set(T_all)
FORCE = [
    6, 15, 54, 59, 71, 74, 109, 110, 115, 123, 142, 194, 219, 271, 280, 308, 328, 25, 10, 171, 341, 201, 265,
    364, 126, 183, 335, 346
]
assert set(FORCE) <= set(T_all)
rest = [i for i in T_all if i not in FORCE]
random.Random(20240601).shuffle(rest)
T = sorted(FORCE + rest[: 125 - len(FORCE)])
out = []
for i in sorted(F + T):
    o = c[i]
    out.append(
        {
            "state": o["state"],
            "read_only": False,
            "design": False,
            "review": False,
            "specified": i in T,
            "source": "inspect_evals/swe_lancer/data/all_swelancer_tasks.csv:" + o["qid"],
        }
    )
with open(args.out, "w", encoding="utf-8") as f:
    for r in out:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
print(len(out))
