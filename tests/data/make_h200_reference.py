"""How h200_*.folded.gz were made from ../shared/reference/h200-2026-11-29/pyspy_*_attach.txt.

Those were recorded with py-spy attached to a plain loop `for ...: (lambda: matmul(a, b, out=out))()`
at module level, without flametool. This cuts each stack the way flametool's sampler does: keep what is
below the step function (`<lambda>`), count samples in the loop itself (`<module>` as the last frame),
drop the rest (synchronize at the end). Run: python make_h200_reference.py SRC_DIR
"""

import gzip
import json
import sys
from pathlib import Path

from flametool.run import folded


def trim(stacks):
    kept, loop = [], 0
    for s in stacks:
        names = [folded.frame_function(f) for f in s.frames]
        if "<lambda>" in names:
            kept.append(folded.Stack(s.frames[names.index("<lambda>"):], s.count))
        elif names[-1] == "<module>":
            loop += s.count
    return folded.merge(kept), loop


if __name__ == "__main__":
    src = Path(sys.argv[1])
    here = Path(__file__).parent
    loops = {}
    for lib in ("cupy", "torch"):
        kept, loops[lib] = trim(folded.read(src / f"pyspy_{lib}_attach.txt"))
        with gzip.open(here / f"h200_{lib}.folded.gz", "wt", encoding="utf-8") as fh:
            fh.write(folded.dumps(kept))
    (here / "h200_loop_samples.json").write_text(json.dumps(loops) + "\n")
