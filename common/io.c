#include "common/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mem.h"

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "a folder"
           : S_ISFIFO(m) ? "a fifo"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a plain file";
}

int io_open_input(const char *path, uint64_t *size_bytes, struct errmsg *e)
{
    /* O_NONBLOCK so that opening a FIFO returns at once instead of waiting for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int en = errno;
        int rc = errmsg_set(e, ERR_NOINPUT, "cannot open '%s': %s", path, strerror(en));
        errno = en;
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = errmsg_set(e, ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return errmsg_set(e, ERR_USAGE, "'%s' is not a regular file (%s): inputs must be files",
                          path, file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int rc = errmsg_set(e, ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    if (size_bytes)
        *size_bytes = (uint64_t)st.st_size;
    return fd;
}

int src_open_file(struct src *s, const char *path, struct errmsg *e)
{
    memset(s, 0, sizeof *s);
    int fd = io_open_input(path, &s->size, e);
    if (fd < 0) {
        s->fd = -1;
        return fd;
    }
    s->fd = fd;
    return 0;
}

void src_init_mem(struct src *s, const void *data, size_t n)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->mem = data;
    s->size = n;
}

int src_read_at(struct src *s, uint64_t off, void *p, size_t n, size_t *got)
{
    *got = 0;
    if (off >= s->size)
        return 0;
    if (n > s->size - off)
        n = (size_t)(s->size - off);
    if (s->fd < 0) {
        memcpy(p, s->mem + off, n);
        *got = n;
    } else {
        size_t done = 0;
        while (done < n) {
            ssize_t r = pread(s->fd, (char *)p + done, n - done, (off_t)(off + done));
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return ERR_IO;
            if (r == 0)
                break;
            done += (size_t)r;
        }
        *got = done;
    }
    s->bytes_read += *got;
    return 0;
}

void src_close(struct src *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

int sink_open_file(struct sink *k, const char *path, struct errmsg *e)
{
    memset(k, 0, sizeof *k);
    k->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (k->fd < 0)
        return errmsg_set(e, ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    return 0;
}

int sink_create_excl(struct sink *k, const char *path, struct errmsg *e)
{
    memset(k, 0, sizeof *k);
    k->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (k->fd >= 0)
        return 0;
    int en = errno;
    int rc = errmsg_set(e, en == EEXIST ? ERR_USAGE : ERR_IO, "cannot create '%s': %s", path,
                        strerror(en));
    errno = en;
    return rc;
}

void sink_init_mem(struct sink *k, struct buf *b)
{
    memset(k, 0, sizeof *k);
    k->fd = -1;
    k->mem = b;
}

/* io_fail_writes_after state: bytes file sinks may still write, and the errno after that. */
static bool fault_armed;
static uint64_t fault_left;
static int fault_errno;

void io_fail_writes_after(uint64_t n_bytes, int errnum)
{
    fault_armed = errnum != 0;
    fault_left = n_bytes;
    fault_errno = errnum;
}

int sink_write(struct sink *k, const void *p, size_t n)
{
    if (k->fd < 0) {
        int rc = buf_append(k->mem, p, n);
        if (!rc)
            k->offset += n;
        return rc;
    }
    size_t done = 0;
    while (done < n) {
        size_t want = n - done;
        if (fault_armed && fault_left < want) {
            want = (size_t)fault_left; /* a full disk takes what fits, then refuses */
            if (want == 0) {
                errno = fault_errno;
                return ERR_IO;
            }
        }
        ssize_t w = write(k->fd, (const char *)p + done, want);
        if (w > 0 && fault_armed)
            fault_left -= (uint64_t)w;
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return ERR_IO;
        done += (size_t)w;
    }
    k->offset += n;
    return 0;
}

int sink_sync(struct sink *k)
{
    if (k->fd >= 0 && fsync(k->fd) != 0)
        return ERR_IO;
    return 0;
}

int sink_close(struct sink *k)
{
    int rc = 0;
    if (k->fd >= 0 && close(k->fd) != 0)
        rc = ERR_IO;
    k->fd = -1;
    return rc;
}

int io_read_file(const char *path, uint64_t max_bytes, char **text, size_t *len, struct errmsg *e)
{
    *text = NULL;
    *len = 0;
    uint64_t size;
    int fd = io_open_input(path, &size, e);
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return errmsg_set(e, ERR_NOMEM, "out of memory reading '%s'", path);
    }
    if (size > max_bytes) {
        fclose(f);
        return errmsg_set(e, ERR_LIMIT, "file too large or unreadable ('%s')", path);
    }
    size_t n = (size_t)size;
    char *buf = mem_alloc(n + 1);
    if (!buf) {
        fclose(f);
        return errmsg_set(e, ERR_NOMEM, "out of memory reading '%s'", path);
    }
    size_t got = fread(buf, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        mem_free(buf);
        return errmsg_set(e, ERR_IO, "cannot read '%s'", path);
    }
    buf[got] = 0;
    *text = buf;
    *len = got;
    return 0;
}

int io_sync_parent_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else {
        size_t n = (size_t)(slash - path);
        if (n == 0)
            n = 1;
        if (n >= sizeof dir)
            return ERR_IO;
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return ERR_IO;
    int rc = fsync(fd) == 0 ? 0 : ERR_IO;
    close(fd);
    return rc;
}

