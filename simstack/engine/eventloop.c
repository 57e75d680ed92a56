/* The native event kernel of simstack: one replication of a compiled model in one C loop.
 *
 * simstack/engine/native.py compiles the model into the arguments of run() (see its docstring)
 * and turns the result back into the recorder's columns and the resources' meters. The loop
 * reproduces the SimPy kernel's order of events exactly: a binary heap ordered by (time,
 * insertion number), every event at SimPy's NORMAL priority, events scheduled in the order the
 * Python runners schedule them, and a resource handed over at one instant runs its waiter's work
 * at once, before the releaser goes on (resources/waitline.py). Random draws are not made here:
 * each stream's buffer is refilled by calling its Python refill callable (the next 256 draws of
 * the same named NumPy stream). Compiled with -ffp-contract=off so each floating-point operation
 * rounds as in Python.
 *
 * Resources: FIFO stations (a `server` station, a host's `fifo` cores: cpu.FifoCpu), processor
 * sharing (a host's `ps` cores, a link's bandwidth: sharing.SharedRate), priority cores
 * (cpu.PriorityCpu), thread pools (slots.Slots, a full line turning work away) and write locks,
 * global or per key, first come or by priority (kinds/locks.LockRuntime), file servers and caches
 * (kinds/fileserver.py: a block of code per store and file), swarms (kinds/swarm.py: a shared rate
 * whose jobs are nodes). Each keeps its accounting in a Meter here, written back into the Python
 * Meter objects at the end. Memory steps and forks are logged in order (mem_log) and replayed into
 * MemoryState by native.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_CALL = 1, OP_DELAY = 2, OP_CHOOSE = 3, OP_JUMP = 4, OP_END = 5, OP_CPU = 6, OP_FCPU = 7, OP_LINK = 8,
    OP_XFER = 9, OP_HOLDP = 10, OP_RELP = 11, OP_HOLDL = 12, OP_RELL = 13, OP_SPAWN = 14, OP_PAR = 15,
    OP_BEND = 16, OP_DBGET = 17, OP_DBQ = 18, OP_DBX = 19, OP_DBEND = 20, OP_QPUT = 21, OP_HCALL = 22,
    OP_HACQ = 23, OP_HRUN = 24, OP_HFIN = 25, OP_MARK = 26, OP_GRANT = 27, OP_STEP = 28, OP_FAILED = 29,
    OP_DEADLINE = 30, OP_READ = 31, OP_SGET = 32, OP_SLAT = 33, OP_SXFER = 34, OP_SREL = 35, OP_FRET = 36,
    OP_CGET = 37, OP_CFILL = 38, OP_ALLOC = 39, OP_WMEM = 40, OP_BYITEM = 41,
    OP_RESTORE = 42, OP_FORK = 43, OP_CSTORED = 44, OP_SWGET = 45, OP_SWSEEDED = 46
};
enum { MEM_ALLOC = 0, MEM_WRITE = 1, MEM_END = 2, MEM_RESTORE = 3, MEM_FORK = 4 };
enum { EV_ARRIVE = 0, EV_CYCLE = 1, EV_FINISH = 2, EV_RESUME = 3, EV_WARM = 4, EV_PS = 5, EV_TICK = 6, EV_COPY = 7,
       EV_PRIO = 8, EV_SWLEAVE = 9 };
enum { CPU_FIFO = 0, CPU_PS = 1, CPU_PRIO = 2 };
/* OP_STEP's kinds: a CPU or station job, a job of a pure delay station, a hold (or a hierarchy call), a
 * named stage (or a sub-request call), a link call, a database call */
enum { ROW_JOB = 0, ROW_DELAY = 1, ROW_HOLD = 2, ROW_SPAN = 3, ROW_LINK = 4, ROW_DB = 5 };
#define MARKS 8  /* recorded steps nested at most this deep (native.why_not) */
#define ZERO_TIME_CYCLES 10000

typedef struct { double t; uint64_t eid; int32_t type, a; int64_t b; } Event;

typedef struct {
    double busy; int64_t queue, max_queue, arrivals, drops;
    double t, start, busy_area, queue_area, held_area; int keyed;
} Meter;

typedef struct { int32_t slot; double arrived, service; } Job;

typedef struct {  /* cpu.FifoCpu */
    double free_, speed; int32_t m;
    Job *q; Py_ssize_t qhead, qlen, qcap;
} Station;

typedef struct { double tag; int64_t seq; int32_t slot; } Tag;

typedef struct { int32_t *w; Py_ssize_t n, cap; int fetching; } NodeWait;  /* Swarm.fetching[node] */

typedef struct {  /* kinds.swarm.Swarm: the fluid's share of a SharedRate whose jobs are nodes */
    int32_t ps, linger; int64_t peers;  /* linger: a stream, -1 for the rest of the run */
    double upload, download, seed_rate, eff, lingering;
    int backed, seeding;  /* backed: the seeds fetch the file first (Swarm.pending is not None) */
    char *held; NodeWait *nodes;
    int64_t *pnode; double *pbytes; Py_ssize_t np, npcap;  /* Swarm.pending: (node, bytes) */
} Swarm;

typedef struct {  /* sharing.SharedRate; with a swarm (sw), its share and on_leave hooks */
    double servers, rate, cap, virt, last; int64_t token, seq; int32_t m;
    Tag *h; Py_ssize_t hn, hcap; Swarm *sw;
} Shared;

typedef struct {  /* cpu.PriorityCpu: preemptive-resume by priority; levels metered per run; an idle spinner */
    double cores, speed; int32_t m, spin;  /* spin: the spinner's meter, -1 none */
    int64_t seq, heir, heir_seq;  /* heir: the owner whose finished step keeps its core (0: none) */
    int32_t *run; Py_ssize_t nrun;  /* the running fibers, in the order they started */
    Tag *ready; Py_ssize_t nready, readycap;  /* (minus the priority, seq, fiber) */
    double *idle; Py_ssize_t nidle;  /* the spinner: when each idle core fell idle */
    int32_t *lvp; Meter *lv; int *made; Py_ssize_t nlv;  /* levels: priority, meter, made (a thread ran) */
} Prio;

typedef struct { int32_t slot, rank; double since; } Waiter;

typedef struct {  /* a line of waiters (a ring) by rank, then first come (a priority lock's heap order) */
    Waiter *w; Py_ssize_t head, len, cap;
} Line;

typedef struct {  /* slots.Slots; a line longer than capacity turns work away (the request fails: reason) */
    double size, capacity; int64_t busy, pending; int handing, again; int32_t m, reason; Line line;
} Pool;

typedef struct {  /* one key of kinds/locks._KeyState, write mode, FIFO or priority order */
    int used, fixed; int64_t key; int writer, handing, again; Line line;
} KeyState;

typedef struct {  /* kinds/locks.LockRuntime: keys in an open-addressed table */
    int32_t m; KeyState *keys; Py_ssize_t nkeys, kcap;
} Lock;

/* constant: 0 drawn (refilled 256 at a time), 1 a constant, 2 a table indexed by the request's item */
typedef struct { int constant; double value; PyObject *refill; double *buf; Py_ssize_t n, i; } Stream;

typedef struct {  /* kinds.database.DatabaseRuntime: a pool of connections, a shared link or none */
    int32_t pool, link; int growth; double per, factor, stored;
} Db;

typedef struct { int64_t item, parent; double since; int32_t sender; } Item;

/* kinds.fileserver.Store: threads (a pool), the latency and per-lookup latency (each: a constant
 * lookup cost, NaN when each lookup is drawn from its stream), the shared bandwidth (a rate or -1) */
typedef struct { int32_t pool, link, lat, look; double each; } Store;

/* a cache's file (kinds.fileserver.Cache.files): 0 not there, 1 being fetched (its waiters), 2 held */
typedef struct { int state; int32_t *w; Py_ssize_t n, cap; } CFile;

/* lifecycle._Brood: the children of a fork step that waits for them (the parent fiber), and the
 * replacements it may still fork as they end (respawn) */
typedef struct { int32_t parent, entry, cls, pick; int64_t running; double respawn; int used, forking; } Brood;

typedef struct { int64_t id; int32_t cls, name; double deadline, after; } Late;  /* a missed deadline's row */

typedef struct {  /* kinds.queues.QueueRuntime: items wait for a consumer, blocked senders for room */
    double consumers, capacity; int drop, handing, again; int64_t busy, done; int32_t m, entry, cls, wl, reason;
    Item *items; Py_ssize_t ihead, ilen, icap;
    Item *blocked; Py_ssize_t bhead, blen, bcap;
} Queue;

typedef struct {  /* kinds.hierarchy.HierarchyRuntime: node calculations on a pool, on a host's CPU or as time */
    int32_t pool, cpu_type, cpu;  /* cpu_type < 0: elapsed time */
} Hier;

typedef struct {  /* hierarchy._Plan: node 0 the changed one; children of i: child[start[i] .. start[i + 1]) */
    int32_t n, *parents, *start, *child;
} Plan;

typedef struct {  /* one call's recalculation (HierarchyRuntime.recalculate's state) */
    int32_t parent, plan, used; int64_t left, item; int32_t *missing;
} HCall;

typedef struct {  /* runners._FanOut: a parallel step's branches, each a fiber of its own */
    double count, limit, next, running, left; int launching; int32_t parent, body; int used;
} Fan;

/* A fiber: a request's own steps (fan < 0: recorded at its end) or a branch of a parallel step
 * (fan: its fan-out), with the request's id, class, workload and item (ritem) and its own item
 * (Ctx.item); root: the request's own fiber, whose reason (0: none) says it failed (Request.fail). */
typedef struct {
    int64_t id, parent, item, ritem, wait_seq; int32_t pc, wl, cls, client, wait_pc, fan, queue, hcall, node;
    int32_t root, reason, brood;  /* brood: the fork that waits for this request to end, -1 none */
    int32_t jhost, jlv, jprio; int64_t jseq, jtoken; double jrem, jstart;  /* its job on a priority CPU */
    int64_t owner, owners[MARKS];  /* Ctx identity (a pool's thread runs under its own), outer ones by depth */
    int live, warm, mem;  /* mem: the request took memory (a process of MemoryState) */
    double fbytes; int64_t flook; int32_t fret;  /* a file operation's bytes and lookups; where it goes on */
    double start, scratch, wait_since;
    double svc, arr, gwait, mk[2 * MARKS];  /* step records: the job's service and arrival, a hold's wait;
                                              per level its start and wait */
} Req;

typedef struct {  /* open, closed, protocol (one client whose runs are numbered, the first warm), or periodic
                  (copies > 0: tick times from the stream, each copy's delay from jitter) */
    int closed; int32_t entry, cls; int64_t item; double count, start; int32_t stream;
    int32_t first_client, clients; double n; int64_t protocol_warm;  /* < 0: not a protocol */
    int64_t copies; int32_t jitter;
} Workload;

typedef struct { double n; int64_t idle; double since; int32_t wl, stream; } Client;

typedef struct {
    Event *heap; Py_ssize_t hn, hcap; uint64_t eid;
    double now;
    int32_t *code; Py_ssize_t ncode; double *consts; Py_ssize_t nconsts;
    Meter *mt; Py_ssize_t nmt;
    Station *st; Py_ssize_t nst;
    Shared *ps; Py_ssize_t nps;
    Prio *pr; Py_ssize_t npr; int64_t owners, tokens;
    Pool *pl; Py_ssize_t npl;
    Lock *lk; Py_ssize_t nlk;
    Db *db; Py_ssize_t ndb;
    Queue *qu; Py_ssize_t nqu;
    Hier *hi; Py_ssize_t nhi;
    Plan *pn; Py_ssize_t npn;
    HCall *hc; Py_ssize_t nhc, hccap;
    Fan *fan; Py_ssize_t nfan, fcap;
    Stream *sm; Py_ssize_t nsm;
    Workload *wl; Py_ssize_t nwl;
    Client *cl; Py_ssize_t ncl;
    Req *req; Py_ssize_t rcap; int32_t *freelist; Py_ssize_t nfree;
    int64_t next_id, in_system, started, wait_seq, item;  /* item: the running request's */
    int32_t *done; Py_ssize_t dcap;  /* a PS departure's finished jobs */
    /* records: completion order */
    int64_t *o_id, *o_item, *o_parent; int32_t *o_cls, *o_wl, *o_reason; double *o_start, *o_end; char *o_warm;
    Py_ssize_t on, ocap;
    /* step records (recorded.py's rows), completion order */
    int64_t *s_id; int32_t *s_cls, *s_name, *s_comp; double *s_start, *s_wait, *s_svc, *s_end;
    Py_ssize_t sn, scap;
    Late *late; Py_ssize_t nlate, latecap;  /* missed deadlines (Recorder.deadline), in order */
    Store *so; Py_ssize_t nso; CFile *cf; Py_ssize_t nfiles;  /* file stores; caches' files (store * nfiles + file) */
    /* memory steps (engine/lifecycle.py), replayed into MemoryState in this order: op, time, request,
     * class, item, step (its host picker), value */
    int32_t *m_op, *m_cls, *m_pick; int64_t *m_id, *m_item; double *m_t, *m_val; Py_ssize_t mn, mcap;
    int memall;  /* a fork gives requests processes: every request's end is logged */
    Swarm *sw; Py_ssize_t nsw;
    Brood *br; Py_ssize_t nbr, brcap; int32_t next_brood;  /* next_brood: the brood of the request started next */
    int error; int32_t err_wl;
} K;

/* ``*p`` to ``cap`` items; out of memory, the old buffer is kept (freed by ``release``). */
static int resize(void **p, Py_ssize_t cap, size_t size) {
    void *q = realloc(*p, (size_t)cap * size);
    if (!q) { PyErr_NoMemory(); return -1; }
    *p = q; return 0;
}

static int grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    if (resize(p, c, size)) return -1;
    *cap = c; return 0;
}

static inline int ev_less(const Event *x, const Event *y) {
    return x->t < y->t || (x->t == y->t && x->eid < y->eid);
}

static int push(K *k, double t, int32_t type, int32_t a, int64_t b) {
    if (k->hn == k->hcap && grow((void **)&k->heap, &k->hcap, k->hn + 1, sizeof(Event))) return -1;
    Event e = {t, k->eid++, type, a, b};
    Py_ssize_t i = k->hn++;
    while (i > 0) {
        Py_ssize_t p = (i - 1) >> 1;
        if (!ev_less(&e, &k->heap[p])) break;
        k->heap[i] = k->heap[p];
        i = p;
    }
    k->heap[i] = e;
    return 0;
}

