/* Banded PaPaRa scores (DESIGN.md section 4) of reads against edge profiles, inter-task:
 * one work-item scores one read against LANES edges (two 16-bit lanes packed in a uint, or one
 * 32-bit lane). The structure follows Alachiotis, Berger & Stamatakis (BMC Bioinformatics
 * 13:196, 2012) -- one work-item per (read, edge), profiles in SoA so neighbouring work-items
 * read neighbouring bytes, columns in an unrolled loop -- and improves on it by keeping a stripe
 * of ROWS read rows in registers, so device memory sees one load and one store per column per
 * stripe instead of per cell.
 *
 * Recurrence, minimised, in (column i, read row j) coordinates; row j exists for i in
 * [j, j + width - 1], width = m - n + 1, every other cell is +infinity:
 *     D(i,j) = min(S(i-1,j) + OE_i, D(i-1,j) + E_i)
 *     S(i,j) = min(S(i-1,j-1) + M_ij + CG_i + X_ij, D(i,j), S(i,j-1) + insertion)
 *     S(i,-1) = 0 for i in [-1, width-2];  score = min_i S(i, n-1).
 * X_ij is the column profile cost of read residue b_j in column i (COLUMN_COSTS, below; 0
 * without), the same on every lane.
 * M_ij + CG_i is computed as (CG_i + mismatch) - mismatch * [a_i & b_j != 0]; with NEAR (near
 * states, DESIGN.md 3-4, near_mismatch < mismatch) as (CG_i + mismatch)
 * - (mismatch - near_mismatch) * [(a_i | near_i) & b_j != 0] - near_mismatch * [a_i & b_j != 0]:
 * a match is also a hit of the wider set, so it pays mismatch - (mismatch - near) - near = 0.
 *
 * Sweep: rows are taken ROWS at a time (a stripe, rows j0 .. j0+h-1, h = ROWS except for the
 * last stripe). Within a stripe, column c (absolute column i = j0 + c) updates the rows top to
 * bottom: row r reads its own S and D of column c-1 (registers), the row above at c-1 (diagonal)
 * and at c (insertion). The row above stripe row 0 is row j0-1, kept in `band`. Row r is inside
 * the band for c in [r, r + width - 1]. The first h-1 and the last h columns of a stripe are
 * "masked" (per-cell band tests), the columns between are not. Masking needs only two tests:
 * before its first column a row keeps S = D = inf (so its first D is inf), and at a row's last
 * column its insertion term is inf (the row above has left the band). Cells right of the band
 * are computed but never read: the consumer of S(i,j) at row j+1 is column i+1 (diagonal, out
 * of band too) or column i (insertion, masked), and the stripe ends at its last row's last
 * column, so neither the band row written for the next stripe nor the tracked minimum sees them.
 * A stripe's last row is written to `band` for the next stripe; the last stripe instead tracks
 * the minimum of the read's last row.
 *
 * Memory layout:
 *   profile [m][units]            prof_t: element(s) of LANES edges (states | CGAP bit), the
 *                                 chunk's edges side by side, so a warp reads one contiguous run
 *   codes   [residues]            code_t: the reads' state sets, the profile's element type
 *   band    [m + 1][n_reads*units] cell_t: S of row j0-1 at column i stored at index i + 1,
 *                                 work-items side by side (coalesced)
 *   scores  [n_reads][units*LANES] int: S minimum of each (read, lane)
 *   read_costs per read [stripes][m]  uint4, COLUMN_COSTS only: the read's own cost profile,
 *                                 X(i, b_j) of a stripe's ROWS <= 16 rows in column i as bytes
 *                                 (row r in byte r % 4 of word r / 4; rows past the read's end
 *                                 0), stripe by stripe (stripes = ceil(n / ROWS)): a stripe's
 *                                 columns follow one another, so the warp's loads run through
 *                                 contiguous memory. Read q's starts at uint4 cost_start[q].
 *                                 Built per batch by `read_cost_profile` (below) from:
 *   cost_rows  [residues]         uchar: each read residue's row k of the column cost table (the
 *                                 host looks its code up, engine/gpu.py), beside `codes`
 *   cost_table [m][n_costs]       uchar: X(i, code of row k) at [i][k] (model/column_costs.py's
 *                                 table transposed)
 *
 * Prefetch: a column's profile element and band cell (the row above the stripe) are loaded while
 * the column before it is computed, one column ahead in registers: the band is device memory a
 * stripe away, and loading it where it is used left each column waiting for it (H100 kernel
 * GCUPS, DNA at m = 5,000: 3,339 -> 3,679; notebook/BENCHMARKS.md "Loads a column ahead"). The cost
 * profile is not prefetched: a register copy of a column's costs took the protein build past
 * 128 registers and was slower (and prefetch() hints changed nothing).
 *
 * Overflow: every finite value is below `inf` (the host checks this from the read length); the
 * out-of-band stand-ins stay below inf + 2 * max step, so a 16-bit half never exceeds 65535 and a
 * plain 32-bit add never carries between halves. Build options:
 *   -DROWS=<stripe height>  -DPACKED=0|1  -DUSE_PTX=0|1 (NVIDIA sm_90+: u16x2 PTX, which ptxas
 *   fuses into DPX add-min instructions)
 *   -DPROF_BITS=8|32 -DSTATE_BITS=<states> (the alphabet, phylo/encoding.py): profile elements
 *   and read codes are uchar (DNA: 4 states, CGAP bit 4) or uint (protein: 20 states, CGAP bit
 *   20); the CGAP bit is bit STATE_BITS.
 *   -DCOLUMN_COSTS=0|1: column profile costs (model/column_costs.py, protein). X depends on the
 *   column and the read residue only, so every work-item of a read adds the same X_ij: a
 *   per-read cost profile (`read_costs`, made on the device before band_score) holds it, a
 *   column's rows side by side. Column c of a stripe loads its ROWS costs in one uint4 (`xcol`,
 *   advanced by one per column), an address the warp's work-items share (they hold one read,
 *   get_global_id(1), and step through its columns together): an L1 broadcast; each cell (pair)
 *   splats its byte (one PRMT with PTX, a shift, a mask and a multiply without) and adds it.
 *   (Splatted 32-bit cells, four rows per load, ran at the same speed on the 1,072-column shape
 *   and 3% slower at 5,000 columns, with three times the memory: notebook/BENCHMARKS.md, "Loads a column
 *   ahead".) The cost is non-negative and within the step bound the host
 *   checks (ScoringParams.max_addend counts the largest one), so halves neither borrow nor carry.
 *   (The first form, a byte of the [m][K] table per cell at a row number kept per stripe row,
 *   cost an address add, a byte load and a multiply-add per cell and a register per row:
 *   notebook/BENCHMARKS.md, "The column profile cost on the GPU and the CPU".) ROWS must be at most 16.
 *   Without it the kernel takes NULL for both and never reads them.
 *   -DNEAR=0|1: near states. The host gives each lane's element a second set beside it, the
 *   state set | its near states (engine/gpu.py, _padded_profile). DNA: each element widened to
 *   16 bits, bits 0-3 the state set, bit 4 CGAP, bits 8-11 the wider set; prof_t is then ushort
 *   (one lane) or uint (packed: lane 2u in bits 0-15). Protein, one lane: uint2, .x the element,
 *   .y the wider set. Protein, split (below): uint4, .x and .y as without NEAR, .z and .w the
 *   wider sets split the same way (.w without a CGAP bit).
 *
 * Packed lanes and wide state sets (PACKED with PROF_BITS 32, "split" states): a 16-bit half
 * cannot hold a 20-bit set, so each set is cut into its states 0..15 (the low part, all 16 bits
 * of a half) and its states 16..STATE_BITS-1 with the CGAP bit above them (the high part), and
 * a_i & b_j != 0 becomes (a_lo & b_lo) | (a_hi & b_hi) != 0, computed for both lanes at once in
 * the halves. The host (engine/gpu.py, _split_pairs) lays the profile out as prof_t = uint2 per
 * work-item and column:
 *     .x = states 0..15 of lane 0 | (states 0..15 of lane 1) << 16
 *     .y = states 16..19 | CGAP << 4 of lane 0 | (the same of lane 1) << 16   (protein)
 * and a read residue's two parts sit in B (low) and BH (high), each in both halves. Cutting at
 * 16 bits makes each part of a residue one byte permutation of its code (the code's low or high
 * 16 bits in both halves: one PRMT with PTX), so the parts ptxas rebuilds from the codes in every
 * column, for want of registers to keep them, cost one instruction each (notebook/BENCHMARKS.md, "Where
 * the column cost's time goes"). One more AND and OR per cell pair than DNA, and the profile is 4
 * bytes per lane instead of 1.
 */

