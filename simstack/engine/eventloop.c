/* The native event kernel of simstack: one replication of a station network in one C loop.
 *
 * simstack/engine/native.py compiles the model into the arguments of run() (see its docstring)
 * and turns the result back into the recorder's columns and the stations' meters. The loop
 * reproduces the SimPy kernel's order of events exactly: a binary heap ordered by (time,
 * insertion number), every event at SimPy's NORMAL priority, events scheduled in the order the
 * Python runners schedule them. Random draws are not made here: each stream's buffer is refilled
 * by calling its Python refill callable (the next 256 draws of the same named NumPy stream).
 * Compiled with -ffp-contract=off so each floating-point operation rounds as in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OP_CALL = 1, OP_DELAY = 2, OP_CHOOSE = 3, OP_JUMP = 4, OP_END = 5 };
enum { EV_ARRIVE = 0, EV_CYCLE = 1, EV_FINISH = 2, EV_RESUME = 3, EV_WARM = 4 };
#define ZERO_TIME_CYCLES 10000

typedef struct { double t; uint64_t eid; int32_t type, a, b; } Event;
typedef struct { int32_t slot; double arrived, service; } Job;

typedef struct {
    double cores, free_;
    Job *q; Py_ssize_t qhead, qlen, qcap;
    double busy; int64_t queue, max_queue, arrivals, drops;
    double t, start, busy_area, queue_area;
} Station;

typedef struct { int constant; double value; PyObject *refill; double *buf; Py_ssize_t n, i; } Stream;

typedef struct { int64_t id; int32_t pc, wl, cls, client; int64_t item; double start; } Req;

typedef struct {
    int closed; int32_t entry, cls; int64_t item; double count, start; int32_t stream;
    int32_t first_client, clients; double n;
} Workload;

typedef struct { double n; int64_t idle; double since; int32_t wl, stream; } Client;

typedef struct {
    Event *heap; Py_ssize_t hn, hcap; uint64_t eid;
    double now;
    int32_t *code; double *bounds;
    Station *st; Py_ssize_t nst;
    Stream *sm; Py_ssize_t nsm;
    Workload *wl; Py_ssize_t nwl;
    Client *cl; Py_ssize_t ncl;
    Req *req; Py_ssize_t rcap; int32_t *freelist; Py_ssize_t nfree;
    int64_t next_id, in_system, started;
    /* records: completion order */
    int64_t *o_id, *o_item; int32_t *o_cls, *o_wl; double *o_start, *o_end; Py_ssize_t on, ocap;
    int error; int32_t err_wl;
} K;

static int grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) { PyErr_NoMemory(); return -1; }
    *p = q; *cap = c; return 0;
}

static inline int ev_less(const Event *x, const Event *y) {
    return x->t < y->t || (x->t == y->t && x->eid < y->eid);
}

