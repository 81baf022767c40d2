/* lazy_clock_server: an HTTP/1.1 keep-alive server with known work per request and known
 * work that the clock leaves for the next request, for tests/serve/test_lazy_clock.py. One
 * epoll thread serves GET /plaintext ("Hello, World!"); each request runs spin(K). As
 * lighttpd does: epoll_wait times out after 1 s, and the first pass of the loop in a new
 * second of the wall clock (time()) runs tick_work(): spin(KT), and marks a cache stale;
 * the next request rebuilds it: rebuild_work(), spin(KR). With no request the ticks run,
 * and the rebuilds wait. spin's body is inline asm (`dec; jnz`), 2 instructions an
 * iteration, whatever the compiler does.
 *
 *   lazy_clock_server --port P [--loop K] [--tick-loop KT] [--rebuild-loop KR]
 *
 * With KT and KR 0 the same process runs the same branches: the server without the
 * clock's work. SIGTERM keeps its default action, so callgrind writes its profile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
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

static long loop_k, tick_loop, rebuild_loop;
static volatile long ticks, rebuilds, requests;
static int stale; /* the cache a tick invalidated, rebuilt by the next request */

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

__attribute__((noinline)) static void rebuild_work(long k) {
    rebuilds++;
    spin(k);
}

__attribute__((noinline)) static void request_work(long k) {
    requests++;
    spin(k);
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
        if (stale) {
            rebuild_work(rebuild_loop);
            stale = 0;
        }
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
    fprintf(stderr, "usage: lazy_clock_server --port P [--loop K] [--tick-loop KT] "
                    "[--rebuild-loop KR]\n");
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
        else if (strcmp(a, "--tick-loop") == 0)
            tick_loop = atol(v);
        else if (strcmp(a, "--rebuild-loop") == 0)
            rebuild_loop = atol(v);
        else
            usage();
    }
    if (argc % 2 == 0 || port < 0 || port > 65535)
        usage();

    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 128) < 0) {
        perror("lazy_clock_server: bind/listen");
        return 1;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);

    time_t second = time(NULL);
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, events, MAX_EVENTS, 1000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            perror("lazy_clock_server: epoll_wait");
            return 1;
        }
        time_t now = time(NULL);
        if (now != second) { /* the loop's first pass in a new second */
            second = now;
            tick_work(tick_loop);
            stale = 1;
        }
        for (int i = 0; i < n; i++) {
            void *tag = events[i].data.ptr;
            if (tag == NULL) {
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
