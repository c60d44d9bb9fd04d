/*
 * transition_stage and the stage calls of pg_baton (src/api/transition.cpp, src/api/stages.cpp), as Promela:
 * workers that own a run by its generation, crash before or after any call commits,
 * are superseded by a newer owner, restart and resume from the saved current stage.
 *
 * Each call is one atomic step: every owner call first locks the run row
 * (SELECT ... FOR NO KEY UPDATE, lock_run) and checks the caller's generation (DU001),
 * so calls on one run are serialised and a superseded owner changes nothing. A crash
 * before a call commits is the call not happening; a crash after it commits is the
 * call happening and its answer being lost; both are the worker forgetting everything
 * and starting over with acquire_run (a new generation), then transition_stage with no
 * previous stage. Time is abstract: any lease may have expired (acquire_run may always
 * take the run over) and a failed stage may or may not be past its retry deadline.
 *
 * The workflow: start "a" -> next ["b"]; "b" -> next ["b", "@finish"], each stage with
 * max_attempts 2. The decision at "b" is free (b again, while rows remain, or finish).
 *
 *   acquire_run      generation + 1, owned                      (runs.cpp, may_acquire)
 *   transition_stage approved: running + the start stage; running: act on the CURRENT
 *                    stage only (pending/running: return it; failed: wait, return it, or
 *                    fail the run when attempts are spent; completed: decide, save the
 *                    decision on it and insert the successor, or end the run);
 *                    previous_stage_id is only checked to be a stage of the run
 *   start_stage      check_start: running run, current, not completed, failed only
 *                    with attempts left and past its deadline -> running, attempt + 1
 *   complete_stage   completed with the same result: no-op; another: DU007;
 *                    else check_settle -> completed with the result
 *   fail_stage       check_settle -> failed
 *
 * Invariants:
 *   (1) a transition is never applied twice: a stage's decision is saved at most once
 *       and a stage has at most one successor
 *   (2) exactly one current stage once the run has stages (the finishing stage stays
 *       current), and it is the last one of the chain
 *   (3) only the current owner's calls take effect (the generation of the last acquire)
 *   (4) a stage's result is saved once
 *
 * -DBROKEN_TRANSITION makes transition_stage decide from the caller's previous stage
 * when that stage is completed, instead of from the saved current stage: a worker that
 * repeats a call whose answer it lost applies the transition again. Spin must find it.
 */

#ifndef N_WORKERS
#define N_WORKERS 2
#endif
#ifndef MAX_ROWS
#define MAX_ROWS 3      /* stage rows a run may get (bounds the b -> b loop) */
#endif
#ifndef MAX_GEN
#define MAX_GEN 3       /* acquisitions in all (bounds crashes and takeovers) */
#endif
#define MAX_ATTEMPTS 2

/* run status */
#define APPROVED  1
#define RUNNING   2
#define COMPLETED 3
#define RFAILED   4
/* stage status */
#define SPENDING  1
#define SRUNNING  2
#define SDONE     3
#define SFAILED   4
/* stage names */
#define STAGE_A 1
#define STAGE_B 2
/* saved transitions */
#define T_NEXT   1
#define T_FINISH 2
/* answers */
#define A_STAGE  1
#define A_WAIT   2
#define A_DONE   3     /* "finished": the run has ended */
#define A_LOST   4     /* DU001 */
#define A_REFUSE 5     /* DU007 and the like */
#define NOSTAGE  255

typedef Stage {
    byte name;
    byte status;
    byte attempt;
    bit  current;
    byte pred;         /* index of the predecessor + 1; 0: none */
    byte transition;   /* the saved decision; 0: none */
    byte result;       /* 0: none */
};

byte  run_status = APPROVED;
byte  run_gen = 0;
Stage st[MAX_ROWS];
byte  nrows = 0;
byte  owner_gen = 0;   /* ghost: the generation of the last acquire_run */
byte  applied[MAX_ROWS]; /* ghost: decisions saved per stage */

inline check_run() {
    cur = 0; last = NOSTAGE;
    for (k : 0 .. MAX_ROWS - 1) {
        if
        :: k < nrows ->
           assert(applied[k] <= 1);                         /* (1) */
           if :: st[k].current -> cur++; last = k :: else -> skip fi
        :: else -> skip
        fi
    }
    assert(nrows == 0 || cur == 1);                         /* (2) */
    assert(nrows == 0 || last == nrows - 1);                /* (2): the end of the chain */
    assert(nrows > 0 || run_status == APPROVED);
    for (k : 0 .. MAX_ROWS - 1) {
        succ = 0;
        for (last : 0 .. MAX_ROWS - 1) {
            if :: last < nrows && st[last].pred == k + 1 -> succ++ :: else -> skip fi
        }
        assert(succ <= 1)                                   /* (1) */
    };
    k = 0; c = 0; cur = 0; last = 0; succ = 0   /* scratch, reset: fewer states */
}

/* A write of the owner holding generation g. */
inline owner_writes(g) {
    assert(g == owner_gen && g == run_gen)                  /* (3) */
}

/* Inserts a new current stage (g_insert_stage). */
inline insert_stage(nm, p, s) {
    assert(nrows < MAX_ROWS);
    st[nrows].name = nm;
    st[nrows].status = SPENDING;
    st[nrows].current = 1;
    st[nrows].pred = p;
    s = nrows;
    nrows++
}

