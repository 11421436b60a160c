/* The traceback of DESIGN.md section 5 on the device: one work-item aligns one read to one edge
 * profile (its best edge) and walks the path back. It gives exactly what the host traceback
 * (pairwise/traceback.py, `_trace` over the reference scorer's `fill_band_into`) gives: the same
 * int recurrence, the same tie-breaking, the same end column; tests hold the two equal.
 *
 * Recurrence, minimised, in the band frame of the reference scorer: row j (read position), offset
 * k = i - j in [0, width - 1], width = m - n + 1, column i = j + k:
 *     D(j,k) = min(S(j,k-1) + OE_i, D(j,k-1) + E_i)            (+inf at k = 0)
 *     S(j,k) = min(S(j-1,k) + M_ij + CG_i, D(j,k), S(j-1,k+1) + insertion)
 *     S(-1,k) = 0; S(j-1,width) = +inf; score = min_k S(n-1,k), the smallest such k ending it.
 *     M_ij = 0 where a_i & b_j != 0, near_mismatch where near_i & b_j != 0, mismatch otherwise.
 *
 * Instead of the two int64 matrices the host keeps, the device keeps one int row (S of row j-1,
 * overwritten in place by row j: offset k is read as row j-1's insertion term at k-1 before it
 * is written at k) and one byte per cell of what the walk asks:
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
 *   row           [max_width][R]       int: S of the previous row by offset
 *   moves         [max_rows][max_width][R]  uchar: the bytes above, rows j < n, offsets k < width
 *   ops           [R][max_ops]         uchar: 0 M, 1 D, 2 I in walk order (the path's end first)
 *   score, start, op_count  [R]        int
 * Arithmetic is int with `inf` far above every finite cell (the host checks the read length
 * against it, as for band_score's 32-bit path). Build options: -DPROF_BITS=8|32 -DSTATE_BITS=n,
 * -DCHUNK (offsets whose loads are issued together; default 16).
 *
 * Speed (H100, 12,500 reads of 100 residues against 1,072 columns, BENCHMARKS.md "The traceback
 * on the GPU"): CHUNK 1 / 4 / 8 / 16: 13 / 17 / 22 / 26 Gcells/s, against 2.9 Gcells/s for the
 * host traceback on 16 cores. Still far below the memory's bandwidth: each work-item reads its
 * own edge's profile, so a warp's element loads touch 32 lines (a stripe of rows in registers,
 * as band_score keeps, would read each element once per stripe: the next step).
 */

#if PROF_BITS == 8
typedef uchar elem_t;
#elif PROF_BITS == 32
typedef uint elem_t;
#else
#error "PROF_BITS must be 8 or 32"
#endif
#define STATE_MASK ((1u << STATE_BITS) - 1u)
#define CGAP_BIT (1u << STATE_BITS)

/* Offsets per chunk of the inner loop (its loads issued together). */
#ifndef CHUNK
#define CHUNK 16
#endif

#define OP_M 0
#define OP_D 1
#define OP_I 2
#define FROM_DIAGONAL 0
#define FROM_D 1
#define FROM_INSERTION 2
#define D_EXTENDS 4

__kernel void band_trace(
    __global const elem_t *restrict states, __global const elem_t *restrict near, const int m,
    __global const elem_t *restrict codes, __global const int *restrict offsets, __global const int *restrict slot,
    const int n_reads, const int max_width, __global int *restrict row, __global uchar *restrict moves,
    const int max_ops, __global uchar *ops, __global int *op_count, __global int *score, __global int *start,
    const int mismatch, const int cgap, const int open_extend, const int extend, const int insertion,
    const int near_mismatch, const int inf)
{
    const int r = get_global_id(0);
    if (r >= n_reads) return;
    const int first = offsets[r];
    const int n = offsets[r + 1] - first;
    const int width = m - n + 1;
    __global const elem_t *restrict a = states + (size_t)slot[r] * m;
    __global const elem_t *restrict a_near = near + (size_t)slot[r] * m;
    const size_t R = (size_t)n_reads;

    for (int k = 0; k < width; ++k) row[k * R + r] = 0;  /* S(-1, k) */
    int best = inf, end = 0;
    for (int j = 0; j < n; ++j) {
        const elem_t b = codes[first + j];
        __global uchar *restrict move = moves + (size_t)j * max_width * R + r;
        int above = row[r];  /* S(j-1, k) for k = 0 */
        int left_s = inf, left_d = inf;  /* S(j, k-1), D(j, k-1) */
        for (int k0 = 0; k0 < width; k0 += CHUNK) {
            /* the chunk's loads first, all independent: one memory latency per CHUNK cells
             * instead of one per cell (row k+1 is read before row k is written, as above) */
            int next_above[CHUNK];
            elem_t e[CHUNK], e_near[CHUNK];
#pragma unroll
            for (int c = 0; c < CHUNK; ++c) {
                const int k = k0 + c;
                next_above[c] = k + 1 < width ? row[(k + 1) * R + r] : inf;  /* S(j-1, k+1) */
                e[c] = k < width ? a[j + k] : 0;
                e_near[c] = k < width ? a_near[j + k] : 0;
            }
#pragma unroll
            for (int c = 0; c < CHUNK; ++c) {
                const int k = k0 + c;
                if (k < width) {
                    const int gap_column = (e[c] & CGAP_BIT) != 0;
                    const int cost = (e[c] & STATE_MASK & b) ? 0 : ((e_near[c] & b) ? near_mismatch : mismatch);
                    const int diag = above + (gap_column ? cgap : 0) + cost;
                    int d = inf, extends = 0;
                    if (k > 0) {
                        const int open = left_s + (gap_column ? 0 : open_extend);
                        const int ext = left_d + (gap_column ? 0 : extend);
                        extends = ext < open;
                        d = extends ? ext : open;
                    }
                    const int ins = k < width - 1 ? next_above[c] + insertion : inf;
                    int s = diag, from = FROM_DIAGONAL;
                    if (d < s) { s = d; from = FROM_D; }
                    if (ins < s) { s = ins; from = FROM_INSERTION; }
                    move[k * R] = (uchar)(from | (extends ? D_EXTENDS : 0));
                    row[k * R + r] = s;
                    left_s = s;
                    left_d = d;
                    above = next_above[c];
                    if (j == n - 1 && s < best) { best = s; end = k; }
                }
            }
        }
    }

    __global uchar *path = ops + (size_t)r * max_ops;
    int count = 0, j = n - 1, k = end, in_d = 0;
    while (j >= 0) {
        const uchar move = moves[((size_t)j * max_width + k) * R + r];
        if (in_d) {
            path[count++] = OP_D;
            in_d = (move & D_EXTENDS) != 0;
            --k;
        } else if ((move & 3) == FROM_DIAGONAL) {
            path[count++] = OP_M;
            --j;
        } else if ((move & 3) == FROM_D) {
            in_d = 1;
        } else {
            path[count++] = OP_I;
            --j;
            ++k;
        }
    }
    op_count[r] = count;
    score[r] = best;
    start[r] = k;  /* the path left the free boundary row at column k - 1 */
}