static Event pop(K *k) {
    Event top = k->heap[0];
    Event last = k->heap[--k->hn];
    Py_ssize_t i = 0, n = k->hn;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ev_less(&k->heap[c + 1], &k->heap[c])) c++;
        if (!ev_less(&k->heap[c], &last)) break;
        k->heap[i] = k->heap[c];
        i = c;
    }
    if (n) k->heap[i] = last;
    return top;
}

static int draw(K *k, int32_t s, double *out) {
    Stream *m = &k->sm[s];
    if (m->constant == 1) { *out = m->value; return 0; }
    if (m->constant == 2) {  /* samplers.Indexed.at: values[item % len], Python's modulo */
        Py_ssize_t i = (Py_ssize_t)(k->item % m->n);
        *out = m->buf[i < 0 ? i + m->n : i];
        return 0;
    }
    if (m->i == m->n) {
        PyObject *r = PyObject_CallNoArgs(m->refill);
        if (!r) return -1;
        Py_buffer view;
        if (PyObject_GetBuffer(r, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) { Py_DECREF(r); return -1; }
        /* what BlockSampler's tolist() gives, as a double: floats, or whole numbers below 2**53 */
        char f = view.format ? view.format[view.format[0] == '<' || view.format[0] == '=' ? 1 : 0] : 'B';
        if (f == '\0') f = 'B';
        Py_ssize_t n = view.itemsize ? view.len / view.itemsize : 0;
        if (n <= 0 || !strchr("dflqi?", f) || (f == 'd' && view.itemsize != 8)) {
            PyBuffer_Release(&view); Py_DECREF(r);
            PyErr_SetString(PyExc_ValueError, "a refill must give a non-empty array of numbers");
            return -1;
        }
        double *b = realloc(m->buf, (size_t)n * sizeof(double));
        if (!b) { PyBuffer_Release(&view); Py_DECREF(r); PyErr_NoMemory(); return -1; }
        for (Py_ssize_t j = 0; j < n; j++) {
            const char *x = (const char *)view.buf + j * view.itemsize;
            switch (f) {
            case 'd': b[j] = *(const double *)x; break;
            case 'f': b[j] = (double)*(const float *)x; break;
            case 'i': b[j] = (double)*(const int32_t *)x; break;
            case '?': b[j] = *(const unsigned char *)x ? 1.0 : 0.0; break;
            default: b[j] = view.itemsize == 8 ? (double)*(const int64_t *)x : (double)*(const int32_t *)x;
            }
        }
        PyBuffer_Release(&view);
        Py_DECREF(r);
        m->buf = b; m->n = n; m->i = 0;
    }
    *out = m->buf[m->i++];
    return 0;
}

/* Meter.touch (KeyedMeter.touch for a per-key lock's meter) */
static inline void touch(Meter *s, double now) {
    double dt = now - s->t;
    if (dt != 0.0) {
        s->busy_area += s->busy * dt;
        s->queue_area += (double)s->queue * dt;
        if (s->keyed && s->busy != 0.0) s->held_area += dt;
        s->t = now;
    }
}

static void reset(Meter *s, double now) {
    touch(s, now);
    s->start = now; s->busy_area = 0.0; s->queue_area = 0.0; s->held_area = 0.0;
    s->max_queue = s->queue; s->arrivals = 0; s->drops = 0;
}

static inline void queued(Meter *m, int64_t len) {
    m->queue = len;
    if (m->queue > m->max_queue) m->max_queue = m->queue;
}

/* A waiter joins behind every one of its rank or a more urgent (lower) one: the order of
 * LockRuntime's heap of (rank, seq); rank 0 for all is first come, first served. */
static int line_put(Line *l, int32_t slot, int32_t rank, double since) {
    if (l->len == l->cap) {  /* grow the ring, unrolling it */
        Py_ssize_t cap = l->cap ? l->cap * 2 : 16;
        Waiter *w = malloc((size_t)cap * sizeof(Waiter));
        if (!w) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < l->len; i++) w[i] = l->w[(l->head + i) % l->cap];
        free(l->w); l->w = w; l->cap = cap; l->head = 0;
    }
    Py_ssize_t i = l->len;
    for (; i > 0 && l->w[(l->head + i - 1) % l->cap].rank > rank; i--)
        l->w[(l->head + i) % l->cap] = l->w[(l->head + i - 1) % l->cap];
    l->w[(l->head + i) % l->cap] = (Waiter){slot, rank, since};
    l->len++;
    return 0;
}

static Waiter line_take(Line *l) {
    Waiter w = l->w[l->head];
    l->head = (l->head + 1) % l->cap;
    l->len--;
    return w;
}

static int start_request(K *k, int32_t w, int32_t entry, int32_t cls, int32_t client, int64_t item, int64_t parent,
                         int warm, double start, int32_t queue);
static int advance(K *k, int32_t slot);

/* A closed client's request ended: think, then cycle again (workloads._client.after). */
static int client_after(K *k, int32_t c) {
    Client *cl = &k->cl[c];
    double pause;
    if (draw(k, cl->stream, &pause)) return -1;
    if (k->wl[cl->wl].protocol_warm >= 0) return push(k, k->now + pause, EV_CYCLE, c, 0);  /* Protocol.after */
    if (pause == 0.0 && k->now == cl->since) {
        if (++cl->idle > ZERO_TIME_CYCLES) { k->error = 1; k->err_wl = cl->wl; return -1; }
    } else {
        cl->idle = 0; cl->since = k->now;
    }
    return push(k, k->now + pause, EV_CYCLE, c, 0);
}

/* FifoCpu.enter: 1 when the job waits (its completion is scheduled later), 0 when it runs. */
static int fifo_enter(K *k, int32_t si, double demand, int32_t slot) {
    Station *s = &k->st[si];
    Meter *m = &k->mt[s->m];
    double now = k->now;
    m->arrivals += 1;
    touch(m, now);
    double service = demand / s->speed;
    k->req[slot].svc = service;
    if (s->free_ != 0.0) {
        s->free_ -= 1;
        m->busy += 1;
        return push(k, now + service, EV_FINISH, si, slot);
    }
    if (s->qlen == s->qcap) {  /* grow the ring, unrolling it */
        Py_ssize_t cap = s->qcap ? s->qcap * 2 : 16;
        Job *q = malloc((size_t)cap * sizeof(Job));
        if (!q) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < s->qlen; i++) q[i] = s->q[(s->qhead + i) % s->qcap];
        free(s->q); s->q = q; s->qcap = cap; s->qhead = 0;
    }
    s->q[(s->qhead + s->qlen) % s->qcap] = (Job){slot, now, service};
    s->qlen++;
    queued(m, s->qlen);
    return 0;
}

/* -- processor sharing (sharing.SharedRate) ------------------------------------------------ */
static inline int tag_less(const Tag *x, const Tag *y) {
    return x->tag < y->tag || (x->tag == y->tag && x->seq < y->seq);
}

static inline double ps_rate(const Shared *p, Py_ssize_t n) {  /* _per_job_rate */
    if (!n) return 0.0;
    if (p->sw) {  /* Swarm._share */
        const Swarm *w = p->sw;
        double total = w->seed_rate + w->upload * (w->eff * (double)n + w->lingering);
        double each = total / (double)n;
        return w->download < each ? w->download : each;
    }
    double share = p->servers / (double)n;
    double v = p->rate * (share < 1.0 ? share : 1.0);
    return p->cap < v ? p->cap : v;
}

static inline void ps_advance(Shared *p, double now) {
    if (p->hn) p->virt += (now - p->last) * ps_rate(p, p->hn);
    p->last = now;
}

static void ps_account(K *k, Shared *p) {
    Meter *m = &k->mt[p->m];
    double n = (double)p->hn;
    m->busy = n < p->servers ? n : p->servers;
    if (isfinite(p->servers)) queued(m, n - p->servers > 0 ? (int64_t)(n - p->servers) : 0);
    else m->queue = 0;
}

static int ps_schedule(K *k, int32_t pi, double now) {
    Shared *p = &k->ps[pi];
    p->token += 1;
    if (!p->hn) return 0;
    double rate = ps_rate(p, p->hn);
    if (rate <= 0.0) return 0;
    double delay = (p->h[0].tag - p->virt) / rate;
    if (!(delay > 0.0)) delay = 0.0;  /* max(0.0, x) */
    double floor_ = fabs(now) > 1.0 ? fabs(now) : 1.0;
    floor_ *= 1e-12;
    if (floor_ > delay) delay = floor_;
    return push(k, now + delay, EV_PS, pi, p->token);
}

/* a heap of tags, least (tag, seq) first: a PS rate's finish tags, a priority CPU's ready threads */
static int tag_push(Tag **h, Py_ssize_t *n, Py_ssize_t *cap, Tag t) {
    if (*n == *cap && grow((void **)h, cap, *n + 1, sizeof(Tag))) return -1;
    Py_ssize_t i = (*n)++;
    while (i > 0) {
        Py_ssize_t up = (i - 1) >> 1;
        if (!tag_less(&t, &(*h)[up])) break;
        (*h)[i] = (*h)[up];
        i = up;
    }
    (*h)[i] = t;
    return 0;
}

