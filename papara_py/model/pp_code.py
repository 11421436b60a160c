"""hmmalign's posterior probability (PP) code: one character per residue, '0'-'9' and '*', as the
Stockholm export's `#=GR ... PP` lines and the run file's PP strings write a residue's
posterior (model/posterior.py, model/mea.py)."""

from __future__ import annotations

import numpy as np

from papara_py.model.fixed_point import PROB_BITS, PROB_ONE

#: The characters of the PP code, by digit (10: '*').
PP_CHARACTERS = np.frombuffer(b"0123456789*", np.uint8)


def pp_digits(pp: np.ndarray) -> np.ndarray:
    """hmmalign's posterior probability code of fixed-point posteriors (PROB_ONE = 1.0) as ASCII
    bytes: '0' for p < 0.05, digit d for d/10 - 0.05 <= p < d/10 + 0.05, '*' for p >= 0.95.

    HMMER writes it so: p7_alidisplay_EncodePostProb (src/base/p7_alidisplay.c in
    EddyRivasLab/hmmer) returns '*' where p + 0.05 >= 1.0 and otherwise the digit of
    (int)((p + 0.05) * 10.0); hmmalign's #=GR PP lines come from it (annotate_posterior_probability
    in src/p7_tracealign.c). Here in integers, exactly at the boundaries: digit =
    floor((10 pp + PROB_ONE / 2) / PROB_ONE), '*' from 10 on."""
    pp = np.asarray(pp, np.int64)
    digit = np.minimum((10 * pp + PROB_ONE // 2) >> PROB_BITS, 10)
    return PP_CHARACTERS[np.maximum(digit, 0)]


def pp_string(pp: np.ndarray) -> str:
    """`pp_digits` as a str (one read's PP line)."""
    return pp_digits(pp).tobytes().decode("ascii")
