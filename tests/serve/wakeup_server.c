/* wakeup_server: an HTTP/1.1 keep-alive server with known work per wake-up, for
 * tests/serve/test_arrival_truth.py. One epoll thread serves GET /plaintext ("Hello,
 * World!"). Each time epoll_wait returns it runs wakeup_work(): spin(KW). Then, for every
 * ready connection, it drains the socket: it reads until read() says EAGAIN, answering
 * every complete request as it goes, and after each answer runs tail_work(): spin(KT),
 * the logging and bookkeeping a real server does once the answer is out. spin's body is
 * inline asm (`dec; jnz`), 2 instructions an iteration, whatever the compiler does.
 *
 *   wakeup_server --port P [--wakeup-loop KW] [--tail-loop KT]
 *
 * A client that sends its next request as soon as it has an answer lands it while the
 * server is still in tail_work(); the drain finds it, and one wake-up serves two requests:
 * the per-request share of wakeup_work() then depends on how fast the client is. A request
 * sent only when the server is idle wakes it once: per request, exactly 2 * KW more.
 * SIGTERM keeps its default action, so callgrind writes its profile when stopped.
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
#include <unistd.h>

#define BUF_SIZE 16384
#define MAX_EVENTS 64

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/plain\r\n"
                               "Content-Length: 13\r\n"
                               "Connection: keep-alive\r\n"
                               "\r\n"
                               "Hello, World!";

static long wakeup_loop, tail_loop;
static volatile long wakeups, answers;

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
__attribute__((noinline)) static void wakeup_work(long k) {
    wakeups++;
    spin(k);
}

__attribute__((noinline)) static void tail_work(long k) {
    answers++;
    spin(k);
}

struct conn {
    int fd;
    size_t len;
    char in[BUF_SIZE];
};

/* Answer every complete request head in the buffer; -1 closes the connection. */
static int answer(struct conn *c) {
    size_t start = 0;
    char *end;
    while ((end = memmem(c->in + start, c->len - start, "\r\n\r\n", 4)) != NULL) {
        size_t sent = 0;
        while (sent < sizeof RESPONSE - 1) {
            ssize_t w = write(c->fd, RESPONSE + sent, sizeof RESPONSE - 1 - sent);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return -1;
            sent += (size_t)w;
        }
        tail_work(tail_loop);
        start = (size_t)(end - c->in) + 4;
    }
    memmove(c->in, c->in + start, c->len - start);
    c->len -= start;
    return c->len == BUF_SIZE ? -1 : 0;
}

/* Read until the socket is empty; -1 closes the connection. */
static int drain(struct conn *c) {
    for (;;) {
        ssize_t r = read(c->fd, c->in + c->len, BUF_SIZE - c->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return 0;
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
        if (answer(c) < 0)
            return -1;
    }
}

int main(int argc, char **argv) {
    int port = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (strcmp(a, "--port") == 0)
            port = atoi(v);
        else if (strcmp(a, "--wakeup-loop") == 0)
            wakeup_loop = atol(v);
        else if (strcmp(a, "--tail-loop") == 0)
            tail_loop = atol(v);
        else
            port = -1, i = argc;
    }
    if (argc % 2 == 0 || port < 0 || port > 65535) {
        fprintf(stderr, "usage: wakeup_server --port P [--wakeup-loop KW] [--tail-loop KT]\n");
        return 2;
    }
    int one = 1;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 128) < 0) {
        perror("wakeup_server: bind/listen");
        return 1;
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);

    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(ep, events, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("wakeup_server: epoll_wait");
            return 1;
        }
        wakeup_work(wakeup_loop);
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct conn *nc = calloc(1, sizeof *nc);
                    nc->fd = fd;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            if (drain(c) < 0) {
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                free(c);
            }
        }
    }
}
