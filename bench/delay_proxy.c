/*
 * A TCP proxy on 127.0.0.1 that puts a network's round trip between a client and a
 * server, for bench/network.sh:
 *
 *     delay_proxy LISTEN_PORT TARGET_PORT ONE_WAY_USEC
 *
 * Every connection accepted on 127.0.0.1:LISTEN_PORT is joined to a new connection to
 * 127.0.0.1:TARGET_PORT. Each chunk read from one side is written to the other
 * ONE_WAY_USEC microseconds after it was read, in the order it was read (a FIFO per
 * direction), so a request and its answer together cost 2 x ONE_WAY_USEC more than on
 * the loopback: a round trip of a real network, without its bandwidth limit. A side's
 * end of stream is passed on (shutdown) after the same delay. One thread, ppoll() with a
 * nanosecond timeout and a timer slack of 1 ns. No chunk leaves before it is due: a timed
 * wake-up that comes late on a loaded machine (about 0.1 ms was seen) adds to the delay,
 * as a busy host adds to a real network's. (Waking early by the lateness learned from
 * the last wake-ups, as this proxy once did, fed on itself: under load the lateness
 * learned reached the delay, every chunk was then due at once, no timed wake-up was left
 * to learn from, and the proxy delayed nothing for the rest of its life.) Prints
 * "listening" on stdout once it accepts; runs until killed. When a connection ends it
 * prints on stderr "turns N": how many times the client spoke after the server had (or
 * first), that is the round trips the client waited for, counted whatever the load.
 * Build: cc -O2 -o delay_proxy delay_proxy.c
 *
 * Written in C, not in a scripting language: an event loop whose timeouts are rounded to
 * milliseconds (epoll_wait, Python's asyncio) cannot keep a 0.1 ms delay.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 512
#define READ_BYTES 65536
#define MAX_QUEUED (4 << 20) /* stop reading a side while this much waits for the other */

/* One chunk in flight: its bytes, or (eof) the end of the source's stream. */
struct chunk {
    struct chunk *next;
    uint64_t due_ns;
    size_t len, off;
    int eof;
    char data[];
};

/* One direction of a connection: bytes read from `from`, waiting to be written to `to`. */
struct pipe_dir {
    int from, to;
    struct chunk *head, *tail;
    size_t queued;
    int read_done;  /* the source ended: nothing more is read */
    int write_done; /* its end was passed on */
};

/* A joined pair: dir[0] client -> server, dir[1] server -> client. */
struct conn {
    int used;
    int client, server;
    struct pipe_dir dir[2];
    int last_from;      /* the side read last: 0 client, 1 server, -1 none yet */
    unsigned long turns; /* client reads that followed a server read (or came first) */
};

static struct conn conns[MAX_CONNS];
static uint64_t delay_ns;

/* The monotonic clock in nanoseconds. */
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Prints the failure and exits: the proxy is a benchmark tool, it does not limp on. */
static void die(const char *what) {
    fprintf(stderr, "delay_proxy: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* Non-blocking, with Nagle off: a small message leaves at once, as libpq and the server
 * themselves ask of their sockets. */
static void tune(int fd) {
    int one = 1;
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Appends a chunk (len bytes, or the end of stream when eof) due after the delay. */
static void enqueue(struct pipe_dir *d, const char *buf, size_t len, int eof) {
    struct chunk *c = malloc(sizeof *c + len);
    if (c == NULL) die("malloc");
    c->next = NULL;
    c->due_ns = now_ns() + delay_ns;
    c->len = len;
    c->off = 0;
    c->eof = eof;
    if (len > 0) memcpy(c->data, buf, len);
    if (d->tail) d->tail->next = c;
    else d->head = c;
    d->tail = c;
    d->queued += len;
}

/* Frees everything of a connection, closes both sockets, and prints its turns. */
static void drop(struct conn *c) {
    fprintf(stderr, "turns %lu\n", c->turns);
    for (int i = 0; i < 2; i++) {
        struct chunk *k = c->dir[i].head;
        while (k) {
            struct chunk *next = k->next;
            free(k);
            k = next;
        }
    }
    close(c->client);
    close(c->server);
    memset(c, 0, sizeof *c);
}

/* Accepts one client and joins it to a new connection to the target. */
static void accept_one(int listener, int target_port) {
    int cfd = accept(listener, NULL, NULL);
    if (cfd < 0) return;
    int sfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)target_port)};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (sfd < 0 || connect(sfd, (struct sockaddr *)&to, sizeof to) < 0) {
        fprintf(stderr, "delay_proxy: connect to port %d: %s\n", target_port, strerror(errno));
        close(cfd);
        if (sfd >= 0) close(sfd);
        return;
    }
    for (int i = 0; i < MAX_CONNS; i++) {
        if (conns[i].used) continue;
        struct conn *c = &conns[i];
        tune(cfd);
        tune(sfd);
        c->used = 1;
        c->client = cfd;
        c->server = sfd;
        c->dir[0] = (struct pipe_dir){.from = cfd, .to = sfd};
        c->dir[1] = (struct pipe_dir){.from = sfd, .to = cfd};
        c->last_from = -1;
        c->turns = 0;
        return;
    }
    fprintf(stderr, "delay_proxy: more than %d connections\n", MAX_CONNS);
    close(cfd);
    close(sfd);
}