/* Depth-first removal; depth bounds the recursion (a demo tree is three levels deep). */
static int remove_tree(const char *path, int depth)
{
    struct stat st;
    if (lstat(path, &st))
        return errno == ENOENT ? 0 : ERR_IO;
    if (!S_ISDIR(st.st_mode))
        return unlink(path) ? ERR_IO : 0;
    if (depth > 32)
        return ERR_LIMIT;
    DIR *d = opendir(path);
    if (!d)
        return ERR_IO;
    int rc = 0;
    struct dirent *ent;
    char child[4096];
    while (rc == 0 && (ent = readdir(d))) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
            continue;
        if (snprintf(child, sizeof child, "%s/%s", path, ent->d_name) >= (int)sizeof child)
            rc = ERR_LIMIT;
        else
            rc = remove_tree(child, depth + 1);
    }
    closedir(d);
    if (rc == 0 && rmdir(path))
        rc = ERR_IO;
    return rc;
}

/* One part of io_mkdir_p: dir made or already a folder. 0 or ERR_IO with errno kept. */
static int mkdir_one(const char *dir, mode_t mode, const char *path, struct errmsg *e)
{
    if (mkdir(dir, mode) == 0)
        return 0;
    int en = errno;
    struct stat st;
    if (en == EEXIST && stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        en = ENOTDIR;
    }
    /* a file where the command line asked for a folder is a usage error, not a failure */
    int code = en == ENOTDIR ? ERR_USAGE : ERR_IO;
    int rc =
        strcmp(dir, path)
            ? errmsg_set(e, code, "cannot create folder '%s': '%s': %s", path, dir, strerror(en))
            : errmsg_set(e, code, "cannot create folder '%s': %s", path, strerror(en));
    errno = en;
    return rc;
}

int io_mkdir_p(const char *path, mode_t mode, struct errmsg *e)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0)
        return errmsg_set(e, ERR_USAGE, "cannot create a folder with an empty name");
    if (n >= sizeof tmp)
        return errmsg_set(e, ERR_LIMIT, "cannot create folder '%.64s...': path too long", path);
    memcpy(tmp, path, n + 1);
    /* Each prefix that ends before a '/' (runs of '/' and the root are skipped). */
    for (size_t i = 1; i < n; i++) {
        if (tmp[i] != '/' || tmp[i - 1] == '/')
            continue;
        tmp[i] = 0;
        int rc = mkdir_one(tmp, mode, path, e);
        tmp[i] = '/';
        if (rc)
            return rc;
    }
    return mkdir_one(tmp, mode, path, e);
}

int io_remove_tree(const char *path)
{
    return remove_tree(path, 0);
}

bool io_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* path with its folder made canonical (realpath) and its last part kept: "a/../b/x" and
 * "b/x" give the same text even when x does not exist yet. false when the folder does not
 * resolve. */
static bool canonical_name(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX], real[PATH_MAX];
    const char *base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || !realpath(dir, real))
        return false;
    return snprintf(out, n, "%s/%s", real, base) < (int)n;
}

bool io_same_path(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    if (io_same_file(a, b) || !strcmp(a, b))
        return true;
    char ca[PATH_MAX + 256], cb[PATH_MAX + 256];
    return canonical_name(a, ca, sizeof ca) && canonical_name(b, cb, sizeof cb) && !strcmp(ca, cb);
}

/* The entry of folder dir that is the same file as out, copied into hit; false when none. */
static bool dir_holds(const char *dir, const char *out, char *hit, size_t hit_len)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    struct dirent *ent;
    while (!found && (ent = readdir(d))) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
            continue;
        if (snprintf(hit, hit_len, "%s/%s", dir, ent->d_name) >= (int)hit_len)
            continue;
        found = io_same_file(hit, out);
    }
    closedir(d);
    return found;
}

int io_check_distinct(const char *const *inputs, size_t n_inputs, const char *const *outputs,
                      size_t n_outputs, struct errmsg *e)
{
    char hit[4096];
    for (size_t o = 0; o < n_outputs; o++)
        for (size_t p = o + 1; p < n_outputs; p++)
            if (outputs[o] && outputs[p] && io_same_path(outputs[o], outputs[p]))
                return errmsg_set(e, ERR_USAGE, "outputs '%s' and '%s' are the same file",
                                  outputs[o], outputs[p]);
    for (size_t i = 0; i < n_inputs; i++) {
        if (!inputs[i])
            continue;
        struct stat st;
        bool is_dir = stat(inputs[i], &st) == 0 && S_ISDIR(st.st_mode);
        for (size_t o = 0; o < n_outputs; o++) {
            if (!outputs[o])
                continue;
            if (io_same_file(inputs[i], outputs[o]))
                return errmsg_set(e, ERR_USAGE, "input '%s' and output '%s' are the same file",
                                  inputs[i], outputs[o]);
            if (is_dir && dir_holds(inputs[i], outputs[o], hit, sizeof hit))
                return errmsg_set(e, ERR_USAGE, "input '%s' and output '%s' are the same file", hit,
                                  outputs[o]);
        }
    }
    return 0;
}
