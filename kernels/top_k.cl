/* Per read, the k best (score, edge) pairs of one chunk, ordered by (score, edge number).
 *
 * One work-item per read scans the read's row of `scores` ([n_reads][row_lanes], written by
 * band_score) in edge order and keeps a sorted list by insertion. A new pair enters only when
 * its score is strictly below the current k-th: among equal scores the earlier edge, seen first,
 * stays ahead, which is the tie rule of DESIGN.md section 4. Unfilled slots keep (INT_MAX, -1).
 * Only n_reads * k pairs go back to the host. Build option: -DKMAX=<largest k>.
 */

/* The k best (score, edge) pairs of the first n_edges lanes of `row`, lane e being edge
 * first_edge + e, into slots q * k ... q * k + k - 1 of best_score and best_edge. */
void keep_k_best(global const int *row, const int n_edges, const int first_edge, const int k, const int q,
                 global int *best_score, global int *best_edge)
{
    int top_score[KMAX], top_edge[KMAX];
    for (int t = 0; t < k; ++t) {
        top_score[t] = INT_MAX;
        top_edge[t] = -1;
    }
    for (int e = 0; e < n_edges; ++e) {
        const int s = row[e];
        if (s >= top_score[k - 1])
            continue;
        int t = k - 1;
        for (; t > 0 && top_score[t - 1] > s; --t) {
            top_score[t] = top_score[t - 1];
            top_edge[t] = top_edge[t - 1];
        }
        top_score[t] = s;
        top_edge[t] = first_edge + e;
    }
    for (int t = 0; t < k; ++t) {
        best_score[(size_t)q * k + t] = top_score[t];
        best_edge[(size_t)q * k + t] = top_edge[t];
    }
}

/* top_k for a chunk: every row holds the same n_edges edges, first_edge, first_edge + 1, ... */
kernel void top_k(global const int *scores, const int row_lanes, const int n_edges,
                  const int first_edge, const int k, const int n_reads, global int *best_score,
                  global int *best_edge)
{
    const int q = get_global_id(0);
    if (q >= n_reads)
        return;
    keep_k_best(scores + (size_t)q * row_lanes, n_edges, first_edge, k, q, best_score, best_edge);
}

/* top_k for the guided search's tasks (engine/gpu.py score_groups): row q of `scores` holds one
 * read against a run of its group's edges, of which the first row_edges[q] lanes are real and are
 * edges row_first[q], row_first[q] + 1, ...; the rest (padding) is left out. */
kernel void top_k_rows(global const int *scores, const int row_lanes, global const int *row_edges,
                       global const int *row_first, const int k, const int n_reads, global int *best_score,
                       global int *best_edge)
{
    const int q = get_global_id(0);
    if (q >= n_reads)
        return;
    keep_k_best(scores + (size_t)q * row_lanes, row_edges[q], row_first[q], k, q, best_score, best_edge);
}
