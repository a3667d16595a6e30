/* report.h — the runtime libraries' JSON reports, built without allocating (a report is written
 * at exit, from a fatal-signal handler too): a fixed buffer, number and string writers, the
 * process's peak RSS, and writing the buffer to a file with raw calls.
 */
#ifndef HEAPLAB_REPORT_H
#define HEAPLAB_REPORT_H

#include <stddef.h>
#include <stdint.h>

/* A report being written; text beyond the buffer is dropped. */
struct hl_out { char b[1 << 16]; size_t n; };

void hl_put(struct hl_out *o, const char *s);
void hl_put_u(struct hl_out *o, uint64_t v);
/* A JSON string (quotes and backslashes escaped, control characters made spaces). */
void hl_put_str(struct hl_out *o, const char *s);
/* `"k": v` */
void hl_key_u(struct hl_out *o, const char *k, uint64_t v);
/* A ratio num/den as a decimal with 6 places (0 when den is 0), without floating point. */
void hl_put_ratio(struct hl_out *o, uint64_t num, uint64_t den);
/* Writes the report to `path` (created or truncated). */
void hl_write_out(const char *path, const struct hl_out *o);
/* The runtimes' fallback object, `"fallback": {"count": c, "bytes": b, "<reason>": n, ...}`, one
 * count per reason in `names` order (the launcher's report reader expects this shape). */
void hl_put_fallback(struct hl_out *o, uint64_t count, uint64_t bytes, const char *const *names, const uint64_t *counts, int n);
/* The runtimes' last field, `"end"` (how the image ended), closing the object; then the report
 * is written to `path`. The program's peak RSS is the run launcher's (wait4's), which costs the
 * program nothing, where reading VmHWM here would cost it a read of /proc/self/status. */
void hl_put_report_end(struct hl_out *o, const char *end, const char *path);

/* ---- the run's report, written once by the image that claimed the run ----
 * The launcher names a claim file; the image that removes it is the one the launcher started
 * (images started later by exec inherit the settings but find no claim). That image writes its
 * report once, when it ends however it ends: report.c defines the layer's end hooks
 * (hl_on_exit, hl_on_quick_exit, hl_on_fatal_signal, hl_before_exec, hl_after_failed_exec) and
 * its page hooks (nothing to do) on this, and calls the client's hl_write_report. */

/* Removes the claim file; returns 1 when this image claimed the run (it then reports). */
int hl_claim_run(const char *claim_path);
/* Whether this process is the image that claimed the run (not a fork child of it). */
int hl_run_is_mine(void);
/* Defined by the client: writes its report (`end`: how the image ended). Async-signal-safe. */
void hl_write_report(const char *end);

#endif
