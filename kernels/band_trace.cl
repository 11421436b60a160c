/* The traceback of DESIGN.md section 5 on the device: one work-item aligns one read to one edge
 * profile (its best edge) and walks the path back. It gives exactly what the host traceback
 * (pairwise/traceback.py, `_trace` over the reference scorer's `fill_band_into`) gives: the same
 * int recurrence, the same tie-breaking, the same end column; tests hold the two equal.
 *
 * Recurrence, minimised, in the band frame of the reference scorer widened by the band margin w
 * (DESIGN 5): row j (read position), offset k = i - j in [-w, m - n + w], stored at frame column
 * c = k + w < width = m - n + 1 + 2w, column i = j + k (cells with i outside [0, m) are +inf):
 *     D(j,k) = min(S(j,k-1) + OE_i, D(j,k-1) + E_i) + L(k-1,k)   (+inf at c = 0)
 *     S(j,k) = min(S(j-1,k) + M_ij + CG_i + X_ij, D(j,k), S(j-1,k+1) + insertion + L(k+1,k))
 *     L(a,b) = excursion where offset a lies in DESIGN 4's band [0, m - n] and b does not, else 0
 *     S(-1,k) = 0 in the band, excursion for m - n < k <= m - n + w, +inf for k < 0;
 *     S(j-1,k) = +inf beyond the frame; score = min_k S(n-1,k), the smallest such k ending it.
 * (w = 0: DESIGN 4's band, no excursion; reference_scorer.fill_band_into is the same recurrence.)
 *     M_ij = 0 where a_i & b_j != 0, near_mismatch where near_i & b_j != 0, mismatch otherwise.
 *     X_ij = the column profile cost of b_j in column i (COLUMN_COSTS; 0 without), less the nearest
 *            sequences' bonus (NEAREST_BONUS: `bonus` where read residue j is one its nearest
 *            reference rows hold in column i, pairwise/nearest.py; residue indices, NO_RESIDUE none).
 *     OE_i = 0 also where one of those rows has a gap in column i (NEAREST_BONUS: GAP_MARK).
 *
 * Instead of the two int64 matrices the host keeps, the device keeps one int row (S of the last
 * row of the previous stripe of STRIPE rows, overwritten by this stripe's last row: see
 * band_trace below) and one byte per cell of what the walk asks:
 *     bits 0-1  which term S(j,k) took, in the walk's order of preference: 0 the diagonal,
 *               1 D, 2 the insertion (the first of them equal to the minimum)
 *     bit 2     D(j,k) extends D(j,k-1): extension strictly cheaper than opening (a tie opens)
 * The walk from (n-1, end offset) follows these bytes: outside D, diagonal -> M (j-1), D -> enter
 * D, insertion -> I (j-1, k+1); inside D, emit D and stay in D if bit 2 is set, k-1.
 *
 * Memory layout (R = n_reads work-items, side by side so that a warp's accesses are coalesced
 * while its reads are of one length, the host sorting them):
 *   states, near  [profiles][m]        elem_t: each profile's elements (state set | CGAP bit at
 *                                      bit STATE_BITS) and near states (0 without)
 *   codes         [residues]           elem_t: the reads' state sets, read r at
 *                                      codes[offsets[r] .. offsets[r+1]-1]
 *   cost_rows     [residues]           uchar, COLUMN_COSTS only: each residue's row k of the cost
 *                                      table (the host looks its code up), beside `codes`
 *   cost_table    [m][n_costs]         uchar, COLUMN_COSTS only: X(i, code of row k) at [i][k].
 *                                      A warp's work-items step through the columns together
 *                                      (stripe j0 and step t alike: column j0 + t), so their
 *                                      loads, one per read's row, fall in one column's n_costs
 *                                      bytes (24 for protein): one sector
 *   read_residues [residues]           uchar, NEAREST_BONUS only: each residue's residue index
 *                                      (phylo/residues.py), beside `codes`
 *   reference     [m][n_tips]          uchar, NEAREST_BONUS only: the reference rows' residue
 *                                      indices (GAP_RESIDUE a gap), column by column: a warp's
 *                                      work-items, all at one column (as above), load within one
 *                                      column's n_tips bytes
 *   nearest_tips  [R][NEAREST_ROWS]    int, NEAREST_BONUS only: each read's nearest rows (-1 none);
 *                                      at each step the read's marks (bit r: one of its rows holds
 *                                      residue r; GAP_MARK: one has a gap) are formed from their
 *                                      residues in the step's column, as phylo/residues.nearest_marks
 *   row           [max_width][R]       int: S of the previous row by frame column
 *   moves         [max_rows][max_width][R]  uchar: the bytes above, rows j < n, frame columns c < width
 *   ops           [R][max_ops]         uchar: 0 M, 1 D, 2 I in walk order (the path's end first)
 *   score, start, op_count  [R]        int
 * Arithmetic is int with `inf` far above every finite cell (the host checks the read length
 * against it, as for band_score's 32-bit path; it counts the largest column cost). Build options:
 * -DPROF_BITS=8|32 -DSTATE_BITS=n, -DSTRIPE (rows computed together; default 8), -DCOLUMN_COSTS=0|1
 * (column profile costs: each stripe row keeps its residue's table row, and a cell adds the byte
 * at that row of the step's column, one load per cell; without, the kernel takes NULL tables and
 * never reads them), -DNEAREST_BONUS=0|1 (the bonus: each stripe row keeps its residue index, and
 * each step loads the read's nearest rows' residues at its column once for all rows; without, NULL
 * arrays; with it, -DNEAREST_ROWS, -DNO_RESIDUE, -DGAP_RESIDUE and -DGAP_MARK as well).
 *
 * Speed (H100, 12,500 reads of 100 residues against 1,072 columns, BENCHMARKS.md "The traceback
 * on the GPU"): one cell at a time, its loads of CHUNK offsets issued together, 13-26 Gcells/s
 * (CHUNK 1-16), bound by the latency of the row's and the profile's loads: 12,500 work-items
 * keep a few warps per multiprocessor, too few to hide it. The stripe reads the row once per
 * STRIPE cells and one element per step for all its rows.
 */

