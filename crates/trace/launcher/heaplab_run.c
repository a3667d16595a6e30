/* heaplab run launcher: starts a measured program from a small process, so that its peak RSS
 * is its own.
 *
 * Linux records, when a process calls exec, the high-water RSS of the memory it had before
 * (a forked copy of its parent, or the parent's own memory for a posix_spawn child) in the
 * maxrss that wait4 later reports. A program started straight from heaplab, whose own RSS holds
 * traces, placements or parsed groups, would report at least heaplab's size. This launcher is
 * exec'd first (its own report is contaminated, and unused); it forks the program from its own
 * few hundred KiB, waits for it with wait4 and reports.
 *
 * Usage: heaplab_run PROGRAM ARGV0 [ARGS...]; the report goes to descriptor 3, or to the one
 * HEAPLAB_RUN_REPORT_FD names (the program never inherits it):
 *   "pid N\n" once the program is started, then
 *   "done STATUS MAXRSS_KIB UTIME_US STIME_US WALL_NS\n" (STATUS: exit code, or -signal;
 *   WALL_NS: from just before the fork to the program's reaping, so that the time it takes the
 *   caller to start this launcher, a fork of a possibly large process, is not counted), or
 *   "exec ERRNO\n" when the program could not be started.
 * HEAPLAB_RUN_PRELOAD, when set and not empty, becomes the program's LD_PRELOAD (the launcher
 * itself runs without the allocator under test).
 * HEAPLAB_RUN_FORWARD=1 (a caller that stands between the user and the program, as `heaplab
 * run` does): SIGINT, SIGQUIT, SIGTERM and SIGHUP another process sends the launcher are passed
 * on to the program (the terminal's reach it directly), and the launcher gets SIGTERM, passed
 * on too, when its parent dies. Otherwise it ignores SIGINT and SIGQUIT (a terminal's Ctrl-C
 * reaches the program directly) so that the report is written. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int report_fd = 3;
static volatile pid_t child;
/* The signals passed on with HEAPLAB_RUN_FORWARD=1. */
static const int passed_on[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
#define N_PASSED (sizeof passed_on / sizeof passed_on[0])

static void report(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(report_fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

/* A signal from the terminal (si_code > 0) already went to the whole foreground process group,
 * the program included: passing it on would deliver it twice. */
static void pass_on(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    if (info->si_code <= 0) kill(child, sig);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: heaplab_run PROGRAM ARGV0 [ARGS...] (report on descriptor 3)\n");
        return 2;
    }
    const char *fd = getenv("HEAPLAB_RUN_REPORT_FD");
    if (fd && atoi(fd) > 2) report_fd = atoi(fd); /* never a standard stream */
    fcntl(report_fd, F_SETFD, FD_CLOEXEC);
    const char *fw = getenv("HEAPLAB_RUN_FORWARD");
    int forward = fw && strcmp(fw, "1") == 0;
    if (forward) {
        pid_t parent = getppid();
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) return 1; /* the parent died before the signal was asked for */
    }
    const char *pre = getenv("HEAPLAB_RUN_PRELOAD");
    char line[200];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* The signals to pass on wait, blocked, until the program's pid is known. */
    sigset_t passed, old;
    sigemptyset(&passed);
    for (size_t i = 0; i < N_PASSED; i++) sigaddset(&passed, passed_on[i]);
    sigprocmask(SIG_BLOCK, forward ? &passed : NULL, &old);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(line, sizeof line, "exec %d\n", errno);
        report(line);
        return 1;
    }
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        unsetenv("HEAPLAB_RUN_PRELOAD");
        unsetenv("HEAPLAB_RUN_REPORT_FD");
        unsetenv("HEAPLAB_RUN_FORWARD");
        if (pre && *pre) setenv("LD_PRELOAD", pre, 1);
        else unsetenv("LD_PRELOAD");
        execv(argv[1], argv + 2);
        snprintf(line, sizeof line, "exec %d\n", errno);
        report(line);
        _exit(127);
    }
    snprintf(line, sizeof line, "pid %d\n", (int)pid);
    report(line);
    if (forward) {
        child = pid;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = pass_on;
        sa.sa_flags = SA_RESTART | SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < N_PASSED; i++) sigaction(passed_on[i], &sa, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
    } else {
        /* Signals meant for the program (a Ctrl-C) must not stop the report. */
        signal(SIGINT, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            snprintf(line, sizeof line, "exec %d\n", errno);
            report(line);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long wall = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    snprintf(line, sizeof line, "done %d %ld %lld %lld %lld\n", code, ru.ru_maxrss,
             (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
             (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, wall);
    report(line);
    return 0;
}