static Tag tag_pop(Tag *h, Py_ssize_t *len) {
    Tag top = h[0];
    Tag last = h[--*len];
    Py_ssize_t i = 0, n = *len;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && tag_less(&h[c + 1], &h[c])) c++;
        if (!tag_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

static int ps_submit(K *k, int32_t pi, double work, int32_t slot) {
    Shared *p = &k->ps[pi];
    Meter *m = &k->mt[p->m];
    double now = k->now;
    m->arrivals += 1;
    touch(m, now);
    ps_advance(p, now);
    p->seq += 1;
    if (!p->sw) {  /* a swarm's jobs are its nodes, not fibers */
        k->req[slot].svc = work / p->rate;
        k->req[slot].arr = now;
    }
    if (tag_push(&p->h, &p->hn, &p->hcap, (Tag){p->virt + work, p->seq, slot})) return -1;
    ps_account(k, p);
    return ps_schedule(k, pi, now);
}

/* Swarm._seeding (on_leave): the node holds the file and seeds for its linger */
static int sw_leave(K *k, int32_t pi, int32_t node) {
    Swarm *w = k->ps[pi].sw;
    w->held[node] = 1;
    double stay = INFINITY;
    if (w->linger >= 0) {
        int64_t item = k->item;
        k->item = node;  /* Ctx(None, node) */
        if (draw(k, w->linger, &stay)) return -1;
        k->item = item;
    }
    if (stay <= 0) return 0;
    w->lingering += 1;
    if (isfinite(stay)) return push(k, k->now + stay, EV_SWLEAVE, pi, 0);
    return 0;
}

/* Swarm._join's delivered: every request waiting for the node goes on, in the order they came */
static int sw_delivered_all(K *k, Swarm *w, Py_ssize_t nd) {
    int32_t *gone = malloc((size_t)(nd ? nd : 1) * sizeof(int32_t));
    if (!gone) { PyErr_NoMemory(); return -1; }
    memcpy(gone, k->done, (size_t)nd * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < nd; i++) {
        NodeWait *q = &w->nodes[gone[i]];
        int32_t *ws = q->w;
        Py_ssize_t n = q->n;
        q->w = NULL; q->n = q->cap = 0; q->fetching = 0;
        for (Py_ssize_t j = 0; j < n; j++) if (advance(k, ws[j])) { free(ws); free(gone); return -1; }
        free(ws);
    }
    free(gone);
    return 0;
}

static int ps_submit(K *k, int32_t pi, double work, int32_t slot);

/* SharedRate._finish: everything whose tag is reached leaves, then each goes on in that order. */
static int ps_finish(K *k, int32_t pi, int64_t token) {
    Shared *p = &k->ps[pi];
    if (token != p->token) return 0;
    double now = k->now;
    touch(&k->mt[p->m], now);
    ps_advance(p, now);
    double resolution = (fabs(now) > 1.0 ? fabs(now) : 1.0) * 1e-12;
    Py_ssize_t nd = 0;
    while (p->hn) {
        double rate = ps_rate(p, p->hn);
        if (rate > 0.0 && (p->h[0].tag - p->virt) / rate > resolution) break;
        if (nd == k->dcap && grow((void **)&k->done, &k->dcap, nd + 1, sizeof(int32_t))) return -1;
        k->done[nd++] = tag_pop(p->h, &p->hn).slot;
    }
    if (p->sw) for (Py_ssize_t i = 0; i < nd; i++) if (sw_leave(k, pi, k->done[i])) return -1;
    p = &k->ps[pi];
    ps_account(k, p);
    if (ps_schedule(k, pi, now)) return -1;
    if (p->sw) return sw_delivered_all(k, p->sw, nd);
    if (nd == 1) return advance(k, k->done[0]);
    /* the jobs go on one by one; what they do cannot reach another PS departure (those are events) */
    int32_t *gone = malloc((size_t)(nd ? nd : 1) * sizeof(int32_t));
    if (!gone) { PyErr_NoMemory(); return -1; }
    memcpy(gone, k->done, (size_t)nd * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < nd; i++) if (advance(k, gone[i])) { free(gone); return -1; }
    free(gone);
    return 0;
}

/* -- priority cores (cpu.PriorityCpu) ------------------------------------------------------ */
static inline double top_priority(const Prio *P) { return -P->ready[0].tag; }

/* _run: the thread takes a core (from the spinner, if there is one) until its work is done */
static int prio_start(K *k, int32_t hi, int32_t slot) {
    Prio *P = &k->pr[hi];
    Req *r = &k->req[slot];
    double now = k->now;
    r->jstart = now;
    r->jtoken = ++k->tokens;
    P->run[P->nrun++] = slot;
    P->made[r->jlv] = 1;
    P->lv[r->jlv].busy += 1;
    if (P->spin < 0) {
        k->mt[P->m].busy = (double)P->nrun;
    } else {  /* IdleMeter.core_taken */
        Meter *sp = &k->mt[P->spin];
        double idle = P->idle[--P->nidle];
        sp->busy_area += now - (idle > sp->t ? idle : sp->t);
    }
    return push(k, now + r->jrem, EV_PRIO, slot, r->jtoken);
}

/* _stop: the thread leaves its core; its level is credited with the run (LevelMeter.stopped) */
static void prio_stop(K *k, Prio *P, int32_t slot) {
    Req *r = &k->req[slot];
    double now = k->now;
    Py_ssize_t i = 0;
    while (P->run[i] != slot) i++;
    memmove(&P->run[i], &P->run[i + 1], (size_t)(P->nrun - i - 1) * sizeof(int32_t));
    P->nrun--;
    Meter *lv = &P->lv[r->jlv];
    lv->busy_area += now - (r->jstart > lv->t ? r->jstart : lv->t);
    lv->busy -= 1;
    if (P->spin < 0) k->mt[P->m].busy = (double)P->nrun;
    else P->idle[P->nidle++] = now;
}

static int prio_ready(K *k, Prio *P, int32_t slot) {
    Req *r = &k->req[slot];
    return tag_push(&P->ready, &P->nready, &P->readycap, (Tag){-(double)r->jprio, r->jseq, slot});
}

/* _fill: free cores to the most urgent ready threads, then preempt less urgent running ones (of the
 * least urgent, the one that got its place in line last) */
static int prio_fill(K *k, int32_t hi) {
    Prio *P = &k->pr[hi];
    while (P->nready) {
        if ((double)(P->nrun + (P->heir != 0)) < P->cores) {
            if (prio_start(k, hi, tag_pop(P->ready, &P->nready).slot)) return -1;
            continue;
        }
        if (!P->nrun) break;
        int32_t victim = P->run[0];
        for (Py_ssize_t i = 1; i < P->nrun; i++) {
            Req *a = &k->req[P->run[i]], *b = &k->req[victim];
            if (a->jprio < b->jprio || (a->jprio == b->jprio && a->jseq > b->jseq)) victim = P->run[i];
        }
        Req *v = &k->req[victim];
        if ((double)v->jprio >= top_priority(P)) break;
        v->jrem -= k->now - v->jstart;  /* _preempt: resumes ahead of later arrivals of its priority */
        v->jtoken = ++k->tokens;
        prio_stop(k, P, victim);
        if (prio_ready(k, P, victim)) return -1;
        queued(&k->mt[P->m], P->nready);
        if (prio_start(k, hi, tag_pop(P->ready, &P->nready).slot)) return -1;
    }
    queued(&k->mt[P->m], P->nready);
    return 0;
}

/* _submit: a thread that goes straight on from its finished step keeps its core and its place in line */
static int prio_submit(K *k, int32_t hi, int32_t priority, double demand, int32_t slot) {
    Prio *P = &k->pr[hi];
    Meter *m = &k->mt[P->m];
    Req *r = &k->req[slot];
    m->arrivals += 1;
    touch(m, k->now);
    r->jhost = hi; r->jprio = priority; r->jlv = 0;
    while (P->lvp[r->jlv] != priority) r->jlv++;  /* the compiled code lists every priority run here */
    r->arr = k->now;
    r->svc = r->jrem = demand / P->speed;
    if (P->heir && r->owner == P->heir) {
        P->heir = 0;
        r->jseq = P->heir_seq;
        if (!P->nready || top_priority(P) <= priority) return prio_start(k, hi, slot);
    } else {
        r->jseq = ++P->seq;
        if ((double)(P->nrun + (P->heir != 0)) < P->cores && (!P->nready || top_priority(P) < priority))
            return prio_start(k, hi, slot);
    }
    if (prio_ready(k, P, slot)) return -1;
    return prio_fill(k, hi);
}

/* _finish: a stale completion (the job was preempted since) does nothing */
static int prio_finish(K *k, int32_t slot, int64_t token) {
    Req *r = &k->req[slot];
    if (r->jtoken != token) return 0;
    int32_t hi = r->jhost;
    Prio *P = &k->pr[hi];
    touch(&k->mt[P->m], k->now);
    prio_stop(k, P, slot);
    int keep = !P->nready || top_priority(P) <= r->jprio;
    if (keep) { P->heir = r->owner; P->heir_seq = r->jseq; }
    int rc = advance(k, slot);
    if (keep) P->heir = 0;
    if (rc) return -1;
    return P->nready ? prio_fill(k, hi) : 0;
}

/* a CPU job of a thread of ``priority`` on host ``host`` of ``type`` */
static int cpu_submit(K *k, int32_t type, int32_t host, int32_t priority, double demand, int32_t slot) {
    if (type == CPU_FIFO) return fifo_enter(k, host, demand, slot);
    if (type == CPU_PS) return ps_submit(k, host, demand, slot);
    return prio_submit(k, host, priority, demand, slot);
}

/* -- thread pools (slots.Slots) and locks (locks.LockRuntime) ------------------------------ */
static void waiting(K *k, int32_t slot, int32_t pc) {  /* HoldRunner.enter lists it in r.waits */
    Req *r = &k->req[slot];
    r->wait_seq = ++k->wait_seq; r->wait_pc = pc; r->wait_since = k->now;
}

/* Request.fail: the first reason stays */
static void fail(K *k, int32_t slot, int32_t reason) {
    Req *root = &k->req[k->req[slot].root];
    if (!root->reason) root->reason = reason;
}

/* Slots.acquire: 1 granted at once (the body goes on), 0 queued, 2 turned away (the line is full), -1 error */
static int pool_acquire(K *k, int32_t pi, int32_t slot, int32_t pc) {  /* pc < 0: not a hold (no r.waits) */
    Pool *p = &k->pl[pi];
    Meter *m = &k->mt[p->m];
    double now = k->now;
    m->arrivals += 1;
    if ((double)p->busy < p->size && !p->line.len) {
        touch(m, now);
        p->busy += 1;
        m->busy = (double)p->busy;
        return 1;
    }
    if ((double)p->line.len >= p->capacity) {
        m->drops += 1;
        return 2;
    }
    touch(m, now);
    if (line_put(&p->line, slot, 0, now)) return -1;
    queued(m, p->line.len);
    if (pc >= 0) waiting(k, slot, pc);
    return 0;
}

static int pool_release(K *k, int32_t pi) {
    Pool *p = &k->pl[pi];
    Meter *m = &k->mt[p->m];
    touch(m, k->now);
    if (!p->line.len) {
        p->busy -= 1;
        m->busy = (double)p->busy;
        return 0;
    }
    p->pending += 1;
    if (p->handing) { p->again = 1; return 0; }
    p->handing = 1;
    p->again = 1;
    while (p->again) {  /* WaitingLine.hand_over, one pass of Slots._serve each */
        p->again = 0;
        while (p->pending && p->line.len) {
            p->pending -= 1;
            Waiter w = line_take(&p->line);
            touch(m, k->now);
            m->queue = p->line.len;
            k->req[w.slot].wait_seq = 0;
            k->req[w.slot].gwait = k->now - w.since;
            if (advance(k, w.slot)) return -1;
            p = &k->pl[pi];
        }
        if (p->pending) {
            touch(m, k->now);
            p->busy -= p->pending;
            m->busy = (double)p->busy;
            p->pending = 0;
        }
    }
    p->handing = 0;
    return 0;
}

/* the key's state, made on first use: a request's item, or a fixed key (never equal to an item) */
static KeyState *lock_key(Lock *l, int64_t key, int fixed) {
    if (2 * (l->nkeys + 1) > l->kcap) {
        Py_ssize_t cap = l->kcap ? l->kcap * 2 : 16;
        KeyState *t = calloc((size_t)cap, sizeof(KeyState));
        if (!t) { PyErr_NoMemory(); return NULL; }
        for (Py_ssize_t i = 0; i < l->kcap; i++) {
            if (!l->keys[i].used) continue;
            Py_ssize_t j = (Py_ssize_t)(((uint64_t)l->keys[i].key * 2 + (uint64_t)l->keys[i].fixed) * 0x9E3779B97F4A7C15ULL % (uint64_t)cap);
            while (t[j].used) j = (j + 1) % cap;
            t[j] = l->keys[i];
        }
        free(l->keys); l->keys = t; l->kcap = cap;
    }
    Py_ssize_t j = (Py_ssize_t)(((uint64_t)key * 2 + (uint64_t)fixed) * 0x9E3779B97F4A7C15ULL % (uint64_t)l->kcap);
    while (l->keys[j].used && (l->keys[j].key != key || l->keys[j].fixed != fixed)) j = (j + 1) % l->kcap;
    if (!l->keys[j].used) { l->keys[j].used = 1; l->keys[j].key = key; l->keys[j].fixed = fixed; l->nkeys++; }
    return &l->keys[j];
}

static int lock_acquire(K *k, int32_t li, int64_t key, int fixed, int32_t rank, int32_t slot, int32_t pc) {
    Lock *l = &k->lk[li];
    KeyState *s = lock_key(l, key, fixed);
    if (!s) return -1;
    Meter *m = &k->mt[l->m];
    double now = k->now;
    m->arrivals += 1;
    touch(m, now);
    if (!s->line.len && !s->writer) {
        m->busy += 1;
        s->writer = 1;
        return 1;
    }
    if (line_put(&s->line, slot, rank, now)) return -1;
    m->queue += 1;
    if (m->queue > m->max_queue) m->max_queue = m->queue;
    waiting(k, slot, pc);
    return 0;
}

static int lock_release(K *k, int32_t li, int64_t key, int fixed) {
    Lock *l = &k->lk[li];
    KeyState *s = lock_key(l, key, fixed);
    if (!s) return -1;
    Meter *m = &k->mt[l->m];
    touch(m, k->now);
    s->writer = 0;
    m->busy -= 1;
    if (!s->line.len && !s->handing) return 0;
    if (s->handing) { s->again = 1; return 0; }
    s->handing = 1;
    s->again = 1;
    while (s->again) {  /* hand_over, one pass of _KeyState._serve each */
        s->again = 0;
        while (s->line.len && !s->writer) {
            Waiter w = line_take(&s->line);
            touch(m, k->now);
            m->queue -= 1;
            m->busy += 1;
            s->writer = 1;
            k->req[w.slot].wait_seq = 0;
            k->req[w.slot].gwait = k->now - w.since;
            if (advance(k, w.slot)) return -1;
            s = lock_key(&k->lk[li], key, fixed);  /* the table may have grown meanwhile */
            if (!s) return -1;
        }
    }
    s->handing = 0;
    return 0;
}

/* one memory step, or the end of a request that took memory (Request.finish: MemoryState.end) */
static int mem_log(K *k, int32_t op, const Req *r, int32_t pick, double value) {
    if (k->mn == k->mcap) {
        Py_ssize_t cap = k->mcap ? k->mcap * 2 : 4096;
        if (resize((void **)&k->m_op, cap, sizeof(int32_t)) || resize((void **)&k->m_cls, cap, sizeof(int32_t)) ||
            resize((void **)&k->m_pick, cap, sizeof(int32_t)) || resize((void **)&k->m_id, cap, sizeof(int64_t)) ||
            resize((void **)&k->m_item, cap, sizeof(int64_t)) || resize((void **)&k->m_t, cap, sizeof(double)) ||
            resize((void **)&k->m_val, cap, sizeof(double))) return -1;
        k->mcap = cap;
    }
    Py_ssize_t i = k->mn++;
    k->m_op[i] = op; k->m_t[i] = k->now; k->m_id[i] = r->id; k->m_cls[i] = r->cls; k->m_item[i] = r->item;
    k->m_pick[i] = pick; k->m_val[i] = value;
    return 0;
}

/* Cache.fetch's fill: the file is held; every waiter (the fetching request first) serves it locally */
static int cache_fill(K *k, int32_t slot, int32_t store, int32_t file, int32_t local) {
    CFile *f = &k->cf[(Py_ssize_t)store * k->nfiles + file];
    int32_t *w = f->w;
    Py_ssize_t n = f->n;
    f->state = 2; f->w = NULL; f->n = f->cap = 0;
    k->req[slot].pc = local;
    for (Py_ssize_t i = 0; i < n; i++) if (advance(k, w[i])) { free(w); return -1; }
    free(w);
    return 0;
}

/* _Brood.fork: the child's process shares the parent's pages (logged before it starts, as it gets
 * the next id), then the child starts with the parent's workload, item and warm-up */
static int fork_one(K *k, int32_t slot, int32_t entry, int32_t cls, int32_t pick, int32_t b) {
    Req *p = &k->req[slot];
    if (b >= 0) k->br[b].running += 1;
    if (mem_log(k, MEM_FORK, p, pick, (double)(k->next_id + 1))) return -1;
    p = &k->req[slot];
    k->next_brood = b;
    return start_request(k, p->wl, entry, cls, -1, p->item, p->id, p->warm, k->now, -1);
}

/* _Brood.ended: a replacement while respawns are left and the parent has not failed; the parent
 * goes on once the last child has ended */
static int brood_ended(K *k, int32_t b) {
    Brood *B = &k->br[b];
    B->running -= 1;
    if (B->respawn > 0 && !k->req[k->req[B->parent].root].reason) {
        B->respawn -= 1;
        return fork_one(k, B->parent, B->entry, B->cls, B->pick, b);
    }
    if (B->running == 0) {
        if (B->forking) {  /* the last child ended before its parent forked them all: not run here */
            k->error = 3;
            PyErr_SetString(PyExc_RuntimeError, "outside");
            return -1;
        }
        B->used = 0;
        return advance(k, B->parent);
    }
    return 0;
}

static int record(K *k, Req *r) {
    if (k->on == k->ocap) {
        Py_ssize_t cap = k->ocap ? k->ocap * 2 : 4096;
        if (resize((void **)&k->o_id, cap, sizeof(int64_t)) ||
            resize((void **)&k->o_item, cap, sizeof(int64_t)) ||
            resize((void **)&k->o_parent, cap, sizeof(int64_t)) ||
            resize((void **)&k->o_cls, cap, sizeof(int32_t)) ||
            resize((void **)&k->o_wl, cap, sizeof(int32_t)) ||
            resize((void **)&k->o_start, cap, sizeof(double)) ||
            resize((void **)&k->o_warm, cap, 1) ||
            resize((void **)&k->o_reason, cap, sizeof(int32_t)) ||
            resize((void **)&k->o_end, cap, sizeof(double))) return -1;
        k->ocap = cap;
    }
    Py_ssize_t o = k->on++;
    k->o_id[o] = r->id; k->o_item[o] = r->item; k->o_parent[o] = r->parent; k->o_cls[o] = r->cls;
    k->o_wl[o] = r->wl; k->o_start[o] = r->start; k->o_end[o] = k->now; k->o_warm[o] = (char)r->warm;
    k->o_reason[o] = r->reason;
    return 0;
}

/* RecordedCpuRunner, RecordedCallRunner, RecordedHoldPass, SpanRunner: one row of the step table */
static int step_row(K *k, Req *r, int32_t kind, int32_t lvl, int32_t name, int32_t comp) {
    if (k->sn == k->scap) {
        Py_ssize_t cap = k->scap ? k->scap * 2 : 4096;
        if (resize((void **)&k->s_id, cap, sizeof(int64_t)) ||
            resize((void **)&k->s_cls, cap, sizeof(int32_t)) ||
            resize((void **)&k->s_name, cap, sizeof(int32_t)) ||
            resize((void **)&k->s_comp, cap, sizeof(int32_t)) ||
            resize((void **)&k->s_start, cap, sizeof(double)) ||
            resize((void **)&k->s_wait, cap, sizeof(double)) ||
            resize((void **)&k->s_svc, cap, sizeof(double)) ||
            resize((void **)&k->s_end, cap, sizeof(double))) return -1;
        k->scap = cap;
    }
    double now = k->now, start = r->mk[2 * lvl], wait, service;
    switch (kind) {
    case ROW_JOB: wait = now - start - r->svc; wait = wait > 0.0 ? wait : 0.0; service = r->svc; break;
    case ROW_DELAY: wait = 0.0; service = r->svc; break;
    case ROW_HOLD: wait = r->mk[2 * lvl + 1]; service = now - start - wait; break;
    case ROW_SPAN: wait = 0.0; service = now - start; break;
    case ROW_LINK:  /* LinkKind.bind_call: the bytes' wait at the shared bandwidth, if any */
        if (r->scratch != 0.0) {
            wait = now - r->arr - r->svc; wait = wait > 0.0 ? wait : 0.0;
            service = now - start - wait; service = service > 0.0 ? service : 0.0;
        } else {
            wait = 0.0; service = now - start;
        }
        break;
    default: wait = r->mk[2 * lvl + 1]; service = now - r->mk[2 * lvl + 2]; break;  /* from the grant */
    }
    Py_ssize_t o = k->sn++;
    k->s_id[o] = r->id; k->s_cls[o] = r->cls; k->s_name[o] = name; k->s_comp[o] = comp;
    k->s_start[o] = start; k->s_wait[o] = wait; k->s_svc[o] = service; k->s_end[o] = now;
    return 0;
}

static int ring_put(Item **buf, Py_ssize_t *head, Py_ssize_t *len, Py_ssize_t *cap, Item it) {
    if (*len == *cap) {  /* grow the ring, unrolling it */
        Py_ssize_t c = *cap ? *cap * 2 : 16;
        Item *w = malloc((size_t)c * sizeof(Item));
        if (!w) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < *len; i++) w[i] = (*buf)[(*head + i) % *cap];
        free(*buf); *buf = w; *cap = c; *head = 0;
    }
    (*buf)[(*head + *len) % *cap] = it;
    (*len)++;
    return 0;
}

