/* hub serve's answer to a spoke's sampling/createMessage when the client samples no
 * model itself (serve_ask.c forwards to the client when it can): the hub's own LLM,
 * given with --llm, under the checks, caps and per-app rate limit of llm.h's
 * llm_sampling_* (hub.json's llm.sampling_*). The key never leaves the hub.
 *
 * The LLM answers in seconds and serve has other sessions to serve meanwhile, so the
 * calls run on a thread of their own, one at a time: the loop hands a request over
 * (a queue under a mutex), the thread makes the call and hands the answer back
 * (another queue, and a byte on a pipe the loop watches), and the hub hears of it on
 * its loop. The thread touches the LLM client and its own audit handle only (its calls'
 * records, opened by the caller for it). At the end the request in flight is cancelled
 * (the client's cancel flag) and the thread joined; what was still queued is dropped,
 * since the hub that asked is gone by then. */
#include "log.h"
#include "serve/serve_impl.h"
#include "util.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct job {
    struct job *next;
    struct llm_request *rq;
    hook_done_fn done;
    void *done_ud;
    int rc;
    struct llm_response rs;
    struct llm_error e;
};

struct job_queue {
    struct job *head, **tail;
};

struct llm_sampler {
    struct llm *llm;
    struct llm_sampling_limits limits;
    struct llm_sampling_buckets *buckets;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    struct job_queue todo, finished; /* under mu */
    volatile sig_atomic_t stop;      /* also every request's cancel flag */
    int pipe_r, pipe_w;
    struct event *ev_finished;
};

static void queue_init(struct job_queue *q)
{
    q->head = NULL;
    q->tail = &q->head;
}

static void queue_push(struct job_queue *q, struct job *j)
{
    j->next = NULL;
    *q->tail = j;
    q->tail = &j->next;
}

static struct job *queue_pop(struct job_queue *q)
{
    struct job *j = q->head;
    if (j && !(q->head = j->next))
        q->tail = &q->head;
    return j;
}

static void job_free(struct job *j)
{
    llm_request_free(j->rq);
    if (j->rc == 0)
        llm_response_free(&j->rs);
    free(j);
}

static void *run(void *arg)
{
    struct llm_sampler *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->stop && !s->todo.head)
            pthread_cond_wait(&s->wake, &s->mu);
        struct job *j = s->stop ? NULL : queue_pop(&s->todo);
        pthread_mutex_unlock(&s->mu);
        if (!j)
            return NULL;
        j->rc = llm_complete(s->llm, j->rq, &j->rs, &j->e);
        pthread_mutex_lock(&s->mu);
        queue_push(&s->finished, j);
        pthread_mutex_unlock(&s->mu);
        (void)!write(s->pipe_w, "", 1); /* a full pipe already says it */
    }
}

/* On the loop: the answers the thread has made. */
static void on_finished(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct llm_sampler *s = arg;
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    pthread_mutex_lock(&s->mu);
    struct job_queue done = s->finished;
    queue_init(&s->finished);
    pthread_mutex_unlock(&s->mu);
    for (struct job *j; (j = queue_pop(&done));) {
        if (j->rc < 0) {
            char why[300];
            snprintf(why, sizeof(why), "the hub's LLM call failed (%s)",
                     llm_error_kind_name(j->e.kind));
            j->done(j->done_ud, NULL, HUB_ERR_SPOKE, why);
        } else {
            j->done(j->done_ud, llm_sampling_result(&j->rs), 0, NULL);
        }
        job_free(j);
    }
}

static void create_message(struct sampling_hook *h, const struct hook_request *req,
                           hook_done_fn done, void *done_ud)
{
    struct llm_sampler *s = h->ud;
    char why[300];
    if (!llm_sampling_take(s->buckets, req->app, &s->limits)) {
        snprintf(why, sizeof(why), "sampling rate limit: at most %u requests per minute per app",
                 s->limits.per_minute);
        done(done_ud, NULL, HUB_ERR_BUSY, why);
        return;
    }
    struct llm_request *rq =
        llm_sampling_request(req->app, req->params, &s->limits, why, sizeof(why));
    if (!rq) {
        done(done_ud, NULL, JRPC_INVALID_PARAMS, why);
        return;
    }
    llm_request_set_user(rq, req->user);
    llm_request_set_cancel(rq, &s->stop);
    if (!s->started) {
        /* Every signal stays with the loop's thread (libevent's handlers, the hub's
         * SIGCHLD): the LLM thread starts with all of them blocked. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&s->thread, NULL, run, s);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            llm_request_free(rq);
            snprintf(why, sizeof(why), "the hub cannot start its LLM thread: %s", strerror(rc));
            done(done_ud, NULL, HUB_ERR_BUSY, why);
            return;
        }
        s->started = true;
    }
    struct job *j = xcalloc(1, sizeof(*j));
    j->rq = rq;
    j->done = done;
    j->done_ud = done_ud;
    pthread_mutex_lock(&s->mu);
    queue_push(&s->todo, j);
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
}

static void sampler_free(struct sampling_hook *h)
{
    struct llm_sampler *s = h->ud;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    if (s->started)
        pthread_join(s->thread, NULL);
    for (struct job *j; (j = queue_pop(&s->todo));)
        job_free(j);
    for (struct job *j; (j = queue_pop(&s->finished));)
        job_free(j);
    event_free(s->ev_finished);
    close(s->pipe_r);
    close(s->pipe_w);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    llm_sampling_buckets_free(s->buckets);
    llm_close(s->llm);
    free(s);
    free(h);
}

struct sampling_hook *serve_llm_sampling_hook(struct event_base *base, struct llm *llm,
                                              const struct llm_sampling_limits *limits, char *err,
                                              size_t errlen)
{
    int p[2];
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return NULL;
    }
    struct llm_sampler *s = xcalloc(1, sizeof(*s));
    s->llm = llm;
    s->limits = *limits;
    s->buckets = llm_sampling_buckets_new();
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    queue_init(&s->todo);
    queue_init(&s->finished);
    s->pipe_r = p[0];
    s->pipe_w = p[1];
    s->ev_finished = event_new(base, s->pipe_r, EV_READ | EV_PERSIST, on_finished, s);
    event_add(s->ev_finished, NULL);
    struct sampling_hook *h = xcalloc(1, sizeof(*h));
    h->create_message = create_message;
    h->free = sampler_free;
    h->ud = s;
    return h;
}
