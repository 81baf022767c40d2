/* clock_server: an HTTP/1.1 keep-alive server with known work per request and known work
 * per second, for tests/serve/test_clock_driven.py. One epoll thread serves GET /plaintext
 * ("Hello, World!"); each request runs spin(K). Apart from the requests, every T ms a
 * timer runs tick_work(): spin(KT). spin's body is inline asm (`dec; jnz`), 2 instructions
 * an iteration, so the clock's work is 2 * KT * 1000 / T instructions a second, whatever
 * the compiler does.
 *
 *   clock_server --port P [--loop K] [--tick-ms T --tick-loop KT] [--timer MODE]
 *
 * The timer is set up in every mode, and with --tick-ms 0 (the default) it never fires: the
 * same process shape without the clock's work (with a second thread glibc takes its
 * multi-threaded paths in every call, which costs each request more).
 * MODE is how the timer is driven, as real servers drive theirs:
 *   thread         a second thread, clock_nanosleep to absolute deadlines 10, 20, 30... ms:
 *                  a tick the machine delayed runs late, and the ones missed run at once
 *                  after it (catching up), so ticks per second do not depend on load;
 *   thread-sleep   a second thread sleeping T ms after each tick (a relative sleep): a
 *                  delayed tick delays all that follow, so a busy machine runs fewer;
 *   timerfd        a periodic timerfd in the serving thread's epoll set: tick_work once
 *                  per expiration read (timerfd counts the ones missed: catching up);
 *   timerfd-once   the same timerfd, tick_work once per wake-up however many expired
 *                  (an event loop that drops missed ticks).
 * SIGTERM keeps its default action, so callgrind writes its profile when stopped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE 16384
#define MAX_EVENTS 64

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/plain\r\n"
                               "Content-Length: 13\r\n"
                               "Connection: keep-alive\r\n"
                               "\r\n"
                               "Hello, World!";

static long loop_k, tick_ms, tick_loop;
static const char *timer_mode = "thread";
static volatile long ticks, requests;

static void spin(long k) {
    if (k <= 0)
        return;
#if defined(__x86_64__)
    __asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(k) : : "cc");
#elif defined(__aarch64__)
    __asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(k) : : "cc");
#else
#error "spin() needs x86-64 or aarch64"
#endif
}

/* Separate noinline functions, each counting in its own variable: gcc cannot fold them. */
__attribute__((noinline)) static void tick_work(long k) {
    ticks++;
    spin(k);
}

__attribute__((noinline)) static void request_work(long k) {
    requests++;
    spin(k);
}

static void *timer_thread(void *arg) {
    (void)arg;
    if (tick_ms == 0)
        for (;;)
            pause();
    int absolute = strcmp(timer_mode, "thread") == 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        if (absolute) {
            next.tv_nsec += tick_ms * 1000000L;
            while (next.tv_nsec >= 1000000000L) {
                next.tv_nsec -= 1000000000L;
                next.tv_sec++;
            }
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
                ;
        } else {
            struct timespec d = {tick_ms / 1000, (tick_ms % 1000) * 1000000L};
            while (clock_nanosleep(CLOCK_MONOTONIC, 0, &d, &d) == EINTR)
                ;
        }
        tick_work(tick_loop);
    }
    return NULL;
}

struct conn {
    int fd;
    size_t len;
    char in[BUF_SIZE];
};

/* Answer every complete request head in the buffer; -1 closes the connection. */
static int handle(struct conn *c) {
    size_t start = 0;
    char *end;
    while ((end = memmem(c->in + start, c->len - start, "\r\n\r\n", 4)) != NULL) {
        request_work(loop_k);
        size_t sent = 0;
        while (sent < sizeof RESPONSE - 1) {
            ssize_t w = write(c->fd, RESPONSE + sent, sizeof RESPONSE - 1 - sent);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && errno == EAGAIN) { /* a small answer to a client that reads */
                struct timespec t = {0, 100000};
                nanosleep(&t, NULL);
                continue;
            }
            if (w <= 0)
                return -1;
            sent += (size_t)w;
        }
        start = (size_t)(end - c->in) + 4;
    }
    memmove(c->in, c->in + start, c->len - start);
    c->len -= start;
    return c->len == BUF_SIZE ? -1 : 0;
}

static void usage(void) {
    fprintf(stderr, "usage: clock_server --port P [--loop K] [--tick-ms T --tick-loop KT "
                    "--timer thread|thread-sleep|timerfd|timerfd-once]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int port = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--port") == 0)
            port = atoi(v);
        else if (strcmp(a, "--loop") == 0)
            loop_k = atol(v);
        else if (strcmp(a, "--tick-ms") == 0)
            tick_ms = atol(v);
        else if (strcmp(a, "--tick-loop") == 0)
            tick_loop = atol(v);
        else if (strcmp(a, "--timer") == 0)
            timer_mode = v;
        else
            usage();
    }
    int on_thread = strncmp(timer_mode, "thread", 6) == 0;
    int on_fd = strncmp(timer_mode, "timerfd", 7) == 0;
    int once = strcmp(timer_mode, "timerfd-once") == 0;
    if (argc % 2 == 0 || port < 0 || port > 65535 || tick_ms < 0 || (!on_thread && !on_fd) ||
        (on_thread && strcmp(timer_mode, "thread") != 0 && strcmp(timer_mode, "thread-sleep") != 0) ||
        (on_fd && !once && strcmp(timer_mode, "timerfd") != 0))
        usage();

    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 128) < 0) {
        perror("clock_server: bind/listen");
        return 1;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);

    int tfd = -1;
    static int tfd_tag; /* the timerfd's epoll tag: the address of this variable */
    if (on_thread) {
        pthread_t t;
        if (pthread_create(&t, NULL, timer_thread, NULL) != 0) {
            perror("clock_server: pthread_create");
            return 1;
        }
    } else {
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
        struct timespec p = {tick_ms / 1000, (tick_ms % 1000) * 1000000L};
        struct itimerspec its = {.it_interval = p, .it_value = p}; /* 0: disarmed */
        timerfd_settime(tfd, 0, &its, NULL);
        struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &tfd_tag};
        epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);
    }

    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, events, MAX_EVENTS, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            perror("clock_server: epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            if (tag == &tfd_tag) {
                uint64_t expired = 0;
                if (read(tfd, &expired, sizeof expired) != sizeof expired)
                    continue;
                for (uint64_t j = 0; j < (once ? 1 : expired); j++)
                    tick_work(tick_loop);
            } else if (tag == NULL) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *c = calloc(1, sizeof *c);
                    if (!c) {
                        close(fd);
                        continue;
                    }
                    c->fd = fd;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
            } else {
                struct conn *c = tag;
                ssize_t r = read(c->fd, c->in + c->len, BUF_SIZE - c->len);
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                    continue;
                if (r > 0) {
                    c->len += (size_t)r;
                    if (handle(c) == 0)
                        continue;
                }
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                free(c);
            }
        }
    }
}
