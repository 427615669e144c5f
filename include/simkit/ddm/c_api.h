/*
 * simkit ddm: the C API of the DDM matcher (Data Distribution Management for HLA, IEEE 1516), for
 * run-time infrastructures written in C or C++ (OpenRTI, CERTI, ...) that link simkit_ddm. See
 * docs/ddm_c_api.md.
 *
 * Usage: create a matcher handle, set its options (every option has a default), call a matching
 * function per coordinate type (u32, u64 or f64), destroy the handle. To keep two sets matched across
 * ticks, create an incremental matcher from the handle's options and apply a batch of changes per tick
 * (the end of this header).
 *
 * Regions: a set of n regions in `dims` dimensions (1 to SIMKIT_DDM_MAX_DIMS) is three arrays:
 *   ids[i]                    i < n: the region's id (unique within the set)
 *   lower[d * n + i]          d < dims, i < n: the lower bound of region i in dimension d
 *   upper[d * n + i]          likewise the upper bound (lower <= upper; f64: finite)
 * i.e. dimension-major: all the lower bounds of dimension 0, then those of dimension 1, ...
 * The arrays are only read, during the call; the caller keeps ownership. With n == 0 they may be
 * NULL. Subscription and update sets have the same `dims`.
 *
 * Errors: every function returns a simkit_ddm_status. Any failure on a valid handle stores a
 * message, read with simkit_ddm_last_error(). No C++ exception ever leaves this API.
 *
 * Threads: a handle is not thread-safe; use one handle per thread (handles are independent, and
 * several may match at the same time). The library may use several threads inside one call.
 */
#ifndef SIMKIT_DDM_C_API_H
#define SIMKIT_DDM_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIMKIT_DDM_MAX_DIMS 8

typedef enum simkit_ddm_status {
  SIMKIT_DDM_OK = 0,
  SIMKIT_DDM_BAD_INPUT = 1,     /* a NULL pointer, an option out of range, invalid regions */
  SIMKIT_DDM_UNAVAILABLE = 2,   /* cuda was asked for (backend, or algorithm GPU/BITMATRIX) and this build,
                                   machine or device index cannot provide it */
  SIMKIT_DDM_OUT_OF_MEMORY = 3, /* host memory ran out, or the sets do not fit in device memory */
  SIMKIT_DDM_CANCELLED = 4,     /* the pair callback returned non-zero */
  SIMKIT_DDM_INTERNAL = 5       /* a failure inside simkit (e.g. a CUDA error) */
} simkit_ddm_status;

/* When two ranges [lower, upper] overlap; two regions intersect when they overlap in every dimension.
 *   IEEE1516:  a.lower == b.lower or (a.lower < b.upper and b.lower < a.upper)  (the default)
 *   HALF_OPEN: a.lower < b.upper and b.lower < a.upper
 *   CLOSED:    a.lower <= b.upper and b.lower <= a.upper   (HLA 1.3, CERTI) */
typedef enum simkit_ddm_rule {
  SIMKIT_DDM_RULE_IEEE1516 = 0,
  SIMKIT_DDM_RULE_HALF_OPEN = 1,
  SIMKIT_DDM_RULE_CLOSED = 2
} simkit_ddm_rule;

typedef enum simkit_ddm_coords {
  SIMKIT_DDM_COORDS_U32 = 0,
  SIMKIT_DDM_COORDS_U64 = 1,
  SIMKIT_DDM_COORDS_F64 = 2
} simkit_ddm_coords;

/* AUTO (the default): CUDA when the build has it and the device is usable, else CPU. */
typedef enum simkit_ddm_backend {
  SIMKIT_DDM_BACKEND_AUTO = 0,
  SIMKIT_DDM_BACKEND_REFERENCE = 1, /* serial */
  SIMKIT_DDM_BACKEND_CPU = 2,       /* threads */
  SIMKIT_DDM_BACKEND_CUDA = 3
} simkit_ddm_backend;

/* AUTO (the default): the backend's own (reference: BRUTE_FORCE, cpu: PARALLEL, cuda: GPU).
 * BRUTE_FORCE, GRID, SBM and INTERVAL_TREE run on the reference backend, PARALLEL on cpu, BITMATRIX
 * and GPU on cuda; with backend AUTO an explicit algorithm picks its backend. */
