/* c-epoll: a single-threaded epoll HTTP/1.1 keep-alive server, the reference target of
 * `icount serve`. It answers GET /plaintext and GET /json with fixed bytes (no Date
 * header, so every answer is identical and its cost does not drift with the clock).
 *
 *   c-epoll --port P [--loop K] [--crash-after N] [--status CODE] [--body TEXT] [--vary FILE]
 *           [--workers N | --threads N | --fork-per-connection] [--daemonize [--linger-ms MS]]
 *
 * Test flags (used by icount's own tests):
 *   --loop K         run K iterations of a loop of known cost per request. The loop body is
 *                    inline asm (x86-64: `dec; jnz`, aarch64: `subs; b.ne`), so it costs
 *                    exactly 2 instructions per iteration and the compiler cannot remove it
 *                    (measured under callgrind: see adapters/README.md).
 *   --crash-after N  abort() on request N+1 (a server that dies mid-run).
 *   --status CODE    answer every request with this status code (a wrong answer).
 *   --body TEXT      answer every request with this body (a wrong answer).
 *   --vary FILE      make each process cost more than the one before: FILE counts the
 *                    processes started with it (n = 1, 2, ...), and process n runs n * 1000
 *                    more loop iterations per request, i.e. 2,000 more instructions per
 *                    request than process n - 1 (> 1% of any total below 200,000).
 * Server shapes (how real servers spread their work; the same request path in each):
 *   --workers N      pre-fork: the started process forks N workers that share the listen
 *                    socket (EPOLLEXCLUSIVE), then only waits for them;
 *   --threads N      N threads in one process, each with its own epoll on the socket;
 *   --fork-per-connection  the started process accepts, and forks a child that serves
 *                    one connection (blocking I/O) until the client closes it.
 *   --daemonize      the started process forks, and exits 0 once the child (in a new
 *                    session) listens: a server that puts itself in the background.
 *   --linger-ms MS   with --daemonize: the started process exits MS ms after the fork,
 *                    so that its child answers while it is still running (as a slow
 *                    exit under valgrind does).
 *   --every N --every-loop K   every Nth request also runs periodic_work(): K loop
 *                    iterations (a collector's periodic work, under its own name).
 *   --every-thread   with --every: the Nth request wakes a second thread instead, which
 *                    runs background_work(): K loop iterations (a collector's helper
 *                    thread); one process only.
 *   --tick-ms T --tick-loop K  every T ms, whatever the requests, tick_work() runs K loop
 *                    iterations (work driven by the clock), on an absolute schedule.
 * SIGTERM keeps its default action, so callgrind writes its profile when stopped.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define BUF_SIZE 16384

struct conn {
    int fd;
    size_t len;         /* bytes of request data buffered in `in` */
    size_t out_len;     /* bytes still to write from `out` */
    size_t out_off;
    char in[BUF_SIZE];
    char *out;          /* pending output (only when a write was partial) */
    size_t out_cap;
};

static long loop_iterations;
static long every_n, every_loop;     /* --every N --every-loop K */
static long tick_ms, tick_loop;      /* --tick-ms T --tick-loop K */
static long crash_after = -1;
static long handled;
static int status_code = 200;
static const char *body_override;

static char *resp_plain, *resp_json, *resp_404;
static size_t resp_plain_len, resp_json_len, resp_404_len;

static void spin(long k) {
    if (k <= 0)
        return;
#if defined(__x86_64__)
    __asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(k) : : "cc");
#elif defined(__aarch64__)
    __asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(k) : : "cc");
#else
    /* Portable fallback: cost per iteration is compiler-dependent (not documented). */
    volatile long v = k;
    while (v > 0)
        v = v - 1;
#endif
}

/* Work that comes every Nth request (as a collector's does), under a name of its own.
 * The two functions count their calls in different variables, so that the compiler
 * cannot fold their identical loops into one symbol (gcc -O2's identical code folding). */
static volatile long periodic_calls, ticks;

__attribute__((noinline)) static void periodic_work(long k) {
    periodic_calls++;
    spin(k);
}