static Item ring_take(Item *buf, Py_ssize_t *head, Py_ssize_t *len, Py_ssize_t cap) {
    Item it = buf[*head];
    *head = (*head + 1) % cap;
    (*len)--;
    return it;
}

static int new_fiber(K *k, int32_t *slot) {
    if (k->nfree == 0) {
        Py_ssize_t old = k->rcap, cap = old ? old * 2 : 64;
        Req *rq = realloc(k->req, (size_t)cap * sizeof(Req));
        if (!rq) { PyErr_NoMemory(); return -1; }
        k->req = rq;
        memset(rq + old, 0, (size_t)(cap - old) * sizeof(Req));  /* not live: the end's scan skips them */
        int32_t *fl = realloc(k->freelist, (size_t)cap * sizeof(int32_t));
        if (!fl) { PyErr_NoMemory(); return -1; }
        k->freelist = fl; k->rcap = cap;
        for (Py_ssize_t i = cap - 1; i >= old; i--) k->freelist[k->nfree++] = (int32_t)i;
    }
    *slot = k->freelist[--k->nfree];
    memset(&k->req[*slot], 0, sizeof(Req));
    k->req[*slot].live = 1;
    return 0;
}

/* _FanOut.launch: start branches while the limit allows; 1 when every branch has ended (the
 * parent goes on: the caller continues it), 0 when some still run, -1 error. */
static int fan_launch(K *k, int32_t f) {
    Fan *F = &k->fan[f];
    if (F->launching) return 0;
    F->launching = 1;
    while (F->next < F->count && F->running < F->limit) {
        double item = F->next;
        F->next += 1;
        F->running += 1;
        int32_t b;
        if (new_fiber(k, &b)) return -1;
        Req *parent = &k->req[k->fan[f].parent], *r = &k->req[b];
        r->id = parent->id; r->wl = parent->wl; r->cls = parent->cls; r->client = -1; r->parent = parent->parent;
        r->warm = parent->warm; r->start = parent->start; r->ritem = parent->ritem;
        r->item = (int64_t)item; r->pc = k->fan[f].body; r->fan = f; r->queue = -1; r->root = parent->root;
        r->owner = ++k->owners;
        if (advance(k, b)) return -1;
        F = &k->fan[f];
    }
    F->launching = 0;
    if (F->left == 0) {
        F->left = -1;
        F->used = 0;
        return 1;
    }
    return 0;
}

/* _FanOut.branch_done: a branch ended; the parent goes on once all have */
static int fan_branch_done(K *k, int32_t f) {
    Fan *F = &k->fan[f];
    F->running -= 1;
    F->left -= 1;
    if (F->launching) return 0;
    int32_t parent = F->parent;
    if (F->left == 0) {
        F->left = -1;
        F->used = 0;
        return advance(k, parent);
    }
    int done = fan_launch(k, f);
    if (done < 0) return -1;
    return done ? advance(k, parent) : 0;
}

/* QueueKind.bind's dispatch: the handler's request, a child of the sender's, started at ``since`` */
static int q_dispatch(K *k, int32_t qi, Item it) {
    Queue *q = &k->qu[qi];
    return start_request(k, q->wl, q->entry, q->cls, -1, it.item, it.parent, 0, it.since, qi);
}

/* QueueRuntime._finished and its hand-over: each finished consumer takes the next item */
static int q_finished(K *k, int32_t qi) {
    Queue *q = &k->qu[qi];
    Meter *m = &k->mt[q->m];
    touch(m, k->now);
    q->done += 1;
    if (q->handing) { q->again = 1; return 0; }
    q->handing = 1;
    q->again = 1;
    while (q->again) {
        q->again = 0;
        while (q->done) {
            q->done -= 1;
            if (q->ilen) {
                Item it = ring_take(q->items, &q->ihead, &q->ilen, q->icap);
                if (q->blen) {  /* a blocked sender's item moves in; the sender goes on at once */
                    Item b = ring_take(q->blocked, &q->bhead, &q->blen, q->bcap);
                    int32_t sender = b.sender;
                    b.sender = -1;
                    if (ring_put(&q->items, &q->ihead, &q->ilen, &q->icap, b)) return -1;
                    if (advance(k, sender)) return -1;
                    q = &k->qu[qi];
                }
                m->queue = q->ilen;
                if (q_dispatch(k, qi, it)) return -1;
                q = &k->qu[qi];
            } else {
                q->busy -= 1;
                m->busy = (double)q->busy;
            }
        }
    }
    q->handing = 0;
    return 0;
}

/* A node of a recalculation: a fiber at the call site's node block (acquire, calculate, finish) */
static int h_node(K *k, int32_t hc, int32_t node, int32_t block) {
    int32_t slot;
    if (new_fiber(k, &slot)) return -1;
    Req *r = &k->req[slot];
    HCall *H = &k->hc[hc];
    Req *parent = &k->req[H->parent];
    r->id = parent->id; r->wl = parent->wl; r->cls = parent->cls; r->client = -1; r->fan = -1; r->queue = -1;
    r->item = H->item; r->ritem = parent->ritem; r->pc = block; r->hcall = hc; r->node = node; r->root = parent->root;
    r->owner = ++k->owners;
    return advance(k, slot);
}

/* HierarchyRuntime.recalculate's ``finished``: the thread goes back, the children whose parents
 * are all done ask for threads in order, and the call returns once every node is done. */
static int h_finished(K *k, int32_t slot, int32_t hier, int32_t block) {
    Req *r = &k->req[slot];
    int32_t hc = r->hcall, node = r->node;
    r->live = 0;
    k->freelist[k->nfree++] = slot;
    if (pool_release(k, k->hi[hier].pool)) return -1;
    HCall *H = &k->hc[hc];
    H->left -= 1;
    Plan *P = &k->pn[H->plan];
    for (int32_t j = P->start[node]; j < P->start[node + 1]; j++) {
        int32_t child = P->child[j];
        if (--k->hc[hc].missing[child] == 0 && h_node(k, hc, child, block)) return -1;
    }
    H = &k->hc[hc];
    if (H->left == 0) {
        int32_t parent = H->parent;
        free(H->missing);
        H->missing = NULL;
        H->used = 0;
        return advance(k, parent);
    }
    return 0;
}