typedef enum simkit_ddm_algorithm {
  SIMKIT_DDM_ALGORITHM_AUTO = 0,
  SIMKIT_DDM_ALGORITHM_BRUTE_FORCE = 1,
  SIMKIT_DDM_ALGORITHM_GRID = 2,
  SIMKIT_DDM_ALGORITHM_SBM = 3,
  SIMKIT_DDM_ALGORITHM_INTERVAL_TREE = 4,
  SIMKIT_DDM_ALGORITHM_PARALLEL = 5,
  SIMKIT_DDM_ALGORITHM_BITMATRIX = 6,
  SIMKIT_DDM_ALGORITHM_GPU = 7
} simkit_ddm_algorithm;

/* An opaque matcher: options, the last error message and the last run's report. */
typedef struct simkit_ddm_matcher simkit_ddm_matcher;

/* Receives intersecting pairs as ids: sub_ids[k] (a subscription) intersects upd_ids[k] (an update),
 * k < count. Every pair comes exactly once, in calls of at most min(chunk_pairs, 65536) pairs; the
 * arrays are valid only during the call. The order of the pairs is fixed for given regions, rule and
 * algorithm, whatever the thread count and chunk_pairs (so files written from it have the same bytes
 * run after run); it differs between algorithms: sort the pairs for one order across algorithms or
 * backends. Calls come one at a time
 * but possibly from different threads. Return 0 to go on; any other value cancels the matching: the
 * callback is not called again and the matching function returns SIMKIT_DDM_CANCELLED (with the cpu
 * backend the work already started finishes first, without calling back). The callback must not
 * call functions on the same handle, throw or longjmp. */
typedef int (*simkit_ddm_pair_callback)(const uint64_t* sub_ids, const uint64_t* upd_ids, size_t count, void* user);

/* What the last successful matching call on a handle ran and how long it took. */
typedef struct simkit_ddm_report {
  uint64_t pairs;                 /* intersecting pairs found */
  simkit_ddm_coords coords;       /* the coordinate type of the call */
  simkit_ddm_backend backend;     /* the backend that ran (never AUTO) */
  simkit_ddm_algorithm algorithm; /* the algorithm that ran (never AUTO) */
  double seconds;                 /* matching, with the regions in place */
  double upload_seconds;          /* cuda: copying the regions to the device */
  double output_seconds;          /* cuda: copying results back and calling the callback */
  const char* device;             /* e.g. "CPU, 16 threads"; valid until the next call on the handle */
} simkit_ddm_report;

/* Creates a matcher with the default options into *matcher (NULL on failure). */
simkit_ddm_status simkit_ddm_create(simkit_ddm_matcher** matcher);
/* Destroys a matcher; NULL is allowed. */
void simkit_ddm_destroy(simkit_ddm_matcher* matcher);

/* The message of the last failed call on this handle; "" after a successful one. The string is owned
 * by the handle and valid until the next call on it (other than simkit_ddm_last_error and
 * simkit_ddm_last_report). A NULL handle gives a fixed message. Never NULL. */
const char* simkit_ddm_last_error(const simkit_ddm_matcher* matcher);
/* A fixed name for a status ("ok", "bad input", ...). Never NULL. */
const char* simkit_ddm_status_name(simkit_ddm_status status);
/* Fills *report for the last matching call on the handle: SIMKIT_DDM_OK if that call succeeded, else
 * (no call yet, or it failed or was cancelled) SIMKIT_DDM_BAD_INPUT with *report zeroed. Does not
 * change the last error message. */
simkit_ddm_status simkit_ddm_last_report(const simkit_ddm_matcher* matcher, simkit_ddm_report* report);

/* Options. Each returns SIMKIT_DDM_BAD_INPUT (and keeps the old value) for a value out of range. */
simkit_ddm_status simkit_ddm_set_rule(simkit_ddm_matcher* matcher, simkit_ddm_rule rule);
simkit_ddm_status simkit_ddm_set_backend(simkit_ddm_matcher* matcher, simkit_ddm_backend backend);
simkit_ddm_status simkit_ddm_set_algorithm(simkit_ddm_matcher* matcher, simkit_ddm_algorithm algorithm);
/* cpu backend threads; 0 (the default) = all hardware threads; >= 0. */
simkit_ddm_status simkit_ddm_set_threads(simkit_ddm_matcher* matcher, int threads);
/* CUDA device index; 0 by default; >= 0 (whether it exists is checked when matching). */
simkit_ddm_status simkit_ddm_set_device(simkit_ddm_matcher* matcher, int device);
/* Pairs per batch (the callback's calls hold at most min(chunk_pairs, 65536) pairs; cuda: pairs per
 * device window). Default 4194304; >= 1. */