#ifndef NEAR
#define NEAR 0
#endif
#ifndef COLUMN_COSTS
#define COLUMN_COSTS 0
#endif
#ifndef LOOKUP
#define LOOKUP 0
#endif
#ifndef LOOKUP_PLAIN_ADDS
#define LOOKUP_PLAIN_ADDS 0
#endif
#ifndef LOOKUP_TABLE
#define LOOKUP_TABLE 0
#endif
#ifndef BAND_AHEAD
#define BAND_AHEAD 1
#endif

#include "elements.cl"
typedef elem_t code_t;
#if COLUMN_COSTS && ROWS > 16
#error "column costs hold a stripe's column in 16 bytes: ROWS must be at most 16"
#endif
#define SPLIT (PACKED && PROF_BITS == 32)
#if SPLIT
#define LOW_BITS 16 /* states in the low part; the rest and the CGAP bit in the high part */
#define HIGH_MASK ((1u << (STATE_BITS - LOW_BITS)) - 1u)
#if STATE_BITS <= LOW_BITS || STATE_BITS - LOW_BITS + 1 > 16
#error "split state sets must have more than 16 states and fit their high part with the CGAP bit in 16 bits"
#endif
#endif

#if SPLIT && NEAR
#define LANES 2
typedef uint4 prof_t; /* two wide elements and their wider sets, split (see above) */
#define SPLAT(x) ((uint)(x) * 0x00010001u)
#elif SPLIT
#define LANES 2
typedef uint2 prof_t; /* two wide elements, split (see above) */
#define SPLAT(x) ((uint)(x) * 0x00010001u)
#elif NEAR && PROF_BITS == 32
#define LANES 1
typedef uint2 prof_t; /* one wide element and its wider set (see NEAR above) */
#define SPLAT(x) ((uint)(x))
#elif NEAR && PACKED
#define LANES 2
typedef uint prof_t; /* two widened 16-bit elements (see NEAR above) */
#define SPLAT(x) ((uint)(x) * 0x00010001u)
#define SPREAD(v) ((uint)(v))
#elif NEAR
#define LANES 1
typedef ushort prof_t; /* one widened element */
#define SPLAT(x) ((uint)(x))
#define SPREAD(v) ((uint)(v))
#elif PACKED
#define LANES 2
typedef ushort prof_t; /* two 8-bit elements */
/* the same value in both 16-bit halves */
#define SPLAT(x) ((uint)(x) * 0x00010001u)
/* two profile bytes -> the low byte of each 16-bit half */
#define SPREAD(v) (((uint)(v) & 0xFFu) | (((uint)(v) & 0xFF00u) << 8))
#else
#define LANES 1
typedef elem_t prof_t;
#define SPLAT(x) ((uint)(x))
#define SPREAD(v) ((uint)(v))
#endif
typedef uint cell_t;

