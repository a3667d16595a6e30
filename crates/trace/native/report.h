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
/* The process's peak resident set (VmHWM) in bytes; 0 when unknown. */
uint64_t hl_peak_rss(void);
/* Writes the report to `path` (created or truncated). */
void hl_write_out(const char *path, const struct hl_out *o);

#endif