simkit_ddm_status simkit_ddm_set_chunk_pairs(simkit_ddm_matcher* matcher, size_t chunk_pairs);

/* Matching. s_*: the subscription set (ns regions), u_*: the update set (nu regions), both in the
 * layout above with `dims` dimensions.
 *   match_pairs:      every intersecting (subscription id, update id) pair to `callback`;
 *   count_pairs:      the number of intersecting pairs into *count;
 *   count_per_region: per_s[i] (i < ns) = the updates that subscription i intersects, per_u[j]
 *                     (j < nu) likewise; caller-allocated arrays, written only on success (may be
 *                     NULL when their set is empty).
 * Invalid regions (dims outside 1..8, lower > upper, NaN or infinity, a duplicate id within a set) are
 * SIMKIT_DDM_BAD_INPUT with a message naming the set (S or U), the region id and the dimension. */
simkit_ddm_status simkit_ddm_match_pairs_u32(simkit_ddm_matcher* matcher, int dims, size_t ns, const uint64_t* s_ids,
                                             const uint32_t* s_lower, const uint32_t* s_upper, size_t nu,
                                             const uint64_t* u_ids, const uint32_t* u_lower, const uint32_t* u_upper,
                                             simkit_ddm_pair_callback callback, void* user);
simkit_ddm_status simkit_ddm_count_pairs_u32(simkit_ddm_matcher* matcher, int dims, size_t ns, const uint64_t* s_ids,
                                             const uint32_t* s_lower, const uint32_t* s_upper, size_t nu,
                                             const uint64_t* u_ids, const uint32_t* u_lower, const uint32_t* u_upper,
                                             uint64_t* count);
simkit_ddm_status simkit_ddm_count_per_region_u32(simkit_ddm_matcher* matcher, int dims, size_t ns,
                                                  const uint64_t* s_ids, const uint32_t* s_lower,
                                                  const uint32_t* s_upper, size_t nu, const uint64_t* u_ids,
                                                  const uint32_t* u_lower, const uint32_t* u_upper, uint64_t* per_s,
                                                  uint64_t* per_u);

simkit_ddm_status simkit_ddm_match_pairs_u64(simkit_ddm_matcher* matcher, int dims, size_t ns, const uint64_t* s_ids,
                                             const uint64_t* s_lower, const uint64_t* s_upper, size_t nu,
                                             const uint64_t* u_ids, const uint64_t* u_lower, const uint64_t* u_upper,
                                             simkit_ddm_pair_callback callback, void* user);
simkit_ddm_status simkit_ddm_count_pairs_u64(simkit_ddm_matcher* matcher, int dims, size_t ns, const uint64_t* s_ids,
                                             const uint64_t* s_lower, const uint64_t* s_upper, size_t nu,
                                             const uint64_t* u_ids, const uint64_t* u_lower, const uint64_t* u_upper,
                                             uint64_t* count);
simkit_ddm_status simkit_ddm_count_per_region_u64(simkit_ddm_matcher* matcher, int dims, size_t ns,
                                                  const uint64_t* s_ids, const uint64_t* s_lower,
                                                  const uint64_t* s_upper, size_t nu, const uint64_t* u_ids,
                                                  const uint64_t* u_lower, const uint64_t* u_upper, uint64_t* per_s,
                                                  uint64_t* per_u);

simkit_ddm_status simkit_ddm_match_pairs_f64(simkit_ddm_matcher* matcher, int dims, size_t ns, const uint64_t* s_ids,
                                             const double* s_lower, const double* s_upper, size_t nu,
                                             const uint64_t* u_ids, const double* u_lower, const double* u_upper,
                                             simkit_ddm_pair_callback callback, void* user);
simkit_ddm_status simkit_ddm_count_pairs_f64(simkit_ddm_matcher* matcher, int dims, size_t ns, const uint64_t* s_ids,
                                             const double* s_lower, const double* s_upper, size_t nu,
                                             const uint64_t* u_ids, const double* u_lower, const double* u_upper,
                                             uint64_t* count);
