/*
 * An RTI keeping a DDM matcher alive across ticks through simkit's C API (include/simkit/ddm/c_api.h;
 * docs/ddm.md, "Keeping a matcher alive across ticks"). A small 2-D federation: each entity owns an
 * update region (where it is, 4 x 4) and a subscription region (its area of interest, 24 x 24, around
 * the same point). The matcher is created once; every tick the entities that moved become MOVE
 * changes, an entity that joins becomes two ADDs, one that leaves two REMOVEs, all applied as one
 * batch, and the pairs gained and lost are printed. After each tick the matcher's pair count is
 * checked against a full rematch; finally a bad batch shows the error handling. Exits 0 when
 * everything behaves.
 */
#include <inttypes.h>
#include <stdio.h>

#include "simkit/ddm/c_api.h"

#define DIMS 2
#define MAX_ENTITIES 16
#define TICKS 5
#define MAX_CHANGES (2 * MAX_ENTITIES)

/* Entity e owns subscription id 100 + e and update id 200 + e (ids need only be unique per set). */
#define SUB_ID(e) ((uint64_t)(100 + (e)))
#define UPD_ID(e) ((uint64_t)(200 + (e)))

static const double kUpdateHalf = 2.0;    /* half the side of an entity's update region */
static const double kInterestHalf = 12.0; /* half the side of its area of interest */

struct Federation {
  int present[MAX_ENTITIES];
  double x[MAX_ENTITIES], y[MAX_ENTITIES];
  uint32_t random; /* a small deterministic generator, so that every run prints the same */
};

static double next_uniform(struct Federation* f, double lo, double hi) {
  f->random = f->random * 1664525u + 1013904223u;
  return lo + (hi - lo) * (double)(f->random >> 8) / 16777216.0;
}

/* One batch being collected: change k is kinds[k] of ids[k] in set roles[k], with bounds
 * lower[k * DIMS + d] and upper[k * DIMS + d] (change-major; ignored for REMOVE). */
struct Batch {
  size_t n;
  simkit_ddm_change_kind kinds[MAX_CHANGES];
  simkit_ddm_role roles[MAX_CHANGES];
  uint64_t ids[MAX_CHANGES];
  double lower[MAX_CHANGES * DIMS], upper[MAX_CHANGES * DIMS];
};

static void push(struct Batch* b, simkit_ddm_change_kind kind, simkit_ddm_role role, uint64_t id, double x, double y,
                 double half) {
  b->kinds[b->n] = kind;
  b->roles[b->n] = role;
  b->ids[b->n] = id;
  b->lower[b->n * DIMS + 0] = x - half;
  b->lower[b->n * DIMS + 1] = y - half;
  b->upper[b->n * DIMS + 0] = x + half;
  b->upper[b->n * DIMS + 1] = y + half;
  ++b->n;
}

/* An entity's two regions as changes of one kind. */
static void push_entity(struct Batch* b, simkit_ddm_change_kind kind, const struct Federation* f, int e) {
  push(b, kind, SIMKIT_DDM_ROLE_SUBSCRIPTION, SUB_ID(e), f->x[e], f->y[e], kInterestHalf);
  push(b, kind, SIMKIT_DDM_ROLE_UPDATE, UPD_ID(e), f->x[e], f->y[e], kUpdateHalf);
}

/* The regions of the present entities in the layout of the matching functions (dimension-major:
 * lower[d * n + i]), for the creation and for the full rematch that checks each tick. */
struct Sets {
  size_t n;
  uint64_t s_ids[MAX_ENTITIES], u_ids[MAX_ENTITIES];
  double s_lower[DIMS * MAX_ENTITIES], s_upper[DIMS * MAX_ENTITIES];
  double u_lower[DIMS * MAX_ENTITIES], u_upper[DIMS * MAX_ENTITIES];
};

