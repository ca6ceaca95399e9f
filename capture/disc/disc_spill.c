/*
 * disc_spill: an unlinked scratch file with positioned I/O (see disc_spill.h).
 */
#include "capture/disc/disc_spill.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/mem.h"

struct disc_spill {
    int fd;
    char dir[4096];
    uint64_t size_bytes, wrote_bytes, read_bytes;
};

int disc_spill_open(struct disc_spill **out, const char *dir, struct errmsg *e)
{
    struct disc_spill *s = mem_calloc(1, sizeof *s);
    char path[4200];
    *out = NULL;
    if (!s)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    snprintf(s->dir, sizeof s->dir, "%s", dir && *dir ? dir : ".");
    snprintf(path, sizeof path, "%s/.acceltrace-spill-XXXXXX", s->dir);
    s->fd = mkstemp(path);
    if (s->fd < 0) {
        int en = errno;
        mem_free(s);
        return errmsg_set(e, ERR_IO, "cannot create a spill file in '%s': %s", dir ? dir : ".",
                          strerror(en));
    }
    /* unlinked at once: the space is returned when the descriptor closes, however the
     * process ends */
    unlink(path);
    *out = s;
    return 0;
}

int disc_spill_write(struct disc_spill *s, uint64_t off, const void *p, size_t n, struct errmsg *e)
{
    const char *c = p;
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(s->fd, c + done, n - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return errmsg_set(e, ERR_IO, "cannot write the spill file in '%s' at byte %llu: %s",
                              s->dir, (unsigned long long)(off + done),
                              w < 0 ? strerror(errno) : "no progress");
        done += (size_t)w;
    }
    if (off + n > s->size_bytes)
        s->size_bytes = off + n;
    s->wrote_bytes += n;
    return 0;
}

int disc_spill_read(struct disc_spill *s, uint64_t off, void *p, size_t n, struct errmsg *e)
{
    char *c = p;
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(s->fd, c + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return errmsg_set(e, ERR_IO, "cannot read the spill file in '%s' at byte %llu: %s",
                              s->dir, (unsigned long long)(off + done),
                              r < 0 ? strerror(errno) : "file too short");
        done += (size_t)r;
    }
    s->read_bytes += n;
    return 0;
}

uint64_t disc_spill_bytes(const struct disc_spill *s)
{
    return s ? s->size_bytes : 0;
}

uint64_t disc_spill_written(const struct disc_spill *s)
{
    return s ? s->wrote_bytes : 0;
}

uint64_t disc_spill_read_bytes(const struct disc_spill *s)
{
    return s ? s->read_bytes : 0;
}

void disc_spill_close(struct disc_spill *s)
{
    if (!s)
        return;
    close(s->fd);
    mem_free(s);
}