/* transition_stage(g, prev): the answer in ans, the stage in s (scratch: c, k). */
inline transition_stage(g, prev, ans, s) {
    if
    :: run_gen != g -> ans = A_LOST
    :: else ->
       skip;
       if
       :: run_status == COMPLETED || run_status == RFAILED -> ans = A_DONE
       :: run_status == APPROVED ->
          owner_writes(g);
          run_status = RUNNING;
          insert_stage(STAGE_A, 0, s);
          ans = A_STAGE
       :: run_status == RUNNING ->
          c = NOSTAGE;
          for (k : 0 .. MAX_ROWS - 1) {
              if :: k < nrows && st[k].current -> c = k :: else -> skip fi
          }
#ifdef BROKEN_TRANSITION
          if
          :: prev != NOSTAGE && st[prev].status == SDONE -> c = prev
          :: else -> skip
          fi;
#endif
          assert(c != NOSTAGE);
          if
          :: st[c].status == SPENDING || st[c].status == SRUNNING -> s = c; ans = A_STAGE
          :: st[c].status == SFAILED && st[c].attempt >= MAX_ATTEMPTS ->
             owner_writes(g);
             run_status = RFAILED;
             ans = A_DONE
          :: st[c].status == SFAILED && st[c].attempt < MAX_ATTEMPTS ->
             s = c;
             if
             :: ans = A_WAIT    /* before its retry deadline */
             :: ans = A_STAGE   /* past it */
             fi
          :: st[c].status == SDONE ->
             owner_writes(g);
             applied[c]++;
             if
             :: st[c].name == STAGE_A || (st[c].name == STAGE_B && nrows < MAX_ROWS) ->
                /* next: "b" (from a, the only way; from b, one choice of two) */
                st[c].transition = T_NEXT;
                st[c].current = 0;
                insert_stage(STAGE_B, c + 1, s);
                ans = A_STAGE
             :: st[c].name == STAGE_B ->
                st[c].transition = T_FINISH;   /* stays current */
                run_status = COMPLETED;
                ans = A_DONE
             fi
          fi
       fi
    fi;
    check_run()
}

/* start_stage(g, s) */
inline start_stage(g, s, ans) {
    if
    :: run_gen != g -> ans = A_LOST
    :: run_gen == g && run_status == RUNNING && st[s].current &&
       (st[s].status == SPENDING || st[s].status == SRUNNING ||
        (st[s].status == SFAILED && st[s].attempt < MAX_ATTEMPTS)) ->
       owner_writes(g);
       st[s].status = SRUNNING;
       st[s].attempt++;
       ans = A_STAGE
    :: else -> ans = A_REFUSE
    fi;
    check_run()
}

/* complete_stage(g, s, r) */
inline complete_stage(g, s, r, ans) {
    if
    :: run_gen != g -> ans = A_LOST
    :: run_gen == g && st[s].status == SDONE ->
       if :: st[s].result == r -> ans = A_STAGE :: else -> ans = A_REFUSE fi
    :: run_gen == g && st[s].status != SDONE && run_status == RUNNING && st[s].current &&
       st[s].status == SRUNNING ->
       owner_writes(g);
       assert(st[s].result == 0);                           /* (4) */
       st[s].status = SDONE;
       st[s].result = r;
       ans = A_STAGE
    :: else -> ans = A_REFUSE
    fi;
    check_run()
}

/* fail_stage(g, s) */
inline fail_stage(g, s, ans) {
    if
    :: run_gen != g -> ans = A_LOST
    :: run_gen == g && run_status == RUNNING && st[s].current && st[s].status == SRUNNING ->
       owner_writes(g);
       st[s].status = SFAILED;
       ans = A_STAGE
    :: else -> ans = A_REFUSE
    fi;
    check_run()
}

proctype Worker() {
    byte g, s, prev, ans, r;
    byte k, c, cur, last, succ;   /* scratch of the inlines */
restart:
    /* acquire_run: a lease that may have expired, or this owner restarting */
    atomic {
        if
        :: run_status == COMPLETED || run_status == RFAILED -> goto stop
        :: run_gen >= MAX_GEN -> goto stop
        :: else -> run_gen++; owner_gen = run_gen; g = run_gen; check_run()
        fi
    };
    prev = NOSTAGE;
step:
    if
    :: atomic { skip; transition_stage(g, prev, ans, s) }
    :: goto restart      /* crash before the call commits */
    fi;
    if
    :: goto restart      /* crash after it committed: the answer is lost */
    :: goto step         /* the answer is lost, the worker repeats the same call */
    :: ans == A_STAGE -> skip
    :: ans == A_WAIT -> prev = s; goto step
    :: ans == A_DONE -> goto stop
    :: ans == A_LOST -> goto restart
    fi;
    /* a handler for stage s */
    atomic { skip; start_stage(g, s, ans) };
    if
    :: ans == A_LOST -> goto restart
    :: ans == A_REFUSE -> prev = s; goto step
    :: ans == A_STAGE -> skip
    fi;
    if
    :: goto restart      /* the handler crashes mid-work */
    :: r = 1
    :: r = 2
    :: r = 0
    fi;
    if
    :: r != 0 -> atomic { skip; complete_stage(g, s, r, ans) }
    :: r == 0 -> atomic { skip; fail_stage(g, s, ans) }
    fi;
    if
    :: ans == A_LOST -> goto restart
    :: else -> prev = s; goto step
    fi;
stop:
    skip
}

init {
    byte w;
    atomic {
        for (w : 1 .. N_WORKERS) { run Worker() }
    }
}
