/*
 * The delivery lease protocol of pg_baton (src/api/claim.cpp, src/api/leases.cpp, src/pg/deliveries/delivery_store.hpp), as Promela.
 *
 * Each SQL call is one atomic step: the C code runs one UPDATE (or SELECT ... FOR
 * UPDATE) on the delivery's row, and the row lock serialises calls on one row, so no
 * other call on that row can come between its read and its write. Between a holder's
 * calls anything may happen (arbitrary delays): other holders claim, the reaper reaps,
 * the holder crashes. Time is abstracted away: the reaper may reap any claimed row whose
 * lease is set, at any moment (every lease may expire before the holder's next call).
 *
 *   claim   pending -> claimed, generation + 1, attempts + 1, lease set    (CLAIM_SQL)
 *   renew   claimed at g -> lease set again; settled at g -> DU007; else DU001 (g_renew)
 *   finish  claimed at g -> finished|failed at g; settled at g -> the stored status;
 *           else DU001                                                   (g_finish)
 *   retry   claimed at g -> pending at g + 1, or failed at g when attempts are spent;
 *           settled at g -> the stored status; else DU001     (g_row_for_update + apply)
 *   reap    claimed with an expired lease -> pending (or failed when attempts are
 *           spent), generation + 1 always                                 (g_reap)
 *
 * Ghost state (never read by the protocol, only by the assertions):
 *   cur_gen[i]   the generation handed out by the claim whose lease is live, 0 when no
 *                lease is live: set by claim, cleared by whatever ends the lease
 *   settled[i]   the status the item first settled with (NONE before)
 *   high[i]      the highest generation seen so far
 *
 * Invariants, asserted after every step on a row (check_row) or at the write:
 *   (1) only the current generation's writes take effect: a write applied for a holder
 *       carries cur_gen[i]
 *   (2) a settled item is never settled again, and never changes again
 *   (3) an enqueued item is never lost: a claimed row always has a lease the reaper can
 *       see, and when nothing can move any more every enqueued item has settled
 *   (4) generations never go back
 *
 * -DBROKEN_FINISH drops the generation from finish's WHERE clause: spin must find a
 * violation of (1) (test/model/run.sh runs it as a negative test).
 */

#ifndef N_ITEMS
#define N_ITEMS 2
#endif
#ifndef N_WORKERS
#define N_WORKERS 2
#endif
#ifndef MAX_ATTEMPTS
#define MAX_ATTEMPTS 2
#endif

#define ABSENT   0
#define PENDING  1
#define CLAIMED  2
#define FINISHED 3
#define FAILED   4
#define NONE     0
/* answers of a lease call */
#define APPLIED  10
#define LOST     11   /* DU001 */
#define ISSETTLED 12  /* DU007 (renew of a row settled at the caller's generation) */

#define is_settled(s) ((s) == FINISHED || (s) == FAILED)

typedef Row {
    byte status;
    byte gen;
    byte attempts;
    bit  leased;     /* lease_until IS NOT NULL */
};

Row  row[N_ITEMS];
byte cur_gen[N_ITEMS];
byte settled[N_ITEMS];
byte high[N_ITEMS];
byte settles[N_ITEMS];

#ifdef BROKEN_FINISH
#define FINISH_HOLDS(i, g) (row[i].status == CLAIMED)
#else
#define FINISH_HOLDS(i, g) (row[i].status == CLAIMED && row[i].gen == g)
#endif
#define LEASE_HOLDS(i, g) (row[i].status == CLAIMED && row[i].gen == g)

/* The invariants that hold of a row between steps. */
inline check_row(i) {
    assert(row[i].gen >= high[i]);                          /* (4) */
    high[i] = row[i].gen;
    assert((row[i].status == CLAIMED) == (row[i].leased));  /* (3): the reaper sees it */
    assert(row[i].status == CLAIMED || cur_gen[i] == 0);
    assert(settled[i] == NONE || row[i].status == settled[i]); /* (2) */
    assert(settles[i] <= 1)                                 /* (2) */
}

/* A row settles (finish, retry or reap with attempts spent): the first and only time. */
inline settle(i, st) {
    assert(settled[i] == NONE);                             /* (2) */
    settled[i] = st;
    settles[i]++
}