/* --every-thread: the Nth request writes a byte here; collector_thread() reads it and
 * runs background_work() (as a runtime's helper thread collects apart from serving). */
static int collector_pipe[2] = {-1, -1};
static volatile long background_calls;

__attribute__((noinline)) static void background_work(long k) {
    background_calls++;
    spin(k);
}

static void *collector_thread(void *arg) {
    (void)arg;
    char b;
    while (read(collector_pipe[0], &b, 1) == 1)
        background_work(every_loop);
    return NULL;
}

static void wake_collector(void) {
    char b = 0;
    if (write(collector_pipe[1], &b, 1) != 1)
        abort();
}

/* Work driven by the clock, not by requests (timers, heartbeats). */
__attribute__((noinline)) static void tick_work(long k) {
    ticks++;
    spin(k);
}

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *reason(int code) {
    switch (code) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 500: return "Internal Server Error";
    default: return "Status";
    }
}

static char *make_response(int code, const char *type, const char *body, size_t *len_out) {
    size_t body_len = strlen(body);
    size_t cap = 256 + body_len;
    char *buf = malloc(cap);
    if (!buf) {
        perror("malloc");
        exit(1);
    }
    int n = snprintf(buf, cap,
                     "HTTP/1.1 %d %s\r\n"
                     "Server: c-epoll\r\n"
                     "Content-Type: %s\r\n"
                     "Content-Length: %zu\r\n"
                     "Connection: keep-alive\r\n"
                     "Keep-Alive: timeout=600\r\n"
                     "\r\n",
                     code, reason(code), type, body_len);
    memcpy(buf + n, body, body_len);
    *len_out = (size_t)n + body_len;
    return buf;
}

static void close_conn(int ep, struct conn *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->out);
    free(c);
}

/* Queue bytes for writing; returns -1 if the connection must be closed. Without an
 * epoll set (ep < 0: a blocking connection of --fork-per-connection) it writes all. */
static int send_bytes(int ep, struct conn *c, const char *data, size_t len) {
    if (ep < 0) {
        while (len > 0) {
            ssize_t w = write(c->fd, data, len);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                return -1;
            }
            data += w;
            len -= (size_t)w;
        }
        return 0;
    }
    if (c->out_len == 0) {
        ssize_t w = write(c->fd, data, len);
        if (w < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -1;
            w = 0;
        }
        if ((size_t)w == len)
            return 0;
        data += w;
        len -= (size_t)w;
    }
    /* Partial write: keep the rest and wait for EPOLLOUT. */
    size_t need = c->out_off + c->out_len + len;
    if (need > c->out_cap) {
        char *p = realloc(c->out, need);
        if (!p)
            return -1;
        c->out = p;
        c->out_cap = need;
    }
    memcpy(c->out + c->out_off + c->out_len, data, len);
    c->out_len += len;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    return 0;
}

static int flush_out(int ep, struct conn *c) {
    while (c->out_len > 0) {
        ssize_t w = write(c->fd, c->out + c->out_off, c->out_len);
        if (w < 0)
            return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
        c->out_off += (size_t)w;
        c->out_len -= (size_t)w;
    }
    c->out_off = 0;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    return 0;
}