/* Run request ``slot`` from its pc until it waits for an event or a resource, or ends. */
static int advance(K *k, int32_t slot) {
    for (;;) {
        Req *r = &k->req[slot];
        const int32_t *op = &k->code[r->pc];
        k->item = r->item;
        switch (op[0]) {
        case OP_CALL: {  /* station, stream */
            double service;
            if (draw(k, op[2], &service)) return -1;
            k->req[slot].pc += 3;
            return fifo_enter(k, op[1], service, slot);
        }
        case OP_CPU: {  /* type, host, demand stream, bytes stream or -1, per-byte const, priority */
            double demand, nbytes;
            if (draw(k, op[3], &demand)) return -1;
            if (op[4] >= 0) {
                if (draw(k, op[4], &nbytes)) return -1;
                demand += k->consts[op[5]] * nbytes;
            }
            k->req[slot].pc += 7;
            return cpu_submit(k, op[1], op[2], op[6], demand, slot);
        }
        case OP_FCPU: {  /* type, host, n, priority, n streams: fused steps (runners.FusedCpuRunner) */
            double demand = 0.0, d;
            for (int32_t i = 0; i < op[3]; i++) {
                if (draw(k, op[5 + i], &d)) return -1;
                demand += d;
            }
            k->req[slot].pc += 5 + op[3];
            return cpu_submit(k, op[1], op[2], op[4], demand, slot);
        }
        case OP_LINK: {  /* shared, latency stream, bytes stream or -1: the latency, then XFER */
            double nbytes = 0.0, latency;
            if (op[3] >= 0 && draw(k, op[3], &nbytes)) return -1;
            if (draw(k, op[2], &latency)) return -1;
            r = &k->req[slot];
            r->scratch = nbytes;
            r->pc += 4;
            return push(k, k->now + latency, EV_RESUME, slot, 0);
        }
        case OP_XFER:  /* shared: the bytes at a share of the bandwidth, if any */
            r->pc += 2;
            if (r->scratch != 0.0) return ps_submit(k, op[1], r->scratch, slot);
            continue;
        case OP_DELAY: {
            double d;
            if (draw(k, op[1], &d)) return -1;
            k->req[slot].pc += 2;
            return push(k, k->now + d, EV_RESUME, slot, 0);
        }
        case OP_CHOOSE: {  /* stream, n, bounds offset, n targets: bisect_right(bounds, u) */
            double u;
            if (draw(k, op[1], &u)) return -1;
            int32_t n = op[2], i = 0;
            const double *b = &k->consts[op[3]];
            while (i < n && b[i] <= u) i++;
            k->req[slot].pc = op[4 + i];
            continue;
        }
        case OP_JUMP:
            r->pc = op[1];
            continue;
        case OP_MARK:  /* level: a recorded step starts */
            r->mk[2 * op[1]] = k->now; r->mk[2 * op[1] + 1] = 0.0;
            r->pc += 2;
            continue;
        case OP_GRANT:  /* level: a hold was granted, after its wait */
            r->mk[2 * op[1] + 1] = r->gwait;
            r->pc += 2;
            continue;
        case OP_STEP:  /* kind, level, step name, component name: its row */
            r->pc += 5;
            if (step_row(k, r, op[1], op[2], op[3], op[4])) return -1;
            continue;
        case OP_HOLDP: {  /* pool, where a request turned away goes on (HoldRunner.enter: failed), depth: the
                             body runs as a thread of its own (Ctx.thread), the caller's identity kept at depth */
            int32_t at = r->pc;
            r->gwait = 0.0;
            r->pc += 4;
            int got = pool_acquire(k, op[1], slot, at);
            if (got < 0) return -1;
            r = &k->req[slot];
            if (got == 2) {
                fail(k, slot, k->pl[op[1]].reason);
                r->pc = op[2];
                continue;
            }
            r->owners[op[3]] = r->owner;
            r->owner = ++k->owners;
            if (!got) return 0;
            continue;
        }
        case OP_DEADLINE: {  /* deadline const, step name, reason (< 0: recorded only): runners.DeadlineRunner */
            double after = k->now - r->start, deadline = k->consts[op[1]];
            r->pc += 4;
            if (after > deadline) {
                if (k->nlate == k->latecap && grow((void **)&k->late, &k->latecap, k->nlate + 1, sizeof(Late))) return -1;
                k->late[k->nlate++] = (Late){r->id, r->cls, op[2], deadline, after};
                if (op[3] >= 0) fail(k, slot, op[3]);
            }
            continue;
        }
        case OP_FAILED:  /* runners.Cursor: a failed request's body ends before its next step */
            r->pc = k->req[r->root].reason ? op[1] : r->pc + 2;
            continue;
        case OP_RELP:  /* pool, depth */
            r->pc += 3;
            r->owner = r->owners[op[2]];
            if (pool_release(k, op[1])) return -1;
            continue;
        case OP_HOLDL: {  /* lock, key: -1 the item (Ctx.item), -2 the request's, else a fixed key's number;
                             rank: 0, or minus the threads' priority (order: priority) */
            int32_t at = r->pc;
            int64_t key = op[2] == -1 ? r->item : op[2] == -2 ? r->ritem : (int64_t)op[2];
            r->pc += 4;
            r->gwait = 0.0;
            int got = lock_acquire(k, op[1], key, op[2] >= 0, op[3], slot, at);
            if (got < 0) return -1;
            if (!got) return 0;
            continue;
        }
        case OP_RELL: {
            int64_t key = op[2] == -1 ? r->item : op[2] == -2 ? r->ritem : (int64_t)op[2];
            r->pc += 3;
            if (lock_release(k, op[1], key, op[2] >= 0)) return -1;
            continue;
        }
        case OP_SPAWN: {  /* entry, class: a request of its own, started now (runners.SpawnRunner) */
            r->pc += 3;
            if (start_request(k, r->wl, op[1], op[2], -1, r->item, r->id, r->warm, k->now, -1)) return -1;
            continue;
        }
        case OP_PAR: {  /* count, limit const, body: runners.ParallelRunner */
            r->pc += 4;
            int32_t f = 0;  /* a free fan-out, else a new one */
            while (f < k->nfan && k->fan[f].used) f++;
            if (f == k->nfan) {
                if (grow((void **)&k->fan, &k->fcap, k->nfan + 1, sizeof(Fan))) return -1;
                k->nfan++;
            }
            k->fan[f] = (Fan){(double)op[1], k->consts[op[2]], 0.0, 0.0, (double)op[1], 0, slot, op[3], 1};
            int done = fan_launch(k, f);
            if (done < 0) return -1;
            if (!done) return 0;
            continue;
        }
        case OP_BEND: {  /* a branch's end */
            int32_t f = r->fan;
            r->live = 0;
            k->freelist[k->nfree++] = slot;
            return fan_branch_done(k, f);
        }
        case OP_DBGET: {  /* database: take a connection (Slots.acquire, not a hold) */
            r->pc += 2;
            r->gwait = 0.0;
            int got = pool_acquire(k, k->db[op[1]].pool, slot, -1);
            if (got < 0) return -1;
            if (!got) return 0;
            continue;
        }
        case OP_DBQ: {  /* database, latency stream, bytes stream or -1: granted: the latency */
            Db *d = &k->db[op[1]];
            double nbytes = 0.0, latency;
            if (op[3] >= 0 && draw(k, op[3], &nbytes)) return -1;
            if (draw(k, op[2], &latency)) return -1;
            double slowdown = d->growth ? 1.0 + d->factor * d->stored / d->per : 1.0;
            r = &k->req[slot];
            r->scratch = nbytes;
            r->pc += 4;
            return push(k, k->now + latency * slowdown, EV_RESUME, slot, 0);
        }
        case OP_DBX: {  /* database: the bytes through its link, if any */
            int32_t link = k->db[op[1]].link;
            r->pc += 2;
            if (r->scratch != 0.0 && link >= 0) return ps_submit(k, link, r->scratch, slot);
            continue;
        }
        case OP_DBEND: {  /* database, write: the stored volume grows; the connection goes back */
            Db *d = &k->db[op[1]];
            if (op[2]) d->stored += r->scratch;
            r->pc += 3;
            if (pool_release(k, d->pool)) return -1;
            continue;
        }
        case OP_HCALL: {  /* hierarchy, plan, node block: a recalculation, the caller waits for it */
            Plan *P = &k->pn[op[2]];
            int32_t hc = 0;
            while (hc < k->nhc && k->hc[hc].used) hc++;
            if (hc == k->nhc) {
                if (grow((void **)&k->hc, &k->hccap, k->nhc + 1, sizeof(HCall))) return -1;
                k->nhc++;
            }
            int32_t *missing = malloc((size_t)P->n * sizeof(int32_t));
            if (!missing) { PyErr_NoMemory(); return -1; }
            memcpy(missing, P->parents, (size_t)P->n * sizeof(int32_t));
            k->hc[hc] = (HCall){slot, op[2], 1, P->n, r->item, missing};
            r->pc += 4;
            return h_node(k, hc, 0, op[3]);
        }
        case OP_HACQ: {  /* hierarchy: a thread for the node (Slots.acquire, not a hold) */
            r->pc += 2;
            r->gwait = 0.0;
            int got = pool_acquire(k, k->hi[op[1]].pool, slot, -1);
            if (got < 0) return -1;
            if (!got) return 0;
            continue;
        }
        case OP_HRUN: {  /* hierarchy, cost stream: the node's calculation */
            Hier *h = &k->hi[op[1]];
            double demand;
            if (r->node == 0) k->req[k->hc[r->hcall].parent].gwait = r->gwait;  /* the call's wait (recorded) */
            if (draw(k, op[2], &demand)) return -1;
            k->req[slot].pc += 3;
            if (h->cpu_type >= 0) return cpu_submit(k, h->cpu_type, h->cpu, 0, demand, slot);  /* fifo or ps */
            return push(k, k->now + demand, EV_RESUME, slot, 0);
        }
        case OP_HFIN:  /* hierarchy, the node block's start */
            return h_finished(k, slot, op[1], op[2]);
        case OP_QPUT: {  /* queue: QueueRuntime.put */
            Queue *q = &k->qu[op[1]];
            Meter *m = &k->mt[q->m];
            double now = k->now;
            Item it = {r->item, r->id, now, -1};
            r->pc += 2;
            m->arrivals += 1;
            touch(m, now);
            if ((double)q->busy < q->consumers) {
                q->busy += 1;
                m->busy = (double)q->busy;
                if (q_dispatch(k, op[1], it)) return -1;
            } else if ((double)q->ilen < q->capacity) {
                if (ring_put(&q->items, &q->ihead, &q->ilen, &q->icap, it)) return -1;
                queued(m, q->ilen);
            } else if (q->drop) {  /* Replication.refuse: a failed request of the handler class */
                m->drops += 1;
                Req gone = {0};
                gone.id = ++k->next_id; gone.parent = it.parent; gone.item = it.item; gone.cls = q->cls;
                gone.wl = q->wl; gone.start = now;
                k->started++;
                if (record(k, &gone)) return -1;
                k->o_reason[k->on - 1] = q->reason;
            } else {
                it.sender = slot;
                return ring_put(&q->blocked, &q->bhead, &q->blen, &q->bcap, it);
            }
            continue;
        }
        case OP_READ: {  /* bytes stream or -1, lookups (a count, or -1: drawn), lookup stream, path entries, files,
                            n, n store blocks: FileRunner.run (the block of store item mod n) */
            double nbytes = 0.0, u;
            int64_t look = op[2];
            if (op[1] >= 0 && draw(k, op[1], &nbytes)) return -1;
            if (look < 0) {  /* fileserver.lookup_counter: min(entries, int(u * entries) + 1) per file */
                look = 0;
                for (int32_t i = 0; i < op[5]; i++) {
                    if (draw(k, op[3], &u)) return -1;
                    int64_t at = (int64_t)(u * (double)op[4]) + 1;
                    look += at < op[4] ? at : op[4];
                }
            }
            r = &k->req[slot];
            r->fbytes = nbytes; r->flook = look; r->fret = r->pc + 7 + op[6];
            int64_t i = r->item % op[6];
            r->pc = op[7 + (i < 0 ? i + op[6] : i)];
            continue;
        }
        case OP_SGET: {  /* store: a thread (Store.serve: Slots.acquire) */
            r->pc += 2;
            int got = pool_acquire(k, k->so[op[1]].pool, slot, -1);
            if (got < 0) return -1;
            if (!got) return 0;
            continue;
        }
        case OP_SLAT: {  /* store: granted: the latency, then the lookups (no event when it all takes no time) */
            Store *so = &k->so[op[1]];
            double delay, d;
            if (draw(k, so->lat, &delay)) return -1;
            if (!isnan(so->each)) delay += (double)k->req[slot].flook * so->each;
            else for (int64_t i = 0; i < k->req[slot].flook; i++) {
                if (draw(k, so->look, &d)) return -1;
                delay += d;
            }
            r = &k->req[slot];
            r->pc += 2;
            if (delay != 0.0) return push(k, k->now + delay, EV_RESUME, slot, 0);
            continue;
        }
        case OP_SXFER: {  /* store: the bytes through its shared bandwidth, if any */
            int32_t link = k->so[op[1]].link;
            r->pc += 2;
            if (r->fbytes != 0.0 && link >= 0) return ps_submit(k, link, r->fbytes, slot);
            continue;
        }
        case OP_SREL:  /* store: the thread goes back (its longest waiter served first) */
            r->pc += 2;
            if (pool_release(k, k->so[op[1]].pool)) return -1;
            continue;
        case OP_FRET:  /* the file operation is done: the step after it */
            r->pc = r->fret;
            continue;
        case OP_CGET: {  /* cache, file, local block: held, served here; being fetched, wait; else fetch it */
            CFile *f = &k->cf[(Py_ssize_t)op[1] * k->nfiles + op[2]];
            if (f->state == 2) { r->pc = op[3]; continue; }
            if (f->n == f->cap && grow((void **)&f->w, &f->cap, f->n + 1, sizeof(int32_t))) return -1;
            f->w[f->n++] = slot;
            if (f->state == 1) { r->pc = op[3]; return 0; }
            f->state = 1;
            r->pc += 4;
            continue;
        }
        case OP_CFILL:  /* cache, file, local block: fetched */
            return cache_fill(k, slot, op[1], op[2], op[3]);
        case OP_ALLOC: case OP_RESTORE: {  /* step, size stream: AllocRunner, RestoreRunner's mapping once read
                                              (the size rounded and booked by the replay) */
            double nbytes;
            int32_t what = op[0] == OP_ALLOC ? MEM_ALLOC : MEM_RESTORE;
            if (draw(k, op[2], &nbytes)) return -1;
            r = &k->req[slot];
            r->pc += 3;
            k->req[r->root].mem = 1;
            if (mem_log(k, what, r, op[1], nbytes)) return -1;
            continue;
        }
        case OP_WMEM:  /* step, fraction const: WriteRunner's piece */
            r->pc += 3;
            k->req[r->root].mem = 1;
            if (mem_log(k, MEM_WRITE, r, op[1], k->consts[op[2]])) return -1;
            continue;
        case OP_FORK: {  /* entry, class, count, respawn const, wait, step: ForkRunner */
            int32_t b = -1;
            r->pc += 7;
            if (op[5]) {  /* a brood the children's ends report to */
                b = 0;
                while (b < k->nbr && k->br[b].used) b++;
                if (b == k->nbr) {
                    if (grow((void **)&k->br, &k->brcap, k->nbr + 1, sizeof(Brood))) return -1;
                    k->nbr++;
                }
                k->br[b] = (Brood){slot, op[1], op[2], op[6], 0, k->consts[op[4]], 1, 1};
            }
            for (int32_t i = 0; i < op[3]; i++) if (fork_one(k, slot, op[1], op[2], op[6], b)) return -1;
            if (!op[5]) continue;
            k->br[b].forking = 0;
            return 0;
        }
        case OP_CSTORED: {  /* cache, file: Cache.fetch's write stored: the file is held (readers waiting for
                               it would be served now, before the fetch they wait for ends: not run here) */
            CFile *f = &k->cf[(Py_ssize_t)op[1] * k->nfiles + op[2]];
            if (f->state == 1) { k->error = 2; PyErr_SetString(PyExc_RuntimeError, "outside"); return -1; }
            f->state = 2;
            r->pc += 3;
            continue;
        }
        case OP_SWGET: {  /* swarm, where the request goes on once its node has the file: Swarm.fetch */
            Swarm *w = k->ps[op[1]].sw;
            int64_t node = r->item % w->peers;
            if (node < 0) node += w->peers;
            NodeWait *q = &w->nodes[node];
            if (w->held[node]) { r->pc = op[2]; continue; }
            if (q->n == q->cap && grow((void **)&q->w, &q->cap, q->n + 1, sizeof(int32_t))) return -1;
            q->w[q->n++] = slot;
            r->pc = op[2];
            if (q->fetching) return 0;
            q->fetching = 1;
            if (w->backed) {  /* the seeds do not have the file yet: wait; the first fetches it for them */
                if (w->np == w->npcap) {
                    Py_ssize_t cap = w->npcap ? w->npcap * 2 : 64;
                    if (resize((void **)&w->pnode, cap, sizeof(int64_t)) || resize((void **)&w->pbytes, cap, sizeof(double)))
                        return -1;
                    w->npcap = cap;
                }
                w->pnode[w->np] = node; w->pbytes[w->np] = r->fbytes; w->np++;
                if (w->np == 1 && !w->seeding) {
                    w->seeding = 1;
                    r->pc = (int32_t)(op - k->code) + 3;  /* the backing fetch, inline */
                    continue;
                }
                return 0;
            }
            return ps_submit(k, op[1], r->fbytes, (int32_t)node);
        }
        case OP_SWSEEDED: {  /* swarm, where the request goes on: Swarm._seeded, every pending node joins */
            Swarm *w = k->ps[op[1]].sw;
            r->pc = op[2];
            w->backed = 0;
            Py_ssize_t n = w->np;
            int64_t *nodes = w->pnode; double *bytes = w->pbytes;
            w->pnode = NULL; w->pbytes = NULL; w->np = w->npcap = 0;
            for (Py_ssize_t i = 0; i < n; i++)
                if (ps_submit(k, op[1], bytes[i], (int32_t)nodes[i])) { free(nodes); free(bytes); return -1; }
            free(nodes); free(bytes);
            return 0;
        }
        case OP_BYITEM: {  /* n, n blocks: runners.ByItemRunner, the replica item mod n */
            int64_t i = r->item % op[1];
            r->pc = op[2 + (i < 0 ? i + op[1] : i)];
            continue;
        }
        case OP_END: {
            if (record(k, r)) return -1;
            r = &k->req[slot];
            if ((r->mem || k->memall) && mem_log(k, MEM_END, r, -1, 0.0)) return -1;
            k->in_system--;
            int32_t client = r->client, queue = r->queue, brood = r->brood;
            r->live = 0;
            k->freelist[k->nfree++] = slot;
            if (brood >= 0) return brood_ended(k, brood);  /* Request.finish: on_end, the fork's */
            if (client >= 0) return client_after(k, client);
            if (queue >= 0) return q_finished(k, queue);
            return 0;
        }
        default:
            PyErr_SetString(PyExc_ValueError, "bad native opcode");
            return -1;
        }
    }
}

static int start_request(K *k, int32_t w, int32_t entry, int32_t cls, int32_t client, int64_t item, int64_t parent,
                         int warm, double start, int32_t queue) {
    int32_t slot;
    if (new_fiber(k, &slot)) return -1;
    Req *r = &k->req[slot];
    r->id = ++k->next_id; r->pc = entry; r->wl = w; r->cls = cls; r->client = client; r->fan = -1;
    r->item = r->ritem = item; r->parent = parent; r->start = start; r->warm = warm; r->queue = queue;
    r->root = slot; r->owner = ++k->owners; r->brood = k->next_brood;
    k->next_brood = -1;
    k->in_system++; k->started++;
    return advance(k, slot);
}