#include "elements.cl"

/* Rows per stripe: the rows of a stripe are computed together, a skewed wavefront in registers
 * (below), so the previous row is read from and written to `row` once per stripe, and a
 * profile element is loaded once per stripe and step. */
#ifndef STRIPE
#define STRIPE 8
#endif
#ifndef COLUMN_COSTS
#define COLUMN_COSTS 0
#endif
#ifndef NEAREST_BONUS
#define NEAREST_BONUS 0
#endif

/* With NEAREST_BONUS the host also defines, from pairwise/nearest.py and phylo/residues.py:
 * NEAREST_ROWS (nearest rows per read), NO_RESIDUE (no single residue: an ambiguity code),
 * GAP_RESIDUE (a gap in a reference row) and GAP_MARK (a nearest row's gap in the marks). */
#define OP_M 0
#define OP_D 1
#define OP_I 2
#define FROM_DIAGONAL 0
#define FROM_D 1
#define FROM_INSERTION 2
#define D_EXTENDS 4

/* The stripe of rows j0 .. j0 + rows - 1 as a skewed wavefront: at step t, row j0 + u computes
 * offset k = t - u, so every row of the stripe is at column i = j + k = j0 + t (one element for
 * all), and each term a cell needs is already in a register: S(j-1, k) is what row u - 1
 * computed at step t - 1, S(j-1, k+1) what it computed at this step (rows go in order), S(j,
 * k-1) and D(j, k-1) row u's own values of step t - 1. Row j0 - 1 comes from `row`, read a step
 * ahead; the stripe's last row goes back into it at offset t - rows + 1, which no read of this
 * stripe needs any more (offset p is read at step p - 1). */
