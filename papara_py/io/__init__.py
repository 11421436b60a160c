"""Files in and out: parsing and validating the inputs, the HDF5 run file, and the exports.

- `tree_input`, `alignment_input`, `read_input`: the tree (Newick), the alignment (PHYLIP,
  FASTA, Stockholm, Clustal) and the reads (FASTA, FASTQ; plain, gzip, bzip2, xz), each read
  once; the only modules that read user files, so bad input leaves as `InputError` (file,
  line or sequence, what is wrong) from here alone. `input_bytes`: what the three share;
  `alignment_rows`: the alignment formats' text parsers (lines into rows).
- `reads`: `ReadSet`, the compact in-memory read store, and the read statuses.
- `read_stream`: `ReadStream`, the reads parsed on a thread of their own and handed out in
  stretches of input rows (each one batch of the engine) while the rest of the file is read.
- `checksums`: SHA-256 of the inputs for the run record and the cluster guards.
- `cigar`: the CIGAR text of a read's path.
- `outputs`: the output policy every command follows (atomic files, direct targets, write
  faults); `hdf5_guard`: HDF5 outputs whose write faults never surface inside HDF5.
- `run_writer`: `RunWriter` and `atomic_path` (a file appears under its name only when complete).
- `chunks`: a large array's gzip + fletcher32 chunks compressed on several threads (the reference).
- `run_file`: `RunFile`, the one reader of run files (format checks, lazy chunked access).
- `export`: PHYLIP / FASTA / EPA query exports; `jplace`: the jplace v3 placement export.

Layer: imports `papara_py.errors`, `papara_py.host` and `papara_py.phylo`.
"""
