/* report.c — the runtime libraries' JSON reports (see report.h). */
#define _GNU_SOURCE
#include "report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>

#include "interpose.h"

void hl_put(struct hl_out *o, const char *s) {
    while (*s && o->n + 1 < sizeof o->b) o->b[o->n++] = *s++;
}

void hl_put_u(struct hl_out *o, uint64_t v) {
    char t[24];
    int n = 0;
    do t[n++] = (char)('0' + v % 10); while (v /= 10);
    while (n && o->n + 1 < sizeof o->b) o->b[o->n++] = t[--n];
}

void hl_put_str(struct hl_out *o, const char *s) {
    hl_put(o, "\"");
    for (; *s && o->n + 8 < sizeof o->b; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') o->b[o->n++] = '\\', o->b[o->n++] = (char)c;
        else if (c < 0x20) o->b[o->n++] = ' ';
        else o->b[o->n++] = (char)c;
    }
    hl_put(o, "\"");
}

void hl_key_u(struct hl_out *o, const char *k, uint64_t v) {
    hl_put(o, "\"");
    hl_put(o, k);
    hl_put(o, "\": ");
    hl_put_u(o, v);
}

void hl_put_ratio(struct hl_out *o, uint64_t num, uint64_t den) {
    uint64_t scaled = den ? (uint64_t)((unsigned __int128)num * 1000000u / den) : 0;
    hl_put_u(o, scaled / 1000000u);
    hl_put(o, ".");
    char frac[7];
    for (int i = 5, v = (int)(scaled % 1000000u); i >= 0; i--, v /= 10) frac[i] = (char)('0' + v % 10);
    frac[6] = 0;
    hl_put(o, frac);
}

/* The launcher makes the file empty beforehand. No O_TRUNC: on ext4, truncating a file to
 * nothing (even one already empty) makes its close flush the new data, about 0.1 ms of the
 * program's time; a longer file left there is cut to the report's length instead. */
void hl_write_out(const char *path, const struct hl_out *o) {
    int f = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0) return;
    size_t at = 0;
    while (at < o->n) {
        ssize_t r = write(f, o->b + at, o->n - at);
        if (r <= 0) break;
        at += (size_t)r;
    }
    struct stat st;
    if (fstat(f, &st) == 0 && (uint64_t)st.st_size > at) (void)ftruncate(f, (off_t)at);
    close(f);
}

void hl_put_fallback(struct hl_out *o, uint64_t count, uint64_t bytes, const char *const *names, const uint64_t *counts, int n) {
    hl_put(o, "\"fallback\": {");
    hl_key_u(o, "count", count);
    hl_put(o, ", ");
    hl_key_u(o, "bytes", bytes);
    for (int w = 0; w < n; w++) {
        hl_put(o, ", ");
        hl_key_u(o, names[w], counts[w]);
    }
    hl_put(o, "}");
}

void hl_put_report_end(struct hl_out *o, const char *end, const char *path) {
    hl_put(o, ",\n  \"end\": ");
    hl_put_str(o, end);
    hl_put(o, "\n}\n");
    hl_write_out(path, o);
}

static int claimed, reported;
static pid_t claimer;

int hl_claim_run(const char *claim_path) {
    if (!*claim_path || unlink(claim_path) != 0) return 0;
    claimed = 1;
    claimer = (pid_t)syscall(SYS_getpid);
    return 1;
}

int hl_run_is_mine(void) { return claimed && (pid_t)syscall(SYS_getpid) == claimer; }

static void end_of_image(const char *end) {
    if (reported || !hl_run_is_mine()) return;
    reported = 1;
    hl_write_report(end);
}

void hl_on_exit(void) { end_of_image("exit"); }
void hl_on_quick_exit(int status) {
    (void)status;
    end_of_image("_exit");
}
void hl_on_fatal_signal(int sig) {
    (void)sig;
    end_of_image("fatal signal");
}
void hl_before_exec(void) { end_of_image("exec"); }
void hl_after_failed_exec(void) {
    if (hl_run_is_mine()) reported = 0;
}

/* The program's own page calls: nothing to do with them. */
void hl_before_page(struct hl_page *p) { (void)p; }
void hl_after_page(struct hl_page *p) { (void)p; }
