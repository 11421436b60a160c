/* Posterior decoding on the device (DESIGN 5): the fixed-point Forward and Backward over every
 * alignment of each (read, candidate edge) pair (the whole rectangle of cells), the pooling of
 * the edges' M posteriors into the read's, and the read's MEA alignment. Every integer here is
 * the one papara_py/model/posterior.py computes on the CPU (its docstring is the specification;
 * tests hold the two equal on PoCL and the GPU):
 * the same recurrences, the same evaluation order of every softmin, the same tables
 * (model/fixed_point.py, built on the host and uploaded), the same floors.
 *
 * Energies are int: a cost c is c << shift (fixed point, S = 2^shift), and the host passes the
 * penalties already shifted. The host checks (fixed_point.check_fixed_point) that every energy
 * stays within 2^29 of 0 and every sum below 2^30 = SENTINEL, the stand-in for +infinity (a cell
 * outside the rectangle; M at column 0 after the first row follows it): the softmin of the
 * sentinel (plus a step) and a finite energy is that energy exactly, as on the CPU.
 *
 * Softmin of a, b (both devices): min(a, b) - softmin[min(|a - b|, soft_mask)], the table's length
 * a power of two (soft_mask + 1) whose tail is zeros. exp(-x/T) of x: prob[min(max(x, 0), prob_mask)]
 * in units of PROB_ONE = 2^PROB_BITS.
 *
 * Recurrences, row j of the read (0 .. n-1), column i (0 .. m-1) at offset k = i - j + n - 1 in
 * [0, W), W = m + n - 1: row j's cells are the m offsets from col0 = n - 1 - j;
 * cM = M_ij (0 / near_mismatch / mismatch) + X_ij + CG_i as energies:
 *   Forward (rows down, offsets up; prev = the row above's totals: for row -1, 0 at offsets
 *   n - 1 .. W and SENTINEL left of them, which no row overwrites (row j writes its own cells and
 *   row j + 1 reads one offset left of them: S(-1, j) = +infinity)):
 *     Mf(j,k) = cM(j,k) + prev[k]                               stored in F at column i
 *     MI      = Mf (+) (insertion + prev[k+1])
 *     Df      = (MI(j,k-1) + OE_i) (+) (Df(j,k-1) + E_i)         both SENTINEL left of column 0
 *     cur[k]  = MI (+) Df
 *   Z = cur[0] (+) cur[1] (+) ... (+) cur[m-1] of the last row, in that order.
 *   Backward (rows up, offsets down; OE_m = E_m = 0 past the last column):
 *     x       = 0 on the last row (the path may end), else
 *               (cM(j+1,k) + B(j+1,k)) (+) (insertion + B(j+1,k-1))   (grow SENTINEL at column m - 1's
 *               offset: the host fills it, and no row writes it)
 *     B(j,k)  = x (+) (OE_{i+1} + BD(j,k+1))                     BD SENTINEL right of column m - 1
 *     BD(j,k) = x (+) (E_{i+1} + BD(j,k+1))
 *   posterior of M at (j, k): prob[F(j,k) - Z + B(j,k)], and pooled(j,k) += (w * it) >> PROB_BITS
 *   with an atomic add: each term floored, so the pooled sums are the same in any order.
 *
 * Kernels and memory layout (P pairs and L reads in a launch; pair arrays side by side, a
 * pair's cell c at [c][P] + p, so a warp's work-items load and store neighbouring words while
 * their reads have one length: the host sorts the pairs by read length, then edge, so that
 * neighbouring work-items also load one profile's element at one column):
 *   states, near  [profiles][m]          elem_t: each profile's elements and near states
 *   codes         [residues]             elem_t: the launch's reads, read r at
 *                                        codes[offsets[r] .. offsets[r+1]-1]
 *   cost_rows     [residues], cost_table [m][n_costs]  uchar, COLUMN_COSTS only (as band_score.cl);
 *                 or [profiles][m][n_costs] with table_stride = m * n_costs: each profile's own
 *                 table (model/edge_emission.py), a pair's at cost_table + its slot * table_stride
 *                 (table_stride 0: the one shared table)
 *   pair_read, pair_slot  [P]            int: each pair's read (in the launch) and profile
 *   softmin, prob                        int: the tables, padded to a power of two
 *   row           [W_max + 1][P]         int: posterior_forward's previous row, overwritten in
 *                                        place (offset k is read at step k - 1 and k, then written)
 *                                        (W_max: the launch's longest read's W)
 *   F             [n_max][m][P]          int: M's Forward energy, each pair's cells (j, i) by column
 *   z             [P]                    int: each pair's Forward energy Z
 *   active        [A]                    int: the pairs whose edge weight is above 0 (the host
 *                                        computes the weights from z: model/posterior.edge_weights);
 *                                        with own tables also posterior_forward's `pick`, its second
 *                                        launch, which rewrites their F and z under their own X_e
 *   weight        [P]                    int: each pair's edge weight, PROB_ONE units
 *   brow          [W_max + 1][P]         int: posterior_backward's B of the row below, offset k at
 *                                        k + 1, overwritten in place
 *   grow          [W_max + 1][P]         int: cM + B of the row below, overwritten in place
 *                                        (SENTINEL from the host: the offsets no row writes)
 *   pooled        [n_max][m][L]          int: each read's pooled M posteriors by column (atomic adds;
 *                                        zeroed by the host before posterior_backward)
 *   ins           [n_max][L]             int: posterior_mea's insert posteriors
 *   best          [n_max][m + 1][L]      long: posterior_mea's R(j, i) at [j][i + 1]
 *   columns, pp   [residues]             int: each residue's column (-1 inserted) and posterior
 *   objective     [L]                    long: each read's sum of pp
 * Each kernel steps through a row's offsets in tiles of TILE cells, loading the tile's inputs
 * (row / brow / grow / F / pooled / best of the row above or below, the profile's elements) into
 * private arrays before its recurrences: the same values in the same order, one memory latency a
 * tile.
 * Build options: -DPROF_BITS=8|32 -DSTATE_BITS=n (elements.cl), -DCOLUMN_COSTS=0|1.
 */