static void collect_sets(const struct Federation* f, struct Sets* s) {
  size_t i = 0, n = 0;
  int e;
  for (e = 0; e < MAX_ENTITIES; ++e) n += f->present[e] ? 1 : 0;
  s->n = n;
  for (e = 0; e < MAX_ENTITIES; ++e) {
    if (!f->present[e]) continue;
    s->s_ids[i] = SUB_ID(e);
    s->u_ids[i] = UPD_ID(e);
    s->s_lower[0 * n + i] = f->x[e] - kInterestHalf;
    s->s_lower[1 * n + i] = f->y[e] - kInterestHalf;
    s->s_upper[0 * n + i] = f->x[e] + kInterestHalf;
    s->s_upper[1 * n + i] = f->y[e] + kInterestHalf;
    s->u_lower[0 * n + i] = f->x[e] - kUpdateHalf;
    s->u_lower[1 * n + i] = f->y[e] - kUpdateHalf;
    s->u_upper[0 * n + i] = f->x[e] + kUpdateHalf;
    s->u_upper[1 * n + i] = f->y[e] + kUpdateHalf;
    ++i;
  }
}

/* What the callbacks saw in one apply. */
struct Tally {
  uint64_t gained, lost;
};

/* Pairs arrive in chunks, sorted by subscription id; an RTI would start or stop routing here. */
static int on_gained(const uint64_t* sub_ids, const uint64_t* upd_ids, size_t count, void* user) {
  struct Tally* t = (struct Tally*)user;
  size_t k;
  for (k = 0; k < count; ++k)
    printf("    + subscription %" PRIu64 " now sees update %" PRIu64 "\n", sub_ids[k], upd_ids[k]);
  t->gained += count;
  return 0; /* non-zero would stop the delivery (the batch stays applied) */
}

static int on_lost(const uint64_t* sub_ids, const uint64_t* upd_ids, size_t count, void* user) {
  struct Tally* t = (struct Tally*)user;
  size_t k;
  for (k = 0; k < count; ++k)
    printf("    - subscription %" PRIu64 " no longer sees update %" PRIu64 "\n", sub_ids[k], upd_ids[k]);
  t->lost += count;
  return 0;
}

/* The matcher's pairs against a full rematch of the current regions. */
static int check_against_rematch(simkit_ddm_matcher* options, simkit_ddm_incremental* inc, const struct Federation* f) {
  struct Sets sets;
  uint64_t kept = 0, full = 0;
  collect_sets(f, &sets);
  if (simkit_ddm_incremental_pairs(inc, &kept) != SIMKIT_DDM_OK ||
      simkit_ddm_count_pairs_f64(options, DIMS, sets.n, sets.s_ids, sets.s_lower, sets.s_upper, sets.n, sets.u_ids,
                                 sets.u_lower, sets.u_upper, &full) != SIMKIT_DDM_OK) {
    fprintf(stderr, "counting failed: %s\n", simkit_ddm_last_error(options));
    return 0;
  }
  if (kept != full) {
    fprintf(stderr, "the matcher holds %" PRIu64 " pairs, a full rematch finds %" PRIu64 "\n", kept, full);
    return 0;
  }
  return 1;
}