#if PACKED && USE_PTX
inline uint lane_add(uint a, uint b)
{
    uint r;
    asm volatile("add.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
inline uint lane_min(uint a, uint b)
{
    uint r;
    asm volatile("min.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
#elif PACKED
/* halves stay below 65536 (see Overflow above), so no carry crosses them */
inline uint lane_add(uint a, uint b) { return a + b; }
inline uint lane_min(uint a, uint b) { return as_uint(min(as_ushort2(a), as_ushort2(b))); }
#else
inline uint lane_add(uint a, uint b) { return a + b; }
inline uint lane_min(uint a, uint b) { return min(a, b); }
#endif

/* cost += X_ij, byte r of the column's 16 column costs (the uint4 `xb`, COLUMN_COSTS), splatted
 * into every lane; no half carries (Overflow). r is a constant once unrolled, so the word and the
 * byte are chosen at compile time; with PTX one PRMT puts bytes (r & 3, zero, r & 3, zero) in
 * place (a macro, not a function: PRMT's selector must be a compile-time constant). */
#define XWORD(xb, r) (((r) >> 2) == 0 ? (xb).x : ((r) >> 2) == 1 ? (xb).y : ((r) >> 2) == 2 ? (xb).z : (xb).w)
#if PACKED && USE_PTX
#define ADD_COLUMN_COST(cost, xb, r)                                                                  \
    do {                                                                                              \
        uint x_;                                                                                      \
        asm("prmt.b32 %0, %1, 0, %2;" : "=r"(x_) : "r"(XWORD(xb, r)), "n"(((r) & 3) * 0x0101 | 0x4040)); \
        (cost) += x_;                                                                                 \
    } while (0)
#else
#define ADD_COLUMN_COST(cost, xb, r) ((cost) += SPLAT((XWORD(xb, r) >> (8 * ((r) & 3))) & 0xFFu))
#endif

/* Per-column penalties of Equation 1, derived from the profile element(s) of the column. */
typedef struct {
    cell_t states; /* state set per lane (SPLIT: its low part) */
#if SPLIT
    cell_t states_hi; /* SPLIT: the high part of the state set per lane */
#endif
#if NEAR
    cell_t states_near; /* NEAR: the state set and its near states per lane (SPLIT: low part) */
#endif
#if NEAR && SPLIT
    cell_t states_near_hi; /* NEAR, SPLIT: the high part of that wider set per lane */
#endif
    cell_t diag;   /* CG_i + mismatch per lane */
    cell_t open;   /* OE_i per lane */
    cell_t extend; /* E_i per lane */
} column_t;

typedef struct {
    uint mismatch, neg_mismatch, cgap, open_extend, extend;
    uint neg_near, neg_step; /* NEAR: 0 - near_mismatch, 0 - (mismatch - near_mismatch) */
    cell_t insertion, inf;
} penalties_t;

inline column_t load_column(const prof_t element, const penalties_t *pen)
{
    column_t col;
#if SPLIT
    const prof_t elements = element;
    const uint gap = (elements.y >> (STATE_BITS - LOW_BITS)) & SPLAT(1); /* CGAP per lane */
    col.states = elements.x;
    col.states_hi = elements.y & SPLAT(HIGH_MASK);
#if NEAR
    col.states_near = elements.z;
    col.states_near_hi = elements.w;
#endif
#elif NEAR && PROF_BITS == 32
    const uint2 elements = element;
    const uint gap = (elements.x >> STATE_BITS) & 1u; /* CGAP flag, 0 or 1 */
    col.states = elements.x & STATE_MASK;
    col.states_near = elements.y;
#else
    const uint elements = SPREAD(element);
    const uint gap = (elements >> STATE_BITS) & SPLAT(1); /* CGAP flag per lane, 0 or 1 */
    col.states = elements & SPLAT(STATE_MASK);
#if NEAR
    col.states_near = (elements >> 8) & SPLAT(STATE_MASK);
#endif
#endif
    const uint residue = gap ^ SPLAT(1);
    col.diag = gap * pen->cgap + SPLAT(pen->mismatch);
    col.open = residue * pen->open_extend;
    col.extend = residue * pen->extend;
    return col;
}

/* One column of a stripe: rows 0 .. ROWS-1 (or 0 .. h-1 when `track`), top to bottom.
 * dsrc = S(i-1, j0-1), up = S(i, j0-1). `masked` and `track` are compile-time constants at
 * every call, so each call site is specialised. xcol: the read's cost profile at column i, row
 * j0 (COLUMN_COSTS; unused without). */
inline void column_step(cell_t *S, cell_t *D, const cell_t *B, const cell_t *BH,
                        global const uint4 *xcol, const column_t col, cell_t dsrc,
                        cell_t up, const int c, const int width, const int h,
                        const penalties_t *pen, const bool masked, const bool track, cell_t *best)
{
#if COLUMN_COSTS
    uint4 xb; /* the stripe's costs in this column, a byte per row */
#endif
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        if (track && r >= h)
            break;
        const cell_t old = S[r];
        /* old + open is a plain add (no half carries, see Overflow): ptxas may then issue it on
         * the FMA pipe as an IMAD, next to the integer pipe that runs the DPX instructions */
        cell_t d = lane_min(old + col.open, lane_add(D[r], col.extend));
#if SPLIT
        const cell_t meet = (col.states & B[r]) | (col.states_hi & BH[r]);
#else
        const cell_t meet = col.states & B[r];
#endif
        const cell_t hit = lane_min(meet, SPLAT(1)); /* 1 where states meet */
        /* M_ij + CG_i = (CG_i + mismatch) - hit * mismatch: one multiply-add; modulo 2^32 it
         * is the per-half subtraction, as no half can borrow (CG_i + mismatch >= mismatch) */
#if NEAR
        /* the wider set's hit first: (CG_i + mismatch) - (mismatch - near) >= 0, no borrow */
#if SPLIT
        const cell_t meet_near = (col.states_near & B[r]) | (col.states_near_hi & BH[r]);
#else
        const cell_t meet_near = col.states_near & B[r];
#endif
        const cell_t hit_near = lane_min(meet_near, SPLAT(1));
        cell_t cost = col.diag + hit_near * pen->neg_step + hit * pen->neg_near;
#else
        cell_t cost = col.diag + hit * pen->neg_mismatch;
#endif
#if COLUMN_COSTS
        if (r == 0)
            xb = *xcol;
        ADD_COLUMN_COST(cost, xb, r);
#endif
        cell_t ins = lane_add(up, pen->insertion);
        if (masked && c - r + 1 >= width) /* the row above has left the band */
            ins = pen->inf;
        /* add-then-min pairs: ptxas fuses each into one DPX instruction on sm_90 */
        cell_t s = lane_min(lane_min(lane_add(dsrc, cost), d), ins);
        if (masked && c < r) { /* the row has not entered the band yet: S and D stay infinite */
            s = old;
            d = D[r];
        }
        S[r] = s;
        D[r] = d;
        if (track && r == h - 1)
            *best = lane_min(*best, s);
        dsrc = old;
        up = s;
    }
}

/* One stripe, rows j0 .. j0+h-1. The last stripe (`track`) follows the read's last row instead
 * of writing the band. */
inline void sweep_stripe(global const prof_t *profile, const int units, global cell_t *band,
                         const size_t stride, cell_t *S, cell_t *D, const cell_t *B, const cell_t *BH,
                         global const uint4 *xcol, const int j0, const int h, const int width, const bool first, const penalties_t *pen,
                         const bool track, cell_t *best)
{
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        S[r] = pen->inf;
        D[r] = pen->inf;
    }
    const int ncols = h - 1 + width;
    global const prof_t *p = profile + (size_t)j0 * units;
    global cell_t *bp = band + (size_t)(j0 + 1) * stride;
    cell_t dsrc = first ? 0 : bp[-(ptrdiff_t)stride];
    /* the next column's band cell and profile element, loaded a column ahead (see Prefetch; this
     * order of the two declarations is measured: the other gave ptxas a DNA build 7% slower) */
    cell_t up_next = first ? 0 : *bp;
    prof_t element = *p;
    int c = 0;

#define STRIPE_COLUMN(MASKED)                                                                    \
    {                                                                                            \
        const column_t col = load_column(element, pen);                                          \
        const cell_t up = up_next;                                                               \
        if (c + 1 < ncols) {                                                                     \
            element = p[units];                                                                  \
            if (!first)                                                                          \
                up_next = bp[stride];                                                            \
        }                                                                                        \
        column_step(S, D, B, BH, xcol, col, dsrc, up, c, width, h, pen, MASKED, track, best);     \
        if (!track)                                                                              \
            *bp = S[ROWS - 1];                                                                   \
        dsrc = up;                                                                               \
        p += units;                                                                              \
        bp += stride;                                                                            \
        xcol += 1;                                                                               \
    }

    for (; c < min(h - 1, ncols); ++c) /* rows still entering the band */
        STRIPE_COLUMN(true)
    for (; c < width - 1; ++c) /* every row inside the band */
        STRIPE_COLUMN(false)
    for (; c < ncols; ++c) /* rows leaving the band */
        STRIPE_COLUMN(true)
#undef STRIPE_COLUMN
}

#if SPLIT && USE_PTX
/* the code's low (high) 16 bits in both halves: bytes (0, 1, 0, 1) ((2, 3, 2, 3)), one PRMT */
inline uint low_part(uint code)
{
    uint r;
    asm("prmt.b32 %0, %1, 0, 0x1010;" : "=r"(r) : "r"(code));
    return r;
}
inline uint high_part(uint code)
{
    uint r;
    asm("prmt.b32 %0, %1, 0, 0x3232;" : "=r"(r) : "r"(code));
    return r;
}
#elif SPLIT
inline uint low_part(uint code) { return SPLAT(code & 0xFFFFu); }
inline uint high_part(uint code) { return SPLAT(code >> 16); } /* a read code has no bit above 19 */
#endif

/* A stripe's ROWS read residues, each in both halves (SPLIT: low part in B, high part in BH). */
inline void load_residues(global const code_t *read, cell_t *B, cell_t *BH)
{
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#if SPLIT
        B[r] = low_part(read[r]);
        BH[r] = high_part(read[r]);
#else
        B[r] = SPLAT(read[r]);
#endif
    }
}

#if LOOKUP
/* ---- LOOKUP: a stripe of single-state residues, each row's diagonal cost from its residue ----
 *
 * A stripe whose residues are all single states (DNA: A, C, G, T; protein: one of the 20 amino
 * acids; every work-item of a warp holds the same read, so the choice is the warp's) takes this
 * path; a stripe with an ambiguity code (DNA's IUPAC sets, protein's B, Z, J, X) takes the element
 * path above (sweep_stripe), with the same results. Each row keeps a selector (SEL) made from its
 * code once per stripe, instead of the code.
 *
 * DNA (8-bit elements): the diagonal cost is looked up. Memory layout (engine/gpu.lookup_words
 * builds it per chunk, beside the profile, which the element path still reads):
 *   lookup [m + ROWS - 1][units]  uint4 per work-item and column:
 *     .x  lane 2u's   CG_i + M_ij for read residues A, C, G, T in bytes 0, 1, 2, 3
 *     .y  lane 2u+1's the same
 *     .z  OE_i of lane 2u | OE_i of lane 2u+1 << 16   (the deletion's opening, per half)
 *     .w  E_i, likewise                                (its extension)
 *   The last ROWS - 1 columns are zero (the virtual rows below, which run past column m - 1).
 *   Every cost byte is at most 127 (the host builds LOOKUP only then: cgap + mismatch <= 127), so
 *   bit 7 of each byte is clear. SEL:
 *   PTX:      a prmt.b32 selector: bytes (k, sign of k, 4 + k, sign of 4 + k) of the pair
 *             (.x, .y), k = the residue's index 0..3, so prmt(.x, .y, SEL) is lane 2u's cost in
 *             the low half and lane 2u+1's in the high half, the upper byte of each half zero by
 *             prmt's sign replication of a byte whose bit 7 is clear: one PRMT per cell pair,
 *             where the element path spends an AND, a min and a multiply-add (two each with NEAR).
 *   portable: shift 8 k in bits 0..7 and the byte mask 0xFF in bits 8..15; the same integers by
 *             two shifts, two ANDs and an OR (look_cost).
 *   A virtual row (below) has the selector of cost 0: sign-replicated bytes (PTX), mask 0.
 *
 * Protein (split state sets, SPLIT): the element words as the element path reads them; a single
 * state s is bit s of both lanes' states 0..15 (.x: lane 2u in bits 0..15, lane 2u+1 in 16..31)
 * or bit s - 16 of their states 16..19 (.y, likewise), so in the 64 bits (.y:.x) lane 2u's bit
 * is at k = s (s < 16) or s + 16 and lane 2u+1's at k + 16: one 64-bit funnel shift by SEL = k
 * and an AND with 0x00010001 give both lanes' hits (SHF.R.U64 and LOP3 on NVIDIA), where the
 * element path spends two ANDs-with-OR and a min; likewise the wider set's with NEAR. The rows
 * past the read's end in the last stripe compute what they will (never read) and the stripe
 * tracks row h - 1 (row_of), as the column costs give no row of cost 0.
 *
 * Recurrence per column, in place in two passes (no register moves between the stripe's S/D):
 *   pass 1, rows bottom-up:  D[r] = min(S[r] + OE, D[r] + E)
 *                            S[r] = min(S[r-1] + cost_r, D[r])   (S[r-1] still of column c-1;
 *                                                                  row 0: dsrc, the band row)
 *   pass 2, rows top-down:   S[r] = min(S[r], S[r-1] + insertion) (S[r-1] of column c;
 *                                                                  row 0: up, the band row)
 * which is S = min(diagonal, D, insertion) of Eq. 1, the insertion chain last.
 *
 * -DBAND_AHEAD=2 (a variant to measure; default 1): the band cell of the row above is loaded two
 * columns before its use instead of one. The band is device memory written a stripe earlier (its
 * rows of a batch are gigabytes: DRAM, not L2), and one column of a warp takes about (warps per
 * scheduler) x (its integer-pipe instructions) x 2 clocks: at 2 warps per scheduler (198 registers)
 * a 32-row column is ~540 clocks, near DRAM's latency under load; two columns ahead cost one
 * register more.
 *
 * Band edges without per-cell tests: the row above the stripe is +infinity (`up` = inf) from the
 * column where it leaves the band on, so row 0 needs no mask; at head column c (rows entering)
 * only rows 0..c are in the band and only they run, both passes (rows below keep S = D = inf);
 * at tail column c (rows leaving, t = c - width + 1) every row runs pass 1 and pass 2 starts
 * at row t + 1 (row t's insertion would come from a row out of the band; the rows above t are
 * out of the band themselves and never read again). The bounds are the warp's, so the skipped
 * rows are branched over, not masked.
 *
 * The last stripe: DNA's is always whole: a read's last h rows run in a stripe of H = h rounded
 * up to 8 (at most ROWS) rows, the H - h rows below the read's end "virtual" rows of diagonal
 * cost 0. Row n + k then holds min over its reach of S(., n - 1) (cost-0 diagonals carry each
 * value of the row above one column on, insertions and deletions only add), so the minimum of the
 * stripe's last row over its columns is min_i S(i, n - 1), the read's score, and the stripe needs
 * no per-row exit (the element path's last stripe has one). Its columns run up to m + H - h - 2:
 * the lookup words' zero padding. Protein's runs H = 8 or ROWS rows and tracks row h - 1.
 *
 * -DLOOKUP_TABLE=1 (a variant to measure; default 0), either alphabet: each cell pair's diagonal
 * cost is one load from a per-column table of every single state's cost, where the rows above
 * spend a PRMT (DNA) or two funnel shifts, two ANDs, two multiply-adds and a PRMT (protein with
 * near states and column costs). Memory layout (kernel lookup_table below builds it per chunk on
 * the device from the profile, the column cost table and the penalties):
 *   table [m + ROWS - 1][TABLE_WORDS][units] uint: entry s < STATE_BITS: single state s's
 *     CG_i + M_ij (+ X(i, s) with COLUMN_COSTS) of lane 2u in the low half, lane 2u+1's in the
 *     high half (the element path's integers, computed as it does); entry TABLE_ZERO: 0 (the
 *     virtual rows' cost); TABLE_OPEN, TABLE_EXTEND: OE_i and E_i per half. The last ROWS - 1
 *     columns are zero.
 *   SEL[r] = the byte offset of the row's entry (4 units times its state), so a cell pair's cost
 *   is one load at the column's entry 0 + SEL[r]: a warp's 32 work-items read one 128-byte line
 *   (they hold one read, so one entry), from L1 after the first of the group's reads. No byte
 *   limit on the costs (DNA's lookup words need cgap + mismatch <= 127), and the last stripe is
 *   whole with virtual rows in both alphabets. The cost is memory: a line per cell pair from L1,
 *   a column's lines per group of reads from L2 (notebook/BENCHMARKS.md, "The lookup path on the H200").
 */
#if !PACKED || (PROF_BITS == 8 && COLUMN_COSTS && !LOOKUP_TABLE) || (PROF_BITS != 8 && !SPLIT)
#error "LOOKUP is for packed lanes: 8-bit elements (DNA) without column costs, or split state sets"
#endif
/* virtual rows of cost 0 finish the last stripe (DNA; both alphabets with LOOKUP_TABLE), or it
 * tracks row h - 1 (protein's lookup words) */
#define LOOKUP_TRACKS_ROW (SPLIT && !LOOKUP_TABLE)
#define LOOKUP_VIRTUAL (!LOOKUP_TRACKS_ROW)

#if LOOKUP_TABLE
#define TABLE_ZERO STATE_BITS
#define TABLE_OPEN (STATE_BITS + 1)
#define TABLE_EXTEND (STATE_BITS + 2)
#define TABLE_WORDS (STATE_BITS + 3)
#define SEL_ZERO (TABLE_ZERO * 4u * (uint)units)
/* the byte offset of the row's table entry (its one state) from entry 0 */
inline uint residue_selector(const uint code, const int units) { return (31u - clz(code)) * 4u * (uint)units; }
typedef struct {
    uint open, extend;        /* OE_i, E_i per half */
    global const uint *costs; /* the column's entries of this work-item (entry k at costs[k * units]) */
} lcol_t;
#define LCOL_OPEN(c) ((c).open)
#define LCOL_EXTEND(c) ((c).extend)
/* A column's table entry `offset` bytes past the work-item's entry 0 (`costs`): one load. With PTX
 * the address is one 64-bit add of the 32-bit offset (IADD3 and IMAD.X: half of it on the FMA pipe;
 * C's pointer arithmetic gave LEA and LEA.HI.X, both on the integer pipe the DPX add-mins need),
 * and the load takes the read-only path (the table does not change while band_score runs). */
#if USE_PTX
inline uint table_entry(global const uint *costs, const uint offset)
{
    ulong address;
    uint v;
    asm("mad.wide.u32 %0, %1, 1, %2;" : "=l"(address) : "r"(offset), "l"((ulong)costs));
    asm("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(address));
    return v;
}
#else
inline uint table_entry(global const uint *costs, const uint offset)
{
    return *(global const uint *)((global const uchar *)costs + offset);
}
#endif
#elif SPLIT
#define SEL_ZERO 0u /* rows past the read's end: any state (never read) */
inline uint residue_selector(const uint code, const int units)
{
    const uint s = 31u - clz(code);         /* the residue's one state */
    return s < LOW_BITS ? s : s + LOW_BITS; /* lane 2u's bit of it in (.y:.x) */
}
/* Both lanes' bit k of the 64-bit (hi:lo) in bits 0 and 16: [state in the set] per half. With PTX
 * the shift is PTX's shr.b64, whose amount needs no mask (k < 36 here; OpenCL C's `>>` masks it to
 * 6 bits, an AND per cell pair that ptxas did not hoist out of the column loop). */
#if USE_PTX
inline uint state_hits(const uint lo, const uint hi, const uint k)
{
    ulong r;
    asm("shr.b64 %0, %1, %2;" : "=l"(r) : "l"(((ulong)hi << 32) | lo), "r"(k));
    return (uint)r & SPLAT(1);
}
#else
inline uint state_hits(const uint lo, const uint hi, const uint k)
{
    return (uint)((((ulong)hi << 32) | lo) >> k) & SPLAT(1);
}
#endif
typedef struct {
    column_t col; /* the element path's column (load_column) */
#if COLUMN_COSTS
    uint4 xb; /* the stripe's column costs, a byte per row */
#endif
} lcol_t;
#define LCOL_OPEN(c) ((c).col.open)
#define LCOL_EXTEND(c) ((c).col.extend)
#elif USE_PTX
#define SEL_ZERO 0x8888u /* every byte the sign of byte 0 (a cost, bit 7 clear): 0 */
inline uint residue_selector(const uint code, const int units)
{
    const uint k = 31u - clz(code); /* A, C, G, T -> 0, 1, 2, 3 */
    return k * 0x1111u + 0xC480u;   /* nibbles k, 8 + k, 4 + k, 12 + k */
}
inline uint look_cost(const uint4 w, const uint sel)
{
    uint r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(w.x), "r"(w.y), "r"(sel));
    return r;
}
#else
#define SEL_ZERO 0u /* shift 0, mask 0 */
inline uint residue_selector(const uint code, const int units)
{
    return 8u * (31u - clz(code)) | 0xFF00u; /* shift, byte mask << 8 */
}
inline uint look_cost(const uint4 w, const uint sel)
{
    const uint shift = sel & 31u, mask = sel >> 8;
    return ((w.x >> shift) & mask) | (((w.y >> shift) & mask) << 16);
}
#endif
#if !SPLIT && !LOOKUP_TABLE
typedef uint4 lcol_t; /* the lookup word */
#define LCOL_OPEN(c) ((c).z)
#define LCOL_EXTEND(c) ((c).w)
#endif

/* The selectors of a stripe's rows from its `count` residues (rows past them: SEL_ZERO); true
 * when every residue is a single state, i.e. the stripe can take the lookup path. */
inline bool load_selectors(global const code_t *read, const int count, cell_t *SEL, const int units)
{
    bool single = true;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const uint code = r < count ? read[r] : 0u;
        single = single && (r >= count || (code != 0u && (code & (code - 1u)) == 0u));
        SEL[r] = r < count ? residue_selector(code | (code == 0u), units) : SEL_ZERO;
    }
    return single;
}