/* Parse and answer every complete request in the buffer; -1 closes the connection. */
static int handle_requests(int ep, struct conn *c) {
    size_t start = 0;
    for (;;) {
        char *head = c->in + start;
        size_t avail = c->len - start;
        char *end = memmem(head, avail, "\r\n\r\n", 4);
        if (!end)
            break;
        size_t head_len = (size_t)(end - head) + 4;
        /* Request bodies are not expected; a Content-Length body is skipped. */
        size_t body_len = 0;
        char *cl = memmem(head, head_len, "\r\nContent-Length:", 17);
        if (cl)
            body_len = strtoul(cl + 17, NULL, 10);
        if (head_len + body_len > avail) {
            if (head_len + body_len > BUF_SIZE)
                return -1;
            break;
        }
        if (crash_after >= 0 && __atomic_load_n(&handled, __ATOMIC_RELAXED) >= crash_after)
            abort();
        __atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
        spin(loop_iterations);
        if (every_n > 0 && __atomic_load_n(&handled, __ATOMIC_RELAXED) % every_n == 0) {
            if (collector_pipe[1] >= 0)
                wake_collector();
            else
                periodic_work(every_loop);
        }

        const char *resp = resp_404;
        size_t resp_len = resp_404_len;
        if (head_len >= 15 && memcmp(head, "GET /plaintext ", 15) == 0) {
            resp = resp_plain;
            resp_len = resp_plain_len;
        } else if (head_len >= 10 && memcmp(head, "GET /json ", 10) == 0) {
            resp = resp_json;
            resp_len = resp_json_len;
        }
        if (send_bytes(ep, c, resp, resp_len) < 0)
            return -1;
        start += head_len + body_len;
    }
    if (start > 0) {
        memmove(c->in, c->in + start, c->len - start);
        c->len -= start;
    }
    if (c->len == BUF_SIZE)
        return -1; /* a request head larger than the buffer */
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: c-epoll --port P [--loop K] [--crash-after N] [--status CODE] "
                    "[--body TEXT] [--vary FILE] [--workers N | --threads N | "
                    "--fork-per-connection] [--daemonize [--linger-ms MS]] [--every N --every-loop K] "
                    "[--every-thread] [--tick-ms T --tick-loop K]\n");
    exit(2);
}

/* The epoll loop of one process or thread. `shared`: other loops wait on the same listen
 * socket, and EPOLLEXCLUSIVE wakes one of them per connection, not all. */
static int serve_loop(int lfd, int shared) {
    int one = 1;
    int ep = epoll_create1(0);
    struct epoll_event lev = {.events = EPOLLIN | (shared ? EPOLLEXCLUSIVE : 0), .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);

    struct epoll_event events[MAX_EVENTS];
    /* ticks on an absolute schedule: their number per second does not depend on how
       long each takes, under valgrind or not */
    long next_tick = tick_ms > 0 ? now_ms() + tick_ms : 0;
    for (;;) {
        int timeout = -1;
        if (tick_ms > 0) {
            long now = now_ms();
            while (next_tick <= now) {
                tick_work(tick_loop);
                next_tick += tick_ms;
            }
            timeout = (int)(next_tick - now);
        }
        int n = epoll_wait(ep, events, MAX_EVENTS, timeout);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("c-epoll: epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                for (;;) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
                    if (fd < 0)
                        break;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *nc = calloc(1, sizeof *nc);
                    if (!nc) {
                        close(fd);
                        continue;
                    }
                    nc->fd = fd;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            if ((events[i].events & EPOLLOUT) && flush_out(ep, c) < 0) {
                close_conn(ep, c);
                continue;
            }
            if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                ssize_t r = read(c->fd, c->in + c->len, BUF_SIZE - c->len);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                    close_conn(ep, c);
                    continue;
                }
                if (r > 0) {
                    c->len += (size_t)r;
                    if (handle_requests(ep, c) < 0)
                        close_conn(ep, c);
                }
            }
        }
    }
}

static void *serve_thread(void *arg) {
    serve_loop((int)(long)arg, 1);
    return NULL;
}

/* --fork-per-connection: one child per accepted connection, blocking I/O until EOF. */
static int fork_loop(int lfd) {
    int one = 1;
    signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
    int flags = fcntl(lfd, F_GETFL);
    fcntl(lfd, F_SETFL, flags & ~O_NONBLOCK);
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            perror("c-epoll: accept");
            return 1;
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("c-epoll: fork");
            close(fd);
            continue;
        }
        if (pid > 0) {
            close(fd);
            continue;
        }
        close(lfd);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = calloc(1, sizeof *c);
        if (!c)
            _exit(1);
        c->fd = fd;
        for (;;) {
            ssize_t r = read(fd, c->in + c->len, BUF_SIZE - c->len);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                _exit(0);
            c->len += (size_t)r;
            if (handle_requests(-1, c) < 0)
                _exit(0);
        }
    }
}