#include "elements.cl"

/* Cells a work-item steps through per tile of its row: the tile's global loads are issued
 * together before its recurrences (each cell's loads do not depend on the cells before it), so a
 * row costs width / TILE memory latencies instead of width. */
#ifndef TILE
#define TILE 8
#endif

#ifndef COLUMN_COSTS
#define COLUMN_COSTS 0
#endif
#define PROB_BITS 15
#define PROB_ONE (1 << PROB_BITS)
#define SENTINEL (1 << 30)
#define INSERTED (-1)
#define NEG64 (-(1L << 40))

inline int softmin2(const int a, const int b, __global const int *restrict table, const int mask)
{
    const int d = a > b ? a - b : b - a;
    return min(a, b) - table[min(d, mask)];
}

inline int probability_of(const int x, __global const int *restrict prob, const int mask)
{
    return prob[min(max(x, 0), mask)];
}

/* cM(j, k) as an energy: M_ij (0 where the states meet, near_mismatch where the near states do,
 * mismatch otherwise) + X_ij (COLUMN_COSTS) + CG_i, all << shift (the host shifted the penalties). */
inline int diagonal_energy(const elem_t e, const elem_t e_near, const elem_t b, const int mismatch,
                           const int near_mismatch, const int cgap, const int x_cost, const int shift)
{
    int cost = (e & STATE_MASK & b) ? 0 : ((e_near & b) ? near_mismatch : mismatch);
    cost += x_cost << shift;
    return cost + ((e & CGAP_BIT) ? cgap : 0);
}

#if COLUMN_COSTS
#define X_COST(i, x_row) ((int)edge_table[(size_t)(i) * n_costs + (x_row)])
#else
#define X_COST(i, x_row) 0
#endif

