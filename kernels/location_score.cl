// The location check's scoring pass on the device (docs/DESIGN.md 5; the host's twin is
// papara_py/pairwise/location.py `lane_scores`, which this equals bit for bit).
//
// One work-item per (checked read, reference sequence) pair: pair g is read g / tips of the launch
// against sequence g % tips, so a warp's work-items share their read and walk neighbouring
// sequences. Each scores the whole read against any part of its sequence, maximised, by Gotoh's
// affine recurrence in int (read residue j = 1..n, sequence position i = 1..len; S the
// substitution scores; GAP_OPEN for a gap's first residue, GAP_EXTEND for each further one):
//   M[j][i] = max(M, X, Y)[j - 1][i - 1] + S[seq[i - 1]][read[j - 1]]   (a match)
//   X[j][i] = max(M[j - 1][i] - GAP_OPEN, X[j - 1][i] - GAP_EXTEND)       (an inserted read residue)
//   Y[j][i] = max(M[j][i - 1] - GAP_OPEN, Y[j][i - 1] - GAP_EXTEND)       (a skipped sequence residue)
//   M[0][i] = 0 (the read starts anywhere free), X[0][i] = Y[0][i] = M[j][0] = Y[j][0] = NEG;
//   X[j][0] = max(M[j - 1][0] - GAP_OPEN, X[j - 1][0] - GAP_EXTEND);
//   score = max over i of M[n][i] and X[n][i] (the read ends anywhere free, not on a skip).
// Position by position, each work-item keeps column i's cells j = 1..n (M, X, Y) in `cells`,
// interleaved by work-item: cell (j, state) of pair g at cells[((j - 1) * 3 + state) * pairs + g],
// so a warp's load of one cell is one coalesced transaction.
//
// Memory: reads: the launch's reads' residue indices (uchar) one after another, read k's from
// read_start[k] to read_start[k + 1]; seqs: the reference sequences' likewise (seq_start); matrix:
// int [width * width] row-major (S + 1 rows: the alphabet's states and an ambiguity index), copied
// to local memory by each work-group; out: int [reads * tips], pair g's score at out[g].

#define NEG (-(1 << 29))

__kernel void location_scores(__global const uchar *reads, __global const int *read_start,
                              __global const uchar *seqs, __global const int *seq_start, int tips,
                              __global const int *matrix, int width, __local int *scores_local,
                              __global int *cells, int pairs, __global int *out) {
    for (int k = get_local_id(0); k < width * width; k += get_local_size(0))
        scores_local[k] = matrix[k];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int g = get_global_id(0);
    if (g >= pairs)
        return;
    const int read = g / tips, tip = g % tips;
    const int lo = read_start[read], n = read_start[read + 1] - lo;
    const int first = seq_start[tip], length = seq_start[tip + 1] - first;
    // position 0: only the read's leading insertions
    int m_up = 0, x_up = NEG;
    for (int j = 1; j <= n; ++j) {
        const int x_here = max(m_up - GAP_OPEN, x_up - GAP_EXTEND);
        const size_t at = (size_t)(j - 1) * 3 * pairs + g;
        cells[at] = NEG;
        cells[at + pairs] = x_here;
        cells[at + 2 * (size_t)pairs] = NEG;
        m_up = NEG;
        x_up = x_here;
    }
    int best = n ? max(NEG, x_up) : 0;
    for (int i = 0; i < length; ++i) {
        __local const int *row = scores_local + seqs[first + i] * width;
        int diagonal = 0;  // cell (0, i - 1): the free start
        m_up = 0;
        x_up = NEG;
        for (int j = 1; j <= n; ++j) {
            const size_t at = (size_t)(j - 1) * 3 * pairs + g;  // beyond int for large launches
            const int m_left = cells[at], x_left = cells[at + pairs], y_left = cells[at + 2 * (size_t)pairs];
            const int y_here = max(m_left - GAP_OPEN, y_left - GAP_EXTEND);
            const int m_here = diagonal + row[reads[lo + j - 1]];
            const int x_here = max(m_up - GAP_OPEN, x_up - GAP_EXTEND);
            cells[at] = m_here;
            cells[at + pairs] = x_here;
            cells[at + 2 * (size_t)pairs] = y_here;
            diagonal = max(max(m_left, x_left), y_left);
            m_up = m_here;
            x_up = x_here;
        }
        best = max(best, max(m_up, x_up));
    }
    out[g] = best;
}