/* Reads what side `from` (0 client, 1 server) has; returns -1 when the connection must be
 * dropped. */
static int pump_in(struct conn *c, int from) {
    static char buf[READ_BYTES];
    struct pipe_dir *d = &c->dir[from];
    for (;;) {
        ssize_t n = read(d->from, buf, sizeof buf);
        if (n > 0) {
            if (from == 0 && c->last_from != 0) c->turns++;
            c->last_from = from;
            enqueue(d, buf, (size_t)n, 0);
            if (d->queued >= MAX_QUEUED) return 0;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
        if (n < 0 && errno != ECONNRESET) return -1;
        enqueue(d, NULL, 0, 1); /* end of stream (or a reset), passed on after the delay */
        d->read_done = 1;
        return 0;
    }
}

/* Writes every chunk due by `now` that the destination takes; returns -1 to drop the
 * connection. */
static int pump_out(struct pipe_dir *d, uint64_t now) {
    while (d->head && d->head->due_ns <= now) {
        struct chunk *k = d->head;
        if (k->eof) {
            shutdown(d->to, SHUT_WR);
            d->write_done = 1;
        } else {
            ssize_t n = write(d->to, k->data + k->off, k->len - k->off);
            if (n < 0) return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
            k->off += (size_t)n;
            d->queued -= (size_t)n;
            if (k->off < k->len) return 0;
        }
        d->head = k->next;
        if (d->head == NULL) d->tail = NULL;
        free(k);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: delay_proxy LISTEN_PORT TARGET_PORT ONE_WAY_USEC\n");
        return 2;
    }
    int listen_port = atoi(argv[1]), target_port = atoi(argv[2]);
    delay_ns = (uint64_t)strtoull(argv[3], NULL, 10) * 1000u;
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (listener < 0) die("socket");
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port)};
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&at, sizeof at) < 0) die("bind");
    if (listen(listener, 128) < 0) die("listen");
    printf("listening\n");
    fflush(stdout);

    static struct pollfd fds[1 + 2 * MAX_CONNS];
    static int owner[1 + 2 * MAX_CONNS];
    for (;;) {
        uint64_t now = now_ns(), next_due = UINT64_MAX;
        int nfds = 0;
        fds[nfds++] = (struct pollfd){.fd = listener, .events = POLLIN};
        for (int i = 0; i < MAX_CONNS; i++) {
            struct conn *c = &conns[i];
            if (!c->used) continue;
            if (pump_out(&c->dir[0], now) < 0 || pump_out(&c->dir[1], now) < 0 ||
                (c->dir[0].write_done && c->dir[1].write_done)) {
                drop(c);
                continue;
            }
            /* Each socket: readable while its direction reads; writable while a due chunk waits. */
            for (int s = 0; s < 2; s++) {
                int fd = s == 0 ? c->client : c->server;
                struct pipe_dir *in = &c->dir[s], *out = &c->dir[1 - s];
                short ev = 0;
                if (!in->read_done && in->queued < MAX_QUEUED) ev |= POLLIN;
                if (out->head && out->head->due_ns <= now) ev |= POLLOUT;
                else if (out->head && out->head->due_ns < next_due) next_due = out->head->due_ns;
                owner[nfds] = i;
                /* Nothing asked of it: left out (a closed side would report POLLHUP at once). */
                fds[nfds++] = (struct pollfd){.fd = ev ? fd : -1, .events = ev};
            }
        }
        struct timespec ts, *timeout = NULL;
        if (next_due != UINT64_MAX) {
            uint64_t wait = next_due > now ? next_due - now : 0;
            ts.tv_sec = (time_t)(wait / 1000000000u);
            ts.tv_nsec = (long)(wait % 1000000000u);
            timeout = &ts;
        }
        int ready = ppoll(fds, (nfds_t)nfds, timeout, NULL);
        if (ready < 0) {
            if (errno == EINTR) continue;
            die("ppoll");
        }
        if (fds[0].revents & POLLIN) accept_one(listener, target_port);
        for (int f = 1; f < nfds; f++) {
            if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            struct conn *c = &conns[owner[f]];
            if (!c->used) continue;
            int from = fds[f].fd == c->client ? 0 : 1;
            if (!c->dir[from].read_done && pump_in(c, from) < 0) drop(c);
        }
    }
}
