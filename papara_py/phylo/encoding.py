"""State encodings of DESIGN.md section 2: the two alphabets, as 256-entry lookup tables.

A residue is a set of states, one bit per state: nucleotides A=1, C=2, G=4, T=8 (U is T, IUPAC
ambiguity codes are unions); amino acids bit k for the k-th letter of ARNDCQEGHILKMFPSTWYV
(B = N|D, Z = Q|E, J = I|L, X = all 20, U reads as C and O as K). Case is ignored. Lookup tables
let every parser encode a whole sequence with one numpy gather.

`Alphabet` is the one place that knows what differs between nucleotide and amino-acid data:
the tables, how wide a state set is (`n_states`), the element type that holds a set plus the
CGAP bit (`dtype`: uint8 for DNA, uint32 for protein), whether reads have a reverse strand, the
default penalties, and the name used in options, messages and the run record. Every other
module asks its alphabet (or, inside numba code, the element type: `cgap_bit_of`,
`state_mask_of`) instead of testing which alphabet it has.

Edge profile elements (DESIGN.md 3-4): bits 0..n_states-1 the state set of the edge's virtual
root, bit n_states (`Alphabet.cgap_bit`) set where the phylogenetic gap signal says "gap": bit 4
(0x10) of a byte for DNA, bit 20 (0x100000) of a uint32 for protein. Read codes use the same
element type (their CGAP bit is never set).

Every element also has *near* states (DESIGN.md 3), which a read residue matches at the cost
`near_mismatch` (DESIGN.md 4); they are never in the element's state set, and each alphabet has
its own rule for them:
- DNA, by parsimony: the states one parsimony step away at the edge's virtual root. The tree
  decides them, so the element stores them (bits 5-7 of the byte): a mask over the states the
  set lacks, in ascending order, bit 5 + k standing for the k-th state not in the set (a set is
  never empty, so n_states - 1 bits suffice).
- Protein, by similarity: the amino acids that substitute for a state of the set (BLOSUM62 score
  0 or more, `BLOSUM62_SIMILAR`) and are not in it. They follow from the state set alone, so the
  element stores nothing more (a uint32 has no room for 20 more bits); they are looked up from
  the set in two 1024-entry tables, one per half of the set's bits. (What the whole column
  holds is the column profile cost's part, model/column_costs.py, not the near states'.)
`near_states` gives them for whole arrays of elements; the kernels and the traceback take them
from it, computed on the host (no numba code derives them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from papara_py.errors import InputError

GAP_CHARACTERS = "-.?"

#: ASCII byte -> True for the reference gap/missing characters (the CGAP "gap" state).
IS_GAP = np.zeros(256, dtype=bool)
for _ch in GAP_CHARACTERS:
    IS_GAP[ord(_ch)] = True

#: --alphabet auto: an alignment is nucleotide data when at least this share of its residues
#: (gaps left out) are A, C, G, T, U or N (DESIGN 2).
NUCLEOTIDE_SHARE = 0.9
_NUCLEOTIDE_LETTERS = "ACGTUNacgtun"


@dataclass(frozen=True, eq=False, repr=False)
class Alphabet:
    """One alphabet of DESIGN 2 and everything derived from it (see the module docstring)."""

    name: str                     # "dna" or "protein": --alphabet, the run record, messages
    residue_kind: str             # "nucleotide" / "amino-acid", for messages
    letters: str                  # the states: bit k is letters[k]
    ambiguity: dict[str, str]     # further letters -> the states they stand for
    dtype: np.dtype               # profile elements and read codes: a state set plus the CGAP bit
    stranded: bool                # reads may come from the reverse strand (reverse complement)
    default_preset: str           # model/params.py PRESETS: the penalties when none are given
    similar: tuple[str, ...] = ()  # near states by similarity: letter pairs that substitute for each other
    substitution_matrix: str | None = None  # the column profile cost's scores (model/column_costs.py)
    read_code: np.ndarray = field(init=False, repr=False)
    ref_code: np.ndarray = field(init=False, repr=False)
    similar_low: np.ndarray = field(init=False, repr=False)   # low half of a set -> its similar states
    similar_high: np.ndarray = field(init=False, repr=False)  # high half of a set -> its similar states

    def __post_init__(self) -> None:
        if np.dtype(self.dtype).itemsize * 8 <= self.n_states:
            raise ValueError(f"{self.dtype} cannot hold {self.n_states} states and the CGAP bit")
        read_code = np.zeros(256, dtype=self.dtype)
        sets = {letter: 1 << k for k, letter in enumerate(self.letters)}
        for letter, stands_for in self.ambiguity.items():
            sets[letter] = sum(1 << self.letters.index(s) for s in stands_for)
        for letter, bits in sets.items():
            read_code[ord(letter)] = read_code[ord(letter.lower())] = bits
        ref_code = read_code.copy()
        ref_code[IS_GAP] = self.state_mask  # a gap is no constraint on the states
        object.__setattr__(self, "read_code", read_code)
        object.__setattr__(self, "ref_code", ref_code)
        low, high = self._similar_tables()
        object.__setattr__(self, "similar_low", low)
        object.__setattr__(self, "similar_high", high)

    def _similar_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """For every value of a set's low (bits 0..half-1) and high half: the states similar to
        one of its states (`similar`); a set's similar states are the two lookups or'ed."""
        partner = [0] * self.n_states
        for a, b in self.similar:
            i, j = self.letters.index(a), self.letters.index(b)
            partner[i] |= 1 << j
            partner[j] |= 1 << i
        tables = []
        for first, bits in ((0, self.similar_half), (self.similar_half, self.n_states - self.similar_half)):
            values = np.arange(1 << bits)
            table = np.zeros(1 << bits, dtype=self.dtype)
            for k in range(bits):
                table[(values >> k & 1) == 1] |= self.dtype.type(partner[first + k])
            tables.append(table)
        return tables[0], tables[1]

    def __repr__(self) -> str:  # short: it shows inside kernel variants and messages
        return f"Alphabet({self.name!r})"

    @property
    def n_states(self) -> int:
        return len(self.letters)

    @property
    def state_mask(self) -> int:
        """The bits of the state set in an element (a gap's, or X's / N's, set)."""
        return (1 << self.n_states) - 1

    @property
    def cgap_bit(self) -> int:
        """The CGAP flag of a profile element: the bit above the states."""
        return 1 << self.n_states

    @property
    def stores_near_states(self) -> bool:
        """Whether profile elements store their near states (module docstring: the parsimony
        rule, DNA) rather than derive them from the state set (the similarity rule, protein)."""
        return not self.similar

    @property
    def near_rule(self) -> str:
        """The near states' rule in words (DESIGN 3), for the run record: which model scored a run."""
        if self.stores_near_states:
            return "parsimony: the states one step from the edge's set"
        return f"similarity: {len(self.similar)} substitution pairs"

    @property
    def similar_half(self) -> int:
        """Bits in the low half of a state set for the similarity tables (10 for protein)."""
        return self.n_states // 2

    @property
    def near_shift(self) -> int:
        """The first bit of the near-state field (just above the CGAP bit)."""
        return self.n_states + 1

    def encode_read(self, ascii_bytes: np.ndarray) -> np.ndarray:
        """Encode read residues (uint8 ASCII) to state sets; invalid bytes come back as 0."""
        return self.read_code[ascii_bytes]

    def informative_counts(self, residues: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """int64 [n]: the residues of each of n reads (ASCII uint8 `residues`, read k at
        `offsets[k]:offsets[k + 1]`) that say something: all but the letters that stand for every
        state (N, X), which fit any column at no cost. The outlier rule counts these
        (model/outliers.py): an all-N read fits everywhere and so tells nothing."""
        says = np.concatenate(([0], np.cumsum(self.read_code[residues] != self.state_mask)))
        offsets = np.asarray(offsets, dtype=np.int64)
        return says[offsets[1:]] - says[offsets[:-1]]

    def describe(self) -> str:
        """What this alphabet accepts, for messages: its letters."""
        return f"{self.residue_kind} letters {self.letters} or {''.join(self.ambiguity)} (either case)"


DNA = Alphabet(
    name="dna", residue_kind="nucleotide", letters="ACGT",
    ambiguity={"U": "T", "R": "AG", "Y": "CT", "S": "CG", "W": "AT", "K": "GT", "M": "AC",
               "B": "CGT", "D": "AGT", "H": "ACT", "V": "ACG", "N": "ACGT"},
    dtype=np.dtype(np.uint8), stranded=True, default_preset="weighted")

#: The amino-acid pairs whose BLOSUM62 score is 0 or more (Henikoff & Henikoff 1992): residues that
#: substitute for one another at least as often as chance in conserved blocks of related proteins,
#: protein's near states (DESIGN.md 3; notebook/ACCURACY.md "Near states for protein" chose this relation
#: over the positive pairs alone and others).
BLOSUM62_SIMILAR = ("AC", "AG", "AS", "AT", "AV", "RN", "RQ", "RE", "RH", "RK", "ND", "NQ", "NE", "NG", "NH",
                    "NK", "NS", "NT", "DQ", "DE", "DS", "QE", "QH", "QK", "QM", "QS", "EH", "EK", "ES", "GS",
                    "HY", "IL", "IM", "IF", "IV", "LM", "LF", "LV", "KS", "MF", "MV", "FW", "FY", "ST", "TV",
                    "WY")

PROTEIN = Alphabet(
    name="protein", residue_kind="amino-acid", letters="ARNDCQEGHILKMFPSTWYV",
    ambiguity={"B": "ND", "Z": "QE", "J": "IL", "X": "ARNDCQEGHILKMFPSTWYV", "U": "C", "O": "K"},
    dtype=np.dtype(np.uint32), stranded=False, default_preset="protein", similar=BLOSUM62_SIMILAR,
    substitution_matrix="BLOSUM62")

#: --alphabet NAME -> Alphabet ("auto" is `detect_alphabet`).
ALPHABETS = {alphabet.name: alphabet for alphabet in (DNA, PROTEIN)}
ALPHABET_CHOICES = ("auto", *ALPHABETS)
_BY_DTYPE = {alphabet.dtype: alphabet for alphabet in ALPHABETS.values()}


def alphabet_named(name: str, source: str = "--alphabet") -> Alphabet:
    """The alphabet of `name` (dna, protein), or InputError naming `source`."""
    if name not in ALPHABETS:
        raise InputError(source, f"the alphabet must be one of {', '.join(ALPHABET_CHOICES)}; got {name!r}")
    return ALPHABETS[name]


def alphabet_of(elements: np.ndarray) -> Alphabet:
    """The alphabet whose profile elements / read codes have the dtype of `elements`."""
    dtype = np.dtype(elements.dtype)
    if dtype not in _BY_DTYPE:
        raise TypeError(f"profile elements and read codes are uint8 (dna) or uint32 (protein), got {dtype}")
    return _BY_DTYPE[dtype]


def detect_alphabet(ascii_rows: np.ndarray) -> Alphabet:
    """--alphabet auto (DESIGN 2): DNA when at least NUCLEOTIDE_SHARE of the residues (gap
    characters left out, case ignored) are A, C, G, T, U or N, protein otherwise; an alignment
    of gaps only counts as DNA."""
    rows = np.ascontiguousarray(ascii_rows, dtype=np.uint8)
    if rows.size >= 1 << 20:  # np.bincount widens every byte to 8 (14 s at 180 MB on the dev machine)
        from papara_py.phylo.counts import byte_counts
        counts = byte_counts(rows)
    else:
        counts = np.bincount(rows.reshape(-1), minlength=256)
    return alphabet_from_counts(counts)


def alphabet_from_counts(counts: np.ndarray) -> Alphabet:
    """`detect_alphabet` from the alignment's byte counts (int [256]: how often each byte occurs)."""
    counts = np.array(counts, dtype=np.int64)
    counts[[ord(c) for c in GAP_CHARACTERS]] = 0
    nucleotide = sum(int(counts[ord(c)]) for c in _NUCLEOTIDE_LETTERS)
    total = int(counts.sum())
    return DNA if total == 0 or nucleotide >= NUCLEOTIDE_SHARE * total else PROTEIN


def cgap_bit_of(elements: np.ndarray) -> int:
    """The CGAP bit of profile elements of this dtype (`Alphabet.cgap_bit`). In numba code it is
    a compile-time constant of the array's type, so each element type gets its own machine code
    from one source (phylo/jit.py registers it with numba: a kernel module imports that first)."""
    return alphabet_of(elements).cgap_bit


def state_mask_of(elements: np.ndarray) -> int:
    """The state bits of profile elements of this dtype (`Alphabet.state_mask`); numba: a constant."""
    return alphabet_of(elements).state_mask


def near_states(elements: np.ndarray, alphabet: Alphabet = None) -> np.ndarray:
    """The near states (a state-set mask, the elements' dtype) of profile elements (module
    docstring): stored ones decoded (for each element, the k-th state its set lacks where bit
    near_shift + k is set), or the states similar to the set's and not in it."""
    elements = np.asarray(elements)
    alphabet = alphabet or alphabet_of(elements)
    if alphabet.stores_near_states:
        return NEAR_STATES_DNA[elements]
    states = elements & alphabet.dtype.type(alphabet.state_mask)
    half = alphabet.dtype.type(alphabet.similar_half)
    low_mask = alphabet.dtype.type((1 << alphabet.similar_half) - 1)
    return (alphabet.similar_low[states & low_mask] | alphabet.similar_high[states >> half]) & ~states


def _near_table(alphabet: Alphabet) -> np.ndarray:
    """Element byte -> its near states, for an alphabet whose elements are bytes."""
    table = np.zeros(256, dtype=alphabet.dtype)
    for element in range(256):
        k = 0
        for state in range(alphabet.n_states):
            if not element >> state & 1:  # the k-th state the set lacks
                if element >> (alphabet.near_shift + k) & 1:
                    table[element] |= 1 << state
                k += 1
    return table


def encode_near_states(states: np.ndarray, near: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    """The near-state field (already shifted to its bits) of state sets `states` with near
    states `near` (disjoint from `states`; numpy arrays of the alphabet's dtype)."""
    states = np.asarray(states, alphabet.dtype)
    near = np.asarray(near, alphabet.dtype)
    field = np.zeros_like(states)
    rank = np.zeros_like(states)  # how many lacking states came before this one
    one = alphabet.dtype.type(1)
    for state in range(alphabet.n_states):
        lacking = (states >> alphabet.dtype.type(state)) & one == 0
        hit = lacking & ((near >> alphabet.dtype.type(state)) & one == 1)
        field |= np.where(hit, one << (alphabet.near_shift + rank).astype(alphabet.dtype), 0).astype(alphabet.dtype)
        rank += lacking.astype(alphabet.dtype)
    return field


#: DNA profile element -> its near states (`near_states`).
NEAR_STATES_DNA = _near_table(DNA)

# DNA's tables under their historical names (tests, scripts and the DNA-only k-mer strand code).
READ_CODE = DNA.read_code
REF_CODE = DNA.ref_code
CGAP_BIT = DNA.cgap_bit
STATE_MASK = DNA.state_mask

#: ASCII byte -> its IUPAC complement letter, same case; other bytes map to themselves.
COMPLEMENT_ASCII = np.arange(256, dtype=np.uint8)
for _a, _b in ("AT", "CG", "RY", "KM", "BV", "DH", "SS", "WW", "NN"):
    for _x, _y in ((_a, _b), (_a.lower(), _b.lower())):
        COMPLEMENT_ASCII[ord(_x)] = ord(_y)
        COMPLEMENT_ASCII[ord(_y)] = ord(_x)
COMPLEMENT_ASCII[ord("U")] = ord("A")
COMPLEMENT_ASCII[ord("u")] = ord("a")


#: The same for RNA, A -> U: the complement of a read with U and no T (`is_rna`) stays RNA.
COMPLEMENT_RNA = COMPLEMENT_ASCII.copy()
COMPLEMENT_RNA[ord("A")], COMPLEMENT_RNA[ord("a")] = ord("U"), ord("u")


def is_rna(ascii_bytes: np.ndarray) -> bool:
    """Whether a nucleotide sequence (uint8 ASCII) is RNA: it has U and no T (either case)."""
    folded = ascii_bytes | 0x20  # lower case
    return bool((folded == ord("u")).any()) and not (folded == ord("t")).any()


def reverse_complement(ascii_bytes: np.ndarray) -> np.ndarray:
    """The reverse complement of a nucleotide sequence (uint8 ASCII, IUPAC codes complemented,
    case kept; RNA's with U, `is_rna`); only for an alphabet that is `stranded`."""
    return (COMPLEMENT_RNA if is_rna(ascii_bytes) else COMPLEMENT_ASCII)[ascii_bytes[::-1]]


def encode_read(ascii_bytes: np.ndarray) -> np.ndarray:
    """Encode DNA read residues (uint8 ASCII) to state sets; invalid bytes come back as 0."""
    return DNA.encode_read(ascii_bytes)