/* The column cost table's row of the read residue at `index` (COLUMN_COSTS), 0 without. */
inline int cost_row_of(__global const uchar *restrict cost_rows, const int index)
{
#if COLUMN_COSTS
    return cost_rows[index];
#else
    return 0;
#endif
}

__kernel void posterior_forward(
    __global const elem_t *restrict states, __global const elem_t *restrict near, const int m,
    __global const elem_t *restrict codes, __global const int *restrict offsets,
    __global const int *restrict pair_read, __global const int *restrict pair_slot, const int n_pairs,
    __global int *restrict row, __global int *restrict F, __global int *restrict z_out,
    const int shift, const int mismatch, const int near_mismatch, const int cgap, const int open_extend,
    const int extend, const int insertion, __global const int *restrict softmin, const int soft_mask,
    __global const uchar *restrict cost_rows, __global const uchar *restrict cost_table, const int n_costs,
    const int table_stride, __global const int *restrict pick, const int n_pick)
{
    /* work-item t runs pair pick[t] (the weighted pairs' second Forward, under their own tables),
     * or pair t where pick is NULL (n_pick = n_pairs) */
    const int t = get_global_id(0);
    if (t >= n_pick) return;
    const int p = pick ? pick[t] : t;
    const int r = pair_read[p];
    const int first = offsets[r];
    const int n = offsets[r + 1] - first;
    const int width = m + n - 1;
    __global const elem_t *restrict a = states + (size_t)pair_slot[p] * m;
    __global const elem_t *restrict a_near = near + (size_t)pair_slot[p] * m;
    __global const uchar *restrict edge_table = cost_table + (size_t)pair_slot[p] * table_stride;
    const size_t P = (size_t)n_pairs;
    /* row -1: the free boundary row, 0 at column -1 .. m - 1 (offsets n - 1 .. W), SENTINEL left */
    for (int k = 0; k <= width; ++k) row[k * P + p] = k >= n - 1 ? 0 : SENTINEL;
    for (int j = 0; j < n; ++j) {
        const elem_t b = codes[first + j];
        const int x_row = cost_row_of(cost_rows, first + j);
        int mi_left = SENTINEL, d_left = SENTINEL;  /* MI and Df at offset k - 1 */
        const int col0 = n - 1 - j;                  /* column 0's offset */
        const int last = col0 + m - 1;               /* column m - 1's */
        int above = row[col0 * P + p];               /* prev[k] */
        __global int *restrict f = F + (size_t)j * m * P + p;
        for (int k0 = col0; k0 <= last; k0 += TILE) {
            /* the tile's loads first (prev[k + 1], not yet overwritten, and the profile's elements),
             * all in flight at once: one memory latency a tile instead of one a cell */
            int ahead[TILE];
            elem_t e_t[TILE], near_t[TILE];
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int k = min(k0 + t, last);
                ahead[t] = row[(k + 1) * P + p];
                e_t[t] = a[k - col0];
                near_t[t] = a_near[k - col0];
            }
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int k = k0 + t;
                if (k <= last) {
                    const int i = k - col0;
                    const int gap = (e_t[t] & CGAP_BIT) != 0;
                    const int mval = diagonal_energy(e_t[t], near_t[t], b, mismatch, near_mismatch, cgap,
                                                     X_COST(i, x_row), shift) + above;
                    const int mi = softmin2(mval, insertion + ahead[t], softmin, soft_mask);
                    const int dval = softmin2(mi_left + (gap ? 0 : open_extend), d_left + (gap ? 0 : extend), softmin,
                                              soft_mask);
                    row[k * P + p] = softmin2(mi, dval, softmin, soft_mask);
                    f[i * P] = mval;
                    mi_left = mi;
                    d_left = dval;
                    above = ahead[t];
                }
            }
        }
    }
    int z = row[p];  /* the last row: column i at offset i */
    for (int k = 1; k < m; ++k) z = softmin2(z, row[k * P + p], softmin, soft_mask);
    z_out[p] = z;
}