static int push(K *k, double t, int32_t type, int32_t a, int32_t b) {
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
    if (m->constant) { *out = m->value; return 0; }
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

static inline void touch(Station *s, double now) {
    double dt = now - s->t;
    if (dt != 0.0) {
        s->busy_area += s->busy * dt;
        s->queue_area += (double)s->queue * dt;
        s->t = now;
    }
}

static int start_request(K *k, int32_t w, int32_t client, int64_t item);

/* A closed client's request ended: think, then cycle again (workloads._client.after). */
static int client_after(K *k, int32_t c) {
    Client *cl = &k->cl[c];
    double pause;
    if (draw(k, cl->stream, &pause)) return -1;
    if (pause == 0.0 && k->now == cl->since) {
        if (++cl->idle > ZERO_TIME_CYCLES) { k->error = 1; k->err_wl = cl->wl; return -1; }
    } else {
        cl->idle = 0; cl->since = k->now;
    }
    return push(k, k->now + pause, EV_CYCLE, c, 0);
}

/* Run request ``slot`` from its pc until it waits for an event or ends. */
static int advance(K *k, int32_t slot) {
    for (;;) {
        Req *r = &k->req[slot];
        int32_t *op = &k->code[r->pc];
        switch (op[0]) {
        case OP_CALL: {
            Station *s = &k->st[op[1]];
            double service;
            if (draw(k, op[2], &service)) return -1;
            r = &k->req[slot];
            r->pc += 3;
            double now = k->now;
            s->arrivals += 1;
            touch(s, now);
            if (s->free_ != 0.0) {
                s->free_ -= 1;
                s->busy += 1;
                return push(k, now + service, EV_FINISH, op[1], slot);
            }
            if (s->qlen == s->qcap) {  /* grow the ring, unrolling it */
                Py_ssize_t cap = s->qcap ? s->qcap * 2 : 16;
                Job *q = malloc((size_t)cap * sizeof(Job));
                if (!q) { PyErr_NoMemory(); return -1; }
                for (Py_ssize_t i = 0; i < s->qlen; i++) q[i] = s->q[(s->qhead + i) % s->qcap];
                free(s->q); s->q = q; s->qcap = cap; s->qhead = 0;
            }
            Job j = {slot, now, service};
            s->q[(s->qhead + s->qlen) % s->qcap] = j;
            s->qlen++;
            s->queue = s->qlen;
            if (s->queue > s->max_queue) s->max_queue = s->queue;
            return 0;
        }
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
            const double *b = &k->bounds[op[3]];
            while (i < n && b[i] <= u) i++;
            k->req[slot].pc = op[4 + i];
            continue;
        }
        case OP_JUMP:
            r->pc = op[1];
            continue;
        case OP_END: {
            if (k->on == k->ocap) {
                Py_ssize_t cap = k->ocap ? k->ocap * 2 : 4096;
                if (!(k->o_id = realloc(k->o_id, (size_t)cap * sizeof(int64_t))) ||
                    !(k->o_item = realloc(k->o_item, (size_t)cap * sizeof(int64_t))) ||
                    !(k->o_cls = realloc(k->o_cls, (size_t)cap * sizeof(int32_t))) ||
                    !(k->o_wl = realloc(k->o_wl, (size_t)cap * sizeof(int32_t))) ||
                    !(k->o_start = realloc(k->o_start, (size_t)cap * sizeof(double))) ||
                    !(k->o_end = realloc(k->o_end, (size_t)cap * sizeof(double)))) { PyErr_NoMemory(); return -1; }
                k->ocap = cap;
            }
            Py_ssize_t o = k->on++;
            k->o_id[o] = r->id; k->o_item[o] = r->item; k->o_cls[o] = r->cls; k->o_wl[o] = r->wl;
            k->o_start[o] = r->start; k->o_end[o] = k->now;
            k->in_system--;
            int32_t client = r->client;
            k->freelist[k->nfree++] = slot;
            if (client >= 0) return client_after(k, client);
            return 0;
        }
        default:
            PyErr_SetString(PyExc_ValueError, "bad native opcode");
            return -1;
        }
    }
}

static int start_request(K *k, int32_t w, int32_t client, int64_t item) {
    if (k->nfree == 0) {
        Py_ssize_t old = k->rcap, cap = old ? old * 2 : 64;
        Req *rq = realloc(k->req, (size_t)cap * sizeof(Req));
        int32_t *fl = rq ? realloc(k->freelist, (size_t)cap * sizeof(int32_t)) : NULL;
        if (!rq || !fl) { if (rq) k->req = rq; PyErr_NoMemory(); return -1; }
        k->req = rq; k->freelist = fl; k->rcap = cap;
        for (Py_ssize_t i = cap - 1; i >= old; i--) k->freelist[k->nfree++] = (int32_t)i;
    }
    int32_t slot = k->freelist[--k->nfree];
    Workload *wl = &k->wl[w];
    Req *r = &k->req[slot];
    r->id = ++k->next_id; r->pc = wl->entry; r->wl = w; r->cls = wl->cls; r->client = client;
    r->item = item; r->start = k->now;
    k->in_system++; k->started++;
    return advance(k, slot);
}

