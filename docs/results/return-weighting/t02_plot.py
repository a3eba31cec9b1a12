"""The return weights at T = 0.2 under the neighbourhood cap against the default at T = 0.3
(PREREG.md, twenty-ninth amendment): the expert-normalised return per dataset, each seed a dot, of
`awcapn_t02` beside `awcapn`, the return weights alone (`aw03`), the term and, held-out, filtered
BC: stitched plate-slide at 20k, the four held-out mixtures and both suites' 8 datasets at 10k
(t02.json and awcapn.json beside this file) -> t02.png. argv: that folder."""

import json
import sys
from pathlib import Path

from awcapn_plot import figure


def main(folder):
    ours = json.loads((folder / "t02.json").read_text())
    default = json.loads((folder / "awcapn.json").read_text())
    stitched = {
        "awcapn_t02": ours["test A, stitched plate-slide, 20k"]["runs"],
        "awcapn": default["screen A, stitched plate-slide, 20k"]["runs"],
    }
    figure(stitched, ours, folder / "t02.png")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