__kernel void posterior_backward(
    __global const elem_t *restrict states, __global const elem_t *restrict near, const int m,
    __global const elem_t *restrict codes, __global const int *restrict offsets,
    __global const int *restrict pair_read, __global const int *restrict pair_slot, const int n_pairs,
    __global const int *restrict active, const int n_active, const int n_reads,
    __global int *restrict brow, __global int *restrict grow, __global const int *restrict F,
    __global const int *restrict z_in, __global const int *restrict weight, __global int *pooled,
    const int shift, const int mismatch, const int near_mismatch, const int cgap, const int open_extend,
    const int extend, const int insertion, __global const int *restrict softmin, const int soft_mask,
    __global const int *restrict prob, const int prob_mask,
    __global const uchar *restrict cost_rows, __global const uchar *restrict cost_table, const int n_costs,
    const int table_stride)
{
    const int t = get_global_id(0);
    if (t >= n_active) return;
    const int p = active[t];
    const int r = pair_read[p];
    const int first = offsets[r];
    const int n = offsets[r + 1] - first;
    __global const elem_t *restrict a = states + (size_t)pair_slot[p] * m;
    __global const elem_t *restrict a_near = near + (size_t)pair_slot[p] * m;
    __global const uchar *restrict edge_table = cost_table + (size_t)pair_slot[p] * table_stride;
    const size_t P = (size_t)n_pairs;
    const size_t L = (size_t)n_reads;
    const int z = z_in[p];
    const int w = weight[p];
    for (int j = n - 1; j >= 0; --j) {
        const elem_t b = codes[first + j];
        const int x_row = cost_row_of(cost_rows, first + j);
        int bd_right = SENTINEL;  /* BD(j, k + 1): none right of the last column */
        const int col0 = n - 1 - j;  /* column 0's offset */
        __global const int *restrict f = F + (size_t)j * m * P + p;
        __global int *pool = pooled + (size_t)j * m * L + r;
        /* column i + 1's element (the previous step's): past the last column OE_m = E_m = 0, as a
         * CGAP column's */
        elem_t e_right = (elem_t)CGAP_BIT;
        for (int k0 = col0 + m - 1; k0 >= col0; k0 -= TILE) {
            /* the tile's loads first (as in posterior_forward): offsets k0, k0 - 1, ...; grow[k]
             * and brow[k] are read before this row overwrites them (brow[k] at step k - 1) */
            int g_t[TILE], b_t[TILE], f_t[TILE];
            elem_t e_t[TILE], near_t[TILE];
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int k = max(k0 - t, col0);
                g_t[t] = grow[k * P + p];
                b_t[t] = brow[k * P + p];
                f_t[t] = f[(k - col0) * P];
                e_t[t] = a[k - col0];
                near_t[t] = a_near[k - col0];
            }
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int k = k0 - t;
                if (k >= col0) {
                    const int i = k - col0;
                    int x = 0;  /* the last row: the path may end here */
                    if (j < n - 1) x = softmin2(g_t[t], insertion + b_t[t], softmin, soft_mask);
                    const int right_gap = (e_right & CGAP_BIT) != 0;
                    const int bval = softmin2(x, (right_gap ? 0 : open_extend) + bd_right, softmin, soft_mask);
                    bd_right = softmin2(x, (right_gap ? 0 : extend) + bd_right, softmin, soft_mask);
                    brow[(k + 1) * P + p] = bval;  /* offset k at k + 1: read (as B(j+1, k)) at step k + 1 */
                    grow[k * P + p] = diagonal_energy(e_t[t], near_t[t], b, mismatch, near_mismatch, cgap,
                                                      X_COST(i, x_row), shift) + bval;
                    e_right = e_t[t];
                    const int share = probability_of(f_t[t] - z + bval, prob, prob_mask);
                    if (share) atomic_add(pool + i * L, (w * share) >> PROB_BITS);
                }
            }
        }
    }
}