/* -DLOOKUP_PLAIN_ADDS=1 (a variant to measure; default 0): the three adds of a cell pair as plain
 * 32-bit adds, each min a VIMNMX, where by default ptxas fuses each add with its min into one DPX
 * VIADDMNMX: more instructions (the adds on the FMA pipe), fewer DPX, for a device whose DPX
 * issue slower than its plain min. The same integers: an add carries across halves only where a
 * half passes 65535, which only a cell out of the band can (the tail's rows keep computing), and
 * both halves of a cell are in or out of the band together, so the carry stays in garbage. */
#if LOOKUP_PLAIN_ADDS
#define LOOKUP_ADD(a, b) ((a) + (b))
#else
#define LOOKUP_ADD(a, b) lane_add(a, b)
#endif

/* One column of a lookup stripe of H rows (H, and in the body every bound, compile-time):
 * pass 1 on rows 0..p1_last, pass 2 on rows ch_first..ch_last (see above). */
inline void lookup_column(cell_t *S, cell_t *D, const cell_t *SEL, const lcol_t lc, const cell_t dsrc,
                          const cell_t up, const int H, const int p1_last, const int ch_first,
                          const int ch_last, const penalties_t *pen)
{
#pragma unroll
    for (int r = ROWS - 1; r >= 0; --r) {
        if (r >= H || r > p1_last)
            continue;
        /* S[r] + OE is a plain add (no half carries, see Overflow): ptxas may issue it as an IMAD
         * on the FMA pipe, beside the integer pipe that runs the DPX add-mins */
        const cell_t d = lane_min(S[r] + LCOL_OPEN(lc), LOOKUP_ADD(D[r], LCOL_EXTEND(lc)));
#if LOOKUP_TABLE
        const cell_t cost = table_entry(lc.costs, SEL[r]);
#elif SPLIT
        const cell_t hit = state_hits(lc.col.states, lc.col.states_hi, SEL[r]);
#if NEAR
        const cell_t hit_near = state_hits(lc.col.states_near, lc.col.states_near_hi, SEL[r]);
        cell_t cost = lc.col.diag + hit_near * pen->neg_step + hit * pen->neg_near;
#else
        cell_t cost = lc.col.diag + hit * pen->neg_mismatch;
#endif
#if COLUMN_COSTS
        ADD_COLUMN_COST(cost, lc.xb, r);
#endif
#else
        const cell_t cost = look_cost(lc, SEL[r]);
#endif
        D[r] = d;
        S[r] = lane_min(LOOKUP_ADD(r == 0 ? dsrc : S[r - 1], cost), d);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        if (r >= H || r > ch_last)
            break;
        if (r >= ch_first)
            S[r] = lane_min(S[r], LOOKUP_ADD(r == 0 ? up : S[r - 1], pen->insertion));
    }
}