simkit_ddm_status simkit_ddm_count_per_region_f64(simkit_ddm_matcher* matcher, int dims, size_t ns,
                                                  const uint64_t* s_ids, const double* s_lower, const double* s_upper,
                                                  size_t nu, const uint64_t* u_ids, const double* u_lower,
                                                  const double* u_upper, uint64_t* per_s, uint64_t* per_u);

/* ---- Incremental matching: a matcher kept alive across ticks ----
 * docs/ddm.md, "Keeping a matcher alive across ticks (C API, for RTI developers)". An incremental
 * matcher holds both region sets and their current pairs; each call of simkit_ddm_incremental_apply_*
 * applies one batch of changes (regions added, moved or removed on either side), matches only the
 * changed regions again and hands over the pairs gained and lost. Its options (rule, backend,
 * algorithm, threads, device, chunk_pairs) are those of the simkit_ddm_matcher it is created from,
 * copied at creation; that matcher may then be changed or destroyed. */

/* Which set a region belongs to. */
typedef enum simkit_ddm_role {
  SIMKIT_DDM_ROLE_SUBSCRIPTION = 0, /* S */
  SIMKIT_DDM_ROLE_UPDATE = 1        /* U */
} simkit_ddm_role;

/* One change of a batch. ADD: a region with a new id (unique within its set at that point of the
 * batch); MOVE: new bounds for a region present; REMOVE: a region present leaves (its bounds are
 * ignored). The changes of a batch apply in order, so one id may change several times in a batch. */
typedef enum simkit_ddm_change_kind {
  SIMKIT_DDM_CHANGE_ADD = 0,
  SIMKIT_DDM_CHANGE_MOVE = 1,
  SIMKIT_DDM_CHANGE_REMOVE = 2
} simkit_ddm_change_kind;

/* An opaque incremental matcher: both region sets, their pairs, the options, the last error message
 * and the last apply's report. */
typedef struct simkit_ddm_incremental simkit_ddm_incremental;

/* What the last apply on an incremental matcher did. */
typedef struct simkit_ddm_apply_report {
  uint64_t pairs;       /* intersecting pairs after the batch */
  uint64_t gained;      /* pairs gained by the batch (handed to the gained callback) */
  uint64_t lost;        /* pairs lost (handed to the lost callback) */
  size_t subscriptions; /* subscriptions matched again: added or moved, net of the batch */
  size_t updates;       /* updates matched again, likewise */
  size_t removed;       /* regions removed, both sets */
  double seconds;       /* the batch inside the library (checks, matching, pair lists), callbacks excluded */
} simkit_ddm_apply_report;

/* Creates an incremental matcher into *out (NULL on failure) from two region sets in the layout
 * above (the arrays are copied: the caller keeps them and may change them afterwards) with the
 * options of `options`, and matches them once. Either set may be empty (arrays NULL). On failure
 * (invalid regions as for the matching functions, a NULL pointer, at most 2^32 - 2 regions a set, CUDA
 * unavailable) the status is returned and the message is stored on `options`: read it with
 * simkit_ddm_last_error(options). The coordinate type chosen here is the matcher's for life. */
simkit_ddm_status simkit_ddm_incremental_create_u32(simkit_ddm_matcher* options, int dims, size_t ns,
                                                    const uint64_t* s_ids, const uint32_t* s_lower,
                                                    const uint32_t* s_upper, size_t nu, const uint64_t* u_ids,
                                                    const uint32_t* u_lower, const uint32_t* u_upper,
                                                    simkit_ddm_incremental** out);
simkit_ddm_status simkit_ddm_incremental_create_u64(simkit_ddm_matcher* options, int dims, size_t ns,
                                                    const uint64_t* s_ids, const uint64_t* s_lower,
                                                    const uint64_t* s_upper, size_t nu, const uint64_t* u_ids,
                                                    const uint64_t* u_lower, const uint64_t* u_upper,
                                                    simkit_ddm_incremental** out);
simkit_ddm_status simkit_ddm_incremental_create_f64(simkit_ddm_matcher* options, int dims, size_t ns,
                                                    const uint64_t* s_ids, const double* s_lower, const double* s_upper,
                                                    size_t nu, const uint64_t* u_ids, const double* u_lower,
                                                    const double* u_upper, simkit_ddm_incremental** out);
