/*
 * An RTI-like use of simkit's DDM matcher through its C API (include/simkit/ddm/c_api.h, docs/ddm_c_api.md):
 * a few 2-D subscription and update regions with 64-bit coordinates, matched with the default
 * backend; every intersecting (subscription, update) pair is printed, then the count. Finally one
 * invalid region (lower > upper) shows the error handling. Exits 0 when everything behaves.
 */
#include <inttypes.h>
#include <stdio.h>

#include "simkit/ddm/c_api.h"

#define NS 4
#define NU 3

/* Dimension-major: lower[d * n + i] is region i's lower bound in dimension d. */
static const uint64_t kSubIds[NS] = {101, 102, 103, 104};
static const uint64_t kSubLower[2 * NS] = {0, 50, 90, 0, /* dimension 0 (x) */
                                           0, 0,  40, 90 /* dimension 1 (y) */};
static const uint64_t kSubUpper[2 * NS] = {40, 80, 100, 100, /* x */
                                           40, 60, 60,  100 /* y */};

static const uint64_t kUpdIds[NU] = {201, 202, 203};
static const uint64_t kUpdLower[2 * NU] = {10, 60, 95, /* x */
                                           10, 20, 95 /* y */};
static const uint64_t kUpdUpper[2 * NU] = {20, 95, 99, /* x */
                                           20, 50, 99 /* y */};

struct Seen {
  uint64_t pairs;
};

/* Called with chunks of matching (subscription id, update id) pairs; returns 0 to go on. */
static int on_pairs(const uint64_t* sub_ids, const uint64_t* upd_ids, size_t count, void* user) {
  struct Seen* seen = (struct Seen*)user;
  size_t k;
  for (k = 0; k < count; ++k) {
    printf("  subscription %" PRIu64 " <-> update %" PRIu64 "\n", sub_ids[k], upd_ids[k]);
  }
  seen->pairs += count;
  return 0;
}

static int check(simkit_ddm_matcher* matcher, simkit_ddm_status status, const char* what) {
  if (status == SIMKIT_DDM_OK) return 1;
  fprintf(stderr, "%s: %s: %s\n", what, simkit_ddm_status_name(status), simkit_ddm_last_error(matcher));
  return 0;
}

int main(void) {
  simkit_ddm_matcher* matcher = NULL;
  struct Seen seen = {0};
  uint64_t count = 0;
  uint64_t bad_upper[2 * NU];
  simkit_ddm_report report;
  simkit_ddm_status status;
  int ok = 1;
  int i;

  if (simkit_ddm_create(&matcher) != SIMKIT_DDM_OK) {
    fprintf(stderr, "simkit_ddm_create failed\n");
    return 1;
  }
  /* The default rule is IEEE 1516's; an HLA 1.3 RTI such as CERTI would ask for closed ranges. */
  ok = ok && check(matcher, simkit_ddm_set_rule(matcher, SIMKIT_DDM_RULE_IEEE1516), "set_rule");

  printf("pairs:\n");
  ok = ok && check(matcher,
                   simkit_ddm_match_pairs_u64(matcher, 2, NS, kSubIds, kSubLower, kSubUpper, NU, kUpdIds, kUpdLower,
                                              kUpdUpper, on_pairs, &seen),
                   "match_pairs");
  ok = ok && check(matcher,
                   simkit_ddm_count_pairs_u64(matcher, 2, NS, kSubIds, kSubLower, kSubUpper, NU, kUpdIds, kUpdLower,
                                              kUpdUpper, &count),
                   "count_pairs");
  if (ok) {
    printf("count: %" PRIu64 " (callback saw %" PRIu64 ")\n", count, seen.pairs);
    if (simkit_ddm_last_report(matcher, &report) == SIMKIT_DDM_OK) {
      printf("ran on: %s, %.6f s\n", report.device, report.seconds);
    }
    if (count != seen.pairs) {
      fprintf(stderr, "count and callback disagree\n");
      ok = 0;
    }
  }

  /* Error handling: update 202 gets lower > upper in dimension 1. */
  for (i = 0; i < 2 * NU; ++i) bad_upper[i] = kUpdUpper[i];
  bad_upper[1 * NU + 1] = 10;
  status = simkit_ddm_count_pairs_u64(matcher, 2, NS, kSubIds, kSubLower, kSubUpper, NU, kUpdIds, kUpdLower, bad_upper,
                                      &count);
  if (status == SIMKIT_DDM_BAD_INPUT) {
    printf("bad region rejected as expected: %s\n", simkit_ddm_last_error(matcher));
  } else {
    fprintf(stderr, "bad region: expected SIMKIT_DDM_BAD_INPUT, got %s\n", simkit_ddm_status_name(status));
    ok = 0;
  }

  simkit_ddm_destroy(matcher);
  return ok ? 0 : 1;
}