#if LOOKUP_TRACKS_ROW
/* S[r] for a run-time r (the warp's): one indirect branch, not a select per row */
inline cell_t row_of(const cell_t *S, const int r)
{
    switch (r) {
#define ROW_CASE(k)                                                                              \
    case k:                                                                                      \
        return S[(k) < ROWS ? (k) : 0];
        ROW_CASE(0) ROW_CASE(1) ROW_CASE(2) ROW_CASE(3) ROW_CASE(4) ROW_CASE(5) ROW_CASE(6) ROW_CASE(7)
        ROW_CASE(8) ROW_CASE(9) ROW_CASE(10) ROW_CASE(11) ROW_CASE(12) ROW_CASE(13) ROW_CASE(14) ROW_CASE(15)
#if ROWS > 16
        ROW_CASE(16) ROW_CASE(17) ROW_CASE(18) ROW_CASE(19) ROW_CASE(20) ROW_CASE(21) ROW_CASE(22) ROW_CASE(23)
        ROW_CASE(24) ROW_CASE(25) ROW_CASE(26) ROW_CASE(27) ROW_CASE(28) ROW_CASE(29) ROW_CASE(30) ROW_CASE(31)
#endif
#undef ROW_CASE
    }
    return S[0];
}
#endif

/* One lookup stripe, rows j0 .. j0+H-1 (H compile-time at every call) of which h are the read's.
 * The last stripe (`track`) follows the minimum of row H - 1 (DNA: the virtual rows' last) or
 * h - 1 (protein) instead of writing the band. profile, xcol: the element path's (protein). */
