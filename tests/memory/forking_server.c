/* A two-process HTTP server for icount serve --memory's test: the parent touches
   PARENT_MIB MiB and answers "hi" on every request; a forked child touches CHILD_MIB
   MiB and waits. Their peaks sum to both amounts (and two small process images). */
#include <arpa/inet.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

char *volatile kept; /* so that the compiler keeps the allocation and its writes */

static void touch(size_t mib) {
    kept = malloc(mib << 20);
    memset(kept, 1, mib << 20);
}

int main(int argc, char **argv) {
    int port = atoi(argv[1]);
    signal(SIGPIPE, SIG_IGN);
    int done[2];
    char byte = 0;
    if (pipe(done)) return 1;
    if (fork() == 0) {
        touch(CHILD_MIB);
        if (write(done[1], &byte, 1) != 1) return 1;  /* its memory is all there now */
        for (;;) pause();
    }
    /* listen only once the child has touched its memory: the server is ready with both
       peaks reached, and no window counts the child's memset */
    if (read(done[0], &byte, 1) != 1) return 1;
    touch(PARENT_MIB);
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 16)) return 1;
    static const char answer[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nhi";
    char buf[4096];
    for (;;) {
        int c = accept(s, 0, 0);
        if (c < 0) continue;
        while (read(c, buf, sizeof buf) > 0) {
            for (volatile int i = 0; i < 1000; i++) {}  /* a request path icount can count */
            if (write(c, answer, sizeof answer - 1) < 0) break;
        }
        close(c);
    }
}