/* Destroys an incremental matcher; NULL is allowed. Not from its own callbacks. */
void simkit_ddm_incremental_destroy(simkit_ddm_incremental* matcher);
/* As simkit_ddm_last_error, for an incremental matcher. Never NULL. */
const char* simkit_ddm_incremental_last_error(const simkit_ddm_incremental* matcher);

/* Applies one batch of `changes` changes: change k is kinds[k] of the region ids[k] of set roles[k],
 * with bounds lower[k * dims + d] and upper[k * dims + d], d < dims (change-major: one row of `dims`
 * values per change, as an RTI collects them; the rows of REMOVE changes are ignored). `dims` must be
 * the matcher's. The arrays may be NULL when changes == 0, lower and upper also when every change is a
 * REMOVE. Then hands over the pairs the batch lost, then those it gained, as (subscription id, update
 * id): `lost` and `gained` are called (each may be NULL: not told) with chunks of at most
 * min(chunk_pairs, 65536) pairs sorted by subscription id then update id, from the calling thread; a
 * pair moved away and back within the batch is in neither list. A callback that returns non-zero stops
 * the delivery: the call returns SIMKIT_DDM_CANCELLED, but the batch HAS been applied (the matcher
 * holds the new pairs; simkit_ddm_incremental_for_each_pair lists them). The callbacks must not call
 * functions on the same handle, throw or longjmp.
 * A bad batch (a NULL array, dims not the matcher's, a kind or role out of range, MOVE or REMOVE of an
 * id not present at that point of the batch, ADD of an id present, lower > upper, NaN or infinity) is
 * SIMKIT_DDM_BAD_INPUT with a message naming the change (its index in the batch), the set and the id;
 * the matcher is then unchanged and no callback is called. So is a call with the wrong coordinate type.
 * After SIMKIT_DDM_OUT_OF_MEMORY or SIMKIT_DDM_INTERNAL the matcher may be inconsistent: every later
 * call on it returns SIMKIT_DDM_INTERNAL; destroy it and create a new one. */
simkit_ddm_status simkit_ddm_incremental_apply_u32(simkit_ddm_incremental* matcher, int dims, size_t changes,
                                                   const simkit_ddm_change_kind* kinds, const simkit_ddm_role* roles,
                                                   const uint64_t* ids, const uint32_t* lower, const uint32_t* upper,
                                                   simkit_ddm_pair_callback gained, simkit_ddm_pair_callback lost,
                                                   void* user);
simkit_ddm_status simkit_ddm_incremental_apply_u64(simkit_ddm_incremental* matcher, int dims, size_t changes,
                                                   const simkit_ddm_change_kind* kinds, const simkit_ddm_role* roles,
                                                   const uint64_t* ids, const uint64_t* lower, const uint64_t* upper,
                                                   simkit_ddm_pair_callback gained, simkit_ddm_pair_callback lost,
                                                   void* user);
simkit_ddm_status simkit_ddm_incremental_apply_f64(simkit_ddm_incremental* matcher, int dims, size_t changes,
                                                   const simkit_ddm_change_kind* kinds, const simkit_ddm_role* roles,
                                                   const uint64_t* ids, const double* lower, const double* upper,
                                                   simkit_ddm_pair_callback gained, simkit_ddm_pair_callback lost,
                                                   void* user);

/* The current number of intersecting pairs into *count. */
simkit_ddm_status simkit_ddm_incremental_pairs(simkit_ddm_incremental* matcher, uint64_t* count);
/* Every current pair to `callback` (not NULL), each once, in chunks of at most min(chunk_pairs, 65536),
 * in no particular order, from the calling thread. Returning non-zero stops: SIMKIT_DDM_CANCELLED. */
simkit_ddm_status simkit_ddm_incremental_for_each_pair(simkit_ddm_incremental* matcher,
                                                       simkit_ddm_pair_callback callback, void* user);
/* Fills *report for the last apply on the handle: SIMKIT_DDM_OK if it applied its batch (also when a
 * callback cancelled the delivery), else (no apply yet, or it failed) SIMKIT_DDM_BAD_INPUT with *report
 * zeroed. Does not change the last error message. */
simkit_ddm_status simkit_ddm_incremental_last_report(const simkit_ddm_incremental* matcher,
                                                     simkit_ddm_apply_report* report);

#ifdef __cplusplus
}
#endif

#endif /* SIMKIT_DDM_C_API_H */