inline void lookup_stripe(global const uint *look, global const prof_t *profile, global const uint4 *xcol,
                          const int units, global cell_t *band, const size_t stride, cell_t *S, cell_t *D,
                          const cell_t *SEL, const int j0, const int H, const int h, const int width,
                          const bool first, const penalties_t *pen, const bool track, cell_t *best)
{
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        S[r] = pen->inf;
        D[r] = pen->inf;
    }
    const int ncols = (LOOKUP_VIRTUAL ? H : h) - 1 + width;
#if LOOKUP_TABLE
    const size_t pstep = (size_t)TABLE_WORDS * units; /* one column of the table */
    global const uint *p = look + (size_t)j0 * pstep;
    uint open_next = p[TABLE_OPEN * units], extend_next = p[TABLE_EXTEND * units];
#elif SPLIT
    const int pstep = units;
    global const prof_t *p = profile + (size_t)j0 * units;
    prof_t element_next = *p;
#else
    const int pstep = units;
    global const uint4 *p = (global const uint4 *)look + (size_t)j0 * units;
    uint4 w_next = *p;
#endif
    global cell_t *bp = band + (size_t)(j0 + 1) * stride;
    /* the row above at column c (`up`) is in the band for c <= width - 2 and +infinity after;
     * dsrc at column c is up at c - 1 (column -1: the band's first cell, or the boundary 0) */
    cell_t dsrc = first ? 0 : bp[-(ptrdiff_t)stride];
    cell_t up_next = width >= 2 ? (first ? 0 : *bp) : pen->inf;
#if BAND_AHEAD == 2
    cell_t up_after = width >= 3 ? (first ? 0 : bp[stride]) : pen->inf; /* `up` two columns on */
#endif
    int c = 0;

#if LOOKUP_TABLE
#define LOOKUP_LOAD(lc)                                                                          \
    lc.open = open_next;                                                                         \
    lc.extend = extend_next;                                                                     \
    lc.costs = p;                                                                                \
    if (c + 1 < ncols) {                                                                         \
        open_next = p[pstep + TABLE_OPEN * units];                                               \
        extend_next = p[pstep + TABLE_EXTEND * units];                                           \
    }
#elif SPLIT && COLUMN_COSTS
#define LOOKUP_LOAD(lc)                                                                          \
    lc.col = load_column(element_next, pen);                                                     \
    lc.xb = *xcol;                                                                               \
    if (c + 1 < ncols)                                                                           \
        element_next = p[units];