int main(int argc, char **argv) {
    int port = -1;
    const char *vary_file = NULL;
    int workers = 0, threads = 0, fork_per_connection = 0, daemonize = 0, every_thread = 0;
    long linger_ms = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--fork-per-connection") == 0) {
            fork_per_connection = 1;
            continue;
        }
        if (strcmp(a, "--daemonize") == 0) {
            daemonize = 1;
            continue;
        }
        if (strcmp(a, "--every-thread") == 0) {
            every_thread = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (strcmp(a, "--port") == 0)
            port = atoi(v);
        else if (strcmp(a, "--linger-ms") == 0)
            linger_ms = atol(v);
        else if (strcmp(a, "--loop") == 0)
            loop_iterations = atol(v);
        else if (strcmp(a, "--crash-after") == 0)
            crash_after = atol(v);
        else if (strcmp(a, "--status") == 0)
            status_code = atoi(v);
        else if (strcmp(a, "--body") == 0)
            body_override = v;
        else if (strcmp(a, "--vary") == 0)
            vary_file = v;
        else if (strcmp(a, "--workers") == 0)
            workers = atoi(v);
        else if (strcmp(a, "--every") == 0)
            every_n = atol(v);
        else if (strcmp(a, "--every-loop") == 0)
            every_loop = atol(v);
        else if (strcmp(a, "--tick-ms") == 0)
            tick_ms = atol(v);
        else if (strcmp(a, "--tick-loop") == 0)
            tick_loop = atol(v);
        else if (strcmp(a, "--threads") == 0)
            threads = atoi(v);
        else
            usage();
    }
    if (port < 0 || port > 65535 || workers < 0 || threads < 0 ||
        (workers > 0) + (threads > 1) + fork_per_connection > 1 ||
        (every_thread && (workers > 0 || threads > 1 || fork_per_connection || daemonize)))
        usage();
    if (vary_file) {
        long n = 0;
        FILE *f = fopen(vary_file, "r");
        if (f) {
            if (fscanf(f, "%ld", &n) != 1)
                n = 0;
            fclose(f);
        }
        f = fopen(vary_file, "w");
        if (!f) {
            perror(vary_file);
            exit(2);
        }
        fprintf(f, "%ld\n", n + 1);
        fclose(f);
        loop_iterations += (n + 1) * 1000;
    }

    resp_plain = make_response(status_code, "text/plain",
                               body_override ? body_override : "Hello, World!", &resp_plain_len);
    resp_json = make_response(status_code, "application/json",
                              body_override ? body_override : "{\"message\":\"Hello, World!\"}",
                              &resp_json_len);
    resp_404 = make_response(404, "text/plain", "Not Found", &resp_404_len);
    signal(SIGPIPE, SIG_IGN);
    if (every_thread) {
        pthread_t helper;
        if (pipe(collector_pipe) < 0 || pthread_create(&helper, NULL, collector_thread, NULL)) {
            perror("c-epoll: --every-thread");
            return 1;
        }
    }

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 1024) < 0) {
        perror("c-epoll: bind/listen");
        return 1;
    }
    if (daemonize) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("c-epoll: fork");
            return 1;
        }
        if (pid > 0) {
            if (linger_ms > 0) {
                struct timespec linger = {linger_ms / 1000, (linger_ms % 1000) * 1000000L};
                nanosleep(&linger, NULL);
            }
            return 0; /* the listening socket is the child's now */
        }
        setsid();
    }
    if (workers > 0) {
        for (int w = 0; w < workers; w++) {
            pid_t pid = fork();
            if (pid < 0) {
                perror("c-epoll: fork");
                return 1;
            }
            if (pid == 0)
                return serve_loop(lfd, 1);
        }
        while (wait(NULL) > 0) {
        }
        return 1; /* every worker is gone */
    }
    if (threads > 1) {
        for (int t = 1; t < threads; t++) {
            pthread_t tid;
            if (pthread_create(&tid, NULL, serve_thread, (void *)(long)lfd) != 0) {
                perror("c-epoll: pthread_create");
                return 1;
            }
        }
        return serve_loop(lfd, 1);
    }
    if (fork_per_connection)
        return fork_loop(lfd);
    return serve_loop(lfd, 0);
}