__kernel void band_trace(
    __global const elem_t *restrict states, __global const elem_t *restrict near, const int m,
    __global const elem_t *restrict codes, __global const int *restrict offsets, __global const int *restrict slot,
    const int n_reads, const int max_width, __global int *restrict row, __global uchar *restrict moves,
    const int max_ops, __global uchar *ops, __global int *op_count, __global int *score, __global int *start,
    const int mismatch, const int cgap, const int open_extend, const int extend, const int insertion,
    const int near_mismatch, const int inf, __global const uchar *restrict cost_rows,
    __global const uchar *restrict cost_table, const int n_costs, __global const uchar *restrict read_residues,
    __global const uchar *restrict reference, const int n_tips, __global const int *restrict nearest_tips,
    const int bonus, const int margin, const int excursion)
{
    const int r = get_global_id(0);
    if (r >= n_reads) return;
    const int first = offsets[r];
    const int n = offsets[r + 1] - first;
    const int band_last = m - n;                 /* DESIGN 4's band: offsets 0 .. band_last */
    const int width = band_last + 1 + 2 * margin;
    __global const elem_t *restrict a = states + (size_t)slot[r] * m;
    __global const elem_t *restrict a_near = near + (size_t)slot[r] * m;
    const size_t R = (size_t)n_reads;
    const size_t row_step = (size_t)max_width * R;  /* moves: from row j to row j + 1 */

#if NEAREST_BONUS
    int tip[NEAREST_ROWS];  /* the read's nearest rows */
#pragma unroll
    for (int q = 0; q < NEAREST_ROWS; ++q) tip[q] = nearest_tips[r * NEAREST_ROWS + q];
#endif
    for (int c = 0; c < width; ++c) {  /* S(-1, k): free in the band, an excursion to its right */
        const int k = c - margin;
        row[c * R + r] = k < 0 ? inf : (k <= band_last ? 0 : excursion);
    }
    int best = inf, end = 0;
    for (int j0 = 0; j0 < n; j0 += STRIPE) {
        const int rows = min(STRIPE, n - j0);
        elem_t b[STRIPE];
        int done[STRIPE], now[STRIPE], left_d[STRIPE];  /* S of step t - 1, S of step t, D of step t - 1 */
#if COLUMN_COSTS
        int x_row[STRIPE];  /* each row's cost table row */
#endif
#if NEAREST_BONUS
        uchar residue[STRIPE];  /* each row's residue index */
#endif
#pragma unroll
        for (int u = 0; u < STRIPE; ++u) {
            b[u] = u < rows ? codes[first + j0 + u] : 0;
#if COLUMN_COSTS
            x_row[u] = u < rows ? cost_rows[first + j0 + u] : 0;
#endif
#if NEAREST_BONUS
            residue[u] = u < rows ? read_residues[first + j0 + u] : NO_RESIDUE;
#endif
            done[u] = now[u] = left_d[u] = inf;
        }
        __global uchar *restrict move = moves + (size_t)j0 * row_step + r;
        int above = row[r];                                     /* S(j0 - 1, frame column t) */
        int above_next = width > 1 ? row[R + r] : inf;          /* S(j0 - 1, frame column t + 1) */
        /* every row of the stripe is at column j0 + t - margin at step t (0 outside the columns) */
        const int i0 = j0 - margin;
        elem_t e = i0 >= 0 ? a[i0] : 0, e_near = i0 >= 0 ? a_near[i0] : 0;
        const int steps = width + rows - 1;
        for (int t = 0; t < steps; ++t) {
            /* the next step's loads first: their latency overlaps this step's arithmetic */
            const int t2 = t + 2;
            const int i = i0 + t, i_next = i + 1;
            const int column_ok = i >= 0 && i < m;
            const int above_after = t2 < width ? row[t2 * R + r] : inf;
            const int next_ok = t + 1 < steps && i_next >= 0 && i_next < m;
            const elem_t e_after = next_ok ? a[i_next] : 0;
            const elem_t near_after = next_ok ? a_near[i_next] : 0;
            const int gap_column = (e & CGAP_BIT) != 0;
            const int column_cgap = gap_column ? cgap : 0;
            const int column_extend = gap_column ? 0 : extend;
#if COLUMN_COSTS
            __global const uchar *restrict x_column = cost_table + (size_t)(column_ok ? i : 0) * n_costs;  /* column i */
#endif
#if NEAREST_BONUS
            uint marks = 0;  /* what the nearest rows hold at column i */
#pragma unroll
            for (int q = 0; q < NEAREST_ROWS; ++q) {
                if (tip[q] >= 0 && column_ok) {
                    const uchar held = reference[(size_t)i * n_tips + tip[q]];
                    marks |= held == GAP_RESIDUE ? GAP_MARK : (held != NO_RESIDUE ? 1u << held : 0u);
                }
            }
            const int column_open = gap_column || (marks & GAP_MARK) ? 0 : open_extend;
#else
            const int column_open = gap_column ? 0 : open_extend;
#endif
#pragma unroll
            for (int u = 0; u < STRIPE; ++u) {
                const int c = t - u;     /* frame column */
                const int k = c - margin;  /* offset */
                if (u < rows && c >= 0 && c < width && !column_ok) {  /* no column: +inf */
                    move[u * row_step + c * R] = 0;
                    now[u] = inf;
                    left_d[u] = inf;
                    if (u == rows - 1) row[c * R + r] = inf;
                } else if (u < rows && c >= 0 && c < width) {
                    const int diagonal_in = u == 0 ? above : done[u - 1];       /* S(j-1, k) */
                    const int insertion_in = u == 0 ? above_next : now[u - 1];  /* S(j-1, k+1) */
                    const int inside = k >= 0 && k <= band_last;
                    /* L(k-1, k) and L(k+1, k): leaving DESIGN 4's band */
                    const int leave_d = (!inside && k - 1 >= 0 && k - 1 <= band_last) ? excursion : 0;
                    const int leave_i = (!inside && k + 1 >= 0 && k + 1 <= band_last) ? excursion : 0;
                    int cost = (e & STATE_MASK & b[u]) ? 0 : ((e_near & b[u]) ? near_mismatch : mismatch);
#if COLUMN_COSTS
                    cost += x_column[x_row[u]];  /* X_ij */
#endif
#if NEAREST_BONUS
                    if (residue[u] != NO_RESIDUE && ((marks >> residue[u]) & 1u)) cost -= bonus;
#endif
                    const int diag = diagonal_in >= inf ? inf : diagonal_in + column_cgap + cost;
                    int d = inf, extends = 0;
                    if (c > 0 && done[u] < inf) {
                        const int open = done[u] + column_open;
                        const int ext = left_d[u] >= inf ? inf : left_d[u] + column_extend;
                        extends = ext < open;
                        d = (extends ? ext : open) + leave_d;
                    }
                    const int ins = c < width - 1 && insertion_in < inf ? insertion_in + insertion + leave_i : inf;
                    int s = diag, from = FROM_DIAGONAL;
                    if (d < s) { s = d; from = FROM_D; }
                    if (ins < s) { s = ins; from = FROM_INSERTION; }
                    move[u * row_step + c * R] = (uchar)(from | (extends ? D_EXTENDS : 0));
                    now[u] = s;
                    left_d[u] = d;
                    if (u == rows - 1) row[c * R + r] = s;  /* the next stripe's row j0 - 1 */
                    if (j0 + u == n - 1 && s < best) { best = s; end = c; }
                }
            }
#pragma unroll
            for (int u = 0; u < STRIPE; ++u) done[u] = now[u];
            above = above_next;
            above_next = above_after;
            e = e_after;
            e_near = near_after;
        }
    }

    __global uchar *path = ops + (size_t)r * max_ops;
    int count = 0, j = n - 1, c = end, in_d = 0;
    while (j >= 0) {
        const uchar move = moves[((size_t)j * max_width + c) * R + r];
        if (in_d) {
            path[count++] = OP_D;
            in_d = (move & D_EXTENDS) != 0;
            --c;
        } else if ((move & 3) == FROM_DIAGONAL) {
            path[count++] = OP_M;
            --j;
        } else if ((move & 3) == FROM_D) {
            in_d = 1;
        } else {
            path[count++] = OP_I;
            --j;
            ++c;
        }
    }
    op_count[r] = count;
    score[r] = best;
    start[r] = c - margin;  /* the path left the free boundary row at column (offset) - 1 */
}