#elif SPLIT
#define LOOKUP_LOAD(lc)                                                                          \
    lc.col = load_column(element_next, pen);                                                     \
    if (c + 1 < ncols)                                                                           \
        element_next = p[units];
#else
#define LOOKUP_LOAD(lc)                                                                          \
    lc = w_next;                                                                                 \
    if (c + 1 < ncols)                                                                           \
        w_next = p[units];
#endif
#define LOOKUP_COLUMN(P1_LAST, CH_FIRST, CH_LAST)                                                \
    {                                                                                            \
        lcol_t lc;                                                                               \
        LOOKUP_LOAD(lc)                                                                          \
        const cell_t up = up_next;                                                               \
        LOOKUP_BAND_AHEAD                                                                        \
        lookup_column(S, D, SEL, lc, dsrc, up, H, P1_LAST, CH_FIRST, CH_LAST, pen);              \
        if (!track)                                                                              \
            *bp = S[H - 1];                                                                      \
        else if (LOOKUP_VIRTUAL)                                                                 \
            *best = lane_min(*best, S[H - 1]);                                                   \
        else                                                                                     \
            LOOKUP_TRACK_ROW                                                                     \
        dsrc = up;                                                                               \
        p += pstep;                                                                              \
        bp += stride;                                                                            \
        xcol += 1;                                                                               \
    }
#if BAND_AHEAD == 2
#define LOOKUP_BAND_AHEAD                                                                        \
    up_next = up_after;                                                                          \
    up_after = pen->inf;                                                                         \
    if (c + 2 <= width - 2)                                                                      \
        up_after = first ? 0 : bp[2 * stride];
#else
#define LOOKUP_BAND_AHEAD                                                                        \
    up_next = pen->inf;                                                                          \
    if (c + 1 <= width - 2)                                                                      \
        up_next = first ? 0 : bp[stride];
#endif
#if LOOKUP_TRACKS_ROW
#define LOOKUP_TRACK_ROW *best = lane_min(*best, row_of(S, h - 1));
#else
#define LOOKUP_TRACK_ROW ;
#endif

    /* (protein's last stripe ends with its row h - 1: ncols may fall short of H - 1) */
    for (; c < min(H - 1, width - 1); ++c) /* head: rows 0..c in the band */
        LOOKUP_COLUMN(c, 0, c)
    for (; c < min(H - 1, ncols); ++c) /* head and tail at once (a band narrower than the stripe) */
        LOOKUP_COLUMN(c, c - width + 2, c)
    for (; c < width - 1; ++c) /* body: every row in the band */
        LOOKUP_COLUMN(H - 1, 0, H - 1)
    for (; c < ncols; ++c) /* tail: rows 0..c-width+1 have left */
        LOOKUP_COLUMN(H - 1, c - width + 2, H - 1)
#undef LOOKUP_COLUMN
#undef LOOKUP_LOAD
#undef LOOKUP_BAND_AHEAD
#undef LOOKUP_TRACK_ROW
}

/* The last stripe in H = h rounded up to 8 rows (at most ROWS; protein's lookup words: 8 or
 * ROWS), each height compiled once. */
#define LOOKUP_HEIGHT(x) ((x) < ROWS ? (x) : ROWS)
inline void lookup_last_stripe(global const uint *look, global const prof_t *profile, global const uint4 *xcol,
                               const int units, global cell_t *band, const size_t stride, cell_t *S, cell_t *D,
                               const cell_t *SEL, const int j0, const int h, const int width, const bool first,
                               const penalties_t *pen, cell_t *best)
{
#define LOOKUP_LAST(HEIGHT)                                                                      \
    lookup_stripe(look, profile, xcol, units, band, stride, S, D, SEL, j0, HEIGHT, h, width, first, pen, true, best)
    if (h <= LOOKUP_HEIGHT(8))
        LOOKUP_LAST(LOOKUP_HEIGHT(8));
#if ROWS > 8 && LOOKUP_TRACKS_ROW
    else
        LOOKUP_LAST(ROWS);
#else
#if ROWS > 8
    else if (h <= LOOKUP_HEIGHT(16))
        LOOKUP_LAST(LOOKUP_HEIGHT(16));
#endif
#if ROWS > 16
    else if (h <= LOOKUP_HEIGHT(24))
        LOOKUP_LAST(LOOKUP_HEIGHT(24));
#endif
#if ROWS > 32
    else if (h <= 32)
        LOOKUP_LAST(32);
#endif
#if ROWS > 24
    else
        LOOKUP_LAST(ROWS);
#endif
#endif
#undef LOOKUP_LAST
}
#endif /* LOOKUP */