static int step(K *k, Event e) {
    switch (e.type) {
    case EV_ARRIVE: {  /* workloads.start_arrivals.arrive */
        Workload *wl = &k->wl[e.a];
        if (wl->n >= wl->count) return 0;
        wl->n += 1;
        if (start_request(k, e.a, -1, wl->item)) return -1;
        double after;
        if (draw(k, k->wl[e.a].stream, &after)) return -1;
        if (after < INFINITY) return push(k, k->now + after, EV_ARRIVE, e.a, 0);
        return 0;
    }
    case EV_CYCLE: {  /* workloads._client.cycle */
        Client *cl = &k->cl[e.a];
        Workload *wl = &k->wl[cl->wl];
        if (cl->n >= wl->count) return 0;
        cl->n += 1;
        return start_request(k, cl->wl, e.a, e.a - wl->first_client);
    }
    case EV_FINISH: {  /* cpu.FifoCpu._finish */
        Station *s = &k->st[e.a];
        touch(s, k->now);
        if (s->qlen) {
            Job j = s->q[s->qhead];
            s->qhead = (s->qhead + 1) % s->qcap;
            s->qlen--;
            s->queue = s->qlen;
            if (push(k, k->now + j.service, EV_FINISH, e.a, j.slot)) return -1;
        } else {
            s->free_ += 1;
            s->busy -= 1;
        }
        return advance(k, e.b);
    }
    case EV_RESUME:
        return advance(k, e.a);
    case EV_WARM:  /* Meter.reset at the end of warm-up */
        for (Py_ssize_t i = 0; i < k->nst; i++) {
            Station *s = &k->st[i];
            touch(s, k->now);
            s->start = k->now; s->busy_area = 0.0; s->queue_area = 0.0;
            s->max_queue = s->queue; s->arrivals = 0; s->drops = 0;
        }
        return 0;
    }
    PyErr_SetString(PyExc_ValueError, "bad native event");
    return -1;
}

static void release(K *k) {
    free(k->heap); free(k->req); free(k->freelist);
    for (Py_ssize_t i = 0; i < k->nst; i++) free(k->st[i].q);
    for (Py_ssize_t i = 0; i < k->nsm; i++) free(k->sm[i].buf);
    free(k->st); free(k->sm); free(k->wl); free(k->cl); free(k->code); free(k->bounds);
    free(k->o_id); free(k->o_item); free(k->o_cls); free(k->o_wl); free(k->o_start); free(k->o_end);
}

static PyObject *bytes_of(const void *p, Py_ssize_t n, size_t size) {
    return PyBytes_FromStringAndSize(n ? (const char *)p : "", n * (Py_ssize_t)size);
}

/* run(code, bounds, stations, streams, workloads, until, warm)
 *   code: list of int; bounds: list of float;
 *   stations: list of servers (float);
 *   streams: list of (constant: bool, value: float, refill: callable or None);
 *   workloads: list of (closed, entry, cls, item, count, start, streams: list of int);
 *     open: one stream (inter-arrival); closed: one think stream per client;
 *   until: float or None; warm: float (<= 0: none).
 * Returns (now, events, dry, next_id, started, in_system, stations' meters, columns). */
