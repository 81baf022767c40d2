/* A keep-alive HTTP server that runs /bin/true for every request (fork, exec, wait)
   before it answers: a process exec'd inside every window. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char ANSWER[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 8080;
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 64)) return perror("listen"), 1;
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        char buf[4096];
        size_t have = 0;
        ssize_t n;
        while (c >= 0 && (n = read(c, buf + have, sizeof buf - 1 - have)) > 0) {
            have += (size_t)n;
            buf[have] = 0;
            char *end;
            while ((end = strstr(buf, "\r\n\r\n")) != NULL) {
                pid_t pid = fork();
                if (pid == 0) {
                    execl("/bin/true", "true", (char *)NULL);
                    _exit(127);
                }
                waitpid(pid, NULL, 0);
                if (write(c, ANSWER, sizeof ANSWER - 1) < 0) break;
                size_t used = (size_t)(end + 4 - buf);
                memmove(buf, end + 4, have - used + 1);
                have -= used;
            }
        }
        if (c >= 0) close(c);
    }
}