kernel void band_score(global const prof_t *profile, const int m, const int units,
                       global const code_t *codes, global const int *read_start,
                       global const int *read_len, const int n_reads, global cell_t *band,
                       global int *scores, const uint mismatch, const uint cgap,
                       const uint open_extend, const uint extend, const uint insertion,
                       const uint inf, const uint near_mismatch, global const uint4 *read_costs,
                       global const uint *cost_start, global const uint *lookup, const int profile_units,
                       global const int *unit_base)
{
    const int u = get_global_id(0);
    const int q = get_global_id(1);
    if (q >= n_reads)
        return;
    /* the work-item's unit of the profile (and of the lookup words or table), whose columns are
     * profile_units wide: u, or with `unit_base` (the guided search's tasks, engine/gpu.py
     * score_groups: each q one read against units [unit_base[q], + units) of its group's edges)
     * u from the task's base; the band and the scores are the launch's own, [q][units] */
    const int pu = (unit_base ? unit_base[q] : 0) + u;
    const penalties_t pen = {mismatch, 0u - mismatch, cgap, open_extend, extend,
                             0u - near_mismatch, 0u - (mismatch - near_mismatch), SPLAT(insertion),
                             SPLAT(inf)};
    const int n = read_len[q];
    const int width = m - n + 1;
    global const code_t *read = codes + read_start[q];
#if COLUMN_COSTS
    global const uint4 *costs = read_costs + cost_start[q];
#else
    global const uint4 *costs = 0; /* unused */
#endif
    /* COLUMN_COSTS: the read's cost profile at stripe j0 / ROWS, column j0 (its first) */
#define STRIPE_COSTS(j0) (costs + (size_t)((j0) / ROWS) * m + (j0))
    const size_t stride = (size_t)n_reads * units;
    global cell_t *my_band = band + (size_t)q * units + u;
    global const prof_t *my_profile = profile + pu;

    cell_t S[ROWS], D[ROWS], B[ROWS];
#if SPLIT
    cell_t BH[ROWS];
#else
    cell_t *BH = B; /* unused */
#endif
    cell_t best = pen.inf;
    int j0 = 0;
#if LOOKUP
    /* a stripe of single bases takes the lookup path, one with an ambiguity code the element path */
    /* the work-item's lookup words (uint4s) or table entries (uints); NULL for protein's words */
    global const uint *my_lookup = lookup + (LOOKUP_TABLE ? 1 : 4) * pu;
    cell_t SEL[ROWS];
    for (; j0 + ROWS < n; j0 += ROWS) {
        if (load_selectors(read + j0, ROWS, SEL, profile_units)) {
            lookup_stripe(my_lookup, my_profile, STRIPE_COSTS(j0), profile_units, my_band, stride, S, D, SEL, j0, ROWS, ROWS,
                          width, j0 == 0, &pen, false, &best);
        } else {
            load_residues(read + j0, B, BH);
            sweep_stripe(my_profile, profile_units, my_band, stride, S, D, B, BH, STRIPE_COSTS(j0), j0, ROWS, width,
                         j0 == 0, &pen, false, &best);
        }
    }
    if (load_selectors(read + j0, n - j0, SEL, profile_units)) {
        lookup_last_stripe(my_lookup, my_profile, STRIPE_COSTS(j0), profile_units, my_band, stride, S, D, SEL, j0, n - j0,
                           width, j0 == 0, &pen, &best);
    } else {
        load_residues(read + j0, B, BH);
        sweep_stripe(my_profile, profile_units, my_band, stride, S, D, B, BH, STRIPE_COSTS(j0), j0, n - j0, width, j0 == 0,
                     &pen, true, &best);
    }
#else
    for (; j0 + ROWS < n; j0 += ROWS) {
        load_residues(read + j0, B, BH);
        sweep_stripe(my_profile, profile_units, my_band, stride, S, D, B, BH, STRIPE_COSTS(j0), j0, ROWS, width, j0 == 0,
                     &pen, false, &best);
    }
    /* codes are padded by ROWS elements past the last read, a read's cost profile to whole
     * stripes: the rows past the read's end load a code 0 and a cost 0 but are never computed
     * (column_step stops at h) */
    load_residues(read + j0, B, BH);
    sweep_stripe(my_profile, profile_units, my_band, stride, S, D, B, BH, STRIPE_COSTS(j0), j0, n - j0, width, j0 == 0,
                 &pen, true, &best);
#endif
#undef STRIPE_COSTS

    global int *out = scores + ((size_t)q * units + u) * LANES;
#if PACKED
    out[0] = (int)(best & 0xFFFFu);
    out[1] = (int)(best >> 16);
#else
    out[0] = (int)best;
#endif
}

#if LOOKUP && LOOKUP_TABLE
/* The lookup table of LOOKUP_TABLE (above) from a chunk's profile: one work-item per work-item
 * unit u and column i < columns (m + ROWS - 1; columns from m on are zero). Each single state's
 * diagonal cost as the element path computes it (column_step: the hit of the state set, with NEAR
 * of the wider set too, a multiply-add each, and with COLUMN_COSTS the column's cost of the
 * state's row of the cost table, cost_table[i][state_rows[s]]). */
kernel void lookup_table(global const prof_t *profile, const int m, const int units, const int columns,
                         const uint mismatch, const uint cgap, const uint open_extend, const uint extend,
                         const uint near_mismatch, global const uchar *cost_table, const int n_costs,
                         global const uchar *state_rows, global uint *table)
{
    const int u = get_global_id(0);
    const int i = get_global_id(1);
    if (u >= units || i >= columns)
        return;
    global uint *out = table + (size_t)i * TABLE_WORDS * units + u;
    if (i >= m) {
        for (int k = 0; k < TABLE_WORDS; ++k)
            out[(size_t)k * units] = 0u;
        return;
    }
    const penalties_t pen = {mismatch, 0u - mismatch, cgap, open_extend, extend,
                             0u - near_mismatch, 0u - (mismatch - near_mismatch), 0u, 0u};
    const column_t col = load_column(profile[(size_t)i * units + u], &pen);
    for (int state = 0; state < STATE_BITS; ++state) {
        const uint code = 1u << state;
#if SPLIT
        const cell_t b = low_part(code), bh = high_part(code);
        const cell_t meet = (col.states & b) | (col.states_hi & bh);
#else
        const cell_t b = SPLAT(code);
        const cell_t meet = col.states & b;
#endif
        const cell_t hit = lane_min(meet, SPLAT(1));
#if NEAR
#if SPLIT
        const cell_t meet_near = (col.states_near & b) | (col.states_near_hi & bh);
#else
        const cell_t meet_near = col.states_near & b;
#endif
        const cell_t hit_near = lane_min(meet_near, SPLAT(1));
        cell_t cost = col.diag + hit_near * pen.neg_step + hit * pen.neg_near;
#else
        cell_t cost = col.diag + hit * pen.neg_mismatch;
#endif
#if COLUMN_COSTS
        cost += SPLAT(cost_table[(size_t)i * n_costs + state_rows[state]]);
#endif
        out[(size_t)state * units] = cost;
    }
    out[(size_t)TABLE_ZERO * units] = 0u;
    out[(size_t)TABLE_OPEN * units] = col.open;
    out[(size_t)TABLE_EXTEND * units] = col.extend;
}
#endif

#if COLUMN_COSTS
/* The reads' cost profiles (read_costs above) from the column cost table: one work-item per
 * uint4 (a stripe's column) of all reads' profiles, so the writes are contiguous. Read q's
 * profile covers uint4s cost_start[q] .. cost_start[q+1]-1 (cost_start has n_reads + 1 entries,
 * the last the total); a work-item finds its read by bisection. Row r of stripe s in column i =
 * cost_table[i][cost_rows[read_start[q] + s * ROWS + r]] for rows of the read, 0 after its end. */
kernel void read_cost_profile(global const uchar *cost_rows, global const uchar *cost_table, const int n_costs,
                              const int m, global const int *read_start, global const int *read_len,
                              global const uint *cost_start, const int n_reads, global uint4 *read_costs)
{
    const uint g = get_global_id(0);
    if (g >= cost_start[n_reads])
        return;
    int lo = 0, hi = n_reads - 1; /* the last q with cost_start[q] <= g */
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (cost_start[mid] <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    const int n = read_len[lo];
    const uint local_index = g - cost_start[lo]; /* = stripe * m + i */
    const uint stripe = local_index / m;
    const uint i = local_index - stripe * m;
    const int j = stripe * ROWS;
    global const uchar *rows = cost_rows + read_start[lo];
    global const uchar *column = cost_table + (size_t)i * n_costs;
    uint word[4] = {0u, 0u, 0u, 0u};
    for (int t = 0; t < ROWS && j + t < n; ++t)
        word[t >> 2] |= (uint)column[rows[j + t]] << (8 * (t & 3));
    read_costs[g] = (uint4)(word[0], word[1], word[2], word[3]);
}
#endif