/* model/posterior.mea for one read (its docstring: the DP, the walk back and its tie rule). */
__kernel void posterior_mea(
    __global const int *restrict offsets, const int n_reads, const int m,
    __global const int *restrict pooled, __global int *restrict ins, __global long *restrict best,
    __global int *restrict columns, __global int *restrict pp, __global long *restrict objective)
{
    const int r = get_global_id(0);
    if (r >= n_reads) return;
    const int first = offsets[r];
    const int n = offsets[r + 1] - first;
    if (n == 0) return;
    const size_t L = (size_t)n_reads;
#define POOLED(j, i) pooled[((size_t)(j) * m + (i)) * L + r]
#define INS(j) ins[(size_t)(j) * L + r]
#define R(j, c) best[((size_t)(j) * (m + 1) + (c)) * L + r]
    for (int j = 0; j < n; ++j) {
        long total = 0;  /* an integer sum: the same in any order */
        for (int i0 = 0; i0 < m; i0 += TILE) {
            int pooled_t[TILE];
#pragma unroll
            for (int t = 0; t < TILE; ++t) pooled_t[t] = i0 + t < m ? POOLED(j, i0 + t) : 0;
#pragma unroll
            for (int t = 0; t < TILE; ++t) total += pooled_t[t];
        }
        INS(j) = (int)max(0L, (long)PROB_ONE - total);
    }
    long none = 0;  /* the sum of ins over residues 0 .. j-1 */
    for (int j = 0; j < n; ++j) {
        R(j, 0) = NEG64;  /* R(j, -1): nothing can be placed at or before column -1 */
        long left = NEG64;
        const int ins_j = INS(j);
        for (int i0 = 0; i0 < m; i0 += TILE) {
            /* the tile's loads first (as in posterior_forward): R(j - 1, i - 1) for its columns
             * and one more (R(j - 1, i) of its last), and the pooled posteriors */
            long above[TILE + 1];
            int pooled_t[TILE];
#pragma unroll
            for (int t = 0; t <= TILE; ++t) above[t] = j > 0 ? R(j - 1, min(i0 + t, m)) : NEG64;
#pragma unroll
            for (int t = 0; t < TILE; ++t) pooled_t[t] = POOLED(j, min(i0 + t, m - 1));
#pragma unroll
            for (int t = 0; t < TILE; ++t) {
                const int i = i0 + t;
                if (i < m) {
                    long placed = NEG64, up = NEG64;
                    /* residue 0 placed first has nothing before it; a later residue placed first
                     * has its predecessors inserted after a column before it: not at column 0 */
                    long alone = none;
                    if (j > 0) {
                        placed = above[t];
                        up = above[t + 1] + ins_j;
                        if (i == 0) alone = NEG64;
                    }
                    long v = left;
                    const long here = pooled_t[t] + max(placed, alone);
                    if (here > v) v = here;
                    if (up > v) v = up;
                    R(j, i + 1) = v;
                    left = v;
                }
            }
        }
        none += INS(j);
    }
    objective[r] = R(n - 1, m);
    int j = n - 1, c = m;  /* c: R's index of the bound, column m - 1 */
    none -= INS(n - 1);
    while (j >= 0) {
        const long v = R(j, c);
        while (c > 1 && R(j, c - 1) == v) --c;  /* R(j, -1) at index 0 never reaches the optimum */
        const int i = c - 1;
        const long placed = j > 0 ? R(j - 1, i) : NEG64;
        const long alone = j == 0 || i > 0 ? none : NEG64;
        if (POOLED(j, i) + max(placed, alone) == v) {
            columns[first + j] = i;
            pp[first + j] = POOLED(j, i);
            if (j > 0 && placed >= alone) {
                --j;
                none -= INS(j);
                c = i;  /* R(j-1, i-1) */
            } else {
                for (int u = 0; u < j; ++u) {
                    columns[first + u] = INSERTED;
                    pp[first + u] = INS(u);
                }
                break;
            }
        } else {
            columns[first + j] = INSERTED;
            pp[first + j] = INS(j);
            --j;
            if (j >= 0) none -= INS(j);
            c = i + 1;  /* R(j-1, i) */
        }
    }
#undef POOLED
#undef INS
#undef R
}