static int step(K *k, Event e) {
    switch (e.type) {
    case EV_ARRIVE: {  /* workloads.start_arrivals.arrive */
        Workload *wl = &k->wl[e.a];
        if (wl->n >= wl->count) return 0;
        wl->n += 1;
        if (start_request(k, e.a, wl->entry, wl->cls, -1, wl->item, -1, 0, k->now, -1)) return -1;
        double after;
        if (draw(k, k->wl[e.a].stream, &after)) return -1;
        if (after < INFINITY) return push(k, k->now + after, EV_ARRIVE, e.a, 0);
        return 0;
    }
    case EV_TICK: {  /* workloads.Periodic.start's tick: the copies (items 0..), at once or after their jitter */
        Workload *wl = &k->wl[e.a];
        if (wl->n >= wl->count) return 0;
        wl->n += 1;
        double next, delay;
        if (draw(k, wl->stream, &next)) return -1;
        for (int64_t c = 0; c < k->wl[e.a].copies; c++) {
            wl = &k->wl[e.a];
            if (draw(k, wl->jitter, &delay)) return -1;
            if (delay != 0.0 ? push(k, k->now + delay, EV_COPY, e.a, c)
                             : start_request(k, e.a, wl->entry, wl->cls, -1, c, -1, 0, k->now, -1)) return -1;
        }
        if (next < INFINITY) return push(k, k->now + (next - k->now), EV_TICK, e.a, 0);
        return 0;
    }
    case EV_COPY: {  /* workloads._start_copy */
        Workload *wl = &k->wl[e.a];
        return start_request(k, e.a, wl->entry, wl->cls, -1, e.b, -1, 0, k->now, -1);
    }
    case EV_CYCLE: {  /* workloads._client.cycle */
        Client *cl = &k->cl[e.a];
        Workload *wl = &k->wl[cl->wl];
        if (cl->n >= wl->count) return 0;
        cl->n += 1;
        if (wl->protocol_warm >= 0) {  /* workloads.Protocol.next_run: run n - 1, warm while n <= warmup */
            int64_t n = (int64_t)cl->n;
            return start_request(k, cl->wl, wl->entry, wl->cls, e.a, n - 1, -1, n - 1 < wl->protocol_warm, k->now, -1);
        }
        return start_request(k, cl->wl, wl->entry, wl->cls, e.a, e.a - wl->first_client, -1, 0, k->now, -1);
    }
    case EV_FINISH: {  /* cpu.FifoCpu._finish */
        Station *s = &k->st[e.a];
        Meter *m = &k->mt[s->m];
        touch(m, k->now);
        if (s->qlen) {
            Job j = s->q[s->qhead];
            s->qhead = (s->qhead + 1) % s->qcap;
            s->qlen--;
            m->queue = s->qlen;
            if (push(k, k->now + j.service, EV_FINISH, e.a, j.slot)) return -1;
        } else {
            s->free_ += 1;
            m->busy -= 1;
        }
        return advance(k, (int32_t)e.b);
    }
    case EV_PS:
        return ps_finish(k, e.a, e.b);
    case EV_PRIO:
        return prio_finish(k, e.a, e.b);
    case EV_RESUME:
        return advance(k, e.a);
    case EV_SWLEAVE: {  /* a finished node stops seeding: SharedRate.reshare(Swarm._leave) */
        Shared *p = &k->ps[e.a];
        touch(&k->mt[p->m], k->now);
        ps_advance(p, k->now);
        p->sw->lingering -= 1;
        return ps_schedule(k, e.a, k->now);
    }
    case EV_WARM:  /* Meter.reset at the end of warm-up: the meters there are then (a level once a thread ran) */
        for (Py_ssize_t i = 0; i < k->nmt; i++) reset(&k->mt[i], k->now);
        for (Py_ssize_t h = 0; h < k->npr; h++)
            for (Py_ssize_t i = 0; i < k->pr[h].nlv; i++) if (k->pr[h].made[i]) reset(&k->pr[h].lv[i], k->now);
        return 0;
    }
    PyErr_SetString(PyExc_ValueError, "bad native event");
    return -1;
}

static void free_line(Line *l) { free(l->w); }

static void release(K *k) {
    free(k->heap); free(k->req); free(k->freelist); free(k->done);
    for (Py_ssize_t i = 0; k->st && i < k->nst; i++) free(k->st[i].q);
    for (Py_ssize_t i = 0; k->ps && i < k->nps; i++) free(k->ps[i].h);
    for (Py_ssize_t i = 0; k->pr && i < k->npr; i++) {
        Prio *P = &k->pr[i];
        free(P->run); free(P->ready); free(P->idle); free(P->lvp); free(P->lv); free(P->made);
    }
    free(k->pr);
    for (Py_ssize_t i = 0; k->pl && i < k->npl; i++) free_line(&k->pl[i].line);
    for (Py_ssize_t i = 0; k->lk && i < k->nlk; i++) {
        for (Py_ssize_t j = 0; j < k->lk[i].kcap; j++) free_line(&k->lk[i].keys[j].line);
        free(k->lk[i].keys);
    }
    for (Py_ssize_t i = 0; k->sm && i < k->nsm; i++) free(k->sm[i].buf);
    for (Py_ssize_t i = 0; k->qu && i < k->nqu; i++) { free(k->qu[i].items); free(k->qu[i].blocked); }
    free(k->qu); free(k->o_reason); free(k->hi);
    for (Py_ssize_t i = 0; k->pn && i < k->npn; i++) { free(k->pn[i].parents); free(k->pn[i].start); free(k->pn[i].child); }
    free(k->pn);
    for (Py_ssize_t i = 0; k->hc && i < k->nhc; i++) free(k->hc[i].missing);
    free(k->hc);
    free(k->mt); free(k->st); free(k->ps); free(k->pl); free(k->lk); free(k->db); free(k->fan); free(k->o_warm);
    free(k->sm); free(k->wl); free(k->cl); free(k->code); free(k->consts);
    free(k->o_id); free(k->o_item); free(k->o_parent); free(k->o_cls); free(k->o_wl); free(k->o_start); free(k->o_end);
    free(k->s_id); free(k->s_cls); free(k->s_name); free(k->s_comp); free(k->s_start); free(k->s_wait);
    free(k->s_svc); free(k->s_end); free(k->late);
    for (Py_ssize_t i = 0; k->cf && i < k->nso * k->nfiles; i++) free(k->cf[i].w);
    free(k->so); free(k->cf); free(k->br);
    for (Py_ssize_t i = 0; k->sw && i < k->nsw; i++) {
        Swarm *w = &k->sw[i];
        for (int64_t j = 0; w->nodes && j < w->peers; j++) free(w->nodes[j].w);
        free(w->nodes); free(w->held); free(w->pnode); free(w->pbytes);
    }
    free(k->sw);
    free(k->m_op); free(k->m_cls); free(k->m_pick); free(k->m_id); free(k->m_item); free(k->m_t); free(k->m_val);
}

static PyObject *bytes_of(const void *p, Py_ssize_t n, size_t size) {
    return PyBytes_FromStringAndSize(n ? (const char *)p : "", n * (Py_ssize_t)size);
}

/* Every operand of the code within the arrays it indexes, every jump, branch and entry onto the
 * start of an instruction (the code comes from native.py; a mistake there is an exception, not a
 * wild read). ``starts`` (ncode + 1 bytes) marks the instructions' starts. */
/* a priority host runs only the priorities it lists (its levels) */
static int prio_known(const K *k, int32_t type, int32_t host, int32_t priority) {
    if (type != CPU_PRIO) return 1;
    for (Py_ssize_t i = 0; i < k->pr[host].nlv; i++) if (k->pr[host].lvp[i] == priority) return 1;
    return 0;
}

static int check_code(K *k, char *starts) {
    const int32_t *c = k->code;
    Py_ssize_t n = k->ncode, pc = 0;
    memset(starts, 0, (size_t)n + 1);
#define RANGE(v, lo, hi) ((v) >= (lo) && (Py_ssize_t)(v) < (hi))
#define HOST_OK(t, h) ((t) == CPU_FIFO ? RANGE(h, 0, k->nst) : (t) == CPU_PS ? RANGE(h, 0, k->nps) \
                       : (t) == CPU_PRIO && RANGE(h, 0, k->npr))
    while (pc < n) {
        Py_ssize_t len;
        int ok = 1;
        switch (c[pc]) {
        case OP_CALL: len = 3; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nst) && RANGE(c[pc + 2], 0, k->nsm); break;
        case OP_DELAY: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nsm); break;
        case OP_CHOOSE:
            ok = pc + 4 <= n && c[pc + 2] > 0;
            len = ok ? 4 + c[pc + 2] : 1;
            ok = ok && pc + len <= n && RANGE(c[pc + 1], 0, k->nsm) && c[pc + 3] >= 0
                 && (Py_ssize_t)c[pc + 3] + c[pc + 2] <= k->nconsts;
            for (Py_ssize_t i = 0; ok && i < c[pc + 2]; i++) ok = RANGE(c[pc + 4 + i], 0, n);
            break;
        case OP_JUMP: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, n); break;
        case OP_END: len = 1; break;
        case OP_MARK: case OP_GRANT: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, MARKS); break;
        case OP_STEP: len = 5; ok = pc + len <= n && RANGE(c[pc + 1], ROW_JOB, ROW_DB + 1) && RANGE(c[pc + 2], 0, MARKS - (c[pc + 1] == ROW_DB))
                                 && c[pc + 3] >= 0 && c[pc + 4] >= 0; break;
        case OP_CPU:
            len = 7;
            ok = pc + len <= n && HOST_OK(c[pc + 1], c[pc + 2]) && RANGE(c[pc + 3], 0, k->nsm)
                 && (c[pc + 4] < 0 || (RANGE(c[pc + 4], 0, k->nsm) && RANGE(c[pc + 5], 0, k->nconsts)))
                 && prio_known(k, c[pc + 1], c[pc + 2], c[pc + 6]);
            break;
        case OP_FCPU:
            ok = pc + 5 <= n && c[pc + 3] >= 0;
            len = ok ? 5 + c[pc + 3] : 1;
            ok = ok && pc + len <= n && HOST_OK(c[pc + 1], c[pc + 2]) && prio_known(k, c[pc + 1], c[pc + 2], c[pc + 4]);
            for (Py_ssize_t i = 0; ok && i < c[pc + 3]; i++) ok = RANGE(c[pc + 5 + i], 0, k->nsm);
            break;
        case OP_LINK:
            len = 4;
            ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nps) && RANGE(c[pc + 2], 0, k->nsm)
                 && (c[pc + 3] < 0 || RANGE(c[pc + 3], 0, k->nsm));
            break;
        case OP_XFER: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nps); break;
        case OP_HOLDP: case OP_RELP:
            len = c[pc] == OP_HOLDP ? 4 : 3;
            ok = pc + len <= n && RANGE(c[pc + 1], 0, k->npl) && RANGE(c[pc + len - 1], 0, MARKS)
                 && (c[pc] == OP_RELP || RANGE(c[pc + 2], 0, n)); break;
        case OP_FAILED: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, n); break;
        case OP_DEADLINE: len = 4; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nconsts) && c[pc + 2] >= 0; break;
        case OP_HOLDL: case OP_RELL:
            len = 3 + (c[pc] == OP_HOLDL); ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nlk) && c[pc + 2] >= -2; break;
        case OP_SPAWN: len = 3; ok = pc + len <= n && RANGE(c[pc + 1], 0, n) && c[pc + 2] >= 0; break;
        case OP_PAR:
            len = 4;
            ok = pc + len <= n && c[pc + 1] >= 0 && RANGE(c[pc + 2], 0, k->nconsts) && RANGE(c[pc + 3], 0, n);
            break;
        case OP_BEND: len = 1; break;
        case OP_DBGET: case OP_DBX: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->ndb); break;
        case OP_DBQ:
            len = 4;
            ok = pc + len <= n && RANGE(c[pc + 1], 0, k->ndb) && RANGE(c[pc + 2], 0, k->nsm)
                 && (c[pc + 3] < 0 || RANGE(c[pc + 3], 0, k->nsm));
            break;
        case OP_DBEND: len = 3; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->ndb); break;
        case OP_QPUT: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nqu); break;
        case OP_HCALL:
            len = 4;
            ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nhi) && RANGE(c[pc + 2], 0, k->npn) && RANGE(c[pc + 3], 0, n);
            break;
        case OP_HACQ: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nhi); break;
        case OP_HRUN: len = 3; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nhi) && RANGE(c[pc + 2], 0, k->nsm); break;
        case OP_HFIN: len = 3; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nhi) && RANGE(c[pc + 2], 0, n); break;
        case OP_READ:
            ok = pc + 7 <= n && c[pc + 6] > 0;
            len = ok ? 7 + c[pc + 6] : 1;
            ok = ok && pc + len <= n && (c[pc + 1] < 0 || RANGE(c[pc + 1], 0, k->nsm))
                 && (c[pc + 2] >= 0 || (RANGE(c[pc + 3], 0, k->nsm) && c[pc + 4] > 0 && c[pc + 5] >= 0));
            for (Py_ssize_t i = 0; ok && i < c[pc + 6]; i++) ok = RANGE(c[pc + 7 + i], 0, n);
            break;
        case OP_SGET: case OP_SLAT: case OP_SXFER: case OP_SREL: len = 2; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nso); break;
        case OP_FRET: len = 1; break;
        case OP_CGET: case OP_CFILL:
            len = 4;
            ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nso) && RANGE(c[pc + 2], 0, k->nfiles) && RANGE(c[pc + 3], 0, n);
            break;
        case OP_FORK:
            len = 7;
            ok = pc + len <= n && RANGE(c[pc + 1], 0, n) && c[pc + 2] >= 0 && c[pc + 3] >= 0
                 && RANGE(c[pc + 4], 0, k->nconsts) && c[pc + 6] >= 0;
            k->memall = 1;
            break;
        case OP_SWGET: case OP_SWSEEDED:
            len = 3; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nps) && k->ps[c[pc + 1]].sw && RANGE(c[pc + 2], 0, n); break;
        case OP_CSTORED: len = 3; ok = pc + len <= n && RANGE(c[pc + 1], 0, k->nso) && RANGE(c[pc + 2], 0, k->nfiles); break;
        case OP_ALLOC: case OP_RESTORE: len = 3; ok = pc + len <= n && c[pc + 1] >= 0 && RANGE(c[pc + 2], 0, k->nsm); break;
        case OP_WMEM: len = 3; ok = pc + len <= n && c[pc + 1] >= 0 && RANGE(c[pc + 2], 0, k->nconsts); break;
        case OP_BYITEM:
            ok = pc + 2 <= n && c[pc + 1] > 0;
            len = ok ? 2 + c[pc + 1] : 1;
            ok = ok && pc + len <= n;
            for (Py_ssize_t i = 0; ok && i < c[pc + 1]; i++) ok = RANGE(c[pc + 2 + i], 0, n);
            break;
        default: len = 1; ok = 0;
        }
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "bad native code at %zd", pc);
            return -1;
        }
        starts[pc] = 1;
        pc += len;
    }
    for (pc = 0; pc < n; pc++) {  /* the targets: operands already known to be in range */
        if (!starts[pc]) continue;
        int ok = 1;
        switch (c[pc]) {
        case OP_JUMP: case OP_SPAWN: case OP_FAILED: case OP_FORK: ok = starts[c[pc + 1]]; break;
        case OP_HOLDP: ok = starts[c[pc + 2]]; break;
        case OP_PAR: ok = starts[c[pc + 3]]; break;
        case OP_HCALL: case OP_HFIN: ok = starts[c[pc + 3 - (c[pc] == OP_HFIN)]]; break;
        case OP_CHOOSE: for (int32_t i = 0; ok && i < c[pc + 2]; i++) ok = starts[c[pc + 4 + i]]; break;
        case OP_READ: for (int32_t i = 0; ok && i < c[pc + 6]; i++) ok = starts[c[pc + 7 + i]]; break;
        case OP_BYITEM: for (int32_t i = 0; ok && i < c[pc + 1]; i++) ok = starts[c[pc + 2 + i]]; break;
        case OP_CGET: case OP_CFILL: ok = starts[c[pc + 3]]; break;
        case OP_SWGET: case OP_SWSEEDED: ok = starts[c[pc + 2]]; break;
        default: break;
        }
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "bad native code: a target of %zd is not an instruction", pc);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < k->nwl; i++) if (!starts[k->wl[i].entry]) { PyErr_SetString(PyExc_ValueError, "bad native entry"); return -1; }
    for (Py_ssize_t i = 0; i < k->nqu; i++) if (!starts[k->qu[i].entry]) { PyErr_SetString(PyExc_ValueError, "bad native entry"); return -1; }