int main(void) {
  struct Federation f = {{0}, {0}, {0}, 12345u};
  struct Sets sets;
  struct Batch batch;
  struct Tally tally;
  simkit_ddm_apply_report report;
  simkit_ddm_matcher* options = NULL;
  simkit_ddm_incremental* inc = NULL;
  simkit_ddm_status status;
  uint64_t pairs = 0, before = 0;
  int ok = 1, tick, e, j;

  /* Options live on a matcher handle; the incremental matcher copies them when it is created. */
  if (simkit_ddm_create(&options) != SIMKIT_DDM_OK) {
    fprintf(stderr, "simkit_ddm_create failed\n");
    return 1;
  }
  simkit_ddm_set_rule(options, SIMKIT_DDM_RULE_IEEE1516);

  /* Eight entities at the start, in a 100 x 100 space. */
  for (e = 0; e < 8; ++e) {
    f.present[e] = 1;
    f.x[e] = next_uniform(&f, 0, 100);
    f.y[e] = next_uniform(&f, 0, 100);
  }
  collect_sets(&f, &sets);
  status = simkit_ddm_incremental_create_f64(options, DIMS, sets.n, sets.s_ids, sets.s_lower, sets.s_upper, sets.n,
                                             sets.u_ids, sets.u_lower, sets.u_upper, &inc);
  if (status != SIMKIT_DDM_OK) {
    /* A failed creation leaves its message on the options handle. */
    fprintf(stderr, "create: %s: %s\n", simkit_ddm_status_name(status), simkit_ddm_last_error(options));
    simkit_ddm_destroy(options);
    return 1;
  }
  simkit_ddm_incremental_pairs(inc, &pairs);
  printf("start: %d entities, %" PRIu64 " pairs\n", (int)sets.n, pairs);

  for (tick = 1; tick <= TICKS && ok; ++tick) {
    batch.n = 0;
    /* Three entities move a few units (both of their regions, by the same step). */
    for (j = 0; j < 3; ++j) {
      e = (tick * 3 + j) % 9; /* entities 0 to 8 in turn */
      if (!f.present[e]) continue;
      f.x[e] += next_uniform(&f, -8, 8);
      f.y[e] += next_uniform(&f, -8, 8);
      push_entity(&batch, SIMKIT_DDM_CHANGE_MOVE, &f, e);
    }
    if (tick == 2) { /* entity 8 joins the federation */
      f.present[8] = 1;
      f.x[8] = 50;
      f.y[8] = 50;
      push_entity(&batch, SIMKIT_DDM_CHANGE_ADD, &f, 8);
    }
    if (tick == 4) { /* entity 0 resigns */
      f.present[0] = 0;
      push_entity(&batch, SIMKIT_DDM_CHANGE_REMOVE, &f, 0);
    }

    tally.gained = tally.lost = 0;
    printf("tick %d: %d changes\n", tick, (int)batch.n);
    status = simkit_ddm_incremental_apply_f64(inc, DIMS, batch.n, batch.kinds, batch.roles, batch.ids, batch.lower,
                                              batch.upper, on_gained, on_lost, &tally);
    if (status != SIMKIT_DDM_OK) {
      fprintf(stderr, "apply: %s: %s\n", simkit_ddm_status_name(status), simkit_ddm_incremental_last_error(inc));
      ok = 0;
      break;
    }
    simkit_ddm_incremental_last_report(inc, &report);
    printf("tick %d: %" PRIu64 " gained, %" PRIu64 " lost, %" PRIu64 " pairs now (%d regions matched again)\n", tick,
           tally.gained, tally.lost, report.pairs, (int)(report.subscriptions + report.updates));
    if (report.gained != tally.gained || report.lost != tally.lost ||
        pairs + tally.gained - tally.lost != report.pairs) {
      fprintf(stderr, "the callbacks and the report disagree\n");
      ok = 0;
    }
    pairs = report.pairs;
    ok = ok && check_against_rematch(options, inc, &f);
  }

  /* Error handling: entity 0 has left, so moving its update region is a bad batch, refused whole. */
  if (ok) {
    simkit_ddm_incremental_pairs(inc, &before);
    batch.n = 0;
    push(&batch, SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_UPDATE, UPD_ID(1), 10, 10, kUpdateHalf);
    push(&batch, SIMKIT_DDM_CHANGE_MOVE, SIMKIT_DDM_ROLE_UPDATE, UPD_ID(0), 10, 10, kUpdateHalf);
    status = simkit_ddm_incremental_apply_f64(inc, DIMS, batch.n, batch.kinds, batch.roles, batch.ids, batch.lower,
                                              batch.upper, on_gained, on_lost, &tally);
    if (status == SIMKIT_DDM_BAD_INPUT) {
      /* The message lives until the next call on the handle: read it first. */
      printf("bad batch rejected as expected: %s\n", simkit_ddm_incremental_last_error(inc));
      simkit_ddm_incremental_pairs(inc, &pairs);
      if (pairs != before) {
        fprintf(stderr, "the bad batch changed the pairs\n");
        ok = 0;
      }
    } else {
      fprintf(stderr, "bad batch: expected SIMKIT_DDM_BAD_INPUT, got %s\n", simkit_ddm_status_name(status));
      ok = 0;
    }
  }
  if (ok) printf("every tick matched a full rematch\n");

  simkit_ddm_incremental_destroy(inc);
  simkit_ddm_destroy(options);
  return ok ? 0 : 1;
}
