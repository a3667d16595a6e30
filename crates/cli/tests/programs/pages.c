/* pages.c — direct address-space calls of known sizes, for the page-event test in trace.rs.
 * Every step's effect, in pages, is in the comment beside it; the test asserts the peaks.
 * No malloc happens between the sbrk calls: glibc's heap may sit right below the break. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(3);
    }
}

int main(void) {
    long pg = sysconf(_SC_PAGESIZE);
    /* The heap: 1 MiB, served by glibc's own (unrecorded) mmap. */
    char *heap = malloc(1 << 20);
    memset(heap, 1, 1 << 20);

    char *a = mmap(NULL, 64 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* anon 64 */
    must(a != MAP_FAILED, "mmap");
    memset(a, 2, 64 * pg);
    must(munmap(a + 16 * pg, 16 * pg) == 0, "munmap"); /* a hole: anon 48 */
    char *m = mremap(a + 32 * pg, 32 * pg, 96 * pg, MREMAP_MAYMOVE); /* tail grows: anon 112 */
    must(m != MAP_FAILED, "mremap");
    must(munmap(m, 96 * pg) == 0, "munmap"); /* anon 16 */

    int fd = open("/proc/self/exe", O_RDONLY);
    must(fd >= 0, "open");
    char *file = mmap64(NULL, 2 * pg, PROT_READ, MAP_PRIVATE, fd, 0); /* file 2 */
    must(file != MAP_FAILED, "mmap64");
    close(fd);
    char *shared = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0); /* anon 20 */
    must(shared != MAP_FAILED, "mmap shared");
    char *res = mmap(NULL, 256 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0); /* reserved 256 */
    must(res != MAP_FAILED, "mmap reserve");
    must(mprotect(res, 8 * pg, PROT_READ | PROT_WRITE) == 0, "mprotect"); /* reserved 248, anon 28 */

    must(sbrk(200 * pg) != (void *)-1, "sbrk"); /* break +200: direct 28 + 2 + 200 = 230 */
    must(sbrk(-100 * pg) != (void *)-1, "sbrk"); /* break +100 */
    must(brk((char *)sbrk(0) + 4 * pg) == 0, "brk"); /* break +104 (sbrk(0) is a call too) */

    must(mmap(NULL, (size_t)1 << 60, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED, "huge mmap"); /* fails */

    must(munmap(a, 16 * pg) == 0 && munmap(shared, 4 * pg) == 0 && munmap(res, 256 * pg) == 0 && munmap(file, 2 * pg) == 0, "munmap");
    free(heap);
    printf("ok\n");
    return 0;
}
