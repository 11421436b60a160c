/* Profile elements and read codes of both kernels (band_score.cl, posterior.cl), one definition:
 * built with -DPROF_BITS=8|32 -DSTATE_BITS=<states> (the alphabet, phylo/encoding.py), an element
 * holds the state set in bits 0 .. STATE_BITS-1 and the CGAP bit at bit STATE_BITS (uchar for
 * DNA, uint for protein). Included by `#include "elements.cl"`, which engine/gpu.built_program
 * replaces with this text (no include path, so every OpenCL compiler and cache sees one source).
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