/* The write of a lease call, applied for the holder of generation g. */
inline applied_for(i, g) {
    assert(cur_gen[i] == g && g != 0)                       /* (1) */
}

/* finish(i, g, finished | failed): the fenced UPDATE, else the row read for the answer. */
inline finish_call(i, g, ans) {
    if
    :: FINISH_HOLDS(i, g) ->
       applied_for(i, g);
       if
       :: row[i].status = FINISHED
       :: row[i].status = FAILED
       fi;
       row[i].leased = 0;
       cur_gen[i] = 0;
       ans = row[i].status;
       settle(i, ans)
    :: else ->
       skip;
       if
       :: row[i].gen == g && is_settled(row[i].status) -> ans = row[i].status
       :: else -> ans = LOST
       fi
    fi;
    check_row(i)
}

proctype Producer() {
    byte i = 0;
    do
    :: i < N_ITEMS -> atomic { row[i].status = PENDING; check_row(i) }; i++
    :: else -> break
    od
}

proctype Worker() {
    byte i, g, ans, first;
end_idle:
    do
    :: atomic {
           /* claim: any pending row (run_after and SKIP LOCKED make the choice free) */
           if
           :: row[0].status == PENDING -> i = 0
           :: N_ITEMS > 1 && row[1].status == PENDING -> i = 1
           :: N_ITEMS > 2 && row[2].status == PENDING -> i = 2
           fi;
           row[i].status = CLAIMED;
           row[i].gen++;
           row[i].attempts++;
           row[i].leased = 1;
           g = row[i].gen;
           cur_gen[i] = g;
           check_row(i)
       };
       /* holding generation g of row i: any number of renewals, then one way out */
       do
       :: atomic {   /* renew */
              skip;
              if
              :: LEASE_HOLDS(i, g) -> applied_for(i, g); row[i].leased = 1; ans = APPLIED
              :: else ->
                 skip;
                 if
                 :: row[i].gen == g && is_settled(row[i].status) -> ans = ISSETTLED
                 :: else -> ans = LOST
                 fi
              fi;
              check_row(i)
          };
          if
          :: ans == APPLIED
          :: else -> break
          fi
       :: atomic {   /* finish, finished or failed */
              skip;
              finish_call(i, g, ans)
          };
          first = ans;
          if
          :: atomic {  /* the same call again (a lost response): it answers alike */
                 skip;
                 finish_call(i, g, ans);
                 assert(ans == first)
             }
          :: skip
          fi;
          break
       :: atomic {   /* retry */
              skip;
              if
              :: LEASE_HOLDS(i, g) ->
                 applied_for(i, g);
                 row[i].leased = 0;
                 cur_gen[i] = 0;
                 if
                 :: row[i].attempts >= MAX_ATTEMPTS -> row[i].status = FAILED; settle(i, FAILED)
                 :: else -> row[i].status = PENDING; row[i].gen++
                 fi
              :: else -> skip   /* the stored status, or DU001 */
              fi;
              check_row(i)
          };
          break
       :: break      /* crash: the holder forgets its lease; only the reaper frees the row */
       od
    od
}

proctype Reaper() {
    byte i;
end_reap:
    do
    :: atomic {
           if
           :: row[0].status == CLAIMED && row[0].leased -> i = 0
           :: N_ITEMS > 1 && row[1].status == CLAIMED && row[1].leased -> i = 1
           :: N_ITEMS > 2 && row[2].status == CLAIMED && row[2].leased -> i = 2
           fi;
           row[i].gen++;
           row[i].leased = 0;
           cur_gen[i] = 0;
           if
           :: row[i].attempts >= MAX_ATTEMPTS -> row[i].status = FAILED; settle(i, FAILED)
           :: else -> row[i].status = PENDING
           fi;
           check_row(i)
       }
    od
}

/* (3), at the end: once no step is possible, every enqueued item has settled. */
proctype Final() {
    byte i;
    timeout ->
    for (i : 0 .. N_ITEMS - 1) {
        assert(is_settled(row[i].status))
    }
}

init {
    byte w;
    atomic {
        run Producer();
        for (w : 1 .. N_WORKERS) { run Worker() }
        run Reaper();
        run Final()
    }
}
