/* Test program for `heaplab trace`: allocates a known number of blocks, then misbehaves as
 * asked: crash (SIGSEGV), abort, closefds (closes every descriptor, dup2s over the rest, then
 * allocates more), fork (the child allocates too), exec (execs `argv[2]`), _exit, sleep
 * (20,000 more allocations, a 200 ms pause, 20,000 more: checks timestamps), badexec (an exec
 * that fails, then 100 more allocations), forever (allocates until it is killed).
 * Usage: misbehave MODE [PROGRAM] */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void churn(int n) {
    for (int i = 0; i < n; i++) {
        volatile char *p = malloc(32 + i % 64);
        p[0] = 1;
        free((void *)p);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    void *keep = malloc(1000);
    churn(500);
    if (!strcmp(mode, "crash")) {
        volatile int *bad = NULL;
        *bad = 1;
    } else if (!strcmp(mode, "abort")) {
        abort();
    } else if (!strcmp(mode, "closefds")) {
        for (int fd = 0; fd < 4096; fd++) close(fd);
        churn(300);
        for (int fd = 0; fd < 2048; fd++) dup2(0, fd); /* whatever is 0 now, everywhere */
        churn(200);
    } else if (!strcmp(mode, "fork")) {
        pid_t c = fork();
        if (c == 0) {
            churn(250);
            exit(0);
        }
        int st;
        waitpid(c, &st, 0);
        churn(100);
    } else if (!strcmp(mode, "exec") && argc > 2) {
        execvp(argv[2], argv + 2);
        return 127;
    } else if (!strcmp(mode, "sleep")) {
        churn(20000);
        usleep(200000);
        churn(20000);
    } else if (!strcmp(mode, "badexec")) {
        char *args[] = {"/nonexistent/heaplab-test", NULL};
        execv(args[0], args); /* fails: the program goes on */
        churn(100);
    } else if (!strcmp(mode, "forever")) {
        for (;;) churn(1000);
    } else if (!strcmp(mode, "_exit")) {
        _exit(3);
    }
    free(keep);
    return 0;
}