static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *code, *bounds, *stations, *streams, *workloads, *until_o;
    double warm;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!Od", &PyList_Type, &code, &PyList_Type, &bounds, &PyList_Type, &stations,
                          &PyList_Type, &streams, &PyList_Type, &workloads, &until_o, &warm)) return NULL;
    K k; memset(&k, 0, sizeof k);
    double until = until_o == Py_None ? INFINITY : PyFloat_AsDouble(until_o);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(code);
    k.code = malloc((size_t)(n + 1) * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < n; i++) k.code[i] = (int32_t)PyLong_AsLong(PyList_GET_ITEM(code, i));
    n = PyList_GET_SIZE(bounds);
    k.bounds = malloc((size_t)(n + 1) * sizeof(double));
    for (Py_ssize_t i = 0; i < n; i++) k.bounds[i] = PyFloat_AsDouble(PyList_GET_ITEM(bounds, i));
    k.nst = PyList_GET_SIZE(stations);
    k.st = calloc((size_t)k.nst + 1, sizeof(Station));
    for (Py_ssize_t i = 0; i < k.nst; i++) k.st[i].cores = k.st[i].free_ = PyFloat_AsDouble(PyList_GET_ITEM(stations, i));
    k.nsm = PyList_GET_SIZE(streams);
    k.sm = calloc((size_t)k.nsm + 1, sizeof(Stream));
    for (Py_ssize_t i = 0; i < k.nsm; i++) {
        PyObject *t = PyList_GET_ITEM(streams, i);
        k.sm[i].constant = PyObject_IsTrue(PyTuple_GET_ITEM(t, 0));
        k.sm[i].value = PyFloat_AsDouble(PyTuple_GET_ITEM(t, 1));
        k.sm[i].refill = PyTuple_GET_ITEM(t, 2);  /* borrowed: the list outlives the run */
    }
    k.nwl = PyList_GET_SIZE(workloads);
    k.wl = calloc((size_t)k.nwl + 1, sizeof(Workload));
    for (Py_ssize_t i = 0; i < k.nwl; i++) {
        PyObject *t = PyList_GET_ITEM(workloads, i);
        Workload *w = &k.wl[i];
        w->closed = PyObject_IsTrue(PyTuple_GET_ITEM(t, 0));
        w->entry = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(t, 1));
        w->cls = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(t, 2));
        w->item = PyLong_AsLongLong(PyTuple_GET_ITEM(t, 3));
        w->count = PyFloat_AsDouble(PyTuple_GET_ITEM(t, 4));
        w->start = PyFloat_AsDouble(PyTuple_GET_ITEM(t, 5));
        PyObject *ss = PyTuple_GET_ITEM(t, 6);
        if (w->closed) {
            w->first_client = (int32_t)k.ncl;
            w->clients = (int32_t)PyList_GET_SIZE(ss);
            k.ncl += w->clients;
        } else {
            w->stream = (int32_t)PyLong_AsLong(PyList_GET_ITEM(ss, 0));
        }
    }
    k.cl = calloc((size_t)k.ncl + 1, sizeof(Client));
    for (Py_ssize_t i = 0; i < k.nwl; i++) {
        Workload *w = &k.wl[i];
        if (!w->closed) continue;
        PyObject *ss = PyTuple_GET_ITEM(PyList_GET_ITEM(workloads, i), 6);
        for (int32_t c = 0; c < w->clients; c++) {
            Client *cl = &k.cl[w->first_client + c];
            cl->wl = (int32_t)i; cl->since = -1.0;
            cl->stream = (int32_t)PyLong_AsLong(PyList_GET_ITEM(ss, c));
        }
    }
    if (PyErr_Occurred()) { release(&k); return NULL; }
    int bad = 0;
    /* workloads.start_workloads, in the spec's order, then the warm-up's meter reset */
    for (Py_ssize_t i = 0; i < k.nwl && !bad; i++) {
        Workload *w = &k.wl[i];
        if (w->closed) {
            for (int32_t c = 0; c < w->clients && !bad; c++) bad = push(&k, w->start, EV_CYCLE, w->first_client + c, 0);
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
            PyObject *r = Py_BuildValue("(sid)", "zero-time", (int)k.err_wl, k.now);
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
    PyObject *meters = PyList_New(k.nst);
    for (Py_ssize_t i = 0; i < k.nst; i++) {
        Station *s = &k.st[i];
        PyList_SET_ITEM(meters, i, Py_BuildValue("(dLLLdddd)", s->busy, (long long)s->queue, (long long)s->max_queue,
                                                 (long long)s->arrivals, s->t, s->start, s->busy_area, s->queue_area));
    }
    PyObject *cols = Py_BuildValue("(NNNNNN)", bytes_of(k.o_id, k.on, 8), bytes_of(k.o_cls, k.on, 4),
                                   bytes_of(k.o_wl, k.on, 4), bytes_of(k.o_item, k.on, 8),
                                   bytes_of(k.o_start, k.on, 8), bytes_of(k.o_end, k.on, 8));
    PyObject *out = Py_BuildValue("(dKiLLLNN)", k.now, (unsigned long long)k.eid, dry, (long long)k.next_id,
                                  (long long)k.started, (long long)k.in_system, meters, cols);
    release(&k);
    return out;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS, "Run one replication of a compiled station network (simstack.engine.native)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "eventloop", "simstack's native event kernel", -1, methods};

PyMODINIT_FUNC PyInit_eventloop(void) { return PyModule_Create(&module); }