#undef HOST_OK
#undef RANGE
    return 0;
}

static double *doubles(PyObject *list, Py_ssize_t *n) {
    *n = PyList_GET_SIZE(list);
    double *out = malloc((size_t)(*n + 1) * sizeof(double));
    if (!out) { PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < *n; i++) out[i] = PyFloat_AsDouble(PyList_GET_ITEM(list, i));
    return out;
}

static int32_t *ints(PyObject *list, Py_ssize_t *n) {
    if (!PyList_Check(list)) { PyErr_SetString(PyExc_TypeError, "native run: a plan's field is not a list"); return NULL; }
    *n = PyList_GET_SIZE(list);
    int32_t *out = malloc((size_t)(*n + 1) * sizeof(int32_t));
    if (!out) { PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < *n; i++) out[i] = (int32_t)PyLong_AsLong(PyList_GET_ITEM(list, i));
    return out;
}

/* a hierarchy's plan: n parents' counts, n + 1 starts into the children, every child a node */
static int read_plan(Plan *p, PyObject *t) {
    Py_ssize_t n, ns, nc;
    p->parents = ints(PyTuple_GET_ITEM(t, 0), &n);
    p->start = p->parents ? ints(PyTuple_GET_ITEM(t, 1), &ns) : NULL;
    p->child = p->start ? ints(PyTuple_GET_ITEM(t, 2), &nc) : NULL;
    if (!p->child || PyErr_Occurred()) return -1;
    p->n = (int32_t)n;
    int ok = n > 0 && ns == n + 1 && p->start[0] == 0 && p->start[n] == nc;
    for (Py_ssize_t i = 0; ok && i < n; i++) ok = p->start[i] <= p->start[i + 1] && p->parents[i] >= 0;
    for (Py_ssize_t i = 0; ok && i < nc; i++) ok = p->child[i] > 0 && p->child[i] < n;
    if (!ok) { PyErr_SetString(PyExc_ValueError, "native run: a hierarchy's plan is malformed"); return -1; }
    return 0;
}

/* the item ``i`` of tuple ``t`` (of a list), as a number */
#define ITEM(t, i) PyTuple_GET_ITEM(t, i)

static int tuples(PyObject *list, Py_ssize_t width) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *t = PyList_GET_ITEM(list, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < width) {
            PyErr_SetString(PyExc_TypeError, "native run: a resource or workload is not a tuple of its fields");
            return -1;
        }
    }
    return 0;
}

static int meter_index(K *k, PyObject *o, int32_t *out) {
    long m = PyLong_AsLong(o);
    if (m < 0 || m >= k->nmt) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "native run: a meter out of range");
        return -1;
    }
    *out = (int32_t)m;
    return 0;
}

/* (cores, speed, meter, the spinner's meter or -1, the priorities its threads run at) */
static int read_prio(K *k, Prio *P, PyObject *t) {
    P->cores = PyFloat_AsDouble(ITEM(t, 0));
    P->speed = PyFloat_AsDouble(ITEM(t, 1));
    P->spin = -1;
    if (meter_index(k, ITEM(t, 2), &P->m) || (PyLong_AsLong(ITEM(t, 3)) >= 0 && meter_index(k, ITEM(t, 3), &P->spin)))
        return -1;
    if (!(P->cores >= 1.0 && P->cores <= 1e6) || !PyList_Check(ITEM(t, 4))) {
        PyErr_SetString(PyExc_ValueError, "native run: a priority host's cores or levels are wrong");
        return -1;
    }
    Py_ssize_t cores = (Py_ssize_t)ceil(P->cores);  /* at most this many run at once */
    P->lvp = ints(ITEM(t, 4), &P->nlv);
    P->lv = calloc((size_t)P->nlv + 1, sizeof(Meter));
    P->made = calloc((size_t)P->nlv + 1, sizeof(int));
    P->run = malloc((size_t)cores * sizeof(int32_t));
    P->idle = calloc((size_t)cores, sizeof(double));  /* IdleMeter: every core idle since 0 */
    if (!P->lvp || !P->lv || !P->made || !P->run || !P->idle) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    if (P->spin >= 0) {
        P->nidle = cores;
        k->mt[P->m].busy = P->cores;  /* the spinner keeps every core busy */
    }
    return 0;
}

/* what PriorityCpu keeps at the end: (running (priority, started), idle since, levels run (priority, meter)) */
static PyObject *meter_state(const Meter *s) {
    return Py_BuildValue("(dLLLdddddL)", s->busy, (long long)s->queue, (long long)s->max_queue, (long long)s->arrivals,
                         s->t, s->start, s->busy_area, s->queue_area, s->held_area, (long long)s->drops);
}

static PyObject *prio_state(const K *k, const Prio *P) {
    PyObject *run = PyList_New(P->nrun), *idle = PyList_New(P->nidle), *levels = PyList_New(0);
    for (Py_ssize_t i = 0; run && i < P->nrun; i++) {
        const Req *r = &k->req[P->run[i]];
        PyObject *t = Py_BuildValue("(id)", (int)r->jprio, r->jstart);
        if (!t) { Py_CLEAR(run); break; }
        PyList_SET_ITEM(run, i, t);
    }
    for (Py_ssize_t i = 0; idle && i < P->nidle; i++) {
        PyObject *f = PyFloat_FromDouble(P->idle[i]);
        if (!f) { Py_CLEAR(idle); break; }
        PyList_SET_ITEM(idle, i, f);
    }
    for (Py_ssize_t i = 0; levels && i < P->nlv; i++) {
        if (!P->made[i]) continue;
        PyObject *t = Py_BuildValue("(iN)", (int)P->lvp[i], meter_state(&P->lv[i]));
        if (!t || PyList_Append(levels, t) < 0) Py_CLEAR(levels);
        Py_XDECREF(t);
    }
    if (!run || !idle || !levels) { Py_XDECREF(run); Py_XDECREF(idle); Py_XDECREF(levels); return NULL; }
    return Py_BuildValue("(NNN)", run, idle, levels);
}

/* run(code, consts, meters, stations, shared, pools, locks, dbs, queues, hiers, plans, streams, workloads, until,
 *     warm)
 *   code: list of int (the opcodes above); consts: list of float (choice bounds, per-byte costs);
 *   meters: list of keyed (bool): a per-key lock's meter also keeps the time any key is held;
 *   stations: list of (servers, speed, meter); shared: list of (servers, rate, cap, meter);
 *   prios: list of (cores, speed, meter, the idle spinner's meter or -1, the priorities its threads run at);
 *   pools: list of (size, meter, line's capacity, the reason of a request turned away); locks: list of (meter,);
 *   dbs: list of (pool, link or -1, growth: bool, per, factor, stored);
 *   queues: list of (consumers, capacity, drop: bool, meter, handler's entry, its class, its workload, reason);
 *   hiers: list of (pool, cpu type (-1 none), cpu); plans: list of (parents, starts, children): lists of int;
 *   streams: list of (sort: 0 drawn, 1 constant, 2 indexed; value: float;
 *             refill: callable (drawn), a list of floats (indexed) or None);
 *   workloads: list of (closed, entry, cls, item, count, start, streams: list of int, protocol warm-up runs
 *     or -1, periodic copies or 0); open: one stream (inter-arrival); closed: one think stream per client (a
 *     protocol: one); periodic: the tick times, then the jitter, start its phase;
 *   until: float or None; warm: float (<= 0: none).
 * Returns (now, events, dry, next_id, started, in_system, meters, columns, waits, steps, lates, prios): meters are
 * (busy, queue, max queue, arrivals, t, start, busy area, queue area, held area, drops); columns are
 * (id, class, workload, item, start, end, parent, warm-up run, reason: 0 ok, else the queue's refusal)
 * in completion order; waits the requests still
 * waiting for a hold, as (order, id, class, hold's pc, since); lates the missed deadlines, as (id, class,
 * step's name, deadline, time from the request's start); prios each priority host's end (prio_state). */
static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *code, *consts, *meters, *stations, *shared, *prios, *pools, *locks, *dbs, *queues, *hiers, *plans, *streams,
             *workloads, *until_o, *stores = NULL, *swarms = NULL;
    double warm;
    Py_ssize_t nfiles = 0;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!O!O!O!O!O!Od|O!nO!", &PyList_Type, &code, &PyList_Type, &consts,
                          &PyList_Type, &meters, &PyList_Type, &stations, &PyList_Type, &shared, &PyList_Type, &prios,
                          &PyList_Type, &pools, &PyList_Type, &locks, &PyList_Type, &dbs, &PyList_Type, &queues,
                          &PyList_Type, &hiers, &PyList_Type, &plans, &PyList_Type, &streams,
                          &PyList_Type, &workloads, &until_o, &warm, &PyList_Type, &stores, &nfiles, &PyList_Type, &swarms)) return NULL;
    if (nfiles < 0) { PyErr_SetString(PyExc_ValueError, "native run: a negative number of files"); return NULL; }
    if (tuples(stations, 3) || tuples(shared, 4) || tuples(prios, 5) || tuples(pools, 4) || tuples(locks, 1) || tuples(dbs, 6)
        || tuples(queues, 8) || tuples(hiers, 3) || tuples(plans, 3) || tuples(streams, 3) || tuples(workloads, 9)
        || (stores && tuples(stores, 5)) || (swarms && tuples(swarms, 8)))
        return NULL;
    K k; memset(&k, 0, sizeof k);
    k.next_brood = -1;
    double until = until_o == Py_None ? INFINITY : PyFloat_AsDouble(until_o);
    if (PyErr_Occurred()) return NULL;
    k.ncode = PyList_GET_SIZE(code);
    k.code = malloc((size_t)(k.ncode + 1) * sizeof(int32_t));
    k.consts = doubles(consts, &k.nconsts);
    k.nmt = PyList_GET_SIZE(meters);
    k.mt = calloc((size_t)k.nmt + 1, sizeof(Meter));
    k.nst = PyList_GET_SIZE(stations);
    k.st = calloc((size_t)k.nst + 1, sizeof(Station));
    k.nps = PyList_GET_SIZE(shared);
    k.ps = calloc((size_t)k.nps + 1, sizeof(Shared));
    k.npr = PyList_GET_SIZE(prios);
    k.pr = calloc((size_t)k.npr + 1, sizeof(Prio));
    k.npl = PyList_GET_SIZE(pools);
    k.pl = calloc((size_t)k.npl + 1, sizeof(Pool));
    k.nlk = PyList_GET_SIZE(locks);
    k.lk = calloc((size_t)k.nlk + 1, sizeof(Lock));
    k.ndb = PyList_GET_SIZE(dbs);
    k.db = calloc((size_t)k.ndb + 1, sizeof(Db));
    k.nqu = PyList_GET_SIZE(queues);
    k.qu = calloc((size_t)k.nqu + 1, sizeof(Queue));
    k.nhi = PyList_GET_SIZE(hiers);
    k.hi = calloc((size_t)k.nhi + 1, sizeof(Hier));
    k.npn = PyList_GET_SIZE(plans);
    k.pn = calloc((size_t)k.npn + 1, sizeof(Plan));
    k.nsm = PyList_GET_SIZE(streams);
    k.sm = calloc((size_t)k.nsm + 1, sizeof(Stream));
    k.nwl = PyList_GET_SIZE(workloads);
    k.wl = calloc((size_t)k.nwl + 1, sizeof(Workload));
    k.nso = stores ? PyList_GET_SIZE(stores) : 0;
    k.nfiles = nfiles;
    k.so = calloc((size_t)k.nso + 1, sizeof(Store));
    k.cf = calloc((size_t)(k.nso * nfiles) + 1, sizeof(CFile));
    if (!k.so || !k.cf) { release(&k); return PyErr_NoMemory(); }
    if (!k.code || !k.consts || !k.mt || !k.st || !k.ps || !k.pr || !k.pl || !k.lk || !k.db || !k.qu || !k.hi || !k.pn || !k.sm || !k.wl) {
        release(&k); return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < k.ncode; i++) k.code[i] = (int32_t)PyLong_AsLong(PyList_GET_ITEM(code, i));
    k.code[k.ncode] = 0;  /* no opcode: a pc run off the end stops with an error */
    for (Py_ssize_t i = 0; i < k.nmt; i++) k.mt[i].keyed = PyObject_IsTrue(PyList_GET_ITEM(meters, i));
    int bad = 0;
    for (Py_ssize_t i = 0; i < k.nst && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(stations, i);
        k.st[i].free_ = PyFloat_AsDouble(ITEM(t, 0));
        k.st[i].speed = PyFloat_AsDouble(ITEM(t, 1));
        bad = meter_index(&k, ITEM(t, 2), &k.st[i].m);
    }
    for (Py_ssize_t i = 0; i < k.npr && !bad; i++) bad = read_prio(&k, &k.pr[i], PyList_GET_ITEM(prios, i));
    for (Py_ssize_t i = 0; i < k.nps && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(shared, i);
        k.ps[i].servers = PyFloat_AsDouble(ITEM(t, 0));
        k.ps[i].rate = PyFloat_AsDouble(ITEM(t, 1));
        k.ps[i].cap = PyFloat_AsDouble(ITEM(t, 2));
        bad = meter_index(&k, ITEM(t, 3), &k.ps[i].m);
    }
    for (Py_ssize_t i = 0; i < k.npl && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(pools, i);
        k.pl[i].size = PyFloat_AsDouble(ITEM(t, 0));
        k.pl[i].capacity = PyFloat_AsDouble(ITEM(t, 2));
        k.pl[i].reason = (int32_t)PyLong_AsLong(ITEM(t, 3));
        bad = meter_index(&k, ITEM(t, 1), &k.pl[i].m);
    }
    for (Py_ssize_t i = 0; i < k.nlk && !bad; i++) bad = meter_index(&k, ITEM(PyList_GET_ITEM(locks, i), 0), &k.lk[i].m);
    for (Py_ssize_t i = 0; i < k.ndb && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(dbs, i);
        Db *d = &k.db[i];
        d->pool = (int32_t)PyLong_AsLong(ITEM(t, 0));
        d->link = (int32_t)PyLong_AsLong(ITEM(t, 1));
        d->growth = PyObject_IsTrue(ITEM(t, 2));
        d->per = PyFloat_AsDouble(ITEM(t, 3));
        d->factor = PyFloat_AsDouble(ITEM(t, 4));
        d->stored = PyFloat_AsDouble(ITEM(t, 5));
        if (d->pool < 0 || d->pool >= k.npl || d->link < -1 || d->link >= k.nps) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "native run: a database's pool or link out of range");
            bad = 1;
        }
    }
    for (Py_ssize_t i = 0; i < k.nqu && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(queues, i);
        Queue *q = &k.qu[i];
        q->consumers = PyFloat_AsDouble(ITEM(t, 0));
        q->capacity = PyFloat_AsDouble(ITEM(t, 1));
        q->drop = PyObject_IsTrue(ITEM(t, 2));
        bad = meter_index(&k, ITEM(t, 3), &q->m);
        q->entry = (int32_t)PyLong_AsLong(ITEM(t, 4));
        q->cls = (int32_t)PyLong_AsLong(ITEM(t, 5));
        q->wl = (int32_t)PyLong_AsLong(ITEM(t, 6));
        q->reason = (int32_t)PyLong_AsLong(ITEM(t, 7));
        if (!bad && (q->entry < 0 || q->entry >= k.ncode)) {
            PyErr_SetString(PyExc_ValueError, "native run: a queue's handler out of range");
            bad = 1;
        }
    }
    for (Py_ssize_t i = 0; i < k.nhi && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(hiers, i);
        Hier *h = &k.hi[i];
        h->pool = (int32_t)PyLong_AsLong(ITEM(t, 0));
        h->cpu_type = (int32_t)PyLong_AsLong(ITEM(t, 1));
        h->cpu = (int32_t)PyLong_AsLong(ITEM(t, 2));
        if (h->pool < 0 || h->pool >= k.npl || (h->cpu_type == CPU_FIFO && (h->cpu < 0 || h->cpu >= k.nst))
            || (h->cpu_type == CPU_PS && (h->cpu < 0 || h->cpu >= k.nps)) || h->cpu_type < -1 || h->cpu_type > CPU_PS) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "native run: a hierarchy's pool or CPU out of range");
            bad = 1;
        }
    }
    for (Py_ssize_t i = 0; i < k.npn && !bad; i++) bad = read_plan(&k.pn[i], PyList_GET_ITEM(plans, i));
    k.nsw = swarms ? PyList_GET_SIZE(swarms) : 0;
    k.sw = calloc((size_t)k.nsw + 1, sizeof(Swarm));
    if (!k.sw) { PyErr_NoMemory(); bad = 1; }
    for (Py_ssize_t i = 0; i < k.nsw && !bad; i++) {  /* (rate, peers, upload, download, seed rate, efficiency, linger, backed) */
        PyObject *t = PyList_GET_ITEM(swarms, i);
        Swarm *w = &k.sw[i];
        w->ps = (int32_t)PyLong_AsLong(ITEM(t, 0));
        w->peers = PyLong_AsLongLong(ITEM(t, 1));
        w->upload = PyFloat_AsDouble(ITEM(t, 2));
        w->download = PyFloat_AsDouble(ITEM(t, 3));
        w->seed_rate = PyFloat_AsDouble(ITEM(t, 4));
        w->eff = PyFloat_AsDouble(ITEM(t, 5));
        w->linger = (int32_t)PyLong_AsLong(ITEM(t, 6));
        w->backed = PyObject_IsTrue(ITEM(t, 7));
        if (PyErr_Occurred() || w->ps < 0 || w->ps >= k.nps || k.ps[w->ps].sw || w->peers <= 0 || w->peers > (1 << 30)
            || w->linger < -1 || w->linger >= k.nsm) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "native run: a swarm's rate, peers or linger out of range");
            bad = 1;
            break;
        }
        w->held = calloc((size_t)w->peers, 1);
        w->nodes = calloc((size_t)w->peers, sizeof(NodeWait));
        if (!w->held || !w->nodes) { PyErr_NoMemory(); bad = 1; break; }
        k.ps[w->ps].sw = w;
    }
    for (Py_ssize_t i = 0; i < k.nso && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(stores, i);
        Store *so = &k.so[i];
        so->pool = (int32_t)PyLong_AsLong(ITEM(t, 0));
        so->link = (int32_t)PyLong_AsLong(ITEM(t, 1));
        so->lat = (int32_t)PyLong_AsLong(ITEM(t, 2));
        so->look = (int32_t)PyLong_AsLong(ITEM(t, 3));
        so->each = PyFloat_AsDouble(ITEM(t, 4));
        if (so->pool < 0 || so->pool >= k.npl || so->link < -1 || so->link >= k.nps || so->lat < 0
            || so->lat >= k.nsm || so->look < 0 || so->look >= k.nsm) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "native run: a store's pool, link or stream out of range");
            bad = 1;
        }
    }
    for (Py_ssize_t i = 0; i < k.nsm && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(streams, i);
        k.sm[i].constant = (int)PyLong_AsLong(ITEM(t, 0));
        k.sm[i].value = PyFloat_AsDouble(ITEM(t, 1));
        k.sm[i].refill = ITEM(t, 2);  /* borrowed: the list outlives the run */
        if (k.sm[i].constant == 2) {  /* the table: a list of floats */
            if (!PyList_Check(k.sm[i].refill) || !PyList_GET_SIZE(k.sm[i].refill)) {
                PyErr_SetString(PyExc_TypeError, "native run: an indexed stream's table is not a list");
                bad = 1;
                break;
            }
            k.sm[i].buf = doubles(k.sm[i].refill, &k.sm[i].n);
            if (!k.sm[i].buf) { bad = 1; break; }
        } else if (k.sm[i].constant < 0 || k.sm[i].constant > 2) {
            PyErr_SetString(PyExc_ValueError, "native run: a stream of no known sort");
            bad = 1;
        } else if (!k.sm[i].constant && !PyCallable_Check(k.sm[i].refill)) {
            PyErr_SetString(PyExc_TypeError, "native run: a stream's refill is not callable");
            bad = 1;
        }
    }
    for (Py_ssize_t i = 0; i < k.nwl && !bad; i++) {
        PyObject *t = PyList_GET_ITEM(workloads, i);
        Workload *w = &k.wl[i];
        w->closed = PyObject_IsTrue(ITEM(t, 0));
        w->entry = (int32_t)PyLong_AsLong(ITEM(t, 1));
        w->cls = (int32_t)PyLong_AsLong(ITEM(t, 2));
        w->item = PyLong_AsLongLong(ITEM(t, 3));
        w->count = PyFloat_AsDouble(ITEM(t, 4));
        w->start = PyFloat_AsDouble(ITEM(t, 5));
        w->protocol_warm = PyLong_AsLongLong(ITEM(t, 7));
        w->copies = PyLong_AsLongLong(ITEM(t, 8));
        PyObject *ss = ITEM(t, 6);
        if (!PyList_Check(ss) || (!w->closed && PyList_GET_SIZE(ss) != 1 + (w->copies > 0)) || w->copies < 0
            || (w->closed && w->copies) || w->entry < 0 || w->entry >= k.ncode) {
            PyErr_SetString(PyExc_ValueError, "native run: a workload's streams or entry are wrong");
            bad = 1;
            break;
        }
        if (w->closed) {
            w->first_client = (int32_t)k.ncl;
            w->clients = (int32_t)PyList_GET_SIZE(ss);
            k.ncl += w->clients;
        } else {
            w->stream = (int32_t)PyLong_AsLong(PyList_GET_ITEM(ss, 0));
            w->jitter = w->copies ? (int32_t)PyLong_AsLong(PyList_GET_ITEM(ss, 1)) : 0;
            if (w->stream < 0 || w->stream >= k.nsm || w->jitter < 0 || w->jitter >= k.nsm) {
                PyErr_SetString(PyExc_ValueError, "native run: bad stream"); bad = 1;
            }
        }
    }
    if (!bad) k.cl = calloc((size_t)k.ncl + 1, sizeof(Client));
    if (!bad && !k.cl) { PyErr_NoMemory(); bad = 1; }
    for (Py_ssize_t i = 0; i < k.nwl && !bad; i++) {
        Workload *w = &k.wl[i];
        if (!w->closed) continue;
        PyObject *ss = ITEM(PyList_GET_ITEM(workloads, i), 6);
        for (int32_t c = 0; c < w->clients; c++) {
            Client *cl = &k.cl[w->first_client + c];
            cl->wl = (int32_t)i; cl->since = -1.0;
            cl->stream = (int32_t)PyLong_AsLong(PyList_GET_ITEM(ss, c));
            if (cl->stream < 0 || cl->stream >= k.nsm) { PyErr_SetString(PyExc_ValueError, "native run: bad stream"); bad = 1; break; }
        }
    }
    char *starts = bad || PyErr_Occurred() ? NULL : malloc((size_t)k.ncode + 1);
    if (!bad && !PyErr_Occurred() && !starts) PyErr_NoMemory();
    if (!starts || check_code(&k, starts)) { free(starts); release(&k); return NULL; }
    free(starts);
    /* workloads.start_workloads, in the spec's order, then the warm-up's meter reset */
    for (Py_ssize_t i = 0; i < k.nwl && !bad; i++) {
        Workload *w = &k.wl[i];
        if (w->closed) {
            for (int32_t c = 0; c < w->clients && !bad; c++) bad = push(&k, w->start, EV_CYCLE, w->first_client + c, 0);
        } else if (w->copies) {
            bad = push(&k, w->start, EV_TICK, (int32_t)i, 0);
        } else {
            double first;
            bad = draw(&k, w->stream, &first);
            if (!bad && first < INFINITY) bad = push(&k, w->start + first, EV_ARRIVE, (int32_t)i, 0);
        }
    }
    if (!bad && warm > 0) bad = push(&k, warm, EV_WARM, 0, 0);
    while (!bad && k.hn && k.heap[0].t < until) {
        Event e = pop(&k);
        k.now = e.t;
        bad = step(&k, e);
    }
    if (bad) {
        if (k.error) {
            PyObject *r = Py_BuildValue("(sid)", k.error >= 2 ? "outside" : "zero-time", k.error >= 2 ? k.error : (int)k.err_wl,
                                        k.now);
            release(&k);
            PyErr_Clear();
            return r;
        }
        release(&k);
        return NULL;
    }
    int dry = k.hn == 0;
    /* SimPy's stop event, and its re-scheduling as the marker a later run resumes after */
    if (until < INFINITY) { k.now = until; k.eid += 2; }
    PyObject *mt = PyList_New(k.nmt);
    PyObject *waits = PyList_New(0);
    if (!mt || !waits) { Py_XDECREF(mt); Py_XDECREF(waits); release(&k); return NULL; }
    for (Py_ssize_t i = 0; i < k.nmt; i++) {
        Meter *s = &k.mt[i];
        PyList_SET_ITEM(mt, i, meter_state(s));
    }
    for (Py_ssize_t i = 0; i < k.rcap; i++) {
        Req *r = &k.req[i];
        if (!r->live || !r->wait_seq) continue;
        PyObject *w = Py_BuildValue("(LLiid)", (long long)r->wait_seq, (long long)r->id, (int)r->cls, (int)r->wait_pc,
                                    r->wait_since);
        if (!w || PyList_Append(waits, w) < 0) { Py_XDECREF(w); Py_DECREF(mt); Py_DECREF(waits); release(&k); return NULL; }
        Py_DECREF(w);
    }
    PyObject *cols = Py_BuildValue("(NNNNNNNNN)", bytes_of(k.o_id, k.on, 8), bytes_of(k.o_cls, k.on, 4),
                                   bytes_of(k.o_wl, k.on, 4), bytes_of(k.o_item, k.on, 8),
                                   bytes_of(k.o_start, k.on, 8), bytes_of(k.o_end, k.on, 8),
                                   bytes_of(k.o_parent, k.on, 8), bytes_of(k.o_warm, k.on, 1),
                                   bytes_of(k.o_reason, k.on, 4));
    PyObject *steps = Py_BuildValue("(NNNNNNNN)", bytes_of(k.s_id, k.sn, 8), bytes_of(k.s_cls, k.sn, 4),
                                    bytes_of(k.s_name, k.sn, 4), bytes_of(k.s_comp, k.sn, 4),
                                    bytes_of(k.s_start, k.sn, 8), bytes_of(k.s_wait, k.sn, 8),
                                    bytes_of(k.s_svc, k.sn, 8), bytes_of(k.s_end, k.sn, 8));
    PyObject *lates = PyList_New(k.nlate);
    for (Py_ssize_t i = 0; lates && i < k.nlate; i++) {
        Late *l = &k.late[i];
        PyObject *t = Py_BuildValue("(Liidd)", (long long)l->id, (int)l->cls, (int)l->name, l->deadline, l->after);
        if (!t) { Py_CLEAR(lates); break; }
        PyList_SET_ITEM(lates, i, t);
    }
    PyObject *hosts = PyList_New(k.npr);
    for (Py_ssize_t i = 0; hosts && i < k.npr; i++) {
        PyObject *h = prio_state(&k, &k.pr[i]);
        if (!h) { Py_CLEAR(hosts); break; }
        PyList_SET_ITEM(hosts, i, h);
    }
    PyObject *mem = Py_BuildValue("(NNNNNNN)", bytes_of(k.m_op, k.mn, 4), bytes_of(k.m_t, k.mn, 8),
                                  bytes_of(k.m_id, k.mn, 8), bytes_of(k.m_cls, k.mn, 4), bytes_of(k.m_item, k.mn, 8),
                                  bytes_of(k.m_pick, k.mn, 4), bytes_of(k.m_val, k.mn, 8));
    PyObject *out = cols && steps && lates && hosts && mem
        ? Py_BuildValue("(dKiLLLNNNNNNN)", k.now, (unsigned long long)k.eid, dry, (long long)k.next_id,
                        (long long)k.started, (long long)k.in_system, mt, cols, waits, steps, lates, hosts, mem)
        : NULL;
    if (!out) {
        Py_DECREF(mt); Py_DECREF(waits); Py_XDECREF(cols); Py_XDECREF(steps); Py_XDECREF(lates); Py_XDECREF(hosts);
        Py_XDECREF(mem);
    }
    release(&k);
    return out;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS, "Run one replication of a compiled model (simstack.engine.native)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "eventloop", "simstack's native event kernel", -1, methods};

PyMODINIT_FUNC PyInit_eventloop(void) { return PyModule_Create(&module); }
